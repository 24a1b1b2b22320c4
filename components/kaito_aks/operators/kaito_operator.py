"""The KAITO workspace operator, installed from its official Helm chart, with the values a
KAITO release needs for the chosen node provisioning and GPU discovery."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import catalog
from kaito_aks.capacity import Capacity, pods_of, with_requests
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.cluster.access import provider_problems
from kaito_aks.nodes import (
    DEFAULT_GPU_TAINTS,
    NodeGroup,
    merge_tolerations,
    no_driver,
    node_groups_problems,
    node_taints,
    spot_problem,
)
from kaito_aks.operators.helm import ChartRelease, deep_merge, pinned_release, set_path, unread_values
from kaito_aks.options import child_options, component_type
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Key, PathPart, Problem, did_you_mean
from kaito_aks.schema import Input, args_class
from kaito_aks.validation import checked_args
from kaito_aks.vocabulary import GpuDiscovery, NodeProvisioner, NodeProvisioning

TYPE = "kaito-aks:index:KaitoOperator"
FORMER_TYPES = ("kaito-aks:kubernetes:KaitoOperator",)
# Helm waits for the controller and its admission webhook to be ready; pulling the image on a
# fresh node takes a while.
INSTALL_TIMEOUT_SECONDS = 900
GATEWAY_EXTENSION_GATE = "gatewayAPIInferenceExtension"


@args_class
class KaitoOperatorArgs:
    """The pinned KAITO workspace chart (`kaito/workspace`)."""

    version: str
    """KAITO chart and app version: 0.8.0, 0.8.1, 0.11.0 or 0.12.0 (0.6.0 is the AKS add-on's: not
    installed here)."""
    node_provisioning: NodeProvisioning = "byo"
    """byo: your GPU nodes, node auto-provisioning off; auto: KAITO creates the nodes."""
    node_provisioner: NodeProvisioner = "gpu-provisioner"
    """With auto: what makes KAITO's nodes; gpu-provisioner (install it with `GpuProvisioner`) or
    karpenter (0.11+, KAITO 0.12's recommendation: install it with `Karpenter` and deploy this
    component after it, as KAITO exits when Karpenter does not answer in 120 s). Either way,
    depend the models on the provisioner."""
    feature_gates: dict[str, bool] = field(default_factory=dict[str, bool])
    """Merged over the version's defaults; an unknown gate is refused (it would crash the controller)."""
    gpu_discovery: GpuDiscovery = "kaito"
    """kaito: KAITO's bundled device plugin, NFD and GFD label the GPU nodes; external: another
    install (the GPU Operator) runs them and KAITO's copies are switched off."""
    node_groups: list[NodeGroup] = field(default_factory=list[NodeGroup])
    """The GPU pools (e.g. `GpuNodePool.node_group`): KAITO's bundled GFD and NFD worker tolerate
    their taints, and on spot pools its pods tolerate AKS's spot taint (0.11+). Default: GPU nodes
    tainted sku=gpu:NoSchedule."""
    cluster_name: Input[str] | None = None
    """The cluster's name, for KAITO's chart (clusterName); may be another resource's output.
    Default: the chart's own."""
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra chart values, deep-merged last; default: none."""


def kaito_operator_problems(args: KaitoOperatorArgs) -> list[Problem]:
    unsupported = catalog.unsupported_kaito_version(args.version, install=True)
    if unsupported is not None:
        return [Problem.at("version", unsupported, "version")]
    chart = catalog.kaito_charts()[args.version]
    problems = gate_problems(("feature_gates",), args.feature_gates, chart)
    if args.node_provisioner == "karpenter" and chart.node_provisioner is None:
        why = f"KAITO {chart.version} has no Karpenter mode (it came in 0.11); use gpu-provisioner"
        problems.append(Problem.at("node_provisioner", why, "karpenter"))
    problems += unread_values(args.values, chart.value_keys, f"KAITO {chart.version} workspace")
    gates = args.values.get("featureGates")
    if gates is not None:
        if not is_dict(gates):
            problems.append(
                Problem(
                    ("values", Key("featureGates")),
                    "must be a map of gate: true|false (better: `feature_gates`)",
                    "gates",
                )
            )
        else:
            problems += gate_problems(("values", Key("featureGates")), gates, chart)
    problems += node_groups_problems(args.node_groups, chart)
    problems += _discovery_problems(args)
    spot = spot_problem(chart)
    problems += [
        Problem.at(("node_groups", i, "spot"), f"{spot}: no preset runs on this pool", "spot-pool")
        for i, group in enumerate(args.node_groups)
        if spot is not None and group.spot
    ]
    gates = effective_gates(args, chart)
    if gates.get("ModelStreaming") is True and gates.get("ModelMirror") is not True:
        problems.append(
            Problem(
                gate_at(args.values, "ModelStreaming"),
                "KAITO's controller exits at start-up (\"ModelStreaming feature gate requires ModelMirror to be "
                'enabled"); set ModelMirror true as well',
                "gate",
            )
        )
    if "nodeProvisioner" in args.values and chart.node_provisioner is not None:
        problems.append(
            Problem(
                ("values", Key("nodeProvisioner")),
                "set by `node_provisioning` (byo | auto) and `node_provisioner`; remove it",
                "managed-value",
            )
        )
    return problems


def _discovery_problems(args: KaitoOperatorArgs) -> list[Problem]:
    """Who installs the GPU driver on the pools, against who discovers their GPUs: a pool that
    leaves its driver to the GPU Operator where nothing says one installs it gets none, whoever
    discovers (`no_driver`, the problem its models say too); beside a GpuOperator (the pool marked)
    KAITO's own discovery (gpu_discovery kaito) runs a second device plugin and GFD."""
    problems: list[Problem] = []
    if args.node_provisioning != "byo":  # KAITO's own nodes get AKS's driver; it places no preset on these
        return problems
    for i, group in enumerate(args.node_groups):
        missing = no_driver(group, i)
        if missing is not None:
            problems.append(missing)
        elif group.gpu_driver == "operator" and args.gpu_discovery == "kaito":
            problems.append(
                Problem(
                    ("node_groups", i),
                    f"pool {group.name} gets its driver from the GPU Operator, which runs its own device plugin and GFD; "
                    "`gpu_discovery` kaito adds KAITO's as well, and the two may fight over GPUs and node labels: set "
                    "`gpu_discovery` external",
                    "discovery",
                )
            )
    return problems


def effective_gates(args: KaitoOperatorArgs, chart: catalog.KaitoChart) -> dict[str, Any]:
    """The gates KAITO's controller starts with: its defaults, then `feature_gates`, then
    `values.featureGates` (the order `kaito_chart_values` merges them in)."""
    return gates_of(chart, args.feature_gates, args.values)


def gate_at(values: Mapping[str, Any], gate: str) -> tuple[PathPart, ...]:
    """Where a gate KAITO starts with is written: in the chart values' featureGates (which win),
    else `feature_gates`."""
    written = values.get("featureGates")
    if is_dict(written) and gate in written:
        return ("values", Key("featureGates"), Key(gate))
    return ("feature_gates", Key(gate))


def gates_of(chart: catalog.KaitoChart, feature_gates: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """`effective_gates` of the gates and chart values given."""
    extra = values.get("featureGates")
    return {**chart.known_gates, **feature_gates, **(extra if is_dict(extra) else {})}


def forced_runtime(args: KaitoOperatorArgs) -> Literal["transformers"] | None:
    """The runtime KAITO uses for every model whatever it asks: with the vLLM gate off KAITO
    ignores kaito.sh/runtime and serves with transformers (api/v1beta1/labels.go
    GetWorkspaceRuntimeName, 0.8.1 to 0.12.0)."""
    return runtime_forced_by(args.version, args.feature_gates, args.values)


def runtime_forced_by(
    version: str, feature_gates: Mapping[str, Any], values: Mapping[str, Any]
) -> Literal["transformers"] | None:
    """`forced_runtime` of the release, gates and chart values a program gives KAITO (before it
    makes the operator's args)."""
    chart = catalog.kaito_charts().get(version)
    if chart is None:
        return None
    return "transformers" if gates_of(chart, feature_gates, values).get("vLLM") is False else None


def gate_problems(path: tuple[PathPart, ...], gates: dict[str, Any], chart: catalog.KaitoChart) -> list[Problem]:
    problems: list[Problem] = []
    for gate, value in gates.items():
        where = (*path, Key(gate))
        if gate not in chart.known_gates:
            close = did_you_mean(gate, chart.known_gates)
            known = f"did you mean {close[0]}?" if close else "known: " + ", ".join(chart.known_gates)
            problems.append(
                Problem(
                    where,
                    f"unknown feature gate for KAITO {chart.version} (the controller would crash); {known}",
                    "gate",
                )
            )
        elif not isinstance(value, bool):
            problems.append(
                Problem(where, f"must be true or false, not {value!r} (the chart formats gates with %t)", "gate")
            )
        elif gate == "disableNodeAutoProvisioning":
            problems.append(Problem(where, "set by `node_provisioning` (byo | auto); remove it", "managed-value"))
    if chart.replicas == "inferenceSet" and gates.get("enableInferenceSetController") is False:
        problems.append(
            Problem(
                (*path, Key("enableInferenceSetController")),
                f"KAITO {chart.version} serves replicas through InferenceSets; keep this gate on",
                "gate",
            )
        )
    return problems


def kaito_chart_values(args: KaitoOperatorArgs) -> dict[str, Any]:
    """The workspace chart's values: the version's gates with the caller's over them, the
    node-provisioning switches, coexistence with an external GPU stack, then extra values."""
    chart = catalog.kaito_charts()[args.version]
    byo = args.node_provisioning == "byo"
    values: dict[str, Any] = {
        "featureGates": {**chart.feature_gates, **args.feature_gates, "disableNodeAutoProvisioning": byo},
    }
    if chart.node_provisioner is not None:
        modes = chart.node_provisioner
        values["nodeProvisioner"] = (
            modes.byo if byo else modes.karpenter if args.node_provisioner == "karpenter" else modes.auto
        )
    if args.cluster_name is not None:
        values["clusterName"] = args.cluster_name
    if args.gpu_discovery == "external":
        # Another stack (the GPU Operator) runs the device plugin, NFD and GFD; a second copy
        # fights it over node labels and GPU advertisement.
        values["nvidiaDevicePlugin"] = {"enabled": False}
        if byo:  # KAITO bundles GFD (with NFD) only in BYO mode
            values["gpu-feature-discovery"] = {"nfd": {"enabled": False}, "gfd": {"enabled": False}}
    elif byo:
        # KAITO's GFD and NFD worker must run on the GPU nodes to label them, or its webhook
        # denies every preset; their defaults do not tolerate the GPU nodes' taints.
        taints = node_taints(args.node_groups) if args.node_groups else list(DEFAULT_GPU_TAINTS)
        values["gpu-feature-discovery"] = {
            "tolerations": merge_tolerations(chart.bundled_gfd_tolerations, taints),
            "nfd": {"worker": {"tolerations": merge_tolerations(chart.bundled_nfd_worker_tolerations, taints)}},
        }
    if chart.spot_toleration and any(g.spot for g in args.node_groups):
        # KAITO's preset pods get the AKS spot toleration only when asked.
        set_path(values, chart.spot_toleration, True)
    if gateway_extension_on(args, chart):
        # The gate installs flux2, whose NetworkPolicies would block KAITO's webhook (kaito#1731).
        for path, value in chart.gaie_gate_values.items():
            set_path(values, path, value)
    return deep_merge(values, args.values)


def gateway_extension_on(args: KaitoOperatorArgs, chart: catalog.KaitoChart) -> bool:
    """Whether KAITO starts with its Gateway API Inference Extension gate on (it then installs
    Flux and renders an InferencePool per InferenceSet)."""
    return effective_gates(args, chart).get(GATEWAY_EXTENSION_GATE) is True


def kaito_operator_warnings(args: KaitoOperatorArgs) -> list[Problem]:
    """What the release's args allow but ask to be said: the gateway extension's Flux."""
    chart = catalog.kaito_charts().get(args.version)
    if chart is None or not gateway_extension_on(args, chart):
        return []
    return [
        Problem.at(
            ("feature_gates", Key(GATEWAY_EXTENSION_GATE)),
            "KAITO's gateway extension installs Flux's helm-controller and source-controller in KAITO's namespace, bound "
            "to cluster-admin (flux2 2.16.3's cluster-reconciler; Flux cannot be left out, kaito#2252), and they pull "
            "the InferencePool chart from ghcr.io and the endpoint picker from mcr.microsoft.com at run time (no "
            "registry override: kaito#2218, so air-gapped clusters cannot use it)",
            "gateway-extension-flux",
        )
    ]


def kaito_operator_capacity(args: KaitoOperatorArgs) -> Capacity:
    """What the release runs on the non-GPU nodes, for the capacity budget: the controller (at the
    values' requests), Flux's two controllers with the gateway extension's gate, the local CSI
    driver (on unless the values turn it off) and, in BYO with KAITO's own GPU discovery, its
    bundled NFD (no requests at that chart)."""
    data = pod_requests().pods.kaito.get(args.version)
    chart = catalog.kaito_charts().get(args.version)
    if data is None or chart is None:
        return Capacity()
    values = kaito_chart_values(args)
    note = f"KAITO {args.version}"
    pods = with_requests(pods_of(data.controller, note=note), values, "resources")
    if gateway_extension_on(args, chart):
        pods += pods_of(data.flux, note=f"{note}'s gateway extension")
    local_csi = values.get("localCSIDriver")
    if not (is_dict(local_csi) and local_csi.get("useLocalCSIDriver") is False):
        pods += pods_of(data.local_csi_driver, note=f"{note}'s local CSI driver")
    if args.node_provisioning == "byo" and args.gpu_discovery != "external":
        pods += pods_of(data.gpu_feature_discovery, note=note)
    return Capacity(pods=pods)


def kaito_release(args: KaitoOperatorArgs) -> ChartRelease:
    return ChartRelease.of(catalog.kaito_chart_source(), args.version, kaito_chart_values(args))


class KaitoOperator(pulumi.ComponentResource):
    """A pinned `kaito/workspace` Helm release. Helm's wait makes the release ready only once
    the controller and its fail-closed admission webhook serve, so anything that depends on
    this component may create Workspaces."""

    namespace: pulumi.Output[str]
    """The operator's namespace."""
    chart_version: pulumi.Output[str]
    """The installed chart version."""

    release: k8s.helm.v3.Release
    installs_kaito: tuple[str, str]
    """(its name, the KAITO release it installs): a model or RAG engine depending on it must be
    checked by the same release's rules (`kaito_version`)."""
    capacity: Capacity
    """What it runs on the non-GPU nodes, for the capacity budget (`deploy_models`' `capacity`)."""

    def __init__(self, name: str, args: KaitoOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "KaitoOperator", name, KaitoOperatorArgs, args, kaito_operator_problems, also=provider_problems(opts)
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        self.installs_kaito = (name, checked.version)  # what the models that depend on it are checked by
        self.capacity = kaito_operator_capacity(checked)
        for warning in kaito_operator_warnings(checked):
            pulumi.log.warn(warning.under("args").text(), resource=self)
        self.release = pinned_release(name, kaito_release(checked), INSTALL_TIMEOUT_SECONDS, child_options(self, opts))
        self.namespace = self.release.status.namespace
        self.chart_version = self.release.status.version
        self.register_outputs({"namespace": self.namespace, "chartVersion": self.chart_version})
