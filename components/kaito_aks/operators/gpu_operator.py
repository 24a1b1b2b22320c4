"""The NVIDIA GPU Operator, installed from NVIDIA's Helm repository, set up for the GPU pools
it serves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import catalog
from kaito_aks.azure.gpu_node_pool import GpuNodePool, GpuPoolSettings
from kaito_aks.operators.helm import ChartRelease, deep_merge, pinned_release
from kaito_aks.options import child_options
from kaito_aks.scheduling import merge_tolerations

INSTALL_TIMEOUT_SECONDS = 1200  # the driver container compiles and loads on first GPU node start
DEFAULT_VERSION = "v25.3.4"


@dataclass(frozen=True)
class GpuOperatorArgs:
    version: str = DEFAULT_VERSION  # chart version; one of catalog.gpu_operator_charts()
    # The GPU pools it serves: its daemonsets and NFD tolerate their taints (and wait for them);
    # when AKS installs the driver on every pool, the operator uses AKS's driver and toolkit.
    pools: Sequence[GpuNodePool | GpuPoolSettings] = ()
    values: dict[str, Any] = field(default_factory=dict)  # extra chart values, deep-merged last


def gpu_operator_problems(
    version: str, values: dict[str, Any], pools: Sequence[GpuPoolSettings] = ()
) -> list[tuple[str, str]]:
    """(path, message) for each problem with the chart version, values or pools."""
    problems = []
    if len({p.gpu_driver for p in pools}) > 1:
        problems.append(
            (
                "pools",
                "with the GPU Operator every GPU pool needs the same gpuDriver (the operator's driver settings "
                "are cluster-wide)",
            )
        )
    chart = catalog.gpu_operator_charts().get(version)
    if chart is None:
        supported = ", ".join(catalog.gpu_operator_charts())
        return [*problems, ("version", f"GPU Operator {version} is not supported; use one of: {supported}")]
    return problems + [
        (f"values.{k}", f"not a value of the gpu-operator {version} chart") for k in values if k not in chart.value_keys
    ]


def gpu_operator_values(version: str, pools: Sequence[GpuPoolSettings], values: dict[str, Any]) -> dict[str, Any]:
    """Operands and NFD must tolerate the GPU pools' taints, or NFD/GFD never label the nodes
    and nothing schedules. When AKS installed the driver and toolkit, the operator uses them."""
    chart = catalog.gpu_operator_charts()[version]
    taints = [t for pool in pools for t in pool.node_taints]
    out: dict[str, Any] = {
        "daemonsets": {"tolerations": merge_tolerations(chart.daemonset_tolerations, taints)},
        "node-feature-discovery": {"worker": {"tolerations": merge_tolerations(chart.nfd_worker_tolerations, taints)}},
    }
    if pools and all(p.gpu_driver == "aks" for p in pools):
        # AKS's driver and container toolkit stay; the operator adds the rest around them.
        out["driver"] = {"enabled": False}
        out["toolkit"] = {"enabled": False}
        out["operator"] = {"runtimeClass": "nvidia-container-runtime"}
    return deep_merge(out, values)


def gpu_operator_release(version: str, pools: Sequence[GpuPoolSettings], values: dict[str, Any]) -> ChartRelease:
    return ChartRelease.of(catalog.gpu_operator_chart_source(), version, gpu_operator_values(version, pools, values))


class GpuOperator(pulumi.ComponentResource):
    """A pinned `nvidia/gpu-operator` release: driver (unless AKS installs it), container
    toolkit, device plugin, NFD and GPU Feature Discovery on the given GPU pools' nodes."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        settings = [p.settings if isinstance(p, GpuNodePool) else p for p in args.pools]
        problems = gpu_operator_problems(args.version, args.values, settings)
        if problems:
            raise ValueError(f"GpuOperator {name}: " + "; ".join(f"args.{p}: {m}" for p, m in problems))
        super().__init__("kaito-aks:kubernetes:GpuOperator", name, None, opts)
        release = gpu_operator_release(args.version, settings, args.values)
        # Its operands run on the pools' nodes: install once they exist.
        pools = [p for p in args.pools if isinstance(p, GpuNodePool)]
        self.release = pinned_release(
            name, release, INSTALL_TIMEOUT_SECONDS, child_options(self, opts, depends_on=pools)
        )
        self.chart_version = self.release.status.version
        self.register_outputs({"chartVersion": self.chart_version})
