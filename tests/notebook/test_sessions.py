"""Sessions send complete and stopped turns as history (until dropped), failed ones and ones
stopped before the model wrote anything only when kept."""

from __future__ import annotations

import pytest

from mlx_notebook.sessions import Session, SessionStore, UnknownSession
from mlx_notebook.turn import Round, Turn


def _turn(question: str, answer: str, *, interrupted: bool = False, reasoning: str = "") -> Turn:
    user = {"role": "user", "content": question}
    turn = Turn(model="m", session="s", request={"messages": [user]}, user_message=user,
                interrupted=interrupted)
    turn.rounds.append(Round(request=turn.request, content=answer, reasoning=reasoning))
    return turn


def test_history_sends_complete_turns_with_system_prompt_and_reasoning():
    session = Session("s")
    messages = session.messages_for("Hi", system="Be terse.")
    assert messages == [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}]
    assert session.system is None  # nothing changes until the turn is added
    session.add(_turn("Hi", "Hello.", reasoning="\nGreet back.\n"), system="Be terse.")
    assert session.messages_for("Again") == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "reasoning_content": "Greet back."},
        {"role": "user", "content": "Again"},
    ]
    assert session.messages_for("Again", system="")[0] == {"role": "user", "content": "Hi"}


def test_stopped_turn_is_history_as_far_as_it_got_until_dropped():
    session = Session("s")
    cut = _turn("Tell a story", "Once upon", interrupted=True)
    cut.refresh()
    session.add(cut)
    assert session.history() == [{"role": "user", "content": "Tell a story"},
                                 {"role": "assistant", "content": "Once upon"}]
    assert cut.text == "Once upon [stopped]"
    cut.drop()
    assert session.history() == []


def test_turn_stopped_before_the_model_wrote_anything_is_not_history_until_kept():
    session = Session("s")
    empty = _turn("Summarise this long report", "", interrupted=True)
    empty.refresh()
    session.add(empty)
    assert empty.stopped_empty and session.history() == []
    assert session.messages_for("Shorter, then") == [{"role": "user", "content": "Shorter, then"}]
    empty.keep()
    assert session.history() == [{"role": "user", "content": "Summarise this long report"},
                                 {"role": "assistant", "content": ""}]
    thought = _turn("Why?", "", interrupted=True, reasoning="Because")
    thought.refresh()
    assert not thought.stopped_empty and thought.in_history  # it wrote something: kept


def test_failed_turn_is_not_history_until_kept():
    session = Session("s")
    failed = _turn("Tell a story", "Once", interrupted=False)
    failed.error = "the engine thread stopped"
    failed.refresh()
    session.add(failed)
    assert session.history() == []
    failed.keep()
    assert session.history()[-1] == {"role": "assistant", "content": "Once"}


def test_tool_rounds_become_assistant_and_tool_messages():
    user = {"role": "user", "content": "Weather?"}
    turn = Turn(model="m", session="s", request={"messages": [user]}, user_message=user)
    call = {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"},
            "result": {"city": "Paris", "temperature_c": 18}, "error": None}
    failed = {"id": "call_2", "name": "get_weather", "arguments": {"city": "X"},
              "result": None, "error": "KeyError: 'X'"}
    turn.rounds += [Round(request={}, tool_calls=[call, failed]), Round(request={}, content="Sunny.")]
    assert turn.messages() == [
        user,
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "X"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
         "content": '{"city": "Paris", "temperature_c": 18}'},
        {"role": "tool", "tool_call_id": "call_2", "name": "get_weather", "content": "Error: KeyError: 'X'"},
        {"role": "assistant", "content": "Sunny."},
    ]


def test_store_creates_on_open_starts_afresh_and_names_known_sessions():
    store = SessionStore()
    first = store.open("math")
    first.add(_turn("1+1?", "2"))
    assert store.open("math") is first
    assert store.open("math", new=True).turns == []
    with pytest.raises(UnknownSession) as error:
        store.get("poetry")
    assert str(error.value) == "There is no session named 'poetry' (sessions: math)."
