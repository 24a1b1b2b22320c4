"""What issue 29 puts in the cluster, on a real API server: the namespace the stack creates with
its Pod Security labels (and the API server's Pod Security admission enforcing them: a pod with
a host path refused, a plain one admitted), a NetworkPolicy per model and RAG engine, internal
and public load balancer Services, and the RAG engine's own load balancer: each object as the
program wrote it, accepted and stored by kube-apiserver 1.36."""

from __future__ import annotations

import json
import urllib.error
from pathlib import Path

import pytest
import yaml
from harness import Cluster, StandInKaito, StandInNamespaces, names, stack_project

A100 = "Standard_NC24ads_A100_v4"
NS = "secure"
INTERNAL = "service.beta.kubernetes.io/azure-load-balancer-internal"
GATEWAY = {"namespace": "gateway", "podLabels": {"app": "gateway"}}


def pod(name: str, host_path: bool) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "registry.invalid/stand-in"}]}
    if host_path:
        spec["volumes"] = [{"name": "cuda", "hostPath": {"path": "/opt/kaito/cuda/129"}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "cuda", "mountPath": "/opt/kaito/cuda/129"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_the_security_objects_are_accepted_and_pod_security_is_enforced(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> None:
    project = stack_project(bin_dir, cluster, work, "secure", "secure", kubernetes_provider)
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        "kaito-aks:kaito": {"version": "0.8.1", "install": False, "nodeProvisioning": "auto"},
        "kaito-aks:endpoints": {"allowFrom": [GATEWAY]},
        "kaito-aks:workspaces": [
            {
                "name": "phi",
                "namespace": NS,
                "model": "phi-4-mini-instruct",
                "instanceType": A100,
                "loadBalancer": True,
            },
            {
                "name": "open",
                "namespace": NS,
                "model": "phi-4-mini-instruct",
                "instanceType": A100,
                "loadBalancer": {"internal": False, "sourceRanges": ["198.51.100.0/24"]},
                "allowFrom": [{"namespace": "monitoring"}],
            },
        ],
        "kaito-aks:ragEngines": [
            {
                "name": "docs-rag",
                "namespace": NS,
                "workspace": "phi",
                "contextWindowSize": 4096,
                "compute": {
                    "instanceType": "Standard_NV36ads_A10_v5",
                    "labelSelector": {"matchLabels": {"apps": "rag"}},
                },
                "loadBalancer": True,
            }
        ],
    }
    (project.path / "Pulumi.secure.yaml").write_text(yaml.safe_dump({"config": config}))
    project.init()
    namespaces = StandInNamespaces(cluster, {NS})
    try:
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        namespace = json.loads(cluster.kubectl("get", "namespace", NS, "-o", "json").stdout)
        labels = namespace["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
        assert labels["pod-security.kubernetes.io/audit"] == labels["pod-security.kubernetes.io/warn"] == "restricted"

        # the API server's Pod Security admission holds the namespace to it
        with pytest.raises(urllib.error.HTTPError) as refused:
            cluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("host-path", host_path=True))
        assert refused.value.code == 403
        said = json.loads(refused.value.read())["message"]
        assert 'violates PodSecurity "baseline:latest": hostPath volumes (volume "cuda")' in said
        assert cluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("plain", host_path=False))["metadata"]["uid"]
        cluster.api("DELETE", f"/api/v1/namespaces/{NS}/pods/plain")

        policies = cluster.objects("networkpolicies", NS)
        assert set(policies) == {"phi-ingress", "open-ingress", "docs-rag-ingress"}
        open_ = policies["open-ingress"]["spec"]
        assert open_["podSelector"] == {"matchLabels": {"inferenceset.kaito.sh/created-by": "open"}}
        assert open_["policyTypes"] == ["Ingress"]
        assert open_["ingress"][0]["from"] == [
            {"podSelector": {}},
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}},
                "podSelector": {"matchLabels": {"app": "gateway"}},
            },
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}},
        ]
        assert open_["ingress"][1] == {
            "from": [{"ipBlock": {"cidr": "198.51.100.0/24"}}],
            "ports": [{"port": 5000, "protocol": "TCP"}],
        }
        rag_policy = policies["docs-rag-ingress"]["spec"]
        assert rag_policy["podSelector"] == {"matchLabels": {"kaito.sh/ragengine": "docs-rag"}}

        services = cluster.objects("services", NS)
        internal = services["phi"]
        assert internal["spec"]["type"] == "LoadBalancer"
        assert internal["metadata"]["annotations"][INTERNAL] == "true"
        assert internal["spec"]["externalTrafficPolicy"] == "Local"
        public = services["open"]
        assert INTERNAL not in public["metadata"]["annotations"]
        assert public["spec"]["loadBalancerSourceRanges"] == ["198.51.100.0/24"]
        rag_lb = services["docs-rag-lb"]
        assert rag_lb["spec"]["selector"] == {"kaito.sh/ragengine": "docs-rag"}
        assert rag_lb["metadata"]["annotations"][INTERNAL] == "true"
        engine = cluster.objects("ragengines.kaito.sh", NS)["docs-rag"]
        assert "kaito.sh/enablelb" not in (engine["metadata"].get("annotations") or {})
        project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", quiet=True)
    finally:
        namespaces.start()
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True, check=False)
        namespaces.stop()
    assert namespaces.finalized == {NS}
    assert not cluster.kubectl_ok("get", "namespace", NS)


def test_a_kubeconfig_that_moves_to_an_exec_plugin_for_the_same_cluster_replaces_nothing(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> None:
    """What an existing AKS stack sees when its cluster turns to Entra ID: the `kubeconfig` the
    program's Kubernetes provider gets changes from a static credential to kubelogin's exec
    plugin, for the same server and CA. pulumi-kubernetes replaces its provider (and with it every
    object) only when the active cluster changes: here it is an update of the provider alone,
    and the waits read the cluster through the plugin too."""
    project = stack_project(bin_dir, cluster, work, "entra", "entra", kubernetes_provider)
    config = {
        "kaito-aks:cluster": {"kubeconfig": {}},
        "kaito-aks:kaito": {"version": "0.8.1", "install": False},
        "kaito-aks:workspaces": [
            {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
        ],
    }
    (project.path / "Pulumi.entra.yaml").write_text(yaml.safe_dump({"config": config}))
    project.init()
    static = json.loads(cluster.kubeconfig.read_text())
    project.pulumi("config", "set", "--secret", "kubeconfig", stdin=json.dumps(static), quiet=True)
    try:
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        token = static["users"][0]["user"]["token"]
        plugin = work / "kubelogin-stand-in"
        credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": {"token": token}}  # fmt: skip
        plugin.write_text(f"#!/bin/sh\necho '{json.dumps(credential)}'\n")
        plugin.chmod(0o755)
        entra = json.loads(json.dumps(static))
        entra["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": str(plugin),
                "args": ["get-token", "--login", "azurecli", "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630"],
                "provideClusterInfo": False,
            }
        }
        project.pulumi("config", "set", "--secret", "kubeconfig", stdin=json.dumps(entra), quiet=True)
        ops = project.preview_steps()
        changed = {op: sorted(names(s)) for op, s in ops.items() if op != "same"}
        assert changed == {"update": ["cluster"]}, changed  # the provider alone, updated in place
        assert ops["update"][0]["urn"].split("::")[2].endswith("$pulumi:providers:kubernetes")
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", quiet=True)
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True, check=False)
