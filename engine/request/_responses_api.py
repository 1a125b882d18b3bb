"""OpenAI's Responses API (``POST /v1/responses``) on the chat request path.

A Responses body becomes a chat body (``chat_body``), which the engine admits, renders and
serves as any chat request; the reply's typed events become a ``response`` object
(``response_object``) or its stream of typed SSE events (``ResponseEvents``). Agent frameworks
call this endpoint by default (openai-agents' default model, pydantic-ai's ``openai:`` models).

Nothing is stored: each request carries its whole conversation in ``input`` (as those
frameworks send it), so ``previous_response_id``, ``conversation``, ``background`` and item
references are refused, and every response says ``"store": false``. Only function tools are
served; a JSON ``text.format`` is chat's ``response_format``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .._errors import EngineRequestError
from .._events import (
    ContentDelta, Error, Finished, ParseProblem, ReasoningDelta, TokenLogprobs, ToolCall, Usage,
)
from ._admission import GenerationRequest, _shown
from ._responses import _chat_logprobs, _sent_call

__all__ = ["chat_body", "in_responses_terms", "response_object", "ResponseEvents"]

_PASSED = ("model", "stream", "temperature", "top_p", "seed", "parallel_tool_calls", "user",
           "stop", "top_k", "min_p", "repetition_penalty", "presence_penalty",
           "frequency_penalty", "logit_bias", "chat_template_kwargs")
"""Fields that mean the same on both endpoints (the sampling extras as chat takes them)."""

_STATELESS = {
    "previous_response_id": "this server stores no responses; send the whole conversation in "
                            "'input'",
    "conversation": "this server stores no conversations; send the whole conversation in "
                    "'input'",
    "background": "responses are served while the client waits; leave 'background' out",
    "prompt": "this server has no stored prompt templates; send the text in 'input'",
}


def _fail(message: str, param: str | None) -> None:
    raise EngineRequestError(message, param=param)


def chat_body(body: Mapping[str, Any]) -> dict:
    """The chat completions body a Responses body stands for; ``EngineRequestError`` naming
    the Responses field for what cannot be served."""
    for key, why in _STATELESS.items():
        if body.get(key) not in (None, False):
            _fail(f"'{key}' is not supported: {why}.", key)
    out: dict[str, Any] = {key: body[key] for key in _PASSED if key in body}
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        _fail("'instructions' must be a string.", "instructions")
    out["messages"] = _with_instructions(instructions, *_messages(body.get("input")))[0]
    # (null is "not given": a client that fills every field sends top_logprobs: null)
    top_logprobs = body.get("top_logprobs")
    if top_logprobs is not None or _logprobs_included(body.get("include")):
        out["logprobs"] = True
        if top_logprobs is not None:
            out["top_logprobs"] = top_logprobs
    if "max_output_tokens" in body:
        out["max_tokens"] = body["max_output_tokens"]
    if "tools" in body:
        out["tools"] = _tools(body["tools"])
    if "tool_choice" in body:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    response_format = _response_format(body.get("text"))
    if response_format is not None:
        out["response_format"] = response_format
    _check_metadata(body.get("metadata"))
    if body.get("stream"):  # the usage goes into response.completed
        out["stream_options"] = {"include_usage": True}
    return out


_INCLUDABLE = ("message.output_text.logprobs", "reasoning.encrypted_content",
               "file_search_call.results", "web_search_call.results",
               "web_search_call.action.sources", "message.input_image.image_url",
               "computer_call_output.output.image_url", "code_interpreter_call.outputs")
"""The values OpenAI's ``include`` takes. Only the logprobs are served; the others name tools
or stored state this server has none of, so asking for them adds nothing (Codex sends
``reasoning.encrypted_content`` on every request), while a value outside the list is a typo."""


def _logprobs_included(include: Any) -> bool:
    """Whether ``include`` asks for the output's logprobs; refused unless it is a list of
    OpenAI's values."""
    if include is None:
        return False
    if not isinstance(include, list):
        _fail("'include' must be a list such as [\"message.output_text.logprobs\"].", "include")
    for i, item in enumerate(include):
        if item not in _INCLUDABLE:
            _fail(f"'include[{i}]' {_shown(item)} is not a value 'include' takes; this server "
                  "serves \"message.output_text.logprobs\".", f"include[{i}]")
    return "message.output_text.logprobs" in include


def _response_format(text: Any) -> dict | None:
    """Chat's ``response_format`` for a ``text`` field, None for free text. Checked here,
    as the response echoes ``text.format``: a shape the SDK's models cannot read would make
    every reply unreadable to a client that validates it (OpenAI and vLLM refuse it too)."""
    if text is None:
        return None
    if not isinstance(text, dict):
        _fail("'text' must be an object such as {\"format\": {\"type\": \"text\"}}.", "text")
    fmt = text.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict):
        _fail("'text.format' must be an object such as {\"type\": \"json_object\"}.",
              "text.format")
    kind = fmt.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        _fail(f"'text.format' {_shown(kind)} is not supported; send \"text\", \"json_object\" "
              "or \"json_schema\".", "text.format")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if not isinstance(fmt.get("name"), str) or not fmt["name"]:
        _fail("'text.format.name' is required for a json_schema format: give the schema a "
              "name.", "text.format.name")
    if not isinstance(fmt.get("schema"), dict):
        _fail("'text.format.schema' must be the JSON schema object the answer fits.",
              "text.format.schema")
    return {"type": "json_schema", "json_schema": {
        key: fmt[key] for key in ("name", "schema", "strict") if key in fmt}}


def _check_metadata(metadata: Any) -> None:
    """Metadata is ignored but echoed; OpenAI's shape (text values) keeps the echo readable."""
    if metadata is None:
        return
    if not isinstance(metadata, dict) or not all(
            isinstance(value, str) for value in metadata.values()):
        _fail("'metadata' must be an object whose values are strings.", "metadata")


def _with_instructions(instructions: str | None, messages: list[dict],
                       origins: list[tuple]) -> tuple[list[dict], list[tuple]]:
    """The instructions and the system (or developer) messages the input starts with, as the
    one system message a chat template takes (pydantic-ai sends both); with the messages'
    origins (``_messages``)."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer") and (
            isinstance(messages[lead].get("content"), str)):
        lead += 1
    texts = [instructions] if instructions is not None else []
    texts += [m["content"] for m in messages[:lead]]
    if instructions is None and lead <= 1:
        return messages, origins  # (one system message, or none: as sent)
    merged = ("instructions", None, []) if instructions is not None else origins[0]
    return ([{"role": "system", "content": "\n\n".join(texts)}, *messages[lead:]],
            [merged, *origins[lead:]])


def _messages(items: Any) -> tuple[list[dict], list[tuple]]:
    """The chat messages ``input`` stands for, and where each came from: (kind, the index of
    its item or None, the indices of the function_call items that are its tool calls)."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}], [("message", None, [])]
    if not isinstance(items, list) or not items:
        _fail("'input' must be a string or a non-empty list of items.", "input")
    messages: list[dict] = []
    origins: list[tuple] = []
    reasoning = ""  # a reasoning item goes with the assistant turn after it
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            _fail(f"'{where}' must be an object.", where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            message = {"role": role, "content": _text(item.get("content"), f"{where}.content")}
            if role == "assistant" and reasoning:
                message["reasoning_content"], reasoning = reasoning, ""
            messages.append(message)  # (a role admission does not know is refused there)
            origins.append(("message", i, []))
        elif kind == "reasoning":  # its text, else its summary (what a client kept of it)
            parts = next((v for v in (item.get("content"), item.get("summary"))
                          if isinstance(v, list) and v), [])
            text = "".join(p["text"] for p in parts if isinstance(p, dict)
                           and isinstance(p.get("text"), str))
            if messages and messages[-1]["role"] == "assistant" and text:
                # Within a turn (between its calls): chat holds one reasoning per turn.
                last = messages[-1]
                last["reasoning_content"] = "\n".join(
                    filter(None, (last.get("reasoning_content"), text)))
            else:
                reasoning += text
        elif kind == "function_call":  # a call of the assistant turn it follows, or a new turn
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            if not messages or messages[-1]["role"] != "assistant":
                messages.append({"role": "assistant", "content": None})
                origins.append(("calls", None, []))
                if reasoning:
                    messages[-1]["reasoning_content"], reasoning = reasoning, ""
            messages[-1].setdefault("tool_calls", []).append(call)
            origins[-1][2].append(i)
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _text(item.get("output"), f"{where}.output")})
            origins.append(("output", i, []))
        else:
            _fail(f"'{where}' is a {_shown(kind)} item, which this server does not take; "
                  "send messages, function calls and their outputs.", f"{where}.type")
    if not messages:
        _fail("'input' holds no message (reasoning items alone are none); send the "
              "conversation's messages.", "input")
    return messages, origins


def in_responses_terms(error: EngineRequestError, body: Mapping[str, Any]) -> EngineRequestError:
    """``error``, which names the fields of the chat body ``body`` became (``messages[3]``,
    ``max_tokens``), as naming the Responses fields they came from (``input[5]``,
    ``max_output_tokens``), in its ``param`` and its message."""
    try:
        origins = _with_instructions(body.get("instructions"), *_messages(body.get("input")))[1]
    except Exception:  # (chat_body took this body: it cannot fail here)
        return error

    def path(chat: str) -> str:
        return _responses_path(chat, origins)

    fields = error.error
    message = re.sub(r"'((?:messages|tools|max_tokens|response_format|logprobs|stream_options"
                     r"|tool_choice)\b[^']*)'", lambda m: f"'{path(m[1])}'", fields["message"])
    param = fields.get("param")
    return EngineRequestError(message, param=path(param) if param else param,
                              type=fields["type"], code=fields.get("code"))


_CALL_FIELDS = ((".function.arguments", ".arguments"), (".function.name", ".name"),
                (".function", ""), (".id", ".call_id"))
_RENAMED = (("tool_choice.allowed_tools.tools", "tool_choice.tools"),
            ("tool_choice.allowed_tools", "tool_choice"), ("max_tokens", "max_output_tokens"),
            ("response_format.json_schema", "text.format"),
            ("response_format", "text.format"), ("logprobs", "include"),
            ("stream_options", "stream"))


def _responses_path(chat: str, origins: list[tuple]) -> str:
    """The Responses field a chat body's field path came from (see ``in_responses_terms``)."""
    found = re.fullmatch(r"messages\[(\d+)\](.*)", chat)
    if found is None:
        if chat == "messages":
            return "input"
        tool = re.fullmatch(r"tools\[(\d+)\]\.function(.*)", chat)  # (Responses tools are flat)
        if tool is not None:
            return f"tools[{tool[1]}]{tool[2]}"
        for old, new in _RENAMED:
            if chat == old or chat.startswith((old + ".", old + "[")):
                return new + chat[len(old):]
        return chat
    index, rest = int(found[1]), found[2]
    if index >= len(origins):
        return "input"
    kind, at, calls = origins[index]
    call = re.match(r"\.tool_calls\[(\d+)\]", rest)
    if call is not None and int(call[1]) < len(calls):
        tail = rest[call.end():]
        for old, new in _CALL_FIELDS:
            if tail.startswith(old):
                tail = new + tail[len(old):]
                break
        return f"input[{calls[int(call[1])]}]{tail}"
    if kind == "instructions":
        return "instructions"
    if at is None:  # the whole input as one text, or a turn made of function_call items
        return f"input[{calls[0]}]" if calls else "input"
    if kind == "output":
        rest = {".content": ".output", ".tool_call_id": ".call_id"}.get(rest, rest)
    return f"input[{at}]{rest}"


_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


def _text(content: Any, where: str) -> Any:
    """A message's content as chat takes it: text, with a list of text parts joined."""
    if not isinstance(content, list):
        return content  # text, or what admission refuses in a sentence of its own
    texts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in _TEXT_PARTS or not isinstance(part.get("text"), str):
            _fail(f"'{where}[{j}]' is not a text part; this server reads only text "
                  f"({', '.join(_TEXT_PARTS[:2])}).", f"{where}[{j}]")
        texts.append(part["text"])
    return "".join(texts)


def _tools(tools: Any) -> Any:
    if not isinstance(tools, list):
        return tools  # admission says what 'tools' must be
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = _shown(tool.get("type")) if isinstance(tool, dict) else "no object"
            _fail(f"'tools[{i}]' is {kind}; only function tools are supported (the model "
                  "calls them, the client runs them).", f"tools[{i}]")
        if "name" not in tool and isinstance(tool.get("function"), dict):
            # Chat's nested shape, sent here by a client built for chat completions.
            _fail(f"'tools[{i}]' is in chat's shape ({{\"function\": {{...}}}}); a Responses "
                  "tool is flat: {\"type\": \"function\", \"name\": ..., \"parameters\": "
                  "...}.", f"tools[{i}]")
        function = {key: tool[key] for key in ("name", "description", "parameters", "strict")
                    if key in tool}
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any) -> Any:
    if not isinstance(choice, dict):
        return choice  # "auto", "none", "required", or what chat's admission refuses
    kind = choice.get("type")
    if kind == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    if kind == "allowed_tools" and choice.get("mode", "auto") in ("auto", "required"):
        if not isinstance(choice.get("tools"), list):  # (OpenAI's shape, which is echoed)
            _fail("'tool_choice.tools' must list the allowed tools, e.g. [{\"type\": "
                  "\"function\", \"name\": ...}].", "tool_choice.tools")
        if choice.get("mode") != "required":
            return "auto"  # (every tool stays offered: the prompt is the same)
        # Forced to one of the listed tools only (as "required" it could call any tool).
        return {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
            {"type": "function", "function": {"name": t.get("name")}} if isinstance(t, dict)
            else t for t in choice["tools"]]}}
    _fail(f"'tool_choice' {_shown(choice)[:60]} is not supported; send \"auto\", \"none\", "
          "{\"type\": \"allowed_tools\", \"mode\": \"auto\", ...} or {\"type\": "
          "\"function\", \"name\": ...}.", "tool_choice")


# -- the response -------------------------------------------------------------------------

def _usage(u: Usage | None) -> dict:
    prompt, cached, completion = (u.prompt_tokens, u.cached_tokens, u.completion_tokens) if u \
        else (0, 0, 0)
    return {"input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": (u and u.reasoning_tokens) or 0},
            "total_tokens": prompt + completion}


def _logprob(lp: TokenLogprobs) -> dict:
    """A token of an output_text's ``logprobs``, as chat's ``logprobs.content`` lists it."""
    return _chat_logprobs([lp])["content"][0]


_STATUS = {None: "in_progress", "length": "incomplete", "cancelled": "cancelled"}


def _text_format(body: Mapping[str, Any]) -> dict:
    """The ``text.format`` the response echoes: the one asked for (admitted already)."""
    text = body.get("text")
    asked = text.get("format") if isinstance(text, dict) else None
    return dict(asked) if isinstance(asked, dict) else {"type": "text"}


class ResponseEvents:
    """A ``response`` built one event at a time: ``start`` gives ``response.created`` and
    ``response.in_progress``; ``feed`` each event (it returns the typed SSE events it makes);
    ``end`` gives ``response.completed`` (``response.incomplete`` for a reply cut by
    ``max_output_tokens``). ``response_object`` takes the final response from it, so a
    streamed and a whole response are one.

    Items open and close as the reply moves from reasoning to text to calls. Whitespace-only
    text is held back, and dropped when the reply makes calls (as chat's content is null
    then). A message after the reasoning starts at its text: the blank lines a template puts
    after ``</think>`` (which chat's content keeps, as mlx_lm.server's does) are no part of
    an output_text. A reply cut inside its reasoning has no message, and the item it was
    writing is ``incomplete``. An ``Error`` event makes an ``error`` event and
    ``response.failed``."""

    def __init__(self, *, request: GenerationRequest, request_id: str, created: int,
                 body: Mapping[str, Any]):
        self.request, self.request_id, self.created, self.body = request, request_id, created, body
        self.base = request_id.split("-", 1)[-1]
        self.sequence = 0
        self.output: list[dict] = []
        """The items done so far, as the final response lists them."""
        self.open: dict | None = None
        """The reasoning or message item being written."""
        self.blank = ""
        self.calls = 0
        self.pending: list[TokenLogprobs] = []
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.error: dict | None = None

    def _event(self, kind: str, **fields: Any) -> dict:
        self.sequence += 1
        return {"type": kind, "sequence_number": self.sequence - 1, **fields}

    def snapshot(self) -> dict:
        """The response as it stands (the final one once ``Finished`` was fed)."""
        body, request = self.body, self.request
        status = "failed" if self.error else _STATUS.get(self.finish_reason, "completed")
        return {
            "id": f"resp_{self.base}", "object": "response", "created_at": self.created,
            "status": status, "error": self.error,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete"
            else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"), "model": request.model,
            "output": list(self.output),
            "parallel_tool_calls": request.parallel_tool_calls,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None}, "store": False,
            "temperature": request.sampling.temperature, "top_p": request.sampling.top_p,
            "text": {"format": _text_format(body)}, "tool_choice": body.get("tool_choice") or "auto",
            "tools": body.get("tools") if isinstance(body.get("tools"), list) else [],
            "truncation": "disabled", "metadata": body.get("metadata") or {},
            "usage": None if self.finish_reason is None else _usage(self.usage),
        }

    def start(self) -> list[dict]:
        snapshot = self.snapshot()
        return [self._event("response.created", response=snapshot),
                self._event("response.in_progress", response=snapshot)]

    # -- items -------------------------------------------------------------------------
    def _where(self) -> dict:
        return {"item_id": self.open["id"], "output_index": len(self.output)}

    def _item(self, status: str) -> dict:
        kind, item_id, text = self.open["kind"], self.open["id"], self.open["text"]
        if kind == "reasoning":
            return {"type": "reasoning", "id": item_id, "summary": [], "status": status,
                    "content": [{"type": "reasoning_text", "text": text}] if status != "in_progress"
                    else []}
        return {"type": "message", "id": item_id, "role": "assistant", "status": status,
                "content": [self._part()] if status != "in_progress" else []}

    def _part(self) -> dict:
        if self.open["kind"] == "reasoning":
            return {"type": "reasoning_text", "text": self.open["text"]}
        return {"type": "output_text", "text": self.open["text"], "annotations": [],
                "logprobs": list(self.open["logprobs"])}

    def _open(self, kind: str) -> list[dict]:
        if self.open is not None and self.open["kind"] == kind:
            return []
        out = self._close()
        prefix = "rs" if kind == "reasoning" else "msg"
        self.open = {"kind": kind, "id": f"{prefix}_{self.base}_{len(self.output)}", "text": "",
                     "logprobs": []}
        added = self._part()
        out.append(self._event("response.output_item.added", output_index=len(self.output),
                               item=self._item("in_progress")))
        out.append(self._event("response.content_part.added", **self._where(), content_index=0,
                               part=added))
        return out

    def _close(self, status: str = "completed") -> list[dict]:
        if self.open is None:
            return []
        where, part = self._where(), self._part()
        if self.open["kind"] == "reasoning":
            out = [self._event("response.reasoning_text.done", **where, content_index=0,
                               text=part["text"])]
        else:
            out = [self._event("response.output_text.done", **where, content_index=0,
                               text=part["text"], logprobs=part["logprobs"])]
        item = self._item(status)
        out += [self._event("response.content_part.done", **where, content_index=0, part=part),
                self._event("response.output_item.done", output_index=where["output_index"],
                            item=item)]
        self.output.append(item)
        self.open = None
        return out

    def _text(self, kind: str, text: str) -> list[dict]:
        out = self._open(kind)
        self.open["text"] += text
        if kind == "reasoning":
            self.pending.clear()  # (output_text lists the answer's tokens only)
            out.append(self._event("response.reasoning_text.delta", **self._where(),
                                   content_index=0, delta=text))
            return out
        logprobs = [_logprob(lp) for lp in self.pending if not lp.ends_reply]
        self.pending.clear()
        self.open["logprobs"] += logprobs
        out.append(self._event("response.output_text.delta", **self._where(), content_index=0,
                               delta=text, logprobs=logprobs))
        return out

    def _call(self, e: ToolCall | ParseProblem) -> list[dict]:
        """A function_call item: a parsed call, or a remote server's call whose arguments are
        not JSON, as it sent them and ``incomplete`` (no whole call; OpenAI marks an item it
        cut so)."""
        out = self._close()
        index = len(self.output)
        call, arguments = _sent_call(e)
        item = {"type": "function_call", "id": f"fc_{self.base}_{index}", "call_id": call.id,
                "name": call.name, "arguments": arguments,
                "status": "completed" if type(e) is ToolCall else "incomplete"}
        where = {"item_id": item["id"], "output_index": index}
        out += [self._event("response.output_item.added", output_index=index,
                            item={**item, "arguments": "", "status": "in_progress"}),
                self._event("response.function_call_arguments.delta", **where,
                            delta=item["arguments"]),
                self._event("response.function_call_arguments.done", **where, name=call.name,
                            arguments=item["arguments"]),
                self._event("response.output_item.done", output_index=index, item=item)]
        self.output.append(item)
        self.calls += 1
        return out

    # -- events ------------------------------------------------------------------------
    def feed(self, e) -> list[dict]:
        t = type(e)
        if t is ContentDelta or (t is ParseProblem and e.in_reply):
            text = self.blank + e.text
            if self.open is None or self.open["kind"] != "message":
                if not text.strip():
                    self.blank = text
                    return []
                if self.output or self.open is not None:  # after the reasoning
                    text = self._dropped(text, text.lstrip("\r\n"))
            self.blank = ""
            return self._text("message", text)
        if t is ReasoningDelta:
            return self._text("reasoning", e.text)
        if t is ToolCall or (t is ParseProblem and e.call is not None):
            return self._call(e)
        if t is TokenLogprobs:
            self.pending.append(e)
        elif t is Usage:
            self.usage = e
        elif t is Finished:
            return self._finish(e.reason)
        elif t is Error:
            self.error = {"code": e.type or "server_error", "message": e.message}
            failed = self._event("error", code=self.error["code"], message=e.message,
                                 param=None)
            return [failed, self._event("response.failed", response=self.snapshot())]
        return []

    def _dropped(self, text: str, kept: str) -> str:
        """``kept`` (``text`` less its leading blank lines), with the logprobs of the tokens
        before it dropped (those lines, the ``</think>`` marker), so an output_text's tokens
        spell its text."""
        gone = sum(len(lp.token) for lp in self.pending) - len(kept)
        while self.pending and len(self.pending[0].token) <= gone:
            gone -= len(self.pending.pop(0).token)
        return kept

    def _finish(self, reason: str) -> list[dict]:
        self.finish_reason = reason
        cut = reason == "length"
        out = []
        if not self.calls and (self.open is None or self.open["kind"] != "message"):
            # No text came: the message holds what was held back, or nothing (an empty
            # answer), unless the reply was cut before its answer.
            after = bool(self.output or self.open)
            text = self._dropped(self.blank, self.blank.lstrip("\r\n")) if after else self.blank
            if text:
                out = self._text("message", text)
            elif not cut:
                out = self._open("message")
        return out + self._close("incomplete" if cut else "completed")

    def end(self) -> list[dict]:
        if self.error is not None:
            return []  # (response.failed was the last)
        done = "response.incomplete" if self.finish_reason == "length" else "response.completed"
        return [self._event(done, response=self.snapshot())]


def response_object(events, *, request: GenerationRequest, request_id: str, created: int,
                    body: Mapping[str, Any]) -> dict:
    """A whole ``response``: the one ``ResponseEvents`` builds from the events; an ``Error``
    event raises ``EngineRequestError``."""
    built = ResponseEvents(request=request, request_id=request_id, created=created, body=body)
    for event in events:
        built.feed(event)
        if built.error is not None:
            raise EngineRequestError(built.error["message"], type=built.error["code"])
    return built.snapshot()
