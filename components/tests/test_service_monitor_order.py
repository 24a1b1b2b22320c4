"""ServiceMonitors after their CRD, and the label limits AKS's managed Prometheus asks for (issue
37): the flavours' objects, the waits that hold them back (one per model alone, one per kind in
a group), and what the wait says of each answer."""

from __future__ import annotations

from typing import Any

import pulumi

import upstream_facts
from kaito_aks import KaitoModel, KaitoModelArgs, KubeconfigCluster, KubeconfigClusterArgs, deploy_models
from kaito_aks.serving.metrics import AZURE_LABEL_LIMITS, service_monitor
from kaito_aks.serving.spec import ModelMetricsArgs
from kaito_aks.testing import MOCK_KUBECONFIG, run
from kaito_aks.waits.crd_served import look, served_kind
from kaito_aks.waits.kube_client import KubeApiError
from kube_schema import crd_validator

CRD_SERVED = "pulumi-python:dynamic/kaito-aks:CrdServed"
AZURE = ModelMetricsArgs(flavour="azureManagedPrometheus")
WAITS_OFF = {"wait_for_gpu_nodes": False, "wait_for_ready": False}


def on_cluster() -> pulumi.ResourceOptions:
    cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(kubeconfig=MOCK_KUBECONFIG.format(cluster="dev")))
    return pulumi.ResourceOptions(provider=cluster.provider)


def model(name: str, **kw: Any) -> KaitoModelArgs:
    return KaitoModelArgs(kaito_version="0.12.0", model="phi-4-mini-instruct", name=name, **{**WAITS_OFF, **kw})


def test_managed_prometheus_monitors_carry_microsofts_label_limits_and_the_operators_do_not():
    azure = service_monitor("phi", "llm", "http", AZURE)
    assert AZURE_LABEL_LIMITS == {"labelLimit": 63, "labelNameLengthLimit": 511, "labelValueLengthLimit": 1023}
    assert {k: azure["spec"][k] for k in AZURE_LABEL_LIMITS} == AZURE_LABEL_LIMITS
    schema = upstream_facts.serving_crd("prometheus-operator", "servicemonitors.azmonitoring.coreos.com")
    assert crd_validator(schema, "v1")(azure) == []  # fields of the ServiceMonitor API, typed as it types them
    operator = service_monitor("phi", "llm", "http", ModelMetricsArgs(flavour="prometheusOperator"))
    assert not set(AZURE_LABEL_LIMITS) & set(operator["spec"])  # its Prometheus's own limits apply
    assert served_kind(azure) == ("servicemonitors.azmonitoring.coreos.com", "v1")


def test_a_models_service_monitor_waits_for_its_crd_and_a_groups_share_one_wait():
    def alone() -> None:
        KaitoModel("phi", model("phi", metrics=AZURE), opts=on_cluster())

    ev = run(alone)
    (wait,) = ev.of_type(CRD_SERVED)
    assert (wait.inputs["crd"], wait.inputs["version"]) == ("servicemonitors.azmonitoring.coreos.com", "v1")
    assert "ama-metrics" in wait.inputs["registeredBy"]
    assert wait.urn in ev.named("phi/service-monitor").dependencies
    # the model itself does not wait for monitoring: only its ServiceMonitor does
    assert wait.urn not in ev.named("phi/phi", "kubernetes:kaito.sh/v1beta1:InferenceSet").dependencies

    def group() -> None:
        deploy_models(
            "models",
            [(n, model(n, metrics=AZURE)) for n in ("a", "b", "c")] + [("d", model("d"))],
            opts=on_cluster(),
        )

    ev = run(group)
    (shared,) = ev.of_type(CRD_SERVED)
    assert shared.name == "models/service-monitors/servicemonitors.azmonitoring.coreos.com"
    for n in ("a", "b", "c"):
        assert shared.urn in ev.named(f"{n}/service-monitor").dependencies
    assert ev.of_type("kubernetes:azmonitoring.coreos.com/v1:ServiceMonitor") == [
        ev.named(f"{n}/service-monitor") for n in ("a", "b", "c")
    ]
    assert run(lambda: deploy_models("m", [("d", model("d"))], opts=on_cluster())).of_type(CRD_SERVED) == []


class Crds:
    def __init__(self, answer: dict[str, Any] | KubeApiError):
        self.answer = answer

    def get(self, path: str, **query: str) -> dict[str, Any]:
        assert path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/servicemonitors.azmonitoring.coreos.com"
        if isinstance(self.answer, KubeApiError):
            raise self.answer
        return self.answer


def test_the_wait_passes_once_the_crd_is_established_and_serves_the_version():
    def said(answer: dict[str, Any] | KubeApiError) -> tuple[bool, bool, str]:
        check = look(Crds(answer), "servicemonitors.azmonitoring.coreos.com", "v1", "ama-metrics registers it")
        return check.done, check.fatal, check.waiting_for

    established = {"status": {"conditions": [{"type": "Established", "status": "True"}]}}
    served = {"spec": {"versions": [{"name": "v1", "served": True}]}, **established}
    assert said(served) == (True, False, "")
    assert said(KubeApiError(404, "not found")) == (
        False,
        False,
        "the CustomResourceDefinition servicemonitors.azmonitoring.coreos.com does not exist yet",
    )
    assert said({"spec": served["spec"], "status": {"conditions": []}})[:2] == (False, False)
    assert said({"spec": {"versions": [{"name": "v1beta1", "served": True}]}, **established})[:2] == (False, True)
    assert said(KubeApiError(403, "forbidden"))[0] is True  # credentials that cannot read CRDs: as before the wait
