"""CPU models stay off GPU nodes (issue 20). KAITO places a custom image's pod by the Workspace's
labelSelector alone: it replaces the pod's affinity with `In` terms of matchLabels and adds
tolerations of the GPU taints (pkg/workspace/manifests GenerateManifestWithPodTemplate,
pkg/workspace/inference tolerations, v0.8.1 and v0.12.0); the pod's nodeSelector is all it keeps.
These tests build the nodes from what the program emits (the AKS pools) and the pods as KAITO
builds them from the emitted Workspaces, then schedule them as the scheduler would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kaito_aks.azure.gpu_node_pool import GpuNodePoolArgs, node_group
from kaito_aks.model.component import check_model
from kaito_aks.model.spec import KaitoModelArgs, LabelSelectorArgs
from kaito_aks.nodes import AKS_SYSTEM_POOL_LABELS, NodeGroup, may_select
from stacks.load import parse_stack_file
from stacks.stackfile import read_stack_file
from tests.conftest import ROOT, config, errors_of, run, warnings_of
from tests.test_aks import aks

WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
INFERENCE_SET = "kubernetes:kaito.sh/v1beta1:InferenceSet"
AGENT_POOL = "azure-native:containerservice:AgentPool"
CLUSTER = "azure-native:containerservice:ManagedCluster"
CPU = {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
# What KAITO appends to a custom image's pod (v0.8.1 preset_inferences.go:74-86; 0.12 adds AKS's spot taint).
KAITO_TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
]
# GPU Feature Discovery's labels on an A10 node.
GFD = {"nvidia.com/gpu.product": "NVIDIA-A10", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.memory": "24564"}


@dataclass
class Node:
    name: str
    labels: dict[str, str]
    taints: list[str]
    gpu: bool


@dataclass
class Pod:
    affinity: list[dict[str, Any]]  # one nodeSelectorTerm's matchExpressions
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]


def aks_node(name: str, mode: str, vm_size: str, labels: dict[str, str], taints: list[str], gpu: bool) -> Node:
    """A node of an AKS pool as AKS labels it (reserved labels, use-labels.md), GFD's labels on GPU nodes."""
    return Node(
        name,
        {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "agentpool": name,
            "kubernetes.azure.com/agentpool": name,
            "kubernetes.azure.com/mode": mode.lower(),
            "node.kubernetes.io/instance-type": vm_size,
            **labels,
            **(GFD if gpu else {}),
        },
        taints,
        gpu,
    )


def emitted_nodes(ev) -> list[Node]:
    """The nodes of every pool the program creates: the system pool and the GPU pools."""
    nodes = [
        aks_node(p["name"], p["mode"], p["vmSize"], p.get("nodeLabels") or {}, p.get("nodeTaints") or [], False)
        for c in ev.of_type(CLUSTER)
        for p in c.inputs["agentPoolProfiles"]
    ]
    for pool in ev.of_type(AGENT_POOL):
        i = pool.inputs
        nodes.append(
            aks_node(
                i["agentPoolName"],
                i["mode"],
                i["vmSize"],
                i.get("nodeLabels") or {},
                i.get("nodeTaints") or [],
                "gpuProfile" in i,  # (a CpuNodePool has none)
            )
        )
    return nodes


def kaito_pod(workspace: dict[str, Any]) -> Pod:
    """The pod KAITO runs for a custom-image Workspace."""
    labels = workspace["resource"]["labelSelector"].get("matchLabels") or {}
    spec = workspace["inference"]["template"]["spec"]
    return Pod(
        [{"key": k, "operator": "In", "values": [v]} for k, v in labels.items()],
        spec.get("nodeSelector") or {},
        [*(spec.get("tolerations") or []), *KAITO_TOLERATIONS],
    )


def tolerated(taint: str, tolerations: list[dict[str, str]]) -> bool:
    spec, effect = taint.rsplit(":", 1)
    key, _, value = spec.partition("=")
    return any(
        t["effect"] == effect and t["key"] == key and (t["operator"] == "Exists" or t.get("value", "") == value)
        for t in tolerations
    )


def schedulable(pod: Pod, node: Node) -> bool:
    """The scheduler's node filters that apply here: nodeSelector, required node affinity, taints."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if any(node.labels.get(e["key"]) not in e["values"] for e in pod.affinity):
        return False
    return all(tolerated(t, pod.tolerations) for t in node.taints if not t.endswith(":PreferNoSchedule"))


def cpu_workspaces(ev) -> list[dict[str, Any]]:
    """Every custom-image Workspace, an InferenceSet's as KAITO creates it (its labelSelector and
    its template's inference)."""
    found = [r.inputs for r in ev.of_type(WORKSPACE) if "template" in r.inputs["inference"]]
    for r in ev.of_type(INFERENCE_SET):
        spec = r.inputs["spec"]
        if "template" in spec["template"]["inference"]:
            found.append(
                {
                    "metadata": r.inputs["metadata"],
                    "resource": {"labelSelector": spec["labelSelector"]},
                    "inference": spec["template"]["inference"],
                }
            )
    return found


def places(ev) -> dict[str, set[str]]:
    """Each CPU Workspace -> the nodes its pod may run on."""
    nodes = emitted_nodes(ev)
    return {
        ws["metadata"]["name"]: {n.name for n in nodes if schedulable(kaito_pod(ws), n)} for ws in cpu_workspaces(ev)
    }


# ---------------------------------------------------------------- what the program emits


@pytest.mark.parametrize(
    "pools",
    [
        [{"name": "gpu", "vmSize": "Standard_NV36ads_A10_v5", "count": 1}],
        [
            {"name": "a10", "vmSize": "Standard_NV36ads_A10_v5", "count": 2, "labels": {"team": "ml"}},
            {"name": "spot", "vmSize": "Standard_NC24ads_A100_v4", "count": 1, "spot": True},
        ],
    ],
)
@pytest.mark.parametrize("version", ["0.8.1", "0.12.0"])
def test_a_cpu_models_pods_fit_the_system_pool_and_no_gpu_node(pools, version):
    if version == "0.8.1":  # its pods do not tolerate the spot taint (refused)
        pools = [{k: v for k, v in p.items() if k != "spot"} for p in pools]
    phi = {**PHI, "labelSelector": {"matchLabels": {"agentpool": pools[0]["name"]}}}
    ev = run(aks(pools=pools, workspaces=[phi, CPU], kaito={"version": version}))
    assert places(ev) == {"tiny" if version == "0.12.0" else "tiny-0": {"system"}}


def test_the_shipped_aks_stack_keeps_its_cpu_model_on_its_cpu_pool():
    from stacks.evaluate import evaluate

    f = read_stack_file("dev", ROOT)
    ev = evaluate(f.config, stack="dev", secrets=f.secrets)
    assert places(ev) == {"tiny-cpu-0": {"cpu"}}
    # before: labelSelector kubernetes.io/os=linux alone, on the GPU pool too (KAITO tolerates sku=gpu)
    (ws,) = cpu_workspaces(ev)
    assert ws["resource"]["labelSelector"] == {"matchLabels": {"kubernetes.io/os": "linux"}}  # unchanged: immutable
    assert ws["inference"]["template"]["spec"]["nodeSelector"] == {"kubernetes.azure.com/agentpool": "cpu"}
    # without its cpuNodePools entry, on the system pool
    config = {k: v for k, v in f.config.items() if k != "kaito-aks:cpuNodePools"}
    ev = evaluate(config, stack="dev", secrets=f.secrets)
    assert places(ev) == {"tiny-cpu-0": {"system"}}
    (ws,) = cpu_workspaces(ev)
    assert ws["inference"]["template"]["spec"]["nodeSelector"] == AKS_SYSTEM_POOL_LABELS


def test_an_adopted_aks_cluster_keeps_cpu_models_on_its_system_pools():
    existing = {"existing": {"resourceGroup": "rg", "name": "theirs"}}
    ev = run(aks(cluster=existing, pools=[], workspaces=[CPU]))
    (ws,) = cpu_workspaces(ev)
    assert ws["inference"]["template"]["spec"]["nodeSelector"] == AKS_SYSTEM_POOL_LABELS


def test_a_label_selector_the_user_gives_is_kept_as_written_and_nothing_added():
    mine = {**CPU, "labelSelector": {"matchLabels": {"agentpool": "cpu"}}}
    ev = run(aks(workspaces=[PHI, mine], cpuNodePools=[{"name": "cpu", "vmSize": "Standard_D8s_v5"}]))
    (ws,) = cpu_workspaces(ev)
    assert ws["resource"]["labelSelector"] == {"matchLabels": {"agentpool": "cpu"}}
    assert "nodeSelector" not in ws["inference"]["template"]["spec"]
    assert places(ev) == {"tiny-0": {"cpu"}}
    # without that pool no node of the cluster this stack creates carries the label: refused
    [error] = errors_of(aks(workspaces=[PHI, mine]))
    assert "workspaces[1].labelSelector: KAITO admits this, but no node of the cluster carries {agentpool=cpu}" in error


@pytest.mark.parametrize(
    "labels",
    [
        {"kubernetes.io/os": "linux"},
        {"kubernetes.azure.com/mode": "user"},
        {"agentpool": "gpu"},
        {"nvidia.com/gpu.present": "true"},
    ],
)
def test_a_user_selector_that_may_pick_a_gpu_pool_is_refused_at_its_path(labels):
    mine = {**CPU, "labelSelector": {"matchLabels": labels}}
    errors = errors_of(aks(workspaces=[PHI, mine]))
    assert any(
        e.startswith(
            "workspaces[1].labelSelector: KAITO admits this, but it is a CPU model whose pods may land on GPU pool gpu"
        )
        for e in errors
    ), errors
    assert any("nodeSelector" in e and "kubernetes.azure.com/mode: system" in e for e in errors), errors
    # stricter than KAITO, so a user who knows better passes it (the lead's call: a refusal, with a way past)
    assert all(e.endswith("(to deploy it anyway: bypassChecks: [cpu-on-gpu])") for e in errors), errors
    said = warnings_of(aks(workspaces=[PHI, {**mine, "bypassChecks": ["cpu-on-gpu"]}]))
    assert any(w.startswith("workspaces[1].labelSelector: bypassed (cpu-on-gpu): KAITO admits this") for w in said)


def test_a_node_selector_on_a_preset_is_said_and_one_kaitos_node_cannot_carry_is_refused():
    """A preset's pod is KAITO's own: its nodeSelector has no effect (a warning). With auto-provisioning
    KAITO's node carries only the selector's labels and AKS's: a label it cannot carry keeps the pod Pending."""
    said = warnings_of(aks(workspaces=[{**PHI, "nodeSelector": {"disk": "ssd"}}]))
    assert any(w.startswith("workspaces[0].nodeSelector: KAITO builds a preset's pod itself") for w in said), said
    auto = {**CPU, "instanceType": "Standard_D8s_v5", "nodeSelector": {"disk": "ssd"}}
    errors = errors_of(aks(pools=[], workspaces=[auto], kaito={"version": "0.12.0", "nodeProvisioning": "auto"}))
    assert any(
        e.startswith("workspaces[0].nodeSelector: KAITO admits this, but with nodeProvisioning auto") for e in errors
    ), errors
    maybe = {**auto, "nodeSelector": {"kubernetes.io/os": "linux"}}  # every node carries it
    said = warnings_of(aks(pools=[], workspaces=[maybe], kaito={"version": "0.12.0", "nodeProvisioning": "auto"}))
    assert any(w.startswith("workspaces[0].nodeSelector: with nodeProvisioning auto") for w in said), said


def test_with_auto_provisioning_a_cpu_model_selects_only_the_node_kaito_makes_for_it():
    """KAITO labels the nodes it creates with the Workspace's matchLabels; the default apps=<name>
    is the model's own, so a GPU model's node never matches a CPU model's pod."""
    auto = {"version": "0.12.0", "nodeProvisioning": "auto"}
    cpu = {**CPU, "instanceType": "Standard_D8s_v5"}
    gpu = {**PHI, "instanceType": "Standard_NV36ads_A10_v5"}
    ev = run(aks(pools=[], workspaces=[gpu, cpu], kaito=auto))
    sets = {r.inputs["metadata"]["name"]: r.inputs for r in ev.of_type(INFERENCE_SET)}
    gpu_node = Node("gpu", {**sets["phi"]["spec"]["labelSelector"]["matchLabels"], **GFD}, ["sku=gpu:NoSchedule"], True)
    cpu_node = Node("cpu", dict(sets["tiny"]["spec"]["labelSelector"]["matchLabels"]), [], False)
    template = sets["tiny"]["spec"]["template"]
    pod = kaito_pod({**template, "resource": {"labelSelector": sets["tiny"]["spec"]["labelSelector"]}})
    assert "nodeSelector" not in template["inference"]["template"]["spec"]
    assert [n.name for n in (gpu_node, cpu_node) if schedulable(pod, n)] == ["cpu"]


def test_on_a_kubeconfig_cluster_the_default_cpu_selector_is_said_to_reach_gpu_nodes():
    """The program creates no nodes there and knows no label only CPU nodes carry: it says so."""
    f = read_stack_file("e2e", ROOT)
    cfg = parse_stack_file(f)
    (warning,) = [w for w in cfg.warnings if w.code == "cpu-may-use-gpu"]
    assert warning.path == ("workspaces", 1)
    assert "which GPU nodes are too" in warning.text("stack")
    ev = run(config([CPU]))
    (ws,) = cpu_workspaces(ev)
    assert "nodeSelector" not in ws["inference"]["template"]["spec"]
    mine = config([{**CPU, "labelSelector": {"matchLabels": {"workload": "cpu"}}}])
    assert not [w for w in parse(mine).warnings if w.code == "cpu-may-use-gpu"]


def parse(cfg: dict[str, Any]):
    from stacks.load import stack_config

    return stack_config({k.removeprefix("kaito-aks:"): v for k, v in cfg.items()})


# ---------------------------------------------------------------- the library, used alone


def a10_pool() -> NodeGroup:
    return node_group(
        GpuNodePoolArgs(cluster_name="c", resource_group_name="rg", vm_size="Standard_NV36ads_A10_v5", count=1), "gpu"
    )


def codes(args: KaitoModelArgs) -> set[str]:
    _, problems = check_model(args)
    return {p.code for p in problems}


def test_kaito_model_alone_refuses_a_cpu_model_that_may_land_on_its_gpu_pools():
    base = KaitoModelArgs(
        kaito_version="0.8.1", name="tiny", compute="cpu", image=CPU["image"], node_groups=[a10_pool()]
    )
    assert "cpu-on-gpu" in codes(base)
    from dataclasses import replace

    assert "cpu-on-gpu" not in codes(replace(base, node_selector=dict(AKS_SYSTEM_POOL_LABELS)))
    assert "cpu-on-gpu" not in codes(replace(base, label_selector=LabelSelectorArgs(match_labels={"workload": "cpu"})))
    assert "cpu-on-gpu" in codes(
        replace(
            base,
            label_selector=LabelSelectorArgs(
                match_labels={"node.kubernetes.io/instance-type": "Standard_NV36ads_A10_v5"}
            ),
        )
    )


def test_may_select_reads_what_a_pools_nodes_carry():
    pool = a10_pool()
    assert may_select({"kubernetes.io/os": "linux"}, pool)
    assert may_select({"topology.kubernetes.io/zone": "eastus2-1"}, pool)  # AKS's, value unknown
    assert not may_select({"kubernetes.azure.com/mode": "system"}, pool)  # a user pool
    assert not may_select({"workload": "cpu"}, pool)  # a label of the user's own, not on this pool
    assert not may_select({"example.com/tier": "cpu"}, pool)
    assert not may_select({"agentpool": "cpu"}, pool)


def test_on_an_adopted_cluster_a_cpu_model_may_not_select_the_pools_the_stack_adds():
    existing = {"existing": {"resourceGroup": "rg", "name": "theirs"}}
    mine = {**CPU, "labelSelector": {"matchLabels": {"agentpool": "gpu"}}}
    errors = errors_of(aks(cluster=existing, workspaces=[PHI, mine]))
    assert any(
        e.startswith("workspaces[1].labelSelector: KAITO admits this, but it is a CPU model whose pods may land on GPU")
        for e in errors
    )
    only_mode = {**CPU, "nodeSelector": {"kubernetes.azure.com/mode": "user"}}
    errors = errors_of(aks(cluster=existing, workspaces=[PHI, only_mode]))
    assert any(
        e.startswith("workspaces[1].nodeSelector: KAITO admits this, but it is a CPU model whose pods may land on GPU")
        for e in errors
    )
    theirs = {**CPU, "labelSelector": {"matchLabels": {"agentpool": "cpu"}}}  # a pool of their own
    run(aks(cluster=existing, workspaces=[PHI, theirs]))


@pytest.mark.parametrize("version", ["0.8.1", "0.11.0"])
def test_before_0_12_an_auto_cpu_model_may_not_share_a_gpu_models_node_labels(version):
    """Two models named alike in two namespaces both select apps=chat; KAITO before 0.12 would let
    the CPU model's pod onto the GPU model's node (it labels the node so, and tolerates GPU taints)."""
    auto = {"version": version, "nodeProvisioning": "auto"}
    gpu = {"name": "chat", "namespace": "a", "model": "phi-4-mini-instruct", "instanceType": "Standard_NV36ads_A10_v5"}
    cpu = {**CPU, "name": "chat", "namespace": "b", "instanceType": "Standard_D8s_v5"}
    errors = errors_of(aks(pools=[], workspaces=[gpu, cpu], kaito=auto))
    said = f"workspaces[1].name: KAITO admits this, but KAITO {version} places this CPU model's pods by {{apps=chat}} "
    assert any(e.startswith(said) and "the GPU nodes it makes for workspaces[0] may carry" in e for e in errors), errors
    for labels in (
        {"kubernetes.io/os": "linux"},
        {"karpenter.sh/nodepool": "kaito"},
        {"node.kubernetes.io/instance-type": "Standard_NV36ads_A10_v5"},
    ):  # labels every node KAITO makes carries, or the GPU model's node does
        generic = {**cpu, "name": "tiny", "labelSelector": {"matchLabels": labels}}
        errors = errors_of(aks(pools=[], workspaces=[gpu, generic], kaito=auto))
        assert any(e.startswith("workspaces[1].labelSelector: KAITO admits this") for e in errors), (labels, errors)
    mine = {**cpu, "labelSelector": {"matchLabels": {"apps": "b-chat"}}}
    run(aks(pools=[], workspaces=[gpu, mine], kaito=auto))
    run(aks(pools=[], workspaces=[gpu, cpu], kaito={**auto, "version": "0.12.0"}))  # 0.12 keeps it on its own node


def test_deploy_models_refuses_the_shared_auto_labels_too():
    from kaito_aks.model_group import deploy_models
    from kaito_aks.problems import InvalidArgsError

    gpu = KaitoModelArgs(
        kaito_version="0.8.1", name="chat", namespace="a", model="phi-4-mini-instruct",
        node_provisioning="auto", instance_type="Standard_NV36ads_A10_v5",
    )  # fmt: skip
    cpu = KaitoModelArgs(
        kaito_version="0.8.1", name="chat", namespace="b", compute="cpu", image=CPU["image"],
        node_provisioning="auto", instance_type="Standard_D8s_v5",
    )  # fmt: skip
    with pytest.raises(
        InvalidArgsError,
        match=r"b/chat\.name: KAITO admits this, but KAITO 0\.8\.1 places this CPU model's pods by \{apps=chat\}",
    ):
        deploy_models("models", [("a/chat", gpu), ("b/chat", cpu)])
