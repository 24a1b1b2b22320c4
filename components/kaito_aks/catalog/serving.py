"""The serving pieces' pins (catalog/serving_charts.yaml: Gateway API, Istio, the body-based
router, Authorino, KEDA and keda-kaito-scaler, prometheus-operator's CRDs), the vLLM metrics the
scaler knows (catalog/vllm_metrics.yaml), and which KAITO releases this program serves through."""

from __future__ import annotations

from functools import cache
from typing import Literal, cast

from kaito_aks.camel import CamelModel
from kaito_aks.catalog import KaitoChart, either, kaito_charts, load_catalog


class HelmChartPin(CamelModel):
    """A chart from a repository (or an OCI reference in `chart`), pinned, with its release name
    and namespace (None: the caller's)."""

    repository: str | None = None
    chart: str
    version: str
    release_name: str
    namespace: str | None = None


class GatewayApiCrds(CamelModel):
    version: str
    channel: str
    url: str


class IstioPin(CamelModel):
    repository: str
    version: str
    namespace: str
    base: str
    istiod: str
    gateway_class: str
    inference_env: str

    def chart(self, which: Literal["base", "istiod"]) -> HelmChartPin:
        name = self.base if which == "base" else self.istiod
        return HelmChartPin(
            repository=self.repository, chart=which, version=self.version, release_name=name, namespace=self.namespace
        )


class BodyBasedRoutingPin(HelmChartPin):
    model_header: str
    service: str  # the router's Service (the chart's bbr.name), in the gateway's namespace
    port: int  # its gRPC port (bbr.port)


class AuthorinoPin(HelmChartPin):
    runs: str  # the Authorino release the operator deploys
    authorization_port: int
    api_key_label: str
    api_key_label_value: str
    api_key_data_key: str


class KedaPin(HelmChartPin):
    add_on_namespace: str


class PrometheusOperatorPin(CamelModel):
    version: str
    kube_prometheus_stack: str


class ScalerSource(CamelModel):
    repository: str
    chart: str
    release_name: str


class ServingCharts(CamelModel):
    """catalog/serving_charts.yaml: every piece that serves the models as one service, pinned."""

    gateway_api_crds: GatewayApiCrds
    istio: IstioPin
    body_based_routing: BodyBasedRoutingPin
    authorino: AuthorinoPin
    keda: KedaPin
    prometheus_operator: PrometheusOperatorPin
    keda_kaito_scaler: ScalerSource


@cache
def serving_charts() -> ServingCharts:
    return ServingCharts.model_validate(load_catalog("serving_charts.yaml"))


@cache
def vllm_metrics() -> dict[str, Literal["gauge", "histogram"]]:
    """vLLM metric name -> gauge or histogram (catalog/vllm_metrics.yaml)."""
    return dict(cast(dict[str, dict[str, Literal["gauge", "histogram"]]], load_catalog("vllm_metrics.yaml"))["metrics"])


def serving_refusal(chart: KaitoChart) -> str | None:
    """Why this program cannot serve a KAITO release's models through the gateway or autoscale
    them (None: it can). KAITO wires both per InferenceSet only (the gateway extension in the
    InferenceSet controller, kaito@v0.12.0:pkg/inferenceset/inferenceset_controller.go:537-570;
    keda-kaito-scaler scales InferenceSets)."""
    if chart.serving is not None:
        return None
    supported = [v for v, c in kaito_charts().items() if c.serving is not None]
    fix = f"use KAITO {either(supported)}"
    if not chart.helm_install:
        return (
            f"KAITO {chart.version} is what {chart.installed_by} runs: it takes no feature gates and has no InferenceSet, "
            f"through which KAITO routes and scales; {fix}, installed by this program"
        )
    if chart.replicas == "workspacePerReplica":
        gate = (
            " (behind its enableInferenceSetController gate)"
            if not chart.feature_gates.get("enableInferenceSetController")
            else ""
        )
        return (
            "KAITO routes through the gateway extension, and keda-kaito-scaler scales, only InferenceSets, and on KAITO "
            f"{chart.version} this program serves replicas as one Workspace each (that release's InferenceSet{gate} "
            "requires an instanceType, which bring-your-own nodes forbid). Stricter than KAITO, which routes and scales "
            f"an InferenceSet made by other means on {chart.version}; {fix}"
        )
    return f"KAITO {chart.version} has no serving support in this program; {fix}"
