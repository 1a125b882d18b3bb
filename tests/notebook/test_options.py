"""``%mlx config`` settings as the flags they stand for: switches, keys, and values the engine
would refuse on every later cell, refused when they are set."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from mlx_notebook.options import config_fragment


@pytest.mark.parametrize(
    "key, value, fragment",
    [
        ("think", "false", "--no-think"),
        ("think", "No", "--no-think"),
        ("think", "on", "--think"),
        ("raw", "true", "--raw"),
        ("max_tokens", "3", "--max-tokens 3"),
        ("temperature", "0.7", "--temperature 0.7"),
        ("think_budget", "0", "--think-budget 0"),
        ("stop", "\\n", "--stop '\\n'"),
        ("system", "Be terse.", "--system 'Be terse.'"),
        ("max_tokens", "many", "--max-tokens many"),  # not a number: the flag's parse says so
    ],
)
def test_a_setting_becomes_the_flag_it_stands_for(key, value, fragment):
    assert config_fragment(key, value) == fragment


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("think", "maybe", "%mlx config: think is true or false; write think=true or think=false, "
                           "or think= to remove it."),
        ("max_tokens", "-5", "%mlx config: max_tokens must be at least 1, got -5."),
        ("temperature", "5", "%mlx config: temperature must be at most 2, got 5.0."),
        ("think_budget", "-1", "%mlx config: think_budget must be at least 0, got -1."),
        ("tokens", "500", "%mlx config: tokens must be at most 20, got 500."),
        ("logit_bias", "1=500", "%mlx config: logit_bias values must be numbers between -100 and "
                                "100, got 500.0 for token 1."),
    ],
)
def test_a_value_every_later_cell_would_fail_on_is_refused_when_set(key, value, message):
    with pytest.raises(UsageError) as error:
        config_fragment(key, value)
    assert str(error.value) == message
