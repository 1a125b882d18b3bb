"""OpenAI-shaped responses from any engine's ``submit``: the local ``Engine`` and the
``RemoteEngine`` answer ``chat_completions`` and ``completions`` through these, so both
cancel a reply nobody reads any more (a stream dropped half-way, Ctrl-C while a whole reply
is awaited) and serve a list of prompts the same way.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from .._errors import EngineRequestError
from . import _responses as responses

__all__ = ["MAX_PROMPTS", "complete", "respond", "several_prompts", "submit_each"]

MAX_PROMPTS = 64  # prompts in one completions request (each is its own request here)


def respond(engine: Any, body: Mapping[str, Any], kind: str) -> dict | Iterator[dict]:
    """One request through ``engine.submit``: the whole response, or its chunks."""
    handle = engine.submit(body, kind=kind)
    stream = handle.request.stream
    if kind == "chat":
        build = responses.chat_chunks if stream else responses.chat_completion
    else:
        build = responses.completion_chunks if stream else responses.text_completion
    return _built(build, handle.events(), [handle])


def complete(engine: Any, body: Mapping[str, Any]) -> dict | Iterator[dict]:
    """``/v1/completions``: ``prompt`` may list strings or token-id lists, as OpenAI takes
    it: one choice per prompt."""
    prompts = several_prompts(body)
    if prompts is None:
        return respond(engine, body, "completion")
    handles = submit_each(engine, body, prompts)
    build = (responses.completion_list_chunks if handles[0].request.stream
             else responses.text_completion_list)
    return _built(build, [h.events() for h in handles], handles)


def _built(build, events, handles: list) -> dict | Iterator[dict]:
    """``build`` over the requests' events, named after the first: a whole response (Ctrl-C
    while it is awaited cancels them), or chunks whose reader may walk away."""
    request = handles[0].request
    named = {"request": request, "request_id": handles[0].id, "created": int(time.time())}
    if not request.stream:
        with _cancelled_on_failure(*handles):
            return build(events, **named)
    return _cancel_when_abandoned(build(events, **named), *handles)


def several_prompts(body) -> list[str] | list[list] | None:
    """The prompts of a completions body whose ``prompt`` lists several strings or lists
    token-id lists (OpenAI's batch forms), else None."""
    prompts = body.get("prompt") if isinstance(body, Mapping) else None
    if isinstance(prompts, list) and len(prompts) > 1 and all(isinstance(p, str) for p in prompts):
        return prompts
    if isinstance(prompts, list) and prompts and all(
            isinstance(p, list) and p and all(type(t) is int for t in p) for p in prompts):
        return prompts
    return None  # anything else is one prompt, or admission's sentence on what is wrong


def submit_each(engine: Any, body, prompts: list) -> list:
    """One completion request per prompt of ``body``, all admitted before any is served: a
    bad one refuses the whole request (those already queued are cancelled)."""
    if len(prompts) > MAX_PROMPTS:
        raise EngineRequestError(f"'prompt' may list at most {MAX_PROMPTS} prompts, got "
                                 f"{len(prompts)}; send several requests.", param="prompt")
    handles: list = []
    try:
        for i, prompt in enumerate(prompts):
            try:
                handles.append(engine.submit({**body, "prompt": prompt}, kind="completion"))
            except EngineRequestError as exc:
                raise _in_the_list(exc, i) from None
    except BaseException:
        for handle in handles:
            handle.cancel()
        raise
    return handles


def _in_the_list(error: EngineRequestError, i: int) -> EngineRequestError:
    """A refusal of prompt ``i`` alone, naming it in the list the client sent (``prompt[1]``,
    ``prompt[1][2]``) where it named ``prompt``."""
    def listed(name: str) -> str:
        return f"prompt[{i}]{name[len('prompt'):]}" if re.fullmatch(r"prompt(\[\d+\])*", name) \
            else name

    fields = error.error
    message = re.sub(r"'(prompt[^']*)'", lambda m: f"'{listed(m[1])}'", fields["message"])
    param = fields.get("param")
    return EngineRequestError(message, param=listed(param) if param else param,
                              type=fields["type"], code=fields.get("code"))


@contextmanager
def _cancelled_on_failure(*handles) -> Iterator[None]:
    """Cancel the requests when the block is left by an exception (an interrupt): nobody
    will read what they would go on generating."""
    try:
        yield
    except BaseException:
        for handle in handles:
            handle.cancel()
        raise


def _cancel_when_abandoned(chunks: Iterator[dict], *handles) -> Iterator[dict]:
    # A caller that stops reading a stream (break, exception, garbage) frees its slot.
    try:
        yield from chunks
    finally:
        for handle in handles:
            if not handle.done:
                handle.cancel()
