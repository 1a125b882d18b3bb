"""Over HTTP, a request's text deltas that reach the IO loop in one wake-up go out as one SSE
chunk (``merge_deltas``): a client reads exactly the same reply, reasoning, tool calls,
logprobs and finish reason as from one chunk per token, in no more chunks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mlx_notebook.engine import ContentDelta, Finished, ReasoningDelta, ToolCall, Usage
from mlx_notebook.engine._events import TokenLogprobs
from mlx_notebook.engine import EngineConfig
from mlx_notebook.engine.parity import _summary
from mlx_notebook.engine.request._admission import admit
from mlx_notebook.engine.request._responses import ChatChunks, CompletionChunks
from mlx_notebook.engine.serving._deliveries import merge_deltas

_text = st.text(st.sampled_from("ab é\n{}<>\U0001f600"), min_size=0, max_size=3)
_event = st.one_of(
    _text.map(ContentDelta),
    _text.map(ReasoningDelta),
    st.builds(TokenLogprobs, st.integers(0, 50), _text, st.floats(-20, 0),
              st.lists(st.tuples(_text, st.floats(-20, 0)), max_size=2).map(tuple)),
    st.builds(ToolCall, index=st.integers(0, 3), id=st.just("call_1"), name=st.just("add"),
              arguments=st.just({"a": 1}), text=st.just("")),
)
_stream = st.tuples(st.lists(_event, max_size=30),
                    st.sampled_from(["stop", "length", "tool_calls"]))


def _chunks(builder, events, reason):
    tail = [Usage(prompt_tokens=3, cached_tokens=0, completion_tokens=9,
                  time_to_first_token=0.0, prefill_tokens_per_second=0.0,
                  decode_tokens_per_second=0.0, peak_memory=0), Finished(reason)]
    out = [c for e in [*events, *tail] for c in builder.feed(e)]
    return out + builder.end()


@settings(max_examples=300, deadline=None)
@given(_stream, st.booleans(), st.sampled_from(["chat", "completion"]))
def test_joined_deltas_read_as_the_same_reply_in_no_more_chunks(stream, logprobs, kind):
    events, reason = stream
    if kind == "completion":
        events = [e for e in events if not isinstance(e, ToolCall)]
    body = ({"messages": [{"role": "user", "content": "hi"}]} if kind == "chat"
            else {"prompt": "hi"})
    body.update(stream=True, logprobs=logprobs, stream_options={"include_usage": True})
    if logprobs and kind == "chat":
        body["top_logprobs"] = 2
    request = admit(body, kind=kind, config=EngineConfig())
    build = ChatChunks if kind == "chat" else CompletionChunks
    one_each = _chunks(build(request=request, request_id="r", created=0), events, reason)
    joined = _chunks(build(request=request, request_id="r", created=0), merge_deltas(events),
                     reason)
    assert _summary(kind, joined) == _summary(kind, one_each)
    assert len(joined) <= len(one_each)


def test_a_run_of_deltas_becomes_one_and_a_change_of_kind_starts_another():
    lp = TokenLogprobs(7, "b", -0.5)
    events = [ContentDelta("a"), lp, ContentDelta("b"), ReasoningDelta("r"), ReasoningDelta("s"),
              ContentDelta("c"), Finished("stop")]
    assert merge_deltas(events) == [lp, ContentDelta("ab"), ReasoningDelta("rs"),
                                    ContentDelta("c"), Finished("stop")]
