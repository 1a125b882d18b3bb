"""Speculative decoding with a draft model: same answers, fewer model steps, honest caching.

The draft is the tiny reasoner with noise added to its weights: same vocabulary, a worse
guesser, so the model accepts some drafted tokens and rejects others (measured: about 60% of
the scripts' tokens accepted, at most 75% possible with 3 drafts per step).
"""

from __future__ import annotations

import gc
import shutil
import threading

import mlx.core as mx
import pytest

from mlx_notebook.engine import ContentDelta, Engine, EngineError, Finished, TokenLogprobs, Usage

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def noisy_draft_path(tiny_reasoner_path, tmp_path_factory):
    path = tmp_path_factory.mktemp("draft") / "noisy-tiny-reasoner"
    shutil.copytree(tiny_reasoner_path, path)
    mx.random.seed(1)
    for weights in path.glob("*.safetensors"):
        tensors = mx.load(str(weights))
        noisy = {k: v + 0.3 * v.std() * mx.random.normal(v.shape) if v.ndim == 2 else v
                 for k, v in tensors.items()}
        mx.save_safetensors(str(weights), noisy)
    return path


@pytest.fixture(scope="module")
def drafting_engine(tiny_reasoner_path, noisy_draft_path):
    engine = Engine(str(tiny_reasoner_path), draft_model=str(noisy_draft_path), progress=False)
    yield engine
    engine.close()


def _reply(response: dict) -> tuple:
    message = response["choices"][0]["message"]
    calls = [(c["function"]["name"], c["function"]["arguments"])
             for c in message.get("tool_calls") or []]
    return (message.get("reasoning"), message.get("content"), calls,
            response["choices"][0]["finish_reason"], response["usage"]["completion_tokens"])


@pytest.mark.parametrize("name", ["reason_then_answer", "parallel_tool_calls", "long_story",
                                  "thinking_disabled"])
def test_greedy_replies_are_the_models_own(drafting_engine, tiny_engine, script_body, name):
    body = script_body(name)
    drafted = drafting_engine.chat_completions(body)
    assert _reply(drafted) == _reply(tiny_engine.chat_completions(body))
    details = drafted["usage"]["completion_tokens_details"]
    assert 0 < details["accepted_prediction_tokens"] < drafted["usage"]["completion_tokens"]


def test_logprobs_are_the_models_own(drafting_engine, tiny_engine, script_body):
    body = script_body("reason_then_answer", logprobs=True, top_logprobs=3)
    drafted = drafting_engine.chat_completions(body)["choices"][0]["logprobs"]["content"]
    plain = tiny_engine.chat_completions(body)["choices"][0]["logprobs"]["content"]
    assert [t["token"] for t in drafted] == [t["token"] for t in plain]
    for a, b in zip(drafted, plain):
        assert a["logprob"] == pytest.approx(b["logprob"], abs=1e-3)
        assert [t["token"] for t in a["top_logprobs"]] == [t["token"] for t in b["top_logprobs"]]


def test_accepted_drafts_show_in_usage_and_events(drafting_engine, script_body):
    body = script_body("long_story", num_draft_tokens=3)
    events = list(drafting_engine.submit(body).events())
    usage = next(e for e in events if isinstance(e, Usage))
    text = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert text
    # 3 drafts per model step: at most 3 of every 4 tokens can come from the draft.
    assert 0 < usage.accepted_draft_tokens <= usage.completion_tokens * 3 // 4
    none = drafting_engine.chat_completions(script_body("long_story", num_draft_tokens=0))
    assert none["usage"]["completion_tokens_details"]["accepted_prediction_tokens"] == 0
    assert none["choices"][0]["message"]["content"] == text


def test_each_token_says_whether_the_draft_proposed_it(drafting_engine, tiny_engine, script_body):
    body = script_body("long_story", num_draft_tokens=3, logprobs=True)
    events = list(drafting_engine.submit(body).events())
    usage = next(e for e in events if isinstance(e, Usage))
    flags = [e.from_draft for e in events if isinstance(e, TokenLogprobs)]
    assert len(flags) == usage.completion_tokens and sum(flags) == usage.accepted_draft_tokens > 0
    plain = [e.from_draft for e in tiny_engine.submit(body).events() if isinstance(e, TokenLogprobs)]
    assert set(plain) == {None}  # no draft model: nothing to say


@pytest.mark.parametrize("num_draft_tokens", [3, 0])
def test_a_follow_up_turn_reuses_the_drafted_reply_from_the_cache(
        drafting_engine, tiny_engine, script_body, scripts, num_draft_tokens):
    script = scripts["follow_up_turn"]
    first = script_body("reason_then_answer", num_draft_tokens=num_draft_tokens)
    drafting_engine.clear_prompt_cache()
    reply = drafting_engine.chat_completions(first)["choices"][0]["message"]
    follow = {**first, "messages": first["messages"] + [reply] + script["messages"][-1:]}
    drafted = drafting_engine.chat_completions(follow)
    prompt = drafting_engine.inspect(follow).token_ids
    # Everything up to the reply's end is reused: the speculative loop's cache was cut
    # back to exactly the tokens both models hold.
    assert drafted["usage"]["prompt_tokens_details"]["cached_tokens"] >= len(
        drafting_engine.inspect(first).token_ids) + 1
    assert drafted["usage"]["prompt_tokens"] == len(prompt)
    assert _reply(drafted) == _reply(tiny_engine.chat_completions(follow))
    drafting_engine.clear_prompt_cache()
    assert _reply(drafting_engine.chat_completions(follow)) == _reply(drafted)


def test_concurrent_requests_take_turns_and_each_gets_its_own_reply(
        drafting_engine, tiny_engine, script_body):
    names = ["reason_then_answer", "long_story", "single_tool_call", "system_prompt"]
    expected = {n: _reply(tiny_engine.chat_completions(script_body(n))) for n in names}
    got, errors = {}, []

    def ask(name):
        try:
            got[name] = _reply(drafting_engine.chat_completions(script_body(name)))
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=ask, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert got == expected
    assert drafting_engine.active_requests == 0


def test_a_waiting_request_cancelled_before_its_turn_ends_at_once(drafting_engine, script_body):
    running = drafting_engine.submit(script_body("long_story"))
    waiting = drafting_engine.submit(script_body("long_story"))
    waiting.cancel()
    events = list(waiting.events())
    assert isinstance(events[-1], Finished) and events[-1].reason == "cancelled"
    finished = list(running.events())[-1]
    assert isinstance(finished, Finished) and finished.reason in ("stop", "length")
    r = drafting_engine.chat_completions(script_body("reason_then_answer"))
    assert r["choices"][0]["message"]["content"] == "\n\n17 + 25 = 42."


def test_smollm2_drafting_for_itself_streams_its_own_answer(smollm2_path, smollm2_engine):
    body = {"messages": [{"role": "user", "content": "Name three colours of the rainbow."}],
            "max_tokens": 24}
    expected = smollm2_engine.chat_completions(body)
    with Engine(str(smollm2_path), draft_model=str(smollm2_path), progress=False) as engine:
        chunks = list(engine.chat_completions(
            {**body, "stream": True, "stream_options": {"include_usage": True}}))
        follow = engine.chat_completions(body)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == expected["choices"][0]["message"]["content"]
    usage = chunks[-1]["usage"]
    assert usage["completion_tokens"] == expected["usage"]["completion_tokens"]
    assert usage["completion_tokens_details"]["accepted_prediction_tokens"] > 0
    # The repeat is served from the cache the speculative run left behind.
    assert follow["usage"]["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"] - 1
    assert follow["choices"][0]["message"] == expected["choices"][0]["message"]


def test_model_info_names_the_draft(drafting_engine, noisy_draft_path):
    assert drafting_engine.model_info.draft_model == noisy_draft_path.name


def test_a_draft_with_another_vocabulary_is_refused(smollm2_path, tiny_reasoner_path):
    with pytest.raises(EngineError) as e:
        Engine(str(smollm2_path), draft_model=str(tiny_reasoner_path), progress=False)
    assert str(e.value) == (
        f"The draft model {tiny_reasoner_path} has a different tokenizer (400 tokens, the "
        "model has 49152); speculative decoding needs a draft model with the same vocabulary, "
        "e.g. a smaller or more quantized model of the same family."
    )


def test_a_refused_draft_does_not_keep_the_loaded_model_in_memory(
        smollm2_path, tiny_reasoner_path):
    gc.collect()
    before = mx.get_active_memory()
    with pytest.raises(EngineError) as refused:
        Engine(str(smollm2_path), draft_model=str(tiny_reasoner_path), progress=False)
    gc.collect()
    # The error is still held (as IPython holds the last one); SmolLM2's 538 MB are not.
    assert refused.value.__traceback__ is not None
    assert mx.get_active_memory() - before < 50 << 20


def test_a_draft_cannot_share_the_engine_with_a_rotating_cache(tiny_reasoner_path):
    with pytest.raises(EngineError, match="draft_model cannot be combined with max_kv_size"):
        Engine(str(tiny_reasoner_path), draft_model=str(tiny_reasoner_path), max_kv_size=64)
