"""The token view (``%%chat --tokens``, ``turn.show_tokens()``) as a displayable object.

Not an anywidget on purpose: a token view never changes after the turn ends, so plain HTML
(hover tooltips in CSS) is the whole widget, and it survives saving, reopening and
untrusted notebooks with nothing to restore.
"""

from __future__ import annotations

import math
from typing import Any

from ..display import token_view_html

__all__ = ["TokenView"]


class TokenView:
    """Reply tokens shaded by probability; ``logprobs`` as ``Turn.logprobs`` holds them."""

    def __init__(self, logprobs: list[dict] | None):
        self.logprobs = list(logprobs or [])

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        return {"text/html": token_view_html(self.logprobs), "text/plain": self.plain_text()}

    def plain_text(self) -> str:
        """``token  probability`` lines, for terminals and text-only outputs."""
        if not self.logprobs:
            return "No token probabilities: run the cell with %%chat --tokens."
        return "\n".join(f"{item['token']!r:>16}  {math.exp(item['logprob']):6.1%}" for item in self.logprobs)
