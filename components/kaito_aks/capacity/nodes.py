"""What a node of an AKS pool leaves its pods: the VM size's vCPUs and memory less AKS's
kube-reserved CPU and memory and the kubelet's eviction threshold, by the rule of the cluster's
Kubernetes minor (learn.microsoft.com/azure/aks/node-resource-reservations; the numbers are in
catalog/pod_requests.yaml, aksNodes)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kaito_aks.catalog.capacity import AksNodes, MemoryRule, cpu_vm_sizes, pod_requests, vm_size_name

_MINOR = re.compile(r"(\d+)\.(\d+)")


@dataclass(frozen=True)
class Allocatable:
    """One node's allocatable, and how it comes about (for the budget's words)."""

    vm_size: str
    vcpus: int
    memory_mi: int  # the VM's
    cpu_m: int  # allocatable
    pod_memory_mi: int  # allocatable
    reserved_cpu_m: int
    reserved_memory_mi: int
    eviction_mi: int
    rule: str  # which memory rule, e.g. "1.29+"


def reserved_cpu(cores: int, nodes: AksNodes | None = None) -> int:
    """AKS's kube-reserved CPU (millicores) of a node of `cores` vCPUs: the table's row, or between
    two rows the smaller one's (so allocatable is never understated)."""
    table = (nodes or pod_requests().aks_nodes).reserved_cpu_millicores
    rows = sorted(c for c in table if c <= cores)
    return table[rows[-1]] if rows else table[min(table)]


def minor(kubernetes_version: str | None) -> tuple[int, int] | None:
    m = _MINOR.match(kubernetes_version or "")
    return (int(m[1]), int(m[2])) if m else None


def memory_rule(kubernetes_version: str | None, nodes: AksNodes | None = None) -> MemoryRule:
    """The memory reservation rule of the cluster's minor (None, AKS's default: the newest rule,
    as every minor AKS supports today is 1.29 or later)."""
    rules = sorted((nodes or pod_requests().aks_nodes).memory, key=lambda r: minor(r.since) or (0, 0), reverse=True)
    version = minor(kubernetes_version)
    if version is None:
        return rules[0]
    return next((r for r in rules if version >= (minor(r.since) or (0, 0))), rules[-1])


def reserved_memory(memory_mi: int, rule: MemoryRule, max_pods: int) -> int:
    """AKS's kube-reserved memory (MiB) of a node with `memory_mi`, by `rule`."""
    if rule.tiers is not None:
        left, reserved = float(memory_mi), 0.0
        for size, share in rule.tiers:
            part = left if size is None else min(left, float(size))
            reserved += part * share
            left -= part
            if left <= 0:
                break
        return int(reserved)  # (rounded down: the smaller reservation)
    per_pod = (rule.per_pod_mb or 0) * max_pods + (rule.base_mb or 0)
    by_pods = per_pod * 10**6 / 2**20
    cap = memory_mi * (rule.at_most_share if rule.at_most_share is not None else 1.0)
    return int(min(by_pods, cap))


def allocatable(vm_size: str, kubernetes_version: str | None = None) -> Allocatable | None:
    """A node's allocatable CPU (millicores) and memory (MiB); None: a size the catalog does not know."""
    found = cpu_vm_sizes().get(vm_size.lower())
    if found is None:
        return None
    vcpus, memory_mi, _ = found
    nodes = pod_requests().aks_nodes
    rule = memory_rule(kubernetes_version, nodes)
    cpu = reserved_cpu(vcpus, nodes)
    memory = reserved_memory(memory_mi, rule, nodes.max_pods)
    return Allocatable(
        vm_size=vm_size_name(vm_size),
        vcpus=vcpus,
        memory_mi=memory_mi,
        cpu_m=vcpus * 1000 - cpu,
        pod_memory_mi=memory_mi - memory - rule.eviction_mib,
        reserved_cpu_m=cpu,
        reserved_memory_mi=memory,
        eviction_mi=rule.eviction_mib,
        rule=f"{rule.since}+" if rule.tiers is None else f"before {_next_since(rule)}",
    )


def _next_since(rule: MemoryRule) -> str:
    later = [
        r.since for r in pod_requests().aks_nodes.memory if (minor(r.since) or (0, 0)) > (minor(rule.since) or (0, 0))
    ]
    return min(later, key=lambda s: minor(s) or (0, 0)) if later else "?"
