"""An AKS CPU node pool (an AgentPool of a CPU VM size) where CPU models and RAG engines run
instead of crowding the system pool, or (mode System) a second system pool."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Annotated, Literal

import pulumi
from pulumi_azure_native import containerservice

from kaito_aks import catalog
from kaito_aks.azure.aks_security import MAX_SURGE, Zone
from kaito_aks.azure.cluster_ref import POOL_CLUSTER, AksClusterRefArgs, cluster_problems
from kaito_aks.azure.node_pool import (
    NODES,
    POOL_NAME,
    VM_SIZE,
    AutoscaleArgs,
    default_name,
    initial_nodes,
    label_problems,
    most_nodes,
    size_problems,
)
from kaito_aks.capacity import Capacity, CapacityPool
from kaito_aks.nodes import SYSTEM_POOL, CpuNodes, Labels, Taint
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import Input, MaxItems, Range, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:CpuNodePool"
FORMER_TYPES: tuple[str, ...] = ()  # (new: none)
# Set only when a pool is created (AKS refuses a change to them), so a change is a replacement
# the preview shows. (Taints and the OS SKU change in place.)
CREATE_ONLY_PROPERTIES = ["vmSize", "availabilityZones", "osDiskSizeGB", "vnetSubnetID"]
PoolMode = Literal["User", "System"]
OsSku = Literal["Ubuntu", "AzureLinux"]


@args_class
class CpuNodePoolArgs:
    """An AKS node pool of one CPU VM size: User mode for CPU models and RAG engines, or System
    mode for a second system pool (e.g. to move the system pods to another size)."""

    cluster: AksClusterRefArgs | None = None
    """The AKS cluster the pool joins (`AksClusterRefArgs.of(cluster)`)."""
    cluster_name: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's name."""
    resource_group_name: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's resource group."""
    vm_size: Annotated[str, VM_SIZE]
    """A CPU VM size, e.g. Standard_D8s_v5 (a GPU size is GpuNodePool's). Set at creation: a
    change replaces the pool."""
    name: Annotated[str, POOL_NAME] | None = None
    """The AKS pool name; default: the resource name."""
    mode: PoolMode = "User"
    """User: the pool runs workloads (select it by its `kubernetes.azure.com/agentpool` label);
    System: a further system pool, which AKS may also schedule its system pods to."""
    count: Annotated[int, NODES] | None = None
    """Fixed node count (default 1); or give `autoscale`."""
    autoscale: AutoscaleArgs | None = None
    """Let the cluster autoscaler size the pool between min and max, instead of `count`; default: a
    fixed size."""
    labels: Labels = field(default_factory=dict[str, str])
    """Node labels, besides the ones AKS adds (select the pool by them); default: none."""
    taints: Annotated[list[Taint], MaxItems(50)] = field(default_factory=list[str])
    """Node taints, key=value:Effect (changed in place); a pod must tolerate them to run there.
    Default: none."""
    zones: Annotated[list[Zone], MaxItems(3)] = field(default_factory=list[Zone])
    """Availability zones for the pool's nodes (e.g. ["1", "2", "3"]). Set at creation: a change
    replaces the pool. Default: none (AKS places them)."""
    max_surge: Annotated[str, MAX_SURGE] | None = None
    """Extra nodes an upgrade adds at a time (a count, or a percentage of the pool). Changes in
    place. Default: AKS's (10%, at least one node)."""
    os_sku: OsSku = "Ubuntu"
    """The nodes' OS: Ubuntu or AzureLinux (changes in place, by a node image upgrade)."""
    os_disk_size_gb: Annotated[int, Range(30, 2048, "AKS: OS disks of 30 GB to 2 TiB")] | None = None
    """OS disk size in GB; default: AKS's for the VM size. Set at creation: a change replaces the
    pool."""
    vnet_subnet_id: Input[str] | None = None
    """The subnet of the pool's nodes: that of the cluster's other pools when the cluster has a
    subnet of its own (`AksCluster.node_subnet_id`; AKS keeps a cluster's pools in one VNet);
    default: AKS's managed VNet. Set at creation: a change replaces the pool."""


def cpu_node_pool_problems(args: CpuNodePoolArgs) -> list[Problem]:
    """Every rule the pool's args break beyond their types."""
    problems = size_problems(args)
    if args.vm_size in catalog.all_gpu_skus():
        problems.append(
            Problem.at(
                "vm_size",
                f"{args.vm_size} is a GPU VM size; a CPU pool of it would pay for GPUs nothing uses: make GPU pools "
                "with GpuNodePool (gpuNodePools)",
                "cpu-pool-gpu-size",
            )
        )
    return problems + label_problems(args.labels)


def not_the_system_pool(resource_name: str) -> Callable[[CpuNodePoolArgs], list[Problem]]:
    """The rule that the pool's name (or the resource name it defaults to) is not the system pool's."""

    def rule(args: CpuNodePoolArgs) -> list[Problem]:
        if (args.name or resource_name) != SYSTEM_POOL:
            return []
        return [Problem.at("name", "is the name of the cluster's own system pool; choose another", "pool-name")]

    return rule


def cpu_nodes(args: CpuNodePoolArgs, pool_name: str) -> CpuNodes:
    """The pool as the placement rules see it."""
    return CpuNodes(pool_name, args.vm_size, args.mode, dict(args.labels), tuple(args.taints))


def cpu_pool_capacity(args: CpuNodePoolArgs, pool_name: str, kubernetes_version: str | None = None) -> Capacity:
    """The pool as the capacity budget counts it: its nodes (the autoscaler's most), their labels
    and taints (`kubernetes_version`: the cluster's, for AKS's memory reservation)."""
    nodes = cpu_nodes(args, pool_name)
    grow = "autoscale.max" if args.autoscale is not None else "count"
    pool = CapacityPool(
        pool_name,
        args.vm_size,
        initial_nodes(args),
        most_nodes(args),
        nodes.node_labels,
        tuple(args.taints),
        kubernetes_version,
        grow=grow,
    )
    return Capacity((pool,))


class CpuNodePool(pulumi.ComponentResource):
    """A CPU pool of an AKS cluster: an AgentPool of one CPU VM size, User mode (CPU models and RAG
    engines select it by `kubernetes.azure.com/agentpool: <name>`) or System mode (a second
    system pool); create-only settings change by replacement."""

    name: pulumi.Output[str]
    """The AKS pool name."""
    vm_size: pulumi.Output[str]
    """The pool's VM size."""

    cpu_nodes: CpuNodes
    """Its nodes as placement rules see them (name, size, mode, labels, taints)."""
    capacity: Capacity
    """The pool as the capacity budget counts it (give it to `deploy_models`' `capacity`)."""

    def __init__(self, name: str, args: CpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        args = checked_args(
            "CpuNodePool",
            name,
            CpuNodePoolArgs,
            args,
            cpu_node_pool_problems,
            default_name(CpuNodePoolArgs, name),
            not_the_system_pool(name),
            also=cluster_problems(args, POOL_CLUSTER),
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        pool_name = args.name or name
        self.cpu_nodes = cpu_nodes(args, pool_name)
        self.capacity = cpu_pool_capacity(args, pool_name)
        autoscale = args.autoscale is not None
        self.agent_pool = containerservice.AgentPool(
            name,
            agent_pool_name=pool_name,
            resource_group_name=args.cluster.resource_group_name if args.cluster else args.resource_group_name,
            resource_name_=args.cluster.name if args.cluster else args.cluster_name,
            mode=containerservice.AgentPoolMode.SYSTEM
            if args.mode == "System"
            else containerservice.AgentPoolMode.USER,
            vm_size=args.vm_size,
            os_type=containerservice.OSType.LINUX,
            os_sku=containerservice.OSSKU.AZURE_LINUX if args.os_sku == "AzureLinux" else containerservice.OSSKU.UBUNTU,
            type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            count=initial_nodes(args),
            enable_auto_scaling=autoscale,
            min_count=args.autoscale.min if args.autoscale else None,
            max_count=args.autoscale.max if args.autoscale else None,
            node_labels=dict(args.labels) or None,
            node_taints=list(args.taints) or None,
            os_disk_size_gb=args.os_disk_size_gb,
            availability_zones=list(args.zones) or None,
            upgrade_settings=containerservice.AgentPoolUpgradeSettingsArgs(max_surge=args.max_surge)
            if args.max_surge is not None
            else None,
            vnet_subnet_id=args.vnet_subnet_id,
            opts=child_options(
                self,
                opts,
                replace_on_changes=CREATE_ONLY_PROPERTIES,
                delete_before_replace=True,  # the pool name is fixed
                ignore_changes=["count"] if autoscale else None,  # the autoscaler owns it
            ),
        )
        self.name = self.agent_pool.name
        self.vm_size = pulumi.Output.from_input(args.vm_size)
        self.register_outputs({"name": self.name, "vmSize": self.vm_size})
