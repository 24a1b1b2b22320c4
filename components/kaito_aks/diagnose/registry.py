"""The failure library's index: every detector by name, with the link of the chain it judges and
the upstream evidence it reads (the file:line@tag its docstring cites). `python -m stacks status`
and the waits call the same detectors; docs/operations.md lists them from here."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
# A citation: a path with a line (or line range) at a tag, e.g. api/v1beta1/workspace_validation.go:576@v0.12.0
CITATION = re.compile(r"[\w./-]+\.(?:go|yaml|yml|py|md|tpl):\d+(?:-\d+)?@[\w.-]+")


@dataclass(frozen=True)
class Detector:
    """One named detector: the link it judges and the function that judges it."""

    name: str
    link: str
    function: Callable[..., Any]

    @property
    def doc(self) -> str:
        return " ".join((self.function.__doc__ or "").split())

    @property
    def evidence(self) -> list[str]:
        """The upstream places it reads, as its docstring cites them."""
        return CITATION.findall(self.function.__doc__ or "")


DETECTORS: dict[str, Detector] = {}


def detector(name: str, link: str) -> Callable[[F], F]:
    """Register a detector under its name (one per name)."""

    def register(function: F) -> F:
        if name in DETECTORS:
            raise ValueError(f"two detectors are named {name}")
        DETECTORS[name] = Detector(name, link, function)
        return function

    return register
