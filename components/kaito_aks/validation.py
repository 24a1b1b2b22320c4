"""Checking args: pydantic validates, this module says it in the library's words. One adapter,
`problems_from`, turns pydantic's errors into `Problem`s at their paths (every one at once, a
did-you-mean for a misspelt key, a retired key's fix, a secret's value never shown, YAML's
number-for-text hint, a deploy-time value where one must be known now); `validate` reads a
mapping or an instance and keeps what is usable of it, so the components' rules can judge the
rest; `Judged` is args a component's rules found nothing wrong with, which it takes as they are."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, Generic, TypeVar, Union, cast, get_args, get_origin

import pulumi
from pydantic import GetCoreSchemaHandler, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails, core_schema

from kaito_aks import policy
from kaito_aks.parsed import is_mapping
from kaito_aks.problems import InvalidArgsError, Key, Naming, PathPart, Problem, camel, did_you_mean, kind_of, shown
from kaito_aks.schema import (
    ARGS_CONFIG,
    LENIENT,
    SWITCH_TAGS,
    USABLE_CODES,
    deferred,
    describe,
    fields,
    is_args_class,
    is_secret,
    literal_values,
    plain,
    refusal_of,
    unusable_keys,
    usable,
)

A = TypeVar("A")

DEFERRED = "must be known at preview; it cannot come from another resource (an Output)"
RETIRED_KEYS = "RETIRED_KEYS"
"""The class attribute naming an args class's (or a section's) retired keys, each with its fix."""
SECTION_FIELDS = "__section_fields__"
"""The attribute a section of a program's config (a TypedDict made of args fields) names its
fields in, by name with their types; `__docs__` their docs."""


@dataclass(frozen=True)
class Judged(Generic[A]):
    """Args a component's own rules found nothing wrong with (what `check_model` and
    `check_rag_engine` return, and the stack hands on): the component takes them as they are,
    without judging them a second time; `warnings`: what the rules said of them that refuses
    nothing (the component logs them)."""

    args: A
    warnings: tuple[Problem, ...] = ()


# ---------------------------------------------------------------- reading args


def validate(cls: type[A], data: object, naming: Naming = "python") -> tuple[A | None, list[Problem]]:
    """An args instance from `data` (an instance, or a mapping of its args in `naming`), checked:
    (the instance, or what is usable of it: fields with an unusable problem at their default;
    None when a required one is missing or unusable; the problems)."""
    if isinstance(data, cls):
        refusal = refusal_of(data)
        problems = problems_from(refusal.errors(), cls, naming) if refusal is not None else []
        return (data if usable(data) else None), problems
    if not is_mapping(data):
        return None, [Problem((), _kind_error(data, f"a {cls.__name__}"), "type")]
    validator: Any = getattr(cls, "__pydantic_validator__")  # noqa: B009
    by_alias = naming == "schema"
    try:
        return validator.validate_python(data, by_alias=by_alias, by_name=not by_alias), []
    except ValidationError as err:
        problems = problems_from(err.errors(), cls, naming)
        kept = without(data, err.errors())
        try:
            value = validator.validate_python(kept, by_alias=by_alias, by_name=not by_alias, context={LENIENT: True})
        except ValidationError:
            value = None
        return value, problems


def without(data: Mapping[Any, Any], errors: Sequence[ErrorDetails]) -> dict[Any, Any]:
    """`data` without the keys whose value is unusable (a wrong type, a number out of bounds, an
    unknown key): a key that only breaks a constraint stays, for the rules to judge the rest."""
    bad = unusable_keys(errors)
    return {k: v for k, v in data.items() if str(k) not in bad}


def unusable(problems: Sequence[Problem]) -> bool:
    """Whether a value with these problems cannot be used at all (a wrong type, not merely a
    broken constraint): the rules must not look at it."""
    return any(p.code not in USABLE_CODES for p in problems)


# ---------------------------------------------------------------- parts of a larger value, each on its own


@dataclass(frozen=True)
class Refused:
    """What a `SOFT` part of a larger value holds when its own value has problems: pydantic's
    errors (relative to it), its type, and what is usable of it (None: nothing)."""

    errors: tuple[ErrorDetails, ...]
    tp: Any
    usable: Any


class _Soft:
    """Annotated metadata: a part of a larger value (a section of a program's config, an entry of
    a list) checked on its own: its problems do not stop the rest, and what is usable of it stays
    for the rules (`collect` gathers both)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def soft(value: Any, validate: core_schema.ValidatorFunctionWrapHandler, info: Any) -> Any:
            try:
                return validate(value)
            except ValidationError as err:
                return Refused(tuple(err.errors()), source, _usable(value, validate, err, info.context))

        return core_schema.with_info_wrap_validator_function(soft, handler(source))


SOFT = _Soft()


def _usable(value: Any, validate: Any, err: ValidationError, context: dict[str, Any] | None) -> Any:
    """What is usable of a mapping with problems: its unusable keys left out, constraints waived
    (None: a required key is missing or unusable, or it is no mapping)."""
    if not is_mapping(value) or context is None:
        return None
    was = context.get(LENIENT)
    context[LENIENT] = True
    try:
        return validate(without(value, err.errors()))
    except ValidationError:
        return None
    finally:
        context[LENIENT] = was


def collect(value: Any, naming: Naming = "schema", path: tuple[PathPart, ...] = ()) -> tuple[Any, list[Problem]]:
    """A value read with `SOFT` parts, as plain data (a refused part as what is usable of it), and
    the problems of its parts at their paths."""
    if isinstance(value, Refused):
        problems = [p.under(*path) for p in problems_from(value.errors, value.tp, naming)]
        usable, inner = collect(value.usable, naming, path)
        return usable, problems + inner
    problems: list[Problem] = []
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in cast(dict[str, Any], value).items():
            out[k], found = collect(v, naming, (*path, k))
            problems += found
        return out, problems
    if isinstance(value, list):
        items: list[Any] = []
        for i, v in enumerate(cast(list[Any], value)):
            item, found = collect(v, naming, (*path, i))
            items.append(item)
            problems += found
        return items, problems
    return value, problems


# ---------------------------------------------------------------- pydantic's errors -> problems


def problems_from(errors: Sequence[ErrorDetails], root: Any, naming: Naming = "python") -> list[Problem]:
    """pydantic's errors for a value of type `root` as problems, each at its path (arg names,
    list indexes, data keys), in the words of the library (`naming`: how the value was written,
    for a misspelt key's suggestion and YAML's number-for-text hint)."""
    return [_problem(e, root, naming) for e in errors]


@dataclass
class _Spot:
    """Where an error is: its path, the type there, the args class (or section) owning the last
    field on the way, and whether a secret is on the way."""

    path: tuple[PathPart, ...] = ()
    tp: Any = Any
    owner: Any = None
    secret: bool = False
    key_error: bool = False  # the error is about a map's key, not its value


def _locate(root: Any, loc: tuple[int | str, ...]) -> _Spot:
    spot = _Spot(tp=root)
    for part in loc:
        if part == "[key]":
            spot.key_error = True
            continue
        spot.secret = spot.secret or is_secret(spot.tp)
        tp = plain(spot.tp)
        if part in SWITCH_TAGS and get_origin(tp) in (Union, UnionType):  # the member tried: not a key
            spot.tp = bool if part == SWITCH_TAGS[0] else next(a for a in get_args(tp) if a is not bool)
            continue
        known = _fields_of(tp)
        if known is not None:
            spot.owner = tp
            if str(part) in known:
                spot.path += (str(part),)
                spot.tp = known[str(part)]
            else:
                spot.path += (Key(str(part)),)
                spot.tp = Any
        elif get_origin(tp) in (list, tuple, Sequence) and isinstance(part, int):
            spot.path += (part,)
            spot.tp = get_args(tp)[0]
        elif get_origin(tp) in (dict, Mapping):
            spot.path += (Key(shown(part) if not isinstance(part, str) else part),)
            spot.tp = get_args(tp)[1]
        else:
            spot.path += (part if isinstance(part, int) else Key(str(part)),)
            spot.tp = Any
    spot.secret = spot.secret or is_secret(spot.tp)
    return spot


def _fields_of(tp: Any) -> dict[str, Any] | None:
    """The fields of an args class or a stack section (a TypedDict) by name, with their types."""
    if is_args_class(tp):
        return {name: f.type for name, f in fields(tp).items()}
    section: dict[str, Any] | None = getattr(tp, SECTION_FIELDS, None)
    return section


def _doc_of(owner: Any, name: str) -> str:
    if is_args_class(owner):
        return fields(owner)[name].doc if name in fields(owner) else ""
    docs: Mapping[str, str] = getattr(owner, "__docs__", {})
    return docs.get(name, "")


def _problem(error: ErrorDetails, root: Any, naming: Naming) -> Problem:
    spot = _locate(root, tuple(error["loc"]))
    kind, value = error["type"], error.get("input")
    if kind in ("missing", "missing_keyword_only_argument"):
        doc = _doc_of(spot.owner, str(spot.path[-1])) if spot.path else ""
        what = doc.splitlines()[0].rstrip(".") if doc else describe(spot.tp)
        return Problem(spot.path, f"required: {what}", "required")
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return _unknown(spot, naming)
    if spot.key_error:
        return Problem(spot.path, f"keys must be text, not {kind_of(value)}", "type")
    if kind in USABLE_CODES or kind == "range":
        return Problem(spot.path, _constraint_message(error, spot.secret), kind)
    if deferred(value):
        return Problem(spot.path, DEFERRED, "type")
    if kind not in _PYDANTIC_TYPES:  # a rule of the library's own (PydanticCustomError): its words
        return Problem(spot.path, error["msg"], kind)
    if kind == "string_type" and _number(value) and naming == "schema" and not spot.secret:
        return Problem(
            spot.path,
            f"must be text; YAML reads this as the number {shown(value)} (so 1.30 becomes 1.3): quote it, e.g. "
            f'"{shown(value)}"',
            "number-as-text",
        )
    return Problem(spot.path, _type_message(kind, value, spot), "type")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_PYDANTIC_TYPES = frozenset(
    {
        "string_type",
        "int_type",
        "bool_type",
        "float_type",
        "dict_type",
        "list_type",
        "literal_error",
        "finite_number",
        "dataclass_type",
        "dataclass_exact_type",
        "control_characters",
    }
)
_EXPECTED = {
    "string_type": "text",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "float_type": "a number",
    "dict_type": "a map of key: value",
}


def _type_message(kind: str, value: object, spot: _Spot) -> str:
    if kind == "control_characters":
        return "contains control characters"
    if kind == "finite_number":
        return f"must be a finite number, not {kind_of(value) if spot.secret else value}"
    if kind == "literal_error":
        options = literal_values(spot.tp) or ()
        close = did_you_mean(value, [str(o) for o in options]) if isinstance(value, str) else []
        hint = f"; did you mean {close[0]}?" if close and not spot.secret else ""
        return _kind_error(value, "one of " + ", ".join(str(o) for o in options), spot.secret) + hint
    if kind == "list_type":
        item = plain(get_args(plain(spot.tp))[0])
        what = "entries (`- name: ...`)" if _fields_of(item) is not None and not is_args_class(item) else describe(item)
        return _kind_error(value, f"a list of {what}", spot.secret)
    if kind in ("dataclass_type", "dataclass_exact_type"):
        return _kind_error(value, f"a {plain(spot.tp).__name__} (a map of its args)", spot.secret)
    return _kind_error(value, _EXPECTED.get(kind, kind), spot.secret)


def _kind_error(value: object, expected: str, secret: bool = False) -> str:
    """'must be <expected>, not <the value>': a secret's value never shown, only its kind."""
    return f"must be {expected}, not {kind_of(value) if secret else shown(value)}"


def _constraint_message(error: ErrorDetails, secret: bool) -> str:
    context = error.get("ctx") or {}
    why = str(context.get("why", error["msg"]))
    if secret and context.get("shows_value", True) and error["type"] != "range":
        return "breaks its rule (its value is secret, so it is not shown here)"
    return why


def _unknown(spot: _Spot, naming: Naming) -> Problem:
    key = str(spot.path[-1])
    retired: Mapping[str, str] = getattr(spot.owner, RETIRED_KEYS, {})
    for old, fix in retired.items():
        if key in (old, camel(old)):
            return Problem(spot.path, fix, "retired")
    known = [camel(n) if naming == "schema" else n for n in _fields_of(spot.owner) or {}]
    close = did_you_mean(key, known)
    hint = f"did you mean {close[0]}?" if close else f"known keys: {', '.join(known)}"
    return Problem(spot.path, f"unknown key; {hint}", "unknown")


# ---------------------------------------------------------------- components: shape, then rules


def judged(instance: A | None, shape: list[Problem], rules: Sequence[Callable[[A], list[Problem]]]) -> list[Problem]:
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


def checked_args(
    component: str,
    name: str,
    cls: type[A],
    args: Any,
    *rules: Callable[[A], list[Problem]],
    also: Sequence[Problem] = (),
) -> A:
    """A component's args, checked: their shape, then the component's rules on what is well
    formed (a rule does not speak of a field already reported). Raises InvalidArgsError with every
    problem (and those in `also`, e.g. about its options) before the component registers anything."""
    if isinstance(args, Judged):
        judged_args = cast(Judged[A], args).args
        if also:
            raise InvalidArgsError(component, name, list(also))
        return judged_args
    instance, problems = validate(cls, args)
    errors, warnings = policy.verdict(judged(instance, problems, rules), None)  # what refuses nothing: a warning
    problems = problems + errors + list(also)
    if problems or instance is None:
        raise InvalidArgsError(component, name, problems)
    for warning in warnings:
        pulumi.log.warn(f"{component} {name!r}: {warning.under('args').text()}")
    return instance


_ADAPTERS: dict[tuple[type, str], TypeAdapter[Any]] = {}


def resource_name_problems(cls: type, field: str, resource_name: str) -> list[Problem]:
    """The problems of `resource_name` as the `field` it stands in for when that is not given
    (a pool's or a model's name): the field's own rules, saying where the value came from."""
    if (cls, field) not in _ADAPTERS:
        _ADAPTERS[cls, field] = TypeAdapter(fields(cls)[field].type, config=ARGS_CONFIG)
    try:
        _ADAPTERS[cls, field].validate_python(resource_name)
        return []
    except ValidationError as err:
        problems = problems_from(err.errors(), fields(cls)[field].type)
    return [
        dataclasses.replace(
            p,
            path=(field, *p.path),
            message=f"{p.message}; it is the resource name, which `{field}` defaults to: set `{field}`",
        )
        for p in problems
    ]


def check_instance(instance: object) -> list[Problem]:
    """The problems of an args instance a caller built (what pydantic found when it was made)."""
    refusal = refusal_of(instance)
    return problems_from(refusal.errors(), type(instance)) if refusal is not None else []
