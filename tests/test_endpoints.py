"""Who reaches the models and RAG engines, as the program emits it: a NetworkPolicy per endpoint
(its namespace, the config's allowFrom, its load balancer's clients), internal load balancers by
default and public ones only with source ranges and a warning, RAG engines' load balancers as
Services of their own, and Pod Security labels on the namespaces the stack creates."""

from __future__ import annotations

import pytest

from kaito_aks.endpoints import INTERNAL_LB, PRIVATE_RANGES
from kaito_aks.pod_security import host_path_reason
from stacks.evaluate import reveal
from stacks.load import stack_config
from tests.conftest import config, errors_of, run, warnings_of

PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
CPU = {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
SERVICE = "kubernetes:core/v1:Service"
NAMESPACE = "kubernetes:core/v1:Namespace"
GATEWAY = {"namespace": "gateway", "podLabels": {"app": "envoy"}}


def policies(ev) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: reveal(r.inputs) for r in ev.of_type(POLICY)}


def service(ev, name: str) -> dict:
    return reveal(next(r.inputs for r in ev.of_type(SERVICE) if r.inputs["metadata"]["name"] == name))


def test_every_model_admits_its_own_namespace_only_by_default():
    ev = run(config([PHI, CPU]))
    found = policies(ev)
    assert set(found) == {"phi-ingress", "tiny-ingress"}
    phi = found["phi-ingress"]
    assert phi["metadata"]["namespace"] == "default"
    assert phi["spec"] == {
        "podSelector": {"matchLabels": {"inferenceset.kaito.sh/created-by": "phi"}},  # every replica's pods
        "policyTypes": ["Ingress"],  # egress untouched: model downloads, DNS
        "ingress": [{"from": [{"podSelector": {}}]}],
    }
    # the policy selects what the Service serves from
    assert service(ev, "phi")["spec"]["selector"]["inferenceset.kaito.sh/created-by"] == "phi"
    assert service(ev, "phi")["spec"]["type"] == "ClusterIP"
    assert "externalTrafficPolicy" not in service(ev, "phi")["spec"]  # unchanged for existing stacks


def test_allow_from_of_the_stack_and_of_an_entry_are_both_admitted():
    ev = run(config([{**PHI, "allowFrom": [{"namespace": "monitoring"}]}, CPU], endpoints={"allowFrom": [GATEWAY]}))
    found = policies(ev)
    assert found["phi-ingress"]["spec"]["ingress"] == [
        {
            "from": [
                {"podSelector": {}},
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}},
                    "podSelector": {"matchLabels": {"app": "envoy"}},
                },
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
            ]
        }
    ]
    assert len(found["tiny-ingress"]["spec"]["ingress"][0]["from"]) == 2  # the stack's gateway only


def test_load_balancer_true_is_internal_and_keeps_the_callers_address():
    ev = run(config([{**PHI, "loadBalancer": True}]))
    svc = service(ev, "phi")
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["metadata"]["annotations"][INTERNAL_LB] == "true"
    assert svc["spec"]["externalTrafficPolicy"] == "Local"
    assert "loadBalancerSourceRanges" not in svc["spec"]
    assert policies(ev)["phi-ingress"]["spec"]["ingress"][1] == {
        "from": [{"ipBlock": {"cidr": c}} for c in PRIVATE_RANGES],
        "ports": [{"port": 5000, "protocol": "TCP"}],
    }


def test_a_public_load_balancer_needs_source_ranges_and_is_warned_about():
    errors = errors_of(config([{**PHI, "loadBalancer": {"internal": False}}]))
    assert errors == [
        "workspaces[0].loadBalancer.sourceRanges: a public load balancer needs sourceRanges (the client ranges let in): "
        "without them anyone on the internet could call this unauthenticated endpoint; keep it internal "
        "(loadBalancer: true), or reach it through an authenticated gateway"
    ]
    public = {**PHI, "loadBalancer": {"internal": False, "sourceRanges": ["198.51.100.0/24"]}}
    ev = run(config([public]))
    svc = service(ev, "phi")
    assert INTERNAL_LB not in svc["metadata"]["annotations"]
    assert svc["spec"]["loadBalancerSourceRanges"] == ["198.51.100.0/24"]
    assert policies(ev)["phi-ingress"]["spec"]["ingress"][1]["from"] == [{"ipBlock": {"cidr": "198.51.100.0/24"}}]
    raw = {"cluster": {"kubeconfig": {"context": "c"}}, "workspaces": [public]}
    (warning,) = [w for w in stack_config(raw).warnings if w.code == "public-endpoint-open"]
    assert warning.path == ("workspaces", 0, "load_balancer", "internal")
    assert "plain HTTP with no authentication" in warning.message


def test_a_load_balancer_of_another_shape_is_named():
    errors = errors_of(config([{**PHI, "loadBalancer": "yes"}, {**CPU, "loadBalancer": {"sourceRanges": ["x"]}}]))
    assert errors[0] == "workspaces[0].loadBalancer: must be true, false or a map of its settings"
    assert errors[1].startswith("workspaces[1].loadBalancer.sourceRanges[0]: 'x' is not a CIDR range")


def test_tuning_jobs_serve_nothing_and_get_no_policy():
    tuning = {
        "method": "lora",
        "input": {"urls": ["https://example.com/data.parquet"]},
        "output": {"image": "registry.example.com/adapters/phi:1", "imagePushSecret": "push"},
    }
    tuned = {**PHI, "name": "tune", "instanceType": "Standard_NC24ads_A100_v4", "tuning": tuning}
    ev = run(config([tuned], kaito={"install": False, "nodeProvisioning": "auto"}))
    assert policies(ev) == {}


# ---------------------------------------------------------------- RAG engines


RAG = {
    "name": "docs-rag",
    "workspace": "phi",
    "contextWindowSize": 4096,
    "compute": {"instanceType": "Standard_NV36ads_A10_v5", "labelSelector": {"matchLabels": {"apps": "rag"}}},
}


def test_a_rag_engines_load_balancer_is_its_own_internal_service_never_kaitos_public_one():
    ev = run(config([PHI], ragEngines=[{**RAG, "loadBalancer": True}]))
    engine = reveal(ev.named("default/docs-rag/docs-rag", "kubernetes:kaito.sh/v1alpha1:RAGEngine").inputs)
    assert "annotations" not in engine["metadata"]  # no kaito.sh/enablelb
    lb = service(ev, "docs-rag-lb")
    assert lb["metadata"]["annotations"][INTERNAL_LB] == "true"
    assert lb["spec"]["selector"] == {"kaito.sh/ragengine": "docs-rag"}
    policy = policies(ev)["docs-rag-ingress"]
    assert policy["spec"]["podSelector"] == {"matchLabels": {"kaito.sh/ragengine": "docs-rag"}}
    # the engine calls its model in the same namespace, which the model's policy admits
    assert policies(ev)["phi-ingress"]["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]


def test_a_rag_engines_load_balancer_name_is_taken_like_any_other():
    errors = errors_of(config([PHI, {**CPU, "name": "docs-rag-lb"}], ragEngines=[{**RAG, "loadBalancer": True}]))
    assert errors == [
        "ragEngines[0].loadBalancer: default/docs-rag-lb is also a name workspaces[1] creates; the engine's load "
        "balancer is a Service named <name>-lb, so rename one of them"
    ]


# ---------------------------------------------------------------- Pod Security


def test_namespaces_the_stack_creates_enforce_baseline_and_warn_about_restricted():
    ev = run(config([{**PHI, "namespace": "llm"}]))
    labels = ev.named("namespace/llm", NAMESPACE).inputs["metadata"]["labels"]
    assert labels == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "latest",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": "latest",
    }
    assert ev.of_type(NAMESPACE) == [ev.named("namespace/llm", NAMESPACE)]  # default is not the stack's to label


V4 = {"name": "v4", "namespace": "big", "model": "deepseek-ai/DeepSeek-V4-Flash-0731"}
KAITO_012 = {"version": "0.12.0", "nodeProvisioning": "byo", "install": False}


def test_a_model_kaito_mounts_a_host_path_for_makes_its_namespace_privileged_and_says_so():
    raw = {
        "cluster": {"kubeconfig": {"context": "c"}},
        "kaito": KAITO_012,
        "workspaces": [V4, {**PHI, "namespace": "llm"}],
    }
    cfg = stack_config(raw)
    assert cfg.pod_security("big") == "privileged"
    assert cfg.pod_security("llm") == "baseline"
    (warning,) = [w for w in cfg.warnings if w.code == "pod-security"]
    assert warning.path == ("workspaces", 0, "model")
    assert "mounts the node's CUDA toolkit (hostPath /opt/kaito/cuda/129)" in warning.message
    assert "namespace big is created at the privileged level" in warning.message
    ev = run({f"kaito-aks:{k}": v for k, v in raw.items()})
    assert ev.named("namespace/big", NAMESPACE).inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == (
        "privileged"
    )


@pytest.mark.parametrize(
    ("version", "model", "mounts"),
    [
        ("0.12.0", "deepseek-ai/DeepSeek-V3.2", True),
        ("0.12.0", "mistralai/Mistral-Small-4-119B-2603", True),
        ("0.12.0", "mistralai/Mistral-Small-4-119B-2603-NVFP4", False),
        ("0.12.0", "phi-4-mini-instruct", False),
        ("0.11.0", "mistralai/Mistral-Small-4-119B-2603", False),  # 0.11 mounts nothing
    ],
)
def test_which_models_mount_a_host_path(version: str, model: str, mounts: bool):
    from kaito_aks.model.spec import KaitoModelArgs

    args = KaitoModelArgs(name="m", model=model, kaito_version=version)
    assert (host_path_reason(args) is not None) is mounts


def test_an_internal_load_balancer_on_a_cluster_of_any_cloud_says_the_annotation_is_azures():
    raw = {"cluster": {"kubeconfig": {"context": "c"}}, "workspaces": [{**PHI, "loadBalancer": True}]}
    (warning,) = [w for w in stack_config(raw).warnings if w.code == "load-balancer-cloud"]
    assert warning.path == ("workspaces", 0, "load_balancer")
    assert "on another cloud give that cloud's internal load balancer annotation" in warning.message
    given = {"annotations": {"networking.gke.io/load-balancer-type": "Internal"}}
    said = stack_config({**raw, "workspaces": [{**PHI, "loadBalancer": given}]}).warnings
    assert [w for w in said if w.code == "load-balancer-cloud"] == []
    aks = {"aks": {"resourceGroup": "rg", "name": "k", "location": "eastus2"}}
    on_aks = {**raw, "cluster": aks, "workspaces": [{**CPU, "loadBalancer": True}]}
    assert [w for w in stack_config(on_aks).warnings if w.code == "load-balancer-cloud"] == []


def test_the_internal_annotation_cannot_be_turned_off_past_the_public_endpoint_checks():
    """`annotations` once overrode the internal annotation: a public load balancer with no source
    ranges and no warning. It is refused, pointing to `internal: false`."""
    off = {"annotations": {INTERNAL_LB: "false"}}
    errors = errors_of(config([{**PHI, "loadBalancer": off}]))
    assert errors == [
        f'workspaces[0].loadBalancer.annotations."{INTERNAL_LB}": {INTERNAL_LB} is set by internal; a public load '
        "balancer is internal: false with sourceRanges"
    ]


def test_kaito_0_6_pods_are_selected_by_their_workspaces_name():
    """KAITO 0.6 (the AKS add-on's) copies no created-by label onto its pods: they carry
    kaito.sh/workspace only (manifests.go v0.6.0), so the Service selects the first replica's
    Workspace and the NetworkPolicy every replica's."""
    from tests.test_aks import aks

    cluster = {"aks": {"resourceGroup": "rg", "name": "k", "aiToolchainOperator": True}}
    ws = {"name": "phi", "model": "phi-3-mini-4k-instruct", "instanceType": "Standard_NC24ads_A100_v4", "replicas": 2}
    raw = aks(pools=[], workspaces=[ws], cluster=cluster)
    ev = run(raw)
    assert service(ev, "phi")["spec"]["selector"] == {"kaito.sh/workspace": "phi-0"}
    assert policies(ev)["phi-ingress"]["spec"]["podSelector"] == {
        "matchExpressions": [{"key": "kaito.sh/workspace", "operator": "In", "values": ["phi-0", "phi-1"]}]
    }
    said = warnings_of(raw)
    assert any(
        w.startswith("workspaces[0].replicas: KAITO 0.6.0's pods carry only their Workspace's name") for w in said
    )


def test_models_in_a_namespace_the_stack_does_not_create_are_told_it_has_no_pod_security_labels():
    said = [w for w in warnings_of(config([PHI, {**CPU, "namespace": "default"}]), unlabelled=True) if "Pod Sec" in w]
    assert said == [
        "workspaces[0].namespace: namespace default is not one this stack creates, so it gets no Pod Security labels "
        "from it (its pods are admitted by whatever labels it has); a namespace of the models' own, which the stack "
        "creates, enforces Pod Security's baseline level"
    ]
    assert [w for w in warnings_of(config([{**PHI, "namespace": "llm"}]), unlabelled=True) if "Pod Sec" in w] == []
