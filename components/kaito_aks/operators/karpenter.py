"""Self-hosted Azure Karpenter, KAITO's node provisioner from 0.11 (`nodeProvisioner: karpenter`;
KAITO 0.12's docs call gpu-provisioner deprecated): KAITO creates a Karpenter NodePool per
Workspace, and Karpenter creates its Azure VMs, which join the cluster as nodes.

Everything the controller needs comes from the cluster (its name, API server, node resource
group, kubelet identity, network), the nodes' subnet and its VNet's GUID, a workload identity
with the narrow built-in roles Karpenter's own install gives it, an SSH public key made for it,
and a kubelet bootstrap token of the program's own, which expires and which `pulumi up` renews:
nothing is read by hand with kubectl or az, as the upstream scripts do
(hack/deploy/configure-values.sh at v1.12.0). Its CRDs come from the karpenter-crd chart, which
Helm upgrades (KarpenterCrds)."""

from __future__ import annotations

import re
from dataclasses import field, replace
from typing import Annotated, Any, NamedTuple

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import network as azure_network

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksCluster, subnet_parts
from kaito_aks.azure.cluster_ref import (
    CLUSTER_ID,
    CLUSTER_ID_FORM,
    AksClusterRefArgs,
    ClusterRef,
    OnCluster,
    cluster_problems,
    cluster_ref,
)
from kaito_aks.azure.ssh_public_key import SshPublicKey
from kaito_aks.azure.workload_identity import RoleGrantArgs, WorkloadIdentity, operator_identity
from kaito_aks.capacity import Capacity, pods_of, with_requests
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.cluster.access import access_for, provider_problems
from kaito_aks.cluster.node_bootstrap import (
    DEFAULT_LIFETIME_DAYS,
    MAX_LIFETIME_DAYS,
    NodeBootstrapToken,
    NodeBootstrapTokenArgs,
)
from kaito_aks.operators.helm import ChartRelease, deep_merge, managed_values, pinned_release, unread_values, value_at
from kaito_aks.operators.karpenter_crds import KarpenterCrds, KarpenterCrdsArgs
from kaito_aks.options import child_options, component_type
from kaito_aks.pod_security import pod_security_labels
from kaito_aks.problems import Key, Problem, raise_if
from kaito_aks.schema import Input, Range, Secret, args_class
from kaito_aks.validation import checked_args
from kaito_aks.waits.nodeclaims_gone import NodeClaimsGone

TYPE = "kaito-aks:index:Karpenter"
FORMER_TYPES: tuple[str, ...] = ()  # new in 0.4.0
DEFAULT_VERSION = "1.12.0"
# Helm waits for the controller, which exits until Azure answers its identity's first sign-in
# (the federated credential and the roles take a minute or two to reach Azure AD).
INSTALL_TIMEOUT_SECONDS = 900
TOKEN_SECRET = "karpenter-bootstrap-token"  # in Karpenter's namespace: what its env reads
BOOTSTRAP_GROUP = "system:bootstrappers:kaito-aks-karpenter"
# Karpenter derives the cluster's id from the first 33 characters of the API server's host name
# (options.go getAKSClusterID at v1.12.0) and panics on a shorter one.
MIN_API_SERVER_HOST = 33
NO_CREDENTIALS = (
    "the wait that keeps Karpenter until the NodeClaims of KAITO's nodes are gone reads the cluster and has no "
    "credentials: deploy through AksCluster.provider (a ClusterProvider), give `kubeconfig`, or set "
    "`wait_for_nodeclaims_on_delete` false"
)
MANAGED_VALUES = {
    ("controller", "env"): "set from the cluster, its subnet, the identity and the bootstrap token",
    ("serviceAccount",): "set for the component's workload identity",
    ("settings", "clusterName"): "set from the cluster (controller.env CLUSTER_NAME)",
    ("settings", "clusterEndpoint"): "set from the cluster (controller.env CLUSTER_ENDPOINT)",
}
NO_SUBNET = (
    "Karpenter must be given the subnet of the cluster's nodes, and this cluster's are in the VNet AKS manages "
    "(its system pool has no subnet of its own): AKS sets a pool's subnet only when it creates the cluster, so "
    "create the cluster with a node subnet (AksClusterArgs.node_subnet; a stack's cluster.aks.nodeSubnet) or use "
    "gpu-provisioner"
)


class KarpenterCannotStart(pulumi.RunError):
    """What the cluster turned out to be at deploy time makes Karpenter unable to start: raised
    before its release is installed (a RunError: Pulumi prints it without a traceback)."""


STATIC_CAPACITY = (
    "KAITO sets each NodePool's replicas (the nodes a Workspace needs), which Karpenter honours only with its "
    "staticCapacity feature gate: keep it on"
)


@args_class
class KubeletIdentityArgs:
    """The identity AKS gives the nodes' kubelets (an `AksCluster`'s `kubelet_identity_client_id`
    and `kubelet_identity_resource_id`): Karpenter puts it on every VM it creates."""

    client_id: Input[str]
    """Its client id."""
    resource_id: Input[str]
    """Its resource id."""


@args_class
class KarpenterNetworkArgs:
    """The cluster's network as its nodes join it, as Azure reports it (an `AksCluster`'s
    `node_subnet_id`, `vnet_guid` and `network_plugin`, `network_plugin_mode`, `network_policy`,
    `network_dataplane`)."""

    subnet_id: Input[str]
    """The subnet the nodes join: the system pool's, of a VNet the program or you made (AKS's
    managed VNet cannot be given). Karpenter's identity gets the subnet role on it."""
    vnet_guid: Input[str]
    """The resource GUID of the subnet's VNet (Azure CNI overlay nodes carry it); empty: read
    from the VNet (azure-native getVirtualNetwork) with the deployer's credentials. Karpenter
    would read it itself at start-up, with its identity, whose role on the subnet alone cannot
    read the VNet, and exit (operator.go:133-137, 301-330 at v1.12.0)."""
    plugin: Input[str]
    """The network plugin (azure)."""
    plugin_mode: Input[str]
    """overlay, or empty."""
    policy: Input[str]
    """The network policy engine (cilium), or empty for none."""
    dataplane: Input[str]
    """The data plane (cilium or azure)."""


@args_class
class KarpenterArgs:
    """The pinned self-hosted Azure Karpenter chart, for one AKS cluster (e.g. an `AksCluster`
    created with a node_subnet)."""

    cluster: AksClusterRefArgs | None = None
    """The AKS cluster (`AksClusterRefArgs.of(cluster)`): its id,
    region (the VMs go there), node resource group (the VMs and their NICs go there, and the
    identity's roles apply there), OIDC issuer (workload identity on), API server endpoint (the
    new nodes reach it), kubelet identity and network (the nodes' subnet)."""
    cluster_id: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's resource id."""
    location: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's region."""
    node_resource_group: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's node resource group."""
    oidc_issuer_url: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. The cluster's OIDC issuer."""
    api_server_endpoint: Input[str] | None = None
    """Deprecated (kept one release): give `cluster`. https://<API server FQDN>:443."""
    kubelet_identity: KubeletIdentityArgs | None = None
    """Deprecated (kept one release): give `cluster`. The kubelet identity of the nodes."""
    network: KarpenterNetworkArgs | None = None
    """Deprecated (kept one release): give `cluster`. The nodes' subnet and the network settings."""
    version: str = DEFAULT_VERSION
    """Chart version: 1.12.0 (KAITO 0.11's and 0.12's pin, and the first whose NodePool CRD allows
    KAITO's karpenter.azure.com/placement-scope)."""
    identity_name: str | None = None
    """Azure name of the managed identity, in the cluster's resource group; default:
    <cluster name>-karpenter (one per cluster)."""
    ssh_public_key: Input[str] | None = None
    """The SSH public key the nodes get (Azure requires one on every Linux VM); default: one made
    for the purpose whose private key was discarded (nobody can log in by SSH)."""
    bootstrap_token_rotation: Annotated[int, Range(0, None, "a count: raise it to rotate")] = 0
    """Raise it to replace the kubelet bootstrap token new nodes join with (Karpenter restarts
    with the new one)."""
    bootstrap_token_lifetime_days: Annotated[int, Range(1, MAX_LIFETIME_DAYS, "days")] | None = DEFAULT_LIFETIME_DAYS
    """How many days the nodes' bootstrap token lives: `pulumi up` replaces it (and restarts
    Karpenter with the new one) once half of that has passed, so bring the stack up at least
    every half-lifetime (a scheduled job), or Karpenter's new nodes cannot join once it lapses.
    None: a token that never expires (warned), which a program deployed before tokens expired
    keeps unreplaced; giving a lifetime later replaces it once."""
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra chart values, deep-merged last; default: none."""
    wait_for_nodeclaims_on_delete: bool = True
    """On `pulumi destroy`, keep Karpenter until the NodeClaims of KAITO's nodes are gone, so their
    VMs are deleted rather than left running."""
    kubeconfig: Secret[Input[str]] | None = None
    """Credentials that wait reads NodeClaims with, and with which the CRDs an earlier install
    left are handed to the karpenter-crd chart (KarpenterCrds; kept secret). Default: those of
    the cluster's provider it is deployed through (a Python program's AksCluster `provider`);
    elsewhere give it, or turn the wait off."""


def karpenter_cluster_args(cluster: AksCluster) -> dict[str, Any]:
    """Deprecated (kept one release): `KarpenterArgs(cluster=cluster, ...)` says the same. The
    KarpenterArgs field that describes the cluster, from an AksCluster's outputs (it must have
    been created with `node_subnet`)."""
    return {"cluster": AksClusterRefArgs.of(cluster)}


FLAT_CLUSTER = (
    "cluster_id",
    "location",
    "node_resource_group",
    "oidc_issuer_url",
    "api_server_endpoint",
    "kubelet_identity",
    "network",
)


class OnAks(NamedTuple):
    """What Karpenter reads of its cluster: its `cluster`'s outputs, each deprecated field given
    over them (without `cluster`, the deprecated fields alone)."""

    cluster_id: pulumi.Input[str]
    location: pulumi.Input[str]
    node_resource_group: pulumi.Input[str]
    oidc_issuer_url: pulumi.Input[str]
    api_server_endpoint: pulumi.Input[str]
    kubelet_identity: KubeletIdentityArgs
    network: KarpenterNetworkArgs

    @classmethod
    def of(cls, args: KarpenterArgs) -> OnAks:
        c = args.cluster or AksClusterRefArgs(
            cluster_id="", name="", resource_group_name="", location="", node_resource_group="", oidc_issuer_url=""
        )
        return cls(
            *OnCluster.of(args),  # (the node resource group: its roles apply there)
            args.api_server_endpoint or _given(c.api_server_endpoint),
            args.kubelet_identity
            or KubeletIdentityArgs(
                client_id=_given(c.kubelet_identity_client_id), resource_id=_given(c.kubelet_identity_resource_id)
            ),
            args.network
            or KarpenterNetworkArgs(
                subnet_id=_given(c.node_subnet_id),
                vnet_guid=_given(c.vnet_guid),
                plugin=_given(c.network_plugin),
                plugin_mode=_given(c.network_plugin_mode),
                policy=_given(c.network_policy),
                dataplane=_given(c.network_dataplane),
            ),
        )


def _given(value: pulumi.Input[str] | None) -> pulumi.Input[str]:
    """A reference's output, or empty where it gives none (Karpenter then refuses to start, saying why)."""
    return value if value is not None else ""


TOKEN_FOREVER = (
    "the bootstrap token Karpenter's nodes join with never expires: whoever holds it can join a node under any name "
    f"until it is rotated; give it a lifetime (e.g. {DEFAULT_LIFETIME_DAYS} days) and `pulumi up` renews it before it "
    "lapses (the token is replaced once; Karpenter restarts with the new one, joined nodes keep their certificates)"
)


def karpenter_problems(args: KarpenterArgs) -> list[Problem]:
    problems: list[Problem] = []
    cluster_id = args.cluster.cluster_id if args.cluster is not None else args.cluster_id
    if isinstance(cluster_id, str) and not CLUSTER_ID.fullmatch(cluster_id):
        problems.append(
            Problem.at("cluster_id", f"must be an AKS cluster's resource id: {CLUSTER_ID_FORM}", "cluster-id")
        )
    chart = catalog.karpenter_charts().get(args.version)
    if chart is None:
        supported = ", ".join(catalog.karpenter_charts())
        problems.append(Problem.at("version", f"Karpenter {args.version} is not supported; use {supported}", "version"))
    if chart is not None:
        problems += unread_values(args.values, chart.value_keys, f"Karpenter {args.version}")
    problems += managed_values(args.values, MANAGED_VALUES)
    gate = ("settings", "featureGates", "staticCapacity")
    if value_at(args.values, gate) is False:
        problems.append(Problem(("values", *map(Key, gate)), STATIC_CAPACITY, "static-capacity"))
    if args.bootstrap_token_lifetime_days is None:
        problems.append(Problem.at("bootstrap_token_lifetime_days", TOKEN_FOREVER, "bootstrap-token-forever"))
    return problems


def karpenter_env(
    on: OnAks,
    cluster: pulumi.Output[ClusterRef],
    endpoint: pulumi.Input[str],
    ssh_public_key: pulumi.Input[str],
) -> list[dict[str, Any]]:
    """The controller's environment (what Karpenter's karpenter-values-template.yaml sets for a
    self-hosted install), each value from the cluster, its subnet or this component. The
    bootstrap token comes from a Secret, never through the release's values."""
    network = on.network
    plain: dict[str, pulumi.Input[str]] = {
        "CLUSTER_NAME": cluster.apply(lambda c: c.name),
        "CLUSTER_ENDPOINT": endpoint,
        "SSH_PUBLIC_KEY": ssh_public_key,
        "NETWORK_PLUGIN": network.plugin,
        "NETWORK_PLUGIN_MODE": network.plugin_mode,
        "NETWORK_POLICY": network.policy,
        "NETWORK_DATAPLANE": network.dataplane,
        "VNET_SUBNET_ID": network.subnet_id,
        "VNET_GUID": network.vnet_guid,
        "NODE_IDENTITIES": on.kubelet_identity.resource_id,
        "AZURE_SUBSCRIPTION_ID": cluster.apply(lambda c: c.subscription),
        "LOCATION": on.location,
        "KUBELET_IDENTITY_CLIENT_ID": on.kubelet_identity.client_id,
        "AZURE_NODE_RESOURCE_GROUP": on.node_resource_group,
        "ARM_RESOURCE_GROUP": cluster.apply(lambda c: c.resource_group),
        # self-hosted: community images, VMs created directly (not AKS's machine API), and no
        # log line per Azure call
        "ENABLE_AZURE_SDK_LOGGING": "false",
        "USE_SIG": "false",
        "PROVISION_MODE": "aksscriptless",
    }
    token = {
        "name": "KUBELET_BOOTSTRAP_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": TOKEN_SECRET, "key": "token"}},
    }
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in plain.items()]
    return [*env[:2], token, *env[2:]]


def karpenter_values(
    args: KarpenterArgs,
    on: OnAks,
    cluster: pulumi.Output[ClusterRef],
    *,
    endpoint: pulumi.Input[str],
    client_id: pulumi.Input[str],
    ssh_public_key: pulumi.Input[str],
    token_id: pulumi.Input[str],
) -> dict[str, Any]:
    """The chart's values: the controller's environment and its requests and limits (1 CPU and
    1 GiB, as Karpenter's README and KAITO's install set them; the chart's default is none, a
    BestEffort pod evicted first), its service account signing in as the workload identity,
    static capacity on (KAITO sets NodePool replicas), and a pod annotation of the token's id, so
    a rotated token restarts the controller."""
    source = catalog.karpenter_source()
    values: dict[str, Any] = {
        "serviceAccount": {
            "name": source.service_account,
            "annotations": {"azure.workload.identity/client-id": client_id},
        },
        "podLabels": {"azure.workload.identity/use": "true"},
        "podAnnotations": {"kaito-aks/bootstrap-token-id": token_id},
        "settings": {"featureGates": {"staticCapacity": True}},
        "controller": {
            "env": karpenter_env(on, cluster, endpoint, ssh_public_key),
            "resources": source.controller_resources,
        },
    }
    return deep_merge(values, args.values)


def _expect_subnet(subnet_id: str) -> str:
    if not subnet_id:
        raise KarpenterCannotStart(NO_SUBNET)
    return subnet_id


def vnet_guid_of(subnet_id: str, parent: pulumi.Resource) -> pulumi.Output[str]:
    """The resource GUID of a subnet's VNet, read from Azure with the deployer's credentials."""
    group, vnet = subnet_parts(subnet_id)
    found = azure_network.get_virtual_network_output(
        resource_group_name=group, virtual_network_name=vnet, opts=pulumi.InvokeOptions(parent=parent)
    )
    return found.resource_guid.apply(lambda g: _expect_guid(g or "", subnet_id))


def _expect_guid(guid: str, subnet_id: str) -> str:
    if not guid:
        raise KarpenterCannotStart(
            f"the VNet of {subnet_id} reports no resource GUID, which Karpenter needs (VNET_GUID): give it "
            "(KarpenterNetworkArgs.vnet_guid; az network vnet show --query resourceGuid)"
        )
    return guid


def token_copy(
    name: str, namespace: k8s.core.v1.Namespace, token: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.Secret:
    """The bootstrap token where Karpenter's KUBELET_BOOTSTRAP_TOKEN reads it (a Secret of its
    namespace): a rotated token updates it in place, and the pod annotation of the token's id
    restarts the controller to read it."""
    return k8s.core.v1.Secret(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=TOKEN_SECRET, namespace=namespace.metadata.name),
        string_data={"token": token},
        opts=opts,
    )


def node_resource_group_id(cluster: ClusterRef, node_resource_group: str) -> str:
    """The node resource group's id: AKS makes it in the cluster's subscription."""
    return f"/subscriptions/{cluster.subscription}/resourceGroups/{node_resource_group}"


def karpenter_capacity(args: KarpenterArgs) -> Capacity:
    """Its two controller replicas (never two on one node), at the requests the release sets (the
    catalog's controllerResources, or the values' own), for the capacity budget."""
    kinds = pod_requests().pods.karpenter.get(args.version)
    if kinds is None:
        return Capacity()
    pods = pods_of(kinds, note=f"Karpenter {args.version}")
    values = deep_merge({"controller": {"resources": catalog.karpenter_source().controller_resources}}, args.values)
    return Capacity(pods=with_requests(pods, values, "controller", "resources"))


class Karpenter(pulumi.ComponentResource):
    """Karpenter's Helm release (namespace karpenter, service account karpenter-sa, as KAITO
    installs it), after its WorkloadIdentity (managed identity, federated credential; Virtual
    Machine Contributor, Network Contributor and Managed Identity Operator on the node resource
    group, Network Contributor on the nodes' subnet: no Contributor or Owner), a NodeBootstrapToken
    (copied into a Secret of Karpenter's namespace), the nodes' SSH key and its CRDs from the
    karpenter-crd chart (KarpenterCrds; the karpenter chart's own crds/ are skipped). The release waits for
    all of them, so the controller signs in and can make nodes on first start; KAITO in Karpenter
    mode must come after this component (it exits if its default AKSNodeClass is not Ready within
    120 s), and so must the Workspaces, so that `pulumi destroy` removes them, and the NodeClaims
    of their nodes, while Karpenter still runs."""

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
    ssh_public_key: pulumi.Output[str]
    """The SSH public key of the nodes."""
    bootstrap_token_id: pulumi.Output[str]
    """The public id of the nodes' bootstrap token (kube-system/bootstrap-token-<id>)."""
    bootstrap_token_expires: pulumi.Output[str]
    """When the nodes' bootstrap token lapses (RFC 3339): `pulumi up` renews it half its
    lifetime before."""

    identity: WorkloadIdentity
    bootstrap: NodeBootstrapToken
    crds: KarpenterCrds
    release: k8s.helm.v3.Release
    capacity: Capacity
    """What it runs on the non-GPU nodes, for the capacity budget (`deploy_models`' `capacity`)."""

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        also = [*cluster_problems(args, FLAT_CLUSTER), *provider_problems(opts)]
        checked = checked_args("Karpenter", name, KarpenterArgs, args, karpenter_problems, also=also)
        self.capacity = karpenter_capacity(checked)
        access = access_for(checked.kubeconfig, None, opts)
        if access is None and checked.wait_for_nodeclaims_on_delete:
            raise_if("Karpenter", name, [Problem.at("kubeconfig", NO_CREDENTIALS, "no-credentials")])
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        source = catalog.karpenter_chart_source()
        who = catalog.karpenter_source()
        self._version = checked.version
        # the subnet as the cluster reports it: none stops Karpenter before anything is granted or installed
        on = OnAks.of(checked)
        subnet = pulumi.Output.from_input(on.network.subnet_id).apply(_expect_subnet)
        # its VNet's GUID as given, else read from the VNet here (Karpenter cannot read it)
        guid = pulumi.Output.all(subnet, on.network.vnet_guid).apply(
            lambda a: str(a[1]) if a[1] else vnet_guid_of(str(a[0]), self)
        )
        on = on._replace(network=replace(on.network, subnet_id=subnet, vnet_guid=guid))
        cluster = pulumi.Output.from_input(on.cluster_id).apply(cluster_ref)
        node_group = pulumi.Output.all(on.cluster_id, on.node_resource_group).apply(
            lambda a: node_resource_group_id(cluster_ref(a[0]), a[1])
        )
        grants = [RoleGrantArgs(role=role, scope=node_group) for role in who.roles]
        grants.append(RoleGrantArgs(role=who.subnet_role, scope=on.network.subnet_id))
        self.identity = operator_identity(
            self,
            name,
            cluster,
            issuer_url=on.oidc_issuer_url,
            location=on.location,
            service_account=(source.namespace, who.service_account),
            identity_name=checked.identity_name,
            suffix="karpenter",
            roles=grants,
            opts=opts,
        )
        self.bootstrap = NodeBootstrapToken(
            f"{name}-bootstrap",
            NodeBootstrapTokenArgs(
                group=BOOTSTRAP_GROUP,
                rotation=checked.bootstrap_token_rotation,
                lifetime_days=checked.bootstrap_token_lifetime_days,
            ),
            opts=child_options(self, opts),
        )
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=source.namespace,
                labels={
                    "app.kubernetes.io/managed-by": "pulumi",
                    **pod_security_labels("baseline"),
                },  # (no host network)
            ),
            opts=child_options(self, opts),
        )
        token = token_copy(f"{name}-bootstrap-token", namespace, self.bootstrap.token, child_options(self, opts))
        ssh_key = checked.ssh_public_key
        if ssh_key is None:
            ssh_key = SshPublicKey(f"{name}-ssh-key", opts=child_options(self, opts)).public_key_openssh
        values = karpenter_values(
            checked,
            on,
            cluster,
            endpoint=pulumi.Output.from_input(on.api_server_endpoint).apply(self._expect_endpoint),
            client_id=self.identity.client_id,
            ssh_public_key=ssh_key,
            token_id=self.bootstrap.token_id,
        )
        self.crds = KarpenterCrds(
            f"{name}-crds",
            KarpenterCrdsArgs(version=checked.version, kubeconfig=checked.kubeconfig),
            opts=child_options(self, opts, depends_on=[namespace]),
        )
        self.release = pinned_release(
            name,
            ChartRelease.of(source, checked.version, values),
            INSTALL_TIMEOUT_SECONDS,
            child_options(self, opts, depends_on=[self.identity, self.bootstrap, namespace, token, self.crds]),
            skip_crds=True,  # the karpenter-crd chart's (above), which Helm upgrades
        )
        self.nodeclaims_gone: NodeClaimsGone | None = None
        if access is not None and checked.wait_for_nodeclaims_on_delete:
            # Deleted after the Workspaces that depend on this component, before the release.
            self.nodeclaims_gone = NodeClaimsGone(
                f"{name}/nodeclaims-gone",
                access,
                opts=child_options(self, opts, depends_on=[self.release]),
                karpenter=True,
            )
        self.namespace = self.release.status.namespace
        self.chart_version = self.release.status.version
        self.client_id = self.identity.client_id
        self.principal_id = self.identity.principal_id
        self.identity_name = self.identity.identity_name
        self.ssh_public_key = pulumi.Output.from_input(ssh_key)
        self.bootstrap_token_id = self.bootstrap.token_id
        self.bootstrap_token_expires = self.bootstrap.expires
        self.register_outputs(
            {
                "namespace": self.namespace,
                "chartVersion": self.chart_version,
                "clientId": self.client_id,
                "principalId": self.principal_id,
                "identityName": self.identity_name,
                "sshPublicKey": self.ssh_public_key,
                "bootstrapTokenId": self.bootstrap_token_id,
                "bootstrapTokenExpires": self.bootstrap_token_expires,
            }
        )

    def _expect_endpoint(self, endpoint: str) -> str:
        """The API server endpoint, or an error that says what Karpenter would do with it (the
        cluster's FQDN is known only at deploy time)."""
        host = re.sub(r"^https://|:\d+$", "", endpoint)
        if len(host) < MIN_API_SERVER_HOST:
            raise KarpenterCannotStart(
                f"Karpenter {self._version}: the API server's host name {host!r} is shorter than "
                f"{MIN_API_SERVER_HOST} characters, which Karpenter cannot start with (it takes the cluster's id from "
                "the name's first 33 characters): give the cluster a longer name (its DNS prefix)"
            )
        return endpoint
