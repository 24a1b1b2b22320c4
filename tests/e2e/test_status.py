"""`python -m stacks status` against the e2e's API server, with the real Pulumi CLI reading the
stack's outputs and the stack's own kubeconfig: first while KAITO has not got to the models
(nothing serves: exit 1, each replica says what it waits for), then `--watch` while KAITO makes
their nodes, until, the stand-ins having made the nodes and the pods, both serve (exit 0), and
`--json` for scripts.

The stand-in keeps the models at the node stage until the watch has shown it: the test acts on
what the watch printed, never on how soon a fresh `status` process reads the cluster (it once
raced the stand-in's 2 s node stage, and lost when starting the process, `pulumi stack output`
and the first reading took longer)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from harness import GFD_LABELS, TOKEN, Cluster, StandInKaito, stack_project

NS, STACK = "status", "status"
A100, D8 = "Standard_NC24ads_A100_v4", "Standard_D8s_v5"
IMAGE = "ghcr.io/kaito-project/aikit/llama3.2:1b"


def test_status_while_the_models_wait_and_once_they_serve(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> None:
    cluster.kubectl("create", "namespace", NS)
    project = stack_project(bin_dir, cluster, work, "status", STACK, kubernetes_provider)
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        # KAITO makes each model's node; `up` does not wait for them to serve
        "kaito-aks:kaito": {"version": "0.8.1", "install": False, "nodeProvisioning": "auto", "waitForReady": False},
        "kaito-aks:workspaces": [
            {"name": "phi", "namespace": NS, "model": "phi-4-mini-instruct", "instanceType": A100},
            {"name": "tiny", "namespace": NS, "compute": "cpu", "image": IMAGE, "instanceType": D8},
        ],
        "kaito-aks:createNamespaces": False,
    }
    (project.path / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": config}))
    project.init()
    before = project.status()
    assert before.returncode == 2
    assert before.stderr.strip() == f"{STACK}: stack {STACK} has no outputs yet: run `pulumi up --stack {STACK}` first"

    kaito.held |= {"phi-0", "tiny-0"}  # KAITO has not got to them yet
    try:
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        waiting = project.status()
        print(waiting.stdout)
        assert waiting.returncode == 1, waiting.stderr
        lines = waiting.stdout.splitlines()
        assert lines[0].startswith(f"{STACK}: KAITO 0.8.1, cluster e2e (kubeconfig context e2e); 0 of 2 serving")
        # each model waits at KAITO (issue 35: status explains; the chain is the failure library's)
        assert [line for line in lines if line.startswith("    waits at")] == ["    waits at: KAITO"] * 2
        assert "      KAITO has not reported on the Workspace yet" in lines
        lines = [line for line in lines if not line.startswith(("    waits at", "      ", "    chain: "))]
        assert lines[1:] == [
            f"  {NS}/phi  waiting 0/1  model id phi-4-mini-instruct  http://phi.{NS}.svc.cluster.local/v1/chat/completions",
            "    Workspace phi-0  waiting: KAITO has not reported on it yet  pods 0/0 ready",
            f"  {NS}/tiny  waiting 0/1  model id: ask GET /v1/models (a custom image)  "
            f"http://tiny.{NS}.svc.cluster.local/v1/chat/completions",
            "    Workspace tiny-0  waiting: KAITO has not reported on it yet  pods 0/0 ready",
        ]

        kaito.provisioning |= {"phi-0", "tiny-0"}  # KAITO is making their nodes, for as long as the test says
        kaito.held -= {"phi-0", "tiny-0"}
        watch = project.watch_status("--interval", "1", "--timeout", "10")
        try:
            watch.until(
                lambda out: all(_at_node_stage(out, ws) for ws in ("phi-0", "tiny-0")),
                "both Workspaces at KAITO's node stage (ResourceReady=False NodeClaimNotReady)",
                120,
            )
            # The nodes KAITO made (labelled with each Workspace's selector) and the pods on them,
            # as KAITO, the StatefulSet controller and the kubelet would leave them.
            cluster.create_gpu_node(
                "aks-phi-node", {**GFD_LABELS, "apps": "phi", "node.kubernetes.io/instance-type": A100}
            )
            cluster.create_gpu_node(
                "aks-tiny-node", {"apps": "tiny", "node.kubernetes.io/instance-type": D8}, taints=[]
            )
            cluster.run_pod(NS, "phi-0-0", "aks-phi-node", {"kaito.sh/workspace": "phi-0"})
            cluster.run_pod(NS, "tiny-0-0", "aks-tiny-node", {"kaito.sh/workspace": "tiny-0"})
            kaito.provisioning -= {"phi-0", "tiny-0"}
            watched = watch.finish(180)
        finally:
            watch.stop()
        print(f"(the watch printed its first reading {watch.after[0]:.1f} s after it started)")
        print(watched.stdout)
        assert watched.returncode == 0, watched.stdout + watched.stderr
        blocks = watched.stdout.split(f"{STACK}: KAITO 0.8.1")
        assert len(blocks) >= 3, watched.stdout  # printed as it changed: at least once waiting, then serving
        assert "0 of 2 serving" in blocks[1]
        last = blocks[-1]
        assert "2 of 2 serving" in last
        assert f"  {NS}/phi  serving 1/1  model id phi-4-mini-instruct  http://phi.{NS}.svc" in last, last
        phi = next(line for line in last.splitlines() if line.startswith("    Workspace phi-0"))
        assert phi.startswith("    Workspace phi-0  serving  ResourceReady=True (workspaceResourceStatusSuccess, "), phi
        assert "InferenceReady=True (InferenceReady, " in phi
        assert phi.endswith("pods 1/1 ready  on aks-phi-node (1x NVIDIA-A100-PCIE-80GB)"), phi
        tiny = next(line for line in last.splitlines() if line.startswith("    Workspace tiny-0"))
        assert tiny.endswith("pods 1/1 ready  on aks-tiny-node (no GPU labels)"), tiny

        as_json = project.status("--json")
        assert as_json.returncode == 0
        doc = json.loads(as_json.stdout)
        assert doc["serving"] is True
        assert [(m["key"], m["state"], m["ready"]) for m in doc["models"]] == [
            (f"{NS}/phi", "serving", "1/1"),
            (f"{NS}/tiny", "serving", "1/1"),
        ]
        for run in (waiting, watched, as_json):
            assert TOKEN not in run.stdout + run.stderr
    finally:
        kaito.held -= {"phi-0", "tiny-0"}
        kaito.provisioning -= {"phi-0", "tiny-0"}
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True, check=False)


def _at_node_stage(out: str, workspace: str) -> bool:
    """Whether `status` printed the Workspace waiting at KAITO's node stage."""
    return any(
        line.startswith(f"    Workspace {workspace}  waiting") and "ResourceReady=False (NodeClaimNotReady" in line
        for line in out.splitlines()
    )
