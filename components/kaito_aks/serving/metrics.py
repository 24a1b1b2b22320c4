"""A model's vLLM metrics for Prometheus: a ServiceMonitor on the model's own Service, whose
endpoints are the serving (leader) pods of every replica, port `http` (KAITO's preset servers
serve /metrics on pod port 5000, consts.PortInferenceServer). KAITO's own per-Workspace Services
carry no labels to select them by (kaito@v0.12.0:pkg/workspace/manifests/manifests.go:66-130).
The same shape serves both Prometheus flavours: AKS's managed Prometheus reads the
azmonitoring.coreos.com group only, a prometheus-operator the monitoring.coreos.com group only.
Managed Prometheus's own also carry the label limits Microsoft's templates set, without which
its pipeline may drop the scrape job ("use the labelLimit, labelNameLengthLimit and
labelValueLengthLimit specified in the templates": learn.microsoft.com/azure/azure-monitor/
containers/prometheus-metrics-scrape-crd; Azure/prometheus-collector otelcollector/deploy/
example-custom-resources/pod-monitor/pod-monitor-reference-app.yaml@072803b: 63, 511, 1023). A
ServiceMonitor is created once the cluster serves its CRD (waits/crd_served.py)."""

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
AZURE_LABEL_LIMITS = {"labelLimit": 63, "labelNameLengthLimit": 511, "labelValueLengthLimit": 1023}
# Who registers each flavour's ServiceMonitor CRD: where to look when it does not come.
REGISTERED_BY: dict[MetricsFlavour, str] = {
    "azureManagedPrometheus": (
        "AKS's managed Prometheus registers it when its ama-metrics pods start (the cluster's "
        "azureMonitorProfile.metrics on): kubectl get pods -n kube-system | grep ama-metrics"
    ),
    "prometheusOperator": (
        "a prometheus-operator's chart installs it (kube-prometheus-stack): is it installed on this cluster?"
    ),
}


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
            **(AZURE_LABEL_LIMITS if args.flavour == "azureManagedPrometheus" else {}),
            "selector": {"matchLabels": service_labels(name)},
            "endpoints": [
                {"port": port, "path": METRICS_PATH, "interval": f"{args.interval_seconds}s", "scheme": "http"}
            ],
        },
    }
