"""An Azure workload identity: a user-assigned managed identity that one Kubernetes service
account signs in as, through a federated credential trusting the cluster's OIDC issuer, with
the Azure roles it needs."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Annotated

import pulumi
from pulumi_azure_native import authorization, managedidentity

from kaito_aks import catalog
from kaito_aks.azure.cluster_ref import ClusterRef
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import Input, Matches, MaxItems, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:WorkloadIdentity"
FORMER_TYPES: tuple[str, ...] = ()  # new in 0.3.0
# What Azure AD accepts from a Kubernetes service account token (AKS workload identity docs).
TOKEN_AUDIENCE = "api://AzureADTokenExchange"
IDENTITY_NAME = Matches(
    r"[A-Za-z0-9][A-Za-z0-9_-]{2,127}",
    "a managed identity name: 3-128 letters, digits, '-' or '_', starting with a letter or digit",
)
K8S_NAME = Matches(
    r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
    "a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit",
)
GUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SUBSCRIPTION_SCOPE = re.compile(r"/subscriptions/(?P<subscription>[^/]+)(/.*)?", re.IGNORECASE)


ASSIGNMENT_NAME = Matches(
    r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a name for the assignment: lowercase letters, digits and '-'"
)


@args_class
class RoleGrantArgs:
    """An Azure role the identity holds, at one scope: a role by name or GUID (`role`), or a role
    definition by its full id (`role_definition_id`, e.g. a custom RoleDefinition's)."""

    scope: Input[str]
    """The Azure resource id it applies to (a resource, resource group or subscription), e.g.
    `AksCluster.cluster_id`."""
    role: str | None = None
    """A built-in role by name (Virtual Machine Contributor, Network Contributor, Managed Identity
    Operator, ...) or any role definition's GUID; give it or `role_definition_id`. Contributor,
    Owner and User Access Administrator are accepted with a warning: they write (or grant)
    everything in their scope."""
    role_definition_id: Input[str] | None = None
    """A role definition's full id (/subscriptions/<id>/providers/Microsoft.Authorization/
    roleDefinitions/<GUID>), e.g. of a custom role this program creates; give it or `role`
    (then `name` too)."""
    name: Annotated[str, ASSIGNMENT_NAME] | None = None
    """The last part of the assignment's resource name (<identity>-<name>); default: the role's
    name, lower case with dashes. Required with `role_definition_id`."""


@args_class
class WorkloadIdentityArgs:
    """A user-assigned managed identity that a Kubernetes service account signs in as."""

    resource_group_name: Input[str]
    """The resource group the identity is created in (e.g. `AksCluster.resource_group_name`)."""
    issuer_url: Input[str]
    """The cluster's OIDC issuer (e.g. `AksCluster.oidc_issuer_url`): the federated credential
    trusts the service account tokens it signs."""
    namespace: Annotated[str, K8S_NAME]
    """Namespace of the service account."""
    service_account: Annotated[str, K8S_NAME]
    """The service account that signs in as the identity."""
    identity_name: Annotated[Input[str], IDENTITY_NAME] | None = None
    """The identity's Azure name; default: the resource name."""
    location: Input[str] | None = None
    """Azure region of the identity; default: the resource group's."""
    roles: Annotated[list[RoleGrantArgs], MaxItems(20)] = field(default_factory=list[RoleGrantArgs])
    """Azure roles the identity holds; default: none."""
    tags: Annotated[dict[str, str], MaxItems(50, "Azure: at most 50 tags")] = field(default_factory=dict[str, str])
    """Azure tags on the identity; default: none."""


def workload_identity_problems(args: WorkloadIdentityArgs) -> list[Problem]:
    known = catalog.azure_roles()
    problems: list[Problem] = []
    for i, grant in enumerate(args.roles):
        if (grant.role is None) == (grant.role_definition_id is None):
            why = "give `role` (a built-in role's name or a GUID) or `role_definition_id`, one of them"
            problems.append(Problem.at(("roles", i), why, "role"))
        elif grant.role is not None and grant.role not in known and not GUID.fullmatch(grant.role.lower()):
            problems.append(
                Problem.at(
                    ("roles", i, "role"),
                    f"{grant.role!r} is neither a built-in role this library knows ({', '.join(known)}) nor a role "
                    "definition GUID",
                    "role",
                )
            )
        if grant.role_definition_id is not None and grant.name is None:
            why = "required with role_definition_id: the assignment's resource is named after it"
            problems.append(Problem.at(("roles", i, "name"), why, "required"))
        if isinstance(grant.scope, str) and not SUBSCRIPTION_SCOPE.fullmatch(grant.scope):
            problems.append(
                Problem.at(
                    ("roles", i, "scope"),
                    "must be an Azure resource id under a subscription (/subscriptions/<id>/...)",
                    "scope",
                )
            )
    return problems


def workload_identity_warnings(args: WorkloadIdentityArgs) -> list[Problem]:
    """Roles a workload should not hold: said, not refused (some controllers document nothing
    narrower)."""
    broad = catalog.too_broad_roles()
    by_guid = {guid: name for name, guid in broad.items()}
    warnings: list[Problem] = []
    for i, grant in enumerate(args.roles):
        role = grant.role or ""
        name = role if role in broad else by_guid.get(role.lower())
        if name is not None:
            warnings.append(
                Problem.at(
                    ("roles", i, "role"),
                    f"{name} lets this identity (anyone whose pod runs as its service account) write "
                    + ("and grant access to " if name != "Contributor" else "")
                    + "every resource in its scope: grant a role with only the actions the workload calls",
                    "broad-role",
                )
            )
    return warnings


def assignment_name(grant: RoleGrantArgs) -> str:
    """The last part of a grant's resource name."""
    return grant.name or _slug(grant.role or "")


def subject_of(namespace: str, service_account: str) -> str:
    """The subject Kubernetes puts in a service account's tokens."""
    return f"system:serviceaccount:{namespace}:{service_account}"


def role_definition_id(scope: str, role: str) -> str:
    """The full id of a role definition, in the subscription of `scope`."""
    match = SUBSCRIPTION_SCOPE.fullmatch(scope)
    if match is None:
        raise ValueError(f"role scope {scope!r} is not an Azure resource id under a subscription")
    guid = catalog.azure_roles().get(role, role).lower()
    return f"/subscriptions/{match['subscription']}/providers/Microsoft.Authorization/roleDefinitions/{guid}"


class WorkloadIdentity(pulumi.ComponentResource):
    """A UserAssignedIdentity, a FederatedIdentityCredential for exactly one service account
    (issuer: the cluster's OIDC issuer; audience: api://AzureADTokenExchange) and one
    RoleAssignment per role. The AKS workload identity webhook gives pods of that service
    account the identity's token, when the service account is annotated with `client_id` and
    `tenant_id`. Depend on this component before starting those pods: their first sign-in
    fails until the credential and roles exist."""

    client_id: pulumi.Output[str]
    """The identity's client (application) id, for the service account's annotation."""
    principal_id: pulumi.Output[str]
    """The identity's object id, which role assignments name."""
    tenant_id: pulumi.Output[str]
    """The Azure AD tenant of the identity."""
    identity_id: pulumi.Output[str]
    """The identity's Azure resource id."""
    identity_name: pulumi.Output[str]
    """The identity's Azure name."""
    subject: pulumi.Output[str]
    """The token subject the federated credential trusts."""

    identity: managedidentity.UserAssignedIdentity
    credential: managedidentity.FederatedIdentityCredential
    role_assignments: list[authorization.RoleAssignment]

    def __init__(self, name: str, args: WorkloadIdentityArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args("WorkloadIdentity", name, WorkloadIdentityArgs, args, workload_identity_problems)
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        for warning in workload_identity_warnings(checked):
            pulumi.log.warn(warning.under("args").text(), resource=self)
        child = child_options(self, opts)
        subject = subject_of(checked.namespace, checked.service_account)
        self.identity = managedidentity.UserAssignedIdentity(
            name,
            resource_name_=checked.identity_name or name,
            resource_group_name=checked.resource_group_name,
            location=checked.location,
            tags=checked.tags or None,
            opts=child,
        )
        self.credential = managedidentity.FederatedIdentityCredential(
            f"{name}-federation",
            federated_identity_credential_resource_name=f"{checked.namespace}-{checked.service_account}",
            resource_name_=self.identity.name,
            resource_group_name=checked.resource_group_name,
            issuer=pulumi.Output.from_input(checked.issuer_url).apply(self._issuer),
            subject=subject,
            audiences=[TOKEN_AUDIENCE],
            opts=child,
        )
        self.role_assignments = [
            authorization.RoleAssignment(
                f"{name}-{slug}",
                principal_id=self.identity.principal_id,
                # Managed identities are service principals; saying so spares Azure a Graph
                # lookup that fails while a new identity is still replicating.
                principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                role_definition_id=_definition_of(grant),
                scope=grant.scope,
                opts=child,
            )
            for grant, slug in zip(checked.roles, _slugs(checked.roles), strict=True)
        ]
        self.client_id = self.identity.client_id
        self.principal_id = self.identity.principal_id
        self.tenant_id = self.identity.tenant_id
        self.identity_id = self.identity.id
        self.identity_name = self.identity.name
        self.subject = pulumi.Output.from_input(subject)
        self.register_outputs(
            {
                "clientId": self.client_id,
                "principalId": self.principal_id,
                "tenantId": self.tenant_id,
                "identityId": self.identity_id,
                "identityName": self.identity_name,
                "subject": self.subject,
            }
        )

    def _issuer(self, url: str) -> str:
        """The issuer, or an error that says what the cluster lacks (a deployment error, not a
        traceback: the cluster is only known at deploy time)."""
        if not url:
            pulumi.log.error(
                "the cluster has no OIDC issuer, so no Kubernetes service account can sign in to Azure: run "
                "`az aks update --enable-oidc-issuer --enable-workload-identity` on it (an AksCluster this library "
                "creates has both on)",
                resource=self,
            )
        return url


def _definition_of(grant: RoleGrantArgs) -> pulumi.Input[str]:
    """The full role definition id a grant names: given, or built from its role in the scope's
    subscription."""
    if grant.role_definition_id is not None:
        return grant.role_definition_id
    role = grant.role or ""
    return pulumi.Output.from_input(grant.scope).apply(lambda scope: role_definition_id(scope, role))


def _slug(role: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", role.lower()).strip("-")


def _slugs(grants: list[RoleGrantArgs]) -> list[str]:
    """A name per assignment: its own, or the role's, numbered from the second time one is used
    (a role granted at another scope)."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for grant in grants:
        slug = assignment_name(grant)
        seen[slug] = seen.get(slug, 0) + 1
        out.append(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}")
    return out


def operator_identity(
    parent: pulumi.ComponentResource,
    name: str,
    cluster: pulumi.Output[ClusterRef],
    *,
    issuer_url: pulumi.Input[str],
    location: pulumi.Input[str],
    service_account: tuple[str, str],
    identity_name: str | None,
    suffix: str,
    roles: list[RoleGrantArgs],
    opts: pulumi.ResourceOptions | None,
) -> WorkloadIdentity:
    """The workload identity of an operator on one AKS cluster (gpu-provisioner, Karpenter), the
    child `<name>-identity` of its component: in the cluster's resource group, for its
    (namespace, service account), named `<cluster name>-<suffix>` unless named (one per cluster,
    where clusters share a resource group)."""
    namespace, account = service_account
    return WorkloadIdentity(
        f"{name}-identity",
        WorkloadIdentityArgs(
            resource_group_name=cluster.apply(lambda c: c.resource_group),
            issuer_url=issuer_url,
            namespace=namespace,
            service_account=account,
            identity_name=identity_name or cluster.apply(lambda c: f"{c.name}-{suffix}"),
            location=location,
            roles=roles,
        ),
        opts=child_options(parent, opts),
    )
