"""An AKS cluster (created, or adopted) and the Kubernetes provider built from its kubeconfig."""

from __future__ import annotations

import ipaddress
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import field, fields
from typing import Annotated, Any, Literal, cast

import pulumi
from pulumi_azure_native import authorization, containerservice, network, resources

from kaito_aks.azure.aks_security import (
    ApiServerArgs,
    DefenderArgs,
    EntraArgs,
    UpgradeArgs,
    access_problems,
    is_production,
    key_vault_add_on,
    kubernetes_version_problems,
    left_alone,
    lowered_defaults,
    production_warnings,
    ranges_warning,
)
from kaito_aks.azure.cluster_admins import cluster_admin_assignments, deployer_permission
from kaito_aks.azure.monitoring import managed_prometheus
from kaito_aks.azure.system_pool import SystemPoolArgs, cluster_capacity, system_pool_drift
from kaito_aks.azure.workload_identity import role_definition_id
from kaito_aks.capacity import Capacity
from kaito_aks.cluster.access import ClusterAccess, ClusterProvider
from kaito_aks.cluster.kubeconfig_text import user_kubeconfig
from kaito_aks.cluster.kubelogin import LoginMode, convert_kubeconfig, kubelogin_args
from kaito_aks.nodes import SYSTEM_POOL
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import Input, Matches, MaxItems, args_class
from kaito_aks.validation import checked_args
from kaito_aks.waits.access_granted import AccessGranted

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


CIDR = Matches(r"\d{1,3}(\.\d{1,3}){3}/\d{1,2}", "an IPv4 CIDR, e.g. 10.224.0.0/16")
SUBNET_ID = re.compile(
    r"/subscriptions/(?P<subscription>[^/]+)/resourceGroups/(?P<resource_group>[^/]+)/providers/"
    r"Microsoft\.Network/virtualNetworks/(?P<vnet>[^/]+)/subnets/(?P<subnet>[^/]+)",
    re.IGNORECASE,
)
# Azure's built-in role the cluster's own identity needs on a subnet that is not AKS's (AKS docs,
# "Use a managed identity in AKS": your own VNet): it joins load balancers and nodes to it.
SUBNET_ROLE = "Network Contributor"


@args_class
class NodeSubnetArgs:
    """The subnet the cluster's nodes join, instead of the VNet AKS makes and keeps to itself:
    one this component creates in the cluster's resource group, or one of yours (`subnet_id`).
    A node provisioner outside AKS (Karpenter) must be given it. Azure CNI overlay: it holds the
    nodes' addresses only; pods get addresses of the overlay."""

    subnet_id: Input[str] | None = None
    """An existing subnet's resource id (yours: the cluster's identity is given Network
    Contributor on it); default: a VNet and subnet made with the cluster."""
    address_space: Annotated[str, CIDR] = "10.224.0.0/12"
    """The created VNet's address space (Karpenter's and AKS's managed-VNet layout); clear of
    AKS's pod (10.244.0.0/16) and service (10.0.0.0/16) ranges."""
    address_prefix: Annotated[str, CIDR] = "10.224.0.0/16"
    """The created subnet's range, inside `address_space`."""


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
    """The system pool of a created cluster: applied when the cluster is created; later edits are
    checked against the live pool at `pulumi up`, not applied."""
    tags: Annotated[dict[str, str], MaxItems(50, "Azure: at most 50 tags")] = field(default_factory=dict[str, str])
    """Azure tags on a created resource group and cluster; default: none."""
    ai_toolchain_operator: bool = False
    """The AKS AI toolchain operator add-on: AKS runs KAITO (its own version, with node
    auto-provisioning in the control plane) and no KAITO Helm release may be installed. With
    `existing`, the cluster must already have it (checked at deploy time)."""
    node_subnet: NodeSubnetArgs | None = None
    """The subnet of a created cluster's nodes (needed for Karpenter); default: AKS's managed
    VNet. Set at creation only: AKS cannot move a pool to another subnet, so on a cluster
    created without it the setting is refused at deploy time, not applied."""
    entra: EntraArgs = field(default_factory=EntraArgs)
    """Entra ID sign-in (always on: the `kubeconfig` output signs in through kubelogin) and who
    is cluster admin; default: Azure RBAC on, the deployer granted cluster admin."""
    local_accounts: bool = False
    """Keep AKS's local accounts (the admin client certificate, which passes Entra ID and Azure
    RBAC unaudited; warned). After turning them off on an existing cluster, run `az aks
    rotate-certs` to revoke the certificates handed out before."""
    api_server: ApiServerArgs = field(default_factory=ApiServerArgs)
    """Who reaches the API server over the network; default: any address (warned on production)."""
    network_policy: Literal["cilium", "none"] = "cilium"
    """The engine that enforces NetworkPolicies: cilium (Azure CNI Powered by Cilium, the data
    plane and the policy engine) or none (warned: NetworkPolicies are not enforced). Set when the
    cluster is created; an existing cluster keeps its engine (a change would replace it), and the
    deployment warns when it has none."""
    upgrade: UpgradeArgs = field(default_factory=UpgradeArgs)
    """Automatic Kubernetes patch and node image upgrades in a weekly maintenance window."""
    tier: Literal["Free", "Standard", "Premium"] | None = None
    """The AKS pricing tier: Free (no uptime SLA; warned on production), Standard (an SLA and a
    control plane sized for production) or Premium (Standard plus long-term support). Default:
    unset, so a new cluster gets AKS's (Free) and an existing one keeps the tier it has, whoever set it."""
    defender: DefenderArgs | None = None
    """Microsoft Defender for Containers (threat detection, image vulnerability findings; billed
    through the subscription's Defender plan); default: off (warned on production)."""
    image_cleaner: bool = True
    """AKS Image Cleaner: removes unused images with known vulnerabilities from the nodes (weekly)."""
    azure_policy: bool = True
    """The Azure Policy add-on: Azure Policy assignments (e.g. the AKS pod security baselines)
    are enforced or audited inside the cluster."""
    key_vault_secrets_provider: bool | None = None
    """The Azure Key Vault secrets store CSI driver add-on (with secret rotation every 2 minutes),
    for pods that mount Key Vault secrets (AKS creates an identity for it). Default: unset, so a
    new cluster has it off and an existing one keeps it as it is, whoever set it."""
    kubelogin_mode: LoginMode = "azurecli"
    """How the `kubeconfig` output's kubelogin signs in: azurecli (the Azure CLI's login; CI
    after `azure/login`), workloadidentity, spn or msi. kubelogin must be on PATH wherever the
    kubeconfig is used (pulumi up, kubectl, status); AAD_LOGIN_METHOD overrides the mode at run
    time."""

    managed_prometheus: bool = False
    """Azure Monitor managed Prometheus for a created cluster: its metrics add-on, an Azure Monitor
    workspace (<name>-prometheus) and the data collection endpoint, rule and associations that
    send the metrics there; it scrapes azmonitoring.coreos.com ServiceMonitors."""
    blob_csi_driver: bool = False
    """The Azure Blob CSI driver (storageProfile.blobCSIDriver) on a created cluster: KAITO's
    ModelMirror keeps the weights it downloads on a blobfuse volume, and its webhook refuses a
    streaming Workspace without the driver (api/v1beta1/workspace_validation.go@v0.12.0
    validateStreamingCSIDriver). Default: off (AKS's default)."""
    keda: bool = False
    """The AKS KEDA add-on for a created cluster (workloadAutoScalerProfile.keda): KEDA in
    kube-system, its version AKS's choice for the cluster's Kubernetes minor."""
    bypass_checks: Annotated[list[str], MaxItems(10)] = field(default_factory=list[str])
    """Refusals said as warnings instead: api-server-unroutable (an example's placeholder range,
    to replace before `pulumi up`). Default: none."""


# What an existing cluster may be given: where it is, and how to reach it.
EXISTING_ARGS = frozenset({"resource_group", "name", "existing", "ai_toolchain_operator", "kubelogin_mode"})


def aks_cluster_problems(args: AksClusterArgs) -> list[Problem]:
    problems: list[Problem] = []
    if args.existing:
        defaults = AksClusterArgs(resource_group=args.resource_group, name=args.name, existing=True)
        for f in fields(AksClusterArgs):
            if f.name not in EXISTING_ARGS and getattr(args, f.name) != getattr(defaults, f.name):
                problems.append(
                    Problem.at(
                        f.name,
                        "configures a cluster this component creates; an existing cluster is only read",
                        "existing-cluster",
                    )
                )
        return problems
    why = DNS_PREFIX.check(args.name)
    if why:
        problems.append(Problem.at("name", why, "cluster-name"))
    subnet = args.node_subnet
    if subnet is not None and isinstance(subnet.subnet_id, str) and not SUBNET_ID.fullmatch(subnet.subnet_id):
        problems.append(
            Problem.at(
                ("node_subnet", "subnet_id"),
                "must be a subnet's resource id: /subscriptions/<id>/resourceGroups/<group>/providers/"
                "Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>",
                "subnet-id",
            )
        )
    if subnet is not None and subnet.subnet_id is None and not _inside(subnet.address_prefix, subnet.address_space):
        problems.append(
            Problem.at(
                ("node_subnet", "address_prefix"),
                f"{subnet.address_prefix} is not inside the VNet's address_space {subnet.address_space}",
                "subnet-range",
            )
        )
    for key, value in args.tags.items():
        if len(key) > 512 or len(value) > 256 or any(c in key for c in "<>%&\\?/"):
            problems.append(
                Problem.at(
                    ("tags",),
                    f"tag {key!r}: names are at most 512 characters without <>%&\\?/, values at most 256",
                    "tag",
                )
            )
    problems += kubernetes_version_problems(args.upgrade.channel, args.kubernetes_version)
    problems += access_problems(args.entra, args.local_accounts, args.api_server, args.bypass_checks)
    ids = [a.object_id.lower() for a in args.entra.admins]
    for i, object_id in enumerate(ids):
        if object_id in ids[:i]:
            problems.append(Problem.at(("entra", "admins", i), f"{object_id} is listed twice", "cluster-access"))
    return problems


def aks_cluster_warnings(args: AksClusterArgs, production: bool = False) -> list[Problem]:
    """The secure defaults this cluster turns down, each with what that exposes (`production`:
    also what a production cluster should not lack). None for an existing cluster: it is read,
    not configured (its policy engine is checked at deploy time)."""
    if args.existing:
        return []
    found = lowered_defaults(
        args.entra, args.local_accounts, args.network_policy, args.upgrade, args.image_cleaner, args.azure_policy
    )
    ranges = ranges_warning(args.api_server.authorized_ip_ranges)
    if ranges is not None:
        found.append(ranges)
    if args.api_server.private:
        found.append(
            Problem.at(
                ("api_server", "private"),
                "a private API server answers only inside the cluster's virtual network: `pulumi up`, kubectl and "
                "`status` must run there (a VNet-connected runner, a jump host); set when the cluster is created, so "
                "turning it on for an existing cluster replaces it",
                "api-server-private",
            )
        )
    if production:
        found += production_warnings(args.api_server, args.tier, args.defender)
    return found


KUBELET_IDENTITY = "kubeletidentity"  # the key of the kubelet's identity in identityProfile


def _inside(prefix: str, space: str) -> bool:
    try:
        inner, outer = ipaddress.IPv4Network(prefix, strict=False), ipaddress.IPv4Network(space, strict=False)
        return inner.subnet_of(outer)
    except ValueError:
        return True  # (the CIDR's own rule says what is wrong with it)


def subnet_parts(subnet_id: str) -> tuple[str, str]:
    """(resource group, VNet name) of a subnet's resource id."""
    match = SUBNET_ID.fullmatch(subnet_id)
    if match is None:
        raise ValueError(f"{subnet_id!r} is not a subnet's resource id")
    return match["resource_group"], match["vnet"]


def _system_subnet(profiles: Sequence[containerservice.outputs.ManagedClusterAgentPoolProfileResponse] | None) -> str:
    system = next((p for p in profiles or [] if _field(p, "name") == SYSTEM_POOL), None)
    return _field(system, "vnet_subnet_id")


def _field(response: object, name: str) -> str:
    """A text field of an output object: the SDK gives one as a response object, or as a plain
    map (the values of a map, an output combined with Output.all)."""
    value = cast(dict[str, Any], response).get(name) if isinstance(response, dict) else getattr(response, name, None)
    return str(value or "")


def _network_value(value: str | None) -> str:
    """AKS's word for a network setting, as a node is told it ("none" and unset: empty)."""
    return "" if value in (None, "none") else str(value)


NETWORK_ENGINE = ("networkProfile.networkPolicy", "networkProfile.networkDataplane")
API_SERVER = "apiServerAccessProfile"
PRIVATE_CLUSTER = f"{API_SERVER}.enablePrivateCluster"
IMAGE_CLEANER_INTERVAL_HOURS = 168  # weekly; ARM clients must give it (AKS docs, image-cleaner)
_UNPROTECTED = pulumi.ResourceOptions(protect=False)


def cluster_inputs(args: AksClusterArgs, subnet_id: pulumi.Input[str] | None = None) -> dict[str, Any]:
    """The ManagedCluster's inputs (beyond its name and group), in pulumi-azure-native 3.29's
    shapes (ARM API 2025-09-01). A setting only set when asked is left out otherwise: an input
    added to an existing cluster's state is an update, and nothing here may replace it."""
    cilium = args.network_policy == "cilium"
    ranges = args.api_server.authorized_ip_ranges
    return {
        "location": args.location,
        "dns_prefix": args.name,
        "kubernetes_version": args.kubernetes_version,
        "identity": containerservice.ManagedClusterIdentityArgs(
            type=containerservice.ResourceIdentityType.SYSTEM_ASSIGNED
        ),
        "enable_rbac": True,
        "aad_profile": containerservice.ManagedClusterAADProfileArgs(
            managed=True,
            enable_azure_rbac=args.entra.azure_rbac,
            admin_group_object_ids=args.entra.admin_group_object_ids or None,
        ),
        "disable_local_accounts": not args.local_accounts,
        "api_server_access_profile": containerservice.ManagedClusterAPIServerAccessProfileArgs(
            authorized_ip_ranges=ranges or None,
            enable_private_cluster=True if args.api_server.private else None,  # never an explicit false
        )
        if ranges or args.api_server.private
        else None,
        "sku": containerservice.ManagedClusterSKUArgs(name=containerservice.ManagedClusterSKUName.BASE, tier=args.tier)
        if args.tier is not None
        else None,
        "auto_upgrade_profile": containerservice.ManagedClusterAutoUpgradeProfileArgs(
            upgrade_channel=args.upgrade.channel, node_os_upgrade_channel=args.upgrade.node_os_channel
        ),
        "oidc_issuer_profile": containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
        "security_profile": containerservice.ManagedClusterSecurityProfileArgs(
            workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(enabled=True),
            image_cleaner=containerservice.ManagedClusterSecurityProfileImageCleanerArgs(
                enabled=args.image_cleaner, interval_hours=IMAGE_CLEANER_INTERVAL_HOURS if args.image_cleaner else None
            ),
            defender=containerservice.ManagedClusterSecurityProfileDefenderArgs(
                log_analytics_workspace_resource_id=args.defender.log_analytics_workspace_id,
                security_monitoring=containerservice.ManagedClusterSecurityProfileDefenderSecurityMonitoringArgs(
                    enabled=True
                ),
            )
            if args.defender is not None
            else None,
        ),
        "addon_profiles": {
            "azurepolicy": containerservice.ManagedClusterAddonProfileArgs(enabled=args.azure_policy),
            **key_vault_add_on(args.key_vault_secrets_provider),
        },
        # The add-on (KAITO run by AKS) needs only this switch and the OIDC issuer above; since
        # its GA, AKS keeps its node provisioner and identity in the control plane.
        "ai_toolchain_operator_profile": containerservice.ManagedClusterAIToolchainOperatorProfileArgs(enabled=True)
        if args.ai_toolchain_operator
        else None,
        "azure_monitor_profile": containerservice.ManagedClusterAzureMonitorProfileArgs(
            metrics=containerservice.ManagedClusterAzureMonitorProfileMetricsArgs(enabled=True)
        )
        if args.managed_prometheus
        else None,
        "storage_profile": containerservice.ManagedClusterStorageProfileArgs(
            blob_csi_driver=containerservice.ManagedClusterStorageProfileBlobCSIDriverArgs(enabled=True)
        )
        if args.blob_csi_driver
        else None,
        "workload_auto_scaler_profile": containerservice.ManagedClusterWorkloadAutoScalerProfileArgs(
            keda=containerservice.ManagedClusterWorkloadAutoScalerProfileKedaArgs(enabled=True)
        )
        if args.keda
        else None,
        "network_profile": containerservice.ContainerServiceNetworkProfileArgs(
            network_plugin=containerservice.NetworkPlugin.AZURE,
            network_plugin_mode=containerservice.NetworkPluginMode.OVERLAY,
            network_dataplane=containerservice.NetworkDataplane.CILIUM if cilium else None,
            network_policy=containerservice.NetworkPolicy.CILIUM if cilium else None,
        ),
        # Only the system pool lives inline; GPU pools are AgentPool resources of their own
        # (adding pools through the cluster object is refused by the AKS API).
        "agent_pool_profiles": [
            containerservice.ManagedClusterAgentPoolProfileArgs(
                name=SYSTEM_POOL,
                mode=containerservice.AgentPoolMode.SYSTEM,
                vm_size=args.system_pool.vm_size,
                count=args.system_pool.count,
                os_type=containerservice.OSType.LINUX,
                os_sku=containerservice.OSSKU.UBUNTU,
                type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
                availability_zones=list(args.system_pool.zones) or None,
                upgrade_settings=containerservice.AgentPoolUpgradeSettingsArgs(max_surge=args.system_pool.max_surge),
                vnet_subnet_id=subnet_id,
            )
        ],
        "tags": args.tags,
    }


class AksCluster(pulumi.ComponentResource):
    """A resource group and AKS cluster (system-assigned identity, Azure CNI overlay with Cilium,
    OIDC issuer and workload identity on, Entra ID with Azure RBAC and no local accounts,
    automatic patch and node image upgrades in a maintenance window, Image Cleaner and Azure
    Policy, a system pool; GPU pools are GpuNodePools of their own), or an existing cluster
    read-only. The deployer (or `entra.admins`) is made cluster admin, and the Kubernetes provider
    starts once that grant works. In Python, `provider` is the explicit Kubernetes provider every
    in-cluster resource uses, and carries the cluster's credentials to the waits too; other
    languages make a kubernetes Provider from its `kubeconfig` output (kubelogin on PATH)."""

    cluster_name: pulumi.Output[str]
    """The cluster's name."""
    resource_group_name: pulumi.Output[str]
    """The cluster's resource group."""
    node_resource_group: pulumi.Output[str]
    """The resource group AKS keeps the cluster's nodes in (MC_...)."""
    kubeconfig: pulumi.Output[str]
    """A user kubeconfig for the cluster (secret): it signs in through Entra ID with kubelogin
    (`kubelogin_mode`), which must be on PATH where it is used."""
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
    api_server_endpoint: pulumi.Output[str]
    """https://<API server FQDN>:443, as nodes reach it (the private FQDN of a private cluster)."""
    kubelet_identity_client_id: pulumi.Output[str]
    """Client id of the identity AKS gives the nodes' kubelets."""
    kubelet_identity_resource_id: pulumi.Output[str]
    """Resource id of that identity."""
    kubelet_identity_object_id: pulumi.Output[str]
    """Object (principal) id of that identity, which role assignments name."""
    network_plugin: pulumi.Output[str]
    """The cluster's network plugin as Azure reports it (azure)."""
    network_plugin_mode: pulumi.Output[str]
    """overlay, or empty."""
    network_policy: pulumi.Output[str]
    """cilium, azure, calico, or empty for none."""
    network_dataplane: pulumi.Output[str]
    """cilium or azure."""
    node_subnet_id: pulumi.Output[str]
    """The subnet the system pool's nodes are in, as Azure reports it; empty: AKS's managed VNet."""
    vnet_guid: pulumi.Output[str]
    """The resource GUID of the VNet of `node_subnet_id` (Azure CNI overlay nodes carry it); empty
    without `node_subnet`."""

    provider: ClusterProvider
    capacity: Capacity
    """A created cluster's system pool and AKS's own pods, for the capacity budget (`deploy_models`)."""
    access_granted: AccessGranted | None
    """The step that holds the provider and the waits until the cluster admins' grants work
    (None: no grant is made)."""

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args("AksCluster", name, AksClusterArgs, args, aks_cluster_problems)
        args = checked
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        production = is_production(pulumi.get_stack(), bool(opts is not None and opts.protect))
        for warning in aks_cluster_warnings(args, production):
            pulumi.log.warn(warning.under("args").text(), resource=self)
        child = child_options(self, opts)
        self.capacity = cluster_capacity(
            args.system_pool, args.kubernetes_version, args.managed_prometheus, args.existing
        )
        grants: list[pulumi.Resource] = []
        principals: pulumi.Output[list[str]] = pulumi.Output.from_input([])
        if not args.existing:
            group, cluster, subnet_id, vnet_guid = self._create(name, args, child)
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
            network = cluster.network_profile
            self.vnet_guid = pulumi.Output.from_input(vnet_guid or "")
            self._read_nodes(cluster.fqdn, cluster.private_fqdn, cluster.identity_profile, network)
            self.node_subnet_id = pulumi.Output.all(cluster.agent_pool_profiles, subnet_id).apply(
                lambda a: self._expect_subnet(_system_subnet(a[0]), a[1])
            )
            self._maintenance(name, args.upgrade, group, cluster, child)
            self._check_system_pool(args.system_pool, group, cluster)
            # A grant follows whoever runs `up`: protecting it (as a protected cluster's children
            # are) would stop the next deployer.
            assignments, principals = cluster_admin_assignments(
                name, args.entra, cluster.id, pulumi.ResourceOptions.merge(child, _UNPROTECTED)
            )
            grants = list(assignments)
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
            network = found.network_profile
            self.vnet_guid = pulumi.Output.from_input("")
            self._read_nodes(found.fqdn, found.private_fqdn, found.identity_profile, network)
            self.node_subnet_id = found.agent_pool_profiles.apply(_system_subnet)
        self.kubernetes_version = running.apply(lambda v: v or "")
        self.oidc_issuer_url = issuer.apply(lambda p: (p.issuer_url if p else None) or "")
        self.ai_toolchain_operator = add_on.apply(lambda p: bool(p and p.enabled))
        if args.existing:
            expected = args.ai_toolchain_operator
            self.ai_toolchain_operator = self.ai_toolchain_operator.apply(lambda on: self._expect_add_on(on, expected))
        if args.existing or args.network_policy != "none":
            network.apply(self._expect_policy_engine)

        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster_name,
            format="exec",  # kubelogin's exec plugin (AKS's `azure` auth-provider format is gone from client-go)
            opts=pulumi.InvokeOptions(parent=self),
        )
        mode = args.kubelogin_mode
        self.kubeconfig = pulumi.Output.secret(
            credentials.kubeconfigs.apply(
                lambda ks: self._with_kubelogin(convert_kubeconfig(user_kubeconfig(name, ks), mode))
            )
        )
        self.access_granted = None
        if grants:
            # Depends on the grants, never reads them: the provider's kubeconfig stays known at preview.
            self.access_granted = AccessGranted(
                f"{name}/access-granted",
                ClusterAccess(kubeconfig=self.kubeconfig),
                principals,
                opts=pulumi.ResourceOptions.merge(child_options(self, opts, depends_on=grants), _UNPROTECTED),
            )
        after = (self.access_granted,) if self.access_granted is not None else ()
        self.provider = ClusterProvider(
            name,
            ClusterAccess(kubeconfig=self.kubeconfig, after=after),
            opts=child_options(self, opts, depends_on=list(after)),
        )
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
                "apiServerEndpoint": self.api_server_endpoint,
                "kubeletIdentityClientId": self.kubelet_identity_client_id,
                "kubeletIdentityResourceId": self.kubelet_identity_resource_id,
                "kubeletIdentityObjectId": self.kubelet_identity_object_id,
                "networkPlugin": self.network_plugin,
                "networkPluginMode": self.network_plugin_mode,
                "networkPolicy": self.network_policy,
                "networkDataplane": self.network_dataplane,
                "nodeSubnetId": self.node_subnet_id,
                "vnetGuid": self.vnet_guid,
            }
        )

    def _create(
        self, name: str, args: AksClusterArgs, child: pulumi.ResourceOptions
    ) -> tuple[
        resources.ResourceGroup, containerservice.ManagedCluster, pulumi.Input[str] | None, pulumi.Input[str] | None
    ]:
        group = resources.ResourceGroup(
            f"{name}-rg",
            resource_group_name=args.resource_group,
            location=args.location,
            tags=args.tags,
            opts=child,
        )
        subnet_id, vnet_guid = self._node_subnet(name, args, group, child)
        check = deployer_permission(name, args.entra, args.local_accounts, args.resource_group, args.name, child)
        cluster = containerservice.ManagedCluster(
            name,
            resource_name_=args.name,
            resource_group_name=group.name,
            **cluster_inputs(args, subnet_id),
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    # GPU pools are AgentPools of their own; after a refresh the cluster reports
                    # them in agentPoolProfiles too, and the next `up` would try to remove them (a
                    # change of the system pool is therefore made on the pool in Azure, not here).
                    # The network policy engine is set when the cluster is created: on an existing
                    # cluster adding it would replace the cluster (pulumi-azure-native marks it
                    # force-new), so its old value is kept and _expect_policy_engine says what to do.
                    # A tier or add-on the stack does not set is left as it is (a hand's).
                    ignore_changes=[
                        "agentPoolProfiles",
                        *NETWORK_ENGINE,
                        *left_alone(args.tier, args.key_vault_secrets_provider),
                    ],
                    # A private API server cannot be turned on or off in place: say so as a replacement.
                    # (The engine replaces on a change at or under a path: turning it on for a cluster
                    # with no access profile adds the whole profile, so then the whole profile counts.)
                    replace_on_changes=[API_SERVER if args.api_server.private else PRIVATE_CLUSTER],
                    depends_on=[check] if check is not None else None,  # the deployer keeps a way in
                ),
            ),
        )
        if subnet_id is not None:
            self._subnet_role(name, cluster, subnet_id, child)
        return group, cluster, subnet_id, vnet_guid

    @staticmethod
    def _maintenance(
        name: str,
        upgrade: UpgradeArgs,
        group: resources.ResourceGroup,
        cluster: containerservice.ManagedCluster,
        child: pulumi.ResourceOptions,
    ) -> list[containerservice.MaintenanceConfiguration]:
        """The weekly window for each automatic upgrade channel in use (AKS's named schedules)."""
        window = upgrade.window
        slot = containerservice.MaintenanceWindowArgs(
            schedule=containerservice.ScheduleArgs(
                weekly=containerservice.WeeklyScheduleArgs(day_of_week=window.day, interval_weeks=1)
            ),
            start_time=window.start,
            duration_hours=window.duration_hours,
            utc_offset=window.utc_offset,
        )
        schedules: list[tuple[str, str]] = []
        if upgrade.channel != "none":
            schedules.append(("auto-upgrade", "aksManagedAutoUpgradeSchedule"))
        if upgrade.node_os_channel in ("NodeImage", "SecurityPatch"):
            schedules.append(("node-os-upgrade", "aksManagedNodeOSUpgradeSchedule"))
        return [
            containerservice.MaintenanceConfiguration(
                f"{name}-{suffix}-window",
                resource_group_name=group.name,
                resource_name_=cluster.name,
                config_name=config,
                maintenance_window=slot,
                opts=child,
            )
            for suffix, config in schedules
        ]

    def _with_kubelogin(self, kubeconfig: str) -> str:
        """The kubeconfig, said to need kubelogin where this program runs without it (the
        Kubernetes provider and the waits run it for every token)."""
        if kubelogin_args(kubeconfig) and shutil.which("kubelogin") is None:
            pulumi.log.warn(
                "the cluster signs in through Entra ID, and its kubeconfig runs kubelogin, which is not on PATH here: "
                "install it (https://azure.github.io/kubelogin/, or `az aks install-cli`) before `pulumi up` reaches "
                "the cluster",
                resource=self,
            )
        return kubeconfig

    def _expect_policy_engine(
        self, profile: containerservice.outputs.ContainerServiceNetworkProfileResponse | None
    ) -> None:
        """An existing cluster (one this program created before it set Cilium, or one adopted)
        without a network policy engine: the NetworkPolicies are not enforced. A warning, not an
        error: the stack keeps working, and only the person who runs it can schedule the
        migration, which reimages every node."""
        engine = (profile.network_policy if profile is not None else None) or "none"
        if engine != "none":
            return
        pulumi.log.warn(
            "the cluster has no network policy engine, so the NetworkPolicies this program creates are not enforced "
            "(every pod can reach the models and RAG engines). AKS can switch an existing cluster to Cilium in place, "
            "but it reimages every node at once (every model restarts): `az aks update -g <group> -n <cluster> "
            "--network-dataplane cilium --network-policy cilium`, then `pulumi refresh` (this program never changes "
            "an existing cluster's engine: that would replace the cluster)",
            resource=self,
        )

    def _node_subnet(
        self, name: str, args: AksClusterArgs, group: resources.ResourceGroup, child: pulumi.ResourceOptions
    ) -> tuple[pulumi.Input[str] | None, pulumi.Input[str] | None]:
        """The nodes' subnet and its VNet's GUID: none (AKS's managed VNet), yours (its VNet
        read from Azure), or a VNet and subnet made in the cluster's resource group."""
        wanted = args.node_subnet
        if wanted is None:
            return None, None
        if wanted.subnet_id is not None:
            parts = pulumi.Output.from_input(wanted.subnet_id).apply(subnet_parts)
            found = network.get_virtual_network_output(
                resource_group_name=parts.apply(lambda p: p[0]),
                virtual_network_name=parts.apply(lambda p: p[1]),
                opts=pulumi.InvokeOptions(parent=self),
            )
            return wanted.subnet_id, found.resource_guid.apply(lambda g: g or "")
        vnet = network.VirtualNetwork(
            f"{name}-vnet",
            virtual_network_name=f"{args.name}-vnet",
            resource_group_name=group.name,
            location=args.location,
            address_space=network.AddressSpaceArgs(address_prefixes=[wanted.address_space]),
            tags=args.tags,
            opts=child,
        )
        subnet = network.Subnet(
            f"{name}-nodes",
            subnet_name="nodes",
            virtual_network_name=vnet.name,
            resource_group_name=group.name,
            address_prefix=wanted.address_prefix,
            opts=child,
        )
        return subnet.id, vnet.resource_guid

    def _subnet_role(
        self,
        name: str,
        cluster: containerservice.ManagedCluster,
        subnet_id: pulumi.Input[str],
        child: pulumi.ResourceOptions,
    ) -> authorization.RoleAssignment:
        """The cluster's own identity on the nodes' subnet: AKS joins load balancers and nodes to it."""
        return authorization.RoleAssignment(
            f"{name}-subnet-{SUBNET_ROLE.lower().replace(' ', '-')}",
            principal_id=cluster.identity.apply(lambda i: (i.principal_id if i else None) or ""),
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            role_definition_id=pulumi.Output.from_input(subnet_id).apply(lambda s: role_definition_id(s, SUBNET_ROLE)),
            scope=subnet_id,
            opts=child,
        )

    def _read_nodes(
        self,
        fqdn: pulumi.Output[str | None],
        private_fqdn: pulumi.Output[str | None],
        identities: pulumi.Output[
            Mapping[str, containerservice.outputs.UserAssignedIdentityManagedClusterResponse] | None
        ],
        profile: pulumi.Output[containerservice.outputs.ContainerServiceNetworkProfileResponse | None],
    ) -> None:
        """What a node joining the cluster must be told, as Azure reports it."""
        self.api_server_endpoint = pulumi.Output.all(private_fqdn, fqdn).apply(
            lambda f: f"https://{f[0] or f[1]}:443" if f[0] or f[1] else ""
        )
        kubelet = identities.apply(lambda p: (p or {}).get(KUBELET_IDENTITY))
        self.kubelet_identity_client_id = kubelet.apply(lambda k: _field(k, "client_id"))
        self.kubelet_identity_resource_id = kubelet.apply(lambda k: _field(k, "resource_id"))
        self.kubelet_identity_object_id = kubelet.apply(lambda k: _field(k, "object_id"))
        self.network_plugin = profile.apply(lambda p: _network_value(p.network_plugin if p else None))
        self.network_plugin_mode = profile.apply(lambda p: _network_value(p.network_plugin_mode if p else None))
        self.network_policy = profile.apply(lambda p: _network_value(p.network_policy if p else None))
        self.network_dataplane = profile.apply(lambda p: _network_value(p.network_dataplane if p else None))

    def _expect_subnet(self, live: str, configured: str | None) -> str:
        """The system pool's subnet as Azure reports it; a node_subnet the cluster was not
        created with is an error (a deployment error: AKS cannot move a pool)."""
        if configured and live.lower() != configured.lower():
            pulumi.log.error(
                f"node_subnet asks for subnet {configured}, but the cluster's system pool is in "
                f"{live or 'the VNet AKS manages'}: a pool's subnet is set when the cluster is created, so this "
                "cluster keeps its own; remove node_subnet (cluster.aks.nodeSubnet), or create a new cluster with it",
                resource=self,
            )
        return live

    def _check_system_pool(
        self, wanted: SystemPoolArgs, group: resources.ResourceGroup, cluster: containerservice.ManagedCluster
    ) -> None:
        """The system pool lives inline in the cluster, whose later edits to it AKS refuses and
        this component ignores (ignore_changes): so compare the live pool with `system_pool` once
        the cluster exists, and fail the deployment on a difference rather than drop it silently.
        (Through the cluster's id: unknown at the preview of a new cluster, so nothing is read
        before it exists.)"""
        live = containerservice.get_agent_pool_output(
            resource_group_name=group.name,
            resource_name=pulumi.Output.all(cluster.id, cluster.name).apply(lambda a: str(a[1])),
            agent_pool_name=SYSTEM_POOL,
            opts=pulumi.InvokeOptions(parent=self),
        )
        live.apply(lambda pool: self._expect_system_pool(pool, wanted))

    def _expect_system_pool(self, live: containerservice.GetAgentPoolResult, wanted: SystemPoolArgs) -> None:
        for problem in system_pool_drift(live, wanted):
            pulumi.log.error(problem, resource=self)

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
