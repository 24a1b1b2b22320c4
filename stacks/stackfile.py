"""Reading Pulumi.<stack>.yaml files without the Pulumi CLI (for render, validate and tests)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
# What a secret config value looks like to anything that cannot decrypt it.
SECRET_PLACEHOLDER = "[secret]"


@dataclass(frozen=True)
class StackFile:
    name: str
    config: dict[str, Any]  # plain values by full key ("kaito-aks:workspaces")
    secrets: dict[str, str]  # secure values by full key, as placeholders (never decrypted)


def stack_names(root: Path = ROOT) -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))


def read_stack_file(name: str, root: Path = ROOT) -> StackFile:
    path = root / f"Pulumi.{name}.yaml"
    if not path.exists():
        known = ", ".join(stack_names(root)) or "none"
        raise FileNotFoundError(f"no stack file {path.name}; stacks here: {known}")
    data = yaml.safe_load(path.read_text()) or {}
    config: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    for key, value in (data.get("config") or {}).items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            secrets[key] = SECRET_PLACEHOLDER
        else:
            config[key] = value
    return StackFile(name=name, config=config, secrets=secrets)
