"""The stack's models served as one service: its `gateway`, `autoscaling` and `metrics` sections as
the components' args (InferenceGatewayArgs, KedaAutoscalingArgs, ModelMetricsArgs,
VllmDashboardArgs), each workspace's part in them, and what only the whole stack can get wrong
about them. The components' own rules (kaito_aks/serving, kaito_aks/model/serving.py) judge the
rest where the args were written."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksClusterArgs
from kaito_aks.model.serving import auto_provisioned_budget, model_ids, route_collisions
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs, effective_gates, kaito_operator_warnings
from kaito_aks.problems import Key, Problem, format_path
from kaito_aks.serving.dashboard import VllmDashboardArgs
from kaito_aks.serving.gateway import InferenceGatewayArgs, inference_gateway_warnings
from kaito_aks.serving.keda import KedaAutoscalingArgs, keda_namespace
from kaito_aks.serving.spec import DEFAULT_SCALER_NAMESPACE, GatewayRefArgs, ModelMetricsArgs
from stacks import defaults
from stacks.config import ModelConfig, StackConfig
from stacks.defaults import Written

# A model's own serving keys in the stack file (not KaitoModelArgs fields: the stack fills those).
OWN_KEYS = ("gateway", "metrics")
# The codes of the stack's serving warnings (`warnings`), which the program says at `pulumi up`.
WARNINGS = frozenset(
    {
        "keda-addon-version",
        "gateway-unauthenticated",
        "gateway-public",
        "gateway-existing-istio",
        "gateway-existing-router",
        "gateway-internal",
        "gateway-gate-elsewhere",
        "not-routed",
        "load-balancer-bypass",
    }
)


@dataclasses.dataclass(frozen=True)
class Serving:
    gateway: InferenceGatewayArgs | None = None
    autoscaling: KedaAutoscalingArgs | None = None
    metrics: ModelMetricsArgs | None = None
    dashboard: VllmDashboardArgs | None = None


def gateway_ref(gateway: Mapping[str, Any]) -> GatewayRefArgs:
    """The Gateway a routed model names (the program puts the InferenceGateway's outputs there)."""
    fields = dataclasses.fields(InferenceGatewayArgs)
    default = {f.name: f.default for f in fields}
    return GatewayRefArgs(
        name=gateway.get("name", default["name"]), namespace=gateway.get("namespace", default["namespace"])
    )


def model_serving(
    own: Mapping[str, Any], args: KaitoModelArgs, written: Written, metrics: ModelMetricsArgs | None
) -> KaitoModelArgs:
    """A workspace's args with its route and its ServiceMonitor, as the stack decides them."""
    chart = catalog.kaito_charts().get(args.kaito_version)
    serves = chart is not None and chart.serving is not None  # (else the gateway's refusal says why)
    gateway = serves and defaults.routed(own.get("gateway"), args, written.gateway is not None)
    scraped = defaults.scraped(own.get("metrics"), args, metrics is not None)
    return dataclasses.replace(
        args,
        gateway=gateway_ref(written.gateway or {}) if gateway and written.gateway is not None else None,
        metrics=metrics if scraped else None,
    )


def with_scaler(args: KaitoModelArgs, keda: KedaAutoscalingArgs | None) -> KaitoModelArgs:
    """An autoscaled model's args naming where the stack's keda-kaito-scaler runs (its
    NetworkPolicy lets it in), unless the entry names another namespace itself."""
    if args.autoscale is None or keda is None or args.autoscale.scaler_namespace != DEFAULT_SCALER_NAMESPACE:
        return args
    autoscale = dataclasses.replace(args.autoscale, scaler_namespace=keda_namespace(keda))
    return dataclasses.replace(args, autoscale=autoscale)


def metrics_args(written: Written, cluster: AksClusterArgs | None) -> ModelMetricsArgs | None:
    if written.metrics is None:
        return None
    section = written.metrics
    flavour = defaults.metrics_flavour(section, cluster)
    given = {k: v for k, v in section.items() if k in ("interval_seconds", "prometheus_namespace")}
    return ModelMetricsArgs(flavour=flavour, labels=defaults.metrics_labels(section, flavour), **given)


def serving_args(written: Written, kaito: KaitoOperatorArgs, models: list[KaitoModelArgs]) -> Serving:
    """The gateway (routing every routed model's namespace), KEDA (when a model autoscales or the
    file configures it), the metrics and the dashboard."""
    gateway = None
    if written.gateway is not None:
        section = dict(written.gateway)
        namespaces = sorted({m.namespace for m in models if m.gateway is not None})
        section["exposure"] = defaults.gateway_exposure(section, written.cluster_kind)
        gateway = InferenceGatewayArgs(**section, model_namespaces=namespaces or ["default"], models=routed_ids(models))
    autoscaling = None
    if written.autoscaling is not None or any(m.autoscale is not None for m in models):
        autoscaling = KedaAutoscalingArgs(kaito_version=kaito.version, **(written.autoscaling or {}))
    metrics = next((m.metrics for m in models if m.metrics is not None), None)
    dashboard = None
    section = written.metrics or {}
    if written.metrics is not None and section.get("dashboard", True):
        flavour = metrics.flavour if metrics is not None else defaults.metrics_flavour(section, None)
        if flavour == "prometheusOperator":
            dashboard = VllmDashboardArgs(namespace=defaults.dashboard_namespace(section))
    return Serving(gateway, autoscaling, metrics, dashboard)


def routed_ids(models: list[KaitoModelArgs]) -> list[str]:
    """Every `model` value the gateway routes (what its `GET /v1/models` lists)."""
    ids: set[str] = set()
    for m in models:
        chart = catalog.kaito_charts().get(m.kaito_version)
        if m.gateway is not None and chart is not None and chart.serving is not None:
            ids.update(model_ids(m, chart))
    return sorted(ids)


# ---------------------------------------------------------------- what only the whole stack can get wrong


def check(cfg: StackConfig, written: Written) -> list[Problem]:
    """The stack-wide serving rules, at config paths; the gateway's and KEDA's own rules with them."""
    found = [*_gateway(cfg, written), *_autoscaling(cfg, written), *_metrics(cfg, written), *_workspaces(cfg)]
    if cfg.gateway is not None:
        from kaito_aks.serving.gateway import inference_gateway_problems

        found += [
            p.under("gateway") for p in inference_gateway_problems(cfg.gateway) if p.path != ("model_namespaces",)
        ]
    if cfg.autoscaling is not None:
        from kaito_aks.serving.keda import keda_autoscaling_problems

        found += [
            p.under("autoscaling") for p in keda_autoscaling_problems(cfg.autoscaling) if p.code != "serving-release"
        ]
    return found


def _refusal(cfg: StackConfig) -> str | None:
    chart = catalog.kaito_charts().get(cfg.kaito.version)
    return catalog.serving_refusal(chart) if chart is not None else None


def _gateway(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    if written.gateway is None:
        return
    refusal = _refusal(cfg)
    if refusal is not None:
        yield Problem(("gateway",), refusal, "serving-release")
        return
    if not any(m.gateway is not None for m in cfg.models):
        yield Problem(
            ("gateway",),
            "routes no workspace (the gateway routes vLLM presets; each other workspace says gateway: false or is "
            "no vLLM preset): add one, or remove gateway",
            "gateway-routes",
        )
    chart = catalog.kaito_charts()[cfg.kaito.version]
    assert chart.serving is not None
    gate = chart.serving.gate
    if cfg.kaito_install and effective_gates(cfg.kaito, chart).get(gate) is not True:
        yield Problem(
            ("kaito", "feature_gates", Key(gate)),
            "KAITO makes the InferencePools the gateway routes to only with this gate on; remove it (the stack turns "
            "it on with a gateway)",
            "gateway-gate",
        )


def _autoscaling(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    if written.autoscaling is not None and not any(m.autoscale is not None for m in cfg.models):
        yield Problem(
            ("autoscaling",),
            "configures KEDA for autoscaled workspaces, and no workspace has autoscale: remove it, or give one autoscale",
            "autoscaling-unused",
        )
    if cfg.autoscaling is None:
        return
    if _refusal(cfg) is not None and written.autoscaling is not None:
        yield Problem(("autoscaling",), _refusal(cfg) or "", "serving-release")
    if cfg.autoscaling.keda == "addon" and (cfg.aks_cluster is None or cfg.aks_cluster.existing):
        yield Problem(
            ("autoscaling", "keda"),
            "addon turns on the AKS KEDA add-on of a cluster this stack creates (cluster.aks); for a cluster that has "
            "it already, use existing (with namespace kube-system)",
            "keda-addon",
        )


def _metrics(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    if written.metrics is None:
        return
    if cfg.metrics is None:
        yield Problem(
            ("metrics",),
            "scrapes no workspace (vLLM presets are scraped; each other workspace says metrics: false or is no "
            "vLLM preset): add one, or remove metrics",
            "metrics-unused",
        )
        return
    created = cfg.aks_cluster is not None and not cfg.aks_cluster.existing
    if cfg.metrics.flavour == "azureManagedPrometheus" and created and not cfg.aks_cluster.managed_prometheus:  # type: ignore[union-attr]
        yield Problem(
            ("metrics", "flavour"),
            "AKS's managed Prometheus reads azmonitoring.coreos.com ServiceMonitors only where it runs: set "
            "cluster.aks.managedPrometheus: true, or use prometheusOperator",
            "metrics-flavour",
        )
    if cfg.metrics.flavour == "azureManagedPrometheus" and written.metrics.get("dashboard") is True:
        yield Problem(
            ("metrics", "dashboard"),
            "the dashboard ConfigMap is for a Grafana sidecar (kube-prometheus-stack); with Azure Managed Grafana "
            "import `python -m stacks dashboard` instead: remove it",
            "metrics-dashboard",
        )


def _workspaces(cfg: StackConfig) -> Iterator[Problem]:
    """Each workspace's serving keys against the stack's sections, and the models together."""
    labelled = [(format_path(w.placed.at, "schema"), w.args) for w in cfg.workspaces]
    for j, problem in route_collisions(labelled):
        yield problem.under(*cfg.workspaces[j].placed.at)
    if cfg.kaito.node_provisioning == "auto":
        for problem in auto_provisioned_budget(labelled):
            yield problem.under("workspaces")


def _entry(written: Written, w: ModelConfig) -> Mapping[str, Any]:
    """The workspaces[] entry a model was made from, as written."""
    at = w.placed.at[1] if len(w.placed.at) > 1 else None
    entry = written.workspaces[at] if isinstance(at, int) and at < len(written.workspaces) else None
    return entry or {}


def own_key_problems(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    """A workspace that asks for a gateway or metrics the stack does not have."""
    for w in cfg.workspaces:
        entry = _entry(written, w)
        if entry.get("gateway") is True and written.gateway is None:
            yield Problem((*w.placed.at, "gateway"), "the stack has no gateway: add one (kaito-aks:gateway)", "gateway")
        if entry.get("metrics") is True and written.metrics is None:
            yield Problem((*w.placed.at, "metrics"), "the stack has no metrics: add kaito-aks:metrics", "metrics")


def warnings(cfg: StackConfig, written: Written) -> list[Problem]:
    """What the stack allows about serving but says: the gateway's own, what is not routed, and
    a model's own public endpoint beside the gateway."""
    found: list[Problem] = []
    if cfg.autoscaling is not None and cfg.autoscaling.keda == "addon":
        found.append(
            Problem(
                ("autoscaling", "keda"),
                "the AKS KEDA add-on's version is AKS's choice for the cluster's Kubernetes minor, not pinned; "
                "keda-kaito-scaler 0.6.2 is built against KEDA 2.20",
                "keda-addon-version",
            )
        )
    if cfg.gateway is None:
        return found
    found += [p.under("gateway") for p in inference_gateway_warnings(cfg.gateway)]
    if cfg.kaito_install:  # the gate the stack turns on (the operator says it again at `up`)
        found += [dataclasses.replace(p, path=("gateway",)) for p in kaito_operator_warnings(cfg.kaito)]
    if cfg.gateway.exposure == "internal" and cfg.kubeconfig_cluster is not None:
        found.append(
            Problem(
                ("gateway", "exposure"),
                "internal asks Azure's cloud provider for an internal load balancer (an AKS annotation); another "
                "cluster gives a public one or none: use cluster on a cluster that is not AKS",
                "gateway-internal",
            )
        )
    if not cfg.kaito_install:
        chart = catalog.kaito_charts().get(cfg.kaito.version)
        gate = chart.serving.gate if chart is not None and chart.serving is not None else "gatewayAPIInferenceExtension"
        found.append(
            Problem(
                ("gateway",),
                f"KAITO is installed elsewhere (kaito.install: false): it must run with its {gate} feature gate on, or "
                "no InferencePool is made and no route resolves",
                "gateway-gate-elsewhere",
            )
        )
    for w in cfg.workspaces:
        entry = _entry(written, w)
        if w.args.gateway is None and w.args.tuning is None and entry.get("gateway") is None:
            found.append(
                Problem(
                    (*w.placed.at, "gateway"),
                    "not routed through the gateway (KAITO routes vLLM presets only): reach it through its Service, "
                    "e.g. `kubectl port-forward`",
                    "not-routed",
                )
            )
        elif w.args.gateway is not None and w.args.load_balancer:
            found.append(
                Problem(
                    (*w.placed.at, "load_balancer"),
                    "its own LoadBalancer Service serves it without the gateway's authentication",
                    "load-balancer-bypass",
                )
            )
    return found
