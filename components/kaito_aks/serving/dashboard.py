"""A Grafana dashboard, as code, of what a platform team watches of its models: requests waiting and
running, time to first token, tokens per second, KV cache use, replicas serving and what the
autoscaler decides. vLLM's metric names as KAITO's images serve them (catalog/vllm_metrics.yaml;
the `or` keeps older names that KAITO 0.6's vLLM serves); vLLM labels each series with the served
model id (`model_name`). Delivered as a ConfigMap a Grafana sidecar loads (kube-prometheus-stack
watches every namespace for the label grafana_dashboard: "1"), or as JSON to import into Azure
Managed Grafana (`python -m stacks dashboard`)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.cluster.access import provider_problems
from kaito_aks.nodes import Labels
from kaito_aks.options import child_options, component_type
from kaito_aks.schema import DNS_LABEL, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:VllmDashboard"
FORMER_TYPES: tuple[str, ...] = ()  # (new in 0.4.0: no former type to alias)
UID = "kaito-aks-vllm"
FILE = "kaito-vllm.json"
SIDECAR_LABEL = {"grafana_dashboard": "1"}  # kube-prometheus-stack-88.5.3 values.yaml:1537-1542
MODEL = 'model_name=~"$model"'
# (title, unit, [(legend, PromQL)])
PANELS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("Requests running", "short", [("{{model_name}}", f"sum by (model_name) (vllm:num_requests_running{{{MODEL}}})")]),
    ("Requests waiting", "short", [("{{model_name}}", f"sum by (model_name) (vllm:num_requests_waiting{{{MODEL}}})")]),
    (
        "Time to first token",
        "s",
        [
            (
                f"p{q} {{{{model_name}}}}",
                f"histogram_quantile(0.{q}, sum by (le, model_name) "
                f"(rate(vllm:time_to_first_token_seconds_bucket{{{MODEL}}}[5m])))",
            )
            for q in (50, 95)
        ],
    ),
    (
        "Tokens per second",
        "short",
        [
            (
                "generated {{model_name}}",
                f"sum by (model_name) (rate(vllm:generation_tokens_total{{{MODEL}}}[1m]))",
            ),
            ("prompt {{model_name}}", f"sum by (model_name) (rate(vllm:prompt_tokens_total{{{MODEL}}}[1m]))"),
        ],
    ),
    (
        "KV cache use",
        "percentunit",
        [
            (
                "{{model_name}}",
                f"avg by (model_name) (vllm:kv_cache_usage_perc{{{MODEL}}} or vllm:gpu_cache_usage_perc{{{MODEL}}})",
            )
        ],
    ),
    (
        "Inter-token latency p95",
        "s",
        [
            (
                "{{model_name}}",
                "histogram_quantile(0.95, sum by (le, model_name) "
                f"(rate(vllm:inter_token_latency_seconds_bucket{{{MODEL}}}[5m])))",
            )
        ],
    ),
    (
        "End-to-end latency p95",
        "s",
        [
            (
                "{{model_name}}",
                "histogram_quantile(0.95, sum by (le, model_name) "
                f"(rate(vllm:e2e_request_latency_seconds_bucket{{{MODEL}}}[5m])))",
            )
        ],
    ),
    (
        "Replicas serving",
        "short",
        [("{{model_name}}", f"count by (model_name) (vllm:num_requests_running{{{MODEL}}})")],
    ),
    (
        "Autoscaler: current, min, max replicas",
        "short",
        [
            (
                f"{what} {{{{horizontalpodautoscaler}}}}",
                f'kube_horizontalpodautoscaler_{metric}{{horizontalpodautoscaler=~"keda-hpa-.*"}}',
            )
            for what, metric in (
                ("current", "status_current_replicas"),
                ("min", "spec_min_replicas"),
                ("max", "spec_max_replicas"),
            )
        ],
    ),
    (
        "Finished requests per second",
        "reqps",
        [
            (
                "{{model_name}} {{finished_reason}}",
                f"sum by (model_name, finished_reason) (rate(vllm:request_success_total{{{MODEL}}}[5m]))",
            )
        ],
    ),
]


def vllm_dashboard() -> dict[str, Any]:
    """The dashboard's JSON model (Grafana schema 39): a Prometheus data source and model variable,
    then the panels two to a row."""
    datasource = {"type": "prometheus", "uid": "${datasource}"}
    panels: list[dict[str, Any]] = [
        {
            "id": i + 1,
            "type": "timeseries",
            "title": title,
            "datasource": datasource,
            "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
            "targets": [
                {"refId": chr(ord("A") + j), "datasource": datasource, "expr": expr, "legendFormat": legend}
                for j, (legend, expr) in enumerate(queries)
            ],
        }
        for i, (title, unit, queries) in enumerate(PANELS)
    ]
    return {
        "uid": UID,
        "title": "KAITO models (vLLM)",
        "tags": ["kaito", "vllm", "kaito-aks"],
        "schemaVersion": 39,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
                {
                    "name": "model",
                    "type": "query",
                    "label": "Model",
                    "datasource": datasource,
                    "query": {"query": "label_values(vllm:num_requests_running, model_name)", "refId": "models"},
                    "definition": "label_values(vllm:num_requests_running, model_name)",
                    "includeAll": True,
                    "multi": True,
                    "allValue": ".*",
                    "current": {"text": "All", "value": "$__all"},
                    "refresh": 2,
                },
            ]
        },
        "panels": panels,
    }


def dashboard_json() -> str:
    return json.dumps(vllm_dashboard(), indent=2, sort_keys=True) + "\n"


@args_class
class VllmDashboardArgs:
    """The dashboard as a ConfigMap a Grafana sidecar loads (kube-prometheus-stack's)."""

    namespace: Annotated[str, DNS_LABEL] = "monitoring"
    """The ConfigMap's namespace (it must exist; kube-prometheus-stack's sidecar looks in every one)."""
    labels: Labels | None = None
    """Labels besides grafana_dashboard: "1" (the sidecar's default label)."""


class VllmDashboard(pulumi.ComponentResource):
    """The vLLM dashboard in a ConfigMap labelled for Grafana's dashboard sidecar."""

    config_map: pulumi.Output[str]
    """The ConfigMap's namespace/name."""

    def __init__(self, name: str, args: VllmDashboardArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "VllmDashboard", name, VllmDashboardArgs, args, lambda _: [], also=provider_problems(opts)
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        config_map = k8s.core.v1.ConfigMap(
            f"{name}/dashboard",
            metadata={
                "name": "kaito-aks-vllm-dashboard",
                "namespace": checked.namespace,
                "labels": {**(checked.labels or {}), **SIDECAR_LABEL},
            },
            data={FILE: dashboard_json()},
            opts=child_options(self, opts),
        )
        self.config_map = config_map.metadata.apply(lambda m: f"{m.namespace}/{m.name}")
        self.register_outputs({"configMap": self.config_map})
