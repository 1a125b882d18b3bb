"""What the magics show besides turns: model summary, status, cache, sessions, history, prompts.

Each function returns a ``Report``: plain text for the terminal and an HTML form for the
notebook, built from the engine's own records (nothing is recomputed here).
"""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import mlx.core as mx

from .display import format_bytes, json_safe, plural, tools_unsupported_warning, visible_text
from .sessions import Session

__all__ = [
    "Report", "text", "model_name", "model_summary", "status", "serving", "served", "cache",
    "rendered_prompt",
    "sessions", "history", "config", "request", "chunk_table", "special_token_ids",
]


@dataclass(frozen=True, slots=True)
class Report:
    """Plain text plus an optional HTML rendering of the same content."""

    plain: str
    html: str | None = None

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        # Reports quote replies and cached tokens: their terminal escapes, bidi overrides and
        # lone surrogates are shown as symbols, as a turn's own text is (``visible_text``).
        bundle = {"text/plain": visible_text(self.plain)}
        if self.html is not None:
            bundle["text/html"] = visible_text(self.html)
        return bundle

    def __str__(self) -> str:
        return visible_text(self.plain)


def text(plain: str) -> Report:
    return Report(plain)


def _get(record: Any, key: str, default: Any = None) -> Any:
    if isinstance(record, dict):
        return record.get(key, default)
    return getattr(record, key, default)


def _size(count: int | None) -> str:
    # The footer's formatter: one set of units (decimal, kB/MB/GB) for the same bytes everywhere.
    return format_bytes(count) or "unknown"


def _pre(text: str) -> str:
    """``text`` as HTML that reads like the plain text in JupyterLab.

    Inline styles, because JupyterLab's own rules for output ``<pre>`` add a 1.5em/2em
    margin (a blank line and an indent) to HTML output and break plain text mid-word
    (``word-break: break-all``); these wrap long lines at spaces instead.
    """
    return ('<pre style="margin:0;padding:0;white-space:pre-wrap;word-break:normal;'
            f'overflow-wrap:anywhere">{html.escape(text)}</pre>')


def _with_reason(text: str, reason: str | None) -> str:
    # Miss reasons are whole sentences ("The prompt diverged ..."): they follow as one.
    return f"{text}. {reason}" if reason else f"{text}."


def _count(number: int | None) -> str:
    if number is None:
        return "unknown"
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if number >= scale:
            return f"{number / scale:.1f}{unit}".replace(".0", "")
    return str(number)


def _yes(flag: Any) -> str:
    return "yes" if flag else "no"


def model_name(engine: Any) -> str:
    return str(_get(engine.model_info, "name", "model"))


def model_summary(info: Any) -> Report:
    """The one line ``%load_model`` prints."""
    quantization = _get(info, "quantization") or "not quantized"
    if isinstance(quantization, dict):
        quantization = f"{quantization.get('bits')}-bit, group {quantization.get('group_size')}"
    # Why it computes in that dtype: auto picks float32 on a Linux CPU, the model's own on a GPU.
    reason = _get(info, "dtype_reason") or ""
    reason = reason if reason.startswith("auto") else ""  # an explicit --dtype needs no reason
    return text(
        f"Loaded {_get(info, 'name')}: {_count(_get(info, 'parameters'))} parameters, "
        f"{quantization}{f' [{reason}]' if reason else ''}, {_size(_get(info, 'memory_bytes'))}, "
        f"context {_get(info, 'context_length') or 'unknown'} tokens, "
        f"thinking: {_yes(_get(info, 'thinking'))}, tool calls: {_yes(_get(info, 'tool_calling'))}"
        + (f", drafting with {draft}." if (draft := _get(info, "draft_model")) else ".")
    )


_SWITCH_PHRASES = (
    ("fused_first_token", ", first token read with the prompt's last chunk (--fused-first-token)"),
    ("cudnn_for_few_rows", ", cuDNN attention for short passes (--cudnn-for-few-rows)"),
)
"""What ``%mlx status`` says of each on/off ``EngineConfig`` field that is on."""


def status(engine: Any, listener: Any = None) -> Report:
    """The engine's state and, while ``%mlx serve`` runs, what it serves and to whom."""
    if engine is None:
        return text("No model is loaded; run %load_model.")
    info = engine.model_info
    remote = _get(info, "model_type") == "remote"
    memory = ("memory: the server's own (remote)" if remote else
              f"memory: {_size(_get(info, 'memory_bytes'))} of weights; MLX active "
              f"{_size(mx.get_active_memory())}, peak {_size(mx.get_peak_memory())}")
    config = getattr(engine, "config", None)
    switches = "".join(phrase for name, phrase in _SWITCH_PHRASES if getattr(config, name, False))
    lines = [
        f"model: {_get(info, 'name')} ({_get(info, 'model_type')}) at {_get(info, 'path')}",
        memory,
        f"engine: {'healthy' if engine.healthy else 'stopped'}{switches}",
        f"active requests: {engine.active_requests}",
    ]
    if listener is not None:
        lines += served(listener)
    return text("\n".join(lines))


def serving(listener: Any, model: str) -> Report:
    """What ``%mlx serve`` shows once: the URL, the token and a request to copy."""
    auth = f' -H "Authorization: Bearer {listener.token}"' if listener.token else ""
    lines = [f"Serving {model} at {listener.url} (OpenAI-compatible; %mlx serve --stop ends it)."]
    if listener.token_generated:
        lines.append(f"Token, shown only now: {listener.token}")
    lines += ["Try:", f"  curl {listener.url}/chat/completions{auth} -H \"Content-Type: "
              "application/json\" -d '{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}'"]
    return text("\n".join(lines))


def served(listener: Any) -> list[str]:
    """``%mlx status``'s lines on the HTTP listener: its URL and each request it is serving."""
    requests = listener.served()
    lines = [f"serving: {listener.url}, {plural(len(requests), 'HTTP request')}"
             + (":" if requests else "")]
    now = time.time()
    for r in requests:
        kind = "streaming" if r.stream else "waiting"
        lines.append(f"  {r.request_id} from {r.client}, {r.endpoint}, {kind}, "
                     f"{now - r.started:.1f} s")
    return lines


def cache(info: Any) -> Report:
    lines = [
        f"entries: {_get(info, 'entries')}, tokens: {_get(info, 'tokens')}, "
        f"bytes: {_size(_get(info, 'bytes'))} of {_size(_get(info, 'budget_bytes'))}",
    ]
    lookups = list(_get(info, "lookups") or [])
    if lookups:
        lines.append("last lookups:")
    for lookup in lookups:
        cached, total = _get(lookup, "cached_tokens"), _get(lookup, "prompt_tokens")
        reason = _get(lookup, "miss_reason")
        verdict = "hit" if cached else "miss"
        lines.append(_with_reason(
            f"  {_get(lookup, 'request_id', '')} {verdict}: {cached} of "
            f"{plural(total, 'prompt token') if isinstance(total, int) else total} cached", reason))
    return text("\n".join(lines))


def rendered_prompt(inspection: Any, special_ids: set[int], decode: Callable[[list[int]], str]) -> Report:
    """The rendered prompt with special tokens marked: ``[[...]]`` in text, highlighted in HTML.

    Marked per token id, not by searching the text, so a user who types ``<|im_end|>`` in a
    message sees it unmarked when it was tokenized as plain text. Runs of ordinary tokens
    are decoded together, so a character split over byte tokens shows whole.
    """
    plain, marked, run = [], [], []

    def flush() -> None:
        if run:
            text = decode(run)
            plain.append(text)
            marked.append(html.escape(text))
            run.clear()

    for token_id in inspection.token_ids:
        if token_id not in special_ids:
            run.append(token_id)
            continue
        flush()
        piece = decode([token_id])
        plain.append(f"[[{piece}]]")
        marked.append(f'<mark title="id {token_id}">{html.escape(piece)}</mark>')
    flush()
    lookup = inspection.cache
    footer = _with_reason(f"{plural(len(inspection.token_ids), 'token')}, {lookup.cached_tokens} "
                          "would come from the prompt cache", lookup.miss_reason)
    warning = _tools_not_shown(inspection)
    return Report(
        "".join(plain) + f"\n[{footer}]" + (f"\n[warning] {warning}" if warning else ""),
        # Margin and padding 0: JupyterLab indents a top-level <pre> in HTML output by 2em
        # and puts a blank line above it, which read as part of the prompt.
        '<pre style="margin:0;padding:0;white-space:pre-wrap">'
        f'{"".join(marked)}</pre><p style="margin:4px 0 0">{html.escape(footer)}</p>'
        + (f'<p style="margin:4px 0 0;color:#7a5b00">⚠ {html.escape(warning)}</p>' if warning else ""),
    )


def _tools_not_shown(inspection: Any) -> str | None:
    """The card's warning, for a prompt whose chat template left the request's tools out."""
    if getattr(inspection, "tools_rendered", None) is not False:
        return None
    tools = getattr(getattr(inspection, "request", None), "tools", None) or ()
    names = [str((tool.get("function") or {}).get("name")) for tool in tools if isinstance(tool, dict)]
    return tools_unsupported_warning({"tools_offered": names or ["the tools offered"],
                                      "tools_unsupported": True})


def special_token_ids(tokenizer: Any) -> set[int]:
    """Ids of the tokenizer's special tokens (chat markers, <think>, <tool_call>, ...)."""
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    ids = {token_id for token_id, token in added.items() if getattr(token, "special", False)}
    return ids | set(getattr(tokenizer, "all_special_ids", None) or ())


def sessions(all_sessions: Iterable[Session]) -> Report:
    rows = [
        f"{s.name}: {plural(len(s.turns), 'turn')}, {s.sent_turns} sent as history"
        + (f", system: {s.system!r}" if s.system else "")
        for s in all_sessions
    ]
    return text("\n".join(rows) or "No sessions yet; %%chat starts 'default'.")


def history(session: Session) -> Report:
    lines = [f"session '{session.name}'" + (f", system: {session.system!r}" if session.system else "")]
    for number, turn in enumerate(session.turns, 1):
        user = turn.user_message["content"] if turn.user_message else ""
        mark = "" if turn.in_history else "  (not sent as history)"
        lines.append(f"{number}. user: {_short(user)}")
        for call in turn.tool_calls:
            lines.append(f"   tool: {call.name}({json.dumps(call.arguments)}) -> "
                         f"{call.error or _short(json.dumps(json_safe(call.read_result())))}")
        lines.append(f"   assistant: {_short(turn.text)}{mark}")
    plain = "\n".join(lines)
    return Report(plain, _pre(plain))


def config(defaults: dict[str, str]) -> Report:
    if not defaults:
        return text("No defaults set; every flag keeps the engine's default.")
    return text("\n".join(f"{key}: {fragment}" for key, fragment in defaults.items()))


def request(body: dict) -> Report:
    dumped = json.dumps(body, indent=2, ensure_ascii=False)
    return Report(dumped, _pre(dumped))


def chunk_table(chunks: list[dict]) -> Report:
    """``--raw``: one row per streamed chunk (index, delta, finish reason)."""
    rows = []
    for index, chunk in enumerate(chunks):
        choice = chunk["choices"][0]
        delta = choice.get("delta", {"text": choice.get("text", "")})
        rows.append((str(index), json.dumps(delta, ensure_ascii=False), str(choice["finish_reason"] or "")))
    header = ("#", "delta", "finish_reason")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    plain = "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                      for row in [header, *rows])
    cells = "".join(
        "<tr>" + "".join(f"<td><code>{html.escape(cell)}</code></td>" for cell in row) + "</tr>"
        for row in rows
    )
    head = "".join(f"<th>{h}</th>" for h in header)
    return Report(plain, f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")


def _short(value: str, limit: int = 100) -> str:
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 1] + "…"
