"""Tool-call body parsers for families mlx-lm lacks or that need adapting.

Each module has mlx-lm's ``tool_parsers`` surface (``tool_call_start``, ``tool_call_end``,
``parse_tool_call(text, tools=None)``) and is the one home of its format's marker strings
(extra ones under their own names, e.g. ``gemma4.turn_end``); ``mlx_notebook.engine.parsing``
looks a family's parser up here first, then in ``mlx_lm.tool_parsers``, and builds its family
table from the markers the modules export. ``_brackets`` is the quote/bracket scanner shared
with the stream filter, and ``_schema`` reads a call's tool schema for the parsers; neither is
a parser.
"""
