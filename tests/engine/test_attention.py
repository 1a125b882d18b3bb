"""Few-row attention on the engine's thread (request/_attention.py): what mlx computes for
each pass, checked against mlx's own attention in each dtype. Its point, no cuDNN plan per new
shape, shows only on CUDA (benchmarks/bench_gpu.py); here the routing is what is tested."""
import threading
import time

import mlx.core as mx

from mlx_notebook.engine.request import _attention
from mlx_notebook.engine.request._attention import few_rows_composed


def _qkv(rows: int, keys: int = 40, heads: int = 4, kv_heads: int = 2, dim: int = 16):
    mx.random.seed(rows)
    q = mx.random.normal((1, heads, rows, dim)).astype(mx.bfloat16)
    k = mx.random.normal((1, kv_heads, keys, dim)).astype(mx.bfloat16)
    v = mx.random.normal((1, kv_heads, keys, dim)).astype(mx.bfloat16)
    return q, k, v


def _mlx(q, k, v, dtype):
    fast = _attention._cudnn_attention or mx.fast.scaled_dot_product_attention
    out = fast(q.astype(dtype), k.astype(dtype), v.astype(dtype), scale=0.25, mask="causal")
    return out.astype(q.dtype)


def _mlx_masked(q, k, v, mask):
    return _float32(q, k, v, mask).astype(q.dtype)


def _ours(q, k, v, mask="causal"):
    return mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask=mask)


def _float32(q, k, v, mask="causal"):
    """Attention in float32 throughout, the reference each route is measured against."""
    fast = _attention._cudnn_attention or mx.fast.scaled_dot_product_attention
    return fast(q.astype(mx.float32), k.astype(mx.float32), v.astype(mx.float32), scale=0.25,
                mask=mask)


def _off(out, reference) -> float:
    return mx.abs(out.astype(mx.float32) - reference).max().item()


def _padded_causal(rows: int, keys: int = 40):
    """A causal mask as an array, as a batch with left padding passes it."""
    return mx.arange(keys)[None] <= mx.arange(keys - rows, keys)[:, None]


def test_off_cuda_nothing_is_wrapped_unless_forced():
    with few_rows_composed(2048) as composing:
        assert composing is (mx.default_device() == mx.gpu and mx.cuda.is_available())
    with few_rows_composed(0, force=True) as composing:
        assert composing is False


def test_passes_of_a_few_rows_attend_in_float32_on_that_thread_only():
    with few_rows_composed(8, force=True) as composing:
        assert composing and _attention.installed()
        for rows in (2, 5, 7):  # fewer than a chunk's: float32 scores
            q, k, v = _qkv(rows)
            out = _ours(q, k, v)
            assert out.dtype == mx.bfloat16 and out.shape == q.shape
            # as close to float32 attention as bf16 output allows (a mask off by one, or heads
            # paired with the wrong kv head, is off by 0.3 or more)
            assert _off(out, _float32(q, k, v)) < 0.006
            # a mask given as an array (a padded batch's): mlx's own float32 composition
            mask = _padded_causal(rows)
            assert mx.array_equal(_ours(q, k, v, mask), _mlx_masked(q, k, v, mask)).item()
        for rows in (1, 8, 9):  # a decode step, a whole chunk: as mlx chooses, in bf16
            q, k, v = _qkv(rows)
            assert mx.array_equal(_ours(q, k, v), _mlx(q, k, v, mx.bfloat16)).item()

        seen = []
        q, k, v = _qkv(5)
        mx.eval(q, k, v)

        def elsewhere():  # (a thread of its own evaluates on a stream of its own)
            with mx.stream(mx.new_stream(mx.default_device())):
                seen.append(_ours(q, k, v))
                mx.eval(seen)

        other = threading.Thread(target=elsewhere)
        other.start()
        other.join()
        assert mx.array_equal(seen[0], _mlx(q, k, v, mx.bfloat16)).item()
        bf16_and_f32_differ = not mx.array_equal(_mlx(q, k, v, mx.bfloat16),
                                                 _mlx(q, k, v, mx.float32)).item()
        assert bf16_and_f32_differ  # (else the checks above could not tell the paths apart)
    q, k, v = _qkv(5)  # after the engine's life: as mlx chooses again
    assert mx.array_equal(_ours(q, k, v), _mlx(q, k, v, mx.bfloat16)).item()


def test_a_score_matrix_past_the_budget_keeps_mlx_s_choice(monkeypatch):
    monkeypatch.setattr(_attention, "_SCORES_BYTES", 4 * 4 * 5 * 40 - 1)
    with few_rows_composed(8, force=True):
        q, k, v = _qkv(5)
        assert mx.array_equal(_ours(q, k, v), _mlx(q, k, v, mx.bfloat16)).item()
        monkeypatch.setattr(_attention, "_SCORES_BYTES", 4 * 4 * 5 * 40)
        mask = _padded_causal(5)
        assert mx.array_equal(_ours(q, k, v, mask), _mlx_masked(q, k, v, mask)).item()


def test_the_causal_mask_is_built_once_a_pass_and_kept_only_while_small(monkeypatch):
    with few_rows_composed(8, force=True):
        q, k, v = _qkv(5)
        first = _ours(q, k, v)
        kept = _attention._rows.mask[1]
        again = _ours(q, k, v)  # the next layer of the same pass
        assert _attention._rows.mask[1] is kept and mx.array_equal(first, again).item()
        q, k, v = _qkv(5, keys=41)  # the next pass: one key more
        assert _off(_ours(q, k, v), _float32(q, k, v)) < 0.006
        assert _attention._rows.mask[1] is not kept
        assert _attention._rows.mask[1].shape == (2 * 5, 41)  # two heads a kv head

        monkeypatch.setattr(_attention, "_MASK_KEPT_BYTES", 2 * 5 * 42 * 4 - 1)
        q, k, v = _qkv(5, keys=42)
        assert _off(_ours(q, k, v), _float32(q, k, v)) < 0.006
        assert _attention._rows.mask is None
    assert _attention._rows.mask is None  # not held past the engine's life


def test_a_pass_with_attention_sinks_keeps_mlx_s_float32_composition():
    with few_rows_composed(8, force=True):
        q, k, v = _qkv(5)
        sinks = mx.zeros((4,))
        fast = _attention._cudnn_attention
        expected = fast(q.astype(mx.float32), k.astype(mx.float32), v.astype(mx.float32),
                        scale=0.25, mask="causal", sinks=sinks).astype(q.dtype)
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask="causal",
                                                   sinks=sinks)
        assert mx.array_equal(out, expected).item()


def test_the_engine_s_follow_up_passes_take_the_few_kernel_route(smollm2_path, monkeypatch):
    """mlx-lm's models pass ``sinks=None`` with every call: the route must still be taken."""
    from mlx_notebook.engine import Engine

    monkeypatch.setattr(_attention, "_on_cuda", lambda: True)
    taken = []
    causal = _attention._causal
    monkeypatch.setattr(_attention, "_causal", lambda *a: taken.append(a[0].shape) or causal(*a))
    messages = [{"role": "user", "content": "Tell me about the moon in two sentences."}]
    with Engine(str(smollm2_path), dtype="bfloat16", progress=False) as engine:
        first = engine.chat_completions({"messages": messages, "max_tokens": 24,
                                         "temperature": 0})
        answer = first["choices"][0]["message"]["content"]
        taken.clear()
        messages += [{"role": "assistant", "content": answer},
                     {"role": "user", "content": "And the sun?"}]
        second = engine.chat_completions({"messages": messages, "max_tokens": 8,
                                          "temperature": 0})
        time.sleep(0.3)  # idle: the engine lets go of the mask its passes shared
        assert engine._thread.call(lambda: _attention._rows.mask) is None
    usage = second["usage"]
    new = usage["prompt_tokens"] - usage["prompt_tokens_details"]["cached_tokens"]
    assert 1 < new < 64
    # the new part less its last token, in one pass of 30 layers of 9 heads (the last token
    # is read with the first decode step)
    assert taken == [(1, 9, new - 1, 64)] * 30
    assert answer.startswith("The moon is a celestial body that orbits Earth")


def test_mlx_notebook_serve_takes_the_switch():
    from mlx_notebook.engine import cli

    args = cli._parser().parse_args(["serve", "--cudnn-for-few-rows"])
    assert args.cudnn_for_few_rows is True
    assert cli._parser().parse_args(["serve"]).cudnn_for_few_rows is False
