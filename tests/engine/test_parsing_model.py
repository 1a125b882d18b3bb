"""The stream filter on a real model's output: the tiny reasoner's tokenizer, template and
greedy replies (DESIGN.md's test asset), token by token as the engine sees them."""

import pytest
from parsing_cases.streaming import streamed

from mlx_notebook.engine.parsing import StreamFilter, parse_output, trace

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def reasoner():
    from mlx_lm import load
    from mlx_notebook.engine.models._store import resolve_model
    from mlx_notebook.engine.models.tiny_reasoner import load_scripts

    model, tokenizer = load(str(resolve_model("tiny-reasoner", progress=False)))
    return model, tokenizer, {s["name"]: s for s in load_scripts()}


def render(tokenizer, script):
    return tokenizer.apply_chat_template(
        script["messages"], tools=script.get("tools"), add_generation_prompt=True,
        tokenize=False, **script.get("chat_template_kwargs", {}),
    )


def test_every_scripted_reply_parses_the_same_token_by_token(reasoner):
    _, tokenizer, scripts = reasoner
    for script in scripts.values():
        prompt = render(tokenizer, script)
        f = StreamFilter.for_tokenizer(tokenizer, prompt, tools=script.get("tools"))
        assert f.family.name == "qwen3"
        ids = tokenizer.encode(script["reply"], add_special_tokens=False)
        t = trace(ids, f.family, tokenizer=tokenizer, tools=script.get("tools"),
                  starts_in_reasoning=f.starts_in_reasoning)
        assert t.diff() == [], script["name"]
        assert "".join(r.chunk for r in t.rows[:-1]) == script["reply"]
        assert not t.buffered.problems
        for marker in ("<think>", "</think>", "<tool_call>", "</tool_call>"):
            assert marker not in t.buffered.reasoning + t.buffered.content


def test_tool_call_script_gives_its_calls(reasoner):
    _, _, scripts = reasoner
    out = parse_output(scripts["parallel_tool_calls"]["reply"], "qwen3")
    assert [c["name"] for c in out.tool_calls] == ["get_weather", "get_weather"]
    assert out.reasoning.strip().startswith("Two cities")


@pytest.mark.parametrize("name", ["reason_then_answer", "single_tool_call", "thinking_disabled"])
def test_greedy_generation_streams_into_the_scripted_parse(reasoner, name):
    from mlx_lm import stream_generate

    model, tokenizer, scripts = reasoner
    script = scripts[name]
    prompt = render(tokenizer, script)
    f = StreamFilter.for_tokenizer(tokenizer, prompt, tools=script.get("tools"))
    deltas = [response.text for response in stream_generate(model, tokenizer, prompt, max_tokens=200)]
    text, events = "".join(deltas), streamed(f, deltas)
    expected = parse_output(script["reply"], f.family, tools=script.get("tools"),
                            starts_in_reasoning=f.starts_in_reasoning)
    assert text == script["reply"]
    assert events == expected.events
