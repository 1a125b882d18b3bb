"""StreamFilter.for_tokenizer: the family and starting state come from the model's files."""

from pathlib import Path

import pytest
from mlx_lm.tokenizer_utils import load as load_tokenizer
from mlx_notebook.engine.parsing import Event, StreamFilter, family_for_tokenizer
from tokenizers import Tokenizer, models, pre_tokenizers
from parsing_cases.templates import LLAMA31_TEMPLATE
from transformers import PreTrainedTokenizerFast

QWEN3_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if tools %}{% for t in tools %}<tool_call>{{ tool_call.name }}</tool_call>{% endfor %}"
    "{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}"
)
LLAMA_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_tokenizer(path: Path, specials, template) -> Path:
    """A tiny word-level tokenizer with the given special tokens and chat template."""
    vocab = {"[UNK]": 0, "hello": 1, "world": 2}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>", *specials]})
    fast.chat_template = template
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def qwen3_dir(tmp_path_factory):
    specials = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
    return make_tokenizer(tmp_path_factory.mktemp("qwen3"), specials, QWEN3_TEMPLATE)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return make_tokenizer(tmp_path_factory.mktemp("llama"), [], LLAMA_TEMPLATE)


def render(tokenizer, **kwargs):
    messages = [{"role": "user", "content": "hello"}]
    return tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, **kwargs
    )


def test_qwen3_tokenizer_picks_qwen3_and_starts_in_reasoning(qwen3_dir):
    tokenizer = load_tokenizer(qwen3_dir)
    prompt = render(tokenizer)
    assert prompt.endswith("<think>\n")
    f = StreamFilter.for_tokenizer(tokenizer, prompt)
    assert f.family.name == "qwen3"
    assert f.feed("I should greet.</think>Hello!") == [
        Event("reasoning", "I should greet."),
        Event("content", "Hello!"),
    ]


def test_disabled_thinking_starts_in_content(qwen3_dir):
    tokenizer = load_tokenizer(qwen3_dir)
    prompt = render(tokenizer, enable_thinking=False)
    f = StreamFilter.for_tokenizer(tokenizer, prompt)
    assert f.feed("Hello!") == [Event("content", "Hello!")]


def test_hugging_face_tokenizer_is_accepted(qwen3_dir):
    hf = PreTrainedTokenizerFast.from_pretrained(qwen3_dir)
    assert family_for_tokenizer(hf).name == "qwen3"
    f = StreamFilter.for_tokenizer(hf, render(hf))
    assert f.mode == "reasoning"


def test_model_without_reasoning_or_tools_passes_text_through(llama_dir):
    tokenizer = load_tokenizer(llama_dir)
    f = StreamFilter.for_tokenizer(tokenizer, render(tokenizer))
    assert f.family.name == "plain"
    text = "<think>Plain</think> text <tool_call>{}</tool_call>"
    assert f.feed(text) + f.finish() == [Event("content", text)]


def test_deepseek_vocabulary_picks_deepseek_r1(tmp_path):
    specials = ["<｜Assistant｜>", "<｜User｜>", "<think>", "</think>"]
    template = "{% for m in messages %}<｜User｜>{{ m.content }}{% endfor %}<｜Assistant｜><think>\n"
    tokenizer = load_tokenizer(make_tokenizer(tmp_path, specials, template))
    f = StreamFilter.for_tokenizer(tokenizer, render(tokenizer))
    assert f.family.name == "deepseek_r1"
    assert f.feed("Hmm.</think>Yes.") == [Event("reasoning", "Hmm."), Event("content", "Yes.")]


@pytest.mark.model
def test_smollm2_is_plain(smollm2_path):
    tokenizer = load_tokenizer(smollm2_path)
    prompt = render(tokenizer)
    f = StreamFilter.for_tokenizer(tokenizer, prompt)
    assert f.family.name == "plain"
    assert f.feed("The capital of France is Paris.") == [
        Event("content", "The capital of France is Paris.")
    ]


def test_deepseek_vocabulary_without_think_tags_picks_deepseek_v3(tmp_path):
    specials = ["<｜Assistant｜>", "<｜User｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"]
    template = "{% for m in messages %}<｜User｜>{{ m.content }}{% endfor %}<｜Assistant｜>"
    tokenizer = load_tokenizer(make_tokenizer(tmp_path, specials, template))
    f = StreamFilter.for_tokenizer(tokenizer, render(tokenizer))
    assert f.family.name == "deepseek_v3"
    text = ('Sure.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"tz": "UTC"}'
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>")
    events = f.feed(text) + f.finish()
    assert [(e.kind, e.name) for e in events] == [("content", None), ("tool_call", "get_time")]


def test_other_mlx_lm_parsers_get_a_family_from_their_module(tmp_path):
    # minicpm5 has an mlx-lm parser but no table entry: its module supplies the markers.
    template = LLAMA_TEMPLATE + '{# <function name="f"><param name="x"> #}'
    tokenizer = load_tokenizer(make_tokenizer(tmp_path, [], template))
    f = StreamFilter.for_tokenizer(tokenizer, render(tokenizer))
    from mlx_lm.tool_parsers import minicpm5

    assert f.family.name == "minicpm5"
    assert [m.start for m in f.family.tools] == [minicpm5.tool_call_start]


LLAMA_SPECIALS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                  "<|eom_id|>", "<|python_tag|>"]
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def test_llama3_template_picks_llama3_json_and_reads_the_calls_it_asks_for(tmp_path):
    tokenizer = load_tokenizer(make_tokenizer(tmp_path, LLAMA_SPECIALS, LLAMA31_TEMPLATE))
    asked = [{"role": "user", "content": "Weather in Paris?"}]
    prompt = tokenizer.apply_chat_template(asked, tools=[WEATHER_TOOL], add_generation_prompt=True,
                                           tokenize=False)
    f = StreamFilter.for_tokenizer(tokenizer, prompt, tools=[WEATHER_TOOL])
    assert f.family.name == "llama3_json"
    reply = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    events = [e for piece in reply for e in f.feed(piece)] + f.finish()
    assert [(e.kind, e.name, e.arguments) for e in events] == [
        ("tool_call", "get_weather", {"city": "Paris"})]
    # The call, sent back as the assistant's tool_calls, renders as the text the model wrote.
    history = asked + [
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {
            "name": "get_weather", "arguments": events[0].arguments}}]},
        {"role": "tool", "content": "18 C"}]
    again = tokenizer.apply_chat_template(history, tools=[WEATHER_TOOL], tokenize=False)
    assert f"<|start_header_id|>assistant<|end_header_id|>\n\n{reply}<|eot_id|>" in again
    assert "<|start_header_id|>ipython<|end_header_id|>" in again


def test_llama3_json_with_no_tool_markup_in_the_template_stays_plain(llama_dir):
    # A Llama 3.0 template, or any without the ipython turn: no bare-JSON calls.
    assert family_for_tokenizer(load_tokenizer(llama_dir)).name == "plain"
