"""Reading a stack's config: from the Pulumi engine (or any mapping of raw values) to a
validated StackConfig plus its secrets. Everything is checked here, before the program
registers a single resource."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pydantic import ValidationError

from kaito_aks.model.component import ModelSpec
from stacks import rules
from stacks.config import PROJECT, GpuNodePoolSpec, StackConfig
from stacks.errors import Issue, StackConfigError, issues_from_validation
from stacks.stackfile import StackFile, StackFileError, read_stack_file

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
    # Entries of the lists are checked one by one, and a field with a wrong type is set aside
    # rather than the whole entry, so one mistake does not hide what the rules say about the
    # rest of that entry or about the other entries.
    kept: dict[str, list[int]] = {}
    set_aside: list[str] = []
    for key, model in LIST_ENTRIES.items():
        entries = data.get(key)
        if not isinstance(entries, list):
            continue
        kept[key] = []
        usable = []
        for i, entry in enumerate(entries):
            entry_issues, usable_entry, dropped = _check_entry(entry, model, (key, i))
            issues += entry_issues
            set_aside += [f"{key}[{i}].{name}" for name in dropped]
            if usable_entry is not None:
                kept[key].append(i)
                usable.append(usable_entry)
        data[key] = usable
    data["incomplete"] = tuple(key for key, idx in kept.items() if len(idx) != len(raw.get(key) or []))
    try:
        cfg = StackConfig.model_validate(data)
    except ValidationError as exc:
        raise StackConfigError(issues + issues_from_validation(exc, StackConfig)) from None
    for issue in rules.check(cfg):
        issue = _renumber(issue, kept)
        if not _under(issue.path, set_aside):
            issues.append(issue)
    if issues:
        raise StackConfigError(sorted(issues, key=lambda i: rules.path_key(i.path)))
    return cfg


def _check_entry(entry: Any, model: type, loc: tuple[str, int]) -> tuple[list[Issue], Any, list[str]]:
    """(issues, the entry without its ill-typed fields or None when nothing usable is left,
    the names of the fields set aside)."""
    path = f"{loc[0]}[{loc[1]}]"
    if not isinstance(entry, dict):
        return [Issue(path, f"must be a map of key: value, not {entry!r}")], None, []
    issues: list[Issue] = []
    dropped: list[str] = []
    current = dict(entry)
    while True:
        try:
            model.model_validate(current)
            return issues, current, dropped
        except ValidationError as exc:
            found = issues_from_validation(exc, model, prefix=loc)
            aside = [f"{path}.{name}" for name in dropped]
            issues += [i for i in found if i not in issues and not _under(i.path, aside)]
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"] and str(e["loc"][0]) in current}
            if not bad:
                return issues, None, dropped
            for name in bad:
                current.pop(name)
                dropped.append(name)


def _under(issue_path: str, set_aside: list[str]) -> bool:
    """Whether an issue is about a field already reported and set aside (or inside one)."""
    return any(issue_path == p or issue_path.startswith((f"{p}.", f"{p}[")) for p in set_aside)


LIST_ENTRIES = {"workspaces": ModelSpec, "gpuNodePools": GpuNodePoolSpec}


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
    try:
        return parse_stack_config(
            raw, secrets=present, plaintext_secrets=plaintext, azure_location=f.config.get("azure-native:location")
        )
    except StackConfigError as err:
        raise err.with_source(f) from None


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


def _own_stack_file() -> StackFile | None:
    """This stack's Pulumi.<stack>.yaml in the working directory, to point errors at lines
    (None when it cannot be read: the errors are then reported without lines)."""
    try:
        return read_stack_file(pulumi.get_stack(), Path.cwd())
    except (OSError, StackFileError):
        return None


def load_stack() -> tuple[StackConfig, StackSecrets]:
    """The current stack's config and secrets, validated (for __main__.py)."""
    from pulumi.runtime.config import is_config_secret

    prefix = f"{PROJECT}:"
    engine = _engine_config()
    raw = {k.removeprefix(prefix): _decode(v) for k, v in engine.items() if k.startswith(prefix)}
    present = [k for k in SECRET_KEYS if raw.get(k) not in (None, "")]
    plaintext = [k for k in present if not is_config_secret(prefix + k)]
    location = engine.get("azure-native:location")
    try:
        cfg = parse_stack_config(raw, secrets=present, plaintext_secrets=plaintext, azure_location=location)
    except StackConfigError as err:
        raise err.with_source(_own_stack_file()) from None
    config = pulumi.Config(PROJECT)
    secrets = StackSecrets(
        hf_token=config.get_secret("hfToken") if "hfToken" in present else None,
        kubeconfig=config.get_secret("kubeconfig") if "kubeconfig" in present else None,
    )
    return cfg, secrets
