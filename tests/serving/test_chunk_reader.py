"""``ChunkReader``: what servers send, as the events a local request yields (no model)."""

from __future__ import annotations

import pytest

from mlx_notebook.engine import ContentDelta, Finished, ReasoningDelta, TokenLogprobs, ToolCall
from mlx_notebook.engine.remote import ChunkReader


def _chunk(delta: dict | None = None, finish=None, usage=None, text=None) -> dict:
    choice = {"index": 0, "finish_reason": finish}
    if text is not None:
        choice["text"] = text
    else:
        choice["delta"] = delta or {}
    return {"id": "x", "choices": [choice], **({"usage": usage} if usage else {})}


def _read(reader: ChunkReader, chunks: list[dict]) -> list:
    events = [e for c in chunks for e in reader.read(c)]
    return events + reader.finish()


def _texts(events, kind) -> str:
    return "".join(e.text for e in events if type(e) is kind)


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_a_servers_reasoning_field_becomes_reasoning(field):
    reader = ChunkReader("qwen3")
    events = _read(reader, [_chunk({field: "Think."}), _chunk({"content": "Answer."}, "stop")])
    assert (_texts(events, ReasoningDelta), _texts(events, ContentDelta)) == ("Think.", "Answer.")
    assert reader.server_splits_reasoning


@pytest.mark.parametrize("cuts", [[30], [1] * 30, [7, 3, 11, 2, 40]])
def test_raw_text_with_markers_is_split_here_for_any_chunking(cuts):
    raw = '<think>\nSo 42.\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
    pieces, at = [], 0
    for n in cuts * 20:
        if at >= len(raw):
            break
        pieces.append(raw[at:at + n])
        at += n
    events = _read(ChunkReader("qwen3"), [_chunk({"content": p}) for p in pieces] + [_chunk(finish="stop")])
    assert _texts(events, ReasoningDelta) == "\nSo 42.\n"
    assert [(c.name, c.arguments) for c in events if type(c) is ToolCall] == [("f", {"x": 1})]
    assert events[-1] == Finished("tool_calls")


def test_streamed_tool_call_fragments_become_one_call_each():
    chunks = [
        _chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_weather", "arguments": ""}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "get_weather",
                                                                    "arguments": '{"city": "Oslo"}'}}]}),
        _chunk(finish="tool_calls"),
    ]
    events = _read(ChunkReader("qwen3"), chunks)
    calls = [e for e in events if type(e) is ToolCall]
    assert [(c.index, c.id, c.arguments) for c in calls] == [
        (0, "c1", {"city": "Paris"}), (1, "c2", {"city": "Oslo"})]
    assert events[-1] == Finished("tool_calls")


def test_cached_tokens_come_from_usage_or_are_not_reported():
    reader = ChunkReader("plain")
    reader.read(_chunk(usage={"prompt_tokens": 20, "completion_tokens": 5,
                              "prompt_tokens_details": {"cached_tokens": 16}}))
    assert reader.usage.cached_tokens == 16
    silent = ChunkReader("plain")
    silent.read(_chunk(usage={"prompt_tokens": 20, "completion_tokens": 5}))
    assert silent.usage.cached_tokens is None


def test_completion_text_and_a_cancelled_reply():
    reader = ChunkReader("plain", kind="completion")
    events = [e for c in [_chunk(text="Paris"), _chunk(text=".")] for e in reader.read(c)]
    assert _texts(events, ContentDelta) == "Paris."
    assert reader.finish(cancelled=True)[-1] == Finished("cancelled")


def test_a_reasoning_field_sent_under_both_names_is_read_once():
    events = _read(ChunkReader("qwen3"), [_chunk({"reasoning": "Hm.", "reasoning_content": "Hm."}),
                                          _chunk({"content": "Yes."}, "stop")])
    assert (_texts(events, ReasoningDelta), _texts(events, ContentDelta)) == ("Hm.", "Yes.")


def test_a_family_whose_prompt_opens_reasoning_keeps_content_once_the_server_splits_it():
    # deepseek_r1's template ends the prompt inside <think>: raw text is reasoning until
    # </think>. A server that sends a reasoning field has already taken </think> out.
    reader = ChunkReader("deepseek_r1")
    events = _read(reader, [_chunk({"reasoning_content": "Add them."}),
                            _chunk({"content": "\n\n42."}, "stop")])
    assert (_texts(events, ReasoningDelta), _texts(events, ContentDelta)) == ("Add them.", "\n\n42.")
    # Raw text from a server that splits nothing is still split here.
    events = _read(ChunkReader("deepseek_r1"), [_chunk({"content": "Add them.</think>\n\n42."}, "stop")])
    assert (_texts(events, ReasoningDelta), _texts(events, ContentDelta)) == ("Add them.", "\n\n42.")
    # Thinking turned off, or a server known to split: content from the first token.
    events = _read(ChunkReader("deepseek_r1", starts_in_reasoning=False), [_chunk({"content": "42."}, "stop")])
    assert _texts(events, ContentDelta) == "42."


def test_tool_call_fragments_of_unusual_shapes_make_one_call():
    chunks = [
        _chunk({"tool_calls": [{"index": None, "id": "c1", "function": {"name": "get_weather"}}]}),
        _chunk({"tool_calls": [{"function": {"arguments": '{"city": '}}]}),
        _chunk({"tool_calls": [{"function": {"arguments": '"Paris"}'}}]}),
        _chunk({"tool_calls": [{"id": "c2", "function": {"name": "get_time", "arguments": {"tz": "CET"}}}]}),
        _chunk(finish="tool_calls"),
    ]
    calls = [e for e in _read(ChunkReader("qwen3"), chunks) if type(e) is ToolCall]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "get_weather", {"city": "Paris"}), ("c2", "get_time", {"tz": "CET"})]


def test_logprobs_in_mlx_lm_servers_shape_and_malformed_ones_never_fail_the_reply():
    """mlx_lm.server sends ``{"id", "logprob"}`` (``token`` only beside ``top_logprobs``):
    reading ``token`` raised KeyError and failed the whole reply. Entries without a number
    (null, text) are left out."""
    logprobs = {"content": [
        {"id": 5, "logprob": -0.25},
        {"id": 6, "token": " there", "logprob": -1, "top_logprobs": [
            {"id": 6, "token": " there", "logprob": -1}, {"token": "!", "logprob": None}]},
        {"token": "x", "logprob": None}, "junk"]}
    chunk = {"id": "x", "choices": [{"index": 0, "finish_reason": None,
                                     "delta": {"content": "Hi there"}, "logprobs": logprobs}]}
    events = _read(ChunkReader("plain"), [chunk, _chunk(finish="stop")])
    assert [e for e in events if type(e) is TokenLogprobs] == [
        TokenLogprobs(5, "", -0.25), TokenLogprobs(6, " there", -1.0, ((" there", -1.0),))]
    assert _texts(events, ContentDelta) == "Hi there"
    legacy = {"tokens": ["a", "b"], "token_logprobs": [None, -0.5], "top_logprobs": [None, {"b": -0.5}]}
    events = _read(ChunkReader("plain", kind="completion"),
                   [{"id": "x", "choices": [{"index": 0, "finish_reason": "stop", "text": "ab",
                                             "logprobs": legacy}]}])
    assert [e for e in events if type(e) is TokenLogprobs] == [TokenLogprobs(-1, "b", -0.5, (("b", -0.5),))]

