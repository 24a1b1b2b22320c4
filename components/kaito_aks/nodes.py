"""GPU nodes as the components see them: a `NodeGroup` describes a pool of alike nodes (its size,
labels, taints, node counts), and the facts here say how GPU workloads find and tolerate such
nodes. One place, so the pools, both operators, the models and their checks agree."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Annotated, Any, Literal

from kaito_aks import catalog
from kaito_aks.catalog import KaitoChart, Toleration
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Problem
from kaito_aks.schema import Check, MaxItems, Range, args_class
from kaito_aks.vocabulary import GpuDriver

# The label NVIDIA's GPU Operator puts on GPU nodes; GpuNodePool also sets it on the AKS GPU pools
# it creates, so it is there from a node's first minute. (Standalone GPU Feature Discovery
# publishes nvidia.com/gpu.product/count/memory, which KAITO reads, but not this one.)
GPU_PRESENT_LABEL = {"nvidia.com/gpu.present": "true"}
# The labels AKS gives every node of a pool, with the pool's name; and the system pool's name.
AGENTPOOL_LABELS = ("agentpool", "kubernetes.azure.com/agentpool")
SYSTEM_POOL = "system"
LINUX_LABEL = {"kubernetes.io/os": "linux"}
# AKS labels every node of a system pool so (and of a user pool, GPU pools among them, `user`):
# the one label that keeps a pod on the cluster's CPU nodes whatever tolerations it carries.
AKS_SYSTEM_POOL_LABELS = {"kubernetes.azure.com/mode": "system"}
# Label domains whose labels a node may carry without any pool description listing them
# (Kubernetes, AKS, NFD and GPU Feature Discovery, the GPU Operator, KAITO).
SYSTEM_LABEL_DOMAINS = ("kubernetes.io", "k8s.io", "azure.com", "nvidia.com", "kaito.sh", "karpenter.sh")
# The taint AKS GPU pools conventionally carry (and KAITO's presets and device plugin tolerate);
# assumed for GPU nodes of clusters the program does not create.
DEFAULT_GPU_TAINTS = ("sku=gpu:NoSchedule",)
# AKS puts this taint on every spot node; declaring it keeps the pool's taints as Azure reports
# them, and KAITO (0.11+) and the GPU Operator tolerate it.
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
MAX_POOL_NODES = 1000  # AKS: nodes per node pool


# ---------------------------------------------------------------- Kubernetes' rules for labels and taints

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
TAINT = re.compile(
    r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$"
)


def label_key_problem(key: str) -> str | None:
    """Why Kubernetes refuses `key` as a label key (`[prefix/]name`), or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not re.fullmatch(_PREFIX, prefix)):
        return f"label key {key!r}: the prefix before '/' must be a DNS subdomain (lowercase, at most 253 characters)"
    if not re.fullmatch(_NAME, name):
        return (
            f"label key {key!r}: the name must be 1-63 letters, digits, '-', '_' or '.', starting and ending "
            "with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if value == "" or re.fullmatch(_NAME, value):
        return None
    return (
        f"label value {value!r} must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
        "letter or digit (or empty)"
    )


def labels_problem(labels: object) -> str | None:
    """Why Kubernetes refuses a map of labels (the first reason), or None."""
    if not is_dict(labels):
        return None
    for k, v in labels.items():
        why = label_key_problem(str(k)) or (label_value_problem(v) if isinstance(v, str) else None)
        if why:
            return why
    return None


def taint_problem(taint: object) -> str | None:
    if not isinstance(taint, str):
        return None
    m = TAINT.match(taint)
    if m is None:
        return (
            f"{taint!r} is not a taint: write key=value:Effect or key:Effect (NoSchedule, PreferNoSchedule, NoExecute)"
        )
    return label_key_problem(m["key"]) or (label_value_problem(m["value"]) if m["value"] else None)


Labels = Annotated[dict[str, str], Check(labels_problem)]
Taint = Annotated[str, Check(taint_problem)]


# ---------------------------------------------------------------- a group of GPU nodes


@args_class
class NodeGroup:
    """A pool of alike GPU nodes, as KAITO's webhook and estimator see it and as the operators
    must tolerate it. `GpuNodePool.node_group` describes a pool it creates; describe a pool made
    elsewhere the same way."""

    name: str
    """The pool's name (its nodes carry it as the `agentpool` label)."""
    vm_size: str
    """Azure VM size of the nodes, a GPU size KAITO knows (the package's catalog lists them): KAITO
    sizes models against its GPUs."""
    labels: Labels = field(default_factory=dict[str, str])
    """Labels every node carries; a model's `label_selector.match_labels` picks the pool by them.
    Default: none."""
    taints: Annotated[list[Taint], MaxItems(50)] = field(default_factory=lambda: list(DEFAULT_GPU_TAINTS))
    """Taints every node carries (key=value:Effect)."""
    min_nodes: Annotated[int, Range(0, MAX_POOL_NODES, "AKS: at most 1000 nodes per pool")] = 1
    """Nodes that exist when a Workspace is created (a fixed count, or the autoscaler's minimum):
    KAITO's webhook admits a preset against these."""
    max_nodes: Annotated[int, Range(0, MAX_POOL_NODES, "AKS: at most 1000 nodes per pool")] = 1
    """The most nodes the pool may have: every replica of every model on it must fit."""
    gpu_driver: GpuDriver = "operator"
    """Who installs the GPU driver on the nodes: operator (the NVIDIA GPU Operator) or aks."""
    spot: bool = False
    """Azure Spot VMs: the nodes carry AKS's spot taint."""
    driver_installed: bool = False
    """Whether something is known to install the GPU driver on the nodes: AKS (`gpu_driver` aks;
    `GpuNodePool.node_group` sets it so) or a GpuOperator of the program (its `node_groups`
    output marks the groups it was given); set it yourself for a GPU Operator installed
    elsewhere. A model given a group left to the GPU Operator without it is refused (with no
    driver, GPU Feature Discovery never labels the nodes and KAITO denies every preset on them;
    `bypass_checks` gpu-driver passes it)."""


def driver_unknown(group: NodeGroup) -> bool:
    """Whether the group leaves its driver to the GPU Operator and nothing says one runs."""
    return group.gpu_driver == "operator" and not group.driver_installed


def no_driver(group: NodeGroup, i: int) -> Problem | None:
    """A pool (`node_groups[i]`) that leaves its driver to the GPU Operator where nothing says one
    installs it: the model that would run there and the KaitoOperator that discovers its GPUs say
    the same problem (once, where a program judges both)."""
    if not driver_unknown(group):
        return None
    return Problem(
        ("node_groups", i),
        f"KAITO admits this, but pool {group.name} leaves its GPU driver to the NVIDIA GPU Operator (`gpu_driver` "
        "operator), and nothing says one is installed: without a driver GPU Feature Discovery never labels the nodes "
        'and KAITO\'s webhook denies every preset on them ("Failed to get GPU config from nvidia labels"); pass a '
        "GpuOperator's `node_groups` (it marks the pools it installs the driver on), set `driver_installed` on the "
        "NodeGroup if a GPU Operator or driver of yours is there, or give the pool `gpu_driver` aks",
        "gpu-driver",
    )


def with_driver(group: NodeGroup) -> NodeGroup:
    """The group, marked as having its driver installed (by the program's GpuOperator)."""
    return dataclasses.replace(group, driver_installed=True) if not group.driver_installed else group


def vm_size_problem(vm_size: str) -> str | None:
    """Why nodes of `vm_size` cannot serve KAITO's GPU workloads (not a GPU size KAITO knows,
    a GPU no driver supports, not NVIDIA), or None. GpuNodePool and described pools alike."""
    sku = catalog.all_gpu_skus().get(vm_size)
    if sku is None:
        close = catalog.closest_skus(vm_size)
        hint = f"did you mean {', '.join(close)}?" if close else "use one of: " + ", ".join(catalog.usable_gpu_skus())
        return f"{vm_size} is not a GPU VM size KAITO knows; {hint}"
    if sku.unusable:
        return f"{vm_size}: {sku.unusable}"
    if sku.vendor != "nvidia":
        return f"{vm_size} has {sku.gpu_model} GPUs; the GPU Operator and KAITO presets need NVIDIA GPUs"
    return None


def dropped_by(chart: KaitoChart, vm_size: str) -> str | None:
    """Why a KAITO release no longer takes a GPU size an earlier one did, or None (also None
    for a size no release knows: `vm_size_problem` says that): catalog.dropped_sku's message."""
    return catalog.dropped_sku(vm_size, chart.sku_catalog, chart.version)


def spot_problem(chart: KaitoChart) -> str | None:
    """Why a KAITO release's pods cannot run on spot nodes, or None (they tolerate AKS's spot
    taint from 0.11, with spotInstance)."""
    if chart.spot_toleration is not None:
        return None
    return (
        f"KAITO {chart.version}'s pods do not tolerate the AKS spot taint; use KAITO 0.11.0 or 0.12.0 "
        "(spotInstance) or a regular pool"
    )


SPOT_TAINT_WRITTEN = "AKS sets the spot taint on spot pools; set `spot` instead of the taint"


def node_group_problems(group: NodeGroup, chart: KaitoChart | None = None) -> list[Problem]:
    """What is wrong with a pool's description, as GpuNodePool would refuse it (a GPU size KAITO
    knows, node counts in order), and with `chart`, whether that KAITO release still takes the
    size. Paths are relative to the group."""
    problems: list[Problem] = []
    why = vm_size_problem(group.vm_size)
    if why is not None:
        problems.append(Problem(("vm_size",), why, "pool-sku"))
    elif chart is not None and (dropped := dropped_by(chart, group.vm_size)) is not None:
        problems.append(Problem(("vm_size",), dropped, "pool-sku-version"))
    problems += [
        Problem(("taints", j), SPOT_TAINT_WRITTEN, "pool-spot-taint")
        for j, taint in enumerate(group.taints)
        if taint == SPOT_TAINT and not group.spot
    ]
    if group.min_nodes > group.max_nodes:
        problems.append(
            Problem(
                ("min_nodes",),
                f"is greater than max_nodes ({group.min_nodes} > {group.max_nodes}); min_nodes are the nodes that "
                "exist when a Workspace is created, max_nodes the most the pool may have",
                "pool-nodes",
            )
        )
    return problems


def node_groups_problems(groups: Iterable[NodeGroup], chart: KaitoChart | None = None) -> list[Problem]:
    """`node_group_problems` of each group, at node_groups[i]."""
    return [p.under("node_groups", i) for i, g in enumerate(groups) for p in node_group_problems(g, chart)]


def group_labels(group: NodeGroup) -> dict[str, str]:
    """The labels the group's nodes surely carry: its name as AKS's agentpool labels (as its doc
    says, whoever made the pool) and its own labels."""
    return {**dict.fromkeys(AGENTPOOL_LABELS, group.name), **group.labels}


def selects(match_labels: dict[str, str], group: NodeGroup) -> bool:
    """Whether a selector's matchLabels pick the group's nodes (KAITO lists BYO nodes by
    matchLabels only; matchExpressions play no part there)."""
    labels = group_labels(group)
    return all(labels.get(k) == v for k, v in match_labels.items())


def aks_user_node_labels(vm_size: str) -> dict[str, str]:
    """Labels AKS gives every node of a user pool of `vm_size` (reserved labels, use-labels.md)."""
    return {
        **LINUX_LABEL,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.azure.com/mode": "user",
        "node.kubernetes.io/instance-type": vm_size,
        "beta.kubernetes.io/instance-type": vm_size,
    }


def node_labels(group: NodeGroup) -> dict[str, str]:
    """Labels every node of the group carries: AKS's for a user pool of its size, and its own."""
    return {**aks_user_node_labels(group.vm_size), **group_labels(group)}


def may_select(match_labels: dict[str, str], group: NodeGroup) -> bool:
    """Whether a node with every label in `match_labels` may be one of the group's: no label
    contradicts one its nodes carry, and none is of a kind only other nodes carry (a label
    outside the system domains that its description does not list). Where `selects` asks
    "surely one of them" (KAITO's webhook lists nodes), this asks "maybe one of them" (the
    scheduler places pods on any node that matches)."""
    return may_carry(match_labels, node_labels(group))


def may_carry(match_labels: dict[str, str], known: dict[str, str]) -> bool:
    """Whether a node whose labels include `known` may carry every label in `match_labels`: none
    contradicts a known one, and each other is of a system domain (one a node may carry unlisted)."""
    for key, value in match_labels.items():
        if key in known:
            if known[key] != value:
                return False
        elif "/" not in key or not key.partition("/")[0].endswith(SYSTEM_LABEL_DOMAINS):
            return False
    return True


# ---------------------------------------------------------------- CPU nodes


@dataclasses.dataclass(frozen=True)
class CpuNodes:
    """A pool of CPU nodes as the placement rules see it (the system pool, a CpuNodePool): where
    a CPU model, or a RAG engine's compute of a CPU size, may run. `CpuNodePool.cpu_nodes`
    describes a pool it creates."""

    name: str
    vm_size: str
    mode: Literal["User", "System"] = "User"
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict[str, str])
    taints: tuple[str, ...] = ()

    @property
    def node_labels(self) -> dict[str, str]:
        """Labels every node of the pool carries: AKS's for a pool of its mode and size, its name
        as the agentpool labels, and its own."""
        return {
            **aks_user_node_labels(self.vm_size),
            "kubernetes.azure.com/mode": self.mode.lower(),
            **dict.fromkeys(AGENTPOOL_LABELS, self.name),
            **self.labels,
        }

    @property
    def untainted(self) -> bool:
        """Whether a pod that tolerates nothing may run there (no NoSchedule or NoExecute taint)."""
        return all(t.endswith(":PreferNoSchedule") for t in self.taints)


def system_pool_nodes(vm_size: str) -> CpuNodes:
    """The system pool of a cluster this library creates (AksCluster), as placement sees it."""
    return CpuNodes(SYSTEM_POOL, vm_size, "System")


def agentpool_selector(pool: str) -> dict[str, str]:
    """The node selector that keeps a pod on one AKS pool (a label AKS sets, which no pool may set)."""
    return {AGENTPOOL_LABELS[1]: pool}


# ---------------------------------------------------------------- tolerations


def taint_toleration(taint: str) -> dict[str, str]:
    """`key=value:Effect` -> Equal toleration; `key:Effect` -> Exists toleration."""
    spec, effect = taint.rsplit(":", 1)
    if "=" in spec:
        key, value = spec.split("=", 1)
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": spec, "operator": "Exists", "effect": effect}


def node_taints(groups: Iterable[NodeGroup]) -> list[str]:
    """Every taint the groups' nodes carry, once each, the spot taint included."""
    out: list[str] = []
    for g in groups:
        for t in [*g.taints, *([SPOT_TAINT] if g.spot else [])]:
            if t not in out:
                out.append(t)
    return out


def merge_tolerations(defaults: Iterable[Toleration], taints: Iterable[str]) -> list[dict[str, Any]]:
    """A chart's default tolerations plus one per taint, once each (Helm replaces lists, so the
    defaults are repeated)."""
    out: list[dict[str, Any]] = []
    for t in [*(d.model_dump(exclude_none=True) for d in defaults), *(taint_toleration(t) for t in taints)]:
        if t not in out:
            out.append(t)
    return out
