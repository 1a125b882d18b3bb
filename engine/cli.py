"""The ``mlx-notebook`` console script: fetch, import and list models, and a greedy demo."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import EngineError
from .gguf_import import IMPORT_DTYPES
from .model_store import DEFAULT_MODEL, cache_dir, cached_models, import_gguf_file, resolve_model

__all__ = ["main"]

DEMO_PROMPT = "What is the capital of France? Answer in one sentence."


def _fetch(args: argparse.Namespace) -> None:
    path = resolve_model(args.spec, dtype=args.dtype, progress=not args.quiet)
    print(path)


def _import(args: argparse.Namespace) -> None:
    source = Path(args.file)
    if not source.is_file():
        raise EngineError(f"No such GGUF file: {args.file}.")
    dest = Path(args.dir) if args.dir else None
    if dest is not None and dest.exists():
        raise EngineError(f"{dest} already exists: give a new directory to import into.")
    print(import_gguf_file(source, dtype=args.dtype, progress=not args.quiet, dest=dest))


def _models(args: argparse.Namespace) -> None:
    models = cached_models()
    print(f"Cache: {cache_dir()}")
    if not models:
        print("No models cached yet: run `mlx-notebook fetch` to get the default model.")
    for model in models:
        print(f"{model.size_bytes / 2**20:10.1f} MiB  {model.name}")


def _demo(args: argparse.Namespace) -> None:
    from . import Engine

    with Engine(args.spec, dtype=args.dtype, progress=not args.quiet) as engine:
        reply = engine.chat_completions(
            {"messages": [{"role": "user", "content": args.prompt}], "temperature": 0.0, "max_tokens": args.max_tokens}
        )
    message = reply["choices"][0]["message"]
    usage = reply["usage"]
    print(f"> {args.prompt}")
    print(message.get("content") or "")
    print(f"[{engine.model_info.name}: {usage['prompt_tokens']} prompt tokens, {usage['completion_tokens']} completion tokens]")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlx-notebook", description="Manage mlx-notebook's offline model store.")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    commands = parser.add_subparsers(dest="command", required=True)

    fetch = commands.add_parser("fetch", help="resolve a model spec to a local mlx-lm directory and print it")
    fetch.add_argument("spec", nargs="?", default=DEFAULT_MODEL,
                       help="alias, .gguf file, mlx-lm directory or cached Hugging Face repo id")
    fetch.add_argument("--dtype", choices=IMPORT_DTYPES, default="keep", help="GGUF import: keep quantization or dequantize")
    fetch.set_defaults(run=_fetch)

    imp = commands.add_parser("import", help="import a .gguf file into an mlx-lm directory")
    imp.add_argument("file", help="the .gguf file")
    imp.add_argument("dir", nargs="?", help="where to write it (default: the cache)")
    imp.add_argument("--dtype", choices=IMPORT_DTYPES, default="keep", help="keep quantization or dequantize")
    imp.set_defaults(run=_import)

    models = commands.add_parser("models", help="list cached models with their sizes")
    models.set_defaults(run=_models)

    demo = commands.add_parser("demo", help="load a model and print its greedy reply to a question")
    demo.add_argument("spec", nargs="?", default=DEFAULT_MODEL, help="model spec (default: the default model)")
    demo.add_argument("--prompt", default=DEMO_PROMPT, help="the question to ask")
    demo.add_argument("--max-tokens", type=int, default=64, help="reply length limit")
    demo.add_argument("--dtype", choices=IMPORT_DTYPES, default="keep", help="GGUF import dtype")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except EngineError as exc:
        print(f"mlx-notebook {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
