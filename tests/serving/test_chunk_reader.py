"""``ChunkReader``: what servers send, as the events a local request yields (no model)."""

from __future__ import annotations

import pytest

from mlx_notebook.engine import ContentDelta, Finished, ReasoningDelta, ToolCall
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
