"""The tiny reasoner builds offline and greedy decoding through plain mlx-lm replays every script."""

from __future__ import annotations

import json

import mlx_lm
import pytest

from mlx_notebook.engine.models.tiny_reasoner import RECIPE_HASH, load_scripts
from mlx_notebook.engine.models.tiny_reasoner._recipe import recipe_hash

SCRIPTS = {script["name"]: script for script in load_scripts()}


@pytest.fixture(scope="session")
def built_dir(tiny_reasoner_path):
    # The store builds it with build_tiny_reasoner once per cache; every test folder shares it.
    return tiny_reasoner_path


@pytest.fixture(scope="session")
def loaded(built_dir):
    return mlx_lm.load(str(built_dir))


def _prompt(tokenizer, script):
    return tokenizer.apply_chat_template(
        script["messages"],
        tools=script.get("tools"),
        add_generation_prompt=True,
        **script.get("chat_template_kwargs", {}),
    )


@pytest.mark.model
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_greedy_decoding_reproduces_the_scripted_reply(loaded, name):
    model, tokenizer = loaded
    script = SCRIPTS[name]
    reply = mlx_lm.generate(model, tokenizer, _prompt(tokenizer, script), max_tokens=600)
    assert reply == script["reply"]


@pytest.mark.model
def test_checkpoint_is_a_small_qwen3_that_two_ranks_can_shard(built_dir):
    config = json.loads((built_dir / "config.json").read_text())
    assert config["model_type"] == "qwen3"
    assert config["num_attention_heads"] % 2 == 0 and config["num_key_value_heads"] % 2 == 0
    assert config["tiny_reasoner_recipe"] == RECIPE_HASH
    assert "chat_template" in json.loads((built_dir / "tokenizer_config.json").read_text())


@pytest.mark.model
def test_mlx_lm_detects_thinking_and_json_tool_calls(loaded):
    _, tokenizer = loaded
    assert (tokenizer.think_start, tokenizer.think_end) == ("<think>", "</think>")
    assert (tokenizer.tool_call_start, tokenizer.tool_call_end) == ("<tool_call>", "</tool_call>")
    assert tokenizer.eos_token == "<|im_end|>"
    body = SCRIPTS["single_tool_call"]["reply"].split("<tool_call>")[1].split("</tool_call>")[0]
    assert tokenizer.tool_parser(body) == {"name": "get_weather", "arguments": {"city": "Paris"}}


@pytest.mark.model
def test_disabled_thinking_prefills_an_empty_think_block(loaded):
    _, tokenizer = loaded
    script = SCRIPTS["thinking_disabled"]
    text = tokenizer.decode(_prompt(tokenizer, script))
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    script["chat_template_kwargs"] = {}
    assert tokenizer.decode(_prompt(tokenizer, script)).endswith("<|im_start|>assistant\n")


@pytest.mark.model
def test_follow_up_prompt_extends_the_first_turn_token_for_token(loaded):
    # What lets the second turn hit the prompt cache: nothing before the new user message changes.
    _, tokenizer = loaded
    first, follow_up = SCRIPTS["reason_then_answer"], SCRIPTS["follow_up_turn"]
    first_turn = _prompt(tokenizer, first) + tokenizer.encode(first["reply"], add_special_tokens=False)
    first_turn.append(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    assert _prompt(tokenizer, follow_up)[: len(first_turn)] == first_turn


@pytest.mark.model
def test_the_long_reply_is_at_least_80_tokens(loaded):
    _, tokenizer = loaded
    assert len(tokenizer.encode(SCRIPTS["long_story"]["reply"], add_special_tokens=False)) >= 80


def test_recipe_hash_changes_when_a_script_changes():
    scripts = load_scripts()
    assert recipe_hash(scripts) == RECIPE_HASH
    scripts[0]["reply"] = scripts[0]["reply"].replace("42", "43")
    assert recipe_hash(scripts) != RECIPE_HASH


def test_scripts_cover_the_required_behaviours():
    assert set(SCRIPTS) >= {
        "reason_then_answer", "follow_up_turn", "single_tool_call", "parallel_tool_calls",
        "answer_from_tool_result", "thinking_disabled", "long_story",
    }
    assert SCRIPTS["parallel_tool_calls"]["reply"].count("<tool_call>") == 2
    assert SCRIPTS["answer_from_tool_result"]["messages"][-1]["role"] == "tool"
    assert SCRIPTS["follow_up_turn"]["messages"][0] == SCRIPTS["reason_then_answer"]["messages"][0]


@pytest.mark.model
def test_replay_command_reports_every_script_reproduced(built_dir, capsys):
    from mlx_notebook.engine.models.tiny_reasoner.__main__ import main

    assert main([str(built_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{len(SCRIPTS)}/{len(SCRIPTS)} scripted replies reproduced by greedy decoding" in out
    assert "== parallel_tool_calls: reproduced" in out


def _render(messages, **kwargs):
    from mlx_notebook.engine.models.tiny_reasoner._recipe import chat_template
    from mlx_notebook.engine.models.tiny_reasoner._tokenizer import byte_tokenizer

    return byte_tokenizer(chat_template()).apply_chat_template(messages, tokenize=False, **kwargs)


def test_template_renders_tool_call_arguments_given_as_string_or_dict_alike():
    def turn(arguments):
        call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
        return [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": [call]}]

    as_string = _render(turn('{"city": "Oslo"}'))
    assert as_string == _render(turn({"city": "Oslo"}))
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>' in as_string


def test_template_groups_consecutive_tool_results_into_one_user_turn():
    text = _render(SCRIPTS["answer_from_tool_result"]["messages"] + [{"role": "tool", "content": "second"}])
    assert text.endswith(
        '<|im_start|>user\n<tool_response>\n{"city": "Paris", "temperature_c": 18, "condition": "sunny"}\n'
        "</tool_response>\n<tool_response>\nsecond\n</tool_response><|im_end|>\n"
    )


@pytest.mark.model
def test_the_training_bar_counts_the_steps_taken_and_promises_no_total(tmp_path, capfd):
    import re

    from mlx_notebook.engine.models.tiny_reasoner import build_tiny_reasoner

    build_tiny_reasoner(tmp_path, progress=True)
    renders = [r.strip() for r in re.split(r"[\r\n]", capfd.readouterr().err) if r.strip()]
    steps = json.loads((tmp_path / "config.json").read_text())["tiny_reasoner_training_steps"]
    # The old bar promised "0/400" with minutes left, then ended at "40/40".
    assert not [r for r in renders if re.search(r"\d+/\d+", r)]
    final = re.fullmatch(r"training tiny-reasoner until it replays every script: (\d+) steps, \d\d:\d\d, "
                         r"loss=[\d.]+, margin=[\d.]+", renders[-1])
    assert final and int(final[1]) == steps
