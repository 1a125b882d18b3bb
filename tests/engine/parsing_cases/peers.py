"""Peers' own test cases, ported: vLLM's reasoning and tool-parser suites and mlx-lm's
``tests/test_tool_parsing.py``, for every format one of our families reads.

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
