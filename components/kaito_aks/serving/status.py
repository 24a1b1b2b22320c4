"""What the cluster says of a stack's gateway, its models' routes and their autoscalers: read-only,
through the client the waits use (answers read without trusting their shape). `python -m stacks
status` prints it.

- the Gateway: Istio's Programmed condition and the address it reports;
- a model's HTTPRoute: its parent's Accepted and ResolvedRefs (Istio resolves the InferencePool);
  the InferencePool KAITO made (through Flux) and whether Istio accepted it;
- an autoscaled model: the ScaledObject keda-kaito-scaler made (named after the InferenceSet;
  Ready, Active) and KEDA's HPA keda-hpa-<name> (current and desired replicas)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kaito_aks.parsed import is_dict, is_list
from kaito_aks.serving.route import GATEWAY_API
from kaito_aks.serving.scaler import HPA_PREFIX, SCALED_OBJECT_API
from kaito_aks.waits.answers import conditions_of, field_at, segment
from kaito_aks.waits.kube_client import KubeApiError, Reader


@dataclass(frozen=True)
class Said:
    """A condition as its controller set it ('' when it has not)."""

    status: str = ""
    reason: str = ""
    message: str = ""

    def text(self, kind: str) -> str:
        if not self.status:
            return f"no {kind} yet"
        return kind if self.status == "True" else f"{kind}={self.status} ({self.reason}: {self.message})"


@dataclass(frozen=True)
class GatewayStatus:
    found: bool
    programmed: Said = Said()
    address: str = ""


@dataclass(frozen=True)
class RouteStatus:
    found: bool
    accepted: Said = Said()
    resolved: Said = Said()
    pool_found: bool = False
    pool_accepted: Said = Said()


@dataclass(frozen=True)
class AutoscalerStatus:
    scaled_object: bool
    ready: Said = Said()
    active: Said = Said()
    current: int | None = None
    desired: int | None = None
    unreadable: tuple[str, ...] = field(default_factory=tuple[str, ...])


def _said(obj: object, kind: str) -> Said:
    c = next((c for c in conditions_of(obj) if c.get("type") == kind), None)
    if c is None:
        return Said()
    return Said(str(c.get("status") or ""), str(c.get("reason") or ""), str(c.get("message") or ""))


def _get(reader: Reader, path: str) -> dict[str, Any] | None:
    """An object, or None when it (or its kind) is not there; other refusals are the caller's."""
    try:
        return reader.get(path)
    except KubeApiError as err:
        if err.status == 404:
            return None
        raise


def _path(api_version: str, namespace: str, plural: str, name: str) -> str:
    return f"/apis/{api_version}/namespaces/{segment(namespace)}/{plural}/{segment(name)}"


def read_gateway(reader: Reader, namespace: str, name: str) -> GatewayStatus:
    obj = _get(reader, _path(GATEWAY_API, namespace, "gateways", name))
    if obj is None:
        return GatewayStatus(False)
    addresses = field_at(obj, "status", "addresses")
    first = addresses[0] if is_list(addresses) and addresses else None
    value = first.get("value") if is_dict(first) else None
    return GatewayStatus(True, _said(obj, "Programmed"), value if isinstance(value, str) else "")


def read_route(reader: Reader, route: dict[str, Any]) -> RouteStatus:
    """A model's route (its `route` output: namespace, httpRoute, inferencePool and its API)."""
    namespace, name, pool = str(route["namespace"]), str(route["httpRoute"]), str(route["inferencePool"])
    pool_api_version = str(route["inferencePoolApiVersion"])
    obj = _get(reader, _path(GATEWAY_API, namespace, "httproutes", name))
    pool_obj = _get(reader, _path(pool_api_version, namespace, "inferencepools", pool))
    parent, pool_parent = _first_parent(obj), _first_parent(pool_obj)
    return RouteStatus(
        obj is not None,
        _said({"status": parent}, "Accepted"),
        _said({"status": parent}, "ResolvedRefs"),
        pool_obj is not None,
        _said({"status": pool_parent}, "Accepted"),
    )


def _first_parent(obj: object) -> object:
    """The status of an object's first parent (a route's Gateway; a pool's Gateway)."""
    parents = field_at(obj, "status", "parents")
    first: object = parents[0] if is_list(parents) and parents else None
    return first if is_dict(first) else {}


def read_autoscaler(reader: Reader, namespace: str, name: str) -> AutoscalerStatus:
    """The ScaledObject of InferenceSet `name` and KEDA's HPA for it; what the credentials may not
    read is named in `unreadable`."""
    unreadable: list[str] = []

    def look(path: str, what: str) -> dict[str, Any] | None:
        try:
            return _get(reader, path)
        except KubeApiError as err:
            if err.status == 403:
                unreadable.append(what)
                return None
            raise

    scaled = look(_path(SCALED_OBJECT_API, namespace, "scaledobjects", name), "scaledobjects.keda.sh")
    hpa = look(
        _path("autoscaling/v2", namespace, "horizontalpodautoscalers", HPA_PREFIX + name), "horizontalpodautoscalers"
    )
    current, desired = field_at(hpa, "status", "currentReplicas"), field_at(hpa, "status", "desiredReplicas")
    return AutoscalerStatus(
        scaled is not None,
        _said(scaled, "Ready"),
        _said(scaled, "Active"),
        current if isinstance(current, int) else None,
        desired if isinstance(desired, int) else None,
        tuple(unreadable),
    )
