"""Reading a stack's config: from the Pulumi engine (or a stack file) to a checked StackConfig, the
components' args, in four steps: read (the file against its schema in one call, stacks/config.py),
decide (every default the stack decides, once: stacks/decide.py), build (each component's args
made once, knowing where it was written: stacks/build.py) and judge (every rule, the components'
own then the stack's: stacks/judge.py), before the program registers a single resource;
`validate`, `render` and `pulumi up` read the same way."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, cast

import pulumi

from kaito_aks.cluster.kubeconfig_text import EMPTY as EMPTY_CONTENTS
from kaito_aks.problems import Key, PathPart, Problem, camel, did_you_mean
from kaito_aks.validation import collect, unusable
from stacks.build import NO_SECRET_VALUES, Secrets, StackSecrets, build
from stacks.config import (
    NESTED_SECRETS,
    PROJECT,
    SECRET_KEYS,
    STACK_FILE,
    TOP_KEYS,
    StackConfig,
)
from stacks.decide import Written, decide
from stacks.errors import StackConfigError, secret_key
from stacks.judge import judge, once
from stacks.nested_secrets import SECRET_PRESENT, nested_secret, plaintext_nested_secrets
from stacks.pulumi_yaml import decode
from stacks.stackfile import StackFile, StackFileError, read_stack_file, yaml_path

EMPTY_KUBECONFIG = (
    f"{EMPTY_CONTENTS}: `pulumi config set --secret kubeconfig < kubeconfig.yaml`, or `pulumi config rm kubeconfig` "
    "to use cluster.kubeconfig.path"
)
# The config values that may be secrets, as a problem names them.
SECRETS_TEXT = ", ".join(SECRET_KEYS) + " and the gateway's apiKeys and tls"


ACCESS_SECRET_HINT = " (a token: put it in a Kubernetes Secret and name that Secret in accessSecret)"


def stack_config(
    raw: Mapping[str, Any],
    *,
    secrets: Collection[str] = (),
    plaintext_secrets: Collection[str] = (),
    encrypted: Collection[str] = (),
    secret_values: StackSecrets = NO_SECRET_VALUES,
    azure_location: str | None = None,
    base_dir: Path | None = None,
    stack: str = "",
) -> StackConfig:
    """Check raw config values (keyed by their name in the kaito-aks namespace, already
        decoded) and map them onto the components' args. `secrets` names the secret keys that are
        set; `plaintext_secrets` those set without --secret; `encrypted` the other keys set with
        --secret (their values in `raw` when known). `base_dir`: where a relative kubeconfig path is
        read from (default: the working directory, where `pulumi up` runs the program); `stack`: the
    stack's name (a stack named prod gets production's warnings). Raises
        StackConfigError listing every problem, each at its config path."""
    problems = key_problems(raw, encrypted, plaintext_secrets)
    raw = _without_nested_secrets(raw, problems)
    if "cluster" not in raw:
        if "cluster" not in encrypted:  # (an encrypted one cannot be read here; what is wrong with it is said)
            why = "required: set kubeconfig (an existing cluster), aks (create one) or existing (adopt one)"
            problems.append(Problem((Key(f"{PROJECT}:cluster"),), why, "required"))
        raise StackConfigError(problems)
    written, shape = read_file(raw)
    decided = decide(written, azure_location)
    cfg, tied = build(written, decided, Secrets(secrets, secret_values), azure_location)
    found, cfg = judge(cfg, written, base_dir, tied, stack)
    problems += shape + beside_shape(found, shape)
    if problems:
        raise StackConfigError(once(problems))
    return cfg


def key_problems(
    raw: Mapping[str, Any], encrypted: Collection[str], plaintext_secrets: Collection[str]
) -> list[Problem]:
    """The config keys themselves: unknown ones (a misspelt secret like any other, never a hint
    to store it in plain text), ones set with --secret that are no secrets, secrets in plaintext."""
    problems: list[Problem] = []
    for key in dict.fromkeys([*raw, *encrypted]):
        if key in SECRET_KEYS:
            continue
        at = (Key(f"{PROJECT}:{key}"),)
        if key not in TOP_KEYS:
            close = did_you_mean(key, [*TOP_KEYS, *SECRET_KEYS])
            hint = f"did you mean {PROJECT}:{close[0]}?" if close else f"known keys: {', '.join(sorted(TOP_KEYS))}"
            problems.append(Problem(at, f"unknown config key; {hint}", "unknown"))
        elif key in encrypted and key not in NESTED_SECRETS:
            token = (
                " (or remove the token `--path --secret` put inside it: a token goes in a Kubernetes Secret named "
                "in accessSecret)"
            )
            problems.append(
                Problem(
                    at,
                    f"is encrypted (set with --secret), but only {SECRETS_TEXT} are secrets; set it "
                    "without --secret" + (token if key == "ragEngines" else ""),
                    "secure-value",
                )
            )
    for key in plaintext_secrets:
        problems.append(
            Problem(
                (secret_key(key),),
                f"must be a secret: run `pulumi config set --secret {key} ...` (plaintext ends up in the stack file)",
                "plaintext-secret",
            )
        )
    return problems


def _without_nested_secrets(raw: Mapping[str, Any], problems: list[Problem]) -> Mapping[str, Any]:
    """`raw` without the values `pulumi config set --path --secret` wrote inside a key (a map of
    one `secure:`), each refused at its path: Pulumi makes the whole key secret for one of them,
    and the stack keeps secrets only in its own secret keys (a RAG engine's token: accessSecret)."""

    def strip(value: Any, path: tuple[PathPart, ...]) -> Any:
        if isinstance(value, Mapping):
            kept: dict[Any, Any] = {}
            for k, v in value.items():
                if isinstance(v, Mapping) and set(v) == {"secure"} and nested_secret((*path, Key(str(k)))):
                    kept[k] = SECRET_PRESENT  # (its value is known to the engine only)
                    continue
                if isinstance(v, Mapping) and set(v) == {"secure"}:
                    problems.append(
                        Problem(
                            (*path, Key(str(k))),
                            f"is encrypted (set with --path --secret), but only {SECRETS_TEXT} are "
                            "secrets" + (ACCESS_SECRET_HINT if k == "accessToken" else "; set it without --secret"),
                            "secure-value",
                        )
                    )
                    continue
                kept[k] = strip(v, (*path, Key(str(k))))
            return kept
        if isinstance(value, list):
            return [strip(v, (*path, i)) for i, v in enumerate(value)]
        return value

    return {k: strip(v, (Key(k),)) for k, v in raw.items()}


# ---------------------------------------------------------------- the file, read in one call


def read_file(raw: Mapping[str, Any]) -> tuple[Written, list[Problem]]:
    """The file's kaito-aks keys read against its schema: what each section writes (an unusable
    key, or entry, left out) and every problem at its config path."""
    values, found = collect(STACK_FILE.validate_python(dict(raw), by_alias=True, by_name=False, context={}))
    problems = [Problem((camel(str(p.path[0])), *p.path[1:]), p.message, p.code) for p in found]  # (config keys)
    cluster = values.get("cluster")
    kinds = list(cluster) if isinstance(cluster, dict) else []
    if isinstance(cluster, dict) and len(kinds) != 1:
        problems.append(
            Problem(
                ("cluster",),
                "choose exactly one of kubeconfig (an existing cluster through a kubeconfig), aks (create an AKS "
                f"cluster) or existing (adopt an AKS cluster); got {', '.join(kinds) or 'none'}",
                "cluster",
            )
        )
    kind = kinds[0] if len(kinds) == 1 else None
    return (
        Written(
            cluster_kind=kind,
            cluster=cast(dict[str, Any], cluster)[kind] if kind is not None else None,
            kaito=values.get("kaito") or {},
            gpu_operator=values.get("gpu_operator") or {},
            gpu_provisioner=values.get("gpu_provisioner") or {},
            karpenter=values.get("karpenter") or {},
            rag_engine_operator=values.get("rag_engine_operator") or {},
            pools=tuple(values.get("gpu_node_pools") or ()),
            cpu_pools=tuple(values.get("cpu_node_pools") or ()),
            workspaces=tuple(values.get("workspaces") or ()),
            rag_engines=tuple(values.get("rag_engines") or ()),
            create_namespaces=values.get("create_namespaces", True) is not False,
            endpoints=values.get("endpoints") or {},
            generation=values.get("defaults") or 1,
            gateway=_section(values.get("gateway")),
            autoscaling=_section(values.get("autoscaling")),
            metrics=_section(values.get("metrics")),
        ),
        problems,
    )


def _section(value: Any) -> dict[str, Any] | None:
    """A section as written (`gateway:` with nothing under it: its defaults), or None: not written."""
    if value is None:
        return None
    return dict(value) if isinstance(value, Mapping) else {}


def beside_shape(found: list[Problem], shape: list[Problem]) -> list[Problem]:
    """The rules' problems, less those at (or inside) a key whose shape is refused already, and
    those about a whole entry the rules judged without one of its keys (its value was unusable)."""
    spoken = [p.path for p in shape if p.path]
    blind = {p.path[:2] for p in shape if unusable([p]) and len(p.path) > 2 and isinstance(p.path[1], int)}
    return [p for p in found if not any(p.path[: len(s)] == s for s in spoken) and p.path not in blind]


def parse_stack_file(f: StackFile) -> StackConfig:
    """A Pulumi.<stack>.yaml's config, checked as `pulumi up` would check it (secure values count
    as set secrets; their contents are never needed), a relative path from the file's folder."""
    prefix = f"{PROJECT}:"
    raw = {k.removeprefix(prefix): v for k, v in f.config.items() if k.startswith(prefix)}
    encrypted = [k.removeprefix(prefix) for k in f.secrets if k.startswith(prefix)]
    problems = stack_file_problems(f) + foreign_keys(f.config)
    problems += [
        Problem(
            (Key(k),),
            "is not a value `pulumi config set --secret` wrote (secure: v1:...); set it again",
            "secure-value",
        )
        for k in f.unreadable
        if k.startswith(prefix) and k.removeprefix(prefix) in SECRET_KEYS
    ]
    problems += plaintext_nested_secrets(raw)
    return _checked(
        raw,
        present=[k for k in SECRET_KEYS if k in encrypted or k in raw],
        plaintext=[k for k in SECRET_KEYS if k in raw],
        encrypted=encrypted,
        problems=problems,
        source=f,
        azure_location=f.config.get("azure-native:location"),
        base_dir=f.path.parent if f.path is not None else None,
        stack=f.name,
    )


def _checked(
    raw: Mapping[str, Any],
    *,
    present: Collection[str],
    plaintext: Collection[str],
    encrypted: Collection[str],
    problems: list[Problem],
    source: StackFile | None,
    secret_values: StackSecrets = NO_SECRET_VALUES,
    azure_location: str | None = None,
    base_dir: Path | None = None,
    stack: str = "",
) -> StackConfig:
    """The config of raw values (by key, less the namespace), checked with the problems their
    source found first (traps, secure values, secrets in plain text): every problem at once, less
    those a trap makes moot, at their lines in `source`. What `validate`, `render` (a stack file)
    and `pulumi up` (the engine's values) share."""
    cfg: StackConfig | None = None
    try:
        cfg = stack_config(
            {k: v for k, v in raw.items() if k not in SECRET_KEYS},
            secrets=present,
            plaintext_secrets=plaintext,
            encrypted=[k for k in encrypted if k not in SECRET_KEYS],
            secret_values=secret_values,
            azure_location=azure_location,
            base_dir=base_dir,
            stack=stack,
        )
    except StackConfigError as err:
        problems = [*problems, *err.problems]
    if problems or cfg is None:
        raise StackConfigError(beside_traps(problems), source) from None
    return cfg


def stack_file_problems(f: StackFile | None) -> list[Problem]:
    """The values of a stack file the Pulumi CLI reads otherwise than they say (010 is octal 8, a
    date becomes Go's text of a time), at their config paths: refused by validate, render and
    `pulumi up` alike (stacks/pulumi_yaml.py says which and why)."""
    if f is None:
        return []
    prefix = f"{PROJECT}:"
    problems = []
    for trap in f.traps:
        top = str(trap.path[0])
        head: PathPart = top.removeprefix(prefix) if top.removeprefix(prefix) in TOP_KEYS else Key(top)
        rest = tuple(p if isinstance(p, int) else Key(p) for p in trap.path[1:])
        problems.append(Problem((head, *rest), trap.message, "trap"))
    return problems


def beside_traps(problems: list[Problem]) -> list[Problem]:
    """The problems, less those at a trapped value, inside it, or at the map or list holding it:
    the trap's fix changes what they judged."""
    spots = [yaml_path(p.path) for p in problems if p.code == "trap"]

    def touches(path: tuple[str | int, ...]) -> bool:
        return any(path[: len(s)] == s or (s[: len(path)] == path and len(path) >= len(s) - 1) for s in spots)

    return [p for p in problems if p.code == "trap" or not touches(yaml_path(p.path))]


def foreign_keys(keys: Collection[str]) -> list[Problem]:
    """Config keys outside the kaito-aks namespace that are typos of one of its keys
    (`kaito:workspaces`, `Kaito-aks:gpuOperator`), refused: the program would not read the
    section, and on a deployed stack `pulumi up` would delete what it held. Another package's
    keys are left alone."""
    found: list[Problem] = []
    ours = [*TOP_KEYS, *SECRET_KEYS]
    for key in keys:
        namespace, _, name = key.partition(":")
        if not name or namespace == PROJECT:
            continue
        looks_ours = did_you_mean(namespace, [PROJECT], cutoff=0.6) or namespace.lower().replace("_", "-") == PROJECT
        meant = name if name in ours else next(iter(did_you_mean(name, ours)), None)
        if looks_ours and meant is not None:
            found.append(
                Problem(
                    (Key(key),),
                    f"not read by this program, whose keys are {PROJECT}:<key>: the section would be dropped (on a "
                    f"deployed stack, `pulumi up` would delete what it held); did you mean {PROJECT}:{meant}?",
                    "foreign-key",
                )
            )
    return found


def _engine_config() -> dict[str, Any]:
    """Every config value the engine passed to this program, by full key (project:name)."""
    from pulumi.runtime import config as runtime_config

    try:
        values = dict(runtime_config.get_config_env())
    except ValueError as err:
        raise StackConfigError(
            [Problem((Key("PULUMI_CONFIG"),), f"the engine's config is not JSON ({err})", "engine")]
        ) from None
    values.update(runtime_config.CONFIG.get())
    return values


def _own_stack_file() -> StackFile | None:
    """This stack's Pulumi.<stack>.yaml in the working directory, to point errors at lines
    (None when it cannot be read: the errors are then reported without lines)."""
    try:
        return read_stack_file(pulumi.get_stack(), Path(os.getcwd()))
    except (OSError, StackFileError):
        return None


def load_stack(source: StackFile | None = None) -> tuple[StackConfig, StackSecrets]:
    """The current stack's config and secrets, checked (for __main__.py). `source`: the stack
    file the engine's config came from (default: Pulumi.<stack>.yaml in the working directory,
    if any), for its traps and lines."""
    from pulumi.runtime.config import is_config_secret

    prefix = f"{PROJECT}:"
    engine = _engine_config()
    raw = {k.removeprefix(prefix): decode(v) for k, v in engine.items() if k.startswith(prefix)}
    present = [k for k in SECRET_KEYS if raw.get(k) not in (None, "")]
    encrypted = [k for k in raw if k not in SECRET_KEYS and is_config_secret(prefix + k)]
    config = pulumi.Config(PROJECT)
    secrets = StackSecrets(
        hf_token=config.get_secret("hfToken") if "hfToken" in present else None,
        kubeconfig=config.get_secret("kubeconfig") if "kubeconfig" in present else None,
    )
    source = source if source is not None else _own_stack_file()
    problems = stack_file_problems(source) + _empty_kubeconfig(raw) + foreign_keys(engine)
    problems += plaintext_nested_secrets(raw, encrypted)  # the engine's values: marked secret, or plain
    if source is not None:  # one key Pulumi marks secret may hold another in plain text beside it
        problems += plaintext_nested_secrets(
            {k.removeprefix(prefix): v for k, v in source.config.items() if k.startswith(prefix)}
        )
    cfg = _checked(
        raw,
        present=present,
        plaintext=[k for k in present if not is_config_secret(prefix + k)],
        encrypted=encrypted,
        problems=problems,
        source=source,
        secret_values=secrets,
        azure_location=engine.get("azure-native:location"),
        stack=pulumi.get_stack(),
    )
    return cfg, secrets


def _empty_kubeconfig(raw: Mapping[str, Any]) -> list[Problem]:
    """A kubeconfig secret set but empty: the provider would read $KUBECONFIG or ~/.kube/config."""
    contents = raw.get("kubeconfig")
    empty = isinstance(contents, str) and not contents.strip()
    return [Problem((secret_key("kubeconfig"),), EMPTY_KUBECONFIG, "kubeconfig-empty")] if empty else []
