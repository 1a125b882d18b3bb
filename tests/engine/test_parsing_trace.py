"""The parser debugger: one row per chunk, HTML and DataFrame views, diff against the oracle."""

import dataclasses

import pytest
from mlx_lm.tokenizer_utils import load as load_tokenizer
from mlx_notebook.engine.parsing import Event, Trace, parse_output, trace
from parsing_cases import core, families
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

REPLY = '<think>Is 2<3?</think>Yes 😀 <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'
SPECIALS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"]


@pytest.fixture(scope="module")
def bpe_tokenizer(tmp_path_factory):
    """A small byte-level BPE tokenizer (as Qwen3 and the tiny reasoner use) through mlx-lm."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([REPLY.replace("<", " ") * 3, "Is it true? Yes, it is."], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>")
    path = tmp_path_factory.mktemp("bpe")
    fast.save_pretrained(path)
    return load_tokenizer(path)


def test_one_row_per_chunk_plus_finish():
    t = trace(REPLY, "qwen3", chunking=5)
    assert len(t.rows) == -(-len(REPLY) // 5) + 1
    assert "".join(r.chunk for r in t.rows[:-1]) == REPLY
    assert t.rows[-1].final and t.rows[-1].withheld == ""
    assert (t.rows[0].state_before, t.rows[1].state_after) == ("undecided", "reasoning")


def test_rows_show_the_withheld_marker_prefix():
    t = Trace.from_deltas(["<think>ok</th", "ink>done"], "qwen3")
    assert t.rows[0].withheld == "</th"
    assert t.rows[0].events == (Event("reasoning", "ok"),)
    assert (t.rows[1].state_before, t.rows[1].state_after) == ("reasoning", "content")
    assert t.rows[1].events == (Event("content", "done"),)


@pytest.mark.parametrize("case", core.CASES + families.CASES, ids=lambda c: c[0])
def test_diff_is_empty_for_every_case_and_chunking(case):
    _, family, text, options, _ = case
    for chunking in ("random", 1, 7):
        assert trace(text, family, chunking=chunking, **options).diff() == []


def test_diff_reports_where_streaming_and_buffered_disagree():
    t = trace("<think>a</think>b", "qwen3", chunking=2)
    broken = dataclasses.replace(t, events=(Event("content", "ab"),))
    [first, second] = broken.diff()
    assert (first.index, first.streamed, first.buffered) == (
        0, Event("content", "ab"), Event("reasoning", "a"))
    assert (second.streamed, second.buffered) == (None, Event("content", "b"))
    assert "differs" in broken._repr_html_()


def test_html_escapes_everything():
    t = trace("<script>alert(1)</script> & <think>", "plain", chunking=40)
    page = t._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;" in page and "&amp;" in page
    assert "streaming equals the buffered parse" in page


def test_dataframe_has_a_row_per_chunk():
    pytest.importorskip("pandas")
    df = trace(REPLY, "qwen3", chunking=10).to_dataframe()
    assert list(df.columns) == ["chunk", "state_before", "state_after", "events", "withheld"]
    assert len(df) == -(-len(REPLY) // 10) + 1
    assert any("tool_call f" in e for events in df["events"] for e in events)


def test_token_chunking_uses_the_streaming_detokenizer(bpe_tokenizer):
    ids = bpe_tokenizer.encode(REPLY, add_special_tokens=False)
    t = trace(ids, "qwen3", tokenizer=bpe_tokenizer)
    chunks = [r.chunk for r in t.rows[:-1]]
    assert "".join(chunks) == REPLY
    assert "<think>" in chunks and "</tool_call>" in chunks  # special tokens arrive whole
    assert t.diff() == []
    assert t.buffered.tool_calls == [{"name": "f", "arguments": {"x": 1}}]
    assert trace(REPLY, "qwen3", tokenizer=bpe_tokenizer).events == t.events


def test_token_chunking_without_a_tokenizer_names_the_fix():
    with pytest.raises(ValueError, match="needs tokenizer"):
        trace(REPLY, "qwen3", chunking="tokens")


def test_default_chunking_without_a_tokenizer_is_per_character():
    t = trace(REPLY, "qwen3")
    assert [r.chunk for r in t.rows[:-1]] == list(REPLY)


def test_list_of_sizes_is_cycled():
    t = trace("abcdefghij", "plain", chunking=[1, 3])
    assert [r.chunk for r in t.rows[:-1]] == ["a", "bcd", "e", "fgh", "i", "j"]
    with pytest.raises(ValueError, match="positive int"):
        trace("abc", "plain", chunking=[0])


def test_buffered_result_is_parse_output():
    t = trace(REPLY, "qwen3", chunking="random", seed=3)
    assert t.buffered == parse_output(REPLY, "qwen3")


def test_trace_shows_a_later_think_block_as_text_of_its_mode():
    t = trace("<think>a</think>b<think>c</think>d", "qwen3", chunking=1)
    states = [r.state_after for r in t.rows]
    assert "content, <think> as text" in states
    assert states[-1] == "content"  # its closing marker ended the text block
    assert t.buffered.content == "b<think>c</think>d" and t.diff() == []
