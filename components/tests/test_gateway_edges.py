"""The gateway's Envoy where Istio's own configuration stops (issue 37): the body-based router
after authentication, and what Envoy answers itself (GET /v1/models, an unknown model, no
model). Checked here against Istio's EnvoyFilter CRD, GAIE's chart and KAITO's production
stack; tests/e2e/test_serving.py has the API server take them. No Envoy runs in either: the
order and the answers are read from Istio's and Envoy's sources, not observed."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

import upstream_facts
from kaito_aks import KubeconfigCluster, KubeconfigClusterArgs, catalog
from kaito_aks.problems import Problem
from kaito_aks.serving.edges import (
    DIRECT_RESPONSE_LIMIT,
    body_router_destination,
    body_router_filter,
    edge_routes,
    edges_filter,
    models_list,
)
from kaito_aks.serving.gateway import InferenceGateway, InferenceGatewayArgs, inference_gateway_warnings
from kaito_aks.testing import MOCK_KUBECONFIG, run
from kube_schema import crd_validator

KEY = "k" * 40
ENVOY_FILTER = "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter"


def envoy_filter_crd() -> Any:
    return crd_validator(upstream_facts.serving_crd("istio-api", "envoyfilters.networking.istio.io"), "v1alpha3")


def on_cluster() -> pulumi.ResourceOptions:
    cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(kubeconfig=MOCK_KUBECONFIG.format(cluster="dev")))
    return pulumi.ResourceOptions(provider=cluster.provider)


def test_the_router_runs_after_authentication_and_before_the_endpoint_picker():
    manifest = body_router_filter("kaito-gateway", "kaito-gateway")
    assert envoy_filter_crd()(manifest) == []
    (patch,) = manifest["spec"]["configPatches"]
    assert patch["applyTo"] == "HTTP_FILTER"
    # Istio 1.29.6 chains ext_authz (the CUSTOM policy), authn, RBAC, ..., then the InferencePool
    # ext_proc: inserted before that one, the router runs after Authorino has decided
    assert patch["patch"]["operation"] == "INSERT_BEFORE"
    assert patch["match"]["listener"]["filterChain"]["filter"]["subFilter"] == {"name": "envoy.filters.http.ext_proc"}
    assert patch["match"]["context"] == "GATEWAY"
    assert manifest["spec"]["workloadSelector"] == {
        "labels": {"gateway.networking.k8s.io/gateway-name": "kaito-gateway"}
    }
    value = patch["patch"]["value"]
    # named apart from the picker's filter, whose per-route config Istio keys by that name
    assert value["name"] == "envoy.filters.http.ext_proc.bbr"
    config = value["typed_config"]
    assert config["failure_mode_allow"] is False  # fail closed, as GAIE writes it
    assert config["processing_mode"]["request_body_mode"] == "FULL_DUPLEX_STREAMED"
    # the router's Service and port as GAIE's chart names them (values.yaml bbr.name, bbr.port)
    chart = upstream_facts.serving_chart_values("body-based-routing")["bbr"]
    pin = catalog.serving_charts().body_based_routing
    assert (pin.service, pin.port) == (chart["name"], chart["port"])
    assert config["grpc_service"]["envoy_grpc"]["cluster_name"] == (
        f"outbound|{chart['port']}||{chart['name']}.kaito-gateway.svc.cluster.local"
    )
    rule = body_router_destination("kaito-gateway", "kaito-gateway")
    assert upstream_facts.serving_crd("istio-api", "destinationrules.networking.istio.io")
    assert (
        crd_validator(upstream_facts.serving_crd("istio-api", "destinationrules.networking.istio.io"), "v1")(rule) == []
    )
    assert rule["spec"] == {
        "host": "body-based-router.kaito-gateway.svc.cluster.local",
        "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": True}},
    }


def test_what_no_route_takes_is_answered_in_openais_shape():
    manifest = edges_filter("kaito-gateway", "kaito-gateway", ["phi", "qwen", "qwen-lora"])
    assert envoy_filter_crd()(manifest) == []
    (patch,) = manifest["spec"]["configPatches"]  # a short list needs no higher limit
    assert (patch["applyTo"], patch["patch"]["operation"]) == ("VIRTUAL_HOST", "MERGE")  # after the HTTPRoutes'
    listed, unknown, missing = patch["patch"]["value"]["routes"]
    assert listed["match"] == {"path": "/v1/models"}
    assert listed["direct_response"]["status"] == 200
    models = json.loads(listed["direct_response"]["body"]["inline_string"])
    assert models == {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": 0, "owned_by": "kaito"} for m in ("phi", "qwen", "qwen-lora")],
    }
    # a model id the router wrote that no model's route takes
    assert unknown["match"] == {"prefix": "/", "headers": [{"name": "x-gateway-model-name", "present_match": True}]}
    assert unknown["direct_response"]["status"] == 404
    error = json.loads(unknown["direct_response"]["body"]["inline_string"])["error"]
    assert error == {
        "message": "The model does not exist.",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }
    headers = {h["header"]["key"]: h["header"]["value"] for h in unknown["response_headers_to_add"]}
    assert headers == {"content-type": "application/json", "x-kaito-requested-model": "%REQ(x-gateway-model-name)%"}
    assert missing["match"] == {"prefix": "/"}  # last: everything else
    assert json.loads(missing["direct_response"]["body"]["inline_string"])["error"]["code"] == "invalid_request_body"
    assert missing["direct_response"]["status"] == 400


def test_a_model_list_beyond_envoys_direct_response_limit_raises_it():
    many = [f"model-{i:03d}" for i in range(120)]
    assert len(models_list(many)) > DIRECT_RESPONSE_LIMIT
    manifest = edges_filter("g", "n", many)
    assert envoy_filter_crd()(manifest) == []
    _, limit = manifest["spec"]["configPatches"]
    assert limit["applyTo"] == "ROUTE_CONFIGURATION"
    assert limit["patch"]["value"] == {"max_direct_response_body_size_bytes": len(models_list(many))}
    assert [r["name"] for r in edge_routes([])] == ["models-list", "model-not-found", "model-missing"]
    assert json.loads(models_list([])) == {"object": "list", "data": []}


def test_the_gateway_writes_the_router_wiring_before_the_router_and_the_edges_before_it_serves():
    def program() -> None:
        InferenceGateway(
            "gw",
            InferenceGatewayArgs(model_namespaces=["llm"], api_keys={"ci": KEY}, models=["phi", "qwen"]),
            opts=on_cluster(),
        )

    ev = run(program)
    router = ev.named("gw/body-based-router", "kubernetes:helm.sh/v3:Release")
    wiring = ev.named("gw/body-based-router-filter", ENVOY_FILTER)
    tls = ev.named("gw/body-based-router-tls", "kubernetes:networking.istio.io/v1:DestinationRule")
    # written first, so a stack whose release rendered GAIE's INSERT_FIRST filter never runs without one
    assert {wiring.urn, tls.urn} <= set(router.dependencies)
    assert ev.named("gw/istio-base").urn in wiring.dependencies  # (Istio's CRDs)
    edges = ev.named("gw/openai-edges", ENVOY_FILTER)
    assert edges.urn in ev.named("gw/gateway").dependencies
    assert ev.named("gw/ext-authz").urn in edges.dependencies
    routes = edges.inputs["spec"]["configPatches"][0]["patch"]["value"]["routes"]
    assert [d["id"] for d in json.loads(routes[0]["direct_response"]["body"]["inline_string"])["data"]] == [
        "phi",
        "qwen",
    ]


def test_an_existing_router_is_not_rewired_and_said_so():
    def program() -> None:
        InferenceGateway(
            "gw",
            InferenceGatewayArgs(model_namespaces=["llm"], api_keys={"ci": KEY}, body_based_routing="existing"),
            opts=on_cluster(),
        )

    ev = run(program)
    assert [r.name for r in ev.of_type(ENVOY_FILTER)] == ["gw/openai-edges"]
    warnings = inference_gateway_warnings(InferenceGatewayArgs(model_namespaces=["llm"], body_based_routing="existing"))
    (said,) = [w for w in warnings if w.code == "gateway-existing-router"]
    assert isinstance(said, Problem)
    assert said.text().startswith("body_based_routing: an existing body-based router is wired by whoever installed it")


@pytest.mark.parametrize("kw", [{}, {"allow_unauthenticated": True, "api_keys": {}}])
def test_the_gateways_envoy_filters_fit_istios_crd(kw: dict[str, Any]):
    args = InferenceGatewayArgs(**{"model_namespaces": ["llm"], "api_keys": {"ci": KEY}, **kw})
    assert envoy_filter_crd()(edges_filter(args.name, args.namespace, args.models)) == []
    assert envoy_filter_crd()(body_router_filter(args.name, args.namespace)) == []
