"""DeepSeek-V4 prompt encoder: V4 ships no Jinja chat template, only a Python reference encoder.

Written from DeepSeek's reference ``encoding/encoding_dsv4.py`` (in the DeepSeek-V4 model repos;
read in its copies at vllm-project/vllm ``vllm/tokenizers/deepseek_v4_encoding.py`` and
supermy/ds4rs ``encoding/encoding_dsv4.py``) and vLLM's request adapter
``vllm/tokenizers/deepseek_v4.py`` (request tools go on the leading system message; the
``reasoning_effort`` mapping). The layout, for a thinking-mode turn with tools::

    <｜begin▁of▁sentence｜>[max-effort preamble]{system}\\n\\n## Tools ...{schemas}...
    <｜User｜>{question}<｜Assistant｜><think>{reasoning}</think>{content}\\n\\n
    <｜DSML｜tool_calls>...</｜DSML｜tool_calls><｜end▁of▁sentence｜>
    <｜User｜><tool_result>{result}</tool_result><｜Assistant｜><think>

(no newlines between the pieces; they are shown for reading). Rules kept from the reference:

- the system text is bare; tool schemas follow it after a blank line (a system message with
  empty text is made when there is none);
- there is no tool role: tool results become ``<tool_result>`` blocks of a user turn, joined
  to the neighbouring user text by blank lines and sorted into the order of the calls;
- a user turn followed by the model's turn ends ``<｜Assistant｜>`` + ``<think>`` (thinking mode,
  latest turn) or ``</think>`` (chat mode, or an earlier turn whose reasoning was dropped);
- earlier reasoning is dropped in thinking mode unless tools are present, then it is kept;
- ``reasoning_effort`` "max" (and "xhigh") prefixes the preamble, thinking mode only; "none"
  switches to chat mode; "minimal"/"low"/"medium"/"high" render like no effort at all
  (the reference accepts only None, "high" and "max", and "high" adds nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..._errors import EngineRequestError
from ...parsing.parsers.deepseek_v4 import DSML_TOKEN as DSML
from ...parsing.parsers.deepseek_v4 import tool_call_end, tool_call_start

__all__ = [
    "ASSISTANT",
    "BOS",
    "EOS",
    "REASONING_EFFORTS",
    "THINK_END",
    "THINK_START",
    "USER",
    "encode_messages",
    "encode_tool_calls",
]

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK_START = "<think>"
THINK_END = "</think>"

REASONING_EFFORTS = (None, "none", "minimal", "low", "medium", "high", "xhigh", "max")

REASONING_EFFORT_MAX = (
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to "
    "resolve the root cause, rigorously stress-testing your logic against all potential paths, "
    "edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate "
    "step, considered alternative, and rejected hypothesis to ensure absolutely no assumption "
    "is left unchecked.\n\n"
)

TOOLS_TEMPLATE = """## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a "<{dsml}tool_calls>" block like the following:

<{dsml}tool_calls>
<{dsml}invoke name="$TOOL_NAME">
<{dsml}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{dsml}parameter>
...
</{dsml}invoke>
<{dsml}invoke name="$TOOL_NAME2">
...
</{dsml}invoke>
</{dsml}tool_calls>

String parameters should be specified as is and set `string="true"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string="false"`.

If thinking_mode is enabled (triggered by {think_start}), you MUST output your complete reasoning inside {think_start}...{think_end} BEFORE any tool calls or final response.

Otherwise, output directly after {think_end} with tool calls or final response.

### Available Tool Schemas

{schemas}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
"""


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    arguments: dict[str, Any]
    id: str


@dataclass(slots=True)
class _Turn:
    """One rendered turn after tool messages are folded into user turns."""

    role: str  # "system", "user" or "assistant"
    text: str = ""  # system text, or assistant content
    blocks: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # user: (kind, text, id)
    reasoning: str = ""
    calls: list[_Call] = field(default_factory=list)


def encode_messages(
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    thinking: bool = False,
    reasoning_effort: str | None = None,
    add_generation_prompt: bool = True,
    bos: bool = True,
) -> str:
    """Render OpenAI-style ``messages`` to the DeepSeek-V4 prompt text (special tokens as text).

    Raises EngineRequestError (with ``param``) for an unknown role, non-text content or a
    malformed tool call or tool schema.
    """
    if reasoning_effort not in REASONING_EFFORTS:
        raise EngineRequestError(
            f"reasoning_effort must be one of {', '.join(map(str, REASONING_EFFORTS[1:]))}; "
            f"got {reasoning_effort!r}.",
            param="reasoning_effort",
        )
    if reasoning_effort == "none":
        thinking = False
    if not isinstance(messages, list) or not messages:
        raise EngineRequestError("messages must be a non-empty list.", param="messages")
    turns = _fold_turns(messages)
    _sort_tool_results(turns)
    if tools:
        rendered_tools = "\n\n" + _render_tools(tools)
        if turns[0].role != "system":
            turns.insert(0, _Turn("system"))
        turns[0].text += rendered_tools
    # The reference keeps earlier reasoning whenever tools are in play (agent loops reuse it).
    drop_thinking = thinking and not tools
    last_user = max((i for i, t in enumerate(turns) if t.role == "user"), default=-1)

    out = [BOS] if bos else []
    if thinking and reasoning_effort in ("max", "xhigh"):
        out.append(REASONING_EFFORT_MAX)
    for i, turn in enumerate(turns):
        keeps_thinking = thinking and (not drop_thinking or i >= last_user)
        if turn.role == "system":
            out.append(turn.text)
        elif turn.role == "user":
            out.append(USER + "\n\n".join(_render_block(b) for b in turn.blocks))
            followed_by_model = i + 1 < len(turns) and turns[i + 1].role == "assistant"
            if followed_by_model or (i + 1 == len(turns) and add_generation_prompt):
                out.append(ASSISTANT + (THINK_START if keeps_thinking else THINK_END))
        else:
            if thinking and (not drop_thinking or i > last_user):
                out.append(turn.reasoning + THINK_END)
            out.append(turn.text)
            if turn.calls:
                out.append("\n\n" + _render_calls(turn.calls))
            out.append(EOS)
    return "".join(out)


def encode_tool_calls(tool_calls: list[dict[str, Any]]) -> str:
    """Render assistant tool calls as the DSML block the model itself would write.

    Takes OpenAI ``tool_calls`` (``function.arguments`` a JSON string or a dict) or parsed
    ``{"name", "arguments"}`` dicts. The blank line the encoder puts before it is not included.
    """
    if not isinstance(tool_calls, list) or not tool_calls:
        raise EngineRequestError(
            "tool_calls must be a non-empty list.", param="tool_calls"
        )
    return _render_calls(
        [_read_call(c, f"tool_calls[{j}]") for j, c in enumerate(tool_calls)]
    )


def _fold_turns(messages: list[Any]) -> list[_Turn]:
    """Normalize messages and fold tool results (and adjacent user text) into user turns."""
    turns: list[_Turn] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise EngineRequestError(
                f"{where} must be an object with a role.", param=where
            )
        role = message.get("role")
        if role in ("system", "developer"):
            # OpenAI's "developer" role is the newer name for system instructions.
            turns.append(
                _Turn("system", _text(message.get("content"), f"{where}.content"))
            )
        elif role in ("user", "tool"):
            if role == "user":
                block = ("text", _text(message.get("content"), f"{where}.content"), "")
            else:
                result = _text(
                    message.get("content"), f"{where}.content", joiner="\n\n"
                )
                block = ("tool_result", result, str(message.get("tool_call_id") or ""))
            if turns and turns[-1].role == "user":
                turns[-1].blocks.append(block)
            else:
                turns.append(_Turn("user", blocks=[block]))
        elif role == "assistant":
            turns.append(_read_assistant(message, where))
        else:
            raise EngineRequestError(
                f"{where}.role must be system, user, assistant or tool; got {role!r}.",
                param=f"{where}.role",
            )
    return turns


def _read_assistant(message: dict[str, Any], where: str) -> _Turn:
    reasoning = message.get("reasoning")
    if reasoning is None:
        reasoning = message.get("reasoning_content")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise EngineRequestError(
            f"{where}.tool_calls must be a list.", param=f"{where}.tool_calls"
        )
    return _Turn(
        "assistant",
        text=_text(message.get("content"), f"{where}.content"),
        reasoning=_text(reasoning, f"{where}.reasoning"),
        calls=[
            _read_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(raw_calls)
        ],
    )


def _read_call(call: Any, where: str) -> _Call:
    """One tool call, OpenAI-shaped or already parsed; arguments as JSON text or a dict."""
    function = call.get("function", call) if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise EngineRequestError(
            f"{where} must be an object with a function.", param=where
        )
    name = function.get("name")
    if not isinstance(name, str) or not name or '"' in name:
        raise EngineRequestError(
            f"{where}.function.name must be a non-empty string.",
            param=f"{where}.function.name",
        )
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        arguments = {}
    elif isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):  # (a number past the digit limit: a ValueError)
            arguments = None
    if not isinstance(arguments, dict) or not all(
        isinstance(k, str) and k and '"' not in k for k in arguments
    ):
        raise EngineRequestError(
            f"{where}.function.arguments must be a JSON object (as text or already decoded).",
            param=f"{where}.function.arguments",
        )
    return _Call(name, arguments, str(call.get("id") or ""))


def _sort_tool_results(turns: list[_Turn]) -> None:
    """Put each user turn's tool results in the order of the latest assistant's calls."""
    order: dict[str, int] = {}
    for turn in turns:
        if turn.role == "assistant" and turn.calls:
            order = {c.id: j for j, c in enumerate(turn.calls) if c.id}
        elif turn.role == "user" and order:
            slots = [j for j, b in enumerate(turn.blocks) if b[0] == "tool_result"]
            # Stable: results with unknown ids sort as the first call, as in the reference.
            ranked = sorted(
                (turn.blocks[j] for j in slots), key=lambda b: order.get(b[2], 0)
            )
            for j, block in zip(slots, ranked):
                turn.blocks[j] = block


def _render_block(block: tuple[str, str, str]) -> str:
    kind, text, _ = block
    return f"<tool_result>{text}</tool_result>" if kind == "tool_result" else text


def _render_calls(calls: list[_Call]) -> str:
    invokes = []
    for call in calls:
        params = [
            _render_parameter(key, value) for key, value in call.arguments.items()
        ]
        invokes.append(
            f'<{DSML}invoke name="{call.name}">\n'
            + "\n".join(params)
            + f"\n</{DSML}invoke>"
        )
    return f"{tool_call_start}\n" + "\n".join(invokes) + f"\n{tool_call_end}"


def _render_parameter(key: str, value: Any) -> str:
    if isinstance(value, str):
        string, text = "true", value
    else:
        string, text = "false", _to_json(value, "tool_calls")
    return f'<{DSML}parameter name="{key}" string="{string}">{text}</{DSML}parameter>'


def _render_tools(tools: Any) -> str:
    if not isinstance(tools, list):
        raise EngineRequestError("tools must be a list of tool schemas.", param="tools")
    schemas = []
    for i, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise EngineRequestError(
                f"tools[{i}] must be a function tool with a name.", param=f"tools[{i}]"
            )
        schemas.append(_to_json(function, f"tools[{i}]"))
    return TOOLS_TEMPLATE.format(
        dsml=DSML,
        think_start=THINK_START,
        think_end=THINK_END,
        schemas="\n".join(schemas),
    )


def _text(content: Any, where: str, joiner: str = "\n") -> str:
    """Message content as text: a string, None, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            else:
                raise EngineRequestError(
                    f"{where} holds a non-text part; DeepSeek-V4 prompts take text only.",
                    param=where,
                )
        return joiner.join(parts)
    if isinstance(content, dict) and where.endswith(".content"):
        # A structured tool result: show it to the model as JSON rather than a Python repr.
        return _to_json(content, where)
    raise EngineRequestError(f"{where} must be text.", param=where)


def _to_json(value: Any, where: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as err:
        raise EngineRequestError(
            f"{where} is not JSON-serializable: {err}.", param=where
        ) from None
