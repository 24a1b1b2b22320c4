"""The KAITO workspace operator, installed from its official Helm chart."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.helm import ChartRelease, pinned_release
from kaito_aks.options import child_options

# Helm waits for the controller and its admission webhook to be ready; pulling the image on a
# fresh node takes a while.
INSTALL_TIMEOUT_SECONDS = 900


class KaitoOperator(pulumi.ComponentResource):
    """A pinned `kaito/workspace` Helm release. Helm's wait makes the release ready only once
    the controller and its fail-closed admission webhook serve, so anything that depends on
    this component may create Workspaces."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: ChartRelease, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:kubernetes:KaitoOperator", name, None, opts)
        self.release = pinned_release(name, args, INSTALL_TIMEOUT_SECONDS, child_options(self, opts))
        self.namespace = self.release.status.namespace
        self.chart_version = self.release.status.version
        self.register_outputs({"namespace": self.namespace, "chartVersion": self.chart_version})
