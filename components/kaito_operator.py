"""The KAITO workspace operator, installed from its official Helm chart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.options import child_options

# Helm waits for the controller and its admission webhook to be ready; pulling the image on a
# fresh node takes a while.
INSTALL_TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class KaitoOperatorArgs:
    repository: str  # https://kaito-project.github.io/kaito/charts/kaito
    chart: str  # workspace
    version: str  # pinned chart version (== KAITO app version)
    release_name: str
    namespace: str
    values: dict[str, Any]


class KaitoOperator(pulumi.ComponentResource):
    """A pinned `kaito/workspace` Helm release. Helm's wait makes the release ready only once
    the controller and its fail-closed admission webhook serve, so anything that depends on
    this component may create Workspaces."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KaitoOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:kubernetes:KaitoOperator", name, None, opts)
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
        self.namespace = self.release.status.namespace
        self.chart_version = self.release.status.version
        self.register_outputs({"namespace": self.namespace, "chartVersion": self.chart_version})
