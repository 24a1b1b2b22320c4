"""Reading Pulumi.<stack>.yaml files without the Pulumi CLI (for render, validate and tests), the way
the CLI reads them, and pointing a config path at its line in the file.

The CLI parses stack files as YAML 1.2 (Go's yaml.v3): `yes`/`on` are text, not booleans, and a
key written twice is an error. PyYAML speaks YAML 1.1, so this module gives it 1.2's scalar
rules and checks the document's event stream before building it: duplicate keys, nesting
deeper than MAX_DEPTH, an alias that refers to itself, and aliases that would expand to more
than MAX_NODES values (a "billion laughs" file) are refused with their line, as are bytes that
are not UTF-8 text and characters YAML does not allow. Nothing here raises anything but
StackFileError (or FileNotFoundError for a stack that does not exist).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kaito_aks.problems import Key, PathPart, camel
from stacks.config import PROJECT

ROOT = Path(__file__).resolve().parent.parent
# What a secret config value looks like to anything that cannot decrypt it.
SECRET_PLACEHOLDER = "[secret]"
MAX_DEPTH = 40  # maps and lists inside each other; the config schema needs 8
MAX_NODES = 100_000  # values after aliases are expanded
MAX_BYTES = 4 << 20  # a stack file is a few KiB

Location = tuple[int, str]  # (1-based line, the scalar's text as written, or "" for a map/list)


class StackFileError(Exception):
    """A stack file that cannot be read as config: says where, what, and how to fix it."""

    def __init__(self, path: Path, line: int | None, message: str):
        self.path, self.line = path, line
        where = f"{path.name}:{line}" if line else path.name
        super().__init__(f"{where}: {message}")


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core-schema scalars, as Go's yaml.v3 reads them."""


Yaml12Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+.0123456789"),
    ),
):
    Yaml12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 0) if text.startswith("0x") else int(text)


def _construct_bool(loader: yaml.SafeLoader, node: yaml.Node) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"  # type: ignore[arg-type]


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)


@dataclass(frozen=True)
class StackFile:
    name: str
    config: dict[str, Any]  # plain values by full key ("kaito-aks:workspaces")
    secrets: dict[str, str]  # secure values by full key, as placeholders (never decrypted)
    path: Path | None = None
    unreadable: tuple[str, ...] = ()  # secure values that are not Pulumi's ciphertext (v1:...)
    # YAML key path under `config:` -> where it is written
    locations: dict[tuple[str | int, ...], Location] = field(default_factory=dict, compare=False, repr=False)

    def locate(self, path: tuple[PathPart, ...]) -> Location | None:
        """The line of the deepest part of a config path (("workspaces", 1, "model") or
        (Key("kaito-aks:hfToken"),)) that the file writes."""
        keys = yaml_path(path)
        while keys:
            if keys in self.locations:
                return self.locations[keys]
            keys = keys[:-1]
        return None


def yaml_path(path: tuple[PathPart, ...]) -> tuple[str | int, ...]:
    """A config path as the keys the YAML writes: ("workspaces", 1, "label_selector") ->
    ("kaito-aks:workspaces", 1, "labelSelector")."""
    parts: list[str | int] = []
    for p in path:
        if isinstance(p, int):
            parts.append(p)
        else:
            parts.append(str(p) if isinstance(p, Key) else camel(p))
    if parts and isinstance(parts[0], str) and ":" not in parts[0]:
        parts[0] = f"{PROJECT}:{parts[0]}"
    return tuple(parts)


def stack_names(root: Path = ROOT) -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))


def stack_file_path(name: str, root: Path = ROOT) -> Path:
    return root / f"Pulumi.{name}.yaml"


def read_stack_file(name: str, root: Path = ROOT) -> StackFile:
    """A stack's config as the Pulumi CLI would hand it to the program. Raises StackFileError
    (file and line) for a file that is not valid YAML, or that is not a map of config values."""
    path = stack_file_path(name, root)
    if not path.is_file():
        known = ", ".join(stack_names(root)) or "none"
        raise FileNotFoundError(f"no stack file {path.name}; stacks here: {known}")
    return parse_stack_file(path.read_bytes(), path, name)


def parse_stack_file(data: bytes, path: Path, name: str) -> StackFile:
    if len(data) > MAX_BYTES:
        raise StackFileError(
            path, None, f"is {len(data)} bytes; a stack file is at most {MAX_BYTES} (is this the right file?)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise StackFileError(
            path, line, f"byte 0x{data[err.start]:02x} is not UTF-8 text; save the file as UTF-8"
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    document = _compose(text, path)
    try:
        data_ = Yaml12Loader(text).get_single_data()
    except (yaml.YAMLError, ValueError, OverflowError) as err:
        raise _yaml_error(path, err, text) from None
    if data_ is None:
        data_ = {}
    if not isinstance(data_, dict):
        raise StackFileError(path, 1, f"a stack file is a map with a `config:` key, not a {_kind(data_)}")
    raw_config = data_.get("config") or {}
    config_node = _child(document, "config")
    if not isinstance(raw_config, dict):
        line = config_node.start_mark.line + 1 if config_node is not None else None
        raise StackFileError(
            path,
            line,
            f"`config:` must be a map of `key: value` lines (e.g. `kaito-aks:workspaces: [...]`), not a {_kind(raw_config)}",
        )
    config: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    unreadable: list[str] = []
    for key, value in raw_config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            secrets[str(key)] = SECRET_PLACEHOLDER
            if not (isinstance(value["secure"], str) and value["secure"].startswith("v1:")):
                unreadable.append(str(key))
        else:
            config[str(key)] = value
    locations: dict[tuple[str | int, ...], Location] = {}
    if config_node is not None:
        _locate(config_node, (), locations)
    return StackFile(
        name=name, config=config, secrets=secrets, path=path, locations=locations, unreadable=tuple(unreadable)
    )


def _compose(text: str, path: Path) -> yaml.Node | None:
    """Check the event stream (iteratively: no recursion, bounded work), then build the node tree."""
    try:
        _check_events(yaml.parse(text, Loader=Yaml12Loader), path)
        return yaml.compose(text, Loader=Yaml12Loader)
    except yaml.YAMLError as err:
        raise _yaml_error(path, err, text) from None


@dataclass
class _Open:
    node: yaml.Event
    anchor: str | None
    is_map: bool
    keys: dict[str, int] = field(default_factory=dict)
    expecting_key: bool = True
    size: int = 1  # values inside, aliases expanded


def _check_events(events: Any, path: Path) -> None:
    stack: list[_Open] = []
    anchors: dict[str, int] = {}  # anchor -> expanded size
    total = 0

    def add(size: int, line: int) -> None:
        nonlocal total
        total += size
        for o in stack:
            o.size += size
        if total > MAX_NODES:
            raise StackFileError(
                path, line, f"expands to more than {MAX_NODES} values through its aliases (*name); write the values out"
            )

    def key_of(event: yaml.Event, line: int) -> None:
        top = stack[-1] if stack else None
        if top is None or not top.is_map:
            return
        if top.expecting_key:
            if isinstance(event, yaml.ScalarEvent):
                if event.value in top.keys and event.value != "<<":
                    raise StackFileError(
                        path,
                        line,
                        f"key {event.value!r} is written twice in this map (first on line {top.keys[event.value]}); keep one",
                    )
                top.keys[event.value] = line
            top.expecting_key = False
        else:
            top.expecting_key = True

    for event in events:
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent | yaml.MappingStartEvent | yaml.SequenceStartEvent):
            key_of(event, line)
        if isinstance(event, yaml.AliasEvent):
            if any(o.anchor == event.anchor for o in stack):
                raise StackFileError(
                    path, line, f"alias *{event.anchor} refers to the value that contains it; YAML cannot expand it"
                )
            add(anchors.get(event.anchor or "", 1), line)
        elif isinstance(event, yaml.ScalarEvent):
            add(1, line)
            if event.anchor:
                anchors[event.anchor] = 1
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise StackFileError(
                    path, line, f"nests maps and lists more than {MAX_DEPTH} deep; the config needs far fewer"
                )
            add(1, line)
            stack.append(_Open(event, event.anchor, isinstance(event, yaml.MappingStartEvent)))
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            closed = stack.pop()
            if closed.anchor:
                anchors[closed.anchor] = closed.size


def _yaml_error(path: Path, err: Exception, text: str) -> StackFileError:
    if isinstance(err, yaml.reader.ReaderError):
        line = text[: err.position].count("\n") + 1  # a ReaderError has the position in the text, not the text
        character = chr(err.character) if isinstance(err.character, int) else str(err.character)
        return StackFileError(path, line, f"character {character!r} is not allowed in YAML; remove it")
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(str(p) for p in (err.context, err.problem) if p)
        return StackFileError(
            path, line, f"not valid YAML ({problem}); check the indentation and quoting on this line and the one above"
        )
    return StackFileError(path, None, f"not valid YAML ({err})")


def _kind(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "value")


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v
    return None


def _locate(node: yaml.Node, path: tuple[str | int, ...], out: dict[tuple[str | int, ...], Location]) -> None:
    """Where each config path is written (iterative: the depth is bounded, but be safe)."""
    work: list[tuple[yaml.Node, tuple[str | int, ...]]] = [(node, path)]
    while work:
        current, at = work.pop()
        if isinstance(current, yaml.MappingNode):
            for k, v in current.value:
                if isinstance(k, yaml.ScalarNode):
                    key = (*at, k.value)
                    out.setdefault(key, (k.start_mark.line + 1, v.value if isinstance(v, yaml.ScalarNode) else ""))
                    work.append((v, key))
        elif isinstance(current, yaml.SequenceNode):
            for i, item in enumerate(current.value):
                key = (*at, i)
                out.setdefault(key, (item.start_mark.line + 1, item.value if isinstance(item, yaml.ScalarNode) else ""))
                work.append((item, key))
