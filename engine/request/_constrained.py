"""JSON output: ``response_format`` ``json_object`` or ``json_schema``, decoded to fit; and
calls forced by ``tool_choice`` ("required" or a named function), decoded in the model's markup.

The schema becomes an llguidance grammar when the request is admitted (a schema it cannot
compile is refused there, naming the field). While the reply is served, an mlx-lm logits
processor (``GrammarConstraint``, the hook ``logit_bias`` and the penalties use) lets through
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

from .._errors import EngineError, EngineRequestError

__all__ = ["json_schema_for", "GrammarConstraint", "GrammarDeadEnd", "constraint_for",
           "tool_call_grammar", "warm_up"]

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

        return llguidance.hf.from_tokenizer(getattr(tokenizer, "_tokenizer", tokenizer),
                                            eos_token=_end_ids(tokenizer))

    return per_tokenizer(_tokenizers, tokenizer, build)


def _end_ids(tokenizer: Any) -> list[int]:
    """The tokens that end the turn: the grammar's end, and what it allows once done."""
    return sorted(getattr(tokenizer, "eos_token_ids", None) or [tokenizer.eos_token_id])


def warm_up(tokenizer: Any) -> None:
    """Build the tokenizer's llguidance view now (on the caller's thread), so the engine
    thread never stalls on it."""
    _ll_tokenizer(tokenizer)


class GrammarDeadEnd(EngineError):
    """The grammar allows no next token: the reply cannot go on in the shape asked for.

    llguidance compiles some schemas that no finite JSON fits (a ``$ref`` that leads back to
    itself with no way out); its matcher then stops allowing anything, mid-value or at once.
    Ending the turn there served ``""`` or ``{"a": `` with ``finish_reason: "stop"``, as if
    it were an answer; this fails the request, in a sentence that names the field."""


class GrammarConstraint:
    """The logits processor: ``processor(tokens, logits) -> logits`` (mlx-lm's signature).

    ``think``: the reasoning markers' token ids, or None for a model without them;
    ``open_at_start``: the prompt left reasoning open; ``closed_at_start``: the prompt ends
    with a reasoning block already closed (thinking disabled: ``<think>\n\n</think>``), so
    the reply may not open another one. It counts the tokens generated from
    the context's length, so one processor serves a request from its first token to its last
    (such a request never takes the single-stream path, which may hand it to the batch)."""

    def __init__(self, matcher: Any, think: tuple[int, int] | None, open_at_start: bool,
                 ends: list[int], closed_at_start: bool = False,
                 shape: str = "the JSON schema of 'response_format'"):
        self.matcher = matcher
        self.shape = shape
        self.think = think
        self.may_open = think is not None and not closed_at_start
        self.ends = ends
        self._masks: tuple[mx.array, mx.array] | None = None
        """(the ends, the end-of-reasoning marker) over the vocabulary, made once."""
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
            return self._no_end_in_reasoning(logits)
        allowed = self._allowed(logits.shape[-1])
        if generated == 0 and self.may_open:
            # The model may open its reasoning first, unless the prompt closed it: reasoning
            # opened there was never closed by a small model, and the grammar never applied.
            allowed[self.think[0]] = True
        if self.matcher.is_error() or not allowed.any():  # (in error it allows only the end)
            raise GrammarDeadEnd(
                f"The reply cannot go on within {self.shape}: no token can follow what it "
                "holds so far (no finite JSON fits a schema whose $ref leads back to itself "
                "with no way out, and the decoder gives up on one too large); fix the schema.")
        return mx.where(mx.array(allowed), logits, mx.array(-mx.inf, logits.dtype))

    def _no_end_in_reasoning(self, logits: mx.array) -> mx.array:
        """The reply may not end inside its reasoning (it would end with no answer, or no
        call): the end of the turn's score goes to the end-of-reasoning marker instead."""
        vocab = logits.shape[-1]
        if self._masks is None or self._masks[0].shape[0] != vocab:
            mask = np.zeros(vocab, dtype=bool)
            mask[[e for e in self.ends if e < vocab]] = True
            self._masks = mx.array(mask), mx.arange(vocab) == self.think[1]
        ends, close = self._masks
        low = mx.array(-mx.inf, logits.dtype)
        end = mx.max(mx.where(ends, logits, low), axis=-1, keepdims=True)
        return mx.where(ends, low, mx.where(close, mx.maximum(logits, end), logits))

    def _advance(self, token: int) -> None:
        if self.reasoning:
            self.reasoning = token != self.think[1]
        elif self.may_open and self._seen == 0 and token == self.think[0]:
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


_FORCEABLE = ("qwen3",)
"""Families whose calls the grammar below writes: ``<tool_call>`` markers around
``{"name": ..., "arguments": {...}}`` (Qwen, Hermes)."""


def tool_call_grammar(tokenizer: Any, request: Any) -> str:
    """The grammar of the calls ``request.forced_call`` asks for, in the model's own markup:
    one or more ``<tool_call>`` blocks (one without ``parallel_tool_calls``), each naming one
    of the tools with arguments that fit its parameters. Raises ``EngineRequestError`` (``tool_choice``) for a model whose markup
    it cannot write, or parameters the compiler refuses."""
    from ..parsing import family_for_tokenizer

    family = family_for_tokenizer(tokenizer)
    if family.name not in _FORCEABLE or not family.tools:
        raise EngineRequestError(
            f"'tool_choice' forcing a call needs a model whose calls are <tool_call> JSON "
            f"(Qwen, Hermes); this model's tool-call family is '{family.name}', so send "
            "\"auto\" (or 'response_format' JSON for an answer in a shape).", param="tool_choice")
    ll_tokenizer = _ll_tokenizer(tokenizer)

    def marker(text: str) -> str:  # a special token by its id, other text as text
        ids = tokenizer.encode(text, add_special_tokens=False)
        if len(ids) == 1 and ll_tokenizer.is_special_token(ids[0]):
            return f"<[{ids[0]}]>"
        return json.dumps(text)

    called = [t["function"] for t in request.tools if t["function"]["name"] in request.forced_call]
    grammar, error = _tool_grammar(marker(family.tools[0].start), marker(family.tools[0].end),
                                   json.dumps(called), request.parallel_tool_calls)
    if error:
        said = " ".join(error.split()).rstrip(".")
        raise EngineRequestError(f"The tools' parameters cannot be decoded to: {said[:300]}.",
                                 param="tools")
    return grammar


@functools.lru_cache(maxsize=64)
def _tool_grammar(open_marker: str, close_marker: str, functions: str,
                  parallel: bool) -> tuple[str, str]:
    from llguidance import LLMatcher

    rules = []
    for i, function in enumerate(json.loads(functions)):
        arguments = dict(function.get("parameters") or {})
        # A call's arguments are an object whatever else the schema allows (admission refuses
        # a "type" without "object"; one of "anyOf" or "oneOf" alone may name none).
        arguments["type"] = "object"
        call = {"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
                "properties": {"name": {"const": function["name"]}, "arguments": arguments},
                "x-guidance": _LAYOUT}
        for defs in ("$defs", "definitions"):  # (a pydantic model's: its refs point at the root)
            if isinstance(arguments.get(defs), dict):
                call[defs] = arguments.pop(defs)
        rules.append(f"body{i}: %json {json.dumps(call)}")
    lark = "\n".join(['start: call ("\\n" call)*' if parallel else "start: call",
                      f'call: {open_marker} "\\n" body "\\n" {close_marker}',
                      "body: " + " | ".join(f"body{i}" for i in range(len(rules))), *rules, ""])
    try:
        grammar = LLMatcher.grammar_from_lark(lark)
    except ValueError as exc:
        return "", str(exc)
    return grammar, LLMatcher.validate_grammar(grammar)


def constraint_for(tokenizer: Any, request: Any, prompt: Any) -> GrammarConstraint | None:
    """The processor for ``request`` (None without a JSON format or a forced call)."""
    schema = getattr(request, "response_format", None)
    forced = getattr(request, "forced_call", None)
    if schema is None and forced is None:
        return None
    from llguidance import LLMatcher

    from ..parsing import family_for_tokenizer, prompt_ends_reasoning, prompt_starts_in_reasoning
    from ._think_budget import reasoning_marker_ids

    family = family_for_tokenizer(tokenizer)
    open_at_start = prompt is not None and prompt_starts_in_reasoning(family, prompt.text)
    closed_at_start = prompt is not None and prompt_ends_reasoning(family, prompt.text)
    grammar = _grammar(schema)[0] if schema is not None else tool_call_grammar(tokenizer, request)
    return GrammarConstraint(LLMatcher(_ll_tokenizer(tokenizer), grammar),
                             reasoning_marker_ids(tokenizer, family), open_at_start,
                             _end_ids(tokenizer), closed_at_start,
                             "the JSON schema of 'response_format'" if schema is not None
                             else "the parameters of the tools 'tool_choice' forces")
