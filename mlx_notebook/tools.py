"""Plain Python functions as tools the model can call: schemas, the registry and one call.

The JSON schema comes from the signature (required = no default), the type hints and the
docstring (the prose before its first section = description; Google ``Args:`` (and
Napoleon's other names for it), Sphinx ``:param x:`` or NumPy ``Parameters`` sections =
parameter descriptions). Type hints go through transformers'
converter, the one chat templates are tested against; its ``get_json_schema`` itself is not
used because it rejects functions without a docstring or a hint on every parameter, and a
notebook user's quick function should still work. ``Annotated[int, "text"]`` describes a
parameter too. What that converter has no form for is written here (``_schema``): records
(dataclasses, TypedDicts, NamedTuples, pydantic models) as objects of their fields, described
by their own docstrings (``Args:`` or ``Attributes:`` for the fields), dates,
times and UUIDs as formatted strings, paths as strings, ``Decimal`` as a number. A parameter
declared with pydantic's ``Field(...)`` (as its default or in ``Annotated``) or its constraints
(``conint(gt=10)``, ``PositiveInt``) shows its limits (``gt=10`` is ``exclusiveMinimum``) and
pydantic checks the value the model sends.

A call gets its arguments as the hints ask for them (``_coerced``): an Enum's member for the
value the model wrote, ``"3"`` as 3 for an ``int``, a list sent as JSON text decoded, a record
built from its object, a ``datetime`` from its ISO text; a value outside an Enum or a Literal,
or an object that does not fit its record, is refused in a sentence the model reads, before
the call.
"""

from __future__ import annotations

import asyncio
import collections.abc
import copy
import dataclasses
import datetime
import decimal
import enum
import functools
import inspect
import json
import math
import pathlib
import re
import sys
import threading
import types
import typing
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from IPython.core.error import StdinNotImplementedError

try:  # (knows typing_extensions' TypedDict too, which pydantic asks for before Python 3.12)
    from typing_extensions import is_typeddict
except ImportError:  # pragma: no cover -- typing_extensions comes with IPython
    from typing import is_typeddict

from ._upstream import UnsupportedHint, google_docstring, json_schema_of_hint

__all__ = ["Tool", "ToolError", "tool", "make_tool", "registered_tools", "unregister_tools",
           "resolve_tools", "call_tool", "ask_before_running", "answer_schema", "built_answer"]

_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[^:\s]+\s+)?(\w+)\s*:\s*(.+?)\s*$", re.MULTILINE)


class ToolError(Exception):
    """A function cannot be offered as a tool, or a tools name does not resolve; one sentence."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A Python function with the schema the model sees."""

    name: str
    description: str
    parameters: dict
    """JSON schema of the arguments object."""
    function: Callable[..., Any]

    def schema(self) -> dict:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


_registry: dict[str, Tool] = {}


def make_tool(function: Callable[..., Any], *, name: str | None = None,
              description: str | None = None) -> Tool:
    """Describe ``function`` as a tool; raise ToolError when a hint has no JSON form."""
    for argument, value in (("name", name), ("description", description)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"tool({argument}=...) must be a string, not {type(value).__name__}.")
    if not callable(function):
        raise ToolError(f"{name or function!r} is not a function, so it cannot be a tool.")
    if inspect.isclass(function):  # calling it would build an object, not answer the model
        raise ToolError(f"'{name or function.__name__}' is a class, not a function, so it "
                        "cannot be a tool.")
    given = name
    name = name or getattr(function, "__name__", None)
    if not name or not (name.isidentifier() or given):
        raise ToolError(f"{function!r} has no usable name; pass tool(name='...').")
    if not _NAME.fullmatch(name):
        how = "" if given else ", " + _PASS_NAME
        raise ToolError(f"'{name}' is not a tool name model APIs accept (letters, digits, _ and "
                        f"-, at most 64){how}.")
    _refuse_unbound_method(function, name)
    _fields_read.clear()
    summary, param_docs = _read_docstring(_docstring(function))
    return Tool(
        name=name,
        description=description or summary or "",
        parameters=_parameters_schema(function, name, param_docs),
        function=function,
    )


def _read_docstring(doc: str, attributes: bool = False) -> tuple[str | None, dict[str, str]]:
    """A docstring's summary (the prose before its first section) and its parameters'
    descriptions, in any of the three styles (a record's ``Attributes`` too)."""
    if not doc:
        return None, {}
    listed = _GOOGLE_PARAMETERS | ({"Attributes"} if attributes else set())
    headers = list(_GOOGLE_SECTION.finditer(doc))
    google_args: dict[str, str] = {}
    for i, header in enumerate(headers):
        if header.group(1) in listed:  # each section's entries, read by transformers' parser
            end = headers[i + 1].start() if i + 1 < len(headers) else len(doc)
            entries = _STARRED.sub(r"\1", doc[header.end():end])
            google_args.update(google_docstring("\nArgs:" + entries)[1] or {})
    param_docs = {**_numpy_params(doc, attributes), **dict(_SPHINX_PARAM.findall(doc)),
                  **google_args}
    first = [found.start() for pattern in (_GOOGLE_SECTION, _GOOGLE_INLINE_SECTION,
                                           _SPHINX_FIELD, _NUMPY_SECTION)
             if (found := pattern.search(doc))]
    return doc[:min(first, default=len(doc))].strip() or None, param_docs


_GOOGLE_PARAMETERS = {"Args", "Arguments", "Parameters", "Params", "Keyword Args",
                      "Keyword Arguments", "Other Parameters"}
_GOOGLE_SECTION = re.compile(
    r"^[ \t]*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Attributes|Returns|Return|Yields|Yield|Raises|Examples|Example|Notes|Note|Warnings|"
    r"Warning|See Also|References|Todo|Methods):[ \t]*$", re.MULTILINE)
"""A Google docstring's section header, alone on its line (Napoleon's names)."""
_GOOGLE_INLINE_SECTION = re.compile(r"^[ \t]*(Args|Arguments|Returns|Yields|Raises):", re.MULTILINE)
"""``Returns: the sum.`` on one line also ends the summary."""
_SPHINX_FIELD = re.compile(
    r"^[ \t]*:(param|parameter|arg|argument|key|keyword|type|raises?|except|exception|"
    r"returns?|rtype|yields?|ytype|var|ivar|cvar|vartype|meta)\b", re.MULTILINE)
_STARRED = re.compile(r"^([ \t]*)\*{1,2}(?=\w)", re.MULTILINE)
"""``**options: ...`` in an ``Args`` section describes ``options``."""


_NUMPY_SECTION = re.compile(
    r"^[ \t]*(Parameters|Other Parameters|Returns|Yields|Receives|Raises|Warns|Warnings|"
    r"See Also|Notes|References|Examples|Attributes|Methods)[ \t]*\n[ \t]*-{3,}[ \t]*$",
    re.MULTILINE)
"""A NumPy docstring's section header (``Parameters`` over a dashed line)."""
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")


def _numpy_params(doc: str, attributes: bool = False) -> dict[str, str]:
    """``{parameter: description}`` from a NumPy docstring's ``Parameters`` sections (and its
    ``Attributes``, for a record's fields)."""
    headers = list(_NUMPY_SECTION.finditer(doc))
    described: dict[str, list[str]] = {}
    sections = ("Parameters", "Other Parameters") + (("Attributes",) if attributes else ())
    for i, header in enumerate(headers):
        if header.group(1) not in sections:
            continue
        end = headers[i + 1].start() if i + 1 < len(headers) else len(doc)
        current: list[str] = []
        for line in doc[header.end():end].splitlines():
            if line.strip() and not line[:1].isspace() and (entry := _NUMPY_ENTRY.match(line)):
                current = [name.strip().lstrip("*") for name in entry.group(1).split(",")]
                for name in current:
                    described[name] = []
            elif line.strip():
                for name in current:  # ("x, y : int" describes both)
                    described[name].append(line.strip())
    return {name: " ".join(lines) for name, lines in described.items() if lines}


_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""OpenAI's rule for a function name (other servers and templates assume it too)."""
_PASS_NAME = "so pass tool(name='...')"


def _refuse_unbound_method(function: Callable[..., Any], name: str) -> None:
    """A function defined in a class body takes its instance first: the model cannot send
    one (transformers' converter leaves ``self`` out, but then nothing could call it)."""
    if not inspect.isfunction(function):
        return
    owner, _, _ = function.__qualname__.rpartition(".")
    first = next(iter(inspect.signature(function).parameters), None)
    if owner and not owner.endswith("<locals>") and first in ("self", "cls"):
        raise ToolError(f"'{function.__qualname__}' is a method: make the tool from an instance's "
                        f"method (tool(obj.{function.__name__})), which the model can call, "
                        f"to offer '{name}'.")


def _unwrapped(function: Callable[..., Any]) -> tuple[Callable[..., Any], set[str]]:
    """The callable a partial wraps (a common way to bind a tool's settings), and the keywords
    it binds: settings the model must not change."""
    bound: set[str] = set()
    while isinstance(function, functools.partial):
        bound |= set(function.keywords)
        function = function.func
    return function, bound


def _described(function: Callable[..., Any]) -> Callable[..., Any]:
    """Where a tool's hints live: a callable object's ``__call__``, else the function (under
    any partial)."""
    inner, _ = _unwrapped(function)
    return type(inner).__call__ if not inspect.isroutine(inner) and callable(inner) else inner


def _docstring(function: Callable[..., Any]) -> str:
    """A tool's docstring: its function's, or a callable object's ``__call__``'s and else
    its class's."""
    inner, _ = _unwrapped(function)
    call = _described(inner)
    own = call.__doc__ if call is not inner else None
    return inspect.cleandoc(own) if own else inspect.getdoc(inner) or ""


def _parameters_schema(function: Callable[..., Any], name: str, param_docs: dict) -> dict:
    try:
        signature = inspect.signature(function)  # a partial's bound arguments are left out
    except (ValueError, TypeError):  # a builtin written in C, a __signature__ that is none
        raise ToolError(f"Python cannot read the parameters of {function!r}; wrap it in a "
                        f"def with typed parameters to make tool '{name}'.") from None
    hints = _hints(function, name)
    try:
        annotated = _type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 -- the plain hints above read, or said why not
        annotated = {}
    properties: dict[str, dict] = {}
    required: list[str] = []
    _, bound = _unwrapped(function)
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) or parameter.name in bound:
            continue
        schema: dict[str, Any] = {}
        if parameter.name in hints:
            try:
                schema = _schema(hints[parameter.name])
            except UnsupportedHint:
                raise ToolError(
                    f"Parameter '{parameter.name}' of tool '{name}' has type "
                    f"{_hint_name(_culprit(hints[parameter.name]))}, which has no JSON form; use "
                    "str, int, float, bool, list, dict, Literal, an Enum, a dataclass, a "
                    "TypedDict or a pydantic model."
                ) from None
        field = _pydantic_field(parameter.default, annotated.get(parameter.name))
        if field is not None:  # pydantic's Field(...): its limits, its description
            schema.update(_limits(hints.get(parameter.name, Any), field))
        if parameter.name in param_docs:
            schema["description"] = param_docs[parameter.name]
        elif described := _annotated_description(annotated.get(parameter.name)):
            schema["description"] = described
        elif field is not None and field.description:
            schema["description"] = field.description
        properties[parameter.name] = schema
        # A Field(...) gives the default (as the parameter's default or in Annotated).
        holds_default = field is not None and (
            _is_field_info(parameter.default) or parameter.default is parameter.empty)
        if field.is_required() if holds_default else parameter.default is parameter.empty:
            required.append(parameter.name)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def _hints(function: Callable[..., Any], name: str) -> dict[str, Any]:
    """A tool's type hints, resolved; {} when nothing Python can read hints from."""
    try:
        return _type_hints(function)
    except NameError as exc:  # a string hint naming something out of the function's globals
        raise ToolError(
            f"The type hints of tool '{name}' cannot be resolved ({exc}); define the types "
            "at the notebook's top level."
        ) from None
    except TypeError:  # nothing Python can read hints from: parameters are described untyped
        return {}
    except Exception as exc:  # noqa: BLE001 -- a string hint that is not Python, a bad attribute
        raise ToolError(f"The type hints of tool '{name}' cannot be read ({type(exc).__name__}: "
                        f"{exc}).") from None


def _type_hints(function: Callable[..., Any], include_extras: bool = False) -> dict[str, Any]:
    """``typing.get_type_hints`` of a tool's parameters. A return hint that cannot be resolved
    is left out: it plays no part in the call (``-> pd.DataFrame`` with pandas imported under
    ``TYPE_CHECKING``, where ``from __future__ import annotations`` keeps it a string)."""
    target = _described(function)
    try:
        return typing.get_type_hints(target, include_extras=include_extras)
    except NameError:
        annotations = getattr(target, "__annotations__", None)
        if not isinstance(annotations, dict) or "return" not in annotations:
            raise
    parameters = types.SimpleNamespace(
        __annotations__={k: v for k, v in annotations.items() if k != "return"})
    return typing.get_type_hints(parameters, globalns=getattr(inspect.unwrap(target), "__globals__", {}),
                                 include_extras=include_extras)


def _annotated_description(hint: Any) -> str | None:
    """``Annotated[int, "the count"]``'s text (or a pydantic ``Field``'s description)."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    for extra in hint.__metadata__:
        text = extra if isinstance(extra, str) else getattr(extra, "description", None)
        if isinstance(text, str) and text.strip():
            return text.strip()
    return None


def _pydantic_field(default: Any, annotated: Any) -> Any:
    """pydantic's ``FieldInfo`` for a parameter declared with its ``Field(...)`` (as the
    default, or in the ``Annotated`` hint) or its constraints (``conint(gt=0)``,
    ``PositiveInt``, ``Annotated[str, StringConstraints(...)]``, ``Annotated[int, Gt(0)]``),
    all of them merged as pydantic merges a model field's; None for any other parameter."""
    extras = annotated.__metadata__ if typing.get_origin(annotated) is typing.Annotated else ()
    if not _is_field_info(default) and not any(map(_is_pydantic_extra, extras)):
        return None
    from pydantic.fields import FieldInfo  # (a tool declared with pydantic's: it is installed)

    try:
        if _is_field_info(default):
            return FieldInfo.from_annotated_attribute(annotated or Any, default)
        return FieldInfo.from_annotation(annotated)
    except Exception:  # noqa: BLE001 -- a hint pydantic cannot read: the Field as written
        return default if _is_field_info(default) else next(
            (extra for extra in extras if _is_field_info(extra)), None)


def _is_pydantic_extra(extra: Any) -> bool:
    """An ``Annotated`` extra that pydantic checks: its ``Field``, its ``StringConstraints``
    or validators, or an ``annotated_types`` limit (``Gt(0)``, ``Interval(le=10)``)."""
    module = type(extra).__module__
    return _is_field_info(extra) or module.startswith("annotated_types") or (
        module.startswith("pydantic") and not module.startswith("pydantic.v1"))


def _is_field_info(value: Any) -> bool:
    """pydantic v2's ``FieldInfo`` (v1's, under ``pydantic.v1``, has none of its methods)."""
    kind = type(value)
    return (kind.__name__ == "FieldInfo" and kind.__module__.startswith("pydantic")
            and not kind.__module__.startswith("pydantic.v1") and hasattr(value, "is_required"))


_LIMITS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
           "minLength", "maxLength", "pattern", "minItems", "maxItems")


def _limits(hint: Any, field: Any) -> dict:
    """The JSON-schema limits a pydantic ``Field`` puts on a parameter (``gt=10`` is
    ``exclusiveMinimum: 10``), as pydantic writes them."""
    import pydantic  # (only where a tool uses pydantic's Field: pydantic is installed)

    try:
        written = pydantic.TypeAdapter(typing.Annotated[hint, field]).json_schema()
    except Exception:  # noqa: BLE001 -- a hint pydantic cannot write: no limits to show
        return {}
    return {key: written[key] for key in _LIMITS if key in written}


def _culprit(hint: Any) -> Any:
    """The part of ``hint`` with no JSON form (``Point`` in ``list[Point]``, or in a record's
    field)."""
    try:
        fields = _record_fields(hint) if isinstance(hint, type) else None
    except UnsupportedHint:  # its own field types cannot be read
        return hint
    parts = [field.hint for field in fields] if fields else typing.get_args(hint)
    for arg in parts:
        if not (isinstance(arg, type) or typing.get_origin(arg)) or arg is type(None):
            continue  # a Literal's value, None
        try:
            _schema(arg)
        except UnsupportedHint:
            return _culprit(arg)
        except RecursionError:
            return arg
    return hint


@dataclass(frozen=True, slots=True)
class _Field:
    """One field of a record the model writes as an object."""

    name: str
    hint: Any
    required: bool
    description: str | None = None


_fields_read: dict[type, tuple[_Field, ...] | None] = {}
"""Record fields read during one ``make_tool`` or ``call_tool`` (an argument may nest a record
hundreds of levels); emptied at the start of each, so a class redefined or rebuilt in the
notebook is read again."""


def _record_fields(hint: type) -> tuple[_Field, ...] | None:
    """The fields of a record type (a dataclass, TypedDict, NamedTuple or pydantic model), or
    None for any other type (a class that only looks like one included)."""
    try:
        return _fields_read[hint]
    except KeyError:
        pass
    except TypeError:  # a class whose metaclass makes it unhashable: read it every time
        return _read_fields(hint)
    fields = _fields_read[hint] = _read_fields(hint)
    return fields


def _read_fields(hint: type) -> tuple[_Field, ...] | None:
    try:
        return _fields_of(hint)
    except (AttributeError, TypeError):  # a look-alike: "_fields" or "model_fields" of its own
        return None


def _fields_of(hint: type) -> tuple[_Field, ...] | None:
    if dataclasses.is_dataclass(hint):
        hints, extras = _field_hints(hint)
        missing, fields = dataclasses.MISSING, []
        for f in hint.__dataclass_fields__.values():  # InitVars too: __init__ takes them
            field_hint = hints.get(f.name, Any)
            if not f.init or typing.ClassVar in (field_hint, typing.get_origin(field_hint)):
                continue
            if isinstance(field_hint, dataclasses.InitVar):
                field_hint = field_hint.type
            fields.append(_Field(
                f.name, field_hint, f.default is missing and f.default_factory is missing,
                f.metadata.get("description") or _annotated_description(extras.get(f.name))))
        return tuple(fields)
    if is_typeddict(hint):
        hints, extras = _field_hints(hint)
        return tuple(_Field(name, _unrequired(field_hint), _required(hint, name, extras.get(name)),
                            _annotated_description(extras.get(name)))
                     for name, field_hint in hints.items())
    if issubclass(hint, tuple) and hasattr(hint, "_fields"):  # a NamedTuple
        hints, extras = _field_hints(hint)
        defaults = getattr(hint, "_field_defaults", {})
        return tuple(_Field(name, hints.get(name, Any), name not in defaults,
                            _annotated_description(extras.get(name))) for name in hint._fields)
    model_fields = getattr(hint, "model_fields", None)
    if (isinstance(model_fields, dict) and hasattr(hint, "model_validate")
            and not _is_root_model(hint)):  # pydantic v2: fields by the names it validates
        return tuple(_Field(next((a for a in (info.validation_alias, info.alias)
                                  if isinstance(a, str)), name),
                            info.annotation, info.is_required(), info.description)
                     for name, info in model_fields.items())
    return None


def _record_docs(record: type) -> tuple[str | None, dict[str, str]]:
    """A record's own docstring: its summary and its fields' descriptions (Google ``Args:`` or
    ``Attributes:``, Sphinx, NumPy). Not a docstring Python wrote (a dataclass without one
    gets its signature) nor one inherited from pydantic's or typing's base."""
    doc = record.__dict__.get("__doc__")
    if not isinstance(doc, str) or _GENERATED_DOC.fullmatch(doc) and doc.startswith(
            f"{record.__name__}("):
        return None, {}
    try:
        return _read_docstring(inspect.cleandoc(doc), attributes=True)
    except Exception:  # noqa: BLE001 -- a docstring is prose: one that does not parse says nothing
        return None, {}


_GENERATED_DOC = re.compile(r"\w+\(.*\)", re.DOTALL)
"""What a dataclass or namedtuple without a docstring gets: its signature, ``Point(x, y)``."""


def _is_root_model(hint: Any) -> bool:
    """A pydantic ``RootModel``: one value of its ``root`` type, not an object of fields."""
    return isinstance(hint, type) and bool(getattr(hint, "__pydantic_root_model__", False))


def _field_hints(record: type) -> tuple[dict, dict]:
    """A record's field types, plain and with their ``Annotated`` extras."""
    try:
        return (typing.get_type_hints(record),
                typing.get_type_hints(record, include_extras=True))
    except RecursionError:
        raise
    except Exception as exc:  # noqa: BLE001 -- a hint naming what is not defined, or not Python
        raise UnsupportedHint(
            f"the field types of {record.__name__} cannot be read ({exc})") from None


def _unrequired(hint: Any) -> Any:
    """A TypedDict field's type without ``Required[...]``/``NotRequired[...]``."""
    wrappers = tuple(getattr(typing, n) for n in ("Required", "NotRequired") if hasattr(typing, n))
    return typing.get_args(hint)[0] if typing.get_origin(hint) in wrappers else hint


def _required(record: type, name: str, hint: Any) -> bool:
    """Whether a TypedDict's field is required: its ``Required``/``NotRequired`` wrapper
    decides, read from the resolved hint too (under ``from __future__ import annotations``
    the class could not see it and counts every field of a total TypedDict as required)."""
    origin = typing.get_origin(hint)
    if origin is getattr(typing, "NotRequired", None):
        return False
    return origin is getattr(typing, "Required", None) or name in record.__required_keys__


_STRING_FORMATS = ((datetime.datetime, "date-time"), (datetime.date, "date"),
                   (datetime.time, "time"), (uuid.UUID, "uuid"))
"""Types the model writes as text (``datetime`` before ``date``: it is one)."""


_CONCRETE = {collections.abc.Sequence: list, collections.abc.MutableSequence: list,
             collections.abc.Collection: list, collections.abc.Iterable: list,
             collections.abc.Mapping: dict, collections.abc.MutableMapping: dict}
"""Abstract containers a typed tool may ask for, and what the model's JSON is passed as."""


def _plain(hint: Any) -> Any:
    """``hint`` as the JSON it takes: a ``NewType`` as the type under it, ``Sequence[float]``
    (typing's or collections.abc's) as ``list[float]``, ``Mapping[str, int]`` as
    ``dict[str, int]``."""
    while isinstance(hint, typing.NewType):
        hint = hint.__supertype__
    origin = typing.get_origin(hint)
    if (concrete := _CONCRETE.get(origin or hint)) is None:
        return hint
    args = typing.get_args(hint)
    return concrete[args] if args else concrete


def _schema(hint: Any, enclosing: tuple[type, ...] = ()) -> dict:
    """The JSON schema of a parameter's hint: records as objects of their fields, formatted
    strings for dates and UUIDs, containers of these item by item; every other hint as
    transformers' converter writes it. ``enclosing``: the records being described (a record
    that contains itself is an untyped object the second time)."""
    hint = _plain(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return _schema(args[0], enclosing)
    if isinstance(hint, (typing.ForwardRef, str)):
        return {}  # a recursive alias's name (JSON = dict[str, "JSON"] | ...): any value
    if (value := _alias_value(hint)) is not None:  # type JSON = dict[str, JSON] | ...
        return {} if hint in enclosing else _schema(value, (*enclosing, hint))
    if not _ours(hint):
        return json_schema_of_hint(hint)
    if isinstance(hint, type):
        if hint in enclosing:
            return {"type": "object"}
        if _is_root_model(hint):
            return _schema(hint.model_fields["root"].annotation, (*enclosing, hint))
        if (fields := _record_fields(hint)) is not None:
            summary, field_docs = _record_docs(hint)
            properties = {}
            for field in fields:
                properties[field.name] = _schema(field.hint, (*enclosing, hint))
                if described := field.description or field_docs.get(field.name):
                    properties[field.name]["description"] = described
            out = {"type": "object", "properties": properties}
            if summary:
                out["description"] = summary
            if required := [field.name for field in fields if field.required]:
                out["required"] = required
            return out
        for kind, form in _STRING_FORMATS:
            if issubclass(hint, kind):
                return {"type": "string", "format": form}
        return {"type": "number" if issubclass(hint, decimal.Decimal) else "string"}
    if origin is typing.Union or isinstance(hint, types.UnionType):
        options = [_schema(a, enclosing) for a in args if a is not type(None)]
        if len(options) == 1:
            out = dict(options[0])
        elif all(o.keys() == {"type"} and isinstance(o["type"], str) for o in options):
            kinds = sorted({o["type"] for o in options})
            out = {"type": kinds[0] if len(kinds) == 1 else kinds}
        else:
            out = {"anyOf": options}
        if type(None) in args:
            out["nullable"] = True
        return out
    if origin is list:
        return {"type": "array", "items": _schema(args[0], enclosing)}
    if origin is tuple and len(args) == 2 and args[1] is ...:
        return {"type": "array", "items": _schema(args[0], enclosing)}
    if origin in (set, frozenset) and args:
        return {"type": "array", "items": _schema(args[0], enclosing), "uniqueItems": True}
    if origin is tuple and ... not in args:
        return {"type": "array", "prefixItems": [_schema(a, enclosing) for a in args]}
    if origin is dict and len(args) == 2:
        return {"type": "object", "additionalProperties": _schema(args[1], enclosing)}
    return json_schema_of_hint(hint)  # says what it cannot write


def _ours(hint: Any) -> bool:
    """Whether ``hint`` is, or holds, a type transformers' converter has no form for and
    ``_schema`` has."""
    if _plain(hint) is not hint:
        return True
    if isinstance(hint, type):
        return (_record_fields(hint) is not None or _is_root_model(hint)
                or issubclass(hint, _TEXT_TYPES) or issubclass(hint, decimal.Decimal))
    if isinstance(hint, (typing.ForwardRef, str)) or _alias_value(hint) is not None:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (set, frozenset) or origin is tuple and args[-1:] == (...,):
        return True  # (transformers refuses the ``...`` and has no form for a set)
    return origin is not typing.Literal and any(_ours(arg) for arg in args)


_TEXT_TYPES = (datetime.date, datetime.time, uuid.UUID, pathlib.PurePath)


def _alias_value(hint: Any) -> Any:
    """What a ``type`` statement's alias (or typing_extensions' ``TypeAliasType``) stands
    for, or None for any other hint."""
    if type(hint).__name__ != "TypeAliasType":
        return None
    value = getattr(hint, "__value__", None)
    if isinstance(value, str):  # written as text: read in its module, as typing reads hints
        module = sys.modules.get(getattr(hint, "__module__", None) or "")
        try:
            return eval(value, dict(vars(module)) if module else {})  # noqa: S307
        except Exception:  # noqa: BLE001 -- a name it cannot reach: any value
            return typing.ForwardRef(value)
    return value


def _hint_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def tool(function: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None):
    """Offer ``function`` to every ``%%chat`` as a tool (``@tool`` or ``@tool(name=...)``).

    The function itself is returned unchanged, so it stays callable as before.
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        described = make_tool(fn, name=name, description=description)
        _registry[described.name] = described
        return fn

    return register(function) if function is not None else register


def registered_tools() -> dict[str, Tool]:
    """The tools registered with ``@tool``, by name."""
    return dict(_registry)


def unregister_tools(names: str | list[str] | None) -> list[str]:
    """Stop offering ``names`` (one name, or every registered tool when None); return the
    names removed.

    Raises ToolError, removing nothing, when a name is not registered.
    """
    if isinstance(names, str):  # one name, not its letters
        names = [names]
    elif names is not None and not isinstance(names, (list, tuple, set, frozenset, dict)):
        raise TypeError(f"unregister_tools(names) takes a list of tool names or None, not "
                        f"{type(names).__name__}.")
    names = list(_registry) if names is None else list(dict.fromkeys(names))
    unknown = [name for name in names if name not in _registry]
    if unknown:
        known = ", ".join(sorted(_registry)) or "none"
        raise ToolError(f"No tool named '{unknown[0]}' is registered (registered: {known}).")
    for name in names:
        del _registry[name]
    return list(names)


def resolve_tools(names: list[str] | None, namespace: dict) -> list[Tool]:
    """The tools a chat offers: ``names`` from the registry or namespace, or every registered one.

    ``names`` None means "not chosen", so every ``@tool`` function is offered; an empty list
    (``--tools none``) offers none. A name given twice is offered once.
    """
    if names is None:
        return [_current(registered, namespace) for registered in _registry.values()]
    tools = []
    for name in dict.fromkeys(names):
        if name in _registry:
            tools.append(_current(_registry[name], namespace))
        elif name in namespace:
            tools.append(make_tool(namespace[name], name=name))
        elif "." in name and _attribute(name, namespace) is not None:
            # math.sqrt, agent.search: offered under the function's own name (a tool name
            # holds no dots)
            tools.append(make_tool(_attribute(name, namespace)))
        else:
            raise ToolError(
                f"There is no function named '{name}' in the notebook; define it or decorate it "
                "with @mlx_notebook.tool."
            )
    return tools


def _attribute(dotted: str, namespace: dict) -> Any:
    """``a.b.c`` looked up in the notebook, or None (no code runs but attribute access)."""
    first, *rest = dotted.split(".")
    value = namespace.get(first)
    for part in rest:
        if value is None or not part.isidentifier():
            return None
        value = getattr(value, part, None)
    return value


def _current(registered: Tool, namespace: dict) -> Tool:
    """A registered tool as the notebook defines it now: redefined without ``@tool`` since
    (a fix run again as a plain ``def``), the current definition is the one the user means."""
    current = namespace.get(getattr(registered.function, "__name__", ""))
    return make_tool(current, name=registered.name) if _redefined(registered, current) else registered


def _redefined(registered: Tool, current: Any) -> bool:
    """The notebook now holds another definition of a registered tool's function under its
    name (``def get_weather`` run again without ``@tool``). Another callable that only shares
    the name a tool was given (``from re import search`` beside ``@tool(name="search")``) is
    not one."""
    return (callable(current) and current is not registered.function
            and getattr(current, "__name__", None) == getattr(registered.function, "__name__", ""))


def call_tool(tools: list[Tool], name: str, arguments: dict) -> tuple[Any, str | None]:
    """Run one call; return ``(result, None)`` or ``(None, error message)``, never raise.

    The model reads the error and may retry, so exceptions from the function, an unknown
    tool name and arguments that do not fit the signature all become messages.
    """
    by_name = {t.name: t for t in tools}
    if name not in by_name:
        offered = ", ".join(sorted(by_name)) or "none"
        return None, f"unknown tool '{name}' (tools offered: {offered})"
    if not isinstance(arguments, dict):
        return None, f"bad arguments for {name}: they must be an object, got {_written(arguments)}"
    try:  # the tool gets its own copy: what the model wrote stays as it wrote it
        arguments = copy.deepcopy(arguments)
    except Exception:  # noqa: BLE001 -- an object of the caller's that cannot be copied
        pass
    function = by_name[name].function
    signature = inspect.signature(function)
    _fields_read.clear()
    _, bound = _unwrapped(function)  # a partial's settings: not the model's to change
    unexpected = [key for key in arguments if key not in signature.parameters or key in bound]
    if unexpected and (bound.intersection(unexpected) or not any(
            p.kind is p.VAR_KEYWORD for p in signature.parameters.values())):
        return None, f"bad arguments for {name}: unexpected argument '{unexpected[0]}'"
    try:
        keywords = _coerced(function, arguments, signature)
        positional = []
        # A singledispatch function picks its implementation by the first argument's type,
        # which it reads only from the position.
        by_position = (inspect.Parameter.POSITIONAL_ONLY,) + (
            (inspect.Parameter.POSITIONAL_OR_KEYWORD,) if _dispatches(function) else ())
        for parameter in signature.parameters.values():  # sent by name, passed by position
            if parameter.kind not in by_position or parameter.name not in keywords:
                break
            positional.append(keywords.pop(parameter.name))
            by_position = (inspect.Parameter.POSITIONAL_ONLY,)
        signature.bind(*positional, **keywords)
    except KeyboardInterrupt:
        raise
    except RecursionError:
        return None, f"bad arguments for {name}: nested deeper than the tool's types can be read"
    except (TypeError, ValueError) as exc:
        return None, _escaped(f"bad arguments for {name}: {_said(exc)}")
    except BaseException as exc:  # noqa: BLE001 -- a record's own check (__post_init__, validator)
        return None, _escaped(f"bad arguments for {name}: {_failure(exc)}")
    try:
        result = function(*positional, **keywords)
        if inspect.isawaitable(result):  # an ``async def`` tool
            result = _run_to_completion(result)
        if inspect.isgenerator(result):  # a tool written with ``yield``: the model reads its items
            result = _drained(result, name)
        elif inspect.isasyncgen(result):  # (``async def`` with ``yield``)
            result = _run_to_completion(_drained_async(result, name))
    # The model sees the failure; the notebook keeps running, also through a tool's
    # sys.exit() or an awaited task's cancellation. A KeyboardInterrupt is the user's and
    # still stops the cell.
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        return None, _escaped(_failure(exc))
    if isinstance(result, str) and (escaped := _escaped(result)) != result:
        result = (f"{escaped}\n[{name} returned text that is not valid Unicode (a lone "
                  "surrogate); it is shown as \\u escapes]")
    return result, None


_MOST_ITEMS = 1000
"""The most items a generator tool's result holds: one that never ends must not hang the cell."""


def _drained(generator: Any, name: str) -> list:
    """A generator's items, up to ``_MOST_ITEMS``; past that it is closed and the result says so."""
    items = []
    for item in generator:
        if len(items) == _MOST_ITEMS:
            generator.close()
            items.append(_unread(name))
            break
        items.append(item)
    return items


async def _drained_async(generator: Any, name: str) -> list:
    """An async generator's items, as ``_drained`` reads a generator's."""
    items = []
    async for item in generator:
        if len(items) == _MOST_ITEMS:
            await generator.aclose()
            items.append(_unread(name))
            break
        items.append(item)
    return items


def _unread(name: str) -> str:
    return f"[{name} yielded more than {_MOST_ITEMS} items; the rest were not read]"


def _dispatches(function: Callable[..., Any]) -> bool:
    """A ``functools.singledispatch`` function (or a partial of one)."""
    inner, _ = _unwrapped(function)
    return callable(getattr(inner, "dispatch", None)) and isinstance(
        getattr(inner, "registry", None), collections.abc.Mapping)


def _failure(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else repr(exc.code)
        return f"SystemExit: the tool called sys.exit({code})"
    said = _said(exc)
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _said(exc: BaseException) -> str:
    """An exception's message, even from one whose ``__str__`` raises."""
    try:
        return str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 -- even a GeneratorExit from a __str__
        return f"(its message could not be read: {type(exc).__name__}.__str__ failed)"


def _coerced(function: Callable[..., Any], arguments: dict,
             signature: inspect.Signature) -> dict:
    """The model's JSON arguments as the function's hints ask for them: an Enum's member for
    its value, ``"false"`` as a bool, numbers written as text as numbers, a list or object
    sent as JSON text decoded. A value of another JSON kind than the hint's (``"two"`` for an
    ``int``), or an Enum or Literal value outside its choices, raises ValueError (the model
    reads it and may retry). A ``null`` for a parameter with a default is that default, where
    the hint does not take None: models taught OpenAI's strict schemas write null for an
    argument they leave out."""
    try:
        hints = _type_hints(function)
    except Exception:  # noqa: BLE001 -- make_tool said what it could; call with what came
        return arguments
    empty = inspect.Parameter.empty
    defaults = {p.name: p.default for p in signature.parameters.values()}
    extra = next((p.name for p in signature.parameters.values()
                  if p.kind is p.VAR_KEYWORD and p.name in hints), None)  # ``**options: str``
    coerced = {}
    for key, value in arguments.items():
        hint = hints.get(key if key in defaults else extra, empty)
        if hint is empty or value is None and defaults.get(key, empty) is None:
            coerced[key] = value
            continue
        try:
            coerced[key] = _coerce(value, hint, key)
        except ValueError:
            if value is None and defaults.get(key, empty) is not empty:
                continue  # the default
            raise
    try:
        annotated = _type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 -- read above already
        annotated = {}
    for name, default in defaults.items():  # pydantic's Field(...): checked by pydantic
        if (field := _pydantic_field(default, annotated.get(name))) is None:
            continue
        if name in coerced:
            none_default = default is None or (_is_field_info(default) and field.default is None)
            if not (coerced[name] is None and none_default) and (
                    adapter := _adapter(hints.get(name, Any), field)) is not None:
                coerced[name] = _validated(adapter, coerced[name], name)
        elif _is_field_info(default) or default is inspect.Parameter.empty:  # the Field's default
            if field.is_required():
                raise TypeError(f"missing a required argument: '{name}'")
            coerced[name] = field.get_default(call_default_factory=True)
    return coerced


def _adapter(hint: Any, field: Any) -> Any:
    """pydantic's validator for a parameter declared with ``Field(...)``, or None where
    pydantic cannot make one (a ``typing.TypedDict`` before Python 3.12): then the value goes
    as coerced."""
    import pydantic

    try:
        return pydantic.TypeAdapter(typing.Annotated[hint, field])
    except Exception:  # noqa: BLE001 -- pydantic's PydanticUserError and schema errors
        return None


_INTEGER = re.compile(r"[-+]?\d+")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _coerce(value: Any, hint: Any, key: str) -> Any:
    hint = _plain(hint)
    if (aliased := _alias_value(hint)) is not None:
        return _coerce(value, aliased, key)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or isinstance(hint, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if value is None and len(options) < len(args) or any(_fits(value, o) for o in options):
            return value  # already one of the types: "007" for int | str stays text
        refusals, unchecked = [], False
        for option in options:
            try:
                coerced = _coerce(value, option, key)
            except ValueError as refusal:
                refusals.append(refusal)
                continue
            if coerced is not value:
                return coerced
            unchecked = True  # a type we do not check (a class of the user's) took it as is
        if unchecked or not refusals:
            return value
        if len(refusals) > 1 and all(map(_expected, options)):  # int | list[int] given "x"
            raise ValueError(f"'{key}' must be {' or '.join(map(_expected, options))}, got "
                             f"{_written(value)}")
        raise refusals[0]  # no type took it, and one said why (Literal["a"] | int with "b")
    if origin is typing.Literal:
        for choice in args:  # the value as written first, then as the text of a choice
            if _same(value, choice):
                return choice
        for choice in args:
            if str(value) == str(choice) or isinstance(choice, bool) and str(value).lower() == (
                    "true" if choice else "false"):
                return choice
        raise ValueError(f"'{key}' must be one of {', '.join(map(json.dumps, args))}, got "
                         f"{json.dumps(value, default=str)}")
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if isinstance(value, hint):
            return value
        # The model is shown the values: a value wins over a name spelled the same.
        for matches in (lambda m: _same(value, m.value), lambda m: str(m.value) == str(value),
                        lambda m: m.name == value):
            for member in hint:  # (a member may be falsy: IntEnum's 0)
                if matches(member):
                    return member
        raise ValueError(f"'{key}' must be one of "
                         f"{', '.join(json.dumps(m.value, default=str) for m in hint)}, got "
                         f"{json.dumps(value, default=str)}")
    if isinstance(hint, type) and (is_typeddict(hint) or not issubclass(
            hint, (str, int, float, list, dict))):
        if _is_root_model(hint):
            return _validated(hint, value, key)
        if (fields := _record_fields(hint)) is not None:
            return _record(value, hint, fields, key)
        if issubclass(hint, (*_TEXT_TYPES, decimal.Decimal)):
            return _from_text(value, hint, key)
    if isinstance(value, str):
        text = value.strip()
        if hint is bool and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if hint is int and _INTEGER.fullmatch(text):
            try:
                return int(text)
            except ValueError:  # past Python's limit on the digits it reads from text
                raise ValueError(f"'{key}' must be an integer of at most "
                                 f"{sys.get_int_max_str_digits()} digits, got one of "
                                 f"{len(text.lstrip('+-'))}") from None
        if hint is float and _NUMBER.fullmatch(text):
            return _checked(float(text), hint, key)  # ("1e999" is no number a tool can use)
        container = origin or hint
        if container in (list, dict, tuple, set, frozenset) and text[:1] in "[{":
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = value
            if isinstance(decoded, (list, dict)):
                return _coerce(decoded, hint, key)
        return _checked(value, hint, key)
    if hint is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if hint is bool and type(value) is int and value in (0, 1):
        return bool(value)  # (as pydantic reads them)
    if origin in (list, set, frozenset) and args and isinstance(value, list):
        return origin(_coerce(item, args[0], f"{key}[{i}]") for i, item in enumerate(value))
    if origin is tuple and args and isinstance(value, list):
        if len(args) == 2 and args[1] is ...:
            return tuple(_coerce(item, args[0], f"{key}[{i}]") for i, item in enumerate(value))
        if len(args) != len(value):
            raise ValueError(f"'{key}' must have {len(args)} items, got {len(value)}")
        return tuple(_coerce(item, arg, f"{key}[{i}]")
                     for i, (item, arg) in enumerate(zip(value, args)))
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {_key(k, args[0], key): _coerce(item, args[1], f"{key}.{k}")
                for k, item in value.items()}
    return _checked(value, hint, key)


def _key(text: str, hint: Any, key: str) -> Any:
    """An object's key (always text in JSON) as the dict's key type asks (``dict[int, ...]``)."""
    try:
        return _coerce(text, hint, key)
    except ValueError:
        raise ValueError(f"the keys of '{key}' must be {_expected(hint) or hint}, got "
                         f"{_written(text)}") from None


_KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
          list: "a list", tuple: "a list", set: "a list", frozenset: "a list",
          dict: "an object"}
"""The JSON kinds a hint's type is checked against before the function is called."""


def _expected(hint: Any) -> str | None:
    """What a value of ``hint`` is, in the model's words ("an integer"), where we check it."""
    hint = _plain(hint)
    if typing.get_origin(hint) is typing.Literal:
        return f"one of {', '.join(json.dumps(a, default=str) for a in typing.get_args(hint))}"
    return _KINDS.get(typing.get_origin(hint) or hint)


def _checked(value: Any, hint: Any, key: str) -> Any:
    """``value`` when it is of the JSON kind ``hint`` asks for (or ``hint`` is no kind we
    check: a class of the user's, ``Any``); ValueError saying what was expected otherwise, so
    the function never runs with ``"two"`` for an ``int``."""
    kind = typing.get_origin(hint) or hint
    if (expected := _KINDS.get(kind)) is None:
        return value
    if kind is float and isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"'{key}' must be a finite number, got {value!r}")
    if kind is bool:
        fits = isinstance(value, bool)
    elif kind in (int, float):
        fits = isinstance(value, int if kind is int else (int, float)) and not isinstance(
            value, bool)
    else:
        fits = isinstance(value, (list, tuple) if kind in (tuple, set, frozenset) else kind)
    if fits:
        return value
    raise ValueError(f"'{key}' must be {expected}, got {_written(value)}")


def _written(value: Any) -> str:
    """A value as the model wrote it (JSON), shortened for a message."""
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _record(value: Any, hint: type, fields: list[_Field], key: str) -> Any:
    """The record ``hint`` built from the object the model wrote (or from its JSON text, or
    a NamedTuple from a list); ValueError naming the field when it does not fit."""
    if not is_typeddict(hint) and isinstance(value, hint):
        return value
    if isinstance(value, str) and value.strip()[:1] == "{":
        try:
            value = json.loads(value)
        except ValueError:
            pass
    names = [field.name for field in fields]
    if isinstance(value, list) and issubclass(hint, tuple) and len(value) <= len(names):
        value = dict(zip(names, value))
    if not isinstance(value, dict):
        raise ValueError(f"'{key}' must be an object with the fields {', '.join(names)}, got "
                         f"{json.dumps(value, default=str)}")
    if hasattr(hint, "model_validate"):  # pydantic checks and converts its own fields
        return _validated(hint, value, key)
    if unknown := [name for name in value if name not in names]:
        raise ValueError(f"'{key}' has no field '{unknown[0]}' (its fields: {', '.join(names)})")
    if missing := [f.name for f in fields if f.required and f.name not in value]:
        raise ValueError(f"'{key}' is missing its field '{missing[0]}'")
    hints = {field.name: field.hint for field in fields}
    built = {name: _coerce(item, hints[name], f"{key}.{name}") for name, item in value.items()}
    if is_typeddict(hint):
        return built
    try:
        return hint(**built)
    except Exception as error:  # noqa: BLE001 -- a __post_init__'s own check: the model reads it
        raise ValueError(f"'{key}' could not be made a {hint.__name__}: "
                         f"{type(error).__name__}: {_said(error)}") from None


def _validated(model: Any, value: Any, key: str) -> Any:
    """What pydantic (a model, or a ``TypeAdapter``) makes of the value the model wrote;
    ValueError naming each part that failed."""
    try:
        if hasattr(model, "model_validate"):
            return model.model_validate(value)
        return model.validate_python(value)
    except ValueError as error:  # pydantic's ValidationError
        problems = [": ".join(filter(None, (".".join(map(str, e.get("loc", ()))), e.get("msg"))))
                    for e in getattr(error, "errors", lambda: [])()] or [_said(error)]
        fits = f" does not fit {model.__name__}" if isinstance(model, type) else ""
        raise ValueError(f"'{key}'{fits}: {'; '.join(problems)}") from None


def _from_text(value: Any, hint: type, key: str) -> Any:
    """A date, time, UUID, path or Decimal from the text (or number) the model wrote."""
    if isinstance(value, hint):
        return value
    try:
        if issubclass(hint, decimal.Decimal) and isinstance(value, (int, float, str)) and not (
                isinstance(value, bool)):
            number = hint(str(value).strip())
            if number.is_finite():  # (the schema says number: no NaN or Infinity)
                return number
        elif isinstance(value, str):
            if issubclass(hint, (datetime.date, datetime.time)):
                # ("Z" for UTC: fromisoformat reads it from Python 3.11 only)
                return hint.fromisoformat(re.sub(r"[zZ]$", "+00:00", value.strip()))
            return hint(value)
    except (ValueError, decimal.InvalidOperation):
        pass
    what = _ISO.get(hint, f"a {hint.__name__}")
    raise ValueError(f"'{key}' must be {what}, got {json.dumps(value, default=str)}")


_ISO = {datetime.datetime: "an ISO date-time", datetime.date: "an ISO date",
        datetime.time: "an ISO time"}


def _same(value: Any, choice: Any) -> bool:
    """Equal as JSON reads them: 2 is 2.0, but never True for 1."""
    if isinstance(value, bool) or isinstance(choice, bool):
        return value is choice
    return value == choice and (type(value) is type(choice) or all(
        isinstance(x, (int, float)) for x in (value, choice)))


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` is already of type ``hint`` (a list or dict item by item)."""
    hint = _plain(hint)
    origin = typing.get_origin(hint) or hint
    if hint is Any or isinstance(hint, (typing.ForwardRef, str)):  # (see _schema)
        return True
    if (aliased := _alias_value(hint)) is not None:
        return _fits(value, aliased)
    if is_typeddict(hint):
        return False  # (no isinstance for a TypedDict: its items are checked when coerced)
    if origin is typing.Literal:
        return any(_same(value, choice) for choice in typing.get_args(hint))
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    args = typing.get_args(hint)
    if origin is list and args:
        return isinstance(value, list) and all(_fits(item, args[0]) for item in value)
    if origin is dict and len(args) == 2:
        return isinstance(value, dict) and all(_fits(item, args[1]) for item in value.values())
    return isinstance(origin, type) and isinstance(value, origin)


def _escaped(text: str) -> str:
    """``text`` with lone surrogates (``"\\ud800"``) as escapes: the engine refuses a message
    holding one, which would fail the whole turn without naming the tool."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _run_to_completion(awaitable: Awaitable) -> Any:
    async def wait():
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    # In a Jupyter kernel the cell itself runs inside the kernel's event loop, which cannot
    # be re-entered: the tool gets a loop of its own on a daemon thread. Interrupting the
    # kernel returns at once and cancels the tool, rather than waiting for it to finish.
    outcome: Future = Future()
    running: dict[str, Any] = {}

    async def main():
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        return await awaitable

    def serve():
        try:
            outcome.set_result(asyncio.run(main()))
        except BaseException as exc:  # handed to the waiting cell, which re-raises it
            outcome.set_exception(exc)

    threading.Thread(target=serve, name="mlx-notebook-tool", daemon=True).start()
    try:
        # Waited for in short slices: a blocked lock acquire does not wake for an interrupt
        # that is only flagged (``_thread.interrupt_main``, some front ends), while a slice's
        # end runs bytecode and so raises a pending KeyboardInterrupt within 50 ms.
        while True:
            try:
                return outcome.result(timeout=0.05)
            except FutureTimeout:  # the builtin TimeoutError only from Python 3.11
                continue
    except KeyboardInterrupt:
        if "task" in running:
            try:
                running["loop"].call_soon_threadsafe(running["task"].cancel)
            except RuntimeError:  # the tool finished meanwhile and its loop is closed
                pass
        raise


def ask_before_running(name: str, arguments: dict) -> bool:
    """``--confirm``: ask on stdin (the notebook's input box) whether to run a call.

    Where no one can answer (stdin at its end, or a kernel run without an input box, as
    nbval or ``jupyter execute`` run it), the call is declined, not run unasked, and the
    turn goes on: the model reads that it was declined.
    """
    try:
        answer = input(f"Run {name}({json.dumps(arguments)})? [y/N] ")
    except EOFError:  # the question is out, with no answer after it
        print()
        return _not_asked(name)
    except StdinNotImplementedError:  # raised before the question is shown
        return _not_asked(name)
    return answer.strip().lower() in ("y", "yes")


def _not_asked(name: str) -> bool:
    print(f"{name} was not run: --confirm cannot ask here (no input is available to this "
          "cell); run the cell interactively to answer, or leave out --confirm.")
    return False


# -- answers in a type (%%chat --json TYPE) ---------------------------------------------------

def answer_schema(kind: Any) -> dict:
    """The JSON schema an answer of ``kind`` fits: a schema dict as it is, a pydantic model's
    own, any other type (a dataclass, TypedDict, NamedTuple, ``list[int]``, an Enum) as a
    tool's parameter of that type is described; ToolError when it has no JSON form. A type's
    objects are closed (``additionalProperties: false``, as the openai SDK's ``parse`` makes
    them): a small model would go on adding keys of its own until ``max_tokens``."""
    if isinstance(kind, dict):
        try:  # checked here: the engine's refusal would not say it is the dict's fault
            json.dumps(kind, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ToolError(f"the schema dict is not JSON ({str(exc).rstrip('.')})") from None
        return kind
    if isinstance(kind, type) and callable(getattr(kind, "model_json_schema", None)):
        return _closed(kind.model_json_schema())
    _fields_read.clear()
    try:
        return _closed(_schema(kind))
    except (UnsupportedHint, TypeError):
        raise ToolError(f"{_hint_name(kind)} has no JSON form; use a pydantic model, a "
                        "dataclass, a TypedDict, a JSON schema dict, or a type such as "
                        "list[int].") from None


def _closed(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _closed(value) for key, value in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def built_answer(value: Any, kind: Any) -> Any:
    """The JSON ``value`` as ``kind`` (a pydantic model, a dataclass...), as a tool's argument
    of that type is built; ValueError naming the part that does not fit."""
    if isinstance(kind, dict):
        return value
    _fields_read.clear()
    return _coerce(value, kind, "answer")
