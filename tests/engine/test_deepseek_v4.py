"""DeepSeek-V4: the DSML tool-call parser and the programmatic prompt encoder, against goldens.

The goldens in ``goldens/deepseek_v4/`` were written by hand from DeepSeek's published reference
encoder ``encoding/encoding_dsv4.py`` (shipped in the DeepSeek-V4 model repos; read in its copy
at vllm-project/vllm ``vllm/tokenizers/deepseek_v4_encoding.py`` and supermy/ds4rs
``encoding/encoding_dsv4.py``) and vLLM's request adapter ``vllm/tokenizers/deepseek_v4.py``
(tools attached to the leading system message, ``reasoning_effort`` mapping).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlx_notebook.engine.parsers import deepseek_v4 as dsml

GOLDENS = Path(__file__).parent / "goldens" / "deepseek_v4"
DSML_GOLDENS = json.loads((GOLDENS / "dsml_outputs.json").read_text(encoding="utf-8"))


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
    assert dsml.parse_tool_call(case["output"][start:], case.get("tools")) == case["tool_calls"]


@pytest.mark.parametrize("case", DSML_GOLDENS["malformed"], ids=lambda c: c["name"])
def test_malformed_dsml_raises_one_sentence_value_error(case):
    with pytest.raises(ValueError) as raised:
        dsml.parse_tool_call(case["body"])
    message = str(raised.value)
    assert case["error"] in message
    assert "\n" not in message and message.endswith(".")


def test_string_false_value_that_is_not_json_is_an_error_without_a_schema():
    body = '<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="unit" string="false">celsius</｜DSML｜parameter>\n</｜DSML｜invoke>'
    with pytest.raises(ValueError, match="not JSON"):
        dsml.parse_tool_call(body)


def test_parameter_without_string_attribute_falls_back_to_json_then_text():
    body = (
        '<｜DSML｜invoke name="f">\n'
        '<｜DSML｜parameter name="n">7</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="word">hello</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>"
    )
    assert dsml.parse_tool_call(body) == [{"name": "f", "arguments": {"n": 7, "word": "hello"}}]


def test_extra_whitespace_between_attributes_and_elements_is_tolerated():
    body = (
        '  <｜DSML｜invoke   name="f" >'
        '<｜DSML｜parameter  name="a"  string="true" >x</｜DSML｜parameter>'
        "</｜DSML｜invoke>\n\n"
    )
    assert dsml.parse_tool_call(body) == [{"name": "f", "arguments": {"a": "x"}}]
