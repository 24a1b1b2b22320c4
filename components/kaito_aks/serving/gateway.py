"""One OpenAI-compatible gateway for a stack's models, with authentication at its door.

Istio serves the Gateway (with its gateway extension for InferencePool backends on), GAIE's
body-based router copies each request's `model` into a header that each model's HTTPRoute
matches (the routes are the models' own: KaitoModelArgs.gateway), and Authorino, Istio's
external authorizer, admits a request with one of the API keys (each a Kubernetes Secret made
from a Pulumi secret) or an Entra ID token of the tenant and audiences given, before the router
reads any body; Envoy answers `GET /v1/models`, an unknown model (404 model_not_found) and a
request without one itself (serving/edges.py). Every piece from its pinned release
(catalog/serving_charts.yaml); any of them may be there already (`existing`)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import field
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import catalog
from kaito_aks.capacity import Capacity, PodSet, pods_of, with_requests
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.cluster.access import provider_problems
from kaito_aks.cluster.kubernetes_object import KubernetesObject
from kaito_aks.operators.helm import ChartRelease, pinned_release
from kaito_aks.options import child_options, component_type
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.pod_security import pod_security_labels
from kaito_aks.problems import Problem
from kaito_aks.schema import DNS_LABEL, SECRET_SHOWN, Check, Input, Matches, MaxItems, Secret, args_class
from kaito_aks.serving.edges import body_router_destination, body_router_filter, edges_filter
from kaito_aks.serving.route import GATEWAY_API
from kaito_aks.validation import checked_args
from kaito_aks.vocabulary import GATEWAY_NAME_LABEL, Exposure, Installed

TYPE = "kaito-aks:index:InferenceGateway"
FORMER_TYPES: tuple[str, ...] = ()  # (new in 0.4.0: no former type to alias)
AUTHORINO_API = "operator.authorino.kuadrant.io/v1beta1"
AUTH_CONFIG_API = "authorino.kuadrant.io/v1beta3"
AUTHORIZATION_POLICY_API = "security.istio.io/v1"
# The name istiod's meshConfig gives Authorino as an ext_authz provider; the AuthorizationPolicy uses it.
AUTH_PROVIDER = "kaito-aks-authorino"
AUTHORINO = "authorino"  # the Authorino instance in the gateway's namespace
API_KEY_LABEL = "kaito-aks.io/gateway-api-key"  # on the key Secrets, naming their gateway
INSTALL_TIMEOUT_SECONDS = 600
# Azure's load balancer probes a port Istio marks appProtocol http with an HTTP GET of "/", which
# the gateway answers 404: probe TCP instead (istio.io/latest/docs/setup/platform-setup/azure/).
AZURE_INTERNAL = {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}
MIN_KEY_CHARACTERS = 32
GUID = Matches(
    r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", "a GUID, e.g. 00000000-0000-0000-0000-000000000000"
)


def _cidr(value: str) -> str | None:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return f"{value!r} is not an address range (CIDR), e.g. 203.0.113.0/24"
    return None


def _long_enough(value: str) -> str | None:
    if value == SECRET_SHOWN:
        return None  # a secret its reader could not decrypt (a stack file read without the engine)
    if len(value) < MIN_KEY_CHARACTERS:
        return f"is {len(value)} characters; an API key is at least {MIN_KEY_CHARACTERS} (e.g. `openssl rand -hex 32`)"
    return None


CIDR = Check(_cidr)
KEY = Check(_long_enough, shows_value=False)


@args_class
class GatewayEntraArgs:
    """Entra ID (Azure AD) access tokens accepted at the gateway: signed by Entra, issued by
    `tenant_id` (v1 or v2 tokens), for one of `audiences`."""

    tenant_id: Annotated[str, GUID]
    """The directory (tenant) id whose tokens are accepted."""
    audiences: Annotated[list[str], MaxItems(20)]
    """The token audiences accepted (the `aud` claim: an app registration's Application ID URI or
    client id, e.g. api://kaito-gateway); at least one."""


@args_class
class GatewayTlsArgs:
    """A certificate the gateway serves HTTPS with (then it listens on 443 only)."""

    certificate: Secret[Input[str]]
    """The certificate chain, PEM (kept secret like the key)."""
    key: Secret[Input[str]]
    """The private key, PEM (kept secret)."""


@args_class
class InferenceGatewayArgs:
    """One gateway for the models of `model_namespaces`: Istio with KAITO's gateway extension,
    body-based routing by `model`, and authentication (API keys, Entra ID tokens, or both)."""

    model_namespaces: Annotated[list[Annotated[str, DNS_LABEL]], MaxItems(100)]
    """The namespaces of the models it routes to (their HTTPRoutes attach from there); at least one."""
    name: Annotated[str, DNS_LABEL] = "kaito-gateway"
    """The Gateway's name (Istio names its Service <name>-istio)."""
    namespace: Annotated[str, DNS_LABEL] = "kaito-gateway"
    """Its namespace, created here: the Gateway, its pods, the body-based router, Authorino and the keys."""
    exposure: Exposure = "internal"
    """internal: an Azure internal load balancer (reached from the VNet); public: an Azure public load
    balancer, from `source_ranges` only, with `tls`; cluster: a ClusterIP Service (inside the
    cluster, or `kubectl port-forward`)."""
    source_ranges: Annotated[list[Annotated[str, CIDR]], MaxItems(200)] | None = None
    """With exposure public: the address ranges (CIDR) allowed to reach it."""
    tls: GatewayTlsArgs | None = None
    """Serve HTTPS on 443 with this certificate; default: HTTP on 80 (required with exposure public)."""
    api_keys: dict[Annotated[str, DNS_LABEL], Annotated[Secret[Input[str]], KEY]] = field(
        default_factory=dict[str, Any]
    )
    """API keys by name (kept secret; each becomes a Secret Authorino reads): clients send
    `Authorization: Bearer <key>`. Rotate a key by changing its value; add or remove names freely."""
    entra: GatewayEntraArgs | None = None
    """Accept Entra ID access tokens as well (or instead); default: none."""
    allow_unauthenticated: bool = False
    """Serve without authentication (anyone who reaches the gateway may use every model): only
    with neither `api_keys` nor `entra`, and warned."""
    gateway_api_crds: Installed = "install"
    """The Gateway API CRDs: install (the pinned release's standard-install.yaml) or existing."""
    istio: Installed = "install"
    """Istio (charts base and istiod): install, or existing (then istiod must run with
    ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true and, with authentication, list Authorino as the
    ext_authz provider `kaito-aks-authorino`: `mesh_config` output)."""
    authorino: Installed = "install"
    """The Authorino operator: install, or existing (its CRDs and operator run already)."""
    body_based_routing: Installed = "install"
    """GAIE's body-based router in the gateway's namespace: install (wired into the gateway after
    authentication), or existing (wired by whoever installed it)."""
    models: Annotated[list[str], MaxItems(1000)] = field(default_factory=list[str])
    """The model ids `GET /v1/models` lists: every `model` value the gateway routes (each routed
    model's served id and its adapters'; the stack fills it in). Default: none (an empty list)."""


def inference_gateway_problems(args: InferenceGatewayArgs) -> list[Problem]:
    return list(_auth(args)) + list(_exposure(args))


def _auth(args: InferenceGatewayArgs) -> Iterator[Problem]:
    authenticated = bool(args.api_keys) or args.entra is not None
    if not authenticated and not args.allow_unauthenticated:
        yield Problem.at(
            "api_keys",
            "a gateway without authentication serves every model to anyone who reaches it: give `api_keys` or `entra` "
            "(or `allow_unauthenticated`, which is warned)",
            "gateway-auth",
        )
    if authenticated and args.allow_unauthenticated:
        yield Problem.at(
            "allow_unauthenticated",
            "contradicts `api_keys` / `entra`, which require authentication: remove it",
            "gateway-auth",
        )
    if args.entra is not None and not args.entra.audiences:
        yield Problem.at(
            ("entra", "audiences"), "give at least one audience (the aud claim a token must carry)", "gateway-auth"
        )
    if not args.model_namespaces:
        yield Problem.at("model_namespaces", "give at least one namespace of models to route to", "gateway-routes")


def _exposure(args: InferenceGatewayArgs) -> Iterator[Problem]:
    if args.exposure == "public":
        if not args.source_ranges:
            yield Problem.at(
                "source_ranges",
                "required with `exposure` public: the address ranges allowed to reach the gateway (e.g. your office's)",
                "gateway-exposure",
            )
        if args.tls is None:
            yield Problem.at(
                "tls",
                "required with `exposure` public: API keys and tokens would cross the internet in clear text",
                "gateway-exposure",
            )
    elif args.source_ranges is not None:
        yield Problem.at(
            "source_ranges",
            f"only with `exposure` public (an {args.exposure} gateway takes no source ranges); remove it",
            "gateway-exposure",
        )


def inference_gateway_warnings(args: InferenceGatewayArgs) -> list[Problem]:
    """What the gateway's args allow but ask to be said."""
    found: list[Problem] = []
    if args.allow_unauthenticated:
        found.append(
            Problem.at(
                "allow_unauthenticated",
                "the gateway authenticates nobody: anyone who reaches it may use every model",
                "gateway-unauthenticated",
            )
        )
    if args.exposure == "public":
        ranges = ", ".join(args.source_ranges or [])
        found.append(
            Problem.at(
                "exposure",
                f"the gateway is reachable from the internet through an Azure public load balancer (from {ranges})",
                "gateway-public",
            )
        )
    if args.body_based_routing == "existing":
        found.append(
            Problem.at(
                "body_based_routing",
                "an existing body-based router is wired by whoever installed it: GAIE's chart with provider.name istio "
                "runs it before authentication, reading every request's body; install it with provider.name none and "
                "`body_based_routing: install` wires it after authentication",
                "gateway-existing-router",
            )
        )
    if args.istio == "existing" and (args.api_keys or args.entra is not None):
        found.append(
            Problem.at(
                "istio",
                f"an existing Istio must list Authorino as ext_authz provider {AUTH_PROVIDER} (the `mesh_config` output) "
                "or every request is refused; and run istiod with ENABLE_GATEWAY_API_INFERENCE_EXTENSION=true",
                "gateway-existing-istio",
            )
        )
    return found


# ---------------------------------------------------------------- the objects, as data


def authorino_service(namespace: str) -> str:
    """Where Istio sends ext_authz checks: the Authorino instance's authorization Service."""
    return f"{AUTHORINO}-authorino-authorization.{namespace}.svc.cluster.local"


def mesh_config(args: InferenceGatewayArgs) -> dict[str, Any]:
    """istiod's meshConfig for the gateway's authentication (none without it)."""
    if not (args.api_keys or args.entra is not None):
        return {}
    port = catalog.serving_charts().authorino.authorization_port
    return {
        "extensionProviders": [
            {"name": AUTH_PROVIDER, "envoyExtAuthzGrpc": {"service": authorino_service(args.namespace), "port": port}}
        ]
    }


def istiod_values(args: InferenceGatewayArgs) -> dict[str, Any]:
    """istiod: InferencePool backends on, Authorino as ext_authz provider, and the gateway pods
    it makes under the restricted Pod Security profile's seccomp rule (istio@1.29.6:
    manifests/charts/istio-control/istio-discovery/files/kube-gateway.yaml:80-82)."""
    istio = catalog.serving_charts().istio
    values: dict[str, Any] = {
        # (KAITO's guide sets pilot.env: the chart copies pilot.* to the top, zzy_descope_legacy.yaml)
        "env": {istio.inference_env: "true"},
        "gateways": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    mesh = mesh_config(args)
    if mesh:
        values["meshConfig"] = mesh
    return values


def default_requests() -> PodSet:
    """What a container of the gateway's namespace that requests nothing is given (its
    LimitRange): the gateway's own Envoy's requests. The body-based router's chart and the
    Authorino instance the operator makes set none (catalog/pod_requests.yaml), and a pod
    without requests runs BestEffort, evicted first and counted nowhere."""
    istio = catalog.serving_charts().istio
    return pods_of(pod_requests().pods.gateway_pods[istio.version])[0]


def limit_range_manifest(args: InferenceGatewayArgs) -> dict[str, Any]:
    proxy = default_requests()
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": f"{args.name}-default-requests", "namespace": args.namespace},
        "spec": {
            "limits": [
                {"type": "Container", "defaultRequest": {"cpu": f"{proxy.cpu_m}m", "memory": f"{proxy.memory_mi}Mi"}}
            ]
        },
    }


def inference_gateway_capacity(args: InferenceGatewayArgs) -> Capacity:
    """What the gateway runs on the non-GPU nodes, for the capacity budget: istiod (at its values'
    requests) when it installs Istio, the Gateway's Envoy, the body-based router and Authorino
    (operator and instance) when it installs them."""
    pins = catalog.serving_charts()
    data = pod_requests().pods
    istio = f"Istio {pins.istio.version}"
    pods = pods_of(data.gateway_pods[pins.istio.version], note=f"gateway {args.name}")
    if args.istio == "install":
        pods += with_requests(pods_of(data.istio[pins.istio.version], note=istio), istiod_values(args), "resources")
    if args.body_based_routing == "install":
        pods += pods_of(data.body_based_routing[pins.body_based_routing.version], note=f"gateway {args.name}")
    if args.api_keys or args.entra is not None:
        authorino = pins.authorino.version
        pods += pods_of(data.authorino_instance[authorino], note=f"gateway {args.name}")
        if args.authorino == "install":
            pods += pods_of(data.authorino[authorino])
    return Capacity(pods=pods)


def service_overlay(args: InferenceGatewayArgs) -> dict[str, str] | None:
    """Istio's overlay of the Service it makes for the Gateway (a ConfigMap the Gateway's
    infrastructure.parametersRef names; istio@1.29.6:pilot/pkg/config/kube/gateway/
    deploymentcontroller.go:730-745, 798-840): a ClusterIP Service, or a public load balancer's
    source ranges. None: the class default (a LoadBalancer)."""
    if args.exposure == "cluster":
        return {"service": "spec:\n  type: ClusterIP\n"}
    if args.exposure == "public":
        ranges = "".join(f"  - {r}\n" for r in args.source_ranges or [])
        return {"service": f"spec:\n  loadBalancerSourceRanges:\n{ranges}"}
    return None


def listener(args: InferenceGatewayArgs) -> dict[str, Any]:
    """HTTP on 80, or HTTPS on 443 with the TLS Secret; routes attach from the model namespaces."""
    routes = {
        "namespaces": {
            "from": "Selector",
            "selector": {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "In",
                        "values": sorted(set(args.model_namespaces)),
                    }
                ]
            },
        }
    }
    if args.tls is None:
        return {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": routes}
    return {
        "name": "https",
        "port": 443,
        "protocol": "HTTPS",
        "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": tls_secret(args)}]},
        "allowedRoutes": routes,
    }


def tls_secret(args: InferenceGatewayArgs) -> str:
    return f"{args.name}-tls"


def overlay_config_map(args: InferenceGatewayArgs) -> str:
    return f"{args.name}-service"


def gateway_manifest(args: InferenceGatewayArgs) -> dict[str, Any]:
    """The Gateway; `pulumi up` waits until Istio reports it Programmed (with an address)."""
    infrastructure: dict[str, Any] = {}
    port = 443 if args.tls is not None else 80
    if args.exposure in ("internal", "public"):
        probes = {f"service.beta.kubernetes.io/port_{p}_health-probe_protocol": "tcp" for p in (port, 15021)}
        infrastructure["annotations"] = {**(AZURE_INTERNAL if args.exposure == "internal" else {}), **probes}
    if service_overlay(args) is not None:
        infrastructure["parametersRef"] = {"group": "", "kind": "ConfigMap", "name": overlay_config_map(args)}
    spec: dict[str, Any] = {
        "gatewayClassName": catalog.serving_charts().istio.gateway_class,
        "listeners": [listener(args)],
    }
    if infrastructure:
        spec["infrastructure"] = infrastructure
    return {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": {
            "name": args.name,
            "namespace": args.namespace,
            "annotations": {"pulumi.com/waitFor": "condition=Programmed"},
        },
        "spec": spec,
    }


def key_secret(args: InferenceGatewayArgs, key_name: str) -> str:
    return f"{args.name}-key-{key_name}"


def key_labels(args: InferenceGatewayArgs) -> dict[str, str]:
    """What Authorino's instance watches (its default secret selector) and the gateway's AuthConfig selects."""
    pins = catalog.serving_charts().authorino
    return {pins.api_key_label: pins.api_key_label_value, API_KEY_LABEL: args.name}


def auth_config(args: InferenceGatewayArgs) -> dict[str, Any]:
    """Authorino's AuthConfig: an API key from one of the gateway's key Secrets, or an Entra ID
    token of the tenant and an audience given (Entra's signing keys are shared by every tenant,
    so the issuer, tenant and audience are checked as well). Looked up by host: "*" for any."""
    authentication: dict[str, Any] = {}
    bearer = {"authorizationHeader": {"prefix": "Bearer"}}
    if args.api_keys:
        authentication["api-keys"] = {
            "apiKey": {"selector": {"matchLabels": {API_KEY_LABEL: args.name}}},
            "credentials": bearer,
        }
    spec: dict[str, Any] = {"hosts": ["*"], "authentication": authentication}
    if args.entra is not None:
        tenant = args.entra.tenant_id
        authentication["entra"] = {
            "jwt": {"jwksUrl": f"https://login.microsoftonline.com/{tenant}/discovery/v2.0/keys"},
            "credentials": bearer,
        }
        spec["authorization"] = {
            "entra-tenant-and-audience": {
                # JWT identities only: an API key's identity is its Secret, which has no issuer
                "when": [{"selector": "auth.identity.iss", "operator": "neq", "value": ""}],
                "patternMatching": {
                    "patterns": [
                        {"selector": "auth.identity.tid", "operator": "eq", "value": tenant},
                        {
                            "any": [
                                {"selector": "auth.identity.iss", "operator": "eq", "value": issuer}
                                for issuer in entra_issuers(tenant)
                            ]
                        },
                        {
                            "any": [
                                {"selector": "auth.identity.aud", "operator": "eq", "value": audience}
                                for audience in args.entra.audiences
                            ]
                        },
                    ]
                },
            }
        }
    return {
        "apiVersion": AUTH_CONFIG_API,
        "kind": "AuthConfig",
        "metadata": {"name": args.name, "namespace": args.namespace},
        "spec": spec,
    }


def entra_issuers(tenant: str) -> list[str]:
    """The issuers of a tenant's access tokens: v1 (what `az account get-access-token` gives by
    default) and v2."""
    return [f"https://sts.windows.net/{tenant}/", f"https://login.microsoftonline.com/{tenant}/v2.0"]


def authorization_policy(args: InferenceGatewayArgs) -> dict[str, Any]:
    """Every request to the gateway's pods goes through Authorino first."""
    return {
        "apiVersion": AUTHORIZATION_POLICY_API,
        "kind": "AuthorizationPolicy",
        "metadata": {"name": f"{args.name}-ext-authz", "namespace": args.namespace},
        "spec": {
            "selector": {"matchLabels": {GATEWAY_NAME_LABEL: args.name}},
            "action": "CUSTOM",
            "provider": {"name": AUTH_PROVIDER},
            "rules": [{}],
        },
    }


def authorino_manifest(args: InferenceGatewayArgs) -> dict[str, Any]:
    """An Authorino instance for the gateway's namespace alone (its keys and AuthConfig), gRPC in
    plaintext inside the cluster; `pulumi up` waits until the operator reports it Ready
    (Kuadrant/authorino-operator@v0.26.0:pkg/reconcilers/status.go:56)."""
    return {
        "apiVersion": AUTHORINO_API,
        "kind": "Authorino",
        "metadata": {
            "name": AUTHORINO,
            "namespace": args.namespace,
            "annotations": {"pulumi.com/waitFor": "condition=Ready"},
        },
        "spec": {
            "clusterWide": False,
            "listener": {"tls": {"enabled": False}},
            "oidcServer": {"tls": {"enabled": False}},
        },
    }


# ---------------------------------------------------------------- the component


class InferenceGateway(pulumi.ComponentResource):
    """One OpenAI-compatible gateway for many models, with authentication. Deploy it through the
    cluster's Kubernetes provider; give each model a `gateway` naming this one's `gateway_name` and
    `namespace` (KAITO 0.12, its feature gate gatewayAPIInferenceExtension on: KaitoOperator
    `feature_gates`), and call `url` with `Authorization: Bearer <key or token>`."""

    url: pulumi.Output[str]
    """The gateway's URL (http:// or https:// and the address Istio reports): POST
    <url>/v1/chat/completions with the model's id in `model`."""
    gateway_name: pulumi.Output[str]
    """The Gateway's name."""
    namespace: pulumi.Output[str]
    """The Gateway's namespace."""
    service: pulumi.Output[str]
    """The Service Istio makes for the Gateway (<name>-istio), e.g. for kubectl port-forward."""
    authentication: pulumi.Output[dict[str, Any]]
    """How clients authenticate: the API keys' names (never their values), the Entra tenant and audiences."""
    mesh_config: pulumi.Output[dict[str, Any]]
    """The istiod meshConfig the gateway's authentication needs (set by this component when it installs Istio)."""
    capacity: Capacity
    """What it runs on the non-GPU nodes, for the capacity budget (`deploy_models`' `capacity`)."""

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "InferenceGateway",
            name,
            InferenceGatewayArgs,
            args,
            inference_gateway_problems,
            also=provider_problems(opts),
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        for warning in inference_gateway_warnings(checked):
            pulumi.log.warn(warning.under("args").text(), resource=self)
        self._args = args = checked
        self.capacity = inference_gateway_capacity(args)
        child = child_options(self, opts)
        namespace = k8s.core.v1.Namespace(
            f"{name}/namespace",
            # (Istio's gateway pods and Authorino pass Pod Security's baseline level)
            metadata={
                "name": args.namespace,
                "labels": {"kaito-aks.io/gateway": args.name, **pod_security_labels("baseline")},
            },
            opts=child,
        )
        # before any pod of the namespace: a container that requests nothing gets the gateway's requests
        limits = limit_range_manifest(args)
        defaults = k8s.core.v1.LimitRange(
            f"{name}/default-requests",
            metadata=limits["metadata"],
            spec=limits["spec"],
            opts=child_options(self, opts, depends_on=[namespace]),
        )
        in_namespace = child_options(self, opts, depends_on=[namespace, defaults])
        control_plane = self._control_plane(name, args, child, defaults)
        auth = self._authentication(name, args, in_namespace, control_plane)
        gateway = self._gateway(name, args, in_namespace, [*control_plane, *auth])
        self.gateway_name = gateway.output("metadata").apply(lambda m: str(m["name"]))
        self.namespace = gateway.output("metadata").apply(lambda m: str(m["namespace"]))
        self.service = pulumi.Output.from_input(f"{args.name}-istio")
        scheme = "https" if args.tls is not None else "http"
        self.url = gateway.output("status").apply(lambda s: gateway_url(scheme, s))
        self.authentication = pulumi.Output.from_input(
            {
                "apiKeys": sorted(args.api_keys),
                "entra": {"tenantId": args.entra.tenant_id, "audiences": list(args.entra.audiences)}
                if args.entra is not None
                else None,
                "unauthenticated": args.allow_unauthenticated,
            }
        )
        self.mesh_config = pulumi.Output.from_input(mesh_config(args))
        self.register_outputs(
            {
                "url": self.url,
                "gatewayName": self.gateway_name,
                "namespace": self.namespace,
                "service": self.service,
                "authentication": self.authentication,
                "meshConfig": self.mesh_config,
            }
        )

    def _control_plane(
        self, name: str, args: InferenceGatewayArgs, child: pulumi.ResourceOptions, namespace: pulumi.Resource
    ) -> list[pulumi.Resource]:
        """The Gateway API CRDs, Istio (base, then istiod), and the body-based router in the
        gateway's namespace, its chart without Istio wiring (provider.name none): its EnvoyFilter
        (after authentication) and DestinationRule are written here, before the release (they
        need Istio's CRDs; on a stack whose release rendered GAIE's own, those go when it is
        upgraded, after these exist)."""
        pins = catalog.serving_charts()
        made: list[pulumi.Resource] = []
        if args.gateway_api_crds == "install":
            made.append(k8s.yaml.v2.ConfigFile(f"{name}/gateway-api-crds", file=pins.gateway_api_crds.url, opts=child))
        if args.istio == "install":
            base = pinned_release(
                f"{name}/istio-base",
                ChartRelease.pinned(pins.istio.chart("base"), pins.istio.namespace, {}),
                INSTALL_TIMEOUT_SECONDS,
                child,
            )
            istiod = pinned_release(
                f"{name}/istiod",
                ChartRelease.pinned(pins.istio.chart("istiod"), pins.istio.namespace, istiod_values(args)),
                INSTALL_TIMEOUT_SECONDS,
                pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[base, *made])),
            )
            made += [base, istiod]
        if args.body_based_routing == "install":
            after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace, *made]))
            wiring = [
                KubernetesObject(
                    f"{name}/body-based-router-filter", body_router_filter(args.name, args.namespace), opts=after
                ),
                KubernetesObject(
                    f"{name}/body-based-router-tls", body_router_destination(args.name, args.namespace), opts=after
                ),
            ]
            made.append(
                pinned_release(
                    f"{name}/body-based-router",
                    ChartRelease.pinned(pins.body_based_routing, args.namespace, {"provider": {"name": "none"}}),
                    INSTALL_TIMEOUT_SECONDS,
                    pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace, *made, *wiring])),
                )
            )
            made += wiring
        return made

    def _authentication(
        self,
        name: str,
        args: InferenceGatewayArgs,
        in_namespace: pulumi.ResourceOptions,
        control_plane: list[pulumi.Resource],
    ) -> list[pulumi.Resource]:
        """Authorino for the namespace, the key Secrets, the AuthConfig, and the policy that sends
        every request of the gateway's pods through it: all before the Gateway serves anything."""
        if not (args.api_keys or args.entra is not None):
            return []
        made: list[pulumi.Resource] = []
        after = in_namespace
        if args.authorino == "install":
            pins = catalog.serving_charts().authorino
            operator = pinned_release(
                f"{name}/authorino-operator",
                ChartRelease.pinned(pins, args.namespace, {}),
                INSTALL_TIMEOUT_SECONDS,
                in_namespace,
            )
            made.append(operator)
            after = pulumi.ResourceOptions.merge(in_namespace, pulumi.ResourceOptions(depends_on=[operator]))
        authorino = KubernetesObject(f"{name}/authorino", authorino_manifest(args), opts=after)
        keys = [
            k8s.core.v1.Secret(
                f"{name}/key-{key_name}",
                metadata={"name": key_secret(args, key_name), "namespace": args.namespace, "labels": key_labels(args)},
                type="Opaque",
                string_data={catalog.serving_charts().authorino.api_key_data_key: pulumi.Output.secret(value)},
                opts=in_namespace,
            )
            for key_name, value in sorted(args.api_keys.items())
        ]
        config = KubernetesObject(
            f"{name}/auth-config",
            auth_config(args),
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=[authorino, *keys])),
        )
        policy = KubernetesObject(
            f"{name}/ext-authz",
            authorization_policy(args),
            opts=pulumi.ResourceOptions.merge(
                in_namespace, pulumi.ResourceOptions(depends_on=[config, *control_plane])
            ),
        )
        return [*made, authorino, *keys, config, policy]

    def _gateway(
        self, name: str, args: InferenceGatewayArgs, in_namespace: pulumi.ResourceOptions, after: list[pulumi.Resource]
    ) -> KubernetesObject:
        made: list[pulumi.Resource] = [
            KubernetesObject(
                f"{name}/openai-edges",
                edges_filter(args.name, args.namespace, args.models),
                opts=pulumi.ResourceOptions.merge(in_namespace, pulumi.ResourceOptions(depends_on=after)),
            )
        ]
        overlay = service_overlay(args)
        if overlay is not None:
            made.append(
                k8s.core.v1.ConfigMap(
                    f"{name}/service-overlay",
                    metadata={"name": overlay_config_map(args), "namespace": args.namespace},
                    data=overlay,
                    opts=in_namespace,
                )
            )
        if args.tls is not None:
            made.append(
                k8s.core.v1.Secret(
                    f"{name}/tls",
                    metadata={"name": tls_secret(args), "namespace": args.namespace},
                    type="kubernetes.io/tls",
                    string_data={
                        "tls.crt": pulumi.Output.secret(args.tls.certificate),
                        "tls.key": pulumi.Output.secret(args.tls.key),
                    },
                    opts=in_namespace,
                )
            )
        return KubernetesObject(
            f"{name}/gateway",
            gateway_manifest(args),
            opts=pulumi.ResourceOptions.merge(in_namespace, pulumi.ResourceOptions(depends_on=[*after, *made])),
            outputs=("status",),
        )


def gateway_url(scheme: str, status: object) -> str:
    """The URL from the address Istio reports on the Gateway ('' before it has one)."""
    addresses = status.get("addresses") if is_dict(status) else None
    first = addresses[0] if is_list(addresses) and addresses else None
    value = first.get("value") if is_dict(first) else None
    if not isinstance(value, str) or not value:
        return ""
    host = f"[{value}]" if ":" in value and re.fullmatch(r"[0-9a-fA-F:]+", value) else value
    return f"{scheme}://{host}"
