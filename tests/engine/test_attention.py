"""Few-row attention on the engine's thread (request/_attention.py): what mlx computes for
each pass, checked against mlx's own attention in each dtype. Its point, no cuDNN plan per new
shape, shows only on CUDA (benchmarks/bench_gpu.py); here the routing is what is tested."""
import threading

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


def _ours(q, k, v):
    return mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask="causal")


def test_off_cuda_nothing_is_wrapped_unless_forced():
    with few_rows_composed(2048) as composing:
        assert composing is (mx.default_device() == mx.gpu and mx.cuda.is_available())
    with few_rows_composed(0, force=True) as composing:
        assert composing is False


def test_passes_of_a_few_rows_attend_in_float32_on_that_thread_only():
    with few_rows_composed(8, force=True) as composing:
        assert composing and _attention.installed()
        for rows in (2, 5, 7):  # fewer than a chunk's: float32, in mlx's own composition
            q, k, v = _qkv(rows)
            out = _ours(q, k, v)
            assert out.dtype == mx.bfloat16
            assert mx.array_equal(out, _mlx(q, k, v, mx.float32)).item()
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
        assert mx.array_equal(_ours(q, k, v), _mlx(q, k, v, mx.float32)).item()


def test_mlx_notebook_serve_takes_the_switch():
    from mlx_notebook.engine import cli

    args = cli._parser().parse_args(["serve", "--cudnn-for-few-rows"])
    assert args.cudnn_for_few_rows is True
    assert cli._parser().parse_args(["serve"]).cudnn_for_few_rows is False
