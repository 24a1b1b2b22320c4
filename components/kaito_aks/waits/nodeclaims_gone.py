"""On `pulumi destroy`, hold back the removal of KAITO's node provisioner until the NodeClaims of
KAITO's nodes are gone. KAITO's Workspace finalizer only asks for them to go (gpu-provisioner:
it deletes its NodeClaims, workspace_gc_finalizer.go; Karpenter, 0.11+: it deletes the
Workspace's NodePool, and Karpenter its NodeClaims) and lets the Workspace go at once; the
provisioner then deletes each NodeClaim's AKS agent pool or VM, which takes minutes. Removed
before that, it would leave the GPU nodes running (billing) and the NodeClaims stuck on their
finalizer. Creating or updating it waits for nothing."""

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
# gpu-provisioner mode: KAITO labels every NodeClaim it makes with its fake node pool
# (pkg/utils/nodeclaim/nodeclaim.go).
KAITO_NODECLAIMS = "karpenter.sh/nodepool=kaito"
# Karpenter mode: Karpenter copies the labels of the NodePool's template onto the NodeClaims it
# makes, and KAITO's NodePools label theirs with the Workspace (0.11 and 0.12
# pkg/nodeprovision/karpenter/nodepool.go, consts.KarpenterWorkspaceNameKey).
KARPENTER_NODECLAIMS = "karpenter.kaito.sh/workspace-name"
GPU_PROVISIONER = "gpu-provisioner"
DEFAULT_TIMEOUT_MINUTES = 30
FORBIDDEN = "this wait lists karpenter.sh NodeClaims before gpu-provisioner is removed: grant `list` on them"


def nodeclaims_left(client: Reader, selector: str = KAITO_NODECLAIMS, provisioner: str = GPU_PROVISIONER) -> Check:
    """Done when no NodeClaim of KAITO's nodes remains (or the cluster has no NodeClaim CRD)."""
    try:
        answer = client.get(NODECLAIMS, labelSelector=selector)
    except KubeApiError as err:
        if err.status == 404:
            return Check(True)
        raise
    names = sorted(str(text_at(i, "metadata", "name")) for i in items_of(answer, "NodeClaims", named=True))
    if not names:
        return Check(True)
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    nodes = "AKS agent pools" if provisioner == GPU_PROVISIONER else "VMs"
    return Check(
        False,
        f"KAITO's NodeClaims {shown} still exist, so {provisioner} is not removed yet (their {nodes} would stay)",
        f"kubectl get nodeclaims -l {selector}; a NodeClaim of a Workspace outside this stack keeps it too: delete "
        "that Workspace first",
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
        selector = props.get("labelSelector") or KAITO_NODECLAIMS
        wait_until_gone(client, limit, selector=selector, provisioner=props.get("provisioner") or GPU_PROVISIONER)


def wait_until_gone(
    client: Reader,
    timeout_seconds: float,
    *,
    selector: str = KAITO_NODECLAIMS,
    provisioner: str = GPU_PROVISIONER,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    def look() -> Check:
        return nodeclaims_left(client, selector, provisioner)

    poll(look, timeout_seconds, forbidden=FORBIDDEN.replace(GPU_PROVISIONER, provisioner), sleep=sleep, clock=clock)


_PROVIDER = NodeClaimsGoneProvider()


class NodeClaimsGone(dynamic.Resource, module="kaito-aks", name="NodeClaimsGone"):
    """Deleted only once KAITO's NodeClaims are gone (up to `timeout_minutes`, then the destroy
    fails naming them, and runs again later). Depend it on the provisioner's release, and the
    Workspaces on it. `karpenter`: the NodeClaims Karpenter makes for KAITO's NodePools."""

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES,
        opts: pulumi.ResourceOptions | None = None,
        *,
        karpenter: bool = False,
    ):
        props: dict[str, Any] = {**access.props(), "timeoutSeconds": timeout_minutes * 60}
        if karpenter:  # (gpu-provisioner's state keeps its keys as they were)
            props |= {"labelSelector": KARPENTER_NODECLAIMS, "provisioner": "Karpenter"}
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))
