"""Karpenter, KAITO 0.12's node provisioner, against the real engine and an API server with
Karpenter 1.12.0's own CRDs (and their validation rules) beside KAITO 0.12.0's:

- the NodePool KAITO 0.12 creates for a Workspace (karpenter.azure.com/placement-scope among its
  requirements) and its AKSNodeClasses are accepted, and the rules that make that acceptance
  mean something refuse what they should;
- a model of a stack in Karpenter mode (KAITO installed elsewhere, a node class chosen) is served
  end to end: the stand-in for KAITO makes the NodePool as KAITO does, the stand-in for Karpenter
  makes its NodeClaim into a node (each says it is a stand-in), `pulumi up` returns when the
  model serves, and `pulumi destroy` leaves no NodePool, NodeClaim or node behind;
- the kubelet bootstrap token and SSH key the Karpenter component makes, deployed by a program
  through the real engine: the API server authenticates the token as a bootstrapper of the
  group the bindings name, which may then create a node's certificate request (TLS
  bootstrapping), and nothing secret reaches the state in plaintext.

Where Azure is involved (the identity, the roles, the chart from MCR) the render tests prove
what is sent (tests/test_stack_karpenter.py, components/tests/test_karpenter.py); no Azure or
registry is reachable here."""

from __future__ import annotations

import base64
import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from harness import _INSECURE, CREATED_BY, Cluster, Project, stack_project, wait_for
from karpenter_stand_ins import NODECLAIMS, NODEPOOLS, StandInKaito012Karpenter, StandInKarpenter, kaito_nodepool

NS = "karpenter12"
MODEL = "phi"
A100 = "Standard_NC24ads_A100_v4"
GROUP = "system:bootstrappers:kaito-aks-karpenter"

# The NodePool and AKSNodeClasses exactly as KAITO 0.12.0 creates them (pkg/nodeprovision/karpenter
# nodepool.go generateNodePool, provisioner.go newNodeClassObject; consts.go), for InferenceSet phi
# in namespace kaito012, child Workspace phi-x7k2q, instanceType Standard_NC24ads_A100_v4,
# labelSelector apps: phi, TargetNodeCount 1.
KAITO_OBJECTS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: kaito012-phi-x7k2q
  labels:
    karpenter.kaito.sh/managed-by: kaito
    karpenter.kaito.sh/workspace-name: phi-x7k2q
    karpenter.kaito.sh/workspace-namespace: kaito012
    karpenter.kaito.sh/inferenceset: phi
    karpenter.kaito.sh/inferenceset-namespace: kaito012
spec:
  replicas: 1
  template:
    metadata:
      labels:
        karpenter.kaito.sh/workspace-name: phi-x7k2q
        karpenter.kaito.sh/workspace-namespace: kaito012
        apps: phi
        karpenter.kaito.sh/inferenceset: phi
        karpenter.kaito.sh/inferenceset-namespace: kaito012
    spec:
      nodeClassRef: {group: karpenter.azure.com, kind: AKSNodeClass, name: image-family-ubuntu}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [Standard_NC24ads_A100_v4]}
      - {key: karpenter.azure.com/placement-scope, operator: In, values: [regional]}
      taints:
      - {key: sku, value: gpu, effect: NoSchedule}
  disruption:
    consolidateAfter: 0s
    budgets:
    - {nodes: "0", reasons: [Drifted]}
---
apiVersion: karpenter.azure.com/v1beta1
kind: AKSNodeClass
metadata:
  name: image-family-ubuntu
  labels: {karpenter.kaito.sh/managed-by: kaito, karpenter.kaito.sh/default: "true"}
spec: {imageFamily: Ubuntu2204, osDiskSizeGB: 300}
---
apiVersion: karpenter.azure.com/v1beta1
kind: AKSNodeClass
metadata:
  name: image-family-azure-linux
  labels: {karpenter.kaito.sh/managed-by: kaito}
spec: {imageFamily: AzureLinux, osDiskSizeGB: 300}
"""


def refusal(cluster: Cluster, manifest: dict[str, Any]) -> str:
    """What the API server says to a server-side dry run of `manifest` ("" when it takes it)."""
    path = cluster.work / "manifest.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", str(path), check=False)
    return "" if result.returncode == 0 else result.stderr


def test_karpenters_crds_take_kaitos_nodepool_and_node_classes_and_refuse_what_they_must(
    cluster_karpenter: Cluster,
) -> None:
    pool, *classes = list(yaml.safe_load_all(KAITO_OBJECTS))
    for manifest in (pool, *classes):
        assert refusal(cluster_karpenter, manifest) == "", manifest["metadata"]["name"]
    # the stand-in for KAITO builds the same NodePool
    workspace = {
        "metadata": {"name": "phi-x7k2q", "namespace": "kaito012", "labels": {CREATED_BY: "phi"}},
        "resource": {"instanceType": A100, "labelSelector": {"matchLabels": {"apps": "phi"}}},
    }
    assert kaito_nodepool(workspace, 1) == pool
    # the CRD's rule lists the karpenter.azure.com keys it allows: one outside it is refused ...
    zone = json.loads(json.dumps(pool))
    zone["spec"]["template"]["spec"]["requirements"][1]["key"] = "karpenter.azure.com/placement-zone"
    said = refusal(cluster_karpenter, zone)
    assert "karpenter.azure.com" in said, said
    # ... and a static NodePool (replicas, which KAITO sets) takes no weight
    weighted = {**pool, "spec": {**pool["spec"], "weight": 10}}
    assert "'weight' is not supported on static NodePools" in refusal(cluster_karpenter, weighted)
    nodeclaim_spec = {"nodeClassRef": pool["spec"]["template"]["spec"]["nodeClassRef"], "requirements": []}
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "x"}, "spec": nodeclaim_spec}
    assert refusal(cluster_karpenter, claim) == ""


@pytest.fixture(scope="module")
def project(
    bin_dir: Path,
    cluster_karpenter: Cluster,
    work: Path,
    kaito_karpenter: StandInKaito012Karpenter,
    kubernetes_provider: str,
) -> Iterator[Project]:
    cluster_karpenter.kubectl("create", "namespace", NS)
    p = stack_project(bin_dir, cluster_karpenter, work, "karpenter-stack", "karpenter12", kubernetes_provider)
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        # KAITO 0.12 runs there in Karpenter mode (the stand-ins): the stack creates the model
        "kaito-aks:kaito": {"version": "0.12.0", "install": False, "nodeProvisioning": "auto", "nodeProvisioner": "karpenter"},
        "kaito-aks:workspaces": [
            {"name": MODEL, "namespace": NS, "model": "phi-4-mini-instruct", "instanceType": A100, "nodeClass": "azure-linux"}
        ],
        "kaito-aks:createNamespaces": False,
    }  # fmt: skip
    (p.path / "Pulumi.karpenter12.yaml").write_text(yaml.safe_dump({"config": config}))
    p.init()
    yield p
    p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)


def within(expected: Any, actual: Any) -> bool:
    """Every key of `expected` is in `actual` with the same value (lists item by item)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and within(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(within, expected, actual))
    return bool(expected == actual)


def listed(cluster: Cluster, path: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in cluster.api("GET", path)["items"]}


def test_a_model_is_served_through_karpenter_and_leaves_nothing_behind(
    project: Project,
    cluster_karpenter: Cluster,
    kaito_karpenter: StandInKaito012Karpenter,
    karpenter: StandInKarpenter,
) -> None:
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    returned = time.time()
    iset = cluster_karpenter.api("GET", f"/apis/kaito.sh/v1beta1/namespaces/{NS}/inferencesets/{MODEL}")
    assert iset["spec"]["template"]["metadata"]["annotations"] == {
        "kaito.sh/node-class-name": "image-family-azure-linux"
    }
    key = f"{NS}/{MODEL}/{iset['metadata']['uid']}"
    assert kaito_karpenter.ready_at[key] <= returned, "pulumi up returned before the model served"
    (child_name, child), *more = {
        n: w
        for n, w in listed(cluster_karpenter, f"/apis/kaito.sh/v1beta1/namespaces/{NS}/workspaces").items()
        if w["metadata"]["labels"].get(CREATED_BY) == MODEL
    }.items()
    assert not more
    stages = kaito_karpenter.conditions[f"{NS}/{child_name}/{child['metadata']['uid']}"]
    assert stages[0] == ("ResourceReady", "False", "NodeClaimNotReady")  # waiting for Karpenter's node
    assert ("ResourceReady", "True", "workspaceResourceStatusSuccess") in stages
    # KAITO's NodePool, taken by Karpenter's CRD, with the node class the model chose
    pools = listed(cluster_karpenter, NODEPOOLS)
    pool = pools[f"{NS}-{child_name}"]
    assert within(kaito_nodepool(child, 1)["spec"], pool["spec"])  # (the CRD adds its defaults)
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"  # one of them
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "image-family-azure-linux"
    # Karpenter's NodeClaim, and the node it became
    (claim_name, claim), *more_claims = listed(cluster_karpenter, NODECLAIMS).items()
    assert not more_claims
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == pool["metadata"]["name"]
    assert {c["type"] for c in claim["status"]["conditions"] if c["status"] == "True"} >= {"Launched", "Ready"}
    node = cluster_karpenter.api("GET", f"/api/v1/nodes/{claim['status']['nodeName']}")
    assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == A100
    assert node["metadata"]["labels"]["karpenter.kaito.sh/workspace-name"] == child_name
    assert {"key": "sku", "value": "gpu", "effect": "NoSchedule"} in node["spec"]["taints"]  # the NodePool's
    assert set(project.preview_steps()) == {"same"}, "a second look found changes"

    project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        listed(cluster_karpenter, NODEPOOLS) or listed(cluster_karpenter, NODECLAIMS)
    ):
        time.sleep(0.3)
    assert listed(cluster_karpenter, NODEPOOLS) == {}, "KAITO's NodePool stayed"
    assert listed(cluster_karpenter, NODECLAIMS) == {}, "Karpenter's NodeClaim stayed"
    assert claim_name in karpenter.terminated
    assert cluster_karpenter.kubectl_ok("get", "node", claim["status"]["nodeName"]) is False, "the node stayed"


# ---------------------------------------------------------------- the bootstrap token, through the engine

PROGRAM = '''"""A program of the e2e: the Karpenter component's bootstrap token and SSH key, as it makes them."""
import pulumi

from kaito_aks import KubeconfigCluster, KubeconfigClusterArgs, NodeBootstrapToken, NodeBootstrapTokenArgs, SshPublicKey

rotation = pulumi.Config().get_int("rotation") or 0
cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(context="e2e"))
token = NodeBootstrapToken(
    "nodes",
    NodeBootstrapTokenArgs(group="{group}", rotation=rotation),
    opts=pulumi.ResourceOptions(provider=cluster.provider),
)
key = SshPublicKey("nodes-ssh")
pulumi.export("token", token.token)
pulumi.export("tokenId", token.token_id)
pulumi.export("sshPublicKey", key.public_key_openssh)
'''


def as_token(
    cluster: Cluster, token: str, method: str, path: str, body: dict[str, Any] | None = None
) -> tuple[int, Any]:
    """One call with `token` as the credential: its HTTP status and answer."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(cluster.server + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5, context=_INSECURE) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def node_csr(node: str) -> dict[str, Any]:
    """A kubelet's client certificate request, as it sends it with a bootstrap token."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
        ]
    )
    pem = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(subject)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"generateName": "node-csr-"},
        "spec": {
            "request": base64.b64encode(pem).decode(),
            "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"],
        },
    }


def test_the_bootstrap_token_lets_a_node_ask_for_its_certificate_and_nothing_more(
    bin_dir: Path, cluster_karpenter: Cluster, work: Path, kubernetes_provider: str
) -> None:
    project = stack_project(bin_dir, cluster_karpenter, work, "bootstrap", "bootstrap", kubernetes_provider)
    (project.path / "__main__.py").write_text(PROGRAM.replace("{group}", GROUP))
    project.init()
    try:
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        outputs = json.loads(
            project.pulumi("stack", "output", "--json", "--show-secrets", secret=True, quiet=True).stdout
        )
        token, token_id = outputs["token"], outputs["tokenId"]
        assert token.startswith(f"{token_id}.")
        # the API server takes it as a bootstrapper of the group the bindings name
        status, review = as_token(cluster_karpenter, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                  {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})  # fmt: skip
        assert status == 201, review
        user = review["status"]["userInfo"]
        assert user["username"] == f"system:bootstrap:{token_id}"
        assert {"system:bootstrappers", GROUP} <= set(user["groups"])
        # TLS bootstrapping: it may ask for a node's client certificate, auto-approved ...
        status, csr = as_token(
            cluster_karpenter,
            token,
            "POST",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            node_csr("aks-karpenter-e2e"),
        )
        assert status == 201, csr
        assert csr["spec"]["username"] == f"system:bootstrap:{token_id}"
        cluster_karpenter.api(
            "DELETE", f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{csr['metadata']['name']}"
        )
        for resource, subresource, allowed in (
            ("certificatesigningrequests", "nodeclient", True),
            ("secrets", "", False),
        ):
            attributes = {"verb": "create", "group": "certificates.k8s.io" if resource != "secrets" else "",
                          "resource": resource, "subresource": subresource}  # fmt: skip
            status, access = as_token(cluster_karpenter, token, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                      {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                                       "spec": {"resourceAttributes": attributes}})  # fmt: skip
            assert status == 201
            assert access["status"]["allowed"] is allowed, (resource, access["status"])  # ... and nothing more
        # the key is a real public key; neither the token's secret nor a private key is in the state
        public = serialization.load_ssh_public_key(outputs["sshPublicKey"].encode())
        assert isinstance(public, rsa.RSAPublicKey)
        assert public.key_size == 4096
        state = project.pulumi("stack", "export", quiet=True).stdout
        assert token.split(".")[1] not in state, "the token's secret is in the state in plaintext"
        assert "PRIVATE KEY" not in state
        assert set(project.preview_steps()) == {"same"}, "the token or the key would change on the next up"
        # rotated: the old token no longer authenticates, the new one does
        project.pulumi("config", "set", "rotation", "1", quiet=True)
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        rotated = json.loads(
            project.pulumi("stack", "output", "--json", "--show-secrets", secret=True, quiet=True).stdout
        )
        assert rotated["tokenId"] != token_id
        assert rotated["sshPublicKey"] == outputs["sshPublicKey"], "the SSH key changed with the token"
        secrets = [n for n in cluster_karpenter.objects("secrets", "kube-system") if n.startswith("bootstrap-token-")]
        assert secrets == [f"bootstrap-token-{rotated['tokenId']}"], secrets  # the old one replaced
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        wait_for(  # (the authenticator reads the Secrets through its cache)
            lambda: as_token(cluster_karpenter, token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)[0] == 401,
            "the old token refused", 30,
        )  # fmt: skip
        assert as_token(cluster_karpenter, rotated["token"], "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})[0] == 201  # fmt: skip
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True, check=False)
    assert not [n for n in cluster_karpenter.objects("secrets", "kube-system") if n.startswith("bootstrap-token-")]
    assert not cluster_karpenter.kubectl_ok("get", "clusterrolebinding", "kaito-aks-karpenter-node-bootstrapper")


# ---------------------------------------------------------------- destroy: NodeClaims first

DESTROY_PROGRAM = '''"""A program of the e2e: what Karpenter runs on (its bootstrap token, as the Karpenter
component makes it) and the wait the component puts before it on destroy."""
import pulumi

from kaito_aks import KubeconfigCluster, KubeconfigClusterArgs, NodeBootstrapToken, NodeBootstrapTokenArgs
from kaito_aks.waits.nodeclaims_gone import NodeClaimsGone

cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(context="e2e"))
token = NodeBootstrapToken(
    "nodes", NodeBootstrapTokenArgs(group="{group}"), opts=pulumi.ResourceOptions(provider=cluster.provider)
)
NodeClaimsGone(
    "karpenter/nodeclaims-gone",
    cluster.provider.access,
    timeout_minutes=2,
    opts=pulumi.ResourceOptions(depends_on=[token]),
    karpenter=True,
)
'''


def test_destroy_waits_for_the_nodeclaims_of_kaitos_nodepools_before_removing_what_karpenter_runs_on(
    bin_dir: Path, cluster_karpenter: Cluster, work: Path, karpenter: StandInKarpenter, kubernetes_provider: str
) -> None:
    project = stack_project(bin_dir, cluster_karpenter, work, "destroy-order", "order", kubernetes_provider)
    (project.path / "__main__.py").write_text(DESTROY_PROGRAM.replace("{group}", GROUP))
    project.init()
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    # a Workspace's NodePool, as KAITO makes it; the stand-in for Karpenter makes its node
    pool = next(yaml.safe_load_all(KAITO_OBJECTS))
    pool["metadata"]["name"] = "order-phi-a1b2c"
    cluster_karpenter.api("POST", NODEPOOLS, pool)
    wait_for(lambda: any(c.get("status", {}).get("nodeName") for c in listed(cluster_karpenter, NODECLAIMS).values()),
             "Karpenter's node", 30)  # fmt: skip
    (claim,) = [c for c in listed(cluster_karpenter, NODECLAIMS).values() if c["metadata"]["labels"]["karpenter.sh/nodepool"] == "order-phi-a1b2c"]  # fmt: skip
    destroy = subprocess.Popen(
        [str(bin_dir / "pulumi"), "destroy", "--yes", "--skip-preview", "--non-interactive", "--stack", "order"],
        cwd=project.path, env=project.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        time.sleep(8)
        assert destroy.poll() is None, "destroy did not wait for the NodeClaim: " + (
            destroy.stdout.read() if destroy.stdout else ""
        )
        assert claim["metadata"]["name"] in listed(cluster_karpenter, NODECLAIMS)
        kept = [n for n in cluster_karpenter.objects("secrets", "kube-system") if n.startswith("bootstrap-token-")]
        assert kept, "what Karpenter runs on was removed while its NodeClaim still existed"
        # the Workspace goes: KAITO deletes its NodePool, Karpenter the NodeClaim and the node
        cluster_karpenter.api("DELETE", f"{NODEPOOLS}/order-phi-a1b2c")
        output, _ = destroy.communicate(timeout=120)
    finally:
        if destroy.poll() is None:
            destroy.kill()
    assert destroy.returncode == 0, output[-3000:]
    assert claim["metadata"]["name"] in karpenter.terminated
    assert claim["metadata"]["name"] not in listed(cluster_karpenter, NODECLAIMS)
    assert not cluster_karpenter.kubectl_ok("get", "node", claim["status"]["nodeName"])
    assert not [n for n in cluster_karpenter.objects("secrets", "kube-system") if n.startswith("bootstrap-token-")]
