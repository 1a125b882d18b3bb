"""One well-formed call per family (as the model writes it) and one malformed one.

``CALLS[family] = (markup, name, arguments, malformed_markup)``; used by the per-family
guarantee tests in ``test_parsing_guarantees.py``.
"""

D = "｜DSML｜"
Q = '<|"|>'

CALLS = {
    "qwen3": ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
              "get_weather", {"city": "Paris"},
              '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>'),
    "deepseek_r1": (("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
                    '```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
                    "get_weather", {"city": "Paris"},
                    ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
                    '```json\n{"city": Paris}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>')),
    "deepseek_v3": (("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
                    '{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
                    "get_weather", {"city": "Paris"},
                    ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
                    '{"city": "Paris"<｜tool▁call▁end｜><｜tool▁calls▁end｜>')),
    "qwen3_coder": (("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                    "</function>\n</tool_call>"), "get_weather", {"city": "Paris"},
                    "<tool_call>\n<parameter=city>\nParis\n</parameter>\n</tool_call>"),
    "mistral": ('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', "get_weather", {"city": "Paris"},
                '[TOOL_CALLS]get weather[ARGS]{"city": "Paris"}'),
    "pythonic": ("<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>",
                 "get_weather", {"city": "Paris"},
                 "<|tool_call_start|>[get_weather(city='Paris'))]<|tool_call_end|>"),
    "gemma4": (f"<|tool_call>call:get_weather{{city:{Q}Paris{Q}}}<tool_call|>",
               "get_weather", {"city": "Paris"}, "<|tool_call>get_weather(Paris)<tool_call|>"),
    "kimi_k2": (("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
                "<|tool_calls_section_end|>"), "get_weather", {"city": "Paris"},
                ("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                '<|tool_call_argument_begin|>{"city": Paris}<|tool_call_end|>'
                "<|tool_calls_section_end|>")),
    "glm47": ("<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
              "get_weather", {"city": "Paris"}, "<tool_call></tool_call>"),
    "minimax_m2": (('<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
                   "</parameter>\n</invoke>\n</minimax:tool_call>"), "get_weather", {"city": "Paris"},
                   '<minimax:tool_call>\n<invoke nom="get_weather">\n</minimax:tool_call>'),
    "function_gemma": (("<start_function_call>call:get_weather{city:<escape>Paris<escape>}"
                       "<end_function_call>"), "get_weather", {"city": "Paris"},
                       "<start_function_call>get_weather(Paris)<end_function_call>"),
    "longcat": (('<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
                "</longcat_tool_call>"), "get_weather", {"city": "Paris"},
                ('<longcat_tool_call>{"name": "get_weather", "arguments": {"city": Paris}}'
                "</longcat_tool_call>")),
    "deepseek_v32": ((f'<{D}function_calls>\n<{D}invoke name="get_weather">\n'
                     f'<{D}parameter name="city" string="true">Paris</{D}parameter>\n'
                     f"</{D}invoke>\n</{D}function_calls>"), "get_weather", {"city": "Paris"},
                     f'<{D}function_calls>\n<{D}invoke>\n</{D}invoke>\n</{D}function_calls>'),
    "deepseek_v4": ((f'<{D}tool_calls>\n<{D}invoke name="get_weather">\n'
                    f'<{D}parameter name="city" string="true">Paris</{D}parameter>\n'
                    f"</{D}invoke>\n</{D}tool_calls>"), "get_weather", {"city": "Paris"},
                    f'<{D}tool_calls>\n<{D}invoke>\n</{D}invoke>\n</{D}tool_calls>'),
    "llama3_json": ('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
                    "get_weather", {"city": "Paris"},
                    '<|python_tag|>{"name": "get_weather", "parameters": {"city": Paris}}'),
}
