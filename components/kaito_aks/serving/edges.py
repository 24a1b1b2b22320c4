"""The gateway's Envoy, where Istio's own configuration stops: where the body-based router runs in
its filter chain, and what it answers that no model's route matches. As data (Istio EnvoyFilters
of networking.istio.io/v1alpha3), for the InferenceGateway component.

**The order.** Istio 1.29.6 builds a Gateway's HTTP filters as: metadata exchange, the CUSTOM
AuthorizationPolicy's ext_authz (Authorino here), authentication, RBAC, Wasm, then the
InferencePool ext_proc `envoy.filters.http.ext_proc` (the endpoint picker; only on a Gateway
with an InferencePool attached), ..., the router (pilot/pkg/networking/core/listener_builder.go:
395-455 at 1.29.6). GAIE's body-based-routing chart (v1.3.0, provider.name istio,
templates/istio.yaml) inserts the router's ext_proc FIRST, before ext_authz, reading every
request's body in full-duplex streaming before anything is authenticated. Here it is inserted
right BEFORE the InferencePool ext_proc (as KAITO's production stack v0.4.0 places it,
charts/modelharness/templates/envoyfilter-bbr.yaml): after ext_authz, so a request Authorino
refuses is answered before any body is read, and still before the endpoint picker, which
needs the model header it writes. (A Gateway with no InferencePool attached has no picker's
filter, so no router either, and no model to route to: Istio inserts nothing where the anchor
is missing, pilot/pkg/networking/core/envoyfilter/listener_patch.go patchHTTPFilters.) Its
filter is named apart from the picker's (`envoy.filters.http.ext_proc.bbr`, as there): Istio
configures the picker per route under
`envoy.filters.http.ext_proc` (pilot/pkg/networking/core/route/route.go:514-545), which must
not reconfigure the router. The rest is GAIE's filter as written: fail closed, full-duplex
request body, to the router's Service with TLS not verified (its DestinationRule).

**The edges.** Every routed model's HTTPRoute matches the header the router writes; what
matches none is answered by Envoy itself (`direct_response`, no backend), with routes appended
after the HTTPRoutes' (production stack v0.4.0 templates/envoyfilter-not-found.yaml): `GET
/v1/models` lists the gateway's models in OpenAI's shape; a model id no route takes is `404
model_not_found` in OpenAI's error shape; a request with no `model` `400 invalid_request_body`.
A route that always matches also keeps the CUSTOM policy's ext_authz in force for them (the
production stack's note: a request no route matches is answered before it). Envoy takes a
direct response body of at most 4096 bytes unless its route configuration says more
(RouteConfiguration.max_direct_response_body_size_bytes): a longer model list raises it."""

from __future__ import annotations

import json
from typing import Any

from kaito_aks import catalog
from kaito_aks.vocabulary import GATEWAY_NAME_LABEL

ENVOY_FILTER_API = "networking.istio.io/v1alpha3"
DESTINATION_RULE_API = "networking.istio.io/v1"
HCM = "envoy.filters.network.http_connection_manager"
INFERENCE_POOL_EXT_PROC = "envoy.filters.http.ext_proc"  # Istio's filter for the endpoint picker
ROUTER_FILTER = "envoy.filters.http.ext_proc.bbr"
EXT_PROC = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor"
MODELS_PATH = "/v1/models"
DIRECT_RESPONSE_LIMIT = 4096  # Envoy's default max_direct_response_body_size_bytes
REQUESTED_MODEL_HEADER = "x-kaito-requested-model"


def _in_gateway(kind: str, api: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _gateway_pods(gateway: str) -> dict[str, Any]:
    """The gateway's own pods (Istio labels them with the Gateway's name)."""
    return {"labels": {GATEWAY_NAME_LABEL: gateway}}


def router_host(namespace: str) -> str:
    return f"{catalog.serving_charts().body_based_routing.service}.{namespace}.svc.cluster.local"


def body_router_filter(gateway: str, namespace: str) -> dict[str, Any]:
    """The body-based router in the gateway's filter chain, after authentication."""
    pin = catalog.serving_charts().body_based_routing
    processor = {
        "@type": EXT_PROC,
        # as GAIE's chart writes it (config/charts/body-based-routing/templates/istio.yaml@v1.3.0)
        "failure_mode_allow": False,
        "allow_mode_override": True,
        "processing_mode": {
            "request_header_mode": "SEND",
            "response_header_mode": "SKIP",
            "request_body_mode": "FULL_DUPLEX_STREAMED",
            "response_body_mode": "NONE",
            "request_trailer_mode": "SEND",
            "response_trailer_mode": "SKIP",
        },
        "grpc_service": {"envoy_grpc": {"cluster_name": f"outbound|{pin.port}||{router_host(namespace)}"}},
    }
    patch = {
        "applyTo": "HTTP_FILTER",
        "match": {
            "context": "GATEWAY",
            "listener": {"filterChain": {"filter": {"name": HCM, "subFilter": {"name": INFERENCE_POOL_EXT_PROC}}}},
        },
        "patch": {"operation": "INSERT_BEFORE", "value": {"name": ROUTER_FILTER, "typed_config": processor}},
    }
    spec = {"workloadSelector": _gateway_pods(gateway), "configPatches": [patch]}
    return _in_gateway("EnvoyFilter", ENVOY_FILTER_API, f"{gateway}-body-based-router", namespace, spec)


def body_router_destination(gateway: str, namespace: str) -> dict[str, Any]:
    """How the gateway reaches the router: TLS, its certificate not verified (the router makes
    its own), as GAIE's chart's DestinationRule says."""
    spec = {"host": router_host(namespace), "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": True}}}
    return _in_gateway("DestinationRule", DESTINATION_RULE_API, f"{gateway}-body-based-router", namespace, spec)


def openai_error(message: str, code: str) -> str:
    """OpenAI's error body: {"error": {message, type, param, code}}."""
    error = {"message": message, "type": "invalid_request_error", "param": "model", "code": code}
    return json.dumps({"error": error}, separators=(",", ":"))


def models_list(models: list[str]) -> str:
    """OpenAI's `GET /v1/models` answer: {"object": "list", "data": [{id, object, created, owned_by}]}."""
    data = [{"id": m, "object": "model", "created": 0, "owned_by": "kaito"} for m in sorted(set(models))]
    return json.dumps({"object": "list", "data": data}, separators=(",", ":"))


def _json_answer(status: int, body: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    added = {"content-type": "application/json", **(headers or {})}
    return {
        "direct_response": {"status": status, "body": {"inline_string": body}},
        "response_headers_to_add": [
            {"header": {"key": k, "value": v}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"} for k, v in added.items()
        ],
    }


def edge_routes(models: list[str]) -> list[dict[str, Any]]:
    """The routes after the models' (first match wins): the model list, an unknown model, none."""
    header = catalog.serving_charts().body_based_routing.model_header.lower()
    return [
        {"name": "models-list", "match": {"path": MODELS_PATH}, **_json_answer(200, models_list(models))},
        {
            "name": "model-not-found",
            "match": {"prefix": "/", "headers": [{"name": header, "present_match": True}]},
            **_json_answer(
                404,
                openai_error("The model does not exist.", "model_not_found"),
                {REQUESTED_MODEL_HEADER: f"%REQ({header})%"},
            ),
        },
        {
            "name": "model-missing",
            "match": {"prefix": "/"},
            **_json_answer(
                400,
                openai_error(
                    'The request body did not specify a model; the "model" field is required.', "invalid_request_body"
                ),
            ),
        },
    ]


def edges_filter(gateway: str, namespace: str, models: list[str]) -> dict[str, Any]:
    """The routes Envoy answers itself, appended to every virtual host of the gateway's routes
    (and a higher direct-response limit when the model list needs it)."""
    patches: list[dict[str, Any]] = [
        {
            "applyTo": "VIRTUAL_HOST",
            "match": {"context": "GATEWAY", "routeConfiguration": {"vhost": {"name": ""}}},
            "patch": {"operation": "MERGE", "value": {"routes": edge_routes(models)}},
        }
    ]
    size = len(models_list(models).encode())
    if size > DIRECT_RESPONSE_LIMIT:
        patches.append(
            {
                "applyTo": "ROUTE_CONFIGURATION",
                "match": {"context": "GATEWAY"},
                "patch": {"operation": "MERGE", "value": {"max_direct_response_body_size_bytes": size}},
            }
        )
    spec = {"workloadSelector": _gateway_pods(gateway), "configPatches": patches}
    return _in_gateway("EnvoyFilter", ENVOY_FILTER_API, f"{gateway}-openai-edges", namespace, spec)
