"""The tiny reasoner: a scripted toy for tests and demos, not a language model.

A Qwen3-architecture model of a few hundred thousand parameters, with its own byte-level BPE
tokenizer and a Qwen3-style chat template (system turn, tools, tool results, `enable_thinking`),
trained deterministically with mlx until greedy decoding reproduces each conversation in
`scripts.json` exactly: replies that reason, answer, call tools (one or two at once), answer
from a tool result, skip thinking, and continue an earlier conversation. Any other prompt gets
garbage. It exists so that reasoning, tool-call parsing, streaming and prompt caching can be
tested and shown on a real mlx-lm model that builds offline in seconds (measured here: 6 s with
OpenBLAS preloaded, 31 s of CPU with mlx's bundled reference BLAS).

See it replay the scripts: ``python -m mlx_notebook.engine.models.tiny_reasoner [MODEL_DIR]``.
"""

from ._recipe import RECIPE_HASH, load_scripts
from ._training import build_tiny_reasoner

__all__ = ["RECIPE_HASH", "build_tiny_reasoner", "load_scripts"]
