"""Twenty models whose GPU nodes are labelled late: the waits are shared (one per node
selector, one for readiness), so `pulumi up` takes about as long as the slowest pool, not the
models' waits one after another four at a time. The figure is printed, not asserted (times on
a shared machine vary); what is asserted is what makes it scale: two waits per pool, not per model,
every model serving when `up` returns, no Workspace before its nodes."""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from harness import Cluster, Project, StandInGfd, StandInKaito, stack_project

POOLS = {"s1": 10.0, "s2": 15.0, "s3": 20.0, "s4": 25.0}  # pool -> when GFD labels its node (s after `up` starts)
MODELS = 20


def test_twenty_models_take_about_the_slowest_pools_time(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> None:
    for pool in POOLS:
        cluster.create_gpu_node(f"aks-{pool}-0", {"agentpool": pool})
    # The namespace is made here: with no namespace controller running, deleting one never ends.
    cluster.kubectl("create", "namespace", "scale")
    project = stack_project(bin_dir, cluster, work, "scale", "scale", kubernetes_provider)
    pools = list(POOLS)
    workspaces = [
        {
            "name": f"m{i:02d}",
            "namespace": "scale",
            "model": "phi-4-mini-instruct",
            "labelSelector": {"matchLabels": {"agentpool": pools[i % len(pools)]}},
        }
        for i in range(MODELS)
    ]
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        "kaito-aks:kaito": {"version": "0.8.1", "install": False},
        "kaito-aks:workspaces": workspaces,
        "kaito-aks:createNamespaces": False,
    }
    (project.path / "Pulumi.scale.yaml").write_text(yaml.safe_dump({"config": config}))
    project.init()
    gfd = StandInGfd(cluster, {f"aks-{p}-0": delay for p, delay in POOLS.items()})
    gfd.start()
    start = time.monotonic()
    try:
        project.pulumi("up", "--yes", "--skip-preview", quiet=True)
        took = time.monotonic() - start
        returned = time.time()
        check(project, cluster, kaito, gfd, took, returned)
    finally:
        gfd.stop()
        project.pulumi("destroy", "--yes", "--skip-preview", quiet=True, check=False)


def check(
    project: Project, cluster: Cluster, kaito: StandInKaito, gfd: StandInGfd, took: float, returned: float
) -> None:
    pools = list(POOLS)
    waits = [r for r in project.state() if r["type"].startswith("pulumi-python:dynamic/kaito-aks:")]
    # nodes + readiness per pool, and one KaitoReady (KAITO runs elsewhere: kaito.install false)
    assert len(waits) == 2 * len(POOLS) + 1, [r["urn"].rsplit("::", 1)[1] for r in waits]
    stored = cluster.objects("workspaces.kaito.sh", "scale")
    assert {f"m{i:02d}-0" for i in range(MODELS)} <= set(stored)
    for i in range(MODELS):
        ws = stored[f"m{i:02d}-0"]
        node = f"aks-{pools[i % len(pools)]}-0"
        assert ws["metadata"]["creationTimestamp"] >= gfd.labelled_at[node], (
            f"m{i:02d}-0 was created before its node was labelled"
        )
        key = f"scale/m{i:02d}-0/{ws['metadata']['uid']}"
        assert kaito.ready_at.get(key, returned + 1) <= returned, f"pulumi up returned before m{i:02d} served"
    slowest = max(POOLS.values())
    print(
        f"\n    {MODELS} models on {len(POOLS)} pools labelled {min(POOLS.values()):g}-{slowest:g} s after `up` started, "
        f"ready {kaito.delay:g} s after creation: `pulumi up` took {took:.1f} s (slowest pool + readiness = "
        f"{slowest + kaito.delay:g} s)"
    )
