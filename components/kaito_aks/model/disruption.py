"""Whether a model keeps serving while AKS reimages or upgrades its nodes (issue 37). AKS drains a
node before it reimages it (node image upgrades weekly, Kubernetes patches, in the cluster's
maintenance window) and respects PodDisruptionBudgets while it does. KAITO makes no disruption
budget for a Workspace or an InferenceSet (none in pkg/ at v0.8.1, v0.11.0 or v0.12.0), so a
model of two or more serving instances gets one here: at most one of its pods evicted at a
time, the others serving until it is back. A model of one instance stops while its node is
drained and reimaged, whatever anyone does: more replicas are the way."""

from __future__ import annotations

from typing import Any

from kaito_aks.model.spec import KaitoModelArgs, serving_replicas
from kaito_aks.vocabulary import MANAGED_BY

DISRUPTION_API = "policy/v1"


def disruption_budget(args: KaitoModelArgs, name: str, namespace: str, pods: dict[str, Any]) -> dict[str, Any] | None:
    """The model's PodDisruptionBudget (at most one of its pods evicted at a time), when it runs two
    or more instances at its most; None for one (a budget would only hold a drain up)."""
    if serving_replicas(args) < 2:
        return None
    return {
        "apiVersion": DISRUPTION_API,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "spec": {"maxUnavailable": 1, "selector": pods},
    }


def upgrade_note(args: KaitoModelArgs) -> str:
    """What a node's reimage or upgrade does to the model's serving, and the way to keep it serving."""
    if args.tuning is not None:
        return "a tuning job: a drain restarts it"
    if args.autoscale is not None:
        least = args.autoscale.min_replicas
        if least >= 2:
            return f"keeps serving ({least} to {args.autoscale.max_replicas} replicas; its disruption budget lets one go at a time)"
        return (
            f"keeps serving when it runs 2 or more replicas (its disruption budget lets one go at a time); at its "
            f"minimum of {least} it stops while its node is reimaged (autoscale.minReplicas: 2 keeps one serving)"
        )
    if args.replicas >= 2:
        return f"keeps serving ({args.replicas} replicas; its disruption budget lets one go at a time)"
    return "stops while its node is reimaged or upgraded (1 replica: replicas: 2 keeps one serving)"
