"""Replies for the plain, qwen3 and deepseek_r1 families with their expected parse.

Each case: (id, family, text, options, expected). ``expected`` lists reasoning, content,
tool calls (name, arguments) and the raw text of each problem. Texts follow what the models
emit (Qwen3 chat template, DeepSeek-R1 with its pre-filled ``<think>``), as in vLLM's
reasoning-parser tests and mlx-lm's tool-parsing tests.
"""

WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
TIME = '{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}'
DS_CALL = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
    '```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)
DS31_CALLS = (
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}'
    '<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"tz": "UTC"}'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
)


def expect(reasoning="", content="", tool_calls=(), problems=()):
    return {
        "reasoning": reasoning,
        "content": content,
        "tool_calls": [{"name": n, "arguments": a} for n, a in tool_calls],
        "problems": list(problems),
    }


PARIS = ("get_weather", {"city": "Paris", "unit": "celsius"})

CASES = [
    ("plain_text", "plain", "The capital of France is Paris.", {},
     expect(content="The capital of France is Paris.")),
    ("plain_keeps_markup", "plain", "<think>not special</think> <tool_call>{}</tool_call>", {},
     expect(content="<think>not special</think> <tool_call>{}</tool_call>")),
    ("qwen3_think_then_answer", "qwen3",
     "<think>\nThe user asks 2+2.\n</think>\n\nThe answer is 4.", {},
     expect("\nThe user asks 2+2.\n", "\n\nThe answer is 4.")),
    ("qwen3_no_think", "qwen3", "Hello! How can I help?", {},
     expect(content="Hello! How can I help?")),
    ("qwen3_empty_think_block", "qwen3", "<think>\n\n</think>\n\nHi.", {},
     expect("\n\n", "\n\nHi.")),
    ("qwen3_prefilled_think", "qwen3", "This is a reasoning section</think>This is the rest",
     {"starts_in_reasoning": True},
     expect("This is a reasoning section", "This is the rest")),
    ("qwen3_prefilled_think_repeated", "qwen3", "<think>reasoning</think>answer",
     {"starts_in_reasoning": True}, expect("reasoning", "answer")),
    ("qwen3_prefilled_truncated", "qwen3", "Still thinking about", {"starts_in_reasoning": True},
     expect("Still thinking about")),
    ("qwen3_undecided_close_makes_reasoning", "qwen3", "abc</think>def", {},
     expect("abc", "def")),
    ("qwen3_undecided_call_makes_content", "qwen3",
     f"Let me look.<tool_call>{WEATHER}</tool_call>", {},
     expect(content="Let me look.", tool_calls=[PARIS])),
    ("qwen3_known_content_keeps_close_tag", "qwen3", "abc</think>def",
     {"starts_in_reasoning": False}, expect(content="abc</think>def")),
    ("qwen3_tool_call_with_text_around", "qwen3",
     f"Let me check.\n<tool_call>\n{WEATHER}\n</tool_call>\nDone.", {},
     expect(content="Let me check.\n\nDone.", tool_calls=[PARIS])),
    ("qwen3_think_then_two_calls", "qwen3",
     (f"<think>Need weather and time.</think>\n\n<tool_call>\n{WEATHER}\n</tool_call>\n"
     f"<tool_call>\n{TIME}\n</tool_call>"), {},
     expect("Need weather and time.", "\n\n\n",
            tool_calls=[PARIS, ("get_time", {"tz": "Europe/Paris"})])),
    ("qwen3_tool_call_ends_reasoning", "qwen3",
     f"I need the weather.\n\n<tool_call>\n{WEATHER}\n</tool_call>",
     {"starts_in_reasoning": True},
     expect("I need the weather.\n\n", tool_calls=[PARIS])),
    ("qwen3_arguments_as_json_string", "qwen3",
     '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}</tool_call>', {},
     expect(tool_calls=[("add", {"a": 1, "b": 2})])),
    ("qwen3_two_calls_in_one_block", "qwen3", f"<tool_call>\n{WEATHER}\n{TIME}\n</tool_call>", {},
     expect(tool_calls=[PARIS, ("get_time", {"tz": "Europe/Paris"})])),
    ("qwen3_xml_body_without_closing_think", "qwen3",
     ("I need to read the file.\n\n<tool_call>\n<function=bash>\n<parameter=command>\n"
     "cat /etc/hosts\n</parameter>\n</function>\n</tool_call>"), {"starts_in_reasoning": True},
     expect("I need to read the file.\n\n", tool_calls=[("bash", {"command": "cat /etc/hosts"})])),
    ("qwen3_markup_lookalikes_stay_content", "qwen3",
     "Use <tool_calls> or a <think> tag; </tool_call> and <tool_call are text.", {},
     expect(content="Use <tool_calls> or a <think> tag; </tool_call> and <tool_call are text.")),
    ("qwen3_think_after_content_is_text", "qwen3", "Answer first. <think>no</think>",
     {"starts_in_reasoning": False},
     expect(content="Answer first. <think>no</think>")),
    # Issue 12: a think block after the reply has spoken is text, both markers alike.
    ("qwen3_later_think_block_is_text", "qwen3", "<think>a</think>b<think>c</think>d", {},
     expect("a", "b<think>c</think>d")),
    ("qwen3_later_empty_think_block_is_text", "qwen3", "<think>\nx\n</think>\n\nHi.<think></think> Bye.",
     {}, expect("\nx\n", "\n\nHi.<think></think> Bye.")),
    ("qwen3_prefilled_later_think_block_is_text", "qwen3", "r</think>a<think>b</think>c",
     {"starts_in_reasoning": True}, expect("r", "a<think>b</think>c")),
    ("qwen3_undecided_think_mid_reply_is_content", "qwen3", "before<think>middle</think>after", {},
     expect(content="before<think>middle</think>after")),
    ("qwen3_stray_close_after_a_text_block_is_dropped", "qwen3",
     "<think>r</think>a<think>b</think>c</think>d", {}, expect("r", "a<think>b</think>cd")),
    ("qwen3_repeated_open_inside_reasoning_is_dropped", "qwen3", "a<think>b</think>c",
     {"starts_in_reasoning": True}, expect("ab", "c")),
    ("qwen3_text_think_block_then_call", "qwen3",
     f"Hi.<think>b</think><tool_call>{WEATHER}</tool_call>", {},
     expect(content="Hi.<think>b</think>", tool_calls=[PARIS])),
    ("deepseek_r1_later_think_block_is_text", "deepseek_r1", "r</think>a<think>b</think>c", {},
     expect("r", "a<think>b</think>c")),
    ("qwen3_cut_off_call_is_problem", "qwen3",
     '<think>ok</think>Sure.<tool_call>\n{"name": "get_weather", "argu', {},
     expect("ok", "Sure.", problems=['<tool_call>\n{"name": "get_weather", "argu'])),
    ("qwen3_malformed_json_is_problem", "qwen3",
     'Before <tool_call>{"name": get_weather}</tool_call> after', {},
     expect(content="Before  after",
            problems=['<tool_call>{"name": get_weather}</tool_call>'])),
    ("qwen3_unicode", "qwen3", "<think>思考中…🤔</think>答えは 4 です。😀", {},
     expect("思考中…🤔", "答えは 4 です。😀")),
    ("qwen3_unfinished_marker_is_text", "qwen3", "x </thin", {},
     expect(content="x </thin")),
    ("deepseek_r1_prefilled", "deepseek_r1",
     "Okay, 2+2 is 4.\n</think>\n\nThe answer is **4**.", {},
     expect("Okay, 2+2 is 4.\n", "\n\nThe answer is **4**.")),
    ("deepseek_r1_with_open_tag", "deepseek_r1", "<think>\nHmm.\n</think>\n\nYes.", {},
     expect("\nHmm.\n", "\n\nYes.")),
    ("deepseek_r1_truncated_all_reasoning", "deepseek_r1", "This is a reasoning section", {},
     expect("This is a reasoning section")),
    ("deepseek_r1_not_prefilled", "deepseek_r1", "Plain answer.",
     {"starts_in_reasoning": False}, expect(content="Plain answer.")),
    ("deepseek_r1_tool_call", "deepseek_r1", f"Need weather.</think>\n\n{DS_CALL}", {},
     expect("Need weather.", "\n\n", tool_calls=[("get_weather", {"city": "Paris"})])),
    ("deepseek_v31_parallel_calls", "deepseek_r1", f"</think>{DS31_CALLS}", {},
     expect(tool_calls=[("get_weather", {"city": "Paris"}), ("get_time", {"tz": "UTC"})])),
]
