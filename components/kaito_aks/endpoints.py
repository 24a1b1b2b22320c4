"""Who reaches a model's or a RAG engine's endpoint: the NetworkPolicy that admits only its own
namespace and the namespaces (and pods) named in `allow_from`, and the load balancer in front of
it when asked (an internal Azure one by default; a public one only with source ranges, warned).
KAITO's servers answer plain HTTP with no authentication, so the network is their only guard.

Data only (manifests as the API server receives them): KaitoModel and RagEngine create them."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Any

import pulumi

from kaito_aks.azure.aks_security import Cidr
from kaito_aks.cluster.kubernetes_object import KubernetesObject
from kaito_aks.nodes import Labels
from kaito_aks.problems import Key, Problem
from kaito_aks.schema import DNS_LABEL, MaxItems, args_class
from kaito_aks.vocabulary import MANAGED_BY

# Azure's cloud provider makes an internal load balancer (a private address of the cluster's
# virtual network) for a Service with this annotation (AKS docs, internal-lb).
INTERNAL_LB = "service.beta.kubernetes.io/azure-load-balancer-internal"
# Where an internal load balancer's clients are when no source ranges are given: private
# address space (RFC 1918), the virtual network and what is peered or connected to it.
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server
GATEWAY_DOC = "docs/security.md#endpoints"


@args_class
class AllowFromArgs:
    """Pods of another namespace allowed to call the endpoint (besides its own namespace)."""

    namespace: Annotated[str, DNS_LABEL]
    """The namespace, e.g. a gateway's."""
    pod_labels: Labels = field(default_factory=dict[str, str])
    """Only its pods with these labels; default: every pod of the namespace."""


@args_class
class LoadBalancerArgs:
    """An Azure load balancer in front of the endpoint: plain HTTP, no authentication."""

    internal: bool = True
    """An internal load balancer: an address of the cluster's virtual network (annotation
    service.beta.kubernetes.io/azure-load-balancer-internal; Azure's, other clouds need their
    own in `annotations`). false: a public address, which needs `source_ranges` and is warned."""
    source_ranges: Annotated[list[Cidr], MaxItems(100)] = field(default_factory=list[str])
    """Client ranges let in (the Service's loadBalancerSourceRanges, which Azure enforces in the
    load balancer's network security group, and the NetworkPolicy's). Required for a public load
    balancer; default for an internal one: private address space (RFC 1918)."""
    annotations: Annotated[dict[str, str], MaxItems(20)] = field(default_factory=dict[str, str])
    """More Service annotations (e.g. service.beta.kubernetes.io/azure-load-balancer-internal-subnet,
    or another cloud's own); default: none."""


def load_balancer_of(value: bool | LoadBalancerArgs) -> LoadBalancerArgs | None:
    """`load_balancer` as settings: true is an internal one, false none."""
    if isinstance(value, LoadBalancerArgs):
        return value
    return LoadBalancerArgs() if value else None


def load_balancer_problems(value: bool | LoadBalancerArgs) -> list[Problem]:
    """A public load balancer open to the whole internet is refused: say who may call it."""
    lb = load_balancer_of(value)
    if lb is not None and INTERNAL_LB in lb.annotations:
        why = f"{INTERNAL_LB} is set by `internal`; a public load balancer is `internal`: false with `source_ranges`"
        return [Problem.at(("load_balancer", "annotations", Key(INTERNAL_LB)), why, "public-endpoint")]
    if lb is None or lb.internal or lb.source_ranges:
        return []
    why = (
        "a public load balancer needs `source_ranges` (the client ranges let in): without them anyone on the internet "
        "could call this unauthenticated endpoint; keep it internal (`load_balancer`: true), or reach it through an "
        "authenticated gateway"
    )
    return [Problem.at(("load_balancer", "source_ranges"), why, "public-endpoint")]


def load_balancer_warnings(value: bool | LoadBalancerArgs) -> list[Problem]:
    lb = load_balancer_of(value)
    if lb is None or lb.internal:
        return []
    why = (
        f"a public load balancer: every address in {', '.join(lb.source_ranges) or 'its source ranges'} reaches this "
        "endpoint over plain HTTP with no authentication (KAITO's servers check none); prefer an internal load "
        f"balancer behind an authenticated gateway ({GATEWAY_DOC})"
    )
    return [Problem.at(("load_balancer", "internal"), why, "public-endpoint-open")]


def sources_of(lb: LoadBalancerArgs) -> list[str]:
    """The client ranges a load balancer lets in."""
    return list(lb.source_ranges) or ([] if not lb.internal else list(PRIVATE_RANGES))


def service_manifest(
    name: str,
    namespace: str,
    selector: dict[str, str],
    target_port: int,
    port: int,
    load_balancer: LoadBalancerArgs | None,
    annotations: dict[str, str],
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Service of the endpoint: ClusterIP, or a load balancer that keeps the client's address
    (externalTrafficPolicy Local: the NetworkPolicy's ranges then see the caller, not a node).
    `labels`: the Service's own (e.g. for a ServiceMonitor to select it)."""
    spec: dict[str, Any] = {
        "type": "ClusterIP",
        "selector": selector,
        "ports": [{"name": "http", "port": port, "target_port": target_port, "protocol": "TCP"}],
    }
    annotations = dict(annotations)
    if load_balancer is not None:
        annotations.update(load_balancer.annotations)  # (never the internal one: refused)
        spec["type"] = "LoadBalancer"
        spec["external_traffic_policy"] = "Local"
        if load_balancer.source_ranges:
            spec["load_balancer_source_ranges"] = list(load_balancer.source_ranges)
        if load_balancer.internal:
            annotations[INTERNAL_LB] = "true"
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "annotations": annotations}
    if labels:
        metadata["labels"] = dict(labels)
    return {"metadata": metadata, "spec": spec}


def network_policy(
    name: str,
    namespace: str,
    pods: dict[str, Any],
    allow_from: list[AllowFromArgs],
    load_balancer: LoadBalancerArgs | None,
    target_port: int,
) -> dict[str, Any]:
    """The endpoint's NetworkPolicy: ingress to `pods` (a label selector) only from pods of the same namespace (on
    any port: a multi-node model's pods talk to each other), from the pods `allow_from` names,
    and (with a load balancer) from its client ranges on the serving port. Egress is left as it
    is (model downloads, DNS). Enforced only where the cluster has a policy engine."""
    peers: list[dict[str, Any]] = [{"podSelector": {}}]
    for allowed in allow_from:
        peer: dict[str, Any] = {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: allowed.namespace}}}
        if allowed.pod_labels:
            peer["podSelector"] = {"matchLabels": dict(allowed.pod_labels)}
        peers.append(peer)
    ingress: list[dict[str, Any]] = [{"from": peers}]
    if load_balancer is not None:
        ingress.append(
            {
                "from": [{"ipBlock": {"cidr": cidr}} for cidr in sources_of(load_balancer)],
                "ports": [{"port": target_port, "protocol": "TCP"}],
            }
        )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{name}-ingress", "namespace": namespace, "labels": dict(MANAGED_BY)},
        "spec": {"podSelector": pods, "policyTypes": ["Ingress"], "ingress": ingress},
    }


def declare_network_policy(resource_name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
    """Register an endpoint's NetworkPolicy (`network_policy`) as written: the same type token and
    inputs the typed SDK class sends, without its alias from extensions/v1beta1 (a type no stack of
    this library ever had) and its output type look-ups, a third of each registration's cost."""
    KubernetesObject(resource_name, manifest, opts=opts, outputs=("status",))
