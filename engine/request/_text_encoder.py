"""Prompt text to token ids: the tokenizer behind one lock, chat text a piece at a time.

A fast (Rust) tokenizer cuts its input at the added tokens (``<|im_start|>``, ``<|im_end|>``,
``<think>``…) before anything else and tokenizes the pieces between them on their own. A
conversation's next turn repeats every piece of the last one, so ``TextEncoder`` remembers
each piece's ids and sends only new pieces to the tokenizer: an 8,000-token follow-up turn
costs a split and a few dictionary lookups instead of tokenizing 30 KB again (15-20 ms on a
GPU host, where it was most of the turn's time to first token).

It does so only where the pieces really are independent: every added token matched as-is
(no stripping of neighbouring spaces, no normalizer in the way), and a sample conversation
encoded whole and in pieces giving the same ids. Otherwise every text goes to the tokenizer
whole. HF fast tokenizers are not safe for concurrent use, hence the lock; the memory is
bounded by characters and forgets the least recently used pieces first.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

__all__ = ["TextEncoder"]

_MEMO_CHARS = 4_000_000
"""Characters of pieces remembered (about 1M tokens of conversations)."""

_SAMPLE = [
    {"role": "system", "content": "You are terse.  Answer in 1 line.\n"},
    {"role": "user", "content": "Hi! What's 12+30?\n\n  Spaces,\ttabs — and ünïcode…"},
    {"role": "assistant", "content": " 42.\n"},
    {"role": "user", "content": "<b>And</b> 7*6 ?"},
]


def _backend(tokenizer):
    """The ``tokenizers.Tokenizer`` under an mlx-lm wrapper or an HF fast tokenizer."""
    hf = getattr(tokenizer, "_tokenizer", tokenizer)
    return getattr(hf, "backend_tokenizer", None)


def _splitter(backend) -> re.Pattern | None:
    """A pattern matching the added tokens as the tokenizer finds them (leftmost, longest
    first), or None when pieces between them are not tokenized independently."""
    added = list(backend.get_added_tokens_decoder().values())
    if not added:
        return None
    for token in added:
        if token.lstrip or token.rstrip or token.single_word:
            return None  # the token takes spaces from the pieces beside it
        if token.normalized and backend.normalizer is not None:
            return None  # matched on normalized text, not on what we would split
    contents = sorted({t.content for t in added if t.content}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, contents)))


class TextEncoder:
    """Encodes prompt text for one tokenizer (see the module docstring)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.lock = threading.Lock()
        self._backend = _backend(tokenizer)
        self._split = _splitter(self._backend) if self._backend is not None else None
        self._memo: OrderedDict[str, list[int]] = OrderedDict()
        self._memo_chars = 0
        if self._split is not None and not self._pieces_agree():
            self._split = None

    @property
    def by_pieces(self) -> bool:
        """Whether chat text is encoded a piece at a time (else whole, every time)."""
        return self._split is not None

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """The tokenizer's ``encode(text, add_special_tokens=...)``, the same ids."""
        with self.lock:
            if add_special_tokens or self._split is None:
                return self.tokenizer.encode(text, add_special_tokens=add_special_tokens)
            return self._by_pieces(text)

    def _by_pieces(self, text: str) -> list[int]:
        pieces: list[str | int] = []  # text between added tokens, or an added token's id
        at = 0
        token_id = self._backend.token_to_id
        for match in self._split.finditer(text):
            if match.start() > at:
                pieces.append(text[at:match.start()])
            pieces.append(token_id(match.group()))
            at = match.end()
        if at < len(text):
            pieces.append(text[at:])
        memo = self._memo
        new = list({p: None for p in pieces if type(p) is str and p not in memo})
        if new:
            for piece, encoding in zip(new, self._backend.encode_batch(
                    new, add_special_tokens=False)):
                memo[piece] = encoding.ids
                self._memo_chars += len(piece)
        ids: list[int] = []
        for p in pieces:
            if type(p) is str:
                ids += memo[p]
                memo.move_to_end(p)
            else:
                ids.append(p)
        while self._memo_chars > _MEMO_CHARS and len(memo) > 1:
            piece, _ = memo.popitem(last=False)
            self._memo_chars -= len(piece)
        return ids

    def _pieces_agree(self) -> bool:
        """Whether a sample conversation gives the same ids whole and in pieces."""
        try:
            text = self.tokenizer.apply_chat_template(_SAMPLE, add_generation_prompt=True,
                                                      tokenize=False)
        except Exception:  # no template, or one that refuses the sample: use plain text
            text = "\n".join(m["content"] for m in _SAMPLE)
        texts = [text, text + text[: len(text) // 2], " " + text]
        try:
            whole = [self.tokenizer.encode(t, add_special_tokens=False) for t in texts]
            pieces = [self._by_pieces(t) for t in texts]
        except Exception:
            return False
        finally:
            self._memo.clear()
            self._memo_chars = 0
        return whole == pieces
