"""The token view (``%%chat --tokens``, ``turn.show_tokens()``) as a displayable object.

``TokenView`` is plain HTML (hover tooltips in CSS): a token view never changes after the
turn ends, and it survives saving, reopening and untrusted notebooks with nothing to restore.
``BranchingTokenView`` is the same HTML in a small widget that branches the reply when one of
a token's alternatives is clicked; its saved output is that HTML too.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import anywidget
import ipywidgets
import traitlets

from ..display import token_probability, token_view_html

__all__ = ["TokenView", "BranchingTokenView"]

log = logging.getLogger(__name__)


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
        return "\n".join(f"{item['token']!r:>16}  {token_probability(item['logprob']):6.1%}" for item in self.logprobs)


class _TokenStrip(anywidget.AnyWidget):
    _esm = Path(__file__).with_name("token_view.js")
    html = traitlets.Unicode("").tag(sync=True)


class BranchingTokenView(ipywidgets.VBox):
    """The token view; clicking an alternative calls ``on_branch(at, token)``, which streams
    the branch (its note line and live card) and returns its turn; each branch then stays
    below the tokens as its static card."""

    def __init__(self, logprobs: list[dict] | None, on_branch: Callable[[int, str], Any]):
        self._static = TokenView(logprobs)
        self._on_branch = on_branch
        self.strip = _TokenStrip(html=token_view_html(self._static.logprobs))
        super().__init__([self.strip])
        self.strip.on_msg(self._on_front_end_message)

    def _on_front_end_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        from IPython.display import display

        from ..branch import branch_note
        from ..display import turn_mimebundle

        if not (isinstance(content, dict) and content.get("kind") == "branch"):
            return
        # A comm message's output has no cell of its own: an Output widget below the tokens
        # captures it. Display updates do not reach into an Output widget, so once the branch
        # ends its live card is replaced by showing the static one afresh.
        out = ipywidgets.Output()
        self.children = (*self.children, out)
        with out:
            try:
                branch = self._on_branch(int(content.get("at")), str(content.get("token")))
            except Exception as exc:  # shown where the user clicked, as one line
                log.debug("branch failed", exc_info=True)
                print(f"Could not branch here: {exc}")
                return
            out.clear_output()
            display(branch_note(branch.branched_from), raw=True)
            data, metadata = turn_mimebundle(branch)
            display(data, metadata=metadata, raw=True)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # The saved notebook keeps the HTML token view, readable without the widget.
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data = {**(data or {}), **self._static._repr_mimebundle_()}
        return (data, bundle[1]) if isinstance(bundle, tuple) else data
