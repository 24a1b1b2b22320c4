"""An AKS GPU node pool (a User-mode AgentPool)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pulumi
from pulumi_azure_native import containerservice

from kaito_aks.options import child_options

# AKS puts this taint on every spot node; declaring it keeps the pool's taints as Azure reports
# them, and KAITO (0.12+) and the GPU Operator tolerate it.
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
# Set only when a pool is created (AKS ignores changes to them), so a change must be a replace
# that shows in the preview rather than a silent no-op.
CREATE_ONLY_PROPERTIES = ["gpuProfile", "nodeTaints", "vmSize", "scaleSetPriority", "osSKU", "osDiskSizeGB"]


@dataclass(frozen=True)
class GpuPoolSettings:
    """What the pool is, independent of which cluster it joins."""

    vm_size: str
    # operator: AKS skips the driver (gpuProfile.driver None) and the GPU Operator installs it;
    # aks: AKS installs the driver and container toolkit.
    gpu_driver: Literal["operator", "aks"] = "operator"
    count: int | None = None
    autoscale_min: int | None = None
    autoscale_max: int | None = None
    spot: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[str] = field(default_factory=list)
    os_disk_size_gb: int | None = None
    protect: bool = False

    @property
    def node_taints(self) -> list[str]:
        return [*self.taints, SPOT_TAINT] if self.spot and SPOT_TAINT not in self.taints else list(self.taints)


@dataclass(frozen=True)
class GpuNodePoolArgs:
    cluster_name: pulumi.Input[str]
    resource_group_name: pulumi.Input[str]
    settings: GpuPoolSettings


class GpuNodePool(pulumi.ComponentResource):
    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:azure:GpuNodePool", name, None, opts)
        pool = args.settings
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
            agent_pool_name=name,
            resource_group_name=args.resource_group_name,
            resource_name_=args.cluster_name,
            mode=containerservice.AgentPoolMode.USER,
            vm_size=pool.vm_size,
            os_type=containerservice.OSType.LINUX,
            os_sku=containerservice.OSSKU.UBUNTU,  # the GPU Operator and KAITO support Ubuntu nodes
            type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            count=pool.autoscale_min if autoscale else pool.count,
            enable_auto_scaling=autoscale,
            min_count=pool.autoscale_min,
            max_count=pool.autoscale_max,
            node_labels=pool.labels,
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
