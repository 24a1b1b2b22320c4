"""Serving as one service, on the KAITO 0.12 API server with the real CRDs of every piece (the
Gateway API v1.4.1, KAITO's InferencePool, Istio 1.29.6's DestinationRule, AuthorizationPolicy
and EnvoyFilter, Authorino's AuthConfig and Authorino, KEDA 2.20.2's ScaledObject,
prometheus-operator v0.93.1's ServiceMonitor; components/tests/upstream, with provenance): a
stack of two models behind one gateway with an API key (kept a secret end to end), one of them
autoscaled, both scraped. The pieces are `existing` (no chart repository is reachable here) and
stand-ins play them (harness.StandInServing, saying so): KAITO's pools and endpoint pickers,
Istio's status, Authorino's readiness, keda-kaito-scaler's ScaledObject, the HPA's scaling.

What it proves: every object is accepted by the real schemas; the wiring holds (route -> pool ->
the model's pods; the header value is the InferenceSet's name, the id it serves under; the
DestinationRule's host is the picker's Service; the Gateway admits the model namespace; the
AuthConfig selects the key Secrets; the ServiceMonitor selects the model's Service; the
annotations make a ScaledObject KEDA's CRD accepts, aimed at the InferenceSet); after the
"HPA" scales an InferenceSet, `pulumi refresh` then `pulumi preview --expect-no-changes` finds
nothing to change and an `up` keeps the HPA's count, while the same scaling of a fixed-size
model is shown as a change (the check can fail); a key's rotation changes its Secret alone.
The tests run in order on one stack."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import CREATED_BY, SERVING_ADDRESS, Cluster, Project, StandInServing, stack_project, wait_for

import upstream_facts
from kaito_aks.serving.edges import body_router_destination, body_router_filter, edges_filter

NS, GW_NS = "serving", "serving-gateway"
SCALED, FIXED = "phi", "coder"
A100 = "Standard_NC24ads_A100_v4"
KEY = "e2e-key-0123456789abcdef0123456789abcdef"  # a dummy API key (32+ characters)
ROTATED = "e2e-key-fedcba9876543210fedcba9876543210"


@pytest.fixture(scope="module")
def serving(cluster_0_12: Cluster, kaito_0_12: Any) -> Iterator[StandInServing]:
    """The serving pieces' CRDs, Established, and their stand-ins."""
    files = upstream_facts.serving_crd_files()
    cluster_0_12.apply(*files)
    names = [f"crd/{f.stem}" for f in files]
    cluster_0_12.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
    cluster_0_12.kubectl("create", "namespace", NS)
    stand_in = StandInServing(cluster_0_12, NS)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def project(
    bin_dir: Path, cluster_0_12: Cluster, work: Path, serving: StandInServing, kubernetes_provider: str
) -> Iterator[Project]:
    p = stack_project(bin_dir, cluster_0_12, work, "serving", "serving", kubernetes_provider)
    gateway_stand_in = StandInServing(cluster_0_12, GW_NS)  # Istio and Authorino in the gateway's namespace
    gateway_stand_in.start()
    existing = {"gatewayApiCrds": "existing", "istio": "existing", "authorino": "existing"}
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        "kaito-aks:kaito": {"version": "0.12.0", "install": False, "nodeProvisioning": "auto"},
        "kaito-aks:workspaces": [
            {
                "name": SCALED,
                "namespace": NS,
                "model": "phi-4-mini-instruct",
                "instanceType": A100,
                "autoscale": {"minReplicas": 1, "maxReplicas": 3},
            },
            {"name": FIXED, "namespace": NS, "model": "qwen2.5-coder-7b-instruct", "instanceType": A100},
        ],
        "kaito-aks:gateway": {"namespace": GW_NS, "exposure": "cluster", "bodyBasedRouting": "existing", **existing},
        "kaito-aks:autoscaling": {"keda": "existing", "scaler": "existing"},
        "kaito-aks:metrics": {"flavour": "prometheusOperator", "dashboardNamespace": NS},
        "kaito-aks:createNamespaces": False,
    }
    (p.path / "Pulumi.serving.yaml").write_text(yaml.safe_dump({"config": config}))
    p.init()
    p.pulumi("config", "set", "--path", "--secret", "kaito-aks:gateway.apiKeys.ci", KEY, quiet=True, secret=True)
    yield p
    p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)
    gateway_stand_in.stop()


def get(cluster: Cluster, api: str, namespace: str, plural: str, name: str = "") -> Any:
    prefix = "/api/v1" if api == "v1" else f"/apis/{api}"
    answer = cluster.api("GET", f"{prefix}/namespaces/{namespace}/{plural}" + (f"/{name}" if name else ""))
    return answer if name else {o["metadata"]["name"]: o for o in answer["items"]}


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj["status"]["conditions"]}


def test_two_models_behind_one_authenticated_gateway_are_wired_route_to_pool_to_pods(
    project: Project, cluster_0_12: Cluster, serving: StandInServing
) -> None:
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    c = cluster_0_12
    gateway = get(c, "gateway.networking.k8s.io/v1", GW_NS, "gateways", "kaito-gateway")
    assert conditions(gateway)["Programmed"] == "True"  # `up` waited for it (pulumi.com/waitFor)
    (listener,) = gateway["spec"]["listeners"]
    assert listener["allowedRoutes"]["namespaces"]["selector"]["matchExpressions"][0]["values"] == [NS]
    assert project.outputs()["gatewayUrl"] == f"http://{SERVING_ADDRESS}"

    isets = get(c, "kaito.sh/v1beta1", NS, "inferencesets")
    services = get(c, "v1", NS, "services")
    for model in (SCALED, FIXED):
        route = get(c, "gateway.networking.k8s.io/v1", NS, "httproutes", model)
        (parent,) = route["spec"]["parentRefs"]
        assert (parent["name"], parent["namespace"]) == ("kaito-gateway", GW_NS)
        (rule,) = route["spec"]["rules"]
        (match,) = rule["matches"]
        # the header body-based routing writes from `model`: the InferenceSet's name, the id KAITO 0.12 serves it as
        assert match["headers"] == [
            {"type": "Exact", "name": "X-Gateway-Model-Name", "value": isets[model]["metadata"]["name"]}
        ]
        (backend,) = rule["backendRefs"]
        pool = get(c, "inference.networking.k8s.io/v1", NS, "inferencepools", backend["name"])
        assert backend["group"] == "inference.networking.k8s.io"
        assert backend["kind"] == "InferencePool"
        # the pool selects the model's serving pods: the labels the model's own Service selects by
        assert pool["spec"]["selector"]["matchLabels"] == services[model]["spec"]["selector"]
        assert pool["spec"]["targetPorts"] == [{"number": services[model]["spec"]["ports"][0]["targetPort"]}]
        picker = pool["spec"]["endpointPickerRef"]["name"]
        rule_ = get(c, "networking.istio.io/v1", NS, "destinationrules", picker)
        assert rule_["spec"]["host"] == f"{picker}.{NS}.svc.cluster.local"
        assert picker in services, "the DestinationRule names the endpoint picker's Service"
        assert rule_["spec"]["trafficPolicy"]["tls"] == {"mode": "DISABLE"}  # 0.12's picker is plaintext
        assert {c_["type"]: c_["status"] for c_ in route["status"]["parents"][0]["conditions"]} == {
            "Accepted": "True",
            "ResolvedRefs": "True",
        }
        monitor = get(c, "monitoring.coreos.com/v1", NS, "servicemonitors", model)
        labels = services[model]["metadata"]["labels"]
        assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert monitor["spec"]["endpoints"][0]["port"] == services[model]["spec"]["ports"][0]["name"]
        assert monitor["metadata"]["labels"] == {"release": "kube-prometheus-stack"}

    # the API key: a Secret Authorino selects (by the AuthConfig's selector), encrypted in the state
    config = get(c, "authorino.kuadrant.io/v1beta3", GW_NS, "authconfigs", "kaito-gateway")
    selector = config["spec"]["authentication"]["api-keys"]["apiKey"]["selector"]["matchLabels"]
    keys = [
        s
        for s in get(c, "v1", GW_NS, "secrets").values()
        if selector.items() <= s["metadata"].get("labels", {}).items()
    ]
    assert [base64.b64decode(s["data"]["api_key"]).decode() for s in keys] == [KEY]
    assert keys[0]["metadata"]["labels"]["authorino.kuadrant.io/managed-by"] == "authorino"  # Authorino watches it
    assert KEY not in json.dumps(project.state()), "the API key is in the state in plain text"
    policy = get(c, "security.istio.io/v1", GW_NS, "authorizationpolicies", "kaito-gateway-ext-authz")
    assert policy["spec"]["action"] == "CUSTOM"
    assert policy["spec"]["selector"]["matchLabels"] == {"gateway.networking.k8s.io/gateway-name": "kaito-gateway"}
    # what Envoy answers itself, on the same pods: the stack's models, an unknown one, none (no Envoy runs here)
    edges = get(c, "networking.istio.io/v1alpha3", GW_NS, "envoyfilters", "kaito-gateway-openai-edges")
    assert edges["spec"]["workloadSelector"]["labels"] == policy["spec"]["selector"]["matchLabels"]
    (patch,) = edges["spec"]["configPatches"]
    listed, unknown, missing = patch["patch"]["value"]["routes"]
    body = json.loads(listed["direct_response"]["body"]["inline_string"])
    assert [m["id"] for m in body["data"]] == sorted(isets)  # KAITO 0.12 serves each under its InferenceSet's name
    assert json.loads(unknown["direct_response"]["body"]["inline_string"])["error"]["code"] == "model_not_found"
    assert (unknown["direct_response"]["status"], missing["direct_response"]["status"]) == (404, 400)

    # autoscaling: the annotations, which the scaler's rules accept, make a ScaledObject KEDA's CRD accepts
    scaled = isets[SCALED]
    assert scaled["spec"]["replicas"] == 1  # created at its minimum
    assert "nodeCountLimit" not in scaled["spec"]  # (it would override max-replicas)
    wait_for(lambda: SCALED in serving.scaled_objects, "the ScaledObject", 30)
    scaled_object = get(c, "keda.sh/v1alpha1", NS, "scaledobjects", SCALED)
    assert scaled_object["spec"]["scaleTargetRef"] == {
        "apiVersion": "kaito.sh/v1beta1",
        "kind": "InferenceSet",
        "name": SCALED,
    }
    assert (scaled_object["spec"]["minReplicaCount"], scaled_object["spec"]["maxReplicaCount"]) == (1, 3)
    assert FIXED not in serving.scaled_objects
    assert isets[FIXED]["metadata"].get("annotations", {}).get("scaledobject.kaito.sh/auto-provision") is None

    status = project.status()
    out = status.stdout
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"  gateway http://{SERVING_ADDRESS}  cluster · Istio 1.29.6 · auth: API keys (ci)  Programmed" in out, out
    assert (
        f"    route {SCALED} Accepted, ResolvedRefs · pool {SCALED}-inferencepool Accepted · model ids {SCALED}" in out
    ), out
    assert (
        "    autoscaling 1/1 ready · min 1 · max 3 · up when vllm:num_requests_waiting > 10, down < 1 (gauge)" in out
    ), out
    assert KEY not in out + status.stderr


def test_the_routers_wiring_after_authentication_is_taken_by_istios_crds_and_what_they_refuse_is_refused(
    cluster_0_12: Cluster, serving: StandInServing
) -> None:
    """What the gateway writes when it installs the body-based router (this stack has it
    `existing`): Istio's CRDs take it; the order it asks of Envoy is checked against Istio's
    sources in components/tests/test_gateway_edges.py, not by an Envoy (none runs here)."""
    gateway = "dry-run"  # (not the stack's: a dry run of its own objects would meet their field manager)
    wiring = [body_router_filter(gateway, NS), body_router_destination(gateway, NS)]
    for manifest in [*wiring, edges_filter(gateway, NS, [f"model-{i:03d}" for i in range(120)])]:
        assert dry_run(cluster_0_12, manifest) == "", manifest["metadata"]["name"]
    (patch,) = wiring[0]["spec"]["configPatches"]
    assert patch["patch"]["operation"] == "INSERT_BEFORE"
    # the CRD checks the operation (so that its acceptance means something)
    bad = json.loads(json.dumps(wiring[0]))
    bad["spec"]["configPatches"][0]["patch"]["operation"] = "INSERT_SOMEWHERE"
    assert "INSERT_SOMEWHERE" in dry_run(cluster_0_12, bad)


def dry_run(cluster: Cluster, manifest: dict[str, Any]) -> str:
    """What the API server says to a server-side dry run of `manifest` ("" when it takes it)."""
    path = cluster.work / "dry-run.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path), check=False)
    return "" if result.returncode == 0 else result.stderr


def test_after_the_autoscaler_scales_refresh_and_preview_find_nothing_to_change_and_up_keeps_its_count(
    project: Project, cluster_0_12: Cluster, serving: StandInServing
) -> None:
    path = ("kaito.sh/v1beta1", NS, "inferencesets", SCALED)
    serving.scale(SCALED, 3)  # the HPA, as its own field manager
    assert get(cluster_0_12, *path)["spec"]["replicas"] == 3
    project.pulumi("refresh", "--yes", "--skip-preview", quiet=True)
    preview = project.pulumi("preview", "--expect-no-changes", "--diff", check=False, quiet=True)
    assert preview.returncode == 0, preview.stdout[-3000:]
    # an edit of the model's autoscaling (its annotations) updates the InferenceSet and keeps the HPA's count
    project.config_path("workspaces[0].autoscale.upThreshold", "12")
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    live = get(cluster_0_12, *path)
    assert live["spec"]["replicas"] == 3, "pulumi up reset what the autoscaler chose"
    assert "upthreshold: 12" in live["metadata"]["annotations"]["scaledobject.kaito.sh/metrics"]
    wait_for(
        lambda: (
            "> 12"
            in get(cluster_0_12, "keda.sh/v1alpha1", NS, "scaledobjects", SCALED)["spec"]["advanced"][
                "scalingModifiers"
            ]["formula"]
        ),
        "the ScaledObject follows",
        30,
    )
    status = project.status()
    assert "    autoscaling 3/3 ready · min 1 · max 3" in status.stdout, status.stdout
    assert "HPA current 3, desired 3" in status.stdout, status.stdout
    children = [
        w
        for w in get(cluster_0_12, "kaito.sh/v1beta1", NS, "workspaces").values()
        if w["metadata"]["labels"].get(CREATED_BY) == SCALED
    ]
    assert len(children) == 3


def test_the_same_scaling_of_a_model_without_autoscale_is_a_change(
    project: Project, cluster_0_12: Cluster, serving: StandInServing
) -> None:
    """The negative control: the check above can fail."""
    serving.scale(FIXED, 2)
    project.pulumi("refresh", "--yes", "--skip-preview", quiet=True)
    preview = project.pulumi("preview", "--expect-no-changes", "--diff", check=False, quiet=True)
    assert preview.returncode != 0, "a fixed-size model scaled behind Pulumi's back showed no change"
    assert "replicas" in preview.stdout, preview.stdout[-3000:]
    serving.scale(FIXED, 1)  # back as the stack has it
    project.pulumi("refresh", "--yes", "--skip-preview", quiet=True)


def test_rotating_an_api_key_is_a_config_change_that_updates_its_secret_alone(
    project: Project, cluster_0_12: Cluster
) -> None:
    project.pulumi(
        "config", "set", "--path", "--secret", "kaito-aks:gateway.apiKeys.ci", ROTATED, quiet=True, secret=True
    )
    steps = project.preview_steps()
    changed = {s["urn"].rsplit("::", 1)[1] for op, ss in steps.items() if op != "same" for s in ss}
    assert changed == {"gateway/key-ci"}, steps.keys()
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    secret = get(cluster_0_12, "v1", GW_NS, "secrets", "kaito-gateway-key-ci")
    assert base64.b64decode(secret["data"]["api_key"]).decode() == ROTATED
    assert ROTATED not in json.dumps(project.state())


def test_destroy_takes_the_routes_the_gateway_and_the_models(project: Project, cluster_0_12: Cluster) -> None:
    project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    c = cluster_0_12
    assert get(c, "gateway.networking.k8s.io/v1", NS, "httproutes") == {}
    assert get(c, "networking.istio.io/v1", NS, "destinationrules") == {}
    assert get(c, "monitoring.coreos.com/v1", NS, "servicemonitors") == {}
    assert get(c, "kaito.sh/v1beta1", NS, "inferencesets") == {}
    assert (
        not c.kubectl_ok("get", "namespace", GW_NS)
        or c.kubectl("get", "namespace", GW_NS, "-o", "jsonpath={.status.phase}").stdout == "Terminating"
    )
