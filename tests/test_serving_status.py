"""`status` with a gateway: the library's readers of the Gateway, a model's route and pool, and its
autoscaler against canned API answers (odd shapes and refusals included), and the lines and JSON
`python -m stacks status` makes of them (end to end in tests/e2e/test_serving.py)."""

from __future__ import annotations

import pytest

from kaito_aks.serving.status import read_autoscaler, read_gateway, read_route
from kaito_aks.waits.kube_client import KubeApiError
from kaito_aks.waits.status import ModelStatus, ObjectStatus
from stacks.status import NOT_SERVING, SERVING, Served, StackStatus, as_json, text
from tests.test_status import FakeApi

GW = "/apis/gateway.networking.k8s.io/v1/namespaces/kaito-gateway/gateways/kaito-gateway"
ROUTE = "/apis/gateway.networking.k8s.io/v1/namespaces/llm/httproutes/phi"
POOL = "/apis/inference.networking.k8s.io/v1/namespaces/llm/inferencepools/phi-inferencepool"
SCALED = "/apis/keda.sh/v1alpha1/namespaces/llm/scaledobjects/phi"
HPA = "/apis/autoscaling/v2/namespaces/llm/horizontalpodautoscalers/keda-hpa-phi"
ROUTE_OUTPUT = {
    "models": ["phi"],
    "httpRoute": "phi",
    "inferencePool": "phi-inferencepool",
    "inferencePoolApiVersion": "inference.networking.k8s.io/v1",
    "endpointPicker": "phi-inferencepool-epp",
    "namespace": "llm",
}
PLAN = {"minReplicas": 1, "maxReplicas": 3, "metric": "vllm:num_requests_waiting", "metricType": "gauge"}
PLAN |= {"upThreshold": 10, "downThreshold": 1}


def cond(kind: str, status: str = "True", reason: str = "", message: str = "") -> dict:
    return {"type": kind, "status": status, "reason": reason or kind, "message": message}


def test_a_programmed_gateway_an_accepted_route_and_its_pool():
    api = FakeApi(
        {
            GW: {"status": {"addresses": [{"value": "10.0.0.7"}], "conditions": [cond("Programmed")]}},
            ROUTE: {"status": {"parents": [{"conditions": [cond("Accepted"), cond("ResolvedRefs")]}]}},
            POOL: {"status": {"parents": [{"conditions": [cond("Accepted")]}]}},
        }
    )
    gateway = read_gateway(api, "kaito-gateway", "kaito-gateway")
    assert (gateway.found, gateway.programmed.status, gateway.address) == (True, "True", "10.0.0.7")
    route = read_route(api, ROUTE_OUTPUT)
    assert (route.accepted.status, route.resolved.status, route.pool_found, route.pool_accepted.status) == (
        "True",
        "True",
        True,
        "True",
    )


def test_odd_shapes_and_missing_objects_are_said_not_raised():
    api = FakeApi({GW: {"status": {"addresses": "x", "conditions": 5}}, ROUTE: {"status": {"parents": [7]}}})
    gateway = read_gateway(api, "kaito-gateway", "kaito-gateway")
    assert (gateway.found, gateway.programmed.status, gateway.address) == (True, "", "")
    route = read_route(api, ROUTE_OUTPUT)
    assert (route.found, route.accepted.status, route.pool_found) == (True, "", False)
    assert not read_gateway(FakeApi({}), "kaito-gateway", "kaito-gateway").found


def test_an_autoscaler_its_scaled_object_and_hpa_and_what_the_credentials_may_not_read():
    api = FakeApi(
        {
            SCALED: {"status": {"conditions": [cond("Ready"), cond("Active", "False", "ScalerNotActive")]}},
            HPA: {"status": {"currentReplicas": 2, "desiredReplicas": 3}},
        }
    )
    found = read_autoscaler(api, "llm", "phi")
    assert (found.scaled_object, found.ready.status, found.active.status) == (True, "True", "False")
    assert (found.current, found.desired) == (2, 3)
    refused = read_autoscaler(FakeApi({SCALED: 403, HPA: 403}), "llm", "phi")
    assert refused.unreadable == ("scaledobjects.keda.sh", "horizontalpodautoscalers")
    with pytest.raises(KubeApiError):
        read_autoscaler(FakeApi({SCALED: 500}), "llm", "phi")


def stack(programmed: str) -> StackStatus:
    api = FakeApi(
        {
            GW: {"status": {"addresses": [{"value": "10.0.0.7"}], "conditions": [cond("Programmed", programmed)]}},
            ROUTE: {"status": {"parents": [{"conditions": [cond("Accepted"), cond("ResolvedRefs")]}]}},
            POOL: {"status": {"parents": [{"conditions": [cond("Accepted")]}]}},
            SCALED: {"status": {"conditions": [cond("Ready"), cond("Active")]}},
            HPA: {"status": {"currentReplicas": 3, "desiredReplicas": 3}},
        }
    )
    iset = ObjectStatus("InferenceSet", "phi", "serving", "", ready_replicas=3, replicas=3)
    outputs = {"model": "phi", "endpoint": "http://phi.llm.svc.cluster.local/v1/chat/completions"}
    outputs |= {"route": ROUTE_OUTPUT, "autoscaling": PLAN}
    served = Served(
        "llm/phi",
        "model",
        outputs,
        ModelStatus((iset,), ()),
        read_route(api, ROUTE_OUTPUT),
        read_autoscaler(api, "llm", "phi"),
    )
    gateway = {
        "url": "http://10.0.0.7",
        "name": "kaito-gateway",
        "namespace": "kaito-gateway",
        "exposure": "internal",
        "istio": "1.29.6",
        "authentication": {"apiKeys": ["ci", "ops"], "entra": None},
    }
    return StackStatus(
        "serving",
        "0.12.0",
        "cluster c",
        (served,),
        0.0,
        gateway,
        read_gateway(api, "kaito-gateway", "kaito-gateway"),
        {"namespace": "keda"},
    )


def test_status_prints_the_gateway_url_each_route_and_its_autoscaler():
    status = stack("True")
    lines = text(status)
    assert "  gateway http://10.0.0.7  internal · Istio 1.29.6 · auth: API keys (ci, ops)  Programmed" in lines
    assert "    route phi Accepted, ResolvedRefs · pool phi-inferencepool Accepted · model ids phi" in lines, lines
    assert (
        "    autoscaling 3/3 ready · min 1 · max 3 · up when vllm:num_requests_waiting > 10, down < 1 (gauge) · "
        "ScaledObject Ready, Active · HPA current 3, desired 3 (KEDA in keda)"
    ) in lines
    assert status.code == SERVING
    data = as_json(status)
    assert data["gateway"]["programmed"]["status"] == "True"
    assert data["models"][0]["autoscaling"]["currentReplicas"] == 3


def test_a_gateway_not_programmed_is_not_serving():
    status = stack("False")
    assert status.code == NOT_SERVING
    assert any("Programmed=False" in line for line in text(status))
