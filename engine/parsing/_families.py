"""Model families: which markers split a reply, and which parser reads a tool-call body.

A family is data, not code: the stream filter reads the markers from it and calls its tool
parser (a module with mlx-lm's ``tool_parsers`` surface) on each complete call. Bodies are
parsed by mlx-lm's own modules where it has the family (``mlx_lm.tool_parsers.<name>``) and by
ours in ``mlx_notebook.engine.parsing.parsers`` where it has none or needs adapting.

Marker strings live in the parser modules (``tool_call_start``/``tool_call_end``, and the
extra markers a module names, like ``gemma4.turn_end``): the table below reads them from the
module it selects by name, as mlx-lm does, so each marker is written once.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType

from . import parsers
from .parsers import deepseek_v4, gemma4, kimi_k2, llama3_json, mistral, pythonic, qwen3_coder

__all__ = [
    "ALIASES",
    "FAMILIES",
    "THINK_TAGS",
    "WHOLE_FUNCTION_JSON",
    "WHOLE_JSON",
    "WHOLE_PARSE",
    "Family",
    "ToolMarker",
    "family_name",
    "family_names",
    "get_family",
    "load_parser",
]


@dataclass(frozen=True, slots=True)
class ToolMarker:
    """One way a tool call is delimited in the output.

    ``end`` empty means the format has no closing marker (Mistral's ``[TOOL_CALLS]``): then
    ``scanner`` names the body scanner that finds where the call ends by its syntax.
    ``keep`` passes the markers to the parser with the body (for a marker that is part of
    the body's own syntax, like Qwen3-Coder's bare ``<function=...>``).
    """

    start: str
    end: str
    scanner: str | None = None
    keep: bool = False
    leading: bool = False
    """Only at the very start of the reply (Llama's bare ``[f(x=1)]``); implies ``soft``."""
    soft: bool = False
    """Markup that can also be ordinary text (a bare ``call:name{...}``): when it does not
    parse, or its scanner rejects it, it stays text of the mode it appeared in, and it
    never ends reasoning."""
    ends: tuple[str, ...] = ()
    """Other closing markers the model sometimes writes instead of ``end``."""
    only_with_tools: bool = False
    """Markup only when the request offered tools (Llama's ``{`` anywhere in a reply): without
    tools the model has nothing to call, and such text is the answer."""
    offered_names: bool = False
    """When the request offered tools, a call here must name one of them, else it stays text
    (Gemma's bare ``call:name{...}`` in an answer that explains the syntax)."""
    whole_ends: tuple[str, ...] = ()
    """What a call's own element ends in (``</function>``, ``</invoke>``…), or how a whole
    body reads (``WHOLE_JSON``, ``WHOLE_FUNCTION_JSON``, ``WHOLE_PARSE``). A call the reply
    leaves open after one of these lacks only ``end`` (a stop string or the reply's end took
    it), and is read as mlx_lm.server reads it; open anywhere else it was cut inside, and is
    a problem."""

    @property
    def is_soft(self) -> bool:
        return self.soft or self.leading


@dataclass(frozen=True, slots=True)
class Family:
    """How one model family marks reasoning and tool calls in its output."""

    name: str
    think: tuple[str, str] | None = None
    """(open, close) markers around reasoning, or None when the family does not reason."""
    tools: tuple[ToolMarker, ...] = ()
    parser: str | None = None
    """Module name of the tool-call body parser (ours first, then mlx-lm's)."""
    starts_in_reasoning: bool = False
    """The state a reply starts in when the caller does not know the prompt (DeepSeek-R1's
    template always pre-fills ``<think>``, so its replies begin inside reasoning)."""
    tool_ends_reasoning: bool = True
    """A tool call opened inside reasoning ends the reasoning (templates allow calling a tool
    straight from thought; mlx-lm's state machine makes the same transition)."""
    undecided_call_is_reasoning: bool = False
    """With the start state unknown, text before a call is reasoning (DeepSeek-V4 prompts
    always end in ``<think>`` or ``</think>``, so unmarked text before a DSML block is its
    thought), rather than content (what Hermes-style tool-call suites expect)."""
    think_anywhere: bool = False
    """The opening marker opens reasoning anywhere in content, not only at the start (Gemma 4
    writes a thought channel between answer text). Other families' later think blocks are
    text: see ``StreamFilter``."""
    call_gap_is_markup: bool = False
    """Whitespace between two calls, and a closing marker right after a call whose opening
    marker the model skipped, belong to the calls, not to content (Qwen3-Coder writes
    ``<function=...>`` bare and then ``</tool_call>``, and puts newlines between parallel
    ``<tool_call>`` blocks, as GLM does; vLLM's qwen3coder and glm4_moe tests expect neither
    in content)."""
    call_separators: tuple[str, ...] = ()
    """What the model writes between two calls besides whitespace (Llama 3's ``;``): with
    ``call_gap_is_markup``, markup when another call or the reply's end follows it, and text
    when anything else does."""
    reasoning_prefix: str | None = None
    """A label the model writes right after the opening marker (Gemma 4's ``thought\n``)."""
    content_channel: str | None = None
    """A marker that opens the answer wherever it comes, ending a thought that had no closing
    marker (Gemma 4's ``<|channel>response\n``); it is not text."""

    def parser_module(self) -> ModuleType | None:
        if self.parser is None:
            return None
        return load_parser(self.parser)


@functools.cache
def load_parser(name: str) -> ModuleType:
    """Our parser module ``name`` if we have one, else mlx-lm's (looked up once per name)."""
    ours = f"{parsers.__name__}.{name}"
    try:
        return importlib.import_module(ours)
    except ModuleNotFoundError as exc:
        if exc.name != ours:
            raise
    return importlib.import_module(f"mlx_lm.tool_parsers.{name}")


WHOLE_JSON = "{json}"
"""In ``ToolMarker.whole_ends``: the call's body is whole when it reads as JSON values (one
call, or several in one block)."""
WHOLE_FUNCTION_JSON = "{function-json}"
"""``WHOLE_JSON`` after a Llama-style ``<function=name>`` opening if any (Qwen3-Coder's)."""
WHOLE_PARSE = "{parse}"
"""In ``ToolMarker.whole_ends``: the parser itself tells a whole call from a cut one (Kimi's
reads each call up to its own end marker and makes a cut one a problem)."""

THINK_TAGS = ("<think>", "</think>")
"""The reasoning markers most families share (Qwen3, DeepSeek, Kimi, GLM, MiniMax...)."""


def _calls(parser: str, **options) -> ToolMarker:
    """The call markers parser module ``parser`` exports (``tool_call_start``/``_end``)."""
    module = load_parser(parser)
    return ToolMarker(module.tool_call_start, module.tool_call_end, **options)


_HERMES_WHOLE = (qwen3_coder.function_end, WHOLE_FUNCTION_JSON)  # JSON, Llama's or XML calls
_DEEPSEEK_CALL_END = "<｜tool▁call▁end｜>"  # one call's end inside DeepSeek's calls block

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("plain"),
        Family("qwen3", think=THINK_TAGS, tools=(_calls("qwen3", whole_ends=_HERMES_WHOLE),),
               parser="qwen3"),
        Family(
            "deepseek_r1",
            think=THINK_TAGS,
            tools=(_calls("deepseek_r1", whole_ends=(_DEEPSEEK_CALL_END,)),),
            parser="deepseek_r1",
            starts_in_reasoning=True,
        ),
        Family(
            # DeepSeek-V3/V3.1 in chat mode: same markup, but replies start as content.
            "deepseek_v3",
            think=THINK_TAGS,
            tools=(_calls("deepseek_r1", whole_ends=(_DEEPSEEK_CALL_END,)),),
            parser="deepseek_r1",
        ),
        Family(
            "qwen3_coder",
            think=THINK_TAGS,
            tools=(
                _calls("qwen3_coder", whole_ends=_HERMES_WHOLE),
                ToolMarker(qwen3_coder.function_start, qwen3_coder.function_end, keep=True),
            ),
            parser="qwen3",
            call_gap_is_markup=True,
        ),
        Family(
            "mistral",
            think=(mistral.think_start, mistral.think_end),
            tools=(_calls("mistral", scanner="mistral"),),
            parser="mistral",
        ),
        Family(
            "pythonic",
            think=THINK_TAGS,
            tools=(
                _calls("pythonic", whole_ends=("]",)),  # the parser reads Python: a cut list fails
                ToolMarker(pythonic.python_start, pythonic.python_end, whole_ends=("]",)),
                ToolMarker(pythonic.list_start, "", scanner="call_list", keep=True, leading=True),
            ),
            parser="pythonic",
        ),
        Family(
            "gemma4",
            think=(gemma4.think_start, gemma4.think_end),
            tools=(
                _calls("gemma4", ends=(gemma4.turn_end,), whole_ends=("}",)),
                ToolMarker(gemma4.bare_call_start, "", scanner="bare_call", keep=True, soft=True,
                           offered_names=True),
            ),
            parser="gemma4",
            think_anywhere=True,
            reasoning_prefix=gemma4.think_label,
            content_channel=gemma4.response_channel,
            call_gap_is_markup=True,
        ),
        Family(
            "kimi_k2",
            think=THINK_TAGS,
            tools=(
                _calls("kimi_k2", whole_ends=(WHOLE_PARSE,)),
                ToolMarker(kimi_k2.singular_tool_call_start, kimi_k2.singular_tool_call_end,
                           whole_ends=(WHOLE_PARSE,)),
            ),
            parser="kimi_k2",
        ),
        # GLM's template puts a newline between parallel calls (vLLM's glm4_moe tests).
        # mlx-lm's glm47, minimax_m2 and longcat modules name no element ends: spelled here.
        Family("glm47", think=THINK_TAGS,
               tools=(_calls("glm47", whole_ends=("</arg_value>", WHOLE_JSON)),),
               parser="glm47", call_gap_is_markup=True),
        Family("minimax_m2", think=THINK_TAGS,
               tools=(_calls("minimax_m2", whole_ends=("</invoke>",)),), parser="minimax_m2"),
        Family("function_gemma", tools=(_calls("function_gemma", whole_ends=("}",)),),
               parser="function_gemma"),
        Family(
            "longcat",
            think=("<longcat_think>", "</longcat_think>"),  # no parser module names them
            tools=(_calls("longcat", whole_ends=("</longcat_arg_value>", WHOLE_JSON)),),
            parser="longcat",
        ),
        Family(
            # DeepSeek-V3.2: the DSML grammar of V4 under a "function_calls" block name.
            "deepseek_v32",
            think=THINK_TAGS,
            tools=(ToolMarker(deepseek_v4.function_calls_start, deepseek_v4.function_calls_end,
                              whole_ends=(deepseek_v4.invoke_end,)),),
            parser="deepseek_v4",
        ),
        Family(
            # Llama 3.1-3.3: bare JSON objects, at the reply's start or (when tools were
            # offered) anywhere in it; see the parser.
            "llama3_json",
            tools=(
                _calls("llama3_json", scanner="tagged_value", keep=True),
                ToolMarker(llama3_json.json_start, "", scanner="json_call", keep=True,
                           leading=True),
                ToolMarker(llama3_json.json_start, "", scanner="json_call", keep=True, soft=True,
                           only_with_tools=True),
                ToolMarker(llama3_json.function_start, "", scanner="function_tag", keep=True,
                           soft=True, only_with_tools=True),
                ToolMarker(pythonic.list_start, "", scanner="call_list", keep=True, leading=True),
            ),
            parser="llama3_json",
            call_gap_is_markup=True,
            call_separators=(";", ","),
        ),
        Family(
            "deepseek_v4",
            think=THINK_TAGS,
            tools=(_calls("deepseek_v4", whole_ends=(deepseek_v4.invoke_end,)),),
            parser="deepseek_v4",
            undecided_call_is_reasoning=True,
        ),
    )
}


# Other names for the same output formats, so a name copied from another server's docs works
# here too: vLLM's reasoning/tool parser names, and mlx-lm's tool-parser module names (what
# ``family_for_tokenizer`` reads off a loaded tokenizer; a module named like a family is that
# family, so only the ones named otherwise are listed).
ALIASES = {
    "json_tools": "qwen3",
    "hermes": "qwen3",
    "qwen3_xml": "qwen3_coder",
    "qwen3coder": "qwen3_coder",
    "magistral": "mistral",
    "lfm2": "pythonic",
    "llama4_pythonic": "pythonic",
    "gemma": "gemma4",
    "kimi": "kimi_k2",
    "glm45": "glm47",
    "glm4_moe": "glm47",
    "glm47_moe": "glm47",
    "functiongemma": "function_gemma",
    "deepseek_v31": "deepseek_v3",
    "deepseekv3": "deepseek_v3",
    "deepseekv31": "deepseek_v3",
    "deepseekv4": "deepseek_v4",
    "deepseekv32": "deepseek_v32",
    "minimax": "minimax_m2",
    "llama3": "llama3_json",
    "llama4_json": "llama3_json",
}


def family_names() -> list[str]:
    return list(FAMILIES)


def family_name(name: str) -> str:
    """The family a name stands for (itself, or what ``ALIASES`` maps it to)."""
    return ALIASES.get(name, name)


def get_family(family: str | Family) -> Family:
    """The family named ``family`` (a Family passes through), or ValueError naming the choices."""
    if isinstance(family, Family):
        return family
    try:
        return FAMILIES[family_name(family)]
    except KeyError:
        raise ValueError(
            f"Unknown parser family {family!r}; choose one of: {', '.join(FAMILIES)}."
        ) from None
