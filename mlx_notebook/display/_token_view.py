"""The reply token by token, shaded by probability, alternatives on hover (``--tokens``).

Pure HTML and CSS (a ``:hover`` tooltip plus a ``title`` fallback), so it works in a saved
notebook, in untrusted output and outside JupyterLab.
"""

from __future__ import annotations

import html
import math

from ._numbers import plural
from ._turn_record import encodable
from ._turn_html import turn_css

__all__ = ["token_view_html", "probability_colour", "token_probability"]


def probability_colour(probability: float) -> str:
    """Red for a surprising token, through yellow, to green for a near-certain one."""
    p = min(max(probability, 0.0), 1.0) if math.isfinite(probability) else 0.0
    return f"hsla({120 * p:.0f}, 75%, 72%, {0.85 - 0.45 * p:.2f})"


def token_probability(logprob: float | None) -> float:
    """A token's probability, 0 to 1: 0 for a missing or NaN log-probability (overflowed
    logits; a saved record keeps NaN as None), at most 1 for one above 0 (a remote server's
    number: ``exp(1000)`` overflowed and ``exp(inf)`` read "inf%")."""
    return 0.0 if logprob is None or math.isnan(logprob) else math.exp(min(logprob, 0.0))


def _visible(token: str) -> str:
    # Whitespace-only tokens would be invisible spans; show what they are.
    return token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") if not token.strip() else token


_MARK = ";outline:2px solid #cf222e"


def _token_span(item: dict, at: int, marked: bool = False) -> str:
    token, logprob = item["token"], item["logprob"]
    probability = token_probability(logprob)
    rows = [f"<tr><td><b>{html.escape(repr(token))}</b></td><td><b>{probability:.1%}</b></td></tr>"]
    title = [f"{token!r}: {probability:.1%}"]
    for top in item.get("top_logprobs") or []:
        if top["token"] == token:
            continue
        p = token_probability(top["logprob"])
        # data-token: the alternative as text, for a front end that branches on a click.
        rows.append(f'<tr class="mlxnb-alt" data-token="{html.escape(top["token"])}">'
                    f"<td>{html.escape(repr(top['token']))}</td><td>{p:.1%}</td></tr>")
        title.append(f"{top['token']!r}: {p:.1%}")
    shown = html.escape(_visible(token), quote=False)
    newline = "<br>" if "\n" in token else ""
    classes = "mlxnb-token" + (" mlxnb-diverge" if marked else "") + (" mlxnb-drafted" if item.get("from_draft") else "")
    drafted = ";text-decoration:underline dotted #0969da 2px" if item.get("from_draft") else ""
    if item.get("from_draft"):
        title.append("proposed by the draft model, kept by the model")
    return (
        f'<span class="{classes}" data-at="{at}" data-p="{probability:.4f}" '
        f'title="{html.escape(chr(10).join(title))}" '
        f'style="background:{probability_colour(probability)}{_MARK if marked else ""}{drafted}">{shown}'
        f'<span class="mlxnb-token-tip"><table>{"".join(rows)}</table></span></span>{newline}'
    )


def token_view_html(logprobs: list[dict] | None, *, mark: int | None = None) -> str:
    """One ``<div>`` with a span per token; ``logprobs`` as ``Turn.logprobs`` holds them.

    ``mark``: the index of a token to outline (where two compared replies diverge).
    """
    if not logprobs:
        return ('<div class="mlxnb-tokens mlxnb-tokens-empty">No token probabilities: run the '
                "cell with <code>%%chat --tokens</code>.</div>")
    # A remote server's token may hold a lone surrogate: as its escape, the output can be sent.
    spans = encodable("".join(_token_span(item, i, i == mark) for i, item in enumerate(logprobs)))
    mean = sum(token_probability(item["logprob"]) for item in logprobs) / len(logprobs)
    drafted = sum(bool(item.get("from_draft")) for item in logprobs)
    drafts = (f" · <b>{drafted}</b> from the draft model (underlined, {drafted / len(logprobs):.0%})"
              if any(item.get("from_draft") is not None for item in logprobs) else "")
    return (
        f'<div class="mlxnb-tokens"><style>{turn_css()}</style>{spans}'
        f'<div class="mlxnb-footer">{plural(len(logprobs), "token")} · mean probability '
        f"<b>{mean:.1%}</b>{drafts} · hover a token for the alternatives</div></div>"
    )
