"""On `pulumi destroy`, hold back the removal of gpu-provisioner until KAITO's NodeClaims are
gone. KAITO's Workspace finalizer only asks for its NodeClaims to be deleted and lets the
Workspace go at once (workspace_gc_finalizer.go); gpu-provisioner then deletes each NodeClaim's
AKS agent pool, which takes minutes. Removed before that, it would leave the agent pools (GPU
nodes, billing) and NodeClaims stuck on their finalizer. Creating or updating it waits for
nothing."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.waits.answers import items_of, text_at
from kaito_aks.waits.base import Check, cluster_client, poll, wait_options
from kaito_aks.waits.kube_client import KubeApiError, Reader

NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
# KAITO labels every NodeClaim it makes with its fake node pool (pkg/utils/nodeclaim/nodeclaim.go).
KAITO_NODECLAIMS = "karpenter.sh/nodepool=kaito"
DEFAULT_TIMEOUT_MINUTES = 30
FORBIDDEN = "this wait lists karpenter.sh NodeClaims before gpu-provisioner is removed: grant `list` on them"


def nodeclaims_left(client: Reader) -> Check:
    """Done when no NodeClaim KAITO made remains (or the cluster has no NodeClaim CRD)."""
    try:
        answer = client.get(NODECLAIMS, labelSelector=KAITO_NODECLAIMS)
    except KubeApiError as err:
        if err.status == 404:
            return Check(True)
        raise
    names = sorted(str(text_at(i, "metadata", "name")) for i in items_of(answer, "NodeClaims", named=True))
    if not names:
        return Check(True)
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return Check(
        False,
        f"KAITO's NodeClaims {shown} still exist, so gpu-provisioner is not removed yet (their AKS agent pools "
        "would stay)",
        "kubectl get nodeclaims -l karpenter.sh/nodepool=kaito; a NodeClaim of a Workspace outside this stack "
        "keeps it too: delete that Workspace first",
    )


class NodeClaimsGoneProvider(dynamic.ResourceProvider):
    """Create and update record the credentials (the delete needs them: it gets only the state);
    delete waits. Rotated credentials update the record without waiting."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        keys = ("kubeconfig", "kubeconfigPath", "context", "timeoutSeconds")
        changed = any(olds.get(k) != news.get(k) for k in keys)
        return dynamic.DiffResult(changes=changed, replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        digest = hashlib.sha256(f"{props.get('context')}|{props.get('kubeconfigPath')}".encode()).hexdigest()[:12]
        return dynamic.CreateResult(f"nodeclaims-gone-{digest}", dict(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        return dynamic.UpdateResult(dict(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        limit = float(props.get("timeoutSeconds") or DEFAULT_TIMEOUT_MINUTES * 60)
        client = cluster_client(props, limit, " to see KAITO's NodeClaims go")
        wait_until_gone(client, limit)


def wait_until_gone(
    client: Reader,
    timeout_seconds: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    poll(lambda: nodeclaims_left(client), timeout_seconds, forbidden=FORBIDDEN, sleep=sleep, clock=clock)


_PROVIDER = NodeClaimsGoneProvider()


class NodeClaimsGone(dynamic.Resource, module="kaito-aks", name="NodeClaimsGone"):
    """Deleted only once KAITO's NodeClaims are gone (up to `timeout_minutes`, then the destroy
    fails naming them, and runs again later). Depend it on gpu-provisioner's release, and the
    Workspaces on it."""

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props: dict[str, Any] = {**access.props(), "timeoutSeconds": timeout_minutes * 60}
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))
