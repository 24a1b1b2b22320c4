"""The gateway's side of the chain: the endpoint picker KAITO runs beside each InferencePool, the
pool, the HTTPRoute and its Gateway, the gateway's AuthConfig, and the model's ScaledObject."""

from __future__ import annotations

from typing import Any

from kaito_aks.diagnose.chain import Finding
from kaito_aks.diagnose.registry import detector
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.waits.answers import conditions_of, field_at, text_at


def condition(obj: object, kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions_of(obj) if c.get("type") == kind), None)


def _said(c: dict[str, Any]) -> str:
    why = ": ".join(str(x) for x in (c.get("reason"), c.get("message")) if x)
    return f"{c.get('type')}={c.get('status')}" + (f" ({why})" if why else "")


def first_parent(obj: object) -> dict[str, Any]:
    parents = field_at(obj, "status", "parents")
    first: object = parents[0] if is_list(parents) and parents else None
    return {"status": first} if is_dict(first) else {}


@detector("picker-not-made", "picker")
def picker_not_made(pool: str, release: dict[str, Any] | None) -> Finding:
    """KAITO 0.12 makes a routed model's InferencePool and endpoint picker through a Flux
    HelmRelease named after the pool (GenerateInferencePoolHelmRelease,
    pkg/workspace/manifests/manifests.go:420-490@v0.12.0), from the llm-d-router-gateway chart it
    pulls from ghcr.io (consts.go InferencePoolChartURL): its Ready condition says why it is not
    installed (an air-gapped cluster cannot pull the chart: kaito#2218)."""
    ready = condition(release or {}, "Ready")
    if ready is not None and ready.get("status") == "False":
        return Finding(
            "picker-not-made",
            f"HelmRelease {pool}: {_said(ready)}",
            "Flux cannot install the model's InferencePool and endpoint picker",
            "read the HelmRelease and its OCIRepository (kubectl describe helmrelease,ocirepository "
            f"{pool}); the nodes must reach ghcr.io and mcr.microsoft.com",
        )
    return Finding(
        "picker-not-made",
        f"no InferencePool {pool} and no endpoint picker yet",
        "KAITO has not made the model's pool and picker yet (it does through Flux once the InferenceSet exists)",
        "wait; if it stays, check KAITO's gatewayAPIInferenceExtension gate and its Flux controllers "
        "(kubectl -n kaito-workspace get pods)",
        broken=False,
    )


@detector("pool-not-accepted", "picker")
def pool_not_accepted(pool: dict[str, Any]) -> Finding | None:
    """The InferencePool's parent (the Gateway) does not accept it or cannot resolve its endpoint
    picker: status.parents[].conditions Accepted False (NotSupportedByParent, HTTPRouteNotAccepted)
    or ResolvedRefs False (InvalidExtensionRef) (gateway-api-inference-extension
    api/v1/inferencepool_types.go:266-308@v1.3.0)."""
    parent = first_parent(pool)
    name = text_at(pool, "metadata", "name") or ""
    for kind in ("Accepted", "ResolvedRefs"):
        c = condition(parent, kind)
        if c is not None and c.get("status") == "False":
            extension = kind == "ResolvedRefs"
            return Finding(
                "pool-not-accepted",
                _said(c),
                "the gateway cannot reach the pool's endpoint picker"
                if extension
                else "the gateway does not accept the pool",
                "check that the picker's Service exists (kubectl get svc -n <namespace>) and istiod runs with "
                "ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true",
                where=f"InferencePool {name}",
            )
    return None


@detector("gateway-not-programmed", "route")
def gateway_not_programmed(gateway: dict[str, Any] | None, namespace: str, name: str) -> Finding | None:
    """The Gateway the routes hang from is missing or not Programmed (Istio makes its Deployment
    and Service: gateway-api apis/v1/gateway_types.go:1118@v1.4.1)."""
    if gateway is None:
        return Finding(
            "gateway-not-programmed",
            f"Gateway {namespace}/{name} does not exist",
            "the gateway the models are routed through is missing",
            "run `pulumi up`",
        )
    programmed = condition(gateway, "Programmed")
    if programmed is not None and programmed.get("status") == "True":
        return None
    return Finding(
        "gateway-not-programmed",
        _said(programmed) if programmed is not None else "no Programmed condition yet",
        "Istio has not programmed the gateway (its pods or load balancer are not ready)",
        f"kubectl -n {namespace} describe gateway {name}; kubectl -n {namespace} get pods,svc; is istiod running?",
        broken=programmed is not None and programmed.get("status") == "False",
        where=f"Gateway {namespace}/{name}",
    )


@detector("route-not-accepted", "route")
def route_not_accepted(route: dict[str, Any]) -> Finding | None:
    """The HTTPRoute's parent Gateway does not accept it: status.parents[].conditions Accepted False
    with NotAllowedByListeners (the listener's allowedRoutes do not admit its namespace),
    NoMatchingParent, NoMatchingListenerHostname, UnsupportedValue (gateway-api
    apis/v1/shared_types.go:355-387@v1.4.1); Pending while none has looked."""
    c = condition(first_parent(route), "Accepted")
    name = text_at(route, "metadata", "name") or ""
    if c is None:
        return Finding(
            "route-not-accepted",
            "no controller has reported on the route yet",
            "the gateway's controller (istiod) has not looked at the route",
            "is istiod running, and is the Gateway's class its (gatewayClassName istio)?",
            broken=False,
            where=f"HTTPRoute {name}",
        )
    if c.get("status") == "True":
        return None
    reason = str(c.get("reason") or "")
    fix = {
        "NotAllowedByListeners": "let the Gateway's listener admit the model's namespace (the gateway's allowedRoutes: "
        "the stack lists its models' namespaces; run `pulumi up`)",
        "NoMatchingParent": "check the route's parentRef (Gateway name, namespace, sectionName)",
    }.get(reason, f"kubectl describe httproute {name}")
    return Finding(
        "route-not-accepted",
        _said(c),
        "the gateway does not accept the model's route, so no request reaches the model",
        fix,
        broken=reason != "Pending",
        where=f"HTTPRoute {name}",
    )


@detector("route-refs-unresolved", "route")
def route_refs_unresolved(route: dict[str, Any]) -> Finding | None:
    """The HTTPRoute's backend cannot be resolved: ResolvedRefs False with BackendNotFound (the
    InferencePool is not there), InvalidKind (the gateway does not know InferencePool: istiod
    without ENABLE_GATEWAY_API_INFERENCE_EXTENSION, pilot/pkg/features/experimental.go:208@1.29.6)
    or RefNotPermitted (gateway-api apis/v1/shared_types.go:408-432@v1.4.1)."""
    c = condition(first_parent(route), "ResolvedRefs")
    if c is None or c.get("status") != "False":
        return None
    reason = str(c.get("reason") or "")
    name = text_at(route, "metadata", "name") or ""
    means, fix = {
        "BackendNotFound": (
            "the route's InferencePool does not exist yet",
            "wait for KAITO to make it (through Flux); see the endpoint picker link",
        ),
        "InvalidKind": (
            "the gateway does not understand InferencePool backends",
            "run istiod with ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true (the stack's istio install sets it)",
        ),
        "RefNotPermitted": (
            "a ReferenceGrant is missing for a backend in another namespace",
            "keep the route and pool in one namespace",
        ),
    }.get(reason, ("the gateway cannot resolve the route's backend", f"kubectl describe httproute {name}"))
    return Finding(
        "route-refs-unresolved", _said(c), means, fix, broken=reason != "BackendNotFound", where=f"HTTPRoute {name}"
    )


@detector("auth-not-ready", "auth")
def auth_not_ready(config: dict[str, Any] | None, namespace: str, name: str) -> Finding | None:
    """The gateway's AuthConfig (Authorino) is missing or not Ready: status.conditions Ready False
    with Invalid (the spec does not load), HostsNotLinked (another AuthConfig holds its host),
    CachingError, or Reconciling (authorino api/v1beta3/auth_config_types.go:67-77@v0.27.0,
    controllers/auth_config_controller.go:140-224@v0.27.0). Until it is Ready, Authorino denies
    every request the gateway sends it."""
    if config is None:
        return Finding(
            "auth-not-ready",
            f"AuthConfig {namespace}/{name} does not exist",
            "the gateway's authentication has no AuthConfig: Authorino denies every request",
            "run `pulumi up`",
        )
    ready = condition(config, "Ready")
    if ready is not None and ready.get("status") == "True":
        return None
    reason = str((ready or {}).get("reason") or "")
    fix = {
        "HostsNotLinked": 'another AuthConfig in the Authorino\'s namespace claims the same host ("*"): remove it',
        "Invalid": f"kubectl -n {namespace} describe authconfig {name}: fix what the message names",
    }.get(reason, f"is Authorino running? kubectl -n {namespace} get authorino,pods")
    return Finding(
        "auth-not-ready",
        _said(ready) if ready is not None else "no Ready condition yet (Authorino has not reconciled it)",
        "the gateway's AuthConfig is not ready: Authorino denies every request, so no model answers through the gateway",
        fix,
        broken=reason not in ("Reconciling", ""),
        where=f"AuthConfig {namespace}/{name}",
    )


@detector("scaler-not-ready", "autoscaler")
def scaler_not_ready(scaled: dict[str, Any] | None, name: str) -> Finding | None:
    """The model's ScaledObject (keda-kaito-scaler makes it, named after the InferenceSet) is
    missing, or KEDA cannot use it: Ready False ScaledObjectCheckFailed, TriggerError,
    ErrorGettingCurrentReplicas, Ready Unknown PartialTriggerError, or Fallback True
    FallbackExists (a trigger's metric cannot be read) (keda controllers/keda/scaledobject_controller.go:196-209@v2.20.2,
    pkg/scaling/executor/scale_scaledobjects.go:41-96@v2.20.2, pkg/fallback/fallback.go:95@v2.20.2,
    apis/keda/v1alpha1/condition_types.go:27-36@v2.20.2). Active False (ScalerNotActive) is only idle;
    Ready Unknown without a reason is how KEDA starts it (condition_types.go:141-142@v2.20.2)."""
    if scaled is None:
        return Finding(
            "scaler-not-ready",
            f"no ScaledObject {name}",
            "keda-kaito-scaler has not made the model's ScaledObject (it skips an InferenceSet whose annotations it "
            "does not accept, and says nothing)",
            "is keda-kaito-scaler running in KEDA's namespace? read its log",
            broken=False,
        )
    ready, fallback = condition(scaled, "Ready"), condition(scaled, "Fallback")
    if ready is not None and ready.get("status") in ("False", "Unknown") and ready.get("reason"):
        return Finding(
            "scaler-not-ready",
            _said(ready),
            "KEDA cannot scale the model: it cannot read the scaler's metric or the InferenceSet",
            "read the ScaledObject's events (kubectl describe scaledobject) and keda-kaito-scaler's log; the "
            "ClusterTriggerAuthentication's TLS Secrets must be in KEDA's namespace",
            where=f"ScaledObject {name}",
        )
    if fallback is not None and fallback.get("status") == "True":
        return Finding(
            "scaler-not-ready",
            _said(fallback),
            "a trigger's metric cannot be read: KEDA holds the fallback replica count",
            "read keda-kaito-scaler's log (it scrapes the model's pods)",
            where=f"ScaledObject {name}",
        )
    if ready is None or ready.get("status") != "True":
        return Finding(
            "scaler-not-ready",
            "no Ready condition yet" if ready is None else _said(ready),
            "KEDA has not reconciled the ScaledObject",
            "is KEDA's operator running?",
            broken=False,
            where=f"ScaledObject {name}",
        )
    return None
