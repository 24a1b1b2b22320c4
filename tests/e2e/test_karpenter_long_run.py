"""Karpenter's cluster side through a stack's life (issue 37), against the real engine, Helm as
the Kubernetes provider embeds it, and an API server that authenticates bootstrap tokens:

- a stack deployed before the karpenter-crd chart (Karpenter's CRDs from the karpenter chart's
  crds/ folder, KAITO's NodePool and AKSNodeClass in them) moves them to the CRD chart on its
  next `up` with no replacement or deletion: the same CRDs (uids), the same objects, now a Helm
  release's own (so a later chart version upgrades them); without the step that hands them over,
  Helm refuses the CRD chart ("invalid ownership metadata") and changes nothing;
- the kubelet bootstrap token carries an expiry the API server honours (refused once past), and
  `pulumi up` renews it once half its lifetime has passed (the time is moved by editing the
  issue time the state records: the engine's diff decides, as it will a fortnight later); the new
  token reaches what Karpenter's KUBELET_BOOTSTRAP_TOKEN reads, its pod template changes so the
  controller restarts on it, and no token is in the state in plaintext;
- `pulumi destroy` leaves the CRDs (and KAITO's objects) as the crds/ folder did, and a later
  `up` takes them over again.

What runs: the library's KarpenterCrds, NodeBootstrapToken, token copy, values and release
(operators/karpenter.py's own functions; the Karpenter component around them also needs Azure,
which is not here: its wiring is tests/test_stack_karpenter.py's and the render's). The charts
come from a stand-in for mcr.microsoft.com (registry_stand_in.py) by their real references: the
karpenter-crd chart rebuilt from Karpenter 1.12.0's CRDs, and a stand-in for the karpenter
chart with those CRDs in crds/ and a paused Deployment that takes the controller's values where
the real chart puts them (no controller, kubelet or namespace controller runs here)."""

from __future__ import annotations

import base64
import contextlib
import datetime
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import KARPENTER_CRDS
from harness import Cluster, Project, StandInNamespaces, stack_project, wait_for
from registry_stand_in import StandInRegistry, karpenter_chart_stand_in, karpenter_crd_chart

from test_karpenter import KAITO_OBJECTS, as_token

CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRDS = sorted(p.stem for p in KARPENTER_CRDS.glob("*.yaml"))
TOKEN_TYPE = "pulumi-python:dynamic/kaito-aks:BootstrapToken"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}

PROGRAM = '''"""A program of the e2e: Karpenter's cluster side, as the Karpenter component makes it, through
a stack's life: `phase` before (its CRDs from the karpenter chart's crds/, as 0.4.0's component
installed them) and after (from the karpenter-crd chart)."""
import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import KarpenterCrds, KarpenterCrdsArgs, KubeconfigCluster, KubeconfigClusterArgs, catalog
from kaito_aks import NodeBootstrapToken, NodeBootstrapTokenArgs
from kaito_aks.operators.gpu_provisioner import cluster_ref
from kaito_aks.operators.helm import ChartRelease, pinned_release
from kaito_aks.operators.karpenter import (
    BOOTSTRAP_GROUP, INSTALL_TIMEOUT_SECONDS, KarpenterArgs, KarpenterNetworkArgs, KubeletIdentityArgs, OnAks,
    karpenter_values, token_copy,
)

phase = pulumi.Config().get("phase") or "before"
after = phase == "after"
cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(context="e2e"))
on = pulumi.ResourceOptions(provider=cluster.provider)
bootstrap = NodeBootstrapToken("karpenter-bootstrap", NodeBootstrapTokenArgs(group=BOOTSTRAP_GROUP), opts=on)
namespace = k8s.core.v1.Namespace("karpenter-namespace", metadata={"name": "karpenter"}, opts=on)
token = token_copy("karpenter-bootstrap-token", namespace, bootstrap.token, on)
# what Azure would give (no Azure here): the values are made from them as the component makes them
cluster_id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/e2e"
args = KarpenterArgs(
    cluster_id=cluster_id, location="eastus2", node_resource_group="MC_rg_e2e_eastus2",
    oidc_issuer_url="https://oidc.example/e2e/", api_server_endpoint="https://e2e-0123456789abcdef.hcp.eastus2.azmk8s.io:443",
    kubelet_identity=KubeletIdentityArgs(client_id="00000000-0000-0000-0000-000000000001", resource_id="kubelet"),
    network=KarpenterNetworkArgs(
        subnet_id="/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes",
        vnet_guid="00000000-0000-0000-0000-000000000002", plugin="azure", plugin_mode="overlay", policy="cilium", dataplane="cilium",
    ),
)
values = karpenter_values(
    args, OnAks.of(args), pulumi.Output.from_input(cluster_id).apply(cluster_ref), endpoint=args.api_server_endpoint,
    client_id="00000000-0000-0000-0000-000000000003", ssh_public_key="ssh-rsa AAAAe2e", token_id=bootstrap.token_id,
)
before = [bootstrap, namespace, token]
if phase == "unadopted":  # the negative control: the CRD chart without the hand-over
    from kaito_aks.operators.karpenter_crds import crd_release
    pinned_release("unadopted", crd_release("1.12.0"), 120, pulumi.ResourceOptions(provider=cluster.provider, depends_on=[namespace]))
if after:
    crds = KarpenterCrds("karpenter-crds", KarpenterCrdsArgs(), opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[namespace]))
    before.append(crds)
    pulumi.export("adopted", crds.adopted)
pinned_release(
    "karpenter",
    ChartRelease.of(catalog.karpenter_chart_source(), "1.12.0", values),
    INSTALL_TIMEOUT_SECONDS,
    pulumi.ResourceOptions(provider=cluster.provider, depends_on=before),
    skip_crds=after,
)
pulumi.export("token", bootstrap.token)
pulumi.export("tokenId", bootstrap.token_id)
pulumi.export("expires", bootstrap.expires)
'''


@pytest.fixture(scope="module")
def registry(work: Path) -> Iterator[StandInRegistry]:
    crds = sorted(KARPENTER_CRDS.glob("*.yaml"))
    stand_in = StandInRegistry(work / "registry")
    stand_in.add("aks/karpenter/karpenter-crd", *karpenter_crd_chart(crds, "1.12.0"))
    stand_in.add("aks/karpenter/karpenter", *karpenter_chart_stand_in(crds, "1.12.0"))
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def project(
    bin_dir: Path, cluster_karpenter_upgrade: Cluster, work: Path, registry: StandInRegistry, kubernetes_provider: str
) -> Iterator[Project]:
    p = stack_project(bin_dir, cluster_karpenter_upgrade, work, "karpenter-long-run", "long", kubernetes_provider)
    p.env.update(registry.env())
    (p.path / "__main__.py").write_text(PROGRAM)
    p.init()
    yield p
    with namespace_controller(cluster_karpenter_upgrade):
        p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)


@contextlib.contextmanager
def namespace_controller(cluster: Cluster) -> Iterator[None]:
    """The stand-in namespace controller, for one deletion of Karpenter's namespace."""
    namespaces = StandInNamespaces(cluster, {"karpenter"})
    namespaces.start()
    try:
        yield
    finally:
        namespaces.stop()


def crds(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in cluster.api("GET", CRD_API)["items"] if o["metadata"]["name"] in CRDS}


def helm_release(cluster: Cluster, name: str, namespace: str, revision: int) -> dict[str, Any]:
    """A release as Helm stores it: Secret sh.helm.release.v1.<name>.v<revision>, its `release`
    base64 (Kubernetes) of base64 of gzip of JSON."""
    secret = cluster.api("GET", f"/api/v1/namespaces/{namespace}/secrets/sh.helm.release.v1.{name}.v{revision}")
    data = base64.b64decode(base64.b64decode(secret["data"]["release"]))
    return dict(json.loads(gzip.decompress(data)))


def steps(project: Project) -> dict[str, set[str]]:
    return {op: {s["urn"].rsplit("::", 1)[1] for s in found} for op, found in project.preview_steps().items()}


def expiry(cluster: Cluster, token_id: str) -> datetime.datetime:
    secret = cluster.api("GET", f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{token_id}")
    text = base64.b64decode(secret["data"]["expiration"]).decode()
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)


def secret_outputs(project: Project) -> dict[str, Any]:
    return dict(
        json.loads(project.pulumi("stack", "output", "--json", "--show-secrets", secret=True, quiet=True).stdout)
    )


def test_karpenter_keeps_its_crds_and_objects_moving_to_the_crd_chart_and_renews_its_token(
    project: Project, cluster_karpenter_upgrade: Cluster, registry: StandInRegistry
) -> None:
    cluster = cluster_karpenter_upgrade
    # ---- before: the CRDs as the karpenter chart's crds/ folder installs them, KAITO's objects in them
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    assert "aks/karpenter/karpenter:1.12.0" in registry.pulled  # Helm pulled oci://mcr.microsoft.com/...
    installed = crds(cluster)
    assert sorted(installed) == CRDS
    assert not any("meta.helm.sh/release-name" in (c["metadata"].get("annotations") or {}) for c in installed.values())
    pool, *classes = yaml.safe_load_all(KAITO_OBJECTS)
    for manifest in (pool, *classes):
        cluster.api("POST", "/apis/karpenter.sh/v1/nodepools" if manifest["kind"] == "NodePool"
                    else "/apis/karpenter.azure.com/v1beta1/aksnodeclasses", manifest)  # fmt: skip
    objects = {
        "nodepool": cluster.api("GET", f"/apis/karpenter.sh/v1/nodepools/{pool['metadata']['name']}")["metadata"][
            "uid"
        ],
        "nodeclass": cluster.api("GET", "/apis/karpenter.azure.com/v1beta1/aksnodeclasses/image-family-ubuntu")[
            "metadata"
        ]["uid"],
    }

    # ---- without the hand-over, Helm refuses the CRD chart over them (the check can fail)
    project.pulumi("config", "set", "phase", "unadopted", quiet=True)
    refused = project.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
    assert refused.returncode != 0
    said = refused.stdout + refused.stderr
    assert "exists and cannot be imported into the current release: invalid ownership metadata" in said, said[-2000:]
    assert {n: c["metadata"]["resourceVersion"] for n, c in crds(cluster).items()} == {
        n: c["metadata"]["resourceVersion"] for n, c in installed.items()
    }

    # ---- after: the karpenter-crd chart takes them over, in place
    project.pulumi("config", "set", "phase", "after", quiet=True)
    planned = steps(project)
    assert not {"replace", "create-replacement", "delete-replaced", "delete"} & set(planned), planned
    assert {"karpenter-crds", "karpenter-crds/adopted"} <= planned["create"]
    assert "karpenter" in planned["update"]  # skip_crds: the karpenter chart's crds/ no longer installed
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    assert "aks/karpenter/karpenter-crd:1.12.0" in registry.pulled
    moved = crds(cluster)
    assert {n: c["metadata"]["uid"] for n, c in moved.items()} == {
        n: c["metadata"]["uid"] for n, c in installed.items()
    }
    for crd in moved.values():  # now the karpenter-crd release's own
        assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == "karpenter-crd"
        assert crd["metadata"]["annotations"]["meta.helm.sh/release-namespace"] == "karpenter"
    release = helm_release(cluster, "karpenter-crd", "karpenter", 1)
    assert release["info"]["status"] == "deployed"
    in_manifest = sorted(d["metadata"]["name"] for d in yaml.safe_load_all(release["manifest"]) if d)
    assert in_manifest == CRDS  # what `helm upgrade` of a later version patches
    assert sorted(project.outputs()["adopted"]) == CRDS
    assert (
        cluster.api("GET", f"/apis/karpenter.sh/v1/nodepools/{pool['metadata']['name']}")["metadata"]["uid"]
        == (objects["nodepool"])
    )
    assert (
        cluster.api("GET", "/apis/karpenter.azure.com/v1beta1/aksnodeclasses/image-family-ubuntu")["metadata"]["uid"]
        == objects["nodeclass"]
    )
    assert set(project.preview_steps()) == {"same"}, "a second look found changes"

    # ---- the token: it expires, the API server honours that, and `pulumi up` renews it in time
    first = secret_outputs(project)
    now = datetime.datetime.now(datetime.UTC)
    lapses = expiry(cluster, first["tokenId"])
    assert datetime.timedelta(days=29, hours=23) < lapses - now <= datetime.timedelta(days=30)
    assert first["expires"] == lapses.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (
        as_token(cluster, first["token"], "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW)[0] == 201
    )
    past = base64.b64encode((now - datetime.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ").encode()).decode()
    secret_path = f"/api/v1/namespaces/kube-system/secrets/bootstrap-token-{first['tokenId']}"
    cluster.api("PATCH", secret_path, {"data": {"expiration": past}})
    wait_for(  # (the authenticator reads the Secrets through its cache)
        lambda: as_token(cluster, first["token"], "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW)[0] == 401,
        "the expired token refused", 30,
    )  # fmt: skip
    # sixteen days on: the issue time the state records moved back, as time would move it
    state = json.loads(project.pulumi("stack", "export", quiet=True).stdout)
    (recorded,) = [r for r in state["deployment"]["resources"] if r["type"] == TOKEN_TYPE]
    issued = now - datetime.timedelta(days=16)
    recorded["outputs"]["issued"] = issued.strftime("%Y-%m-%dT%H:%M:%SZ")
    recorded["outputs"]["expires"] = (issued + datetime.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    (project.path / "state.json").write_text(json.dumps(state))
    project.pulumi("stack", "import", "--file", "state.json", quiet=True)
    planned = steps(project)
    assert "karpenter-bootstrap-token" in planned.get("replace", set()) | planned.get("create-replacement", set())
    assert "karpenter" in planned["update"]  # the controller's pod template: the new token's id
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    renewed = secret_outputs(project)
    assert renewed["tokenId"] != first["tokenId"]
    tokens = [n for n in cluster.objects("secrets", "kube-system") if n.startswith("bootstrap-token-")]
    assert tokens == [f"bootstrap-token-{renewed['tokenId']}"]  # the old one deleted
    assert expiry(cluster, renewed["tokenId"]) - datetime.datetime.now(datetime.UTC) > datetime.timedelta(days=29)
    assert (
        as_token(cluster, renewed["token"], "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", REVIEW)[0]
        == 201
    )
    # ... and reaches what Karpenter's KUBELET_BOOTSTRAP_TOKEN reads, with a restart of its pods
    copy = cluster.api("GET", "/api/v1/namespaces/karpenter/secrets/karpenter-bootstrap-token")
    assert base64.b64decode(copy["data"]["token"]).decode() == renewed["token"]
    deployment = cluster.api("GET", "/apis/apps/v1/namespaces/karpenter/deployments/karpenter")
    template = deployment["spec"]["template"]
    assert template["metadata"]["annotations"]["kaito-aks/bootstrap-token-id"] == renewed["tokenId"]
    (container,) = template["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["KUBELET_BOOTSTRAP_TOKEN"]["valueFrom"] == {
        "secretKeyRef": {"name": "karpenter-bootstrap-token", "key": "token"}
    }
    assert container["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    exported = project.pulumi("stack", "export", quiet=True).stdout
    assert renewed["token"].split(".")[1] not in exported, "the token's secret is in the state in plaintext"
    assert first["token"].split(".")[1] not in exported
    assert set(project.preview_steps()) == {"same"}, "the renewed token would change again"

    # ---- destroy leaves the CRDs and KAITO's objects; a later `up` takes the CRDs over again
    with namespace_controller(cluster):
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    assert sorted(crds(cluster)) == CRDS
    assert (
        cluster.api("GET", f"/apis/karpenter.sh/v1/nodepools/{pool['metadata']['name']}")["metadata"]["uid"]
        == (objects["nodepool"])
    )
    assert not [n for n in cluster.objects("secrets", "kube-system") if n.startswith("bootstrap-token-")]
    # (the namespace controller, absent here, would have deleted what the namespace held)
    cluster.kubectl("delete", "secrets", "--all", "-n", "karpenter", "--ignore-not-found")
    wait_for(lambda: not cluster.kubectl_ok("get", "namespace", "karpenter"), "the namespace gone", 30)
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    assert project.outputs()["adopted"] == []  # the CRDs named this release already: Helm took them as they were
    assert helm_release(cluster, "karpenter-crd", "karpenter", 1)["info"]["status"] == "deployed"
    assert {n: c["metadata"]["uid"] for n, c in crds(cluster).items()} == {
        n: c["metadata"]["uid"] for n, c in installed.items()
    }
