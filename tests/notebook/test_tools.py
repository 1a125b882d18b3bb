"""Python functions as tools: the schema the model sees, and what one call returns.

The end-to-end tool loop on the tiny reasoner is in ``test_magics.py``.
"""

from __future__ import annotations

import asyncio
import collections.abc
import dataclasses
import datetime
import decimal
import enum
import functools
import math
import pathlib
import typing
import uuid
from typing import (Annotated, ClassVar, Literal, Mapping, NamedTuple, NewType, NotRequired, Optional,
                    Sequence, TypedDict)

import annotated_types
import pydantic
import pytest
import typing_extensions

import mlx_notebook
import mlx_notebook.tools as tools_module
from mlx_notebook._turn_types import ToolCallRecord
from mlx_notebook.tools import ToolError, call_tool, make_tool, registered_tools, resolve_tools


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    """``@tool`` registers process-wide; keep this file's tools out of other tests' chats."""
    monkeypatch.setattr(tools_module, "_registry", {})


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


def get_weather(city: str, unit: Unit = Unit.CELSIUS, days: int | None = None,
                tags: list[str] | None = None) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city name.
        unit: Temperature unit.
        days: How many days ahead,
            counted from today.
    """
    return {"city": city, "unit": unit}


def test_schema_comes_from_signature_hints_and_docstring():
    assert make_tool(get_weather).schema() == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name."},
                    "unit": {"type": "string", "enum": ["c", "f"], "description": "Temperature unit."},
                    "days": {"type": "integer", "nullable": True,
                             "description": "How many days ahead, counted from today."},
                    "tags": {"type": "array", "items": {"type": "string"}, "nullable": True},
                },
                "required": ["city"],
            },
        },
    }


def test_sphinx_docstrings_untyped_parameters_and_literals_are_described():
    def convert(amount: float, currency: Literal["EUR", "USD"], note=""):
        """Convert money.

        :param amount: How much.
        :param currency: Target currency.
        """

    parameters = make_tool(convert).parameters
    assert make_tool(convert).description == "Convert money."
    assert parameters["properties"] == {
        "amount": {"type": "number", "description": "How much."},
        "currency": {"type": "string", "enum": ["EUR", "USD"], "description": "Target currency."},
        "note": {},
    }
    assert parameters["required"] == ["amount", "currency"]


def test_function_without_docstring_is_still_a_tool():
    def ping():
        return "pong"

    assert make_tool(ping).schema()["function"] == {
        "name": "ping", "description": "", "parameters": {"type": "object", "properties": {}},
    }


class Point:
    pass


def move(to: Point):
    """Move."""


def test_a_partial_and_a_callable_object_are_described_by_what_they_wrap():
    import functools

    def weather(city: str, units: str = "C") -> dict:
        """Weather in a city."""
        return {"city": city, "units": units}

    class Clock:
        def __call__(self, zone: int) -> str:
            """The time in a zone."""
            return f"12:00 in {zone}"

    bound = make_tool(functools.partial(weather, units="F"), name="weather_f")
    assert bound.schema()["function"]["description"] == "Weather in a city."
    # The bound setting is not offered to the model.
    assert bound.schema()["function"]["parameters"]["properties"] == {"city": {"type": "string"}}
    assert bound.schema()["function"]["parameters"]["required"] == ["city"]
    assert call_tool([bound], "weather_f", {"city": "Oslo"}) == ({"city": "Oslo", "units": "F"}, None)
    class Forecast:
        """Tomorrow's weather."""

        def __call__(self, city: str) -> str:
            return city

    assert make_tool(Forecast(), name="forecast").description == "Tomorrow's weather."
    clock = make_tool(Clock(), name="clock").schema()["function"]
    assert (clock["description"], clock["parameters"]["properties"]) == (
        "The time in a zone.", {"zone": {"type": "integer"}})
    with pytest.raises(ToolError) as caught:
        make_tool(max)
    assert str(caught.value) == ("Python cannot read the parameters of <built-in function max>; "
                                 "wrap it in a def with typed parameters to make tool 'max'.")


def test_unconvertible_hint_is_a_clear_error():
    with pytest.raises(ToolError) as error:
        make_tool(move)
    assert str(error.value) == (
        "Parameter 'to' of tool 'move' has type Point, which has no JSON form; use str, int, "
        "float, bool, list, dict, Literal, an Enum, a dataclass, a TypedDict or a pydantic model."
    )


JSON = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
Name = typing_extensions.TypeAliasType("Name", str)
Tree = typing_extensions.TypeAliasType("Tree", "dict[str, Tree] | int")


def test_recursive_and_named_aliases_are_tools():
    """A recursive alias (JSON as it is usually written) takes any value where it recurs;
    a named alias (``type Name = str``) is what it stands for."""
    def store(doc: JSON, tags: list[Name], tree: Tree) -> str:
        """Store it."""
        return repr((doc, tags, tree))

    tool = make_tool(store)
    properties = tool.schema()["function"]["parameters"]["properties"]
    assert properties["tags"] == {"type": "array", "items": {"type": "string"}}
    assert properties["tree"] == {"anyOf": [  # read from its text; where it recurs, any value
        {"type": "object", "additionalProperties": {}}, {"type": "integer"}]}
    assert {"type": "string"} in properties["doc"]["anyOf"]
    doc = {"a": [1, {"b": None}], "c": "d"}
    assert call_tool([tool], "store", {"doc": doc, "tags": ["x"], "tree": {"l": 1}}) == (
        repr((doc, ["x"], {"l": 1})), None)
    assert call_tool([tool], "store", {"doc": 1, "tags": ["x", 5], "tree": 1}) == (
        None, "bad arguments for store: 'tags[1]' must be a string, got 5")
    assert call_tool([tool], "store", {"doc": 1, "tags": [], "tree": "7"}) == (
        repr((1, [], 7)), None)  # (an int where it does not recur: read as one)


def test_an_integer_written_past_pythons_digit_limit_is_a_bad_argument():
    def count(n: int) -> int:
        """Count."""
        return n

    assert call_tool([make_tool(count)], "count", {"n": "9" * 5000}) == (
        None, "bad arguments for count: 'n' must be an integer of at most 4300 digits, got one "
              "of 5000")


def test_unresolvable_hint_is_a_clear_error():
    class Local:
        pass

    def jump(to: Local):  # a string hint (future annotations) naming a local class
        """Jump."""

    with pytest.raises(ToolError) as error:
        make_tool(jump)
    assert str(error.value) == (
        "The type hints of tool 'jump' cannot be resolved (name 'Local' is not defined); "
        "define the types at the notebook's top level."
    )


def test_decorator_registers_and_returns_the_function():
    @mlx_notebook.tool(description="Add two integers.")
    def add_numbers(a: int, b: int) -> int:
        return a + b

    assert add_numbers(2, 3) == 5
    assert registered_tools()["add_numbers"].description == "Add two integers."
    assert [t.name for t in resolve_tools(None, {})] == ["add_numbers"]
    assert resolve_tools([], {}) == []


def test_tools_resolve_from_the_namespace_and_unknown_names_fail():
    assert [t.name for t in resolve_tools(["get_weather"], {"get_weather": get_weather})] == ["get_weather"]
    with pytest.raises(ToolError) as error:
        resolve_tools(["get_wether"], {"get_weather": get_weather})
    assert str(error.value) == (
        "There is no function named 'get_wether' in the notebook; define it or decorate it with "
        "@mlx_notebook.tool."
    )


@pytest.mark.parametrize(
    "name, arguments, expected",
    [
        ("get_weather", {"city": "Paris"}, ({"city": "Paris", "unit": Unit.CELSIUS}, None)),
        ("get_weather", {"town": "Paris"},
         (None, "bad arguments for get_weather: unexpected argument 'town'")),
        ("get_weather", {}, (None, "bad arguments for get_weather: missing a required argument: 'city'")),
        ("fail", {}, (None, "ZeroDivisionError: division by zero")),
        ("nope", {}, (None, "unknown tool 'nope' (tools offered: fail, get_weather)")),
    ],
)
def test_a_call_returns_its_result_or_the_error_the_model_reads(name, arguments, expected):
    def fail():
        return 1 / 0

    tools = [make_tool(get_weather), make_tool(fail)]
    assert call_tool(tools, name, arguments) == expected


async def fetch_temperature(city: str) -> dict:
    """Look up the temperature in a city.

    Args:
        city: The city.
    """
    import asyncio

    await asyncio.sleep(0.01)
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"city": city, "celsius": 21}


def test_an_async_tool_is_described_and_awaited():
    tool = make_tool(fetch_temperature)
    assert tool.description == "Look up the temperature in a city."
    assert tool.parameters["required"] == ["city"]
    assert call_tool([tool], "fetch_temperature", {"city": "Paris"}) == (
        {"city": "Paris", "celsius": 21}, None)
    assert call_tool([tool], "fetch_temperature", {"city": "Atlantis"}) == (
        None, "LookupError: no such city")


def test_an_async_tool_runs_inside_a_running_event_loop_as_in_a_kernel():
    import asyncio

    import threading

    async def cell():  # ipykernel runs cells inside its own loop
        return call_tool([make_tool(fetch_temperature)], "fetch_temperature", {"city": "Oslo"})

    # A thread of its own: earlier tests (Playwright's sync API) may leave this one's loop set.
    results = []
    runner = threading.Thread(target=lambda: results.append(asyncio.run(cell())))
    runner.start()
    runner.join(10)
    assert results == [({"city": "Oslo", "celsius": 21}, None)]


_HANGING_TOOL_IN_A_KERNEL = """
import _thread, asyncio, sys, threading, time
from mlx_notebook.tools import call_tool, make_tool

async def wait_for_reply(seconds: float) -> str:
    \"\"\"Wait for a reply that does not come.\"\"\"
    # The interrupt comes once the cell is surely waiting for this tool (not while it still
    # imports), flagged the way _thread.interrupt_main flags it: no signal wakes the wait.
    threading.Timer(0.3, _thread.interrupt_main).start()
    await asyncio.sleep(seconds)
    return "late"

async def cell():  # as ipykernel: a cell in a running loop, Ctrl-C raises KeyboardInterrupt
    return call_tool([make_tool(wait_for_reply)], "wait_for_reply", {"seconds": 30})

t0 = time.perf_counter()
try:
    asyncio.new_event_loop().run_until_complete(cell())
except KeyboardInterrupt:
    print(f"interrupted after {time.perf_counter() - t0:.1f} s")
"""


def test_interrupting_the_kernel_stops_waiting_for_an_async_tool():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _HANGING_TOOL_IN_A_KERNEL],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    seconds = float(done.stdout.split("interrupted after ")[1].split()[0])
    assert seconds < 5  # not the tool's 30 s


def test_removing_a_name_given_twice_removes_it_once_and_an_unknown_name_removes_nothing():
    from mlx_notebook.tools import unregister_tools

    mlx_notebook.tool(get_weather)
    assert unregister_tools(["get_weather", "get_weather"]) == ["get_weather"]
    mlx_notebook.tool(get_weather)
    with pytest.raises(ToolError):
        unregister_tools(["get_weather", "nope"])
    assert list(registered_tools()) == ["get_weather"]


def test_a_registered_tool_redefined_without_the_decorator_is_the_one_offered():
    @mlx_notebook.tool
    def lookup(city: str) -> str:
        """Old lookup."""
        return "old"

    def lookup(city: str, country: str) -> str:  # noqa: F811 -- the notebook redefines it
        """New lookup."""
        return "new"

    for names in (["lookup"], None):  # named with --tools, or offered as every @tool is
        (offered,) = resolve_tools(names, {"lookup": lookup})
        assert (offered.description, list(offered.parameters["properties"])) == (
            "New lookup.", ["city", "country"])
        assert call_tool([offered], "lookup", {"city": "Paris", "country": "FR"}) == ("new", None)
    # Not redefined: the decorator's tool, with what the decorator was told.
    registered = registered_tools()["lookup"]
    assert resolve_tools(["lookup"], {"lookup": registered.function}) == [registered]


def test_a_tool_named_apart_from_its_function_is_not_replaced_by_a_namesake():
    """``@tool(name="search")`` on ``web_search`` beside ``from re import search``: the
    registered tool is offered, not the unrelated function that shares its name."""
    import re

    @mlx_notebook.tool(name="search")
    def web_search(query: str) -> str:
        """Search the web."""
        return f"results for {query}"

    (offered,) = resolve_tools(["search"], {"search": re.search, "web_search": web_search})
    assert offered is registered_tools()["search"]
    assert (offered.description, list(offered.parameters["properties"])) == (
        "Search the web.", ["query"])


def test_a_name_given_twice_is_offered_once_and_a_class_is_not_a_tool():
    assert [t.name for t in resolve_tools(["get_weather", "get_weather"], {"get_weather": get_weather})] == [
        "get_weather"]
    with pytest.raises(ToolError) as error:
        resolve_tools(["Unit"], {"Unit": Unit})
    assert str(error.value) == "'Unit' is a class, not a function, so it cannot be a tool."


def test_a_tool_calling_sys_exit_fails_the_call_not_the_notebook():
    import sys

    def quit_early():
        sys.exit()

    def quit_with(code: int):
        sys.exit(code)

    tools = [make_tool(quit_early), make_tool(quit_with)]
    assert call_tool(tools, "quit_early", {}) == (None, "SystemExit: the tool called sys.exit()")
    assert call_tool(tools, "quit_with", {"code": 3}) == (None, "SystemExit: the tool called sys.exit(3)")


def test_a_tool_returning_a_lone_surrogate_gets_valid_text_that_says_so():
    def broken_text() -> str:
        return "caf\udce9 ok"

    result, error = call_tool([make_tool(broken_text)], "broken_text", {})
    assert error is None
    result.encode("utf-8")  # valid: the engine accepts it
    assert result == ("caf\\udce9 ok\n[broken_text returned text that is not valid Unicode (a lone "
                      "surrogate); it is shown as \\u escapes]")


def test_confirm_where_no_one_can_answer_declines_and_says_why(monkeypatch, capsys):
    import builtins
    import io

    from IPython.core.error import StdinNotImplementedError

    from mlx_notebook.tools import ask_before_running

    note = ("get_weather was not run: --confirm cannot ask here (no input is available to this "
            "cell); run the cell interactively to answer, or leave out --confirm.\n")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # stdin at its end
    assert ask_before_running("get_weather", {"city": "Paris"}) is False
    assert capsys.readouterr().out == 'Run get_weather({"city": "Paris"})? [y/N] \n' + note

    def no_stdin(prompt=""):  # what ipykernel's input does when the client has no input box
        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")

    monkeypatch.setattr(builtins, "input", no_stdin)
    assert ask_before_running("get_weather", {"city": "Paris"}) is False
    assert capsys.readouterr().out == note


def test_arguments_arrive_as_the_hints_ask_for_them():
    """The model writes JSON: an Enum's value, numbers and booleans sometimes as text, a list as
    JSON text. The function gets its own types (openai-agents' test_enum_and_literal_function)."""
    def f(unit: Unit, on: bool, count: int, ratio: float, tags: list[str],
          pick: Literal["a", "b"], maybe: Optional[Unit] = None) -> tuple:
        """F."""
        return unit, on, count, ratio, tags, pick, maybe

    tool = [make_tool(f)]
    result, error = call_tool(tool, "f", {"unit": "f", "on": "false", "count": "3", "ratio": "0.5",
                                          "tags": '["x", "y"]', "pick": "b", "maybe": "c"})
    assert error is None
    assert result == (Unit.FAHRENHEIT, False, 3, 0.5, ["x", "y"], "b", Unit.CELSIUS)
    assert call_tool(tool, "f", {"unit": "k", "on": True, "count": 1, "ratio": 1, "tags": [],
                                 "pick": "a"}) == (
        None, "bad arguments for f: 'unit' must be one of \"c\", \"f\", got \"k\"")
    assert call_tool(tool, "f", {"unit": "c", "on": True, "count": 1, "ratio": 1, "tags": [],
                                 "pick": "zzz"})[1] == (
        "bad arguments for f: 'pick' must be one of \"a\", \"b\", got \"zzz\"")


def test_what_peers_describe_and_call_is_described_and_called():
    def count(a: Annotated[int, "How many"], b: int = 0, /) -> int:
        """Count."""
        return a + b

    tool = make_tool(count)
    assert tool.parameters["properties"]["a"] == {"type": "integer", "description": "How many"}
    assert call_tool([tool], "count", {"a": 2, "b": 3}) == (5, None)  # positional-only, by name

    class Shop:
        def price(self, item: str) -> int:
            """Price."""
            return len(item)

    with pytest.raises(ToolError, match=r"'.*Shop.price' is a method: make the tool from an "
                                        r"instance's method \(tool\(obj.price\)\)"):
        make_tool(Shop.price)
    assert call_tool([make_tool(Shop().price)], "price", {"item": "tea"}) == (3, None)
    assert make_tool(count, name="count-items").name == "count-items"
    with pytest.raises(ToolError, match="'météo' is not a tool name model APIs accept"):
        make_tool(count, name="météo")

    class Point:
        pass

    def move(to: list[Point]) -> None:
        """Move."""

    with pytest.raises(ToolError, match="has type Point, which has no JSON form"):
        make_tool(move)


def test_a_call_never_raises_into_the_cell():
    import asyncio

    async def cancelled():
        """C."""
        task = asyncio.ensure_future(asyncio.sleep(10))
        task.cancel()
        await task

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    def unprintable():
        """U."""
        raise Unprintable()

    assert call_tool([make_tool(cancelled)], "cancelled", {}) == (None, "CancelledError")
    assert call_tool([make_tool(unprintable)], "unprintable", {}) == (
        None, "Unprintable: (its message could not be read: Unprintable.__str__ failed)")


class Swap(enum.Enum):
    a = "b"
    b = "a"


class Level(enum.IntEnum):  # OFF is falsy
    OFF = 0
    ON = 1


def test_a_value_already_of_a_hinted_type_is_left_as_it_is():
    def f(code: int | str = 0, text: str | list[str] = "", pick: Literal[1, "1"] = 1,
          flag: Literal[True, False] = True, swap: Swap = Swap.a,
          units: Optional[list[Unit]] = None, by_day: dict[str, Unit] | None = None,
          ratio: float | int = 0) -> dict:
        """F."""
        return dict(code=code, text=text, pick=pick, flag=flag, swap=swap, units=units,
                    by_day=by_day, ratio=ratio)

    tool = [make_tool(f)]
    result, error = call_tool(tool, "f", {"code": "007", "text": "[1, 2]", "pick": "1",
                                          "flag": "false", "swap": "a", "units": ["f"],
                                          "by_day": {"mon": "c"}, "ratio": 3.0})
    assert error is None
    assert result == dict(code="007", text="[1, 2]", pick="1", flag=False, swap=Swap.b,
                          units=[Unit.FAHRENHEIT], by_day={"mon": Unit.CELSIUS}, ratio=3.0)
    def g(lv: Level, maybe: Optional[Level] = None) -> tuple:
        """G."""
        return lv, maybe

    assert call_tool([make_tool(g)], "g", {"lv": 0, "maybe": "OFF"}) == ((Level.OFF, Level.OFF), None)
    assert call_tool(tool, "f", {"units": ["k"]})[1] == (
        "bad arguments for f: 'units[0]' must be one of \"c\", \"f\", got \"k\"")
    deep = "[" * 100_000 + "]" * 100_000

    def g(items: list) -> int:
        """G."""
        return len(items)

    result, error = call_tool([make_tool(g)], "g", {"items": deep})  # never raises
    assert result is None and error.startswith("bad arguments for g: ")


@dataclasses.dataclass
class Stop:
    city: str
    nights: Annotated[int, "Nights to stay"] = 1
    unit: Unit = Unit.CELSIUS


class Budget(TypedDict):
    limit: int
    currency: NotRequired[str]


class Span(NamedTuple):
    start: float
    end: float = 1.0


class Booking(pydantic.BaseModel):
    guest: str = pydantic.Field(description="Full name")
    arrive: datetime.date
    stops: list[Stop] = []


@dataclasses.dataclass
class Folder:
    name: str
    children: list[Folder] = dataclasses.field(default_factory=list)


def plan(stop: Stop, budget: Budget, span: Span, booking: Booking, route: list[Stop],
         root: Optional[Folder] = None) -> dict:
    """Plan a trip."""
    return dict(stop=stop, budget=budget, span=span, booking=booking, route=route, root=root)


def test_records_are_objects_the_model_writes_and_the_tool_gets_built():
    """openai-agents', LangChain's and chatlab's suites describe dataclasses, TypedDicts and
    pydantic models as objects; transformers' converter refuses them."""
    properties = make_tool(plan).parameters["properties"]
    stop_schema = {"type": "object", "properties": {
        "city": {"type": "string"},
        "nights": {"type": "integer", "description": "Nights to stay"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}
    assert properties["stop"] == stop_schema
    assert properties["budget"] == {"type": "object", "properties": {
        "limit": {"type": "integer"}, "currency": {"type": "string"}}, "required": ["limit"]}
    assert properties["span"]["required"] == ["start"]
    assert properties["booking"] == {"type": "object", "properties": {
        "guest": {"type": "string", "description": "Full name"},
        "arrive": {"type": "string", "format": "date"},
        "stops": {"type": "array", "items": stop_schema}}, "required": ["guest", "arrive"]}
    assert properties["route"] == {"type": "array", "items": stop_schema}
    # A record that holds itself is typed once, then an object.
    assert properties["root"]["properties"]["children"] == {
        "type": "array", "items": {"type": "object"}}
    assert properties["root"]["nullable"] is True

    result, error = call_tool([make_tool(plan)], "plan", {
        "stop": {"city": "Oslo", "nights": "2", "unit": "f"}, "budget": {"limit": "900"},
        "span": [0.5], "booking": {"guest": "Ada", "arrive": "2026-12-24"},
        "route": '[{"city": "Rome"}]', "root": {"name": "a", "children": [{"name": "b"}]}})
    assert error is None
    assert result == dict(
        stop=Stop("Oslo", 2, Unit.FAHRENHEIT), budget={"limit": 900}, span=Span(0.5, 1.0),
        booking=Booking(guest="Ada", arrive=datetime.date(2026, 12, 24)), route=[Stop("Rome")],
        root=Folder("a", [Folder("b")]))


@pytest.mark.parametrize("change, said", [
    ({"stop": {"city": "Oslo", "beds": 2}}, "'stop' has no field 'beds' (its fields: city, nights, unit)"),
    ({"stop": {"nights": 2}}, "'stop' is missing its field 'city'"),
    ({"stop": "Oslo"}, "'stop' must be an object with the fields city, nights, unit, got \"Oslo\""),
    ({"stop": {"city": "Oslo", "unit": "k"}}, "'stop.unit' must be one of \"c\", \"f\", got \"k\""),
    ({"booking": {"guest": "Ada", "arrive": "soon"}},
     "'booking' does not fit Booking: arrive: Input should be a valid date"),
])
def test_an_object_that_does_not_fit_its_record_is_refused_naming_the_field(change, said):
    arguments = {"stop": {"city": "Oslo"}, "budget": {"limit": 1}, "span": [0],
                 "booking": {"guest": "Ada", "arrive": "2026-12-24"}, "route": [], **change}
    result, error = call_tool([make_tool(plan)], "plan", arguments)
    assert result is None and error.startswith(f"bad arguments for plan: {said}")


def test_dates_uuids_paths_and_decimals_are_text_the_tool_gets_typed():
    def log(at: datetime.datetime, day: datetime.date, ref: uuid.UUID, file: pathlib.Path,
            amount: decimal.Decimal) -> tuple:
        """Log."""
        return at, day, ref, file, amount

    tool = make_tool(log)
    assert tool.parameters["properties"] == {
        "at": {"type": "string", "format": "date-time"}, "day": {"type": "string", "format": "date"},
        "ref": {"type": "string", "format": "uuid"}, "file": {"type": "string"},
        "amount": {"type": "number"}}
    ref = "12345678-1234-5678-1234-567812345678"
    assert call_tool([tool], "log", {"at": "2026-12-03T10:00:00Z", "day": "2026-12-03",
                                     "ref": ref, "file": "notes.txt", "amount": 2.10}) == (
        (datetime.datetime(2026, 12, 3, 10, tzinfo=datetime.timezone.utc),
         datetime.date(2026, 12, 3), uuid.UUID(ref), pathlib.Path("notes.txt"),
         decimal.Decimal("2.1")), None)
    bad = {"at": "now", "day": "2026-12-03", "ref": ref, "file": "x", "amount": 1}
    assert call_tool([tool], "log", bad)[1] == (
        "bad arguments for log: 'at' must be an ISO date-time, got \"now\"")
    assert call_tool([tool], "log", {**bad, "at": "2026-12-03", "amount": "lots"})[1] == (
        "bad arguments for log: 'amount' must be a Decimal, got \"lots\"")


def test_numpy_docstrings_describe_parameters():
    def scale(values: list[float], factor: float = 2.0) -> list[float]:
        """Scale numbers.

        Parameters
        ----------
        values : list of float
            The numbers,
            in order.
        factor : float, optional
            What to multiply by.

        Returns
        -------
        list of float
        """

    tool = make_tool(scale)
    assert tool.description == "Scale numbers."
    assert tool.parameters["properties"]["values"]["description"] == "The numbers, in order."
    assert tool.parameters["properties"]["factor"]["description"] == "What to multiply by."


def test_records_dates_and_numpy_values_a_tool_returns_reach_the_model_as_json():
    import numpy as np

    from mlx_notebook._turn_types import ToolCallRecord

    def read(result):
        return ToolCallRecord("call_1", "f", {}, result).message_content()

    assert read(Stop("Oslo")) == '{"city": "Oslo", "nights": 1, "unit": "c"}'
    assert read([Booking(guest="Ada", arrive=datetime.date(2026, 12, 24))]) == (
        '[{"guest": "Ada", "arrive": "2026-12-24", "stops": []}]')
    assert read({"mean": np.float32(1.5), "counts": np.arange(3)}) == (
        '{"mean": 1.5, "counts": [0, 1, 2]}')
    assert read(object).startswith("<class")  # no JSON form: its repr
    # A command's output is text to the model, not "b'...'"; bytes that are no UTF-8 stay a repr
    assert read(b"total 0\n") == "total 0\n"
    assert ToolCallRecord("c", "f", {}, b"total 0\n").read_result() == "total 0\n"
    assert read({"out": bytearray(b"ok")}) == '{"out": "ok"}'
    assert read({"out": bytearray(b"ok"), "raw": b"\xff"}) == (
        "{'out': bytearray(b'ok'), 'raw': b'\\xff'}")


def test_a_partials_setting_and_a_value_no_union_member_takes_are_refused():
    import functools

    def weather(city: str, units: str = "C", mode: Literal["fast", "exact"] | int = "fast"):
        """Weather."""
        return city, units, mode

    tool = make_tool(functools.partial(weather, units="F"), name="weather_f")
    assert call_tool([tool], "weather_f", {"city": "Oslo", "units": "K"}) == (
        None, "bad arguments for weather_f: unexpected argument 'units'")
    assert call_tool([tool], "weather_f", {"city": "Oslo", "mode": "slow"}) == (
        None, (
        "bad arguments for weather_f: 'mode' must be one of \"fast\", \"exact\" or an integer, "
        "got \"slow\""))
    assert call_tool([tool], "weather_f", {"city": "Oslo", "mode": "3"}) == (("Oslo", "F", 3), None)


@dataclasses.dataclass
class Quit:
    x: int

    def __post_init__(self):
        raise SystemExit(2)


@dataclasses.dataclass
class Chain:
    v: int = 0
    child: Optional[Chain] = None


@dataclasses.dataclass
class Scaled:
    a: int
    scale: dataclasses.InitVar[int]

    def __post_init__(self, scale):
        self.a *= scale


class LegacyBox(typing_extensions.TypedDict):  # what pydantic asks for before Python 3.12
    w: int


class Named(pydantic.BaseModel):
    user_name: str = pydantic.Field(alias="userName")


class Ids(pydantic.RootModel[list[int]]):
    pass


def odd_records(q: Quit | None = None, chain: Chain | None = None, scaled: Scaled | None = None,
                box: LegacyBox | None = None, named: Named | None = None, ids: Ids | None = None,
                pair: tuple[Stop, int] | None = None, amount: decimal.Decimal | None = None):
    """Odd records."""
    return dict(chain=chain, scaled=scaled, box=box, named=named, ids=ids, pair=pair)


def test_odd_records_are_described_built_or_refused_and_a_call_never_raises():
    tool = make_tool(odd_records)
    properties = tool.parameters["properties"]
    assert properties["scaled"]["properties"] == {"a": {"type": "integer"},
                                                  "scale": {"type": "integer"}}
    assert properties["box"]["properties"] == {"w": {"type": "integer"}}
    assert properties["named"]["properties"] == {"userName": {"type": "string"}}
    assert properties["ids"] == {"type": "array", "items": {"type": "integer"}, "nullable": True}

    def call(**arguments):
        return call_tool([tool], "odd_records", arguments)

    deep = {"v": 0}
    for level in range(1000):  # nested past what one resolution per level could read, then more
        deep = {"v": level, "child": deep}
        if level == 200:
            assert call(chain=deep)[0]["chain"].child.child.v == 198
    assert call(chain=deep) == (
        None, "bad arguments for odd_records: nested deeper than the tool's types can be read")
    result, error = call(scaled={"a": 2, "scale": 3}, box={"w": "4"}, named={"userName": "Ada"},
                         ids=[1, 2], pair=[{"city": "Oslo"}, 2])
    assert error is None
    assert result["scaled"] == Scaled(6, 1) and result["box"] == {"w": 4}
    assert result["named"].user_name == "Ada" and result["ids"].root == [1, 2]
    assert result["pair"] == (Stop("Oslo"), 2)
    assert call(q={"x": 1}) == (
        None, "bad arguments for odd_records: SystemExit: the tool called sys.exit(2)")
    assert call(amount="NaN")[1] == (
        "bad arguments for odd_records: 'amount' must be a Decimal, got \"NaN\"")


def test_a_pydantic_field_declares_limits_requirement_and_default():
    """openai-agents' test_function_with_field_* cases."""
    def pick(x: int = pydantic.Field(..., gt=10, le=100, description="How many"),
             y: Annotated[int, pydantic.Field(ge=0)] = 1, z: str = pydantic.Field(default="hi")):
        """Pick."""
        return x, y, z

    tool = make_tool(pick)
    assert tool.parameters == {"type": "object", "properties": {
        "x": {"type": "integer", "maximum": 100, "exclusiveMinimum": 10, "description": "How many"},
        "y": {"type": "integer", "minimum": 0}, "z": {"type": "string"}}, "required": ["x"]}
    assert call_tool([tool], "pick", {"x": "20"}) == ((20, 1, "hi"), None)
    assert call_tool([tool], "pick", {"x": 5}) == (
        None, "bad arguments for pick: 'x': Input should be greater than 10")
    assert call_tool([tool], "pick", {}) == (
        None, "bad arguments for pick: missing a required argument: 'x'")

    def page(size: Annotated[int, pydantic.Field(default=20, ge=1)]):
        """Page."""
        return size

    assert "required" not in make_tool(page).parameters  # the Field holds its default
    assert call_tool([make_tool(page)], "page", {}) == (20, None)


def test_numpy_sections_name_several_parameters_and_prose_headings_stay_description():
    def add(x: int, y: int, scale: int = 1) -> int:
        """Search
        ------
        Add the numbers.

        Parameters
        ----------
        x, y : int
            The numbers.

        Other Parameters
        ----------------
        scale : int
            Rarely used.
        """

    tool = make_tool(add)
    assert tool.description.startswith("Search\n------\nAdd the numbers.")
    assert [tool.parameters["properties"][n].get("description") for n in ("x", "y", "scale")] == [
        "The numbers.", "The numbers.", "Rarely used."]


def test_dates_as_keys_sets_and_numpy_dates_in_a_result_are_json():
    import numpy as np

    from mlx_notebook._turn_types import ToolCallRecord

    def read(result):
        return ToolCallRecord("call_1", "f", {}, result).message_content()

    assert read({datetime.date(2026, 12, 3): {"b", "a"}}) == '{"2026-12-03": ["a", "b"]}'
    assert read(np.datetime64("2026-12-03T10:00")) == '"2026-12-03T10:00"'
    points = np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")])
    assert read(points) == '[{"a": 1, "b": 2.0}]'

    class Proxy:
        def __getattr__(self, name):
            raise KeyError(name)

        def __repr__(self):
            return "Proxy()"

    assert read(Proxy()) == "Proxy()"


class Leg(typing_extensions.TypedDict):  # (pydantic asks for this one before 3.12)
    """One leg of a trip.

    Args:
        origin: Where it starts.
    """

    origin: str


@dataclasses.dataclass
class Seat:
    """A seat on a leg.

    Attributes:
        row: The row number.
    """

    row: int
    leg: Leg


class Ticket(pydantic.BaseModel):
    """A ticket."""

    seat: Seat


def test_a_records_docstring_describes_it_and_its_fields():
    """LangChain's test__convert_typed_dict_to_openai_function: a record's docstring and its
    Args describe it."""
    def book(ticket: Ticket, seat: Stop):
        """Book."""

    properties = make_tool(book).parameters["properties"]
    assert properties["ticket"] == {"type": "object", "description": "A ticket.", "properties": {
        "seat": {"type": "object", "description": "A seat on a leg.", "properties": {
            "row": {"type": "integer", "description": "The row number."},
            "leg": {"type": "object", "description": "One leg of a trip.", "properties": {
                "origin": {"type": "string", "description": "Where it starts."}},
                "required": ["origin"]}}, "required": ["row", "leg"]}},
        "required": ["seat"]}
    assert "description" not in properties["seat"]  # a dataclass's own signature is no docstring


@dataclasses.dataclass
class Registry:
    names: ClassVar = []  # a bare ClassVar: the class's, not a field
    size: int = 0


def test_third_review_a_redefined_record_a_bare_classvar_null_defaults_and_tuples():
    global Stop

    def go(stop: Stop, registry: Registry, legs: tuple[Stop, ...] = (),
           pair: tuple[Stop, int] | None = None, limit: int = pydantic.Field(None, gt=0),
           box: Annotated[Budget, pydantic.Field(description="A box")] | None = None):
        """Go."""
        return stop, registry, legs, pair, limit, box

    tool = make_tool(go)
    assert tool.parameters["properties"]["registry"]["properties"] == {"size": {"type": "integer"}}
    assert tool.parameters["properties"]["legs"]["items"]["required"] == ["city"]
    result, error = call_tool([tool], "go", {"stop": {"city": "Oslo"}, "registry": {},
                                             "legs": [{"city": "Rome"}], "limit": None,
                                             "box": {"limit": 5}})
    assert error is None
    assert result == (Stop("Oslo"), Registry(0), (Stop("Rome"),), None, None, {"limit": 5})
    assert call_tool([tool], "go", {"stop": {"city": "Oslo"}, "registry": {},
                                    "pair": [{"city": "Rome"}]})[1] == (
        "bad arguments for go: 'pair' must have 2 items, got 1")
    original = Stop
    try:  # the notebook re-runs the record's cell with another field: read again
        @dataclasses.dataclass
        class Stop:  # noqa: F811
            town: str

        assert call_tool([make_tool(go)], "go", {"stop": {"town": "Oslo"}, "registry": {}}
                         )[0][0] == Stop("Oslo")
    finally:
        Stop = original


def test_a_callable_objects_attributes_are_not_its_parameters_and_cycles_are_shown():
    from mlx_notebook._turn_types import ToolCallRecord

    class Client:
        """A client.

        Attributes
        ----------
        url : str
            The base URL it was built with.
        """

        def __call__(self, url: str) -> str:
            return url

    assert make_tool(Client(), name="fetch").parameters["properties"] == {"url": {"type": "string"}}
    loop: list = [{datetime.date(2026, 12, 3): 1}]
    loop += [loop, loop]
    assert ToolCallRecord("c", "f", {}, loop).message_content().startswith("[{datetime.date(")


@dataclasses.dataclass
class Guest:
    age: int


def _booking_tool(ran: list):
    def book(nights: int, price: float, guest: str, vip: bool, rooms: list[int],
             by_floor: dict[int, str], who: Guest | None = None, limit: int = 10) -> str:
        """Book."""
        ran.append((nights, price, guest, vip, rooms, by_floor, who, limit))
        return "booked"

    return make_tool(book)


GOOD = {"nights": 2, "price": 9.5, "guest": "Ada", "vip": False, "rooms": [1], "by_floor": {"1": "a"}}


@pytest.mark.parametrize("change, said", [
    ({"nights": "two"}, "'nights' must be an integer, got \"two\""),
    ({"nights": 2.5}, "'nights' must be an integer, got 2.5"),
    ({"nights": True}, "'nights' must be an integer, got true"),
    ({"nights": None}, "'nights' must be an integer, got null"),
    ({"price": "cheap"}, "'price' must be a number, got \"cheap\""),
    ({"price": "1e999"}, "'price' must be a finite number, got inf"),
    ({"guest": 5}, "'guest' must be a string, got 5"),
    ({"vip": "yes"}, "'vip' must be true or false, got \"yes\""),
    ({"rooms": 5}, "'rooms' must be a list, got 5"),
    ({"rooms": [1, "a"]}, "'rooms[1]' must be an integer, got \"a\""),
    ({"by_floor": [1]}, "'by_floor' must be an object, got [1]"),
    ({"by_floor": {"first": "a"}}, "the keys of 'by_floor' must be an integer, got \"first\""),
    ({"who": {"age": "old"}}, "'who.age' must be an integer, got \"old\""),
])
def test_an_argument_of_another_json_kind_is_refused_before_the_tool_runs(change, said):
    ran: list = []
    assert call_tool([_booking_tool(ran)], "book", {**GOOD, **change}) == (
        None, f"bad arguments for book: {said}")
    assert ran == []


def test_arguments_the_hints_can_read_are_converted_and_null_means_the_default():
    ran: list = []
    tool = _booking_tool(ran)
    assert call_tool([tool], "book", {**GOOD, "nights": "3", "price": 9, "vip": 1,
                                      "limit": None, "who": None}) == ("booked", None)
    assert ran == [(3, 9, "Ada", True, [1], {1: "a"}, None, 10)]


def test_a_tool_that_changes_its_arguments_does_not_change_what_the_model_wrote():
    def dedupe(items: list, options: dict) -> int:
        """Dedupe."""
        items[:] = sorted(set(items))
        options["seen"] = len(items)
        return len(items)

    written = {"items": [3, 1, 3], "options": {}}
    assert call_tool([make_tool(dedupe)], "dedupe", written) == (2, None)
    assert written == {"items": [3, 1, 3], "options": {}}


def test_tuples_of_any_length_and_sets_are_arrays_and_arrive_as_their_type():
    def sizes(values: tuple[int, ...], tags: set[str], seen: frozenset[int] = frozenset()):
        """Sizes."""
        return values, tags, seen

    tool = make_tool(sizes)
    assert tool.parameters["properties"] == {
        "values": {"type": "array", "items": {"type": "integer"}},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "seen": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    }
    assert call_tool([tool], "sizes", {"values": [1, 2], "tags": ["a", "a"], "seen": [3]}) == (
        ((1, 2), {"a"}, frozenset({3})), None)


def test_call_tool_answers_in_a_sentence_for_arguments_that_are_no_object_and_odd_messages():
    class Odd(Exception):
        def __str__(self):
            raise GeneratorExit

    def f(x: int = 0):
        """F."""
        raise Odd

    tool = make_tool(f)
    assert call_tool([tool], "f", None) == (None, "bad arguments for f: they must be an object, got null")
    assert call_tool([tool], "f", {}) == (None, "Odd: (its message could not be read: Odd.__str__ failed)")


# -- hints typed code uses, as pydantic and OpenAI's pydantic_function_tool read them ---------

UserId = NewType("UserId", int)


def test_newtypes_and_abstract_containers_are_the_json_they_stand_for():
    def book(user: UserId, guests: Sequence[UserId], prices: collections.abc.Iterable[float],
             rooms: Mapping[str, int], note: Optional[UserId] = None) -> str:
        """Book rooms."""
        return repr((user, guests, prices, rooms, note))

    made = make_tool(book)
    assert made.parameters["properties"] == {
        "user": {"type": "integer"},
        "guests": {"type": "array", "items": {"type": "integer"}},
        "prices": {"type": "array", "items": {"type": "number"}},
        "rooms": {"type": "object", "additionalProperties": {"type": "integer"}},
        "note": {"type": "integer", "nullable": True},
    }
    # What the model wrote arrives as the hints ask: lists for the abstract containers.
    assert call_tool([made], "book", {"user": "7", "guests": [1, 2.0], "prices": "[1.5, 2]",
                                      "rooms": {"a": "3"}, "note": "4"}) == (
        "(7, [1, 2], [1.5, 2], {'a': 3}, 4)", None)
    assert call_tool([made], "book", {"user": 1, "guests": "x", "prices": [], "rooms": {}}) == (
        None, "bad arguments for book: 'guests' must be a list, got \"x\"")


def test_pydantic_constrained_types_show_their_limits_and_are_checked():
    def pick(n: pydantic.conint(gt=0, le=10), code: pydantic.constr(min_length=2),
             k: pydantic.PositiveInt = 1, m: Annotated[int, pydantic.Field(description="em"),
                                                      annotated_types.Gt(3)] = 5) -> str:
        """Pick."""
        return repr((n, code, k, m))

    made = make_tool(pick)
    assert made.parameters == {"type": "object", "properties": {
        "n": {"type": "integer", "maximum": 10, "exclusiveMinimum": 0},
        "code": {"type": "string", "minLength": 2},
        "k": {"type": "integer", "exclusiveMinimum": 0},
        "m": {"type": "integer", "exclusiveMinimum": 3, "description": "em"}},
        "required": ["n", "code"]}
    assert call_tool([made], "pick", {"n": "3", "code": "xy"}) == ("(3, 'xy', 1, 5)", None)
    assert call_tool([made], "pick", {"n": 0, "code": "xy"}) == (
        None, "bad arguments for pick: 'n': Input should be greater than 0")
    assert call_tool([made], "pick", {"n": 3, "code": "xy", "k": -5})[1] == (
        "bad arguments for pick: 'k': Input should be greater than 0")
    assert call_tool([made], "pick", {"code": "xy"})[1] == (
        "bad arguments for pick: missing a required argument: 'n'")


if typing.TYPE_CHECKING:
    import pandas as pd  # noqa: F401 -- named only in a return hint


def test_a_return_hint_that_cannot_be_resolved_does_not_refuse_the_tool():
    def load(path: str, rows: int = 2) -> pd.DataFrame:
        """Load a table."""
        return f"{path}:{rows!r}"

    made = make_tool(load)
    assert made.parameters["properties"] == {"path": {"type": "string"}, "rows": {"type": "integer"}}
    assert call_tool([made], "load", {"path": "t.csv", "rows": "3"}) == ("t.csv:3", None)

    def broken(path: Missing) -> str:  # noqa: F821 -- a parameter's hint still says so
        """Broken."""

    with pytest.raises(ToolError, match="cannot be resolved"):
        make_tool(broken)


@functools.singledispatch
def area(shape: str | int, scale: float = 1.0) -> str:
    """The area of a shape, by name or by side."""
    return f"named {shape} x{scale}"


@area.register
def _(shape: int, scale: float = 1.0) -> str:
    return f"side {shape} x{scale}"


def test_a_singledispatch_tool_gets_its_first_argument_by_position():
    made = make_tool(area)
    assert made.parameters["required"] == ["shape"]
    assert call_tool([made], "area", {"shape": "square", "scale": 2}) == ("named square x2", None)
    assert call_tool([made], "area", {"scale": 2, "shape": 3}) == ("side 3 x2", None)


def test_an_async_generator_tools_items_are_read_and_an_endless_one_is_cut():
    async def countdown(start: int):
        """Count down."""
        for i in range(start, 0, -1):
            await asyncio.sleep(0)
            yield i

    async def forever():
        """Never ends."""
        i = 0
        while True:
            i += 1
            yield i

    assert call_tool([make_tool(countdown)], "countdown", {"start": 3}) == ([3, 2, 1], None)
    items, error = call_tool([make_tool(forever)], "forever", {})
    assert error is None and items[:2] == [1, 2] and len(items) == 1001
    assert items[-1] == "[forever yielded more than 1000 items; the rest were not read]"


def test_docstring_sections_by_any_of_their_names_and_fields_leave_the_description():
    def total(a: int, b: int = 0, **extra) -> int:
        """Add numbers.

        Arguments:
            a: the first
                number
            **extra: ignored

        Keyword Args:
            b (int): the second

        Example:
            >>> total(1, 2)
        """

    def sphinx(a: int) -> int:
        """Double a number.

        :returns: twice a
        :raises ValueError: never
        """

    def inline(a: int) -> int:
        """Halve a number.
        Returns: half of a.

        Parameters:
            a: the number
        """

    made = make_tool(total)
    assert made.description == "Add numbers."
    assert made.parameters["properties"] == {
        "a": {"type": "integer", "description": "the first number"},
        "b": {"type": "integer", "description": "the second"}}
    assert make_tool(sphinx).description == "Double a number."
    made = make_tool(inline)
    assert (made.description, made.parameters["properties"]["a"]["description"]) == (
        "Halve a number.", "the number")


def test_an_integer_past_pythons_text_limit_reaches_the_model_whole():
    made = make_tool(lambda n: math.factorial(n), name="factorial")
    record = ToolCallRecord("c1", "factorial", {"n": 2000}, result=call_tool([made], "factorial", {"n": 2000})[0])
    digits = record.message_content()
    assert len(digits) == 5736 and digits.startswith("33162750924506332411")
