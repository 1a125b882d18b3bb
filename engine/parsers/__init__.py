"""Tool-call body parsers for families mlx-lm lacks or that need adapting.

Each module has mlx-lm's ``tool_parsers`` surface (``tool_call_start``, ``tool_call_end``,
``parse_tool_call(text, tools=None)``); ``mlx_notebook.engine.parsing`` looks a family's parser
up here first, then in ``mlx_lm.tool_parsers``.
"""
