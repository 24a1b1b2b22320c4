"""The non-GPU pools' capacity budget (issue 37): the CPU and memory every pod the program installs
or causes requests, placed on the pools where it may run (its node selector, the pools' taints),
against what AKS leaves of those pools' nodes, at the autoscaler's maximum where a pool
autoscales. A routed model's endpoint picker (1 CPU, 2 GiB, no tolerations: KAITO 0.12) lands
beside istiod, the gateway, KEDA, the operators and AKS's own pods on the untainted pools, so
every further model takes a CPU of the system pool unless something says so.

Each component says what it adds as a `Capacity` (its `capacity` attribute, and a pure function
of its args the stack calls too): the pools it makes, the pods it runs, each pod's requests read
from its chart or manifest at the pinned version (catalog/pod_requests.yaml). `capacity_budget`
(capacity/budget.py) places them and refuses what cannot fit, with the fix; `deploy_models`
takes the components of a program (`capacity=`) and checks the same as the stack does."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kaito_aks.catalog.capacity import PodKind, cpu_millicores, memory_mib
from kaito_aks.nodes import TAINT
from kaito_aks.parsed import is_dict
from kaito_aks.problems import PathPart

ALL_TAINTS = "*"  # `PodSet.tolerates`: every taint (a DaemonSet with `operator: Exists`)


@dataclass(frozen=True)
class PodSet:
    """Pods of one kind: `replicas` pods of these requests (or, `per_node`, one on every node it
    may run on), the node labels they require and the taint keys they tolerate."""

    who: str
    """How the budget names them, e.g. "istiod" or "endpoint picker of phi-4"."""
    cpu_m: int
    memory_mi: int
    replicas: int = 1
    per_node: bool = False
    selector: Mapping[str, str] = field(default_factory=dict[str, str])
    tolerates: tuple[str, ...] = ()
    spread: bool = False
    """At most one per node (a required anti-affinity by hostname)."""
    source: str = ""
    at: tuple[PathPart, ...] = ()
    """Where a problem about it is said (a model's: its entry); empty: at the pools."""
    model: bool = False
    """A model's or RAG engine's: its `bypass_checks` may leave the budget (capacity)."""
    bypassed: bool = False

    def tolerates_taint(self, taint: str) -> bool:
        m = TAINT.match(taint)
        key = m["key"] if m else taint.split(":")[0].split("=")[0]
        effect = m["effect"] if m else "NoSchedule"
        return effect == "PreferNoSchedule" or ALL_TAINTS in self.tolerates or key in self.tolerates


@dataclass(frozen=True)
class CapacityPool:
    """A pool of non-GPU nodes: its size, node counts, the labels and taints of its nodes."""

    name: str
    vm_size: str
    nodes: int
    """Nodes it has: its fixed count, or the autoscaler's minimum."""
    max_nodes: int
    labels: Mapping[str, str] = field(default_factory=dict[str, str])
    """Every label its nodes carry (AKS's, its name's, its own)."""
    taints: tuple[str, ...] = ()
    kubernetes_version: str | None = None
    """The cluster's Kubernetes version (AKS's memory reservation depends on it); None: AKS's
    default, a minor AKS supports today (1.29 or later)."""
    at: tuple[PathPart, ...] = ()
    """Where a problem about it is said."""
    grow: str = "count"
    """How to give it nodes, in the caller's words (e.g. "count", "autoscale.max")."""
    note: str = ""
    """What else to know of giving it nodes (e.g. a setting applied only when the cluster is created)."""


@dataclass(frozen=True)
class Capacity:
    """What one component adds to the cluster's non-GPU nodes: the pools it makes, the pods it runs."""

    pools: tuple[CapacityPool, ...] = ()
    pods: tuple[PodSet, ...] = ()

    def __add__(self, other: Capacity) -> Capacity:
        return Capacity((*self.pools, *other.pools), (*self.pods, *other.pods))

    def at(self, *path: PathPart) -> Capacity:
        """The same, said at `path` (each pool's and pod's own path under it)."""
        return Capacity(
            tuple(dataclasses.replace(p, at=(*path, *p.at)) for p in self.pools),
            tuple(dataclasses.replace(p, at=(*path, *p.at)) for p in self.pods),
        )


def total(parts: Iterable[Capacity]) -> Capacity:
    out = Capacity()
    for part in parts:
        out += part
    return out


def pods_of(kinds: Sequence[PodKind], *, note: str = "", **overrides: Any) -> tuple[PodSet, ...]:
    """PodSets of the catalog's pod kinds (`note`: after each name, e.g. the release), each field
    of `overrides` replacing the catalog's (e.g. requests a release's values set)."""
    out: list[PodSet] = []
    for kind in kinds:
        tolerates = (ALL_TAINTS,) if kind.tolerates == "all" else tuple(kind.tolerates)
        pod = PodSet(
            who=f"{kind.name}{f' ({note})' if note else ''}",
            cpu_m=kind.cpu_m,
            memory_mi=kind.memory_mi,
            replicas=kind.replicas,
            per_node=kind.per_node,
            tolerates=tolerates,
            spread=kind.spread,
            source=kind.source,
        )
        out.append(dataclasses.replace(pod, **overrides) if overrides else pod)
    return tuple(out)


def requested(values: Mapping[str, Any], *path: str) -> tuple[int | None, int | None]:
    """(millicores, MiB) a release's values request at `path` (e.g. "resources"), each None where
    they say nothing (the chart's default stands) or say it in a shape that is not a quantity."""
    node: object = values
    for key in (*path, "requests"):
        node = node.get(key) if is_dict(node) else None
    if not is_dict(node):
        return None, None
    cpu, memory = node.get("cpu"), node.get("memory")
    return (
        cpu_millicores(cpu) if isinstance(cpu, str | int | float) else None,
        memory_mib(memory) if isinstance(memory, str | int | float) else None,
    )


def with_requests(pods: tuple[PodSet, ...], values: Mapping[str, Any], *path: str) -> tuple[PodSet, ...]:
    """The pods with the requests `values` set at `path` instead of the chart's, where they set them."""
    cpu, memory = requested(values, *path)
    if cpu is None and memory is None:
        return pods
    source = f"the release's values ({'.'.join(path)}.requests)"
    return tuple(
        dataclasses.replace(
            p, cpu_m=p.cpu_m if cpu is None else cpu, memory_mi=p.memory_mi if memory is None else memory, source=source
        )
        for p in pods
    )


__all__ = [
    "ALL_TAINTS",
    "Capacity",
    "CapacityPool",
    "PodSet",
    "pods_of",
    "requested",
    "total",
    "with_requests",
]
