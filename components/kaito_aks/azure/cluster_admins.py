"""Who is cluster admin of an AKS cluster with Entra ID and Azure RBAC: the deployer (whoever runs
`pulumi up`, so the program's Kubernetes provider and waits work) and the admins the args name,
each an "Azure Kubernetes Service RBAC Cluster Admin" role assignment on the cluster."""

from __future__ import annotations

import base64
import json

import pulumi
from pulumi_azure_native import authorization

from kaito_aks import catalog
from kaito_aks.azure.aks_security import EntraArgs
from kaito_aks.azure.deployer_permission import DeployerPermission, cluster_scopes
from kaito_aks.parsed import is_dict

CLUSTER_ADMIN_ROLE = "Azure Kubernetes Service RBAC Cluster Admin"


def principal_type_of_token(token: str | None) -> str:
    """User or ServicePrincipal: what signed in, read from an Entra access token's claims (not
    verified, never logged; the token is not kept). An app-only token (`idtyp: app`, or no `scp`
    claim, which only delegated user tokens carry) is a service principal's or a managed
    identity's."""
    try:
        payload = (token or "").split(".")[1]
        claims: object = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return "User"  # not a JWT (a test stand-in): Azure's own default for the type
    if not is_dict(claims):
        return "User"
    if claims.get("idtyp") == "app" or "scp" not in claims:
        return "ServicePrincipal"
    return "User"


def cluster_admin_role(cluster_id: str) -> str:
    """The full id of "Azure Kubernetes Service RBAC Cluster Admin" in the cluster's subscription."""
    subscription = cluster_id.split("/")[2]
    guid = catalog.azure_roles()[CLUSTER_ADMIN_ROLE]
    return f"/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/{guid}"


def deployer_principal_type(entra: EntraArgs, parent: pulumi.Resource) -> pulumi.Output[str]:
    """The deployer's principal type: given, or read from the azure-native provider's token."""
    if entra.deployer_principal_type is not None:
        return pulumi.Output.from_input(entra.deployer_principal_type)
    token = authorization.get_client_token_output(opts=pulumi.InvokeOptions(parent=parent))
    return pulumi.Output.unsecret(token.token.apply(principal_type_of_token))


def deployer_permission(
    name: str, entra: EntraArgs, local_accounts: bool, resource_group: str, cluster: str, opts: pulumi.ResourceOptions
) -> DeployerPermission | None:
    """The check that the deployer can reach the cluster once local accounts are off (its grant
    writable, or held), when the cluster turns them off and grants the deployer; the cluster
    depends on it, so a deployer who would be locked out is refused before anything changes."""
    if local_accounts or not entra.azure_rbac or not entra.grant_deployer:
        return None
    parent = opts.parent
    assert isinstance(parent, pulumi.Resource)
    deployer = authorization.get_client_config_output(opts=pulumi.InvokeOptions(parent=parent))
    token = authorization.get_client_token_output(opts=pulumi.InvokeOptions(parent=parent))
    scopes = deployer.subscription_id.apply(lambda s: cluster_scopes(s, resource_group, cluster))
    return DeployerPermission(f"{name}-deployer-permission", scopes, deployer.object_id, token.token, opts=opts)


def cluster_admin_assignments(
    name: str,
    entra: EntraArgs,
    cluster_id: pulumi.Output[str],
    opts: pulumi.ResourceOptions,
) -> tuple[list[authorization.RoleAssignment], pulumi.Output[list[str]]]:
    """The role assignments (the deployer's when granted, then each admin's, named by object id
    so a reordered list changes nothing) and the object ids they grant."""
    if not entra.azure_rbac:
        return [], pulumi.Output.from_input([])
    parent = opts.parent
    assert isinstance(parent, pulumi.Resource)
    role = cluster_id.apply(cluster_admin_role)
    made: list[authorization.RoleAssignment] = []
    principals: list[pulumi.Input[str]] = []
    if entra.grant_deployer:
        deployer = authorization.get_client_config_output(opts=pulumi.InvokeOptions(parent=parent))
        made.append(
            authorization.RoleAssignment(
                f"{name}-deployer-cluster-admin",
                principal_id=deployer.object_id,
                principal_type=deployer_principal_type(entra, parent),
                role_definition_id=role,
                scope=cluster_id,
                description="kaito-aks: the identity running pulumi up, for the program's Kubernetes provider and waits",
                opts=opts,
            )
        )
        principals.append(deployer.object_id)
    for admin in entra.admins:
        made.append(
            authorization.RoleAssignment(
                f"{name}-cluster-admin-{admin.object_id.lower()}",
                principal_id=admin.object_id,
                principal_type=admin.principal_type,
                role_definition_id=role,
                scope=cluster_id,
                description="kaito-aks: a cluster admin named in the stack's config",
                opts=opts,
            )
        )
        principals.append(admin.object_id)
    return made, pulumi.Output.all(*principals).apply(lambda ids: [str(i) for i in ids])
