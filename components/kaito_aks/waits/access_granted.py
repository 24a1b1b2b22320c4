"""Wait until the cluster admins' Azure role assignments take effect. With Entra ID, Azure RBAC
and no local accounts, the program's Kubernetes provider and waits reach the cluster only through
the "Azure Kubernetes Service RBAC Cluster Admin" grant an AksCluster makes; a new assignment
"can take up to five minutes to propagate" (AKS docs, entra-id-authorization). Until then the API
server answers 403, and a Helm release or a wait would fail. This step reads what only a cluster
admin may read until it is allowed; the provider and every wait depend on it (never on its
outputs: a kubeconfig unknown at preview would make the Kubernetes provider replace everything)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.waits.base import Check, ClusterWaitProvider, poll, wait_options
from kaito_aks.waits.kube_client import KubeApiError, KubeClient, Reader

# Cluster-scoped RBAC objects: of the built-in AKS roles only RBAC Cluster Admin may list them.
PROBE = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
DEFAULT_TIMEOUT_MINUTES = 10
FORBIDDEN = "this wait lists clusterroles, which the grant it waits for allows"


def admin_access(client: Reader, principals: list[str]) -> Check:
    """Done when the credentials may list cluster roles; 401 and 403 are a grant still on its way."""
    try:
        client.get(PROBE, limit="1")
    except KubeApiError as err:
        if err.status not in (401, 403):
            raise
        return Check(
            False,
            f"the API server still refuses the stack's credentials (HTTP {err.status}) while the cluster admin role "
            f"of {', '.join(principals) or 'the deployer'} takes effect",
            "Azure role assignments take up to 5 minutes to reach AKS; if it lasts, check `az role assignment list "
            "--scope <cluster id>` and that the identity running `pulumi up` is the one granted (kubelogin signs in "
            "as the Azure CLI's account unless AAD_LOGIN_METHOD says otherwise)",
        )
    return Check(True)


def wait_for_access(
    client: Reader,
    principals: list[str],
    timeout_seconds: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    poll(lambda: admin_access(client, principals), timeout_seconds, forbidden=FORBIDDEN, sleep=sleep, clock=clock)


class AccessGrantedProvider(ClusterWaitProvider):
    compared = ("principals",)  # a new admin (another deployer) is waited for anew

    def id_of(self, props: dict[str, Any]) -> str:
        return "access-granted-" + hashlib.sha256(json.dumps(props["principals"]).encode()).hexdigest()[:12]

    def wait(self, client: KubeClient, props: dict[str, Any]) -> dict[str, Any]:
        wait_for_access(client, list(props["principals"]), float(props["timeoutSeconds"]))
        return {}


_PROVIDER = AccessGrantedProvider()


class AccessGranted(dynamic.Resource, module="kaito-aks", name="AccessGranted"):
    """Holds the update until `access` may act as cluster admin (up to `timeout_minutes`, then
    fails saying whose grant never took effect). Depend it on the role assignments; depend the
    Kubernetes provider and the waits on it."""

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        principals: pulumi.Input[list[str]],
        timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`principals`: the object ids granted (what the wait runs again for when it changes)."""
        props: dict[str, Any] = {
            "principals": principals,
            "timeoutSeconds": timeout_minutes * 60,
            **access.props(),
        }
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))
