"""Reading a stack's config: from the Pulumi engine (or any mapping of raw values) to a
validated StackConfig plus its secrets. Everything is checked here, before the program
registers a single resource."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pydantic import ValidationError

from stacks import rules
from stacks.config import PROJECT, GpuNodePoolSpec, StackConfig, WorkspaceConfig
from stacks.errors import Issue, StackConfigError, issues_from_validation
from stacks.stackfile import StackFile

# Config keys whose values are secrets: only their presence enters the StackConfig.
SECRET_KEYS = ("hfToken", "kubeconfig")
# Keys of StackConfig a person may write (the rest are derived).
CONFIG_KEYS = tuple(
    f.alias for name, f in StackConfig.model_fields.items() if not f.exclude and f.alias not in SECRET_KEYS
)


@dataclass(frozen=True)
class StackSecrets:
    hf_token: pulumi.Output[str] | None = None
    kubeconfig: pulumi.Output[str] | None = None


def parse_stack_config(
    raw: Mapping[str, Any],
    *,
    secrets: Collection[str] = (),
    plaintext_secrets: Collection[str] = (),
    azure_location: str | None = None,
) -> StackConfig:
    """Validate raw config values (keyed by their name in the kaito-aks namespace, already
    YAML/JSON-decoded). `secrets` names the secret keys that are set; `plaintext_secrets` those
    set without --secret. Raises StackConfigError listing every problem."""
    issues: list[Issue] = []
    data: dict[str, Any] = {}
    for key, value in raw.items():
        if key in SECRET_KEYS:
            continue
        if key not in CONFIG_KEYS:
            close = difflib.get_close_matches(key, CONFIG_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {PROJECT}:{close[0]}?" if close else f"; known keys: {', '.join(CONFIG_KEYS)}"
            issues.append(Issue(f"{PROJECT}:{key}", f"unknown config key{hint}"))
            continue
        data[key] = value
    for key in plaintext_secrets:
        issues.append(
            Issue(
                f"{PROJECT}:{key}",
                f"must be a secret: run `pulumi config set --secret {key} ...` (plaintext ends up in the stack file)",
            )
        )
    data.update({key: key in secrets for key in SECRET_KEYS})
    data["azureLocation"] = azure_location
    if "cluster" not in data:
        issues.append(
            Issue(
                f"{PROJECT}:cluster",
                "required: set kubeconfig (an existing cluster), aks (create one) or existing (adopt one)",
            )
        )
        raise StackConfigError(issues)
    # Entries of the lists are checked one by one, so a malformed entry does not hide what the
    # rules would say about the others.
    kept: dict[str, list[int]] = {}
    for key, model in LIST_ENTRIES.items():
        entries = data.get(key)
        if not isinstance(entries, list):
            continue
        kept[key] = []
        for i, entry in enumerate(entries):
            try:
                model.model_validate(entry)
                kept[key].append(i)
            except ValidationError as exc:
                issues += issues_from_validation(exc, model, prefix=(key, i))
        data[key] = [entries[i] for i in kept[key]]
    data["incomplete"] = tuple(key for key, idx in kept.items() if len(idx) != len(raw.get(key) or []))
    try:
        cfg = StackConfig.model_validate(data)
    except ValidationError as exc:
        raise StackConfigError(issues + issues_from_validation(exc, StackConfig)) from None
    issues += [_renumber(issue, kept) for issue in rules.check(cfg)]
    if issues:
        raise StackConfigError(sorted(issues, key=lambda i: rules.path_key(i.path)))
    return cfg


LIST_ENTRIES = {"workspaces": WorkspaceConfig, "gpuNodePools": GpuNodePoolSpec}


def _renumber(issue: Issue, kept: dict[str, list[int]]) -> Issue:
    """Rules saw only the well-formed entries; point their paths (and the paths they mention)
    back at the config's indexes."""

    def original(match: re.Match) -> str:
        key, index = match.group(1), int(match.group(2))
        return f"{key}[{kept[key][index]}]" if key in kept else match.group(0)

    entry = re.compile(r"\b(workspaces|gpuNodePools)\[(\d+)\]")
    return Issue(entry.sub(original, issue.path), entry.sub(original, issue.message))


def parse_stack_file(f: StackFile) -> StackConfig:
    """A Pulumi.<stack>.yaml's config, validated as `pulumi up` would (secure values count as
    set secrets; their contents are never needed)."""
    prefix = f"{PROJECT}:"
    raw = {k.removeprefix(prefix): v for k, v in f.config.items() if k.startswith(prefix)}
    present = [k for k in SECRET_KEYS if prefix + k in f.secrets or k in raw]
    plaintext = [k for k in SECRET_KEYS if k in raw]
    return parse_stack_config(
        raw, secrets=present, plaintext_secrets=plaintext, azure_location=f.config.get("azure-native:location")
    )


def _decode(value: Any) -> Any:
    """Pulumi hands structured config values over as JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _engine_config() -> dict[str, Any]:
    """Every config value the engine passed to this program, by full key (project:name)."""
    from pulumi.runtime import config as runtime_config

    values = dict(runtime_config.get_config_env())
    values.update(runtime_config.CONFIG.get())
    return values


def load_stack() -> tuple[StackConfig, StackSecrets]:
    """The current stack's config and secrets, validated (for __main__.py)."""
    from pulumi.runtime.config import is_config_secret

    prefix = f"{PROJECT}:"
    engine = _engine_config()
    raw = {k.removeprefix(prefix): _decode(v) for k, v in engine.items() if k.startswith(prefix)}
    present = [k for k in SECRET_KEYS if raw.get(k) not in (None, "")]
    plaintext = [k for k in present if not is_config_secret(prefix + k)]
    location = engine.get("azure-native:location")
    cfg = parse_stack_config(raw, secrets=present, plaintext_secrets=plaintext, azure_location=location)
    config = pulumi.Config(PROJECT)
    secrets = StackSecrets(
        hf_token=config.get_secret("hfToken") if "hfToken" in present else None,
        kubeconfig=config.get_secret("kubeconfig") if "kubeconfig" in present else None,
    )
    return cfg, secrets
