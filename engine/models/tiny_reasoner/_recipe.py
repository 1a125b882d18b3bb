"""Everything that determines the tiny reasoner's checkpoint, and the hash the store caches it by."""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import pathlib

__all__ = ["RECIPE_HASH", "Hyperparameters", "HYPERPARAMETERS", "load_scripts", "recipe_hash", "chat_template"]

# Bump when a change to this package's code changes the checkpoint it builds (the data files and
# the hyperparameters below are hashed directly, so editing those needs no bump).
RECIPE_VERSION = 1

_HERE = pathlib.Path(__file__).parent


@dataclasses.dataclass(frozen=True, slots=True)
class Hyperparameters:
    """The model shape, tokenizer size and training schedule."""

    hidden_size: int = 64
    num_hidden_layers: int = 2
    intermediate_size: int = 192
    # Two heads, not more: on a CPU, attention's length^2 softmax dominates a training step.
    # Even head counts let mlx-lm shard the model over two ranks.
    num_attention_heads: int = 2
    num_key_value_heads: int = 2
    head_dim: int = 32
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048
    vocab_size: int = 400  # byte alphabet + learned merges + special tokens
    seed: int = 0
    learning_rate: float = 3e-3
    warmup_steps: int = 20
    # Training stops at the first check (every `check_every` steps from `min_steps` on) where each
    # scripted token beats every other token by `min_margin` logits, so greedy decoding replays the
    # scripts even where another backend rounds differently; past `max_steps` the build fails.
    min_steps: int = 40
    check_every: int = 10
    max_steps: int = 400
    min_margin: float = 3.0


HYPERPARAMETERS = Hyperparameters()


@functools.cache
def _scripts_text() -> str:
    return (_HERE / "scripts.json").read_text(encoding="utf-8")


def load_scripts() -> list[dict]:
    """The scripted conversations: `name`, `messages`, optional `tools` and `chat_template_kwargs`, `reply`.

    `reply` is the raw text the model generates greedily after the rendered prompt, markup
    included, up to (not including) the `<|im_end|>` it stops on. A fresh copy on every call.
    """
    return copy.deepcopy(json.loads(_scripts_text()))


@functools.cache
def chat_template() -> str:
    """Our Qwen3-style Jinja chat template."""
    return (_HERE / "chat_template.jinja").read_text(encoding="utf-8")


def recipe_hash(
    scripts: list[dict], *, template: str | None = None, hyperparameters: Hyperparameters = HYPERPARAMETERS
) -> str:
    """A short hex digest of the scripts, template, tokenizer recipe, hyperparameters and code version."""
    # Imported here: _tokenizer imports this module.
    from ._tokenizer import TOKENIZER_RECIPE

    recipe = {
        "version": RECIPE_VERSION,
        "scripts": scripts,
        "template": chat_template() if template is None else template,
        "tokenizer": TOKENIZER_RECIPE,
        "hyperparameters": dataclasses.asdict(hyperparameters),
    }
    canonical = json.dumps(recipe, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


RECIPE_HASH: str = recipe_hash(load_scripts())
