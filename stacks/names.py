"""Names and labels of the Kubernetes objects a workspace entry turns into (one place, so
validation and the components agree)."""

from __future__ import annotations

from stacks.catalog import KaitoChart

# The one Workspace label KAITO copies onto its pods (and StatefulSet selector). The
# InferenceSet controller sets it to the set's name; in 0.8 we set it on each replica Workspace
# ourselves, so one Service can select the serving pods of every replica.
GROUP_LABEL = "inferenceset.kaito.sh/created-by"
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


def inference_config_map(name: str) -> str:
    return f"{name}-inference-config"


def tuning_config_map(name: str) -> str:
    return f"{name}-tuning-config"
