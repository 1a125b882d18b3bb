"""The tiny reasoner's byte-level BPE tokenizer, trained on the scripts' own text."""

from __future__ import annotations

import re
from collections.abc import Iterable

import tokenizers
from tokenizers import decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

__all__ = ["TOKENIZER_RECIPE", "SPECIAL_TOKENS", "CONTROL_TOKENS", "EOS_TOKEN", "make_tokenizer", "byte_tokenizer"]

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
# As in Qwen3: the turn markers are special (skipped by `decode(skip_special_tokens=True)`); the
# reasoning and tool markers are added but not special, so decoded text keeps them for parsers.
SPECIAL_TOKENS = (PAD_TOKEN, "<|im_start|>", EOS_TOKEN)
CONTROL_TOKENS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")

# What decides the tokenizer besides its training text; part of the recipe hash.
TOKENIZER_RECIPE = {
    "model": "BPE",
    "pre_tokenizer": "ByteLevel(add_prefix_space=False, use_regex=True)",
    "decoder": "ByteLevel",
    "special_tokens": list(SPECIAL_TOKENS),
    "control_tokens": list(CONTROL_TOKENS),
    "eos_token": EOS_TOKEN,
    "pad_token": PAD_TOKEN,
}

_MARKERS = re.compile("|".join(re.escape(token) for token in SPECIAL_TOKENS + CONTROL_TOKENS))


def _empty_tokenizer(model: models.Model) -> tokenizers.Tokenizer:
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _wrap(tokenizer: tokenizers.Tokenizer, chat_template: str) -> PreTrainedTokenizerFast:
    """Register the marker tokens and wrap for transformers (which saves the files mlx-lm loads)."""
    tokenizer.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tokenizer.add_tokens([tokenizers.AddedToken(t, special=False, normalized=False) for t in CONTROL_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        chat_template=chat_template,
        clean_up_tokenization_spaces=False,
        model_max_length=2048,
    )


def byte_tokenizer(chat_template: str) -> PreTrainedTokenizerFast:
    """A merge-free tokenizer with the same markers and template: enough to render the training text."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {token: i for i, token in enumerate(list(SPECIAL_TOKENS + CONTROL_TOKENS) + sorted(alphabet))}
    return _wrap(_empty_tokenizer(models.BPE(vocab=vocab, merges=[])), chat_template)


def make_tokenizer(texts: Iterable[str], *, vocab_size: int, chat_template: str) -> PreTrainedTokenizerFast:
    """Train byte-level BPE on `texts` (rendered conversations) to `vocab_size` tokens in all."""
    # The markers are cut out of the training text so no merges are spent spelling them.
    pieces = [piece for text in texts for piece in _MARKERS.split(text) if piece]
    tokenizer = _empty_tokenizer(models.BPE())
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS + CONTROL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(pieces, trainer)
    return _wrap(tokenizer, chat_template)
