"""The component args are the schema: pydantic dataclasses (`@args_class`) with a docstring under
each field, constraints in `Annotated` and `Literal` modes. From them, and nothing else, come

- the checks: pydantic validates an Args when it is made (or a mapping of its args), with the
  constraints below; kaito_aks.validation turns what it finds into `Problem`s at their paths;
- the documentation `help()`, IDEs, the provider schema (components/schema.json) and the stack
  config reference show (the field docstrings are the fields' descriptions);
- the camelCase names of the provider schema and of stack files: `vocabulary.camel`, one rule.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    LiteralString,
    TypeVar,
    dataclass_transform,
    get_args,
    get_origin,
)

import pulumi
import pydantic
from pydantic import ConfigDict, GetCoreSchemaHandler, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import ArgsKwargs, ErrorDetails, PydanticCustomError, PydanticUndefined, core_schema

from kaito_aks.problems import camel, shown

T = TypeVar("T")

LENIENT = "lenient"
"""A validation context key: constraints are waived (what is left of a value with problems is
read for the rules that may still judge it)."""


def deferred(value: object) -> bool:
    """A value known only at deploy time: an Output, or anything awaitable."""
    return isinstance(value, pulumi.Output) or inspect.isawaitable(value)


def _lenient(info: core_schema.ValidationInfo) -> bool:
    return bool(info.context and info.context.get(LENIENT))


# ---------------------------------------------------------------- constraints (Annotated metadata)


class Constraint:
    """A rule on one value, checked after its type: `check(value)` says what is wrong, or None.
    `code` "constraint": the value stays usable for the rules; "range": it is not (10 million
    replicas would make 10 million names). A value known only at deploy time is not checked."""

    code: ClassVar[LiteralString] = "constraint"
    shows_value: bool = True  # whether the message may quote the value (a secret's is not shown)

    def check(self, value: Any) -> str | None:
        raise NotImplementedError

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def after(value: Any, info: core_schema.ValidationInfo) -> Any:
            if deferred(value) or _lenient(info):
                return value
            why = self.check(value)
            if why is not None:
                raise PydanticCustomError(self.code, "{why}", {"why": why, "shows_value": self.shows_value})
            return value

        return core_schema.with_info_after_validator_function(after, handler(source))


@dataclass(frozen=True)
class Range(Constraint):
    """A number from `min` to `max` (inclusive); `why` names the limit's source."""

    min: float | None = None
    max: float | None = None
    why: str = ""
    code: ClassVar[LiteralString] = "range"

    def check(self, value: float) -> str | None:
        low = self.min is not None and value < self.min
        high = self.max is not None and value > self.max
        if not (low or high):
            return None
        if self.min is not None and self.max is not None:
            text = f"must be from {_num(self.min)} to {_num(self.max)}"
        elif self.min is not None:
            text = f"must be at least {_num(self.min)}"
        else:
            text = f"must be at most {_num(self.max or 0)}"
        return f"{text}, not {_num(value)}" + (f" ({self.why})" if self.why else "")

    def text(self) -> str:
        if self.min is not None and self.max is not None:
            return f"{_num(self.min)}-{_num(self.max)}"
        return f">= {_num(self.min)}" if self.min is not None else f"<= {_num(self.max or 0)}"


@dataclass(frozen=True)
class Matches(Constraint):
    """Text that matches `pattern` (whole); `what` says what it must be, for the error."""

    pattern: str
    what: str

    def check(self, value: str) -> str | None:
        return None if re.fullmatch(self.pattern, value) else f"{shown(value)} is not {self.what}"


DNS_LABEL = Matches(
    r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
    "a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
)


@dataclass(frozen=True)
class Check(Constraint):
    """Any other rule on one value: `rule(value)` returns what is wrong, or None.
    `shows_value`: whether that message may quote the value (then a secret's is not shown)."""

    rule: Callable[[Any], str | None]
    shows_value: bool = True

    def check(self, value: Any) -> str | None:
        return self.rule(value)


@dataclass(frozen=True)
class MaxItems(Constraint):
    """At most `count` entries (a list or a map)."""

    count: int
    why: str = ""

    def check(self, value: Sized) -> str | None:
        if len(value) <= self.count:
            return None
        return f"has {len(value)} entries; at most {self.count}" + (f" ({self.why})" if self.why else "")


class Sized(typing.Protocol):
    def __len__(self) -> int: ...


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# ---------------------------------------------------------------- secrets and deploy-time values


class _SecretMark:
    """Annotated metadata: the value is kept secret (encrypted in state, never shown)."""

    def __repr__(self) -> str:
        return "secret"


SECRET = _SecretMark()
Secret = Annotated[T, SECRET]
"""A value kept secret end to end (encrypted in state, redacted in every render, never shown in
a problem)."""


class _Later:
    """Annotated metadata of `Input`: a value known now is validated as its plain type; one that
    comes from another resource (an Output) is passed on as it is, to be known at deploy time."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        plain = handler.generate_schema(plain_of(source))

        def later(value: Any, validate: core_schema.ValidatorFunctionWrapHandler) -> Any:
            return value if deferred(value) else validate(value)

        return core_schema.no_info_wrap_validator_function(later, plain)

    def __repr__(self) -> str:
        return "input"


LATER = _Later()
Input = Annotated[T | Awaitable[T] | pulumi.Output[T], LATER]
"""pulumi.Input[T]: a value known now (held to T and its constraints) or an Output of another
resource (known at deploy time)."""


def plain_of(tp: Any) -> Any:
    """T for an Input's union (T | Awaitable[T] | Output[T] ...): its members known now."""
    members = [
        a for a in get_args(tp) if get_origin(a) not in (pulumi.Output, Awaitable, typing.Awaitable) and a is not object
    ]
    return members[0] if len(members) == 1 else typing.Union[tuple(members)]  # noqa: UP007 (built at run time)


class _Switch:
    """Annotated metadata of `bool | SomeArgs`: a switch (true, false) or its settings (a map of
    the class's args). pydantic tries one member only, the one the value's kind picks, so a
    problem is said once, in the member's words."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        members = [a for a in get_args(source) if a is not bool]
        if len(members) != 1 or bool not in get_args(source):
            raise TypeError(f"Switch is for `bool | SomeArgs`, not {source!r}")
        settings = members[0]

        def kind(value: Any) -> str | None:
            if isinstance(value, bool):
                return SWITCH_TAGS[0]
            return SWITCH_TAGS[1] if isinstance(value, Mapping | settings) else None

        return core_schema.tagged_union_schema(
            {SWITCH_TAGS[0]: handler.generate_schema(bool), SWITCH_TAGS[1]: handler.generate_schema(settings)},
            discriminator=kind,
            custom_error_type="switch",
            custom_error_message="must be true, false or a map of its settings",
        )

    def __repr__(self) -> str:
        return "switch"


SWITCH = _Switch()
SWITCH_TAGS = ("switch", "settings")
"""The members of a switch's union as pydantic's error locations name them."""


# ---------------------------------------------------------------- the args classes

ARGS_CONFIG = ConfigDict(
    strict=True,  # a quoted "2" is not a number, 1 is not text: what is written is what is read
    extra="forbid",
    alias_generator=camel,  # schema and stack-file names; Python takes the field names
    validate_by_name=True,
    validate_by_alias=True,
    loc_by_alias=False,  # problems are placed by field name, rendered in either naming
    use_attribute_docstrings=True,
    allow_inf_nan=False,
)


def _no_control_characters(value: str) -> str:
    if "\x00" in value or any(ord(ch) < 32 and ch not in "\t\n" for ch in value):
        raise PydanticCustomError("control_characters", "contains control characters")
    return value


def _list_from_tuple(value: Any) -> Any:
    return list(typing.cast(tuple[Any, ...], value)) if isinstance(value, tuple) else value


def _number_as_written(value: Any, validate: core_schema.ValidatorFunctionWrapHandler) -> Any:
    return value if type(value) is int else validate(value)  # 1 stays 1 where a number is asked


MAX_DEPTH = 40
"""How deep maps and lists may nest in a free-form value (chart values, a runtime config, a
policy): as in a stack file (stacks/stackfile.py); far deeper than any real one, and shallow
enough for every serializer and merge downstream (500 deep breaks YAML's and Python's recursion)."""


def _not_too_deep(value: Any) -> Any:
    """A free-form value whose maps and lists nest at most MAX_DEPTH deep (walked without
    recursion, so any depth is measured)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any] = ()
        if isinstance(item, Mapping):
            children = typing.cast(Mapping[Any, Any], item).values()
        elif isinstance(item, list | tuple):
            children = typing.cast(Sequence[Any], item)
        else:
            continue
        if depth > MAX_DEPTH:
            raise PydanticCustomError(
                "too-deep", "{why}", {"why": f"nests maps and lists more than {MAX_DEPTH} deep; no config needs that"}
            )
        stack.extend((child, depth + 1) for child in children)
    return value


def shaped(schema: Any) -> Any:
    """A core schema with the library's reading of plain values: text without control characters,
    a tuple where a list is asked, a whole number kept whole where any number is asked, free-form
    maps and lists at most MAX_DEPTH deep. Nested args classes are left to their own schema."""
    kind = schema.get("type")
    if kind == "str":
        return core_schema.no_info_after_validator_function(_no_control_characters, schema)
    if kind == "float":
        return core_schema.no_info_wrap_validator_function(_number_as_written, schema)
    if kind == "any":
        return core_schema.no_info_after_validator_function(_not_too_deep, schema)
    out = {key: value if key in _NOT_SCHEMAS else _shaped_part(value) for key, value in schema.items()}
    if kind == "list":
        return core_schema.no_info_before_validator_function(_list_from_tuple, typing.cast(Any, out))
    if kind == "dict":
        return core_schema.no_info_after_validator_function(_not_too_deep, typing.cast(Any, out))
    return out


_NOT_SCHEMAS = frozenset({"metadata", "serialization", "config", "ref", "cls", "expected"})


def _shaped_part(value: Any) -> Any:
    if isinstance(value, dict):
        part = typing.cast(dict[str, Any], value)
        if "type" not in part:
            return {k: _shaped_part(v) for k, v in part.items()}
        return part if part["type"] in ("dataclass", "definition-ref") else shaped(part)
    if isinstance(value, list):
        return [_shaped_part(v) for v in typing.cast(list[Any], value)]
    return value


class _Shaped:
    """Annotated metadata: the value is read as args' values are (`shaped`), outside an args
    class (a section of a program's config)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return shaped(handler(source))


SHAPED = _Shaped()


def _args_core_schema(cls: type, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
    schema: dict[str, Any] = dict(handler(source))
    if schema.get("type") != "dataclass":
        return typing.cast(core_schema.CoreSchema, schema)  # made already (a nested use of the class)
    made = {**schema, "schema": shaped(schema["schema"]), "strict": False}  # (a mapping of its args too)

    def refused_or_valid(value: Any, validate: core_schema.ValidatorFunctionWrapHandler, info: Any) -> Any:
        refusal = refusal_of(value)
        if refusal is not None and isinstance(value, cls) and not _lenient(info):
            raise refusal  # an instance made with problems passes them on, at its path
        return validate(value)

    return core_schema.with_info_wrap_validator_function(refused_or_valid, typing.cast(core_schema.CoreSchema, made))


_REFUSAL = "_kaito_aks_refusal"


def refusal_of(value: object) -> ValidationError | None:
    """What pydantic found wrong with an args instance when it was made (None: nothing, or no
    args instance: an Output would answer any attribute with another Output)."""
    return None if deferred(value) else getattr(value, _REFUSAL, None)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field, pydantic.Field))
def args_class(cls: type[T]) -> type[T]:
    """A component's args class: a frozen, keyword-only pydantic dataclass whose fields are read
    in Python's names or the schema's camelCase names, documented in `help()`, with secrets kept
    out of its repr. Making one never raises: an instance made with problems keeps them
    (`refusal_of`), with what is usable of it set, and the component it is given to raises
    `InvalidArgsError` with every problem at once (a nested instance's at its path)."""
    setattr(cls, "__get_pydantic_core_schema__", classmethod(_args_core_schema))  # noqa: B010
    made = pydantic_dataclass(cls, frozen=True, kw_only=True, config=ARGS_CONFIG)
    validator = typing.cast(Any, made).__pydantic_validator__

    def __init__(self: Any, **given: Any) -> None:  # noqa: N807 (the class's __init__)
        try:
            validator.validate_python(ArgsKwargs((), given), self_instance=self)
        except ValidationError as err:
            _refuse(self, given, err, validator)

    __init__.__signature__ = inspect.signature(made.__init__)  # type: ignore[attr-defined]
    __init__.__doc__ = made.__init__.__doc__
    setattr(made, "__init__", __init__)  # noqa: B010
    setattr(made, "__repr__", _repr_without_secrets)  # noqa: B010
    return documented(typing.cast(type[T], made))


def _refuse(instance: Any, given: dict[str, Any], err: ValidationError, validator: Any) -> None:
    """Keep the problems on the instance, and set what is usable: the fields with a problem that
    makes them unusable at their default, the rest as given (constraints waived)."""
    bad = unusable_keys(err.errors())
    try:
        validator.validate_python(
            ArgsKwargs((), {k: v for k, v in given.items() if k not in bad}),
            self_instance=instance,
            context={LENIENT: True},
        )
    except ValidationError:  # a required field is missing or unusable: nothing to judge
        for f in dataclasses.fields(instance):
            object.__setattr__(instance, f.name, given.get(f.name, _default(f)))
        object.__setattr__(instance, _UNUSABLE, True)
    object.__setattr__(instance, _REFUSAL, err)  # (after: validating sets the instance's attributes anew)


_UNUSABLE = "_kaito_aks_unusable"


def usable(instance: object) -> bool:
    """Whether the rules may judge an instance (made without problems, or with what is usable of
    it set): not when a required field is missing or unusable."""
    return deferred(instance) or not getattr(instance, _UNUSABLE, False)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


USABLE_CODES = frozenset({"constraint"})
"""Problems after which a value is still used (a name that breaks a naming rule): the rules judge
the rest. After any other (a wrong type, a number out of bounds) the field is left out."""


def unusable_keys(errors: Iterable[ErrorDetails]) -> set[str]:
    """The top-level fields (or unknown keys) errors make unusable, by the name they were given."""
    bad = {str(e["loc"][0]) for e in errors if e["loc"] and e["type"] not in USABLE_CODES}
    return bad | {camel(k) for k in bad}


# ---------------------------------------------------------------- fields, as the docs and the provider read them


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Field:
    """One arg: its name, type, default and documentation, read from the args class."""

    name: str
    type: Any  # the annotation, Annotated and Input included
    doc: str
    owner: type
    default: Any = REQUIRED
    default_factory: Callable[[], Any] | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and self.default_factory is None

    @property
    def schema_name(self) -> str:
        return camel(self.name)

    def default_value(self) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        return None if self.default is REQUIRED else self.default

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        return constraints(self.type)

    @property
    def secret(self) -> bool:
        return is_secret(self.type)

    @property
    def accepts_outputs(self) -> bool:
        """Whether the value may come from another resource (an Input)."""
        return is_input(self.type)


_FIELDS: dict[type, dict[str, Field]] = {}


def fields(cls: type[object]) -> dict[str, Field]:
    """The args of an args class, in declaration order (pydantic's fields, with their docstrings)."""
    if cls not in _FIELDS:
        infos: dict[str, Any] | None = getattr(cls, "__pydantic_fields__", None)
        if infos is None:
            raise TypeError(f"{cls.__name__} is not an args class")
        _FIELDS[cls] = {name: _field(cls, name, info) for name, info in infos.items() if not name.startswith("_")}
    return _FIELDS[cls]


def _field(cls: type, name: str, info: Any) -> Field:
    factory = info.default_factory
    return Field(
        name=name,
        type=info.rebuild_annotation(),
        doc=inspect.cleandoc(info.description or ""),
        owner=cls,
        default=REQUIRED if info.default is PydanticUndefined else info.default,
        default_factory=None if factory is None else typing.cast(Callable[[], Any], factory),
    )


def is_args_class(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "__pydantic_fields__") and dataclasses.is_dataclass(tp)


# ---------------------------------------------------------------- types


def unannotated(tp: Any) -> Any:
    """The type without Annotated metadata."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def metadata(tp: Any) -> list[Any]:
    return list(getattr(tp, "__metadata__", ())) if get_origin(tp) is Annotated else []


def is_input(tp: Any) -> bool:
    """Whether `tp` (through Optional) is an Input: may come from another resource."""
    return any(LATER in metadata(layer) for layer in _layers(tp))


def _layers(tp: Any) -> Iterable[Any]:
    """`tp` and the types inside it through Annotated, Input and Optional."""
    while True:
        yield tp
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0] if LATER not in metadata(tp) else plain_of(get_args(tp)[0])
            continue
        inner = optional_of(tp)
        if inner is None:
            return
        tp = inner


def constraints(tp: Any) -> tuple[Constraint, ...]:
    """Every constraint on a type, through Annotated, Input and Optional."""
    return tuple(m for layer in _layers(tp) for m in metadata(layer) if isinstance(m, Constraint))


def is_secret(tp: Any) -> bool:
    return any(SECRET in metadata(layer) for layer in _layers(tp))


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def optional_of(tp: Any) -> Any | None:
    """T for `T | None`, else None."""
    if not _is_union(tp):
        return None
    args = get_args(tp)
    if type(None) not in args:
        return None
    rest = [a for a in args if a is not type(None)]
    if len(rest) == 1:
        return rest[0]
    return typing.Union[tuple(rest)]  # noqa: UP007 (built at run time)


def plain(tp: Any) -> Any:
    """The type a value known now has: without Annotated, Input and Optional."""
    return unannotated(list(_layers(tp))[-1])


def literal_values(tp: Any) -> tuple[Any, ...] | None:
    tp = plain(tp)
    return get_args(tp) if get_origin(tp) is Literal else None


def describe(tp: Any, classes: bool = False) -> str:
    """A short human name of a type, for docs and errors; `classes`: args classes by their name
    (help()), else "object" (the config reference, where Python's class names mean nothing)."""
    tp = plain(tp)
    origin = get_origin(tp)
    if _is_union(tp):  # e.g. true | false or an object
        return " or ".join(describe(a, classes) for a in get_args(tp))
    if origin is Literal:
        return " | ".join(str(v) for v in get_args(tp))
    if origin in (list, Sequence, tuple):
        return f"list of {describe(get_args(tp)[0], classes)}"
    if origin in (dict, Mapping):
        return "map" if get_args(tp)[1] is Any else f"map of {describe(get_args(tp)[1], classes)}"
    if tp is Any:
        return "any"
    if is_args_class(tp):
        return tp.__name__ if classes else "object"
    return {str: "text", int: "whole number", float: "number", bool: "true | false"}.get(
        tp, getattr(tp, "__name__", str(tp))
    )


# ---------------------------------------------------------------- documentation


def default_text(f: Field) -> str:
    if f.required:
        return ""
    value = f.default_value()
    if value is None or value == [] or value == {}:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_args_class(type(value)):
        return ", ".join(f"{camel(k)}: {_in_schema_names(v)}" for k, v in dataclasses.asdict(value).items())
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in typing.cast(tuple[Any, ...], value))
    return str(value)


def _in_schema_names(value: Any) -> str:
    """A nested default as a stack file would write it: keys in the schema's names, true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, dict):
        items = typing.cast(dict[Any, Any], value).items()
        return "{" + ", ".join(f"{camel(str(k))}: {_in_schema_names(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_in_schema_names(v) for v in typing.cast(list[Any], value)) + "]"
    return str(value)


SECRET_SHOWN = "[secret]"


def _repr_without_secrets(self: object) -> str:
    """The dataclass repr, a secret's value replaced (a repr ends up in logs and tracebacks)."""
    own = fields(type(self))
    shown_fields = [
        f"{f.name}={SECRET_SHOWN if f.name in own and own[f.name].secret and value is not None else repr(value)}"
        for f in dataclasses.fields(typing.cast(Any, self))
        if f.repr
        for value in [getattr(self, f.name)]
    ]
    return f"{type(self).__qualname__}({', '.join(shown_fields)})"


def documented(cls: type[T]) -> type[T]:
    """Append each arg's description, type, bounds and default to the class docstring, so
    help(), IDEs and the generated docs show the same text as the provider schema."""
    lines = [inspect.cleandoc(cls.__doc__ or ""), "", "Args:"]
    for f in fields(cls).values():
        default = default_text(f)
        facts = [describe(f.type, classes=True), constraint_text(f), "required" if f.required else ""]
        facts.append(f"default {default}" if default else "")
        head = f"    {f.name} ({', '.join(x for x in facts if x)})"
        lines.append(head + ":")
        lines += [f"        {line}" for line in (f.doc or "").splitlines()]
    cls.__doc__ = "\n".join(lines)
    return cls


def summary(cls: type) -> str:
    """An args class's own docstring, without the list of its args."""
    return (inspect.getdoc(cls) or "").split("\n\nArgs:")[0].strip()


def constraint_text(f: Field) -> str:
    parts: list[str] = []
    for c in f.constraints:
        if isinstance(c, Range):
            parts.append(c.text())
        elif isinstance(c, MaxItems):
            parts.append(f"at most {c.count}")
    return ", ".join(parts)


def walk_types(cls: type, seen: set[type] | None = None) -> Iterable[type]:
    """`cls` and every args class nested in its fields (for docs and the provider schema)."""
    seen = seen if seen is not None else set()
    if cls in seen:
        return
    seen.add(cls)
    yield cls
    for f in fields(cls).values():
        for nested in _nested_classes(f.type):
            yield from walk_types(nested, seen)


def _nested_classes(tp: Any) -> list[type]:
    tp = unannotated(tp)
    if is_args_class(tp):
        return [tp]
    out: list[type] = []
    for a in get_args(tp):
        out += _nested_classes(a)
    return out
