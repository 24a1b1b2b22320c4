"""KAITO's second operator, the RAGEngine controller, installed from its official Helm chart
(`kaito/ragengine`, published beside the workspace chart and versioned with KAITO)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import catalog
from kaito_aks.capacity import Capacity, pods_of, with_requests
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.cluster.access import provider_problems
from kaito_aks.operators.helm import ChartRelease, pinned_release, unread_values
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Key, Problem
from kaito_aks.schema import args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:RagEngineOperator"
FORMER_TYPES: tuple[str, ...] = ()
# Helm waits for the controller and its fail-closed admission webhook to be ready.
INSTALL_TIMEOUT_SECONDS = 900


@args_class
class RagEngineOperatorArgs:
    """The pinned KAITO ragengine chart (`kaito/ragengine`), release and namespace
    kaito-ragengine (never the workspace chart's namespace: both charts create a ConfigMap
    kaito-logging-config)."""

    version: str
    """KAITO chart and app version: 0.8.0, 0.8.1, 0.11.0 or 0.12.0 (the same as the KaitoOperator's)."""
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra chart values (the chart's own keys: image, resources, nodeSelector, tolerations,
    logging, ...); default: none."""


def ragengine_operator_problems(args: RagEngineOperatorArgs) -> list[Problem]:
    chart = catalog.ragengine_charts().get(args.version)
    if chart is None:
        supported = ", ".join(catalog.ragengine_charts())
        # a release no component knows: the one message every component says (once where a program judges them all)
        unknown = (
            catalog.unsupported_kaito_version(args.version) if args.version not in catalog.kaito_charts() else None
        )
        why = unknown or f"KAITO {args.version} is not supported; use one of: {supported}"
        return [Problem.at("version", why, "version")]
    problems = unread_values(args.values, chart.value_keys, f"KAITO {chart.version} ragengine")
    replicas = args.values.get("replicaCount", 1)
    if replicas != 1:
        problems.append(
            Problem(
                ("values", Key("replicaCount")),
                f"must be 1, not {replicas!r}: the chart starts the RAGEngine controller without leader election, so "
                "two would reconcile every RAGEngine at once",
                "replicas",
            )
        )
    provider = args.values.get("cloudProviderName", "azure")
    if provider != "azure":
        problems.append(
            Problem(
                ("values", Key("cloudProviderName")),
                f"must be azure, not {provider!r}: kaito-aks checks a RagEngine's instance type against KAITO's Azure "
                "GPU sizes, as the controller does with azure",
                "cloud",
            )
        )
    return problems


def ragengine_operator_capacity(args: RagEngineOperatorArgs) -> Capacity:
    """The controller, at the values' requests, for the capacity budget."""
    kinds = pod_requests().pods.ragengine_operator.get(args.version)
    if kinds is None:
        return Capacity()
    return Capacity(pods=with_requests(pods_of(kinds, note=f"KAITO {args.version}"), args.values, "resources"))


def ragengine_release(args: RagEngineOperatorArgs) -> ChartRelease:
    return ChartRelease.of(catalog.ragengine_chart_source(), args.version, dict(args.values))


class RagEngineOperator(pulumi.ComponentResource):
    """A pinned `kaito/ragengine` Helm release: KAITO's RAGEngine controller and its admission
    webhook. Helm's wait makes the release ready only once they serve (the webhook fails
    closed), so a RagEngine that depends on this component may be created. It does not need
    the workspace operator, except on 0.8, whose controller watches karpenter NodeClaims (a
    CRD the KaitoOperator's chart installs): install that one first there.

    The RAGEngine CRD: on 0.8 it sits in the chart's crds/ (Helm installs it once and never
    upgrades or deletes it); from 0.9.1 it is a chart template, upgraded and deleted with the
    release. So delete the RagEngines before this release (depend them on it: Pulumi then
    does), and moving a release from 0.8 to 0.11 or 0.12 needs the 0.8 CRD adopted by Helm
    first (KAITO's docs install 0.11 and 0.12 with `helm --take-ownership`, which Pulumi's Helm
    release lacks: label the CRD app.kubernetes.io/managed-by=Helm and annotate it
    meta.helm.sh/release-name and meta.helm.sh/release-namespace with kaito-ragengine)."""

    namespace: pulumi.Output[str]
    """The operator's namespace (where the default guardrails policy ConfigMap lives, 0.11+)."""
    chart_version: pulumi.Output[str]
    """The installed chart version."""

    release: k8s.helm.v3.Release
    installs_kaito: tuple[str, str]
    """(its name, the KAITO release it installs): a model or RAG engine depending on it must be
    checked by the same release's rules (`kaito_version`)."""
    capacity: Capacity
    """What it runs on the non-GPU nodes, for the capacity budget (`deploy_models`' `capacity`)."""

    def __init__(self, name: str, args: RagEngineOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "RagEngineOperator",
            name,
            RagEngineOperatorArgs,
            args,
            ragengine_operator_problems,
            also=provider_problems(opts),
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        self.installs_kaito = (name, checked.version)  # what the models that depend on it are checked by
        self.capacity = ragengine_operator_capacity(checked)
        self.release = pinned_release(
            name, ragengine_release(checked), INSTALL_TIMEOUT_SECONDS, child_options(self, opts)
        )
        self.namespace = self.release.status.namespace
        self.chart_version = self.release.status.version
        self.register_outputs({"namespace": self.namespace, "chartVersion": self.chart_version})
