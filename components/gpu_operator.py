"""The NVIDIA GPU Operator, installed from NVIDIA's Helm repository."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.options import child_options

INSTALL_TIMEOUT_SECONDS = 1200  # the driver container compiles and loads on first GPU node start


@dataclass(frozen=True)
class GpuOperatorArgs:
    repository: str  # https://helm.ngc.nvidia.com/nvidia
    chart: str  # gpu-operator
    version: str  # pinned, e.g. v25.3.4
    release_name: str
    namespace: str
    values: dict[str, Any]


class GpuOperator(pulumi.ComponentResource):
    """A pinned `nvidia/gpu-operator` release: driver (unless AKS installs it), container
    toolkit, device plugin, NFD and GPU Feature Discovery on the GPU nodes."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:kubernetes:GpuOperator", name, None, opts)
        self.release = k8s.helm.v3.Release(
            name,
            k8s.helm.v3.ReleaseArgs(
                name=args.release_name,
                chart=args.chart,
                version=args.version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=args.repository),
                namespace=args.namespace,
                create_namespace=True,
                values=args.values,
                atomic=True,
                cleanup_on_fail=True,
                timeout=INSTALL_TIMEOUT_SECONDS,
            ),
            opts=child_options(self, opts),
        )
        self.chart_version = self.release.status.version
        self.register_outputs({"chartVersion": self.chart_version})
