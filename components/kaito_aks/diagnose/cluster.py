"""The nodes a model runs on and what KAITO says of it: a node that is not Ready, that does not
advertise its GPUs, that GPU Feature Discovery never labelled (and why: no GFD, or a GFD that may
not run there); KAITO's admission webhook that denies the Workspace, or does not answer; KAITO's
own conditions when they report a failure, or nothing at all."""

from __future__ import annotations

from typing import Any

from kaito_aks.diagnose.chain import Finding
from kaito_aks.diagnose.registry import detector
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.vocabulary import selector_text
from kaito_aks.waits.answers import conditions_of, field_at, labels_of, text_at
from kaito_aks.waits.gpu_nodes import GFD_LABELS, GPU_RESOURCE

KAITO_SILENT_SECONDS = 5 * 60  # a controller that runs reports on a new object within seconds
NODES_PATIENCE_SECONDS = 15 * 60  # an AKS GPU pool made with the model takes minutes to have a node


def _ready(node: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in conditions_of(node) if c.get("type") == "Ready"), None)


@detector("no-matching-node", "nodes")
def no_matching_node(selector: dict[str, str], own_nodes: bool, age_seconds: float | None = None) -> Finding:
    """No node carries the Workspace's labelSelector. With nodes of your own KAITO's webhook lists
    them and denies a preset Workspace when none match: "No nodes found matching the specified
    label selector" (api/v1beta1/workspace_validation.go:568@v0.12.0, :386@v0.8.1); broken once
    the Workspace is older than a pool takes to make a node (`age_seconds`; math.inf: it does
    not exist), in progress before. With node auto-provisioning the node is still being made (the
    NodeClaims say how that goes)."""
    sel = selector_text(selector)
    if own_nodes:
        return Finding(
            "no-matching-node",
            f"no node matches {sel}",
            "the model's GPU nodes do not exist (or do not carry its labels): KAITO denies a preset Workspace until "
            "one matches, and nothing schedules its pods",
            "create the GPU pool with at least one node (autoscale.min >= 1), or fix the model's labelSelector",
            broken=age_seconds is not None and age_seconds >= NODES_PATIENCE_SECONDS,
        )
    return Finding(
        "no-matching-node",
        f"no node matches {sel} yet",
        "the node KAITO asked for has not joined the cluster yet",
        "wait for it (the NodeClaims show how its creation goes)",
        broken=False,
    )


@detector("node-not-ready", "nodes")
def node_not_ready(node: dict[str, Any]) -> Finding | None:
    """A node whose Ready condition is not True (k8s.io/api core/v1/types.go:6515@v0.33.3): the
    kubelet's reason and message (KubeletNotReady, NodeStatusUnknown "Kubelet stopped posting node
    status.")."""
    ready = _ready(node)
    if ready is not None and ready.get("status") == "True":
        return None
    name = text_at(node, "metadata", "name") or ""
    said = ": ".join(str(x) for x in ((ready or {}).get("reason"), (ready or {}).get("message")) if x)
    return Finding(
        "node-not-ready",
        f"Ready={(ready or {}).get('status', 'unknown')}" + (f" ({said})" if said else ""),
        "the node is not Ready: nothing new starts on it",
        f"kubectl describe node {name}; on AKS, the node's VM in the node resource group (restart or reimage it)",
        where=f"node {name}",
    )


def gpus_allocatable(node: dict[str, Any]) -> bool:
    value = field_at(node, "status", "allocatable", GPU_RESOURCE) or field_at(node, "status", "capacity", GPU_RESOURCE)
    return isinstance(value, str | int) and str(value).isdigit() and int(value) > 0


@detector("node-no-gpus", "nodes")
def node_no_gpus(node: dict[str, Any]) -> Finding | None:
    """A Ready GPU node that does not advertise `nvidia.com/gpu` in its allocatable resources, the
    resource the NVIDIA device plugin registers (k8s-device-plugin internal/lm/resource.go:30@v0.17.4)
    and the model's pods request: no device plugin runs, or the driver is not installed yet."""
    if gpus_allocatable(node):
        return None
    name = text_at(node, "metadata", "name") or ""
    return Finding(
        "node-no-gpus",
        f"node {name} advertises no {GPU_RESOURCE}",
        "no NVIDIA device plugin advertises the node's GPUs (or the GPU driver is not installed): pods that ask for "
        "a GPU cannot run there",
        "check the GPU Operator's pods on the node (kubectl -n gpu-operator get pods -o wide), or KAITO's device "
        "plugin (gpu_discovery kaito); with gpuDriver operator the driver pod must finish first",
        where=f"node {name}",
    )


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    """Kubernetes' rule: a toleration matches a taint by effect (or any), and by key with
    Exists (an empty key with Exists matches every taint) or with an equal value."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        operator = t.get("operator") or "Equal"
        if operator == "Exists" and (not t.get("key") or t.get("key") == taint.get("key")):
            return True
        if (
            operator == "Equal"
            and t.get("key") == taint.get("key")
            and (t.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False


def _taint_text(taint: dict[str, Any]) -> str:
    value = f"={taint.get('value')}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def gfd_blocker(daemonset: dict[str, Any], node: dict[str, Any]) -> str:
    """Why a DaemonSet's pods cannot run on the node ('' when they can): its nodeSelector, or a
    taint of the node it does not tolerate."""
    spec = field_at(daemonset, "spec", "template", "spec")
    wanted = field_at(spec, "nodeSelector")
    labels = labels_of(node)
    if is_dict(wanted):
        missing = {str(k): str(v) for k, v in wanted.items() if labels.get(str(k)) != str(v)}
        if missing:
            return f"its nodeSelector {selector_text(missing)} does not match the node"
    found = field_at(spec, "tolerations")
    tolerations = [t for t in found if is_dict(t)] if is_list(found) else []
    taints = field_at(node, "spec", "taints")
    for taint in (t for t in (taints if is_list(taints) else []) if is_dict(t)):
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
            return f"it does not tolerate the node's taint {_taint_text(taint)}"
    return ""


@detector("gfd-labels-missing", "nodes")
def gfd_labels_missing(node: dict[str, Any], daemonsets: list[dict[str, Any]] | None) -> Finding | None:
    """A node without GPU Feature Discovery's nvidia.com/gpu.product, .count and .memory labels
    (k8s-device-plugin internal/lm/resource.go:54-63,167-168@v0.17.4), which KAITO's webhook reads
    and denies a preset Workspace without: "Failed to get GPU config from nvidia labels on node
    <node>: missing required nvidia.com labels" (api/v1beta1/workspace_validation.go:576@v0.12.0,
    :394@v0.8.1; pkg/sku/helpers.go:80@v0.12.0). Why: no GFD DaemonSet in the cluster, or one
    that may not run on the node: the GPU Operator's `gpu-feature-discovery` selects
    nvidia.com/gpu.deploy.gpu-feature-discovery=true and tolerates nvidia.com/gpu only
    (gpu-operator assets/gpu-feature-discovery/0500_daemonset.yaml:4,20-24@v25.3.4); KAITO's
    bundled `<release>-gpu-feature-discovery` (k8s-device-plugin
    deployments/helm/nvidia-device-plugin/templates/daemonset-gfd.yml:20@v0.17.4) tolerates no AKS
    GPU taint by default. `daemonsets`: the GPU Feature Discovery DaemonSets (None: not readable)."""
    labels = labels_of(node)
    missing = [label for label in GFD_LABELS if label not in labels]
    if not missing:
        return None
    name = text_at(node, "metadata", "name") or ""
    said = f"node {name} does not carry {', '.join(missing)}"
    if daemonsets is not None and not daemonsets:
        return Finding(
            "gfd-labels-missing",
            said + "; no GPU Feature Discovery DaemonSet runs in the cluster",
            "nothing labels the node's GPUs, so KAITO's webhook denies the model (Failed to get GPU config from nvidia "
            "labels)",
            "install GPU Feature Discovery: the GPU Operator (gpuOperator) or KAITO's bundled one (gpu_discovery kaito)",
            where=f"node {name}",
        )
    blocked = [(ds, gfd_blocker(ds, node)) for ds in daemonsets or []]
    if blocked and all(why for _, why in blocked):
        ds, why = blocked[0]
        where = f"{text_at(ds, 'metadata', 'namespace')}/{text_at(ds, 'metadata', 'name')}"
        return Finding(
            "gfd-labels-missing",
            f"{said}; GPU Feature Discovery's DaemonSet {where} cannot run there: {why}",
            "GPU Feature Discovery never runs on the node, so its GPUs are never labelled and KAITO's webhook denies "
            "the model",
            "let GFD run on the GPU pool: add the pool's taints to its tolerations (the stack adds them for the pools "
            "it knows: gpuOperator / kaito gpu discovery), or with the GPU Operator check that NFD labelled the node "
            "(nvidia.com/gpu.deploy.gpu-feature-discovery)",
            where=f"node {name}",
        )
    return Finding(
        "gfd-labels-missing",
        said,
        "GPU Feature Discovery has not labelled the node yet: with the GPU Operator it starts only after the driver "
        "is installed; KAITO's webhook denies the model until it does",
        "check the GFD and driver pods on the node (kubectl get pods -A -o wide --field-selector "
        f"spec.nodeName={name})",
        broken=False,
        where=f"node {name}",
    )


# ---------------------------------------------------------------- KAITO


@detector("kaito-admission-denied", "kaito")
def kaito_admission_denied(kind: str, name: str, denial: str, hint: str) -> Finding:
    """The KAITO object does not exist and KAITO's webhook would deny creating it: the same check
    the webhook makes on nodes of your own (gpu_nodes.survey: matching nodes, their GFD labels,
    uniform GPUs, KAITO's GPU memory arithmetic; api/v1beta1/workspace_validation.go:548-640@v0.12.0,
    :370-430@v0.8.1)."""
    return Finding(
        "kaito-admission-denied",
        denial,
        f"KAITO's admission webhook denies creating {kind} {name}, so `pulumi up` failed there and nothing serves",
        hint,
    )


@detector("kaito-webhook-unavailable", "kaito")
def kaito_webhook_unavailable(kind: str, name: str, said: str, hint: str) -> Finding:
    """The KAITO object does not exist and KAITO's fail-closed webhook cannot be called (its
    Service has no ready endpoint, or no caBundle yet): creating the object fails with "failed
    calling webhook" (failurePolicy Fail: charts/kaito/workspace/templates/webhooks.yaml:15@v0.12.0;
    what is judged: waits/kaito_ready.py judge_gate)."""
    return Finding(
        "kaito-webhook-unavailable",
        said,
        f"KAITO's admission webhook does not answer, so creating {kind} {name} fails",
        hint,
    )


@detector("kaito-object-missing", "kaito")
def kaito_object_missing(kind: str, namespace: str, name: str) -> Finding:
    """The KAITO object the stack made is not there (GET answers 404): the last `pulumi up` failed
    before creating it (KAITO's webhook may have denied it: api/v1beta1/workspace_validation.go:548-640@v0.12.0),
    or it was deleted."""
    return Finding(
        "kaito-object-missing",
        f"{kind} {namespace}/{name} does not exist",
        "the last `pulumi up` did not create it (it failed first: KAITO's webhook may have denied it), or it was deleted",
        "run `pulumi up` and read its error",
    )


@detector("kaito-silent", "kaito")
def kaito_silent(obj: dict[str, Any], kind: str, age_seconds: float | None) -> Finding | None:
    """KAITO has written no condition on the object: its controller sets them on the first
    reconcile (setWorkspaceCondition, pkg/workspace/controllers/workspace_controller.go:1262-1300@v0.12.0),
    so after minutes of silence it is not running (or not watching the namespace)."""
    if conditions_of(obj):
        return None
    late = age_seconds is not None and age_seconds >= KAITO_SILENT_SECONDS
    where = "kubectl -n kaito-workspace get pods (the AKS add-on: kubectl -n kube-system get deploy | grep kaito)"
    if not late:
        return Finding(
            "kaito-silent",
            f"KAITO has not reported on the {kind} yet",
            "KAITO's controller has not reconciled it yet",
            f"wait; if it stays silent, is KAITO's controller running? {where}",
            broken=False,
        )
    return Finding(
        "kaito-silent",
        f"KAITO has not reported on the {kind} in {int((age_seconds or 0) // 60)} minutes",
        "KAITO's controller does not reconcile it: it is not running, crashing, or not watching the namespace",
        f"{where} and the controller's log",
    )


# KAITO 0.12's InferenceReady reasons for a workload that is not ready because of its pods
# (pkg/workspace/controllers/workspace_controller.go:895-905@v0.12.0): the pods link says more.
POD_REASONS = frozenset(
    {
        "ImagePullError",
        "ContainerCrashLoopBackOff",
        "ContainerOOMKilled",
        "ContainerStartError",
        "PodEvicted",
        "NodeDiskPressure",
        "NodeMemoryPressure",
        "Unschedulable",
        "SASTokenFetchFailed",
    }
)


@detector("kaito-inference-failed", "kaito")
def kaito_inference_failed(condition: dict[str, Any]) -> Finding | None:
    """KAITO reports the model failed: InferenceReady (JobStarted for tuning) False with a failure
    reason: 0.8's WorkspaceInferenceStatusFailed and the error
    (pkg/workspace/controllers/workspace_controller.go:590@v0.8.1), 0.12's reasons from its pods
    (ImagePullError, ContainerCrashLoopBackOff, ContainerOOMKilled, Unschedulable...:
    workspace_controller.go:895-905,1291-1296@v0.12.0)."""
    if condition.get("status") != "False":
        return None
    reason, message = str(condition.get("reason") or ""), str(condition.get("message") or "")
    if "fail" not in reason.lower() and reason not in POD_REASONS:
        return None
    return Finding(
        "kaito-inference-failed",
        f"{condition.get('type')}=False ({reason}: {message})",
        "KAITO reports that the model's workload failed",
        "read its pods' state and log (kubectl describe pod / kubectl logs --previous -l kaito.sh/workspace=<name>)",
    )
