"""Karpenter's CRDs (NodePool, NodeClaim, NodeOverlay, AKSNodeClass) from the chart that holds
them as templates, karpenter-crd, so that a later Karpenter release upgrades them.

The karpenter chart carries the same CRDs in its crds/ folder, which Helm installs once and
never upgrades: a cluster moved to a newer Karpenter that way keeps the old CRDs, whose schema
prunes the fields the new controller writes. Karpenter publishes karpenter-crd beside the chart,
under the same version (hack/release/common.sh:135-136 at v1.12.0); its templates are the CRDs
alone, the very ones the crds/ folder holds (charts/karpenter-crd/templates at v1.12.0).

On a cluster where the karpenter chart installed them (a stack deployed before this component
existed), Helm would refuse to install the CRD chart over CRDs it does not own: a step before
it hands them over (`CrdsAdopted`: Helm's three ownership labels, nothing else), so they are
adopted in place, never replaced or deleted, and every NodePool, NodeClaim and AKSNodeClass
stays. On `pulumi destroy` the CRDs are left in the cluster, as the crds/ folder's were
(deleting them would delete every object of theirs, and the AKSNodeClasses KAITO makes keep a
finalizer only a running Karpenter removes)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import catalog
from kaito_aks.cluster.access import access_for, provider_problems
from kaito_aks.cluster.crd_adoption import CrdsAdopted
from kaito_aks.operators.helm import ChartRelease, pinned_release
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import Input, Secret, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:KarpenterCrds"
FORMER_TYPES: tuple[str, ...] = ()  # new in 0.4.0
DEFAULT_VERSION = "1.12.0"
INSTALL_TIMEOUT_SECONDS = 300


@args_class
class KarpenterCrdsArgs:
    """Karpenter's CRDs from its karpenter-crd chart, at the Karpenter version they belong to."""

    version: str = DEFAULT_VERSION
    """The Karpenter release whose CRDs these are (the chart is published under the same version)."""
    kubeconfig: Secret[Input[str]] | None = None
    """Credentials to hand CRDs that exist already to the chart with (kept secret). Default:
    those of the ClusterProvider it is deployed through. Without either, nothing is handed over:
    on a cluster where the karpenter chart installed the CRDs, Helm then refuses the CRD chart
    ("invalid ownership metadata")."""


def karpenter_crds_problems(args: KarpenterCrdsArgs) -> list[Problem]:
    if args.version in catalog.karpenter_charts():
        return []
    supported = ", ".join(catalog.karpenter_charts())
    return [Problem.at("version", f"Karpenter {args.version} is not supported; use {supported}", "version")]


def crd_release(version: str) -> ChartRelease:
    """The karpenter-crd chart's release: in Karpenter's namespace, no values (its templates read
    none at 1.12.0)."""
    source, karpenter = catalog.karpenter_chart_source(), catalog.karpenter_source()
    return ChartRelease(
        source.repository, karpenter.crd_chart, version, karpenter.crd_release_name, source.namespace, {}
    )


class KarpenterCrds(pulumi.ComponentResource):
    """The karpenter-crd chart's release (kept on destroy: the CRDs stay, as Helm's crds/ folder
    leaves them), after the step that hands over CRDs the karpenter chart installed. Install the
    karpenter chart after it, with skip_crds (the `Karpenter` component does)."""

    chart_version: pulumi.Output[str]
    """The installed chart version."""
    crds: pulumi.Output[list[str]]
    """The CRDs it holds."""
    adopted: pulumi.Output[list[str]]
    """The CRDs that existed and were handed to the chart ([] on a cluster that had none, or
    when no credentials were given)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KarpenterCrdsArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "KarpenterCrds", name, KarpenterCrdsArgs, args, karpenter_crds_problems, also=provider_problems(opts)
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        chart = crd_release(checked.version)
        names = catalog.karpenter_charts()[checked.version].crds
        access = access_for(checked.kubeconfig, None, opts)
        before: list[pulumi.Resource] = []
        adopted: pulumi.Output[list[str]] = pulumi.Output.from_input([])
        if access is not None:
            step = CrdsAdopted(
                f"{name}/adopted",
                access,
                names,
                chart.release_name,
                chart.namespace,
                opts=child_options(self, opts),
            )
            before.append(step)
            adopted = step.adopted.apply(lambda a: list(a or []))
        self.release = pinned_release(
            name,
            chart,
            INSTALL_TIMEOUT_SECONDS,
            pulumi.ResourceOptions.merge(
                child_options(self, opts, depends_on=before), pulumi.ResourceOptions(retain_on_delete=True)
            ),
        )
        self.chart_version = self.release.status.version
        self.crds = pulumi.Output.from_input(list(names))
        self.adopted = adopted
        outputs: dict[str, Any] = {"chartVersion": self.chart_version, "crds": self.crds, "adopted": self.adopted}
        self.register_outputs(outputs)
