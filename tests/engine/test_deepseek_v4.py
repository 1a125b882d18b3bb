"""DeepSeek-V4: the DSML tool-call parser and the programmatic prompt encoder, against goldens.

The goldens in ``goldens/deepseek_v4/`` come from DeepSeek's published reference
encoder ``encoding/encoding_dsv4.py`` (shipped in the DeepSeek-V4 model repos; read in its copy
at vllm-project/vllm ``vllm/tokenizers/deepseek_v4_encoding.py`` and supermy/ds4rs
``encoding/encoding_dsv4.py``) and vLLM's request adapter ``vllm/tokenizers/deepseek_v4.py``
(tools attached to the leading system message, ``reasoning_effort`` mapping). The prompt goldens
(``prompts.json`` + one ``.txt`` per conversation) were rendered by a transcription of that
reference encoder behind vLLM's adapter, kept outside the repo; our encoder must match them
byte for byte. The DSML goldens (``dsml_outputs.json``) are written by hand in the reference's
block layout and were checked the same way against its ``parse_message_from_completion_text``:
same reasoning, content and calls. Two kinds of case go beyond the reference on purpose:
``schema_coercion`` cases follow vLLM's DSML parser, where the request's tool schema outranks
the ``string`` attribute (vllm-project/vllm ``tests/tool_parsers/test_deepseekv32_tool_parser.py``;
the reference would emit invalid JSON or a string there), and the cases with
``reference_layout: false`` either have no newlines between elements (vLLM accepts them, the
reference's strict parser leaves them as content) or open the block inside reasoning with no
``</think>`` (issue 4: the block ends the reasoning; the reference rejects the reply).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlx_notebook.engine._errors import EngineRequestError
from mlx_notebook.engine.parsing.parsers import deepseek_v4 as dsml
from mlx_notebook.engine.request._prompt_encoders import deepseek_v4 as encoder
from mlx_notebook.engine.request._prompt_encoders import encoder_for

GOLDENS = Path(__file__).parent / "goldens" / "deepseek_v4"
DSML_GOLDENS = json.loads((GOLDENS / "dsml_outputs.json").read_text(encoding="utf-8"))
PROMPT_GOLDENS = json.loads((GOLDENS / "prompts.json").read_text(encoding="utf-8"))
# Issue 12: a string="false" value that is not JSON keeps its raw text (as the reference and
# vLLM do) instead of failing the call, so the goldens' case of it is malformed no longer.
MALFORMED = [c for c in DSML_GOLDENS["malformed"] if c["name"] != "not_json_when_string_false"]


def _block_body(output: str) -> str:
    start = output.index(dsml.tool_call_start) + len(dsml.tool_call_start)
    return output[start : output.index(dsml.tool_call_end, start)]


def test_markers_are_the_fullwidth_dsml_tool_calls_block():
    assert dsml.tool_call_start == "<\uff5cDSML\uff5ctool_calls>"
    assert dsml.tool_call_end == "</\uff5cDSML\uff5ctool_calls>"


@pytest.mark.parametrize("case", DSML_GOLDENS["cases"], ids=lambda c: c["name"])
def test_golden_dsml_output_parses_to_its_tool_calls(case):
    calls = dsml.parse_tool_call(_block_body(case["output"]), case.get("tools"))
    assert calls == case["tool_calls"]


@pytest.mark.parametrize("case", DSML_GOLDENS["cases"], ids=lambda c: c["name"])
def test_whole_block_with_markers_parses_the_same(case):
    start = case["output"].index(dsml.tool_call_start)
    assert (
        dsml.parse_tool_call(case["output"][start:], case.get("tools"))
        == case["tool_calls"]
    )


@pytest.mark.parametrize("case", MALFORMED, ids=lambda c: c["name"])
def test_malformed_dsml_raises_one_sentence_value_error(case):
    with pytest.raises(ValueError) as raised:
        dsml.parse_tool_call(case["body"])
    message = str(raised.value)
    assert case["error"] in message
    assert "\n" not in message and message.endswith(".")


def test_string_false_value_that_is_not_json_keeps_the_raw_string():
    body = '<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="unit" string="false">celsius</｜DSML｜parameter>\n</｜DSML｜invoke>'
    assert dsml.parse_tool_call(body) == [{"name": "get_weather", "arguments": {"unit": "celsius"}}]
    assert dsml.parse_tool_call(body.replace(">celsius<", ">{bad json<")) == [
        {"name": "get_weather", "arguments": {"unit": "{bad json"}}]



def test_parameter_without_string_attribute_falls_back_to_json_then_text():
    body = (
        '<｜DSML｜invoke name="f">\n'
        '<｜DSML｜parameter name="n">7</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="word">hello</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>"
    )
    assert dsml.parse_tool_call(body) == [
        {"name": "f", "arguments": {"n": 7, "word": "hello"}}
    ]


def test_extra_whitespace_between_attributes_and_elements_is_tolerated():
    body = (
        '  <｜DSML｜invoke   name="f" >'
        '<｜DSML｜parameter  name="a"  string="true" >x</｜DSML｜parameter>'
        "</｜DSML｜invoke>\n\n"
    )
    assert dsml.parse_tool_call(body) == [{"name": "f", "arguments": {"a": "x"}}]


# --- prompt encoder -------------------------------------------------------------------------


def _encode(case, messages=None):
    return encoder.encode_messages(
        case["messages"] if messages is None else messages,
        tools=case.get("tools"),
        thinking=case["thinking"],
        reasoning_effort=case.get("reasoning_effort"),
    )


def _golden_prompt(case) -> str:
    return (GOLDENS / case["prompt_file"]).read_text(encoding="utf-8")


@pytest.mark.parametrize("case", PROMPT_GOLDENS["cases"], ids=lambda c: c["name"])
def test_prompt_matches_the_reference_encoder_byte_for_byte(case):
    assert _encode(case) == _golden_prompt(case)


@pytest.mark.parametrize("case", PROMPT_GOLDENS["cases"], ids=lambda c: c["name"])
def test_reasoning_content_field_is_read_like_reasoning(case):
    renamed = [
        {("reasoning_content" if k == "reasoning" else k): v for k, v in m.items()}
        for m in case["messages"]
    ]
    assert _encode(case, renamed) == _golden_prompt(case)


@pytest.mark.parametrize("case", PROMPT_GOLDENS["cases"], ids=lambda c: c["name"])
def test_tool_call_arguments_as_json_text_or_dict_render_the_same(case):
    def flip(call):
        args = call["function"]["arguments"]
        flipped = json.loads(args) if isinstance(args, str) else json.dumps(args)
        return {**call, "function": {**call["function"], "arguments": flipped}}

    flipped = [
        {**m, "tool_calls": [flip(c) for c in m["tool_calls"]]}
        if m.get("tool_calls")
        else m
        for m in case["messages"]
    ]
    assert _encode(case, flipped) == _golden_prompt(case)


def test_generation_prompt_opens_the_thinking_or_chat_turn():
    question = [{"role": "user", "content": "Hi"}]
    assert encoder.encode_messages(question, thinking=True).endswith(
        "<｜Assistant｜><think>"
    )
    assert encoder.encode_messages(question).endswith("<｜Assistant｜></think>")
    without = encoder.encode_messages(
        question, thinking=True, add_generation_prompt=False
    )
    assert without == "<｜begin▁of▁sentence｜><｜User｜>Hi"
    assert (
        encoder.encode_messages(question, bos=False)
        == "<｜User｜>Hi<｜Assistant｜></think>"
    )


def test_earlier_reasoning_is_kept_when_tools_are_present():
    turns = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning": "thought about a"},
        {"role": "user", "content": "c"},
    ]
    assert "thought about a" not in encoder.encode_messages(turns, thinking=True)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert "<think>thought about a</think>b" in encoder.encode_messages(
        turns, thinking=True, tools=tools
    )


@pytest.mark.parametrize(
    ("messages", "kwargs", "param"),
    [
        (
            [{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}],
            {},
            "messages[1].role",
        ),
        (["just text"], {}, "messages[0]"),
        ([], {}, "messages"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "x"}}],
                }
            ],
            {},
            "messages[0].content",
        ),
        (
            [
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}],
                },
            ],
            {},
            "messages[1].tool_calls[0].function.arguments",
        ),
        (
            [
                {"role": "user", "content": "x"},
                {
                    "role": "assistant",
                    "tool_calls": [{"function": {"name": "f", "arguments": "[1, 2]"}}],
                },
            ],
            {},
            "messages[1].tool_calls[0].function.arguments",
        ),
        (
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "tool_calls": [{"function": {}}]},
            ],
            {},
            "messages[1].tool_calls[0].function.name",
        ),
        (
            [{"role": "user", "content": "x"}],
            {"reasoning_effort": "extreme"},
            "reasoning_effort",
        ),
        (
            [{"role": "user", "content": "x"}],
            {"tools": [{"type": "function"}]},
            "tools[0]",
        ),
    ],
    ids=[
        "unknown_role",
        "message_not_an_object",
        "no_messages",
        "image_part",
        "arguments_not_json",
        "arguments_not_an_object",
        "call_without_name",
        "unknown_effort",
        "tool_without_name",
    ],
)
def test_bad_input_raises_request_error_naming_the_field(messages, kwargs, param):
    with pytest.raises(EngineRequestError) as raised:
        encoder.encode_messages(messages, **kwargs)
    assert raised.value.param == param
    assert raised.value.message.endswith(".")


def test_encoder_is_selected_by_model_type():
    assert encoder_for("deepseek_v4") is encoder
    assert encoder_for("llama") is None
    assert encoder_for(None) is None
    assert encoder_for("deepseek_v4.x") is None and encoder_for("_private") is None


# --- encode -> parse round trip -------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [c for c in DSML_GOLDENS["cases"] if not c.get("schema_coercion")],
    ids=lambda c: c["name"],
)
def test_encoded_tool_calls_parse_back_to_the_same_calls(case):
    block = encoder.encode_tool_calls(case["tool_calls"])
    assert block.startswith(dsml.tool_call_start) and block.endswith(dsml.tool_call_end)
    assert dsml.parse_tool_call(_block_body(block)) == case["tool_calls"]


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in DSML_GOLDENS["cases"]
        if c.get("reference_layout", True) and not c.get("schema_coercion")
    ],
    ids=lambda c: c["name"],
)
def test_encoded_tool_calls_are_the_block_the_model_writes(case):
    output = case["output"]
    assert (
        encoder.encode_tool_calls(case["tool_calls"])
        == output[output.index(dsml.tool_call_start) :]
    )


def test_openai_tool_calls_round_trip_through_history_and_parser():
    calls = [
        {
            "id": "1",
            "type": "function",
            "function": {
                "name": "run",
                "arguments": json.dumps(
                    {
                        "cmd": 'echo "<｜User｜>" > out.txt\n',
                        "env": {"A": "1"},
                        "timeout": 2.5,
                    }
                ),
            },
        },
        {"id": "2", "type": "function", "function": {"name": "noop", "arguments": {}}},
    ]
    parsed = dsml.parse_tool_call(_block_body(encoder.encode_tool_calls(calls)))
    assert parsed == [
        {
            "name": "run",
            "arguments": {
                "cmd": 'echo "<｜User｜>" > out.txt\n',
                "env": {"A": "1"},
                "timeout": 2.5,
            },
        },
        {"name": "noop", "arguments": {}},
    ]
