"""Reading the API server's answers without trusting their shape: a broken or hostile server may
send `items: 5`, `metadata: []` or conditions that are text. Each reader here gives the
caller what it asks for or nothing (None, []), never a KeyError or AttributeError; `items_of`
fails a list that is not one with a KubeApiError, which the waits retry and `status` reports."""

from __future__ import annotations

import calendar
import time
import urllib.parse
from typing import Any, cast

from kaito_aks.parsed import is_dict, is_list
from kaito_aks.waits.kube_client import KubeApiError


def field_at(obj: object, *path: str) -> object:
    """The value at `path` in nested maps, or None where a step is missing or not a map."""
    node: object = obj
    for key in path:
        node = cast(dict[str, Any], node).get(key) if is_dict(node) else None
    return node


def text_at(obj: object, *path: str) -> str | None:
    value = field_at(obj, *path)
    return value if isinstance(value, str) else None


def list_items(answer: object) -> list[dict[str, Any]]:
    """A list answer's items that are objects ([] when it has none, or is not a list)."""
    items = field_at(answer, "items")
    return [i for i in items if is_dict(i)] if is_list(items) else []


def items_of(answer: dict[str, Any], what: str, *, named: bool = False) -> list[dict[str, Any]]:
    """A list answer's items, each an object (with a name, if `named`); a KubeApiError (no
    usable answer) when it is not such a list, rather than a list that looks empty."""
    items = answer.get("items")
    if items is None:
        return []  # an empty list, as some servers write it
    if not is_list(items) or not all(is_dict(i) for i in items):
        raise KubeApiError(0, f"the API server's list of {what} is not a Kubernetes list (items that are objects)")
    if named and not all(isinstance(text_at(i, "metadata", "name"), str) for i in items):
        raise KubeApiError(0, f"the API server's list of {what} has items without a name")
    return cast(list[dict[str, Any]], items)


def conditions_of(obj: object) -> list[dict[str, Any]]:
    """An object's status conditions that are maps."""
    found = field_at(obj, "status", "conditions")
    return [c for c in found if is_dict(c)] if is_list(found) else []


def labels_of(obj: object) -> dict[str, str]:
    """An object's labels whose keys and values are text."""
    found = field_at(obj, "metadata", "labels")
    if not is_dict(found):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def segment(name: str) -> str:
    """A name as one path segment of a URL (a name from the cluster cannot reach another path)."""
    return urllib.parse.quote(name, safe="")


def seconds_since(stamp: object, now: float) -> float | None:
    """Seconds since an RFC 3339 UTC time, as the API server writes them (None: not one)."""
    if not isinstance(stamp, str):
        return None
    try:
        then = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    return max(0.0, now - then)
