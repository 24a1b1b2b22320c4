"""Why isn't it serving (issue 35): failures provoked on the KAITO 0.12 API server, and `python -m
stacks status` naming each model's first broken link with its meaning and fix, and `pulumi up`'s
waits ending with the same diagnosis.

What is real: the Pulumi engine and the program, the API server and every object it stores and
validates (KAITO's, Gateway API's, Authorino's, KEDA's CRDs), admission (the API server calls a
webhook on each Workspace create), the pod log endpoint (the API server proxies it to the node's
kubelet), `status` reading all of it with the stack's credentials. Stand-ins, each saying so
(harness.py, diagnose_stand_ins.py): KAITO 0.12's controllers (its conditions, in its words: a
NodeClaim refused for quota, pods it classifies), the scheduler and the kubelet (pod states, a
kubelet serving a crashed container's log), GPU Feature Discovery's DaemonSet (an object no
controller runs), KAITO's webhook (denying in KAITO's words), Istio, Authorino and KEDA's status.

Two stacks: `why` (node auto-provisioning, a gateway with an API key, an autoscaled model) with a
model broken at each link, and `byo` (nodes of your own) where a node has no GPU labels and
KAITO's webhook refuses a model its GPU is too small for."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from diagnose_stand_ins import CRASH_LOG, StandInKubelet, StandInTrouble, StandInWebhook
from harness import TOKEN, Cluster, Project, StandInKaito, StandInKaito012, StandInServing, stack_project, wait_for

import upstream_facts

NS, GW_NS, BYO_NS = "why", "why-gateway", "why-byo"
A100, D8 = "Standard_NC24ads_A100_v4", "Standard_D8s_v5"
KEY = "e2e-why-key-0123456789abcdef0123456789abcdef"
LOG_NODE = "why-kubelet-node"
QUOTA = (
    "CreateInstanceFailed",
    "creating instance failed, subscription level on-demand vCPU quota for Standard_NC24ads_A100_v4 has been "
    "reached (may try provision an alternative instance type) (stand-in reason)",
)
# model -> (the link `status` must name first, the detector, words of its finding)
EXPECTED = {
    "quota": ("NodeClaims", "azure-quota", "request more quota"),
    "pull": ("pods", "image-pull-failed", "ErrImagePull"),
    "crash": ("pods", "container-crash", "max_model_len"),
    "cpu": ("pods", "pod-pending-resources", "Insufficient cpu"),
    "picker": ("endpoint picker", "pod-pending-resources", "Insufficient cpu"),
    "route": ("route", "route-not-accepted", "NotAllowedByListeners"),
    "scaled": ("authentication", "auth-not-ready", "HostsNotLinked"),
}


@pytest.fixture(scope="module")
def serving(cluster_0_12: Cluster, kaito_0_12: StandInKaito012, work: Path) -> Iterator[dict[str, Any]]:
    """The serving CRDs, the namespaces, and every stand-in of this module."""
    files = upstream_facts.serving_crd_files()
    cluster_0_12.apply(*files)
    cluster_0_12.kubectl("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{f.stem}" for f in files])
    cluster_0_12.kubectl("create", "namespace", NS)
    kubelet = StandInKubelet(work / "why-certs")
    kubelet.register(cluster_0_12, LOG_NODE)
    kubelet.logs[f"/containerLogs/{NS}/crash-"] = CRASH_LOG
    models = StandInServing(cluster_0_12, NS)
    gateway = StandInServing(cluster_0_12, GW_NS)
    trouble = StandInTrouble(cluster_0_12, NS, {"pull": "pull", "crash": "crash", "cpu": "cpu"}, LOG_NODE)
    kaito_0_12.held |= {"pull", "crash", "cpu"}  # (and their Workspaces: the trouble stand-in is KAITO for them)
    kaito_0_12.node_failing["quota"] = QUOTA
    models.picker_pending.add("picker")
    models.rejected_routes["route"] = (
        "NotAllowedByListeners",
        "no listener of Gateway why-gateway/kaito-gateway admits the route's namespace (stand-in Istio)",
    )
    gateway.auth_failing = ("HostsNotLinked", "one or more hosts are not linked to the resource (stand-in Authorino)")
    for stand_in in (models, gateway, trouble):
        stand_in.start()
    yield {"kubelet": kubelet, "models": models, "gateway": gateway, "trouble": trouble}
    for stand_in in (models, gateway, trouble):
        stand_in.stop()
    kubelet.stop()
    kaito_0_12.held -= {"pull", "crash", "cpu"}
    del kaito_0_12.node_failing["quota"]


@pytest.fixture(scope="module")
def why(
    bin_dir: Path, cluster_0_12: Cluster, work: Path, serving: dict[str, Any], kubernetes_provider: str
) -> Iterator[Project]:
    p = stack_project(bin_dir, cluster_0_12, work, "why", "why", kubernetes_provider)
    preset = {"namespace": NS, "model": "phi-4-mini-instruct", "instanceType": A100}
    workspaces: list[dict[str, Any]] = [
        {"name": name, **preset} for name in ("quota", "pull", "crash", "picker", "route")
    ]
    workspaces.append({"name": "scaled", **preset, "autoscale": {"minReplicas": 1, "maxReplicas": 3}})
    workspaces.append(
        {
            "name": "cpu",
            "namespace": NS,
            "compute": "cpu",
            "image": "ghcr.io/kaito-project/aikit/llama3.2:1b",
            "instanceType": D8,
        }
    )
    existing = {"gatewayApiCrds": "existing", "istio": "existing", "authorino": "existing"}
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        "kaito-aks:kaito": {"version": "0.12.0", "install": False, "nodeProvisioning": "auto", "waitForReady": False},
        "kaito-aks:workspaces": workspaces,
        "kaito-aks:gateway": {"namespace": GW_NS, "exposure": "cluster", "bodyBasedRouting": "existing", **existing},
        "kaito-aks:autoscaling": {"keda": "existing", "scaler": "existing"},
        "kaito-aks:createNamespaces": False,
    }  # fmt: skip
    (p.path / "Pulumi.why.yaml").write_text(yaml.safe_dump({"config": config}))
    p.init()
    p.pulumi("config", "set", "--path", "--secret", "kaito-aks:gateway.apiKeys.ci", KEY, quiet=True, secret=True)
    yield p
    p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)


def _ready(cluster: Cluster, name: str) -> bool:
    iset = cluster.api("GET", f"/apis/kaito.sh/v1beta1/namespaces/{NS}/inferencesets/{name}")
    conditions = (iset.get("status") or {}).get("conditions", [])
    return any(c["type"] == "InferenceSetReady" and c["status"] == "True" for c in conditions)


def blocks(out: str) -> dict[str, str]:
    """`status`'s text by model: from its line to the next model's."""
    found: dict[str, str] = {}
    key = ""
    for line in out.splitlines():
        head = re.match(rf"  {NS}/(\S+)  ", line) or re.match(rf"  {BYO_NS}/(\S+)  ", line)
        if head:
            key = head.group(1)
        if key:
            found[key] = found.get(key, "") + line + "\n"
    return found


def test_status_names_each_models_first_broken_link_and_its_fix(
    why: Project, cluster_0_12: Cluster, serving: dict[str, Any]
) -> None:
    why.pulumi("up", "--yes", "--skip-preview", quiet=True)
    trouble: StandInTrouble = serving["trouble"]
    wait_for(lambda: len(trouble.done) == 3, "the stand-ins' troubles in place", 60)
    wait_for(
        lambda: all(_ready(cluster_0_12, m) for m in ("picker", "route", "scaled")), "KAITO serving the others", 120
    )
    auth = f"/apis/authorino.kuadrant.io/v1beta3/namespaces/{GW_NS}/authconfigs/kaito-gateway"
    wait_for(
        lambda: "HostsNotLinked" in json.dumps(cluster_0_12.api("GET", auth).get("status") or {}),
        "Authorino's status",
        60,
    )
    status = why.status()
    out = status.stdout
    print(out)
    assert status.returncode == 1, status.stderr
    by_model = blocks(out)
    for model, (link, _, words) in EXPECTED.items():
        text = by_model[model]
        assert f"    first broken link: {link}" in text, (model, text)
        assert words in text, (model, text)
        assert "      means: " in text, (model, text)
        assert "      fix: " in text, (model, text)
        assert "    chain: Azure node pool " in text, (model, text)
        assert f"  {NS}/{model}  failed " in text, (model, text)
    # the crashed container's last lines came through the API server from its (stand-in) kubelet
    kubelet: StandInKubelet = serving["kubelet"]
    assert any(path.startswith(f"/containerLogs/{NS}/crash-") for path in kubelet.asked), kubelet.asked
    assert "(16.00 GiB KV cache is needed" in by_model["crash"]  # a line of the log, not of the pod
    assert "the model's context length (max-model-len) does not fit" in by_model["crash"]

    doc = json.loads(why.status("--json").stdout)
    found = {m["key"].split("/")[1]: m["diagnosis"]["firstBroken"] for m in doc["models"]}
    for model, (_, detector, _) in EXPECTED.items():
        assert found[model]["finding"]["detector"] == detector, (model, found[model])
    for run in (status,):
        assert TOKEN not in run.stdout + run.stderr
        assert KEY not in run.stdout + run.stderr


def test_with_authentication_fixed_the_autoscaler_is_the_broken_link(why: Project, serving: dict[str, Any]) -> None:
    gateway: StandInServing = serving["gateway"]
    models: StandInServing = serving["models"]
    models.scalers_failing["scaled"] = (
        "TriggerError",
        "Triggers defined in ScaledObject are not working correctly (stand-in KEDA)",
    )
    gateway.auth_failing = None
    wait_for(
        lambda: (
            "Ready"
            in json.dumps(
                why.cluster.api("GET", f"/apis/keda.sh/v1alpha1/namespaces/{NS}/scaledobjects/scaled").get("status")
                or {}
            )
        ),
        "KEDA's status",
        30,
    )
    out = ""

    def shown() -> bool:
        nonlocal out
        out = why.status().stdout
        return "first broken link: autoscaler" in blocks(out).get("scaled", "")

    wait_for(shown, "the autoscaler named", 60)
    text = blocks(out)["scaled"]
    assert "TriggerError" in text, text
    assert "KEDA cannot scale the model" in text, text
    assert "first broken link: route" in blocks(out)["route"]  # the others keep theirs


def test_the_waits_give_up_with_the_same_diagnosis(why: Project) -> None:
    why.config_path("kaito.waitForReady", "true")
    for i, name in enumerate(("quota", "pull", "crash", "picker", "route", "scaled", "cpu")):
        if name in ("quota", "pull", "crash", "cpu"):
            why.config_path(f"workspaces[{i}].readyTimeoutMinutes", "1")
    result = why.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
    output = result.stdout + result.stderr
    print("\n".join(line for line in output.splitlines() if "first broken link" in line))
    assert result.returncode != 0
    assert "first broken link: pods (pod pull-" in output, output[-4000:]
    assert "the node cannot pull the container's image" in output, output[-4000:]
    assert "first broken link: pods (pod crash-" in output, output[-4000:]
    assert "fix: lower the model's max-model-len" in output, output[-4000:]
    assert "first broken link: NodeClaims" in output, output[-4000:]
    assert "request more quota" in output, output[-4000:]
    assert "first broken link: pods (pod cpu-" in output, output[-4000:]
    why.pulumi("config", "set", "--path", "kaito-aks:kaito.waitForReady", "false", quiet=True)


@pytest.fixture(scope="module")
def byo(
    bin_dir: Path, cluster: Cluster, kaito: StandInKaito, work: Path, kubernetes_provider: str
) -> Iterator[tuple[Project, StandInWebhook]]:
    """On KAITO 0.8.1's API server (a model is a Workspace `up` creates, which KAITO's webhook
    admits or denies): a node of a pool whose GPU Feature Discovery never ran (the GPU Operator's
    GFD tolerates nvidia.com/gpu only, not the AKS taint sku=gpu), a node with a small GPU, and a
    first `up` of a CPU model (the stack's outputs)."""
    cluster.kubectl("create", "namespace", BYO_NS)
    cluster.create_gpu_node(
        "why-a100-0", {"agentpool": "whya100", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true"}
    )
    small = {"nvidia.com/gpu.product": "NVIDIA-A10", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.memory": "4096"}
    cluster.create_gpu_node("why-small-0", {"agentpool": "whysmall", **small})
    cluster.kubectl("create", "namespace", "why-gpu-operator")
    cluster.api("POST", "/apis/apps/v1/namespaces/why-gpu-operator/daemonsets", yaml.safe_load(GFD_DAEMONSET))
    webhook = StandInWebhook(work / "why-webhook", cluster, BYO_NS)
    p = stack_project(bin_dir, cluster, work, "why-byo", "byo", kubernetes_provider)
    config = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "e2e"}},
        "kaito-aks:kaito": {"version": "0.8.1", "install": False, "gpuNodesTimeoutMinutes": 1, "waitForReady": False},
        "kaito-aks:workspaces": [
            {"name": "cpu-ok", "namespace": BYO_NS, "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b", "labelSelector": {"matchLabels": {"apps": "why-cpu"}}},
        ],
        "kaito-aks:createNamespaces": False,
    }  # fmt: skip
    (p.path / "Pulumi.byo.yaml").write_text(yaml.safe_dump({"config": config}))
    p.init()
    p.pulumi("up", "--yes", "--skip-preview", quiet=True)
    yield p, webhook
    p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)
    webhook.stop()
    cluster.kubectl("delete", "namespace", "why-gpu-operator", "--wait=false", check=False)


# The GPU Operator's GFD DaemonSet as its operator renders it (gpu-operator
# assets/gpu-feature-discovery/0500_daemonset.yaml@v25.3.4): no controller runs it here.
GFD_DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: gpu-feature-discovery, labels: {app: gpu-feature-discovery, app.kubernetes.io/part-of: nvidia-gpu}}
spec:
  selector: {matchLabels: {app: gpu-feature-discovery, app.kubernetes.io/part-of: nvidia-gpu}}
  template:
    metadata: {labels: {app: gpu-feature-discovery, app.kubernetes.io/part-of: nvidia-gpu}}
    spec:
      nodeSelector: {nvidia.com/gpu.deploy.gpu-feature-discovery: "true"}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers: [{name: gpu-feature-discovery, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.4}]
"""


def test_a_node_without_gpu_labels_ends_the_gpu_wait_with_why(byo: tuple[Project, StandInWebhook]) -> None:
    project, _ = byo
    project.config_path("workspaces[1].name", "nolabels")
    project.config_path("workspaces[1].namespace", BYO_NS)
    project.config_path("workspaces[1].model", "phi-4-mini-instruct")
    project.config_path("workspaces[1].labelSelector.matchLabels.agentpool", "whya100")
    result = project.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
    output = result.stdout + result.stderr
    print("\n".join(line for line in output.splitlines() if "first broken link" in line))
    assert result.returncode != 0
    assert "node(s) why-a100-0 matching {agentpool=whya100} do not carry nvidia.com/gpu.product after 1m" in output, (
        output[-3000:]
    )
    assert (
        "first broken link: nodes (node why-a100-0): node why-a100-0 does not carry nvidia.com/gpu.product, "
        "nvidia.com/gpu.count, nvidia.com/gpu.memory; GPU Feature Discovery's DaemonSet "
        "why-gpu-operator/gpu-feature-discovery cannot run there: it does not tolerate the node's taint sku=gpu:NoSchedule"
    ) in output, output[-3000:]


def test_a_workspace_kaitos_webhook_denies_and_a_node_without_labels_are_named(
    byo: tuple[Project, StandInWebhook],
) -> None:
    project, webhook = byo
    webhook.denials["nolabels-0"] = (
        "Failed to get GPU config from nvidia labels on node why-a100-0: missing required nvidia.com labels on node "
        "why-a100-0 (stand-in webhook)"
    )
    webhook.denials["denied-0"] = "Insufficient total GPU memory (stand-in webhook, KAITO's words)"
    project.config_path("kaito.waitForGpuNodes", "false")
    project.config_path("workspaces[2].name", "denied")
    project.config_path("workspaces[2].namespace", BYO_NS)
    project.config_path("workspaces[2].model", "phi-4-mini-instruct")
    project.config_path("workspaces[2].labelSelector.matchLabels.agentpool", "whysmall")
    # both Workspaces are tried whichever the engine creates first (without it, a first denial
    # stops the update before the other is sent, and which is first is the engine's choice)
    result = project.pulumi("up", "--yes", "--skip-preview", "--continue-on-error", check=False, quiet=True)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert (
        'admission webhook "validation.workspace.kaito.sh" denied the request: validation failed: Insufficient total GPU memory'
        in output
    ), output[-3000:]
    assert {"nolabels-0", "denied-0"} <= set(webhook.asked)
    status = project.status()
    print(status.stdout)
    assert status.returncode == 1, status.stderr
    by_model = blocks(status.stdout)
    assert "    first broken link: KAITO" in by_model["denied"], by_model["denied"]
    assert "Insufficient total GPU memory" in by_model["denied"], by_model["denied"]
    assert "KAITO's admission webhook denies creating" in by_model["denied"], by_model["denied"]
    assert "    first broken link: nodes (node why-a100-0)" in by_model["nolabels"], by_model["nolabels"]
    assert "does not tolerate the node's taint sku=gpu:NoSchedule" in by_model["nolabels"], by_model["nolabels"]
