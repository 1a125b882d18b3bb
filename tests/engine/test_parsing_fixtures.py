"""Parser cases as fixture files, checked the way a user's fixture is: ``check_fixture``.

Each file in ``parsing_fixtures/`` is what ``Turn.to_fixture`` writes (``tiny_reasoner_*``
were written so, from real turns) or the same shape written by hand from ``parsing_cases``.
Every reply is replayed through today's StreamFilter as it streamed, whole, and in pieces of
1 to 32 characters.
"""

from pathlib import Path

import pytest

from mlx_notebook.testing import check_fixture, load_fixture

FIXTURES = sorted((Path(__file__).parent / "parsing_fixtures").glob("*.json"))


def test_the_fixture_folder_has_hand_written_and_recorded_fixtures():
    names = {path.stem for path in FIXTURES}
    assert {"qwen3", "deepseek_r1", "mistral", "gemma4", "tiny_reasoner_weather"} <= names


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_every_chunking_of_a_fixture_gives_its_recorded_parse(path):
    assert check_fixture(path)


def test_a_recorded_fixture_keeps_the_token_ids_its_text_was_decoded_from():
    (call, answer) = load_fixture(FIXTURES[0].with_name("tiny_reasoner_weather.json")).replies
    assert len(call.token_ids) >= len(call.deltas) > 0  # a token may decode to nothing yet
    assert "".join(call.deltas) == call.text
    assert call.expected["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert answer.expected["content"].strip() == "It is sunny in Paris, 18 °C."
