"""The prompt cache: reuse across turns and requests, honest greedy output, explained misses."""

from __future__ import annotations

import pytest

from mlx_notebook.engine import Engine

pytestmark = pytest.mark.model


def _reply(engine, body):
    r = engine.chat_completions(body)
    m = r["choices"][0]["message"]
    return (m.get("reasoning"), m["content"], r["usage"]["completion_tokens"]), r["usage"]


def _cached(usage) -> int:
    return usage["prompt_tokens_details"]["cached_tokens"]


def test_tiny_greedy_output_is_identical_cold_warm_and_on_exact_replay(tiny_engine, script_body):
    first, follow = script_body("reason_then_answer"), script_body("follow_up_turn")
    tiny_engine.clear_prompt_cache()
    cold_follow, usage = _reply(tiny_engine, follow)
    assert _cached(usage) == 0
    tiny_engine.clear_prompt_cache()
    cold_first, _ = _reply(tiny_engine, first)
    warm_follow, usage = _reply(tiny_engine, follow)  # the first turn's cache is reused
    assert _cached(usage) > 0
    assert warm_follow == cold_follow
    replay, usage = _reply(tiny_engine, first)  # exact replay
    assert replay == cold_first
    assert _cached(usage) == usage["prompt_tokens"] - 1


def test_smollm2_greedy_output_is_identical_cold_and_warm(smollm2_engine):
    turn1 = [{"role": "user", "content": "Name a fruit that is yellow."}]
    smollm2_engine.clear_prompt_cache()
    r1 = smollm2_engine.chat_completions({"messages": turn1, "max_tokens": 12})
    answer = r1["choices"][0]["message"]["content"]
    turn2 = turn1 + [{"role": "assistant", "content": answer},
                     {"role": "user", "content": "And a red one?"}]
    warm = smollm2_engine.chat_completions({"messages": turn2, "max_tokens": 12})
    assert _cached(warm["usage"]) >= r1["usage"]["prompt_tokens"]
    smollm2_engine.clear_prompt_cache()
    cold = smollm2_engine.chat_completions({"messages": turn2, "max_tokens": 12})
    assert _cached(cold["usage"]) == 0
    assert warm["choices"][0]["message"] == cold["choices"][0]["message"]


def test_follow_up_turn_reuses_the_whole_previous_turn(tiny_engine, script_body):
    tiny_engine.clear_prompt_cache()
    _, first = _reply(tiny_engine, script_body("reason_then_answer"))
    _, follow = _reply(tiny_engine, script_body("follow_up_turn"))
    previous = first["prompt_tokens"] + first["completion_tokens"]  # the end token included
    assert _cached(follow) >= first["prompt_tokens"]
    assert _cached(follow) <= previous
    lookup = tiny_engine.cache_info().lookups[-1]
    assert lookup.cached_tokens == _cached(follow)
    assert lookup.miss_reason and "diverged" in lookup.miss_reason


def test_requests_sharing_a_system_prompt_share_its_cache(tiny_engine):
    system = {"role": "system", "content": "You are a terse pirate. " * 8}
    tiny_engine.clear_prompt_cache()
    tiny_engine.chat_completions({"messages": [system, {"role": "user", "content": "Greet me."}],
                                  "max_tokens": 5})
    r = tiny_engine.chat_completions({"messages": [system, {"role": "user", "content": "Bye."}],
                                      "max_tokens": 5})
    assert _cached(r["usage"]) > 50


def test_a_miss_says_where_the_prompt_diverged(tiny_engine):
    tiny_engine.clear_prompt_cache()
    assert "empty" in tiny_engine.inspect(
        {"messages": [{"role": "user", "content": "Hi"}]}).cache.miss_reason
    tiny_engine.completions({"prompt": "alpha beta gamma delta", "max_tokens": 2})
    inspection = tiny_engine.inspect({"prompt": "alpha beta zeta", "max_tokens": 2})
    lookup = inspection.cache
    assert lookup.diverged_at is not None and 0 < lookup.diverged_at < len(inspection.token_ids)
    assert f"token {lookup.diverged_at}" in lookup.miss_reason


def test_a_changed_template_argument_is_named(tiny_engine, script_body):
    tiny_engine.clear_prompt_cache()
    tiny_engine.chat_completions(script_body("reason_then_answer", max_tokens=3))
    lookup = tiny_engine.inspect(script_body(
        "reason_then_answer", chat_template_kwargs={"enable_thinking": False})).cache
    assert lookup.miss_reason is not None
    assert "enable_thinking" in lookup.miss_reason


def test_the_cache_stays_within_its_byte_budget_and_says_when_it_evicted(tiny_reasoner_path,
                                                                         script_body):
    with Engine(str(tiny_reasoner_path), progress=False, prompt_cache_bytes=300_000) as engine:
        engine.chat_completions(script_body("reason_then_answer"))
        for name in ("system_prompt", "long_story", "thinking_disabled"):
            engine.chat_completions(script_body(name))
            info = engine.cache_info()
            assert info.bytes <= info.budget_bytes == 300_000
        r = engine.chat_completions(script_body("follow_up_turn"))
        lookup = engine.cache_info().lookups[-1]
        assert lookup.request_id == r["id"]
        assert lookup.cached_tokens < 30
        assert "evicted" in lookup.miss_reason


def test_a_rotating_kv_cache_still_hits_on_the_next_turn(tiny_reasoner_path, script_body):
    with Engine(str(tiny_reasoner_path), progress=False, max_kv_size=48) as engine:
        body = script_body("reason_then_answer")
        first = engine.chat_completions(body)
        assert first["usage"]["prompt_tokens"] + first["usage"]["completion_tokens"] > 48
        reply = first["choices"][0]["message"]
        history = {"role": "assistant", "content": reply["content"],
                   "reasoning_content": reply["reasoning"]}
        follow = engine.chat_completions({**body, "messages": [
            *body["messages"], history, {"role": "user", "content": "Now double it."}]})
        # The whole first turn (a rotated, untrimmable cache) is a prefix of the second.
        assert _cached(follow["usage"]) >= first["usage"]["prompt_tokens"]
        lookup = engine.cache_info().lookups[-1]
        assert lookup.cached_tokens == _cached(follow["usage"])
