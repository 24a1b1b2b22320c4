"""A Workspace whose node KAITO provisions (kaito.nodeProvisioning auto, KAITO installed
elsewhere): the stand-in for KAITO first reports ResourceReady False (NodeClaimNotReady) while
the node is made, then ResourceReady True, then InferenceReady; `pulumi up` returns only after
that, with no wait for GPU labels, and the Workspace carries its instanceType as KAITO needs."""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from harness import Cluster, StandInKaito, stack_project

A100 = "Standard_NC24ads_A100_v4"


def test_an_auto_workspace_is_waited_for_through_kaitos_node_stages(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> None:
    cluster.kubectl("create", "namespace", "auto")
    project = stack_project(bin_dir, cluster, work, "auto", "auto", kubernetes_provider)
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        "kaito-aks:kaito": {"version": "0.8.1", "install": False, "nodeProvisioning": "auto"},
        "kaito-aks:workspaces": [
            {"name": "phi", "namespace": "auto", "model": "phi-4-mini-instruct", "instanceType": A100}
        ],
        "kaito-aks:createNamespaces": False,
    }
    (project.path / "Pulumi.auto.yaml").write_text(yaml.safe_dump({"config": config}))
    project.init()
    try:
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        returned = time.time()
        ws = cluster.objects("workspaces.kaito.sh", "auto")["phi-0"]
        assert ws["resource"]["instanceType"] == A100
        assert ws["resource"]["labelSelector"] == {"matchLabels": {"apps": "phi"}}
        key = f"auto/phi-0/{ws['metadata']['uid']}"
        assert kaito.ready_at[key] <= returned, "pulumi up returned before the model served"
        stages = kaito.conditions[key]
        assert stages[0] == ("ResourceReady", "False", "NodeClaimNotReady")  # KAITO making the node
        assert ("ResourceReady", "True", "workspaceResourceStatusSuccess") in stages
        assert stages[-1] == ("InferenceReady", "True", "InferenceReady")
        waits = sorted(r["type"] for r in project.state() if r["type"].startswith("pulumi-python:dynamic/kaito-aks:"))
        # no GPU-label wait (KAITO brings the node); KAITO runs elsewhere, so its CRDs are waited for
        assert waits == ["pulumi-python:dynamic/kaito-aks:KaitoReady", "pulumi-python:dynamic/kaito-aks:ModelReady"]
        assert project.outputs()["workspaces"]["auto/phi"]["instanceType"] == A100
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True, check=False)
