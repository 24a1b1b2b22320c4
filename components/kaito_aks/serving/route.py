"""A model's route through the gateway, as data: the HTTPRoute from the Gateway to the InferencePool
KAITO makes for the model's InferenceSet, matched on the model ids body-based routing copies from
each request's `model` into a header, and the Istio DestinationRule that says how the gateway
reaches the pool's endpoint picker (kaito@v0.12.0:examples/gateway-api-inference-extension/
httproute-bbr.yaml, destinationrule-*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kaito_aks import catalog

GATEWAY_API = "gateway.networking.k8s.io/v1"  # the Gateway API group (Gateway, HTTPRoute)
GATEWAY_GROUP = "gateway.networking.k8s.io"
DESTINATION_RULE_API = "networking.istio.io/v1"
# A model's route and its pool carry the model's name here, for `status` and NetworkPolicies.
MODEL_LABEL = "kaito-aks.io/model"


@dataclass(frozen=True)
class RoutePlan:
    """One routed model: what the gateway matches, and where it sends it."""

    name: str  # the model's (and its InferenceSet's) name: the HTTPRoute's too
    namespace: str
    model_ids: tuple[str, ...]  # the `model` values clients send: the served id, then its adapters
    pool: str  # the InferencePool KAITO makes: <InferenceSet><poolSuffix>
    pool_api_version: str
    endpoint_picker: str  # its Service
    endpoint_picker_port: int
    endpoint_picker_tls: str  # disable | simple
    header: str  # the header body-based routing writes the model id into

    @property
    def pool_group(self) -> str:
        return self.pool_api_version.split("/")[0]

    @property
    def endpoint_picker_host(self) -> str:
        return f"{self.endpoint_picker}.{self.namespace}.svc.cluster.local"

    def http_route(self, gateway_name: Any, gateway_namespace: Any) -> dict[str, Any]:
        """The HTTPRoute (the Gateway's name and namespace may be Outputs: the route then waits
        for the Gateway)."""
        return {
            "apiVersion": GATEWAY_API,
            "kind": "HTTPRoute",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {MODEL_LABEL: self.name}},
            "spec": {
                "parentRefs": [
                    {"group": GATEWAY_GROUP, "kind": "Gateway", "name": gateway_name, "namespace": gateway_namespace}
                ],
                "rules": [
                    {
                        "matches": [
                            {
                                "path": {"type": "PathPrefix", "value": "/"},
                                "headers": [{"type": "Exact", "name": self.header, "value": model}],
                            }
                            for model in self.model_ids
                        ],
                        "backendRefs": [{"group": self.pool_group, "kind": "InferencePool", "name": self.pool}],
                    }
                ],
            },
        }

    def destination_rule(self) -> dict[str, Any]:
        """How the gateway's proxy reaches the endpoint picker: TLS off for a plaintext picker
        (KAITO 0.12), or TLS without checking a certificate nobody issued (0.8, 0.11)."""
        tls: dict[str, Any] = (
            {"mode": "DISABLE"}
            if self.endpoint_picker_tls == "disable"
            else {"mode": "SIMPLE", "insecureSkipVerify": True}
        )
        return {
            "apiVersion": DESTINATION_RULE_API,
            "kind": "DestinationRule",
            "metadata": {"name": self.endpoint_picker, "namespace": self.namespace, "labels": {MODEL_LABEL: self.name}},
            "spec": {"host": self.endpoint_picker_host, "trafficPolicy": {"tls": tls}},
        }


def endpoint_picker_name(pool: str, picker: catalog.EndpointPicker) -> str:
    """The picker's Service as the pool chart names it: the release name (the pool's) lower-cased,
    trimmed and cut to `name_max` characters, then the suffix (routerlib _helpers.tpl)."""
    return pool.lower().strip()[: picker.name_max] + picker.suffix


def route_plan(name: str, namespace: str, model_ids: tuple[str, ...], serving: catalog.ServingSupport) -> RoutePlan:
    pool = f"{name}{serving.pool_suffix}"
    picker = serving.endpoint_picker
    return RoutePlan(
        name=name,
        namespace=namespace,
        model_ids=model_ids,
        pool=pool,
        pool_api_version=serving.inference_pool_api_version,
        endpoint_picker=endpoint_picker_name(pool, picker),
        endpoint_picker_port=picker.port,
        endpoint_picker_tls=picker.tls,
        header=catalog.serving_charts().body_based_routing.model_header,
    )
