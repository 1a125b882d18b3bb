"""mlx-lm's sampler checks, ported: each body field draws only from the tokens it allows.

ml-explore/mlx-lm's tests/test_sample_utils.py hands ``apply_top_p``, ``apply_min_p``,
``apply_top_k`` and ``apply_xtc`` small distributions such as [0.9, 0, 0, 0.1] and checks what
is left of them. Here the same distributions are made the tiny reasoner's own: ``logit_bias``
lifts four tokens far above the rest and sets their odds, the reported logprobs confirm the
shape, and the body's field (``top_p``, ``min_p``, ``top_k``, ``xtc_probability`` /
``xtc_threshold``, ``temperature``) is judged by which tokens 64 seeded draws give: every
token it keeps comes up, no other does. All the draws run batched together, each row with its
own field (their "batch mode works"). Then, over whole replies at temperature 2, each sampled
token is checked against the filter's rule on the logprobs its step reports (the filters act
on those, before the temperature), and the same check on unfiltered replies must fail, so the
check can. Their ``test_presence_penalty``, ``test_frequency_penalty`` and
``test_make_logits_processors`` become the logprob shift each penalty gives a prompt's tokens
by their count, and the three together against mlx-lm's ``make_logits_processors``.

Exact ties are left out: mlx-lm's XTC removes every token likelier than the least likely one
above the threshold, so two tokens of "equal" probability (their [0.4, 0.3, 0.15, 0.15])
keep only the one a rounding makes smaller; the distributions here have no ties.

Not ported: ``make_reasoning_budget`` and ``make_cost_braked_budget`` (in the indexed copy of
the file, absent from mlx-lm 0.32; the engine's own reasoning budget is
``test_think_budget.py``'s). That each field draws the very tokens ``make_sampler`` draws
with the same seed is ``test_peer_mlx_lm_generate.py``'s check.
"""

from __future__ import annotations

import math
from collections import Counter

import mlx.core as mx
import pytest
from mlx_lm import load, stream_generate
from mlx_lm.sample_utils import make_logits_processors

from mlx_notebook.engine import Error, TokenLogprobs

pytestmark = pytest.mark.model

PROMPT = list(range(40, 48))
LIFT = 30.0  # far above every other logit: the lifted tokens hold all but ~e-20 of the mass
DRAWS = 64


def _events(handle) -> list[TokenLogprobs]:
    out = []
    for event in handle.events():
        if isinstance(event, TokenLogprobs):
            out.append(event)
        elif isinstance(event, Error):
            raise AssertionError(event.message)
    return out


def _body(bias: dict[int, float], **fields) -> dict:
    return {"prompt": PROMPT, "max_tokens": 1, "logprobs": 20,
            "logit_bias": {str(t): b for t, b in bias.items()}, **fields}


@pytest.fixture(scope="module")
def letters(tiny_engine) -> dict[str, int]:
    """Four ordinary tokens (W, X, Y, Z), the newline and the end token, by name."""
    tokenizer = tiny_engine.tokenizer
    ids = {c: tokenizer.encode(c, add_special_tokens=False) for c in "WXYZ"}
    assert all(len(v) == 1 for v in ids.values())
    (newline,) = tokenizer.encode("\n", add_special_tokens=False)
    return {**{c: v[0] for c, v in ids.items()}, "\n": newline,
            "eos": next(iter(tokenizer.eos_token_ids))}


@pytest.fixture(scope="module")
def shape(tiny_engine):
    """``shape({token: probability})``: the logit_bias that gives the first reply token that
    distribution, checked on the logprobs the engine reports."""
    tokenizer = tiny_engine.tokenizer

    def text(token):
        return tokenizer.decode([token])

    def reported(bias):
        (first,) = _events(tiny_engine.submit(_body(bias, temperature=0), kind="completion"))
        return dict(first.top)

    def make(probs: dict[int, float]) -> dict[int, float]:
        lifted = reported({t: LIFT for t in probs})
        bias = {t: LIFT + math.log(p) - lifted[text(t)] for t, p in probs.items()}
        got = reported(bias)
        assert {t: math.exp(got[text(t)]) for t in probs} == pytest.approx(probs, abs=1e-3)
        return bias

    return make


# (case, distribution over W X Y Z ("\n" or "eos" for W in the special cases), fields, the tokens
# the draws may give: each must come up). Their test's numbers, with XTC's ties broken.
CASES = [
    ("top_p 0.3 keeps the 0.9 token alone", {"W": .9, "Z": .1}, {"top_p": .3}, "W"),
    ("top_p 0.95 keeps 0.9 and 0.1", {"W": .9, "Z": .1}, {"top_p": .95}, "WZ"),
    ("top_p 0.4 keeps the 0.5 token alone", {"X": .5, "Y": .4, "Z": .1}, {"top_p": .4}, "X"),
    ("top_p 0.6 keeps 0.5 and 0.4", {"X": .5, "Y": .4, "Z": .1}, {"top_p": .6}, "XY"),
    ("top_p 0.95 keeps all three", {"X": .5, "Y": .4, "Z": .1}, {"top_p": .95}, "XYZ"),
    ("min_p 0.8 keeps the 0.9 token alone", {"W": .9, "Z": .1}, {"min_p": .8}, "W"),
    ("min_p 0.05 keeps both", {"W": .9, "Z": .1}, {"min_p": .05}, "WZ"),
    ("top_k 1 keeps the top token", {"W": .6, "Y": .1, "Z": .3}, {"top_k": 1}, "W"),
    ("top_k 2 keeps the top two", {"W": .6, "Y": .1, "Z": .3}, {"top_k": 2}, "WZ"),
    ("xtc 0.25 cuts the one token above the least likely above it",
     {"W": .4, "X": .3, "Y": .2, "Z": .1}, {"xtc_probability": 1, "xtc_threshold": .25}, "XYZ"),
    ("xtc 0.15 cuts the two above the least likely above it",
     {"W": .4, "X": .3, "Y": .2, "Z": .1}, {"xtc_probability": 1, "xtc_threshold": .15}, "YZ"),
    ("xtc probability 0 cuts nothing",
     {"W": .4, "X": .3, "Y": .2, "Z": .1}, {"xtc_probability": 0, "xtc_threshold": .15}, "WXYZ"),
    # (mlx_lm.server's special tokens, which the engine passes too: the newline and the end)
    ("xtc never cuts the newline",
     {"\n": .4, "X": .3, "Y": .2, "Z": .1}, {"xtc_probability": 1, "xtc_threshold": .15},
     ["\n", "Y", "Z"]),
    ("xtc never cuts the end token",
     {"eos": .4, "X": .3, "Y": .2, "Z": .1}, {"xtc_probability": 1, "xtc_threshold": .15},
     ["eos", "Y", "Z"]),
    ("temperature 0 is greedy", {"W": .6, "X": .4}, {"temperature": 0}, "W"),
]


@pytest.fixture(scope="module")
def drawn(tiny_engine, letters, shape):
    """Each case's first tokens over DRAWS seeds (all cases' requests in one batch), and the
    unfiltered draws of the XTC distribution for comparison."""
    engine = tiny_engine
    jobs = [(name, {letters[c]: p for c, p in dist.items()}, fields)
            for name, dist, fields, _ in CASES]
    jobs.append(("plain", jobs[11][1], {}))  # the distribution "xtc probability 0" draws from
    shaped: dict[tuple, dict[int, float]] = {}  # one bias per distribution: same odds
    for _, dist, _ in jobs:
        if tuple(dist.items()) not in shaped:
            shaped[tuple(dist.items())] = shape(dist)
    biases = [shaped[tuple(dist.items())] for _, dist, _ in jobs]
    with engine.together():
        handles = [[engine.submit(_body(bias, **{"temperature": 1.0, "seed": seed, **fields}),
                                  kind="completion") for seed in range(DRAWS)]
                   for (_, _, fields), bias in zip(jobs, biases)]
    return {name: [_events(h)[0].token_id for h in row]
            for (name, _, _), row in zip(jobs, handles)}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_filter_draws_every_token_it_keeps_and_no_other(drawn, letters, case):
    name, _, _, kept = case
    counts = Counter(drawn[name])
    assert set(counts) == {letters[c] for c in kept}, counts


def test_xtc_probability_0_draws_what_no_xtc_draws(drawn):
    assert drawn["xtc probability 0 cuts nothing"] == drawn["plain"]


def test_temperature_sets_how_often_the_less_likely_token_comes(tiny_engine, letters, shape):
    # Sampling divides the logits by the temperature: the 0.4 token of [0.6, 0.4] comes with
    # probability 0.4^(1/T) / (0.6^(1/T) + 0.4^(1/T)).
    n = 2 * DRAWS
    bias = shape({letters["W"]: .6, letters["X"]: .4})
    temperatures = (0.25, 1.0, 2.0)
    with tiny_engine.together():
        rows = [[tiny_engine.submit(_body(bias, temperature=t, seed=s), kind="completion")
                 for s in range(n)] for t in temperatures]
    for t, row in zip(temperatures, rows):
        q = .4 ** (1 / t) / (.6 ** (1 / t) + .4 ** (1 / t))
        count = sum(_events(h)[0].token_id == letters["X"] for h in row)
        assert abs(count - n * q) <= 3.5 * math.sqrt(n * q * (1 - q)), (t, count, n * q)


# -- every step of whole replies, on the model's own distributions --------------------------------
def _kept_by(fields: dict, event: TokenLogprobs, special: set[str]) -> bool:
    """Whether ``fields``' filter lets through the token ``event`` drew (judged on the top 20
    alternatives its step reports: a drawn token outside them passes whatever is unknown)."""
    likelier = [lp for _, lp in event.top if lp > event.logprob + 1e-6]
    if "top_k" in fields:
        return len(likelier) < fields["top_k"]
    if "top_p" in fields:
        return sum(math.exp(lp) for lp in likelier) < fields["top_p"] + 1e-6
    if "min_p" in fields:
        return event.logprob >= event.top[0][1] + math.log(fields["min_p"]) - 1e-6
    above = [lp for _, lp in event.top if lp > math.log(fields["xtc_threshold"])]
    return event.token in special or not above or event.logprob <= min(above) + 1e-6


FILTERS = [{"top_k": 3}, {"top_p": 0.5}, {"min_p": 0.3},
           {"xtc_probability": 1.0, "xtc_threshold": 0.1}]


def test_every_sampled_token_of_a_reply_is_one_its_filter_keeps(tiny_engine):
    tokenizer = tiny_engine.tokenizer
    special = {"\n"} | {tokenizer.decode([t]) for t in tokenizer.eos_token_ids}
    # Seeded rows (the engine's own sampler) and unseeded ones (mlx-lm's make_sampler).
    seeds = [*range(6), None, None]
    body = {"prompt": "The weather today is", "max_tokens": 32, "logprobs": 20,
            "temperature": 2.0}
    with tiny_engine.together():
        runs = [[tiny_engine.submit({**body, **fields, "seed": s}, kind="completion")
                 for s in seeds] for fields in [{}, *FILTERS]]
    plain, *filtered = [[e for h in row for e in _events(h)] for row in runs]
    for fields, events in zip(FILTERS, filtered):
        assert len(events) > 100
        assert all(_kept_by(fields, e, special) for e in events), fields
        # Unfiltered, at the same temperature, the rule is broken: the check can fail.
        assert not all(_kept_by(fields, e, special) for e in plain), fields


# -- presence and frequency penalties (test_presence_penalty, test_frequency_penalty) -------------
PENALTIES = {
    "presence": ({"presence_penalty": 0.5}, (0.5, 0.5)),
    "frequency": ({"frequency_penalty": 0.5}, (1.5, 1.0)),
    "both": ({"presence_penalty": 0.5, "frequency_penalty": 0.25}, (1.25, 1.0)),
    "presence, last 2 tokens": ({"presence_penalty": 0.5, "presence_context_size": 2},
                                (0.0, 0.5)),
}


def _first_step(engine, letters, **fields) -> dict[str, float]:
    """The first reply token's logprobs of W, X, Y, Z after the prompt W W W X X."""
    w, x, y, z = (letters[c] for c in "WXYZ")
    body = {"prompt": [w, w, w, x, x], "max_tokens": 1, "logprobs": 20, "temperature": 0,
            "logit_bias": {str(t): LIFT for t in (w, x, y, z)}, **fields}
    (event,) = _events(engine.submit(body, kind="completion"))
    return {c: lp for c, lp in event.top if c in {"W", "X", "Y", "Z"}}


@pytest.mark.parametrize("case", list(PENALTIES))
def test_a_penalty_lowers_a_prompt_token_by_its_count(tiny_engine, letters, case):
    # W comes three times, X twice, Y and Z not at all: the presence penalty counts each once,
    # the frequency penalty each time (shifts measured against Y, which neither touches).
    fields, (w_shift, x_shift) = PENALTIES[case]
    before = _first_step(tiny_engine, letters)
    after = _first_step(tiny_engine, letters, **fields)

    def shift(c):
        return (before[c] - before["Y"]) - (after[c] - after["Y"])

    assert [shift(c) for c in "WXZ"] == pytest.approx([w_shift, x_shift, 0.0], abs=1e-3)


def test_three_penalties_together_act_as_make_logits_processors(tiny_engine, tiny_reasoner_path,
                                                                 letters):
    model, tokenizer = load(str(tiny_reasoner_path))
    w, x = letters["W"], letters["X"]
    prompt = [w, w, w, x, x]
    fields = {"repetition_penalty": 1.5, "repetition_context_size": 5, "presence_penalty": 0.5,
              "presence_context_size": 5, "frequency_penalty": 0.25,
              "frequency_context_size": 5}
    ours = _events(tiny_engine.submit({"prompt": prompt, "max_tokens": 4, "logprobs": 5,
                                       "temperature": 0, **fields}, kind="completion"))
    theirs = list(stream_generate(model, tokenizer, mx.array(prompt), max_tokens=4,
                                  logits_processors=make_logits_processors(
                                      None, 1.5, 5, 0.5, 5, 0.25, 5)))
    assert [e.token_id for e in ours] == [r.token for r in theirs]
    for event, r in zip(ours, theirs):
        best = mx.argsort(-r.logprobs)[:5].tolist()
        assert [lp for _, lp in event.top] == pytest.approx(
            [r.logprobs[i].item() for i in best], abs=1e-4)
