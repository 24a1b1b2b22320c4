"""isinstance for data of no declared shape (parsed YAML or JSON, values off the wire, user
maps): the checker reads `isinstance(value, dict)` as a dict of unknown types; these guards make
the same test and say its entries are Any, which is all such data promises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard


def is_dict(value: object) -> TypeGuard[dict[Any, Any]]:
    return isinstance(value, dict)


def is_list(value: object) -> TypeGuard[list[Any]]:
    return isinstance(value, list)


def is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    return isinstance(value, Mapping)
