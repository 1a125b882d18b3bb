"""A budget for reasoning: after N reasoning tokens, force the end-of-reasoning marker.

The body option ``thinking_token_budget`` (vLLM's name; ``%%chat --think-budget N``) caps how
long a reasoning model thinks: once the reply has ``N`` tokens of reasoning, the next token is
forced to the family's closing marker (``</think>`` for Qwen3-style models, read from the
family table) and the model answers from what it thought so far. It is an mlx-lm logits
processor, the hook ``logit_bias`` and the penalties use, so every decoding path honours it.

The processor builds its decision from MLX ops on the token context and never reads a token
back to Python: a ``.item()`` there would wait for the token being computed and undo mlx-lm's
overlap of host and device work. It counts the tokens generated so far from the context's
length (the context grows by one token per step, and is trimmed back when a speculative draft
is rejected), so one processor must serve a request from its first token to its last: such a
request never takes the single-stream path that may hand it to the batch midway.
"""

from __future__ import annotations

from typing import Any, Sequence

import mlx.core as mx

from .._errors import EngineRequestError
from ..parsing import family_for_tokenizer, prompt_starts_in_reasoning

__all__ = ["ThinkBudget", "think_budget_for", "reasoning_token_count", "reasoning_marker_ids"]


class ThinkBudget:
    """The logits processor: ``processor(tokens, logits) -> logits`` (mlx-lm's signature).

    ``open_at_start``: the prompt left reasoning open (a template that pre-fills ``<think>``),
    so the reply's first token is already reasoning; otherwise reasoning starts after the
    first ``start`` marker the model writes. The marker tokens themselves are not counted.
    """

    def __init__(self, budget: int, start: int, end: int, open_at_start: bool):
        self.budget = budget
        self.start = start
        self.end = end
        self.open_at_start = open_at_start
        self._first_length: int | None = None

    def __call__(self, tokens: mx.array, logits: mx.array) -> mx.array:
        length = tokens.shape[-1]
        if self._first_length is None:  # the first call chooses the first generated token
            self._first_length = length
        generated = length - self._first_length
        # Reasoning can only have reached the budget once this many tokens exist: until
        # then nothing is added to the graph.
        if generated < self.budget + (0 if self.open_at_start else 1):
            return logits
        reply = tokens.reshape(-1)[length - generated:] if generated else None
        force = self._force(reply, generated)
        vocab = mx.arange(logits.shape[-1])
        forced = mx.where(vocab == self.end, mx.array(0.0, logits.dtype),
                          mx.array(-mx.inf, logits.dtype))
        return mx.where(force, forced, logits)

    def _force(self, reply: mx.array | None, generated: int) -> mx.array:
        """Whether reasoning is open and has ``budget`` tokens already (a lazy boolean)."""
        if reply is None:  # nothing generated: open_at_start with a budget of 0
            return mx.array(True)
        positions = mx.arange(generated)
        if self.open_at_start:
            started, start_at = mx.array(True), mx.array(-1)
        else:
            is_start = reply == self.start
            started, start_at = is_start.any(), mx.argmax(is_start)
        ended = ((reply == self.end) & (positions > start_at)).any()
        reasoning = generated - start_at - 1
        return started & ~ended & (reasoning >= self.budget)


def reasoning_marker_ids(tokenizer: Any, family) -> tuple[int, int] | None:
    """The single-token ids of the family's reasoning markers, or None if it has none."""
    if family.think is None:
        return None
    ids = []
    for marker in family.think:
        encoded = tokenizer.encode(marker, add_special_tokens=False)
        if len(encoded) != 1:
            return None
        ids.append(int(encoded[0]))
    return ids[0], ids[1]


def think_budget_for(tokenizer: Any, request, prompt) -> ThinkBudget | None:
    """The processor for ``request`` (None without a budget); raises ``EngineRequestError``
    naming ``thinking_token_budget`` when the model has no reasoning markers to force."""
    budget = getattr(request, "thinking_token_budget", None)
    if budget is None:
        return None
    family = family_for_tokenizer(tokenizer)
    ids = reasoning_marker_ids(tokenizer, family)
    if ids is None or request.kind != "chat":
        raise EngineRequestError(
            "'thinking_token_budget' needs a chat request to a model that reasons with "
            f"single-token markers; this model's parser family '{family.name}' has none, so "
            "leave the option out.",
            param="thinking_token_budget",
        )
    return ThinkBudget(budget, *ids, prompt_starts_in_reasoning(family, prompt.text))


def reasoning_token_count(token_ids: Sequence[int], budget: ThinkBudget) -> int | None:
    """Generated tokens inside reasoning (markers excluded), by the processor's own rule;
    None when the reply never reasoned (a template that disabled thinking)."""
    count, open_ = 0, budget.open_at_start
    for token in token_ids:
        if open_:
            if token == budget.end:
                break
            count += 1
        elif token == budget.start:
            open_ = True
    return count if open_ else None
