"""What is wrong with a component's args: one `Problem` type, shared by the components and by
any program that maps its own config onto them.

A problem's path is structural: arg names (rendered in Python's snake_case or the schema's
camelCase), list indexes, and data keys (`Key`, e.g. a label or a chart value, never renamed).
`problem.under("workspaces", 2)` re-roots it, so a program reports it at its own config path
without touching the message. Arg names quoted in backticks inside a message are renamed the
same way (`hf_token` in Python reads `hfToken` in YAML).
"""

from __future__ import annotations

import datetime
import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

import pulumi

from kaito_aks.vocabulary import camel

Naming = Literal["python", "schema"]
"""How arg names are written: Python's snake_case, or the camelCase of the provider schema and
of stack config files."""


class Key(str):
    """A data key inside an arg (a label, a chart value, a runtime parameter): never renamed."""

    __slots__ = ()


PathPart = str | Key | int

_QUOTED = re.compile(r"`([^`\s]+)`")
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_:-]*")


def rename(text: str, naming: Naming) -> str:
    """`text` with its backticked arg names and dotted arg paths written the `naming` way (and
    the backticks, which only mark them, dropped)."""

    def one(match: re.Match[str]) -> str:
        inner = match.group(1)
        if "=" in inner or "/" in inner or ":" in inner or "(" in inner:
            return match.group(0)  # a label, a command or code: left as written
        if naming == "python":
            return inner
        return ".".join(camel(p) for p in inner.split("."))

    return _QUOTED.sub(one, text)


SHOWN = 60  # characters of a value a message shows
LONGEST_WORD = 200  # longer runs without a space (an echoed value) are cut in a message
LONGEST_MESSAGE = 2000


def shown(value: object, limit: int = SHOWN) -> str:
    """A value as a message shows it, bounded: YAML's null, true and false; text quoted with
    control characters escaped (never raw) and cut after `limit` characters; a set as a sorted
    list; a map or a list by its kind; any other object by its type, never its repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if value.bit_length() > 200:  # (str() of a 4300-digit number raises)
            return f"a number of {math.floor(value.bit_length() * math.log10(2)) + 1} digits"
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str | bytes):
        text = repr(value[:limit])
        return text if len(value) <= limit else f"{text}... ({len(value)} characters)"
    if isinstance(value, set | frozenset):
        members = cast("set[object]", value)
        listed = sorted(shown(v, 20) for v in members)
        return f"[{', '.join(listed[:20])}{', ...' if len(listed) > 20 else ''}]"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return f"a {type(value).__name__}"


def kind_of(value: object) -> str:
    """What a value is, without showing it (for a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def escaped(text: str) -> str:
    """`text` with every character that is not printable escaped (\x1b, \u202e): a message never
    carries a terminal escape or a line break from a value."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def bounded(message: str) -> str:
    """A message as it is printed: escaped, each run of more than LONGEST_WORD characters without
    a space (an echoed value) cut, and at most LONGEST_MESSAGE characters (head and tail kept)."""
    text = re.sub(
        rf"\S{{{LONGEST_WORD + 1},}}", lambda m: f"{m.group(0)[:SHOWN]}... ({len(m.group(0))} characters)", message
    )
    text = escaped(text)
    if len(text) > LONGEST_MESSAGE:
        text = f"{text[: LONGEST_MESSAGE - 500]} ... {text[-400:]}"
    return text


def parse_path(text: str) -> tuple[PathPart, ...]:
    """ "workspaces[2].label_selector" -> ("workspaces", 2, "label_selector")."""
    return tuple(int(i) if i else n for n, i in _PART.findall(text))


def format_path(path: Sequence[PathPart], naming: Naming = "python") -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        if isinstance(part, Key):
            key = str(part) if len(part) <= SHOWN else f"{part[:SHOWN]}..."
            text = key if _PLAIN_KEY.fullmatch(key) else '"' + escaped(key).replace('"', '\\"') + '"'
        else:
            text = camel(part) if naming == "schema" else part
        out += f".{text}" if out else text
    return out


@dataclass(frozen=True)
class Problem:
    """One thing wrong, where it is, and (in the message) how to fix it."""

    path: tuple[PathPart, ...]
    """Where: arg names, indexes and data keys, relative to what was checked (() = the whole)."""
    message: str
    """What is wrong and the fix, in the library's own terms."""
    code: str = ""
    """A stable name for the rule, so a program can add its own wording (e.g. a config command)."""
    bypassed: bool = False
    """A refusal the model's `bypass_checks` named: said as a warning (kaito_aks.policy)."""

    @classmethod
    def at(cls, path: str | Sequence[PathPart], message: str, code: str = "") -> Problem:
        return cls(parse_path(path) if isinstance(path, str) else tuple(path), message, code)

    def under(self, *prefix: str | PathPart) -> Problem:
        """The same problem seen from further out: `under("workspaces[2]")`, `under("args")`."""
        parts: list[PathPart] = []
        for p in prefix:
            parts.extend(parse_path(p) if isinstance(p, str) and not isinstance(p, Key) else (p,))
        return replace(self, path=(*parts, *self.path))

    def text(self, naming: Naming = "python") -> str:
        """ "path: message", arg names written the `naming` way."""
        where = format_path(self.path, naming)
        message = bounded(rename(self.message, naming))
        return f"{where}: {message}" if where else message

    def __str__(self) -> str:
        return self.text()


class InvalidArgsError(pulumi.RunError, ValueError):
    """A component's args break its rules. Raised before the component registers anything, with
    every problem at once; `problems` holds them for programs that report them their own way. A
    RunError, so `pulumi preview/up` prints the problems without a Python traceback."""

    def __init__(self, component: str, name: str, problems: Sequence[Problem], naming: Naming = "python"):
        self.component, self.name, self.problems = component, name, list(problems)
        listing = "\n".join(f"  - {_of_component(p).text(naming)}" for p in self.problems)
        super().__init__(f"{component} {name!r}: {len(self.problems)} problem(s) with its args:\n{listing}")


def _of_component(problem: Problem) -> Problem:
    """A problem as the component reports it: under `args`, unless it is about its resource
    options (`opts`)."""
    return problem if problem.path[:1] == ("opts",) else problem.under("args")


def raise_if(component: str, name: str, problems: Sequence[Problem]) -> None:
    if problems:
        raise InvalidArgsError(component, name, problems)


def did_you_mean(word: str, choices: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The closest choices to a misspelt word, case-insensitively; never the word itself."""
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(c.lower(), c)
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=n + 1, cutoff=cutoff)
    return [by_lower[c] for c in close if by_lower[c] != word][:n]
