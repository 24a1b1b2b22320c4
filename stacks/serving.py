"""What only the whole stack can get wrong about serving its models as one service: its
`gateway`, `autoscaling` and `metrics` sections against its workspaces (stacks/build.py makes
their args). The components' own rules (kaito_aks/serving, kaito_aks/model/serving.py) judge the
rest where the args were written."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from kaito_aks import catalog
from kaito_aks.operators.kaito_operator import effective_gates, kaito_operator_warnings
from kaito_aks.problems import Key, Problem
from kaito_aks.serving.gateway import inference_gateway_warnings
from stacks.config import StackConfig
from stacks.decide import Written

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


# ---------------------------------------------------------------- what only the whole stack can get wrong


def problems(cfg: StackConfig, written: Written) -> tuple[list[Problem], list[Problem]]:
    """The stack's serving rules, at config paths (the gateway's and KEDA's own: stacks/judge.py),
    and what it allows about serving but says."""
    found = [*_gateway(cfg, written), *_autoscaling(cfg, written), *_metrics(cfg, written)]
    return [*found, *own_key_problems(cfg, written)], warnings(cfg, written)


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
    if written.autoscaling is not None and not any(w.args.autoscale is not None for w in cfg.workspaces):
        yield Problem(
            ("autoscaling",),
            "configures KEDA for autoscaled workspaces, and no workspace has autoscale: remove it, or give one autoscale",
            "autoscaling-unused",
        )
    if cfg.autoscaling is None:
        return
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


def own_key_problems(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    """A workspace that asks for a gateway or metrics the stack does not have."""
    for w in cfg.workspaces:
        entry = w.placed.written
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
        entry = w.placed.written
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
