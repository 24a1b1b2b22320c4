"""Before the cluster turns its local accounts off, the deployer must be able to reach it another
way: the "Azure Kubernetes Service RBAC Cluster Admin" grant the AksCluster makes it (a role
assignment, which needs Microsoft.Authorization/roleAssignments/write) or such a grant already
held. The grant needs the cluster to exist, so it comes after the cluster's update; a deployer
who may not write role assignments would turn local accounts off and then be refused the grant,
locked out of an existing cluster. This step asks Azure what the deployer may do (the
Microsoft.Authorization permissions list, with the azure-native provider's own token, read by
kaito_aks.azure.arm's client) before the cluster is created or updated, and refuses with the fix
when neither holds; where Azure does not answer, the grant's own answer says it.

It runs when it is created (the first `up` of a stack, and the first after an upgrade that adds
it: the update that turns local accounts off) and again when the deployer changes; a grant that
exists by then is one the deployer holds."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Sequence
from typing import Any, cast

import pulumi
from pulumi import dynamic

from kaito_aks.azure.arm import ArmError, ArmReader, LiveArm, endpoint_for, managed_cluster_path
from kaito_aks.parsed import is_dict, is_list

PERMISSIONS_API = "2022-04-01"  # Microsoft.Authorization permissions: list for a resource group or resource
ROLE_ASSIGNMENTS_WRITE = "Microsoft.Authorization/roleAssignments/write"
# "Azure Kubernetes Service RBAC Cluster Admin" grants exactly this data action
CLUSTER_ADMIN_DATA = "Microsoft.ContainerService/managedClusters/*"


def _matches(action: str, patterns: Sequence[object]) -> bool:
    """Azure's wildcard match of an action (case-insensitive, `*` anywhere)."""
    return any(isinstance(p, str) and fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


def allows(permissions: object, action: str, data: bool = False) -> bool:
    """Whether a permissions list (`value` of the API's answer) allows `action` (a data action
    with `data`): some entry's actions match it and the same entry's notActions do not."""
    if not is_list(permissions):
        return False
    key, excluded = ("dataActions", "notDataActions") if data else ("actions", "notActions")
    for entry in cast(list[object], permissions):
        if not is_dict(entry):
            continue
        granted: object = entry.get(key)
        denied: object = entry.get(excluded)
        if is_list(granted) and _matches(action, granted) and not (is_list(denied) and _matches(action, denied)):
            return True
    return False


def _arm(token: str) -> ArmReader:
    """ARM with the provider's token (the one ARM client: kaito_aks.azure.arm)."""
    return LiveArm(token, endpoint_for(None))


def verdict(scopes: Sequence[str], token: str, arm: ArmReader | None = None) -> str | None:
    """None when the deployer holds cluster admin on the cluster or may write role assignments
    at the first of `scopes` (the cluster, its resource group, its subscription) that exists;
    else why not, with the fix. (`arm`: how ARM is read; default, ARM itself with `token`.)"""
    arm = arm if arm is not None else _arm(token)
    for scope in scopes:
        try:
            body = arm.get(f"{scope}/providers/Microsoft.Authorization/permissions", PERMISSIONS_API)
        except ArmError as err:
            if err.status == 404:
                continue  # not made yet (a new cluster, a new resource group): the scope above it
            return None  # not known here: the role assignment's own answer says it
        permissions = body.get("value")
        if allows(permissions, CLUSTER_ADMIN_DATA, data=True) or allows(permissions, ROLE_ASSIGNMENTS_WRITE):
            return None
        return (
            f"the identity running `pulumi up` may not write role assignments at {scope} and holds no cluster admin "
            'grant there: the cluster would turn its local accounts off and then be refused the "Azure Kubernetes '
            'Service RBAC Cluster Admin" grant, and nobody running this stack could reach it. Ask for "Role Based '
            'Access Control Administrator" (or User Access Administrator) on the resource group, or have someone who '
            'may grant it with `az role assignment create --role "Azure Kubernetes Service RBAC Cluster Admin" '
            "--assignee <your object id> --scope <cluster id>` first; or set entra.grantDeployer false and name the "
            "cluster's admins (entra.admins, granted by whoever may), or keep localAccounts true for now"
        )
    return None


class DeployerPermissionProvider(dynamic.ResourceProvider):
    """Checks once per deployer (its object id), never keeps the token. (No state of its own: the
    provider is pickled into the stack's state.)"""

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        why = verdict(list(props["scopes"]), str(props["token"]))
        if why is not None:
            raise RuntimeError(why)
        kept = {k: v for k, v in props.items() if k != "token"}
        key = hashlib.sha256(json.dumps([kept["principal"], kept["scopes"]]).encode()).hexdigest()[:12]
        return dynamic.CreateResult(f"deployer-permission-{key}", kept)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        changed = [k for k in ("principal", "scopes") if olds.get(k) != news.get(k)]
        return dynamic.DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=False)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


_PROVIDER = DeployerPermissionProvider()


class DeployerPermission(dynamic.Resource, module="kaito-aks", name="DeployerPermission"):
    """Fails the update, before anything depends on it, when the deployer could not reach the
    cluster once its local accounts are off (`verdict`). Depend the cluster on it."""

    def __init__(
        self,
        name: str,
        scopes: pulumi.Input[list[str]],
        principal: pulumi.Input[str],
        token: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        props: dict[str, Any] = {"scopes": scopes, "principal": principal, "token": pulumi.Output.secret(token)}
        super().__init__(
            _PROVIDER,
            name,
            props,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["token"])),
        )


def cluster_scopes(subscription: str, resource_group: str, cluster: str) -> list[str]:
    """The cluster's scope, then its resource group's and its subscription's (where it does not exist yet)."""
    return [
        managed_cluster_path(subscription, resource_group, cluster),
        f"/subscriptions/{subscription}/resourceGroups/{resource_group}",
        f"/subscriptions/{subscription}",
    ]
