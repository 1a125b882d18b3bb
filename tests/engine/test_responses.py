"""The OpenAI response builders and the stop-string guard, as tables: no model, milliseconds.

The builders turn one request's typed events into what ``/v1/chat/completions`` and
``/v1/completions`` return; the guard holds back text that could still become a stop string.
"""

from __future__ import annotations

import pytest

from mlx_notebook.engine import (
    ContentDelta, EngineConfig, EngineRequestError, Error, Finished, ParseProblem,
    ReasoningDelta, TokenLogprobs, ToolCall, Usage,
)
from mlx_notebook.engine.request._admission import admit
from mlx_notebook.engine.request._reply_stream import _StopGuard
from mlx_notebook.engine.request._responses import chat_chunks, chat_completion, completion_chunks, text_completion

USAGE = Usage(prompt_tokens=7, cached_tokens=3, completion_tokens=4, time_to_first_token=0.1,
              prefill_tokens_per_second=70.0, decode_tokens_per_second=40.0, peak_memory=1000)
CONFIG = EngineConfig()


def chat(**body):
    return admit({"messages": [{"role": "user", "content": "hi"}], **body}, kind="chat", config=CONFIG)


def completion(**body):
    return admit({"prompt": "Once", **body}, kind="completion", config=CONFIG)


def built(builder, events, request):
    return builder(iter(events), request=request, request_id="id-1", created=5)


@pytest.mark.parametrize("events, message, finish", [
    ([ContentDelta("Par"), ContentDelta("is."), USAGE, Finished("stop")],
     {"role": "assistant", "content": "Paris."}, "stop"),
    ([ReasoningDelta("Think."), ContentDelta("Yes"), USAGE, Finished("length")],
     {"role": "assistant", "content": "Yes", "reasoning": "Think."}, "length"),
    ([ToolCall(index=0, id="c1", name="f", arguments={"x": 1}, text=""), USAGE, Finished("tool_calls")],
     {"role": "assistant", "content": None, "tool_calls": [
         {"function": {"name": "f", "arguments": '{"x": 1}'}, "type": "function", "id": "c1"}]},
     "tool_calls"),
    ([USAGE, Finished("cancelled")], {"role": "assistant", "content": ""}, "cancelled"),
    ([ReasoningDelta("Hm."), USAGE, Finished("length")],
     {"role": "assistant", "content": "", "reasoning": "Hm."}, "length"),
])
def test_chat_completion_gathers_the_message(events, message, finish):
    out = built(chat_completion, events, chat())
    assert out["object"] == "chat.completion" and out["id"] == "id-1" and out["created"] == 5
    (choice,) = out["choices"]
    assert choice["message"] == message and choice["finish_reason"] == finish
    assert out["usage"] == {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11,
                            "prompt_tokens_details": {"cached_tokens": 3}}


def test_chat_chunks_stream_each_delta_then_the_finish_and_usage():
    events = [ReasoningDelta("Hm."), ContentDelta("A"), ToolCall(index=0, id="c", name="f", arguments={}, text=""),
              USAGE, Finished("tool_calls")]
    chunks = list(built(chat_chunks, events, chat(stream=True, stream_options={"include_usage": True})))
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
    assert deltas[0] == {"role": "assistant", "reasoning": "Hm."}
    assert deltas[1] == {"role": "assistant", "content": "A"}
    assert deltas[2]["tool_calls"][0]["index"] == 0
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None, None, None, "tool_calls"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 11


CALL = ToolCall(index=0, id="c1", name="f", arguments={}, text="")


@pytest.mark.parametrize("events, content", [
    ([ReasoningDelta("Hm."), ContentDelta("\n"), ContentDelta("\n"), CALL, ContentDelta("\n")],
     None),                                                 # blank lines beside calls: no text
    ([ContentDelta("\n\n"), CALL, ContentDelta("Done.")], "\n\nDone."),  # text: all of it
    ([ContentDelta("\n\n")], "\n\n"),                       # without calls a blank answer stays
    ([ContentDelta("Let me check.\n\n"), CALL], "Let me check.\n\n"),
])
def test_blank_content_beside_tool_calls_is_none_streamed_or_not(events, content):
    events = events + [USAGE, Finished("tool_calls" if CALL in events else "stop")]
    message = built(chat_completion, events, chat())["choices"][0]["message"]
    assert message["content"] == content
    chunks = list(built(chat_chunks, events, chat(stream=True)))
    deltas = [c["choices"][0]["delta"] for c in chunks]
    streamed = [d["content"] for d in deltas if "content" in d]
    assert "".join(streamed) == (content or "") and all(streamed)
    assert sum("tool_calls" in d for d in deltas) == (CALL in events)


def test_markup_that_did_not_parse_reaches_the_client_as_content():
    cut = '<tool_call>{"name": "get_weather", "arg'
    events = [ContentDelta("Let me check. "), ParseProblem(cut, "tool call cut off"), USAGE,
              Finished("length")]
    message = built(chat_completion, events, chat())["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Let me check. " + cut}
    chunks = list(built(chat_chunks, events, chat(stream=True)))
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "Let me check. " + cut
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_logprobs_ride_with_the_chunk_of_their_token():
    lp = TokenLogprobs(token_id=1, token="A", logprob=-0.5, top=(("A", -0.5), ("B", -1.0)))
    chunks = list(built(chat_chunks, [lp, ContentDelta("A"), USAGE, Finished("stop")],
                        chat(stream=True, logprobs=True, top_logprobs=2)))
    content = chunks[0]["choices"][0]["logprobs"]["content"]
    assert content == [{"token": "A", "logprob": -0.5, "bytes": [65], "top_logprobs": [
        {"token": "A", "logprob": -0.5, "bytes": [65]}, {"token": "B", "logprob": -1.0, "bytes": [66]}]}]


def test_completions_return_raw_text_with_legacy_logprobs():
    lps = [TokenLogprobs(token_id=1, token="Once", logprob=-0.1, top=()),
           TokenLogprobs(token_id=2, token=" more", logprob=-0.2, top=())]
    events = [lps[0], ContentDelta("Once"), lps[1], ContentDelta(" more"), USAGE, Finished("length")]
    out = built(text_completion, events, completion(logprobs=0))
    assert out["choices"][0]["text"] == "Once more" and out["choices"][0]["finish_reason"] == "length"
    assert out["choices"][0]["logprobs"]["text_offset"] == [0, 4]
    chunks = list(built(completion_chunks, events, completion(stream=True, logprobs=0)))
    assert [c["choices"][0]["text"] for c in chunks] == ["Once", " more", ""]
    assert [c["choices"][0]["logprobs"]["text_offset"] for c in chunks[:2]] == [[0], [4]]


def test_text_offsets_count_a_held_back_tail_as_sent_later_not_dropped():
    # A stop string ("\n\n") held the first token's "\n" back: nothing was dropped.
    lps = [TokenLogprobs(token_id=1, token=" \n", logprob=-0.1, top=()),
           TokenLogprobs(token_id=2, token="Hi", logprob=-0.2, top=())]
    events = [lps[0], ContentDelta(" "), lps[1], ContentDelta("\nHi"), USAGE, Finished("length")]
    whole = built(text_completion, events, completion(logprobs=0))["choices"][0]
    assert whole["text"] == " \nHi" and whole["logprobs"]["text_offset"] == [0, 2]
    chunks = list(built(completion_chunks, events, completion(stream=True, logprobs=0)))
    assert [o for c in chunks[:2] for o in c["choices"][0]["logprobs"]["text_offset"]] == [0, 2]


@pytest.mark.parametrize("builder", [chat_completion, chat_chunks])
def test_an_error_event_raises_an_openai_error(builder):
    with pytest.raises(EngineRequestError, match="boom") as caught:
        out = built(builder, [ContentDelta("x"), Error("boom", "invalid_request_error")], chat())
        list(out) if not isinstance(out, dict) else out
    assert caught.value.error["type"] == "invalid_request_error"


@pytest.mark.parametrize("stops, pieces, shown, stopped", [
    (("STOP",), ["ab", "cS", "TO", "P!"], ["ab", "c", "", ""], [False, False, False, True]),
    (("STOP",), ["abST", "x"], ["ab", "STx"], [False, False]),       # a false start is released
    (("\n\n", "END"), ["a\n", "\nb"], ["a", ""], [False, True]),       # the first stop to complete
    (("END",), ["xEN", "Dy"], ["x", ""], [False, True]),               # text after a stop is dropped
    (("aa",), ["a", "a"], ["", ""], [False, True]),
    (("a", " cat"), ["x", " cat"], ["x", " c"], [False, True]),      # vLLM: the first to end wins
    (("abc", "b"), ["abc"], ["a"], [True]),
])
def test_the_stop_guard_holds_back_only_what_could_still_become_a_stop(stops, pieces, shown, stopped):
    guard = _StopGuard(stops)
    results = [guard.push(piece) for piece in pieces]
    assert [text for text, _ in results] == shown
    assert [hit for _, hit in results] == stopped


@pytest.mark.parametrize("stops, pieces, shown, stopped", [
    (("k",), [("<think>", 7), ("ok", 0)], ["<think>", "o"], [False, True]),  # not inside a marker
    (("ink>", "k>\nx"), [("a<think>", 7), ("\nx", 0)], ["a<think>", "\nx"], [False, False]),
    (("<think>",), [("a <thi", 0), ("<think>", 7)], ["a ", "<thi"], [False, True]),  # whole, it stops
    (("a<think>b",), [("a", 0), ("<think>", 7), ("b", 0)], ["", "", ""], [False, False, True]),
    (("nk>b",), [("x", 0), ("<think>", 7), ("b", 0)], ["x", "<think>", "b"], [False, False, False]),
])
def test_a_stop_string_takes_a_marker_token_whole_or_not_at_all(stops, pieces, shown, stopped):
    guard = _StopGuard(stops)
    results = [guard.push(piece, marker) for piece, marker in pieces]
    assert [text for text, _ in results] == shown
    assert [hit for _, hit in results] == stopped


def test_the_stop_guard_gives_back_what_it_held_at_the_end():
    guard = _StopGuard(("STOP",))
    assert guard.push("abST") == ("ab", False)
    assert guard.flush() == "ST" and guard.flush() == ""
