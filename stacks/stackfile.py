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

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kaito_aks.problems import Key, PathPart, bounded, camel
from stacks import pulumi_yaml
from stacks.config import PROJECT, SECRET_KEYS
from stacks.declared import stack_file_path, stack_names

ROOT = Path(__file__).resolve().parent.parent
# What a secret config value looks like to anything that cannot decrypt it.
SECRET_PLACEHOLDER = "[secret]"
MAX_DEPTH = 40  # maps and lists inside each other; the config schema needs 8
MAX_NODES = 100_000  # values after aliases are expanded
MAX_BYTES = 4 << 20  # a stack file is a few KiB

Location = tuple[int, str]  # (1-based line, the scalar's text as written, or "" for a map/list)
# A config path in YAML terms: the keys as the program receives them (the top one with its
# namespace), list indexes.


class StackFileError(Exception):
    """A stack file that cannot be read as config: says where, what, and how to fix it."""

    def __init__(self, path: Path, line: int | None, message: str):
        self.path, self.line = path, line
        where = f"{path.name}:{line}" if line else path.name
        super().__init__(f"{where}: {bounded(message)}")


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader reading scalars, tags and merge keys as Go's yaml.v3 (the Pulumi CLI)
    reads them (stacks/pulumi_yaml.py)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return pulumi_yaml.resolve(value)
        return super().resolve(kind, value, implicit)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A map with its keys as the program receives them, Go's text of each (so `true` and `1.`
        stay two keys, "true" and "1", where Python's True == 1.0 would make them one)."""
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, list | dict | set):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found a list or map as a key", key_node.start_mark
                )
            mapping[pulumi_yaml.go_key(key)] = self.construct_object(value_node, deep=deep)  # type: ignore[no-untyped-call]
        return mapping


def _construct_scalar(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    text = str(loader.construct_scalar(node))  # type: ignore[arg-type]
    try:
        return pulumi_yaml.scalar(str(node.tag), text)
    except ValueError as err:
        raise yaml.constructor.ConstructorError(None, None, str(err), node.start_mark) from None


def _construct_set(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """yaml.v3 reads a !!set as the map it is written as: its entries with null values."""
    data: dict[Any, Any] = {}
    yield data
    data.update(loader.construct_mapping(node))  # type: ignore[arg-type]


def _construct_untagged(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """A tag yaml.v3 does not know is ignored: the value as written (a trap: see pulumi_yaml.trap)."""
    if isinstance(node, yaml.MappingNode):
        return loader.construct_yaml_map(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_yaml_seq(node)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _tag in (
    pulumi_yaml.NULL,
    pulumi_yaml.BOOL,
    pulumi_yaml.INT,
    pulumi_yaml.FLOAT,
    pulumi_yaml.TIMESTAMP,
    pulumi_yaml.BINARY,
):
    Yaml12Loader.add_constructor(_tag, _construct_scalar)
Yaml12Loader.add_constructor(pulumi_yaml.SET, _construct_set)
Yaml12Loader.add_constructor(pulumi_yaml.OMAP, yaml.SafeLoader.construct_yaml_seq)
Yaml12Loader.add_constructor(pulumi_yaml.PAIRS, yaml.SafeLoader.construct_yaml_seq)
Yaml12Loader.add_constructor(None, _construct_untagged)  # type: ignore[arg-type]  # (PyYAML's "any other tag")


@dataclass(frozen=True)
class Trap:
    """A value the Pulumi CLI reads into something other than what it says (010 is 8): refused
    wherever the file is read, at its YAML path (the top key with its namespace)."""

    path: tuple[str | int, ...]
    line: int
    message: str


@dataclass(frozen=True)
class StackFile:
    name: str
    # plain values by full key ("kaito-aks:workspaces") as the program receives them (its own decoded,
    # another package's as text)
    config: dict[str, Any]
    secrets: dict[str, str]  # secure values by full key, as placeholders (never decrypted)
    path: Path | None = None
    unreadable: tuple[str, ...] = ()  # secure values that are not Pulumi's ciphertext (v1:...)
    traps: tuple[Trap, ...] = ()  # values the CLI reads otherwise than they say (pulumi_yaml.trap)
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


def read_stack_file(name: str, root: Path = ROOT) -> StackFile:
    """A stack's config as the Pulumi CLI would hand it to the program. Raises StackFileError
    (file and line) for a file that is not valid YAML, or that is not a map of config values."""
    path = stack_file_path(name, root)
    if not path.is_file():
        known = ", ".join(stack_names(root)) or "none"
        raise FileNotFoundError(f"no stack file {path.name}; stacks here: {known}")
    return parse_stack_file(path.read_bytes(), path, name)


def parse_stack_file(data: bytes, path: Path, name: str) -> StackFile:
    """The config a stack file gives the program, read as the Pulumi CLI reads it: keys without a
    namespace are the project's, values as the program receives them (pulumi_yaml.handed)."""
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
    loader, document = _compose(text, path)
    config_node = _child(document, "config")
    locations: dict[tuple[str | int, ...], Location] = {}
    traps: list[Trap] = []
    if config_node is not None:
        _walk(config_node, locations, traps)
    try:
        data_ = loader.construct_document(document) if document is not None else None
    except (yaml.YAMLError, ValueError, OverflowError) as err:
        raise _yaml_error(path, err, text) from None
    finally:
        loader.dispose()
    if data_ is None:
        data_ = {}
    if not isinstance(data_, dict):
        raise StackFileError(path, 1, f"a stack file is a map with a `config:` key, not a {_kind(data_)}")
    raw_config = data_.get("config") or {}
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
        full = cli_key(key)
        config.pop(full, None)  # a key written twice (`cluster:` and `kaito-aks:cluster:`): the last one
        secrets.pop(full, None)
        if isinstance(value, dict) and set(value) == {"secure"}:
            secrets[full] = SECRET_PLACEHOLDER
            if not (isinstance(value["secure"], str) and value["secure"].startswith("v1:")):
                unreadable.append(full)
        elif full.startswith(f"{PROJECT}:"):
            config[full] = pulumi_yaml.handed(value)
        else:
            config[full] = pulumi_yaml.handed_text(value)  # (azure-native:location, as the program reads it)
    return StackFile(
        name=name,
        config=config,
        secrets=secrets,
        path=path,
        locations=locations,
        unreadable=tuple(unreadable),
        traps=tuple(traps),
    )


def cli_key(key: Any) -> str:
    """A config key as the Pulumi CLI names it: one without a namespace is the project's
    (`cluster` is `kaito-aks:cluster`)."""
    text = pulumi_yaml.go_key(key)
    return text if ":" in text else f"{PROJECT}:{text}"


def _compose(text: str, path: Path) -> tuple[Yaml12Loader, yaml.Node | None]:
    """Check the event stream (iteratively: no recursion, bounded work), then build the node
    tree (the loader constructs the values from it)."""
    try:
        _check_events(yaml.parse(text, Loader=Yaml12Loader), path)
        loader = Yaml12Loader(text)
        return loader, loader.get_single_node()
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
    aliased = 0  # values added by aliases

    def add(size: int, line: int, alias: bool = False) -> None:
        nonlocal total, aliased
        total += size
        aliased += size if alias else 0
        for o in stack:
            o.size += size
        if total <= MAX_NODES:
            return
        if aliased * 2 > total:
            raise StackFileError(
                path, line, f"expands to more than {MAX_NODES} values through its aliases (*name); write the values out"
            )
        raise StackFileError(
            path,
            line,
            f"holds more than {MAX_NODES} values; a stack file holds a few hundred (is this the right file?)",
        )

    def key_of(event: yaml.Event, line: int) -> None:
        top = stack[-1] if stack else None
        if top is None or not top.is_map:
            return
        if top.expecting_key:
            if isinstance(event, yaml.ScalarEvent):
                if event.value in top.keys:  # `<<` too: the CLI refuses two merge keys
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
            add(anchors.get(event.anchor or "", 1), line, alias=True)
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


def _walk(config: yaml.Node, locations: dict[tuple[str | int, ...], Location], traps: list[Trap]) -> None:
    """Where each config path is written, and the traps in it (each value once, at the first path
    that reaches it), over the node tree as composed: a map's own keys are located before the
    keys it merges (`<<`), which win in that order. Iterative: the depth is bounded, but be safe."""
    work: deque[tuple[yaml.Node, tuple[str | int, ...]]] = deque([(config, ())])
    judged: set[int] = set()

    def judge(node: yaml.Node, at: tuple[str | int, ...], key: bool = False) -> None:
        if id(node) in judged or not at:
            return
        judged.add(id(node))
        top = str(at[0])
        if not top.startswith(f"{PROJECT}:") or top.removeprefix(f"{PROJECT}:") in SECRET_KEYS:
            return  # another package's keys; a secret in plaintext is refused without echoing it
        why = pulumi_yaml.trap(node, key=key)
        if why:
            traps.append(Trap(at, node.start_mark.line + 1, why))

    while work:
        current, at = work.popleft()
        judge(current, at)
        if isinstance(current, yaml.MappingNode):
            merged: list[yaml.Node] = []
            named: dict[str, tuple[str, int]] = {}  # the key the program receives -> (as written, line)
            for k, v in current.value:
                if isinstance(k, yaml.ScalarNode) and k.tag == pulumi_yaml.MERGE:
                    merged += v.value if isinstance(v, yaml.SequenceNode) else [v]
                    continue
                if not isinstance(k, yaml.ScalarNode):
                    continue
                received = _received_key(k, top=not at)
                key = (*at, received if received is not None else k.value)  # as the program receives it
                line = k.start_mark.line + 1
                locations.setdefault(key, (line, v.value if isinstance(v, yaml.ScalarNode) else ""))
                judge(k, key, key=True)
                if received is not None and received in named:
                    first, first_line = named[received]
                    locations[key] = (line, locations[key][1])  # the CLI keeps this one
                    traps.append(
                        Trap(
                            key,
                            line,
                            f"{k.value} and {first} (line {first_line}) are the same key to the Pulumi CLI, which "
                            "keeps only the last; keep one",
                        )
                    )
                if received is not None:
                    named[received] = (k.value, line)
                work.append((v, key))
            work.extend((m, at) for m in merged if isinstance(m, yaml.MappingNode))
        elif isinstance(current, yaml.SequenceNode):
            for i, item in enumerate(current.value):
                key = (*at, i)
                locations.setdefault(
                    key, (item.start_mark.line + 1, item.value if isinstance(item, yaml.ScalarNode) else "")
                )
                work.append((item, key))


def _received_key(node: yaml.ScalarNode, top: bool) -> str | None:
    """The key the program receives for a key as written (None: not a key the CLI reads)."""
    try:
        value = pulumi_yaml.scalar(str(node.tag), str(node.value))
    except ValueError:
        return None
    return cli_key(value) if top else pulumi_yaml.go_key(value)
