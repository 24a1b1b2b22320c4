"""A stack deployed by the program as it was before the component library (commit UPGRADE_FROM,
the last before components/ and the index type tokens) previews no replacement with today's
program, and its update changes no object in the cluster: every type that moved has an alias,
and the waits' providers are still found under the module paths their state names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from harness import GFD_LABELS, ROOT, STACK_FILES, Cluster, Project, StandInKaito, names, stack_project

UPGRADE_FROM = "21b4115"  # the last commit before issue #16's library (kaito_aks/, provider/ at the top)
OLD_FILES = ["Pulumi.yaml", "__main__.py", "kaito_aks", "stacks", "requirements.txt"]
GPU_NODE = "aks-a100-0"
WAIT_TYPES = {
    "pulumi-python:dynamic/kaito-aks:GpuNodesReady",
    "pulumi-python:dynamic/kaito-aks:ModelReady",
    "pulumi-python:dynamic/kaito-aks:KaitoReady",  # KAITO installed elsewhere: a step added, nothing replaced
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
    old_stack_file = from_history("show", f"{UPGRADE_FROM}:Pulumi.e2e.yaml")
    (project.path / "Pulumi.e2e.yaml").write_bytes(old_stack_file)
    project.init()
    use_commit(project, UPGRADE_FROM)
    project.pulumi("up", "--yes", "--skip-preview", quiet=True)
    old_types = {r["type"] for r in project.state()}
    assert "kaito-aks:kubernetes:KaitoModel" in old_types, sorted(old_types)
    before = cluster.snapshot()

    use_commit(project, None)
    ops = project.preview_steps()
    changed = {op: steps for op, steps in ops.items() if op != "same"}
    print("    preview of the upgrade:", {op: sorted(names(s)) for op, s in changed.items()})
    for op in ("replace", "create-replacement", "delete-replaced", "update"):
        assert op not in changed, f"the upgrade would {op}: {sorted(names(changed[op]))}"
    # Only the waits move: two per model before, two per node selector now, and KAITO serving first.
    for op in ("create", "delete"):
        types = {s["urn"].split("::")[2].split("$")[-1] for s in changed.get(op, [])}
        assert types <= WAIT_TYPES, f"{op}: {sorted(names(changed[op]))}"
    project.pulumi("up", "--yes", "--skip-preview")
    types = {r["type"] for r in project.state()}
    assert "kaito-aks:index:KaitoModel" in types
    assert not any(t.startswith(("kaito-aks:kubernetes:", "kaito-aks:azure:")) for t in types), sorted(types)
    assert cluster.snapshot() == before, "upgrading the program changed objects in the cluster"
    project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", quiet=True)
    project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    assert cluster.objects("workspaces.kaito.sh") == {}
