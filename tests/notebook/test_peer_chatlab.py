"""Peers' own checks, ported: chatlab's ``tests/test_registry.py``, ``test_decorators.py`` and
``test_views.py`` (functions as tools: the schema, one call), jupyter-ai-magics'
``tests/test_magics.py`` (magic errors), and hostile cases beyond them.

Where we differ from a peer on purpose, the test says what we do instead (chatlab refuses a
function without a docstring or without hints; a notebook user's quick function is a tool
here). This module itself is under ``from __future__ import annotations``: every hint below
reaches ``make_tool`` as text, as in a notebook that starts with that import.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import json
import uuid
from typing import Annotated, Literal, Optional, TypedDict, Union

import pydantic
import pytest

from conftest import fails_with
import mlx_notebook
import mlx_notebook.tools as tools_module
from mlx_notebook._turn_types import ToolCallRecord
from mlx_notebook.tools import ToolError, call_tool, make_tool, registered_tools, resolve_tools


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    """``@tool`` registers process-wide; keep this file's tools out of other tests' chats."""
    monkeypatch.setattr(tools_module, "_registry", {})


def model_reads(tools, name, arguments) -> str:
    """What the model reads back for one call: the result as text (JSON where it can be) or
    ``Error: ...``."""
    result, error = call_tool(tools, name, arguments)
    return ToolCallRecord("call_1", name, arguments, result, error,
                          True if error is None else None).message_content()


# --------------------------------------------------------------- chatlab tests/test_registry.py


def simple_func(x: int, y: str, z: bool = False):
    """A simple test function"""
    return f"{x}, {y}, {z}"


class SimpleModel(pydantic.BaseModel):
    x: int
    y: str
    z: bool = pydantic.Field(default=False, description="A simple boolean field")


class NestedModel(pydantic.BaseModel):
    foo: int
    bar: str
    baz: bool = True
    simple_model: SimpleModel


class SimpleClass:
    def simple_method(self, x: int, y: str, z: bool = False):
        """A simple test method"""
        return f"{x}, {y}, {z}"


def simple_func_with_model_args(x: int, y: str, z: bool = False,
                                model: Optional[SimpleModel] = None,
                                nested_model: Optional[NestedModel] = None) -> str:
    """A simple test function with model arguments"""
    return f"{x}, {y}, {z}, {model!r}, {nested_model!r}"


def simple_func_with_uuid_arg(x: int, y: str, z: bool = False,
                              uuid: Optional[uuid.UUID] = None) -> str:
    """A simple test function with a uuid argument"""
    return f"{x}, {y}, {z}, {uuid!r}"


SIMPLE_PARAMETERS = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "string"}, "z": {"type": "boolean"}},
    "required": ["x", "y"],
}
SIMPLE_MODEL_SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "string"},
                   "z": {"type": "boolean", "description": "A simple boolean field"}},
    "required": ["x", "y"],
}


def test_generate_function_schema():
    # chatlab also writes "default": false for z; the converter chat templates are tested
    # against (transformers') writes no defaults, and neither do we.
    assert make_tool(simple_func).schema() == {"type": "function", "function": {
        "name": "simple_func", "description": "A simple test function",
        "parameters": SIMPLE_PARAMETERS}}


def test_generate_function_schema_with_method():
    tool = make_tool(SimpleClass().simple_method)
    assert (tool.name, tool.description, tool.parameters) == (
        "simple_method", "A simple test method", SIMPLE_PARAMETERS)
    assert call_tool([tool], "simple_method", {"x": 1, "y": "str", "z": True}) == (
        "1, str, True", None)


def test_generate_function_schema_with_model_and_nested_model_arguments():
    """chatlab writes $defs/$ref; we inline each record as an object of its fields."""
    tool = make_tool(simple_func_with_model_args)
    properties = tool.parameters["properties"]
    assert properties["model"] == {**SIMPLE_MODEL_SCHEMA, "nullable": True}
    assert properties["nested_model"] == {
        "type": "object",
        "properties": {"foo": {"type": "integer"}, "bar": {"type": "string"},
                       "baz": {"type": "boolean"}, "simple_model": SIMPLE_MODEL_SCHEMA},
        "required": ["foo", "bar", "simple_model"],
        "nullable": True,
    }
    assert tool.parameters["required"] == ["x", "y"]
    nested = {"foo": 1, "bar": "b", "simple_model": {"x": 2, "y": "q"}}
    assert call_tool([tool], "simple_func_with_model_args",
                     {"x": 1, "y": "s", "nested_model": nested}) == (
        "1, s, False, None, NestedModel(foo=1, bar='b', baz=True, "
        "simple_model=SimpleModel(x=2, y='q', z=False))", None)
    assert call_tool([tool], "simple_func_with_model_args",
                     {"x": 1, "y": "s", "model": {"x": "one", "y": "q"}}) == (
        None, "bad arguments for simple_func_with_model_args: 'model' does not fit SimpleModel: "
              "x: Input should be a valid integer, unable to parse string as an integer")


def test_generate_function_schema_with_uuid_argument():
    tool = make_tool(simple_func_with_uuid_arg)
    assert tool.parameters["properties"]["uuid"] == {
        "type": "string", "format": "uuid", "nullable": True}
    assert tool.parameters["required"] == ["x", "y"]
    text = "12345678-1234-5678-1234-567812345678"
    assert call_tool([tool], "simple_func_with_uuid_arg", {"x": 1, "y": "s", "uuid": text}) == (
        f"1, s, False, UUID('{text}')", None)
    assert call_tool([tool], "simple_func_with_uuid_arg",
                     {"x": 1, "y": "s", "uuid": "not-a-uuid"}) == (
        None, "bad arguments for simple_func_with_uuid_arg: 'uuid' must be a UUID, got "
              '"not-a-uuid"')


def test_generate_function_schema_lambda():
    """chatlab: "Lambdas cannot be registered. Use `def` instead." We ask for a name, and a
    named lambda is a tool."""
    with pytest.raises(ToolError, match=r"has no usable name; pass tool\(name='\.\.\.'\)\.$"):
        make_tool(lambda x: x)
    assert make_tool(lambda x: x, name="ident").schema()["function"] == {
        "name": "ident", "description": "",
        "parameters": {"type": "object", "properties": {"x": {}}, "required": ["x"]}}


def test_generate_function_schema_no_docstring_and_no_type_annotation():
    """chatlab refuses both; here the description is empty and an unhinted parameter takes
    any value."""
    def no_docstring(x: int):
        return x

    def no_type_annotation(x):
        """Return back x"""
        return x

    assert make_tool(no_docstring).description == ""
    tool = make_tool(no_type_annotation)
    assert tool.parameters == {"type": "object", "properties": {"x": {}}, "required": ["x"]}
    assert call_tool([tool], "no_type_annotation", {"x": [1, "a"]}) == ([1, "a"], None)


class Opaque:
    pass


def unallowed_type(x: Opaque):
    """Return back x"""
    return x


def test_generate_function_schema_unallowed_type():
    with pytest.raises(ToolError) as caught:
        make_tool(unallowed_type)
    assert str(caught.value) == (
        "Parameter 'x' of tool 'unallowed_type' has type Opaque, which has no JSON form; use "
        "str, int, float, bool, list, dict, Literal, an Enum, a dataclass, a TypedDict or a "
        "pydantic model.")


def test_generate_function_schema_optional_args_and_no_args():
    def func_with_optional_args(x: int, y: str, z: bool = False):
        """A function with optional arguments"""

    def func_no_args():
        """A function with no arguments"""

    parameters = make_tool(func_with_optional_args).parameters
    assert "z" in parameters["properties"] and "z" not in parameters["required"]
    # chatlab writes "required": []; an empty list is left out here (both mean none).
    assert make_tool(func_no_args).parameters == {"type": "object", "properties": {}}


def test_function_registry_unknown_function_and_python_hallucination():
    tools = [make_tool(simple_func)]
    assert call_tool(tools, "unknown", {}) == (
        None, "unknown tool 'unknown' (tools offered: simple_func)")
    # Models trained on ChatGPT's code interpreter call "python" with raw code; it is an
    # unknown tool unless the notebook offers one by that name.
    assert call_tool(tools, "python", {"code": "1 + 4"}) == (
        None, "unknown tool 'python' (tools offered: simple_func)")
    assert call_tool([], "totes_not_real", {"x": 1}) == (
        None, "unknown tool 'totes_not_real' (tools offered: none)")


def test_function_registry_function_argument_error():
    tools = [make_tool(simple_func)]
    assert call_tool(tools, "simple_func", "not json") == (
        None, 'bad arguments for simple_func: they must be an object, got "not json"')
    assert call_tool(tools, "simple_func", [1, "str"]) == (
        None, 'bad arguments for simple_func: they must be an object, got [1, "str"]')


def test_function_registry_call():
    tools = [make_tool(simple_func)]
    assert call_tool(tools, "simple_func", json.loads('{"x": 1, "y": "str", "z": true}')) == (
        "1, str, True", None)


def test_function_registry_get_contains_and_definitions():
    mlx_notebook.tool(simple_func)
    assert registered_tools()["simple_func"].function is simple_func
    assert "simple_func" in registered_tools() and "unknown" not in registered_tools()
    (offered,) = resolve_tools(None, {})
    assert offered.schema()["function"]["name"] == "simple_func"


@pytest.mark.parametrize("arguments, said", [
    ({"y": "s"}, "missing a required argument: 'x'"),
    ({"x": 1, "y": "s", "w": 3}, "unexpected argument 'w'"),
    ({"x": "one", "y": "s"}, "'x' must be an integer, got \"one\""),
    ({"x": 1.5, "y": "s"}, "'x' must be an integer, got 1.5"),
    ({"x": None, "y": "s"}, "'x' must be an integer, got null"),
    ({"x": 1, "y": 5}, "'y' must be a string, got 5"),
    ({"x": 1, "y": "s", "z": "yes"}, "'z' must be true or false, got \"yes\""),
])
def test_arguments_that_do_not_fit_are_refused_before_the_call(arguments, said):
    assert call_tool([make_tool(simple_func)], "simple_func", arguments) == (
        None, f"bad arguments for simple_func: {said}")


def test_arguments_written_as_text_arrive_as_their_types():
    assert call_tool([make_tool(simple_func)], "simple_func",
                     {"x": "7", "y": "s", "z": "True"}) == ("7, s, True", None)


# -------------------------------------------------- chatlab test_decorators.py / test_views.py


class MyException(Exception):
    pass


def raise_exception():
    """This function just raises an exception."""
    raise MyException("test exception")


def test_an_exception_reaches_the_model_without_a_decorator():
    """chatlab shows a tool's exception to the model only under @expose_exception_to_llm;
    here every exception does, as one line, and the notebook goes on."""
    assert model_reads([make_tool(raise_exception)], "raise_exception", {}) == (
        "Error: MyException: test exception")


def test_a_tool_result_is_what_the_model_reads():
    def compute_pi() -> str:
        """Pi."""
        return "3.14159"

    assert model_reads([make_tool(compute_pi)], "compute_pi", {}) == "3.14159"


# ------------------------------------------------------ enums, literals, records, docstrings


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Number(enum.IntEnum):
    ONE = 1
    TWO = 2


def paint(color: Color, count: Number, finish: Literal["matte", "gloss"] = "matte") -> str:
    """Paint."""
    return f"{color!r} {count!r} {finish}"


def test_enums_and_literals_are_choices_the_call_gets_as_members():
    properties = make_tool(paint).parameters["properties"]
    assert properties == {
        "color": {"type": "string", "enum": ["red", "green"]},
        "count": {"type": "integer", "enum": [1, 2]},
        "finish": {"type": "string", "enum": ["matte", "gloss"]},
    }
    tools = [make_tool(paint)]
    assert call_tool(tools, "paint", {"color": "green", "count": "2", "finish": "gloss"}) == (
        "<Color.GREEN: 'green'> <Number.TWO: 2> gloss", None)
    assert call_tool(tools, "paint", {"color": "blue", "count": 1}) == (
        None, "bad arguments for paint: 'color' must be one of \"red\", \"green\", got \"blue\"")
    assert call_tool(tools, "paint", {"color": "red", "count": 1, "finish": "satin"}) == (
        None, "bad arguments for paint: 'finish' must be one of \"matte\", \"gloss\", got "
              "\"satin\"")


@dataclasses.dataclass
class Point:
    """A point.

    Attributes:
        x: Horizontal.
    """

    x: int
    y: int = 0


class Options(TypedDict, total=False):
    verbose: bool
    label: str


class Required(TypedDict):
    key: int


def place(at: Point, options: Options, needed: Required):
    """Place."""
    return at, options, needed


def test_dataclasses_and_typeddicts_are_objects_with_their_required_fields():
    properties = make_tool(place).parameters["properties"]
    assert properties["at"] == {
        "type": "object", "description": "A point.",
        "properties": {"x": {"type": "integer", "description": "Horizontal."},
                       "y": {"type": "integer"}},
        "required": ["x"]}
    assert properties["options"] == {"type": "object", "properties": {
        "verbose": {"type": "boolean"}, "label": {"type": "string"}}}
    assert properties["needed"]["required"] == ["key"]
    tools = [make_tool(place)]
    assert call_tool(tools, "place", {"at": {"x": 1}, "options": {}, "needed": {"key": "3"}}) == (
        (Point(1, 0), {}, {"key": 3}), None)
    assert call_tool(tools, "place", {"at": {"x": 1, "z": 2}, "options": {}, "needed": {"key": 1}}) == (
        None, "bad arguments for place: 'at' has no field 'z' (its fields: x, y)")
    assert call_tool(tools, "place", {"at": {"x": 1}, "options": {}, "needed": {}}) == (
        None, "bad arguments for place: 'needed' is missing its field 'key'")


def greet(names: list[str], age: Optional[int] = None, scores: dict[str, float] | None = None,
          code: Union[int, str] = 0):
    """Greet people.

    Args:
        names (list[str]): The names.
        age (int, optional): The age. Defaults to None.
        scores: Scores by name,
            over two lines.
        code: A number or text.

    Returns:
        str: The greeting.
    """


def numpy_sum(a: int, b: float = 1.0):
    """Sum two numbers.

    Parameters
    ----------
    a : int
        The first.
    b : float, optional
        The second, by default 1.0.

    Returns
    -------
    float
    """


def rest_sum(a: int, b: str):
    """Sum, Sphinx style.

    :param a: first thing
    :type a: int
    :param str b: second thing
    :returns: nothing
    :rtype: None
    """


def test_google_numpy_and_rest_docstrings_describe_the_parameters():
    greet_tool = make_tool(greet)
    assert greet_tool.description == "Greet people."
    assert greet_tool.parameters == {"type": "object", "properties": {
        "names": {"type": "array", "items": {"type": "string"}, "description": "The names."},
        "age": {"type": "integer", "nullable": True, "description": "The age. Defaults to None."},
        "scores": {"type": "object", "additionalProperties": {"type": "number"}, "nullable": True,
                   "description": "Scores by name, over two lines."},
        "code": {"type": ["integer", "string"], "description": "A number or text."},
    }, "required": ["names"]}
    numpy_tool = make_tool(numpy_sum)
    assert (numpy_tool.description, numpy_tool.parameters["properties"]) == (
        "Sum two numbers.", {"a": {"type": "integer", "description": "The first."},
                             "b": {"type": "number", "description": "The second, by default 1.0."}})
    rest_tool = make_tool(rest_sum)
    assert (rest_tool.description, rest_tool.parameters["properties"]) == (
        "Sum, Sphinx style.", {"a": {"type": "integer", "description": "first thing"},
                               "b": {"type": "string", "description": "second thing"}})


def test_annotated_text_describes_a_parameter_even_nested():
    def count(a: Annotated[int, "count of things"], b: Annotated[str, 42, "later text"],
              c: Annotated[list[Annotated[int, "inner"]], "outer"]):
        """Count."""

    assert make_tool(count).parameters["properties"] == {
        "a": {"type": "integer", "description": "count of things"},
        "b": {"type": "string", "description": "later text"},
        "c": {"type": "array", "items": {"type": "integer"}, "description": "outer"},
    }


def args_and_kwargs(a: int, *args: int, **kwargs: str):
    """Variadic."""
    return a, args, kwargs


def test_args_and_kwargs_are_left_out_and_extra_keywords_are_checked():
    tool = make_tool(args_and_kwargs)
    assert tool.parameters == {"type": "object", "properties": {"a": {"type": "integer"}},
                               "required": ["a"]}
    assert call_tool([tool], "args_and_kwargs", {"a": "1", "q": "x"}) == ((1, (), {"q": "x"}), None)
    assert call_tool([tool], "args_and_kwargs", {"a": 1, "q": 5}) == (
        None, "bad arguments for args_and_kwargs: 'q' must be a string, got 5")


def test_keyword_only_parameters_are_required_like_any_other():
    def kw(a: int, *, b: int, c: int = 2):
        """K."""
        return a, b, c

    tool = make_tool(kw)
    assert tool.parameters["required"] == ["a", "b"]
    assert call_tool([tool], "kw", {"a": 1, "b": 2}) == ((1, 2, 2), None)
    assert call_tool([tool], "kw", {"a": 1}) == (None, "bad arguments for kw: missing a required "
                                                       "argument: 'b'")


async def slow_echo(text: str) -> str:
    """Echo, later."""
    await asyncio.sleep(0.01)
    if text == "boom":
        raise RuntimeError("async boom")
    return text


def test_an_async_tool_is_awaited_and_its_exception_reaches_the_model():
    tool = make_tool(slow_echo)
    assert (tool.description, tool.parameters["required"]) == ("Echo, later.", ["text"])
    assert call_tool([tool], "slow_echo", {"text": "hi"}) == ("hi", None)
    assert call_tool([tool], "slow_echo", {"text": "boom"}) == (None, "RuntimeError: async boom")


# ------------------------------------------------------------- hostile: odd callables and hints


class TreeNode(pydantic.BaseModel):
    """A tree node."""

    value: int
    children: list[TreeNode] = []


def walk(tree: TreeNode) -> int:
    """Sum a tree."""
    return tree.value + sum(walk(child) for child in tree.children)


def test_a_recursive_pydantic_model_is_typed_once_and_built_at_every_depth():
    tool = make_tool(walk)
    assert tool.parameters["properties"]["tree"] == {
        "type": "object", "description": "A tree node.",
        "properties": {"value": {"type": "integer"},
                       "children": {"type": "array", "items": {"type": "object"}}},
        "required": ["value"]}
    deep = {"value": 1, "children": [{"value": 2, "children": [{"value": "3"}]}]}
    assert call_tool([tool], "walk", {"tree": deep}) == (6, None)


def test_string_hints_resolve_and_unknown_or_broken_ones_say_so():
    def wants_int(x: "int") -> int:  # (a string inside a string under future annotations)
        """W."""
        return x

    def unknown(x: NotDefinedAnywhere):  # noqa: F821
        """U."""

    assert call_tool([make_tool(wants_int)], "wants_int", {"x": "3"}) == (3, None)
    with pytest.raises(ToolError) as caught:
        make_tool(unknown)
    assert str(caught.value) == (
        "The type hints of tool 'unknown' cannot be resolved (name 'NotDefinedAnywhere' is not "
        "defined); define the types at the notebook's top level.")


def base_weather(city: str, units: str = "C", days: int = 1):
    """Weather in a city.

    Args:
        city: The city.
        units: C or F.
    """
    return city, units, days


def logged(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)
    return wrapper


class Doubler:
    """Double a number."""

    def __call__(self, x: int) -> int:
        return 2 * x


class Shop:
    @staticmethod
    def tax(amount: float) -> float:
        """Tax on an amount."""
        return amount * 0.25

    @classmethod
    def named(cls, item: str) -> str:
        """The shop's item."""
        return f"{cls.__name__}:{item}"


def test_partials_wrapped_functions_callable_objects_and_class_level_methods():
    partial = make_tool(functools.partial(base_weather, units="F"), name="weather_f")
    assert list(partial.parameters["properties"]) == ["city", "days"]
    assert call_tool([partial], "weather_f", {"city": "Oslo"}) == (("Oslo", "F", 1), None)
    assert call_tool([partial], "weather_f", {"city": "Oslo", "units": "C"}) == (
        None, "bad arguments for weather_f: unexpected argument 'units'")

    wrapped = make_tool(logged(base_weather))
    assert (wrapped.name, wrapped.description) == ("base_weather", "Weather in a city.")
    assert call_tool([wrapped], "base_weather", {"city": "Rome", "days": "2"}) == (
        ("Rome", "C", 2), None)

    doubler = make_tool(Doubler(), name="double")
    assert (doubler.description, doubler.parameters["properties"]) == (
        "Double a number.", {"x": {"type": "integer"}})
    assert call_tool([doubler], "double", {"x": "4"}) == (8, None)

    assert call_tool([make_tool(Shop.tax)], "tax", {"amount": 4}) == (1.0, None)
    assert call_tool([make_tool(Shop.named)], "named", {"item": "tea"}) == ("Shop:tea", None)
    assert call_tool([make_tool(functools.cache(base_weather))], "base_weather",
                     {"city": "Oslo"}) == (("Oslo", "C", 1), None)


def test_builtins_are_tools_where_python_can_read_their_parameters():
    length = make_tool(len)
    assert length.parameters == {"type": "object", "properties": {"obj": {}}, "required": ["obj"]}
    assert call_tool([length], "len", {"obj": "abcd"}) == (4, None)  # positional-only, by name
    assert model_reads([length], "len", {"obj": 5}) == (
        "Error: TypeError: object of type 'int' has no len()")
    with pytest.raises(ToolError, match=r"^Python cannot read the parameters of <built-in "
                                        r"function max>"):
        make_tool(max)


@pytest.mark.parametrize("name, ok", [
    ("a" * 64, True), ("a" * 65, False), ("with space", False), ("a.b", False),
    ("get-weather", True), ("_", True), ("météo", False),
])
def test_tool_names_follow_the_model_apis_rule(name, ok):
    def f():
        """F."""

    if ok:
        assert make_tool(f, name=name).name == name
    else:
        with pytest.raises(ToolError, match=r"is not a tool name model APIs accept \(letters, "
                                            r"digits, _ and -, at most 64\)\.$"):
            make_tool(f, name=name)


def test_parameter_names_that_clash_with_python_or_the_call_protocol_pass_through():
    namespace: dict = {}
    exec("def odd(self, cls, name, arguments, type):\n"
         "    '''Odd names.'''\n"
         "    return (self, cls, name, arguments, type)", namespace)
    tool = make_tool(namespace["odd"])
    assert list(tool.parameters["properties"]) == ["self", "cls", "name", "arguments", "type"]
    assert call_tool([tool], "odd", {"self": 1, "cls": 2, "name": 3, "arguments": 4,
                                     "type": 5}) == ((1, 2, 3, 4, 5), None)

    def unicode_names(café: int, 名前: str):
        """U."""
        return café, 名前

    assert call_tool([make_tool(unicode_names)], "unicode_names", {"café": "1", "名前": "x"}) == (
        (1, "x"), None)


# ----------------------------------------------------- hostile: what a tool returns or raises


class BrokenRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


def _returns(value):
    def tool():
        """Return something."""
        return value() if callable(value) else value
    return make_tool(tool)


@pytest.mark.parametrize("value, reads", [
    ({"a": [1, None]}, '{"a": [1, null]}'),
    (None, "null"),
    (True, "true"),
    (3, "3"),
    ((1, "a"), '[1, "a"]'),
    ({3, 1, 2}, "[1, 2, 3]"),
    (b"hello", "hello"),
    (b"\xff\xfe", "b'\\xff\\xfe'"),
    (Color.RED, '"red"'),
    (Point(1, 2), '{"x": 1, "y": 2}'),
    (SimpleModel(x=1, y="a"), '{"x": 1, "y": "a", "z": false}'),
    (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
    (BrokenRepr(), "<BrokenRepr that cannot be shown as text>"),
    (ValueError("x"), "ValueError('x')"),
    (1 + 2j, "(1+2j)"),
])
def test_a_result_that_is_not_text_reaches_the_model_as_json_or_its_repr(value, reads):
    assert model_reads([_returns(value)], "tool", {}) == reads


def test_a_generator_tools_items_and_a_coroutine_it_returns_are_read():
    def counting():
        """Count."""
        yield 1
        yield "two"

    def hands_back_a_coroutine():
        """Coroutine."""
        return slow_echo("later")

    assert model_reads([make_tool(counting)], "counting", {}) == '[1, "two"]'
    assert model_reads([make_tool(hands_back_a_coroutine)], "hands_back_a_coroutine", {}) == "later"


def test_a_tool_that_prints_returns_its_result_and_the_print_stays_in_the_cell(capsys):
    def noisy() -> str:
        """Noisy."""
        print("working...")
        return "done"

    assert call_tool([make_tool(noisy)], "noisy", {}) == ("done", None)
    assert capsys.readouterr().out == "working...\n"


def test_what_a_tool_raises_becomes_one_line_and_only_ctrl_c_stops_the_cell():
    class Custom(BaseException):
        pass

    def raises(kind: str):
        """Raise."""
        if kind == "exit":
            raise SystemExit("bye")
        if kind == "base":
            raise Custom("custom base")
        if kind == "generator":
            raise GeneratorExit
        if kind == "recursion":
            return raises(kind)
        if kind == "chained":
            try:
                1 / 0
            except ZeroDivisionError as error:
                raise ValueError("outer") from error
        if kind == "empty":
            raise ValueError()
        raise KeyboardInterrupt

    tools = [make_tool(raises)]
    for kind, said in [("exit", "SystemExit: the tool called sys.exit('bye')"),
                       ("base", "Custom: custom base"), ("generator", "GeneratorExit"),
                       ("recursion", "RecursionError: maximum recursion depth exceeded"),
                       ("chained", "ValueError: outer"), ("empty", "ValueError")]:
        assert call_tool(tools, "raises", {"kind": kind}) == (None, said)
    with pytest.raises(KeyboardInterrupt):
        call_tool(tools, "raises", {"kind": "interrupt"})


# ------------------------------------------------- jupyter-ai-magics tests/test_magics.py


@pytest.mark.parametrize("source, message", [
    ("%chat Hello", "Line magic function `%chat` not found (But cell magic `%%chat` exists, did "
                    "you mean that instead?)."),
    ("%%chat\n", "%%chat is a cell magic, but the cell body is empty."),
    ("%load_model --bogus", "%load_model: unrecognized arguments: --bogus; see %load_model? for "
                            "the options."),
    ("%load_model a b", "%load_model: unrecognized arguments: b; see %load_model? for the "
                        "options."),
    ("%%chat --compare a\nHi", "%%chat: argument --compare: expected 2 arguments; see %%chat? "
                               "for the options."),
    ("%%chat --max-rounds 1.5\nHi", "%%chat: argument --max-rounds: must be a whole number of "
                                    "at least 1, not '1.5'; see %%chat? for the options."),
    ("%mlx tools --remove nope", "%mlx tools: no tool named 'nope' is registered (registered: "
                                 "none)."),
])
def test_magic_mistakes_are_one_sentence(bare_shell, capsys, source, message):
    fails_with(bare_shell, source, message, capsys)


def test_mlx_alone_lists_the_magics_as_ai_list_does(bare_shell, capsys):
    capsys.readouterr()
    assert bare_shell.run_cell("%mlx").success
    out = capsys.readouterr().out
    assert out.startswith("mlx-notebook magics")
    for magic in ("%load_model", "%%chat", "%%complete"):
        assert magic in out


def test_loading_the_extension_twice_says_so_and_keeps_working(bare_shell, capsys):
    capsys.readouterr()
    bare_shell.run_line_magic("load_ext", "mlx_notebook")
    assert "already loaded" in capsys.readouterr().out
    fails_with(bare_shell, "%%chat\nHello", "%%chat: no model is loaded; run %load_model first "
                                            "(no argument loads the default model).", capsys)
