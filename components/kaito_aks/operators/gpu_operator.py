"""The NVIDIA GPU Operator, installed from NVIDIA's Helm repository, set up for the GPU pools
it serves."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import catalog
from kaito_aks.capacity import ALL_TAINTS, Capacity, pods_of, with_requests
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.cluster.access import provider_problems
from kaito_aks.nodes import NodeGroup, merge_tolerations, node_groups_problems, node_taints, with_driver
from kaito_aks.operators.helm import ChartRelease, deep_merge, pinned_release, unread_values
from kaito_aks.options import child_options, component_type
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Problem
from kaito_aks.schema import args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:GpuOperator"
FORMER_TYPES = ("kaito-aks:kubernetes:GpuOperator",)
INSTALL_TIMEOUT_SECONDS = 1200  # the driver container compiles and loads on first GPU node start
DEFAULT_VERSION = "v25.3.4"


@args_class
class GpuOperatorArgs:
    """The pinned NVIDIA GPU Operator chart, set up for the GPU pools it serves."""

    version: str = DEFAULT_VERSION
    """Chart version: v25.3.4 or v26.7.0."""
    node_groups: list[NodeGroup] = field(default_factory=list[NodeGroup])
    """The GPU pools it serves (e.g. `GpuNodePool.node_group`): its daemonsets and NFD tolerate
    their taints; when AKS installs the driver on every pool, it uses AKS's driver and toolkit.
    Depend the operator on the pools themselves in `opts`. Default: none (its daemonsets
    tolerate the chart's default taints only)."""
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra chart values, deep-merged last; default: none."""


def gpu_operator_problems(args: GpuOperatorArgs) -> list[Problem]:
    problems = node_groups_problems(args.node_groups)
    if len({g.gpu_driver for g in args.node_groups}) > 1:
        problems.append(
            Problem.at(
                "node_groups",
                "every GPU pool needs the same `gpu_driver` under the GPU Operator (its driver settings are cluster-wide)",
                "mixed-drivers",
            )
        )
    chart = catalog.gpu_operator_charts().get(args.version)
    if chart is None:
        supported = ", ".join(catalog.gpu_operator_charts())
        return [
            *problems,
            Problem.at("version", f"GPU Operator {args.version} is not supported; use one of: {supported}", "version"),
        ]
    return problems + unread_values(args.values, chart.value_keys, f"gpu-operator {args.version}")


def gpu_operator_values(args: GpuOperatorArgs) -> dict[str, Any]:
    """Operands and NFD must tolerate the GPU pools' taints, or NFD/GFD never label the nodes
    and nothing schedules. When AKS installed the driver and toolkit, the operator uses them."""
    chart = catalog.gpu_operator_charts()[args.version]
    taints = node_taints(args.node_groups)
    out: dict[str, Any] = {
        "daemonsets": {"tolerations": merge_tolerations(chart.daemonset_tolerations, taints)},
        "node-feature-discovery": {"worker": {"tolerations": merge_tolerations(chart.nfd_worker_tolerations, taints)}},
    }
    if args.node_groups and all(g.gpu_driver == "aks" for g in args.node_groups):
        # AKS's driver and container toolkit stay; the operator adds the rest around them.
        out["driver"] = {"enabled": False}
        out["toolkit"] = {"enabled": False}
        out["operator"] = {"runtimeClass": "nvidia-container-runtime"}
    return deep_merge(out, args.values)


def gpu_operator_capacity(args: GpuOperatorArgs) -> Capacity:
    """What the release runs on the non-GPU nodes, for the capacity budget: the operator, NFD's
    master and garbage collector, and NFD's worker on every node whose taints its tolerations
    (the chart's and the GPU pools') cover. Its operands run on GPU nodes only."""
    kinds = pod_requests().pods.gpu_operator.get(args.version)
    if kinds is None:
        return Capacity()
    values = gpu_operator_values(args)
    keys = toleration_keys(values["node-feature-discovery"]["worker"]["tolerations"])
    pods = tuple(
        dataclasses.replace(p, tolerates=keys) if p.per_node else p
        for p in pods_of(kinds, note=f"GPU Operator {args.version}")
    )
    return Capacity(pods=with_requests(pods[:1], values, "operator", "resources") + pods[1:])


def toleration_keys(tolerations: object) -> tuple[str, ...]:
    """The taint keys a pod's tolerations cover (ALL_TAINTS: one without a key covers every taint)."""
    listed: list[object] = list(cast(list[object], tolerations)) if isinstance(tolerations, list) else []
    keys = [str(t.get("key") or ALL_TAINTS) for t in listed if is_dict(t)]
    return tuple(dict.fromkeys(keys))


def gpu_operator_release(args: GpuOperatorArgs) -> ChartRelease:
    return ChartRelease.of(catalog.gpu_operator_chart_source(), args.version, gpu_operator_values(args))


class GpuOperator(pulumi.ComponentResource):
    """A pinned `nvidia/gpu-operator` release: driver (unless AKS installs it), container
    toolkit, device plugin, NFD and GPU Feature Discovery on the given GPU pools' nodes."""

    chart_version: pulumi.Output[str]
    """The installed chart version."""

    release: k8s.helm.v3.Release
    capacity: Capacity
    """What it runs on the non-GPU nodes, for the capacity budget (`deploy_models`' `capacity`)."""
    node_groups: list[NodeGroup]
    """The GPU pools it was given, marked as having their driver installed (`driver_installed`):
    pass these to KaitoOperator and KaitoModel, which refuse a pool left to the GPU Operator
    without one."""

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "GpuOperator", name, GpuOperatorArgs, args, gpu_operator_problems, also=provider_problems(opts)
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        self.release = pinned_release(
            name, gpu_operator_release(checked), INSTALL_TIMEOUT_SECONDS, child_options(self, opts)
        )
        self.node_groups = [with_driver(g) for g in checked.node_groups]
        self.capacity = gpu_operator_capacity(checked)
        self.chart_version = self.release.status.version
        self.register_outputs({"chartVersion": self.chart_version})
