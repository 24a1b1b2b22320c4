"""The NVIDIA GPU Operator, installed from NVIDIA's Helm repository."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.helm import ChartRelease, pinned_release
from kaito_aks.options import child_options

INSTALL_TIMEOUT_SECONDS = 1200  # the driver container compiles and loads on first GPU node start


class GpuOperator(pulumi.ComponentResource):
    """A pinned `nvidia/gpu-operator` release: driver (unless AKS installs it), container
    toolkit, device plugin, NFD and GPU Feature Discovery on the GPU nodes."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: ChartRelease, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:kubernetes:GpuOperator", name, None, opts)
        self.release = pinned_release(name, args, INSTALL_TIMEOUT_SECONDS, child_options(self, opts))
        self.chart_version = self.release.status.version
        self.register_outputs({"chartVersion": self.chart_version})
