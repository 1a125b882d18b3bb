"""Replies for every other family, as the models write them, with their expected parse.

Formats follow the models' chat templates and the public test suites of mlx-lm
(``tests/test_tool_parsing.py``) and vLLM (``tests/tool_parsers``, ``tests/reasoning``).
Same case shape as ``core.py``.
"""

from .core import expect

LONDON = ("get_current_temperature", {"location": "London"})
MULTIPLY = ("multiply", {"a": 12234585, "b": 48838483920})
NUM_TOOLS = [{"type": "function", "function": {
    "name": "multiply", "parameters": {"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"}}}}}]
STR_TOOLS = [{"type": "function", "function": {
    "name": "get_current_temperature", "parameters": {"type": "object", "properties": {
        "location": {"type": "string"}}}}}]
FILE_TOOLS = [{"type": "function", "function": {
    "name": "write_file", "parameters": {"type": "object", "properties": {
        "code": {"type": "string"}, "line": {"type": "integer"}}}}}]
OPTIONAL_TOOLS = [{"type": "function", "function": {
    "name": "configure", "parameters": {"type": "object", "properties": {
        "api_key": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "label": {"type": ["string", "null"]}, "retries": {"type": "integer"}}}}}]

QWEN3_CODER_CALL = (
    "<tool_call>\n<function=get_current_temperature>\n<parameter=location>\nLondon\n"
    "</parameter>\n</function>\n</tool_call>"
)
KIMI_SECTION = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0 "
    '<|tool_call_argument_begin|>{"city": "Beijing"}<|tool_call_end|>'
    "<|tool_call_begin|>functions.get_weather:1 "
    '<|tool_call_argument_begin|>{"city": "Shanghai"}<|tool_call_end|>'
    "<|tool_calls_section_end|>"
)
MINIMAX_CALL = (
    '<minimax:tool_call>\n<invoke name="get_current_temperature">\n'
    '<parameter name="location">London</parameter>\n</invoke>\n</minimax:tool_call>'
)
MINIMAX_TWO = (
    '<minimax:tool_call>\n<invoke name="multiply">\n<parameter name="a">12234585</parameter>\n'
    '<parameter name="b">48838483920</parameter>\n</invoke>\n'
    '<invoke name="get_current_temperature">\n<parameter name="location">London</parameter>\n'
    "</invoke>\n</minimax:tool_call>"
)

CASES = [
    # qwen3_coder (Qwen3-Coder, Qwen3.5): XML function calls, optional <tool_call> wrapper.
    ("qwen3_coder_call", "qwen3_coder", f"I'll check.\n{QWEN3_CODER_CALL}", {"tools": STR_TOOLS},
     expect(content="I'll check.\n", tool_calls=[LONDON])),
    ("qwen3_coder_typed_params", "qwen3_coder",
     ("<tool_call>\n<function=multiply>\n<parameter=a>\n12234585\n</parameter>\n<parameter=b>\n"
     "48838483920\n</parameter>\n</function>\n</tool_call>"), {"tools": NUM_TOOLS},
     expect(tool_calls=[MULTIPLY])),
    ("qwen3_coder_bare_function", "qwen3_coder",
     "Reading.\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>",
     {}, expect(content="Reading.\n", tool_calls=[("bash", {"command": "cat /etc/hosts"})])),
    ("qwen3_coder_call_ends_reasoning", "qwen3_coder",
     f"I need to read the file.\n\n{QWEN3_CODER_CALL}", {"starts_in_reasoning": True},
     expect("I need to read the file.\n\n", tool_calls=[LONDON])),
    ("qwen3_coder_think_and_call", "qwen3_coder",
     f"<think>\nLook it up.\n</think>\n\n{QWEN3_CODER_CALL}", {},
     expect("\nLook it up.\n", "\n\n", tool_calls=[LONDON])),
    # mistral: [TOOL_CALLS] with no closing marker; [THINK] reasoning (Magistral).
    ("mistral_v11_args", "mistral", '[TOOL_CALLS]add_this_and_that[ARGS]{"a": 3.5, "b": 4}', {},
     expect(tool_calls=[("add_this_and_that", {"a": 3.5, "b": 4})])),
    ("mistral_v11_decoded_without_specials", "mistral",
     'bla[TOOL_CALLS]add{"a": 3.5, "b": 4}[TOOL_CALLS]multiply{"a": 3, "b": 6}', {},
     expect(content="bla", tool_calls=[("add", {"a": 3.5, "b": 4}),
                                       ("multiply", {"a": 3, "b": 6})])),
    ("mistral_pre_v11_list", "mistral",
     ('Hello[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": 2}}, '
     '{"name": "get_current_weather", "arguments": {"city": "Dallas"}}]\nextra trailing data'),
     {}, expect(content="Hello\nextra trailing data",
                tool_calls=[("add", {"a": 1, "b": 2}),
                            ("get_current_weather", {"city": "Dallas"})])),
    ("mistral_call_id", "mistral",
     '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}', {},
     expect(tool_calls=[("get_weather", {"city": "Paris"})])),
    ("mistral_braces_inside_strings", "mistral",
     'hi{hi[TOOL_CALLS]bash{"command": "print(\\"}{\\")\\nre.compile(r\'{}\')"}', {},
     expect(content="hi{hi", tool_calls=[("bash", {"command": "print(\"}{\")\nre.compile(r'{}')"})])),
    ("mistral_cut_off_call", "mistral", '[TOOL_CALLS]bash{"command": "ls', {},
     expect(problems=['[TOOL_CALLS]bash{"command": "ls'])),
    ("mistral_think", "mistral", "[THINK]Add them.[/THINK]The sum is 7.", {},
     expect("Add them.", "The sum is 7.")),
    ("mistral_think_prefilled", "mistral", "This is a reasoning section[/THINK]This is the rest",
     {}, expect("This is a reasoning section", "This is the rest")),
    ("mistral_no_tools", "mistral", "This is a test", {}, expect(content="This is a test")),
    # pythonic: LFM2 markers, Llama 4 python tags, and Llama 3.2's bare call list.
    ("pythonic_lfm2", "pythonic",
     ("Sure.<|tool_call_start|>[get_weather(city='San Francisco', metric='celsius')]"
     "<|tool_call_end|>Checking now."), {},
     expect(content="Sure.Checking now.",
            tool_calls=[("get_weather", {"city": "San Francisco", "metric": "celsius"})])),
    ("pythonic_bare_list_parallel", "pythonic",
     ("[get_weather(city='Martha\\'s Vineyard'), register_user(name='John', age=37, "
     "address={'city': 'SF'}, role=None, passed_test=True, aliases=['J', 'Jo'])]"), {},
     expect(tool_calls=[("get_weather", {"city": "Martha's Vineyard"}),
                        ("register_user", {"name": "John", "age": 37, "address": {"city": "SF"},
                                           "role": None, "passed_test": True,
                                           "aliases": ["J", "Jo"]})])),
    ("pythonic_parameterless", "pythonic", "[get_weather()]", {},
     expect(tool_calls=[("get_weather", {})])),
    ("pythonic_bracket_text_stays_content", "pythonic", "[1] See the footnote [2].", {},
     expect(content="[1] See the footnote [2].")),
    ("pythonic_link_stays_content", "pythonic", "  [docs](https://x.y) explain it.", {},
     expect(content="  [docs](https://x.y) explain it.")),
    ("pythonic_no_tools", "pythonic", "How can I help you today?", {},
     expect(content="How can I help you today?")),
    # gemma4: <|channel>thought ... <channel|> reasoning, <|tool_call> ... <tool_call|>.
    ("gemma4_thought_then_answer", "gemma4",
     "<|channel>thought\nActual reasoning here<channel|>Final answer", {},
     expect("Actual reasoning here", "Final answer")),
    ("gemma4_thought_label_diverges", "gemma4", "<|channel>thousand reasons<channel|>Done", {},
     expect("thousand reasons", "Done")),
    ("gemma4_thought_after_text", "gemma4",
     "Before\n<|channel>This is a reasoning section<channel|>\nThis is the rest", {},
     expect("This is a reasoning section", "Before\n\nThis is the rest")),
    ("gemma4_empty_thought", "gemma4", "<|channel>thought\n<channel|>", {}, expect()),
    ("gemma4_call", "gemma4",
     ('Let me check the weather for you. <|tool_call>call:get_weather{location:<|"|>Paris, '
     'France<|"|>,unit:<|"|>celsius<|"|>}<tool_call|>'), {},
     expect(content="Let me check the weather for you. ",
            tool_calls=[("get_weather", {"location": "Paris, France", "unit": "celsius"})])),
    ("gemma4_nested_and_typed", "gemma4",
     ('<|tool_call>call:weather.get{nested:{inner:<|"|>value<|"|>},list:[<|"|>a<|"|>,<|"|>b<|"|>],'
     'is_active:true,count:42,score:3.14,none:null}<tool_call|>'), {},
     expect(tool_calls=[("weather.get", {"nested": {"inner": "value"}, "list": ["a", "b"],
                                         "is_active": True, "count": 42, "score": 3.14,
                                         "none": None})])),
    ("gemma4_two_calls", "gemma4",
     ('<|tool_call>call:get_weather{location:<|"|>London<|"|>}<tool_call|>'
     '<|tool_call>call:get_time{location:<|"|>London<|"|>}<tool_call|>'), {},
     expect(tool_calls=[("get_weather", {"location": "London"}),
                        ("get_time", {"location": "London"})])),
    ("gemma4_call_in_thought", "gemma4",
     '<|channel>thought\nNeed data.<|tool_call>call:get_status{}<tool_call|>', {},
     expect("Need data.", tool_calls=[("get_status", {})])),
    ("gemma4_cut_off_call", "gemma4", '<|tool_call>call:get_weather{location:<|"|>London', {},
     expect(problems=['<|tool_call>call:get_weather{location:<|"|>London'])),
    # kimi_k2: a section of calls with ids "functions.name:N".
    ("kimi_k2_parallel", "kimi_k2", f"Compare weather. {KIMI_SECTION}", {},
     expect(content="Compare weather. ",
            tool_calls=[("get_weather", {"city": "Beijing"}),
                        ("get_weather", {"city": "Shanghai"})])),
    ("kimi_k2_think_then_call", "kimi_k2",
     ("<think>Need the weather.</think>"
     "<|tool_calls_section_begin|><|tool_call_begin|>get_weather:0"
     '<|tool_call_argument_begin|>{"html": "<div>x</div>"}<|tool_call_end|>'
     "<|tool_calls_section_end|>"), {},
     expect("Need the weather.", tool_calls=[("get_weather", {"html": "<div>x</div>"})])),
    ("kimi_k2_no_tools", "kimi_k2", "This is a test", {}, expect(content="This is a test")),
    # glm47 (GLM-4.5/4.6/4.7): <arg_key>/<arg_value> pairs inside <tool_call>.
    ("glm47_call", "glm47",
     ("<think>Multiply.</think>\n<tool_call>multiply<arg_key>a</arg_key><arg_value>12234585"
     "</arg_value><arg_key>b</arg_key><arg_value>48838483920</arg_value></tool_call>"),
     {"tools": NUM_TOOLS}, expect("Multiply.", "\n", tool_calls=[MULTIPLY])),
    ("glm45_newlines", "glm47",
     ("Checking.\n<tool_call>get_current_temperature\n<arg_key>location</arg_key>\n"
     "<arg_value>London</arg_value>\n</tool_call>"), {"tools": STR_TOOLS},
     expect(content="Checking.\n", tool_calls=[LONDON])),
    ("glm47_json_body", "glm47",
     ('<tool_call>{"name": "multiply", "arguments": {"a": 12234585, "b": 48838483920}}'
     "</tool_call>"), {}, expect(tool_calls=[MULTIPLY])),
    # A string value is the text the model wrote, its indentation kept (vLLM's
    # test_whitespace_preserved_in_arg_values); other values are decoded, spaces and all.
    ("glm47_string_value_keeps_its_whitespace", "glm47",
     ("<tool_call>write_file<arg_key>code</arg_key><arg_value>    if x:\n        y()\n"
      "</arg_value><arg_key>line</arg_key><arg_value> 3 </arg_value></tool_call>"),
     {"tools": FILE_TOOLS},
     expect(tool_calls=[("write_file", {"code": "    if x:\n        y()\n", "line": 3})])),
    # Optional[str] as Pydantic writes it (anyOf) and as a type list: still a string (vLLM's
    # test_string_type_detection_with_anyof / _with_list_types).
    ("glm47_optional_strings_stay_text", "glm47",
     ("<tool_call>configure<arg_key>api_key</arg_key><arg_value>12345678</arg_value>"
      '<arg_key>label</arg_key><arg_value>{"a": 1}</arg_value>'
      "<arg_key>retries</arg_key><arg_value>2</arg_value></tool_call>"), {"tools": OPTIONAL_TOOLS},
     expect(tool_calls=[("configure", {"api_key": "12345678", "label": '{"a": 1}', "retries": 2})])),
    # minimax_m2: <minimax:tool_call><invoke name=...><parameter name=...>.
    ("minimax_m2_prefilled_reasoning_then_call", "minimax_m2",
     f"Look it up.</think>\n\n{MINIMAX_CALL}", {"tools": STR_TOOLS},
     expect("Look it up.", "\n\n", tool_calls=[LONDON])),
    ("minimax_m2_two_invokes", "minimax_m2", f"Let me check{MINIMAX_TWO}",
     {"tools": NUM_TOOLS + STR_TOOLS},
     expect(content="Let me check", tool_calls=[MULTIPLY, LONDON])),
    ("minimax_m2_double_close", "minimax_m2", "reasoning</think>content A</think>content B", {},
     expect("reasoning", "content Acontent B")),
    # function_gemma: <start_function_call>call:name{k:<escape>v<escape>}<end_function_call>.
    ("function_gemma_call", "function_gemma",
     ("<start_function_call>call:get_current_temperature{location:<escape>London<escape>}"
     "<end_function_call>"), {}, expect(tool_calls=[LONDON])),
    ("function_gemma_numbers", "function_gemma",
     ("Computing. <start_function_call>call:multiply{a:12234585,b:48838483920}"
     "<end_function_call> done"), {},
     expect(content="Computing.  done", tool_calls=[MULTIPLY])),
    # longcat: <longcat_think> reasoning, <longcat_tool_call> JSON or arg pairs.
    ("longcat_json", "longcat",
     ("<longcat_think>Multiply.</longcat_think><longcat_tool_call>"
     '{"name": "multiply", "arguments": {"a": 12234585, "b": 48838483920}}</longcat_tool_call>'),
     {}, expect("Multiply.", tool_calls=[MULTIPLY])),
    ("longcat_arg_pairs", "longcat",
     ("<longcat_tool_call>get_current_temperature<longcat_arg_key>location</longcat_arg_key>\n"
     "<longcat_arg_value>London</longcat_arg_value></longcat_tool_call>"), {"tools": STR_TOOLS},
     expect(tool_calls=[LONDON])),
    ("longcat_string_value_keeps_its_whitespace_and_optional_strings_stay_text", "longcat",
     ("<longcat_tool_call>configure<longcat_arg_key>api_key</longcat_arg_key>"
      "<longcat_arg_value>  12345678\n</longcat_arg_value><longcat_arg_key>retries"
      "</longcat_arg_key><longcat_arg_value> 2 </longcat_arg_value></longcat_tool_call>"),
     {"tools": OPTIONAL_TOOLS},
     expect(tool_calls=[("configure", {"api_key": "  12345678\n", "retries": 2})])),
]

DSML = "｜DSML｜"
DSML_CALLS = (
    f"<{DSML}tool_calls>\n"
    f'<{DSML}invoke name="get_weather">\n'
    f'<{DSML}parameter name="city" string="true">Paris "<b>" {{"x": 1}}</{DSML}parameter>\n'
    f'<{DSML}parameter name="days" string="false">3</{DSML}parameter>\n'
    f"</{DSML}invoke>\n"
    f'<{DSML}invoke name="get_time">\n'
    f'<{DSML}parameter name="tz" string="true">UTC</{DSML}parameter>\n'
    f"</{DSML}invoke>\n"
    f"</{DSML}tool_calls>"
)
DSML_PARSED = [("get_weather", {"city": 'Paris "<b>" {"x": 1}', "days": 3}),
               ("get_time", {"tz": "UTC"})]

CASES += [
    # deepseek_v4: think tags; DSML tool-call blocks (parser: engine/parsing/parsers/deepseek_v4.py).
    ("deepseek_v4_think_then_parallel_calls", "deepseek_v4",
     f"Two lookups.</think>Checking.\n\n{DSML_CALLS}", {"starts_in_reasoning": True},
     expect("Two lookups.", "Checking.\n\n", tool_calls=DSML_PARSED)),
    ("deepseek_v4_dsml_ends_reasoning", "deepseek_v4", f"I must call tools.\n{DSML_CALLS}",
     {"starts_in_reasoning": True}, expect("I must call tools.\n", tool_calls=DSML_PARSED)),
    ("deepseek_v4_chat_mode", "deepseek_v4", "Paris is the capital.",
     {"starts_in_reasoning": False}, expect(content="Paris is the capital.")),
    ("deepseek_v4_cut_off_block", "deepseek_v4",
     f'</think><{DSML}tool_calls>\n<{DSML}invoke name="get_weather">', {},
     expect(problems=[f'<{DSML}tool_calls>\n<{DSML}invoke name="get_weather">'])),
]

KIMI_BAD_SIBLING = (
    "Help. <|tool_calls_section_begin|>"
    '<|tool_call_begin|>functions.bad:0 <|tool_call_argument_begin|>{"city": "Beijing"'
    "<|tool_call_end|>"
    '<|tool_call_begin|>functions.good:1 <|tool_call_argument_begin|>{"city": "Shanghai"}'
    "<|tool_call_end|><|tool_calls_section_end|>"
)
ANYOF_TOOLS = [{"type": "function", "name": "search_web", "parameters": {  # Responses API shape
    "type": "object", "properties": {
        "query": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
        "verbose": {"type": ["boolean", "null"]}}}}]

CASES += [
    ("qwen3_coder_unclosed_parameter", "qwen3_coder",
     ("Let me check the weather for you:\n<tool_call>\n<function=get_current_temperature>\n"
     "<parameter=location>\nLondon\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n"
     "</tool_call>"), {"tools": STR_TOOLS},
     expect(content="Let me check the weather for you:\n",
            tool_calls=[("get_current_temperature", {"location": "London", "unit": "celsius"})])),
    ("qwen3_coder_anyof_schema_types", "qwen3_coder",
     ("<tool_call>\n<function=search_web>\n<parameter=query>\nvllm tool parser\n</parameter>\n"
     "<parameter=count>\n10\n</parameter>\n<parameter=verbose>\ntrue\n</parameter>\n"
     "</function>\n</tool_call>"), {"tools": ANYOF_TOOLS},
     expect(tool_calls=[("search_web", {"query": "vllm tool parser", "count": 10,
                                        "verbose": True})])),
    ("kimi_k2_bad_call_does_not_sink_its_sibling", "kimi_k2", KIMI_BAD_SIBLING, {},
     expect(content="Help. ", tool_calls=[("good", {"city": "Shanghai"})],
            problems=[('<|tool_call_begin|>functions.bad:0 <|tool_call_argument_begin|>'
                      '{"city": "Beijing"<|tool_call_end|>')])),
    ("glm47_zero_arg_calls", "glm47",
     "Checking.<tool_call>get_current_date</tool_call><tool_call>get_current_date\n</tool_call>",
     {}, expect(content="Checking.", tool_calls=[("get_current_date", {})] * 2)),
]

CASES += [
    ("function_gemma_missing_commas_and_typed_escapes", "function_gemma",
     ("<start_function_call>call:search{query:<escape>python, {fast}<escape>limit:<escape>10"
     "<escape>,exact:<escape>true<escape>}<end_function_call>"), {},
     expect(tool_calls=[("search", {"query": "python, {fast}", "limit": 10, "exact": True})])),
    ("function_gemma_two_calls", "function_gemma",
     ("<start_function_call>call:get_weather{location:<escape>London<escape>}<end_function_call>"
     "<start_function_call>call:get_time{timezone:<escape>UTC<escape>}<end_function_call>"), {},
     expect(tool_calls=[("get_weather", {"location": "London"}),
                        ("get_time", {"timezone": "UTC"})])),
    ("gemma4_quoted_keys", "gemma4",
     '<|tool_call>call:edit{record_map:{<|"|>3<|"|>:<|"|>new text<|"|>}}<tool_call|>', {},
     expect(tool_calls=[("edit", {"record_map": {"3": "new text"}})])),
]

LFM2 = ("<|tool_call_start|>[get_candidate_status(candidate_id='12345'), label(tags={'urgent'}), "
        "set_date(month=07, day=05), bad(x=b'z'), "
        "bash(command='sed -n '360,450p' /testbed/common.py'), "
        "exec(command='cat > f.py << EOF\nprint(1)\nEOF')]<|tool_call_end|>\nChecking.")

CASES += [
    ("pythonic_lfm2_near_python_and_bad_sibling", "pythonic", LFM2, {},
     expect(content="\nChecking.",
            tool_calls=[("get_candidate_status", {"candidate_id": "12345"}),
                        ("label", {"tags": ["urgent"]}),
                        ("set_date", {"month": 7, "day": 5}),
                        ("bash", {"command": "sed -n '360,450p' /testbed/common.py"}),
                        ("exec", {"command": "cat > f.py << EOF\nprint(1)\nEOF"})],
            problems=["bad(x=b'z')"])),  # bytes are no JSON value: that call alone fails
    ("pythonic_unreadable_bare_list_is_content", "pythonic", "[f(a='x 'y' 'z), g(b='p 'q' 'r)]",
     {}, expect(content="[f(a='x 'y' 'z), g(b='p 'q' 'r)]")),
    # vLLM's pythonic/LFM2 tests: parameters called like Python keywords, "007", stray quotes
    # pairing across two calls, and a quoted command holding a quoted Python string.
    ("pythonic_keyword_parameter_names", "pythonic",
     ("<|tool_call_start|>[memory_get(path='M.md', from=1), search(in='docs/', class=2, "
      "is_open=True)]<|tool_call_end|>"), {},
     expect(tool_calls=[("memory_get", {"path": "M.md", "from": 1}),
                        ("search", {"in": "docs/", "class": 2, "is_open": True})])),
    # LFM2 repeating its call after the block (vLLM's
    # test_echoed_tool_call_body_not_leaked_to_content): the repeat and its stray closing
    # marker are dropped; a repeat without the marker is the model's text.
    ("pythonic_lfm2_echoed_call_is_dropped", "pythonic",
     ("<|tool_call_start|>[order(items=[{'name': 'apple'}], to='Main St')]<|tool_call_end|>"
      "[order(items=[{'name': 'apple'}], to='Main St')]<|tool_call_end|>\nDone."), {},
     expect(content="\nDone.",
            tool_calls=[("order", {"items": [{"name": "apple"}], "to": "Main St"})])),
    ("qwen3_echoed_call_is_dropped", "qwen3",
     ('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
      '{"name": "f", "arguments": {"a": 1}}\n</tool_call>'), {"starts_in_reasoning": False},
     expect(tool_calls=[("f", {"a": 1})])),
    ("pythonic_repeat_without_a_closing_marker_is_text", "pythonic",
     "<|tool_call_start|>[f(a=1)]<|tool_call_end|>[f(a=1)] was the call.", {},
     expect(content="[f(a=1)] was the call.", tool_calls=[("f", {"a": 1})])),
    ("pythonic_many_leading_zeros", "pythonic",
     "<|tool_call_start|>[f(x=007, y=05, z=100, w=1.05)]<|tool_call_end|>", {},
     expect(tool_calls=[("f", {"x": 7, "y": 5, "z": 100, "w": 1.05})])),
    ("pythonic_stray_quotes_paired_across_two_calls", "pythonic",
     "<|tool_call_start|>[f(a='x 'y'), g(b='p 'q')]<|tool_call_end|>", {},
     expect(tool_calls=[("f", {"a": "x 'y"}), ("g", {"b": "p 'q"})])),
    ("pythonic_python_c_inside_a_quoted_command", "pythonic",
     ("<|tool_call_start|>[bash(command='cd /testbed && python3 -c \"from sympy import latex\n"
      "print(latex(3*x, mul_symbol='\\,'))\"')]<|tool_call_end|>"), {},
     expect(tool_calls=[("bash", {"command": "cd /testbed && python3 -c \"from sympy import "
                                             "latex\nprint(latex(3*x, mul_symbol='\\,'))\""})])),
]

CASES += [
    ("deepseek_v32_function_calls_block", "deepseek_v32",
     (f"Let me check.\n\n<{DSML}function_calls>\n<{DSML}invoke name=\"get_weather\">\n"
     f"<{DSML}parameter name=\"location\" string=\"true\">杭州</{DSML}parameter>\n"
     f"<{DSML}parameter name=\"days\" string=\"false\">2</{DSML}parameter>\n"
     f"</{DSML}invoke>\n</{DSML}function_calls>"), {"starts_in_reasoning": False},
     expect(content="Let me check.\n\n", tool_calls=[("get_weather", {"location": "杭州", "days": 2})])),
]

Q = '<|"|>'
CASES += [
    ("gemma4_bare_call_after_thought", "gemma4",
     f"<|channel>thought\nRead the file.\n<channel|>call:bash{{command:{Q}cat /work/a.c{Q}}}", {},
     expect("Read the file.\n", tool_calls=[("bash", {"command": "cat /work/a.c"})])),
    ("gemma4_turn_end_closes_a_call", "gemma4",
     f"<|tool_call>call:gdb{{args:{Q}-batch -ex run{Q}}}<turn|>", {},
     expect(tool_calls=[("gdb", {"args": "-batch -ex run"})])),
    ("gemma4_call_word_in_prose_stays_content", "gemma4",
     "Please call: 555-1234 {ok}, or we call:it{ later.", {},
     expect(content="Please call: 555-1234 {ok}, or we call:it{ later.")),
    ("gemma4_bare_call_in_thought_does_not_end_it", "gemma4",
     "<|channel>thought\nMaybe call:f{x:1} later<channel|>Done", {},
     expect("Maybe call:f{x:1} later", "Done")),
]

CASES += [
    ("qwen3_coder_llama_json_function", "qwen3_coder",
     'Sure. <function=get_weather>{"city": "Paris", "days": 2}</function>', {},
     expect(content="Sure. ", tool_calls=[("get_weather", {"city": "Paris", "days": 2})])),
]

CASES += [
    # As vllm-mlx's DeepSeek-V4 reasoning tests: the prompt ends in <think> or </think>.
    ("deepseek_v4_undecided_dsml_ends_reasoning", "deepseek_v4", f"I should call it{DSML_CALLS}",
     {}, expect("I should call it", tool_calls=DSML_PARSED)),
    ("deepseek_v4_undecided_plain_answer", "deepseek_v4", "Just an answer.", {},
     expect(content="Just an answer.")),
    ("deepseek_v4_undecided_close_then_call", "deepseek_v4",
     f"thinking</think>Calling.\n\n{DSML_CALLS}", {},
     expect("thinking", "Calling.\n\n", tool_calls=DSML_PARSED)),
]

QWEN3_CODER_TIME = ("<tool_call>\n<function=get_time>\n<parameter=tz>\nUTC\n</parameter>\n"
                    "</function>\n</tool_call>")
BARE_FUNCTION = "<function=get_current_temperature>\n<parameter=location>\nLondon\n</parameter>\n</function>"
TIME = ("get_time", {"tz": "UTC"})

CASES += [
    # Issue 12: Qwen3-Coder's whitespace between calls and a wrapper closed without its opening
    # belong to the calls (vLLM's qwen3coder tests); whitespace before other text stays content.
    ("qwen3_coder_parallel_calls_leave_no_content", "qwen3_coder",
     f"{QWEN3_CODER_CALL}\n{QWEN3_CODER_TIME}", {"tools": STR_TOOLS},
     expect(tool_calls=[LONDON, TIME])),
    ("qwen3_coder_text_after_calls_keeps_its_newline", "qwen3_coder",
     f"<think>Two.</think>\n\n{QWEN3_CODER_CALL}\n\n{QWEN3_CODER_TIME}\nDone.", {"tools": STR_TOOLS},
     expect("Two.", "\n\n\nDone.", tool_calls=[LONDON, TIME])),
    ("qwen3_coder_missing_opening_tool_call", "qwen3_coder",
     f"Checking.\n{BARE_FUNCTION}\n</tool_call>", {"tools": STR_TOOLS},
     expect(content="Checking.\n", tool_calls=[LONDON])),
    ("qwen3_coder_missing_opening_then_a_parallel_call", "qwen3_coder",
     f"{BARE_FUNCTION}\n</tool_call>\n{QWEN3_CODER_TIME}", {"tools": STR_TOOLS},
     expect(tool_calls=[LONDON, TIME])),
    ("qwen3_coder_close_tag_in_prose_stays_content", "qwen3_coder",
     "Write </tool_call> to close it.", {}, expect(content="Write </tool_call> to close it.")),
    ("qwen3_hermes_whitespace_between_calls_stays_content", "qwen3",
     ('<tool_call>{"name": "a", "arguments": {}}</tool_call>\n'
      '<tool_call>{"name": "b", "arguments": {}}</tool_call>'), {},
     expect(content="\n", tool_calls=[("a", {}), ("b", {})])),
    # Issue 12: a pythonic call whose quote or bracket never closes fails alone.
    ("pythonic_stray_quote_keeps_its_siblings", "pythonic",
     "<|tool_call_start|>[f(a='x), get_time(tz='UTC'), g(b=[1)]<|tool_call_end|>", {},
     expect(tool_calls=[TIME], problems=["f(a='x)", "g(b=[1)"])),
    ("pythonic_unclosed_bracket_keeps_its_siblings", "pythonic",
     "<|python_start|>[get_time(tz='UTC'), f(a=[1, 2)]<|python_end|> ok", {},
     expect(content=" ok", tool_calls=[TIME], problems=["f(a=[1, 2)"])),
    # vLLM's test_good_call_survives_unparsable_sibling: a bare list (or one after Llama's
    # python tag) whose brackets or quotes never balance ends at the reply's end; its good
    # calls survive.
    ("pythonic_bare_list_bad_bracket_keeps_its_siblings", "pythonic",
     "[get_weather(city='San Francisco', metric='celsius'), f(a=[1)]", {},
     expect(tool_calls=[("get_weather", {"city": "San Francisco", "metric": "celsius"})],
            problems=["f(a=[1)"])),
    ("pythonic_bare_list_stray_quote_keeps_its_siblings", "pythonic",
     "[get_weather(city='Paris'), f(a='x 'y', b='z')]", {},
     expect(tool_calls=[("get_weather", {"city": "Paris"}), ("f", {"a": "x 'y", "b": "z"})])),
    ("llama3_json_python_tag_list_bad_bracket_keeps_its_siblings", "llama3_json",
     "<|python_tag|>[get_weather(city='Paris'), f(a=[1)]", {},
     expect(tool_calls=[("get_weather", {"city": "Paris"})], problems=["f(a=[1)"])),
    ("pythonic_bare_list_cut_short_runs_none_of_its_calls", "pythonic",
     "[send_email(to=['a@b.c'], body='hi'), delete_all(confirm=[True]", {},
     expect(content="[send_email(to=['a@b.c'], body='hi'), delete_all(confirm=[True]")),
    ("llama3_json_python_tag_list_cut_short_is_a_problem", "llama3_json",
     "<|python_tag|>[f(a=1), g(b=[2]", {}, expect(problems=["<|python_tag|>[f(a=1), g(b=[2]"])),
    ("pythonic_unbalanced_list_then_prose_is_content", "pythonic",
     "[f(a='x 'y')] is what I would call.", {},
     expect(content="[f(a='x 'y')] is what I would call.")),
    # mlx-lm's test: a value holding "</function>" (code or docs about the format) is whole.
    ("qwen3_coder_value_holding_the_function_end_is_whole", "qwen3_coder",
     ("<tool_call>\n<function=w>\n<parameter=content>\na </function> b\n</parameter>\n"
      "</function>\n</tool_call>"), {"starts_in_reasoning": False},
     expect(tool_calls=[("w", {"content": "a </function> b"})])),
    ("qwen3_coder_value_left_open_ends_at_the_function_end", "qwen3_coder",
     ("<tool_call>\n<function=w>\n<parameter=content>\nq\n</function>\n<function=w>\n"
      "<parameter=content>\nz\n</parameter>\n</function>\n</tool_call>"),
     {"starts_in_reasoning": False},
     expect(tool_calls=[("w", {"content": "q"}), ("w", {"content": "z"})])),
    # A bare Gemma call in an answer that names no offered tool is the answer explaining it;
    # without tools offered it is read as vLLM's offline helper reads it, a call.
    ("gemma4_bare_call_of_no_offered_tool_is_text", "gemma4",
     'You write call:get_weather{city:<|"|>Paris<|"|>} to call it.', {"tools": STR_TOOLS},
     expect(content='You write call:get_weather{city:<|"|>Paris<|"|>} to call it.')),
    ("gemma4_json_quoted_key_is_the_bare_name", "gemma4",
     '<|tool_call>call:get_weather{"city":<|"|>Paris<|"|>}<tool_call|>', {},
     expect(tool_calls=[("get_weather", {"city": "Paris"})])),
    ("longcat_call_without_arguments", "longcat",
     "<longcat_tool_call>get_time\n</longcat_tool_call>", {},
     expect(tool_calls=[("get_time", {})])),
    # vLLM's mistral list with one bad item: the good call is kept, and the problem (whose
    # text the reply's content shows) is the bad item alone, not the whole list again.
    ("mistral_list_with_a_bad_item_keeps_the_good_call_once", "mistral",
     '[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}, {"arguments": {}}]', {},
     expect(tool_calls=[("f", {"a": 1})], problems=['{"arguments": {}}'])),
    # Only a repeated opening marker is dropped inside reasoning, not the newlines around it.
    ("qwen3_repeated_think_keeps_its_newlines", "qwen3",
     "<think>\n<think>\n<think>\nX</think>Y", {},
     expect(reasoning="\n\n\nX", content="Y")),
    # Issue 12: a string="false" value that is not JSON keeps its raw text; the call survives.
    ("deepseek_v4_string_false_not_json_is_kept_raw", "deepseek_v4",
     (f'<{DSML}tool_calls>\n<{DSML}invoke name="get_weather">\n'
      f'<{DSML}parameter name="unit" string="false">celsius</{DSML}parameter>\n'
      f'<{DSML}parameter name="days" string="false">{{bad json</{DSML}parameter>\n'
      f"</{DSML}invoke>\n</{DSML}tool_calls>"), {"starts_in_reasoning": False},
     expect(tool_calls=[("get_weather", {"unit": "celsius", "days": "{bad json"})])),
]

READ_FILE_TOOLS = [{"type": "function", "function": {
    "name": "read_file", "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}}}}}]
READ_HOSTS = ("read_file", {"path": "/etc/hosts"})
WEATHER_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string"}}}}}, *STR_TOOLS]

CASES += [
    # A tag whose ">" the model forgot ends at the newline or "<" (mlx-lm's
    # test_qwen3_coder_recovers_missing_name_delimiters, vLLM's no_gt_delimiter).
    ("qwen3_coder_function_name_missing_its_gt", "qwen3_coder",
     "<tool_call>\n<function=read_file\n<parameter=path>\n/etc/hosts\n</parameter>\n</function>\n"
     "</tool_call>", {"tools": READ_FILE_TOOLS}, expect(tool_calls=[READ_HOSTS])),
    ("qwen3_coder_parameter_name_missing_its_gt", "qwen3_coder",
     "<tool_call>\n<function=read_file>\n<parameter=path\n/etc/hosts\n</parameter>\n</function>\n"
     "</tool_call>", {"tools": READ_FILE_TOOLS}, expect(tool_calls=[READ_HOSTS])),
    ("qwen3_coder_value_with_a_gt_after_a_name_missing_its_own", "qwen3_coder",
     "<tool_call>\n<function=read_file>\n<parameter=path\na>b\n</parameter>\n</function>\n"
     "</tool_call>", {"tools": READ_FILE_TOOLS}, expect(tool_calls=[("read_file", {"path": "a>b"})])),
    # A call whose wrapper never closed (a stop string or the reply's end took the marker) is a
    # call when its own element is whole, as mlx_lm.server parses it (vLLM's hermes
    # until_eos and kimi_k2 truncated tests); cut inside a value it is a problem.
    ("hermes_call_open_at_the_end_is_a_call", "qwen3",
     '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}', {},
     expect(tool_calls=[("final_answer", {"trigger": True})])),
    ("qwen3_coder_call_open_at_the_end_is_a_call", "qwen3_coder",
     f"Checking.\n{QWEN3_CODER_CALL.removesuffix('</tool_call>')}", {"tools": STR_TOOLS},
     expect(content="Checking.\n", tool_calls=[LONDON])),
    ("qwen3_coder_value_cut_at_the_end_is_a_problem", "qwen3_coder",
     "<tool_call>\n<function=read_file>\n<parameter=path>\n/etc/ho", {"tools": READ_FILE_TOOLS},
     expect(problems=["<tool_call>\n<function=read_file>\n<parameter=path>\n/etc/ho"])),
    ("glm47_call_open_at_the_end_is_a_call", "glm47",
     "<tool_call>f\n<arg_key>a</arg_key><arg_value>x</arg_value>\n", {},
     expect(tool_calls=[("f", {"a": "x"})])),
    ("minimax_call_open_at_the_end_is_a_call", "minimax_m2",
     MINIMAX_CALL.removesuffix("</minimax:tool_call>"), {"starts_in_reasoning": False},
     expect(tool_calls=[LONDON])),
    ("kimi_section_open_at_the_end_keeps_its_calls", "kimi_k2",
     KIMI_SECTION.removesuffix("<|tool_calls_section_end|>"), {},
     expect(tool_calls=[("get_weather", {"city": "Beijing"}), ("get_weather", {"city": "Shanghai"})])),
    # GLM writes a newline between parallel calls: markup, not content (vLLM's glm4_moe tests).
    ("glm47_parallel_calls_leave_no_content", "glm47",
     ("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Dallas</arg_value>\n</tool_call>"
      "\n    <tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Orlando</arg_value>\n"
      "</tool_call>"), {},
     expect(tool_calls=[("get_weather", {"city": "Dallas"}), ("get_weather", {"city": "Orlando"})])),
    # vLLM's kimi_k2 tests: a bare counter id is named by the one tool it fits; an empty section
    # is no call and no problem.
    ("kimi_bare_counter_named_by_the_tool_it_fits", "kimi_k2",
     ("Let me check. <|tool_calls_section_begin|><|tool_call_begin|>0 <|tool_call_argument_begin|>"
      '{"city": "Tokyo", "unit": "celsius"}<|tool_call_end|><|tool_calls_section_end|>'),
     {"tools": WEATHER_TOOLS},
     expect(content="Let me check. ",
            tool_calls=[("get_weather", {"city": "Tokyo", "unit": "celsius"})])),
    ("kimi_empty_section_is_no_call", "kimi_k2",
     "Reasoning. <|tool_calls_section_begin|><|tool_calls_section_end|>", {},
     expect(content="Reasoning. ")),
    # vLLM's gemma4 tests: a trailing-dot number is a float.
    ("gemma4_trailing_dot_float", "gemma4",
     '<|tool_call>call:f{left:108.,right:22.8,label:<|"|>108.<|"|>}<tool_call|>', {},
     expect(tool_calls=[("f", {"left": 108.0, "right": 22.8, "label": "108."})])),
]

COUNT_TOOLS = [{"type": "function", "function": {
    "name": "set_count", "parameters": {"type": "object", "properties": {
        "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "size": {"type": "integer"}, "label": {"type": "string"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}}}]
WRITE_TOOLS = [{"type": "function", "function": {
    "name": "write_file", "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}}}}}]


def _qwen3_coder_params(name, **params):
    inner = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{inner}</function>\n</tool_call>"


CASES += [
    # vLLM's qwen3_xml_coder_shared tests: a value its type cannot read stays the model's text
    # (the call is not lost); Python's None is null where null is allowed; a string "null" stays.
    ("qwen3_coder_python_none_for_a_nullable_integer", "qwen3_coder",
     _qwen3_coder_params("set_count", count="None", note="None"), {"tools": COUNT_TOOLS},
     expect(tool_calls=[("set_count", {"count": None, "note": None})])),
    ("qwen3_coder_unreadable_integer_stays_text", "qwen3_coder",
     _qwen3_coder_params("set_count", size="abc", count="3.5"), {"tools": COUNT_TOOLS},
     expect(tool_calls=[("set_count", {"size": "abc", "count": "3.5"})])),
    ("qwen3_coder_string_null_is_kept", "qwen3_coder",
     _qwen3_coder_params("set_count", label="null", size="12"), {"tools": COUNT_TOOLS},
     expect(tool_calls=[("set_count", {"label": "null", "size": 12})])),
    # ... and a value may hold parameter markup (an agent writing a parser's fixture).
    ("qwen3_coder_value_holding_parameter_markup", "qwen3_coder",
     _qwen3_coder_params("write_file", path="fixture.py",
                         content='doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""'),
     {"tools": WRITE_TOOLS},
     expect(tool_calls=[("write_file", {
         "path": "fixture.py",
         "content": 'doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""'})])),
    ("qwen3_coder_value_holding_a_closer_then_text", "qwen3_coder",
     _qwen3_coder_params("write_file", path="t.py", content='T = """\n</parameter>\n"""'),
     {"tools": WRITE_TOOLS},
     expect(tool_calls=[("write_file", {"path": "t.py", "content": 'T = """\n</parameter>\n"""'})])),
    ("qwen3_coder_parameter_the_schema_lacks_is_still_a_parameter", "qwen3_coder",
     _qwen3_coder_params("write_file", path="t.py", mode="w"), {"tools": WRITE_TOOLS},
     expect(tool_calls=[("write_file", {"path": "t.py", "mode": "w"})])),
    ("qwen3_coder_template_markup_is_no_call", "qwen3_coder",
     "<tool_call>\n<function={{ tc.name }}>\n</function>\n</tool_call>\n"
     + _qwen3_coder_params("write_file", path="a"), {"tools": WRITE_TOOLS},
     expect(tool_calls=[("write_file", {"path": "a"})],
            problems=["<tool_call>\n<function={{ tc.name }}>\n</function>\n</tool_call>"])),
    # vllm-mlx: DSML and LongCat calls open at the reply's end are calls too.
    ("deepseek_v4_call_open_at_the_end_is_a_call", "deepseek_v4",
     (f'<{DSML}tool_calls>\n<{DSML}invoke name="f">\n<{DSML}parameter name="a" string="true">1'
      f"</{DSML}parameter>\n</{DSML}invoke>"), {"starts_in_reasoning": False},
     expect(tool_calls=[("f", {"a": "1"})])),
    ("longcat_call_open_at_the_end_is_a_call", "longcat",
     "<longcat_tool_call>f\n<longcat_arg_key>a</longcat_arg_key>\n<longcat_arg_value>x"
     "</longcat_arg_value>\n", {}, expect(tool_calls=[("f", {"a": "x"})])),
    # vllm-mlx's Gemma 4 production streams: the response channel ends the thought.
    ("gemma4_response_channel_ends_the_thought", "gemma4",
     ('<|channel>thought\nThe user said "hi". Plan: greet.\n<|channel>response\n'
      "Hello! How can I help?"), {},
     expect('The user said "hi". Plan: greet.\n', "Hello! How can I help?")),
    ("gemma4_response_channel_after_a_closed_thought", "gemma4",
     "<|channel>thought\ninternal<channel|><|channel>response\nFinal answer.<channel|>", {},
     expect("internal", "Final answer.")),
    ("gemma4_newline_between_calls_is_markup", "gemma4",
     "<|tool_call>call:f{a:1}<tool_call|>\n<|tool_call>call:g{b:2}<tool_call|>", {},
     expect(tool_calls=[("f", {"a": 1}), ("g", {"b": 2})])),
    # vLLM's lfm2 tests: an empty call list is no call; "[]" in prose stays prose.
    ("pythonic_empty_call_block_is_no_call", "pythonic",
     "Nothing to do.<|tool_call_start|>[]<|tool_call_end|>", {}, expect(content="Nothing to do.")),
    ("pythonic_empty_brackets_in_prose_stay_text", "pythonic",
     "An empty list [] is falsy.", {}, expect(content="An empty list [] is falsy.")),
]

CASES += [
    # Review: a value cut where it happens to end in "}" or "]" is still cut (never a call
    # that would run with half an argument): only the element's own end makes it whole.
    ("qwen3_coder_code_cut_after_a_brace_is_a_problem", "qwen3_coder",
     "<tool_call>\n<function=write>\n<parameter=code>\nint main() {}", {},
     expect(problems=["<tool_call>\n<function=write>\n<parameter=code>\nint main() {}"])),
    ("glm47_value_cut_after_a_bracket_is_a_problem", "glm47",
     "<tool_call>write<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>b</arg_key>"
     "<arg_value>[1, 2]", {},
     expect(problems=["<tool_call>write<arg_key>a</arg_key><arg_value>1</arg_value>"
                      "<arg_key>b</arg_key><arg_value>[1, 2]"])),
    ("longcat_value_cut_after_braces_is_a_problem", "longcat",
     "<longcat_tool_call>write\n<longcat_arg_key>code</longcat_arg_key>\n<longcat_arg_value>{}",
     {}, expect(problems=["<longcat_tool_call>write\n<longcat_arg_key>code</longcat_arg_key>\n"
                          "<longcat_arg_value>{}"])),
    ("qwen3_coder_names_with_a_space_before_their_gt", "qwen3_coder",
     "<tool_call>\n<function=f >\n<parameter=s >\nhello\n</parameter>\n</function>\n</tool_call>",
     {}, expect(tool_calls=[("f", {"s": "hello"})])),
    # Gemma 4: an empty thought may end at once in the response channel; a channel marker the
    # reply ends on is markup, not text.
    ("gemma4_empty_thought_then_the_response_channel", "gemma4",
     "<|channel>thought\n<|channel>response\nHello", {}, expect(content="Hello")),
    ("gemma4_channel_marker_at_the_very_end_is_not_text", "gemma4",
     "<|channel>thought\nhmm<|channel>", {}, expect(reasoning="hmm")),
    # A property whose schema is `true` is untyped, not gone (Kimi names a bare counter by it).
    ("kimi_bare_counter_named_by_an_untyped_property", "kimi_k2",
     '<|tool_calls_section_begin|><|tool_call_begin|>0<|tool_call_argument_begin|>{"a": 1}'
     "<|tool_call_end|><|tool_calls_section_end|>",
     {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
         "properties": {"a": True}}}},
                {"type": "function", "function": {"name": "g", "parameters": {
                    "properties": {"b": {"type": "string"}}}}}]},
     expect(tool_calls=[("f", {"a": 1})])),
]

CASES += [
    # transformers writes Optional[str] as {"type": "string", "nullable": true} (what make_tool
    # offers): a null there is None, not the text "null".
    ("qwen3_coder_null_for_a_nullable_string", "qwen3_coder",
     _qwen3_coder_params("note", text="null", label="null"),
     {"tools": [{"type": "function", "function": {"name": "note", "parameters": {"properties": {
         "text": {"type": "string", "nullable": True}, "label": {"type": "string"}}}}}]},
     expect(tool_calls=[("note", {"text": None, "label": "null"})])),
]

_W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
CASES += [
    # Review: what only misses its wrapper's closing marker is read in every form the closed
    # call is read in: two JSON calls in one block, a Kimi section whose last call is cut
    # (the whole first call kept), GLM's and LongCat's JSON bodies, the Llama form.
    ("hermes_two_calls_open_at_the_end", "qwen3", f"<tool_call>\n{_W}\n{_W}\n", {},
     expect(tool_calls=[("get_weather", {"city": "Paris"})] * 2)),
    ("kimi_section_cut_in_its_last_call_keeps_the_first", "kimi_k2",
     KIMI_SECTION.removesuffix('{"city": "Shanghai"}<|tool_call_end|><|tool_calls_section_end|>'),
     {}, expect(tool_calls=[("get_weather", {"city": "Beijing"})],
                problems=['<|tool_call_begin|>functions.get_weather:1 '
                          '<|tool_call_argument_begin|>'])),
    ("glm47_json_body_open_at_the_end", "glm47", f"<tool_call>{_W}", {},
     expect(tool_calls=[("get_weather", {"city": "Paris"})])),
    ("qwen3_coder_llama_form_open_at_the_end", "qwen3_coder",
     '<tool_call>\n<function=get_weather>{"city": "Paris"}', {},
     expect(tool_calls=[("get_weather", {"city": "Paris"})])),
    ("hermes_nested_past_what_python_reads_is_a_problem", "qwen3", "<tool_call>" + "[" * 1100, {},
     expect(problems=["<tool_call>" + "[" * 1100])),
    ("gemma4_reply_cut_inside_the_response_label", "gemma4",
     "<|channel>thought\nplan<channel|><|channel>respons", {}, expect(reasoning="plan")),
]

_PAIRS = "".join(f"<parameter=k{i}>\nv\n</parameter>\n" for i in range(17))
CASES += [
    # Third review: a value holding many whole parameter pairs is still one value; the bound
    # counts openings, not tags.
    ("qwen3_coder_value_holding_seventeen_parameter_pairs", "qwen3_coder",
     _qwen3_coder_params("write_file", path="fixture.py", content=f'doc = """\n{_PAIRS}"""'),
     {"tools": WRITE_TOOLS},
     expect(tool_calls=[("write_file", {"path": "fixture.py",
                                        "content": f'doc = """\n{_PAIRS}"""'})])),
    ("gemma4_label_cut_after_whitespace", "gemma4", "\n<|channel>resp",
     {"starts_in_reasoning": True}, expect()),
]

# llama3_json (Llama 3.1-3.3): bare JSON calls, from vLLM's llama3_json tests and the
# formats Meta's llama-models documents. A bare object is a call only when it reads as one
# (and names an offered tool when tools are offered); after <|python_tag|> it is one.
_L = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
_L_PARIS = ("get_weather", {"city": "Paris"})
_L_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
CASES += [
    ("llama3_bare_call", "llama3_json", _L, {}, expect(tool_calls=[_L_PARIS])),
    ("llama3_python_tag_call", "llama3_json",
     '<|python_tag|>{"name": "get_weather", "arguments": {"city": "Paris"}}', {},
     expect(tool_calls=[_L_PARIS])),
    ("llama3_documented_form_with_type", "llama3_json",
     '<|python_tag|>{\n    "type": "function",\n    "name": "get_weather",\n'
     '    "parameters": {"city": "Paris"}\n}', {}, expect(tool_calls=[_L_PARIS])),
    ("llama3_openai_shape_unwrapped", "llama3_json",
     '{"type": "function", "function": ' + _L + "}", {}, expect(tool_calls=[_L_PARIS])),
    ("llama3_calls_separated_by_semicolons", "llama3_json", f"{_L}; {_L} ;{_L}", {},
     expect(tool_calls=[_L_PARIS] * 3)),
    ("llama3_calls_separated_by_newlines_or_nothing", "llama3_json", f"{_L}\n{_L}{_L}", {},
     expect(tool_calls=[_L_PARIS] * 3)),
    ("llama3_calls_separated_by_the_tag", "llama3_json", f"{_L}<|python_tag|>{_L}", {},
     expect(tool_calls=[_L_PARIS] * 2)),
    ("llama3_text_around_a_call_stays_content", "llama3_json",
     f"Here is the result: {_L} Would you like to know more?", {"tools": _L_TOOLS},
     expect(content="Here is the result:  Would you like to know more?",
            tool_calls=[_L_PARIS])),
    ("llama3_braces_inside_strings", "llama3_json",
     '{"name": "parserTool", "parameters": {"text": "He said \\"Hello {world}\\"", '
     '"cmd": "echo a; echo b"}}', {},
     expect(tool_calls=[("parserTool", {"text": 'He said "Hello {world}"',
                                        "cmd": "echo a; echo b"})])),
    ("llama3_nested_parameters", "llama3_json",
     '{"name": "complexTool", "parameters": {"level1": {"level2": {"level3": {"v": "deep"}}}}}',
     {}, expect(tool_calls=[("complexTool", {"level1": {"level2": {"level3": {"v": "deep"}}}})])),
    ("llama3_braces_in_text_after_a_call", "llama3_json",
     f"{_L} I used {{searchTool}} for this.", {},
     expect(content=" I used {searchTool} for this.", tool_calls=[_L_PARIS])),
    ("llama3_json_that_is_no_call_stays_text", "llama3_json",
     'Here is the JSON you asked for: {"name": "John", "age": 30}', {"tools": _L_TOOLS},
     expect(content='Here is the JSON you asked for: {"name": "John", "age": 30}')),
    ("llama3_object_without_parameters_stays_text", "llama3_json",
     '{"name": "toolWithoutParams"} and {"parameters": {}}', {},
     expect(content='{"name": "toolWithoutParams"} and {"parameters": {}}')),
    ("llama3_invalid_json_stays_text", "llama3_json",
     '{"name": "invalidTool", "parameters": {invalid json}', {},
     expect(content='{"name": "invalidTool", "parameters": {invalid json}')),
    ("llama3_unoffered_name_stays_text", "llama3_json",
     '{"name": "delete_files", "parameters": {}}', {"tools": _L_TOOLS},
     expect(content='{"name": "delete_files", "parameters": {}}')),
    ("llama3_code_stays_text", "llama3_json", "Sure: function f() { return 1; }", {},
     expect(content="Sure: function f() { return 1; }")),
    ("llama3_object_after_a_call_that_is_none_keeps_its_newline", "llama3_json",
     f'{_L}\n{{"a": 1}}', {}, expect(content='\n{"a": 1}', tool_calls=[_L_PARIS])),
    ("llama3_tag_before_code_leaves_the_code", "llama3_json", '<|python_tag|>print("hi")', {},
     expect(content='print("hi")')),
    ("llama3_cut_after_the_tag_is_a_problem", "llama3_json",
     '<|python_tag|>{"name": "f", "parameters": {"x": "lo', {},
     expect(problems=['<|python_tag|>{"name": "f", "parameters": {"x": "lo'])),
    ("llama3_cut_bare_object_stays_text", "llama3_json", _L[:30], {},
     expect(content=_L[:30])),
    ("llama3_pythonic_list", "llama3_json", "[get_weather(city='Paris')]", {},
     expect(tool_calls=[_L_PARIS])),
    ("llama3_arguments_as_json_text", "llama3_json",
     '{"name": "get_weather", "parameters": "{\\"city\\": \\"Paris\\"}"}', {},
     expect(tool_calls=[_L_PARIS])),
]

_L_TIME = '{"name": "get_time", "parameters": {}}'
_L_BOTH = _L_TOOLS + [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]
_L_DEFINITION = ('{"type": "function", "function": {"name": "get_weather", "description": "Weather.", '
                 '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}')
CASES += [
    # Review: the prompt lists each tool's definition as JSON; a model repeating one defines,
    # it does not call. Without tools offered, only a reply that starts with an object calls.
    ("llama3_tool_definition_is_no_call", "llama3_json", f"I can use:\n{_L_DEFINITION}",
     {"tools": _L_TOOLS}, expect(content=f"I can use:\n{_L_DEFINITION}")),
    ("llama3_json_mid_reply_without_tools_is_text", "llama3_json",
     'Config:\n```json\n{"name": "my-app", "arguments": {"debug": true}}\n```', {},
     expect(content='Config:\n```json\n{"name": "my-app", "arguments": {"debug": true}}\n```')),
    ("llama3_separator_before_prose_is_text", "llama3_json",
     f"Calling {_L}; the result follows.", {"tools": _L_TOOLS},
     expect(content="Calling ; the result follows.", tool_calls=[_L_PARIS])),
    ("llama3_comma_before_an_object_that_is_no_call_is_text", "llama3_json", f'{_L},{{"a": 1}}',
     {}, expect(content=',{"a": 1}', tool_calls=[_L_PARIS])),
    ("llama3_separators_between_calls_are_markup", "llama3_json", f"{_L} ;\n {_L_TIME}; ",
     {"tools": _L_BOTH}, expect(content=" ", tool_calls=[_L_PARIS, ("get_time", {})])),
    ("llama3_function_tag_needs_an_offered_name_and_its_shape", "llama3_json",
     'Like <function=spotify>{"n": 5}</function> or <function=NAME>. <function=delete_all>{}'
     f'</function> {_L}', {"tools": _L_TOOLS},
     expect(content='Like <function=spotify>{"n": 5}</function> or <function=NAME>. '
                    '<function=delete_all>{}</function> ', tool_calls=[_L_PARIS])),
    ("llama3_function_tag_without_tools_is_text", "llama3_json",
     'Custom tools look like <function=spotify>{"n": 5}</function>, see docs.', {},
     expect(content='Custom tools look like <function=spotify>{"n": 5}</function>, see docs.')),
    ("pythonic_bracketed_words_with_a_parenthesis_are_text", "pythonic",
     "[Update (2024): it's done] More.", {"starts_in_reasoning": False},
     expect(content="[Update (2024): it's done] More.")),
    ("llama3_bracketed_prose_first_then_a_call", "llama3_json",
     f"[Editor's note] Here: {_L}", {"tools": _L_TOOLS},
     expect(content="[Editor's note] Here: ", tool_calls=[_L_PARIS])),
    ("llama3_json_list_of_calls", "llama3_json", f"[{_L}, {_L_TIME}]", {},
     expect(tool_calls=[_L_PARIS, ("get_time", {})])),
    ("llama3_function_tag_form", "llama3_json",
     'Sure.<function=get_weather>{"city": "Paris"}</function>', {"tools": _L_TOOLS},
     expect(content="Sure.", tool_calls=[_L_PARIS])),
    ("pythonic_bracketed_prose_is_text", "pythonic", "[1] See the footnote.", {},
     expect(content="[1] See the footnote.")),
    # Gemma 4: whitespace between a call and a bare call after it is markup too.
    ("gemma4_newline_before_a_bare_call_is_markup", "gemma4",
     "<|tool_call>call:f{a:1}<tool_call|>\ncall:g{b:2}", {},
     expect(tool_calls=[("f", {"a": 1}), ("g", {"b": 2})])),
]
