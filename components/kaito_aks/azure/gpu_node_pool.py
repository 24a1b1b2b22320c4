"""An AKS GPU node pool (a User-mode AgentPool) that GPU workloads can find and tolerate."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import pulumi
from pulumi_azure_native import containerservice

from kaito_aks.options import child_options
from kaito_aks.scheduling import DEFAULT_GPU_TAINTS, GPU_PRESENT_LABEL, SPOT_TAINT

if TYPE_CHECKING:
    from kaito_aks.azure.aks_cluster import AksCluster

# Set only when a pool is created (AKS ignores changes to them), so a change must be a replace
# that shows in the preview rather than a silent no-op.
CREATE_ONLY_PROPERTIES = ["gpuProfile", "nodeTaints", "vmSize", "scaleSetPriority", "osSKU", "osDiskSizeGB"]
POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")  # AKS: 1-12 lowercase letters and digits
TAINT = re.compile(
    r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$"
)


@dataclass(frozen=True)
class GpuPoolSettings:
    """What the pool is, independent of which cluster it joins."""

    vm_size: str
    # operator: AKS skips the driver (gpuProfile.driver None) and the GPU Operator installs it;
    # aks: AKS installs the driver and container toolkit.
    gpu_driver: Literal["operator", "aks"] = "operator"
    count: int | None = None  # fixed node count (default 1), or autoscale_min/max
    autoscale_min: int | None = None
    autoscale_max: int | None = None
    spot: bool = False  # Azure Spot VMs: the pool carries AKS's spot taint
    labels: dict[str, str] = field(default_factory=dict)  # besides the GPU-present label, which is always set
    taints: list[str] = field(default_factory=lambda: list(DEFAULT_GPU_TAINTS))
    os_disk_size_gb: int | None = None
    protect: bool = False

    @property
    def initial_nodes(self) -> int:
        """Nodes the pool starts with: autoscale_min, else count (default 1)."""
        if self.autoscale_max is not None:
            return self.autoscale_min or 0
        return 1 if self.count is None else self.count

    @property
    def node_taints(self) -> list[str]:
        """The taints the nodes carry (AKS adds the spot taint to spot pools)."""
        return [*self.taints, SPOT_TAINT] if self.spot and SPOT_TAINT not in self.taints else list(self.taints)

    @property
    def pool_labels(self) -> dict[str, str]:
        """The labels the pool sets: GPU-present (what a default model selector matches) and the
        configured ones."""
        return {**GPU_PRESENT_LABEL, **self.labels}

    def node_labels(self, pool_name: str) -> dict[str, str]:
        """The labels its nodes will carry: the pool's, and the ones AKS adds."""
        labels = {**self.pool_labels, "agentpool": pool_name, "kubernetes.azure.com/agentpool": pool_name}
        if self.spot:
            labels["kubernetes.azure.com/scalesetpriority"] = "spot"
        return labels


def gpu_pool_problems(pool_name: str, pool: GpuPoolSettings) -> list[tuple[str, str]]:
    """(path, message) for each rule the pool breaks; paths as in a config entry (taints[0])."""
    problems: list[tuple[str, str]] = []
    if not POOL_NAME.match(pool_name):
        problems.append(
            (
                "name",
                f"AKS node pool name {pool_name!r} must be 1-12 lowercase letters and digits, starting with a letter",
            )
        )
    if pool.count is not None and pool.autoscale_max is not None:
        problems.append(("", "set count or autoscale, not both"))
    if (pool.autoscale_min is None) != (pool.autoscale_max is None):
        problems.append(("autoscale", "set both min and max"))
    elif pool.autoscale_min is not None and pool.autoscale_max is not None and pool.autoscale_min > pool.autoscale_max:
        problems.append(("autoscale", f"min ({pool.autoscale_min}) is greater than max ({pool.autoscale_max})"))
    for j, taint in enumerate(pool.taints):
        if not TAINT.match(taint):
            problems.append((f"taints[{j}]", f"{taint!r} is not a taint: write key=value:Effect or key:Effect"))
        elif taint == SPOT_TAINT and not pool.spot:
            problems.append(
                (f"taints[{j}]", "AKS sets the spot taint on spot pools; set spot: true instead of the taint")
            )
    return problems


@dataclass(frozen=True)
class GpuNodePoolArgs:
    cluster: AksCluster  # the cluster the pool joins
    settings: GpuPoolSettings
    pool_name: str | None = None  # the AKS pool name; default: the resource name


class GpuNodePool(pulumi.ComponentResource):
    """A GPU pool of an AksCluster. Outputs: `name` (the AKS pool name); `settings` and
    `pool_name` describe it to whatever must tolerate or select its nodes (GpuOperator)."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        pool_name = args.pool_name or name
        problems = gpu_pool_problems(pool_name, args.settings)
        if problems:
            raise ValueError(f"GpuNodePool {name}: " + "; ".join(f"{p or 'args'}: {m}" for p, m in problems))
        super().__init__("kaito-aks:azure:GpuNodePool", name, None, opts)
        self.settings = pool = args.settings
        self.pool_name = pool_name
        autoscale = pool.autoscale_max is not None
        spot = (
            {
                "scale_set_priority": containerservice.ScaleSetPriority.SPOT,
                "scale_set_eviction_policy": containerservice.ScaleSetEvictionPolicy.DELETE,
                "spot_max_price": -1,  # pay up to the on-demand price, never evicted for price
            }
            if pool.spot
            else {}
        )
        self.agent_pool = containerservice.AgentPool(
            name,
            agent_pool_name=pool_name,
            resource_group_name=args.cluster.resource_group_name,
            resource_name_=args.cluster.cluster_name,
            mode=containerservice.AgentPoolMode.USER,
            vm_size=pool.vm_size,
            os_type=containerservice.OSType.LINUX,
            os_sku=containerservice.OSSKU.UBUNTU,  # the GPU Operator and KAITO support Ubuntu nodes
            type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            count=pool.initial_nodes,
            enable_auto_scaling=autoscale,
            min_count=pool.autoscale_min,
            max_count=pool.autoscale_max,
            node_labels=pool.pool_labels,
            node_taints=pool.node_taints,
            gpu_profile=containerservice.GPUProfileArgs(
                driver=containerservice.GPUDriver.NONE
                if pool.gpu_driver == "operator"
                else containerservice.GPUDriver.INSTALL
            ),
            os_disk_size_gb=pool.os_disk_size_gb,
            **spot,
            opts=child_options(
                self,
                opts,
                protect=pool.protect,
                replace_on_changes=CREATE_ONLY_PROPERTIES,
                delete_before_replace=True,  # the pool name is fixed
                # The autoscaler owns the node count once the pool exists.
                ignore_changes=["count"] if autoscale else None,
            ),
        )
        self.name = self.agent_pool.name
        self.register_outputs({"name": self.name, "vmSize": pool.vm_size})
