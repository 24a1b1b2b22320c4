"""The KAITO workspace operator, installed from its official Helm chart, with the values a
KAITO release needs for the chosen node provisioning and GPU discovery."""

from typing import Any, Required, TypedDict

import pulumi

from kaito_aks import catalog
from kaito_aks.operators.helm import ChartRelease, deep_merge, pinned_release, set_path
from kaito_aks.options import child_options
from kaito_aks.scheduling import DEFAULT_GPU_TAINTS, merge_tolerations

# Helm waits for the controller and its admission webhook to be ready; pulling the image on a
# fresh node takes a while.
INSTALL_TIMEOUT_SECONDS = 900


class KaitoOperatorArgs(TypedDict, total=False):
    """Arguments of `KaitoOperator`; only `version` is required."""

    version: Required[str]
    """KAITO chart and app version: one of catalog.kaito_charts() (0.8.0, 0.8.1, 0.12.0)."""
    node_provisioning: str
    """byo (default): your GPU nodes, node auto-provisioning off; auto: KAITO creates nodes
    (needs gpu-provisioner or Karpenter, which this component does not install)."""
    feature_gates: dict[str, bool]
    """Merged over the version's defaults; an unknown gate is refused (it would crash the controller)."""
    gpu_discovery: str
    """kaito (default): KAITO's bundled device plugin, NFD and GFD label the GPU nodes; external:
    another stack (the GPU Operator) runs them, KAITO's copies are switched off."""
    gpu_node_taints: list[str]
    """Taints of the GPU nodes, tolerated by KAITO's bundled GFD and NFD worker; default sku=gpu:NoSchedule."""
    spot_nodes: bool
    """GPU nodes are Azure Spot VMs: KAITO's pods tolerate AKS's spot taint (0.12+)."""
    cluster_name: pulumi.Input[str]
    """The cluster's name, for KAITO's chart (clusterName); may be another resource's output."""
    values: dict[str, Any]
    """Extra chart values, deep-merged last."""


def kaito_operator_problems(args: KaitoOperatorArgs) -> list[tuple[str, str]]:
    """(path, message) for each problem; paths in the args' camelCase (featureGates.x, values.y)."""
    chart = catalog.kaito_charts().get(args.get("version", ""))
    if chart is None:
        supported = ", ".join(catalog.kaito_charts())
        return [("version", f"KAITO {args.get('version')} is not supported; use one of: {supported}")]
    problems: list[tuple[str, str]] = []
    if args.get("node_provisioning", "byo") not in ("byo", "auto"):
        problems.append(("nodeProvisioning", "must be byo or auto"))
    if args.get("gpu_discovery", "kaito") not in ("kaito", "external"):
        problems.append(("gpuDiscovery", "must be kaito or external"))
    values = args.get("values") or {}
    problems += _gate_problems("featureGates", args.get("feature_gates") or {}, chart)
    for key in values:
        if key not in chart.value_keys:
            problems.append((f"values.{key}", f"not a value of the KAITO {chart.version} workspace chart"))
    if "featureGates" in values:
        gates = values["featureGates"]
        if not isinstance(gates, dict):
            problems.append(("values.featureGates", "must be a map of gate: true|false (better: featureGates)"))
        else:
            problems += _gate_problems("values.featureGates", gates, chart)
    if args.get("spot_nodes") and chart.spot_toleration is None:
        problems.append(
            (
                "spotNodes",
                f"KAITO {chart.version}'s pods do not tolerate the AKS spot taint; use KAITO 0.12.0 (spotInstance) "
                "or a regular pool",
            )
        )
    if "nodeProvisioner" in values and chart.node_provisioner is not None:
        problems.append(("values.nodeProvisioner", "set by nodeProvisioning (byo | auto); remove it"))
    return problems


def _gate_problems(path: str, gates: dict[str, Any], chart: catalog.KaitoChart) -> list[tuple[str, str]]:
    problems = []
    for gate, value in gates.items():
        if gate not in chart.known_gates:
            known = ", ".join(chart.known_gates)
            problems.append(
                (
                    f"{path}.{gate}",
                    f"unknown feature gate for KAITO {chart.version} (the controller would crash); known: {known}",
                )
            )
        elif not isinstance(value, bool):
            problems.append(
                (f"{path}.{gate}", f"must be true or false, not {value!r} (the chart formats gates with %t)")
            )
        elif gate == "disableNodeAutoProvisioning":
            problems.append((f"{path}.{gate}", "set by nodeProvisioning (byo | auto); remove it"))
    if chart.replicas == "inferenceSet" and gates.get("enableInferenceSetController") is False:
        problems.append(
            (
                f"{path}.enableInferenceSetController",
                f"KAITO {chart.version} serves replicas through InferenceSets; keep this gate on",
            )
        )
    return problems


def kaito_chart_values(args: KaitoOperatorArgs) -> dict[str, Any]:
    """The workspace chart's values: the version's gates with the caller's over them, the
    node-provisioning switches, coexistence with an external GPU stack, then extra values."""
    chart = catalog.kaito_charts()[args["version"]]
    byo = args.get("node_provisioning", "byo") == "byo"
    values: dict[str, Any] = {
        "featureGates": {
            **chart.feature_gates,
            **(args.get("feature_gates") or {}),
            "disableNodeAutoProvisioning": byo,
        },
    }
    if chart.node_provisioner is not None:
        values["nodeProvisioner"] = chart.node_provisioner.byo if byo else chart.node_provisioner.auto
    if args.get("cluster_name"):
        values["clusterName"] = args["cluster_name"]
    if args.get("gpu_discovery", "kaito") == "external":
        # Another stack (the GPU Operator) runs the device plugin, NFD and GFD; a second copy
        # fights it over node labels and GPU advertisement.
        values["nvidiaDevicePlugin"] = {"enabled": False}
        if byo:  # KAITO bundles GFD (with NFD) only in BYO mode
            values["gpu-feature-discovery"] = {"nfd": {"enabled": False}, "gfd": {"enabled": False}}
    elif byo:
        # KAITO's GFD and NFD worker must run on the GPU nodes to label them, or its webhook
        # denies every preset; their defaults do not tolerate the GPU nodes' taint.
        taints = args.get("gpu_node_taints") or list(DEFAULT_GPU_TAINTS)
        values["gpu-feature-discovery"] = {
            "tolerations": merge_tolerations(chart.bundled_gfd_tolerations, taints),
            "nfd": {"worker": {"tolerations": merge_tolerations(chart.bundled_nfd_worker_tolerations, taints)}},
        }
    if chart.spot_toleration and args.get("spot_nodes"):
        # KAITO's preset pods get the AKS spot toleration only when asked.
        set_path(values, chart.spot_toleration, True)
    return deep_merge(values, args.get("values") or {})


def kaito_release(args: KaitoOperatorArgs) -> ChartRelease:
    return ChartRelease.of(catalog.kaito_chart_source(), args["version"], kaito_chart_values(args))


class KaitoOperator(pulumi.ComponentResource):
    """A pinned `kaito/workspace` Helm release. Helm's wait makes the release ready only once
    the controller and its fail-closed admission webhook serve, so anything that depends on
    this component may create Workspaces."""

    namespace: pulumi.Output[str]
    """The operator's namespace."""
    chart_version: pulumi.Output[str]
    """The installed chart version."""

    def __init__(self, name: str, args: KaitoOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        problems = kaito_operator_problems(args)
        if problems:
            raise ValueError(f"KaitoOperator {name}: " + "; ".join(f"args.{p}: {m}" for p, m in problems))
        super().__init__("kaito-aks:kubernetes:KaitoOperator", name, None, opts)
        self.release = pinned_release(name, kaito_release(args), INSTALL_TIMEOUT_SECONDS, child_options(self, opts))
        self.namespace = self.release.status.namespace
        self.chart_version = self.release.status.version
        self.register_outputs({"namespace": self.namespace, "chartVersion": self.chart_version})
