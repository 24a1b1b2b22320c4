"""A model's part in serving as one service, as `KaitoModelArgs` takes it: the gateway that routes
to it (`gateway`), replicas that follow its load (`autoscale`), its metrics scraped (`metrics`).
Their rules, which need the whole model, are in kaito_aks/model/serving.py."""

from __future__ import annotations

from typing import Annotated

from kaito_aks.nodes import MAX_POOL_NODES, Labels
from kaito_aks.schema import DNS_LABEL, Input, Matches, Range, args_class
from kaito_aks.vocabulary import MetricsFlavour, MetricType

INT32 = 2**31 - 1
SECONDS = Range(0, INT32, "keda-kaito-scaler reads it as a non-negative 32-bit number of seconds")
PROMETHEUS_METRIC = Matches(
    r"[a-zA-Z_:][a-zA-Z0-9_:]*",
    "a Prometheus metric name (letters, digits, '_' and ':'), e.g. vllm:num_requests_waiting",
)
DEFAULT_METRIC = "vllm:num_requests_waiting"


@args_class
class GatewayRefArgs:
    """The Gateway that serves the model under its name (e.g. an InferenceGateway's `gateway_name`
    and `namespace` outputs): the model gets an HTTPRoute from it to the InferencePool KAITO makes
    for the model, matched on the model id body-based routing reads from each request."""

    name: Input[str]
    """The Gateway's name."""
    namespace: Input[str]
    """The Gateway's namespace."""


DEFAULT_SCALER_NAMESPACE = "keda"  # KedaAutoscaling's, with KEDA from its chart


@args_class
class ModelAutoscaleArgs:
    """Replicas that follow the load, in keda-kaito-scaler's terms: it scales the model's
    InferenceSet (KAITO 0.12) one replica at a time between `min_replicas` and `max_replicas`:
    up while the metric is above `up_threshold`, down while below `down_threshold` (a gauge
    averaged per replica, a histogram over its window). KEDA and keda-kaito-scaler must run in
    the cluster (`KedaAutoscaling`)."""

    max_replicas: Annotated[
        int,
        Range(2, MAX_POOL_NODES, "keda-kaito-scaler ignores an InferenceSet whose max-replicas is below 2"),
    ]
    """The most replicas; each takes whole nodes of its own, and the pools must have room for all
    of them at once."""
    min_replicas: Annotated[int, Range(1, MAX_POOL_NODES, "keda-kaito-scaler never scales below 1")] = 1
    """The fewest replicas; also how many the InferenceSet is created with."""
    metric: Annotated[str, PROMETHEUS_METRIC] = DEFAULT_METRIC
    """The vLLM metric to follow, scraped from the model's pods."""
    metric_type: MetricType | None = None
    """gauge or histogram; default: the kind of a vLLM metric kaito-aks knows (catalog/vllm_metrics.yaml)."""
    up_threshold: float = 10
    """Scale up while the metric is above this."""
    down_threshold: float = 1
    """Scale down while the metric is below this (at most `up_threshold`)."""
    metric_cache_window_seconds: Annotated[int, Range(1, INT32, "a positive number of seconds")] | None = None
    """A histogram's averaging window; default: the scaler's (300 s). Histograms only."""
    evaluation_window_seconds: Annotated[int, SECONDS] | None = None
    """How long a scale-up signal must hold; default: the scaler's (60 s)."""
    scale_up_cooldown_seconds: Annotated[int, SECONDS] | None = None
    """At least this long between two scale-ups; default: the scaler's (300 s)."""
    scale_down_cooldown_seconds: Annotated[int, SECONDS] | None = None
    """At least this long between two scale-downs; default: the scaler's (300 s)."""
    scaler_namespace: Annotated[str, DNS_LABEL] = DEFAULT_SCALER_NAMESPACE
    """Where keda-kaito-scaler runs (a KedaAutoscaling's: keda, or kube-system beside the AKS
    KEDA add-on): the model's NetworkPolicy lets it in to read the metric."""


@args_class
class ModelMetricsArgs:
    """The model's vLLM metrics scraped by Prometheus: a ServiceMonitor on the model's Service (its
    serving pods' /metrics), in the flavour the cluster's Prometheus reads."""

    flavour: MetricsFlavour = "prometheusOperator"
    """azureManagedPrometheus (AKS's managed Prometheus: azmonitoring.coreos.com) or
    prometheusOperator (e.g. kube-prometheus-stack: monitoring.coreos.com)."""
    labels: Labels | None = None
    """Labels on the ServiceMonitor; kube-prometheus-stack selects only those labelled
    release: <its Helm release name> unless told otherwise. Default: none."""
    interval_seconds: Annotated[int, Range(5, 3600)] = 30
    """How often Prometheus scrapes the model."""
    prometheus_namespace: Annotated[str, DNS_LABEL] = "monitoring"
    """With prometheusOperator: the namespace of the Prometheus that scrapes the model, which its
    NetworkPolicy lets in (kube-prometheus-stack's usual). AKS's managed Prometheus scrapes from
    kube-system, let in whatever this says."""
