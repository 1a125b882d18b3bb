"""Engine vs mlx-lm on big model shapes, side by side in one run, with no download.

    python benchmarks/bench_gpu.py                       # on a GPU: SmolLM2, 1B and 8B shapes
    python benchmarks/bench_gpu.py --shapes tiny --n 1 2 --tokens 16 --history 100 \\
        --prefill 256 --dtypes float32                   # on a CPU, in seconds (a test runs it)

Random-weight llama models are written to a temp dir from config shapes (SmolLM2-135M, a 1B
and an 8B llama), with the default model's tokenizer; the rows of the end-of-sequence tokens in
the output projection are zero, so greedy decoding never ends a reply early (every other
token's logit beats 0 somewhere among 49,152) and both sides decode exactly ``--tokens``
tokens without a logits processor. For each shape and dtype it prints, engine / mlx-lm:

- single stream: decode tokens/s against ``stream_generate`` (run on the caller's thread, and
  on the engine's own), and the added time to first token;
- aggregate tokens/s of N concurrent chat requests, each read by its own consumer thread (as
  notebook cells and HTTP clients do), against ``batch_generate`` on the same prompt tokens;
- a follow-up turn's time to first text (history served from the prompt cache) against the
  same turn cold, at each ``--history`` size, beside the same ratio for mlx-lm's own
  prompt-cache path (what mlx_lm.server does with the prefix the engine reused), and the
  engine's ratio to the first token itself, text or not (on random weights the first token
  can be a piece of a character, whose text waits for the next);
- prefill tokens/s of a cold ``--prefill``-token prompt against ``stream_generate``'s, both
  given the text (each tokenizes it) and timed to the first token, as mlx-lm's ``prompt_tps``.

Rounds alternate which side goes first, after ``--warmup`` runs at each N; figures compare
each side's best round (the least disturbed by anything else on the machine), and the
aggregate also prints the median of its per-round ratios.
"""

from __future__ import annotations

import argparse
import collections
import copy
import gc
import json
import platform
import shutil
import statistics
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx_lm import batch_generate, stream_generate
from mlx_lm.models.cache import make_prompt_cache

from mlx_notebook.engine import (
    ContentDelta, Engine, Finished, PrefillProgress, ReasoningDelta, Usage, resolve_model,
)

# Llama shapes (hidden, layers, MLP width, heads, KV heads, tied embeddings, RoPE theta); the
# vocabulary is the tokenizer's. "tiny" keeps the CPU test quick.
SHAPES = {
    "tiny": (64, 2, 128, 4, 2, True, 10000.0),
    "smollm2": (576, 30, 1536, 9, 3, True, 100000.0),  # SmolLM2-135M
    "1b": (2048, 16, 8192, 32, 8, True, 500000.0),  # Llama-3.2-1B
    "8b": (4096, 32, 14336, 32, 8, False, 500000.0),  # Llama-3.1-8B
}
DTYPES = ("bfloat16", "4bit", "float32")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                    "chat_template.jinja", "generation_config.json")
_FILLER = ("The lighthouse keeper wrote down the tide, the wind, the colour of the sea and "
           "every ship that passed the rocks at the harbour mouth. ")


def write_model(root: Path, shape: str, dtype: str, tokenizer_dir: Path) -> Path:
    """A random-weight llama in ``shape`` and ``dtype`` under ``root``, with our tokenizer."""
    from mlx_lm.models import llama
    from mlx_lm.tokenizer_utils import load as load_tokenizer
    from mlx_lm.utils import save_model

    path = root / f"{shape}-{dtype}"
    path.mkdir(parents=True)
    for name in _TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copy(tokenizer_dir / name, path / name)
    tokenizer = load_tokenizer(tokenizer_dir)
    hidden, layers, mlp, heads, kv_heads, tied, theta = SHAPES[shape]
    config = {
        "model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers,
        "intermediate_size": mlp, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "vocab_size": len(tokenizer.vocab), "rms_norm_eps": 1e-5, "rope_theta": theta,
        "tie_word_embeddings": tied, "max_position_embeddings": 32768,
        "eos_token_id": list(tokenizer.eos_token_ids),
    }
    mx.random.seed(0)
    model = llama.Model(llama.ModelArgs.from_dict(config))
    head = model.model.embed_tokens if tied else model.lm_head
    eos = mx.array(sorted(tokenizer.eos_token_ids))
    head.weight[eos] = 0  # greedy never picks them: replies run to max_tokens on both sides
    if dtype != "float32":
        model.set_dtype(mx.bfloat16)
    if dtype == "4bit":
        nn.quantize(model, group_size=64, bits=4)
        config["quantization"] = {"group_size": 64, "bits": 4}
    mx.eval(model.parameters())
    save_model(path, model, donate_model=True)
    (path / "config.json").write_text(json.dumps(config, indent=2))
    del model
    gc.collect()
    mx.clear_cache()
    return path


# -- one side, one run ---------------------------------------------------------------------------
def _engine_run(engine: Engine, body: dict) -> tuple[float, float, int, int, float]:
    """(time to first text s, decode tokens/s, completion tokens, cached prompt tokens, time
    to first token s) through the engine. The first token is the prompt's last progress
    event, sent once that token is computed: on random weights it may be a piece of a
    character or a special token, with no text until a later one."""
    t0 = time.perf_counter()
    first = end = token = None
    usage = None
    for event in engine.submit(body).events():
        if first is None and isinstance(event, (ContentDelta, ReasoningDelta)):
            first = time.perf_counter()
        elif isinstance(event, PrefillProgress) and event.processed == event.total:
            token = time.perf_counter()
        elif isinstance(event, Usage):
            usage = event
        elif isinstance(event, Finished):
            end = time.perf_counter()
    first = first or end
    tokens = usage.completion_tokens
    return (first - t0, (tokens - 1) / max(end - first, 1e-9), tokens, usage.cached_tokens,
            (token or first) - t0)


def _mlx_run(engine: Engine, tokens: list[int], max_tokens: int) -> tuple[float, float]:
    """(time to first text s, decode tokens/s) for ``mlx_lm.stream_generate``."""
    t0 = time.perf_counter()
    first = None
    n = 0
    for r in stream_generate(engine._thread.model, engine.tokenizer, mx.array(tokens),
                             max_tokens=max_tokens):
        n += 1
        if first is None and r.text:  # first *text*, as the engine side measures it
            first = time.perf_counter()
    end = time.perf_counter()
    first = first or end
    return first - t0, (n - 1) / max(end - first, 1e-9)


def _alternate(rounds: int, *sides) -> tuple[list, ...]:
    """Each side's results over ``rounds``; each round starts with the next side in turn."""
    results = [[] for _ in sides]
    for r in range(rounds):
        for i in range(len(sides)):
            k = (i + r) % len(sides)
            results[k].append(sides[k]())
    return tuple(results)


def _chat(i: int, words: str = "a lighthouse keeper and the sea") -> dict:
    return {"messages": [{"role": "user", "content": f"Write a long story about {words}, "
                                                     f"number {i}."}]}


# -- sections ----------------------------------------------------------------------------------
def single_stream(engine: Engine, tokens: int, rounds: int) -> dict:
    """One request against ``stream_generate``, on the caller's thread and also on the
    engine's own (``decode_same_thread``): a gap that the second shares is the thread's
    (the OS's scheduling of it, the GIL), not the engine's work per token."""
    body = {**_chat(0), "max_tokens": tokens}
    prompt = list(engine.inspect(body).token_ids)

    def ours():
        engine.clear_prompt_cache()
        return _engine_run(engine, body)[:2]

    _engine_run(engine, {**body, "max_tokens": 4}), _mlx_run(engine, prompt, 4)  # warm up
    a, b, c = _alternate(rounds, ours, lambda: _mlx_run(engine, prompt, tokens),
                         lambda: engine._thread.call(lambda: _mlx_run(engine, prompt, tokens)))
    return {"decode": max(x[1] for x in a) / max(x[1] for x in b),
            "decode_same_thread": max(x[1] for x in a) / max(x[1] for x in c),
            "engine_tps": max(x[1] for x in a), "mlx_tps": max(x[1] for x in b),
            "mlx_engine_thread_tps": max(x[1] for x in c),
            "added_ttft_ms": (min(x[0] for x in a) - min(x[0] for x in b)) * 1e3}


def _engine_aggregate(engine: Engine, bodies: list[dict]) -> float:
    counts = [0] * len(bodies)
    barrier = threading.Barrier(len(bodies) + 1)

    def consumer(i: int) -> None:
        barrier.wait()
        counts[i] = _engine_run(engine, bodies[i])[2]

    threads = [threading.Thread(target=consumer, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    engine.clear_prompt_cache()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def _mlx_aggregate(engine: Engine, prompts: list[list[int]], tokens: int) -> float:
    config = engine.config
    t0 = time.perf_counter()
    out = batch_generate(engine._thread.model, engine.tokenizer, prompts, max_tokens=tokens,
                         return_token_ids=True, completion_batch_size=config.decode_concurrency,
                         prefill_batch_size=config.prefill_concurrency)
    return sum(len(t) for t in out.token_ids) / (time.perf_counter() - t0)


def aggregate(engine: Engine, n: int, tokens: int, rounds: int, warmup: int) -> dict:
    """Aggregate tokens/s at N, after ``warmup`` untimed runs of each side.

    One warm-up is not a steady state on CUDA, where a forward pass of a shape mlx has not met
    before builds a cuDNN attention graph (65-100 ms against ~6 ms; H200, mlx 0.32.4).
    ``batch_generate`` meets the same shapes in every run; the engine's batches depend on when
    each consumer's request arrives and on the prompt cache (later arrivals reuse the shared
    system prompt, so their prefill has a cached prefix), so after one warm-up it still meets
    new ones in the timed rounds. ``median_ratio`` is the median of the per-round ratios: the spread between it
    and the best-against-best ``ratio`` shows how noisy the machine was.
    """
    bodies = [{**_chat(i), "max_tokens": tokens} for i in range(n)]
    prompts = [list(engine.inspect(b).token_ids) for b in bodies]
    for _ in range(warmup):
        _engine_aggregate(engine, bodies), _mlx_aggregate(engine, prompts, tokens)
    a, b = _alternate(rounds, lambda: _engine_aggregate(engine, bodies),
                      lambda: _mlx_aggregate(engine, prompts, tokens))
    return {"ratio": max(a) / max(b),
            "median_ratio": statistics.median(x / y for x, y in zip(a, b)),
            "engine_tps": max(a), "mlx_tps": max(b)}


def _sized_text(engine: Engine, n_tokens: int) -> str:
    per = len(engine.tokenizer.encode(_FILLER))
    return _FILLER * max(1, n_tokens // per)


def _mlx_first_text(engine: Engine, tokens: list[int], cache=None) -> tuple[float, float]:
    """Seconds to ``stream_generate``'s first text and to its first token for ``tokens``
    (after ``cache``, if given)."""
    t0 = time.perf_counter()
    token = None
    for r in stream_generate(engine._thread.model, engine.tokenizer, mx.array(tokens),
                             max_tokens=2, prompt_cache=cache):
        token = token or time.perf_counter()
        if r.text:
            break
    end = time.perf_counter()
    return end - t0, (token or end) - t0


def _mlx_prefix_cache(engine: Engine, tokens: list[int]) -> list:
    """mlx-lm's KV cache holding ``tokens``, as mlx_lm.server keeps a finished turn's."""
    cache = make_prompt_cache(engine._thread.model)
    for i in range(0, len(tokens), 2048):
        engine._thread.model(mx.array(tokens[i:i + 2048])[None], cache=cache)
        mx.eval([c.state for c in cache])
    return cache


def follow_up(engine: Engine, history: int, rounds: int, new_questions: bool = False) -> dict:
    """A follow-up turn's time to first text, served from the prompt cache, against the same
    turn cold; and the same for mlx-lm itself, as mlx_lm.server serves it (a deep copy of the
    cached prefix the engine reused, then ``stream_generate`` over the rest), so that the
    engine's ratio can be read against what mlx-lm's own cache reaches.

    ``new_questions``: each round's notes and question are longer than the round before's, so
    every forward pass meets shapes not seen before, as a real conversation's do (on CUDA,
    mlx builds a cuDNN attention plan per new shape); otherwise rounds repeat one turn."""
    notes = _sized_text(engine, history)
    warm, cold, mlx_warm, mlx_cold = [], [], [], []  # (first text s, first token s) each
    for r in range(rounds + new_questions):  # (new: round 0 is a warm-up, dropped)
        more = r if new_questions else 0
        first_turn = [{"role": "user", "content": f"My notes: {notes}{' Gulls.' * more} "
                                                  "Summarize them."}]
        engine.clear_prompt_cache()
        reply = engine.chat_completions({"messages": first_turn, "max_tokens": 16})
        question = "Which ship came last?" + " And why?" * more
        body = {"messages": first_turn + [reply["choices"][0]["message"],
                                          {"role": "user", "content": question}],
                "max_tokens": 2}
        seconds, _, _, reused, token = _engine_run(engine, body)
        warm.append((seconds, token))
        engine.clear_prompt_cache()
        cold_run = _engine_run(engine, body)
        cold.append((cold_run[0], cold_run[4]))
        tokens = list(engine.inspect(body).token_ids)
        # (new questions: mlx-lm's turns one token apart from the engine's, so that they meet
        # no shape the engine's met)
        split = reused - new_questions
        prefix = _mlx_prefix_cache(engine, tokens[:split])
        mlx_warm.append(_mlx_first_text(engine, tokens[split:], copy.deepcopy(prefix)))
        mlx_cold.append(_mlx_first_text(engine, tokens[new_questions:]))
        del prefix
        if new_questions and r == 0:
            warm, cold, mlx_warm, mlx_cold = [], [], [], []
    def best(runs, which=0):
        return min(run[which] for run in runs)

    return {"ratio": best(warm) / best(cold), "prompt_tokens": len(tokens), "cached_tokens": reused,
            "warm_ms": best(warm) * 1e3, "cold_ms": best(cold) * 1e3,
            "mlx_ratio": best(mlx_warm) / best(mlx_cold), "mlx_warm_ms": best(mlx_warm) * 1e3,
            "mlx_cold_ms": best(mlx_cold) * 1e3,
            # the same to the first token, text or not (the target's own measure)
            "token_ratio": best(warm, 1) / best(cold, 1), "warm_token_ms": best(warm, 1) * 1e3,
            "cold_token_ms": best(cold, 1) * 1e3,
            "mlx_token_ratio": best(mlx_warm, 1) / best(mlx_cold, 1)}


def prefill(engine: Engine, size: int, rounds: int, new_lengths: bool = False) -> dict:
    """Prefill tokens/s of a cold prompt: its tokens over the time to the first token's text,
    as mlx-lm's own ``prompt_tps`` is measured (the engine then still files the prompt in its
    prompt cache, ``after_first_ms``: mlx-lm's trie adds a node per token).

    ``new_lengths``: every prompt, each round's and each side's, has a length not timed before
    (on CUDA its last chunk meets a shape with no cuDNN plan yet, as a real prompt's does);
    round 0 is a warm-up, dropped. Otherwise both sides repeat one prompt."""
    text = _sized_text(engine, size)
    extra = iter(range(1, 2 * (rounds + 1) + 1)) if new_lengths else None

    def next_prompt() -> str:
        return text + " Gulls." * next(extra) if new_lengths else text

    def ours():
        body = {"prompt": next_prompt(), "max_tokens": 1}
        prompt = engine.inspect(body, kind="completion").token_ids
        engine.clear_prompt_cache()
        t0 = time.perf_counter()
        first = None
        for event in engine.submit(body, kind="completion").events():
            if first is None and isinstance(event, (ContentDelta, Finished)):
                first = time.perf_counter()
        end = time.perf_counter()
        first = first or end
        return len(prompt) / (first - t0), end - first, len(prompt)

    def theirs():  # from the text too: stream_generate tokenizes it, as the engine does
        prompt = next_prompt()
        n = len(engine.inspect({"prompt": prompt}, kind="completion").token_ids)
        t0 = time.perf_counter()
        first = None
        for r in stream_generate(engine._thread.model, engine.tokenizer, prompt, max_tokens=1):
            if first is None and r.text:
                first = time.perf_counter()
        return n / ((first or time.perf_counter()) - t0)

    a, b = _alternate(rounds + new_lengths, ours, theirs)
    a, b = (a[1:], b[1:]) if new_lengths else (a, b)
    return {"ratio": max(x[0] for x in a) / max(b), "tokens": a[-1][2],
            "engine_tps": max(x[0] for x in a), "mlx_tps": max(b),
            "after_first_ms": statistics.median(x[1] for x in a) * 1e3}


def profile(engine: Engine, n: int, tokens: int) -> dict:
    """Where each side's time goes at N concurrent requests (one run each, timers patched in).

    Counts and seconds of mlx-lm's decode steps, prefill calls and batch merges on both
    sides; on the engine side also the scheduler's whole step, the reply streams' per-token
    path, the callers' submit (rendering, tokenizing), admission and the prompt cache. Each
    side's run splits in two: ``ramp_ms`` until the first decode step with all N requests in
    the batch (prompts arriving, prefill waves), then ``full_step_ms``, the median decode
    step with all N in it (and ``between_steps_ms``, the median time from one such step to
    the next one, spent outside mlx-lm's step: routing tokens, admission). ``prefill_calls``
    lists each prefill call (rows, longest row, ms) and ``steps_by_size`` counts the decode
    steps at each batch size: the engine's batches depend on when its requests arrive.
    ``ramp`` lists the timed calls before the first full step (ms from the start, name, ms
    taken, and (rows, longest row) or the batch size), so a slow ramp shows what it waited for.
    """
    from mlx_lm.generate import GenerationBatch, PromptProcessingBatch

    from mlx_notebook.engine.request._prompt_cache import PromptCache
    from mlx_notebook.engine.request._reply_stream import ReplyStream
    from mlx_notebook.engine.request._scheduler import Scheduler
    from mlx_notebook.engine.request._single_stream import SingleStream

    timed = {"decode_step": (GenerationBatch, "next"), "prefill": (PromptProcessingBatch, "prompt"),
             "merge": (GenerationBatch, "extend"), "scheduler_step": (Scheduler, "step"),
             "on_token": (ReplyStream, "on_token"), "submit": (Engine, "submit"),
             "admit": (Scheduler, "add"), "cache_insert": (PromptCache, "insert"),
             "cache_fetch": (PromptCache, "fetch"), "single_step": (SingleStream, "step"),
             "move_to_batch": (Scheduler, "_move_single_to_batch")}
    stats: dict = {}
    calls: list = []  # (start, name, seconds, detail) of each timed call, per step at most

    def wrap(name, fn):
        def timed_fn(*a, **k):
            if name == "prefill" and not a[1]:  # mlx-lm calls it every step, often with nothing
                return fn(*a, **k)
            detail = (len(a[0].uids) if name == "decode_step"  # batch size
                      else (len(a[1]), max(map(len, a[1]))) if name == "prefill" else None)
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                t1 = time.perf_counter()
                count, total = stats.get(name, (0, 0.0))
                stats[name] = (count + 1, total + t1 - t0)
                if name not in ("scheduler_step", "on_token"):  # every step, every token
                    calls.append((t0, name, t1 - t0, detail))
        return timed_fn

    def decode_steps() -> list:  # (start, end, batch size)
        return [(t, t + d, size) for t, name, d, size in calls if name == "decode_step" and size]

    def phases(t_start: float) -> dict:
        steps = decode_steps()
        full = [s for s in steps if s[2] == n]
        if not full:
            return {}
        between = [b[0] - a[1] for a, b in zip(steps, steps[1:]) if a[2] == b[2] == n]
        ramp = [(round((t - t_start) * 1e3, 1), name, round(d * 1e3, 2), detail)
                for t, name, d, detail in calls if t < full[0][0]]
        return {"ramp_ms": round((full[0][0] - t_start) * 1e3, 1), "ramp": ramp[:80],
                "full_step_ms": round(statistics.median(e - b for b, e, _ in full) * 1e3, 2),
                "between_steps_ms": round(statistics.median(between) * 1e3, 3) if between else 0}

    originals = {name: getattr(cls, attr) for name, (cls, attr) in timed.items()}
    bodies = [{**_chat(i), "max_tokens": tokens} for i in range(n)]
    prompts = [list(engine.inspect(b).token_ids) for b in bodies]
    out = {}
    try:
        for name, (cls, attr) in timed.items():
            setattr(cls, attr, wrap(name, originals[name]))
        for side, run in (("engine", lambda: _engine_aggregate(engine, bodies)),
                          ("mlx", lambda: _mlx_aggregate(engine, prompts, tokens))):
            stats.clear()
            calls.clear()
            t0 = time.perf_counter()
            tps = run()
            out[side] = {"tok/s": round(tps), "wall_s": round(time.perf_counter() - t0, 3),
                         **phases(t0), **{k: (c, round(t, 4)) for k, (c, t) in stats.items()},
                         # a shape mlx has not met shows as a slow prefill call on CUDA
                         "prefill_calls": [(*rows, round(d * 1e3, 1))
                                           for _, name, d, rows in calls if name == "prefill"],
                         "steps_by_size": dict(collections.Counter(
                             size for *_, size in decode_steps()))}
    finally:
        for name, (cls, attr) in timed.items():
            setattr(cls, attr, originals[name])
    return out


def bench_model(path: Path, args) -> dict:
    # what earlier shapes left on the device, for a shape slower after another than alone
    row: dict = {"memory_at_start_mb": {"active": mx.get_active_memory() >> 20,
                                        "cache": mx.get_cache_memory() >> 20}}
    print(f"  memory at start {row['memory_at_start_mb']}", flush=True)
    with Engine(str(path), dtype="keep", progress=False, fused_first_token=args.fused_first_token,
                cudnn_for_few_rows=args.cudnn_for_few_rows) as engine:
        row["single"] = single_stream(engine, args.tokens, args.rounds)
        print(f"  single stream {row['single']}", flush=True)
        row["aggregate"] = {}
        for n in args.n:
            row["aggregate"][n] = aggregate(engine, n, args.tokens, args.rounds, args.warmup)
            print(f"  N={n} {row['aggregate'][n]}", flush=True)
        for n in args.profile:  # an N given twice is profiled twice; the last run is kept
            row.setdefault("profile", {})[n] = profile(engine, n, args.tokens)
            print(f"  profile N={n} {row['profile'][n]}", flush=True)
        row["follow_up"] = {h: follow_up(engine, h, args.rounds) for h in args.history}
        print(f"  follow-up {row['follow_up']}", flush=True)
        if args.new_questions:
            row["follow_up_new"] = {h: follow_up(engine, h, args.rounds, new_questions=True)
                                    for h in args.history}
            print(f"  follow-up, new questions {row['follow_up_new']}", flush=True)
        row["prefill"] = {p: prefill(engine, p, args.rounds) for p in args.prefill}
        print(f"  prefill {row['prefill']}", flush=True)
        if args.new_questions:
            row["prefill_new"] = {p: prefill(engine, p, args.rounds, new_lengths=True)
                                  for p in args.prefill}
            print(f"  prefill, new lengths {row['prefill_new']}", flush=True)
    return row


def table(results: dict, args) -> str:
    """The results as a Markdown table: engine / mlx-lm ratios per shape and dtype."""
    head = (["shape", "decode (1 stream)", "added TTFT ms"] + [f"N={n}" for n in args.n]
            + [f"follow-up @{h}" for h in args.history]
            + [f"new follow-up @{h}" for h in args.history if args.new_questions]
            + [f"prefill @{p}" for p in args.prefill]
            + [f"new prefill @{p}" for p in args.prefill if args.new_questions])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in results.items():
        cells = [name, f"{row['single']['decode']:.2f}x", f"{row['single']['added_ttft_ms']:.1f}"]
        for n in args.n:
            a = row["aggregate"][n]
            cells.append(f"{a['ratio']:.2f}x, median {a['median_ratio']:.2f}x "
                         f"({a['engine_tps']:.0f} vs {a['mlx_tps']:.0f})")
        cells += [f"{f['ratio']:.2f}x cold (first token {f['token_ratio']:.2f}x; "
                  f"mlx-lm {f['mlx_ratio']:.2f}x)"
                  for f in (row["follow_up"][h] for h in args.history)]
        if args.new_questions:
            cells += [f"{f['ratio']:.2f}x cold (first token {f['token_ratio']:.2f}x; "
                      f"mlx-lm {f['mlx_ratio']:.2f}x; {f['warm_ms']:.1f} vs "
                      f"{f['mlx_warm_ms']:.1f} ms)"
                      for f in (row["follow_up_new"][h] for h in args.history)]
        cells += [f"{row['prefill'][p]['ratio']:.2f}x" for p in args.prefill]
        if args.new_questions:
            cells += [f"{row['prefill_new'][p]['ratio']:.2f}x" for p in args.prefill]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["smollm2", "1b", "8b"], choices=SHAPES)
    parser.add_argument("--dtypes", nargs="+", default=["bfloat16", "4bit"], choices=DTYPES)
    parser.add_argument("--n", nargs="*", type=int, default=[1, 4, 8, 16, 32])
    parser.add_argument("--tokens", type=int, default=128, help="reply length")
    parser.add_argument("--history", nargs="*", type=int, default=[650, 8000])
    parser.add_argument("--prefill", nargs="*", type=int, default=[4096, 16384])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed runs of each side at each N before the rounds (see aggregate)")
    parser.add_argument("--profile", nargs="*", type=int, default=[],
                        help="N at which to print (and keep in --json) where each side's time "
                             "goes: the ramp, the steps with all N in the batch, the timers")
    parser.add_argument("--fused-first-token", action="store_true",
                        help="the engine reads a prompt's last token with its last chunk "
                             "(EngineConfig.fused_first_token): one forward pass fewer")
    parser.add_argument("--new-questions", action="store_true",
                        help="also time follow-ups whose notes and question grow each round, "
                             "and prompts of a new length each round: every pass a shape not "
                             "seen before, as in a real conversation")
    parser.add_argument("--cudnn-for-few-rows", action="store_true",
                        help="passes of fewer rows than a chunk keep cuDNN's attention on CUDA "
                             "(EngineConfig.cudnn_for_few_rows): a plan built per new shape")
    parser.add_argument("--tokenizer", help="a model dir whose tokenizer to use (default: the "
                                            "default model's)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    tokenizer_dir = Path(args.tokenizer or resolve_model(None, progress=False))
    device = mx.device_info() if hasattr(mx, "device_info") else {}
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, mlx {mx.__version__}, "
          f"{mx.default_device()}, {device.get('device_name', platform.processor())}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory() as root:
        for shape in args.shapes:
            for dtype in args.dtypes:
                name = f"{shape} {dtype}"
                print(name, flush=True)
                path = write_model(Path(root), shape, dtype, tokenizer_dir)
                results[name] = bench_model(path, args)
                shutil.rmtree(path)
    print(table(results, args), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return results


if __name__ == "__main__":
    main()
