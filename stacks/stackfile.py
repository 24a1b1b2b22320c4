"""Reading Pulumi.<stack>.yaml files without the Pulumi CLI (for render, validate and tests), and
pointing a config path at its line in the file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from stacks.config import PROJECT

ROOT = Path(__file__).resolve().parent.parent
# What a secret config value looks like to anything that cannot decrypt it.
SECRET_PLACEHOLDER = "[secret]"

Location = tuple[int, str]  # (1-based line, the scalar's text as written, or "" for a map/list)


class StackFileError(Exception):
    """A stack file that cannot be read as config: says where, what, and how to fix it."""

    def __init__(self, path: Path, line: int | None, message: str):
        self.path, self.line = path, line
        where = f"{path.name}:{line}" if line else path.name
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class StackFile:
    name: str
    config: dict[str, Any]  # plain values by full key ("kaito-aks:workspaces")
    secrets: dict[str, str]  # secure values by full key, as placeholders (never decrypted)
    path: Path | None = None
    # YAML key path under `config:` -> where it is written
    locations: dict[tuple[str | int, ...], Location] = field(default_factory=dict, compare=False, repr=False)

    def locate(self, config_path: str) -> Location | None:
        """The line of the deepest part of `config_path` (e.g. "workspaces[1].model" or
        "kaito-aks:hfToken") that the file writes."""
        keys = config_key_path(config_path)
        while keys:
            if keys in self.locations:
                return self.locations[keys]
            keys = keys[:-1]
        return None


def config_key_path(config_path: str) -> tuple[str | int, ...]:
    """ "workspaces[1].model" -> ("kaito-aks:workspaces", 1, "model")."""
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", config_path):
        parts.append(int(index) if index else name)
    if parts and isinstance(parts[0], str) and ":" not in parts[0]:
        parts[0] = f"{PROJECT}:{parts[0]}"
    return tuple(parts)


def stack_names(root: Path = ROOT) -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))


def stack_file_path(name: str, root: Path = ROOT) -> Path:
    return root / f"Pulumi.{name}.yaml"


def read_stack_file(name: str, root: Path = ROOT) -> StackFile:
    """A stack's config as the Pulumi CLI would hand it to the program. Raises StackFileError
    (file and line) for YAML that is not valid, or that is not a map of config values."""
    path = stack_file_path(name, root)
    if not path.exists():
        known = ", ".join(stack_names(root)) or "none"
        raise FileNotFoundError(f"no stack file {path.name}; stacks here: {known}")
    text = path.read_text()
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(str(p) for p in (err.context, err.problem) if p)
        raise StackFileError(
            path, line, f"not valid YAML ({problem}); check the indentation and quoting on this line and the one above"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StackFileError(path, 1, f"a stack file is a map with a `config:` key, not a {_kind(data)}")
    raw_config = data.get("config") or {}
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
    for key, value in raw_config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            secrets[str(key)] = SECRET_PLACEHOLDER
        else:
            config[str(key)] = value
    locations: dict[tuple[str | int, ...], Location] = {}
    if config_node is not None:
        _locate(config_node, (), locations)
    return StackFile(name=name, config=config, secrets=secrets, path=path, locations=locations)


def _kind(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "value")


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                return v
    return None


def _locate(node: yaml.Node, path: tuple[str | int, ...], out: dict[tuple[str | int, ...], Location]) -> None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                key = (*path, k.value)
                out[key] = (k.start_mark.line + 1, v.value if isinstance(v, yaml.ScalarNode) else "")
                _locate(v, key, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            key = (*path, i)
            out[key] = (item.start_mark.line + 1, item.value if isinstance(item, yaml.ScalarNode) else "")
            _locate(item, key, out)
