"""Turn errors from the layers below into the one-line ``UsageError`` a cell fails with.

IPython prints a ``UsageError`` as one line, without a traceback, and still fails the cell
(so Run All stops). Every expected failure -- engine errors, tools that cannot be described,
unknown sessions -- is translated here, in one function, at the magic boundary; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import re

from contextlib import contextmanager
from typing import Iterator

from IPython.core.error import UsageError

from mlx_notebook.engine import (
    EngineDeadError,
    EngineError,
    EngineRequestError,
    ModelStoreError,
)

from .options import sampling_fields
from .sessions import UnknownSession
from .tools import ToolError

__all__ = ["usage_error", "as_usage_errors", "no_model_error", "EXPECTED_ERRORS"]

EXPECTED_ERRORS = (EngineError, ToolError, UnknownSession)

FLAGS = {
    **{field: "--" + field.replace("_", "-") for field in sampling_fields()},
    "top_logprobs": "--tokens",
    "logprobs": "--tokens",
    "chat_template_kwargs": "--think",
    "thinking_token_budget": "--think-budget",
}
"""Request body fields and the magic flag that sets each."""

LOAD_FLAGS = {
    "draft_model": "--draft-model", "adapter_path": "--adapter", "chat_template": "--chat-template",
    "max_kv_size": "--max-kv-size", "prompt_cache_bytes": "--prompt-cache-bytes",
    "fused_first_token": "--fused-first-token", "cudnn_for_few_rows": "--cudnn-for-few-rows",
}
"""``Engine`` keywords and the ``%load_model`` flag that sets each."""


def usage_error(magic: str, exc: Exception, messages: list | None = None) -> UsageError:
    """The one-sentence ``UsageError`` for an expected failure inside ``magic``;
    ``messages``: the chat request's, which the advice for a prompt past the context fits."""
    if isinstance(exc, EngineDeadError):
        message = "the engine has stopped; run %load_model to start it again."
    elif isinstance(exc, EngineRequestError):
        # The engine names body fields ('max_tokens'); the user typed a flag (--max-tokens).
        message = _sentence(exc.message)
        flag = FLAGS.get(exc.param or "")
        if flag:
            message = message.replace(f"'{exc.param}'", flag)
        if exc.error.get("code") == "context_length_exceeded":
            message = _context_fix(message, magic, messages)
    elif isinstance(exc, ModelStoreError):
        message = _sentence(str(exc))
    else:
        message = _sentence(str(exc))
        if magic == "%load_model":
            for keyword, flag in LOAD_FLAGS.items():
                message = message.replace(keyword, flag)
    error = UsageError(f"{magic}: {message}")
    error.__cause__ = exc  # kept for %tb and logging, not shown by default
    return error


def _context_fix(message: str, magic: str, messages: list | None) -> str:
    """The engine's "shorten the conversation", as the cell can act on it: a completion has
    no conversation; a chat session can also start afresh, unless this is its first turn
    (then only the message, or the system prompt, can be cut)."""
    # A prompt refused by its length in characters, before it is tokenized, says "shorten it".
    if magic == "%%complete":
        return re.sub(r"shorten (the prompt|it)\.$", "shorten the cell's text.", message)
    if magic != "%%chat":
        return message
    message = re.sub(r"shorten it\.$", "shorten the conversation.", message)
    if messages and not any(m.get("role") == "assistant" for m in messages):
        cut = ("the message or the --system prompt" if messages[0].get("role") == "system"
               else "the message")
        return message.replace("shorten the conversation", f"shorten {cut}")
    return message[:-1] + ", or start the session afresh with --new or %mlx reset."


@contextmanager
def as_usage_errors(magic: str, messages: list | None = None) -> Iterator[None]:
    """Re-raise expected errors from the block as ``usage_error(magic, exc, messages)``."""
    try:
        yield
    except EXPECTED_ERRORS as exc:
        raise usage_error(magic, exc, messages) from exc


def no_model_error(magic: str, named: list[str] = ()) -> UsageError:
    """No default model; ``named``: the models loaded with ``--name``, which a plain cell
    does not use (saying "no model is loaded" while %mlx status lists one misleads)."""
    if named:
        return UsageError(f"{magic}: no default model is loaded, only {', '.join(map(repr, named))} "
                          "(for %%chat --compare model=NAME); run %load_model SPEC without "
                          "--name to load the default.")
    return UsageError(f"{magic}: no model is loaded; run %load_model first (no argument loads the default model).")


def _sentence(text: str) -> str:
    text = text.strip() or "the engine failed without a message"
    first = text.split(" ", 1)[0].rstrip(",:;")
    # It follows "%magic: ": an ordinary first word loses its capital, a name keeps it
    # (Qwen/Qwen3-0.6B, Models/mine, SmolLM2).
    if re.fullmatch(r"[A-Z][a-z]+(?:'s)?", first):
        text = text[0].lower() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
