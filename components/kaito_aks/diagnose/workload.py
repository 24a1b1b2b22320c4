"""A model's pods and its weights: a pod the scheduler cannot place (no room for its CPU or
memory, a taint, a selector), an image that cannot be pulled, a container that cannot be created
or keeps exiting (with the last lines it printed), a pod evicted; KAITO 0.12's ModelMirror
download. The pod checks follow KAITO 0.12's own order (classifyInferencePodFailure,
pkg/workspace/controllers/workspace_controller.go:934-1115@v0.12.0), so the two agree."""

from __future__ import annotations

import re
from typing import Any

from kaito_aks.diagnose.chain import Finding, redacted
from kaito_aks.diagnose.registry import detector
from kaito_aks.kaito.modelmirror import FAILED_REASONS, MirrorStatus
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.waits.answers import conditions_of, field_at, text_at

# kubelet's image pull and container start errors, as KAITO 0.12 reads them
# (workspace_controller.go:1097-1115@v0.12.0, from k8s pkg/kubelet/images/types.go and kuberuntime).
IMAGE_PULL = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "ErrImageNeverPull",
        "ImageInspectError",
        "RegistryUnavailable",
    }
)
CONTAINER_START = frozenset(
    {
        "CreateContainerConfigError",
        "PreCreateHookError",
        "CreateContainerError",
        "PreStartHookError",
        "RunContainerError",
        "PostStartHookError",
    }
)
RESOURCES = re.compile(r"Insufficient (cpu|memory|nvidia\.com/gpu|ephemeral-storage|pods)")
LOG_LINES = 3  # of a crashed container's log, read for its cause
_ERROR_LINE = re.compile(r"Error|Exception|Traceback|FATAL|fatal|error:")  # the line that tells, of those


def _pod_name(pod: dict[str, Any]) -> str:
    return text_at(pod, "metadata", "name") or ""


def statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Its init containers' and containers' statuses."""
    out: list[dict[str, Any]] = []
    for key in ("initContainerStatuses", "containerStatuses"):
        found = field_at(pod, "status", key)
        out += [s for s in found if is_dict(s)] if is_list(found) else []
    return out


def _unscheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next(
        (
            c
            for c in conditions_of(pod)
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        ),
        None,
    )


@detector("pod-pending-resources", "pods")
def pod_pending_resources(pod: dict[str, Any], what: str = "the model") -> Finding | None:
    """A pod the scheduler cannot place because no node it may use has room for what it requests:
    PodScheduled False, reason Unschedulable (k8s.io/api core/v1/types.go:3355,3379@v0.33.3), the
    scheduler's "0/N nodes are available: ... Insufficient cpu" (its NodeResourcesFit reasons:
    k8s pkg/scheduler/framework/plugins/noderesources/fit.go:702-723@v1.36.3; KAITO 0.12 surfaces it as
    InferenceReady Unschedulable: workspace_controller.go:1078-1093@v0.12.0). The endpoint picker
    asks 1 CPU and 2 GiB with no tolerations (pkg/workspace/manifests/manifests.go:436-447@v0.12.0),
    so with tainted GPU pools it needs room on the system or a CPU pool."""
    c = _unscheduled(pod)
    message = str((c or {}).get("message") or "")
    short = RESOURCES.findall(message)
    if c is None or not short:
        return None
    kinds = ", ".join(dict.fromkeys(short))
    gpu = "nvidia.com/gpu" in short
    return Finding(
        "pod-pending-resources",
        f"Unschedulable: {message}",
        f"no node {what}'s pod may run on has the {kinds} it requests free"
        + (
            "" if gpu else " (a pod without GPU tolerations goes to the system or CPU pools, not the tainted GPU nodes)"
        ),
        "give it room: more GPU nodes or a larger GPU size"
        if gpu
        else "add a CPU pool (cpuNodePools) or scale the system pool (systemPool.count / a larger vmSize), or free "
        "what other pods hold there",
        where=f"pod {_pod_name(pod)}",
    )


@detector("pod-pending-placement", "pods")
def pod_pending_placement(pod: dict[str, Any]) -> Finding | None:
    """A pod no node accepts for another reason than room: untolerated taints, a node selector or
    affinity no node matches, volumes it cannot bind (PodScheduled False Unschedulable,
    k8s.io/api core/v1/types.go:3379@v0.33.3; workspace_controller.go:1078-1093@v0.12.0)."""
    c = _unscheduled(pod)
    if c is None:
        return None
    message = str(c.get("message") or "")
    taint = "untolerated taint" in message
    return Finding(
        "pod-pending-placement",
        f"Unschedulable: {message}",
        "no node matches the pod's selector and tolerations"
        if not taint
        else "the nodes that would take the pod carry taints it does not tolerate",
        "check the model's labelSelector against the GPU pool's labels, and the pool's taints (KAITO's pods tolerate "
        "sku=gpu and nvidia.com/gpu only)",
        where=f"pod {_pod_name(pod)}",
    )


@detector("image-pull-failed", "pods")
def image_pull_failed(pod: dict[str, Any]) -> Finding | None:
    """A container whose image cannot be pulled: state.waiting.reason ErrImagePull,
    ImagePullBackOff, InvalidImageName... (k8s pkg/kubelet/images/types.go:29-35@v1.36.3) and the
    kubelet's message (KAITO 0.12's ImagePullError:
    pkg/workspace/controllers/workspace_controller.go:1005-1012@v0.12.0, the reasons it reads:
    workspace_controller.go:1097-1104@v0.12.0)."""
    for s in statuses(pod):
        reason = text_at(s, "state", "waiting", "reason") or ""
        if reason in IMAGE_PULL:
            message = text_at(s, "state", "waiting", "message") or ""
            return Finding(
                "image-pull-failed",
                f"container {text_at(s, 'name')}: {reason}" + (f": {message}" if message else ""),
                "the node cannot pull the container's image: a wrong name or tag, a private registry without "
                "credentials, or a registry the nodes cannot reach",
                "check the image reference; for a private registry attach it to the cluster (AKS: `az aks update "
                "--attach-acr`) or give imagePullSecrets; behind a firewall allow the registry (mcr.microsoft.com for "
                "KAITO's images)",
                where=f"pod {_pod_name(pod)}",
            )
    return None


@detector("container-start-failed", "pods")
def container_start_failed(pod: dict[str, Any]) -> Finding | None:
    """A container the kubelet cannot create or start: CreateContainerConfigError (a Secret or
    ConfigMap it names is missing, e.g. the Hugging Face token's), CreateContainerError,
    RunContainerError (KAITO 0.12's ContainerStartError:
    pkg/workspace/controllers/workspace_controller.go:1014-1021@v0.12.0, the reasons it reads:
    workspace_controller.go:1108-1115@v0.12.0)."""
    for s in statuses(pod):
        reason = text_at(s, "state", "waiting", "reason") or ""
        if reason in CONTAINER_START:
            message = text_at(s, "state", "waiting", "message") or ""
            secret = "secret" in message.lower()
            return Finding(
                "container-start-failed",
                f"container {text_at(s, 'name')}: {reason}" + (f": {message}" if message else ""),
                "the kubelet cannot create the container" + (": a Secret it reads does not exist" if secret else ""),
                "create the Secret it names (a gated model's token: hfToken, kept as a Pulumi secret) and run "
                "`pulumi up`"
                if secret
                else "read the message; kubectl describe pod",
                where=f"pod {_pod_name(pod)}",
            )
    return None


# What a crashed vLLM says last, and what it means (vLLM's engine start-up checks; PyTorch's OOM).
CRASH_CAUSES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"max_model_len|max seq len|max-model-len", re.IGNORECASE),
        "the model's context length (max-model-len) does not fit in the GPU memory left for the KV cache",
        "lower the model's max-model-len (its runtime config), or use a size with more GPU memory",
    ),
    (
        re.compile(r"CUDA out of memory|OutOfMemoryError|No available memory for the cache blocks", re.IGNORECASE),
        "the model does not fit in the GPU memory",
        "use a size with more GPU memory (or more GPUs), or a smaller or quantized model",
    ),
    (
        re.compile(r"GatedRepoError|401 Client Error|Access to model .* is restricted|Invalid token", re.IGNORECASE),
        "Hugging Face refuses to give the weights: a gated model without a valid token, or a token without access",
        "accept the model's licence on Hugging Face with the token's account, and give the token (hfToken)",
    ),
    (
        re.compile(r"unrecognized arguments|invalid .* value|error: argument", re.IGNORECASE),
        "the inference server refuses its command line (a runtime parameter it does not know, or a bad value)",
        "check the model's runtime parameters (config) against the vLLM version KAITO runs",
    ),
)


def last_lines(log: str, count: int = LOG_LINES) -> list[str]:
    """The last non-empty lines of a log, credentials redacted."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return [redacted(line) for line in lines[-count:]]


def crashed(pod: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The first container that keeps exiting or was OOM-killed: its status and its last
    termination (state.waiting CrashLoopBackOff with lastState.terminated, or terminated with a
    non-zero exit code)."""
    for s in statuses(pod):
        last = field_at(s, "lastState", "terminated")
        now = field_at(s, "state", "terminated")
        looping = text_at(s, "state", "waiting", "reason") == "CrashLoopBackOff"
        for t in (now, last):
            if is_dict(t) and (t.get("reason") == "OOMKilled" or (looping and t is last)):
                return s, t
        if is_dict(now) and now.get("exitCode") not in (0, None):
            return s, now
    return None


@detector("container-crash", "pods")
def container_crash(pod: dict[str, Any], log: str | None) -> Finding | None:
    """A container that keeps exiting: state.waiting CrashLoopBackOff, lastState.terminated with
    its reason, exit code and message (the kubelet's termination message: /dev/termination-log,
    or the log's tail with terminationMessagePolicy FallbackToLogsOnError; k8s.io/api
    core/v1/types.go:3113,3164,2909@v0.33.3), and the last lines of its previous run's log
    (GET pods/<pod>/log?previous=true, which the API server proxies to the node's kubelet:
    k8s pkg/registry/core/pod/strategy.go:625-670@v1.36.3); OOMKilled first, as KAITO 0.12 orders them
    (ContainerOOMKilled, ContainerCrashLoopBackOff: workspace_controller.go:986-1036@v0.12.0).
    `log`: the previous run's log (None: not read)."""
    hit = crashed(pod)
    if hit is None:
        return None
    s, t = hit
    name = text_at(s, "name") or ""
    reason, code = t.get("reason") or "", t.get("exitCode")
    lines = last_lines(log) if log else []
    if not lines and isinstance(t.get("message"), str):
        lines = last_lines(t["message"])
    telling = next((line for line in reversed(lines) if _ERROR_LINE.search(line)), lines[-1] if lines else "")
    said = f"container {name} exited ({reason}, exit code {code})" + (f": {telling}" if telling else "")
    if reason == "OOMKilled":
        return Finding(
            "container-crash",
            said,
            "the container used more memory than its limit (or the node had) and was killed",
            "use a size with more memory, or lower what the model loads at once",
            where=f"pod {_pod_name(pod)}",
        )
    text = "\n".join(lines)
    for pattern, means, fix in CRASH_CAUSES:
        if pattern.search(text):
            return Finding("container-crash", said, means, fix, where=f"pod {_pod_name(pod)}")
    return Finding(
        "container-crash",
        said,
        "the inference server exits at start",
        f"read its log: kubectl logs -n {text_at(pod, 'metadata', 'namespace') or '<namespace>'} {_pod_name(pod)} "
        f"-c {name} --previous",
        where=f"pod {_pod_name(pod)}",
    )


@detector("pod-evicted", "pods")
def pod_evicted(pod: dict[str, Any]) -> Finding | None:
    """A pod the kubelet evicted under node pressure: phase Failed, reason Evicted, the kubelet's
    message (KAITO 0.12's PodEvicted / NodeDiskPressure / NodeMemoryPressure:
    workspace_controller.go:1056-1074@v0.12.0)."""
    if text_at(pod, "status", "phase") != "Failed" or text_at(pod, "status", "reason") != "Evicted":
        return None
    message = text_at(pod, "status", "message") or ""
    disk = "ephemeral-storage" in message or "disk" in message.lower()
    return Finding(
        "pod-evicted",
        f"Evicted: {message}",
        "the node ran out of " + ("disk" if disk else "memory") + " and evicted the pod",
        "use a larger OS disk (osDiskSizeGB) for model weights" if disk else "use a size with more memory",
        where=f"pod {_pod_name(pod)}",
    )


POD_DETECTORS = (image_pull_failed, container_start_failed, pod_evicted, pod_pending_resources, pod_pending_placement)


# ---------------------------------------------------------------- weights (KAITO 0.12 ModelMirror)


@detector("weights-download", "weights")
def weights_download(mirror: MirrorStatus, condition: dict[str, Any]) -> Finding | None:
    """KAITO 0.12 downloads a model's weights once into a ModelMirror (cluster-scoped,
    kaito.sh/v1alpha1) before it starts (ModelMirror/ModelStreaming gates): the Workspace's
    ModelMirrorReady False carries its failureMessage or "Model download in progress"
    (pkg/workspace/controllers/workspace_controller.go:775-812@v0.12.0); the ModelMirror (read by
    kaito_aks.kaito.modelmirror: its failureMessage, its Ready condition's reason, its
    status.download) says whether it failed and how far it is."""
    if condition.get("status") == "True":
        return None
    reason = mirror.reason or str(condition.get("reason") or "")
    message = mirror.failure or str(condition.get("message") or "")
    where = f"ModelMirror {mirror.name}" if mirror.found else ""
    if mirror.failure or reason in FAILED_REASONS:
        return Finding(
            "weights-download",
            f"{reason}: {message}" if reason else message,
            "KAITO cannot download the model's weights into its ModelMirror, so the model never starts",
            "read the download Job's log (kubectl logs -l kaito.sh/model-mirror-name="
            + (mirror.name if mirror.found else "<mirror>")
            + "); a gated model needs its token; DownloadOOMKilled: raise modelMirrorDownloadMemory; PVCPending: "
            "check the blob StorageClass (defaultModelMirrorStorageClass) and the Blob CSI driver",
            where=where,
        )
    return Finding(
        "weights-download",
        ", ".join(s for s in (message or "the weights are downloading", mirror.progress()) if s),
        "KAITO is still downloading the model's weights",
        "wait; a PVCPending reason means the blob volume is not bound yet",
        broken=False,
        where=where,
    )
