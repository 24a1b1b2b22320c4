"""The names a model's Kubernetes objects take (KAITO derives some of its own from them)."""

from __future__ import annotations

from kaito_aks import catalog
from kaito_aks.model.spec import KaitoModelArgs

# A StatefulSet's pods carry controller-revision-hash=<name>-<hash>: a label value, so the
# name KAITO gives the StatefulSet (the Workspace's) must leave room for the hash.
MAX_WORKSPACE_NAME = 52
INFERENCE_SET_SUFFIX = "-xxxxx"  # generateName: <set>- plus 5 random characters
# Namespaces the cluster or the operator releases own.
RESERVED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "kaito-workspace", "gpu-operator")


def workspace_names(args: KaitoModelArgs, chart: catalog.KaitoChart) -> list[str]:
    """Names of the Workspaces that serve (or tune) the model (for an InferenceSet: the longest
    name it can generate). Replicas are <name>-0, <name>-1, ...; the plain <name> belongs to the
    Service that balances over all of them, so the endpoint never moves when replicas change."""
    name = args.name or ""
    if args.tuning is not None:
        return [name]
    if chart.replicas == "inferenceSet":
        return [name + INFERENCE_SET_SUFFIX]
    return [f"{name}-{i}" for i in range(args.replicas)]


def claimed_names(args: KaitoModelArgs, chart: catalog.KaitoChart) -> set[str]:
    """Every object name in the namespace this model takes: its Service (or InferenceSet), its
    replica Workspaces, and the Services KAITO makes per replica (<ws> and <ws>-headless)."""
    name = args.name or ""
    claimed = {name}
    if args.tuning is None and chart.replicas == "workspacePerReplica":
        names = workspace_names(args, chart)
        claimed |= set(names) | {f"{w}-headless" for w in names}
    return claimed


def hf_token_secret_name(name: str) -> str:
    return f"{name}-hf-token"


def endpoint_of(args: KaitoModelArgs) -> str:
    """The in-cluster OpenAI-compatible chat completions URL of the model's Service."""
    return f"http://{args.name}.{args.namespace}.svc.cluster.local/v1/chat/completions"
