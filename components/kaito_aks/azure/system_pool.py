"""The AKS system node pool: its args, applied when the cluster is created (it lives inline in
the ManagedCluster, whose agentPoolProfiles are ignored after that), and how the live pool may
differ from them, said at `pulumi up` rather than silently dropped."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated

from pulumi_azure_native import containerservice

from kaito_aks.azure.aks_security import MAX_SURGE, Zone
from kaito_aks.azure.node_pool import VM_SIZE
from kaito_aks.capacity import Capacity, CapacityPool, pods_of
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.nodes import SYSTEM_POOL, system_pool_nodes
from kaito_aks.schema import MaxItems, Range, args_class


@args_class
class SystemPoolArgs:
    """The AKS system node pool: the operators, and CPU models (which select it by the label
    kubernetes.azure.com/mode: system) unless a CPU pool takes them. Applied when the cluster is
    created; later edits are checked against the live pool at `pulumi up`, not applied."""

    vm_size: Annotated[str, VM_SIZE] = "Standard_D4s_v5"
    """VM size of the system nodes; applied when the cluster is created; later edits are checked
    against the live pool at `pulumi up`, not applied (AKS cannot resize a pool: add a System-mode
    CpuNodePool instead)."""
    count: Annotated[int, Range(1, 1000, "AKS: 1-1000 nodes per pool")] = 2
    """Number of system nodes; applied when the cluster is created; later edits are checked against
    the live pool at `pulumi up`, not applied (scale it with `az aks nodepool scale`)."""
    zones: Annotated[list[Zone], MaxItems(3)] = field(default_factory=list[Zone])
    """Availability zones to spread the system nodes over (e.g. ["1", "2", "3"]; the region and
    VM size must offer them); set when the cluster is created (AKS cannot move a pool's nodes to
    zones). Default: none (AKS places them)."""
    max_surge: Annotated[str, MAX_SURGE] = "33%"
    """Extra nodes an upgrade adds at a time (a count, or a percentage of the pool): more is a
    faster upgrade with fewer evictions per node. Set when the cluster is created; on an existing
    cluster change it with `az aks nodepool update --max-surge`."""


SYSTEM_POOL_AT = "system_pool (cluster.aks.systemPool)"


def system_pool_drift(live: containerservice.GetAgentPoolResult, wanted: SystemPoolArgs) -> list[str]:
    """How the live system pool differs from `system_pool`, one actionable line each: AKS takes no
    change to the cluster's inline pool, so a count is changed on the pool and a size or zones
    only by another pool."""
    size = live.vm_size or ""
    if not size:
        return []  # nothing reported (a test mock that answers every invoke with {})
    found: list[str] = []
    count = live.count
    if count is not None and count != wanted.count and not live.enable_auto_scaling:
        found.append(
            f"{SYSTEM_POOL_AT}.count is {wanted.count} but the live system pool has {count} nodes: edits to the "
            "system pool are not applied to an existing cluster; run `az aks nodepool scale -g <group> "
            f"--cluster-name <cluster> -n {SYSTEM_POOL} -c {wanted.count}` then `pulumi refresh`, or set "
            f"systemPool.count back to {count}"
        )
    if size.lower() != wanted.vm_size.lower():
        found.append(
            f"{SYSTEM_POOL_AT}.vmSize is {wanted.vm_size} but the live system pool is of {size}: AKS cannot change "
            "a pool's VM size; keep systemPool.vmSize at " + size + ", and for other system nodes add a CPU pool "
            "with mode System (cpuNodePools, CpuNodePool) and move the system pods to it, or recreate the cluster"
        )
    zones = sorted(live.availability_zones or [])
    if zones != sorted(wanted.zones):
        found.append(
            f"{SYSTEM_POOL_AT}.zones is {sorted(wanted.zones)} but the live system pool's are {zones}: AKS sets a "
            f"pool's zones when it creates it; keep systemPool.zones at {zones}, or add a CPU pool with mode System "
            "in those zones (cpuNodePools, CpuNodePool)"
        )
    return found


def cluster_capacity(
    pool: SystemPoolArgs, kubernetes_version: str | None, managed_prometheus: bool, existing: bool = False
) -> Capacity:
    """A created cluster's system pool and AKS's own pods with published requests (coredns and the
    per-node agents; the managed Prometheus collectors when it runs them), for the capacity budget.
    An existing cluster's pools are not known here: nothing."""
    if existing:
        return Capacity()
    data = pod_requests().pods
    nodes = system_pool_nodes(pool.vm_size)
    system = CapacityPool(
        SYSTEM_POOL,
        pool.vm_size,
        pool.count,
        pool.count,
        nodes.node_labels,
        (),
        kubernetes_version,
        ("system_pool",),
        note=f"the system pool's count and size apply when the cluster is created: on an existing one `az aks nodepool "
        f"scale -n {SYSTEM_POOL}`, or a System-mode CPU pool of a larger size",
    )
    pods = pods_of(data.aks, note="AKS")
    if managed_prometheus:
        pods += pods_of(data.aks_managed_prometheus, note="AKS managed Prometheus")
    return Capacity((system,), pods)
