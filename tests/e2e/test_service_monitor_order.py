"""A model's ServiceMonitor waits for its CRD (issue 37), against the real engine and an API server
where AKS's managed Prometheus has not registered it yet: `pulumi up` holds the ServiceMonitor
(and nothing else) back until the CRD appears, as the add-on registers it once its ama-metrics
pods start, then creates it with the label limits Microsoft's templates set. Here the test
registers the CRD itself (the azmonitoring.coreos.com ServiceMonitor, derived from
prometheus-operator v0.93.1's: components/tests/upstream, with provenance); no add-on runs."""

from __future__ import annotations

import calendar
import subprocess
import time
from pathlib import Path

from harness import Cluster, stack_project, wait_for

import upstream_facts

CRD = "servicemonitors.azmonitoring.coreos.com"

PROGRAM = '''"""A program of the e2e: one model scraped by AKS's managed Prometheus."""
import pulumi

from kaito_aks import KaitoModel, KaitoModelArgs, KubeconfigCluster, KubeconfigClusterArgs
from kaito_aks.serving.spec import ModelMetricsArgs

cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(context="e2e"))
KaitoModel(
    "scraped",
    KaitoModelArgs(
        kaito_version="0.12.0", model="phi-4-mini-instruct", name="scraped", namespace="monitored",
        node_provisioning="auto", instance_type="Standard_NC24ads_A100_v4", metrics=ModelMetricsArgs(flavour="azureManagedPrometheus"),
        wait_for_gpu_nodes=False, wait_for_ready=False,
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider),
)
'''


def test_a_service_monitor_waits_until_managed_prometheus_registers_its_crd(
    bin_dir: Path, cluster_karpenter_upgrade: Cluster, work: Path, kubernetes_provider: str
) -> None:
    cluster = cluster_karpenter_upgrade
    assert not cluster.kubectl_ok("get", "crd", CRD)
    cluster.kubectl("create", "namespace", "monitored")
    project = stack_project(bin_dir, cluster, work, "monitor-order", "monitor", kubernetes_provider)
    (project.path / "__main__.py").write_text(PROGRAM)
    project.init()
    up = subprocess.Popen(
        [str(bin_dir / "pulumi"), "up", "--yes", "--skip-preview", "--non-interactive", "--stack", "monitor"],
        cwd=project.path, env=project.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        # the model goes up; its ServiceMonitor waits
        wait_for(
            lambda: up.poll() is not None or cluster.kubectl_ok("get", "inferenceset", "scraped", "-n", "monitored"),
            "the InferenceSet",
            90,
        )
        assert up.poll() is None, "up ended before the ServiceMonitor's CRD existed: " + (
            up.stdout.read() if up.stdout else ""
        )
        # longer than the Kubernetes provider's own retries of a kind it does not know (5, from 1 s
        # doubling: it gives up after about 63 s; pulumi-kubernetes v4.25.0 provider/pkg/await/
        # await.go, retry/retry.go), after which an `up` without the wait has failed with "no
        # matches for kind ServiceMonitor" (seen: the test fails with the wait taken out)
        time.sleep(75)
        assert up.poll() is None, "up ended before the ServiceMonitor's CRD existed: " + (
            up.stdout.read() if up.stdout else ""
        )
        registered = time.time()
        crd = upstream_facts.folder("prometheus-operator", "v0.93.1") / "crds" / f"{CRD}.yaml"
        cluster.apply(crd)  # as the add-on does once its pods run
        output, _ = up.communicate(timeout=180)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 0, output[-3000:]
    monitor = cluster.objects(CRD, "monitored")["scraped"]
    assert {k: monitor["spec"][k] for k in ("labelLimit", "labelNameLengthLimit", "labelValueLengthLimit")} == {
        "labelLimit": 63,
        "labelNameLengthLimit": 511,
        "labelValueLengthLimit": 1023,
    }
    created = calendar.timegm(time.strptime(monitor["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
    assert created >= int(registered) - 1, "the ServiceMonitor was created before its CRD"
    project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
