"""Import a GGUF file into an mlx-lm model directory.

mlx reads GGUF natively (``mx.load(..., return_metadata=True)``), quantized Q4_0/Q4_1/Q8_0
tensors included, so what is left to do by hand is what no library does for us: rename
llama.cpp's tensor names to mlx-lm's, write a ``config.json`` from the GGUF metadata
(including per-layer quantization, since the embedding and the other layers may use
different bit widths), and rebuild the Hugging Face tokenizer from the metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlx.core as mx
from tqdm.auto import tqdm

from .._errors import ModelStoreError

__all__ = ["import_gguf", "IMPORT_DTYPES", "SUPPORTED_ARCHITECTURES"]

IMPORT_DTYPES = ("keep", "float32", "bfloat16")
SUPPORTED_ARCHITECTURES = ("llama",)
_GROUP_SIZE = 32
# general.file_type values whose tensors mx.load returns as stored (float) or keeps quantized.
# mx.load silently dequantizes every other type (K-quants, Q5_*, IQ*) to float16, so "keep"
# would not keep them: those files must be dequantized on purpose.
_KEPT_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 32: "BF16"}
_FILE_TYPE_NAMES = {
    8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S",
    15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
}

_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}


def import_gguf(gguf_path: Path, dest: Path, *, dtype: str = "keep", progress: bool = True) -> None:
    """Write an mlx-lm model directory for ``gguf_path`` into the existing directory ``dest``.

    ``dtype="keep"`` keeps the GGUF quantization; ``float32``/``bfloat16`` dequantize (on a
    Linux CPU with a fast BLAS, float32 is far quicker than the quantized kernels).
    """
    if dtype not in IMPORT_DTYPES:
        raise ModelStoreError(f"Unknown import dtype {dtype!r}: use one of {', '.join(IMPORT_DTYPES)}.")
    weights, metadata = _read_gguf(gguf_path)
    architecture = str(metadata.get("general.architecture", "unknown"))
    if architecture not in SUPPORTED_ARCHITECTURES:
        raise ModelStoreError(
            f"Cannot import {gguf_path.name}: GGUF architecture {architecture!r} is not supported "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})."
        )
    file_type = _scalar(metadata, "general.file_type")
    # A file type that is no number is only a wrong label: _read_gguf has already refused the
    # tensors mlx would not keep.
    if dtype == "keep" and isinstance(file_type, int) and file_type not in _KEPT_FILE_TYPES:
        name = _FILE_TYPE_NAMES.get(file_type, f"file type {file_type}")
        raise ModelStoreError(
            f"Cannot keep the quantization of {gguf_path.name}: mlx keeps only Q4_0, Q4_1 and Q8_0, "
            f"not {name}; import it with --dtype float32 or bfloat16 to dequantize."
        )
    config = _llama_config(metadata)
    _check_layers(weights, config, gguf_path)
    bar = tqdm(total=len(weights) + 1, desc=f"Importing {gguf_path.name}", unit="tensor", disable=not progress)
    with bar:
        mlx_weights, quantization = _convert_weights(weights, dtype, bar)
        if "lm_head.weight" not in mlx_weights:
            config["tie_word_embeddings"] = True
        if quantization:
            config["quantization"] = quantization
        config["torch_dtype"] = "float32" if dtype == "keep" else dtype
        try:
            mx.save_safetensors(str(dest / "model.safetensors"), mlx_weights, metadata={"format": "mlx"})
        except RuntimeError as exc:  # mlx's writer: a full disk ("[write] Unable to write ...")
            raise OSError(f"cannot write model.safetensors ({str(exc).rstrip('.')})") from None
        (dest / "config.json").write_text(json.dumps(config, indent=2))
        _save_tokenizer(metadata, dest)
        bar.update(1)
    _check_tensors_fit(dest, gguf_path)
    (dest / "SOURCE").write_text(f"Imported from {gguf_path} (dtype={dtype}) by mlx-notebook.\n")


def _read_gguf(path: Path) -> tuple[dict[str, mx.array], dict[str, Any]]:
    try:
        # format: mx.load guesses it from the name, and a GGUF file saved as model.bin is one too.
        weights, metadata = mx.load(str(path), format="gguf", return_metadata=True)
    except Exception as exc:  # mlx raises RuntimeError/ValueError with a C++ message
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "not supported" in reason.lower() or "unsupported" in reason.lower():
            raise ModelStoreError(
                f"Cannot import {path.name}: it uses a GGUF quantization type mlx cannot load ({reason})."
            ) from exc
        raise ModelStoreError(
            f"Cannot read {path.name}: the GGUF file is corrupt or truncated ({reason})."
        ) from exc
    for name, array in weights.items():
        if array.dtype == mx.uint8:
            raise ModelStoreError(
                f"Cannot import {path.name}: tensor {name} uses a GGUF quantization type mlx does not "
                "keep (only Q4_0, Q4_1 and Q8_0 are supported)."
            )
    return weights, metadata


def _scalar(metadata: dict[str, Any], key: str, default: Any = None) -> Any:
    value = metadata.get(key, default)
    return value.item() if isinstance(value, mx.array) else value


_REQUIRED_LLAMA_KEYS = (
    "llama.embedding_length", "llama.attention.head_count", "llama.block_count",
    "llama.feed_forward_length", "tokenizer.ggml.tokens",
)


_LLAMA_SIZES = ("llama.embedding_length", "llama.attention.head_count", "llama.block_count",
                "llama.feed_forward_length", "llama.attention.head_count_kv")


def _llama_config(metadata: dict[str, Any]) -> dict[str, Any]:
    for key in _LLAMA_SIZES:  # (a head count of 0 was a bare ZeroDivisionError)
        value = _scalar(metadata, key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ModelStoreError(f"Cannot import this GGUF file: its metadata says {key} is "
                                  f"{value!r}, and a size is a whole number of at least 1.")
    try:
        hidden = int(_scalar(metadata, "llama.embedding_length"))
        heads = int(_scalar(metadata, "llama.attention.head_count"))
        config = {
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": hidden,
            "num_hidden_layers": int(_scalar(metadata, "llama.block_count")),
            "intermediate_size": int(_scalar(metadata, "llama.feed_forward_length")),
            "num_attention_heads": heads,
            "num_key_value_heads": int(_scalar(metadata, "llama.attention.head_count_kv", heads)),
            "rms_norm_eps": float(_scalar(metadata, "llama.attention.layer_norm_rms_epsilon", 1e-5)),
            "rope_theta": float(_scalar(metadata, "llama.rope.freq_base", 10000.0)),
            "max_position_embeddings": int(_scalar(metadata, "llama.context_length", 2048)),
            "vocab_size": len(metadata["tokenizer.ggml.tokens"]),
            "head_dim": int(_scalar(metadata, "llama.rope.dimension_count", hidden // heads)),
            # llama.cpp's converter permutes Q and K for interleaved RoPE.
            "rope_traditional": True,
            "tie_word_embeddings": False,
            "bos_token_id": _scalar(metadata, "tokenizer.ggml.bos_token_id"),
            "eos_token_id": _scalar(metadata, "tokenizer.ggml.eos_token_id"),
        }
    except (KeyError, TypeError, ValueError) as exc:
        missing = [key for key in _REQUIRED_LLAMA_KEYS if _scalar(metadata, key) is None]
        if not missing:  # a value of the wrong kind (a context length that is text)
            raise ModelStoreError(f"Cannot import this GGUF file: its metadata holds a value of "
                                  f"the wrong kind ({type(exc).__name__}: {exc}).") from None
        raise ModelStoreError(
            f"Cannot import this GGUF file: its metadata lacks {', '.join(missing)}."
        ) from exc
    return config


def _mlx_name(gguf_name: str) -> str:
    parts = gguf_name.split(".")
    if len(parts) != (4 if parts[0] == "blk" else 2):  # (was a bare IndexError)
        raise ModelStoreError(f"Cannot import this GGUF file: unknown llama tensor {gguf_name}.")
    if parts[0] == "blk":
        layer, base, suffix = parts[1], parts[2], parts[3]
        if base not in _LAYER_NAMES:
            raise ModelStoreError(f"Cannot import this GGUF file: unknown llama tensor {gguf_name}.")
        return f"model.layers.{layer}.{_LAYER_NAMES[base]}.{suffix}"
    base, suffix = parts[0], parts[1]
    if base not in _TOP_NAMES:
        raise ModelStoreError(f"Cannot import this GGUF file: unknown llama tensor {gguf_name}.")
    return f"{_TOP_NAMES[base]}.{suffix}"


def _check_layers(weights: dict[str, mx.array], config: dict[str, Any], gguf_path: Path) -> None:
    """Refuse a file whose blocks are not the ones its metadata counts, before building a
    model of that many layers (the import would succeed and every load fail)."""
    held = {name.split(".")[1] for name in weights if name.startswith("blk.")}
    layers = config["num_hidden_layers"]
    if len(held) != layers or held != {str(i) for i in range(layers)}:
        raise ModelStoreError(
            f"Cannot import {gguf_path.name}: its metadata says {layers} layers (llama.block_count) "
            f"but it holds tensors for {len(held)}; the file is damaged or was written wrong: "
            "download or convert it again.")


def _check_tensors_fit(dest: Path, gguf_path: Path) -> None:
    """Build the model mlx-lm will build from ``dest`` and fit the tensors to it, lazily (no
    weight is read): a tensor of the wrong shape fails the import, not every later load with
    a remedy (rebuild the store entry) that rebuilds the same thing."""
    from mlx_lm.utils import load_model

    try:
        load_model(dest, lazy=True)
    except Exception as exc:
        reason = " ".join(str(exc).split())[:300]
        raise ModelStoreError(
            f"Cannot import {gguf_path.name}: its tensors do not fit the model its metadata "
            f"describes ({type(exc).__name__}: {reason.rstrip('.')}); the file is damaged or was "
            "written wrong: download or convert it again.") from None


def _convert_weights(weights: dict[str, mx.array], dtype: str, bar) -> tuple[dict[str, mx.array], dict]:
    """Rename tensors; dequantize or record each quantized module's bit width."""
    out: dict[str, mx.array] = {}
    quantization: dict[str, Any] = {}
    for gguf_name in sorted(weights):
        name = _mlx_name(gguf_name)
        array = weights[gguf_name]
        module = name.rsplit(".", 1)[0]
        if name.endswith((".scales", ".biases")):
            if dtype == "keep":
                out[name] = array
            bar.update(1)
            continue
        scales = weights.get(gguf_name.rsplit(".", 1)[0] + ".scales")
        if scales is None:
            out[name] = array if dtype == "keep" else array.astype(getattr(mx, dtype))
        else:
            biases = weights[gguf_name.rsplit(".", 1)[0] + ".biases"]
            in_features = scales.shape[-1] * _GROUP_SIZE
            bits = array.shape[-1] * 32 // in_features
            if dtype == "keep":
                out[name] = array
                quantization[module] = {"group_size": _GROUP_SIZE, "bits": bits}
            else:
                full = mx.dequantize(array, scales, biases, group_size=_GROUP_SIZE, bits=bits)
                out[name] = full.astype(getattr(mx, dtype))
        mx.eval(out.get(name, array))
        bar.update(1)
    if quantization:
        # mlx-lm needs a top-level default; the per-module entries override it.
        first = next(iter(quantization.values()))
        quantization = {"group_size": _GROUP_SIZE, "bits": first["bits"], **quantization}
    return out, quantization


def _save_tokenizer(metadata: dict[str, Any], dest: Path) -> None:
    """Rebuild the byte-level BPE tokenizer from GGUF metadata and save it with transformers."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    model_kind = metadata.get("tokenizer.ggml.model")
    if model_kind != "gpt2":
        raise ModelStoreError(
            f"Cannot import this GGUF file: tokenizer model {model_kind!r} is not supported (only byte-level BPE, 'gpt2')."
        )
    missing = [key for key in ("tokenizer.ggml.merges", "tokenizer.ggml.token_type")
               if key not in metadata]
    if missing:  # (was a bare KeyError)
        raise ModelStoreError(f"Cannot import this GGUF file: its metadata lacks {', '.join(missing)}, "
                              "which a byte-level BPE tokenizer needs.")
    tokens = list(metadata["tokenizer.ggml.tokens"])
    merges = [tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
    token_types = [int(t) for t in metadata["tokenizer.ggml.token_type"].tolist()]
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    pre = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
    if metadata.get("tokenizer.ggml.pre") == "smollm":
        # llama.cpp's "smollm" pre-tokenizer splits every digit before the GPT-2 regex.
        pre.insert(0, pre_tokenizers.Digits(individual_digits=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(pre)
    tokenizer.decoder = decoders.ByteLevel()
    # token_type 3 is CONTROL and 4 USER_DEFINED in GGUF: both are added tokens, control ones special.
    tokenizer.add_tokens(
        [AddedToken(tokens[i], special=(t == 3), normalized=False) for i, t in enumerate(token_types) if t in (3, 4)]
    )

    def special(key: str) -> str | None:
        index = _scalar(metadata, key)
        return tokens[index] if index is not None and 0 <= index < len(tokens) else None

    wrapper = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=special("tokenizer.ggml.bos_token_id"),
        eos_token=special("tokenizer.ggml.eos_token_id"),
        unk_token=special("tokenizer.ggml.unknown_token_id"),
        pad_token=special("tokenizer.ggml.padding_token_id"),
        clean_up_tokenization_spaces=False,
    )
    template = metadata.get("tokenizer.chat_template")
    if template:
        wrapper.chat_template = template
    wrapper.save_pretrained(str(dest))
    if template and not (dest / "chat_template.jinja").exists():
        (dest / "chat_template.jinja").write_text(template)
