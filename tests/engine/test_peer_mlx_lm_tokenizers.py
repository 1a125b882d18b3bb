"""mlx-lm's streaming-detokenizer checks, ported: a streamed reply spells its final text.

ml-explore/mlx-lm's tests/test_tokenizers.py feeds the tokens of a few strings (Japanese,
symbols of three bytes, "a ,b" and "3 3" with their leading spaces, JSON, code, a newline) to
each model's streaming detokenizer one at a time, and checks the pieces join to the decoded
text. Here the engine writes those strings as replies: a ``response_format`` JSON schema whose
answer is the string (``const``) makes SmolLM2 and the tiny reasoner spell it, the tiny
reasoner a byte per token for any character past ASCII. What a user gets is then checked: the
streamed deltas join to the final text, no delta holds U+FFFD (a piece of a character), and
the tokens' bytes (the logprobs' ``bytes``) spell it. Replies sampled at temperature 2, which
split characters anywhere and write bytes that are no UTF-8 at all, must still stream as they
read whole, as mlx-lm's own detokenizer reads their tokens.

Ported: ``check_tokenizer``'s strings (above; the newline as SmolLM2 writes it in a poem, since
a JSON string escapes it); ``test_special_tokens`` (the end token's text, see below);
``test_tool_calling`` and ``test_thinking`` (the markers the tokenizer carries, and what the
engine does with a model that has none).

Differences asserted as ours: mlx-lm's detokenizer shows the end token's text when fed it;
the engine (as mlx_lm.server) ends the reply there without it, and the token view lists the
token, text and all, marked as the end.

Not ported: the SentencePiece and naive detokenizers (both models here are byte-level BPE; the
engine takes whichever mlx-lm picks for a tokenizer).
"""

from __future__ import annotations

import json

import pytest

from mlx_notebook.engine import ContentDelta, EngineRequestError, Error, TokenLogprobs

pytestmark = pytest.mark.model

STRINGS = ["こんにちは！私の名前はAI", "⊕ ⊻ ∧ ¬", "a ,b",
           '{"why_its_funny" :"a_joke_explainer" ,"rating":3.5}', "3 3",
           "import 'package:flutter/material.dart';", "🎉 fête"]
NO_THINKING = {"enable_thinking": False}  # the tiny reasoner answers at once (SmolLM2 ignores it)


# SmolLM2 (a token a character or more) writes a few of them, the tiny reasoner (a byte a token
# past ASCII) all: SmolLM2 decodes a grammar-held reply at a few tokens a second on two cores.
SPELLED = [("smollm2", t) for t in STRINGS[:3]] + [("tiny", t) for t in STRINGS]


def _spell(text: str, **extra) -> dict:
    """A chat body whose answer must be ``text`` as a JSON string."""
    schema = {"name": "answer", "schema": {"const": text}}
    return {"messages": [{"role": "user", "content": "Say it."}], "max_tokens": 80,
            "chat_template_kwargs": NO_THINKING,
            "response_format": {"type": "json_schema", "json_schema": schema}, **extra}


def _streamed(engine, body: dict, field: str = "content") -> list[str]:
    """The non-empty ``field`` deltas of a streamed chat reply."""
    chunks = engine.chat_completions({**body, "stream": True})
    return [d[field] for c in chunks if c.get("choices")
            for d in [c["choices"][0]["delta"]] if d.get(field)]


def _token_bytes(choice: dict) -> bytes:
    return b"".join(bytes(t["bytes"]) for t in choice["logprobs"]["content"])


def _mlx_lm_pieces(tokenizer, ids: list[int]) -> list[str]:
    """What mlx-lm's streaming detokenizer gives for ``ids``, one piece per token, then the
    rest at the end."""
    detokenizer = tokenizer.detokenizer
    detokenizer.reset()
    pieces = []
    for token in ids:
        detokenizer.add_token(token)
        pieces.append(detokenizer.last_segment)
    detokenizer.finalize()
    return [*pieces, detokenizer.last_segment]


# -- check_tokenizer's strings --------------------------------------------------------------------
@pytest.mark.parametrize("model, text", SPELLED)
def test_a_streamed_reply_joins_to_its_final_text(request, model, text):
    engine = request.getfixturevalue(f"{model}_engine")
    final = engine.chat_completions(_spell(text, logprobs=True))["choices"][0]
    content = final["message"]["content"]
    assert json.loads(content) == text
    assert _token_bytes(final) == content.encode()
    deltas = _streamed(engine, _spell(text))
    assert "".join(deltas) == content
    assert not any("\ufffd" in d for d in deltas)


def test_a_reply_with_newlines_streams_as_its_final_text(smollm2_engine):
    body = {"messages": [{"role": "user", "content": "Write a short poem about the sea."}],
            "max_tokens": 16, "temperature": 0}
    final = smollm2_engine.chat_completions(body)["choices"][0]["message"]["content"]
    assert "\n" in final
    assert "".join(_streamed(smollm2_engine, body)) == final
    completion = {"prompt": "Roses are red,\nViolets are blue,\n", "max_tokens": 12,
                  "temperature": 0}
    text = smollm2_engine.completions(completion)["choices"][0]["text"]
    chunks = smollm2_engine.completions({**completion, "stream": True})
    assert "".join(c["choices"][0]["text"] for c in chunks if c.get("choices")) == text


def test_a_reply_cut_inside_a_character_ends_in_one_replacement(tiny_engine):
    # The tiny reasoner writes こ as three tokens of a byte each; max_tokens 3 stops after
    # '"' and two of them. The text ends as mlx-lm's detokenizer ends it: U+FFFD for the
    # unfinished character, at the very end; the bytes say what was written.
    body = _spell("こんにちは", max_tokens=3)
    final = tiny_engine.chat_completions({**body, "logprobs": True})["choices"][0]
    assert final["finish_reason"] == "length"
    assert final["message"]["content"] == '"\ufffd'
    assert _token_bytes(final) == '"こ'.encode()[:3]
    deltas = _streamed(tiny_engine, body)
    assert "".join(deltas) == '"\ufffd' and "\ufffd" not in "".join(deltas[:-1])
    ids = [e.token_id for e in tiny_engine.submit({**body, "logprobs": True}).events()
           if isinstance(e, TokenLogprobs)]
    assert "".join(_mlx_lm_pieces(tiny_engine.tokenizer, ids)).lstrip() == '"\ufffd'


def test_sampled_bytes_stream_as_mlx_lm_detokenizes_them(tiny_engine):
    tokenizer = tiny_engine.tokenizer
    broken = 0
    for seed in range(8):
        body = {"prompt": "Once upon", "max_tokens": 40, "temperature": 2.0, "seed": seed}
        text = tiny_engine.completions(body)["choices"][0]["text"]
        chunks = tiny_engine.completions({**body, "stream": True})
        assert "".join(c["choices"][0]["text"] for c in chunks if c.get("choices")) == text
        ids = [e.token_id for e in tiny_engine.submit({**body, "logprobs": 1},
                                                      kind="completion").events()
               if isinstance(e, TokenLogprobs) and not e.ends_reply]
        assert "".join(_mlx_lm_pieces(tokenizer, ids)) == text
        broken += "\ufffd" in text
        chat = {"messages": [{"role": "user", "content": "Tell me a story"}],
                "max_tokens": 40, "temperature": 2.0, "seed": seed}
        message = tiny_engine.chat_completions(chat)["choices"][0]["message"]
        for field in ("reasoning", "content"):
            assert "".join(_streamed(tiny_engine, chat, field)) == (message.get(field) or "")
    assert broken  # some replies held bytes that are no character: the case was met


# -- test_special_tokens --------------------------------------------------------------------------
def test_the_end_token_ends_the_reply_without_its_text(tiny_engine):
    end = next(iter(tiny_engine.tokenizer.eos_token_ids))
    end_text = tiny_engine.tokenizer.decode([end])
    body = _spell("3 3", logprobs=True)
    events = list(tiny_engine.submit(body).events())
    tokens = [e for e in events if isinstance(e, TokenLogprobs)]
    assert (tokens[-1].token_id, tokens[-1].token, tokens[-1].ends_reply) == (end, end_text, True)
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert content == '"3 3"' and end_text not in content
    assert not any(isinstance(e, Error) for e in events)
    # OpenAI-style logprobs leave it out, so that their tokens spell the reply
    final = tiny_engine.chat_completions(body)["choices"][0]
    assert [t["token"] for t in final["logprobs"]["content"]][-1] != end_text


def test_a_special_token_inside_a_completion_shows_its_text(tiny_engine):
    think = tiny_engine.tokenizer.encode("<think>", add_special_tokens=False)
    assert len(think) == 1
    r = tiny_engine.completions({"prompt": "Once upon", "max_tokens": 1,
                                 "logit_bias": {str(think[0]): 100}})
    assert r["choices"][0]["text"] == "<think>"


# -- test_tool_calling, test_thinking -------------------------------------------------------------
def test_the_tokenizer_knows_the_tiny_reasoners_markers_and_none_for_smollm2(tiny_engine,
                                                                               smollm2_engine):
    tiny = tiny_engine.tokenizer
    assert tiny.has_thinking and (tiny.think_start, tiny.think_end) == ("<think>", "</think>")
    assert tiny.has_tool_calling
    assert (tiny.tool_call_start, tiny.tool_call_end) == ("<tool_call>", "</tool_call>")
    smol = smollm2_engine.tokenizer
    assert not smol.has_thinking and not smol.has_tool_calling
    # A call cannot be forced from a model with no call markup: refused, naming the way out.
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    with pytest.raises(EngineRequestError, match="tool_choice"):
        smollm2_engine.chat_completions({"messages": [{"role": "user", "content": "Hi"}],
                                         "tools": tools, "tool_choice": "required"})
