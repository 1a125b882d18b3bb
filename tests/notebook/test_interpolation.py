"""``{name}`` interpolation of a cell body: one pass, escapes, clear errors."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from mlx_notebook.interpolation import interpolate


@pytest.mark.parametrize(
    "text, namespace, expected",
    [
        ("Capital of {country}?", {"country": "France"}, "Capital of France?"),
        # A value's braces are never re-parsed: one pass over the cell only.
        ("Parse {doc}", {"doc": '{"a": {b}}'}, 'Parse {"a": {b}}'),
        ("{a}{b}", {"a": "{b}", "b": "x"}, "{b}x"),
        ("Literal {{braces}} and }}", {}, "Literal {braces} and }"),
        ("{{{x}}}", {"x": 1}, "{1}"),
        ("{ x }", {"x": "spaced"}, "spaced"),
        ("{n:.2f} {s!r}", {"n": 3.14159, "s": "hi"}, "3.14 'hi'"),
        ("{path.name}", {"path": __import__("pathlib").Path("/tmp/notes.txt")}, "notes.txt"),
        ("{items}", {"items": [1, 2]}, "[1, 2]"),
        ("no placeholders at all", {}, "no placeholders at all"),
        ("multi\nline {x}\n", {"x": "y"}, "multi\nline y\n"),
    ],
)
def test_interpolation_replaces_names_once(text, namespace, expected):
    assert interpolate(text, namespace) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("{nope}", "%%chat: name 'nope' in '{nope}' is not defined in the notebook; define it, "
                   "write '{{nope}}' for literal braces, or use --no-interpolate."),
        ("int main() { return 0; }",
         "%%chat: '{ return 0; }' at line 1, column 12 is not a variable name; write '{{' and "
         "'}}' for literal braces, or use --no-interpolate."),
        ("ok\nan { open", "%%chat: unmatched '{' at line 2, column 4; write '{{' for a literal "
                          "brace, or use --no-interpolate."),
        ("close } here", "%%chat: unmatched '}' at line 1, column 7; write '}}' for a literal "
                         "brace, or use --no-interpolate."),
        ("{}", "%%chat: '{}' at line 1, column 1 is not a variable name; write '{{' and '}}' "
               "for literal braces, or use --no-interpolate."),
        ("Top: {items[0]}", "%%chat: '{items[0]}' at line 1, column 6 indexes or calls, and a "
                            "placeholder is a name with .attributes only; set a variable to it "
                            "in a cell before and write {that name}, write '{{' and '}}' for "
                            "literal braces, or use --no-interpolate."),
        ("{d.get('k')}", "%%chat: '{d.get('k')}' at line 1, column 1 indexes or calls, and a "
                         "placeholder is a name with .attributes only; set a variable to it in "
                         "a cell before and write {that name}, write '{{' and '}}' for literal "
                         "braces, or use --no-interpolate."),
        ("{x.missing}", "%%chat: '{x.missing}' failed: int object has no attribute 'missing'."),
        ("{x:q}", "%%chat: '{x:q}' could not be formatted: Unknown format code 'q' for object of type 'int'."),
    ],
)
def test_interpolation_errors_name_the_fix(text, message):
    with pytest.raises(UsageError) as error:
        interpolate(text, {"x": 1})
    assert str(error.value) == message


def test_interpolation_errors_name_the_magic():
    with pytest.raises(UsageError, match=r"^%%complete: name 'y'"):
        interpolate("{y}", {}, magic="%%complete")


def test_names_in_any_script_are_variables():
    assert interpolate("{é} {数.real} {_x1}", {"é": "accent", "数": 7, "_x1": "u"}) == "accent 7 u"


class _Broken:
    """A value whose own code raises while the cell is interpolated."""

    @property
    def total(self):
        raise KeyError("total")

    def __format__(self, spec):
        raise RuntimeError("no text today")

    def __repr__(self):
        raise ZeroDivisionError


@pytest.mark.parametrize(
    "text, message",
    [
        ("{b.total}", "%%chat: '{b.total}' failed: reading .total raised KeyError: 'total'."),
        ("{b}", "%%chat: '{b}' could not be formatted: its _Broken raised RuntimeError: no text today."),
        ("{b!r}", "%%chat: '{b!r}' could not be formatted: its _Broken raised ZeroDivisionError."),
    ],
)
def test_a_value_whose_own_code_raises_is_a_one_line_error_naming_the_field(text, message):
    with pytest.raises(UsageError) as error:
        interpolate(text, {"b": _Broken()})
    assert str(error.value) == message
