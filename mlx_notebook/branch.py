"""Branch from a token: "what if the model had said *Lyon* here?"

``turn.branch(at=k, token="Lyon")`` resumes generation from the turn's prompt, the first ``k``
tokens the model generated, and ``token`` in place of the k-th. The continuation is an
ordinary request on the one request path: a completion whose prompt is those token ids
(OpenAI's token-id prompt), so nothing is re-tokenized and the prompt cache, which kept the
original turn's tokens, serves everything before the branch point (the card's footer shows
how many tokens that saved).
"""

from __future__ import annotations

import html
from typing import Any

from .display import encodable, visible_text
from .runner import run_turn
from .turn import Turn

__all__ = ["branch_turn", "prepare_branch", "branch_body", "branch_note", "branch_note_html"]

# Sampling fields a branch keeps from the turn it branches from.
_KEPT = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
         "frequency_penalty", "seed", "stop", "logit_bias")


def _forced_id(engine: Any, turn: Turn, at: int, token: str | int) -> int:
    if isinstance(token, int) and not isinstance(token, bool):
        if token < 0:
            raise ValueError(f"token {token} is not a token id: ids start at 0.")
        vocab = getattr(engine, "vocab_size", None)  # (a remote engine does not know it)
        if vocab is not None and token >= vocab:
            raise ValueError(f"token {token} is not a token id of this model: its ids run from 0 "
                             f"to {vocab - 1}.")
        return token
    if not isinstance(token, str) or not token:
        raise ValueError("token must be a token id or the token's text (e.g. ' Lyon').")
    try:
        token.encode("utf-8")
    except UnicodeEncodeError:  # (the tokenizer's own error names its input types)
        raise ValueError(f"{token!r} holds a lone surrogate, which is no text a model's "
                         "tokens spell; pick one of the alternatives or a token id.") from None
    offered = turn.logprobs[at]["top_logprobs"] if at < len(turn.logprobs) else ()
    ids = engine.tokenizer.encode(token, add_special_tokens=False)
    if len(ids) != 1:
        choices = ", ".join(repr(t["token"]) for t in offered) or "none recorded"
        raise ValueError(f"{token!r} is {len(ids)} tokens, not one; pick one token, e.g. one "
                         f"of the alternatives at position {at}: {choices}.")
    return ids[0]


def branch_body(engine: Any, turn: Turn, at: int, token: str | int,
                max_tokens: int | None = None) -> tuple[dict, dict]:
    """The completion body that resumes ``turn`` at token ``at`` with ``token`` forced,
    and a description of the branch point (``at``, the token replaced and the one forced)."""
    if not turn.logprobs or any(t["token_id"] is None for t in turn.logprobs):
        raise ValueError("This turn has no token ids to branch from: run the cell with "
                         "%%chat --tokens to record them.")
    if len(turn.rounds) > 1:
        raise ValueError("This turn called tools: branching works on a turn of one model call.")
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(turn.logprobs):
        raise ValueError(f"at must be a token position from 0 to {len(turn.logprobs) - 1}.")
    if "messages" not in turn.request:
        raise ValueError("Branching works on %%chat turns (a chat prompt to resume).")
    # Checked here, before the branch's note shows: the engine would name a --flag.
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)
                                   or max_tokens < 1):
        raise ValueError(f"max_tokens must be a whole number of tokens, at least 1, not "
                         f"{max_tokens!r}.")
    forced = _forced_id(engine, turn, at, token)
    prompt_ids = list(engine.inspect(turn.request).token_ids)
    generated = [t["token_id"] for t in turn.logprobs]
    budget = turn.request.get("max_tokens")
    left = max_tokens if max_tokens is not None else (
        max(budget - at - 1, 1) if isinstance(budget, int) else max(len(generated) - at, 16))
    body = {"prompt": prompt_ids + generated[:at] + [forced], "max_tokens": left,
            "logprobs": True, "top_logprobs": max(len(turn.logprobs[at]["top_logprobs"]), 1)}
    body.update({key: turn.request[key] for key in _KEPT if key in turn.request})
    point = {"at": at, "replaced": turn.logprobs[at]["token"],
             "forced": engine.tokenizer.decode([forced]), "forced_id": forced,
             "prefix": "".join(t["token"] for t in turn.logprobs[:at])}
    return body, point


def branch_note(point: dict) -> dict:
    """The line that links a branch's card to the turn it came from, as a mimebundle."""
    tail = point["prefix"][-60:]
    elided = "…" if len(point["prefix"]) > 60 else ""
    plain = (f"Branch at token {point['at']}: {elided}{tail}[{point['forced']}] instead of "
             f"{point['replaced']!r}")
    return {"text/html": encodable(branch_note_html(point)), "text/plain": visible_text(plain)}


def branch_note_html(point: dict) -> str:
    """The line that links a branch's card to the turn it came from."""
    tail = point["prefix"][-60:]
    elided = "…" if len(point["prefix"]) > 60 else ""
    return (
        '<div class="mlxnb-branch-note" style="font-size:12px;color:#57606a;margin:2px 0">'
        f"Branch at token {point['at']}: {html.escape(elided + tail)}"
        f'<b style="outline:2px solid #cf222e;color:#1f2328">{html.escape(point["forced"])}</b>'
        f" instead of <code>{html.escape(repr(point['replaced']))}</code></div>")


def prepare_branch(engine: Any, turn: Turn, at: int, token: str | int, *,
                   max_tokens: int | None = None) -> Turn:
    """The branch's turn, ready to run with ``run_turn(..., kind="completion")``;
    ``branched_from`` says where it came from."""
    body, point = branch_body(engine, turn, at, token, max_tokens)
    return Turn(model=turn.model, session=turn.session, request=body,
                model_dtype=turn.model_dtype, branched_from={**point, "turn": turn})


def branch_turn(engine: Any, turn: Turn, at: int, token: str | int, *,
                max_tokens: int | None = None) -> Turn:
    """Run a branch with no view (a script, a test) and return its turn."""
    branch = prepare_branch(engine, turn, at, token, max_tokens=max_tokens)
    run_turn(engine, branch, None, kind="completion")
    return branch
