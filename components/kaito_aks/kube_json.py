"""Kubernetes values as KAITO's webhook decodes them inside a Workspace's schemaless fields (a
tuning volumeSource, a custom image's pod template): strictly, with knative's decoder and
DisallowUnknownFields (pkg/workspace/webhooks/webhooks.go, 0.8.1 to 0.12.0), so a key Kubernetes
does not define denies the Workspace (`json: unknown field "<key>"`), and a value of the wrong
JSON type does too. The API server prunes nothing there first. Fields and types come from
catalog/kube_fields.yaml (scripts/kube_fields.py, Kubernetes' Go types)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, cast

import yaml

from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import Key, PathPart, did_you_mean

FIELDS_FILE = Path(__file__).parent / "catalog" / "kube_fields.yaml"
# resource.ParseQuantity's grammar: a signed decimal number and a binary, decimal or exponent suffix
# (what a quantity is for every reader: the capacity budget's arithmetic too, catalog/capacity.py).
QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_INT_RANGE = {"int32": 1 << 31, "int64": 1 << 63}

Found = tuple[tuple[PathPart, ...], str]
"""Where inside the value (data keys and indexes) and what is wrong."""


@cache
def types() -> dict[str, dict[str, str]]:
    """Struct name -> JSON field -> type, for every struct the roots reach."""
    return cast(dict[str, dict[str, str]], yaml.safe_load(FIELDS_FILE.read_text())["types"])


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _field(fields: dict[str, str], key: str) -> str | None:
    """The field `key` decodes into: Go's encoding/json prefers an exact name, else one that
    differs only in case."""
    if key in fields:
        return key
    return next((f for f in fields if f.lower() == key.lower()), None)


def problems(value: Any, kind: str, path: tuple[PathPart, ...] = ()) -> Iterator[Found]:
    """What the strict decoder refuses in `value` decoded as `kind` (a struct of kube_fields.yaml,
    `[]T`, `map[string]T` or a scalar kind)."""
    if value is None or kind == "any":
        return  # null decodes into anything
    if kind.startswith("[]"):
        if not is_list(value):
            yield path, f"must be a list (Kubernetes' {kind})"
            return
        for i, item in enumerate(value):
            yield from problems(item, kind[2:], (*path, i))
    elif kind.startswith("map[string]"):
        if not is_dict(value):
            yield path, "must be a map"
            return
        for k, item in value.items():
            yield from problems(item, kind.removeprefix("map[string]"), (*path, Key(str(k))))
    elif kind in types():
        yield from _struct(value, kind, path)
    else:
        error = _scalar(value, kind)
        if error is not None:
            yield path, error


def _struct(value: Any, kind: str, path: tuple[PathPart, ...]) -> Iterator[Found]:
    name = kind.removeprefix("metav1.")
    if not is_dict(value):
        yield path, f"must be a map (Kubernetes' {name})"
        return
    fields = types()[kind]
    for key, item in value.items():
        field = _field(fields, str(key))
        if field is None:
            close = did_you_mean(str(key), fields)
            listed = ", ".join(list(fields)[:8]) + (", ..." if len(fields) > 8 else "")
            hint = f"; did you mean {close[0]}?" if close else f"; {name} has {listed}"
            yield (
                (*path, Key(str(key))),
                f'not a field of Kubernetes\' {name} (KAITO decodes it strictly: json: unknown field "{key}"){hint}',
            )
        else:
            yield from problems(item, fields[field], (*path, Key(str(key))))


def _scalar(value: Any, kind: str) -> str | None:
    if kind in ("string", "time"):
        return None if isinstance(value, str) else f"must be text, not {value!r}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"must be true or false, not {value!r}"
    if kind in _INT_RANGE:
        whole = _number(value) and float(value).is_integer() and abs(value) < _INT_RANGE[kind]
        return None if whole else f"must be a whole number ({kind}), not {value!r}"
    if kind == "intOrString":
        return (
            None
            if isinstance(value, str) or (_number(value) and float(value).is_integer())
            else f"must be a number or text, not {value!r}"
        )
    if kind == "quantity":
        if _number(value) or (isinstance(value, str) and QUANTITY.fullmatch(value.strip())):
            return None
        return f"{value!r} is not a Kubernetes quantity (e.g. 500m, 2, 16Gi)"
    raise ValueError(f"kube_fields.yaml names an unknown kind {kind}")
