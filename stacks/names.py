"""Names and labels of the Kubernetes objects a workspace entry turns into (one place, so
validation and the components agree)."""

from __future__ import annotations

import hashlib

from kaito_aks.catalog import KaitoChart
from kaito_aks.kaito_api import LabelSelector

# The label NVIDIA's GPU Operator puts on GPU nodes; kaito-aks also sets it on the AKS GPU pools
# it creates, so it is there from a node's first minute. (Standalone GPU Feature Discovery
# publishes nvidia.com/gpu.product/count/memory, which KAITO reads, but not this one.)
GPU_PRESENT_LABEL = {"nvidia.com/gpu.present": "true"}
LINUX_LABEL = {"kubernetes.io/os": "linux"}

# The one Workspace label KAITO copies onto its pods (and StatefulSet selector). The
# InferenceSet controller sets it to the set's name; in 0.8 we set it on each replica Workspace
# ourselves, so one Service can select the serving pods of every replica.
GROUP_LABEL = "inferenceset.kaito.sh/created-by"
# The taint AKS GPU pools conventionally carry (and KAITO's presets and device plugin tolerate);
# assumed for GPU nodes of clusters the program does not create.
AKS_GPU_TAINTS = ("sku=gpu:NoSchedule",)
# Only pod 0 of a (possibly multi-node) instance serves the API.
LEADER_POD_LABEL = "apps.kubernetes.io/pod-index"
INFERENCE_SET_SUFFIX = "-xxxxx"  # generateName: <set>- plus 5 random characters


def replica_names(name: str, replicas: int, chart: KaitoChart) -> list[str]:
    """Names of the Workspaces serving `replicas` instances (for an InferenceSet: the longest
    name it can generate). Replicas are <name>-0, <name>-1, ...; the plain <name> belongs to the
    Service that balances over all of them, so the endpoint never moves when replicas change."""
    if chart.replicas == "inferenceSet":
        return [name + INFERENCE_SET_SUFFIX]
    return [f"{name}-{i}" for i in range(replicas)]


def hf_token_secret(name: str) -> str:
    return f"{name}-hf-token"


def inference_config_map(name: str, content: str) -> str:
    """Named after its content: KAITO does not watch ConfigMaps, but a new name changes the
    Workspace's inference.config, which KAITO rolls out to the serving pods."""
    return f"{name}-inference-config-{content_hash(content)}"


def tuning_config_map(name: str, content: str) -> str:
    return f"{name}-tuning-config-{content_hash(content)}"


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:8]


def default_label_selector(is_gpu: bool) -> LabelSelector:
    """GPU workloads land on nodes labelled GPU-present; CPU workloads on any Linux node."""
    return LabelSelector(match_labels=dict(GPU_PRESENT_LABEL if is_gpu else LINUX_LABEL))
