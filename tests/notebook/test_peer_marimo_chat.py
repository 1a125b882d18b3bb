"""marimo's chat checks, ported: what its ``mo.ui.chat`` and ``mo.ai.llm`` tests ask of a chat,
asked of ours with real models.

Sources (marimo-team/marimo): ``tests/_plugins/ui/_impl/chat/test_chat.py`` (history kept in
order, the config, clearing, deleting a message, the value as it is serialised, the widget
updated after a reply), ``test_chat_delta_streaming.py`` (deltas accumulate into the reply,
empty deltas, no deltas, characters split across deltas, one id per stream, what the stream
costs the front end), ``tests/_plugins/ui/_impl/chat/test_chat_convert.py`` and
``tests/_ai/test_chat_convert.py`` (a message's parts and attachments), ``tests/_ai/test_types.py``
and ``test_ai_types.py`` (text, reasoning and tool-invocation parts; dicts read as typed records),
``tests/_ai/llm/test_impl.py`` and ``tests/_ai/test_streaming_config.py`` (the system message
first, the config's fields reaching the model, an empty reply, streaming on by default).

Their chat is a widget over a user-supplied model function; ours is a ``%%chat`` session over a
model the kernel runs, so their ``chat._chat_history`` is our ``Session``, their ``value`` our
``_`` turn and saved output, their ``ChatModelConfig`` our flags and ``%mlx config``. Where we
differ on purpose the test says what we do instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from IPython.core.error import UsageError

import mlx_notebook.display as display
from conftest import magics_of, run
from mlx_notebook import reports
from mlx_notebook.display import TURN_MIME_TYPE, markdown_html
from mlx_notebook.engine import ContentDelta, EngineRequestError, Finished, Started
from mlx_notebook.runner import run_turn
from mlx_notebook.turn import Round, ToolCallRecord, Turn, Usage
from mlx_notebook.widgets import ChatView

PARIS = "What is the capital of France? Answer in one sentence."
SCHEMA = json.loads((Path(display.__file__).parent / "turn.schema.json").read_text())


def answer(reply: str) -> str:
    """A scripted reply's answer, after its reasoning."""
    return reply.split("</think>")[-1].strip()


def question(scripts, name: str) -> str:
    return scripts[name]["messages"][-1]["content"]


def define_weather(shell, scripts) -> None:
    """``get_weather`` in the notebook, with the description the tiny reasoner was trained on."""
    description = scripts["single_tool_call"]["tools"][0]["function"]["description"]
    shell.run_cell(f'def get_weather(city: str):\n    """{description}"""\n'
                   "    return {'city': city, 'temperature_c': 18, 'condition': 'sunny'}")


def recording_view(turn: Turn) -> tuple[ChatView, list[dict]]:
    """A live card for ``turn`` whose messages to the browser are kept, in order."""
    view = ChatView(turn.model, turn.session, turn=turn)
    sent: list[dict] = []
    view.comm.publish_msg = lambda msg_type, data=None, metadata=None, buffers=None, **keys: sent.append(data)
    return view, sent


def deltas(sent: list[dict]) -> list[dict]:
    return [m["content"] for m in sent if m.get("method") == "custom" and m["content"]["kind"] == "delta"]


def browser_blocks(sent: list[dict]) -> list[dict]:
    """The blocks a browser holds after these deltas, applied as ``chat_view.js`` applies them."""
    blocks: list[dict] = []
    for d in deltas(sent):
        assert d["block"] <= len(blocks), "a delta for a block the browser does not have"
        if d["block"] == len(blocks):
            blocks.append({"kind": d["channel"], "text": "", "html": []})
        block = blocks[d["block"]]
        if d["channel"] == "content":
            block["html"] = block["html"][:d["keep"]] + d["html"]
        else:
            block["text"] += d["text"]
    return blocks


def streamed(shell, body: dict, **run_options) -> tuple[Turn, ChatView, list[dict]]:
    """``body`` run on the shell's engine into a live card, finished as a cell finishes it."""
    engine = magics_of(shell).engine
    turn = Turn(model=reports.model_name(engine), session="marimo-live", request=body,
                user_message=body["messages"][-1])
    view, sent = recording_view(turn)
    run_turn(engine, turn, view, **run_options)
    view.finish(turn)
    return turn, view, sent


# ------------------------------------------------ marimo tests/_plugins/ui/_impl/chat/test_chat.py


@pytest.mark.model
def test_a_session_starts_empty_and_its_first_request_is_the_message_alone(reasoner_shell, scripts,
                                                                          capsys):
    # marimo's fresh chat has an empty history; ours has no session until its first message.
    result, _, _ = run(reasoner_shell, "%mlx history marimo-init", capsys)
    assert str(result.error_in_exec).startswith("%mlx history: there is no session named 'marimo-init'")
    result, _, err = run(reasoner_shell, f"%%chat --session marimo-init\n{question(scripts, 'reason_then_answer')}",
                         capsys)
    assert result.success, err
    assert result.result.request == {"messages": [{"role": "user", "content": "What is 17 + 25?"}]}
    _, out, _ = run(reasoner_shell, "%mlx sessions", capsys)
    assert "marimo-init: 1 turn, 1 sent as history" in out


@pytest.mark.model
def test_a_message_and_its_reply_join_the_history_in_order(reasoner_shell, scripts, capsys):
    first, follow = scripts["reason_then_answer"], scripts["follow_up_turn"]
    result, _, err = run(reasoner_shell, f"%%chat --new --session marimo-order\n{question(scripts, 'reason_then_answer')}",
                         capsys)
    assert result.success, err
    session = magics_of(reasoner_shell).sessions.get("marimo-order")
    [user, assistant] = session.history()
    assert user == {"role": "user", "content": "What is 17 + 25?"}
    assert assistant["role"] == "assistant" and assistant["content"].strip() == answer(first["reply"])
    assert assistant["reasoning_content"] == follow["messages"][1]["reasoning_content"]
    result, _, _ = run(reasoner_shell, f"%%chat --session marimo-order\n{question(scripts, 'follow_up_turn')}", capsys)
    turn = result.result
    assert turn.request["messages"] == [user, assistant, {"role": "user", "content": "Now double it."}]
    assert turn.content.strip() == answer(follow["reply"])
    _, out, _ = run(reasoner_shell, "%mlx history marimo-order", capsys)
    assert out.splitlines() == ["session 'marimo-order'",
                                "1. user: What is 17 + 25?", "   assistant: 17 + 25 = 42.",
                                "2. user: Now double it.", "   assistant: Doubled, it is 84."]


@pytest.mark.model
def test_config_fields_reach_every_request_and_the_model(smollm2_shell, capsys):
    """marimo's ChatModelConfig (temperature, max_tokens, top_p, top_k, penalties) is our
    ``%mlx config``: set once, sent with every cell under the server's names, a cell's own flag
    winning; and the sampler really gets them (a seed reproduces a hot reply)."""
    run(smollm2_shell, "%mlx config temperature=0.7 max_tokens=100 top_p=0.9 top_k=10 "
                       "frequency_penalty=0.5 presence_penalty=0.5", capsys)
    try:
        _, out, _ = run(smollm2_shell, "%mlx config", capsys)
        assert out.splitlines() == ["temperature: --temperature 0.7", "max_tokens: --max-tokens 100",
                                    "top_p: --top-p 0.9", "top_k: --top-k 10",
                                    "frequency_penalty: --frequency-penalty 0.5",
                                    "presence_penalty: --presence-penalty 0.5"]
        result, _, err = run(smollm2_shell, "%%chat --new --session marimo-config --max-tokens 2\nHi", capsys)
        assert result.success, err
        assert result.result.request == {
            "messages": [{"role": "user", "content": "Hi"}], "temperature": 0.7, "top_p": 0.9,
            "top_k": 10, "presence_penalty": 0.5, "frequency_penalty": 0.5, "max_tokens": 2}
        run(smollm2_shell, "%mlx config top_p= top_k= frequency_penalty= presence_penalty= "
                           "temperature=1.5 seed=3 max_tokens=8", capsys)
        replies = []
        for flags in ("", "", "--seed 4", "--temperature 0"):
            result, _, err = run(smollm2_shell, f"%%chat --new --session marimo-config {flags}\n{PARIS}", capsys)
            assert result.success, err
            replies.append(result.result)
        assert all(turn.usage.completion_tokens <= 8 for turn in replies)
        assert replies[0].finish_reason == "length" and replies[0].usage.completion_tokens == 8
        assert replies[0].content == replies[1].content  # the seed reached the sampler
        assert replies[2].content != replies[0].content  # and so did the other one
        assert replies[3].content.strip() == "The capital of France is Paris."  # greedy: the flag won
    finally:
        run(smollm2_shell, "%mlx config temperature= seed= max_tokens= top_p= top_k= "
                           "frequency_penalty= presence_penalty=", capsys)


@pytest.mark.model
def test_reset_clears_the_turns_and_the_system_prompt(reasoner_shell, scripts, capsys):
    pirate = scripts["system_prompt"]
    system, greeting = (m["content"] for m in pirate["messages"])
    result, _, err = run(reasoner_shell, f"%%chat --new --session marimo-clear --system '{system}'\n{greeting}",
                         capsys)
    assert result.success, err
    assert result.result.content.strip() == answer(pirate["reply"])
    _, out, _ = run(reasoner_shell, "%mlx reset marimo-clear", capsys)
    assert out == "Session 'marimo-clear' is empty again.\n"
    _, out, _ = run(reasoner_shell, "%mlx history marimo-clear", capsys)
    assert out == "session 'marimo-clear'\n"  # no turns, no system prompt
    result, _, _ = run(reasoner_shell, f"%%chat --session marimo-clear\n{question(scripts, 'reason_then_answer')}",
                       capsys)
    assert result.result.request["messages"] == [{"role": "user", "content": "What is 17 + 25?"}]
    assert result.result.content.strip() == "17 + 25 = 42."


@pytest.mark.model
def test_reset_and_history_without_a_name_mean_the_chat_the_cells_continue(reasoner_shell, scripts,
                                                                           capsys):
    """With ``%mlx config session=NAME`` every %%chat continues NAME: clearing "the chat" must
    clear that one, not an idle 'default' beside it."""
    run(reasoner_shell, "%%chat --session default --max-tokens 3\nHi", capsys)
    run(reasoner_shell, "%mlx config session=marimo-configured", capsys)
    try:
        run(reasoner_shell, f"%%chat --new\n{question(scripts, 'reason_then_answer')}", capsys)
        _, out, _ = run(reasoner_shell, "%mlx history", capsys)
        assert out.splitlines()[:2] == ["session 'marimo-configured'", "1. user: What is 17 + 25?"]
        _, out, _ = run(reasoner_shell, "%mlx render", capsys)
        assert "What is 17 + 25?" in out
        _, out, _ = run(reasoner_shell, "%mlx reset", capsys)
        assert out == "Session 'marimo-configured' is empty again.\n"
        result, _, _ = run(reasoner_shell, "%%chat --max-tokens 3\nHello again.", capsys)
        assert result.result.request["messages"] == [{"role": "user", "content": "Hello again."}]
        _, out, _ = run(reasoner_shell, "%mlx history default", capsys)
        assert "1. user: Hi" in out  # the session it did not name is untouched
    finally:
        run(reasoner_shell, "%mlx config session=", capsys)


@pytest.mark.model
def test_a_dropped_turn_leaves_the_history_and_the_conversation_goes_on_without_it(
        reasoner_shell, scripts, capsys):
    """marimo deletes one message by index; we drop a whole turn, question and answer, so a
    history never holds a question without its answer (or an answer without its question)."""
    run(reasoner_shell, f"%%chat --new --session marimo-drop\n{question(scripts, 'reason_then_answer')}", capsys)
    result, _, _ = run(reasoner_shell, f"%%chat --session marimo-drop --max-tokens 30\n"
                                       f"{question(scripts, 'long_story')}", capsys)
    digression = result.result
    assert reasoner_shell.user_ns["_"] is digression
    reasoner_shell.run_cell("_.drop()")
    _, out, _ = run(reasoner_shell, "%mlx history marimo-drop", capsys)
    assert "2. user: Tell me a story about a small robot." in out and "(not sent as history)" in out
    _, out, _ = run(reasoner_shell, "%mlx sessions", capsys)
    assert "marimo-drop: 2 turns, 1 sent as history" in out
    result, _, _ = run(reasoner_shell, f"%%chat --session marimo-drop\n{question(scripts, 'follow_up_turn')}", capsys)
    assert [m["content"] for m in result.result.request["messages"] if m["role"] == "user"] == [
        "What is 17 + 25?", "Now double it."]
    # The model sees the conversation it was taught, so it answers as taught.
    assert result.result.content.strip() == answer(scripts["follow_up_turn"]["reply"])


@pytest.mark.model
def test_editing_the_last_question_is_dropping_it_and_asking_again(reasoner_shell, scripts, capsys):
    run(reasoner_shell, "%%chat --new --session marimo-edit --max-tokens 20\nWhat is 17 + 52?", capsys)
    reasoner_shell.run_cell("_.drop()")
    result, _, _ = run(reasoner_shell, f"%%chat --session marimo-edit\n{question(scripts, 'reason_then_answer')}",
                       capsys)
    assert result.result.request["messages"] == [{"role": "user", "content": "What is 17 + 25?"}]
    assert result.result.content.strip() == "17 + 25 = 42."
    history = magics_of(reasoner_shell).sessions.get("marimo-edit").history()
    assert [m["content"] for m in history if m["role"] == "user"] == ["What is 17 + 25?"]


@pytest.mark.model
def test_the_saved_output_holds_the_conversation_as_it_was_sent(reasoner_shell, scripts, capsys):
    """marimo's value is its list of messages; ours is the turn, saved in the notebook as a
    versioned record whose request is the history sent, which reads back as JSON unchanged."""
    run(reasoner_shell, f"%%chat --new --session marimo-saved\n{question(scripts, 'reason_then_answer')}", capsys)
    session = magics_of(reasoner_shell).sessions.get("marimo-saved")
    before = session.history()
    result, _, _ = run(reasoner_shell, f"%%chat --session marimo-saved\n{question(scripts, 'follow_up_turn')}", capsys)
    turn = result.result
    data, metadata = turn._mimebundle()
    record = data[TURN_MIME_TYPE]
    jsonschema.validate(record, SCHEMA)
    assert json.loads(json.dumps(record)) == record
    assert record["request"]["messages"] == [*before, {"role": "user", "content": "Now double it."}]
    assert record["session"] == "marimo-saved" and record["content"] == turn.content
    assert "Doubled, it is 84." in data["text/markdown"] and "Doubled, it is 84." in data["text/plain"]
    assert metadata["mlx_notebook"]["usage"] == dict(turn.usage)
    # The session's history is its turns' messages, in order: what the next cell will send.
    assert session.history() == [m for t in session.turns for m in t.messages()]


@pytest.mark.model
@pytest.mark.parametrize("messages, said", [
    ({"invalid": "format"}, "'messages' must be a non-empty list of messages."),
    ([], "'messages' must be a non-empty list of messages."),  # marimo's cleared value: []
    ([{"role": "robot", "content": "Hello"}],
     "'messages[0].role' must be one of system, developer, user, assistant, tool; got \"robot\"."),
])
def test_a_history_in_the_wrong_shape_is_refused_in_one_sentence(reasoner_shell, messages, said):
    turn = Turn(model="tiny", session="marimo-shape", request={"messages": messages})
    with pytest.raises(EngineRequestError) as refused:
        run_turn(magics_of(reasoner_shell).engine, turn, None)
    assert str(refused.value) == said
    assert turn.rounds == [] and turn.content == ""  # nothing ran


@pytest.mark.model
def test_the_live_card_ends_holding_the_whole_reply_as_its_state(reasoner_shell, script_body):
    """marimo updates the element's value after each reply; our card's synced state is the
    whole reply once it ends (what a reopened notebook shows), and the saved output replaces it."""
    turn, view, sent = streamed(reasoner_shell, script_body("reason_then_answer"))
    assert view.phase == "done" and view.finish_reason == "stop" and view.error is None
    [reasoning, content] = view.blocks
    assert reasoning["kind"] == "reasoning" and reasoning["text"] == turn.reasoning
    assert content["kind"] == "content" and content["text"] == turn.content
    assert "".join(content["html"]) == markdown_html(turn.content)
    updates = [m["state"] for m in sent if m.get("method") == "update"]
    assert any(state.get("phase") == "done" for state in updates)
    assert [line for line in view.mimebundle[0]["text/plain"].splitlines() if line][:2] == [
        "[reasoning] The user asks for 17 + 25. 7 + 5 = 12, carry 1; 1 + 2 + 1 = 4. So 42.",
        "17 + 25 = 42."]


# ------------------------------------ marimo tests/_plugins/ui/_impl/chat/test_chat_delta_streaming.py


@pytest.mark.model
def test_streamed_deltas_add_up_to_the_reply_the_browser_shows(reasoner_shell, script_body):
    turn, view, sent = streamed(reasoner_shell, script_body("long_story", max_tokens=400))
    assert turn.finish_reason == "stop" and len(turn.content) > 300
    [reasoning, content] = browser_blocks(sent)
    assert reasoning["text"] == turn.reasoning
    assert "".join(content["html"]) == markdown_html(turn.content)
    # The chunks a client of the server would get add up to the same reply.
    joined = "".join(c["choices"][0]["delta"].get("content") or "" for c in turn.chunks)
    assert joined == turn.content


@pytest.mark.model
def test_a_reply_cut_inside_a_tool_call_keeps_the_text_the_model_wrote(reasoner_shell, scripts, capsys):
    """Markup that did not parse (here a call cut at max_tokens) streams as content, as the
    server sends it: the turn, its card and the history hold what the chunks held."""
    define_weather(reasoner_shell, scripts)
    reply = scripts["single_tool_call"]["reply"]
    cut = reply[:reply.index('"get_weather"') + len('"get_weather"')]  # inside the call's JSON
    tokens = len(magics_of(reasoner_shell).engine.tokenizer.encode(cut, add_special_tokens=False))
    result, out, err = run(reasoner_shell, f"%%chat --new --session marimo-cut --tools get_weather "
                                           f"--max-tokens {tokens}\n{question(scripts, 'single_tool_call')}",
                           capsys)
    assert result.success, err
    turn = result.result
    assert (turn.finish_reason, turn.tool_calls) == ("length", [])
    joined = "".join(c["choices"][0]["delta"].get("content") or "" for c in turn.chunks)
    unparsed = joined.strip()
    assert unparsed.startswith('<tool_call>\n{"name": "get_weather"') and "}" not in unparsed
    assert "[unparsed markup: The tool call was cut off before it was closed.] " + unparsed in out
    assert turn.content == joined
    why = "The tool call was cut off before it was closed."
    assert turn.rounds[-1].problems == [{"message": why, "text": unparsed}]
    bundle = turn._mimebundle()[0]
    assert "&lt;tool_call&gt;" in bundle["text/html"]  # shown, as text
    # the saved card says why, as the live card's problem line does
    assert f'<div class="mlxnb-problem" style="color:#7a5b00">⚠ unparsed markup: {why}</div>' \
        in bundle["text/html"]
    assert f"[warning] unparsed markup: {why}" in bundle["text/plain"]
    assert f"**Warning:** unparsed markup: {why}" in bundle["text/markdown"]
    record = bundle[TURN_MIME_TYPE]
    assert record["rounds"][-1]["problems"] == turn.rounds[-1].problems
    jsonschema.validate(record, SCHEMA)
    history = magics_of(reasoner_shell).sessions.get("marimo-cut").history()
    assert history[-1]["content"].strip() == unparsed


@pytest.mark.model
def test_each_reasoning_character_reaches_the_browser_once(reasoner_shell, script_body):
    """marimo's bandwidth check: a delta stream costs about the reply's length, not its square."""
    turn, _, sent = streamed(reasoner_shell, script_body("long_story", max_tokens=400))
    texts = [d["text"] for d in deltas(sent) if d["channel"] == "reasoning"]
    assert "".join(texts) == turn.reasoning
    assert len(deltas(sent)) <= turn.usage.completion_tokens


def test_empty_deltas_change_nothing_and_send_nothing():
    # marimo sends a message for each empty delta; a card here has nothing new to draw.
    turn = Turn(model="m", session="s", request={})
    view, sent = recording_view(turn)

    def stream(event):  # as the runner does: fold into the turn, then show
        turn.apply(event)
        view.handle(event)

    stream(Started("r1", prompt_tokens=3, cached_tokens=0))
    stream(ContentDelta("Hello"))
    shown = len(deltas(sent))
    for text in ("", "", ""):
        stream(ContentDelta(text))
    assert len(deltas(sent)) == shown
    for text in (" ", "", "world"):
        stream(ContentDelta(text))
    stream(Finished("stop"))
    assert turn.content == "Hello world"
    [content] = browser_blocks(sent)
    assert "".join(content["html"]) == markdown_html("Hello world")


@pytest.mark.model
def test_a_reply_cut_before_any_text_sends_no_delta_and_reads_empty(reasoner_shell, script_body):
    """marimo's empty generator (and an LLM's empty response) give ""; ours: a card with no
    answer that says why (the reply was cut at max_tokens)."""
    turn, view, sent = streamed(reasoner_shell, script_body("reason_then_answer", max_tokens=1))
    assert deltas(sent) == [] and view.blocks == []
    assert (turn.text, turn.finish_reason, view.phase) == ("", "length", "done")
    assert view.mimebundle[0]["text/plain"].endswith(", 1 completion token]")
    assert '<div class="mlxnb-content"></div>' in view.mimebundle[0]["text/html"]
    assert "finish <b>length</b>" in view.mimebundle[0]["text/html"]


@pytest.mark.model
def test_a_character_split_across_tokens_arrives_whole(reasoner_shell, scripts, capsys):
    """The tiny reasoner writes '°' as two byte tokens: no delta carries half of it."""
    define_weather(reasoner_shell, scripts)
    tokenizer = magics_of(reasoner_shell).engine.tokenizer
    assert len(tokenizer.encode(" °", add_special_tokens=False)) >= 2
    result, out, err = run(reasoner_shell, f"%%chat --new --session marimo-utf8 --tools get_weather\n"
                                           f"{question(scripts, 'single_tool_call')}", capsys)
    assert result.success, err
    turn = result.result
    assert turn.content.strip() == "It is sunny in Paris, 18 °C."
    pieces = [c["choices"][0]["delta"].get("content") or "" for c in turn.chunks]
    assert "°" in "".join(pieces) and not any("\ufffd" in piece for piece in pieces)
    assert "It is sunny in Paris, 18 °C." in out  # as the terminal printed it
    assert "18 °C" in turn._mimebundle()[0]["text/html"]


@pytest.mark.model
def test_every_chunk_of_one_model_call_carries_one_id(reasoner_shell, scripts, capsys):
    define_weather(reasoner_shell, scripts)
    result, _, _ = run(reasoner_shell, f"%%chat --new --session marimo-ids --tools get_weather\n"
                                       f"{question(scripts, 'single_tool_call')}", capsys)
    turn = result.result
    ids = [chunk["id"] for chunk in turn.chunks]
    assert {chunk["object"] for chunk in turn.chunks} == {"chat.completion.chunk"}
    # A tool loop makes two model calls: two streams, each under one id, in order.
    first = ids.index(ids[-1])
    assert len(set(ids)) == len(turn.rounds) == 2 and set(ids[:first]) == {ids[0]} != {ids[-1]}


@pytest.mark.model
def test_no_stream_shows_the_same_reply_once_it_is_whole(smollm2_shell, capsys):
    """marimo's models stream by default and take stream=False; so do we (--no-stream), and
    the request sent is the same: only what the cell shows while it runs differs."""
    streamed_result, streamed_out, _ = run(smollm2_shell, f"%%chat --new --session marimo-stream "
                                                          f"--max-tokens 12\n{PARIS}", capsys)
    whole_result, whole_out, _ = run(smollm2_shell, f"%%chat --new --session marimo-stream --no-stream "
                                                    f"--max-tokens 12\n{PARIS}", capsys)
    streamed_turn, whole_turn = streamed_result.result, whole_result.result
    assert streamed_turn.request == whole_turn.request
    assert streamed_turn.content == whole_turn.content == "The capital of France is Paris."
    assert streamed_out.startswith("The capital of France is Paris.\n")
    assert whole_out.startswith("The capital of France is Paris.\n")
    assert whole_turn.options == {"session": "marimo-stream", "new": True, "no_stream": True,
                                  "max_tokens": 12}


# -------------------- marimo tests/_plugins/ui/_impl/chat/test_chat_convert.py, tests/_ai/test_chat_convert.py


@pytest.mark.model
def test_text_parts_read_as_one_message(reasoner_shell):
    parts = [{"type": "text", "text": "What is 17"}, {"type": "text", "text": " + 25?"}]
    turn = Turn(model="tiny", session="marimo-parts",
                request={"messages": [{"role": "user", "content": parts}]})
    run_turn(magics_of(reasoner_shell).engine, turn, None)
    assert turn.content.strip() == "17 + 25 = 42."


@pytest.mark.model
def test_an_image_attachment_is_refused_naming_the_part(reasoner_shell):
    """marimo turns an image attachment into an image_url part for the provider; our models
    read text, so the request is refused before anything runs, naming the part."""
    parts = [{"type": "text", "text": "What is in this picture?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]
    turn = Turn(model="tiny", session="marimo-parts",
                request={"messages": [{"role": "user", "content": parts}]})
    with pytest.raises(EngineRequestError) as refused:
        run_turn(magics_of(reasoner_shell).engine, turn, None)
    assert str(refused.value) == ("'messages[0].content[1]' is not a text part (its type is "
                                  '"image_url"); this server reads only text parts '
                                  '({"type": "text", "text": ...}).')


@pytest.mark.model
def test_a_tool_turn_becomes_assistant_call_and_tool_result_messages(reasoner_shell, scripts, capsys):
    """marimo's reasoning and tool-invocation parts (input, output) are our rounds: each
    model call's reasoning, its calls with their arguments, and each result as a tool message,
    sent back in that order."""
    define_weather(reasoner_shell, scripts)
    result, _, err = run(reasoner_shell, f"%%chat --new --session marimo-tool --tools get_weather\n"
                                         f"{question(scripts, 'single_tool_call')}", capsys)
    assert result.success, err
    turn = result.result
    (call,) = turn.tool_calls
    taught = scripts["answer_from_tool_result"]["messages"]
    user, asked, told = turn.messages()[:3]
    assert user == taught[0]
    assert asked["reasoning_content"] == taught[1]["reasoning_content"]
    assert asked["tool_calls"] == [{"id": call.id, "type": "function",
                                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    assert told == {"role": "tool", "tool_call_id": call.id, "name": "get_weather",
                    "content": '{"city": "Paris", "temperature_c": 18, "condition": "sunny"}'}
    [last] = turn.messages()[3:]
    assert last["content"].strip() == "It is sunny in Paris, 18 °C."
    assert [line for line in turn.plain_text().splitlines() if line][1:5] == [
        "[reasoning] I need the current weather in Paris, so I call get_weather.",
        '[tool] get_weather({"city": "Paris"}) -> {"city": "Paris", "temperature_c": 18, '
        '"condition": "sunny"}',
        "[reasoning] The tool says Paris is sunny at 18 °C.", "It is sunny in Paris, 18 °C."]


def test_records_given_as_dicts_read_as_typed_and_typed_ones_are_kept_as_given():
    """marimo's from_chat_message_dict returns a ChatMessage given one; our hand-built turns
    take dicts or typed records alike."""
    typed = ToolCallRecord("call_1", "f", {"x": 1}, result=2)
    turn = Turn(model="m", session="s", request={}, tool_calls=[
        typed, {"id": "call_2", "name": "g", "arguments": {}, "error": "boom"}],
        usage={"prompt_tokens": 5, "completion_tokens": 2})
    assert turn.tool_calls[0] is typed
    assert turn.tool_calls[1] == ToolCallRecord("call_2", "g", {}, error="boom")
    assert turn.usage == Usage(5, 0, 2)
    assert Round(request={}, usage={"prompt_tokens": 1}).usage == Usage(1, 0, 0)


# ------------------------------------------------- marimo tests/_ai/llm/test_impl.py (adapters)


@pytest.mark.model
def test_the_system_prompt_goes_first_and_stays_for_the_session(reasoner_shell, scripts, capsys):
    """marimo's adapters put a system message before the history on every call; ours is the
    session's --system, sent first on every turn until '' removes it."""
    pirate = scripts["system_prompt"]
    system, greeting = (m["content"] for m in pirate["messages"])
    result, _, _ = run(reasoner_shell, f"%%chat --new --session marimo-system --system '{system}'\n{greeting}",
                       capsys)
    assert result.result.request["messages"] == pirate["messages"]
    assert result.result.content.strip() == answer(pirate["reply"])
    result, _, _ = run(reasoner_shell, "%%chat --session marimo-system --max-tokens 4\nAgain.", capsys)
    assert [m["role"] for m in result.result.request["messages"]] == ["system", "user", "assistant", "user"]
    result, _, _ = run(reasoner_shell, "%%chat --session marimo-system --system '' --max-tokens 4\nAgain.",
                       capsys)
    assert result.result.request["messages"][0] == {"role": "user", "content": greeting}


@pytest.mark.model
def test_a_failed_model_call_is_shown_and_stays_out_of_the_history_unless_kept(reasoner_shell, scripts,
                                                                               capsys):
    """marimo raises from the model call; ours fails the cell with one sentence, shows it on
    the card, keeps the turn in _ and sends it as history only after _.keep()."""
    define_weather(reasoner_shell, scripts)
    ask = question(scripts, "single_tool_call")
    result, _, err = run(reasoner_shell, f"%%chat --new --session marimo-error --tools get_weather "
                                         f"--max-rounds 1\n{ask}", capsys)
    sentence = "the model was still calling tools after 1 round; raise --max-rounds to let it continue"
    assert isinstance(result.error_in_exec, UsageError)
    assert err == f"UsageError: %%chat: {sentence}.\n"
    failed = reasoner_shell.user_ns["_"]
    assert failed.error == sentence
    assert f'<div class="mlxnb-error" style="color:#a40e26">{sentence}</div>' in failed._mimebundle()[0]["text/html"]
    _, out, _ = run(reasoner_shell, "%mlx history marimo-error", capsys)
    assert "(not sent as history)" in out
    result, _, _ = run(reasoner_shell, "%%chat --session marimo-error --tools none --max-tokens 2\nHi", capsys)
    assert result.result.request["messages"] == [{"role": "user", "content": "Hi"}]
    failed.keep()
    result, _, _ = run(reasoner_shell, "%%chat --session marimo-error --tools none --max-tokens 2\nHi", capsys)
    messages = result.result.request["messages"]
    assert messages[0] == {"role": "user", "content": ask}
    assert messages[2]["content"] == "Error: not run: the turn reached its limit of 1 round"
