"""Builds the tiny reasoner: tokenizer, Qwen3 weights trained to memorize the scripts, mlx-lm files."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten
from mlx_lm.models import qwen3
from mlx_lm.tokenizer_utils import TokenizerWrapper
from mlx_lm.tokenizer_utils import load as load_tokenizer
from tqdm import tqdm

from ..._errors import ModelStoreError
from ._recipe import HYPERPARAMETERS, RECIPE_HASH, Hyperparameters, chat_template, load_scripts
from ._tokenizer import EOS_TOKEN, byte_tokenizer, make_tokenizer

__all__ = ["build_tiny_reasoner"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Batch:
    """Scripts of similar length as padded rows, scored on `targets` where `mask` is 1."""

    names: tuple[str, ...]  # the scripts, one per row
    inputs: mx.array  # (rows, length - 1) token ids
    targets: mx.array  # (rows, length - 1) the next token at each position
    mask: mx.array  # (rows, length - 1) float32, 1 on the reply tokens and the closing <|im_end|>


def _prompt_ids(tokenizer, script: dict) -> list[int]:
    return tokenizer.apply_chat_template(
        script["messages"],
        tools=script.get("tools"),
        add_generation_prompt=True,
        **script.get("chat_template_kwargs", {}),
    )


def _training_texts(scripts: list[dict]) -> list[str]:
    """Each conversation rendered in full, the text the tokenizer learns its merges from."""
    renderer = byte_tokenizer(chat_template())
    texts = []
    for script in scripts:
        prompt = renderer.apply_chat_template(
            script["messages"],
            tools=script.get("tools"),
            add_generation_prompt=True,
            tokenize=False,
            **script.get("chat_template_kwargs", {}),
        )
        texts.append(prompt + script["reply"] + EOS_TOKEN + "\n")
    return texts


def _pad(rows: list[tuple[str, list[int], int]], pad: int) -> _Batch:
    length = max(len(ids) for _, ids, _ in rows)
    tokens = mx.array([ids + [pad] * (length - len(ids)) for _, ids, _ in rows])
    positions = mx.arange(1, length)[None, :]
    starts = mx.array([start for _, _, start in rows])[:, None]
    ends = mx.array([len(ids) for _, ids, _ in rows])[:, None]
    mask = ((positions >= starts) & (positions < ends)).astype(mx.float32)
    return _Batch(tuple(name for name, _, _ in rows), tokens[:, :-1], tokens[:, 1:], mask)


def _make_batches(tokenizer: TokenizerWrapper, scripts: list[dict]) -> list[_Batch]:
    # The prompt is tokenized on its own, exactly as a user's request will be; BPE over the joined
    # text could merge across the prompt/reply boundary and teach tokens no request ever shows.
    rows = []
    for script in scripts:
        prompt = _prompt_ids(tokenizer, script)
        reply = tokenizer.encode(script["reply"], add_special_tokens=False)
        rows.append((script["name"], prompt + reply + [tokenizer.convert_tokens_to_ids(EOS_TOKEN)], len(prompt)))
    # Attention costs rows x length^2 on the CPU, so rows of similar length share a batch rather
    # than all padding to the longest.
    rows.sort(key=lambda row: len(row[1]))
    buckets: list[list] = []
    for row in rows:
        if buckets and len(row[1]) <= 1.3 * len(buckets[-1][0][1]):
            buckets[-1].append(row)
        else:
            buckets.append([row])
    return [_pad(bucket, tokenizer.pad_token_id) for bucket in buckets]


def _model_args(hp: Hyperparameters) -> qwen3.ModelArgs:
    return qwen3.ModelArgs(
        model_type="qwen3",
        hidden_size=hp.hidden_size,
        num_hidden_layers=hp.num_hidden_layers,
        intermediate_size=hp.intermediate_size,
        num_attention_heads=hp.num_attention_heads,
        rms_norm_eps=1e-6,
        vocab_size=hp.vocab_size,
        num_key_value_heads=hp.num_key_value_heads,
        max_position_embeddings=hp.max_position_embeddings,
        head_dim=hp.head_dim,
        tie_word_embeddings=True,
        rope_theta=hp.rope_theta,
    )


def _loss(model: nn.Module, batches: list[_Batch]) -> mx.array:
    """Mean cross-entropy over every reply token of every script."""
    total = sum((nn.losses.cross_entropy(model(b.inputs), b.targets) * b.mask).sum() for b in batches)
    return total / sum(b.mask.sum() for b in batches)


def _worst_margins(model: nn.Module, batches: list[_Batch]) -> dict[str, float]:
    """Per script, the smallest lead of a scripted token's logit over the best other token."""
    margins = {}
    for batch in batches:
        logits = model(batch.inputs)
        target = mx.take_along_axis(logits, batch.targets[..., None], axis=-1)[..., 0]
        others = mx.where(mx.arange(logits.shape[-1]) == batch.targets[..., None], -mx.inf, logits)
        worst = mx.where(batch.mask > 0, target - others.max(axis=-1), mx.inf).min(axis=-1)
        margins.update(zip(batch.names, worst.tolist()))
    return margins


def _train(model: nn.Module, batches: list[_Batch], hp: Hyperparameters, progress: bool) -> int:
    """Adam until every script wins greedy decoding by the margin; returns the steps taken."""
    schedule = optim.join_schedules(
        [
            optim.linear_schedule(hp.learning_rate * 0.01, hp.learning_rate, hp.warmup_steps),
            optim.cosine_decay(hp.learning_rate, hp.max_steps - hp.warmup_steps, hp.learning_rate * 0.1),
        ],
        [hp.warmup_steps],
    )
    optimizer = optim.Adam(learning_rate=schedule)
    loss_and_grad = nn.value_and_grad(model, _loss)
    # No total: training stops at the first check where every script is memorized, which no
    # one knows in advance (40 steps here); a total of max_steps showed "0/400, 02:56 left"
    # and then ended at 40/40.
    bar = tqdm(total=None, desc="training tiny-reasoner until it replays every script", file=sys.stderr,
               bar_format="{desc}: {n_fmt} steps, {elapsed}{postfix}", disable=not progress)
    with bar:
        for step in range(1, hp.max_steps + 1):
            loss, grads = loss_and_grad(model, batches)
            optimizer.update(model, grads)
            mx.eval(model.parameters(), optimizer.state, loss)
            bar.update()
            if step < hp.min_steps or step % hp.check_every:
                continue
            margins = _worst_margins(model, batches)
            bar.set_postfix(loss=f"{loss.item():.4f}", margin=f"{min(margins.values()):.2f}")
            if min(margins.values()) >= hp.min_margin:
                return step
    failing = ", ".join(name for name, margin in margins.items() if margin < hp.min_margin)
    raise ModelStoreError(
        f"The tiny reasoner did not memorize {failing} within {hp.max_steps} training steps; "
        "raise max_steps in engine/tiny_reasoner/_recipe.py."
    )


def _config(hp: Hyperparameters, tokenizer: TokenizerWrapper, steps: int) -> dict:
    args = dataclasses.asdict(_model_args(hp))
    args.pop("rope_parameters", None)
    args.pop("rope_scaling", None)
    return {
        "architectures": ["Qwen3ForCausalLM"],
        **args,
        "hidden_act": "silu",
        "attention_bias": False,
        "eos_token_id": tokenizer.convert_tokens_to_ids(EOS_TOKEN),
        "pad_token_id": tokenizer.pad_token_id,
        "torch_dtype": "float32",
        "tiny_reasoner_recipe": RECIPE_HASH,
        "tiny_reasoner_training_steps": steps,
    }


def build_tiny_reasoner(dest: pathlib.Path, *, progress: bool = True) -> None:
    """Write the tiny reasoner as an mlx-lm model directory into the existing empty `dest`.

    Deterministic for a given recipe and backend; raises ModelStoreError if training ends before
    greedy decoding would reproduce every script.
    """
    dest = pathlib.Path(dest)
    hp = HYPERPARAMETERS
    scripts = load_scripts()
    make_tokenizer(_training_texts(scripts), vocab_size=hp.vocab_size, chat_template=chat_template()).save_pretrained(
        dest, save_jinja_files=False
    )
    # Encode through mlx-lm's own loader, so training sees exactly the ids that mlx_lm.load serves.
    tokenizer = load_tokenizer(dest)
    batches = _make_batches(tokenizer, scripts)

    mx.random.seed(hp.seed)
    model = qwen3.Model(_model_args(hp))
    steps = _train(model, batches, hp, progress)

    (dest / "config.json").write_text(json.dumps(_config(hp, tokenizer, steps), indent=2) + "\n", encoding="utf-8")
    weights = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(str(dest / "model.safetensors"), weights, metadata={"format": "mlx"})
