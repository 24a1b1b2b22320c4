"""Which models run on which pool, and what a change of a pool's create-only settings takes down.

`render` and `validate` print, for each pool of a stack, the workspaces and RAG engines whose
selectors select it; with `--against <git ref>` they compare each GPU and CPU pool with the same
pool in the stack file at that ref and announce every replacement with the models it takes down
and the no-downtime recipe. The fields compared are the pools' own `replace_on_changes`
(kaito_aks.azure.node_pool.CREATE_ONLY_ARGS), so the list lives once."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaito_aks.azure import cpu_node_pool, gpu_node_pool
from kaito_aks.azure.cpu_node_pool import cpu_nodes
from kaito_aks.azure.gpu_node_pool import node_group
from kaito_aks.azure.node_pool import create_only_args
from kaito_aks.model.placement import cpu_node_labels
from kaito_aks.model.spec import is_gpu
from kaito_aks.nodes import may_carry, node_labels, system_pool_nodes
from kaito_aks.problems import format_path
from kaito_aks.vocabulary import camel
from stacks import load, stackfile
from stacks.config import StackConfig
from stacks.errors import StackConfigError
from stacks.stackfile import StackFile

RECIPE_DOC = "docs/operations.md#replacing-a-pool-without-downtime"
RECIPE = (
    "without downtime: add a pool beside it, point the models' selectors at the new one (labelSelector; a CPU model's nodeSelector), then remove this one, "
    f"one `pulumi up` each ({RECIPE_DOC})"
)
# The args the stack fills in itself (a pool's subnet is the cluster's): not the stack file's to change.
FILLED_BY_STACK = frozenset({"vnet_subnet_id"})


class AgainstError(Exception):
    """The stack file at a git ref cannot be read (no git, no such ref): what to do instead."""


@dataclass(frozen=True)
class Pool:
    """A pool as the comparison sees it."""

    at: str  # its config path, e.g. gpuNodePools[0] (the system pool: cluster.aks.systemPool)
    name: str
    vm_size: str
    gpu: bool
    labels: Mapping[str, str]  # every label its nodes carry
    create_only: Mapping[str, Any]  # camelCase arg -> value, for the args whose change replaces the pool


def pools(cfg: StackConfig) -> list[Pool]:
    """The stack's pools: GPU pools, the system pool of a cluster it creates, CPU pools."""
    gpu_args = [a for a in create_only_args(gpu_node_pool.CREATE_ONLY_PROPERTIES) if a not in FILLED_BY_STACK]
    cpu_args = [a for a in create_only_args(cpu_node_pool.CREATE_ONLY_PROPERTIES) if a not in FILLED_BY_STACK]
    found = [
        Pool(
            format_path(p.placed.at, "schema"),
            p.args.name or "",
            p.args.vm_size,
            True,
            node_labels(node_group(p.args, p.args.name or "")),
            {camel(a): getattr(p.args, a) for a in gpu_args},
        )
        for p in cfg.pools
    ]
    if cfg.aks_cluster is not None and not cfg.aks_cluster.existing:
        system = system_pool_nodes(cfg.aks_cluster.system_pool.vm_size)
        found.append(Pool("cluster.aks.systemPool", system.name, system.vm_size, False, system.node_labels, {}))
    found += [
        Pool(
            format_path(p.placed.at, "schema"),
            p.args.name or "",
            p.args.vm_size,
            False,
            cpu_nodes(p.args, p.args.name or "").node_labels,
            {camel(a): getattr(p.args, a) for a in cpu_args},
        )
        for p in cfg.cpu_pools
    ]
    return found


def on_pool(cfg: StackConfig, pool: Pool) -> list[str]:
    """The workspaces and RAG engines whose selectors select the pool's nodes: a GPU preset on GPU
    pools, a CPU model on any (its labels and nodeSelector), an engine on nodes of its
    instanceType with its labels."""
    who: list[str] = []
    for w in cfg.workspaces:
        args = w.args
        if args.node_provisioning != "byo" or (is_gpu(args) and not pool.gpu):
            continue
        if may_carry(cpu_node_labels(args), dict(pool.labels)):
            who.append(f"{format_path(w.placed.at, 'schema')} ({args.namespace}/{args.name})")
    for e in cfg.rag_engines:
        compute = e.args.compute
        if compute is None or compute.instance_type.lower() != pool.vm_size.lower():
            continue
        if may_carry(dict(compute.label_selector.match_labels or {}), dict(pool.labels)):
            who.append(f"{format_path(e.placed.at, 'schema')} ({e.args.namespace}/{e.args.name})")
    return who


def models_on_pools(cfg: StackConfig) -> Iterator[str]:
    """One line per pool: the models on it."""
    for pool in pools(cfg):
        who = on_pool(cfg, pool)
        yield f"pool {pool.name} ({pool.vm_size}, {pool.at}): {', '.join(who) or 'no model'}"


def replacements(before: StackConfig, after: StackConfig) -> Iterator[str]:
    """A notice for each pool of `after` whose create-only settings differ from the same pool (by
    kind and name) in `before`: the changes, the models it takes down, the recipe."""
    old = {(p.gpu, p.name): p for p in pools(before)}
    for pool in pools(after):
        was = old.get((pool.gpu, pool.name))
        if was is None:
            continue
        changes = [
            f"{key} {_shown(was.create_only.get(key))} -> {_shown(value)}"
            for key, value in pool.create_only.items()
            if _comparable(was.create_only.get(key)) != _comparable(value)
        ]
        if not changes:
            continue
        who = on_pool(after, pool)
        down = f"{', '.join(who)} go down until the new pool is ready" if who else "no model runs on it"
        yield f"{pool.at} ({pool.name}) is replaced ({'; '.join(changes)}): {down}; {RECIPE}"


def _comparable(value: Any) -> Any:
    """Zones in any order are the same zones; a size in any letter case the same size."""
    if isinstance(value, list | tuple):
        return sorted(str(v) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return value.lower() if isinstance(value, str) else value


def _shown(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return str(value).lower() if isinstance(value, bool) else str(value)


def report(f: StackFile, cfg: StackConfig, against: str | None) -> list[str]:
    """What `render` and `validate` print of a stack's pools: the models on each; with `against`
    (a git ref), the pools a change since then replaces, with what they take down."""
    lines = list(models_on_pools(cfg))
    if against is None or f.path is None:
        return lines
    data = stack_file_at(against, f.path)
    if data is None:
        return [*lines, f"{f.path.name} does not exist at {against}: a new stack, no pool replaced"]
    try:
        before = load.parse_stack_file(stackfile.parse_stack_file(data, f.path, f.name))
    except (StackConfigError, stackfile.StackFileError) as err:
        said = f"{len(err.problems)} problem(s)" if isinstance(err, StackConfigError) else str(err)
        return [*lines, f"{f.path.name} at {against} does not pass today's checks ({said}): its pools are not compared"]
    return [*lines, *(f"notice: {line}" for line in replacements(before, cfg))]


def stack_file_at(ref: str, path: Path) -> bytes | None:
    """The stack file at `path` as it is at git `ref` (None: the file does not exist there, a
    new stack). Raises AgainstError when git or the ref is missing."""
    root = path.parent
    if ref.startswith("-"):
        raise AgainstError(f"--against {ref}: a git ref, e.g. origin/main (not an option)")
    try:
        known = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise AgainstError("--against needs git, which is not installed here") from None
    if known.returncode != 0:
        raise AgainstError(
            f"--against {ref}: no such commit in the repository at {root} (fetch it first, e.g. `git fetch origin "
            f"{ref.removeprefix('origin/')}`, or check out with history: actions/checkout fetch-depth: 0)"
        )
    shown = subprocess.run(["git", "-C", str(root), "show", f"{ref}:./{path.name}"], capture_output=True, check=False)
    return shown.stdout if shown.returncode == 0 else None
