"""The mlx-notebook kernel's fast BLAS against mlx's reference BLAS, side by side in one run.

    python benchmarks/bench_blas.py [--rounds 2] [--prompt-tokens 400] [--decode-tokens 64]
    MLX_NOTEBOOK_BLAS=/path/to/libblas.so python benchmarks/bench_blas.py   # another library

Starts two Jupyter kernels as a notebook would: one from the ``mlx-notebook`` kernelspec
(its launcher preloads the BLAS engine/blas.py chooses) and one from the plain ``python3``
spec with ``LD_PRELOAD`` cleared (mlx's bundled reference BLAS). In each, SmolLM2 (float32)
reads the same prompt and greedily decodes a fixed number of tokens through
``mlx_lm.stream_generate``, whose own ``prompt_tps`` and ``generation_tps`` are reported.
Rounds alternate which kernel goes first; each side's best round (the least disturbed by other
processes on a noisy machine) is compared, and the ratios printed. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os

from jupyter_client.manager import start_new_kernel

# Runs inside each kernel; {prompt_tokens} and {decode_tokens} are filled in.
SETUP = """
import json, mlx.core as mx
from mlx_lm import load, stream_generate
from mlx_lm.sample_utils import make_logits_processors
from mlx_notebook.engine.models._store import resolve_model
model, tokenizer = load(str(resolve_model("smollm2-135m-instruct", dtype="float32", progress=False)))
text = " ".join(["The lighthouse keeper wrote down the weather, the ships that passed and the colour of the sea"
                 " every hour of every night, and in the morning he read the log aloud to the gulls."] * 40)
prompt = tokenizer.encode(text)[:{prompt_tokens}]
# No end-of-sequence token may stop decoding early: every run decodes the same count.
no_eos = make_logits_processors(logit_bias={{token: -100.0 for token in tokenizer.eos_token_ids}})
import os
blas = os.environ.get("LD_PRELOAD") or "mlx's bundled reference BLAS"
"""
MEASURE = """
for last in stream_generate(model, tokenizer, mx.array(prompt), max_tokens={decode_tokens}, logits_processors=no_eos):
    pass
print(json.dumps({{"prompt_tps": last.prompt_tps, "decode_tps": last.generation_tps, "prompt_tokens": last.prompt_tokens,
                  "decode_tokens": last.generation_tokens, "blas": blas}}))
"""


class Kernel:
    """A kernel started from a kernelspec, running code and returning what it printed."""

    def __init__(self, name: str, env: dict[str, str]):
        self.name = name
        self.manager, self.client = start_new_kernel(kernel_name=name, env=env, startup_timeout=120)

    def run(self, code: str) -> str:
        printed: list[str] = []

        def keep(message: dict) -> None:
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                raise RuntimeError(f"{self.name}: {message['content']['ename']}: {message['content']['evalue']}")

        self.client.execute_interactive(code, timeout=1800, output_hook=keep)
        return "".join(printed)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=400)
    parser.add_argument("--decode-tokens", type=int, default=64)
    args = parser.parse_args()

    # No preload inherited from the shell; MLX_NOTEBOOK_BLAS=<library> still picks what the fast kernel loads.
    env = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    kernels = {"fast": Kernel("mlx-notebook", env), "reference": Kernel("python3", env)}
    best: dict[str, dict] = {}
    try:
        for kernel in kernels.values():
            kernel.run(SETUP.format(prompt_tokens=args.prompt_tokens))
        for round_index in range(args.rounds):
            order = list(kernels) if round_index % 2 == 0 else list(reversed(kernels))
            for side in order:
                result = json.loads(kernels[side].run(MEASURE.format(decode_tokens=args.decode_tokens)))
                print(f"round {round_index + 1} {side:9}: prefill {result['prompt_tps']:7.1f} tok/s, "
                      f"decode {result['decode_tps']:6.1f} tok/s")
                previous = best.get(side)
                best[side] = {**result, "prompt_tps": max(result["prompt_tps"], previous["prompt_tps"] if previous else 0),
                              "decode_tps": max(result["decode_tps"], previous["decode_tps"] if previous else 0)}
    finally:
        for kernel in kernels.values():
            kernel.close()

    fast, reference = best["fast"], best["reference"]
    print(f"\nSmolLM2 float32, {fast['prompt_tokens']}-token prompt, {fast['decode_tokens']} greedy tokens, "
          f"{os.cpu_count()} CPUs, best of {args.rounds} rounds")
    print(f"  mlx-notebook kernel: {fast['blas']}")
    print(f"  python3 kernel:      {reference['blas']}")
    print(f"{'':10}{'fast kernel':>14}{'reference':>12}{'ratio':>8}")
    for label, key in (("prefill", "prompt_tps"), ("decode", "decode_tps")):
        print(f"{label:10}{fast[key]:>10.1f} t/s{reference[key]:>8.1f} t/s{fast[key] / reference[key]:>7.1f}x")


if __name__ == "__main__":
    main()
