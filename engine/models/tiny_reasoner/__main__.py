"""Replay every script on the tiny reasoner: `python -m mlx_notebook.engine.models.tiny_reasoner [MODEL_DIR]`.

Without MODEL_DIR the model comes from the model store (built on first use). Each script's
prompt goes through plain mlx-lm (`apply_chat_template`, greedy `generate`); the exit status is
1 if any reply differs from the script.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mlx_lm

from . import load_scripts


def main(argv: list[str]) -> int:
    if argv:
        path = Path(argv[0])
    else:
        from .._store import resolve_model

        path = resolve_model("tiny-reasoner")
    model, tokenizer = mlx_lm.load(str(path))
    failures = 0
    for script in load_scripts():
        prompt = tokenizer.apply_chat_template(
            script["messages"],
            tools=script.get("tools"),
            add_generation_prompt=True,
            **script.get("chat_template_kwargs", {}),
        )
        reply = mlx_lm.generate(model, tokenizer, prompt, max_tokens=600)
        same = reply == script["reply"]
        failures += not same
        print(f"== {script['name']}: {'reproduced' if same else 'DIFFERS from the script'}")
        print(f"-- {script['messages'][-1]['role']}: {script['messages'][-1]['content']}")
        print(reply if same else f"got:      {reply!r}\nexpected: {script['reply']!r}")
    print(f"{len(load_scripts()) - failures}/{len(load_scripts())} scripted replies reproduced by greedy decoding")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
