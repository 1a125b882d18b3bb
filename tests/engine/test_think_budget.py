"""``thinking_token_budget``: after N reasoning tokens the end-of-reasoning marker is forced."""

import pytest

from mlx_notebook.engine import EngineRequestError, Usage


def _reply(engine, body):
    handle = engine.submit(body)
    events = list(handle.events())
    (usage,) = [e for e in events if isinstance(e, Usage)]
    return engine.trace(handle.id), usage


def _reasoning_token_ids(engine, token_ids):
    start, end = (engine.tokenizer.encode(m, add_special_tokens=False)[0] for m in ("<think>", "</think>"))
    ids = list(token_ids)
    return ids[ids.index(start) + 1: ids.index(end)]


@pytest.mark.model
@pytest.mark.parametrize("budget", [0, 1, 5, 12])
def test_reasoning_stops_at_the_budget_and_an_answer_follows(tiny_engine, script_body, budget):
    trace, usage = _reply(tiny_engine, script_body("reason_then_answer", thinking_token_budget=budget))
    assert len(_reasoning_token_ids(tiny_engine, trace.token_ids)) == budget
    assert usage.reasoning_tokens == budget
    # The model answers after the cut (the tiny reasoner, which memorized whole replies,
    # answers garbage from a thought cut short; a real model answers from what it thought).
    assert any(e.kind == "content" and e.text.strip() for e in trace.events)
    assert usage.completion_tokens > budget + 2
    assert trace.diff() == []


@pytest.mark.model
def test_a_budget_the_reasoning_stays_under_changes_nothing(tiny_engine, script_body, scripts):
    trace, usage = _reply(tiny_engine, script_body("reason_then_answer", thinking_token_budget=1000))
    assert trace.text == scripts["reason_then_answer"]["reply"]
    assert usage.reasoning_tokens == len(_reasoning_token_ids(tiny_engine, trace.token_ids)) < 1000
    plain_trace, plain_usage = _reply(tiny_engine, script_body("reason_then_answer"))
    assert plain_trace.token_ids == trace.token_ids and plain_usage.reasoning_tokens is None


@pytest.mark.model
def test_a_reply_that_never_reasons_reports_no_reasoning_tokens(tiny_engine, script_body, scripts):
    trace, usage = _reply(tiny_engine, script_body("thinking_disabled", thinking_token_budget=0))
    assert trace.text == scripts["thinking_disabled"]["reply"] and usage.reasoning_tokens is None


@pytest.mark.model
def test_concurrent_requests_each_keep_their_own_budget(tiny_engine, script_body, engine_thread_held):
    budgets = [2, 7, None]
    with engine_thread_held(tiny_engine):
        handles = [tiny_engine.submit(script_body("reason_then_answer", thinking_token_budget=b))
                   for b in budgets]
    for handle, budget in zip(handles, budgets):
        list(handle.events())
        reasoning = _reasoning_token_ids(tiny_engine, tiny_engine.trace(handle.id).token_ids)
        assert len(reasoning) == (44 if budget is None else budget)


@pytest.mark.model
def test_a_model_without_reasoning_markers_refuses_the_budget(smollm2_engine):
    with pytest.raises(EngineRequestError) as caught:
        smollm2_engine.submit({"messages": [{"role": "user", "content": "Hi"}],
                               "thinking_token_budget": 4})
    assert caught.value.param == "thinking_token_budget"
    assert "parser family 'plain' has none" in str(caught.value)


@pytest.mark.parametrize("value, message", [
    (-1, "'thinking_token_budget' must be at least 0, got -1."),
    (2.5, "'thinking_token_budget' must be an integer, got 2.5."),
    (True, "'thinking_token_budget' must be an integer, got true."),
])
def test_admission_names_a_bad_budget(value, message):
    from mlx_notebook.engine import EngineConfig
    from mlx_notebook.engine.request._admission import admit

    with pytest.raises(EngineRequestError, match=message.replace(".", r"\.")) as caught:
        admit({"messages": [{"role": "user", "content": "x"}], "thinking_token_budget": value},
              kind="chat", config=EngineConfig())
    assert caught.value.param == "thinking_token_budget"


@pytest.mark.model
def test_the_speculative_path_cuts_at_the_same_token(tiny_engine, drafting_tiny_engine, script_body):
    body = script_body("reason_then_answer", thinking_token_budget=3)
    drafted, usage = _reply(drafting_tiny_engine, body)
    alone, _ = _reply(tiny_engine, body)
    assert drafted.token_ids == alone.token_ids and usage.reasoning_tokens == 3
    assert usage.accepted_draft_tokens > 0
