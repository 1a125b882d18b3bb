"""Chat text encoded a piece at a time, remembered between turns, gives the tokenizer's ids."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import AddedToken, Tokenizer
from transformers import PreTrainedTokenizerFast

from mlx_notebook.engine.request._text_encoder import TextEncoder

pytestmark = pytest.mark.model

# Text a user or a model might send: any characters, and the template's own markers in it.
_markers = st.sampled_from(["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>",
                            "\n", " ", "  ", "\t", "12", "é", "🙂", "assistant"])
_content = st.lists(st.one_of(st.text(max_size=12), _markers), max_size=8).map("".join)
_messages = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), _content), min_size=1,
                     max_size=5)


@pytest.fixture(scope="module", params=["smollm2", "tiny"])
def tokenizer(request, smollm2_engine, tiny_engine):
    return (smollm2_engine if request.param == "smollm2" else tiny_engine).tokenizer


def test_both_models_tokenizers_are_encoded_by_pieces(tokenizer):
    assert TextEncoder(tokenizer).by_pieces


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(system=_content, turns=_messages)
def test_a_conversation_and_its_next_turn_encode_as_the_tokenizer_does(tokenizer, system, turns):
    encoder = TextEncoder(tokenizer)
    messages = [{"role": "system", "content": system}] + [
        {"role": role, "content": text} for role, text in turns]
    for shown in (messages[:-1], messages):  # the next turn reuses remembered pieces
        text = tokenizer.apply_chat_template(shown, add_generation_prompt=True, tokenize=False)
        assert encoder.encode(text, add_special_tokens=False) == tokenizer.encode(
            text, add_special_tokens=False)
        assert encoder.encode(text) == tokenizer.encode(text)


def test_a_tokenizer_whose_added_token_takes_spaces_is_encoded_whole(smollm2_engine):
    backend = smollm2_engine.tokenizer._tokenizer.backend_tokenizer
    hf = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(backend.to_str()))  # a copy
    hf.add_special_tokens({"additional_special_tokens": [AddedToken("<sep>", lstrip=True)]})
    encoder = TextEncoder(hf)
    assert not encoder.by_pieces
    text = "one   <sep> two"
    assert encoder.encode(text, add_special_tokens=False) == hf.encode(text, add_special_tokens=False)
