"""Peers' own test cases, ported: vLLM's reasoning and tool-parser suites and mlx-lm's
``tests/test_tool_parsing.py``, for every format one of our families reads. vLLM's tool
parser files ported: deepseekv3/v31/v4, hermes, minimax_m2, llama3_json, kimi_k2, mistral,
qwen3coder, qwen3_xml_coder_shared, qwen36_bugs, pythonic, llama4_pythonic, longcat,
glm4_moe, glm47_moe, functiongemma and gemma4 (each one's argument-reader unit cases as whole
calls). mlx-lm's ``tests/test_server.py`` holds no tool-call parsing cases to port.

Same case shape as ``core.py``; ``test_parsing.py`` runs each through the buffered parse and
every chunking (sizes 1..128, random splits, one character at a time). Each block names the
peer file it comes from. Where a peer expects what our design does differently, the case
asserts ours and a comment says why. Three differences run through all of them:

- vLLM's ``content: None`` is our empty string: a reply has no "absent" content.
- vLLM's reasoning parsers leave a tool call in ``content`` for the tool parser to read
  next; our one splitter reads it, so the call is a tool call and the content is empty.
- vLLM guesses the start state from the parser (Qwen3 and R1 assume thinking is on); we take
  it from the rendered prompt (DESIGN.md, principle 2), so a case passes
  ``starts_in_reasoning`` as the template it stands for would have decided it.
"""

from .core import expect

# mlx-lm tests/test_tool_parsing.py (test_parsers): one call per format, two tools. Its
# tools name a "str" type (not JSON Schema's "string"): the value still stays text.
MLX_MULTIPLY = ("multiply", {"a": 12234585, "b": 48838483920})
MLX_LONDON = ("get_current_temperature", {"location": "London"})
MLX_NUM_TOOLS = [{"type": "function", "function": {
    "name": "multiply", "description": "Multiply two numbers.", "parameters": {
        "type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "number", "description": "a is a number"},
            "b": {"type": "number", "description": "b is a number"}}}}}]
MLX_STR_TOOLS = [{"type": "function", "function": {
    "name": "get_current_temperature", "description": "Get the current temperature.",
    "parameters": {"type": "object", "required": ["location"], "properties": {
        "location": {"type": "str", "description": "The location."}}}}}]

CASES = [
    ("mlx_lm_function_gemma_numbers", "function_gemma",
     "<start_function_call>call:multiply{a:12234585,b:48838483920}<end_function_call>",
     {"tools": MLX_NUM_TOOLS}, expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_glm47_json_body", "glm47",
     '<tool_call>{"name": "multiply", "arguments": {"a": 12234585, "b": 48838483920}}</tool_call>',
     {"tools": MLX_NUM_TOOLS}, expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_glm47_arg_pairs_numbers", "glm47",
     "<tool_call>multiply<arg_key>a</arg_key><arg_value>12234585</arg_value><arg_key>b</arg_key>"
     "<arg_value>48838483920</arg_value></tool_call>", {"tools": MLX_NUM_TOOLS},
     expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_glm47_json_quoted_string_value", "glm47",
     '<tool_call>get_current_temperature<arg_key>location</arg_key><arg_value>"London"'
     "</arg_value></tool_call>", {"tools": MLX_STR_TOOLS}, expect(tool_calls=[MLX_LONDON])),
    ("mlx_lm_json_tools", "qwen3",
     '<tool_call>{"name": "multiply", "arguments": {"a": 12234585, "b": 48838483920}}</tool_call>',
     {"tools": MLX_NUM_TOOLS, "starts_in_reasoning": False}, expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_minimax_m2_numbers", "minimax_m2",
     '<minimax:tool_call><invoke name="multiply">\n<parameter name="a">12234585</parameter>\n'
     '<parameter name="b">48838483920</parameter>\n</invoke></minimax:tool_call>',
     {"tools": MLX_NUM_TOOLS}, expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_minimax_m2_str_typed_string", "minimax_m2",
     '<minimax:tool_call><invoke name="get_current_temperature">\n'
     '<parameter name="location">London</parameter>\n</invoke></minimax:tool_call>',
     {"tools": MLX_STR_TOOLS}, expect(tool_calls=[MLX_LONDON])),
    ("mlx_lm_qwen3_coder_numbers", "qwen3_coder",
     "<function=multiply>\n<parameter=a>\n12234585\n</parameter>\n<parameter=b>\n48838483920\n"
     "</parameter>\n</function>", {"tools": MLX_NUM_TOOLS}, expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_qwen3_coder_str_typed_string", "qwen3_coder",
     "<function=get_current_temperature>\n<parameter=location>\nLondon\n</parameter>\n</function>",
     {"tools": MLX_STR_TOOLS}, expect(tool_calls=[MLX_LONDON])),
    ("mlx_lm_longcat_arg_pairs_numbers", "longcat",
     "<longcat_tool_call>multiply<longcat_arg_key>a</longcat_arg_key>\n<longcat_arg_value>12234585"
     "</longcat_arg_value>\n<longcat_arg_key>b</longcat_arg_key>\n<longcat_arg_value>48838483920"
     "</longcat_arg_value></longcat_tool_call>", {"tools": MLX_NUM_TOOLS},
     expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_longcat_json_body", "longcat",
     '<longcat_tool_call>{"name": "get_current_temperature", "arguments": {"location": "London"}}'
     "</longcat_tool_call>", {"tools": MLX_STR_TOOLS}, expect(tool_calls=[MLX_LONDON])),
    # mlx-lm's test_kimi_k2 hands its parser the section's body; the model writes the section
    # markers around it (Kimi's template), so the reply here has them.
    ("mlx_lm_kimi_k2_single_call", "kimi_k2",
     "<|tool_calls_section_begin|><|tool_call_begin|>functions.multiply:0<|tool_call_argument_begin|>"
     '{"a": 12234585, "b": 48838483920}<|tool_call_end|><|tool_calls_section_end|>', {},
     expect(tool_calls=[MLX_MULTIPLY])),
    ("mlx_lm_kimi_k2_two_calls", "kimi_k2",
     "<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>"
     '{"query": "weather"}<|tool_call_end|>'
     "<|tool_call_begin|>functions.read_file:1<|tool_call_argument_begin|>"
     '{"path": "/tmp/test.txt"}<|tool_call_end|><|tool_calls_section_end|>', {},
     expect(tool_calls=[("search", {"query": "weather"}),
                        ("read_file", {"path": "/tmp/test.txt"})])),
]

# vLLM tests/reasoning/test_qwen3_reasoning_parser.py. Qwen3's template pre-fills <think>
# when thinking is on (Qwen3.5, Qwen3-Thinking-2507), so those cases start in reasoning;
# vLLM's thinking-disabled cases start in content.
QWEN_BASH = ("<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n"
             "</function>\n</tool_call>")
BASH = ("bash", {"command": "cat /etc/hosts"})
THINKING, NOT_THINKING = {"starts_in_reasoning": True}, {"starts_in_reasoning": False}

CASES += [
    ("vllm_qwen3_without_start_token", "qwen3",
     "This is a reasoning section</think>This is the rest", THINKING,
     expect("This is a reasoning section", "This is the rest")),
    ("vllm_qwen3_without_start_token_complete_reasoning", "qwen3",
     "This is a reasoning section</think>", THINKING, expect("This is a reasoning section")),
    ("vllm_qwen3_with_think", "qwen3", "<think>This is a reasoning section</think>This is the rest",
     {}, expect("This is a reasoning section", "This is the rest")),
    ("vllm_qwen3_without_think_is_truncated_reasoning", "qwen3", "This is the rest", THINKING,
     expect("This is the rest")),
    ("vllm_qwen3_complete_reasoning", "qwen3", "<think>This is a reasoning section</think>", {},
     expect("This is a reasoning section")),
    ("vllm_qwen3_multiline_reasoning", "qwen3",
     "<think>This is a reasoning\nsection</think>This is the rest\nThat", {},
     expect("This is a reasoning\nsection", "This is the rest\nThat")),
    ("vllm_qwen3_only_open_tag", "qwen3", "<think>This is a reasoning section", {},
     expect("This is a reasoning section")),
    ("vllm_qwen3_tool_call_no_think_end", "qwen3", "I need to read the file.\n\n" + QWEN_BASH,
     THINKING, expect("I need to read the file.\n\n", tool_calls=[BASH])),
    ("vllm_qwen3_tool_call_with_think_no_end", "qwen3",
     "<think>I need to read the file.\n\n" + QWEN_BASH, {},
     expect("I need to read the file.\n\n", tool_calls=[BASH])),
    ("vllm_qwen3_start_and_end_in_one_delta_no_content", "qwen3", "<think>reasoning</think>", {},
     expect("reasoning")),
    ("vllm_qwen3_thinking_disabled_plain_content", "qwen3", "This is plain content",
     NOT_THINKING, expect(content="This is plain content")),
    ("vllm_qwen3_thinking_disabled_with_tool_call", "qwen3",
     "I need to read the file.\n\n" + QWEN_BASH, NOT_THINKING,
     expect(content="I need to read the file.\n\n", tool_calls=[BASH])),
]


def _r1_style(family, open_, close, prefix):
    """vLLM's DeepSeek-R1 reasoning table, which its Mistral (Magistral) table repeats with
    ``[THINK]``/``[/THINK]``: replies that start in reasoning, the opening marker optional."""
    return [
        (f"{prefix}_simple_reasoning", family, f"This is a reasoning section{close}This is the rest",
         THINKING, expect("This is a reasoning section", "This is the rest")),
        (f"{prefix}_complete_reasoning", family, f"This is a reasoning section{close}", THINKING,
         expect("This is a reasoning section")),
        (f"{prefix}_no_content", family, "This is content", THINKING, expect("This is content")),
        (f"{prefix}_multiple_lines", family, f"This\nThat{close}This is the rest\nThat", THINKING,
         expect("This\nThat", "This is the rest\nThat")),
        (f"{prefix}_shortest", family, f"{close}This is the rest", THINKING,
         expect(content="This is the rest")),
        (f"{prefix}_reasoning_with_think", family,
         f"{open_}This is a reasoning section{close}This is the rest", THINKING,
         expect("This is a reasoning section", "This is the rest")),
        (f"{prefix}_complete_reasoning_with_think", family,
         f"{open_}This is a reasoning section{close}", THINKING,
         expect("This is a reasoning section")),
        (f"{prefix}_multiple_lines_with_think", family,
         f"{open_}This\nThat{close}This is the rest\nThat", THINKING,
         expect("This\nThat", "This is the rest\nThat")),
        (f"{prefix}_think_no_end", family, f"{open_}This is a reasoning section", THINKING,
         expect("This is a reasoning section")),
        (f"{prefix}_empty", family, "", THINKING, expect()),
        # vLLM's buffered parse drops the newline before the opening marker and its streaming
        # parse keeps it as reasoning ("we cannot know"); one answer for every chunking here:
        # the newline is whitespace of the reasoning the reply started in, and kept.
        (f"{prefix}_new_line", family,
         f"\n{open_}This is a reasoning section{close}\nThis is the rest", THINKING,
         expect("\nThis is a reasoning section", "\nThis is the rest")),
    ]


# vLLM tests/reasoning/test_deepseekr1_reasoning_parser.py: the R1 family starts in reasoning
# on its own (its template always pre-fills <think>), so those cases pass no option.
CASES += [(name, family, text, {}, expected)
          for name, family, text, _, expected in _r1_style("deepseek_r1", "<think>", "</think>",
                                                           "vllm_deepseek_r1")]
# vLLM tests/reasoning/test_mistral_reasoning_parser.py (Magistral).
CASES += _r1_style("mistral", "[THINK]", "[/THINK]", "vllm_mistral")
# vLLM tests/reasoning/test_deepseekv3_reasoning_parser.py: V3.1 with thinking off is the
# identity parser (all content); with it on, R1's parser.
CASES += [
    ("vllm_deepseek_v3_thinking_off_is_identity", "deepseek_v3", "This is some output", {},
     expect(content="This is some output")),
    ("vllm_deepseek_v3_thinking_on_is_r1", "deepseek_v3",
     "This is a reasoning section</think>This is the rest", THINKING,
     expect("This is a reasoning section", "This is the rest")),
]

# vLLM tests/tool_parsers/test_deepseekv31_tool_parser.py and test_deepseekv3_tool_parser.py.
_DS = "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"
BEGIN, CALL, SEP, CALL_END, END = _DS


def _v3_call(name, body):
    return f"{CALL}function{SEP}{name}\n```json\n{body}\n```{CALL_END}"


CASES += [
    ("vllm_deepseek_v31_with_tool", "deepseek_v3",
     f'normal text{BEGIN}{CALL}foo{SEP}{{"x":1}}{CALL_END}{END}', {},
     expect(content="normal text", tool_calls=[("foo", {"x": 1})])),
    # vLLM drops text after the block; ours keeps it: the model wrote it, and the user sees
    # it (the same as every other family's text after a call).
    ("vllm_deepseek_v31_with_multiple_tools", "deepseek_v3",
     f'some prefix text{BEGIN}{CALL}foo{SEP}{{"x":1}}{CALL_END}{CALL}bar{SEP}{{"y":2}}{CALL_END}'
     f"{END} some suffix text", {},
     expect(content="some prefix text some suffix text",
            tool_calls=[("foo", {"x": 1}), ("bar", {"y": 2})])),
    # A block cut off is no call; vLLM keeps it as content, ours reports it as a problem with
    # its raw text (nothing lost, and the user learns why no tool ran).
    ("vllm_deepseek_v31_cut_off_block", "deepseek_v3",
     f"Let me look that up.{BEGIN}get_weather", {},
     expect(content="Let me look that up.", problems=[f"{BEGIN}get_weather"])),
    ("vllm_deepseek_v31_block_without_call_markers", "deepseek_v3",
     f'{BEGIN}foo{SEP}{{"x":1}}{END}', {}, expect(problems=[f'{BEGIN}foo{SEP}{{"x":1}}{END}'])),
    ("vllm_deepseek_v3_no_tool_calls", "deepseek_v3",
     "How can I help you today? I can check weather for you.", {},
     expect(content="How can I help you today? I can check weather for you.")),
    ("vllm_deepseek_v3_parallel", "deepseek_v3",
     BEGIN + _v3_call("get_weather", '{"city": "Tokyo", "unit": "celsius"}')
     + _v3_call("search_hotels", '{"location": "Tokyo", "check_in": "2025-01-15"}') + END, {},
     expect(tool_calls=[("get_weather", {"city": "Tokyo", "unit": "celsius"}),
                        ("search_hotels", {"location": "Tokyo", "check_in": "2025-01-15"})])),
    ("vllm_deepseek_v3_various_data_types", "deepseek_v3",
     BEGIN + _v3_call("test_function",
                      '{"string_field": "hello", "int_field": 42, "float_field": 3.14, '
                      '"bool_field": true, "null_field": null, "array_field": ["a", "b", "c"], '
                      '"object_field": {"nested": "value"}, "empty_array": [], '
                      '"empty_object": {}}') + END, {},
     expect(tool_calls=[("test_function", {
         "string_field": "hello", "int_field": 42, "float_field": 3.14, "bool_field": True,
         "null_field": None, "array_field": ["a", "b", "c"], "object_field": {"nested": "value"},
         "empty_array": [], "empty_object": {}})])),
    ("vllm_deepseek_v3_empty_arguments", "deepseek_v3",
     BEGIN + _v3_call("get_current_time", "{}") + END, {},
     expect(tool_calls=[("get_current_time", {})])),
    ("vllm_deepseek_v3_surrounding_text", "deepseek_v3",
     "Let me check the weather for you." + BEGIN + _v3_call("get_weather", '{"city": "Paris"}')
     + END, {}, expect(content="Let me check the weather for you.",
                       tool_calls=[("get_weather", {"city": "Paris"})])),
    ("vllm_deepseek_v3_escaped_strings", "deepseek_v3",
     BEGIN + _v3_call("send_message", '{"text": "He said \\"hello\\"", "path": "C:\\\\Users\\\\'
                      'file", "newline": "line1\\nline2"}') + END, {},
     expect(tool_calls=[("send_message", {"text": 'He said "hello"', "path": "C:\\Users\\file",
                                          "newline": "line1\nline2"})])),
    # vLLM marks its own parser xfail here (it reports tools_called with none parsed); ours
    # makes the block one problem with its raw text.
    ("vllm_deepseek_v3_malformed_json", "deepseek_v3",
     BEGIN + _v3_call("get_weather", '{"city": "Tokyo"') + END, {},
     expect(problems=[BEGIN + _v3_call("get_weather", '{"city": "Tokyo"') + END])),
]

# vLLM tests/tool_parsers/test_hermes_tool_parser.py (Qwen3's <tool_call> JSON).
_FINAL = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}'
CASES += [
    ("vllm_hermes_just_forward_text", "qwen3",
     "This is some prior text that has nothing to do with tool calling.", NOT_THINKING,
     expect(content="This is some prior text that has nothing to do with tool calling.")),
    ("vllm_hermes_tool_call_between_tags", "qwen3", _FINAL + "\n</tool_call>", {},
     expect(tool_calls=[("final_answer", {"trigger": True})])),
    ("vllm_hermes_tool_call_until_eos", "qwen3", _FINAL, {},
     expect(tool_calls=[("final_answer", {"trigger": True})])),
    ("vllm_hermes_invalid_json_is_no_call", "qwen3",
     '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}', {},
     expect(problems=['<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}'])),
    ("vllm_hermes_streaming_newlines_inside_the_json", "qwen3",
     '<tool_call>{"name": "get_current_temperature","arguments": {"location":"San Francisco, '
     'California, United States", "unit": "celsius"}}</tool_call>', {},
     expect(tool_calls=[("get_current_temperature", {
         "location": "San Francisco, California, United States", "unit": "celsius"})])),
    ("vllm_hermes_content_then_tool_call", "qwen3",
     'Sure, let me check the weather.<tool_call>{"name": "get_weather", '
     '"arguments": {"city": "NYC"}}</tool_call>', {},
     expect(content="Sure, let me check the weather.",
            tool_calls=[("get_weather", {"city": "NYC"})])),
    ("vllm_hermes_multiple_tool_calls", "qwen3",
     '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call>'
     '<tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>', {},
     expect(tool_calls=[("search", {"q": "cats"}), ("search", {"q": "dogs"})])),
    ("vllm_hermes_serialized_arguments_decoded_once", "qwen3",
     '<tool_call>\n{"name": "get_db_config", "arguments": "{\\"param\\": \\"max_connections\\"}"}'
     "\n</tool_call>", {},
     expect(tool_calls=[("get_db_config", {"param": "max_connections"})])),
]

# vLLM tests/tool_parsers/test_minimax_m2_tool_parser.py. With no tools offered a value has
# no schema to type it by and stays text ("5", not 5), as vLLM expects.
_MM = "<minimax:tool_call>", "</minimax:tool_call>"


def _invoke(name, **params):
    body = "".join(f'<parameter name="{k}">{v}</parameter>' for k, v in params.items())
    return f'<invoke name="{name}">{body}</invoke>'


CASES += [
    ("vllm_minimax_m2_plain_content", "minimax_m2", "Hello world", NOT_THINKING,
     expect(content="Hello world")),
    ("vllm_minimax_m2_content_before_tool_call", "minimax_m2",
     f"Let me check. {_MM[0]}{_invoke('get_weather', city='Seattle')}{_MM[1]}", NOT_THINKING,
     expect(content="Let me check. ", tool_calls=[("get_weather", {"city": "Seattle"})])),
    ("vllm_minimax_m2_multiple_params_untyped", "minimax_m2",
     f"{_MM[0]}{_invoke('get_weather', city='Seattle', days=5)}{_MM[1]}", {},
     expect(tool_calls=[("get_weather", {"city": "Seattle", "days": "5"})])),
    ("vllm_minimax_m2_two_invokes", "minimax_m2",
     f"{_MM[0]}{_invoke('search_web', query='OpenAI')}{_invoke('search_web', query='Gemini')}"
     f"{_MM[1]}", {},
     expect(tool_calls=[("search_web", {"query": "OpenAI"}), ("search_web", {"query": "Gemini"})])),
    ("vllm_minimax_m2_different_functions", "minimax_m2",
     f"{_MM[0]}{_invoke('get_weather', city='NYC')}{_invoke('get_stock', ticker='AAPL')}{_MM[1]}",
     {}, expect(tool_calls=[("get_weather", {"city": "NYC"}), ("get_stock", {"ticker": "AAPL"})])),
]

# vLLM tests/tool_parsers/test_llama3_json_tool_parser.py. vLLM reads a bare object anywhere
# in any reply; ours only at the reply's start, or anywhere when the request offered tools
# (see the llama3_json family), so the mid-reply cases offer the tools they call. vLLM
# returns no content once it finds a call; ours keeps the text around the calls.
_SEARCH_1 = '{"name": "searchTool", "parameters": {"query": "test1"}}'
_INCIDENTS = '{"name": "getOpenIncidentsTool", "parameters": {}}'
_SEARCH_2 = '{"name": "searchTool", "parameters": {"query": "test2"}}'
_LLAMA_TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}}
                for n in ("searchTool", "getOpenIncidentsTool")]
_THREE = [("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {}),
          ("searchTool", {"query": "test2"})]

CASES += [
    ("vllm_llama3_simple_with_text_around", "llama3_json",
     f"Here is the result: {_INCIDENTS} Would you like to know more?", {"tools": _LLAMA_TOOLS},
     expect(content="Here is the result:  Would you like to know more?",
            tool_calls=[("getOpenIncidentsTool", {})])),
    ("vllm_llama3_with_arguments", "llama3_json",
     '{"name": "searchTool", "parameters": {"query": "test query", "limit": 10}}', {},
     expect(tool_calls=[("searchTool", {"query": "test query", "limit": 10})])),
    ("vllm_llama3_no_json", "llama3_json", "This is just some text without any tool calls", {},
     expect(content="This is just some text without any tool calls")),
    ("vllm_llama3_arguments_key", "llama3_json",
     '{"name": "searchTool", "arguments": {"query": "test"}}', {},
     expect(tool_calls=[("searchTool", {"query": "test"})])),
    ("vllm_llama3_multiple_json", "llama3_json", f"{_SEARCH_1}; {_INCIDENTS}; {_SEARCH_2}", {},
     expect(tool_calls=_THREE)),
    ("vllm_llama3_multiple_json_with_whitespace", "llama3_json",
     f"{_SEARCH_1} ; {_INCIDENTS} ; {_SEARCH_2}", {}, expect(tool_calls=_THREE)),
    ("vllm_llama3_multiple_json_with_surrounding_text", "llama3_json",
     f"Here are the results: {_SEARCH_1}; {_INCIDENTS}; {_SEARCH_2} Would you like to know more?",
     {"tools": _LLAMA_TOOLS},
     expect(content="Here are the results:  Would you like to know more?", tool_calls=_THREE)),
    ("vllm_llama3_deeply_nested", "llama3_json",
     '{"name": "complexTool", "parameters": {"level1": {"level2": {"level3": {"level4": '
     '{"value": "deep"}}}}}}', {},
     expect(tool_calls=[("complexTool", {"level1": {"level2": {"level3": {"level4": {
         "value": "deep"}}}}})])),
    ("vllm_llama3_multiple_with_deep_nesting", "llama3_json",
     '{"name": "simpleTool", "parameters": {"value": "test"}}; {"name": "complexTool", '
     '"parameters": {"config": {"database": {"connection": {"pool": {"size": 10}}}}}}', {},
     expect(tool_calls=[("simpleTool", {"value": "test"}), ("complexTool", {
         "config": {"database": {"connection": {"pool": {"size": 10}}}}})])),
    ("vllm_llama3_quotes_and_brackets_in_strings", "llama3_json",
     '{"name": "searchTool", "parameters": {"query": "test {value} [complex]",'
     '"nested": {"inner": "more {brackets}"}}}', {},
     expect(tool_calls=[("searchTool", {"query": "test {value} [complex]",
                                        "nested": {"inner": "more {brackets}"}})])),
    ("vllm_llama3_missing_name_key", "llama3_json", '{"parameters": {}}', {},
     expect(content='{"parameters": {}}')),
    ("vllm_llama3_json_fragment_in_trailing_text", "llama3_json",
     '{"name": "searchTool", "parameters": {"query": "test"}} The arguments I passed were '
     '{"query": "test"}', {},
     expect(content=' The arguments I passed were {"query": "test"}',
            tool_calls=[("searchTool", {"query": "test"})])),
] + [
    (f"vllm_llama3_parallel_separator_{i}", "llama3_json", f"{_SEARCH_1}{sep}{_INCIDENTS}", {},
     expect(tool_calls=_THREE[:2]))
    for i, sep in enumerate(["; ", ";", ";\n", "\n"])
]

# vLLM tests/tool_parsers/test_kimi_k2_tool_parser.py. vLLM returns a call whose JSON is
# broken with its arguments as written; ours makes it a problem (a call never runs with
# arguments that do not parse) and keeps its siblings (families.py has that case).
KIMI_TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": props}}} for name, props in (
        ("get_weather", {"city": {"type": "string"}, "unit": {"type": "string"}}),
        ("read_file", {"path": {"type": "string"}}),
        ("book_flight", {"city": {"type": "string"}}))]


def _kimi(*calls):
    body = "".join(f"<|tool_call_begin|>{tool_id} <|tool_call_argument_begin|>{args}"
                   "<|tool_call_end|>" for tool_id, args in calls)
    return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


CASES += [
    ("vllm_kimi_k2_single_tool_call", "kimi_k2",
     "I'll check. " + _kimi(("functions.get_weather:0", '{"city": "Beijing"}')), {},
     expect(content="I'll check. ", tool_calls=[("get_weather", {"city": "Beijing"})])),
    ("vllm_kimi_k2_three_tool_calls", "kimi_k2",
     "Multiple tasks. " + _kimi(("functions.get_weather:0", '{"city": "New York"}'),
                                ("functions.get_news:1", '{"topic": "technology"}'),
                                ("functions.send_email:2",
                                 '{"to": "user@example.com", "subject": "Daily Update"}')), {},
     expect(content="Multiple tasks. ",
            tool_calls=[("get_weather", {"city": "New York"}), ("get_news", {"topic": "technology"}),
                        ("send_email", {"to": "user@example.com", "subject": "Daily Update"})])),
    ("vllm_kimi_k2_multiline_json", "kimi_k2",
     "Formatted. " + _kimi(("functions.process_data:0", '{\n  "name": "test",\n  "value": 123\n}')),
     {}, expect(content="Formatted. ", tool_calls=[("process_data", {"name": "test", "value": 123})])),
    ("vllm_kimi_k2_no_functions_prefix", "kimi_k2",
     "No prefix. " + _kimi(("get_weather:0", '{"city": "Tokyo"}')), {},
     expect(content="No prefix. ", tool_calls=[("get_weather", {"city": "Tokyo"})])),
    ("vllm_kimi_k2_empty_arguments", "kimi_k2", "Empty args. " + _kimi(("functions.test:0", "{}")),
     {}, expect(content="Empty args. ", tool_calls=[("test", {})])),
    ("vllm_kimi_k2_bare_counter_single_tool", "kimi_k2",
     "Let me check. " + _kimi(("0", '{"city": "Tokyo", "unit": "celsius"}')),
     {"tools": KIMI_TOOLS[:1]},
     expect(content="Let me check. ",
            tool_calls=[("get_weather", {"city": "Tokyo", "unit": "celsius"})])),
    ("vllm_kimi_k2_bare_counter_inferred_by_arguments", "kimi_k2",
     "Let me check. " + _kimi(("0", '{"city": "Tokyo", "unit": "celsius"}')),
     {"tools": KIMI_TOOLS[1::-1]},
     expect(content="Let me check. ",
            tool_calls=[("get_weather", {"city": "Tokyo", "unit": "celsius"})])),
    # Two offered tools fit the arguments: vLLM runs no call; ours says why in a problem.
    ("vllm_kimi_k2_bare_counter_ambiguous", "kimi_k2",
     "Let me check. " + _kimi(("0", '{"city": "Tokyo"}')),
     {"tools": [KIMI_TOOLS[0], KIMI_TOOLS[2]]},
     expect(content="Let me check. ",
            problems=[_kimi(("0", '{"city": "Tokyo"}'))])),
    ("vllm_kimi_k2_no_tools", "kimi_k2", "This is just regular text without tools.", {},
     expect(content="This is just regular text without tools.")),
]

# vLLM tests/tool_parsers/test_mistral_tool_parser.py (pre-v11 lists and v11 name{json};
# families.py already holds its v11 add/multiply and trailing-data cases).
_SF = {"city": "San Francisco", "state": "CA", "unit": "celsius"}
CASES += [
    ("vllm_mistral_no_tools_is_content", "mistral", "This is a test",
     {"starts_in_reasoning": False}, expect(content="This is a test")),
    ("vllm_mistral_pre_v11_single_tool_add", "mistral",
     '[TOOL_CALLS][{"name": "add", "arguments":{"a": 3.5, "b": 4}}]', {},
     expect(tool_calls=[("add", {"a": 3.5, "b": 4})])),
    ("vllm_mistral_pre_v11_argument_before_name", "mistral",
     '[TOOL_CALLS] [{"arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}, '
     '"name": "get_current_weather"}]', {},
     expect(tool_calls=[("get_current_weather", _SF)])),
    ("vllm_mistral_pre_v11_name_in_argument", "mistral",
     '[TOOL_CALLS] [{"arguments":{"name": "John Doe"}, "name": "get_age"}]', {},
     expect(tool_calls=[("get_age", {"name": "John Doe"})])),
    ("vllm_mistral_pre_v11_content_before_tool", "mistral",
     'Hello[TOOL_CALLS] [{"name": "add", "arguments":{"a": 1, "b": 2}}]', {},
     expect(content="Hello", tool_calls=[("add", {"a": 1, "b": 2})])),
    # vLLM refuses two [TOOL_CALLS] lists in one pre-v11 reply (ValueError); each is a whole
    # call list, so ours reads both.
    ("vllm_mistral_pre_v11_two_bot_tokens", "mistral",
     '[TOOL_CALLS] [{"name": "add", "arguments":{"a": 1}}][TOOL_CALLS] [{"name": "sub", '
     '"arguments":{"b": 2}}]', {}, expect(tool_calls=[("add", {"a": 1}), ("sub", {"b": 2})])),
    ("vllm_mistral_v11_single_tool_weather", "mistral",
     '[TOOL_CALLS]get_current_weather{"city": "San Francisco", "state": "CA", "unit": "celsius"}',
     {}, expect(tool_calls=[("get_current_weather", _SF)])),
]

# vLLM tests/tool_parsers/test_qwen3coder_tool_parser.py. Its sample tools type the
# parameters (vLLM converts values by them); the calls below pass the same schemas.
_WEATHER_PARAMS = {"type": "object", "required": ["city", "state"], "properties": {
    "city": {"type": "string"}, "state": {"type": "string"},
    "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}}}
_AREA_PARAMS = {"type": "object", "properties": {
    "shape": {"type": "string"}, "dimensions": {"type": "object"},
    "precision": {"type": "integer"}}}
QC_TOOLS = [{"type": "function", "function": {"name": n, "parameters": p}}
            for n, p in (("get_current_weather", _WEATHER_PARAMS), ("calculate_area", _AREA_PARAMS))]
QC = {"tools": QC_TOOLS}


def _qc(name, *params, wrap=True):
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    call = f"<function={name}>\n{body}</function>"
    return f"<tool_call>\n{call}\n</tool_call>" if wrap else call


def _qc_weather(city, state, unit=None):
    params = [("city", city), ("state", state)] + ([("unit", unit)] if unit else [])
    return _qc("get_current_weather", *params), (
        "get_current_weather", dict(params))


_DALLAS, DALLAS = _qc_weather("Dallas", "TX", "fahrenheit")
_ORLANDO, ORLANDO = _qc_weather("Orlando", "FL", "fahrenheit")
_ORLANDO_C, ORLANDO_C = _qc_weather("Orlando", "FL", "celsius")
_CIRCLE = _qc("calculate_area", ("shape", "circle"), ("dimensions", '{"radius": 15.5}'),
              ("precision", "3"))
CIRCLE = ("calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3})
_TYPES_TOOLS = [{"type": "function", "function": {"name": "test_types", "parameters": {
    "type": "object", "properties": {
        "int_param": {"type": "integer"}, "float_param": {"type": "float"},
        "bool_param": {"type": "boolean"}, "str_param": {"type": "string"},
        "obj_param": {"type": "object"}}}}}]
_ANYOF_TOOLS = [{"type": "function", "function": {"name": "test_anyof", "parameters": {
    "type": "object", "properties": {
        "anyof_int": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
        "anyof_str": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "anyof_array": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                  {"type": "null"}]},
        "anyof_obj": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        "type_as_array": {"type": ["integer", "null"]},
        "multi_non_null": {"anyOf": [{"type": "string"}, {"type": "integer"},
                                     {"type": "null"}]}}}}}]

CASES += [
    ("vllm_qwen3_coder_no_tools", "qwen3_coder", "This is a test response without any tool calls",
     QC, expect(content="This is a test response without any tool calls")),
    ("vllm_qwen3_coder_single_tool", "qwen3_coder", _DALLAS, QC, expect(tool_calls=[DALLAS])),
    ("vllm_qwen3_coder_single_tool_with_content", "qwen3_coder",
     "Sure! Let me check the weather for you." + _DALLAS, QC,
     expect(content="Sure! Let me check the weather for you.", tool_calls=[DALLAS])),
    ("vllm_qwen3_coder_multiline_param", "qwen3_coder",
     _qc("calculate_area", ("shape", "rectangle"), ("dimensions", '{"width": 10, \n "height": 20}'),
         ("precision", "2")), QC,
     expect(tool_calls=[("calculate_area", {"shape": "rectangle",
                                            "dimensions": {"width": 10, "height": 20},
                                            "precision": 2})])),
    ("vllm_qwen3_coder_parallel_tools", "qwen3_coder", _DALLAS + "\n" + _ORLANDO, QC,
     expect(tool_calls=[DALLAS, ORLANDO])),
    ("vllm_qwen3_coder_parallel_tools_other_unit", "qwen3_coder", _DALLAS + "\n" + _ORLANDO_C, QC,
     expect(tool_calls=[DALLAS, ORLANDO_C])),
    ("vllm_qwen3_coder_typed_params", "qwen3_coder",
     "Let me calculate that area for you." + _CIRCLE, QC,
     expect(content="Let me calculate that area for you.", tool_calls=[CIRCLE])),
    ("vllm_qwen3_coder_fallback_no_tool_call_tags", "qwen3_coder",
     _qc("get_current_weather", ("city", "Dallas"), ("state", "TX"), wrap=False), QC,
     expect(tool_calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})])),
    ("vllm_qwen3_coder_type_conversion", "qwen3_coder",
     _qc("test_types", ("int_param", "42"), ("float_param", "3.14"), ("bool_param", "true"),
         ("str_param", "hello world"), ("obj_param", '{"key": "value"}')),
     {"tools": _TYPES_TOOLS},
     expect(tool_calls=[("test_types", {"int_param": 42, "float_param": 3.14, "bool_param": True,
                                        "str_param": "hello world",
                                        "obj_param": {"key": "value"}})])),
    ("vllm_qwen3_coder_anyof_type_conversion", "qwen3_coder",
     _qc("test_anyof", ("anyof_int", "5"), ("anyof_str", "hello"),
         ("anyof_array", '["a", "b", "c"]'), ("anyof_obj", '{"key": "value"}'),
         ("type_as_array", "42"), ("multi_non_null", "some text")),
     {"tools": _ANYOF_TOOLS},
     expect(tool_calls=[("test_anyof", {"anyof_int": 5, "anyof_str": "hello",
                                        "anyof_array": ["a", "b", "c"],
                                        "anyof_obj": {"key": "value"}, "type_as_array": 42,
                                        "multi_non_null": "some text"})])),
    ("vllm_qwen3_coder_missing_closing_parameter_tag", "qwen3_coder",
     "Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n"
     "<parameter=city>\nDallas\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\n"
     "fahrenheit\n</parameter>\n</function>\n</tool_call>", QC,
     expect(content="Let me check the weather for you:\n", tool_calls=[DALLAS])),
]

# vLLM tests/tool_parsers/test_pythonic_tool_parser.py (Llama 3.2 style: the reply is the
# bracketed call list).
_SIMPLE = "get_weather(city='San Francisco', metric='celsius')"
SIMPLE = ("get_weather", {"city": "San Francisco", "metric": "celsius"})
_MORE_TYPES = ("register_user(name='John Doe', age=37, address={'city': 'San Francisco', "
               "'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'])")
MORE_TYPES = ("register_user", {"name": "John Doe", "age": 37,
                                "address": {"city": "San Francisco", "state": "CA"},
                                "role": None, "passed_test": True, "aliases": ["John", "Johnny"]})
_ESCAPED = r"""get_weather(city='Martha\'s Vineyard', metric='\"cool units\"')"""
ESCAPED = ("get_weather", {"city": "Martha's Vineyard", "metric": '"cool units"'})

CASES += [
    ("vllm_pythonic_no_tool_call", "pythonic", "How can I help you today?", {},
     expect(content="How can I help you today?")),
    ("vllm_pythonic_simple", "pythonic", f"[{_SIMPLE}]", {}, expect(tool_calls=[SIMPLE])),
    ("vllm_pythonic_more_types", "pythonic", f"[{_MORE_TYPES}]", {},
     expect(tool_calls=[MORE_TYPES])),
    ("vllm_pythonic_parameterless", "pythonic", "[get_weather()]", {},
     expect(tool_calls=[("get_weather", {})])),
    ("vllm_pythonic_empty_dict", "pythonic", "[do_something_cool(additional_data={})]", {},
     expect(tool_calls=[("do_something_cool", {"additional_data": {}})])),
    ("vllm_pythonic_empty_list", "pythonic", "[do_something_cool(steps=[])]", {},
     expect(tool_calls=[("do_something_cool", {"steps": []})])),
    ("vllm_pythonic_escaped_string", "pythonic", f"[{_ESCAPED}]", {},
     expect(tool_calls=[ESCAPED])),
    ("vllm_pythonic_parallel_calls", "pythonic", f"[{_SIMPLE}, {_MORE_TYPES}]", {},
     expect(tool_calls=[SIMPLE, MORE_TYPES])),
    ("vllm_pythonic_large_steps", "pythonic",
     f"[{_SIMPLE}, get_weather(), do_something_cool(steps=[])]", {},
     expect(tool_calls=[SIMPLE, ("get_weather", {}), ("do_something_cool", {"steps": []})])),
    # vLLM drops a call whose value has no JSON form (bytes, 1e999) and keeps its siblings;
    # ours keeps them too and reports the dropped call as a problem with its text.
    ("vllm_pythonic_bad_sibling_bytes", "pythonic", f"[bad(x=b'z'), {_SIMPLE}]", {},
     expect(tool_calls=[SIMPLE], problems=["bad(x=b'z')"])),
    ("vllm_pythonic_non_finite_argument", "pythonic", f"[calc(x=1e999), {_SIMPLE}]", {},
     expect(tool_calls=[SIMPLE], problems=["calc(x=1e999)"])),
    # vLLM drops the sibling with a stray quote; ours repairs it (a quote not followed by
    # ",)]}:" is text, see pythonic.py), so both calls run.
    ("vllm_pythonic_good_call_survives_unparsable_sibling", "pythonic",
     f"[{_SIMPLE}, f(a='x 'y', b='z')]", {},
     expect(tool_calls=[SIMPLE, ("f", {"a": "x 'y", "b": "z"})])),
    ("vllm_pythonic_unrecoverable_block", "pythonic", "[f(a='x 'y' 'z), g(b='p 'q' 'r)]", {},
     expect(content="[f(a='x 'y' 'z), g(b='p 'q' 'r)]")),
    ("vllm_pythonic_mismatched_brackets", "pythonic", "[foo(x=1])]", {},
     expect(content="[foo(x=1])]")),
]

# vLLM tests/tool_parsers/test_llama4_pythonic_tool_parser.py: the same lists, optionally
# inside <|python_start|> ... <|python_end|>.
_LA = "get_weather(city='LA', metric='C')"
LA = ("get_weather", {"city": "LA", "metric": "C"})
DOE = ("register_user", {"name": "Doe", "age": 9})
CASES += [
    ("vllm_llama4_pythonic_more_types", "pythonic",
     "[register_user(name='Doe', age=9, address={'city': 'LA', 'state': 'CA'}, role=None, "
     "passed_test=True, aliases=['John', 'Johnny'])]", {},
     expect(tool_calls=[("register_user", {"name": "Doe", "age": 9,
                                           "address": {"city": "LA", "state": "CA"},
                                           "role": None, "passed_test": True,
                                           "aliases": ["John", "Johnny"]})])),
    ("vllm_llama4_pythonic_parallel_no_spaces", "pythonic",
     "[get_weather(city='LA',metric='C'),register_user(name='Doe',age=9)]", {},
     expect(tool_calls=[LA, DOE])),
    ("vllm_llama4_pythonic_python_tag", "pythonic", f"<|python_start|>[{_LA}]<|python_end|>", {},
     expect(tool_calls=[LA])),
    ("vllm_llama4_pythonic_python_tag_unclosed", "pythonic",
     f"<|python_start|>[{_LA},register_user(name='Doe', age=9)]", {},
     expect(tool_calls=[LA, DOE])),
    ("vllm_llama4_pythonic_python_tag_three_calls", "pythonic",
     f"<|python_start|>[{_LA}, get_weather(), do_something_cool(steps=[])]<|python_end|>", {},
     expect(tool_calls=[LA, ("get_weather", {}), ("do_something_cool", {"steps": []})])),
    ("vllm_llama4_pythonic_bad_sibling_bytes", "pythonic",
     f"<|python_start|>[bad(x=b'z'), {_LA}]<|python_end|>", {},
     expect(tool_calls=[LA], problems=["bad(x=b'z')"])),
    ("vllm_llama4_pythonic_non_finite_argument", "pythonic",
     f"<|python_start|>[calc(x=1e999), {_LA}]<|python_end|>", {},
     expect(tool_calls=[LA], problems=["calc(x=1e999)"])),
    # Unmarked, a list that does not read is text (vllm_pythonic_mismatched_brackets); inside
    # the call markers it was meant as calls, so ours reports the block as a problem.
    ("vllm_llama4_pythonic_mismatched_brackets", "pythonic",
     "<|python_start|>[foo(x=1])]<|python_end|>", {},
     expect(problems=["<|python_start|>[foo(x=1])]<|python_end|>"])),
]

# vLLM tests/tool_parsers/test_longcat_tool_parser.py (common_tests config).
_LC = "<longcat_tool_call>", "</longcat_tool_call>"
_TOKYO = '{"name": "get_weather", "arguments": {"city": "Tokyo"}}'
TOKYO = ("get_weather", {"city": "Tokyo"})
CASES += [
    ("vllm_longcat_no_tool_calls", "longcat",
     "This is a regular response without any tool calls.", {},
     expect(content="This is a regular response without any tool calls.")),
    ("vllm_longcat_single_tool_call", "longcat", _LC[0] + _TOKYO + _LC[1], {},
     expect(tool_calls=[TOKYO])),
    ("vllm_longcat_parallel_tool_calls", "longcat",
     _LC[0] + _TOKYO + _LC[1] + "\n" + _LC[0]
     + '{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}' + _LC[1], {},
     expect(content="\n", tool_calls=[TOKYO, ("get_time", {"timezone": "Asia/Tokyo"})])),
    ("vllm_longcat_various_data_types", "longcat",
     _LC[0] + '{\n  "name": "test_function",\n  "arguments": {\n    "string_field": "hello",\n'
     '    "int_field": 42,\n    "float_field": 3.14,\n    "bool_field": true,\n'
     '    "null_field": null,\n    "array_field": ["a", "b", "c"],\n'
     '    "object_field": {"nested": "value"},\n    "empty_array": [],\n'
     '    "empty_object": {}\n  }\n}' + _LC[1], {},
     expect(tool_calls=[("test_function", {
         "string_field": "hello", "int_field": 42, "float_field": 3.14, "bool_field": True,
         "null_field": None, "array_field": ["a", "b", "c"], "object_field": {"nested": "value"},
         "empty_array": [], "empty_object": {}})])),
    ("vllm_longcat_empty_arguments", "longcat",
     _LC[0] + '{"name": "refresh", "arguments": {}}' + _LC[1], {},
     expect(tool_calls=[("refresh", {})])),
    ("vllm_longcat_surrounding_text", "longcat",
     "Let me check the weather for you.\n" + _LC[0] + _TOKYO + _LC[1] + "\nHere is the result.",
     {}, expect(content="Let me check the weather for you.\n\nHere is the result.",
                tool_calls=[TOKYO])),
    ("vllm_longcat_escaped_strings", "longcat",
     _LC[0] + '{\n  "name": "test_function",\n  "arguments": {\n'
     '    "quoted": "He said \\"hello\\"",\n    "path": "C:\\\\Users\\\\file.txt",\n'
     '    "newline": "line1\\nline2",\n    "unicode": "emoji: 🎉"\n  }\n}' + _LC[1], {},
     expect(tool_calls=[("test_function", {"quoted": 'He said "hello"',
                                           "path": "C:\\Users\\file.txt",
                                           "newline": "line1\nline2",
                                           "unicode": "emoji: 🎉"})])),
    ("vllm_longcat_malformed_cut_off", "longcat",
     _LC[0] + '{"name": "func", "arguments": {', {},
     expect(problems=[_LC[0] + '{"name": "func", "arguments": {'])),
    ("vllm_longcat_malformed_arguments_not_a_dict", "longcat",
     _LC[0] + '{"name": "func", "arguments": "not a dict"}' + _LC[1], {},
     expect(problems=[_LC[0] + '{"name": "func", "arguments": "not a dict"}' + _LC[1]])),
    ("vllm_longcat_malformed_invalid_json", "longcat",
     "Some text with " + _LC[0] + "invalid json", {},
     expect(content="Some text with ", problems=[_LC[0] + "invalid json"])),
]

# vLLM tests/tool_parsers/test_glm47_moe_tool_parser.py.
_GLM_TOOLS = [{"type": "function", "function": {"name": "get_current_date", "parameters": {}}},
              {"type": "function", "function": {"name": "get_weather", "parameters": {
                  "type": "object", "properties": {"city": {"type": "string"},
                                                   "date": {"type": "string"}}}}}]
GLM = {"tools": _GLM_TOOLS}
_BEIJING = ("<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value>"
            "</tool_call>")
BEIJING = ("get_weather", {"city": "Beijing"})
DATE = ("get_current_date", {})
CASES += [
    ("vllm_glm47_no_tool_call", "glm47", "This is a plain response.", GLM,
     expect(content="This is a plain response.")),
    ("vllm_glm47_zero_arg_inline", "glm47", "<tool_call>get_current_date</tool_call>", GLM,
     expect(tool_calls=[DATE])),
    ("vllm_glm47_zero_arg_newline", "glm47", "<tool_call>get_current_date\n</tool_call>", GLM,
     expect(tool_calls=[DATE])),
    ("vllm_glm47_args_same_line", "glm47", _BEIJING, GLM, expect(tool_calls=[BEIJING])),
    ("vllm_glm47_args_with_newlines", "glm47",
     "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
     "</tool_call>", GLM, expect(tool_calls=[BEIJING])),
    ("vllm_glm47_content_before", "glm47", "Checking.<tool_call>get_current_date</tool_call>",
     GLM, expect(content="Checking.", tool_calls=[DATE])),
    ("vllm_glm47_multiple", "glm47",
     _BEIJING + _BEIJING.replace("Beijing", "Shanghai"), GLM,
     expect(tool_calls=[BEIJING, ("get_weather", {"city": "Shanghai"})])),
    ("vllm_glm47_whitespace_before_call", "glm47",
     "  \n  <tool_call>get_current_date</tool_call>", GLM,
     expect(content="  \n  ", tool_calls=[DATE])),
]

# vLLM tests/tool_parsers/test_functiongemma_tool_parser.py. Its request offers no tools.
_FG = "<start_function_call>", "<end_function_call>"
CASES += [
    ("vllm_function_gemma_no_tool_calls", "function_gemma", "Hello, how can I help you today?",
     {}, expect(content="Hello, how can I help you today?")),
    ("vllm_function_gemma_single_tool_call", "function_gemma",
     _FG[0] + "call:get_weather{location:<escape>London<escape>}" + _FG[1], {},
     expect(tool_calls=[("get_weather", {"location": "London"})])),
    ("vllm_function_gemma_multiple_arguments", "function_gemma",
     _FG[0] + "call:get_weather{location:<escape>San Francisco<escape>,"
     "unit:<escape>celsius<escape>}" + _FG[1], {},
     expect(tool_calls=[("get_weather", {"location": "San Francisco", "unit": "celsius"})])),
    ("vllm_function_gemma_text_before_tool_call", "function_gemma",
     "Let me check the weather for you. " + _FG[0]
     + "call:get_weather{location:<escape>Paris<escape>}" + _FG[1], {},
     expect(content="Let me check the weather for you. ",
            tool_calls=[("get_weather", {"location": "Paris"})])),
    ("vllm_function_gemma_multiple_tool_calls", "function_gemma",
     _FG[0] + "call:get_weather{location:<escape>London<escape>}" + _FG[1]
     + _FG[0] + "call:get_time{timezone:<escape>UTC<escape>}" + _FG[1], {},
     expect(tool_calls=[("get_weather", {"location": "London"}),
                        ("get_time", {"timezone": "UTC"})])),
    ("vllm_function_gemma_empty_arguments", "function_gemma",
     _FG[0] + "call:refresh{}" + _FG[1], {}, expect(tool_calls=[("refresh", {})])),
    ("vllm_function_gemma_two_keys", "function_gemma",
     _FG[0] + "call:get_weather{city:<escape>NYC<escape>,unit:<escape>celsius<escape>}" + _FG[1],
     {}, expect(tool_calls=[("get_weather", {"city": "NYC", "unit": "celsius"})])),
    ("vllm_function_gemma_spaces_in_value", "function_gemma",
     _FG[0] + "call:say{message:<escape>Hello World<escape>}" + _FG[1], {},
     expect(tool_calls=[("say", {"message": "Hello World"})])),
]

# More of test_qwen3coder_tool_parser.py: its regression cases.
_NO_GT = ("<tool_call>\n<function=get_current_weather\n<parameter=city>Dallas</parameter>\n"
          "</function>\n</tool_call>")
_BAD_THEN_GOOD = ("<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n")
CASES += [
    ("vllm_qwen3_coder_missing_opening_tag", "qwen3_coder",
     "I'll check the weather for you.\n\n"
     + _qc("get_current_weather", ("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit"),
           wrap=False) + "\n</tool_call>", QC,
     expect(content="I'll check the weather for you.\n\n", tool_calls=[DALLAS])),
    # vLLM only asks that a name missing its ">" not crash (and drops that call); ours ends
    # the name at the newline or "<", as mlx-lm reads it (qwen3_coder.py), so the call runs.
    ("vllm_qwen3_coder_malformed_no_gt", "qwen3_coder", _NO_GT, QC,
     expect(tool_calls=[("get_current_weather", {"city": "Dallas"})])),
    ("vllm_qwen3_coder_bad_call_then_good", "qwen3_coder",
     _BAD_THEN_GOOD + "<tool_call>\n<function=get_current_weather>\n"
     "<parameter=city>Dallas</parameter>\n<parameter=state>TX</parameter>\n</function>\n"
     "</tool_call>", QC,
     expect(tool_calls=[("bad_func_no_gt", {}),
                        ("get_current_weather", {"city": "Dallas", "state": "TX"})])),
    ("vllm_qwen3_coder_anyof_object_not_double_encoded", "qwen3_coder",
     '<tool_call>\n<function=update_record>\n<parameter=data>{"key": "value", "count": 42}'
     "</parameter>\n</function>\n</tool_call>",
     {"tools": [{"type": "function", "function": {"name": "update_record", "parameters": {
         "type": "object", "properties": {"data": {"anyOf": [{"type": "object"},
                                                             {"type": "null"}]}}}}}]},
     expect(tool_calls=[("update_record", {"data": {"key": "value", "count": 42}})])),
    ("vllm_qwen3_coder_string_not_double_serialized", "qwen3_coder",
     "<tool_call>\n<function=greet>\n<parameter=message>hello world</parameter>\n</function>\n"
     "</tool_call>",
     {"tools": [{"type": "function", "function": {"name": "greet", "parameters": {
         "type": "object", "properties": {"message": {"type": "string"}}}}}]},
     expect(tool_calls=[("greet", {"message": "hello world"})])),
]

# vLLM tests/tool_parsers/test_glm4_moe_tool_parser.py (GLM-4.5/4.6 write the same pairs as
# GLM-4.7, each on its own line). Its request offers get_weather only.
GLM45 = {"tools": [_GLM_TOOLS[1]], "starts_in_reasoning": False}


def _glm45(name, *pairs, indent="    "):
    body = "".join(f"{indent}<arg_key>{k}</arg_key>\n{indent}<arg_value>{v}</arg_value>\n"
                   for k, v in pairs)
    return f"<tool_call>{name}\n{body}{indent}</tool_call>"


def _glm45_weather(city, state, unit):
    return _glm45("get_current_weather", ("city", city), ("state", state), ("unit", unit)), (
        "get_current_weather", {"city": city, "state": state, "unit": unit})


_G_DALLAS, G_DALLAS = _glm45_weather("Dallas", "TX", "fahrenheit")
_G_ORLANDO, G_ORLANDO = _glm45_weather("Orlando", "FL", "fahrenheit")
_G_SEATTLE, G_SEATTLE = _glm45_weather("Seattle", "WA", "celsius")
_G_NY, G_NY = _glm45_weather("New York", "NY", "celsius")
_G_BEIJING = _glm45("get_weather", ("city", "Beijing"), ("date", "2025-08-01"), indent="")
G_BEIJING = ("get_weather", {"city": "Beijing", "date": "2025-08-01"})
CASES += [
    ("vllm_glm4_moe_no_tools", "glm47", "This is a test", GLM45, expect(content="This is a test")),
    ("vllm_glm4_moe_single_tool_call", "glm47", _G_DALLAS, GLM45, expect(tool_calls=[G_DALLAS])),
    # Whitespace between GLM's calls is its template's markup (call_gap_is_markup), dropped
    # as vLLM drops it.
    ("vllm_glm4_moe_multiple_tool_calls", "glm47", _G_DALLAS + "\n    " + _G_ORLANDO, GLM45,
     expect(tool_calls=[G_DALLAS, G_ORLANDO])),
    ("vllm_glm4_moe_content_before", "glm47", "I'll help you check the weather. " + _G_SEATTLE,
     GLM45, expect(content="I'll help you check the weather. ", tool_calls=[G_SEATTLE])),
    ("vllm_glm4_moe_mixed_args", "glm47", _G_NY, GLM45, expect(tool_calls=[G_NY])),
    ("vllm_glm4_moe_date_arg", "glm47",
     "I will help you get the weather."
     + _glm45("get_weather", ("city", "Beijing"), ("date", "2025-08-01")), GLM45,
     expect(content="I will help you get the weather.", tool_calls=[G_BEIJING])),
    # vLLM's tool parser leaves the think block in content; our one splitter reads it.
    ("vllm_glm4_moe_with_thinking_tags", "glm47",
     "<think>I want to get the weather.</think>\n\nI will help you get the weather.\n"
     + _G_BEIJING, GLM45,
     expect("I want to get the weather.", "\n\nI will help you get the weather.\n",
            tool_calls=[G_BEIJING])),
    ("vllm_glm4_moe_empty_arguments", "glm47", "<tool_call>get_current_time\n</tool_call>",
     GLM45, expect(tool_calls=[("get_current_time", {})])),
    # vLLM's content is only the text before the first call; ours keeps the text between.
    ("vllm_glm4_moe_mixed_content", "glm47",
     "I will help you get the weather info.\n\n" + _G_BEIJING
     + "\n\nmeaningwhile, I will also check the weather in Shanghai.\n\n"
     + _G_BEIJING.replace("Beijing", "Shanghai"), GLM45,
     expect(content="I will help you get the weather info.\n\n\n\nmeaningwhile, I will also "
                    "check the weather in Shanghai.\n\n",
            tool_calls=[G_BEIJING, ("get_weather", {"city": "Shanghai", "date": "2025-08-01"})])),
    ("vllm_glm4_moe_special_characters", "glm47",
     _glm45("send_message", ("recipient", "Amy"), ("message", "It is a nice day"),
            ("priority", "high"), indent=""), GLM45,
     expect(tool_calls=[("send_message", {"recipient": "Amy", "message": "It is a nice day",
                                          "priority": "high"})])),
    # The reply ends after a whole </arg_value> with no </tool_call>: vLLM keeps it as
    # content; ours reads the call (the family's whole_ends: the call's text is complete).
    ("vllm_glm4_moe_incomplete_tool_call", "glm47", _G_BEIJING[:-len("</tool_call>")].rstrip(),
     GLM45, expect(tool_calls=[G_BEIJING])),
    # vLLM accepts a partial call or none; ours makes the block a problem with its text: a
    # key without its </arg_key> would be dropped, and the call run without an argument the
    # model wrote (glm47.py says why it is not recovered).
    ("vllm_glm4_moe_malformed_xml", "glm47",
     "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Seattle</arg_value>\n"
     "<arg_key>incomplete_arg\n<arg_value>value</arg_value>\n</tool_call>", GLM45,
     expect(problems=["<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Seattle"
                      "</arg_value>\n<arg_key>incomplete_arg\n<arg_value>value</arg_value>\n"
                      "</tool_call>"])),
]
CASES += [
    ("vllm_glm4_moe_numeric_deserialization", "glm47",
     "<tool_call>calculate\n<arg_key>operation</arg_key>\n<arg_value>add</arg_value>\n"
     "<arg_key>a</arg_key>\n<arg_value>42</arg_value>\n<arg_key>b</arg_key>\n"
     "<arg_value>3.14</arg_value>\n<arg_key>enabled</arg_key>\n<arg_value>true</arg_value>\n"
     "</tool_call>", GLM45,
     expect(tool_calls=[("calculate", {"operation": "add", "a": 42, "b": 3.14,
                                       "enabled": True})])),
    ("vllm_glm4_moe_whitespace_preserved_in_string", "glm47",
     "<tool_call>apply_diff\n<arg_key>s</arg_key>\n<arg_value>    indented code    </arg_value>\n"
     "</tool_call>",
     {"tools": [{"type": "function", "function": {"name": "apply_diff", "parameters": {
         "type": "object", "required": ["s"], "properties": {"s": {"type": "string"}}}}}]},
     expect(tool_calls=[("apply_diff", {"s": "    indented code    "})])),
    ("vllm_glm4_moe_zero_argument", "glm47", "<tool_call>get_time\n</tool_call>", GLM45,
     expect(tool_calls=[("get_time", {})])),
    # An opened call with nothing after it: vLLM keeps it as content; ours, a problem.
    ("vllm_glm4_moe_no_regex_match", "glm47", "<tool_call>   ", GLM45,
     expect(problems=["<tool_call>   "])),
    ("vllm_glm4_moe_unicode_preserved", "glm47",
     "<tool_call>send_message\n<arg_key>greeting</arg_key>\n<arg_value>你好世界</arg_value>\n"
     "<arg_key>emoji</arg_key>\n<arg_value>🎉</arg_value>\n</tool_call>", GLM45,
     expect(tool_calls=[("send_message", {"greeting": "你好世界", "emoji": "🎉"})])),
    ("vllm_glm4_moe_escape_in_string", "glm47",
     '<tool_call>send_message\n<arg_key>message</arg_key><arg_value>Hello "world"\nNew line'
     "</arg_value></tool_call>", GLM45,
     expect(tool_calls=[("send_message", {"message": 'Hello "world"\nNew line'})])),
    ("vllm_glm4_moe_empty_tool_call", "glm47", "<tool_call></tool_call>", GLM45,
     expect(problems=["<tool_call></tool_call>"])),
]

# vLLM tests/tool_parsers/test_deepseekv4_tool_parser.py (DSML; values marked string="true").
_V4 = "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"


def _v4(name, block="tool_calls", **params):
    body = "".join(f'<｜DSML｜parameter name="{k}" string="true">{v}</｜DSML｜parameter>\n'
                   for k, v in params.items())
    return (f'<｜DSML｜{block}>\n<｜DSML｜invoke name="{name}">\n{body}</｜DSML｜invoke>\n'
            f"</｜DSML｜{block}>")


CASES += [
    ("vllm_deepseek_v4_extract_tool_calls", "deepseek_v4",
     "Let me check. " + _v4("get_weather", location="Beijing", unit="celsius"), NOT_THINKING,
     expect(content="Let me check. ",
            tool_calls=[("get_weather", {"location": "Beijing", "unit": "celsius"})])),
    # V4's block is "tool_calls"; V3.2's "function_calls" block is another family's.
    ("vllm_deepseek_v4_function_calls_block_is_not_accepted", "deepseek_v4",
     _v4("search", block="function_calls", query="vllm"), NOT_THINKING,
     expect(content=_v4("search", block="function_calls", query="vllm"))),
    ("vllm_deepseek_v4_streaming_complete_invoke", "deepseek_v4",
     _v4("search", query="deepseek v4"), NOT_THINKING,
     expect(tool_calls=[("search", {"query": "deepseek v4"})])),
]

# vLLM tests/tool_parsers/test_gemma4_tool_parser.py: its argument-reader cases, each as the
# body of one call, then its extraction cases. Its request offers no tools.
_Q = '<|"|>'


def _g4(body, name="f"):
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


CASES += [
    (f"vllm_gemma4_args_{name}", "gemma4", _g4(body), {}, expect(tool_calls=[("f", args)]))
    for name, body, args in [
        ("empty", "", {}),
        ("whitespace_only", "   ", {}),
        ("single_string", f"location:{_Q}Paris{_Q}", {"location": "Paris"}),
        ("string_with_comma", f"location:{_Q}Paris, France{_Q}", {"location": "Paris, France"}),
        ("multiple_strings", f"location:{_Q}San Francisco{_Q},unit:{_Q}celsius{_Q}",
         {"location": "San Francisco", "unit": "celsius"}),
        ("integer", "count:42", {"count": 42}),
        ("float", "score:3.14", {"score": 3.14}),
        ("true", "flag:true", {"flag": True}),
        ("false", "flag:false", {"flag": False}),
        ("null", "param:null", {"param": None}),
        ("mixed_types", f"name:{_Q}test{_Q},count:42,active:true,score:3.14",
         {"name": "test", "count": 42, "active": True, "score": 3.14}),
        ("nested_object", f"nested:{{inner:{_Q}value{_Q}}}", {"nested": {"inner": "value"}}),
        ("string_delimited_dict_key", f"record_map:{{{_Q}3{_Q}:{_Q}new text{_Q}}}",
         {"record_map": {"3": "new text"}}),
        ("nested_string_delimited_dict_key", f"outer:{{inner:{{{_Q}3{_Q}:{_Q}new text{_Q}}}}}",
         {"outer": {"inner": {"3": "new text"}}}),
        ("array_of_strings", f"items:[{_Q}a{_Q},{_Q}b{_Q}]", {"items": ["a", "b"]}),
        ("trailing_dot_float", "left:108.,right:22.8", {"left": 108.0, "right": 22.8}),
        ("array_bare_values", "items:[42,true,3.14]", {"items": [42, True, 3.14]}),
        ("array_empty", "items:[]", {"items": []}),
    ]
] + [
    ("vllm_gemma4_no_tool_calls", "gemma4", "Hello, how can I help you today?", {},
     expect(content="Hello, how can I help you today?")),
    ("vllm_gemma4_single_tool_call", "gemma4", _g4(f"location:{_Q}London{_Q}", "get_weather"),
     {}, expect(tool_calls=[("get_weather", {"location": "London"})])),
    # vLLM strips the space before the call; ours keeps the text as written.
    ("vllm_gemma4_text_before_tool_call", "gemma4",
     "Let me check the weather for you. " + _g4(f"location:{_Q}Paris{_Q}", "get_weather"), {},
     expect(content="Let me check the weather for you. ",
            tool_calls=[("get_weather", {"location": "Paris"})])),
    ("vllm_gemma4_multiple_tool_calls", "gemma4",
     _g4(f"location:{_Q}London{_Q}", "get_weather") + _g4(f"location:{_Q}London{_Q}", "get_time"),
     {}, expect(tool_calls=[("get_weather", {"location": "London"}),
                            ("get_time", {"location": "London"})])),
    ("vllm_gemma4_nested_arguments", "gemma4",
     _g4(f"nested:{{inner:{_Q}value{_Q}}},list:[{_Q}a{_Q},{_Q}b{_Q}]", "complex_function"), {},
     expect(tool_calls=[("complex_function", {"nested": {"inner": "value"},
                                              "list": ["a", "b"]})])),
    ("vllm_gemma4_number_and_boolean", "gemma4", _g4("is_active:true,count:42,score:3.14",
                                                     "set_status"), {},
     expect(tool_calls=[("set_status", {"is_active": True, "count": 42, "score": 3.14})])),
    # A call cut off inside a string: vLLM keeps it as content; ours, a problem.
    ("vllm_gemma4_incomplete_tool_call", "gemma4",
     f"<|tool_call>call:get_weather{{location:{_Q}London", {},
     expect(problems=[f"<|tool_call>call:get_weather{{location:{_Q}London"])),
    ("vllm_gemma4_hyphenated_function_name", "gemma4",
     _g4(f"location:{_Q}London{_Q}", "get-weather"), {},
     expect(tool_calls=[("get-weather", {"location": "London"})])),
    ("vllm_gemma4_dotted_function_name", "gemma4", _g4(f"location:{_Q}London{_Q}", "weather.get"),
     {}, expect(tool_calls=[("weather.get", {"location": "London"})])),
    ("vllm_gemma4_no_arguments", "gemma4", _g4("", "get_status"), {},
     expect(tool_calls=[("get_status", {})])),
]
# Its streaming cases: each reply whole (every chunking of it is checked here).
_HTML = ('<!DOCTYPE html>\n<html lang="zh-CN">\n<head>\n    <meta charset="UTF-8">\n'
         '    <meta name="viewport" content="width=device-width">\n')
CASES += [
    ("vllm_gemma4_stream_value_with_comma", "gemma4",
     _g4(f"location:{_Q}Paris, France{_Q}", "get_weather"), {},
     expect(tool_calls=[("get_weather", {"location": "Paris, France"})])),
    ("vllm_gemma4_stream_nested_bool", "gemma4", _g4("input:{all:true}", "search"), {},
     expect(tool_calls=[("search", {"input": {"all": True}})])),
    ("vllm_gemma4_stream_delimiter_in_value", "gemma4",
     _g4(f"content:{_Q}Buy milk{_Q}", "todowrite"), {},
     expect(tool_calls=[("todowrite", {"content": "Buy milk"})])),
    ("vllm_gemma4_stream_text_after_call", "gemma4",
     _g4(f"location:{_Q}Paris{_Q}", "get_weather") + "<div>", {},
     expect(content="<div>", tool_calls=[("get_weather", {"location": "Paris"})])),
    ("vllm_gemma4_stream_html_argument", "gemma4",
     _g4(f"path:{_Q}index.html{_Q},content:{_Q}{_HTML}{_Q}", "write_file"), {},
     expect(tool_calls=[("write_file", {"path": "index.html", "content": _HTML})])),
    ("vllm_gemma4_stream_trailing_bare_bool", "gemma4",
     _g4(f"file_path:{_Q}src/env.py{_Q},old_string:{_Q}old_val{_Q},new_string:{_Q}new_val{_Q},"
         "replace_all:false", "Edit"), {},
     expect(tool_calls=[("Edit", {"file_path": "src/env.py", "old_string": "old_val",
                                  "new_string": "new_val", "replace_all": False})])),
]
_G4_BROKEN = [f"key:{_Q}unterminated", "items:[42,]trailing]", ":[t:[]"]
CASES += [
    ("vllm_gemma4_args_empty_value", "gemma4", _g4("key:"), {},
     expect(tool_calls=[("f", {"key": ""})])),
    ("vllm_gemma4_args_string_element_with_closing_bracket", "gemma4",
     _g4(f"items:[[{_Q}a]b{_Q},{_Q}c{_Q}],{_Q}tail{_Q}]"), {},
     expect(tool_calls=[("f", {"items": [["a]b", "c"], "tail"]})])),
] + [
    # vLLM's reader salvages what it can from these (the string to the end, the array up to
    # the stray bracket, any dict at all); ours runs no call on arguments that do not read
    # and reports the call as a problem with its text.
    (f"vllm_gemma4_args_broken_{i}", "gemma4", _g4(body), {}, expect(problems=[_g4(body)]))
    for i, body in enumerate(_G4_BROKEN)
]

# vLLM tests/tool_parsers/test_qwen36_bugs.py (Qwen3.5/3.6 share Qwen3-Coder's XML).
_PICK_TOOLS = [{"type": "function", "function": {"name": "pick", "parameters": {
    "type": "object", "properties": {"items": {"type": "array"}}}}}]
_CITY_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
CASES += [
    ("vllm_qwen36_array_with_json_bool", "qwen3_coder",
     '<tool_call>\n<function=pick>\n<parameter=items>\n["a", "b", 1, true]\n</parameter>\n'
     "</function>\n</tool_call>", {"tools": _PICK_TOOLS},
     expect(tool_calls=[("pick", {"items": ["a", "b", 1, True]})])),
    ("vllm_qwen36_two_tool_calls_in_one_chunk", "qwen3_coder",
     _qc("get_weather", ("city", "Paris")) + "\n" + _qc("get_weather", ("city", "London")),
     {"tools": _CITY_TOOLS},
     expect(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})])),
]

# vLLM tests/tool_parsers/test_qwen3_xml_coder_shared.py: the cases its two Qwen3 XML
# parsers share that the ones above do not already hold.


def _one_param_tool(name, param, schema):
    return {"tools": [{"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {param: schema}}}}]}


_PROCESS = {"tools": [{"type": "function", "function": {"name": "process", "parameters": {
    "type": "object", "properties": {"name": {"type": "string"},
                                     "data": {"type": "object"}}}}}]}
CASES += [
    ("vllm_qwen3_shared_object_as_python_repr", "qwen3_coder",
     _qc("test_types", ("obj_param", "{'key': 'value'}")), {"tools": _TYPES_TOOLS},
     expect(tool_calls=[("test_types", {"obj_param": {"key": "value"}})])),
    ("vllm_qwen3_shared_speculative_decode_loss", "qwen3_coder",
     "<tool_call>\n<function=test>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
     "</tool_call>", {}, expect(tool_calls=[("test", {"city": "Paris"})])),
    ("vllm_qwen3_shared_string_null_preserved", "qwen3_coder",
     "<tool_call>\n<function=search>\n<parameter=query>null</parameter>\n</function>\n"
     "</tool_call>", _one_param_tool("search", "query", {"type": "string"}),
     expect(tool_calls=[("search", {"query": "null"})])),
    ("vllm_qwen3_shared_anyof_string_null_keeps_string", "qwen3_coder",
     "<tool_call>\n<function=set_code>\n<parameter=code>42</parameter>\n</function>\n"
     "</tool_call>",
     _one_param_tool("set_code", "code", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
     expect(tool_calls=[("set_code", {"code": "42"})])),
    ("vllm_qwen3_shared_anyof_integer_null_is_int", "qwen3_coder",
     "<tool_call>\n<function=set_count>\n<parameter=count>42</parameter>\n</function>\n"
     "</tool_call>",
     _one_param_tool("set_count", "count", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
     expect(tool_calls=[("set_count", {"count": 42})])),
    ("vllm_qwen3_shared_double_encoded_object", "qwen3_coder",
     "<tool_call>\n<function=process>\n<parameter=name>\nhello\n</parameter>\n"
     "<parameter=data>\n\"{'key': 'value', 'n': 1}\"\n</parameter>\n</function>\n"
     "</tool_call>\n", _PROCESS,
     expect(content="\n", tool_calls=[("process", {"name": "hello",
                                                   "data": {"key": "value", "n": 1}})])),
]
