"""The waits' arguments, checked the way the components check theirs: every problem at once, at
its path (`args.<name>`), before anything registers, as an InvalidArgsError (never a TypeError
from deep inside, and never a wait that cannot end: a NaN timeout compares false with every
clock). A value known only at deploy time (an Output) passes only where the wait takes one."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import cast

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.problems import Problem, raise_if, shown
from kaito_aks.schema import deferred

MAX_MINUTES = 1440  # a day, as the components' `*_timeout_minutes` args

Rule = Callable[[object], str | None]
"""Why a value is wrong, or None."""


def minutes(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of minutes, not {shown(value)}"
    if not math.isfinite(value):
        return f"must be a finite number of minutes, not {shown(value)} (the wait would never end)"
    if not 0 < value <= MAX_MINUTES:
        return f"must be more than 0 and at most {MAX_MINUTES} minutes (a day), not {shown(value)}"
    return None


def text(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be text, not {shown(value)}"
    return None if value else "must not be empty"


def boolean(value: object) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, not {shown(value)}"


def labels(value: object) -> str | None:
    """A node selector's matchLabels: KAITO lists nodes by them, so never empty."""
    if not isinstance(value, Mapping):
        return f"must be a map of label: value (KAITO lists nodes by matchLabels), not {shown(value)}"
    given = cast(Mapping[object, object], value)
    if not given:
        return "must not be empty: KAITO lists nodes by matchLabels, and an empty selector matches every node"
    if any(not isinstance(k, str) or not isinstance(v, str) for k, v in given.items()):
        return "must map text to text (label: value)"
    return None


def instance(kind: type, what: str) -> Rule:
    return lambda value: None if isinstance(value, kind) else f"must be {what}, not {shown(value)}"


def list_of(kind: type, what: str, *, empty: bool = True) -> Rule:
    def check(value: object) -> str | None:
        if not isinstance(value, list):
            return f"must be a list of {what}, not {shown(value)}"
        items = cast(list[object], value)
        wrong = next((i for i, item in enumerate(items) if not isinstance(item, kind)), None)
        if wrong is not None:
            return f"entry {wrong} must be {what}, not {shown(items[wrong])}"
        return None if items or empty else f"must name at least one {what}"

    return check


def optional(rule: Rule) -> Rule:
    return lambda value: None if value is None else rule(value)


def either(*rules: Rule) -> Rule:
    """The value passes one of the rules; else the first one's reason."""

    def check(value: object) -> str | None:
        reasons = [r(value) for r in rules]
        return None if any(r is None for r in reasons) else reasons[0]

    return check


def check_wait_args(
    kind: str, name: object, access: object, *, later: tuple[str, ...] = (), **given: tuple[object, Rule]
) -> None:
    """Raise InvalidArgsError naming every wrong arg of a wait (`given`: arg -> (value, its rule));
    `later`: the args that may come from another resource (an Output), known at deploy time."""
    problems: list[Problem] = []
    if not isinstance(name, str) or not name:
        problems.append(Problem(("name",), f"must be the resource's name (text), not {shown(name)}", "type"))
    if not isinstance(access, ClusterAccess):
        problems.append(
            Problem(
                ("access",),
                f"must be a ClusterAccess (e.g. kaito_aks.ClusterAccess(kubeconfig=cluster.kubeconfig)), not {shown(access)}",
                "type",
            )
        )
    for arg, (value, rule) in given.items():
        if deferred(value):
            why = None if arg in later else "must be known now; it cannot come from another resource (an Output)"
        else:
            why = rule(value)
        if why is not None:
            problems.append(Problem((arg,), why, "type"))
    raise_if(kind, name if isinstance(name, str) else shown(name), problems)
