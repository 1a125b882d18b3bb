"""Model families: which markers split a reply, and which parser reads a tool-call body.

A family is data, not code: the stream filter reads the markers from it and calls its tool
parser (a module with mlx-lm's ``tool_parsers`` surface) on each complete call. Bodies are
parsed by mlx-lm's own modules where it has the family (``mlx_lm.tool_parsers.<name>``) and by
ours in ``mlx_notebook.engine.parsers`` where it has none or needs adapting.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType

__all__ = ["FAMILIES", "Family", "ToolMarker", "family_names", "get_family"]


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
    writes a thought channel between answer text)."""
    reasoning_prefix: str | None = None
    """A label the model writes right after the opening marker (Gemma 4's ``thought\n``)."""

    def parser_module(self) -> ModuleType | None:
        if self.parser is None:
            return None
        return _load_parser(self.parser)


@functools.cache
def _load_parser(name: str) -> ModuleType:
    """Our parser module ``name`` if we have one, else mlx-lm's (looked up once per name)."""
    try:
        return importlib.import_module(f"mlx_notebook.engine.parsers.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"mlx_notebook.engine.parsers.{name}":
            raise
    return importlib.import_module(f"mlx_lm.tool_parsers.{name}")


_THINK = ("<think>", "</think>")
_TOOL_CALL = ToolMarker("<tool_call>", "</tool_call>")

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("plain"),
        Family("qwen3", think=_THINK, tools=(_TOOL_CALL,), parser="qwen3"),
        Family(
            "deepseek_r1",
            think=_THINK,
            tools=(ToolMarker("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),),
            parser="deepseek_r1",
            starts_in_reasoning=True,
        ),
        Family(
            # DeepSeek-V3/V3.1 in chat mode: same markup, but replies start as content.
            "deepseek_v3",
            think=_THINK,
            tools=(ToolMarker("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),),
            parser="deepseek_r1",
        ),
        Family(
            "qwen3_coder",
            think=_THINK,
            tools=(_TOOL_CALL, ToolMarker("<function=", "</function>", keep=True)),
            parser="qwen3",
        ),
        Family(
            "mistral",
            think=("[THINK]", "[/THINK]"),
            tools=(ToolMarker("[TOOL_CALLS]", "", scanner="mistral"),),
            parser="mistral",
        ),
        Family(
            "pythonic",
            think=_THINK,
            tools=(
                ToolMarker("<|tool_call_start|>", "<|tool_call_end|>"),
                ToolMarker("<|python_start|>", "<|python_end|>"),
                ToolMarker("[", "", scanner="python_list", keep=True, leading=True),
            ),
            parser="pythonic",
        ),
        Family(
            "gemma4",
            think=("<|channel>", "<channel|>"),
            tools=(
                # Gemma 4 sometimes closes a call with the end of its turn instead.
                ToolMarker("<|tool_call>", "<tool_call|>", ends=("<turn|>",)),
                # ... and sometimes drops the opening marker (right after its thought).
                ToolMarker("call:", "", scanner="bare_call", keep=True, soft=True),
            ),
            parser="gemma4",
            think_anywhere=True,
            reasoning_prefix="thought\n",
        ),
        Family(
            "kimi_k2",
            think=_THINK,
            tools=(
                ToolMarker("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
                ToolMarker("<|tool_call_section_begin|>", "<|tool_call_section_end|>"),
            ),
            parser="kimi_k2",
        ),
        Family("glm47", think=_THINK, tools=(_TOOL_CALL,), parser="glm47"),
        Family(
            "minimax_m2",
            think=_THINK,
            tools=(ToolMarker("<minimax:tool_call>", "</minimax:tool_call>"),),
            parser="minimax_m2",
        ),
        Family(
            "function_gemma",
            tools=(ToolMarker("<start_function_call>", "<end_function_call>"),),
            parser="function_gemma",
        ),
        Family(
            "longcat",
            think=("<longcat_think>", "</longcat_think>"),
            tools=(ToolMarker("<longcat_tool_call>", "</longcat_tool_call>"),),
            parser="longcat",
        ),
        Family(
            # DeepSeek-V3.2: the DSML grammar of V4 under a "function_calls" block name.
            "deepseek_v32",
            think=_THINK,
            tools=(ToolMarker("<｜DSML｜function_calls>", "</｜DSML｜function_calls>"),),
            parser="deepseek_v4",
        ),
        Family(
            "deepseek_v4",
            think=_THINK,
            tools=(ToolMarker("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"),),
            parser="deepseek_v4",
            undecided_call_is_reasoning=True,
        ),
    )
}


# Names other servers use for the same output formats (vLLM's reasoning/tool parser names,
# mlx-lm's tool-parser module names), so a name copied from their docs works here too.
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
    "deepseek_v3": "deepseek_v3",
    "deepseek_v31": "deepseek_v3",
    "deepseekv3": "deepseek_v3",
    "deepseekv31": "deepseek_v3",
    "deepseekv4": "deepseek_v4",
    "deepseekv32": "deepseek_v32",
    "minimax": "minimax_m2",
}


def family_names() -> list[str]:
    return list(FAMILIES)


def get_family(family: str | Family) -> Family:
    """The family named ``family`` (a Family passes through), or ValueError naming the choices."""
    if isinstance(family, Family):
        return family
    try:
        return FAMILIES[ALIASES.get(family, family)]
    except KeyError:
        raise ValueError(
            f"Unknown parser family {family!r}; choose one of: {', '.join(FAMILIES)}."
        ) from None
