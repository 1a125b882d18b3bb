"""Builds the tiny reasoner: tokenizer, Qwen3 weights trained to memorize the scripts, mlx-lm files."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten
from mlx_lm.models import qwen3
from mlx_lm.tokenizer_utils import TokenizerWrapper
from mlx_lm.tokenizer_utils import load as load_tokenizer
from tqdm import tqdm

from ..errors import ModelStoreError
from ._recipe import HYPERPARAMETERS, RECIPE_HASH, Hyperparameters, chat_template, load_scripts
from ._tokenizer import EOS_TOKEN, byte_tokenizer, make_tokenizer

__all__ = ["build_tiny_reasoner"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Batch:
    """Every script as one padded row: the model reads `inputs` and is scored on `targets` where `mask` is 1."""

    inputs: mx.array  # (scripts, length - 1) token ids
    targets: mx.array  # (scripts, length - 1) the next token at each position
    mask: mx.array  # (scripts, length - 1) float32, 1 on the reply tokens and the closing <|im_end|>


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


def _make_batch(tokenizer: TokenizerWrapper, scripts: list[dict]) -> _Batch:
    # The prompt is tokenized on its own, exactly as a user's request will be; BPE over the joined
    # text could merge across the prompt/reply boundary and teach tokens no request ever shows.
    rows, reply_starts = [], []
    for script in scripts:
        prompt = _prompt_ids(tokenizer, script)
        reply = tokenizer.encode(script["reply"], add_special_tokens=False)
        rows.append(prompt + reply + [tokenizer.convert_tokens_to_ids(EOS_TOKEN)])
        reply_starts.append(len(prompt))
    length = max(len(row) for row in rows)
    pad = tokenizer.pad_token_id
    tokens = mx.array([row + [pad] * (length - len(row)) for row in rows])
    positions = mx.arange(1, length)[None, :]
    starts = mx.array(reply_starts)[:, None]
    ends = mx.array([len(row) for row in rows])[:, None]
    mask = ((positions >= starts) & (positions < ends)).astype(mx.float32)
    return _Batch(inputs=tokens[:, :-1], targets=tokens[:, 1:], mask=mask)


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


def _loss(model: nn.Module, batch: _Batch) -> mx.array:
    losses = nn.losses.cross_entropy(model(batch.inputs), batch.targets)
    return (losses * batch.mask).sum() / batch.mask.sum()


def _worst_margins(model: nn.Module, batch: _Batch) -> mx.array:
    """Per script, the smallest lead of the scripted token's logit over the best other token."""
    logits = model(batch.inputs)
    target = mx.take_along_axis(logits, batch.targets[..., None], axis=-1)[..., 0]
    others = mx.where(mx.arange(logits.shape[-1]) == batch.targets[..., None], -mx.inf, logits)
    margins = target - others.max(axis=-1)
    return mx.where(batch.mask > 0, margins, mx.inf).min(axis=-1)


def _train(model: nn.Module, batch: _Batch, scripts: list[dict], hp: Hyperparameters, progress: bool) -> None:
    schedule = optim.join_schedules(
        [optim.linear_schedule(1e-5, hp.learning_rate, hp.warmup_steps),
         optim.cosine_decay(hp.learning_rate, hp.steps - hp.warmup_steps, hp.learning_rate * 0.1)],
        [hp.warmup_steps],
    )
    optimizer = optim.Adam(learning_rate=schedule)
    state = [model.state, optimizer.state]
    loss_and_grad = nn.value_and_grad(model, _loss)

    @partial(mx.compile, inputs=state, outputs=state)
    def step(batch_inputs, batch_targets, batch_mask):
        loss, grads = loss_and_grad(model, _Batch(batch_inputs, batch_targets, batch_mask))
        optimizer.update(model, grads)
        return loss

    bar = tqdm(total=hp.steps, desc="training tiny-reasoner", unit="step", file=sys.stderr, disable=not progress)
    done = 0
    with bar:
        while True:
            for _ in range(bar.total - done):
                loss = step(batch.inputs, batch.targets, batch.mask)
                mx.eval(state, loss)
                done += 1
                bar.update()
                if done % 20 == 0:
                    bar.set_postfix(loss=f"{loss.item():.4f}")
            margins = _worst_margins(model, batch).tolist()
            if min(margins) >= hp.min_margin:
                return
            if done >= hp.max_steps:
                failing = ", ".join(s["name"] for s, m in zip(scripts, margins) if m < hp.min_margin)
                raise ModelStoreError(
                    f"The tiny reasoner did not memorize {failing} within {done} training steps; "
                    "raise Hyperparameters.max_steps in engine/tiny_reasoner/_recipe.py."
                )
            bar.total = min(done + hp.extra_round_steps, hp.max_steps)
            bar.refresh()


def _config(hp: Hyperparameters, tokenizer: TokenizerWrapper) -> dict:
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
    batch = _make_batch(tokenizer, scripts)

    mx.random.seed(hp.seed)
    model = qwen3.Model(_model_args(hp))
    _train(model, batch, scripts, hp, progress)

    (dest / "config.json").write_text(json.dumps(_config(hp, tokenizer), indent=2) + "\n", encoding="utf-8")
    weights = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(str(dest / "model.safetensors"), weights, metadata={"format": "mlx"})
