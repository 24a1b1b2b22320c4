"""The component args are the schema: frozen dataclasses with a docstring under each field,
`Annotated` constraints and `Literal` modes. From them, and nothing else, come

- the checks every component runs before it registers anything (`check`, `build`): types,
  bounds, modes, unknown keys with a did-you-mean from the same class, every problem at once;
- the documentation `help()`, IDEs (`@documented`), the provider schema and the README show;
- the shape a program's own config maps onto (`build` with schema names, `only`).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import textwrap
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import pulumi

from kaito_aks.parsed import is_list, is_list_or_tuple, is_mapping
from kaito_aks.problems import InvalidArgsError, Key, Naming, PathPart, Problem, camel, did_you_mean, kind_of, shown

T = TypeVar("T")


# ---------------------------------------------------------------- constraints (Annotated metadata)


@dataclass(frozen=True)
class Range:
    """A number from `min` to `max` (inclusive); `why` names the limit's source."""

    min: float | None = None
    max: float | None = None
    why: str = ""

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


@dataclass(frozen=True)
class Matches:
    """Text that matches `pattern` (whole); `what` says what it must be, for the error."""

    pattern: str
    what: str

    def check(self, value: str) -> str | None:
        return None if re.fullmatch(self.pattern, value) else f"{shown(value)} is not {self.what}"


@dataclass(frozen=True)
class Check:
    """Any other rule on one value: `rule(value)` returns what is wrong, or None.
    `shows_value`: whether that message may quote the value (then a secret's is not shown)."""

    rule: Callable[[Any], str | None]
    shows_value: bool = True

    def check(self, value: Any) -> str | None:
        return self.rule(value)


@dataclass(frozen=True)
class MaxItems:
    """At most `count` entries (a list or a map)."""

    count: int
    why: str = ""

    def check(self, value: Sized) -> str | None:
        if len(value) <= self.count:
            return None
        return f"has {len(value)} entries; at most {self.count}" + (f" ({self.why})" if self.why else "")


class Sized(typing.Protocol):
    def __len__(self) -> int: ...


Secret = Annotated[T, "secret"]
"""A value kept secret end to end (encrypted in state, redacted in every render)."""

Constraint = Range | Matches | Check | MaxItems


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# ---------------------------------------------------------------- fields


class _Required:
    """The default of an arg that has none."""

    def __repr__(self) -> str:
        return "<required>"


_MISSING: Any = _Required()


@dataclass(frozen=True)
class Field:
    """One arg: its name, type, default and documentation, read from the args class."""

    name: str
    type: Any  # the annotation, Annotated and Input included
    doc: str
    owner: type
    default: Any = _MISSING  # _MISSING: required
    default_factory: Callable[[], Any] | None = None

    @property
    def required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    @property
    def schema_name(self) -> str:
        return camel(self.name)

    def default_value(self) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        return None if self.default is _MISSING else self.default

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        return _constraints(self.type)

    @property
    def secret(self) -> bool:
        return _is_secret(self.type)

    @property
    def accepts_outputs(self) -> bool:
        """Whether the value may come from another resource (pulumi.Input[...])."""
        return input_of(unannotated(self.type)) is not None


@cache
def fields(cls: type[object]) -> dict[str, Field]:
    """The args of an args class (a dataclass), in declaration order."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not an args dataclass")
    hints = type_hints(cls)
    docs = attribute_docs(cls)
    out: dict[str, Field] = {}
    for f in dataclasses.fields(cls):
        if f.name.startswith("_"):
            continue
        out[f.name] = Field(
            name=f.name,
            type=hints[f.name],
            doc=docs.get(f.name, ""),
            owner=cls,
            default=_MISSING if f.default is dataclasses.MISSING else f.default,
            default_factory=None if f.default_factory is dataclasses.MISSING else f.default_factory,
        )
    return out


def type_hints(cls: type) -> dict[str, Any]:
    """The annotations of `cls`, resolved (pulumi.Input[T] names Output[T] by a forward reference)."""
    return typing.get_type_hints(cls, localns={"Output": pulumi.Output, "T": T}, include_extras=True)


@cache
def attribute_docs(cls: type) -> dict[str, str]:
    """The docstring under each annotated attribute of `cls` (and of its bases)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        tree = ast.parse(source)
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        body: list[ast.stmt] = classes[0].body if classes else []
        for node, after in zip(body, [*body[1:], None], strict=True):
            documented_field = (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            if documented_field:
                docs[node.target.id] = inspect.cleandoc(after.value.value)  # type: ignore[union-attr]
    return docs


# ---------------------------------------------------------------- types


def unannotated(tp: Any) -> Any:
    """The type without Annotated metadata."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _constraints(tp: Any) -> tuple[Constraint, ...]:
    """Every constraint on a type, through Annotated, Input and Optional (one traversal for the
    checks and the docs)."""
    found: list[Constraint] = []
    while True:
        if get_origin(tp) is Annotated:
            found += [m for m in tp.__metadata__ if isinstance(m, Range | Matches | Check | MaxItems)]
            tp = get_args(tp)[0]
            continue
        inner = input_of(tp) or optional_of(tp)
        if inner is None:
            return tuple(found)
        tp = inner


def _is_secret(tp: Any) -> bool:
    while True:
        if get_origin(tp) is Annotated:
            if "secret" in tp.__metadata__:
                return True
            tp = get_args(tp)[0]
            continue
        inner = input_of(tp) or optional_of(tp)
        if inner is None:
            return False
        tp = inner


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


def input_of(tp: Any) -> Any | None:
    """T for pulumi.Input[T] (T | Awaitable[T] | Output[T]), else None."""
    if not _is_union(tp):
        return None
    plain = None
    has_output = False
    for a in get_args(tp):
        origin = get_origin(a)
        if (
            origin is pulumi.Output
            or a is pulumi.Output
            or (isinstance(a, typing.ForwardRef) and "Output" in a.__forward_arg__)
        ):
            has_output = True
        elif origin in (Awaitable, typing.Awaitable):
            plain = get_args(a)[0]
    return plain if has_output and plain is not None else None


def is_args_class(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def literal_values(tp: Any) -> tuple[Any, ...] | None:
    tp = unannotated(tp)
    inner = optional_of(tp) or input_of(tp)
    if inner is not None:
        return literal_values(inner)
    return get_args(tp) if get_origin(tp) is Literal else None


def describe(tp: Any, classes: bool = False) -> str:
    """A short human name of a type, for docs and errors; `classes`: args classes by their name
    (help()), else "object" (the config reference, where Python's class names mean nothing)."""
    tp = unannotated(tp)
    inner = input_of(tp)
    if inner is not None:
        return describe(inner, classes)
    inner = optional_of(tp)
    if inner is not None:
        return describe(inner, classes)
    origin = get_origin(tp)
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


# ---------------------------------------------------------------- checking values


@dataclass(frozen=True)
class Schema:
    """Which fields of an args class a mapping may give, under which names (`build`)."""

    cls: type
    only: frozenset[str] | None = None  # None: every field
    retired: Mapping[str, str] = dataclasses.field(default_factory=dict[str, str])  # old key -> the fix

    def keys(self) -> dict[str, Field]:
        every = fields(self.cls)
        return {n: f for n, f in every.items() if self.only is None or n in self.only}


def _kind_error(value: Any, expected: str, secret: bool = False) -> str:
    """'must be <expected>, not <the value>': a secret's value never shown, only its kind."""
    return f"must be {expected}, not {kind_of(value) if secret else shown(value)}"


DEFERRED = "must be known at preview; it cannot come from another resource (an Output)"


def check_value(
    tp: Any, value: Any, path: tuple[PathPart, ...], naming: Naming, out: list[Problem], secret: bool = False
) -> Any:
    """Check `value` against type `tp`; append problems; return the value to keep (dicts given
    for args classes become instances, when they are well formed). The value of a secret (a
    Secret[...] type, or `secret`) is never shown in a problem."""
    secret = secret or _is_secret(tp)
    constraints = _constraints(tp)
    tp = unannotated(tp)
    inner = optional_of(tp)
    if inner is not None:
        if value is None:
            return None
        return check_value(inner, value, path, naming, out, secret)
    inner = input_of(tp)
    if inner is not None:
        if _deferred(value):
            return value  # known only at deploy time
        tp = unannotated(inner)  # known now: held to the same constraints
    if _deferred(value) and tp is not Any:
        out.append(Problem(path, DEFERRED, "type"))
        return value
    before = len(out)
    result = _check_plain(tp, value, path, naming, out, secret)
    if len(out) == before:
        for c in constraints:
            why = c.check(result)
            if why and secret and (isinstance(c, Matches) or (isinstance(c, Check) and c.shows_value)):
                why = "breaks its rule (its value is secret, so it is not shown here)"
            if why:
                # A number out of bounds is not used at all (10 million replicas would make 10
                # million names); a string that breaks a naming rule still is, for the other rules.
                out.append(Problem(path, why, "range" if isinstance(c, Range) else "constraint"))
    return result


def _deferred(value: object) -> bool:
    return isinstance(value, pulumi.Output) or inspect.isawaitable(value)


def _check_plain(
    tp: Any, value: Any, path: tuple[PathPart, ...], naming: Naming, out: list[Problem], secret: bool = False
) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin is Literal:
        options = get_args(tp)
        if value not in options or isinstance(value, bool) != any(isinstance(o, bool) for o in options):
            close = did_you_mean(str(value), [str(o) for o in options]) if isinstance(value, str) else []
            hint = f"; did you mean {close[0]}?" if close and not secret else ""
            expected = "one of " + ", ".join(str(o) for o in options)
            out.append(Problem(path, _kind_error(value, expected, secret) + hint, "type"))
        return value
    if tp is bool:
        if not isinstance(value, bool):
            out.append(Problem(path, _kind_error(value, "true or false", secret), "type"))
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            out.append(Problem(path, _kind_error(value, "a whole number", secret), "type"))
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            out.append(Problem(path, _kind_error(value, "a number", secret), "type"))
        elif not math.isfinite(value):
            out.append(Problem(path, f"must be a finite number, not {kind_of(value) if secret else value}", "type"))
        return value
    if tp is str:
        if not isinstance(value, str):
            if isinstance(value, int | float) and not isinstance(value, bool) and not secret and naming == "schema":
                out.append(
                    Problem(
                        path,
                        f"must be text; YAML reads this as the number {shown(value)} (so 1.30 becomes 1.3): quote "
                        f'it, e.g. "{shown(value)}"',
                        "number-as-text",
                    )
                )
            else:
                out.append(Problem(path, _kind_error(value, "text", secret), "type"))
        elif "\x00" in value or any(ord(ch) < 32 and ch not in "\t\n" for ch in value):
            out.append(Problem(path, "contains control characters", "type"))
        return value
    if origin in (list, Sequence, tuple):
        (item,) = get_args(tp)[:1]
        if not is_list_or_tuple(value):
            out.append(Problem(path, _kind_error(value, f"a list of {describe(item)}", secret), "type"))
            return value
        return [check_value(item, v, (*path, i), naming, out, secret) for i, v in enumerate(value)]
    if origin in (dict, Mapping):
        _, item = get_args(tp)
        if not is_mapping(value):
            out.append(Problem(path, _kind_error(value, "a map of key: value", secret), "type"))
            return value
        result: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                out.append(Problem((*path, Key(shown(k))), f"keys must be text, not {kind_of(k)}", "type"))
                continue
            result[k] = check_value(item, v, (*path, Key(k)), naming, out, secret)
        return result
    if is_args_class(tp):
        if isinstance(value, tp):
            out += check_instance(value, path, naming)
            return value
        if is_mapping(value):
            built, problems = build(Schema(tp), value, naming, path)
            out += problems
            return built if built is not None else value
        out.append(Problem(path, _kind_error(value, f"a {tp.__name__} (a map of its args)", secret), "type"))
        return value
    if isinstance(tp, type):
        if not isinstance(value, tp):
            out.append(Problem(path, _kind_error(value, f"a {tp.__name__}", secret), "type"))
        return value
    return value


def build(
    schema: Schema, data: object, naming: Naming = "python", path: tuple[PathPart, ...] = ()
) -> tuple[Any | None, list[Problem]]:
    """An args instance from a mapping written with `naming` keys: (instance, problems). Every
    key is checked; nothing unknown passes. A key with a problem is left at its default in the
    instance, so the rules can still judge the rest (None: a required key is missing or bad)."""
    problems: list[Problem] = []
    if not is_mapping(data):
        return None, [Problem(path, _kind_error(data, f"a {schema.cls.__name__} (a map of its args)"), "type")]
    known = schema.keys()
    by_key = {(camel(n) if naming == "schema" else n): f for n, f in known.items()}
    values: dict[str, Any] = {}
    bad: set[str] = set()
    for key, value in data.items():
        f = by_key.get(key) if isinstance(key, str) else None
        if f is None:
            problems.append(_unknown(schema, str(key), by_key, path, naming))
            continue
        before = len(problems)
        checked = check_value(f.type, value, (*path, f.name), naming, problems)
        if not unusable(problems[before:]):
            values[f.name] = checked  # well typed (perhaps out of bounds): the rules may judge the rest
        else:
            bad.add(f.name)
    for f in known.values():
        if f.required and f.name not in values and f.name not in bad:
            what = f.doc.splitlines()[0].rstrip(".") if f.doc else describe(f.type)
            problems.append(Problem((*path, f.name), f"required: {what}", "required"))
    if any(known[n].required for n in bad) or any(f.required and f.name not in values for f in known.values()):
        return None, problems
    try:
        return schema.cls(**values), problems
    except (TypeError, ValueError) as err:  # a required field outside `only`: the caller fills it in
        return None, [*problems, Problem(path, str(err), "shape")]


def _unknown(
    schema: Schema, key: str, by_key: Mapping[str, Field], path: tuple[PathPart, ...], naming: Naming
) -> Problem:
    for old, fix in schema.retired.items():
        if key in (old, camel(old)):
            return Problem((*path, Key(key)), fix, "retired")
    close = did_you_mean(key, by_key)
    hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(by_key)}"
    return Problem((*path, Key(key)), f"unknown{hint}", "unknown")


def check_instance(obj: object, path: tuple[PathPart, ...] = (), naming: Naming = "python") -> list[Problem]:
    """The problems of an args instance a caller built: the field types, bounds and modes (a
    Python program is not type-checked at run time, so a wrong shape is named here, not deep
    inside Pulumi)."""
    problems: list[Problem] = []
    for f in fields(type(obj)).values():
        check_value(f.type, getattr(obj, f.name), (*path, f.name), naming, problems)
    return problems


def _normalized(obj: Any, naming: Naming) -> tuple[Any | None, list[Problem]]:
    """An args instance a caller built, checked field by field: nested maps given for args
    classes become instances, a field with a problem goes back to its default (None: a required
    one)."""
    problems: list[Problem] = []
    every = fields(obj.__class__)
    changes: dict[str, Any] = {}
    for f in every.values():
        before = len(problems)
        value = getattr(obj, f.name)
        checked = check_value(f.type, value, (f.name,), naming, problems)
        if unusable(problems[before:]):
            if f.required:
                return None, problems + [
                    q
                    for g in list(every.values())[list(every).index(f.name) + 1 :]
                    for q in _field_problems(obj, g, naming)
                ]
            changes[f.name] = f.default_value()
        elif checked != value:  # nested maps that became args instances
            changes[f.name] = checked
    return (dataclasses.replace(obj, **changes) if changes else obj), problems


def unusable(problems: Sequence[Problem]) -> bool:
    """Whether a value with these problems cannot be used at all (a wrong type, not merely out of
    bounds): the rules must not look at it."""
    return any(p.code != "constraint" for p in problems)


def _field_problems(obj: Any, f: Field, naming: Naming) -> list[Problem]:
    out: list[Problem] = []
    check_value(f.type, getattr(obj, f.name), (f.name,), naming, out)
    return out


def as_args(cls: type[T], value: Any, naming: Naming = "python") -> tuple[T | None, list[Problem]]:
    """A component's `args` as given (an instance of `cls`, or a mapping of its args), checked:
    (the args with any ill-formed field at its default, or None; the problems)."""
    if isinstance(value, cls):
        return _normalized(value, naming)
    if is_mapping(value):
        return build(Schema(cls), value, naming)
    return None, [Problem((), _kind_error(value, f"a {cls.__name__}"), "type")]


def checked_args(
    component: str,
    name: str,
    cls: type[T],
    args: Any,
    *rules: Callable[[T], list[Problem]],
    also: Sequence[Problem] = (),
) -> T:
    """A component's args, checked: their shape, then the component's rules on what is well
    formed (a rule does not speak of a field already reported). Raises InvalidArgsError with every
    problem (and those in `also`, e.g. about its options) before the component registers anything."""
    instance, problems = as_args(cls, args)
    problems = problems + judged(instance, problems, rules) + list(also)
    if problems or instance is None:
        raise InvalidArgsError(component, name, problems)
    return instance


def resource_name_problems(cls: type, field: str, resource_name: str) -> list[Problem]:
    """The problems of `resource_name` as the `field` it stands in for when that is not given
    (a pool's or a model's name): the field's own rules, saying where the value came from."""
    problems: list[Problem] = []
    check_value(fields(cls)[field].type, resource_name, (field,), "python", problems)
    return [
        dataclasses.replace(
            p, message=f"{p.message}; it is the resource name, which `{field}` defaults to: set `{field}`"
        )
        for p in problems
    ]


def judged(instance: T | None, shape: list[Problem], rules: Sequence[Callable[[T], list[Problem]]]) -> list[Problem]:
    """The rules' problems with `instance`, but none about a field `shape` already names (nor
    about the args as a whole, which the rules judged without that field)."""
    if instance is None:
        return []
    found = [p for rule in rules for p in rule(instance)]
    if not shape:
        return found
    reported = {p.path[:1] for p in shape}
    whole = not unusable(shape)  # the rules saw every field: what they say of the whole stands
    return [p for p in found if (p.path and p.path[:1] not in reported) or (not p.path and whole)]


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
        return ", ".join(f"{camel(k)}: {v}" for k, v in dataclasses.asdict(value).items())
    return str(value) if not is_list(value) else ", ".join(str(v) for v in value)


SECRET_SHOWN = "[secret]"


def _repr_without_secrets(self: object) -> str:
    """The dataclass repr, a secret's value replaced (a repr ends up in logs and tracebacks)."""
    own = fields(type(self))
    shown_fields = [
        f"{f.name}={SECRET_SHOWN if f.name in own and own[f.name].secret and value is not None else repr(value)}"
        for f in dataclasses.fields(self)  # type: ignore[arg-type]
        if f.repr
        for value in [getattr(self, f.name)]
    ]
    return f"{type(self).__qualname__}({', '.join(shown_fields)})"


def documented(cls: type[T]) -> type[T]:
    """Append each arg's description, type, bounds and default to the class docstring, so
    help(), IDEs and the generated docs show the same text as the provider schema; and keep
    secret values out of the repr."""
    lines = [inspect.cleandoc(cls.__doc__ or ""), "", "Args:"]
    for f in fields(cls).values():
        default = default_text(f)
        facts = [describe(f.type, classes=True), constraint_text(f), "required" if f.required else ""]
        facts.append(f"default {default}" if default else "")
        head = f"    {f.name} ({', '.join(x for x in facts if x)})"
        lines.append(head + ":")
        lines += [f"        {line}" for line in (f.doc or "").splitlines()]
    cls.__doc__ = "\n".join(lines)
    cls.__repr__ = _repr_without_secrets  # type: ignore[method-assign, assignment]
    return cls


def constraint_text(f: Field) -> str:
    parts: list[str] = []
    for c in f.constraints:
        if isinstance(c, Range):
            if c.min is not None and c.max is not None:
                parts.append(f"{_num(c.min)}-{_num(c.max)}")
            elif c.min is not None:
                parts.append(f">= {_num(c.min)}")
            elif c.max is not None:
                parts.append(f"<= {_num(c.max)}")
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
