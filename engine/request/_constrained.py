"""JSON output: ``response_format`` ``json_object`` or ``json_schema``, decoded to fit.

The schema becomes an llguidance grammar when the request is admitted (a schema it cannot
compile is refused there, naming the field). While the reply is served, an mlx-lm logits
processor (``JsonConstraint``, the hook ``logit_bias`` and the penalties use) lets through
only the tokens that keep the answer inside the grammar, and only the end of the turn once
the JSON is complete. A reasoning model thinks freely first: the constraint starts after the
family's end-of-reasoning marker (the first token may open reasoning, as the model chooses).

Unlike the other processors, this one reads the last token back to Python each step (the
matcher walks the grammar on the host): a request with a JSON format costs its batch mlx-lm's
overlap of host and device work while it runs, and about 0.3 ms a step for the mask.
"""

from __future__ import annotations

import functools
import json
import weakref
from typing import Any, Mapping

import mlx.core as mx
import numpy as np

from .._errors import EngineRequestError

__all__ = ["json_schema_for", "JsonConstraint", "json_constraint_for", "warm_up"]

_ANY_OBJECT = {"type": "object"}


def _fail(message: str, param: str) -> None:
    raise EngineRequestError(message, param=param)


def json_schema_for(response_format: Any) -> str | None:
    """The JSON schema (as canonical JSON text) a chat body's ``response_format`` asks the
    answer to fit, None for text; raises ``EngineRequestError`` naming the part that is
    wrong, a schema the grammar compiler refuses included."""
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        _fail("'response_format' must be an object such as {\"type\": \"json_object\"}.",
              "response_format")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        schema = _ANY_OBJECT
    elif kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("schema", {}), Mapping):
            _fail("'response_format.json_schema' must be an object whose 'schema' is a JSON "
                  "schema object.", "response_format.json_schema")
        schema = spec.get("schema") or _ANY_OBJECT
    else:
        _fail("'response_format' type must be \"text\", \"json_object\" or \"json_schema\".",
              "response_format.type")
    try:
        text = json.dumps(schema, allow_nan=False, ensure_ascii=False)  # (keys keep their order)
        error = _grammar(text)[1]
    except (ValueError, TypeError, RecursionError) as exc:  # what json and llguidance raise
        error = str(exc)
    if error:  # (one line: a regex error draws its caret on lines of its own)
        said = " ".join(error.split()).rstrip(".")
        _fail(f"The JSON schema of 'response_format' cannot be decoded to: {said[:300]}.",
              "response_format.json_schema.schema")
    return text


@functools.lru_cache(maxsize=64)
def _grammar(schema: str) -> tuple[str, str]:
    """llguidance's grammar for a schema, and its error ("" when it compiles): compiled
    once for admission and for the processor, and once for a schema sent again."""
    from llguidance import LLMatcher

    grammar = LLMatcher.grammar_from_json_schema(schema, defaults=_LAYOUT)
    return grammar, LLMatcher.validate_grammar(grammar)


_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": ",
           "lenient": True}
"""One line, spaced as ``json.dumps`` writes it: free whitespace let a small model fill an
object with blank lines until ``max_tokens``. Keywords the compiler does not implement are
not enforced (lenient), rather than refusing a pydantic model's schema for them."""


_tokenizers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _ll_tokenizer(tokenizer: Any) -> Any:
    """llguidance's view of a model's tokenizer (about 0.3 s to build: kept per tokenizer)."""
    from ..parsing import per_tokenizer  # (imports transformers: admission must not)

    def build(tokenizer: Any) -> Any:
        import llguidance.hf

        hf = getattr(tokenizer, "_tokenizer", tokenizer)
        eos = sorted(getattr(tokenizer, "eos_token_ids", None) or [hf.eos_token_id])
        return llguidance.hf.from_tokenizer(hf, eos_token=eos)

    return per_tokenizer(_tokenizers, tokenizer, build)


def warm_up(tokenizer: Any) -> None:
    """Build the tokenizer's llguidance view now (on the caller's thread), so the engine
    thread never stalls on it."""
    _ll_tokenizer(tokenizer)


class JsonConstraint:
    """The logits processor: ``processor(tokens, logits) -> logits`` (mlx-lm's signature).

    ``think``: the reasoning markers' token ids, or None for a model without them;
    ``open_at_start``: the prompt left reasoning open. It counts the tokens generated from
    the context's length, so one processor serves a request from its first token to its last
    (such a request never takes the single-stream path, which may hand it to the batch)."""

    def __init__(self, matcher: Any, think: tuple[int, int] | None, open_at_start: bool,
                 ends: list[int]):
        self.matcher = matcher
        self.think = think
        self.ends = ends
        self.reasoning = bool(think) and open_at_start
        self._first_length: int | None = None
        self._seen = 0

    def __call__(self, tokens: mx.array, logits: mx.array) -> mx.array:
        length = tokens.shape[-1]
        if self._first_length is None:
            self._first_length = length
        generated = length - self._first_length
        if generated > self._seen:
            for token in tokens.reshape(-1)[length - generated + self._seen:].tolist():
                self._advance(token)
            self._seen = generated
        if self.reasoning:
            return logits
        allowed = self._allowed(logits.shape[-1])
        if generated == 0 and self.think is not None:
            allowed[self.think[0]] = True  # the model may open its reasoning first
        if not allowed.any():  # (a matcher in error: no token fits) the turn ends
            allowed[self.ends] = True
        return mx.where(mx.array(allowed), logits, mx.array(-mx.inf, logits.dtype))

    def _advance(self, token: int) -> None:
        if self.reasoning:
            self.reasoning = token != self.think[1]
        elif self.think is not None and self._seen == 0 and token == self.think[0]:
            self.reasoning = True
        else:
            self.matcher.consume_token(token)
        self._seen += 1

    def _allowed(self, vocab: int) -> np.ndarray:
        bits = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8)
        allowed = np.unpackbits(bits, bitorder="little")[:vocab].astype(bool)
        if allowed.shape[0] < vocab:  # an embedding padded past the tokenizer's vocabulary
            allowed = np.pad(allowed, (0, vocab - allowed.shape[0]))
        return allowed


def json_constraint_for(tokenizer: Any, request: Any, prompt: Any) -> JsonConstraint | None:
    """The processor for ``request`` (None without a JSON format)."""
    schema = getattr(request, "response_format", None)
    if schema is None:
        return None
    from llguidance import LLMatcher

    from ..parsing import family_for_tokenizer, prompt_starts_in_reasoning

    family = family_for_tokenizer(tokenizer)
    think = None
    if family.think is not None:
        ids = [tokenizer.encode(marker, add_special_tokens=False) for marker in family.think]
        if all(len(i) == 1 for i in ids):
            think = (int(ids[0][0]), int(ids[1][0]))
    open_at_start = prompt is not None and prompt_starts_in_reasoning(family, prompt.text)
    ends = sorted(getattr(tokenizer, "eos_token_ids", None) or [tokenizer.eos_token_id])
    return JsonConstraint(LLMatcher(_ll_tokenizer(tokenizer), _grammar(schema)[0]), think,
                          open_at_start, ends)
