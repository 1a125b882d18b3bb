"""``benchmarks/bench_gpu.py`` keeps working: run on a CPU with the tiny shape, it measures
every section on both sides and prints the table the README quotes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpu.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.model
@pytest.mark.slow
def test_bench_gpu_runs_every_section_on_a_cpu_with_the_tiny_shape(smollm2_path, tmp_path, capsys):
    results = _bench().main([
        "--shapes", "tiny", "--dtypes", "float32", "--n", "1", "2", "--tokens", "8",
        "--history", "60", "--prefill", "128", "--rounds", "1", "--warmup", "1", "--profile", "2",
        "--new-questions", "--tokenizer", str(smollm2_path),
        "--json", str(tmp_path / "results.json"),
    ])
    row = results["tiny float32"]
    # Both sides decoded: the random model never ends a reply early, so the rates are real.
    assert row["single"]["engine_tps"] > 0 and row["single"]["mlx_tps"] > 0
    assert row["single"]["mlx_engine_thread_tps"] > 0  # stream_generate on the engine's thread
    assert set(row["aggregate"]) == {1, 2}
    assert all(a["engine_tps"] > 0 and a["mlx_tps"] > 0 for a in row["aggregate"].values())
    assert all(a["median_ratio"] > 0 for a in row["aggregate"].values())
    follow = row["follow_up"][60]
    assert follow["prompt_tokens"] > 60 and 60 < follow["cached_tokens"] < follow["prompt_tokens"]
    assert follow["warm_ms"] > 0 and follow["mlx_warm_ms"] > 0 and follow["mlx_cold_ms"] > 0
    # The first token (text or not) comes no later than the first text, on both sides.
    assert 0 < follow["warm_token_ms"] <= follow["warm_ms"]
    assert 0 < follow["cold_token_ms"] <= follow["cold_ms"]
    assert follow["token_ratio"] > 0 and follow["mlx_token_ratio"] > 0
    # A new question each round: a longer turn than the repeated one, each round longer still.
    new = row["follow_up_new"][60]
    assert new["prompt_tokens"] > follow["prompt_tokens"] and new["cached_tokens"] > 60
    assert new["warm_ms"] > 0 and new["mlx_warm_ms"] > 0 and new["mlx_cold_ms"] > 0
    assert row["prefill"][128]["tokens"] >= 100
    assert row["prefill"][128]["after_first_ms"] >= 0  # timed to the first token, then the rest
    # New lengths: each prompt longer than the repeated one (the last timed is the longest).
    assert row["prefill_new"][128]["tokens"] > row["prefill"][128]["tokens"]
    assert row["prefill_new"][128]["engine_tps"] > 0 and row["prefill_new"][128]["mlx_tps"] > 0
    # The profile splits each side's run into the ramp and the steps with both requests in.
    for side in ("engine", "mlx"):
        p = row["profile"][2][side]
        assert p["decode_step"][0] >= 8 and p["full_step_ms"] > 0 and p["ramp_ms"] >= 0
        assert sum(p["steps_by_size"].values()) == p["decode_step"][0]
        assert sum(rows for rows, _, _ in p["prefill_calls"]) <= 2
    assert [rows for rows, _, _ in row["profile"][2]["mlx"]["prefill_calls"]] == [2]
    assert row["profile"][2]["engine"]["on_token"][0] == 2 * 8
    out = capsys.readouterr().out
    assert "| shape | decode (1 stream) | added TTFT ms | N=1 | N=2 |" in out
    assert "| new follow-up @60 |" in out and "| new prefill @128 |" in out
    assert "| tiny float32 |" in out
    assert (tmp_path / "results.json").exists()
