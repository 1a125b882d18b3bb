"""OpenAI's Responses API (``POST /v1/responses``) on the chat request path.

A Responses body becomes a chat body (``chat_body``), which the engine admits, renders and
serves as any chat request; the reply's typed events become a ``response`` object
(``response_object``) or its stream of typed SSE events (``ResponseEvents``). Agent frameworks
call this endpoint by default (openai-agents' default model, pydantic-ai's ``openai:`` models).

Nothing is stored: each request carries its whole conversation in ``input`` (as those
frameworks send it), so ``previous_response_id``, ``conversation``, ``background`` and item
references are refused, and every response says ``"store": false``. Only function tools are
served, and text output only (a JSON ``text.format`` is refused, as ``response_format`` is on
chat).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from .._errors import EngineRequestError
from .._events import ContentDelta, Error, Finished, ParseProblem, ReasoningDelta, ToolCall, Usage
from ._admission import GenerationRequest, _shown
from ._responses import _raise, collect

__all__ = ["chat_body", "response_object", "ResponseEvents"]

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
    messages: list[dict] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            _fail("'instructions' must be a string.", "instructions")
        messages.append({"role": "system", "content": instructions})
    messages += _messages(body.get("input"))
    out["messages"] = messages
    if "max_output_tokens" in body:
        out["max_tokens"] = body["max_output_tokens"]
    if "tools" in body:
        out["tools"] = _tools(body["tools"])
    if "tool_choice" in body:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    text_format = body.get("text", {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(text_format, dict) and text_format.get("type") not in (None, "text"):
        _fail(f"'text.format' {_shown(text_format.get('type'))} is not supported; only "
              "{\"type\": \"text\"} is (ask for JSON in the instructions instead).", "text.format")
    if body.get("stream"):  # the usage goes into response.completed
        out["stream_options"] = {"include_usage": True}
    return out


def _messages(items: Any) -> list[dict]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        _fail("'input' must be a string or a non-empty list of items.", "input")
    messages: list[dict] = []
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
        elif kind == "reasoning":  # its text, else its summary (what a client kept of it)
            parts = item.get("content") or item.get("summary") or []
            reasoning += "".join(p["text"] for p in parts if isinstance(p, dict)
                                 and isinstance(p.get("text"), str))
        elif kind == "function_call":  # a call of the assistant turn it follows, or a new turn
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            if not messages or messages[-1]["role"] != "assistant":
                messages.append({"role": "assistant", "content": None})
                if reasoning:
                    messages[-1]["reasoning_content"], reasoning = reasoning, ""
            messages[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _text(item.get("output"), f"{where}.output")})
        else:
            _fail(f"'{where}' is a {_shown(kind)} item, which this server does not take; "
                  "send messages, function calls and their outputs.", f"{where}.type")
    if not messages:
        _fail("'input' holds no message (reasoning items alone are none); send the "
              "conversation's messages.", "input")
    return messages


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
        function = {key: tool[key] for key in ("name", "description", "parameters", "strict")
                    if key in tool}
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function" and "name" in choice:
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


# -- the response -------------------------------------------------------------------------

def _usage(u: Usage | None) -> dict:
    prompt, cached, completion = (u.prompt_tokens, u.cached_tokens, u.completion_tokens) if u \
        else (0, 0, 0)
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": (u and u.reasoning_tokens) or 0},
            "total_tokens": prompt + completion}


def _ids(request_id: str) -> str:
    return request_id.split("-", 1)[-1]


def _reasoning_item(item_id: str, text: str | None, done: bool) -> dict:
    return {"type": "reasoning", "id": item_id, "summary": [],
            "content": [] if text is None else [{"type": "reasoning_text", "text": text}],
            "status": "completed" if done else "in_progress"}


def _message_item(item_id: str, text: str | None, done: bool) -> dict:
    return {"type": "message", "id": item_id, "role": "assistant",
            "status": "completed" if done else "in_progress",
            "content": [] if text is None else [_text_part(text)]}


def _text_part(text: str) -> dict:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _call_item(item_id: str, call: ToolCall, done: bool) -> dict:
    return {"type": "function_call", "id": item_id, "call_id": call.id, "name": call.name,
            "arguments": json.dumps(call.arguments, ensure_ascii=False) if done else "",
            "status": "completed" if done else "in_progress"}


def _response(*, request: GenerationRequest, request_id: str, created: int,
              body: Mapping[str, Any], output: list[dict], usage: Usage | None,
              finish_reason: str | None) -> dict:
    status = {None: "in_progress", "length": "incomplete", "cancelled": "cancelled"}.get(
        finish_reason, "completed")
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    return {
        "id": f"resp_{_ids(request_id)}", "object": "response", "created_at": created,
        "status": status, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"), "max_output_tokens": request.max_tokens,
        "model": request.model, "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
        "store": False, "temperature": request.sampling.temperature,
        "top_p": request.sampling.top_p,
        "text": {"format": {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
        "tools": tools, "truncation": "disabled", "metadata": body.get("metadata") or {},
        "usage": None if finish_reason is None else _usage(usage),
    }


def response_object(events, *, request: GenerationRequest, request_id: str, created: int,
                    body: Mapping[str, Any]) -> dict:
    """A whole ``response``: its reasoning, message and function calls, as output items."""
    r = collect(events)
    base, output = _ids(request_id), []
    if r.reasoning:
        output.append(_reasoning_item(f"rs_{base}_{len(output)}", r.reasoning, True))
    if r.content.strip() or not r.tool_calls:  # (blank lines beside calls are no message)
        text = r.content.lstrip("\r\n") if r.reasoning else r.content
        output.append(_message_item(f"msg_{base}_{len(output)}", text, True))
    for call in r.tool_calls:
        output.append(_call_item(f"fc_{base}_{len(output)}", call, True))
    return _response(request=request, request_id=request_id, created=created, body=body,
                     output=output, usage=r.usage, finish_reason=r.finish_reason)


class ResponseEvents:
    """A streamed ``response``: ``feed`` each event (it returns the SSE events it makes, each
    a dict with its ``type``; raises on ``Error``), then ``end`` for ``response.completed``.
    ``start`` gives ``response.created`` and ``response.in_progress``. Items open and close as
    the reply moves from reasoning to text to calls; whitespace-only text is held back, and
    dropped when the reply makes calls, as ``response_object`` drops it. A message after the
    reasoning starts at its text: the blank lines a template puts after ``</think>`` (which
    chat's content keeps, as mlx_lm.server's does) are no part of an output_text."""

    def __init__(self, *, request: GenerationRequest, request_id: str, created: int,
                 body: Mapping[str, Any]):
        self.named = {"request": request, "request_id": request_id, "created": created,
                      "body": body}
        self.base = _ids(request_id)
        self.sequence = 0
        self.output: list[dict] = []
        """The items done so far, as the final response lists them."""
        self.open: dict | None = None
        """The item being written: its kind, id and text so far."""
        self.blank = ""
        self.calls = 0
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    def _event(self, kind: str, **fields: Any) -> dict:
        self.sequence += 1
        return {"type": kind, "sequence_number": self.sequence - 1, **fields}

    def _snapshot(self) -> dict:
        return _response(**self.named, output=list(self.output), usage=self.usage,
                         finish_reason=self.finish_reason)

    def start(self) -> list[dict]:
        snapshot = self._snapshot()
        return [self._event("response.created", response=snapshot),
                self._event("response.in_progress", response=snapshot)]

    def _where(self) -> dict:
        return {"item_id": self.open["id"], "output_index": len(self.output)}

    def _open(self, kind: str) -> list[dict]:
        if self.open is not None and self.open["kind"] == kind:
            return []
        out = self._close()
        item_id = f"{'rs' if kind == 'reasoning' else 'msg'}_{self.base}_{len(self.output)}"
        self.open = {"kind": kind, "id": item_id, "text": ""}
        make = _reasoning_item if kind == "reasoning" else _message_item
        part = {"type": "reasoning_text", "text": ""} if kind == "reasoning" else _text_part("")
        out.append(self._event("response.output_item.added", output_index=len(self.output),
                               item=make(item_id, None, False)))
        out.append(self._event("response.content_part.added", **self._where(), content_index=0,
                               part=part))
        return out

    def _close(self) -> list[dict]:
        if self.open is None:
            return []
        kind, text, where = self.open["kind"], self.open["text"], self._where()
        if kind == "reasoning":
            item = _reasoning_item(where["item_id"], text, True)
            out = [self._event("response.reasoning_text.done", **where, content_index=0,
                               text=text),
                   self._event("response.content_part.done", **where, content_index=0,
                               part={"type": "reasoning_text", "text": text})]
        else:
            item = _message_item(where["item_id"], text, True)
            out = [self._event("response.output_text.done", **where, content_index=0, text=text,
                               logprobs=[]),
                   self._event("response.content_part.done", **where, content_index=0,
                               part=_text_part(text))]
        out.append(self._event("response.output_item.done", output_index=where["output_index"],
                               item=item))
        self.output.append(item)
        self.open = None
        return out

    def _text(self, kind: str, text: str) -> list[dict]:
        out = self._open(kind)
        self.open["text"] += text
        delta = "response.reasoning_text.delta" if kind == "reasoning" else \
            "response.output_text.delta"
        extra = {} if kind == "reasoning" else {"logprobs": []}
        out.append(self._event(delta, **self._where(), content_index=0, delta=text, **extra))
        return out

    def _call(self, call: ToolCall) -> list[dict]:
        out = self._close()
        index = len(self.output)
        item_id = f"fc_{self.base}_{index}"
        item = _call_item(item_id, call, True)
        where = {"item_id": item_id, "output_index": index}
        out += [self._event("response.output_item.added", output_index=index,
                            item=_call_item(item_id, call, False)),
                self._event("response.function_call_arguments.delta", **where,
                            delta=item["arguments"]),
                self._event("response.function_call_arguments.done", **where,
                            name=call.name, arguments=item["arguments"]),
                self._event("response.output_item.done", output_index=index, item=item)]
        self.output.append(item)
        self.calls += 1
        return out

    def feed(self, e) -> list[dict]:
        t = type(e)
        if t is ContentDelta or t is ParseProblem:
            text = self.blank + e.text
            if self.open is None or self.open["kind"] != "message":
                if not text.strip():
                    self.blank = text
                    return []
                if self.output or self.open is not None:  # after the reasoning
                    text = text.lstrip("\r\n")
            self.blank = ""
            return self._text("message", text)
        if t is ReasoningDelta:
            return self._text("reasoning", e.text)
        if t is ToolCall:
            return self._call(e)
        if t is Usage:
            self.usage = e
        elif t is Finished:
            self.finish_reason = e.reason
            out = []
            if not self.calls and (self.open is None or self.open["kind"] != "message"):
                # No text came: the message holds what was held back, or nothing, as whole.
                after = bool(self.output or self.open)
                text = self.blank.lstrip("\r\n") if after else self.blank
                out = self._open("message") + (self._text("message", text) if text else [])
            return out + self._close()
        elif t is Error:
            _raise(e)
        return []

    def end(self) -> list[dict]:
        done = "response.incomplete" if self.finish_reason == "length" else "response.completed"
        return [self._event(done, response=self._snapshot())]
