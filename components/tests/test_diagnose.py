"""The failure library (issue 35): each detector against recorded answers of the real APIs
(diagnose_answers.py), and the walk of a model's chain naming its first broken link, with what
it means and the fix; the Azure side with recorded ARM answers."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from diagnose_answers import (
    AUTHZ_ERROR,
    CUT_ERROR,
    GFD_LABELS,
    GPU_OPERATOR_GFD,
    GPU_PROVISIONER_LABELS,
    KARPENTER_LABELS,
    KARPENTER_QUOTA,
    QUOTA_MESSAGE,
    SKU_ERROR,
    agent_pool,
    cond,
    crash_looping,
    event,
    node,
    nodeclaim,
    pod,
    stamp,
    unschedulable,
    waiting,
)
from kaito_aks.diagnose import (
    DETECTORS,
    OneLook,
    Route,
    Subject,
    azure,
    cluster,
    diagnose,
    explain_nodes,
    serving,
    workload,
)
from kaito_aks.diagnose.chain import Finding
from kaito_aks.kaito.modelmirror import MODEL_MIRRORS, MirrorStatus, model_mirror_name
from kaito_aks.vocabulary import GpuDemand
from kaito_aks.waits.kube_client import KubeApiError
from kaito_aks.waits.model_ready import Watched

NS = "default"
WS = Watched("Workspace", "kaito.sh/v1beta1", NS, "phi-0", "InferenceReady")
ISET = Watched("InferenceSet", "kaito.sh/v1beta1", NS, "phi", "InferenceSetReady")


class FakeApi:
    """Answers by path and query, as the API server would; 404 for anything else; an int is an
    HTTP error; text answers (a log) for get_text."""

    def __init__(self, answers: dict[str, Any], texts: dict[str, str] | None = None):
        self.answers, self.texts = answers, texts or {}
        self.seen: list[str] = []

    def get(self, path: str, **query: str) -> dict[str, Any]:
        full = path + ("?" + urllib.parse.urlencode(sorted(query.items())) if query else "")
        self.seen.append(full)
        answer = self.answers.get(full, self.answers.get(path) if not query else None)
        if isinstance(answer, int):
            raise KubeApiError(answer, "forbidden" if answer == 403 else "no")
        if answer is None:
            raise KubeApiError(404, "not found")
        return answer


class LoggingApi(FakeApi):
    def get_text(self, path: str, **query: str) -> str:
        self.seen.append(path)
        if path not in self.texts:
            raise KubeApiError(502, "no kubelet")
        return self.texts[path]


def q(path: str, **query: str) -> str:
    return path + "?" + urllib.parse.urlencode(sorted(query.items()))


def workspace(
    name: str = "phi-0", *conditions: dict[str, Any], instance_type: str | None = None, **extra: Any
) -> dict[str, Any]:
    resource: dict[str, Any] = {"labelSelector": {"matchLabels": {"apps": "phi"}}}
    if instance_type:
        resource["instanceType"] = instance_type
    return {
        "apiVersion": "kaito.sh/v1beta1",
        "kind": "Workspace",
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": stamp(1800), **extra},
        "resource": resource,
        "inference": {"preset": {"name": "phi-4-mini-instruct"}},
        "status": {"conditions": list(conditions)},
    }


PODS = q(f"/api/v1/namespaces/{NS}/pods", labelSelector="kaito.sh/workspace=phi-0")
NODES = q("/api/v1/nodes", labelSelector="apps=phi")
CLAIMS_GP = q(
    "/apis/karpenter.sh/v1/nodeclaims", labelSelector="kaito.sh/workspace=phi-0,kaito.sh/workspacenamespace=default"
)
CLAIMS_K = q(
    "/apis/karpenter.sh/v1/nodeclaims",
    labelSelector="karpenter.kaito.sh/workspace-name=phi-0,karpenter.kaito.sh/workspace-namespace=default",
)
A100 = "Standard_NC24ads_A100_v4"


# ---------------------------------------------------------------- every detector, one case or more each


def _detector_cases() -> list[tuple[str, Finding | None, str, bool]]:
    """(detector, what it found, words its finding must carry, broken)."""
    now_node = node("aks-a100-0", {"apps": "phi", **GFD_LABELS})
    return [
        ("azure-quota", azure.azure_quota("QuotaExceeded", QUOTA_MESSAGE), "standardNCADSA100v4Family in eastus2", True),
        ("azure-quota", azure.azure_quota("", KARPENTER_QUOTA), "no vCPU quota left", True),
        ("azure-sku-unavailable", azure.azure_sku_unavailable("", SKU_ERROR), "not offered", True),
        ("azure-capacity", azure.azure_capacity("ZonalAllocationFailed", "Allocation failed."), "no free capacity", True),
        ("azure-authorization", azure.azure_authorization("", AUTHZ_ERROR), "agentPools/write", True),
        ("azure-subnet-full", azure.azure_subnet_full("InsufficientSubnetSize", "Subnet too small"), "no free addresses", True),
        ("agent-pool-failed", azure.agent_pool_failed(agent_pool("ws1a2b3c4", "Failed", "VMExtensionProvisioningError", "vmssCSE failed")), "could not make the node pool", True),
        ("agent-pool-failed", azure.agent_pool_failed(agent_pool("ws1a2b3c4", "Creating")), "still making", False),
        ("nodeclaim-launch-failed", azure.nodeclaim_launch_failed("ws1a2b3c4", "LaunchFailed", CUT_ERROR), "gpu-provisioner", True),
        ("nodeclaim-not-registered", azure.nodeclaim_not_registered("ws1", "NodeNotFound", "Node not registered with cluster", 1200), "never joined", True),
        ("nodeclaim-not-initialized", azure.nodeclaim_not_initialized("ws1", "ResourceNotRegistered", 'Resource "nvidia.com/gpu" was requested but not registered', 60), "does not advertise its GPUs", False),
        ("karpenter-insufficient-capacity", azure.karpenter_insufficient_capacity(event("default-phi-0-x9k2m", "InsufficientCapacityError", "NodeClaim default-phi-0-x9k2m event: all offerings exhausted")), "no size and zone", True),
        ("no-matching-node", cluster.no_matching_node({"agentpool": "h100"}, True, 3600), "do not exist", True),
        ("node-not-ready", cluster.node_not_ready(node("n1", {}, ready=False)), "Kubelet stopped posting", True),
        ("node-no-gpus", cluster.node_no_gpus(node("n1", {}, gpus=0)), "no NVIDIA device plugin", True),
        ("gfd-labels-missing", cluster.gfd_labels_missing(node("n1", {"apps": "phi"}), [GPU_OPERATOR_GFD]), "nodeSelector", True),
        ("kaito-admission-denied", cluster.kaito_admission_denied("Workspace", "phi-0", "KAITO 0.8 would deny phi", "a larger size"), "denies creating", True),
        ("kaito-webhook-unavailable", cluster.kaito_webhook_unavailable("Workspace", "phi-0", "no ready endpoint", "is KAITO running?"), "does not answer", True),
        ("kaito-object-missing", cluster.kaito_object_missing("Workspace", NS, "phi-0"), "did not create it", True),
        ("kaito-silent", cluster.kaito_silent({"status": {}}, "Workspace", 900), "not running", True),
        ("kaito-inference-failed", cluster.kaito_inference_failed(cond("InferenceReady", "False", "WorkspaceInferenceStatusFailed", "oom")), "failed", True),
        ("pod-pending-resources", workload.pod_pending_resources(pod("p", conditions=unschedulable("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {sku: gpu}."))), "cpu", True),
        ("pod-pending-placement", workload.pod_pending_placement(pod("p", conditions=unschedulable("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."))), "selector", True),
        ("image-pull-failed", workload.image_pull_failed(pod("p", containerStatuses=[waiting("inference", "ImagePullBackOff", 'Back-off pulling image "x"')])), "cannot pull", True),
        ("container-start-failed", workload.container_start_failed(pod("p", containerStatuses=[waiting("inference", "CreateContainerConfigError", 'secret "phi-hf-token" not found')])), "Secret it reads", True),
        ("container-crash", workload.container_crash(pod("p", containerStatuses=[crash_looping("inference", 1)]), "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (41696). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`"), "max-model-len", True),
        ("pod-evicted", workload.pod_evicted(pod("p", phase="Failed", reason="Evicted", message="The node was low on resource: ephemeral-storage.")), "disk", True),
        ("weights-download", workload.weights_download(MirrorStatus("3f2a1b", True, "Pending", 104_857_600, 600), cond("ModelMirrorReady", "False", "ModelMirrorPending", "Model download in progress")), "downloading at 104.9 MB/s, about 10m00s left", False),
        ("picker-not-made", serving.picker_not_made("phi-inferencepool", {"status": {"conditions": [cond("Ready", "False", "ArtifactFailed", "failed to pull oci://ghcr.io/llm-d/charts/llm-d-router-gateway")]}}), "cannot install", True),
        ("pool-not-accepted", serving.pool_not_accepted({"metadata": {"name": "phi-inferencepool"}, "status": {"parents": [{"conditions": [cond("ResolvedRefs", "False", "InvalidExtensionRef", "no Service phi-epp")]}]}}), "endpoint picker", True),
        ("gateway-not-programmed", serving.gateway_not_programmed({"status": {"conditions": [cond("Programmed", "False", "Invalid", "no address")]}}, "gw", "kaito-gateway"), "not programmed", True),
        ("route-not-accepted", serving.route_not_accepted({"metadata": {"name": "phi"}, "status": {"parents": [{"conditions": [cond("Accepted", "False", "NotAllowedByListeners", "no listener allows")]}]}}), "allowedRoutes", True),
        ("route-refs-unresolved", serving.route_refs_unresolved({"metadata": {"name": "phi"}, "status": {"parents": [{"conditions": [cond("Accepted", "True"), cond("ResolvedRefs", "False", "InvalidKind", "InferencePool")]}]}}), "ENABLE_GATEWAY_API_INFERENCE_EXTENSION", True),
        ("auth-not-ready", serving.auth_not_ready({"status": {"conditions": [cond("Ready", "False", "HostsNotLinked", "one or more hosts are not linked to the resource")]}}, "gw", "kaito-gateway"), "another AuthConfig", True),
        ("scaler-not-ready", serving.scaler_not_ready({"status": {"conditions": [cond("Ready", "False", "TriggerError", "Triggers defined in ScaledObject are not working correctly")]}}, "phi"), "cannot scale", True),
        ("node-not-ready", cluster.node_not_ready(now_node), "", False),
    ]  # fmt: skip


CASES = _detector_cases()


@pytest.mark.parametrize(
    ("name", "finding", "words", "broken"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_each_detector_finds_its_broken_link_in_the_recorded_answer(
    name: str, finding: Finding | None, words: str, broken: bool
):
    if not words:  # a healthy answer: nothing found
        assert finding is None
        return
    assert finding is not None
    assert finding.detector == name
    assert finding.broken is broken
    text = " ".join((finding.said, finding.means, finding.fix))
    assert words in text, text
    assert finding.means
    assert finding.fix


def test_every_detector_is_tested_and_cites_its_upstream_evidence():
    assert {c[0] for c in CASES} == set(DETECTORS)
    for d in DETECTORS.values():
        assert d.evidence, f"{d.name} cites no file:line@tag"


def test_healthy_answers_find_nothing():
    assert azure.agent_pool_failed(agent_pool("ws1", "Succeeded")) is None
    assert azure.azure_error("", "context deadline exceeded") is None
    assert cluster.gfd_labels_missing(node("n", {"apps": "phi", **GFD_LABELS}), []) is None
    assert serving.route_not_accepted({"status": {"parents": [{"conditions": [cond("Accepted", "True")]}]}}) is None
    assert serving.auth_not_ready({"status": {"conditions": [cond("Ready", "True")]}}, "gw", "g") is None
    scaled = {
        "status": {
            "conditions": [cond("Ready", "True"), cond("Active", "False", "ScalerNotActive"), cond("Fallback", "False")]
        }
    }
    assert serving.scaler_not_ready(scaled, "phi") is None  # idle is not broken
    fresh = {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}  # as KEDA starts it
    assert serving.scaler_not_ready(fresh, "phi").broken is False  # type: ignore[union-attr]


# ---------------------------------------------------------------- the Azure side, walked


class Arm:
    """ARM's agent pools, recorded; None: 404."""

    def __init__(self, pools: dict[str, dict[str, Any] | None]):
        self.pools = pools
        self.asked: list[str] = []

    def agent_pool(self, name: str) -> dict[str, Any] | None:
        self.asked.append(name)
        return self.pools.get(name)


NOT_YET = (cond("ResourceReady", "False", "NodeClaimNotReady", "Ready NodeClaims are not enough"),)


def _auto(
    claims: list[dict[str, Any]], *conditions: dict[str, Any], karpenter: list[dict[str, Any]] | None = None
) -> FakeApi:
    return FakeApi(
        {
            WS.path: workspace("phi-0", *(conditions or NOT_YET), instance_type=A100),
            CLAIMS_GP: {"items": claims},
            CLAIMS_K: {"items": karpenter or []},
            NODES: {"items": []},
            PODS: {"items": []},
        }
    )


def test_a_failed_agent_pool_is_the_first_broken_link_with_arms_error():
    claim = nodeclaim("ws1a2b3c4", GPU_PROVISIONER_LABELS, cond("Launched", "Unknown", "LaunchFailed", CUT_ERROR))
    arm = Arm({"ws1a2b3c4": agent_pool("ws1a2b3c4", "Failed", "QuotaExceeded", QUOTA_MESSAGE)})
    found = diagnose(
        _auto([claim], cond("ResourceReady", "False", "NodeClaimNotReady", "Ready NodeClaims are not enough")),
        Subject("default/phi", (WS,)),
        arm=arm,
    )
    first = found.first
    assert first is not None
    assert first.name == "azure"
    assert first.finding is not None
    assert first.finding.detector == "azure-quota"
    assert first.finding.where == "agent pool ws1a2b3c4"
    assert "standardNCADSA100v4Family in eastus2" in first.finding.means
    assert arm.asked == ["ws1a2b3c4"]
    # the NodeClaim's own message, cut by Karpenter before ARM's code, says only that it failed
    assert found.link("nodeclaims").finding.detector == "nodeclaim-launch-failed"  # type: ignore[union-attr]
    lines = found.lines()
    assert lines[0] == "first broken link: Azure node pool (agent pool ws1a2b3c4)"
    assert lines[-1].startswith("chain: Azure node pool BROKEN (QuotaExceeded: Preflight validation")


def test_without_azure_credentials_the_nodeclaim_carries_what_azure_said():
    claim = nodeclaim("ws1a2b3c4", GPU_PROVISIONER_LABELS, cond("Launched", "Unknown", "LaunchFailed", SKU_ERROR))
    found = diagnose(_auto([claim]), Subject("default/phi", (WS,)), arm="the Azure CLI (az) is not on PATH")
    assert found.link("azure").state == "unread"  # type: ignore[union-attr]
    assert found.link("azure").brief == "the Azure CLI (az) is not on PATH"  # type: ignore[union-attr]
    assert found.first.finding.detector == "azure-sku-unavailable"  # type: ignore[union-attr]


def test_karpenters_own_words_for_quota_and_its_insufficient_capacity_event():
    claim = nodeclaim(
        "default-phi-0-x9k2m", KARPENTER_LABELS, cond("Launched", "Unknown", "CreateInstanceFailed", KARPENTER_QUOTA)
    )
    found = diagnose(_auto([], karpenter=[claim]), Subject("default/phi", (WS,)))
    assert found.first.finding.detector == "azure-quota"  # type: ignore[union-attr]
    assert found.link("azure").state == "none"  # type: ignore[union-attr]  # Karpenter makes VMs, not agent pools
    api = _auto([])
    events = q(
        "/api/v1/namespaces/default/events",
        fieldSelector="involvedObject.kind=NodeClaim,reason=InsufficientCapacityError",
    )
    api.answers[events] = {
        "items": [
            event("other-model-0-aaaaa", "InsufficientCapacityError", "NodeClaim other event: all requested instance types were unavailable during launch"),
            event("default-phi-0-x9k2m", "InsufficientCapacityError", "NodeClaim default-phi-0-x9k2m event: regional on-demand vCPU quota limit for subscription has been reached. To scale beyond this limit, please review the quota increase process"),
        ]
    }  # fmt: skip
    found = diagnose(api, Subject("default/phi", (WS,)))
    assert found.first.finding.detector == "azure-quota"  # type: ignore[union-attr]
    assert found.first.finding.where == "NodeClaim default-phi-0-x9k2m"  # type: ignore[union-attr]


def test_kaito_0_12_copies_the_nodeclaims_error_into_the_workspace():
    found = diagnose(
        _auto([], cond("NodeClaimReady", "False", "LaunchFailed", QUOTA_MESSAGE[:256])), Subject("default/phi", (WS,))
    )
    assert found.first.name == "nodeclaims"  # type: ignore[union-attr]
    assert found.first.finding.detector == "azure-quota"  # type: ignore[union-attr]


def test_a_node_that_never_joins_waits_then_breaks():
    young = nodeclaim(
        "ws1",
        GPU_PROVISIONER_LABELS,
        cond("Launched", "True"),
        cond("Registered", "Unknown", "NodeNotFound", "Node not registered with cluster", 60),
    )
    assert diagnose(_auto([young]), Subject("default/phi", (WS,))).link("nodeclaims").state == "waiting"  # type: ignore[union-attr]
    old = nodeclaim(
        "ws1",
        GPU_PROVISIONER_LABELS,
        cond("Launched", "True"),
        cond("Registered", "Unknown", "NodeNotFound", "Node not registered with cluster", 1800),
    )
    assert diagnose(_auto([old]), Subject("default/phi", (WS,))).first.finding.detector == "nodeclaim-not-registered"  # type: ignore[union-attr]


# ---------------------------------------------------------------- the cluster side, walked


def _byo(
    *conditions: dict[str, Any], pods: list[dict[str, Any]] | None = None, nodes: list[dict[str, Any]] | None = None
) -> FakeApi:
    ready_node = node("aks-a100-0", {"apps": "phi", **GFD_LABELS})
    return LoggingApi(
        {
            WS.path: workspace(
                "phi-0", *(conditions or (cond("InferenceReady", "False", "WorkspaceInferenceStatusPending"),))
            ),
            NODES: {"items": nodes if nodes is not None else [ready_node]},
            PODS: {"items": pods or []},
        }
    )


def test_an_image_that_cannot_be_pulled_is_the_pods_link_and_kaito_points_there():
    bad = pod(
        "phi-0-0",
        containerStatuses=[
            waiting(
                "inference", "ErrImagePull", 'failed to pull "mcr.microsoft.com/aks/kaito/kaito-base:0.5.0": not found'
            )
        ],
    )
    found = diagnose(
        _byo(
            cond("ResourceReady", "True"),
            cond("InferenceReady", "False", "ImagePullError", "image pull failed"),
            pods=[bad],
        ),
        Subject("default/phi", (WS,)),
    )
    assert (found.first.name, found.first.finding.detector) == ("pods", "image-pull-failed")  # type: ignore[union-attr]
    kaito = found.link("kaito")
    assert kaito is not None
    assert (kaito.state, kaito.brief) == ("ok", "InferenceReady=False (ImagePullError): waits for its pods")
    assert found.link("nodes").state == "ok"  # type: ignore[union-attr]


def test_a_crashing_container_is_told_with_the_last_lines_of_its_log_and_no_token():
    api = _byo(cond("ResourceReady", "True"), pods=[pod("phi-0-0", containerStatuses=[crash_looping("inference", 1)])])
    assert isinstance(api, LoggingApi)
    api.texts["/api/v1/namespaces/default/pods/phi-0-0/log"] = (
        "INFO loading weights\nHF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123\n"
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. Access to model meta-llama/Llama-3.1-8B-Instruct "
        "is restricted (token hf_abcdefghijklmnopqrstuvwxyz0123)\n"
        "INFO shutting down\n"
    )
    found = diagnose(OneLook(api), Subject("default/phi", (WS,)))
    f = found.first.finding  # type: ignore[union-attr]
    assert f is not None
    assert f.detector == "container-crash"
    assert "GatedRepoError: 401 Client Error" in f.said  # the line that tells, not the last
    assert "hf_abcdef" not in f.said
    assert "(token <redacted>)" in f.said
    assert f.means.startswith("Hugging Face refuses to give the weights")
    assert "/api/v1/namespaces/default/pods/phi-0-0/log" in api.seen


def test_without_a_kubelet_the_termination_message_is_the_log_line():
    message = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
    api = _byo(
        cond("ResourceReady", "True"), pods=[pod("phi-0-0", containerStatuses=[crash_looping("inference", 1, message)])]
    )
    f = diagnose(api, Subject("default/phi", (WS,))).first.finding  # type: ignore[union-attr]
    assert f is not None
    assert "No available memory for the cache blocks" in f.said
    assert f.means == "the model does not fit in the GPU memory"


def test_a_pod_pending_for_cpu():
    pending = pod(
        "phi-0-0",
        conditions=unschedulable(
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {sku: gpu}."
        ),
    )
    f = diagnose(_byo(cond("ResourceReady", "True"), pods=[pending]), Subject("default/phi", (WS,))).first.finding  # type: ignore[union-attr]
    assert f is not None
    assert f.detector == "pod-pending-resources"
    assert "cpuNodePools" in f.fix


def test_a_node_without_gfd_labels_names_the_taint_gfd_does_not_tolerate():
    unlabelled = node("aks-a100-0", {"apps": "phi", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true"})
    api = _byo(nodes=[unlabelled])
    api.answers["/apis/apps/v1/daemonsets"] = {"items": [GPU_OPERATOR_GFD, {"metadata": {"name": "coredns"}}]}
    f = diagnose(api, Subject("default/phi", (WS,))).first.finding  # type: ignore[union-attr]
    assert f is not None
    assert f.detector == "gfd-labels-missing"
    assert (
        "gpu-operator/gpu-feature-discovery cannot run there: it does not tolerate the node's taint sku=gpu:NoSchedule"
        in f.said
    )
    # the GPU-node wait says the same
    assert "does not tolerate the node's taint sku=gpu:NoSchedule" in explain_nodes(api, {"apps": "phi"}).explain("")


def test_a_workspace_kaitos_webhook_refused_is_explained_by_the_same_check():
    small = node(
        "aks-t4-0",
        {
            "apps": "phi",
            "nvidia.com/gpu.product": "Tesla-T4",
            "nvidia.com/gpu.count": "1",
            "nvidia.com/gpu.memory": "15360",
        },
    )
    api = FakeApi(
        {
            NODES: {"items": [small]},
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": {"items": []},
        }
    )
    demand = GpuDemand("llama-3.1-8b-instruct", 1, 16.0, "0.8")
    found = diagnose(api, Subject("default/phi", (WS,), selector={"apps": "phi"}, demands=(demand,)))
    f = found.first.finding  # type: ignore[union-attr]
    assert f is not None
    assert f.detector == "kaito-admission-denied"
    assert "Insufficient total GPU memory" in f.said
    assert found.link("nodes").state == "ok"  # type: ignore[union-attr]


def test_a_webhook_without_an_endpoint_is_why_the_workspace_is_missing():
    hook = {
        "metadata": {"name": "validation.workspace.kaito.sh"},
        "webhooks": [
            {
                "name": "validation.workspace.kaito.sh",
                "clientConfig": {
                    "service": {"namespace": "kaito-workspace", "name": "kaito-workspace"},
                    "caBundle": "Y2E=",
                },
                "rules": [{"apiGroups": ["kaito.sh"], "resources": ["workspaces"], "operations": ["CREATE"]}],
            }
        ],
    }
    api = FakeApi(
        {
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": {"items": [hook]},
            "/api/v1/namespaces/kaito-workspace/services/kaito-workspace": {"metadata": {"name": "kaito-workspace"}},
            q(
                "/apis/discovery.k8s.io/v1/namespaces/kaito-workspace/endpointslices",
                labelSelector="kubernetes.io/service-name=kaito-workspace",
            ): {"items": []},
        }
    )
    f = diagnose(api, Subject("default/phi", (WS,))).first.finding  # type: ignore[union-attr]
    assert f is not None
    assert f.detector == "kaito-webhook-unavailable"


def test_weights_still_downloading_is_where_it_waits():
    """The Workspace's ModelMirror is read by the name KAITO gives it (the first 6 hex of the
    SHA-256 of the id its preset name resolves to), in the wording `status` prints it."""
    name = model_mirror_name("microsoft/phi-4-mini-instruct")  # phi-4-mini-instruct, KAITO's legacy alias
    mirror = {
        "metadata": {"name": name},
        "spec": {"source": {"modelID": "microsoft/phi-4-mini-instruct"}},
        "status": {"phase": "Pending", "download": {"speedBytesPerSecond": 52_428_800, "remainingSeconds": 1200}},
    }
    api = _byo(
        cond("ResourceReady", "False", "ModelMirrorNotReady", "Model download in progress"),
        cond("ModelMirrorReady", "False", "ModelMirrorPending", "Model download in progress"),
    )
    api.answers[f"{MODEL_MIRRORS}/{name}"] = mirror
    found = diagnose(api, Subject("default/phi", (WS,)))
    assert found.first.name == "weights"  # type: ignore[union-attr]
    assert found.first.state == "waiting"  # type: ignore[union-attr]
    assert found.first.finding.said == (  # type: ignore[union-attr]
        "Model download in progress, downloading at 52.4 MB/s, about 20m00s left"
    )
    assert found.first.finding.where == f"ModelMirror {name}"  # type: ignore[union-attr]
    assert MODEL_MIRRORS not in api.seen, "the mirrors are not listed: KAITO's name finds the one"


def test_a_failed_download_is_broken_and_a_mirror_the_credentials_may_not_read_is_unread():
    name = model_mirror_name("microsoft/phi-4-mini-instruct")
    failing = cond("ModelMirrorReady", "False", "DownloadFailed", "download job failed")
    api = _byo(cond("ResourceReady", "False", "ModelMirrorNotReady", "download job failed"), failing)
    api.answers[f"{MODEL_MIRRORS}/{name}"] = {
        "metadata": {"name": name},
        "status": {
            "phase": "Pending",
            "failureMessage": "401 Client Error: gated repo",
            "conditions": [cond("Ready", "False", "DownloadFailed", "401 Client Error: gated repo")],
        },
    }
    broken = diagnose(api, Subject("default/phi", (WS,))).link("weights")
    assert broken is not None
    assert broken.state == "broken"
    assert broken.finding is not None
    assert broken.finding.said == "DownloadFailed: 401 Client Error: gated repo"
    api.answers[f"{MODEL_MIRRORS}/{name}"] = 403
    unread = diagnose(api, Subject("default/phi", (WS,))).link("weights")
    assert unread is not None
    assert (unread.state, unread.brief) == ("unread", "modelmirrors.kaito.sh: HTTP 403: forbidden")


def test_an_inference_set_is_judged_by_its_worst_replica():
    iset = {
        "metadata": {"name": "phi", "namespace": NS, "creationTimestamp": stamp(600)},
        "status": {
            "conditions": [
                cond(
                    "InferenceSetReady",
                    "False",
                    "inferencesetNotReady",
                    "inferenceset is not ready, 1/2 replicas are ready",
                )
            ]
        },
    }
    good = workspace("phi-aaaaa", cond("InferenceReady", "True"), labels={"inferenceset.kaito.sh/created-by": "phi"})
    bad = workspace(
        "phi-bbbbb",
        cond("InferenceReady", "False", "Unschedulable", "pod is unschedulable"),
        labels={"inferenceset.kaito.sh/created-by": "phi"},
    )
    pending = pod("phi-bbbbb-0", conditions=unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu."))
    api = FakeApi(
        {
            ISET.path: iset,
            q(f"/apis/kaito.sh/v1beta1/namespaces/{NS}/workspaces", labelSelector="inferenceset.kaito.sh/created-by=phi"): {"items": [good, bad]},
            NODES: {"items": [node("aks-a100-0", {"apps": "phi", **GFD_LABELS})]},
            q(f"/api/v1/namespaces/{NS}/pods", labelSelector="kaito.sh/workspace=phi-aaaaa"): {"items": [pod("phi-aaaaa-0", conditions=[cond("Ready", "True")])]},
            q(f"/api/v1/namespaces/{NS}/pods", labelSelector="kaito.sh/workspace=phi-bbbbb"): {"items": [pending]},
        }
    )  # fmt: skip
    found = diagnose(api, Subject("default/phi", (ISET,)))
    f = found.first.finding  # type: ignore[union-attr]
    assert f is not None
    assert (f.detector, f.where) == ("pod-pending-resources", "pod phi-bbbbb-0")
    assert "more GPU nodes" in f.fix


# ---------------------------------------------------------------- the gateway's side


ROUTE = {
    "namespace": NS,
    "httpRoute": "phi",
    "inferencePool": "phi-inferencepool",
    "inferencePoolApiVersion": "inference.networking.k8s.io/v1",
    "endpointPicker": "phi-inferencepool-epp",
}
POOL = "/apis/inference.networking.k8s.io/v1/namespaces/default/inferencepools/phi-inferencepool"
PICKERS = q(f"/api/v1/namespaces/{NS}/pods", labelSelector="llm-d-router-gateway")
EPP = {"llm-d-router-gateway": "phi-inferencepool-epp"}
HTTPROUTE = "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes/phi"
GATEWAY = "/apis/gateway.networking.k8s.io/v1/namespaces/gw/gateways/kaito-gateway"
AUTH = "/apis/authorino.kuadrant.io/v1beta3/namespaces/gw/authconfigs/kaito-gateway"
SCALED = "/apis/keda.sh/v1alpha1/namespaces/default/scaledobjects/phi"


def _routed(**changes: Any) -> FakeApi:
    answers: dict[str, Any] = {
        POOL: {"metadata": {"name": "phi-inferencepool"}, "status": {"parents": [{"conditions": [cond("Accepted", "True"), cond("ResolvedRefs", "True")]}]}},
        PICKERS: {"items": [pod("phi-inferencepool-epp-7d9f", labels=EPP, phase="Running", conditions=[cond("Ready", "True")]), pod("other-epp-1", labels={"llm-d-router-gateway": "other-epp"}, conditions=unschedulable("Insufficient cpu"))]},
        GATEWAY: {"status": {"conditions": [cond("Programmed", "True")]}},
        HTTPROUTE: {"metadata": {"name": "phi"}, "status": {"parents": [{"conditions": [cond("Accepted", "True"), cond("ResolvedRefs", "True")]}]}},
        AUTH: {"status": {"conditions": [cond("Available", "True"), cond("Ready", "True")]}},
        SCALED: {"status": {"conditions": [cond("Ready", "True"), cond("Active", "False", "ScalerNotActive")]}},
    }  # fmt: skip
    answers.update(changes)
    return FakeApi(answers)


SERVED = Subject(
    "default/phi",
    (ISET,),
    Route(ROUTE, "llm-d-router-gateway", ("gw", "kaito-gateway"), ("gw", "kaito-gateway")),
    scaled="phi",
    serving=True,
)


def test_a_serving_routed_model_with_every_link_up_has_nothing_to_say():
    api = _routed()
    found = diagnose(api, SERVED)
    assert found.first is None
    assert not found.broken
    assert [(link.name, link.state) for link in found.links] == [
        ("azure", "none"),
        ("nodeclaims", "ok"),
        ("nodes", "ok"),
        ("kaito", "ok"),
        ("pods", "ok"),
        ("weights", "none"),
        ("picker", "ok"),
        ("route", "ok"),
        ("auth", "ok"),
        ("autoscaler", "ok"),
    ]
    assert ISET.path not in api.seen  # KAITO's word was read already: not read again


@pytest.mark.parametrize(
    ("change", "link", "detector"),
    [
        ({PICKERS: {"items": [pod("phi-inferencepool-epp-7d9f", labels=EPP, conditions=unschedulable("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {sku: gpu}."))]}}, "picker", "pod-pending-resources"),
        ({POOL: None, PICKERS: {"items": []}, "/apis/helm.toolkit.fluxcd.io/v2/namespaces/default/helmreleases/phi-inferencepool": {"status": {"conditions": [cond("Ready", "False", "InstallFailed", "failed to pull chart")]}}}, "picker", "picker-not-made"),
        ({HTTPROUTE: {"metadata": {"name": "phi"}, "status": {"parents": [{"conditions": [cond("Accepted", "False", "NotAllowedByListeners", "no listener allows the route's namespace")]}]}}}, "route", "route-not-accepted"),
        ({GATEWAY: {"status": {"conditions": [cond("Programmed", "False", "AddressNotAssigned", "no address")]}}}, "route", "gateway-not-programmed"),
        ({AUTH: {"status": {"conditions": [cond("Ready", "False", "Invalid", "unsupported identity")]}}}, "auth", "auth-not-ready"),
        ({SCALED: {"status": {"conditions": [cond("Ready", "True"), cond("Fallback", "True", "FallbackExists", "At least one trigger is falling back on this scaled object")]}}}, "autoscaler", "scaler-not-ready"),
    ],
)  # fmt: skip
def test_each_broken_serving_link_is_named(change: dict[str, Any], link: str, detector: str):
    api = _routed(**{k: v for k, v in change.items()})
    for path, value in change.items():
        if value is None:
            del api.answers[path]
    found = diagnose(api, SERVED)
    assert found.first is not None
    assert found.first.name == link
    assert found.broken
    assert found.first.finding is not None
    assert found.first.finding.detector == detector


def test_what_the_credentials_may_not_read_is_unread_not_an_error():
    api = _routed(**{AUTH: 403, SCALED: 500})
    found = diagnose(api, SERVED)
    assert found.link("auth").state == "unread"  # type: ignore[union-attr]
    assert "forbidden" in found.link("auth").brief  # type: ignore[union-attr]
    assert found.link("autoscaler").state == "unread"  # type: ignore[union-attr]
    assert found.first is None


def test_one_look_reads_each_answer_once():
    api = _routed()
    look = OneLook(api)
    diagnose(look, SERVED)
    diagnose(look, SERVED)
    assert look.calls == len(set(api.seen)) == len(api.seen) == 6
