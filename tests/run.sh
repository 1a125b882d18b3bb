#!/usr/bin/env bash
# Runs the whole test suite with what it needs on a Linux CPU machine:
# - a fast BLAS preloaded: mlx's Linux CPU wheel bundles the reference BLAS, and OpenBLAS makes
#   the float32 model tests many times faster (DESIGN.md, "Linux CPU performance note"). The
#   library is the one the mlx-notebook kernel preloads: engine/blas.py decides for both;
# - Debian's OpenBLAS (engine/blas.py's first choice), its jemalloc (preloaded beside the BLAS,
#   engine/blas.py says why) and Chromium for the browser tests (never a downloaded browser).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
if [ "$(uname -s)" = Linux ]; then
  lib="/usr/lib/$(uname -m)-linux-gnu"
  if [ ! -e "$lib/openblas-pthread/libblas.so.3" ] || [ ! -e "$lib/libjemalloc.so.2" ] || [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0-pthread libjemalloc2 chromium >/dev/null
    else
      echo "tests/run.sh: install libopenblas0-pthread, libjemalloc2 and chromium (apt) for fast, complete tests" >&2
    fi
  fi
  blas=$("$python" -m mlx_notebook.engine.blas)
  [ -n "$blas" ] && export LD_PRELOAD="$blas${LD_PRELOAD:+:$LD_PRELOAD}"
fi
exec "$python" -m pytest -ra "$@"
