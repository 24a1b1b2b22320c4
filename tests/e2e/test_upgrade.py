"""A stack deployed by the program as it was before the component library (commit UPGRADE_FROM,
the last before components/ and the index type tokens) previews no replacement with today's
program, and its update changes no object KAITO serves from: every type that moved has an alias,
and the waits' providers are still found under the module paths their state names. What issue 29
adds in the cluster comes in place: a NetworkPolicy per model (creates) and Pod Security labels on
the namespaces the stack created (an update of each), which the real API server accepts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from harness import (
    GFD_LABELS,
    ROOT,
    STACK_FILES,
    Cluster,
    Project,
    StandInKaito,
    StandInNamespaces,
    names,
    stack_project,
)

UPGRADE_FROM = "21b4115"  # the last commit before issue #16's library (kaito_aks/, provider/ at the top)
OLD_FILES = ["Pulumi.yaml", "__main__.py", "kaito_aks", "stacks", "requirements.txt"]
GPU_NODE = "aks-a100-0"
WAIT_TYPES = {
    "pulumi-python:dynamic/kaito-aks:GpuNodesReady",
    "pulumi-python:dynamic/kaito-aks:ModelReady",
    "pulumi-python:dynamic/kaito-aks:KaitoReady",  # KAITO installed elsewhere: a step added, nothing replaced
}
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"  # issue 29: who may call each model
NAMESPACE = "kubernetes:core/v1:Namespace"  # issue 29: Pod Security labels, added in place
TEAM = "team"  # a namespace the old program created (for the CPU model)


def type_of(step: dict[str, object]) -> str:
    return str(step["urn"]).split("::")[2].split("$")[-1]


def namespace_labels(cluster: Cluster, name: str) -> dict[str, str]:
    found = json.loads(cluster.kubectl("get", "namespace", name, "-o", "json").stdout)
    return dict(found["metadata"].get("labels") or {})


def team_snapshot(cluster: Cluster) -> dict[str, str]:
    """The snapshot of the objects the stack keeps in TEAM."""
    kinds = ("workspaces.kaito.sh", "services", "configmaps")
    return {
        f"{TEAM}/{k}/{n}": o["metadata"]["resourceVersion"] for k in kinds for n, o in cluster.objects(k, TEAM).items()
    }


def git_dir() -> str:
    """The clone's history (.ci/run tests a copy without .git and says where it is)."""
    return os.environ.get("KAITO_AKS_GIT_DIR") or str(ROOT / ".git")


def use_commit(project: Project, commit: str | None) -> None:
    """Make the project's program the one of `commit` (from git), or the checkout's."""
    for name in {*OLD_FILES, *STACK_FILES}:
        path = project.path / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    if commit is None:
        for name in STACK_FILES:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, project.path / name)  # type: ignore[operator]
        return
    archive = from_history("archive", "--format=tar", commit, *OLD_FILES)
    subprocess.run(["tar", "-x", "-C", str(project.path)], input=archive, check=True)


def from_history(*args: str) -> bytes:
    """What `git <args>` prints from the clone's history; a test failure saying what to do when
    the history is not there (a copy without .git, a shallow clone)."""
    answer = subprocess.run(["git", "--git-dir", git_dir(), *args], capture_output=True)
    if answer.returncode != 0:
        pytest.fail(
            f"this test deploys the program of commit {UPGRADE_FROM} and reads it from {git_dir()}, which cannot give "
            f"it (a copy without .git, or a shallow clone?): set KAITO_AKS_GIT_DIR to a full clone's .git "
            f"(git: {answer.stderr.decode().strip()[-300:]})",
            pytrace=False,
        )
    return answer.stdout


def test_a_stack_from_before_the_library_upgrades_without_replacing_anything(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> None:
    cluster.create_gpu_node(GPU_NODE, {"agentpool": "a100", "nvidia.com/gpu.present": "true"})
    cluster.label_node(GPU_NODE, GFD_LABELS)
    project = stack_project(bin_dir, cluster, work, "upgrade", "e2e", kubernetes_provider)
    # the stack file as it was then: an existing Pulumi.<stack>.yaml keeps working
    old_stack_file = from_history("show", f"{UPGRADE_FROM}:Pulumi.e2e.yaml").decode()
    # the CPU model in a namespace of its own, which the old program creates (without labels)
    cpu = "      image: ghcr.io/kaito-project/aikit/llama3.2:1b\n"
    assert cpu in old_stack_file
    (project.path / "Pulumi.e2e.yaml").write_text(old_stack_file.replace(cpu, cpu + f"      namespace: {TEAM}\n"))
    project.init()
    use_commit(project, UPGRADE_FROM)
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    old_types = {r["type"] for r in project.state()}
    assert "kaito-aks:kubernetes:KaitoModel" in old_types, sorted(old_types)
    before = {**cluster.snapshot(), **team_snapshot(cluster)}
    assert "pod-security.kubernetes.io/enforce" not in namespace_labels(cluster, TEAM)
    assert cluster.objects("networkpolicies") == {}

    use_commit(project, None)
    ops = project.preview_steps()
    changed = {op: steps for op, steps in ops.items() if op != "same"}
    print("    preview of the upgrade:", {op: sorted(names(s)) for op, s in changed.items()})
    for op in ("replace", "create-replacement", "delete-replaced"):
        assert op not in changed, f"the upgrade would {op}: {sorted(names(changed[op]))}"
    # Updated in place: only the namespace it created, which gets its Pod Security labels.
    assert {(type_of(s), name) for s in changed.get("update", []) for name in names([s])} == {
        (NAMESPACE, f"namespace/{TEAM}")
    }
    # The waits move (two per model before, two per node selector now, and KAITO serving first);
    # each model gets its NetworkPolicy.
    assert {type_of(s) for s in changed.get("delete", [])} <= WAIT_TYPES, sorted(names(changed["delete"]))
    created = changed.get("create", [])
    assert {type_of(s) for s in created} <= WAIT_TYPES | {NETWORK_POLICY}, sorted(names(created))
    assert {n for s in created if type_of(s) == NETWORK_POLICY for n in names([s])} == {
        "default/phi-4-mini/phi-4-mini-ingress",
        f"{TEAM}/tiny-cpu/tiny-cpu-ingress",
        "default/llama/llama-ingress",
    }
    project.pulumi("up", "--yes", "--skip-preview")
    types = {r["type"] for r in project.state()}
    assert "kaito-aks:index:KaitoModel" in types
    assert not any(t.startswith(("kaito-aks:kubernetes:", "kaito-aks:azure:")) for t in types), sorted(types)
    after = {**cluster.snapshot(), **team_snapshot(cluster)}
    assert after == before, "upgrading the program changed objects KAITO serves from"
    # ... and the API server took the new objects as the program wrote them
    labels = namespace_labels(cluster, TEAM)
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    policy = cluster.objects("networkpolicies", TEAM)["tiny-cpu-ingress"]
    assert policy["spec"]["podSelector"] == {"matchLabels": {"inferenceset.kaito.sh/created-by": "tiny-cpu"}}
    assert set(cluster.objects("networkpolicies")) == {"phi-4-mini-ingress", "llama-ingress"}
    project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", quiet=True)
    namespaces = StandInNamespaces(cluster, {TEAM})
    namespaces.start()
    try:
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    finally:
        namespaces.stop()
    assert cluster.objects("workspaces.kaito.sh") == {}
