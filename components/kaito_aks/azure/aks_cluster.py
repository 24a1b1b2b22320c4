"""An AKS cluster (created, or adopted) and the Kubernetes provider built from its kubeconfig."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import field
from typing import Annotated

import pulumi
from pulumi_azure_native import containerservice, resources

from kaito_aks.azure.monitoring import managed_prometheus
from kaito_aks.cluster.access import ClusterAccess, ClusterProvider
from kaito_aks.nodes import SYSTEM_POOL
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import Input, Matches, MaxItems, Range, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:AksCluster"
FORMER_TYPES = ("kaito-aks:azure:AksCluster",)

# Azure's naming rules (Microsoft.Resources and Microsoft.ContainerService).
RESOURCE_GROUP_NAME = Matches(
    r"[-\w.()]{0,89}[-\w()]",
    "a resource group name: 1-90 letters, digits, '_', '-', '.', '(' or ')', not ending in '.'",
)
CLUSTER_NAME = Matches(
    r"[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?",
    "an AKS cluster name: 1-63 letters, digits, '_' or '-', starting and ending with a letter or digit",
)
# A created cluster's name is also its DNS prefix: no '_', at most 54 characters.
DNS_PREFIX = Matches(
    r"[A-Za-z0-9]([A-Za-z0-9-]{0,52}[A-Za-z0-9])?",
    "usable as the cluster's DNS prefix: 1-54 letters, digits or '-', starting and ending with a letter or digit",
)
KUBERNETES_VERSION = Matches(
    r"1\.\d{2}(\.\d+)?", 'a Kubernetes version: MAJOR.MINOR or MAJOR.MINOR.PATCH, quoted, e.g. "1.33"'
)


@args_class
class SystemPoolArgs:
    """The AKS system node pool: the operators, and CPU models (which select it by the label
    kubernetes.azure.com/mode: system)."""

    vm_size: str = "Standard_D4s_v5"
    """VM size of the system nodes."""
    count: Annotated[int, Range(1, 1000, "AKS: 1-1000 nodes per pool")] = 2
    """Number of system nodes."""


@args_class
class AksClusterArgs:
    """An AKS cluster: created with its resource group (OIDC issuer and workload identity on),
    or, with `existing`, an AKS cluster that already exists, adopted read-only."""

    resource_group: Annotated[str, RESOURCE_GROUP_NAME]
    """The resource group: created with the cluster, or the existing cluster's."""
    name: Annotated[str, CLUSTER_NAME]
    """The cluster's name (a created cluster's DNS prefix too)."""
    existing: bool = False
    """Adopt an AKS cluster that already exists instead of creating one."""
    location: Input[str] | None = None
    """Azure region of a created cluster; default: the azure-native provider's location."""
    kubernetes_version: Annotated[str, KUBERNETES_VERSION] | None = None
    """Kubernetes version of a created cluster, e.g. "1.33"; default: AKS's default."""
    system_pool: SystemPoolArgs = field(default_factory=SystemPoolArgs)
    """The system pool of a created cluster."""
    tags: Annotated[dict[str, str], MaxItems(50, "Azure: at most 50 tags")] = field(default_factory=dict[str, str])
    """Azure tags on a created resource group and cluster; default: none."""
    ai_toolchain_operator: bool = False
    """The AKS AI toolchain operator add-on: AKS runs KAITO (its own version, with node
    auto-provisioning in the control plane) and no KAITO Helm release may be installed. With
    `existing`, the cluster must already have it (checked at deploy time)."""
    managed_prometheus: bool = False
    """Azure Monitor managed Prometheus for a created cluster: its metrics add-on, an Azure Monitor
    workspace (<name>-prometheus) and the data collection endpoint, rule and associations that
    send the metrics there; it scrapes azmonitoring.coreos.com ServiceMonitors."""
    keda: bool = False
    """The AKS KEDA add-on for a created cluster (workloadAutoScalerProfile.keda): KEDA in
    kube-system, its version AKS's choice for the cluster's Kubernetes minor."""


def aks_cluster_problems(args: AksClusterArgs) -> list[Problem]:
    problems: list[Problem] = []
    if args.existing:
        defaults = AksClusterArgs(resource_group=args.resource_group, name=args.name, existing=True)
        for name in ("location", "kubernetes_version", "system_pool", "tags", "managed_prometheus", "keda"):
            if getattr(args, name) != getattr(defaults, name):
                problems.append(
                    Problem.at(
                        name,
                        "configures a cluster this component creates; an existing cluster is only read",
                        "existing-cluster",
                    )
                )
        return problems
    why = DNS_PREFIX.check(args.name)
    if why:
        problems.append(Problem.at("name", why, "cluster-name"))
    for key, value in args.tags.items():
        if len(key) > 512 or len(value) > 256 or any(c in key for c in "<>%&\\?/"):
            problems.append(
                Problem.at(
                    ("tags",),
                    f"tag {key!r}: names are at most 512 characters without <>%&\\?/, values at most 256",
                    "tag",
                )
            )
    return problems


def user_kubeconfig(name: str, kubeconfigs: Sequence[containerservice.outputs.CredentialResultResponse] | None) -> str:
    """The user kubeconfig Azure lists for the cluster. None there (Pulumi's plain test mocks
    answer every call with {}) is an error that says what to answer, not a TypeError."""
    if not kubeconfigs:
        raise ValueError(
            f"AksCluster {name!r}: Azure listed no user kubeconfig for the cluster; under test mocks, answer "
            "azure-native:containerservice:listManagedClusterUserCredentials with "
            "{'kubeconfigs': [{'name': 'clusterUser', 'value': <base64 kubeconfig>}]}, as "
            "kaito_aks.testing.ProgramMocks does"
        )
    return base64.b64decode(kubeconfigs[0].value).decode()


class AksCluster(pulumi.ComponentResource):
    """A resource group and AKS cluster (system-assigned identity, Azure CNI overlay, OIDC issuer
    and workload identity on, a system pool; GPU pools are GpuNodePools of their own), or an
    existing cluster read-only. In Python, `provider` is the explicit Kubernetes provider every
    in-cluster resource uses, and carries the cluster's credentials to the waits too; other
    languages make a kubernetes Provider from its `kubeconfig` output."""

    cluster_name: pulumi.Output[str]
    """The cluster's name."""
    resource_group_name: pulumi.Output[str]
    """The cluster's resource group."""
    node_resource_group: pulumi.Output[str]
    """The resource group AKS keeps the cluster's nodes in (MC_...)."""
    kubeconfig: pulumi.Output[str]
    """A user kubeconfig for the cluster (secret)."""
    oidc_issuer_url: pulumi.Output[str]
    """The cluster's OIDC issuer, for workload identity federation."""
    cluster_id: pulumi.Output[str]
    """The cluster's Azure resource id (the scope of roles on it)."""
    location: pulumi.Output[str]
    """The cluster's Azure region."""
    ai_toolchain_operator: pulumi.Output[bool]
    """Whether AKS runs KAITO for the cluster (the AI toolchain operator add-on)."""
    kubernetes_version: pulumi.Output[str]
    """The Kubernetes version the cluster runs (MAJOR.MINOR.PATCH; AKS's choice when none was
    given): the add-on's KAITO release follows its minor."""

    provider: ClusterProvider

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args("AksCluster", name, AksClusterArgs, args, aks_cluster_problems)
        args = checked
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        child = child_options(self, opts)
        if not args.existing:
            group = resources.ResourceGroup(
                f"{name}-rg",
                resource_group_name=args.resource_group,
                location=args.location,
                tags=args.tags,
                opts=child,
            )
            cluster = containerservice.ManagedCluster(
                name,
                resource_name_=args.name,
                resource_group_name=group.name,
                location=args.location,
                dns_prefix=args.name,
                kubernetes_version=args.kubernetes_version,
                identity=containerservice.ManagedClusterIdentityArgs(
                    type=containerservice.ResourceIdentityType.SYSTEM_ASSIGNED
                ),
                enable_rbac=True,
                oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
                security_profile=containerservice.ManagedClusterSecurityProfileArgs(
                    workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True)
                ),
                # The add-on (KAITO run by AKS) needs only this switch and the OIDC issuer above;
                # since its GA, AKS keeps its node provisioner and identity in the control plane.
                ai_toolchain_operator_profile=containerservice.ManagedClusterAIToolchainOperatorProfileArgs(
                    enabled=True
                )
                if args.ai_toolchain_operator
                else None,
                azure_monitor_profile=containerservice.ManagedClusterAzureMonitorProfileArgs(
                    metrics=containerservice.ManagedClusterAzureMonitorProfileMetricsArgs(enabled=True)
                )
                if args.managed_prometheus
                else None,
                workload_auto_scaler_profile=containerservice.ManagedClusterWorkloadAutoScalerProfileArgs(
                    keda=containerservice.ManagedClusterWorkloadAutoScalerProfileKedaArgs(enabled=True)
                )
                if args.keda
                else None,
                network_profile=containerservice.ContainerServiceNetworkProfileArgs(
                    network_plugin=containerservice.NetworkPlugin.AZURE,
                    network_plugin_mode=containerservice.NetworkPluginMode.OVERLAY,
                ),
                # Only the system pool lives inline; GPU pools are AgentPool resources of their
                # own (adding pools through the cluster object is refused by the AKS API).
                agent_pool_profiles=[
                    containerservice.ManagedClusterAgentPoolProfileArgs(
                        name=SYSTEM_POOL,
                        mode=containerservice.AgentPoolMode.SYSTEM,
                        vm_size=args.system_pool.vm_size,
                        count=args.system_pool.count,
                        os_type=containerservice.OSType.LINUX,
                        os_sku=containerservice.OSSKU.UBUNTU,
                        type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
                    )
                ],
                tags=args.tags,
                # GPU pools are AgentPools of their own; after a refresh the cluster reports them in
                # agentPoolProfiles too, and the next `up` would try to remove them. (A change of
                # the system pool is therefore made on the pool in Azure, not here.)
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["agentPoolProfiles"])),
            )
            if args.managed_prometheus:
                managed_prometheus(
                    name, args.name, cluster.id, group.name, cluster.location, args.tags, child_options(self, opts)
                )
            self.cluster_name = cluster.name
            self.resource_group_name = group.name
            self.node_resource_group = cluster.node_resource_group.apply(lambda g: g or "")
            self.cluster_id = cluster.id
            self.location = cluster.location
            issuer = cluster.oidc_issuer_profile
            add_on = cluster.ai_toolchain_operator_profile
            running = cluster.current_kubernetes_version
        else:
            found = containerservice.get_managed_cluster_output(
                resource_group_name=args.resource_group, resource_name=args.name, opts=pulumi.InvokeOptions(parent=self)
            )
            self.cluster_name = found.name
            self.resource_group_name = pulumi.Output.from_input(args.resource_group)
            self.node_resource_group = found.node_resource_group.apply(lambda g: g or "")
            self.cluster_id = found.id
            self.location = found.location
            issuer = found.oidc_issuer_profile
            add_on = found.ai_toolchain_operator_profile
            running = found.current_kubernetes_version
        self.kubernetes_version = running.apply(lambda v: v or "")
        self.oidc_issuer_url = issuer.apply(lambda p: (p.issuer_url if p else None) or "")
        self.ai_toolchain_operator = add_on.apply(lambda p: bool(p and p.enabled))
        if args.existing:
            expected = args.ai_toolchain_operator
            self.ai_toolchain_operator = self.ai_toolchain_operator.apply(lambda on: self._expect_add_on(on, expected))

        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster_name,
            opts=pulumi.InvokeOptions(parent=self),
        )
        self.kubeconfig = pulumi.Output.secret(credentials.kubeconfigs.apply(lambda ks: user_kubeconfig(name, ks)))
        self.provider = ClusterProvider(name, ClusterAccess(kubeconfig=self.kubeconfig), opts=child_options(self, opts))
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "resourceGroupName": self.resource_group_name,
                "nodeResourceGroup": self.node_resource_group,
                "kubeconfig": self.kubeconfig,
                "oidcIssuerUrl": self.oidc_issuer_url,
                "clusterId": self.cluster_id,
                "location": self.location,
                "aiToolchainOperator": self.ai_toolchain_operator,
                "kubernetesVersion": self.kubernetes_version,
            }
        )

    def _expect_add_on(self, enabled: bool, expected: bool) -> bool:
        """An adopted cluster runs the add-on exactly when `ai_toolchain_operator` says so: one
        said to run it and without it leaves the Workspaces unserved, and one running it unsaid
        would get a second KAITO installed over AKS's (a deployment error: the cluster is only
        known at deploy time)."""
        if enabled and not expected:
            pulumi.log.error(
                "the existing cluster runs the AI toolchain operator add-on (AKS's own KAITO): set ai_toolchain_operator "
                "(cluster.existing.aiToolchainOperator) so that no second KAITO is installed over it",
                resource=self,
            )
        if expected and not enabled:
            pulumi.log.error(
                "the existing cluster does not have the AI toolchain operator add-on, which ai_toolchain_operator says "
                "it has: run `az aks update --enable-ai-toolchain-operator --enable-oidc-issuer` on it, or install "
                "KAITO with this library (KaitoOperator)",
                resource=self,
            )
        return enabled
