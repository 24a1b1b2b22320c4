"""An AKS cluster as one argument of the components that act on it (its node pools,
gpu-provisioner, Karpenter, ModelStreaming), as pulumi-eks's node groups take their cluster: its outputs, in one
reference, instead of a field per output; and the cluster's resource id read apart."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

import pulumi

from kaito_aks.parsed import is_mapping
from kaito_aks.problems import Problem, camel
from kaito_aks.schema import Input, args_class

if TYPE_CHECKING:
    from kaito_aks.azure.aks_cluster import AksCluster

CLUSTER_ID = re.compile(
    r"/subscriptions/(?P<subscription>[^/]+)/resourceGroups/(?P<resource_group>[^/]+)"
    r"/providers/Microsoft\.ContainerService/managedClusters/(?P<name>[^/]+)",
    re.IGNORECASE,
)
CLUSTER_ID_FORM = (
    "/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ContainerService/managedClusters/<name>"
)


class ClusterRef(NamedTuple):
    subscription: str
    resource_group: str
    name: str


def cluster_ref(cluster_id: str) -> ClusterRef:
    """Subscription, resource group and name of an AKS cluster from its resource id."""
    match = CLUSTER_ID.fullmatch(cluster_id)
    if match is None:
        raise ValueError(f"{cluster_id!r} is not an AKS cluster resource id")
    return ClusterRef(match["subscription"], match["resource_group"], match["name"])


@args_class
class AksClusterRefArgs:
    """An AKS cluster by its outputs (`AksClusterRefArgs.of(cluster)` for an `AksCluster`): what its
    pools, gpu-provisioner, Karpenter and ModelStreaming read of it. Outputs of a cluster another program manages
    are given the same way."""

    cluster_id: Input[str]
    """The cluster's resource id: its subscription, resource group and name."""
    name: Input[str]
    """The cluster's name."""
    resource_group_name: Input[str]
    """Its resource group."""
    location: Input[str]
    """Its Azure region."""
    node_resource_group: Input[str]
    """Its node resource group (MC_...)."""
    oidc_issuer_url: Input[str]
    """Its OIDC issuer (workload identity)."""
    api_server_endpoint: Input[str] | None = None
    """https://<API server FQDN>:443 (Karpenter's nodes reach it)."""
    kubelet_identity_client_id: Input[str] | None = None
    """The client id of its nodes' kubelet identity (Karpenter, ModelStreaming)."""
    kubelet_identity_resource_id: Input[str] | None = None
    """The resource id of its nodes' kubelet identity (Karpenter, ModelStreaming)."""
    kubelet_identity_object_id: Input[str] | None = None
    """The object id of its nodes' kubelet identity (ModelStreaming's blob role)."""
    node_subnet_id: Input[str] | None = None
    """The subnet of its nodes, where it has one of its own (Karpenter's nodes join it)."""
    vnet_guid: Input[str] | None = None
    """The resource GUID of that subnet's VNet (Karpenter)."""
    network_plugin: Input[str] | None = None
    """Its network plugin (Karpenter)."""
    network_plugin_mode: Input[str] | None = None
    """Its network plugin mode (Karpenter)."""
    network_policy: Input[str] | None = None
    """Its network policy engine (Karpenter)."""
    network_dataplane: Input[str] | None = None
    """Its network data plane (Karpenter)."""

    @classmethod
    def of(cls, cluster: AksCluster) -> AksClusterRefArgs:
        """An `AksCluster`'s outputs, as one reference."""
        return cls(
            cluster_id=cluster.cluster_id,
            name=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name,
            location=cluster.location,
            node_resource_group=cluster.node_resource_group,
            oidc_issuer_url=cluster.oidc_issuer_url,
            api_server_endpoint=cluster.api_server_endpoint,
            kubelet_identity_client_id=cluster.kubelet_identity_client_id,
            kubelet_identity_resource_id=cluster.kubelet_identity_resource_id,
            kubelet_identity_object_id=cluster.kubelet_identity_object_id,
            node_subnet_id=cluster.node_subnet_id,
            vnet_guid=cluster.vnet_guid,
            network_plugin=cluster.network_plugin,
            network_plugin_mode=cluster.network_plugin_mode,
            network_policy=cluster.network_policy,
            network_dataplane=cluster.network_dataplane,
        )


class OnCluster(NamedTuple):
    """What an operator reads of its cluster (gpu-provisioner, Karpenter): its `cluster`'s
    outputs, each deprecated field given over them (without `cluster`, the deprecated fields alone)."""

    cluster_id: pulumi.Input[str]
    location: pulumi.Input[str]
    node_resource_group: pulumi.Input[str]
    oidc_issuer_url: pulumi.Input[str]

    @classmethod
    def of(cls, args: object) -> OnCluster:
        c = getattr(args, "cluster", None)
        return cls(*(getattr(args, f, None) or (getattr(c, f) if c is not None else "") for f in cls._fields))


POOL_CLUSTER = ("cluster_name", "resource_group_name")  # (a pool's deprecated fields for its cluster)


def cluster_problems(args: object, flat: tuple[str, ...]) -> list[Problem]:
    """The cluster a component acts on: `cluster`, or (deprecated) every one of the `flat` fields
    it replaces; refused when made, not by the component's rules (a program may judge the args
    before its cluster exists, and give the cluster when it makes the component)."""

    def given(key: str) -> bool:
        if is_mapping(args):
            return args.get(key, args.get(camel(key))) is not None
        return getattr(args, key, None) is not None

    if given("cluster") or all(given(k) for k in flat):
        return []
    why = "required: the AKS cluster (`AksClusterRefArgs.of(cluster)`)"
    return [Problem.at("cluster", why, "required")]
