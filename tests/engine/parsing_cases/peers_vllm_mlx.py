"""vllm-mlx's own reasoning and tool-parser test cases (waybarrios/vllm-mlx ``tests/``), ported
for every format one of our families reads: test_reasoning_parser.py (Qwen3, DeepSeek-R1,
Gemma 4), test_gemma4_streaming_edge.py, test_gemma4_parser.py, test_gemma4_tool_parser.py,
test_gemma4_openai_format.py, test_deepseek_v4_reasoning.py, test_deepseek_v4_tool_parser.py,
test_tool_parsers.py (Mistral, Qwen/Hermes, Llama, DeepSeek, Kimi, Nemotron's XML, Qwen3-Coder,
GLM-4.7, the bracket prose of its auto parser) and the parser-level streams of test_server.py.

Same case shape as ``core.py``; ``test_parsing.py`` runs each through the buffered parse and
every chunking, which stands for vllm-mlx's delta-by-delta streaming tests (split markers,
one token at a time, "nothing is lost", "markup never leaks"). Each block names the peer file.

Not ported: their GPT-OSS/Harmony parsers (test_harmony_parsers.py, test_gpt_oss_tool_parsing.py
and the ``gpt_oss`` cases of test_reasoning_parser.py: no family of ours reads Harmony
channels), Granite's ``<|tool_call|>``, xLAM, Functionary and their auto-detecting parser
(no such families), registry/class/id-shape unit tests, and their own history rendering
``[Calling tool: f({...})]`` as a call format.

Differences that run through them, asserted as ours:

- vllm-mlx returns ``None`` for empty reasoning or content and strips the text around markers;
  we keep text verbatim (newlines and spaces next to a marker included) and "" for nothing.
- vllm-mlx's parsers strip ``<think>`` blocks wherever they are; our families read the
  markers their models write, and a block after the reply has spoken is text (see
  ``StreamFilter``'s docstring).
- A tool call cut inside its arguments is a problem (its raw text), never a call run with
  part of its arguments (vllm-mlx drops the cut parameter and keeps the call).
- The start state comes from the rendered prompt (DESIGN.md, principle 2): a case passes
  ``starts_in_reasoning`` as its template would have decided it.
"""

from .core import expect

Q = '<|"|>'  # Gemma 4's string quote
D = "｜DSML｜"
DSML_START, DSML_END = f"<{D}tool_calls>", f"</{D}tool_calls>"


def _invoke(name: str, *params: str) -> str:
    return f'<{D}invoke name="{name}">\n' + "\n".join(params) + f"\n</{D}invoke>"


def _param(name: str, value: str, *, text: bool = True) -> str:
    return f'<{D}parameter name="{name}" string="{"true" if text else "false"}">{value}</{D}parameter>'


def _dsml(*invokes: str) -> str:
    return f"{DSML_START}\n" + "\n".join(invokes) + f"\n{DSML_END}"


def _tools(*names: str) -> list[dict]:
    return [{"type": "function", "function": {"name": n}} for n in names]


_QUANTUM = ("\n        First, I need to understand the problem.\n        The user is asking about "
            "quantum computing.\n\n        Let me break this down:\n        1. Quantum bits "
            "(qubits) can be in superposition\n        2. Entanglement allows correlated states\n"
            "        3. Quantum gates perform operations\n\n        After careful analysis, I can "
            "provide an answer.\n        ")
_CODE = ("\nLet me analyze the code:\n```python\ndef factorial(n):\n    if n <= 1:\n        return 1"
         "\n    return n * factorial(n-1)\n```\nThis is a recursive implementation.\n")
_STEPS = "\n".join(f"Step {i}: processing data chunk {i}" for i in range(100))
_TOKENS = "Let me analyze this.\nStep 1: check input\nStep 2: compute"

CASES = []
# -- test_reasoning_parser.py: Qwen3 and DeepSeek-R1 -------------------------------------------
for fam in ("qwen3", "deepseek_r1"):
    CASES += [
        (f"vllm_mlx_{fam}_both_tags", fam, "<think>Let me analyze this problem</think>The answer is 42.",
         {}, expect("Let me analyze this problem", "The answer is 42.")),
        (f"vllm_mlx_{fam}_only_reasoning", fam, "<think>Just thinking out loud</think>", {},
         expect("Just thinking out loud")),
        (f"vllm_mlx_{fam}_multiline_reasoning", fam,
         "<think>Step 1: Analyze\nStep 2: Solve\nStep 3: Verify</think>Result: 42", {},
         expect("Step 1: Analyze\nStep 2: Solve\nStep 3: Verify", "Result: 42")),
        (f"vllm_mlx_{fam}_empty_output", fam, "", {}, expect()),
        # Whitespace-only reasoning is kept as written (vllm-mlx: None or blank).
        (f"vllm_mlx_{fam}_whitespace_only_reasoning", fam, "<think>   </think>content", {},
         expect("   ", "content")),
        # Nested tags ("behaviour may vary" there): a repeated <think> inside reasoning opens
        # nothing, the first </think> ends it, and a later lone </think> is a stray token.
        (f"vllm_mlx_{fam}_nested_tags", fam,
         "<think>outer<think>inner</think>still outer</think>content", {},
         expect("outerinner", "still outercontent")),
        (f"vllm_mlx_{fam}_token_by_token", fam, f"<think>{_TOKENS}</think>The answer is 42.", {},
         expect(_TOKENS, "The answer is 42.")),
        (f"vllm_mlx_{fam}_long_reasoning", fam,
         f"<think>{_QUANTUM}</think>Quantum computing uses qubits.", {},
         expect(_QUANTUM, "Quantum computing uses qubits.")),
        (f"vllm_mlx_{fam}_no_content_after_reasoning", fam, "<think>just thinking</think>", {},
         expect("just thinking")),
        (f"vllm_mlx_{fam}_unicode", fam,
         "<think>分析这个问题：日本語テスト émojis: 🤔💭</think>答案是42", {},
         expect("分析这个问题：日本語テスト émojis: 🤔💭", "答案是42")),
        (f"vllm_mlx_{fam}_code_in_reasoning", fam,
         f"<think>{_CODE}</think>The factorial function uses recursion.", {},
         expect(_CODE, "The factorial function uses recursion.")),
        (f"vllm_mlx_{fam}_html_like_text", fam,
         "<think>The user mentioned <div> and <span> tags</think>Use CSS for styling.", {},
         expect("The user mentioned <div> and <span> tags", "Use CSS for styling.")),
        (f"vllm_mlx_{fam}_math", fam,
         "<think>Given: x² + 2x + 1 = 0, so (x+1)² = 0, x = -1</think>x = -1", {},
         expect("Given: x² + 2x + 1 = 0, so (x+1)² = 0, x = -1", "x = -1")),
        (f"vllm_mlx_{fam}_large_output", fam, f"<think>{_STEPS}</think>Processing complete.", {},
         expect(_STEPS, "Processing complete.")),
        # Their "many small chunks" stream is "<think>A" a hundred times: the repeats open
        # nothing new.
        (f"vllm_mlx_{fam}_repeated_open_tags", fam, "<think>A" * 100 + "</think>" + "B" * 50, {},
         expect("A" * 100, "B" * 50)),
    ]

CASES += [
    ("vllm_mlx_qwen3_no_tags_is_content", "qwen3", "Just a regular response without thinking.",
     {}, expect(content="Just a regular response without thinking.")),
    # vllm-mlx's Qwen3 parser keeps an unclosed <think> in content; a reply cut by max_tokens
    # inside its thought is still thought here, not the answer.
    ("vllm_mlx_qwen3_only_start_tag_is_reasoning", "qwen3",
     "<think>Started thinking but never finished", {},
     expect("Started thinking but never finished")),
    ("vllm_mlx_qwen3_implicit_mode", "qwen3", "Some text</think>more text", {},
     expect("Some text", "more text")),
    ("vllm_mlx_qwen3_streamed_flow", "qwen3", "<think>thinking</think>answer", {},
     expect("thinking", "answer")),
    ("vllm_mlx_qwen3_transition_in_one_delta", "qwen3",
     "<think>reasoning more</think>content here", {}, expect("reasoning more", "content here")),
    ("vllm_mlx_qwen3_empty_think_tags", "qwen3", "<think></think>Just the answer.", {},
     expect(content="Just the answer.")),
    ("vllm_mlx_qwen3_space_between_tags", "qwen3", "<think> </think>answer", {},
     expect(" ", "answer")),
    ("vllm_mlx_qwen3_newlines_between_tags", "qwen3", "<think>\n\n</think>answer", {},
     expect("\n\n", "answer")),
    ("vllm_mlx_qwen3_tabs_between_tags", "qwen3", "<think>\t\t</think>answer", {},
     expect("\t\t", "answer")),
    ("vllm_mlx_deepseek_r1_implicit_start_tag", "deepseek_r1",
     "Implicit reasoning content</think>The answer", {},
     expect("Implicit reasoning content", "The answer")),
    ("vllm_mlx_deepseek_r1_implicit_streamed", "deepseek_r1",
     "reasoning text here</think>answer", {}, expect("reasoning text here", "answer")),
    ("vllm_mlx_deepseek_r1_long_implicit", "deepseek_r1",
     "Let me think about this problem carefully.\n\nFirst, I need to consider the constraints.\n"
     "Then, I'll apply the algorithm.\nFinally, I'll verify the result.</think>The answer is 42.",
     {}, expect("Let me think about this problem carefully.\n\nFirst, I need to consider the "
                "constraints.\nThen, I'll apply the algorithm.\nFinally, I'll verify the result.",
                "The answer is 42.")),
    # vllm-mlx reads a DeepSeek-R1 reply without tags as content; R1's template pre-fills
    # <think>, so such a reply is all thought (a prompt that did not pre-fill says so).
    ("vllm_mlx_deepseek_r1_no_tags_is_thought", "deepseek_r1", "Just a regular response.", {},
     expect("Just a regular response.")),
    ("vllm_mlx_deepseek_r1_no_tags_not_prefilled", "deepseek_r1", "Just a regular response.",
     {"starts_in_reasoning": False}, expect(content="Just a regular response.")),
]

# -- test_reasoning_parser.py and test_gemma4_streaming_edge.py: Gemma 4 ------------------------
_GREETING = 'The user said "hi". Plan: greet politely.\n'
CASES += [
    # The newline before <channel|> is the thought's own text (vllm-mlx strips it).
    ("vllm_mlx_gemma4_standard_format", "gemma4",
     "<|channel>thought\nLet me think step by step.\n<channel|>The answer is 42.", {},
     expect("Let me think step by step.\n", "The answer is 42.")),
    ("vllm_mlx_gemma4_response_channel_format", "gemma4",
     "<|channel>thought\nAnalyzing the problem.\n<|channel>response\nThe result is 7.", {},
     expect("Analyzing the problem.\n", "The result is 7.")),
    ("vllm_mlx_gemma4_thought_label_stripped", "gemma4",
     "<|channel>thought\nActual reasoning here<channel|>Content", {},
     expect("Actual reasoning here", "Content")),
    ("vllm_mlx_gemma4_no_tags_is_content", "gemma4", "Just a regular response without thinking.",
     {}, expect(content="Just a regular response without thinking.")),
    ("vllm_mlx_gemma4_only_start_tag", "gemma4", "<|channel>thought\nStill thinking...", {},
     expect("Still thinking...")),
    ("vllm_mlx_gemma4_only_end_tag", "gemma4", "thought\nImplicit reasoning<channel|>The answer", {},
     expect("Implicit reasoning", "The answer")),
    ("vllm_mlx_gemma4_only_end_tag_prompt_opened", "gemma4",
     "thought\nImplicit reasoning<channel|>The answer", {"starts_in_reasoning": True},
     expect("Implicit reasoning", "The answer")),
    ("vllm_mlx_gemma4_empty_reasoning", "gemma4", "<|channel>thought\n<channel|>Only content here.",
     {}, expect(content="Only content here.")),
    ("vllm_mlx_gemma4_multiline_reasoning", "gemma4",
     "<|channel>thought\nStep 1: Understand the question.\nStep 2: Analyze the data.\n"
     "Step 3: Form conclusion.\n<channel|>The conclusion is clear.", {},
     expect("Step 1: Understand the question.\nStep 2: Analyze the data.\nStep 3: Form "
            "conclusion.\n", "The conclusion is clear.")),
    ("vllm_mlx_gemma4_unicode_reasoning", "gemma4",
     "<|channel>thought\n日本語テスト 🤔\n<channel|>答えは42", {}, expect("日本語テスト 🤔\n", "答えは42")),
    ("vllm_mlx_gemma4_label_split_across_deltas", "gemma4",
     "<|channel>thought\nreal reasoning<channel|>content", {}, expect("real reasoning", "content")),
    ("vllm_mlx_gemma4_response_channel_after_thought", "gemma4",
     "<|channel>thought\nreasoning text<|channel>response\ncontent text", {},
     expect("reasoning text", "content text")),
    ("vllm_mlx_gemma4_realistic_production_stream", "gemma4",
     f"<|channel>thought\n{_GREETING}<|channel>response\nHello! How can I help you today?", {},
     expect(_GREETING, "Hello! How can I help you today?")),
    ("vllm_mlx_gemma4_no_transition_stays_thought", "gemma4",
     "<|channel>thought\nreasoning with no transition", {},
     expect("reasoning with no transition")),
    # vllm-mlx flushes a channel marker the reply ends on as thought ("text<|channel>"); it is
    # markup that opened nothing before the reply ended, not text.
    ("vllm_mlx_gemma4_channel_marker_at_the_end", "gemma4", "<|channel>thought\ntext<|channel>", {},
     expect("text")),
    # test_server.py: a reply cut by max_tokens keeps the answer's tail, half a marker included.
    ("vllm_mlx_gemma4_length_cut_keeps_the_tail", "gemma4",
     "<|channel>thought\nplan<channel|>FINAL<|chan", {}, expect("plan", "FINAL<|chan")),
]

# -- test_gemma4_tool_parser.py and test_gemma4_parser.py ---------------------------------------
CASES += [
    ("vllm_mlx_gemma4_call_string_arg", "gemma4",
     f"<|tool_call>call:read_file{{path:{Q}/tmp/foo.py{Q}}}<tool_call|>", {},
     expect(tool_calls=[("read_file", {"path": "/tmp/foo.py"})])),
    ("vllm_mlx_gemma4_call_number_and_bool", "gemma4",
     "<|tool_call>call:search{limit:10,verbose:false}<tool_call|>", {},
     expect(tool_calls=[("search", {"limit": 10, "verbose": False})])),
    ("vllm_mlx_gemma4_call_mixed_types", "gemma4",
     f"<|tool_call>call:search{{query:{Q}hello world{Q},limit:10,verbose:false}}<tool_call|>", {},
     expect(tool_calls=[("search", {"query": "hello world", "limit": 10, "verbose": False})])),
    ("vllm_mlx_gemma4_call_nested_object", "gemma4",
     f"<|tool_call>call:configure{{settings:{{enabled:true,name:{Q}test{Q}}}}}<tool_call|>", {},
     expect(tool_calls=[("configure", {"settings": {"enabled": True, "name": "test"}})])),
    ("vllm_mlx_gemma4_call_array", "gemma4",
     f"<|tool_call>call:tag{{items:[{Q}foo{Q},{Q}bar{Q}]}}<tool_call|>", {},
     expect(tool_calls=[("tag", {"items": ["foo", "bar"]})])),
    ("vllm_mlx_gemma4_two_calls_in_one_block", "gemma4",
     f"<|tool_call>call:glob{{pattern:{Q}README*.md{Q}}}call:glob{{pattern:{Q}CONTRIBUTING.md{Q}}}"
     "<tool_call|>", {},
     expect(tool_calls=[("glob", {"pattern": "README*.md"}),
                        ("glob", {"pattern": "CONTRIBUTING.md"})])),
    # The newline before the call is the answer's text (vllm-mlx strips it).
    ("vllm_mlx_gemma4_content_before_call", "gemma4",
     f"Let me read that file for you.\n<|tool_call>call:read_file{{path:{Q}/tmp/foo{Q}}}<tool_call|>",
     {}, expect(content="Let me read that file for you.\n",
                tool_calls=[("read_file", {"path": "/tmp/foo"})])),
    # No call either way; an empty call block is shown as a problem, not dropped silently.
    ("vllm_mlx_gemma4_empty_call_block", "gemma4", "<|tool_call><tool_call|>", {},
     expect(problems=["<|tool_call><tool_call|>"])),
    ("vllm_mlx_gemma4_escaped_newline_stays_literal", "gemma4",
     f"<|tool_call>call:write{{content:{Q}line1\\nline2{Q}}}<tool_call|>", {},
     expect(tool_calls=[("write", {"content": "line1\\nline2"})])),
    ("vllm_mlx_gemma4_deeply_nested", "gemma4",
     "<|tool_call>call:update{a:{b:{c:1,d:true}}}<tool_call|>", {},
     expect(tool_calls=[("update", {"a": {"b": {"c": 1, "d": True}}})])),
    # test_gemma4_openai_format.py: nested objects and arrays survive to the call's arguments.
    ("vllm_mlx_gemma4_object_holding_an_array", "gemma4",
     f"<|tool_call>call:configure{{settings:{{enabled:true,tags:[{Q}a{Q},{Q}b{Q}]}}}}<tool_call|>",
     {}, expect(tool_calls=[("configure", {"settings": {"enabled": True, "tags": ["a", "b"]}})])),
    ("vllm_mlx_gemma4_null_value", "gemma4", "<|tool_call>call:clear{target:null}<tool_call|>", {},
     expect(tool_calls=[("clear", {"target": None})])),
    ("vllm_mlx_gemma4_unicode_emoji_args", "gemma4",
     f"<|tool_call>call:search{{query:{Q}hello world 🌍 你好{Q}}}<tool_call|>", {},
     expect(tool_calls=[("search", {"query": "hello world 🌍 你好"})])),
    ("vllm_mlx_gemma4_braces_inside_string", "gemma4",
     f"<|tool_call>call:run{{code:{Q}if (x) {{ return y; }}{Q}}}<tool_call|>", {},
     expect(tool_calls=[("run", {"code": "if (x) { return y; }"})])),
    ("vllm_mlx_gemma4_quoted_keys", "gemma4",
     f"<|tool_call>call:read{{{Q}path{Q}:{Q}/tmp/foo{Q}}}<tool_call|>", {},
     expect(tool_calls=[("read", {"path": "/tmp/foo"})])),
    # Gemma 4 thinks in its channel, not in <think> tags: such tags are its answer's text.
    ("vllm_mlx_gemma4_think_tags_are_text", "gemma4",
     f"<think>Let me think about this...</think><|tool_call>call:search{{query:{Q}test{Q}}}"
     "<tool_call|>", {},
     expect(content="<think>Let me think about this...</think>",
            tool_calls=[("search", {"query": "test"})])),
    ("vllm_mlx_gemma4_missing_end_delimiter", "gemma4",
     f"<|tool_call>call:read_file{{path:{Q}/tmp/foo{Q}}}", {},
     expect(tool_calls=[("read_file", {"path": "/tmp/foo"})])),
    ("vllm_mlx_gemma4_string_with_colon", "gemma4",
     f"<|tool_call>call:connect{{url:{Q}host:8080{Q}}}<tool_call|>", {},
     expect(tool_calls=[("connect", {"url": "host:8080"})])),
    ("vllm_mlx_gemma4_string_with_newline_and_quote", "gemma4",
     f'<|tool_call>call:write{{text:{Q}line1\nline2 said "hello"{Q}}}<tool_call|>', {},
     expect(tool_calls=[("write", {"text": 'line1\nline2 said "hello"'})])),
    ("vllm_mlx_gemma4_two_strings", "gemma4",
     f"<|tool_call>call:get_weather{{location:{Q}San Francisco{Q},unit:{Q}celsius{Q}}}<tool_call|>",
     {}, expect(tool_calls=[("get_weather", {"location": "San Francisco", "unit": "celsius"})])),
    ("vllm_mlx_gemma4_int_and_float", "gemma4",
     "<|tool_call>call:report{temperature:15,humidity:0.75}<tool_call|>", {},
     expect(tool_calls=[("report", {"temperature": 15, "humidity": 0.75})])),
    ("vllm_mlx_gemma4_string_with_punctuation", "gemma4",
     f"<|tool_call>call:say{{message:{Q}Hello, how are you? I'm fine!{Q}}}<tool_call|>", {},
     expect(tool_calls=[("say", {"message": "Hello, how are you? I'm fine!"})])),
    ("vllm_mlx_gemma4_string_with_embedded_quotes", "gemma4",
     f'<|tool_call>call:say{{message:{Q}She said "hello"{Q}}}<tool_call|>', {},
     expect(tool_calls=[("say", {"message": 'She said "hello"'})])),
    ("vllm_mlx_gemma4_text_around_call", "gemma4",
     f"Let me check the weather. <|tool_call>call:get_weather{{location:{Q}SF{Q}}}<tool_call|> Done.",
     {}, expect(content="Let me check the weather.  Done.",
                tool_calls=[("get_weather", {"location": "SF"})])),
    ("vllm_mlx_gemma4_two_blocks", "gemma4",
     f"<|tool_call>call:get_weather{{location:{Q}SF{Q}}}<tool_call|>"
     f"<|tool_call>call:get_time{{timezone:{Q}PST{Q}}}<tool_call|>", {},
     expect(tool_calls=[("get_weather", {"location": "SF"}), ("get_time", {"timezone": "PST"})])),
    ("vllm_mlx_gemma4_hyphenated_name", "gemma4",
     f"<|tool_call>call:web-search{{query:{Q}hello{Q}}}<tool_call|>", {},
     expect(tool_calls=[("web-search", {"query": "hello"})])),
    ("vllm_mlx_gemma4_text_then_streamed_call", "gemma4",
     f"Sure. <|tool_call>call:read_file{{path:{Q}/tmp/foo{Q}}}<tool_call|>", {},
     expect(content="Sure. ", tool_calls=[("read_file", {"path": "/tmp/foo"})])),
]

# -- test_deepseek_v4_reasoning.py ---------------------------------------------------------------
_V4_BLOCK = _dsml(_invoke("f", _param("a", "1")))
CASES += [
    ("vllm_mlx_deepseek_v4_prompt_opened_think", "deepseek_v4", "weighing it</think>Answer.",
     {"starts_in_reasoning": True}, expect("weighing it", "Answer.")),
    ("vllm_mlx_deepseek_v4_explicit_tags", "deepseek_v4", "<think>weighing it</think>Answer.",
     {"starts_in_reasoning": True}, expect("weighing it", "Answer.")),
    ("vllm_mlx_deepseek_v4_no_tags_in_chat_mode", "deepseek_v4", "Just an answer.",
     {"starts_in_reasoning": False}, expect(content="Just an answer.")),
    ("vllm_mlx_deepseek_v4_call_ends_unterminated_thought", "deepseek_v4",
     f"I should call it{_V4_BLOCK}", {"starts_in_reasoning": True},
     expect("I should call it", tool_calls=[("f", {"a": "1"})])),
    ("vllm_mlx_deepseek_v4_explicit_open_then_call", "deepseek_v4", f"<think>thinking{_V4_BLOCK}",
     {"starts_in_reasoning": True}, expect("thinking", tool_calls=[("f", {"a": "1"})])),
    ("vllm_mlx_deepseek_v4_closed_thought_before_call", "deepseek_v4",
     f"thinking</think>Calling.\n\n{_V4_BLOCK}", {"starts_in_reasoning": True},
     expect("thinking", "Calling.\n\n", tool_calls=[("f", {"a": "1"})])),
    # Their finalize test: an ordinary "<" at the end is text, not a marker to drop.
    ("vllm_mlx_deepseek_v4_final_lone_angle_bracket", "deepseek_v4", "2 <",
     {"starts_in_reasoning": True}, expect("2 <")),
]

# -- test_deepseek_v4_tool_parser.py -------------------------------------------------------------
_V4_TWO = _dsml(_invoke("get_weather", _param("city", "Prague"), _param("days", "3", text=False)),
                _invoke("search", _param("q", "mlx")))
_V4_TWO_PARSED = [("get_weather", {"city": "Prague", "days": 3}), ("search", {"q": "mlx"})]
_V4 = {"starts_in_reasoning": False}
CASES += [
    ("vllm_mlx_deepseek_v4_single_call", "deepseek_v4",
     "Let me check.\n\n" + _dsml(_invoke("get_weather", _param("city", "Prague"))), _V4,
     expect(content="Let me check.\n\n", tool_calls=[("get_weather", {"city": "Prague"})])),
    ("vllm_mlx_deepseek_v4_parallel_calls", "deepseek_v4",
     _dsml(_invoke("search", _param("q", "mlx")), _invoke("get_weather", _param("city", "Brno"))),
     _V4, expect(tool_calls=[("search", {"q": "mlx"}), ("get_weather", {"city": "Brno"})])),
    ("vllm_mlx_deepseek_v4_content_after_reasoning", "deepseek_v4",
     "deliberating</think>Checking.\n\n" + _dsml(_invoke("f", _param("x", "1"))),
     {"starts_in_reasoning": True},
     expect("deliberating", "Checking.\n\n", tool_calls=[("f", {"x": "1"})])),
    ("vllm_mlx_deepseek_v4_string_parameter_kept_raw", "deepseek_v4",
     _dsml(_invoke("f", _param("s", "42"))), _V4, expect(tool_calls=[("f", {"s": "42"})])),
    ("vllm_mlx_deepseek_v4_markup_like_string", "deepseek_v4",
     _dsml(_invoke("f", _param("s", 'has "quotes" & <tags> and {"json": 1}'))), _V4,
     expect(tool_calls=[("f", {"s": 'has "quotes" & <tags> and {"json": 1}'})])),
    ("vllm_mlx_deepseek_v4_unparseable_json_stays_text", "deepseek_v4",
     _dsml(_invoke("f", _param("v", "{not json", text=False))), _V4,
     expect(tool_calls=[("f", {"v": "{not json"})])),
    ("vllm_mlx_deepseek_v4_multiple_parameters", "deepseek_v4",
     _dsml(_invoke("f", _param("a", "x"), _param("b", "2", text=False),
                   _param("c", "[true]", text=False))), _V4,
     expect(tool_calls=[("f", {"a": "x", "b": 2, "c": [True]})])),
    ("vllm_mlx_deepseek_v4_call_without_parameters", "deepseek_v4",
     f'{DSML_START}\n<{D}invoke name="ping">\n</{D}invoke>\n{DSML_END}', _V4,
     expect(tool_calls=[("ping", {})])),
    ("vllm_mlx_deepseek_v4_cut_after_start_marker", "deepseek_v4", f"text{DSML_START}\n", _V4,
     expect(content="text", problems=[f"{DSML_START}\n"])),
    ("vllm_mlx_deepseek_v4_cut_in_invoke_header", "deepseek_v4",
     f'{DSML_START}\n<{D}invoke name="f', _V4, expect(problems=[f'{DSML_START}\n<{D}invoke name="f'])),
    # vllm-mlx keeps the call and drops the cut parameter; a call never runs without it here.
    ("vllm_mlx_deepseek_v4_cut_parameter_is_a_problem", "deepseek_v4",
     f'{DSML_START}\n<{D}invoke name="f">\n{_param("a", "x")}\n'
     f'<{D}parameter name="b" string="true">unterminated', _V4,
     expect(problems=[f'{DSML_START}\n<{D}invoke name="f">\n{_param("a", "x")}\n'
                      f'<{D}parameter name="b" string="true">unterminated'])),
    ("vllm_mlx_deepseek_v4_missing_end_marker", "deepseek_v4",
     f"{DSML_START}\n" + _invoke("f", _param("a", "1")), _V4, expect(tool_calls=[("f", {"a": "1"})])),
    ("vllm_mlx_deepseek_v4_two_calls_streamed", "deepseek_v4", "Checking.\n\n" + _V4_TWO, _V4,
     expect(content="Checking.\n\n", tool_calls=_V4_TWO_PARSED)),
    ("vllm_mlx_deepseek_v4_marker_lookalike_is_text", "deepseek_v4", "hello <｜not-dsml after", _V4,
     expect(content="hello <｜not-dsml after")),
    ("vllm_mlx_deepseek_v4_plain_text", "deepseek_v4", "no tools here at all", _V4,
     expect(content="no tools here at all")),
    ("vllm_mlx_deepseek_v4_chained_with_reasoning", "deepseek_v4",
     "deciding what to call</think>Checking.\n\n" + _V4_TWO, {"starts_in_reasoning": True},
     expect("deciding what to call", "Checking.\n\n", tool_calls=_V4_TWO_PARSED)),
]
for raw, value in [("3", 3), ("3.5", 3.5), ("true", True), ("false", False), ("null", None),
                   ("[1, 2]", [1, 2]), ('{"a": {"b": [1]}}', {"a": {"b": [1]}})]:
    CASES.append((f"vllm_mlx_deepseek_v4_json_value_{raw}", "deepseek_v4",
                  _dsml(_invoke("f", _param("v", raw, text=False))), _V4,
                  expect(tool_calls=[("f", {"v": value})])))

# -- test_tool_parsers.py ------------------------------------------------------------------------
_PARIS = ("get_weather", {"city": "Paris"})
CASES += [
    # Mistral
    ("vllm_mlx_mistral_old_format_single", "mistral",
     '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]', {},
     expect(tool_calls=[_PARIS])),
    ("vllm_mlx_mistral_old_format_multiple", "mistral",
     '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
     '{"name": "get_time", "arguments": {"timezone": "UTC"}}]', {},
     expect(tool_calls=[_PARIS, ("get_time", {"timezone": "UTC"})])),
    ("vllm_mlx_mistral_new_format", "mistral", '[TOOL_CALLS]get_weather{"city": "London"}', {},
     expect(tool_calls=[("get_weather", {"city": "London"})])),
    ("vllm_mlx_mistral_no_call", "mistral", "Hello, how can I help you today?", {},
     expect(content="Hello, how can I help you today?")),
    ("vllm_mlx_mistral_content_before_call", "mistral",
     'Let me check the weather for you.[TOOL_CALLS] [{"name": "get_weather", "arguments": {}}]',
     {}, expect(content="Let me check the weather for you.", tool_calls=[("get_weather", {})])),
    ("vllm_mlx_mistral_unicode_arguments", "mistral",
     '[TOOL_CALLS] [{"name": "translate", "arguments": {"text": "日本語"}}]', {},
     expect(tool_calls=[("translate", {"text": "日本語"})])),
    # Qwen / Hermes
    ("vllm_mlx_qwen_xml_format", "qwen3",
     '<tool_call>{"name": "calculate", "arguments": {"x": 1, "y": 2}}</tool_call>', {},
     expect(tool_calls=[("calculate", {"x": 1, "y": 2})])),
    ("vllm_mlx_qwen_multiple_xml_calls", "qwen3",
     '<tool_call>{"name": "func1", "arguments": {}}</tool_call>'
     '<tool_call>{"name": "func2", "arguments": {}}</tool_call>', {},
     expect(tool_calls=[("func1", {}), ("func2", {})])),
    ("vllm_mlx_qwen_no_call", "qwen3", "I can help you with that question.", {},
     expect(content="I can help you with that question.")),
    # "[Calling tool: f({...})]" is how vllm-mlx writes past calls into a prompt for templates
    # without tool messages; no model's own call markup, so it stays text here.
    ("vllm_mlx_qwen_bracket_history_form_is_text", "qwen3", '[Calling tool: add({"a": 5, "b": 3})]',
     {}, expect(content='[Calling tool: add({"a": 5, "b": 3})]')),
    ("vllm_mlx_hermes_call", "qwen3",
     '<tool_call>{"name": "search", "arguments": {"query": "test"}}</tool_call>', {},
     expect(tool_calls=[("search", {"query": "test"})])),
    ("vllm_mlx_hermes_think_then_call", "qwen3",
     '<think>Let me search for that information.</think>\n'
     '<tool_call>{"name": "search", "arguments": {"query": "weather"}}</tool_call>', {},
     expect("Let me search for that information.", "\n",
            tool_calls=[("search", {"query": "weather"})])),
    ("vllm_mlx_hermes_think_no_call", "qwen3", "<think>Let me think about this</think>The answer is 42.",
     {}, expect("Let me think about this", "The answer is 42.")),
    ("vllm_mlx_hermes_text_then_call", "qwen3",
     'Sure, let me check.<tool_call>{"name": "search", "arguments": {"q": "test"}}</tool_call>', {},
     expect(content="Sure, let me check.", tool_calls=[("search", {"q": "test"})])),
    ("vllm_mlx_hermes_angle_brackets_in_text", "qwen3", "Use x < 10 and y > 5", {},
     expect(content="Use x < 10 and y > 5")),
    ("vllm_mlx_hermes_content_after_call", "qwen3",
     '<tool_call>{"name": "func", "arguments": {}}</tool_call>\nHere is the result.', {},
     expect(content="\nHere is the result.", tool_calls=[("func", {})])),
    ("vllm_mlx_hermes_two_calls_newline_between", "qwen3",
     '<tool_call>{"name": "read_file", "arguments": {"path": "/a.py"}}</tool_call>\n'
     '<tool_call>{"name": "list_dir", "arguments": {"dir": "/src"}}</tool_call>', {},
     expect(content="\n", tool_calls=[("read_file", {"path": "/a.py"}),
                                       ("list_dir", {"dir": "/src"})])),
    ("vllm_mlx_hermes_nested_arguments", "qwen3",
     '<tool_call>{"name": "complex", "arguments": {"level1": {"level2": {"level3": [1, 2, 3]}}}}'
     "</tool_call>", {},
     expect(tool_calls=[("complex", {"level1": {"level2": {"level3": [1, 2, 3]}}})])),
    ("vllm_mlx_qwen_html_lookalike", "qwen3", "Hello<div>", {}, expect(content="Hello<div>")),
    # test_server.py: a call without "arguments" has none.
    ("vllm_mlx_hermes_call_without_arguments", "qwen3",
     '<think>reasoning</think><tool_call>{"name":"search"}</tool_call>', {},
     expect("reasoning", tool_calls=[("search", {})])),
    # Nemotron's form, Qwen3's XML call inside <tool_call> (read by the Hermes family)
    ("vllm_mlx_nemotron_parameter_format", "qwen3",
     "<tool_call><function=get_weather><parameter=city>Paris</parameter><parameter=units>celsius"
     "</parameter></function></tool_call>", {},
     expect(tool_calls=[("get_weather", {"city": "Paris", "units": "celsius"})])),
    ("vllm_mlx_nemotron_json_format", "qwen3",
     '<tool_call><function=calculate>{"expression": "2*3"}</function></tool_call>', {},
     expect(tool_calls=[("calculate", {"expression": "2*3"})])),
    ("vllm_mlx_nemotron_multiple_calls", "qwen3",
     "<tool_call><function=func1><parameter=a>1</parameter></function></tool_call>"
     "<tool_call><function=func2><parameter=b>2</parameter></function></tool_call>", {},
     expect(tool_calls=[("func1", {"a": "1"}), ("func2", {"b": "2"})])),
    ("vllm_mlx_nemotron_typed_by_the_schema", "qwen3",
     "<tool_call><function=list_directory><parameter=path>/Users/testuser</parameter></function>"
     "</tool_call>",
     {"tools": [{"type": "function", "function": {"name": "list_directory", "parameters": {
         "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]},
     expect(tool_calls=[("list_directory", {"path": "/Users/testuser"})])),
    # A bare <function=...> outside <tool_call> is Qwen3-Coder's markup (its family reads it,
    # below), not Hermes' (vllm-mlx's Hermes parser takes both).
    ("vllm_mlx_hermes_bare_function_is_text", "qwen3",
     "<function=get_weather><parameter=city>Berlin</parameter></function>", {},
     expect(content="<function=get_weather><parameter=city>Berlin</parameter></function>")),
]

# Llama: <function=...>, <|python_tag|> and bare JSON
_LLAMA_TOOLS = {"tools": _tools("multiply", "add", "calc", "read_file")}
CASES += [
    ("vllm_mlx_llama_function_format", "llama3_json", '<function=multiply>{"x": 3, "y": 4}</function>',
     _LLAMA_TOOLS, expect(tool_calls=[("multiply", {"x": 3, "y": 4})])),
    # Without tools offered, "<function=...>" anywhere in a reply is the answer's text (Llama
    # calls only what it was offered); vllm-mlx's parser reads it regardless.
    ("vllm_mlx_llama_function_format_without_tools", "llama3_json",
     '<function=multiply>{"x": 3, "y": 4}</function>', {},
     expect(content='<function=multiply>{"x": 3, "y": 4}</function>')),
    ("vllm_mlx_llama_multiple_functions", "llama3_json",
     '<function=add>{"a": 1}</function><function=multiply>{"x": 3}</function>', _LLAMA_TOOLS,
     expect(tool_calls=[("add", {"a": 1}), ("multiply", {"x": 3})])),
    ("vllm_mlx_llama_content_before_function", "llama3_json",
     'Computing result<function=calc>{"n": 5}</function>', _LLAMA_TOOLS,
     expect(content="Computing result", tool_calls=[("calc", {"n": 5})])),
    ("vllm_mlx_llama_streamed_function", "llama3_json",
     '<function=read_file>{"path": "foo.py"}</function>', _LLAMA_TOOLS,
     expect(tool_calls=[("read_file", {"path": "foo.py"})])),
    ("vllm_mlx_llama_python_tag_parameters", "llama3_json",
     '<|python_tag|>{"name": "read_file", "parameters": {"path": "foo.py"}}', {},
     expect(tool_calls=[("read_file", {"path": "foo.py"})])),
    ("vllm_mlx_llama_python_tag_arguments", "llama3_json",
     '<|python_tag|>{"name": "run_command", "arguments": {"cmd": "ls"}}', {},
     expect(tool_calls=[("run_command", {"cmd": "ls"})])),
    ("vllm_mlx_llama_python_tag_two_calls", "llama3_json",
     '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.py"}}'
     '<|python_tag|>{"name": "read_file", "parameters": {"path": "b.py"}}', {},
     expect(tool_calls=[("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"})])),
    ("vllm_mlx_llama_bare_json_with_type", "llama3_json",
     '{"type": "function", "name": "read_file", "parameters": {"path": "foo.py"}}', {},
     expect(tool_calls=[("read_file", {"path": "foo.py"})])),
    ("vllm_mlx_llama_bare_json_without_type", "llama3_json",
     '{"name": "grep", "parameters": {"pattern": "TODO"}}', {},
     expect(tool_calls=[("grep", {"pattern": "TODO"})])),
    ("vllm_mlx_llama_plain_text", "llama3_json", "I cannot find the file you mentioned.", {},
     expect(content="I cannot find the file you mentioned.")),
    ("vllm_mlx_llama_non_call_json_is_text", "llama3_json", '{"value": 42, "summary": "computed"}',
     {}, expect(content='{"value": 42, "summary": "computed"}')),
    ("vllm_mlx_llama_plain_text_streams", "llama3_json", "I will look at foo.py for you.", {},
     expect(content="I will look at foo.py for you.")),
    ("vllm_mlx_llama_special_characters_in_name", "llama3_json",
     '<function=get_user_info>{"user_id": 123}</function>', {"tools": _tools("get_user_info")},
     expect(tool_calls=[("get_user_info", {"user_id": 123})])),
    # xLAM's JSON list of calls, as Llama writes one.
    ("vllm_mlx_xlam_json_list", "llama3_json", '[{"name": "search", "arguments": {"query": "AI"}}]',
     {}, expect(tool_calls=[("search", {"query": "AI"})])),
]

# DeepSeek V3, Kimi, GLM-4.7
_DS = "<｜tool▁calls▁begin｜>\n{}\n<｜tool▁calls▁end｜>"
_DS_CALL = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{}\n```json\n{}\n```<｜tool▁call▁end｜>"
CASES += [
    ("vllm_mlx_deepseek_v3_format", "deepseek_v3",
     _DS.format(_DS_CALL.format("get_weather", '{"city": "Tokyo"}')), {},
     expect(tool_calls=[("get_weather", {"city": "Tokyo"})])),
    ("vllm_mlx_deepseek_v3_multiple_calls", "deepseek_v3",
     _DS.format(_DS_CALL.format("func1", '{"a": 1}') + "\n" + _DS_CALL.format("func2", '{"b": 2}')),
     {}, expect(tool_calls=[("func1", {"a": 1}), ("func2", {"b": 2})])),
    ("vllm_mlx_deepseek_v3_content_before_calls", "deepseek_v3",
     "Let me help you with that." + _DS.format(_DS_CALL.format("search", "{}")), {},
     expect(content="Let me help you with that.", tool_calls=[("search", {})])),
    ("vllm_mlx_deepseek_v3_no_call", "deepseek_v3", "Here is my response without any tool calls.",
     {}, expect(content="Here is my response without any tool calls.")),
    ("vllm_mlx_kimi_format", "kimi_k2",
     "<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:0"
     '<|tool_call_argument_begin|>{"city": "Beijing"}<|tool_call_end|>\n<|tool_calls_section_end|>',
     {}, expect(tool_calls=[("get_weather", {"city": "Beijing"})])),
    ("vllm_mlx_kimi_simple_function_name", "kimi_k2",
     "<|tool_calls_section_begin|><|tool_call_begin|>search:0<|tool_call_argument_begin|>{}"
     "<|tool_call_end|><|tool_calls_section_end|>", {}, expect(tool_calls=[("search", {})])),
    # A call outside its section is not Kimi's markup (vLLM's parser needs the section too).
    ("vllm_mlx_kimi_call_without_section_is_text", "kimi_k2",
     "<|tool_call_begin|>search:0<|tool_call_argument_begin|>{}<|tool_call_end|>", {},
     expect(content="<|tool_call_begin|>search:0<|tool_call_argument_begin|>{}<|tool_call_end|>")),
    ("vllm_mlx_kimi_no_call", "kimi_k2", "I'll answer your question directly.", {},
     expect(content="I'll answer your question directly.")),
    ("vllm_mlx_glm47_zero_arguments", "glm47", "<tool_call>get_current_time</tool_call>", {},
     expect(tool_calls=[("get_current_time", {})])),
    ("vllm_mlx_glm47_with_arguments", "glm47",
     "<tool_call>search\n<arg_key>query</arg_key><arg_value>Python</arg_value></tool_call>", {},
     expect(tool_calls=[("search", {"query": "Python"})])),
    ("vllm_mlx_glm47_streamed_zero_arguments", "glm47", "<tool_call>get_status</tool_call>", {},
     expect(tool_calls=[("get_status", {})])),
]

# Qwen3-Coder (TestQwen3CoderParser, TestQwenFunctionFormat, TestQwenMixedFormatAndTruncation)
_CONVERT = ("<function=convert_currency>\n<parameter=amount>100</parameter>\n"
            "<parameter=from_currency>EUR</parameter>\n<parameter=to_currency>CZK</parameter>\n"
            "</function>")
_CONVERT_TOOLS = {"tools": [{"type": "function", "function": {"name": "convert_currency",
                                                              "parameters": {"properties": {
                                                                  "amount": {"type": "number"}}}}}]}
_CONVERTED = ("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "CZK"})
_PRAGUE = ("get_weather", {"city": "Prague"})
_PRAGUE_XML = ("<tool_call>\n<function=get_weather>\n<parameter=city>Prague</parameter>\n"
               "</function>\n</tool_call>")
CASES += [
    ("vllm_mlx_qwen3_coder_xml_format", "qwen3_coder",
     "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
     "<parameter=units>celsius</parameter>\n</function>\n</tool_call>", {},
     expect(tool_calls=[("get_weather", {"city": "Paris", "units": "celsius"})])),
    ("vllm_mlx_qwen3_coder_think_then_call", "qwen3_coder",
     "<think>I need to read this file.</think>\n<tool_call>\n<function=read_file>\n"
     "<parameter=path>/src/main.py</parameter>\n</function>\n</tool_call>", {},
     expect("I need to read this file.", "\n", tool_calls=[("read_file", {"path": "/src/main.py"})])),
    ("vllm_mlx_qwen3_coder_multiline_parameter", "qwen3_coder",
     "<tool_call>\n<function=write_file>\n<parameter=path>/src/hello.py</parameter>\n"
     "<parameter=content>def hello():\n    print('hello')\n</parameter>\n</function>\n</tool_call>",
     {}, expect(tool_calls=[("write_file", {"path": "/src/hello.py",
                                            "content": "def hello():\n    print('hello')"})])),
    ("vllm_mlx_qwen3_coder_bare_function", "qwen3_coder",
     "<function=get_weather><parameter=city>Berlin</parameter></function>", {},
     expect(tool_calls=[("get_weather", {"city": "Berlin"})])),
    ("vllm_mlx_qwen3_coder_bare_functions", "qwen3_coder",
     "<function=read_file><parameter=path>/a.py</parameter></function>\n<function=write_file>"
     "<parameter=path>/b.py</parameter><parameter=content>hello</parameter></function>", {},
     expect(tool_calls=[("read_file", {"path": "/a.py"}),
                        ("write_file", {"path": "/b.py", "content": "hello"})])),
    ("vllm_mlx_qwen3_coder_two_wrapped_calls", "qwen3_coder",
     "<tool_call>\n<function=read_file>\n<parameter=path>/src/main.py</parameter>\n</function>\n"
     "</tool_call>\n<tool_call>\n<function=list_files>\n<parameter=directory>/src</parameter>\n"
     "</function>\n</tool_call>", {},
     expect(tool_calls=[("read_file", {"path": "/src/main.py"}),
                        ("list_files", {"directory": "/src"})])),
    ("vllm_mlx_qwen3_coder_function_with_json", "qwen3_coder",
     '<function=get_weather>{"city": "Prague"}</function>', {}, expect(tool_calls=[_PRAGUE])),
    ("vllm_mlx_qwen3_coder_functions_with_json", "qwen3_coder",
     '<function=read_file>{"path": "/a.py"}</function>'
     '<function=write_file>{"path": "/b.py", "content": "hello"}</function>', {},
     expect(tool_calls=[("read_file", {"path": "/a.py"}),
                        ("write_file", {"path": "/b.py", "content": "hello"})])),
    ("vllm_mlx_qwen3_coder_think_then_function", "qwen3_coder",
     '<think>I need to check the weather.</think>\n<function=get_weather>{"city": "Prague"}</function>',
     {}, expect("I need to check the weather.", "\n", tool_calls=[_PRAGUE])),
    ("vllm_mlx_qwen3_coder_json_call_then_function", "qwen3_coder",
     '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Prague"}}\n</tool_call>\n'
     + _CONVERT, _CONVERT_TOOLS, expect(tool_calls=[_PRAGUE, _CONVERTED])),
    ("vllm_mlx_qwen3_coder_nested_wrappers", "qwen3_coder",
     f"{_PRAGUE_XML}\n<tool_call>\n{_CONVERT}\n</tool_call>", _CONVERT_TOOLS,
     expect(tool_calls=[_PRAGUE, _CONVERTED])),
    ("vllm_mlx_qwen3_coder_cut_second_call", "qwen3_coder",
     f"{_PRAGUE_XML}\n<tool_call>\n<function=convert_currency>\n<parameter=amount>\n1", {},
     expect(tool_calls=[_PRAGUE],
            problems=["<tool_call>\n<function=convert_currency>\n<parameter=amount>\n1"])),
    # The cut markup is a problem, not content; the space before it stays (vllm-mlx strips it).
    ("vllm_mlx_qwen3_coder_cut_opening_only", "qwen3_coder", "Let me check the weather. <tool_call>",
     {}, expect(content="Let me check the weather. ", problems=["<tool_call>"])),
    ("vllm_mlx_qwen3_coder_cut_bare_function", "qwen3_coder", "I'll call: <function=get_weather>",
     {}, expect(content="I'll call: ", problems=["<function=get_weather>"])),
    ("vllm_mlx_qwen3_coder_complete_then_cut_function", "qwen3_coder",
     '<function=get_weather>{"city": "Prague"}</function>\n'
     "<function=convert_currency><parameter=amount>10", {},
     expect(tool_calls=[_PRAGUE], problems=["<function=convert_currency><parameter=amount>10"])),
    ("vllm_mlx_qwen3_coder_all_cut", "qwen3_coder", "<tool_call>\n<function=calculate", {},
     expect(problems=["<tool_call>\n<function=calculate"])),
    ("vllm_mlx_qwen3_coder_text_then_cut_opening", "qwen3_coder", "Some text. <tool_call>", {},
     expect(content="Some text. ", problems=["<tool_call>"])),
    ("vllm_mlx_qwen3_coder_functional_is_text", "qwen3_coder", "Look at <functional interface", {},
     expect(content="Look at <functional interface")),
    ("vllm_mlx_qwen3_coder_partial_marker_then_call", "qwen3_coder",
     "Sure.<function=get_weather><parameter=city>Prague</parameter></function>", {},
     expect(content="Sure.", tool_calls=[_PRAGUE])),
    ("vllm_mlx_qwen3_coder_json_and_xml_functions", "qwen3_coder",
     '<function=func1>{"a": 1}</function>\n<function=func2><parameter=b>2</parameter></function>',
     {}, expect(tool_calls=[("func1", {"a": 1}), ("func2", {"b": "2"})])),
]

# Their auto parser's bracket form: ordinary bracket text is never a call (pythonic family).
for i, text in enumerate([
        "Read [the docs](https://example.test) before changing this.",
        "The output array was [1, 2, 3], not a tool call.",
        'Here is JSON: [{"label": "alpha", "score": 0.7}]',
        "Use [square brackets] for optional text.",
        "This prose mentions [read(file_path)] without JSON arguments.",
        "See [the docs](https://example.test)",
        "Values: [1, 2, 3]",
        'JSON data: [{"label": "alpha"}]',
        "Literal [square brackets] in text"]):
    CASES.append((f"vllm_mlx_pythonic_bracket_prose_{i}", "pythonic", text, {},
                  expect(content=text)))
CASES += [
    # Their "[read({...})]" passes a JSON object positionally; a pythonic call names its
    # arguments, so that stays text and the keyword form is the call.
    ("vllm_mlx_pythonic_positional_json_is_text", "pythonic", '[read({"file_path": "/tmp/test.py"})]',
     {}, expect(content='[read({"file_path": "/tmp/test.py"})]')),
    ("vllm_mlx_pythonic_keyword_call", "pythonic", "[read(file_path='/tmp/test.py')]", {},
     expect(tool_calls=[("read", {"file_path": "/tmp/test.py"})])),
]

# TestEdgeCases.test_empty_input, for each family their parsers stand for.
for fam in ("mistral", "qwen3", "llama3_json", "deepseek_v3", "pythonic"):
    CASES.append((f"vllm_mlx_{fam}_empty_input", fam, "", {}, expect()))
