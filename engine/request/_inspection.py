"""``Engine.inspect``'s answer: every stage of a request up to scheduling, nothing generated."""

from __future__ import annotations

import html
from dataclasses import dataclass, fields
from typing import Any

from ._admission import GenerationRequest
from ._prompt_cache import CacheLookup
from ._rendering import Segment

__all__ = ["Inspection", "request_options", "TOOLS_NOT_RENDERED"]

TOOLS_NOT_RENDERED = ("tools: this model's chat template cannot show tools, so the model "
                      "never sees them")


def request_options(request: GenerationRequest) -> dict[str, Any]:
    """The admitted options as a flat dict (defaults filled in), for display."""
    out: dict[str, Any] = {}
    for f in fields(request):
        if f.name in ("messages", "prompt", "tools", "sampling", "penalties"):
            continue
        out[f.name] = getattr(request, f.name)
    for group in (request.sampling, request.penalties):
        for f in fields(group):
            out[f.name] = getattr(group, f.name)
    out["chat_template_kwargs"] = dict(request.chat_template_kwargs)
    out["tools"] = len(request.tools or ())
    return out


@dataclass(frozen=True, slots=True)
class Inspection:
    request: GenerationRequest
    options: dict[str, Any]
    """Validated options with defaults filled in."""
    prompt_text: str
    token_ids: tuple[int, ...]
    token_strings: tuple[str, ...]
    """Each token decoded on its own (byte pieces of a character show as replacement marks)."""
    segments: tuple[Segment, ...]
    """Where the prompt cache snapshots this prompt (system prompt, conversation, tail)."""
    cache: CacheLookup
    """Tokens the prompt cache would reuse now, and why not more."""
    tools_rendered: bool | None = None
    """None without tools; False when the chat template leaves the request's tools out."""

    @property
    def cached_tokens(self) -> int:
        return self.cache.cached_tokens

    def __str__(self) -> str:
        c = self.cache
        lines = [
            f"{self.request.kind} request, {len(self.token_ids)} prompt tokens, "
            f"{c.cached_tokens} would come from the prompt cache"
            + (f". {c.miss_reason}" if c.miss_reason else ""),
            "options: " + ", ".join(f"{k}={v!r}" for k, v in self.options.items()),
            "segments: " + ", ".join(f"{s.kind}[{s.start}:{s.end}]" for s in self.segments),
            *([TOOLS_NOT_RENDERED] if self.tools_rendered is False else []),
            "prompt:",
            self.prompt_text,
        ]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        c = self.cache
        cells = []
        for i, (tid, s) in enumerate(zip(self.token_ids, self.token_strings)):
            style = "background:#d8f0d8" if i < c.cached_tokens else ""
            cells.append(
                f'<span title="{i}: id {tid}" style="{style};border:1px solid #ccc;'
                f'margin:1px;white-space:pre">{html.escape(s)}</span>'
            )
        why = f" &mdash; {html.escape(c.miss_reason)}" if c.miss_reason else ""
        opts = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{html.escape(repr(v))}</td></tr>"
            for k, v in self.options.items()
        )
        tools = (f"<div style='color:#a15c00'>{html.escape(TOOLS_NOT_RENDERED)}</div>"
                 if self.tools_rendered is False else "")
        return (
            f"<div><b>{len(self.token_ids)} prompt tokens</b>, {c.cached_tokens} cached{why}{tools}"
            f"<div style='line-height:1.8'>{''.join(cells)}</div>"
            f"<details><summary>options</summary><table>{opts}</table></details></div>"
        )
