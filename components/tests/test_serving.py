"""Serving the models as one service (kaito_aks/serving, kaito_aks/model/serving.py): every object
against the real CRD of its piece at the pinned release, the rules that refuse what KAITO or the
scaler cannot use (every problem at once, by arg), and what the components register: secrets
kept secret, the order authentication comes in, Pulumi leaving an autoscaled replica count alone."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest
import yaml

import upstream_facts
from kaito_aks import KaitoModel, KaitoModelArgs, catalog
from kaito_aks.azure.aks_cluster import AksCluster, AksClusterArgs
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigCluster, KubeconfigClusterArgs
from kaito_aks.model.component import check_model
from kaito_aks.model.plan import plan_model
from kaito_aks.model.serving import AUTO_PROVISIONED_NODES, auto_provisioned_budget, route_collisions
from kaito_aks.nodes import NodeGroup
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs, kaito_chart_values, kaito_operator_warnings
from kaito_aks.problems import InvalidArgsError
from kaito_aks.serving import dashboard as dash
from kaito_aks.serving.gateway import (
    GatewayEntraArgs,
    GatewayTlsArgs,
    InferenceGateway,
    InferenceGatewayArgs,
    auth_config,
    authorino_manifest,
    authorization_policy,
    gateway_manifest,
    gateway_url,
    inference_gateway_problems,
    inference_gateway_warnings,
    istiod_values,
)
from kaito_aks.serving.keda import KedaAutoscaling, KedaAutoscalingArgs, keda_autoscaling_problems
from kaito_aks.serving.metrics import service_monitor
from kaito_aks.serving.route import endpoint_picker_name
from kaito_aks.serving.spec import GatewayRefArgs, ModelAutoscaleArgs, ModelMetricsArgs
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, Secret, reveal, run
from kube_schema import crd_validator, unknown_value_paths

KEY = "k" * 40
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
PHI = {"kaito_version": "0.12.0", "name": "phi", "namespace": "llm", "model": "phi-4-mini-instruct"}
WAITS_OFF = {"wait_for_ready": False, "wait_for_gpu_nodes": False}
A100 = "Standard_NC24ads_A100_v4"


def model(**kw: Any) -> KaitoModelArgs:
    return KaitoModelArgs(**{**PHI, **kw})


def problems(**kw: Any) -> list[tuple[str, str]]:
    _, found = check_model(model(**kw))
    return [(p.text().split(":")[0], p.code) for p in found]


def messages(**kw: Any) -> str:
    return "\n".join(p.text() for p in check_model(model(**kw))[1])


def crd(project: str, name: str, version: str) -> Any:
    return crd_validator(upstream_facts.serving_crd(project, name), version)


# ---------------------------------------------------------------- every object against its real CRD


def gateway_args(**kw: Any) -> InferenceGatewayArgs:
    return InferenceGatewayArgs(**{"model_namespaces": ["llm"], "api_keys": {"ci": KEY}, **kw})


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"exposure": "cluster"},
        {"exposure": "public", "source_ranges": ["203.0.113.0/24"], "tls": GatewayTlsArgs(certificate="c", key="k")},
        {"entra": GatewayEntraArgs(tenant_id=TENANT, audiences=["api://kaito"])},
    ],
)
def test_the_gateways_objects_fit_the_gateway_api_istio_and_authorino_crds(kw: dict[str, Any]):
    args = gateway_args(**kw)
    assert inference_gateway_problems(args) == []
    assert crd("gateway-api", "gateways.gateway.networking.k8s.io", "v1")(gateway_manifest(args)) == []
    assert crd("istio-api", "authorizationpolicies.security.istio.io", "v1")(authorization_policy(args)) == []
    assert crd("authorino", "authconfigs.authorino.kuadrant.io", "v1beta3")(auth_config(args)) == []
    authorino = crd("authorino-operator", "authorinos.operator.authorino.kuadrant.io", "v1beta1")
    assert authorino(authorino_manifest(args)) == []


def test_a_models_route_endpoint_picker_rule_monitor_and_scaled_inferenceset_fit_their_crds():
    args = model(
        gateway=GatewayRefArgs(name="kaito-gateway", namespace="kaito-gateway"),
        autoscale=ModelAutoscaleArgs(max_replicas=4, metric="vllm:time_to_first_token_seconds", up_threshold=0.5),
        metrics=ModelMetricsArgs(labels={"release": "kube-prometheus-stack"}),
    )
    plan = plan_model(args)
    assert plan.route is not None
    assert crd("gateway-api", "httproutes.gateway.networking.k8s.io", "v1")(plan.route.http_route("g", "n")) == []
    assert crd("istio-api", "destinationrules.networking.istio.io", "v1")(plan.route.destination_rule()) == []
    assert plan.service_monitor is not None
    assert crd("prometheus-operator", "servicemonitors.monitoring.coreos.com", "v1")(plan.service_monitor) == []
    azure = service_monitor("phi", "llm", "http", ModelMetricsArgs(flavour="azureManagedPrometheus"))
    assert crd("prometheus-operator", "servicemonitors.azmonitoring.coreos.com", "v1")(azure) == []
    (iset,) = plan.manifests()
    assert crd_validator(upstream_facts.crd("0.12.0", "inferencesets.kaito.sh"), "v1beta1")(iset) == []


def test_the_route_names_kaitos_pool_and_endpoint_picker_as_its_chart_names_them():
    plan = plan_model(model(gateway=GatewayRefArgs(name="g", namespace="n")))
    assert plan.route is not None
    assert (plan.route.pool, plan.route.endpoint_picker) == ("phi-inferencepool", "phi-inferencepool-epp")
    assert plan.route.model_ids == ("phi",)  # 0.12 serves an InferenceSet's model under its name
    picker = catalog.kaito_charts()["0.12.0"].serving.endpoint_picker  # type: ignore[union-attr]
    long = "a" * 39 + "-inferencepool"
    assert endpoint_picker_name(long, picker) == "a" * 39 + "-" + "-epp"  # the chart cuts the pool name at 40
    kaitos_pool_crd = upstream_facts.crd("0.12.0", "inferencepools.inference.networking.k8s.io")
    assert {v["name"] for v in kaitos_pool_crd["spec"]["versions"]} == {"v1"}
    assert plan.route.pool_api_version == f"{kaitos_pool_crd['spec']['group']}/v1"


def test_a_routed_models_network_policy_admits_its_gateways_pods():
    """The gateway's Istio pods call the model's pods through the InferencePool: without them in
    its NetworkPolicy, Cilium would drop every routed request."""
    from kaito_aks.endpoints import network_policy

    plan = plan_model(model(gateway=GatewayRefArgs(name="g", namespace="edge")))
    assert plan.service is not None
    policy = network_policy("phi", "llm", plan.service.pods, list(plan.service.allow_from), None, 5000)
    assert policy["spec"]["ingress"][0]["from"] == [
        {"podSelector": {}},
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "edge"}},
            "podSelector": {"matchLabels": {"gateway.networking.k8s.io/gateway-name": "g"}},
        },
    ]
    unrouted = plan_model(model())
    assert unrouted.service is not None
    assert unrouted.service.allow_from == ()


def test_an_autoscaled_and_scraped_models_network_policy_admits_its_scaler_and_prometheus():
    """Used alone, a model with `autoscale` and `metrics` lets keda-kaito-scaler and its
    Prometheus in, or its NetworkPolicy would drop what reads the metric."""
    scaled = model(autoscale=ModelAutoscaleArgs(max_replicas=3), metrics=ModelMetricsArgs())
    plan = plan_model(scaled)
    assert plan.service is not None
    assert [(a.namespace, a.pod_labels) for a in plan.service.allow_from] == [
        ("keda", {"app.kubernetes.io/name": "keda-kaito-scaler"}),
        ("monitoring", {}),
    ]
    managed = plan_model(model(metrics=ModelMetricsArgs(flavour="azureManagedPrometheus", prometheus_namespace="x")))
    assert managed.service is not None
    assert [(a.namespace, a.pod_labels) for a in managed.service.allow_from] == [("kube-system", {})]


def test_adapters_are_model_ids_of_the_same_route():
    adapter = {"name": "sql-lora", "image": "myregistry.azurecr.io/adapters/sql:1"}
    plan = plan_model(model(gateway=GatewayRefArgs(name="g", namespace="n"), adapters=[adapter]))
    assert plan.route is not None
    route = plan.route.http_route("g", "n")
    assert [m["headers"][0]["value"] for m in route["spec"]["rules"][0]["matches"]] == ["phi", "sql-lora"]


# ---------------------------------------------------------------- autoscaling: the scaler's annotations


def test_autoscale_writes_the_scalers_annotations_and_starts_the_inferenceset_at_its_minimum():
    plan = plan_model(
        model(autoscale=ModelAutoscaleArgs(min_replicas=2, max_replicas=5, scale_up_cooldown_seconds=120))
    )
    (iset,) = plan.manifests()
    annotations = iset["metadata"]["annotations"]
    assert iset["spec"]["replicas"] == 2
    assert "nodeCountLimit" not in iset["spec"]  # it would override max-replicas (auto_provision_controller.go:148-160)
    assert annotations["scaledobject.kaito.sh/auto-provision"] == "true"
    assert (annotations["scaledobject.kaito.sh/min-replicas"], annotations["scaledobject.kaito.sh/max-replicas"]) == (
        "2",
        "5",
    )
    assert annotations["scaledobject.kaito.sh/scaleupcooldown"] == "120"
    assert "scaledobject.kaito.sh/scaledowncooldown" not in annotations
    assert yaml.safe_load(annotations["scaledobject.kaito.sh/metrics"]) == [
        {"name": "vllm:num_requests_waiting", "type": "gauge", "upthreshold": 10, "downthreshold": 1}
    ]
    assert annotations["pulumi.com/patchForce"] == "true"


def test_a_fixed_size_model_has_no_scaler_annotations_and_its_replicas_are_pulumis():
    (iset,) = plan_model(model(replicas=3)).manifests()
    assert iset["spec"]["replicas"] == 3
    assert "annotations" not in iset["metadata"]


@pytest.mark.parametrize(
    ("autoscale", "kw", "where", "code"),
    [
        ({"min_replicas": 4, "max_replicas": 3}, {}, "autoscale.min_replicas", "autoscale-range"),
        ({"max_replicas": 1}, {}, "autoscale.max_replicas", "range"),  # the scaler skips max < 2
        ({"max_replicas": 3, "min_replicas": 0}, {}, "autoscale.min_replicas", "range"),  # never below 1
        ({"max_replicas": 3, "metric": "my_metric"}, {}, "autoscale.metric_type", "autoscale-metric"),
        (
            {"max_replicas": 3, "metric_cache_window_seconds": 60},
            {},
            "autoscale.metric_cache_window_seconds",
            "autoscale-window",
        ),
        ({"max_replicas": 3, "down_threshold": 20}, {}, "autoscale.down_threshold", "autoscale-thresholds"),
        ({"max_replicas": 3}, {"replicas": 2}, "replicas", "autoscale-replicas"),
        ({"max_replicas": 3}, {"tuning": None, "image": "ghcr.io/x/y:1", "model": None, "compute": "cpu"}, None, None),
    ],
)
def test_the_scalers_silent_skips_are_refused_by_name(autoscale, kw, where, code):
    found = problems(autoscale=ModelAutoscaleArgs(**autoscale), **kw)
    if where is None:
        assert all(c != "autoscale-metric" for _, c in found), found
        return
    assert (where, code) in found, found


def test_a_histogram_metric_takes_its_cache_window_and_an_unknown_metric_its_type():
    ok = ModelAutoscaleArgs(max_replicas=3, metric="vllm:request_queue_time_seconds", metric_cache_window_seconds=120)
    plan = plan_model(model(autoscale=ok))
    (entry,) = yaml.safe_load(plan.manifests()[0]["metadata"]["annotations"]["scaledobject.kaito.sh/metrics"])
    assert entry == {
        "name": "vllm:request_queue_time_seconds",
        "type": "histogram",
        "upthreshold": 10,
        "downthreshold": 1,
        "metriccachewindow": 120,
    }
    own = ModelAutoscaleArgs(max_replicas=3, metric="my:queue", metric_type="gauge")
    assert problems(autoscale=own) == []


@pytest.mark.parametrize("version", ["0.6.0", "0.8.1", "0.11.0"])
def test_autoscale_and_a_gateway_on_a_release_without_inferencesets_here_are_refused_with_the_reason(version):
    kw = {"kaito_version": version, "node_provisioning": "auto", "instance_type": A100}
    text = messages(autoscale=ModelAutoscaleArgs(max_replicas=3), gateway=GatewayRefArgs(name="g", namespace="n"), **kw)
    assert text.count("use KAITO 0.12.0") == 2, text
    if version != "0.6.0":
        assert "Stricter than KAITO" in text  # (it says so, and the way past)


def test_max_replicas_must_fit_the_pools_it_may_use():
    pool = NodeGroup(
        name="a100", vm_size=A100, labels={"agentpool": "a100"}, min_nodes=1, max_nodes=2, gpu_driver="aks"
    )
    args = {"node_groups": [pool], "label_selector": {"match_labels": {"agentpool": "a100"}}}
    assert problems(autoscale=ModelAutoscaleArgs(max_replicas=2), **args) == []
    found = problems(autoscale=ModelAutoscaleArgs(max_replicas=3), **args)
    assert ("autoscale.max_replicas", "replicas-fit") in found
    assert "up to 3 replicas (autoscale.max_replicas)" in messages(autoscale=ModelAutoscaleArgs(max_replicas=3), **args)


def test_max_replicas_must_fit_the_node_pools_aks_lets_gpu_provisioner_make():
    auto = {"node_provisioning": "auto", "instance_type": A100}
    most = AUTO_PROVISIONED_NODES  # phi takes one A100 node a replica
    assert problems(autoscale=ModelAutoscaleArgs(max_replicas=most), **auto) == []
    assert ("autoscale.max_replicas", "autoscale-quota") in problems(
        autoscale=ModelAutoscaleArgs(max_replicas=most + 1), **auto
    )
    two = [(n, model(name=n, autoscale=ModelAutoscaleArgs(max_replicas=60), **auto)) for n in ("a", "b")]
    (over,) = auto_provisioned_budget(two)
    assert "number 120" in over.message
    assert over.code == "autoscale-quota"


# ---------------------------------------------------------------- routes: what KAITO makes a pool for


@pytest.mark.parametrize(
    ("kw", "where", "code"),
    [
        (
            {"model": None, "image": "ghcr.io/kaito-project/aikit/llama3.2:1b", "compute": "cpu"},
            "gateway",
            "not-routable",
        ),
        ({"runtime": "transformers"}, "gateway", "not-routable"),
        ({"name": "a" * 40}, "name", "route-name"),
        ({"config": {"vllm": {"served-model-name": "x"}}}, "config.vllm.served-model-name", "served-model-name"),
        ({"adapters": [{"name": "phi", "image": "r.io/a:1"}]}, "adapters[0].name", "route-ids"),
    ],
)
def test_what_kaito_makes_no_predictable_pool_for_is_not_routed(kw, where, code):
    assert (where, code) in problems(gateway=GatewayRefArgs(name="g", namespace="n"), **kw)


def test_a_39_character_name_is_routed():
    assert problems(name="a" * 39, gateway=GatewayRefArgs(name="g", namespace="n")) == []


def test_two_routed_models_may_not_share_a_model_id():
    gw = GatewayRefArgs(name="g", namespace="n")
    found = route_collisions([("a", model(gateway=gw)), ("b", model(namespace="other", gateway=gw))])
    assert [(i, p.code) for i, p in found] == [(1, "route-ids")]


# ---------------------------------------------------------------- the gateway's rules


@pytest.mark.parametrize(
    ("kw", "where", "code"),
    [
        ({"api_keys": {}}, "api_keys", "gateway-auth"),
        ({"allow_unauthenticated": True}, "allow_unauthenticated", "gateway-auth"),
        ({"exposure": "public"}, "source_ranges", "gateway-exposure"),
        ({"exposure": "public", "source_ranges": ["10.0.0.0/8"]}, "tls", "gateway-exposure"),
        ({"source_ranges": ["10.0.0.0/8"]}, "source_ranges", "gateway-exposure"),
        ({"entra": GatewayEntraArgs(tenant_id=TENANT, audiences=[])}, "entra.audiences", "gateway-auth"),
    ],
)
def test_a_gateway_without_authentication_or_open_to_the_internet_in_clear_is_refused(kw, where, code):
    assert (where, code) in [(p.text().split(":")[0], p.code) for p in inference_gateway_problems(gateway_args(**kw))]


def test_bad_values_are_refused_by_their_own_rules_and_a_keys_value_is_never_shown():
    def program() -> None:
        InferenceGateway(
            "gw",
            InferenceGatewayArgs(
                model_namespaces=["llm"],
                api_keys={"ci": "short-secret-value"},
                entra=GatewayEntraArgs(tenant_id="nope", audiences=["a"]),
                exposure="public",
                source_ranges=["300.1.1.1/8"],
                tls=GatewayTlsArgs(certificate="c", key="k"),
            ),
            opts=on_cluster(),
        )

    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)
    text = str(err.value)
    assert "api_keys.ci: is 18 characters; an API key is at least 32" in text
    assert "short-secret-value" not in text
    assert "entra.tenant_id: 'nope' is not a GUID" in text
    assert "source_ranges[0]: '300.1.1.1/8' is not an address range" in text


def test_an_unauthenticated_or_public_gateway_is_allowed_only_as_asked_and_warned():
    open_ = InferenceGatewayArgs(model_namespaces=["llm"], allow_unauthenticated=True)
    assert inference_gateway_problems(open_) == []
    assert [w.code for w in inference_gateway_warnings(open_)] == ["gateway-unauthenticated"]
    public = gateway_args(
        exposure="public", source_ranges=["203.0.113.0/24"], tls=GatewayTlsArgs(certificate="c", key="k")
    )
    assert [w.code for w in inference_gateway_warnings(public)] == ["gateway-public"]


def test_the_gateway_is_internal_on_azure_by_default_with_probes_on_tcp_and_a_clusterip_when_asked():
    internal = gateway_manifest(gateway_args())
    annotations = internal["spec"]["infrastructure"]["annotations"]
    assert annotations["service.beta.kubernetes.io/azure-load-balancer-internal"] == "true"
    assert annotations["service.beta.kubernetes.io/port_80_health-probe_protocol"] == "tcp"
    assert internal["metadata"]["annotations"] == {"pulumi.com/waitFor": "condition=Programmed"}
    cluster = gateway_manifest(gateway_args(exposure="cluster"))["spec"]["infrastructure"]
    assert cluster == {"parametersRef": {"group": "", "kind": "ConfigMap", "name": "kaito-gateway-service"}}
    assert gateway_url("http", {"addresses": [{"value": "10.0.0.7"}]}) == "http://10.0.0.7"
    assert gateway_url("https", {"addresses": [{"value": "fd00::1"}]}) == "https://[fd00::1]"
    assert gateway_url("http", None) == ""


def test_entra_tokens_are_checked_for_the_tenant_issuer_and_audience():
    args = gateway_args(api_keys={}, entra=GatewayEntraArgs(tenant_id=TENANT, audiences=["api://a", "api://b"]))
    spec = auth_config(args)["spec"]
    assert spec["authentication"]["entra"]["jwt"] == {
        "jwksUrl": f"https://login.microsoftonline.com/{TENANT}/discovery/v2.0/keys"
    }
    patterns = spec["authorization"]["entra-tenant-and-audience"]["patternMatching"]["patterns"]
    assert patterns[0] == {"selector": "auth.identity.tid", "operator": "eq", "value": TENANT}
    assert [p["value"] for p in patterns[1]["any"]] == [
        f"https://sts.windows.net/{TENANT}/",
        f"https://login.microsoftonline.com/{TENANT}/v2.0",
    ]
    assert [p["value"] for p in patterns[2]["any"]] == ["api://a", "api://b"]
    assert "api-keys" not in spec["authentication"]


def test_istiod_runs_with_the_gateway_extension_and_authorino_as_its_ext_authz_provider():
    values = istiod_values(gateway_args(namespace="gw"))
    assert values["env"] == {"ENABLE_GATEWAY_API_INFERENCE_EXTENSION": "true"}
    # every value is one of istiod's own (its defaults live under _internal_defaults_do_not_set)
    chart = upstream_facts.serving_chart_values("istiod")["_internal_defaults_do_not_set"]
    # meshConfig is Istio's MeshConfig, merged whole into the mesh (templates/configmap.yaml:76-79):
    # extensionProviders is its field 57 (istio.io/api@v1.29.6 mesh/v1alpha1/config.proto:1425)
    assert unknown_value_paths(values, chart, ("meshConfig.extensionProviders",)) == []
    assert (
        unknown_value_paths({"provider": {"name": "none"}}, upstream_facts.serving_chart_values("body-based-routing"))
        == []
    )
    assert values["meshConfig"]["extensionProviders"] == [
        {
            "name": "kaito-aks-authorino",
            "envoyExtAuthzGrpc": {"service": "authorino-authorino-authorization.gw.svc.cluster.local", "port": 50051},
        }
    ]
    assert values["gateways"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "meshConfig" not in istiod_values(InferenceGatewayArgs(model_namespaces=["llm"], allow_unauthenticated=True))


# ---------------------------------------------------------------- what the components register


def on_cluster() -> pulumi.ResourceOptions:
    cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(kubeconfig=MOCK_KUBECONFIG.format(cluster="dev")))
    return pulumi.ResourceOptions(provider=cluster.provider)


def test_the_gateway_installs_its_pinned_pieces_and_authenticates_before_it_serves():
    def program() -> None:
        InferenceGateway("gw", gateway_args(), opts=on_cluster())

    ev = run(program)
    releases = {r.inputs["name"]: r.inputs for r in ev.of_type("kubernetes:helm.sh/v3:Release")}
    pins = catalog.serving_charts()
    assert {k: (v["chart"], v["version"], v["namespace"]) for k, v in releases.items()} == {
        "istio-base": ("base", pins.istio.version, "istio-system"),
        "istiod": ("istiod", pins.istio.version, "istio-system"),
        "authorino-operator": ("authorino-operator", "0.26.0", "authorino-operator"),
        "body-based-router": (pins.body_based_routing.chart, "v1.3.0", "kaito-gateway"),
    }
    assert "repositoryOpts" not in releases["body-based-router"]  # an OCI chart
    # the router alone: its Istio wiring is the component's, after authentication (test_gateway_edges.py)
    assert releases["body-based-router"]["values"] == {"provider": {"name": "none"}}
    (crds,) = ev.of_type("kubernetes:yaml/v2:ConfigFile")
    assert crds.inputs["file"].endswith("/v1.4.1/standard-install.yaml")
    (key,) = ev.of_type("kubernetes:core/v1:Secret")
    assert isinstance(key.inputs["stringData"], Secret)  # a Pulumi secret, never plain
    assert reveal(key.inputs["stringData"]) == {"api_key": KEY}
    gateway = ev.named("gw/gateway")
    policy = ev.named("gw/ext-authz")
    config = ev.named("gw/auth-config")
    # the policy (every request through Authorino) is in place before the Gateway takes traffic
    assert policy.urn in gateway.dependencies
    assert config.urn in policy.dependencies
    assert key.urn in config.dependencies


def test_existing_pieces_install_nothing_and_an_unauthenticated_gateway_has_no_authorino():
    existing = {
        "gateway_api_crds": "existing",
        "istio": "existing",
        "authorino": "existing",
        "body_based_routing": "existing",
    }

    def program() -> None:
        InferenceGateway(
            "gw",
            InferenceGatewayArgs(model_namespaces=["llm"], allow_unauthenticated=True, **existing),
            opts=on_cluster(),
        )

    ev = run(program)
    assert ev.of_type("kubernetes:helm.sh/v3:Release") == []
    assert ev.of_type("kubernetes:yaml/v2:ConfigFile") == []
    assert [
        r.type.split(":")[-1]
        for r in ev.resources
        if r.custom and "kubernetes:" in r.type and r.type != "pulumi:providers:kubernetes"
    ] == [
        "Namespace",
        "LimitRange",  # (the gateway's own pods' default requests: components/tests/test_capacity.py)
        "EnvoyFilter",  # the routes Envoy answers itself (test_gateway_edges.py)
        "Gateway",
    ]


def test_a_routed_model_waits_for_the_gateway_through_its_outputs_and_an_autoscaled_one_leaves_replicas_alone():
    def program() -> None:
        opts = on_cluster()
        gw = InferenceGateway("gw", gateway_args(), opts=opts)
        ref = GatewayRefArgs(name=gw.gateway_name, namespace=gw.namespace)
        KaitoModel("phi", model(gateway=ref, autoscale=ModelAutoscaleArgs(max_replicas=3), **WAITS_OFF), opts=opts)
        KaitoModel("fixed", model(name="fixed", replicas=2, **WAITS_OFF), opts=opts)

    ev = run(program)
    route = ev.named("phi/route")
    assert ev.named("gw/gateway").urn in route.dependencies
    assert route.urn in ev.named("phi/endpoint-picker").dependencies
    scaled = ev.named("phi/phi", "kubernetes:kaito.sh/v1beta1:InferenceSet")
    fixed = ev.named("fixed/fixed", "kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert scaled.options.get("ignoreChanges") == ["spec.replicas"]
    assert not fixed.options.get("ignoreChanges")
    outputs = ev.component_outputs[ev.named("phi", "kaito-aks:index:KaitoModel").urn]
    assert outputs["autoscaling"]["maxReplicas"] == 3
    assert outputs["route"]["models"] == ["phi"]


def test_keda_and_its_scaler_are_paired_with_the_kaito_release_in_kedas_namespace():
    def program() -> None:
        KedaAutoscaling("a", KedaAutoscalingArgs(kaito_version="0.12.0"), opts=on_cluster())

    releases = {r.inputs["name"]: r.inputs for r in run(program).of_type("kubernetes:helm.sh/v3:Release")}
    assert (releases["keda"]["version"], releases["keda"]["namespace"]) == ("2.20.2", "keda")
    assert (releases["keda-kaito-scaler"]["version"], releases["keda-kaito-scaler"]["namespace"]) == ("0.6.2", "keda")
    assert keda_autoscaling_problems(KedaAutoscalingArgs(kaito_version="0.12.0", keda="addon", namespace="keda"))
    assert keda_autoscaling_problems(KedaAutoscalingArgs(kaito_version="0.8.1"))[0].code == "serving-release"

    def addon() -> None:
        KedaAutoscaling("a", KedaAutoscalingArgs(kaito_version="0.12.0", keda="addon"), opts=on_cluster())

    (scaler,) = run(addon).of_type("kubernetes:helm.sh/v3:Release")
    assert scaler.inputs["namespace"] == "kube-system"  # the add-on's KEDA runs there


# ---------------------------------------------------------------- KAITO's gate, and what comes with it


@pytest.mark.parametrize("version", ["0.8.1", "0.11.0", "0.12.0"])
def test_the_gateway_extension_gate_turns_off_flux2s_network_policies_and_warns_of_flux(version):
    args = KaitoOperatorArgs(version=version, feature_gates={"gatewayAPIInferenceExtension": True})
    values = kaito_chart_values(args)
    assert values["flux2"] == {"policies": {"create": False}}
    allowed = tuple(catalog.kaito_charts()[version].subchart_toggles)
    assert unknown_value_paths(values, upstream_facts.chart_values("kaito", version), allowed) == []
    (warning,) = kaito_operator_warnings(args)
    assert "cluster-admin" in warning.message
    assert "kaito#2252" in warning.message
    # the facts the warning and the value rest on: flux2's own defaults, as KAITO bundles it
    flux2 = upstream_facts.chart_values("kaito", version, "flux2")
    assert flux2["rbac"]["roleRef"]["name"] == "cluster-admin"
    assert flux2["policies"]["create"] is True  # (0.8's chart leaves it so: kaito#1731)
    assert "flux2" not in kaito_chart_values(KaitoOperatorArgs(version=version))


# ---------------------------------------------------------------- the dashboard, and AKS's managed Prometheus


def test_the_dashboard_shows_what_a_platform_team_watches_in_vllms_names():
    board = dash.vllm_dashboard()
    titles = [p["title"] for p in board["panels"]]
    for wanted in ("Requests running", "Requests waiting", "Time to first token", "Tokens per second", "KV cache use"):
        assert wanted in titles
    assert any("Replicas" in t for t in titles)
    assert any("Autoscaler" in t for t in titles)
    exprs = " ".join(t["expr"] for p in board["panels"] for t in p["targets"])
    for metric in catalog.vllm_metrics():
        if metric != "vllm:request_queue_time_seconds":
            assert metric in exprs, metric
    assert json.loads(dash.dashboard_json()) == board
    assert len({p["id"] for p in board["panels"]}) == len(titles)


def test_a_created_cluster_with_managed_prometheus_sends_its_metrics_to_an_azure_monitor_workspace():
    def program() -> None:
        AksCluster(
            "c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2", managed_prometheus=True, keda=True)
        )

    ev = run(program)
    (cluster,) = ev.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["azureMonitorProfile"] == {"metrics": {"enabled": True}}
    assert cluster.inputs["workloadAutoScalerProfile"] == {"keda": {"enabled": True}}
    (rule,) = ev.of_type("azure-native:monitor:DataCollectionRule")
    assert rule.inputs["dataSources"]["prometheusForwarder"] == [
        {"name": "PrometheusDataSource", "streams": ["Microsoft-PrometheusMetrics"]}
    ]
    assert rule.inputs["dataFlows"] == [
        {"streams": ["Microsoft-PrometheusMetrics"], "destinations": ["MonitoringAccount1"]}
    ]
    (endpoint,) = ev.of_type("azure-native:monitor:DataCollectionEndpoint")
    assert endpoint.inputs["dataCollectionEndpointName"] == "MSProm-eastus2-aks"
    assert endpoint.inputs["kind"] == "Linux"
    associations = {
        a.inputs["associationName"] for a in ev.of_type("azure-native:monitor:DataCollectionRuleAssociation")
    }
    assert associations == {"configurationAccessEndpoint", "MSProm-eastus2-aks"}
    assert len(ev.of_type("azure-native:monitor:AzureMonitorWorkspace")) == 1
    plain = run(lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2")))
    (cluster,) = plain.of_type("azure-native:containerservice:ManagedCluster")
    assert "azureMonitorProfile" not in cluster.inputs
    assert "workloadAutoScalerProfile" not in cluster.inputs
    assert plain.of_type("azure-native:monitor:DataCollectionRule") == []


def test_deploy_models_refuses_two_routed_models_of_one_id_and_auto_provisioned_nodes_beyond_aks_pools():
    from kaito_aks import deploy_models

    gw = GatewayRefArgs(name="g", namespace="n")

    def routed() -> None:
        deploy_models(
            "m",
            [("a", model(gateway=gw, **WAITS_OFF)), ("b", model(namespace="other", gateway=gw, **WAITS_OFF))],
            opts=on_cluster(),
        )

    with pytest.raises(InvalidArgsError) as err:
        run(routed)
    assert "b.gateway: model id 'phi' is routed for a already" in str(err.value)
    auto = {"node_provisioning": "auto", "instance_type": A100, **WAITS_OFF}

    def many() -> None:
        deploy_models(
            "m",
            [(n, model(name=n, autoscale=ModelAutoscaleArgs(max_replicas=60), **auto)) for n in ("a", "b")],
            opts=on_cluster(),
        )

    with pytest.raises(InvalidArgsError) as err:
        run(many)
    assert "models: KAITO's auto-provisioned nodes at their most number 120" in str(err.value)
