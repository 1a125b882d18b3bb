"""The HTTP listener against the in-process engine: N simultaneous streaming clients, one run.

    python benchmarks/bench_listener.py MODEL_DIR --clients 64 --tokens 64 --rounds 3
    python benchmarks/bench_listener.py --shape 1b --tokenizer DIR   # a random-weight 1B llama

The same N chat requests run (a) in process, each read by its own consumer thread, and (b) as
N streaming HTTP clients in a separate process (as real clients are), against a ``Listener``
on the same engine. Rounds alternate which side goes first; each side's best round counts.
It prints both aggregate decode rates (completion tokens over wall time), their ratio, and how
many HTTP clients were refused or reset (mlx_lm.server resets half of 32 under such a burst).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from pathlib import Path

from mlx_notebook.engine import Engine
from mlx_notebook.engine.serving import Listener

sys.path.insert(0, str(Path(__file__).parent))
from bench_gpu import _engine_aggregate, write_model  # noqa: E402  (the same consumers)

_CLIENTS = r'''
import asyncio, json, sys, time
import httpx
url, n, body = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])

async def one(client, i):
    tokens = 0
    async with client.stream("POST", "/chat/completions",
                             json={**body, "messages": [{"role": "user", "content": body["messages"][0]["content"] + f" number {i}."}]}) as r:
        if r.status_code != 200:
            return None
        async for line in r.aiter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    tokens = chunk["usage"]["completion_tokens"]
    return tokens

async def main():
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=600) as c:
        t0 = time.perf_counter()
        out = await asyncio.gather(*(one(c, i) for i in range(n)), return_exceptions=True)
        took = time.perf_counter() - t0
    ok = [x for x in out if isinstance(x, int)]
    print(json.dumps({"tokens": sum(ok), "seconds": took, "failed": len(out) - len(ok)}))

asyncio.run(main())
'''

_PROMPT = "Write a long story about a lighthouse keeper and the sea"


def _in_process(engine: Engine, n: int, tokens: int) -> float:
    """Aggregate tok/s of ``n`` concurrent requests read in process, as bench_gpu.py reads them."""
    bodies = [{"messages": [{"role": "user", "content": f"{_PROMPT} number {i}."}],
               "max_tokens": tokens, "temperature": 0.0} for i in range(n)]
    return _engine_aggregate(engine, bodies)


def _over_http(engine: Engine, listener: Listener, n: int, tokens: int) -> tuple[float, int]:
    body = {"messages": [{"role": "user", "content": _PROMPT}], "max_tokens": tokens,
            "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
    engine.clear_prompt_cache()
    out = subprocess.run([sys.executable, "-c", _CLIENTS, listener.url, str(n), json.dumps(body)],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    return result["tokens"] / result["seconds"], result["failed"]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", help="an mlx-lm model directory or model spec")
    parser.add_argument("--shape", default=None,
                        help="instead: a random-weight llama of bench_gpu.py's shapes (1b, 8b, ...) "
                             "in bfloat16, whose replies run to --tokens")
    parser.add_argument("--tokenizer", default=None, help="the tokenizer directory for --shape")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dtype", default="auto")
    args = parser.parse_args(argv)
    if args.shape:
        import tempfile

        args.model = str(write_model(Path(tempfile.mkdtemp()), args.shape, "bfloat16",
                                     Path(args.tokenizer)))
    with Engine(args.model, dtype=args.dtype, progress=False,
                decode_concurrency=max(32, args.clients)) as engine, \
            Listener(engine, port=0, token="") as listener:
        _in_process(engine, args.clients, 4), _over_http(engine, listener, args.clients, 4)
        ours, http, failed = [], [], 0
        for r in range(args.rounds):
            for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                if side == 0:
                    ours.append(_in_process(engine, args.clients, args.tokens))
                else:
                    rate, bad = _over_http(engine, listener, args.clients, args.tokens)
                    http.append(rate)
                    failed += bad
    result = {"clients": args.clients, "tokens": args.tokens, "in_process_tps": max(ours),
              "http_tps": max(http), "ratio": max(http) / max(ours), "failed": failed,
              "rounds": {"in_process": ours, "http": http}}
    print(f"{args.clients} clients x {args.tokens} tokens: in process {max(ours):.0f} tok/s, "
          f"over HTTP {max(http):.0f} tok/s, ratio {max(http) / max(ours):.3f}, "
          f"{failed} refused or reset")
    return result


if __name__ == "__main__":
    main()
