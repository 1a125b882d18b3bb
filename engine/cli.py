"""The ``mlx-notebook`` console script: fetch, import, list and remove models, a greedy demo,
and ``serve`` (the engine over HTTP)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._byte_count import format_bytes
from ._config import SWITCH_HELP
from .models._dtype_policy import DTYPES
from ._errors import EngineError
from .models._store import DEFAULT_MODEL, cache_dir, import_gguf_file, remove_entry, resolve_model, store_entries

__all__ = ["main"]

DEMO_PROMPT = "What is the capital of France? Answer in one sentence."
_DTYPE_HELP = ("auto (default): float32 for a model of at most 2B parameters on a CPU, where "
               "BLAS makes it fast, "
               "else the model's own; keep: the file's quantization; float32 or bfloat16: dequantize")

_ORIGINS_HELP = ("comma-separated web origins whose pages may call the API from a browser "
                 "(CORS), e.g. http://localhost:3000, or * for any (default: none)")


def _fetch(args: argparse.Namespace) -> None:
    path = resolve_model(args.spec, dtype=args.dtype, progress=not args.quiet)
    print(path)


def _import(args: argparse.Namespace) -> None:
    source = Path(args.file)
    if source.is_dir():
        raise EngineError(f"{args.file} is a directory, not a GGUF file: give the .gguf file to import.")
    if not source.is_file():
        raise EngineError(f"No such GGUF file: {args.file}.")
    dest = Path(args.dir) if args.dir else None
    if dest is not None and dest.exists():
        raise EngineError(f"{dest} already exists: give a new directory to import into.")
    print(import_gguf_file(source, dtype=args.dtype, progress=not args.quiet, dest=dest))


def _models(args: argparse.Namespace) -> None:
    if args.remove is not None:  # (`--remove "$NAME"` with NAME unset is no listing)
        removed = remove_entry(args.remove)
        for stored in removed.paths:
            print(f"removed {stored.path}")
        print(f"Freed {format_bytes(removed.size_bytes)} ({removed.name}).")
        return
    entries = store_entries()
    total = sum(entry.size_bytes for entry in entries)
    print(f"Cache: {cache_dir()} ({format_bytes(total)} in all)")
    if not entries:
        print("No models cached yet: run `mlx-notebook fetch` to get the default model.")
        return
    for entry in entries:
        # engine/blas.py keeps its patched copy of PyPI's OpenBLAS in the store too.
        what = "  (OpenBLAS for the CPU fast path, not a model)" if entry.name == "blas" else ""
        print(f"{entry.name:<48} {format_bytes(entry.size_bytes):>10}{what}")
        for stored in entry.paths:
            print(f"  {format_bytes(stored.size_bytes):>10}  {stored.path}")
    print("Remove one with `mlx-notebook models --remove NAME` (a name or a path listed above).")


def _demo(args: argparse.Namespace) -> None:
    from . import Engine
    from .blas import reexec_with_fast_blas

    # The fast BLAS the notebook kernel gets (engine/blas.py decides): the loader reads
    # LD_PRELOAD only at start, so the command starts again with it, same pid and arguments.
    note = reexec_with_fast_blas()
    if note:
        print(note, file=sys.stderr)

    with Engine(args.spec, dtype=args.dtype, progress=not args.quiet) as engine:
        reply = engine.chat_completions(
            {"messages": [{"role": "user", "content": args.prompt}], "temperature": 0.0, "max_tokens": args.max_tokens}
        )
    message = reply["choices"][0]["message"]
    usage = reply["usage"]
    print(f"> {args.prompt}")
    reasoning = (message.get("reasoning") or message.get("reasoning_content") or "").strip()
    if reasoning:  # else a reply cut short while it reasons prints as a blank line
        print(f"(reasoning) {reasoning}")
    print(message.get("content") or "")
    print(f"[{engine.model_info.name}: {usage['prompt_tokens']} prompt tokens, {usage['completion_tokens']} completion tokens]")


def _serve(args: argparse.Namespace) -> None:
    import threading

    from . import Engine
    from .blas import reexec_with_fast_blas
    from .serving import Listener

    note = reexec_with_fast_blas()
    if note:
        print(note, file=sys.stderr)
    # The host, port, token and origins are checked before the model loads, which can take
    # minutes: a typo is refused at once.
    listener = Listener(None, host=args.host, port=args.port, token=args.token,
                        allowed_origins=args.allowed_origins)
    _check_listenable(args.host, args.port)
    with Engine(args.spec, dtype=args.dtype, progress=not args.quiet,
                fused_first_token=args.fused_first_token,
                cudnn_for_few_rows=args.cudnn_for_few_rows) as engine:
        listener.engine = engine
        with listener:
            print(f"Serving {engine.model_info.name} at {listener.url}")
            if listener.token_generated:
                print(f"Token (send 'Authorization: Bearer TOKEN'): {listener.token}")
            elif listener.token:
                print("Token: the one given with --token.")
            print("Press Ctrl-C to stop.", flush=True)
            try:
                threading.Event().wait()
            except KeyboardInterrupt:
                print("Stopped.")


def _check_listenable(host: str, port: int) -> None:
    """Bind the address and let it go at once: the listener binds only after the model has
    loaded, and a port in use or an address not of this machine should not wait for that."""
    from .serving._listener import bind

    for sock in bind(host, port):
        sock.close()


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``--max-tokens 64``; the magics'
    ``--tokens 3``, ``--max-rounds 2``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlx-notebook", description="Manage mlx-notebook's offline model store, ask the "
                                     "default model a question (demo) and serve a model over HTTP "
                                     "(serve).")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    # -q after the command too (`mlx-notebook fetch -q`); SUPPRESS keeps one given before it.
    quiet = argparse.ArgumentParser(add_help=False)
    quiet.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="no progress bars")
    commands = parser.add_subparsers(dest="command", required=True)

    fetch = commands.add_parser("fetch", parents=[quiet],
                                help="resolve a model spec to a local mlx-lm directory and print it")
    fetch.add_argument("spec", nargs="?", default=DEFAULT_MODEL,
                       help="alias, .gguf file, mlx-lm directory or cached Hugging Face repo id")
    fetch.add_argument("--dtype", choices=DTYPES, default="auto", help=f"GGUF import dtype: {_DTYPE_HELP}")
    fetch.set_defaults(run=_fetch)

    imp = commands.add_parser("import", parents=[quiet],
                              help="import a .gguf file into an mlx-lm directory")
    imp.add_argument("file", help="the .gguf file")
    imp.add_argument("dir", nargs="?", help="where to write it (default: the cache)")
    imp.add_argument("--dtype", choices=DTYPES, default="auto", help=_DTYPE_HELP)
    imp.set_defaults(run=_import)

    models = commands.add_parser("models", parents=[quiet],
                                 help="list what the store keeps per model, with sizes, or remove a model")
    models.add_argument("--remove", metavar="NAME",
                        help="delete every file the store keeps for NAME (a name or path that the "
                             "listing shows, or the .gguf file a model was imported from; that file "
                             "itself is never touched)")
    models.set_defaults(run=_models)

    demo = commands.add_parser("demo", parents=[quiet],
                               help="load a model and print its greedy reply to a question")
    demo.add_argument("spec", nargs="?", default=DEFAULT_MODEL, help="model spec (default: the default model)")
    demo.add_argument("--prompt", default=DEMO_PROMPT, help="the question to ask (default: %(default)r)")
    demo.add_argument("--max-tokens", type=at_least_one, default=64, help="reply length limit (default: %(default)s)")
    demo.add_argument("--dtype", choices=DTYPES, default="auto", help=_DTYPE_HELP)
    demo.set_defaults(run=_demo)

    serve = commands.add_parser("serve", parents=[quiet],
                                help="serve a model over an OpenAI-compatible HTTP API until interrupted")
    serve.add_argument("spec", nargs="?", default=DEFAULT_MODEL, help="model spec (default: the default model)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080; 0 picks a free one)")
    serve.add_argument("--token", default=None,
                       help="the bearer token clients must send (default: a new one, printed); "
                            "'' serves without one, on a loopback host only, and then refuses web pages "
                            "not in --allowed-origins")
    serve.add_argument("--allowed-origins", default="", metavar="ORIGINS",
                       help=_ORIGINS_HELP)
    serve.add_argument("--dtype", choices=DTYPES, default="auto", help=_DTYPE_HELP)
    serve.add_argument("--fused-first-token", action="store_true", help=SWITCH_HELP["fused_first_token"])
    serve.add_argument("--cudnn-for-few-rows", action="store_true", help=SWITCH_HELP["cudnn_for_few_rows"])
    serve.set_defaults(run=_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except EngineError as exc:
        print(f"mlx-notebook {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C while a model loads or a demo answers
        print(f"mlx-notebook {args.command}: interrupted.", file=sys.stderr)
        return 130  # what a shell reports for a command ended by SIGINT
    except BrokenPipeError:  # `mlx-notebook models | head -1`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no flush error at exit)
        return 141  # what a shell reports for a command ended by SIGPIPE
    except OSError as exc:  # a full disk, an output that cannot be written
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"mlx-notebook {args.command}: {exc.strerror or exc}{where}.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
