"""Config errors that name the config path and the fix, all reported at once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import pulumi
from pydantic import BaseModel, ValidationError

from stacks.config import PROJECT, RETIRED_KEYS

if TYPE_CHECKING:
    from stacks.stackfile import StackFile


@dataclass(frozen=True, order=True)
class Issue:
    path: str  # e.g. "workspaces[1].replicas"
    message: str
    # A number YAML read where text belongs (a version like 1.30 read as 1.3), for the fix.
    number: Any = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def located(self, source: StackFile | None) -> str:
        """The issue prefixed with its file and line (when the stack file writes that path)."""
        where = source.locate(self.path) if source is not None and source.path is not None else None
        if where is None:
            return str(self)
        line, text = where
        message = self.message
        if self.number is not None and text:
            message = f'YAML reads {text} as the number {self.number}; quote it: "{text}"'
        return f"{source.path.name}:{line}: {self.path}: {message}"  # type: ignore[union-attr]


class StackConfigError(pulumi.RunError):
    """Raised before any resource is registered, so nothing half-deploys. A RunError, so
    `pulumi preview/up` prints the message without a Python traceback."""

    def __init__(self, issues: Sequence[Issue], source: StackFile | None = None):
        self.issues = list(issues)
        self.source = source
        self.lines = [i.located(source) for i in self.issues]
        listing = "\n".join(f"  - {line}" for line in self.lines)
        super().__init__(f"invalid {PROJECT} stack config ({len(self.issues)} problem(s)):\n{listing}")

    def with_source(self, source: StackFile | None) -> StackConfigError:
        return StackConfigError(self.issues, source)


def format_path(loc: Iterable[str | int]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _known_keys(model: type[BaseModel], seen: set[type] | None = None) -> set[str]:
    """Every camelCase key of a model and of the models nested in it (for 'did you mean')."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        keys.add(info.alias or name)
        for arg in _type_args(info.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                keys |= _known_keys(arg, seen)
    return keys


def _type_args(tp: object) -> list[object]:
    args = list(getattr(tp, "__args__", ()) or ())
    out = [tp]
    for a in args:
        out.extend(_type_args(a))
    return out


@cache
def _suggestable_keys(model: type[BaseModel]) -> list[str]:
    return sorted(_known_keys(model))


def issues_from_validation(exc: ValidationError, model: type[BaseModel], prefix: tuple = ()) -> list[Issue]:
    known = _suggestable_keys(model)
    issues = []
    for err in exc.errors():
        loc = [*prefix, *err["loc"]]
        kind = err["type"]
        # Errors inside a tagged value carry the python type name as a loc element; drop it.
        loc = [p for p in loc if not (isinstance(p, str) and p.startswith("function-"))]
        path = format_path(loc)
        if kind == "extra_forbidden":
            key = str(loc[-1]) if loc else ""
            if key in RETIRED_KEYS:
                message = RETIRED_KEYS[key]
            else:
                close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]}?" if close else ""
                message = f"unknown key{hint}"
        elif kind == "missing":
            message = "required"
        elif kind == "string_type" and isinstance(err.get("input"), int | float) and not isinstance(err["input"], bool):
            number = err["input"]
            issues.append(
                Issue(
                    path,
                    f'YAML reads this as the number {number}, not text (so 1.30 becomes 1.3); quote it, e.g. "{number}"',
                    number=number,
                )
            )
            continue
        else:
            message = err["msg"].removeprefix("Value error, ")
        issues.append(Issue(path, message))
    return issues
