"""The flags ``%%chat`` and ``%%complete`` share, and how parsed flags become a request body.

Every sampling flag is spelled as the OpenAI/mlx-lm server field it sets and defaults to
"unset": an unset flag is left out of the body, so the engine's default applies and the
notebook never has silently different defaults from the server.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, argument_group

from mlx_notebook.engine import EngineConfig, EngineRequestError, admit, at_least_one

from ._upstream import option_destinations

__all__ = [
    "at_least_one",
    "sampling_arguments",
    "output_arguments",
    "sampling_fields",
    "parse_bytes",
    "parse_logit_bias",
    "unescape",
    "split_line",
    "set_options",
    "body_fields",
    "tool_names",
    "chunking_spec",
    "read_template",
    "config_fragment",
    "config_keys",
    "CONFIG_ALIASES",
    "option_set",
    "compare_side",
    "CompareSide",
]

# (flags, dest, type, help); dest is also the body field.
_SAMPLING = [
    (("--temperature", "--temp"), "temperature", float,
     "Sampling temperature; 0 is greedy decoding."),
    (("--top-p",), "top_p", float, "Nucleus sampling: keep the smallest token set with this total probability."),
    (("--top-k",), "top_k", int, "Keep only the K most likely tokens (0 disables)."),
    (("--min-p",), "min_p", float, "Drop tokens less likely than MIN_P times the most likely one."),
    (("--repetition-penalty",), "repetition_penalty", float,
     "Penalty for tokens seen in the recent context (1.0 or 0 disables)."),
    (("--presence-penalty",), "presence_penalty", float, "Subtract this from the logit of every token already generated."),
    (("--frequency-penalty",), "frequency_penalty", float,
     "Subtract this times a token's count so far from its logit."),
    (("--seed",), "seed", int, "Random seed, for reproducible sampling."),
    (("--max-tokens",), "max_tokens", int, "Stop after this many generated tokens."),
]


def parse_bytes(text: str) -> int:
    """``"512MB"``, ``"2GiB"`` or ``"1000000"`` as a byte count."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size; write e.g. 512MB or 2GiB")
    number, unit = float(match[1]), (match[2] or "").lower().rstrip("b")
    base = 1024 if unit.endswith("i") else 1000
    power = "kmgt".find(unit[:1]) + 1 if unit else 0
    return int(number * base**power)


def seconds(text: str) -> float:
    """An argparse type: a positive number of seconds (``--timeout 600``)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text!r}")
    return value


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def unescape(text: str) -> str:
    """``--stop '\\n'`` means a newline: a magic's line cannot hold one."""
    return re.sub(r"\\([ntr\\])", lambda m: _ESCAPES[m[1]], text)


def split_line(line: str) -> list[str]:
    """A magic's line split the POSIX way (``shlex.split``: quotes come off), but with an
    unquoted ``\\n``, ``\\t`` or ``\\r`` kept as written for ``unescape``: shlex reads the
    backslash as an escape and ``--stop \\n`` stopped on the letter n."""
    out, quote, i = [], "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':  # an escape inside "...": shlex's to read
                out.append(line[i:i + 2])
                i += 2
                continue
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            if line[i + 1:i + 2] in ("n", "t", "r"):
                out.append("\\\\")  # a backslash shlex keeps; the letter follows
            else:
                out.append(line[i:i + 2])
                i += 1
            i += 1
            continue
        out.append(ch)
        i += 1
    return shlex.split("".join(out))


def parse_logit_bias(text: str) -> dict[str, float]:
    """``'{"123": -100}'`` or ``123=-100,456=5`` as OpenAI's ``logit_bias`` (token id -> bias)."""
    try:
        pairs = json.loads(text) if text.lstrip().startswith("{") else dict(
            item.split("=", 1) for item in text.split(",") if item.strip())
        return {str(int(token)): float(bias) for token, bias in pairs.items()}
    except (ValueError, AttributeError):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a logit bias; write TOKEN_ID=BIAS pairs like 1234=-100,42=5"
        ) from None


def sampling_arguments(func: Callable) -> Callable:
    """Add the sampling flags, in a help group of their own, to a ``magic_arguments`` magic."""
    decorators = [argument_group("Sampling (unset flags keep the engine's defaults)")]
    for flags, dest, type_, help_ in _SAMPLING:
        decorators.append(argument(*flags, dest=dest, type=type_, default=None, help=help_))
    decorators.append(argument("--stop", action="append", type=unescape, default=None, metavar="TEXT",
                               help="Stop when the reply produces TEXT (\\n, \\t and \\\\ are "
                                    "decoded); repeat for several."))
    decorators.append(argument("--logit-bias", type=parse_logit_bias, default=None, metavar="BIASES",
                               help="Token biases as TOKEN_ID=BIAS pairs (1234=-100,42=5) or a JSON object."))
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def output_arguments(func: Callable) -> Callable:
    """Add the flags about what is shown and how the cell body is read."""
    decorators = [
        argument_group("Output"),
        argument("--no-stream", action="store_true", default=None,
                 help="Show the reply only when it is complete."),
        argument("--show-request", action="store_true", default=None,
                 help="Show the exact request body sent to the engine."),
        argument("--raw", action="store_true", default=None,
                 help="Show the raw streamed chunks as a table after the reply."),
        argument("--tokens", nargs="?", type=at_least_one, const=5, default=None, metavar="N",
                 help="Show the reply token by token with log-probabilities and the top N "
                      "alternatives (default 5)."),
        argument("--no-interpolate", action="store_true", default=None,
                 help="Send the cell verbatim; by default {name} is replaced from the "
                      "notebook's variables ({{ and }} are literal braces)."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def sampling_fields() -> list[str]:
    return [dest for _, dest, _, _ in _SAMPLING] + ["stop", "logit_bias"]


def set_options(args: argparse.Namespace) -> dict[str, Any]:
    """The flags the user actually set (config defaults included), for the record."""
    return {key: value for key, value in vars(args).items() if value is not None}


def body_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The request body fields the flags set (sampling, --think, --think-budget, --tokens);
    unset flags, and flags a magic lacks, stay out."""
    flag = vars(args).get
    fields = {field: flag(field) for field in sampling_fields() if flag(field) is not None}
    if flag("think") is not None:
        fields["chat_template_kwargs"] = {"enable_thinking": flag("think")}
    if flag("think_budget") is not None:
        fields["thinking_token_budget"] = flag("think_budget")
    if flag("tokens"):
        fields.update(logprobs=True, top_logprobs=flag("tokens"))
    return fields


def tool_names(text: str | None) -> list[str] | None:
    """``--tools f,g`` as names; None when unset (offer the ``@tool`` ones), [] for ``none``."""
    if text is None:
        return None
    if text.strip().lower() == "none":
        return []
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:  # (not silently no tools: "none" says that)
        from .tools import ToolError  # (a cell's mistake: the magic names itself before it)

        raise ToolError(f"--tools {text!r} names no function; write --tools f,g (or --tools "
                        "none to offer no tools).")
    return names


def chunking_spec(text: str) -> str | int | list[int]:
    """``--chunking``: ``tokens``, ``random``, ``1`` or ``1,3,7`` for the parser debugger."""
    if text in ("tokens", "random"):
        return text
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not tokens, random, a size or a list like 1,3,7") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not tokens, random, a size or a list like 1,3,7")
    return sizes[0] if len(sizes) == 1 else sizes


def read_template(path: str | None) -> str | None:
    """The text of ``--chat-template FILE`` (the engine takes the template itself)."""
    if path is None:
        return None
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"%load_model: cannot read the chat template file {path} ({exc.strerror}).") from None
    except UnicodeDecodeError:
        raise UsageError(f"%load_model: the chat template file {path} is not UTF-8 text.") from None


CONFIG_ALIASES = {"temp": "temperature"}

# %mlx config keys that are switches rather than values.
_SWITCHES = {"no_stream", "show_request", "raw", "no_interpolate", "confirm"}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

# %mlx config keys whose value goes into the request body (as ``body_fields`` puts it), and
# how the flag reads the value. The engine checks these only when a cell sends them.
_BODY_KEYS: dict[str, Callable[[str], Any]] = {
    **{dest: type_ for _, dest, type_, _ in _SAMPLING},
    "stop": lambda value: [unescape(value)],
    "logit_bias": parse_logit_bias,
    "think_budget": int,
    "tokens": at_least_one,
}


def config_fragment(key: str, value: str, engine: Any = None) -> str:
    """``think=false`` -> ``--no-think``, ``raw=true`` -> ``--raw``, ``top_p=0.9`` -> ``--top-p 0.9``.

    Raises UsageError for a value the engine would refuse: set as a default, it would fail
    every later cell, far from where it was written. With the loaded ``engine``, its model's
    limits (context, vocabulary) count too.
    """
    truth = value.strip().lower()
    if key == "think":
        if truth not in _TRUE + _FALSE:
            raise UsageError("%mlx config: think is true or false; write think=true or "
                             "think=false, or think= to remove it.")
        return "--think" if truth in _TRUE else "--no-think"
    if key in _SWITCHES:
        if truth not in _TRUE:
            raise UsageError(f"%mlx config: {key} is a switch; write {key}=true, or {key}= to remove it.")
        return f"--{key.replace('_', '-')}"
    if key in _BODY_KEYS:
        _check_with_engine(key, value, engine)
    return f"--{key.replace('_', '-')} {shlex.quote(value)}"


def _check_with_engine(key: str, value: str, engine: Any = None) -> None:
    """Admit a one-message request holding the value, as the engine admits a cell's: its
    ranges live there, once, for the server and the magics alike."""
    try:
        parsed = _BODY_KEYS[key](value)
    except (ValueError, argparse.ArgumentTypeError):
        return  # not a value at all: the flag's own parse says so, in the flag's words
    body = {"messages": [{"role": "user", "content": "."}],
            **body_fields(argparse.Namespace(**{key: parsed}))}
    try:
        if engine is not None:
            engine.admit(body, kind="chat")
        else:
            admit(body, kind="chat", config=EngineConfig())
    except EngineRequestError as exc:
        message = exc.message.replace(f"'{exc.param}'", key) if exc.param else exc.message
        raise UsageError(f"%mlx config: {message}") from None


def config_keys(func: Callable) -> set[str]:
    """The ``%mlx config`` keys: every flag of ``func`` (``%%chat``) but the one-cell ones.

    ``--new`` and ``--json`` (the answer one question wants) are about one cell, and
    ``--compare`` takes two values where a setting has one.
    """
    return option_destinations(func.parser) - {"new", "compare", "json"}


def option_set(text: str) -> dict[str, Any]:
    """``"temperature=1.2 seed=3"`` (a ``--compare`` side) as the body fields it sets.

    Keys are the sampling flags' names, with ``-`` or ``_`` (``max-tokens=40``, ``temp=0``);
    values are read as those flags read them, and ``stop`` may repeat.
    """
    types = {dest: type_ for flags, dest, type_, _ in _SAMPLING}
    names = {flag.lstrip("-").replace("-", "_"): dest for flags, dest, _, _ in _SAMPLING for flag in flags}
    names.update(stop="stop", logit_bias="logit_bias")
    fields: dict[str, Any] = {}
    for item in split_line(text):
        key, sep, value = item.partition("=")
        dest = names.get(key.strip().replace("-", "_"))
        if not sep or dest is None:
            # (model= is read by compare_side, the one caller, before the rest comes here)
            known = ", ".join(sorted(set(names) - {"temp"} | {"model"}))
            raise argparse.ArgumentTypeError(
                f"'{item}' is not an option setting; write KEY=VALUE with KEY one of {known}")
        try:
            if dest == "stop":
                fields.setdefault("stop", []).append(unescape(value))
            elif dest == "logit_bias":
                fields["logit_bias"] = parse_logit_bias(value)
            else:
                fields[dest] = types[dest](value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{item}': {value!r} is not a valid {key}") from None
    return fields


@dataclass(frozen=True, slots=True)
class CompareSide:
    """One ``--compare`` argument, parsed."""

    label: str
    """The argument as written (an empty one: "the cell's flags"): the side's label in the
    card."""
    fields: dict[str, Any]
    """The request body fields it sets over the cell's flags."""
    model: str | None = None
    """``model=NAME``: the engine it runs on (``%load_model SPEC --name NAME``; ``default`` is
    the unnamed one); None: the default engine."""


def compare_side(text: str) -> CompareSide:
    """One ``--compare`` argument: ``"model=b temperature=0"`` -> its label, fields and model."""
    model, rest = None, []
    try:
        items = split_line(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"cannot split '{text}' ({exc}); check the quotes") from None
    for item in items:
        key, sep, value = item.partition("=")
        if key.strip() == "model" and sep:
            if not value.strip():
                raise argparse.ArgumentTypeError(
                    "'model=' names no model; write model=NAME with a name given to %load_model --name")
            model = value.strip()
        else:
            rest.append(shlex.quote(item))
    # An empty side runs with the cell's own flags: its label says so.
    return CompareSide(text.strip() or "the cell's flags", option_set(" ".join(rest)), model)
