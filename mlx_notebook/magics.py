"""The IPython magics: ``%load_model``, ``%%chat``, ``%%complete`` and the umbrella ``%mlx``.

Each magic parses its line with ``magic_arguments``, calls one thing and displays the result;
the request logic lives in ``runner``, the history in ``sessions``, the reports in
``reports``. Lines that carry prompt text are ``@no_var_expand``: prompts go verbatim, and
the only interpolation is the cell body's, once, before templating.
"""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, argument_group, magic_arguments
from IPython.display import display

from mlx_notebook.engine import SWITCH_HELP, EngineError

from . import reports
from .display import plural
from .errors import LOAD_FLAGS, as_usage_errors, no_model_error, usage_error
from .interpolation import interpolate
from .options import (
    CONFIG_ALIASES,
    at_least_one,
    body_fields,
    chunking_spec,
    compare_side,
    config_fragment,
    config_keys,
    output_arguments,
    parse_bytes,
    read_template,
    sampling_arguments,
    seconds,
    set_options,
    split_line,
    tool_names,
)
from .cache_tree import watch_cache
from .runner import DEFAULT_MAX_ROUNDS, run_turn
from .sessions import DEFAULT_SESSION, Session, SessionStore
from .terminal import TerminalView
from .tools import ask_before_running, registered_tools, resolve_tools, unregister_tools
from .turn import Turn
from .panel import EnginePanel

__all__ = ["MlxMagics", "SUBCOMMANDS"]

SUBCOMMANDS = ("status", "serve", "unload", "cache", "render", "trace", "sessions", "history", "reset",
               "config", "tools", "panel", "help")
"""``%mlx`` subcommands in the order help lists them; ``%mlx NAME`` runs method ``_NAME``."""

def _flags_as_settings(line: str, keys: set[str], switches: set[str] = frozenset()) -> str:
    """``%mlx config`` settings written as a cell's flags, as the settings they mean:
    ``--max-tokens 5`` and ``--max-tokens=5`` as ``max-tokens=5``, ``--raw`` as ``raw=true``,
    ``--no-think`` as ``think=false`` (argparse would call them unrecognized arguments).
    A flag of ``keys`` that takes a value (not in ``switches``) and has none is refused."""
    try:
        tokens = split_line(line)
    except ValueError:  # _parse says what is wrong with the quotes
        return line
    key_of = lambda token: _config_key(token.partition("=")[0])  # noqa: E731
    out, i = [], 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("--") or token == "--help" or len(token) == 2:
            out.append(token)
        elif "=" in token:
            out.append(token[2:])
        elif i < len(tokens) and not tokens[i].startswith("--") and not (
                "=" in tokens[i] and key_of(tokens[i]) in keys):
            out.append(f"{token[2:]}={tokens[i]}")
            i += 1
        elif key_of(token).startswith("no_") and key_of(token) not in keys:
            out.append(f"{token[5:]}=false")
        elif switches and key_of(token) in keys and key_of(token) not in switches:
            raise UsageError(f"%mlx config: {token} needs a value, e.g. {token} VALUE or "
                             f"{token[2:]}=VALUE.")
        else:
            out.append(f"{token[2:]}=true")
    return shlex.join(out)


def _config_key(text: str) -> str:
    """A ``%mlx config`` key as written (``max-tokens``, ``--max-tokens``, ``temp``) as the
    key it names (``max_tokens``, ``temperature``)."""
    key = text.strip().lstrip("-").replace("-", "_")
    return CONFIG_ALIASES.get(key, key)


def _parse(func: Any, line: str, magic: str):
    """Parse a magic's line, with errors that name the magic and where its help is.

    The line is split the POSIX way (``split_line``), not with ``parse_argstring``'s
    non-POSIX splitter, which keeps the quotes: ``--system "Be terse."`` must send
    ``Be terse.``, not ``"Be terse."``.
    """
    try:
        return func.parser.parse_args(_dashed_values(func.parser, split_line(line)))
    except UsageError as exc:
        split_type = _option_text(line, "--json") if magic == "%%chat" else None
        if split_type is not None and " " in split_type and not _quoted(split_type):
            raise UsageError(f"{magic}: --json {split_type}: the line splits at spaces, so the "
                             f"type needs quotes: --json {_requoted(split_type)}.") from None
        # %mlx SUB? is IPython's help for the whole %mlx; a subcommand's help is %mlx help SUB.
        help_ = f"%mlx help {magic.split()[1]}" if magic.startswith("%mlx ") else f"{magic}?"
        raise UsageError(f"{magic}: {exc}; see {help_} for the options.") from None
    except ValueError as exc:  # unbalanced quotes from the line splitter
        raise UsageError(f"{magic}: cannot split the options ({exc}); check the quotes.") from None


def _option_text(line: str, option: str) -> str | None:
    """An option's value exactly as the line writes it, quotes kept, running on past spaces
    until its brackets close (``--json tuple[int, str]`` gives ``tuple[int, str]``); None
    when the line lacks the option or leaves a bracket or quote open."""
    match = re.search(rf"(?:^|\s){re.escape(option)}(?:=|\s+)(?=\S)", line)
    if match is None:
        return None
    quote, depth, i = "", 0, match.end()
    while i < len(line) and (quote or depth > 0 or not line[i].isspace()):
        ch = line[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        else:
            depth += (ch in "([{") - (ch in ")]}")
        i += 1
    return None if quote or depth > 0 else line[match.end():i]  # never closed: no guess


def _quoted(text: str) -> bool:
    return len(text) > 1 and text[0] == text[-1] and text[0] in "'\""


def _requoted(text: str) -> str:
    """``text`` in the quotes it does not use itself (``"Literal['a']"``)."""
    return f"'{text}'" if '"' in text else f'"{text}"'


_DASHED_VALUE_OPTIONS = ("--api-key", "--token", "--system", "--message", "--stop", "--logit-bias",
                         "--chunking")
"""Options whose value may begin with '-': a key or token (``token_urlsafe`` draws one so one
time in 64), free text (``--system '- Be terse.'``, ``--stop '-x'``), a bias (``-1=5``) or a
chunking that is wrong (``--chunking -1,2``, which then gets its own message).
argparse would take such a value for an option and say the value is missing."""


def _dashed_values(parser: Any, words: list[str]) -> list[str]:
    """``--api-key -abc`` as ``--api-key=-abc`` (``_DASHED_VALUE_OPTIONS``), unless ``-abc`` is
    one of the magic's options."""
    out, i = [], 0
    while i < len(words):
        word = words[i]
        if (word in _DASHED_VALUE_OPTIONS and i + 1 < len(words) and words[i + 1].startswith("-")
                and words[i + 1].split("=")[0] not in parser._option_string_actions):
            out.append(f"{word}={words[i + 1]}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


DEFAULT_ENGINE = "default"
"""What ``--compare model=...`` calls the engine ``%load_model`` loads without ``--name``."""
_SESSION_HELP = (f"The session (default: the one %%%%chat continues, '{DEFAULT_SESSION}' unless "
                 "%%mlx config sets session=NAME).")


def _check_engine_name(name: str | None) -> None:
    if name is not None and (name == DEFAULT_ENGINE or not name.isidentifier()):
        raise UsageError(f"%load_model: '{name}' cannot name a model; use a Python-style name "
                         f"other than '{DEFAULT_ENGINE}' (e.g. --name b).")


def _in_kernel(shell: Any) -> bool:
    return getattr(shell, "kernel", None) is not None


@magics_class
class MlxMagics(Magics):
    """Holds the kernel-resident engine, the chat sessions and the ``%mlx config`` defaults."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.engine: Any = None
        self.named_engines: dict[str, Any] = {}
        """Engines loaded beside the default one (``%load_model SPEC --name NAME``), by name."""
        self.listener: Any = None  # the %mlx serve HTTP listener, while it serves
        self.sessions = SessionStore()
        self.defaults: dict[str, str] = {}
        self.subcommands = {name: getattr(self, f"_{name}") for name in SUBCOMMANDS}
        self._warned_tools_unsupported: set[tuple[str, str]] = set()
        self._warned_think_ignored: set[str] = set()
        self._noted_no_cached_tokens: set[str] = set()  # remote servers' URLs
        # The engine panel's kernel side: JupyterLab's panel opens a comm to it.
        self.panel = EnginePanel(engine=lambda: self.engine)
        if _in_kernel(shell):
            self.panel.register()

    def close(self) -> None:
        """Stop serving and stop the engine; called when the extension is unloaded."""
        if self.listener is not None:
            listener, self.listener = self.listener, None
            listener.stop()
        self._close_engine()
        while self.named_engines:
            self.named_engines.popitem()[1].close()
        # Marked dropped: a comparison made before (%reload_ext) cannot choose a side into a
        # conversation no cell continues.
        self.sessions.clear()

    def closing_summary(self) -> str:
        """What ``close`` drops, in a clause ("closed tiny-reasoner and 'b', stopped the
        listener at URL, dropped 2 chat sessions"); "" when there is nothing."""
        said = []
        models = ([reports.model_name(self.engine)] if self.engine is not None else []) + [
            repr(name) for name in self.named_engines]
        if models:
            said.append(f"closed {' and '.join(models)}")
        if self.listener is not None:
            said.append(f"stopped the listener at {self.listener.url}")
        talked = [s for s in self.sessions if s.turns]
        if talked:
            said.append(f"dropped {plural(len(talked), 'chat session')}")
        return ", ".join(said)

    def _close_engine(self) -> None:
        if self.engine is not None:
            engine, self.engine = self.engine, None
            engine.close()

    def _close_named(self, name: str) -> bool:
        """Close the engine loaded as ``name``; False when there is none."""
        engine = self.named_engines.pop(name, None)
        if engine is not None:
            engine.close()
        return engine is not None

    def _engine_named(self, name: str | None, magic: str) -> Any:
        """The engine a ``--compare`` side names (``default`` or None: the unnamed one)."""
        if name in (None, DEFAULT_ENGINE):
            return self._engine(magic)
        if name not in self.named_engines:
            loaded = ", ".join([DEFAULT_ENGINE] * (self.engine is not None) + list(self.named_engines))
            raise UsageError(f"{magic}: no model is loaded as '{name}' (loaded: {loaded or 'none'}); "
                             f"load one with %load_model SPEC --name {name}.")
        return self.named_engines[name]

    # ----------------------------------------------------------------- %load_model

    @magic_arguments()
    @argument("spec", nargs="?", default=None,
              help="smollm2-135m-instruct (default), tiny-reasoner, a .gguf file, an mlx-lm "
                   "model directory or a Hugging Face repo id in the local cache.")
    @argument("--dtype", choices=["auto", "keep", "float32", "bfloat16"], default=None,
              help="What the weights compute in: auto (default: float32 for models of at most 2B "
                   "parameters on a Linux CPU, where it is the fast path, the model's own elsewhere), keep the "
                   "model's own (a GGUF's quantization), or float32/bfloat16.")
    @argument("--prompt-cache-bytes", type=parse_bytes, default=None, metavar="SIZE",
              help="Memory the prompt cache may use, e.g. 512MB or 2GiB.")
    @argument("--max-kv-size", type=int, default=None, metavar="TOKENS",
              help="Cap the KV cache at this many tokens (a rotating cache).")
    @argument("--adapter", default=None, metavar="PATH", help="A LoRA adapter directory to apply.")
    @argument("--draft-model", default=None, metavar="SPEC", help="A small model for speculative decoding.")
    @argument("--chat-template", default=None, metavar="FILE", help="A Jinja chat template file to use instead of the model's.")
    @argument("--fused-first-token", action="store_true", help=SWITCH_HELP["fused_first_token"])
    @argument("--cudnn-for-few-rows", action="store_true", help=SWITCH_HELP["cudnn_for_few_rows"])
    @argument("--no-progress", action="store_true", help="Do not show progress bars while loading.")
    @argument("--name", default=None, metavar="NAME",
              help="Load the model beside the current one under NAME (the current model stays "
                   "the default), for %%%%chat --compare model=NAME ...; loading NAME again "
                   "replaces it, %%mlx unload NAME frees it.")
    @argument_group("Default sampling for every request (the server's flags)")
    @argument("--temp", "--temperature", dest="temperature", type=float, default=None, help="Default temperature.")
    @argument("--top-p", type=float, default=None, help="Default nucleus sampling threshold.")
    @argument("--top-k", type=int, default=None, help="Default top-k.")
    @argument("--min-p", type=float, default=None, help="Default min-p.")
    @argument("--max-tokens", type=int, default=None, help="Default maximum of generated tokens.")
    @argument_group("A remote engine: any OpenAI-compatible server instead of a local model")
    @argument("--remote", default=None, metavar="URL",
              help="The server's API root, e.g. http://127.0.0.1:8080/v1 (mlx_lm.server, "
                   "vLLM, llama.cpp's server, another kernel's %%mlx serve).")
    @argument("--api-key", default=None, metavar="KEY", help="The bearer token the server wants.")
    @argument("--model", default=None, metavar="NAME",
              help="The server's model to use (default: the one it lists).")
    @argument("--family", default=None, metavar="F",
              help="The parser family that splits reasoning and tool calls when the server "
                   "sends raw text, e.g. qwen3 (default: guessed from the model name).")
    @argument("--timeout", type=seconds, default=None, metavar="SECONDS",
              help="How long to wait for the server to answer or to send the next part of a "
                   "reply before giving up (default: 120).")
    @line_magic
    def load_model(self, line: str = ""):
        """Start (or replace) the kernel-resident engine with a model and print what it is."""
        args = _parse(self.load_model, line, "%load_model")
        if args.spec is not None and not args.spec.strip():
            # (``%load_model $path`` with an empty path: not the default model in its place)
            raise UsageError("%load_model: the model spec is empty; name a model, e.g. "
                             "%load_model tiny-reasoner, or leave it out for the default.")
        _check_engine_name(args.name)
        if args.remote is not None:
            return self._load_remote(args)
        remote_only = [flag for flag, value in (("--api-key", args.api_key), ("--model", args.model),
                                                ("--family", args.family),
                                                ("--timeout", args.timeout)) if value is not None]
        if remote_only:
            raise UsageError(f"%load_model: {' and '.join(remote_only)} "
                             f"{'is' if len(remote_only) == 1 else 'are'} only for --remote URL "
                             "(a server's model); a local model is the spec, e.g. %load_model "
                             "tiny-reasoner.")
        from mlx_notebook.engine import Engine, EngineConfig

        sampling = {k: getattr(args, k) for k in ("temperature", "top_p", "top_k", "min_p", "max_tokens")
                    if getattr(args, k) is not None}
        # Checked before the old model is freed: a bad flag keeps the loaded engine.
        with as_usage_errors("%load_model"):
            config = EngineConfig(
                model_spec=args.spec, progress=not args.no_progress, dtype=args.dtype,
                prompt_cache_bytes=args.prompt_cache_bytes, max_kv_size=args.max_kv_size,
                adapter_path=args.adapter, draft_model=args.draft_model,
                chat_template=read_template(args.chat_template), default_sampling=sampling,
                fused_first_token=args.fused_first_token,
                cudnn_for_few_rows=args.cudnn_for_few_rows,
            )
        if args.name is not None:  # beside the default; a model of that name is freed first
            reload = _reload_line(self.named_engines.get(args.name))
            self._close_named(args.name)
            engine = self.named_engines[args.name] = _start(
                Engine, config, reload and f"{reload} --name {shlex.quote(args.name)}",
                f"as '{args.name}'")
            display(reports.model_summary(engine.model_info))
            display(reports.text(f"Loaded as '{args.name}': %%chat --compare model=default "
                                 f"model={args.name} compares it with the default model."))
            return
        # Free the old model first: two models at once may not fit in memory. A running
        # %mlx serve answers 503 meanwhile and then serves the new model.
        if self.listener is not None:
            self.listener.engine = None
        reload = _reload_line(self.engine)
        self._close_engine()
        self.engine = _start(Engine, config, reload, "")
        if self.listener is not None:
            self.listener.engine = self.engine
        display(reports.model_summary(self.engine.model_info))
        from mlx_notebook.engine import slow_blas_note

        note = slow_blas_note()
        if note:
            display(reports.text(note))

    def _load_remote(self, args: Any) -> None:
        if args.spec is not None:
            raise UsageError("%load_model: give a model spec or --remote URL, not both.")
        from mlx_notebook.engine import RemoteEngine

        with as_usage_errors("%load_model"):  # connected first: a wrong URL keeps the engine
            engine = RemoteEngine(args.remote, api_key=args.api_key, model=args.model,
                                  family=args.family, timeout=args.timeout)
        if args.name is not None:
            self._close_named(args.name)
            self.named_engines[args.name] = engine
            display(reports.text(f"{engine.summary()} Loaded as '{args.name}'."))
            return
        self._close_engine()
        self.engine = engine
        if self.listener is not None:
            self.listener.engine = engine
        display(reports.text(engine.summary()))

    # ----------------------------------------------------------------------- %%chat

    @magic_arguments(name="%chat")  # the help's usage line then reads %%chat
    @argument("--system", default=None, metavar="TEXT",
              help="The session's system prompt, from this turn on ('' removes it).")
    @argument("--think", dest="think", action="store_true", default=None,
              help="Ask the template to enable thinking (enable_thinking=True).")
    @argument("--no-think", dest="think", action="store_false", default=None,
              help="Ask the template to disable thinking (enable_thinking=False).")
    @argument("--think-budget", type=int, default=None, metavar="N",
              help="End reasoning after N tokens (the end-of-reasoning marker is forced) and "
                   "let the model answer; the footer says when it cut (thinking_token_budget).")
    @argument("--json", nargs="?", const="", default=None, metavar="TYPE",
              help="Decode the answer to JSON (response_format): alone, any JSON object; with a "
                   "pydantic model, dataclass, TypedDict or JSON schema dict from the notebook "
                   "(or a type such as list[int]), that type's schema. _.parsed reads the "
                   "answer, built as TYPE.")
    @argument_group("Session")
    @argument("--session", default=None, metavar="NAME",
              help=f"The conversation to continue (default: '{DEFAULT_SESSION}'); created on first use.")
    @argument("--new", action="store_true", default=None, help="Start the session afresh.")
    @argument_group("Tools")
    @argument("--tools", default=None, metavar="NAMES",
              help="Comma-separated functions from the notebook to offer as tools (obj.method "
                   "and module.function too), or 'none'; by default every @mlx_notebook.tool "
                   "function is offered.")
    @argument("--confirm", action="store_true", default=None,
              help="Ask yes/no before running each tool call.")
    @argument("--max-rounds", type=at_least_one, default=None, metavar="N",
              help=f"Model calls a tool loop may make (default {DEFAULT_MAX_ROUNDS}).")
    @argument_group("Compare")
    @argument("--compare", nargs=2, type=compare_side, default=None, metavar=("A", "B"),
              help="Send the message twice, with option sets A and B over the cell's flags "
                   "(e.g. \"temperature=0\" \"temperature=1.2 seed=3\"): both replies stream side "
                   "by side, decoded together, and the token where they diverge is marked. A side "
                   "may name a model loaded with %%load_model SPEC --name NAME (\"model=NAME "
                   "temperature=0\"; model=default is the unnamed one): two models decode at "
                   "once and are compared by text, since their tokens differ. "
                   "Neither joins the session; _.choose(0) or _.choose(1) adds one.")
    @sampling_arguments
    @output_arguments
    @no_var_expand
    @cell_magic
    def chat(self, line: str, cell: str):
        """Send the cell as the next user message of a chat session and stream the reply.

        Returns the turn (also in _): content, reasoning, tool_calls, usage, timings, the
        exact request body and the raw chunks. The Stop button ends the reply where it is
        and keeps it in the session (_.drop() removes it).
        """
        args = self._chat_args(line, "%%chat", self.chat)
        if args.session is not None and not args.session.strip():
            raise UsageError("%%chat: --session needs a name, e.g. --session notes.")
        if args.compare:  # each side on the engine it names
            engines = [self._engine_named(side.model, "%%chat") for side in args.compare]
            engine = engines[0]
        else:
            engine = self._engine("%%chat")
        text = self._cell_text(cell, args, "%%chat")
        try:
            with as_usage_errors("%%chat"):
                tools = resolve_tools(tool_names(args.tools), self.shell.user_ns)
        except UsageError as exc:
            if "tools" in self.defaults and _parse(self.chat, line, "%%chat").tools is None:
                # The cell never named the tool: say where it came from.
                raise UsageError(f"{exc} (The tools come from %mlx config: "
                                 f"{self.defaults['tools']}; %mlx config tools= removes them.)"
                                 ) from None
            raise
        session = self.sessions.open(args.session or DEFAULT_SESSION, new=bool(args.new))
        answer_type, answer_format = self._answer_format(args.json, line)
        body = {"messages": session.messages_for(text, system=args.system), **body_fields(args)}
        if tools:
            body["tools"] = [t.schema() for t in tools]
        if answer_format is not None:
            body["response_format"] = answer_format

        def make_turn(body: dict, engine: Any = engine) -> Turn:
            return Turn(model=reports.model_name(engine), session=session.name, request=body,
                        user_message=body["messages"][-1], options=set_options(args),
                        tools_offered=[t.name for t in tools], model_dtype=_model_dtype(engine),
                        answer_type=answer_type)

        confirm = ask_before_running if args.confirm else None
        max_rounds = args.max_rounds or DEFAULT_MAX_ROUNDS
        if args.compare:
            # Both sides ask for log-probabilities: the divergence is found on real tokens.
            bodies = [{**body, **side.fields, "logprobs": True, "top_logprobs": args.tokens or 5}
                      for side in args.compare]
            return self._compare(engines, [make_turn(b, e) for b, e in zip(bodies, engines)],
                                 [side.label for side in args.compare],
                                 args, session, tools=tools, confirm=confirm, max_rounds=max_rounds)
        turn = make_turn(body)
        try:
            self._run(engine, turn, args, "%%chat", kind="chat", tools=tools, confirm=confirm,
                      max_rounds=max_rounds)
        except KeyboardInterrupt:
            session.add(turn, system=args.system)  # what the user saw stays in the conversation
            raise
        session.add(turn, system=args.system)
        self._warn_tools_unsupported(turn)
        self._warn_think_ignored(engine, turn, args.think)
        self._note_cached_tokens_not_reported(engine)
        return self._result(turn, args, "%%chat")

    def _answer_format(self, text: str | None, line: str = "") -> tuple[Any, dict | None]:
        """``--json [TYPE]``: the type the answer is built as, and its ``response_format``."""
        if text is None:
            return None, None
        if not text.strip():
            return None, {"type": "json_object"}
        from .tools import ToolError, answer_schema

        # The line's quotes come off as a shell's do: Literal['a'] arrives as Literal[a].
        written = _option_text(line, "--json") or text
        quotes = "" if _quoted(written) or written == text else (
            f"; the line's quotes come off, so quote the whole type: --json {_requoted(written)}")
        try:
            kind = eval(text, self.shell.user_ns)  # noqa: S307 -- the user's own notebook
        except Exception as exc:  # noqa: BLE001 -- a name not defined, an expression that fails
            raise UsageError(f"%%chat: --json {text}: {type(exc).__name__}: {exc}"
                             f"{quotes or '; define the type in the notebook first'}.") from None
        try:
            schema = answer_schema(kind)
        except ToolError as exc:
            raise UsageError(f"%%chat: --json {text}: {str(exc).rstrip('.')}{quotes}.") from None
        name = re.sub(r"[^A-Za-z0-9_-]", "_", getattr(kind, "__name__", "answer"))[:64] or "answer"
        return kind, {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}

    # ------------------------------------------------------------------- %%complete

    @magic_arguments(name="%complete")
    @sampling_arguments
    @output_arguments
    @no_var_expand
    @cell_magic
    def complete(self, line: str, cell: str):
        """Continue the cell's text with the model: raw completion, no chat template."""
        args = self._chat_args(line, "%%complete", self.complete)
        engine = self._engine("%%complete")
        body = {"prompt": self._cell_text(cell, args, "%%complete"), **body_fields(args)}
        turn = Turn(model=reports.model_name(engine), session="", request=body,
                    options=set_options(args), model_dtype=_model_dtype(engine))
        self._run(engine, turn, args, "%%complete", kind="completion")
        return self._result(turn, args, "%%complete")

    # ------------------------------------------------------------------------ %mlx

    @no_var_expand
    @line_magic
    def mlx(self, line: str = ""):
        """Inspect and manage the engine and sessions: %mlx SUBCOMMAND [options]."""
        name, rest = (line.split(None, 1) + ["", ""])[:2]  # any whitespace, a pasted tab too
        # -h and --help ask for help as they do on a command line, not for a subcommand.
        if name in ("-h", "--help"):
            name, rest = "help", ""
        elif name in self.subcommands and {"-h", "--help"} & set(rest.split()):
            name, rest = "help", name
        handler = self.subcommands.get(name or "help")
        if handler is None:
            raise UsageError(
                f"%mlx: unknown subcommand '{name}'; use one of {', '.join(self.subcommands)}."
            )
        return handler(rest.strip())

    @magic_arguments(name="mlx status")
    @argument("--json", action="store_true",
              help="Print what the engine panel shows as JSON: model, health, live and recent "
                   "requests, prompt cache (the layout is in mlx_notebook/panel.py).")
    def _status(self, line: str):
        """The loaded model, its memory, the engine's health and its active requests; what
        %mlx serve is serving (each HTTP request with its client's address) and the models
        loaded with %load_model --name."""
        args = _parse(self._status, line, "%mlx status")
        if args.json:
            display(reports.text(json.dumps(self.panel.snapshot(), indent=1)))
            return
        display(reports.status(self.engine, self.listener))
        if self.named_engines:  # %load_model SPEC --name NAME
            display(reports.text("\n".join(
                ["named models (%%chat --compare model=NAME):"]
                + [f"  {name}: {reports.model_name(engine)}, "
                   f"{'healthy' if engine.healthy else 'stopped'}, "
                   f"{plural(engine.active_requests, 'active request')}"
                   for name, engine in self.named_engines.items()])))

    @magic_arguments(name="mlx serve")
    @argument("--port", type=int, default=8080, metavar="N",
              help="The port to listen on (default 8080, as mlx_lm.server; 0 picks a free one).")
    @argument("--host", default="127.0.0.1", metavar="H",
              help="The address to listen on (default 127.0.0.1: this machine only).")
    @argument("--token", default=None, metavar="T",
              help="The bearer token clients must send (default: a new one, shown once); '' "
                   "serves without one, on a loopback host only, and then refuses web pages "
                   "not in --allowed-origins.")
    @argument("--allowed-origins", default="", metavar="O",
              help="Comma-separated web origins whose pages may call the API from a browser "
                   "(CORS), e.g. http://localhost:3000, or * for any (default: none).")
    @argument("--stop", action="store_true", help="Stop serving.")
    def _serve(self, line: str):
        """Serve the loaded model over an OpenAI-compatible HTTP API while the notebook keeps working.

        HTTP clients and %%chat cells share the engine and are batched together; %mlx status
        lists the requests being served. The listener stops with the kernel or with --stop.
        Returns the listener (server = %mlx serve: server.url, server.token).
        """
        args = _parse(self._serve, line, "%mlx serve")
        if args.stop:
            if self.listener is None:
                raise UsageError("%mlx serve --stop: nothing is being served.")
            listener, self.listener = self.listener, None
            listener.stop()
            display(reports.text(f"Stopped serving at {listener.url}."))
            return
        if self.listener is not None:
            raise UsageError(f"%mlx serve: already serving at {self.listener.url}; "
                             "%mlx serve --stop first.")
        engine = self._engine("%mlx serve")
        from mlx_notebook.engine import Listener

        with as_usage_errors("%mlx serve"):
            self.listener = Listener(engine, host=args.host, port=args.port, token=args.token,
                                     allowed_origins=args.allowed_origins).start()
        display(reports.serving(self.listener, reports.model_name(engine)))
        return self.listener

    @magic_arguments(name="mlx panel")
    def _panel(self, line: str):
        """Open JupyterLab's engine panel for this kernel (the mlx-notebook extension draws it)."""
        _parse(self._panel, line, "%mlx panel")
        if not _in_kernel(self.shell):
            raise UsageError("%mlx panel: the engine panel is part of JupyterLab; use %mlx status here.")
        self.panel.open_in_front_end()
        # Only JupyterLab and Notebook 7 with the extension answer; other front ends ignore it.
        display(reports.text("Asked JupyterLab to open the engine panel (also in the command palette: "
                             "\"MLX: Open engine panel\")."))

    @magic_arguments(name="mlx unload")
    @argument("name", nargs="?", default=None,
              help="A model loaded with %%load_model SPEC --name NAME (default: the unnamed model, "
                   "which also stops %%mlx serve).")
    def _unload(self, line: str):
        """Stop the engine and free the model's memory (sessions are kept)."""
        args = _parse(self._unload, line, "%mlx unload")
        if args.name not in (None, DEFAULT_ENGINE):
            if args.name not in self.named_engines:
                raise UsageError(f"%mlx unload: no model is loaded as '{args.name}'; %mlx status "
                                 "lists the loaded ones.")
            model = reports.model_name(self.named_engines[args.name])
            self._close_named(args.name)
            display(reports.text(f"Unloaded {model} ('{args.name}')."))
            return
        if self.engine is None and self.named_engines:  # only --name ones: say how to free them
            names = list(self.named_engines)
            raise UsageError(f"%mlx unload: no default model is loaded; name the one to free, "
                             f"e.g. %mlx unload {names[0]} (loaded with --name: {', '.join(names)}).")
        if self.engine is None:
            raise UsageError("%mlx unload: no model is loaded, so there is nothing to unload.")
        name = reports.model_name(self.engine)
        if self.listener is not None:
            listener, self.listener = self.listener, None
            listener.stop()
        self._close_engine()  # named models stay loaded
        display(reports.text(f"Unloaded {name}."))

    @magic_arguments(name="mlx cache")
    @argument("--tree", action="store_true",
              help="Draw the cached prompts as a tree, shared prefixes merged, with each "
                   "entry's bytes, kind, hits and age, and where each session's next turn "
                   "picks up.")
    def _cache(self, line: str):
        """The prompt cache: entries, tokens, bytes, and the last lookups' hits and misses."""
        args = _parse(self._cache, line, "%mlx cache")
        engine = self._engine("%mlx cache")
        if args.tree:
            from .cache_tree import session_reuse, tree_report

            with as_usage_errors("%mlx cache"):  # a remote model's tokenizer is out of reach
                reuse = session_reuse(engine, self.sessions)
                display(tree_report(engine.cache_info(), engine.tokenizer.decode, reuse=reuse))
            return
        display(reports.cache(engine.cache_info()))

    @magic_arguments(name="mlx render")
    @argument("session", nargs="?", default=None, help=_SESSION_HELP)
    @argument("--message", default=None, metavar="TEXT", help="Render as if TEXT were the next user message.")
    @argument("--tools", default=None, metavar="NAMES", help="Offer these notebook functions as tools.")
    def _render(self, line: str):
        """The session's next prompt as the chat template renders it, with its token count."""
        args = _parse(self._render, line, "%mlx render")
        engine = self._engine("%mlx render")
        with as_usage_errors("%mlx render"):
            session = self._session_or_unused(args.session)  # rendering creates none
            tools = resolve_tools(tool_names(args.tools), self.shell.user_ns)
            messages = session.history()
            if args.message is not None:
                messages.append({"role": "user", "content": args.message})
            if not messages:
                raise UsageError(f"%mlx render: session '{session.name}' has no messages yet; "
                                 "chat first or pass --message TEXT.")
            body = {"messages": messages, **({"tools": [t.schema() for t in tools]} if tools else {})}
            inspection = engine.inspect(body)
        tokenizer = engine.tokenizer
        display(reports.rendered_prompt(inspection, reports.special_token_ids(tokenizer), tokenizer.decode))

    @magic_arguments(name="mlx trace")
    @argument("text", nargs="?", default=None,
              help="What to parse: a turn (e.g. _) to replay what the engine parsed, "
                   "a notebook variable holding text, or literal text.")
    @argument("--family", default=None,
              help="The parser family for text, e.g. qwen3, deepseek_r1, deepseek_v4; for a "
                   "turn or fixture, replay it through this family instead of its own.")
    @argument("--chunking", type=chunking_spec, default=None, metavar="HOW",
              help="How to cut text into deltas: 1 (per character, the default), sizes like "
                   "1,3,7, random, or tokens (with the loaded model's tokenizer); a turn or "
                   "fixture streams as it was recorded unless this is given.")
    @argument("--fixture", default=None, metavar="PATH",
              help="Replay a parser fixture written by turn.to_fixture(PATH).")
    @argument("--round", type=int, default=-1, metavar="N",
              help="Which model call of a turn or fixture to replay (0 is the first; default the last).")
    def _trace(self, line: str):
        """Replay model output through the reasoning/tool-call parser step by step (the parser debugger)."""
        args = _parse(self._trace, line, "%mlx trace")
        from mlx_notebook.engine import trace_text

        if (args.fixture is None) == (args.text is None):
            raise UsageError("%mlx trace: give text, a turn, or --fixture PATH (one of them).")
        value = None
        if args.text is not None:
            value = self.shell.user_ns.get(args.text, args.text) if args.text.isidentifier() else args.text
        if args.fixture is not None or (isinstance(value, Turn) and any(r.recorded for r in value.rounds)):
            from .testing import replay

            try:
                return replay(args.fixture or value, round=args.round, family=args.family,
                              chunking=args.chunking)
            except OSError as exc:
                raise UsageError(f"%mlx trace: cannot read {args.fixture}: {exc.strerror}.") from None
            except (KeyError, ValueError) as exc:
                raise UsageError(f"%mlx trace: {str(exc).strip(repr(''))}") from None
        if isinstance(value, Turn):
            engine = self._engine("%mlx trace")
            if not value.rounds or value.rounds[-1].request_id is None:
                raise UsageError(f"%mlx trace: the turn in '{args.text}' never reached the engine.")
            with as_usage_errors("%mlx trace"):
                return engine.trace(value.rounds[-1].request_id)
        if not isinstance(value, str):
            raise UsageError(f"%mlx trace: '{args.text}' is of type {type(value).__name__}, not "
                             "text or a turn.")
        if args.family is None:
            raise UsageError("%mlx trace: give the parser family to trace text, e.g. --family qwen3.")
        kwargs: dict[str, Any] = {} if args.chunking is None else {"chunking": args.chunking}
        if args.chunking == "tokens":
            kwargs["tokenizer"] = self._engine("%mlx trace").tokenizer
        try:
            traced = trace_text(value, args.family, **kwargs)
        except (KeyError, ValueError) as exc:
            raise usage_error("%mlx trace", ValueError(str(exc).strip(repr("")))) from None
        if args.text is not None and args.text.isidentifier() and args.text not in self.shell.user_ns:
            # A mistyped variable would otherwise trace its own name without a word.
            display(reports.text(f"'{args.text}' is no variable in the notebook: traced as the "
                                 "text itself."))
        return traced

    @magic_arguments(name="mlx sessions")
    def _sessions(self, line: str):
        """Every chat session with its turns and system prompt."""
        _parse(self._sessions, line, "%mlx sessions")
        display(reports.sessions(list(self.sessions)))

    @magic_arguments(name="mlx history")
    @argument("session", nargs="?", default=None, help=_SESSION_HELP)
    def _history(self, line: str):
        """A session's turns, marking stopped ones and those not sent as history (failed or dropped)."""
        args = _parse(self._history, line, "%mlx history")
        with as_usage_errors("%mlx history"):
            display(reports.history(self._session_or_unused(args.session)))

    @magic_arguments(name="mlx reset")
    @argument("session", nargs="?", default=None, help=_SESSION_HELP)
    def _reset(self, line: str):
        """Forget a session's turns and system prompt."""
        args = _parse(self._reset, line, "%mlx reset")
        with as_usage_errors("%mlx reset"):
            session = self._session_or_unused(args.session)
            if session.name not in self.sessions:
                # A notebook may open with %mlx reset: on a fresh kernel that must not stop Run All.
                display(reports.text(f"Session '{session.name}' is empty: nothing has been said "
                                     "in it yet."))
                return
            self.sessions.reset(session.name)
        display(reports.text(f"Session '{session.name}' is empty again."))

    def _session_or_unused(self, named: str | None) -> Session:
        """The session ``named``, else the one %%chat continues; that one or 'default', before
        any cell used it, as an empty session, without creating it (a %%chat creates it)."""
        name = named or self._continued_session()
        if name not in self.sessions and (named is None or name == DEFAULT_SESSION):
            return Session(name)
        return self.sessions.get(name)

    @magic_arguments(name="mlx config")
    @argument("settings", nargs="*", metavar="KEY=VALUE",
              help="A %%%%chat/%%%%complete flag without its dashes and its value, e.g. temperature=0.7, "
                   "think=false, session=math, tools=get_weather (or as a cell writes it: "
                   "--max-tokens 64, --no-think); KEY= removes it. No settings shows the "
                   "current defaults.")
    def _config(self, line: str):
        """Set defaults for the chat flags of this kernel; flags on a cell still win."""
        switches = {_config_key(flag) for action in self.chat.parser._actions
                    if action.nargs in (0, "?") for flag in action.option_strings}
        args = _parse(self._config, _flags_as_settings(line, config_keys(self.chat), switches),
                      "%mlx config")
        changes: dict[str, str | None] = {}  # applied only when every setting is valid
        for setting in args.settings:
            key, sep, value = setting.partition("=")
            key = _config_key(key)
            if not sep:
                raise UsageError(f"%mlx config: '{setting}' is not KEY=VALUE; e.g. temperature=0.7.")
            if key not in config_keys(self.chat):
                raise UsageError(f"%mlx config: unknown key '{key}'; use one of "
                                 f"{', '.join(sorted(config_keys(self.chat)))}.")
            if value == "":
                changes[key] = None
                continue
            if key == "session" and not value.strip():  # every %%chat would refuse it
                raise UsageError("%mlx config: session needs a name, e.g. session=notes "
                                 "(session= removes the default).")
            fragment = config_fragment(key, value, self.engine)
            if key == "stop" and changes.get(key):  # repeated, as the flag is, for several
                fragment = f"{changes[key]} {fragment}"
            changes[key] = fragment
            _parse(self.chat, changes[key], f"%mlx config {key}")  # validated as the cell would be
        for key, fragment in changes.items():
            if fragment is None:
                self.defaults.pop(key, None)
            else:
                self.defaults[key] = fragment
        display(reports.config(self.defaults))

    @magic_arguments(name="mlx tools")
    @argument("--remove", nargs="+", default=None, metavar="NAME",
              help="Stop offering these @mlx_notebook.tool functions to every %%%%chat.")
    @argument("--clear", action="store_true", help="Stop offering every registered tool.")
    def _tools(self, line: str):
        """The tools every %%chat offers (registered with @mlx_notebook.tool), or remove some."""
        args = _parse(self._tools, line, "%mlx tools")
        if args.clear and args.remove:  # (--clear would remove every tool, --remove named too)
            raise UsageError("%mlx tools: give --clear (every tool) or --remove NAME ..., not both.")
        if args.clear:
            removed = unregister_tools(None)
            display(reports.text(f"Removed {plural(len(removed), 'tool')}: {', '.join(removed) or 'none'}."))
            return
        if args.remove:
            with as_usage_errors("%mlx tools"):
                removed = unregister_tools(args.remove)
            display(reports.text(f"Removed {', '.join(removed)}; "
                                 f"{plural(len(registered_tools()), 'tool')} still offered."))
            return
        tools = registered_tools()
        if not tools:
            display(reports.text("No tools are registered: decorate a function with "
                                 "@mlx_notebook.tool to offer it to every %%chat."))
            return
        lines = ["Offered to every %%chat (unless the cell passes --tools):"]
        for tool in tools.values():
            params = ", ".join(tool.parameters.get("properties", {}))
            lines.append(f"  {tool.name}({params})" + (f": {tool.description}" if tool.description else ""))
        display(reports.text("\n".join(lines)))

    @magic_arguments(name="mlx help")
    @argument("subcommand", nargs="?", default=None, help="Show only this subcommand's help.")
    def _help(self, line: str):
        """Every magic in one line each, or one subcommand's options."""
        args = _parse(self._help, line, "%mlx help")
        if args.subcommand is None:
            display(reports.text(help_overview()))
            return
        other = {"chat": "%%chat?", "complete": "%%complete?", "load_model": "%load_model?"}
        name = args.subcommand.lstrip("%")
        if name in other:  # a magic of its own, not a subcommand: IPython's ? shows its help
            raise UsageError(f"%mlx help: {args.subcommand} is a magic of its own, not an %mlx "
                             f"subcommand; {other[name]} shows its options.")
        if args.subcommand not in self.subcommands:
            raise UsageError(f"%mlx help: unknown subcommand '{args.subcommand}'; use one of "
                             f"{', '.join(self.subcommands)}.")
        display(reports.text(self.subcommands[args.subcommand].__doc__))

    # ---------------------------------------------------------------------- shared

    def _chat_args(self, line: str, magic: str, func: Any):
        """The cell's flags over the ``%mlx config`` defaults (each set flag replaces its default)."""
        args = _parse(func, line, magic)
        known = vars(args)
        fragments = [v for k, v in self.defaults.items() if k in known]
        if fragments:
            defaults = _parse(func, " ".join(fragments), "%mlx config")
            for key, value in vars(defaults).items():
                if known[key] is None:
                    setattr(args, key, value)
        return args

    def _note_cached_tokens_not_reported(self, engine: Any) -> None:
        """Once per server: its usage has no cached-token count, so the footer's 0 is a blank."""
        if getattr(engine, "cached_tokens_reported", None) is not False:
            return
        if engine.url not in self._noted_no_cached_tokens:
            self._noted_no_cached_tokens.add(engine.url)
            display(reports.text(f"Note: the server at {engine.url} does not report cached "
                                 "tokens, so the footer's cached count reads 0: not reported."))

    def _warn_tools_unsupported(self, turn: Turn) -> None:
        """Once per session and model: the tools never reached the model (the card says it
        on every such turn)."""
        key = (turn.session, turn.model)
        if not turn.tools_unsupported or key in self._warned_tools_unsupported:
            return
        self._warned_tools_unsupported.add(key)
        display(reports.text(
            f"Warning: {turn.model}'s chat template cannot show tools, so the model never saw "
            f"{', '.join(turn.tools_offered)} and may invent an answer; use a model with tool "
            "calling, or --tools none to stop offering them."))

    def _warn_think_ignored(self, engine: Any, turn: Turn, think: bool | None) -> None:
        """Once per model: --think / --no-think set a variable its template never reads."""
        if think is None or turn.model in self._warned_think_ignored:
            return
        try:
            template = getattr(engine.tokenizer, "chat_template", None)
        except EngineError:  # a remote model tokenizes on its server: its template is unseen
            return
        if not isinstance(template, str) or "enable_thinking" in template:
            return
        self._warned_think_ignored.add(turn.model)
        display(reports.text(
            f"Note: {turn.model}'s chat template does not read enable_thinking, so "
            f"{'--think' if think else '--no-think'} changes nothing for this model."))

    def _continued_session(self) -> str:
        """The session a %%chat without --session continues: %mlx config's, else 'default'
        (so %mlx history, reset and render without a name mean the chat the cells are in)."""
        fragment = self.defaults.get("session")
        return (_parse(self.chat, fragment, "%mlx config").session if fragment else None) \
            or DEFAULT_SESSION

    def _engine(self, magic: str) -> Any:
        if self.engine is None:
            raise no_model_error(magic, list(self.named_engines))
        return self.engine

    def _cell_text(self, cell: str, args: Any, magic: str) -> str:
        if not cell.strip():
            raise UsageError(f"{magic}: the cell is empty; write the message below the {magic} line.")
        # The newline IPython leaves after the cell's last line is not part of the message.
        cell = cell.rstrip("\n")
        if args.no_interpolate:
            return cell
        return interpolate(cell, self.shell.user_ns, magic=magic)

    def _run(self, engine: Any, turn: Turn, args: Any, magic: str, **kwargs: Any) -> None:
        if args.show_request:
            display(reports.request(turn.request))
        view = None if args.no_stream else self._view(turn)
        kind = kwargs.get("kind", "chat")
        watched = watch_cache(engine, turn, view, kind=kind)  # a missed lookup's cache parting
        try:
            with (as_usage_errors(magic, turn.request.get("messages")),
                  self.panel.tracking(turn, watched, kind=kind) as tracked):
                run_turn(engine, turn, tracked, **kwargs)
        except KeyboardInterrupt:
            # Kernel › Interrupt or Ctrl-C: the turn is recorded as stopped and shown; the
            # cell still fails, as IPython's convention wants, so Run All stops here.
            if view is not None:
                view.finish(turn)
            else:  # --no-stream shows the turn once it ends, and a stopped one has ended
                display(turn)
            self.shell.displayhook.update_user_ns(turn)
            if kind != "chat":  # a completion belongs to no session
                raise KeyboardInterrupt(f"{magic} stopped; the partial text is in _.") from None
            if turn.stopped_empty:
                raise KeyboardInterrupt(
                    f"{magic} stopped before the model wrote anything; the turn is in _ but not "
                    "in the session's history (_.keep() adds it).") from None
            raise KeyboardInterrupt(
                f"{magic} stopped; the partial reply is kept (in _ and in the session's "
                "history; _.drop() removes it).") from None
        if view is not None:
            view.finish(turn)
        else:
            display(turn)
        if args.tokens and not turn.logprobs and getattr(engine, "url", None):
            display(reports.text(f"No token probabilities: the server at {engine.url} sent none "
                                 "(mlx_lm.server streams none)."))
        elif args.tokens:
            display(self._token_view(turn))
        if args.raw:
            display(reports.chunk_table(turn.chunks))

    def _compare(self, engines: list[Any], sides: list[Turn], labels: list[str], args: Any,
                 session: Any, **run_options: Any) -> Any:
        from .compare import compare_turns, comparison_mimebundle, cut_alike, run_comparison

        if args.show_request:  # each side's body, as one cell's --show-request shows it
            for turn, label in zip(sides, labels):
                display(reports.text(f"{label}:"))
                display(reports.request(turn.request))
        views, handle = None, None
        if not args.no_stream and _in_kernel(self.shell):
            try:
                import ipywidgets

                from .widgets import ChatView
            except ImportError:
                pass
            else:
                views = [ChatView(f"{turn.model} · {label}", turn.session, model_dtype=turn.model_dtype,
                                  turn=turn) for turn, label in zip(sides, labels)]
                row = ipywidgets.HBox(views, layout=ipywidgets.Layout(align_items="flex-start"))
                for view in views:
                    view.layout = ipywidgets.Layout(flex="1 1 0", min_width="0")
                handle = display(row, display_id=True)
        comparison = None
        try:
            with as_usage_errors("%%chat"):
                comparison = run_comparison(engines, sides, labels, views, session=session, **run_options)
        except KeyboardInterrupt:
            # Kernel › Interrupt: both sides stopped where they were; the cell fails with a
            # sentence, as a plain %%chat does, and the partial sides are in _ (and shown).
            comparison = compare_turns(sides, labels, same_model=cut_alike(*engines),
                                       session=session)
            self.shell.displayhook.update_user_ns(comparison)
            raise KeyboardInterrupt(
                "%%chat --compare stopped; both partial replies are in _, and neither is in "
                "the session's history (_.choose(0) or _.choose(1) adds one).") from None
        finally:
            if handle is not None:  # the live row gives way to the static comparison
                # Interrupted, run_comparison returned nothing: show how far both sides got.
                shown = comparison or compare_turns(sides, labels, same_model=cut_alike(*engines))
                data, metadata = comparison_mimebundle(shown)
                handle.update(data, metadata=metadata, raw=True)
                row.close()
                for view in views:
                    view.close()
        for turn in sides:
            if turn.exception is not None:
                self.shell.displayhook.update_user_ns(comparison)
                raise usage_error("%%chat", turn.exception)
        if args.raw:  # each side's chunks, as one cell's --raw shows them
            for turn, label in zip(sides, labels):
                display(reports.text(f"{label}:"))
                display(reports.chunk_table(turn.chunks))
        if handle is not None:  # shown already: Out[n] stays empty
            self.shell.displayhook.update_user_ns(comparison)
            return None
        return comparison

    def run_branch(self, turn: Turn, at: int, token: Any, *, max_tokens: int | None = None) -> Turn:
        """``turn.branch(...)`` in a notebook: the branch streams into its own card, under a
        line that links it to the turn it came from."""
        from .branch import branch_note, prepare_branch

        # A --compare side may have run on a named model: the branch runs on the same one.
        engine = next((e for e in (self.engine, *self.named_engines.values())
                       if e is not None and reports.model_name(e) == turn.model), None) \
            or self._engine("turn.branch")
        branch = prepare_branch(engine, turn, at, token, max_tokens=max_tokens)
        display(branch_note(branch.branched_from), raw=True)
        view = self._view(branch)
        try:
            with as_usage_errors("turn.branch"):
                run_turn(engine, branch, watch_cache(engine, branch, view, kind="completion"),
                         kind="completion")
        except KeyboardInterrupt:
            # As an interrupted %%chat: the card ends "stopped" (not streaming forever) and
            # the partial branch is kept, since the assignment it was called in never happens.
            view.finish(branch)
            self.shell.displayhook.update_user_ns(branch)
            raise KeyboardInterrupt("turn.branch stopped; the partial branch is in _.") from None
        view.finish(branch)
        if branch.exception is not None:
            raise usage_error("turn.branch", branch.exception)
        return self._shown_live(branch, live_terminal=not _in_kernel(self.shell))

    def _token_view(self, turn: Turn) -> Any:
        """The token view; in a notebook, clicking an alternative branches the reply there."""
        from .widgets import BranchingTokenView, TokenView

        if _in_kernel(self.shell) and "messages" in turn.request and turn.logprobs:
            return BranchingTokenView(turn.logprobs, lambda at, token: self.run_branch(turn, at, token))
        return TokenView(turn.logprobs)

    def _view(self, turn: Turn) -> Any:
        if _in_kernel(self.shell):
            try:
                from .widgets import ChatView
            except ImportError:  # the live widget is optional; plain text streams anywhere
                pass
            else:
                return ChatView(turn.model, turn.session, model_dtype=turn.model_dtype, turn=turn)
        return TerminalView(turn.model, turn.session, trim_edges="messages" in turn.request)

    def _result(self, turn: Turn, args: Any, magic: str) -> Turn:
        if turn.exception is not None:
            # The cell fails (so Run All stops) but the turn stays reachable as ``_``.
            self.shell.displayhook.update_user_ns(turn)
            raise usage_error(magic, turn.exception)
        # A turn stopped with the Stop button is the user's choice, not a failure: the cell
        # ends normally and the partial reply stays in the session (``_.drop()`` removes it).
        return self._shown_live(turn, live_terminal=not args.no_stream and not _in_kernel(self.shell))

    def _shown_live(self, turn: Turn, *, live_terminal: bool) -> Turn:
        """The cell showed ``turn`` as it streamed: its ``Out[n]`` shows nothing more in a
        notebook, the summary line in a terminal."""
        turn._display_instead = {"text/plain": f"[{turn.summary()}]"} if live_terminal else {}

        def shown(*_: Any) -> None:
            # Only this cell's Out[n] is replaced; later displays of the turn show it whole.
            turn._display_instead = None
            self.shell.events.unregister("post_run_cell", shown)

        self.shell.events.register("post_run_cell", shown)
        return turn


def _start(engine_class: type, config: Any, reload: str | None, where: str) -> Any:
    """Load ``config``'s model, after the one it replaces (``reload`` loads that one again;
    None: there was none) was freed for room. A failure only loading shows (a tensor of the
    wrong shape), or Ctrl-C on a slow load, says that model is gone too and how to get it back:
    otherwise a later cell's "no model is loaded" would be the first to say."""
    where = f" {where}" if where else ""
    try:
        with as_usage_errors("%load_model"):
            return engine_class(config=config)
    except UsageError as exc:
        if reload is None:
            raise
        raise UsageError(f"{exc} The model loaded{where} before was unloaded to make room; "
                         f"{reload} loads it again.") from exc.__cause__
    except KeyboardInterrupt:
        gone = (f" (the one before was unloaded to make room; {reload} loads it again)"
                if reload else "")
        raise KeyboardInterrupt(f"%load_model stopped; no model is loaded{where}{gone}.") from None


def _reload_line(engine: Any) -> str | None:
    """The %load_model line that loads ``engine``'s model again (None: no engine)."""
    if engine is None:
        return None
    if getattr(engine, "url", None):  # a remote model
        return (f"%load_model --remote {engine.url} --model {shlex.quote(engine.model)} "
                f"--family {engine.family}")
    config = engine.config
    line = "%load_model" + (f" {shlex.quote(config.model_spec)}" if config.model_spec else "")
    for flag, value in (("--adapter", config.adapter_path), ("--draft-model", config.draft_model),
                        ("--dtype", None if config.dtype == "auto" else config.dtype),
                        ("--max-kv-size", config.max_kv_size),
                        ("--chat-template", "FILE" if config.chat_template else None)):
        if value:
            line += f" {flag} {shlex.quote(str(value))}"
    switches = (f" {LOAD_FLAGS[name]}" for name in SWITCH_HELP if getattr(config, name))
    return line + "".join(switches)


def _model_dtype(engine: Any) -> str | None:
    info = engine.model_info
    return getattr(info, "dtype", None) or getattr(info, "quantization", None)


_TOOL_EXAMPLE = """\
Tools: a decorated function is offered to every %%chat (--tools NAMES picks, --tools none
offers none; %mlx tools lists them and removes them):

    import mlx_notebook

    @mlx_notebook.tool
    def get_weather(city: str) -> str:
        \"\"\"The current weather in a city.\"\"\"
        return "sunny, 21 C"
"""


def _first_line(paragraph: str) -> str:
    """The paragraph's first sentence on one line, without its full stop."""
    return " ".join(paragraph.split()).split(". ")[0].rstrip(".")


def help_overview() -> str:
    """``%mlx help`` and ``%mlx?``: every magic in one line, then how to offer a tool."""
    rows = [
        ("%load_model [SPEC]", _SUMMARIES["load_model"]),
        ("%%chat [options]", _SUMMARIES["chat"]),
        ("%%complete [options]", _SUMMARIES["complete"]),
    ]
    rows += [(f"%mlx {name}", _SUMMARIES[f"mlx {name}"]) for name in SUBCOMMANDS]
    width = max(len(name) for name, _ in rows)
    lines = ["mlx-notebook magics (add ? for one magic's options, e.g. %%chat?; "
             "%mlx help SUBCOMMAND for a subcommand's):", ""]
    lines += [f"  {name.ljust(width)}  {summary}" for name, summary in rows]
    return "\n".join(lines + ["", _TOOL_EXAMPLE])


def plain_help(doc: str | None) -> str:
    """A magic's help without reST markup: magic_arguments' ``::`` literal-block opener and
    double backquotes, which IPython's ``?`` shows verbatim."""
    text = (doc or "").replace("``", "")
    if text.startswith("::\n\n"):
        usage, _, rest = text[4:].partition("\n\n")
        text = textwrap.dedent(usage) + "\n\n" + rest
    return text


def _summary(function: Any) -> str:
    """The first sentence of a magic's own docstring (after magic_arguments' usage block)."""
    paragraphs = plain_help(function.__doc__).split("\n\n")
    return _first_line(paragraphs[1] if len(paragraphs) > 1 else paragraphs[0])


_SUMMARIES = {
    "load_model": _summary(MlxMagics.load_model),
    "chat": _summary(MlxMagics.chat),
    "complete": _summary(MlxMagics.complete),
    **{f"mlx {name}": _summary(getattr(MlxMagics, f"_{name}")) for name in SUBCOMMANDS},
}

# Every magic's help reads without reST markup; %mlx's own is the overview.
_MAGIC_METHODS = [method for kind in MlxMagics.magics.values() for method in kind.values()]
for _name in (*_MAGIC_METHODS, *(f"_{name}" for name in SUBCOMMANDS)):
    if _name != "mlx":
        getattr(MlxMagics, _name).__doc__ = plain_help(getattr(MlxMagics, _name).__doc__)
MlxMagics.mlx.__doc__ = help_overview()
del _name, _MAGIC_METHODS
