"""KAITO 0.12.0 objects on an API server with 0.12.0's CRDs: a stack with KAITO installed
elsewhere (kaito.install false) and node auto-provisioning, whose model KAITO 0.12 serves as an
InferenceSet (kaito.sh/v1beta1) with an instanceType, and a v1beta1 RAGEngine over it. The
stand-in for KAITO 0.12 creates the InferenceSet's child Workspace (`<name>-<5 characters>`,
labelled inferenceset.kaito.sh/created-by), takes it through ResourceReady False
(NodeClaimNotReady), True, then InferenceReady, and reports InferenceSetReady with the ready
replicas. `pulumi up` returns only after that; setting the Hugging Face token on the running
stack (generation 3 of the defaults) replaces nothing; where the child's node fails, `up` fails
with the NodeClaim's reason. The tests run in order on one stack."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import CREATED_BY, E2E_HF_TOKEN, INFERENCESET_FINALIZER, Cluster, Project, StandInKaito012, stack_project

NS = "kaito012"
MODEL, BROKEN, RAG = "phi", "no-quota", "docs-rag"
A100 = "Standard_NC24ads_A100_v4"
CHILD = re.compile(rf"{MODEL}-[a-z0-9]{{5}}")  # generateName <name>-: 5 random characters
# What Azure says when the subscription has no quota for the size, as karpenter's Launched
# condition carries it (stand-in text) and KAITO 0.12 copies into NodeClaimReady/ResourceReady.
QUOTA = (
    "LaunchFailed",
    "creating instance, Operation could not be completed as it results in exceeding approved "
    "standardNCADSA100v4Family Cores quota (stand-in reason)",
)


@pytest.fixture(scope="module")
def project(
    bin_dir: Path, cluster_0_12: Cluster, work: Path, kaito_0_12: StandInKaito012, kubernetes_provider: str
) -> Iterator[Project]:
    cluster_0_12.kubectl("create", "namespace", NS)
    p = stack_project(bin_dir, cluster_0_12, work, "kaito-0-12", "auto12", kubernetes_provider)
    config = {
        "kaito-aks:defaults": 3,  # a new stack: the Hugging Face token only where needed
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        "kaito-aks:kaito": {"version": "0.12.0", "install": False, "nodeProvisioning": "auto"},
        "kaito-aks:workspaces": [
            {"name": MODEL, "namespace": NS, "model": "phi-4-mini-instruct", "instanceType": A100}
        ],
        "kaito-aks:ragEngines": [
            {
                "name": RAG,
                "namespace": NS,
                "workspace": MODEL,
                "contextWindowSize": 4096,
                "compute": {"instanceType": A100, "labelSelector": {"matchLabels": {"apps": RAG}}},
            }
        ],
        "kaito-aks:createNamespaces": False,
    }
    (p.path / "Pulumi.auto12.yaml").write_text(yaml.safe_dump({"config": config}))
    p.init()
    yield p
    p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)


def v1beta1(cluster: Cluster, plural: str) -> dict[str, dict[str, Any]]:
    """The namespace's objects of a KAITO kind, read in v1beta1."""
    items = cluster.api("GET", f"/apis/kaito.sh/v1beta1/namespaces/{NS}/{plural}")["items"]
    return {o["metadata"]["name"]: o for o in items}


def children(cluster: Cluster, name: str) -> dict[str, dict[str, Any]]:
    return {n: w for n, w in v1beta1(cluster, "workspaces").items() if w["metadata"]["labels"].get(CREATED_BY) == name}


def condition(obj: dict[str, Any], kind: str) -> tuple[str, str, str]:
    c = next(c for c in obj["status"]["conditions"] if c["type"] == kind)
    return c["status"], c["reason"], c["message"]


def test_an_auto_inference_set_serves_through_its_child_workspace_and_a_v1beta1_ragengine_follows(
    project: Project, cluster_0_12: Cluster, kaito_0_12: StandInKaito012
) -> None:
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    returned = time.time()
    iset = v1beta1(cluster_0_12, "inferencesets")[MODEL]
    assert iset["spec"]["template"]["resource"]["instanceType"] == A100
    assert (iset["status"]["replicas"], iset["status"]["readyReplicas"]) == (1, 1), iset["status"]
    assert iset["status"]["selector"] == f"{CREATED_BY}={MODEL}"
    assert INFERENCESET_FINALIZER in iset["metadata"]["finalizers"]
    assert condition(iset, "InferenceSetReady") == ("True", "inferencesetReady", "inferenceset is ready")
    key = f"{NS}/{MODEL}/{iset['metadata']['uid']}"
    assert kaito_0_12.ready_at[key] <= returned, "pulumi up returned before the InferenceSet was ready"
    assert kaito_0_12.conditions[key][0][:2] == ("InferenceSetReady", "False"), "0/1 ready came first"

    (child_name, child), *more = children(cluster_0_12, MODEL).items()
    assert not more, "one replica, one Workspace"
    assert CHILD.fullmatch(child_name), child_name
    assert child["resource"]["instanceType"] == A100
    assert child["metadata"]["ownerReferences"][0]["uid"] == iset["metadata"]["uid"]
    stages = kaito_0_12.conditions[f"{NS}/{child_name}/{child['metadata']['uid']}"]
    assert stages[0] == ("ResourceReady", "False", "NodeClaimNotReady")  # KAITO making the node
    assert ("ResourceReady", "True", "workspaceResourceStatusSuccess") in stages
    assert stages[-2:] == [
        ("InferenceReady", "True", "WorkspaceInferenceStatusSuccess"),
        ("WorkspaceSucceeded", "True", "workspaceSucceeded"),
    ]

    engine = v1beta1(cluster_0_12, "ragengines")[RAG]
    assert engine["apiVersion"] == "kaito.sh/v1beta1"
    assert engine["spec"]["inferenceService"]["url"] == f"http://{MODEL}.{NS}.svc.cluster.local/v1/chat/completions"
    assert condition(engine, "RAGEngineSucceeded") == ("True", "ragengineSucceeded", "ragengine succeeds")
    engine_key = f"{NS}/{RAG}/{engine['metadata']['uid']}"
    assert kaito_0_12.ready_at[engine_key] <= returned
    created = {r["urn"].rsplit("::", 1)[1]: r for r in project.state()}
    ready = created["kaito/ready"]["outputs"]
    assert sorted(k["plural"] + "/" + k["version"] for k in ready["kinds"]) == [
        "inferencesets/v1beta1",
        "ragengines/v1beta1",
        "workspaces/v1beta1",
    ]
    assert project.outputs()["workspaces"][f"{NS}/{MODEL}"]["instanceType"] == A100
    assert set(project.preview_steps()) == {"same"}, "a second look found changes"


def test_adding_the_hugging_face_token_replaces_no_model_that_does_not_need_it(
    project: Project, cluster_0_12: Cluster
) -> None:
    """Day two of a generation-3 stack: the token set on the running stack (for a gated model to
    come) leaves phi-4-mini, which KAITO 0.12 downloads but which is not gated, as it runs: the
    preview changes nothing and `up` keeps the same InferenceSet. The control: the same model
    asking for the token (useHfToken) would be replaced."""
    before = v1beta1(cluster_0_12, "inferencesets")[MODEL]
    project.pulumi("config", "set", "--secret", "kaito-aks:hfToken", E2E_HF_TOKEN, quiet=True, secret=True)
    assert set(project.preview_steps()) == {"same"}, "the token alone changed the stack"
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    after = v1beta1(cluster_0_12, "inferencesets")[MODEL]
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["spec"]["template"]["inference"] == before["spec"]["template"]["inference"]
    assert f"{MODEL}-hf-token" not in cluster_0_12.objects("secrets", NS)

    project.pulumi(
        "config", "set", "--path", "--type", "bool", "kaito-aks:workspaces[0].useHfToken", "true", quiet=True
    )
    ops = project.preview_steps()
    replaced = {s["urn"].rsplit("::", 1)[1] for s in ops.get("replace", []) + ops.get("create-replacement", [])}
    assert any(MODEL in name for name in replaced), sorted(ops)
    project.pulumi("config", "rm", "--path", "kaito-aks:workspaces[0].useHfToken", quiet=True)
    assert set(project.preview_steps()) == {"same"}


def test_a_child_workspace_whose_node_fails_fails_up_with_the_nodeclaims_reason(
    project: Project, cluster_0_12: Cluster, kaito_0_12: StandInKaito012
) -> None:
    kaito_0_12.node_failing[BROKEN] = QUOTA
    project.config_path("workspaces[1].name", BROKEN)
    project.config_path("workspaces[1].namespace", NS)
    project.config_path("workspaces[1].model", "phi-4-mini-instruct")
    project.config_path("workspaces[1].instanceType", A100)
    project.config_path("workspaces[1].readyTimeoutMinutes", "1")
    result = project.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
    output = result.stdout + result.stderr
    assert result.returncode != 0, "pulumi up succeeded although the model's node never came"
    (child_name, _), *_ = children(cluster_0_12, BROKEN).items()
    reason, message = QUOTA
    said = (
        f"InferenceSet {NS}/{BROKEN} is not ready: InferenceSetReady=False (inferencesetNotReady: inferenceset is not "
        f"ready, 0/1 replicas are ready); its Workspace {child_name}: ResourceReady=False ({reason}: {message})"
    )
    assert said in output, output[-3000:]
    assert "after 1m" in output, output[-3000:]
    assert MODEL in v1beta1(cluster_0_12, "inferencesets"), "the serving model is gone"

    status = project.status()
    assert status.returncode == 1, status.stderr
    out = status.stdout
    assert f"  {NS}/{MODEL}  serving 1/1  model id {MODEL}  http://{MODEL}.{NS}.svc" in out, out  # the set's name
    assert f"  {NS}/{BROKEN}  failed 0/1  model id {BROKEN}" in out, out
    assert (
        f"    InferenceSet {BROKEN}  waiting: InferenceSetReady=False  InferenceSetReady=False (inferencesetNotReady, "
        in out
    ), out
    assert f"    Workspace {child_name}  failed: NodeClaimReady=False ({reason}: {message})" in out, out
    assert f"  {NS}/{RAG}  serving 1/1  RAG engine over {MODEL}" in out, out


def test_destroy_takes_the_inference_sets_their_workspaces_and_the_ragengine(
    project: Project, cluster_0_12: Cluster
) -> None:
    """The failed model too: KAITO's finalizer on each InferenceSet takes its child Workspaces."""
    assert set(v1beta1(cluster_0_12, "inferencesets")) == {MODEL, BROKEN}
    project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    for plural in ("inferencesets", "workspaces", "ragengines"):
        assert v1beta1(cluster_0_12, plural) == {}, plural
