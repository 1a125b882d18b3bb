"""A request alone reads its prompt in mlx-lm's own chunks and gives mlx-lm's own tokens.

The single stream reads all but the prompt's last token itself, chunk by chunk, and leaves the
last chunk queued under the first token's forward pass (``_read_prompt``). These tests hold it
to ``generate_step`` run directly on the same prompt: the same tokens and the same logprobs,
bit for bit, when cold; the same tokens after a cached prefix; and a progress bar that counts
the chunks. Real SmolLM2 (float32: 64-token chunks on a CPU, so a few hundred tokens make
several), and the tiny reasoner with token-id prompts on either side of a chunk boundary.
The decode loop (``_decode``) is held to ``generate_step``'s numbers too, with its first and
last tokens out before the step after them is built, and the same cache once it is closed;
moved onto the batch after its first token, it builds no step for the batch to throw away.
"""

from __future__ import annotations

import mlx.core as mx
import pytest
from mlx_lm.generate import generate_step, make_stop_sequences
from mlx_lm.models.cache import make_prompt_cache

from mlx_notebook.engine import PrefillProgress, Started, TokenLogprobs
from mlx_notebook.engine.request._job import Job, Outbox
from mlx_notebook.engine.request._single_stream import SingleStream, _decode

pytestmark = pytest.mark.model

_NOTES = ("The lighthouse keeper logged every ship that passed: a trawler at dawn, two ferries "
          "before noon, a tanker riding low in the afternoon swell. ")


def _body(days: int, max_tokens: int = 6) -> dict:
    text = " ".join(f"Day {i}. {_NOTES}" for i in range(days))
    return {"messages": [{"role": "user", "content": f"{text}\nWhich ship came first?"}],
            "max_tokens": max_tokens, "logprobs": True}


def _mlx_lm(engine, prompt: list[int], max_tokens: int) -> list[tuple[int, float]]:
    """generate_step's (token, logprob) pairs, up to the end-of-sequence token as the engine's."""
    step = engine._thread.scheduler.prefill_step_size
    out = []
    for token, logprobs in generate_step(mx.array(prompt), engine._thread.model,
                                         max_tokens=max_tokens, prefill_step_size=step):
        out.append((token, logprobs[token].item()))
        if token in engine.tokenizer.eos_token_ids:
            break
    return out


def _read(handle) -> tuple[int, list[tuple[int, float]], list[tuple[int, int]]]:
    """(cached prompt tokens, (token, logprob) per token, (processed, total) per report)."""
    events = list(handle.events())
    (started,) = [e for e in events if isinstance(e, Started)]
    tokens = [(e.token_id, e.logprob) for e in events if isinstance(e, TokenLogprobs)]
    progress = [(e.processed, e.total) for e in events if isinstance(e, PrefillProgress)]
    return started.cached_tokens, tokens, progress


def test_a_long_prompt_gives_generate_steps_tokens_and_logprobs_exactly(smollm2_engine):
    engine = smollm2_engine
    body = _body(days=5)
    prompt = list(engine.inspect(body).token_ids)
    step = engine._thread.scheduler.prefill_step_size
    assert len(prompt) > 3 * step
    engine.clear_prompt_cache()
    cached, tokens, progress = _read(engine.submit(body))
    assert cached == 0
    assert tokens == _mlx_lm(engine, prompt, 6)
    # The bar starts at nothing, counts whole chunks as each is read, and ends full.
    assert progress[0] == (0, len(prompt)) and progress[-1] == (len(prompt), len(prompt))
    middle = [done for done, _ in progress[1:-1]]
    assert middle == sorted(middle) and all(d % step == 0 and d < len(prompt) for d in middle)


def test_a_follow_up_with_a_long_new_part_gives_the_cold_tokens(smollm2_engine):
    engine = smollm2_engine
    engine.clear_prompt_cache()
    first = _body(days=2, max_tokens=4)
    reply = engine.chat_completions(first)["choices"][0]["message"]
    body = {**_body(days=2),
            "messages": first["messages"] + [reply, _body(days=4)["messages"][0]]}
    prompt = list(engine.inspect(body).token_ids)
    cached, warm, progress = _read(engine.submit(body))
    step = engine._thread.scheduler.prefill_step_size
    assert cached > 0 and len(prompt) - cached > 2 * step  # several chunks after the cached part
    assert progress[0] == (cached, len(prompt)) and progress[-1] == (len(prompt), len(prompt))
    cold = _mlx_lm(engine, prompt, 6)
    engine.clear_prompt_cache()
    assert _read(engine.submit(body))[1] == cold
    # The cached part was computed in other chunks (the first turn's prompt, then its reply a
    # token at a time), so the numbers may differ in the last bits; the tokens may not.
    assert [t for t, _ in warm] == [t for t, _ in cold]
    assert [p for _, p in warm] == pytest.approx([p for _, p in cold], abs=1e-3)


@pytest.mark.parametrize("length", [1, 2, 63, 64, 65, 66, 128, 129, 130])
def test_prompts_at_chunk_boundaries_give_generate_steps_tokens_exactly(tiny_engine, length):
    # Token-id prompts, so the lengths are exact: the last chunk may be whole, one token long,
    # or absent (a one-token prompt goes straight to the last token's pass).
    engine = tiny_engine
    step = engine._thread.scheduler.prefill_step_size
    assert step == 64
    prompt = [(7 * i) % 200 + 10 for i in range(length)]
    engine.clear_prompt_cache()
    cached, tokens, progress = _read(engine.submit(
        {"prompt": prompt, "max_tokens": 4, "temperature": 0, "logprobs": True},
        kind="completion"))
    assert cached == 0 and tokens == _mlx_lm(engine, prompt, 4)
    assert progress[0] == (0, length) and progress[-1] == (length, length)


class _CountingModel:
    """The model, counting forward passes (to see which passes exist when a token comes)."""

    def __init__(self, model):
        self.model, self.passes = model, 0
        self.layers = model.layers

    def __call__(self, *args, **kwargs):
        self.passes += 1
        return self.model(*args, **kwargs)


def _greedy(logprobs):
    return mx.argmax(logprobs, axis=-1)


def _decode_all(engine, prompt: list[int], max_tokens: int, ours: bool):
    """Decode ``prompt``'s last token on a cache holding the rest, through our decode loop or
    mlx-lm's ``generate_step``: ((token, logprobs, passes built when it came) per token, and
    the cache once the generator is closed after the last)."""
    model = _CountingModel(engine._thread.model)
    cache = make_prompt_cache(engine._thread.model)
    model(mx.array(prompt[:-1])[None], cache=cache)
    model.passes = 0
    last = mx.array(prompt[-1:])
    if ours:
        steps = _decode(last, model, cache, mx.default_stream(mx.default_device()),
                        max_tokens=max_tokens, sampler=_greedy, processors=[],
                        on_first=lambda: None)
    else:
        steps = generate_step(last, model, max_tokens=max_tokens, sampler=_greedy,
                              prompt_cache=cache)
    out = []
    for token, logprobs in steps:
        out.append((token, logprobs, model.passes))
        if len(out) == max_tokens:
            break
    steps.close()
    mx.eval([c.state for c in cache])
    return out, cache


@pytest.mark.parametrize("max_tokens", [1, 2, 5])
def test_the_first_and_last_tokens_come_out_before_the_next_step_is_built(tiny_engine,
                                                                           max_tokens):
    # mlx-lm builds and queues the next step before it reads a token: for the first token, a
    # whole forward pass between the prompt and its answer (a step on a CPU, 2-3 ms of
    # launches on a GPU); for the last one max_tokens allows, a step only the cache needs.
    prompt = [(5 * i) % 150 + 20 for i in range(40)]
    ours, cache = _decode_all(tiny_engine, prompt, max_tokens, ours=True)
    theirs, their_cache = _decode_all(tiny_engine, prompt, max_tokens, ours=False)
    assert [t for t, _, _ in ours] == [t for t, _, _ in theirs]
    assert all(mx.array_equal(a, b).item() for (_, a, _), (_, b, _) in zip(ours, theirs))
    # Passes built when each token came: the prompt's last token's, then one more per token.
    # mlx-lm is one ahead throughout; here the first and the last are read before it.
    their_passes = [p for _, _, p in theirs]
    assert their_passes == list(range(2, max_tokens + 2))
    assert [p for _, _, p in ours] == [1] + their_passes[1:-1] + [max_tokens] * (max_tokens > 1)
    # Closed after the last token, the cache holds every token handed out, as mlx-lm's does,
    # so a follow-up turn reuses the whole reply.
    assert cache[0].offset == their_cache[0].offset == len(prompt) + max_tokens
    assert mx.array_equal(cache[0].state[0], their_cache[0].state[0]).item()


def test_a_move_onto_the_batch_after_the_first_token_builds_no_step_and_goes_on_exactly(
        tiny_engine):
    # Moved onto the batch right after its first token, a reply hands over a cache holding its
    # prompt and the first token to feed: the step that would put that token in the cache (and
    # that the move would cut out again) is never built. From there mlx-lm's own decode gives
    # the tokens an uninterrupted generate_step gives.
    prompt = [(7 * i) % 150 + 20 for i in range(40)]
    model = _CountingModel(tiny_engine._thread.model)
    request, rendered = tiny_engine._prepare({"prompt": "x", "max_tokens": 8}, "completion")
    single = SingleStream(model, mx.default_stream(mx.default_device()),
                          Job("move", request, rendered, Outbox(lambda: None)),
                          cache=make_prompt_cache(model.model), tokens=prompt, cached=0,
                          sampler=_greedy, processors=[],
                          stop_sequences=make_stop_sequences(tiny_engine.tokenizer, []),
                          prefill_step_size=512)
    first, _, _ = single.step()
    built = model.passes  # the prompt's and its last token's
    cache, held, rest = single.detach()
    assert model.passes == built
    assert cache[0].offset == len(held) == len(prompt) and rest == [first]
    went_on = [t for t, _ in generate_step(mx.array(rest), model.model, max_tokens=5,
                                           sampler=_greedy, prompt_cache=cache)]
    straight = [t for t, _ in generate_step(mx.array(prompt), model.model, max_tokens=6,
                                            sampler=_greedy)]
    assert [first] + went_on == straight



class _Recorder:
    """A job's outbox that notes, for each prefill report, the forward passes built by then,
    and calls ``on_report`` with the tokens read."""

    def __init__(self, model, on_report=lambda read: None):
        self.model, self.reports, self.on_report = model, [], on_report

    def put(self, event):
        if isinstance(event, PrefillProgress):
            self.reports.append((event.processed, self.model.passes))
            self.on_report(event.processed)


def _alone(engine, prompt: list[int], *, cached: int = 0, on_report=lambda read: None, **options):
    """A single stream over ``prompt`` (64-token chunks), its cache holding ``prompt[:cached]``,
    with a model that counts its forward passes: (stream, counting model, outbox, job)."""
    model = _CountingModel(engine._thread.model)
    cache = make_prompt_cache(model.model)
    if cached:
        model.model(mx.array(prompt[:cached])[None], cache=cache)
    request, rendered = engine._prepare({"prompt": "x", "max_tokens": 4}, "completion")
    out = _Recorder(model, on_report)
    job = Job("alone", request, rendered, out)
    single = SingleStream(model, mx.default_stream(mx.default_device()), job, cache=cache,
                          tokens=prompt, cached=cached, sampler=_greedy, processors=[],
                          stop_sequences=make_stop_sequences(engine.tokenizer, []),
                          prefill_step_size=64, **options)
    return single, model, out, job


def _first_token(engine, prompt: list[int], cached: int, *, fused: bool):
    """A lone request's first token and logprobs from a cache holding ``prompt[:cached]``,
    the rest read as the single stream reads it (fused, or as mlx-lm does in 64-token
    chunks), and the forward passes built until it came."""
    single, model, _, _ = _alone(engine, prompt, cached=cached, fused_first_token=fused)
    token, logprobs, _ = single.step()
    passes = model.passes
    single.close()
    return token, logprobs, passes


@pytest.mark.parametrize("length, cached", [(1, 0), (2, 0), (64, 0), (65, 0), (130, 0),
                                            (60, 40), (200, 190), (200, 199)])
def test_fused_first_token_comes_one_pass_sooner_with_the_same_token(tiny_engine, length, cached):
    # mlx-lm reads the rest of the prompt but its last token, then the last token alone;
    # fused, the last chunk ends with the last token and its pass answers. The same token,
    # the same logprobs but for float32's last bits (the last row goes through the kernels
    # for several rows).
    prompt = [(11 * i) % 190 + 15 for i in range(length)]
    split = _first_token(tiny_engine, prompt, cached, fused=False)
    fused = _first_token(tiny_engine, prompt, cached, fused=True)
    rest = length - cached
    assert split[2] == -(-(rest - 1) // 64) + 1
    assert fused[2] == -(-rest // 64)  # one fewer unless the last token began a chunk anyway
    assert fused[2] == split[2] - (rest > 1 and (rest - 1) % 64 != 0)
    assert fused[0] == split[0]
    assert mx.allclose(fused[1], split[1], atol=1e-4).item()


def test_a_last_chunk_longer_than_the_fused_limit_is_read_as_mlx_lm_reads_it(tiny_engine,
                                                                             monkeypatch):
    # Fused, the last pass computes logits for each of its rows: past the limit (a long cold
    # prompt's 2,048-token last chunk on a GPU) the last token gets its own pass again.
    import mlx_notebook.engine.request._single_stream as single_stream

    monkeypatch.setattr(single_stream, "FUSED_MAX_ROWS", 16)
    prompt = [(11 * i) % 190 + 15 for i in range(64 + 20)]
    assert _first_token(tiny_engine, prompt, 0, fused=True)[2] == 3  # 64, 19, then 1
    assert _first_token(tiny_engine, prompt[:64 + 16], 0, fused=True)[2] == 2  # 64, then 16


def test_a_fused_engine_answers_a_first_turn_and_a_follow_up_as_the_default_one(
        tiny_reasoner_path, tiny_engine):
    from mlx_notebook.engine import Engine
    from mlx_notebook.engine.models.tiny_reasoner import load_scripts

    script = {s["name"]: s for s in load_scripts()}["reason_then_answer"]
    body = {"messages": script["messages"], "max_tokens": 40, "logprobs": True}

    def two_turns(engine):
        engine.clear_prompt_cache()
        first = engine.chat_completions(body)
        follow_up = {**body, "messages": [*body["messages"], first["choices"][0]["message"],
                                          *script["messages"][-1:]]}
        return first, engine.chat_completions(follow_up)

    with Engine(str(tiny_reasoner_path), progress=False, fused_first_token=True) as fused:
        assert fused.config.fused_first_token and not tiny_engine.config.fused_first_token
        ours, theirs = two_turns(fused), two_turns(tiny_engine)
    assert ours[1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    for a, b in zip(ours, theirs):
        assert a["choices"][0]["message"] == b["choices"][0]["message"]
        assert a["usage"] == b["usage"]
        assert [t["logprob"] for t in a["choices"][0]["logprobs"]["content"]] == pytest.approx(
            [t["logprob"] for t in b["choices"][0]["logprobs"]["content"]], abs=1e-3)



@pytest.mark.parametrize("length", [64, 65, 129, 200, 300])
def test_reading_a_chunk_ahead_gives_the_same_numbers_with_the_next_chunk_already_built(
        tiny_engine, length):
    # On a GPU the next chunk is built and started before the one on the device is waited
    # for: the same graph, so the same numbers bit for bit; each chunk is reported once the
    # one after it exists, and the reports still count whole chunks in order.
    prompt = [(13 * i) % 170 + 12 for i in range(length)]
    runs = {}
    for ahead in (False, True):
        single, _, out, _ = _alone(tiny_engine, prompt, prefill_ahead=ahead)
        steps = [single.step() for _ in range(3)]
        single.close()
        runs[ahead] = steps, out.reports
    (plain, plain_reports), (ahead, ahead_reports) = runs[False], runs[True]
    assert [t for t, _, _ in ahead] == [t for t, _, _ in plain]
    assert all(mx.array_equal(a, b).item() for (_, a, _), (_, b, _) in zip(ahead, plain))
    chunks = -(-(length - 1) // 64)  # of the prompt but its last token
    middle = [(64 * k, k) for k in range(1, chunks)]  # (tokens read, passes built) per chunk
    assert plain_reports == [(0, 0), *middle, (length, chunks + 1)]
    assert ahead_reports == [(0, 0), *[(read, built + 1) for read, built in middle[:-1]],
                             (length, chunks + 1)]


def test_a_cancel_while_a_chunk_is_ahead_keeps_the_cache_to_what_it_holds(tiny_engine):
    # Cancelled at a report, a chunk is still on the device: the cache files what its offset
    # says it holds (that chunk included), never tokens it lacks.
    from mlx_notebook.engine.request._single_stream import Cancelled

    prompt = [(13 * i) % 170 + 12 for i in range(300)]
    cancel_at_64 = lambda read: read == 64 and job.cancel.set()  # noqa: E731
    single, model, _, job = _alone(tiny_engine, prompt, on_report=cancel_at_64,
                                   prefill_ahead=True)
    with pytest.raises(Cancelled):
        single.step()
    single.close()
    tokens, cache = single.finished_cache()
    # Seen at the report of 128 tokens, the cancel finds the third chunk already started.
    assert tokens == prompt[:192] and cache[0].offset == 192
    fresh = make_prompt_cache(model.model)
    for start in range(0, 192, 64):
        model.model(mx.array(prompt[start:start + 64])[None], cache=fresh)
    assert mx.array_equal(cache[0].state[0][..., :192, :], fresh[0].state[0][..., :192, :]).item()


def test_a_preemption_while_a_chunk_is_ahead_hands_the_batch_what_the_cache_lacks(tiny_engine):
    # Preempted at a report, the chunk already started stays in the cache: the batch is
    # handed the tokens after it, and what it decodes from there is the uninterrupted reply.
    from mlx_notebook.engine.request._single_stream import Preempted

    prompt = [(13 * i) % 170 + 12 for i in range(300)]
    reports = []
    single, model, out, _ = _alone(tiny_engine, prompt, on_report=reports.append,
                                   prefill_ahead=True, preempt=lambda: len(reports) > 1)
    with pytest.raises(Preempted):
        single.step()
    cache, held, rest = single.detach()
    assert out.reports == [(0, 0), (64, 2)]
    assert held == prompt[:128] and rest == prompt[128:] and cache[0].offset == 128
    went_on = [t for t, _ in generate_step(mx.array(rest), model.model, max_tokens=3,
                                           sampler=_greedy, prompt_cache=cache)]
    straight = [t for t, _ in generate_step(mx.array(prompt), model.model, max_tokens=3,
                                            sampler=_greedy, prefill_step_size=64)]
    assert went_on == straight
