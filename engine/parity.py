"""Parity harness: the in-process engine against ``mlx_lm.server`` over HTTP, same requests.

``python -m mlx_notebook.engine.parity MODEL_DIR`` starts ``mlx_lm.server`` on a free
loopback port with the same model directory, sends each request to it and to an in-process
``Engine`` in the same order (so both prompt caches see the same history), compares text,
reasoning, tool calls, finish reasons, token counts and cached tokens, prints one table row
per compared value and exits 1 on any difference. Logprobs are compared by value: the two
shapes differ on purpose (we follow OpenAI's; see ``responses``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

__all__ = ["ParityRow", "run_parity", "main"]

_LOGPROB_TOLERANCE = 1e-3


@dataclass(frozen=True, slots=True)
class ParityRow:
    case: str
    field: str
    engine: Any
    server: Any

    @property
    def same(self) -> bool:
        if isinstance(self.engine, list) and self.engine and isinstance(self.engine[0], float):
            return len(self.engine) == len(self.server) and all(
                abs(a - b) <= _LOGPROB_TOLERANCE for a, b in zip(self.engine, self.server))
        return self.engine == self.server


# -- the server side ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    """``mlx_lm.server`` as a subprocess on a free loopback port."""

    def __init__(self, model_dir: str, draft_model: str | None = None, timeout: float = 300):
        self.port = _free_port()
        draft = ["--draft-model", draft_model] if draft_model else []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mlx_lm", "server", "--model", model_dir, *draft,
             "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "WARNING"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ),
        )
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("mlx_lm.server exited: " + self.proc.stderr.read().decode()[-2000:])
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        self.close()
        raise RuntimeError("mlx_lm.server did not become healthy in time")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def post(self, path: str, body: dict):
        data = json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            raw = r.read().decode()
        if not body.get("stream"):
            return json.loads(raw)
        return [json.loads(line[6:]) for line in raw.splitlines()
                if line.startswith("data: ") and line[6:].strip() != "[DONE]"]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- normalising both sides to comparable values ------------------------------------------------
def _calls(calls) -> list:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls or []]


def _summary(kind: str, result) -> dict:
    """Text, reasoning, calls, finish reason, usage and logprobs of a response or stream."""
    out = {"content": "", "reasoning": "", "tool_calls": [], "finish_reason": None,
           "usage": None, "logprobs": [], "top_logprobs": []}
    responses = result if isinstance(result, list) else [result]
    for r in responses:
        if r.get("usage"):
            u = r["usage"]
            out["usage"] = (u["prompt_tokens"], u["completion_tokens"],
                            u.get("prompt_tokens_details", {}).get("cached_tokens"))
        for choice in r.get("choices", []):
            if choice.get("finish_reason"):
                out["finish_reason"] = choice["finish_reason"]
            if kind == "completion":
                out["content"] += choice.get("text") or ""
            else:
                m = choice.get("message") or choice.get("delta") or {}
                out["content"] += m.get("content") or ""
                out["reasoning"] += m.get("reasoning") or m.get("reasoning_content") or ""
                out["tool_calls"] += _calls(m.get("tool_calls"))
            lp = choice.get("logprobs")
            if lp and lp.get("content"):
                for entry in lp["content"]:
                    out["logprobs"].append(entry.get("logprob"))
                    top = entry.get("top_logprobs") or []
                    out["top_logprobs"].append(sorted(round(t["logprob"], 3) for t in top))
            elif lp and lp.get("token_logprobs"):
                out["logprobs"] += lp["token_logprobs"]
    if out["tool_calls"] and not out["content"].strip():
        out["content"] = ""  # mlx_lm.server sends the blank lines before calls; OpenAI, and we, none
    return out


def _server_logprobs(summary: dict, has_top: bool) -> None:
    # mlx_lm.server puts an arbitrary one of the top alternatives first when top_logprobs is
    # set, so only the alternatives compare; without it, the sampled token's value compares.
    if has_top:
        summary["logprobs"] = []


def _drop_server_end_token(kind: str, ours: dict, server: dict) -> None:
    # mlx_lm.server lists the end-of-sequence token last in chat logprobs; OpenAI, and we,
    # leave it out. Its entry is dropped only where ours counts it (usage) and lists one fewer.
    listed, usage = len(ours["top_logprobs"]), ours["usage"]
    if (kind == "chat" and ours["finish_reason"] == "stop" and len(server["top_logprobs"]) ==
            listed + 1 and (usage is None or usage[1] == listed + 1)):
        server["logprobs"], server["top_logprobs"] = (server["logprobs"][:-1],
                                                      server["top_logprobs"][:-1])


# -- the cases -----------------------------------------------------------------------------------
def _cases(engine, max_tokens: int) -> list[tuple[str, str, dict]]:
    user = lambda text: {"role": "user", "content": text}  # noqa: E731
    prompts = {  # a general chat model
        "plain": [user("What is the capital of France? Answer in one sentence.")],
        "stream": [user("Name three colors.")],
        "hello": [user("Say hello.")],
        "count": [user("Count from one to ten in words.")],
    }
    stop = ["four"]
    scripted = []
    if engine.model_info.tool_calling:
        # The tiny reasoner only answers its scripted conversations (anything else is
        # garbage whose stray markers would test the parsers, not the engine).
        from .models.tiny_reasoner import load_scripts

        scripts = {s["name"]: s for s in load_scripts()}
        prompts = {"plain": scripts["reason_then_answer"]["messages"],
                   "stream": scripts["system_prompt"]["messages"],
                   "hello": scripts["reason_then_answer"]["messages"],
                   "count": scripts["long_story"]["messages"]}
        stop = ["Pip"]
        for script in scripts.values():
            body = {"messages": script["messages"]}
            for key in ("tools", "chat_template_kwargs"):
                if key in script:
                    body[key] = script[key]
            scripted.append((f"script {script['name']}", "chat", body))
    cases = [
        ("chat", "chat", {"messages": prompts["plain"]}),
        ("chat stream", "chat", {"messages": prompts["stream"], "stream": True,
                                 "stream_options": {"include_usage": True}}),
        ("completion", "completion", {"prompt": "The capital of France is"}),
        ("chat logprobs", "chat", {"messages": prompts["hello"], "logprobs": True}),
        ("chat top_logprobs", "chat", {"messages": prompts["hello"], "logprobs": True,
                                       "top_logprobs": 3}),
        ("chat stop", "chat", {"messages": prompts["count"], "stop": stop}),
        *scripted,
    ]
    return [(name, kind, {"max_tokens": max_tokens, **body}) for name, kind, body in cases]


def _multi_turn(engine, server, max_tokens: int, rows: list) -> None:
    first = {"messages": [{"role": "user", "content": "What is 17 + 25?"}], "max_tokens": max_tokens}
    reply = engine.chat_completions(first)["choices"][0]["message"]
    server.post("/v1/chat/completions", first)
    history = {"role": "assistant", "content": reply["content"] or ""}
    if reply.get("reasoning"):
        history["reasoning_content"] = reply["reasoning"]
    second = {**first, "messages": [*first["messages"], history,
                                    {"role": "user", "content": "Now double it."}]}
    _compare("multi-turn (turn 2)", "chat", second, engine, server, rows)


def _compare(name, kind, body, engine, server, rows) -> None:
    path = "/v1/chat/completions" if kind == "chat" else "/v1/completions"
    ours = (engine.chat_completions if kind == "chat" else engine.completions)(body)
    ours = list(ours) if body.get("stream") else ours
    theirs = server.post(path, body)
    a, b = _summary(kind, ours), _summary(kind, theirs)
    _drop_server_end_token(kind, a, b)
    _server_logprobs(b, body.get("top_logprobs", 0) > 0)
    _server_logprobs(a, body.get("top_logprobs", 0) > 0)
    for key in ("content", "reasoning", "tool_calls", "finish_reason", "usage"):
        rows.append(ParityRow(name, key, a[key], b[key]))
    if body.get("logprobs"):
        rows.append(ParityRow(name, "logprobs", a["logprobs"], b["logprobs"]))
        rows.append(ParityRow(name, "top_logprobs", a["top_logprobs"], b["top_logprobs"]))


class _OverHttp:
    """The engine as our HTTP listener serves it: the same calls, answered over loopback."""

    def __init__(self, engine, listener):
        self.model_info, self.url = engine.model_info, listener.url.removesuffix("/v1")

    post = _Server.post

    def chat_completions(self, body: dict):
        return self.post("/v1/chat/completions", body)

    def completions(self, body: dict):
        return self.post("/v1/completions", body)


def run_parity(model_dir: str, *, max_tokens: int = 48, draft_model: str | None = None,
               over_http: bool = False) -> list[ParityRow]:
    """Send every case to an in-process Engine and to mlx_lm.server; one row per value.
    ``over_http`` sends ours through the engine's HTTP listener (``engine.serving``) instead."""
    from ._engine import Engine
    from .serving import Listener

    rows: list[ParityRow] = []
    server = _Server(model_dir, draft_model)
    try:
        with Engine(model_dir, draft_model=draft_model, progress=False) as engine:
            listener = Listener(engine, port=0, token="").start() if over_http else None
            try:
                ours = engine if listener is None else _OverHttp(engine, listener)
                for name, kind, body in _cases(ours, max_tokens):
                    _compare(name, kind, body, ours, server, rows)
                _multi_turn(ours, server, max_tokens, rows)
            finally:
                if listener is not None:
                    listener.stop()
    finally:
        server.close()
    return rows


def _cell(value, width: int = 44) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def format_table(rows: list[ParityRow]) -> str:
    lines = [f"{'case':34} {'field':14} {'ok':4} {'engine':46} server"]
    for r in rows:
        lines.append(f"{r.case[:34]:34} {r.field:14} {'ok' if r.same else 'DIFF':4} "
                     f"{_cell(r.engine):46} {_cell(r.server)}")
    bad = sum(not r.same for r in rows)
    lines.append(f"{len(rows)} values compared, {bad} differ")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlx_notebook.engine.parity",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", help="an mlx-lm model directory")
    parser.add_argument("--max-tokens", type=int, default=48,
                        help="reply length limit for every case (default: %(default)s)")
    parser.add_argument("--draft-model", default=None, metavar="DIR",
                        help="a draft model directory: both sides decode speculatively")
    parser.add_argument("--over-http", action="store_true",
                        help="reach our engine through its HTTP listener, as mlx_lm.server is")
    args = parser.parse_args(argv)
    rows = run_parity(args.model_dir, max_tokens=args.max_tokens, draft_model=args.draft_model,
                      over_http=args.over_http)
    print(format_table(rows))
    return 0 if all(r.same for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
