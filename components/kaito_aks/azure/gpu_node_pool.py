"""An AKS GPU node pool (a User-mode AgentPool) that GPU workloads can find and tolerate."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated

import pulumi
from pulumi_azure_native import containerservice

from kaito_aks.azure.aks_security import MAX_SURGE, Zone
from kaito_aks.azure.cluster_ref import POOL_CLUSTER, AksClusterRefArgs, cluster_problems
from kaito_aks.azure.node_pool import (
    NODES,
    POOL_NAME,
    AutoscaleArgs,
    default_name,
    initial_nodes,
    label_problems,
    most_nodes,
    size_problems,
)
from kaito_aks.nodes import (
    AGENTPOOL_LABELS,
    DEFAULT_GPU_TAINTS,
    GPU_PRESENT_LABEL,
    SPOT_TAINT,
    SPOT_TAINT_WRITTEN,
    Labels,
    NodeGroup,
    Taint,
    vm_size_problem,
)
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import Input, MaxItems, Range, args_class
from kaito_aks.validation import checked_args
from kaito_aks.vocabulary import GpuDriver

TYPE = "kaito-aks:index:GpuNodePool"
FORMER_TYPES = ("kaito-aks:azure:GpuNodePool",)
# Set only when a pool is created (AKS ignores changes to them), so a change must be a replace
# that shows in the preview rather than a silent no-op.
CREATE_ONLY_PROPERTIES = [
    "gpuProfile",
    "nodeTaints",
    "vmSize",
    "scaleSetPriority",
    "osSKU",
    "osDiskSizeGB",
    "availabilityZones",  # AKS cannot move a pool's nodes into or out of zones
]


@args_class
class GpuNodePoolArgs:
    """A User-mode AKS node pool of one GPU VM size."""

    cluster: AksClusterRefArgs | None = None
    """The AKS cluster the pool joins (`AksClusterRefArgs.of(cluster)`)."""
    cluster_name: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's name."""
    resource_group_name: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's resource group."""
    vm_size: str
    """A GPU VM size of KAITO's SKU table, e.g. Standard_NC24ads_A100_v4."""
    name: Annotated[str, POOL_NAME] | None = None
    """The AKS pool name; default: the resource name."""
    count: Annotated[int, NODES] | None = None
    """Fixed node count (default 1); or give `autoscale`."""
    autoscale: AutoscaleArgs | None = None
    """Let the cluster autoscaler size the pool between min and max, instead of `count`; default: a
    fixed size."""
    gpu_driver: GpuDriver = "operator"
    """operator: AKS skips the driver (gpuProfile.driver None) and the NVIDIA GPU Operator installs
    it; aks: AKS installs the driver and container toolkit."""
    spot: bool = False
    """Azure Spot VMs (the nodes carry AKS's spot taint; KAITO tolerates it from 0.11)."""
    labels: Labels = field(default_factory=dict[str, str])
    """Node labels, besides nvidia.com/gpu.present=true and the ones AKS adds (select the pool by
    them); default: only those."""
    taints: Annotated[list[Taint], MaxItems(50)] = field(default_factory=lambda: list(DEFAULT_GPU_TAINTS))
    """Node taints, key=value:Effect; KAITO's presets tolerate sku=gpu and nvidia.com/gpu."""
    os_disk_size_gb: Annotated[int, Range(30, 2048, "AKS: OS disks of 30 GB to 2 TiB")] | None = None
    """OS disk size in GB (model weights are cached on it); default: AKS's for the VM size."""
    zones: Annotated[list[Zone], MaxItems(3)] = field(default_factory=list[Zone])
    """Availability zones for the pool's nodes (e.g. ["1", "2"]; GPU sizes are often offered in
    some zones only). Set when the pool is created: a change replaces the pool (the preview says
    so). Default: none (AKS places them)."""
    max_surge: Annotated[str, MAX_SURGE] | None = None
    """Extra nodes an upgrade adds at a time (a count, e.g. 1, or a percentage of the pool);
    each is a GPU VM, so mind the quota. Changes in place. Default: AKS's (10%, at least one node)."""
    vnet_subnet_id: Input[str] | None = None
    """The subnet of the pool's nodes: that of the cluster's other pools when the cluster has a
    subnet of its own (`AksCluster.node_subnet_id`; AKS keeps a cluster's pools in one VNet);
    default: AKS's managed VNet. Set at creation: a change replaces the pool."""


def node_group(args: GpuNodePoolArgs, pool_name: str, gpu_operator: bool = False) -> NodeGroup:
    """The pool as its nodes will be: the labels AKS and the pool set, the taints, the counts;
    `gpu_operator`: the program's GpuOperator installs the driver a pool leaves to it."""
    labels = {
        **GPU_PRESENT_LABEL,
        **args.labels,
        **dict.fromkeys(AGENTPOOL_LABELS, pool_name),
    }
    if args.spot:
        labels["kubernetes.azure.com/scalesetpriority"] = "spot"
    most = most_nodes(args)
    return NodeGroup(
        name=pool_name,
        vm_size=args.vm_size,
        labels=labels,
        taints=list(args.taints),
        min_nodes=min(initial_nodes(args), most),  # (a minimum above the maximum: the pool's own rule refuses it)
        max_nodes=most,
        gpu_driver=args.gpu_driver,
        spot=args.spot,
        driver_installed=args.gpu_driver == "aks" or gpu_operator,
    )


def gpu_node_pool_problems(args: GpuNodePoolArgs) -> list[Problem]:
    """Every rule the pool's args break beyond their types (which `check` covers)."""
    problems = size_problems(args)
    why = vm_size_problem(args.vm_size)
    if why is not None:
        problems.append(Problem.at("vm_size", why, "pool-sku"))
    for j, taint in enumerate(args.taints):
        if taint == SPOT_TAINT and not args.spot:
            problems.append(
                Problem.at(
                    ("taints", j),
                    SPOT_TAINT_WRITTEN,
                    "pool-spot-taint",
                )
            )
    problems += label_problems(args.labels)
    return problems


class GpuNodePool(pulumi.ComponentResource):
    """A GPU pool of an AKS cluster: a User-mode AgentPool of one GPU VM size with the
    GPU-present label and (spot) the AKS spot taint; create-only settings change by replacement.
    `node_group` describes its nodes to what must select or tolerate them (KaitoModel,
    GpuOperator, KaitoOperator)."""

    name: pulumi.Output[str]
    """The AKS pool name."""
    vm_size: pulumi.Output[str]
    """The pool's VM size."""

    node_group: NodeGroup
    """Its nodes as the other components see them (labels, taints, node counts): pass it in
    their `node_groups`."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "GpuNodePool",
            name,
            GpuNodePoolArgs,
            args,
            gpu_node_pool_problems,
            default_name(GpuNodePoolArgs, name),
            also=cluster_problems(args, POOL_CLUSTER),
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        args = checked
        pool_name = args.name or name
        self.node_group = group = node_group(args, pool_name)
        autoscale = args.autoscale is not None
        self.agent_pool = containerservice.AgentPool(
            name,
            agent_pool_name=pool_name,
            resource_group_name=args.cluster.resource_group_name if args.cluster else args.resource_group_name,
            resource_name_=args.cluster.name if args.cluster else args.cluster_name,
            mode=containerservice.AgentPoolMode.USER,
            vm_size=args.vm_size,
            os_type=containerservice.OSType.LINUX,
            os_sku=containerservice.OSSKU.UBUNTU,  # the GPU Operator and KAITO support Ubuntu nodes
            type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            count=initial_nodes(args),
            enable_auto_scaling=autoscale,
            min_count=args.autoscale.min if args.autoscale else None,
            max_count=args.autoscale.max if args.autoscale else None,
            node_labels={**GPU_PRESENT_LABEL, **args.labels},
            node_taints=[*args.taints, *([SPOT_TAINT] if args.spot and SPOT_TAINT not in args.taints else [])],
            gpu_profile=containerservice.GPUProfileArgs(
                driver=containerservice.GPUDriver.NONE
                if args.gpu_driver == "operator"
                else containerservice.GPUDriver.INSTALL
            ),
            os_disk_size_gb=args.os_disk_size_gb,
            availability_zones=list(args.zones) or None,
            upgrade_settings=containerservice.AgentPoolUpgradeSettingsArgs(max_surge=args.max_surge)
            if args.max_surge is not None
            else None,
            scale_set_priority=containerservice.ScaleSetPriority.SPOT if args.spot else None,
            scale_set_eviction_policy=containerservice.ScaleSetEvictionPolicy.DELETE if args.spot else None,
            spot_max_price=-1 if args.spot else None,  # pay up to the on-demand price, never evicted for price
            vnet_subnet_id=args.vnet_subnet_id,
            opts=child_options(
                self,
                opts,
                # (vnetSubnetID only where given: what pools without it record stays as it was)
                replace_on_changes=[*CREATE_ONLY_PROPERTIES, *(["vnetSubnetID"] if args.vnet_subnet_id else [])],
                delete_before_replace=True,  # the pool name is fixed
                # The autoscaler owns the node count once the pool exists.
                ignore_changes=["count"] if autoscale else None,
            ),
        )
        self.name = self.agent_pool.name
        self.vm_size = pulumi.Output.from_input(group.vm_size)
        self.register_outputs({"name": self.name, "vmSize": self.vm_size})
