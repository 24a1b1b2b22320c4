"""A model's vLLM metrics for Prometheus: a ServiceMonitor on the model's own Service, whose
endpoints are the serving (leader) pods of every replica, port `http` (KAITO's preset servers
serve /metrics on pod port 5000, consts.PortInferenceServer). KAITO's own per-Workspace Services
carry no labels to select them by (kaito@v0.12.0:pkg/workspace/manifests/manifests.go:66-130).
The same shape serves both Prometheus flavours: AKS's managed Prometheus reads the
azmonitoring.coreos.com group only, a prometheus-operator the monitoring.coreos.com group only."""

from __future__ import annotations

from typing import Any

from kaito_aks.serving.route import MODEL_LABEL
from kaito_aks.serving.spec import ModelMetricsArgs
from kaito_aks.vocabulary import MetricsFlavour

SERVICE_MONITOR_API: dict[MetricsFlavour, str] = {
    "azureManagedPrometheus": "azmonitoring.coreos.com/v1",
    "prometheusOperator": "monitoring.coreos.com/v1",
}
METRICS_PATH = "/metrics"


def service_labels(name: str) -> dict[str, str]:
    """The label the model's Service carries for its ServiceMonitor to select."""
    return {MODEL_LABEL: name}


def service_monitor(name: str, namespace: str, port: str, args: ModelMetricsArgs) -> dict[str, Any]:
    """The ServiceMonitor of a model's Service `name` (same namespace, so no namespaceSelector)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if args.labels:
        metadata["labels"] = dict(args.labels)
    return {
        "apiVersion": SERVICE_MONITOR_API[args.flavour],
        "kind": "ServiceMonitor",
        "metadata": metadata,
        "spec": {
            "selector": {"matchLabels": service_labels(name)},
            "endpoints": [
                {"port": port, "path": METRICS_PATH, "interval": f"{args.interval_seconds}s", "scheme": "http"}
            ],
        },
    }
