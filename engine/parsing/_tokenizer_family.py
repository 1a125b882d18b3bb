"""Which family a model's output belongs to, read from its tokenizer; where a reply starts.

mlx-lm already infers both halves when it loads a tokenizer (``tokenizer_utils``:
``_infer_tool_parser`` from the chat template and vocabulary, ``_infer_thinking`` from the
vocabulary), so we reuse its answers instead of keeping a second table of template
fingerprints: a ``TokenizerWrapper`` carries them, a bare Hugging Face tokenizer gets them
computed the same way.
"""

from __future__ import annotations

import dataclasses
import json
import weakref
from pathlib import Path
from typing import Any

from .parsers import deepseek_r1, deepseek_v4, mistral
from ._families import FAMILIES, THINK_TAGS, Family, ToolMarker, family_name, load_parser

__all__ = [
    "family_for_tokenizer", "per_tokenizer", "prompt_ends_reasoning", "prompt_starts_in_reasoning",
]

# Any vocabulary piece of a DSML marker, however the tokenizer cut it ("<｜DSML｜", "｜DSML").
_BAR = deepseek_v4.DSML_TOKEN[0]
_DSML_WORD = deepseek_v4.DSML_TOKEN.strip(_BAR)
# DeepSeek R1/V3 chat markup: the assistant turn marker of their templates.
_DEEPSEEK_ASSISTANT = "<｜Assistant｜>"

_cache: weakref.WeakKeyDictionary[Any, Family] = weakref.WeakKeyDictionary()


def per_tokenizer(cache: weakref.WeakKeyDictionary, tokenizer: Any, compute) -> Any:
    """``compute(tokenizer)``, kept in ``cache`` for as long as the tokenizer lives: what
    scans a vocabulary is done once per model, not once per request."""
    try:
        return cache[tokenizer]
    except (KeyError, TypeError):
        pass
    value = compute(tokenizer)
    try:
        cache[tokenizer] = value
    except TypeError:  # not weak-referenceable: computed again next time
        pass
    return value


def family_for_tokenizer(tokenizer: Any) -> Family:
    """The family of a model, from an mlx-lm ``TokenizerWrapper`` or a Hugging Face tokenizer
    (cached per tokenizer object)."""
    return per_tokenizer(_cache, tokenizer, _detect)


def _detect(tokenizer: Any) -> Family:
    from mlx_lm.tokenizer_utils import TokenizerWrapper

    from .._upstream import hf_tokenizer, infer_thinking, infer_tool_parser

    if isinstance(tokenizer, TokenizerWrapper):
        hf = hf_tokenizer(tokenizer)
        parser = tokenizer.tool_parser
        parser_type = parser.__module__.rsplit(".", 1)[-1] if parser is not None else None
        think = (tokenizer.think_start, tokenizer.think_end) if tokenizer.has_thinking else None
    else:
        hf = tokenizer
        init_kwargs = getattr(hf, "init_kwargs", None) or {}
        parser_type = init_kwargs.get("tool_parser_type") or infer_tool_parser(hf)
        start, end, _, _ = infer_thinking(hf)
        think = (start, end) if start is not None else None

    vocab = hf.get_vocab()
    if _model_type(hf) == "deepseek_v4" or any(_DSML_WORD in t for t in vocab if _BAR in t):
        return FAMILIES["deepseek_v4"]
    if parser_type is not None and family_name(parser_type) in FAMILIES:
        family = FAMILIES[family_name(parser_type)]
        if family.name == "mistral" and mistral.think_start not in vocab:
            return Family("mistral", tools=family.tools, parser=family.parser)
        return family
    if parser_type is not None:
        # An mlx-lm parser we have no table entry for: its own module says the markers.
        module = load_parser(parser_type)
        return Family(
            parser_type,
            think=think,
            tools=(ToolMarker(module.tool_call_start, module.tool_call_end),),
            parser=parser_type,
        )
    if _DEEPSEEK_ASSISTANT in vocab or deepseek_r1.tool_call_start in vocab:
        # DeepSeek R1/V3 markup; a vocabulary with think tags can reason (R1, V3.1+).
        return FAMILIES["deepseek_r1" if think == THINK_TAGS else "deepseek_v3"]
    if _LLAMA3_TOOL_TURN in _template_text(hf):
        # Llama 3.1-3.3 (mlx-lm names no parser for them): tool results go back in an
        # "ipython" turn, and calls come as bare JSON.
        llama = FAMILIES["llama3_json"]
        return dataclasses.replace(llama, think=think) if think else llama
    if think == THINK_TAGS:
        return FAMILIES["qwen3"]
    if think is not None:
        return Family(f"think:{think[0]}", think=think)
    return FAMILIES["plain"]


_LLAMA3_TOOL_TURN = "<|start_header_id|>ipython<|end_header_id|>"


def _template_text(hf: Any) -> str:
    """A tokenizer's chat template(s) as one text ("" when it has none)."""
    template = getattr(hf, "chat_template", None)
    if isinstance(template, dict):
        template = list(template.values())
    if isinstance(template, list):
        template = " ".join(t.get("template", "") if isinstance(t, dict) else str(t)
                            for t in template)
    return template if isinstance(template, str) else ""


def _model_type(hf: Any) -> str | None:
    """``model_type`` from the config.json beside a tokenizer loaded from a local directory."""
    config = Path(str(getattr(hf, "name_or_path", "") or "")) / "config.json"
    try:
        return json.loads(config.read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def prompt_starts_in_reasoning(family: Family, rendered_prompt: str) -> bool:
    """Whether the reply continues inside reasoning the prompt opened.

    A template that pre-fills ``<think>`` leaves it open (True); one that disabled thinking
    closes it at once (``<think>\\n\\n</think>``, False). A prompt with neither marker leaves
    it to the family (DeepSeek-R1 templates differ in whether they pre-fill).
    """
    if family.think is None:
        return False
    start, end = family.think
    opened, closed = rendered_prompt.rfind(start), rendered_prompt.rfind(end)
    if opened == -1 and closed == -1:
        return family.starts_in_reasoning
    return opened > closed


def prompt_ends_reasoning(family: Family, rendered_prompt: str) -> bool:
    """Whether the prompt itself ends on a closed reasoning block (thinking disabled), so the
    reply may not open another."""
    return family.think is not None and rendered_prompt.rstrip().endswith(family.think[1])
