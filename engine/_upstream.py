"""Every reach into mlx-lm's and transformers' internals from the engine, in one place.

Each function here uses something its library does not document as public API (a helper of
``mlx_lm.server``, a private attribute or function). Checked against mlx-lm 0.32.2 and
transformers 5.24.0 (the versions pyproject pins or allows); when one of them changes, this
module is where the engine breaks and the only place to fix.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

__all__ = ["role_mapping_prompt", "system_fingerprint", "hf_tokenizer", "infer_tool_parser",
           "bpe_byte_decoder", "infer_thinking", "batch_generator", "copy_prompt_cache",
           "keep_leading_space", "quiet_length_warning"]


def role_mapping_prompt(messages: list[dict], role_mapping: dict | None) -> str:
    """mlx_lm.server's ``convert_chat``: the prompt it builds for tokenizers without a chat
    template, so the engine's tokens match the server's (parity)."""
    from mlx_lm.server import convert_chat

    return convert_chat(messages, role_mapping)


@functools.cache
def system_fingerprint() -> str:
    """mlx_lm.server's ``get_system_fingerprint``: the same value the server reports."""
    from mlx_lm.server import get_system_fingerprint

    return get_system_fingerprint()


def hf_tokenizer(wrapper: Any) -> Any:
    """The Hugging Face tokenizer inside mlx-lm's ``TokenizerWrapper`` (``_tokenizer``)."""
    return wrapper._tokenizer


def quiet_length_warning(wrapper: Any) -> None:
    """Silence transformers' "Token indices sequence length is longer than the specified
    maximum" warning, which it prints once when a prompt passes ``model_max_length``: the
    engine checks prompts against the model's context itself, and the warning would land
    in a notebook cell's output (its flag in ``deprecation_warnings`` marks it as given)."""
    warnings = getattr(hf_tokenizer(wrapper), "deprecation_warnings", None)
    if isinstance(warnings, dict):
        warnings["sequence-length-is-longer-than-the-specified-maximum"] = True


def infer_tool_parser(hf_tokenizer: Any) -> str | None:
    """mlx-lm's ``tokenizer_utils._infer_tool_parser``: the tool parser module it would pick."""
    from mlx_lm.tokenizer_utils import _infer_tool_parser

    return _infer_tool_parser(hf_tokenizer)


def bpe_byte_decoder() -> dict[str, int]:
    """mlx-lm's ``_byte_decoder``: GPT-2's table from a byte-level BPE token's characters to
    the bytes they stand for, as its BPE detokenizer reads tokens."""
    from mlx_lm.tokenizer_utils import _byte_decoder

    return _byte_decoder()


def keep_leading_space(detokenizer) -> None:
    """Make one of mlx-lm's streaming detokenizers keep the space it drops from the start of
    a text (a completion's first word): a reply that goes on from the prompt's own words
    (``continue_final_message``) needs it. Set on this copy alone (the property hands out
    copies)."""
    if hasattr(detokenizer, "trim_space"):  # SentencePiece's is a flag
        detokenizer.trim_space = False
    if hasattr(detokenizer, "_maybe_trim_space"):  # byte-level BPE's a method
        detokenizer._maybe_trim_space = lambda text: text


def infer_thinking(hf_tokenizer: Any) -> tuple:
    """mlx-lm's ``tokenizer_utils._infer_thinking``: (start, end, start id, end id) markers."""
    from mlx_lm.tokenizer_utils import _infer_thinking

    return _infer_thinking(hf_tokenizer)


# -- mlx-lm's BatchGenerator, with fewer waits on the device -----------------------------------
# When requests leave a batch (a prompt batch split for decoding, a reply that finishes or is
# cancelled), mlx-lm filters each layer's ``BatchKVCache`` on its own, and each layer's filter
# reads its gathered left padding back to the host: a new kernel queued behind the decode step
# in flight, then waited for, once per layer (16 × ~0.25 ms after the step on an H200 for a 1B
# model, 7-9.5 ms a split in all). Every layer's padding was computed by an earlier step, so
# here it is read as it is, after one wait for all layers, and the rows kept are gathered lazily.

def _filter_kv_caches(caches: list, keep: list[int]) -> None:
    """``BatchKVCache.filter(keep)`` on every layer, the same result, one wait at most."""
    import mlx.core as mx
    from mlx_lm.models.cache import BatchKVCache

    if not all(type(c) is BatchKVCache for c in caches):
        for c in caches:
            c.filter(keep)
        return
    mx.eval([c.left_padding for c in caches])
    every_row = keep == list(range(len(caches[0].offset)))
    for c in caches:
        pads = c.left_padding.tolist()
        shift = min(pads[i] for i in keep)  # mlx-lm trims the padding every row kept has
        if not every_row:
            if c.keys is not None:
                c.keys, c.values = c.keys[keep], c.values[keep]
            c.offset, c.left_padding = c.offset[keep], c.left_padding[keep]
        if shift > 0:
            if c.keys is not None:
                c.keys = c.keys[..., shift:, :]
                c.values = c.values[..., shift:, :]
            c._idx -= shift
            c.left_padding = c.left_padding - shift


@functools.cache
def _batch_generator_class():
    from mlx_lm.generate import BatchGenerator, GenerationBatch, PromptProcessingBatch

    def filter(self, keep, base):
        caches, self.prompt_cache = self.prompt_cache, []
        base.filter(self, keep)  # everything but the caches (an empty list to filter)
        if keep:
            _filter_kv_caches(caches, keep)
            self.prompt_cache = caches

    class _PromptBatch(PromptProcessingBatch):
        def filter(self, keep):
            filter(self, keep, PromptProcessingBatch)

        def split(self, indices):
            if len(indices) < len(self.uids):
                return super().split(indices)
            # All of them leave for decoding: hand over the batch as it is, not a copy of it
            # filtered down to every row.
            moved = copy.copy(self)
            self.filter([])  # rebinds this batch's lists; the moved one keeps them
            moved.filter(list(range(len(moved.uids))))
            return moved

    class _GenerationBatch(GenerationBatch):
        def filter(self, keep):
            filter(self, keep, GenerationBatch)

    class FewerWaitsBatchGenerator(BatchGenerator):
        def __init__(self, model, **kwargs):
            super().__init__(model, **kwargs)
            self._prompt_batch = _PromptBatch.empty(
                model, self.sampler, prefill_step_size=self.prefill_step_size)
            self._generation_batch = _GenerationBatch.empty(model, self.sampler)

    return FewerWaitsBatchGenerator


def batch_generator(model, **kwargs):
    """mlx-lm's ``BatchGenerator(model, **kwargs)``, whose batches filter their KV caches
    with one wait on the device rather than one per layer (``_filter_kv_caches``)."""
    return _batch_generator_class()(model, **kwargs)


def copy_prompt_cache(cache: list) -> list:
    """``copy.deepcopy`` of a KV cache (a list of mlx-lm cache objects), at a third of its
    cost; relies on how mlx-lm's caches hold and update their state.

    An mlx array is copied as a new handle on the same buffer: an update
    (``keys[..., a:b, :] = new``) rebinds the handle it is made through to a new array and
    never writes into a buffer another handle holds, so the stored entry stays as it was.
    Cache objects, lists and tuples are new, since caches assign into those
    (``ArraysCache.cache[i] = state``). Anything else is deep-copied. Python's deepcopy
    machinery was 60% of a follow-up's cache fetch on an H200's host (0.44 ms, 16 layers).
    """
    import mlx.core as mx
    from mlx_lm.models.cache import _BaseCache

    def copied(value):
        kind = type(value)
        if kind is mx.array:
            return copy.copy(value)
        if kind is list or kind is tuple:
            return kind(copied(v) for v in value)
        if value is None or kind in (int, float, bool, str):
            return value
        if isinstance(value, _BaseCache) and hasattr(value, "__dict__"):
            new = object.__new__(kind)
            new.__dict__.update({k: copied(v) for k, v in value.__dict__.items()})
            return new
        return copy.deepcopy(value)

    return copied(cache)
