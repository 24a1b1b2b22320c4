"""Config errors that name the config path (and, from a stack file, its line) and the fix, all
reported at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pulumi

from kaito_aks.problems import Key, Problem, bounded, format_path, rename
from stacks.config import PROJECT

if TYPE_CHECKING:
    from stacks.stackfile import StackFile


def config_path(problem: Problem) -> str:
    """Where a problem is, as a config path (workspaces[1].labelSelector, kaito-aks:hfToken)."""
    return format_path(problem.path, "schema")


def located(problem: Problem, source: StackFile | None) -> str:
    """The problem with its file and line, when the stack file writes that path."""
    where = config_path(problem)
    message = bounded(rename(problem.message, "schema"))
    text = f"{where}: {message}" if where else message
    if source is None or source.path is None:
        return text
    found = source.locate(problem.path)
    if found is None:
        return text
    line, written = found
    if problem.code == "number-as-text" and written:
        text = bounded(f'{where}: YAML reads {written} as the number {_number(written)}; quote it: "{written}"')
    return f"{source.path.name}:{line}: {text}"


def path_key(path: Sequence[object]) -> list[tuple[int, int | str]]:
    """Sort key: config paths in document order (workspaces[2] before workspaces[10])."""
    return [(0, p) if isinstance(p, int) else (1, str(p)) for p in path]


class StackConfigError(pulumi.RunError):
    """Raised before any resource is registered, so nothing half-deploys. A RunError, so
    `pulumi preview/up` prints the message without a Python traceback."""

    def __init__(self, problems: Sequence[Problem], source: StackFile | None = None):
        unique = sorted(set(problems), key=lambda p: (path_key(p.path), p.message))
        self.problems = unique
        self.source = source
        self.lines = [located(p, source) for p in unique]
        listing = "\n".join(f"  - {line}" for line in self.lines)
        super().__init__(f"invalid {PROJECT} stack config ({len(unique)} problem(s)):\n{listing}")

    def with_source(self, source: StackFile | None) -> StackConfigError:
        return StackConfigError(self.problems, source)


def secret_key(name: str) -> Key:
    """A secret config key as a path part: `kaito-aks:hfToken`."""
    return Key(f"{PROJECT}:{name}")


def _number(written: str) -> str:
    """The number the program receives for a scalar written so (1. -> 1, 0x1F -> 31)."""
    from stacks.pulumi_yaml import read_plain

    return str(read_plain(written))
