"""gpu-provisioner, the controller that makes KAITO's node auto-provisioning real on AKS: KAITO
creates a NodeClaim per node a Workspace needs, gpu-provisioner creates an AKS agent pool of the
Workspace's instance type for it. It runs as an Azure workload identity that may read, write and
delete the cluster's agent pools and nothing else: a custom role of exactly the calls its code
makes (KAITO's own Terraform and docs give it Contributor on the cluster)."""

from __future__ import annotations

import uuid
from dataclasses import field
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, containerservice

from kaito_aks import catalog
from kaito_aks.azure.cluster_ref import (
    CLUSTER_ID,
    CLUSTER_ID_FORM,
    AksClusterRefArgs,
    ClusterRef,
    OnCluster,
    cluster_problems,
    cluster_ref,
)
from kaito_aks.azure.workload_identity import IDENTITY_NAME, RoleGrantArgs, WorkloadIdentity, operator_identity
from kaito_aks.capacity import Capacity, pods_of, with_requests
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.cluster.access import access_for, provider_problems
from kaito_aks.cluster.kubeconfig_text import KubeconfigContents
from kaito_aks.operators.helm import ChartRelease, deep_merge, managed_values, pinned_release, unread_values
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import InvalidArgsError, Problem, raise_if, shown
from kaito_aks.schema import Input, args_class
from kaito_aks.validation import checked_args
from kaito_aks.waits.nodeclaims_gone import NodeClaimsGone

TYPE = "kaito-aks:index:GpuProvisioner"
FORMER_TYPES: tuple[str, ...] = ()  # new in 0.3.0
DEFAULT_VERSION = "0.4.3"
INSTALL_TIMEOUT_SECONDS = 600
# Values the component derives from the cluster and the identity; a caller's copy would unhook them.
NO_CREDENTIALS = (
    "the wait that keeps gpu-provisioner until KAITO's NodeClaims are gone reads the cluster and has no credentials: "
    "deploy through AksCluster.provider (a ClusterProvider), give `kubeconfig`, or set "
    "`wait_for_nodeclaims_on_delete` false"
)
MANAGED_VALUES = {
    ("controller", "env"): "set from the cluster (subscription, resource group, name, location, node resource group)",
    ("workloadIdentity",): "set from the component's workload identity",
}


def agent_pool_role_guid(cluster_id: str) -> str:
    """The GUID of the custom role of one cluster's gpu-provisioner: the same on every run and
    for every program managing that cluster (a name-based UUID of its id), unique per cluster."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"kaito-aks/gpu-provisioner/agent-pools{cluster_id.lower()}"))


def _known_cluster(name: str, cluster_id: str) -> ClusterRef:
    """A cluster id known only at deploy time (another resource's output), held to the rule a
    known one is: refused in the component's words, not with a bare ValueError."""
    try:
        return cluster_ref(cluster_id)
    except ValueError:
        why = f"{shown(cluster_id)} is not an AKS cluster's resource id: {CLUSTER_ID_FORM}"
        raise InvalidArgsError("GpuProvisioner", name, [Problem.at("cluster_id", why, "cluster-id")]) from None


@args_class
class GpuProvisionerArgs:
    """The pinned gpu-provisioner chart and the Azure identity it runs as, for one AKS cluster
    (e.g. from an `AksCluster`: cluster_id, location, node_resource_group, oidc_issuer_url)."""

    cluster: AksClusterRefArgs | None = None
    """The AKS cluster (`AksClusterRefArgs.of(cluster)`): its id (the
    scope of the identity's role: its agent pools, read, write, delete), region, node resource
    group and OIDC issuer (the cluster needs workload identity on)."""
    cluster_id: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's resource id."""
    location: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's region."""
    node_resource_group: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's node resource group."""
    oidc_issuer_url: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's OIDC issuer."""
    version: str = DEFAULT_VERSION
    """Chart version: 0.3.8 (KAITO 0.8's pin), 0.4.2 (KAITO 0.11's) or 0.4.3 (newest; for 0.12)."""
    identity_name: Annotated[str, IDENTITY_NAME] | None = None
    """Azure name of the managed identity, in the cluster's resource group; default:
    <cluster name>-gpu-provisioner (one per cluster)."""
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra chart values, deep-merged last; default: none."""
    wait_for_nodeclaims_on_delete: bool = True
    """On `pulumi destroy`, keep gpu-provisioner until KAITO's NodeClaims are gone, so their AKS
    agent pools (GPU nodes) are deleted rather than left running."""
    kubeconfig: KubeconfigContents | None = None
    """Credentials that wait reads NodeClaims with (kept secret). Default: those of the cluster's
    provider it is deployed through, where it carries them (a Python program's AksCluster
    `provider`); elsewhere give it, or turn the wait off."""


FLAT_CLUSTER = ("cluster_id", "location", "node_resource_group", "oidc_issuer_url")


def gpu_provisioner_problems(args: GpuProvisionerArgs) -> list[Problem]:
    problems: list[Problem] = []
    cluster_id = OnCluster.of(args).cluster_id
    if isinstance(cluster_id, str) and cluster_id and not CLUSTER_ID.fullmatch(cluster_id):
        problems.append(
            Problem.at("cluster_id", f"must be an AKS cluster's resource id: {CLUSTER_ID_FORM}", "cluster-id")
        )
    chart = catalog.gpu_provisioner_charts().get(args.version)
    if chart is None:
        supported = ", ".join(catalog.gpu_provisioner_charts())
        why = f"gpu-provisioner {args.version} is not supported; use one of: {supported}"
        problems.append(Problem.at("version", why, "version"))
    else:
        problems += unread_values(args.values, chart.value_keys, f"gpu-provisioner {args.version}")
    return problems + managed_values(args.values, MANAGED_VALUES)


def gpu_provisioner_values(
    args: GpuProvisionerArgs,
    cluster: pulumi.Output[ClusterRef],
    client_id: pulumi.Input[str],
    tenant_id: pulumi.Input[str],
) -> dict[str, Any]:
    """The chart's values: the controller's environment names the cluster it adds node pools to
    (as KAITO's Terraform sets it), and its service account carries the identity."""
    on = OnCluster.of(args)
    env = {
        "ARM_SUBSCRIPTION_ID": cluster.apply(lambda c: c.subscription),
        "LOCATION": on.location,
        "AZURE_CLUSTER_NAME": cluster.apply(lambda c: c.name),
        "AZURE_NODE_RESOURCE_GROUP": on.node_resource_group,
        "ARM_RESOURCE_GROUP": cluster.apply(lambda c: c.resource_group),
        "LEADER_ELECT": "false",
        "E2E_TEST_MODE": "false",
    }
    values: dict[str, Any] = {
        "controller": {"env": [{"name": k, "value": v} for k, v in env.items()]},
        "workloadIdentity": {"clientId": client_id, "tenantId": tenant_id},
        "settings": {"azure": {"clusterName": cluster.apply(lambda c: c.name)}},
    }
    return deep_merge(values, args.values)


def gpu_provisioner_capacity(args: GpuProvisionerArgs) -> Capacity:
    """The controller, at the values' requests, for the capacity budget."""
    kinds = pod_requests().pods.gpu_provisioner.get(args.version)
    if kinds is None:
        return Capacity()
    pods = pods_of(kinds, note=f"gpu-provisioner {args.version}")
    return Capacity(pods=with_requests(pods, args.values, "controller", "resources"))


class GpuProvisioner(pulumi.ComponentResource):
    """gpu-provisioner's Helm release with its WorkloadIdentity (managed identity, federated
    credential for the chart's service account, a custom role on the cluster with the agent pool
    actions its code calls: read, write, delete; created in the cluster's resource group, so the
    deployer needs Microsoft.Authorization/roleDefinitions/write there). The release waits
    for the identity, so its controller signs in on first start; Workspaces in auto mode should
    depend on this component, so nothing asks for nodes before something can make them, and
    `pulumi destroy` removes them (and KAITO's NodeClaims) while it still runs."""

    namespace: pulumi.Output[str]
    """The release's namespace."""
    chart_version: pulumi.Output[str]
    """The installed chart version."""
    client_id: pulumi.Output[str]
    """The identity's client id."""
    principal_id: pulumi.Output[str]
    """The identity's object id."""
    identity_name: pulumi.Output[str]
    """The identity's Azure name."""

    role: authorization.RoleDefinition
    """Its custom role: the cluster's agent pools, read, write and delete."""
    identity: WorkloadIdentity
    release: k8s.helm.v3.Release
    capacity: Capacity
    """What it runs on the non-GPU nodes, for the capacity budget (`deploy_models`' `capacity`)."""

    def __init__(self, name: str, args: GpuProvisionerArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "GpuProvisioner",
            name,
            GpuProvisionerArgs,
            args,
            gpu_provisioner_problems,
            also=[*cluster_problems(args, FLAT_CLUSTER), *provider_problems(opts)],
        )
        self.capacity = gpu_provisioner_capacity(checked)
        access = access_for(checked.kubeconfig, None, opts)
        if access is None and checked.wait_for_nodeclaims_on_delete:
            raise_if("GpuProvisioner", name, [Problem.at("kubeconfig", NO_CREDENTIALS, "no-credentials")])
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        source = catalog.gpu_provisioner_chart_source()
        who = catalog.gpu_provisioner_source()
        on = OnCluster.of(checked)
        cluster = pulumi.Output.from_input(on.cluster_id).apply(lambda given: _known_cluster(name, given))
        self.role = self._agent_pool_role(name, on.cluster_id, cluster, child_options(self, opts))
        role = pulumi.Output.all(cluster.apply(lambda c: c.subscription), self.role.name).apply(
            lambda x: f"/subscriptions/{x[0]}/providers/Microsoft.Authorization/roleDefinitions/{x[1]}"
        )
        self.identity = operator_identity(
            self,
            name,
            cluster,
            issuer_url=on.oidc_issuer_url,
            location=on.location,
            service_account=(source.namespace, who.service_account),
            identity_name=checked.identity_name,
            suffix="gpu-provisioner",
            roles=[RoleGrantArgs(role_definition_id=role, scope=on.cluster_id, name="agent-pools")],
            opts=opts,
        )
        values = gpu_provisioner_values(checked, cluster, self.identity.client_id, self.identity.tenant_id)
        self.release = pinned_release(
            name,
            ChartRelease.of(source, checked.version, values),
            INSTALL_TIMEOUT_SECONDS,
            child_options(self, opts, depends_on=[self.identity]),
        )
        self.nodeclaims_gone: NodeClaimsGone | None = None
        if access is not None and checked.wait_for_nodeclaims_on_delete:
            # Deleted after the Workspaces that depend on this component, before the release.
            self.nodeclaims_gone = NodeClaimsGone(
                f"{name}/nodeclaims-gone", access, opts=child_options(self, opts, depends_on=[self.release])
            )
        # gpu-provisioner signs in through the cluster's workload identity webhook: a cluster
        # adopted without it would leave the controller crash-looping behind Helm's timeout.
        found = containerservice.get_managed_cluster_output(
            resource_group_name=cluster.apply(lambda c: c.resource_group),
            resource_name=cluster.apply(lambda c: c.name),
            opts=pulumi.InvokeOptions(parent=self),
        )
        found.security_profile.apply(self._expect_workload_identity)
        self.namespace = self.release.status.namespace
        self.chart_version = self.release.status.version
        self.client_id = self.identity.client_id
        self.principal_id = self.identity.principal_id
        self.identity_name = self.identity.identity_name
        self.register_outputs(
            {
                "namespace": self.namespace,
                "chartVersion": self.chart_version,
                "clientId": self.client_id,
                "principalId": self.principal_id,
                "identityName": self.identity_name,
            }
        )

    @staticmethod
    def _agent_pool_role(
        name: str, cluster_id: pulumi.Input[str], cluster: pulumi.Output[ClusterRef], opts: pulumi.ResourceOptions
    ) -> authorization.RoleDefinition:
        """The custom role: exactly the actions of the calls gpu-provisioner's code makes
        (catalog/gpu_provisioner_charts.yaml), assignable in the cluster's resource group (custom
        roles are assignable at a management group, subscription or resource group)."""
        group = cluster.apply(lambda c: f"/subscriptions/{c.subscription}/resourceGroups/{c.resource_group}")
        guid = pulumi.Output.from_input(cluster_id).apply(agent_pool_role_guid)
        return authorization.RoleDefinition(
            f"{name}-agent-pools",
            scope=group,
            role_definition_id=guid,
            # unique in the tenant: the cluster's name and its id's GUID
            role_name=pulumi.Output.all(cluster.apply(lambda c: c.name), guid).apply(
                lambda x: f"kaito-aks gpu-provisioner {x[0]} {x[1][:8]}"
            ),
            description="gpu-provisioner (KAITO node auto-provisioning): read, write and delete the agent pools of "
            "one AKS cluster",
            role_type="CustomRole",
            permissions=[authorization.PermissionArgs(actions=catalog.gpu_provisioner_source().actions)],
            assignable_scopes=[group],
            opts=opts,
        )

    def _expect_workload_identity(
        self, profile: containerservice.outputs.ManagedClusterSecurityProfileResponse | None
    ) -> None:
        identity = profile.workload_identity if profile is not None else None
        if identity is None or not identity.enabled:
            pulumi.log.error(
                "the cluster has workload identity off, so gpu-provisioner cannot sign in to Azure (its pod gets no "
                "token): run `az aks update --enable-oidc-issuer --enable-workload-identity` on it (an AksCluster this "
                "library creates has both on)",
                resource=self,
            )
