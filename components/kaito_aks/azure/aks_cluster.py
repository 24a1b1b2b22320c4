"""An AKS cluster (created, or adopted) and the Kubernetes provider built from its kubeconfig."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import containerservice, resources

from kaito_aks.options import child_options
from kaito_aks.waits.base import ClusterAccess


@dataclass(frozen=True)
class AksClusterArgs:
    resource_group: str
    name: str
    create: bool = True  # False: adopt an existing cluster read-only
    location: str | None = None
    kubernetes_version: str | None = None  # None: AKS's default
    system_pool_vm_size: str = "Standard_D4s_v5"
    system_pool_count: int = 2
    tags: dict[str, str] = field(default_factory=dict)
    protect: bool = False  # refuse `pulumi destroy` / replacement of the cluster


class AksCluster(pulumi.ComponentResource):
    """Outputs: `cluster_name`, `resource_group_name`, `kubeconfig` (secret), `oidc_issuer_url`
    (for workload identity federation), and `provider`, the explicit Kubernetes provider every
    in-cluster resource must use (`access`: the same credentials for what reads the cluster
    outside the provider, e.g. the GPU-node wait). Satisfies `kaito_aks.cluster.Cluster`."""

    provider: k8s.Provider

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:azure:AksCluster", name, None, opts)
        child = child_options(self, opts, protect=args.protect)
        if args.create:
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
                network_profile=containerservice.ContainerServiceNetworkProfileArgs(
                    network_plugin=containerservice.NetworkPlugin.AZURE,
                    network_plugin_mode=containerservice.NetworkPluginMode.OVERLAY,
                ),
                # Only the system pool lives inline; GPU pools are AgentPool resources of their
                # own (adding pools through the cluster object is refused by the AKS API).
                agent_pool_profiles=[
                    containerservice.ManagedClusterAgentPoolProfileArgs(
                        name="system",
                        mode=containerservice.AgentPoolMode.SYSTEM,
                        vm_size=args.system_pool_vm_size,
                        count=args.system_pool_count,
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
            self.cluster_name: pulumi.Output[str] = cluster.name
            self.resource_group_name: pulumi.Output[str] = group.name
            issuer = cluster.oidc_issuer_profile
        else:
            found = containerservice.get_managed_cluster_output(
                resource_group_name=args.resource_group, resource_name=args.name, opts=pulumi.InvokeOptions(parent=self)
            )
            self.cluster_name = found.name
            self.resource_group_name = pulumi.Output.from_input(args.resource_group)
            issuer = found.oidc_issuer_profile
        self.oidc_issuer_url: pulumi.Output[str | None] = issuer.apply(lambda p: p.issuer_url if p else None)

        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster_name,
            opts=pulumi.InvokeOptions(parent=self),
        )
        self.kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            credentials.kubeconfigs[0].value.apply(lambda v: base64.b64decode(v).decode())
        )
        self.provider = k8s.Provider(name, kubeconfig=self.kubeconfig, opts=child_options(self, opts))
        self.access = ClusterAccess(kubeconfig=self.kubeconfig)
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "resourceGroupName": self.resource_group_name,
                "kubeconfig": self.kubeconfig,
                "oidcIssuerUrl": self.oidc_issuer_url,
            }
        )
