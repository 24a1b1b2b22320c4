"""Phi-4-mini on a new AKS cluster with no GPU pools, KAITO 0.12 in Karpenter mode: self-hosted
Azure Karpenter makes its A100 node, with every value it needs from the cluster (created with a
subnet for the nodes), a workload identity with narrow roles, a bootstrap token and an SSH key."""

import pulumi

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    AksClusterRefArgs,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    Karpenter,
    KarpenterArgs,
    NodeSubnetArgs,
)

cluster = AksCluster(
    "cluster",
    AksClusterArgs(
        resource_group="rg-kaito",
        name="kaito-karpenter",
        location="eastus2",
        node_subnet=NodeSubnetArgs(),  # a VNet and subnet for the nodes, made with the cluster
    ),
)
on_cluster = pulumi.ResourceOptions(provider=cluster.provider)
karpenter = Karpenter(
    "karpenter",
    KarpenterArgs(cluster=AksClusterRefArgs.of(cluster)),  # every value from the cluster's outputs
    opts=on_cluster,
)
kaito = KaitoOperator(
    "kaito",
    KaitoOperatorArgs(
        version="0.12.0", node_provisioning="auto", node_provisioner="karpenter", cluster_name=cluster.cluster_name
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[karpenter]),  # KAITO needs Karpenter up
)
phi = KaitoModel(
    "phi",
    KaitoModelArgs(
        kaito_version="0.12.0",
        model="phi-4-mini-instruct",
        node_provisioning="auto",
        node_provisioner="karpenter",
        node_class="azure-linux",  # KAITO's Azure Linux node class (default: Ubuntu)
        instance_type="Standard_NC24ads_A100_v4",
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[kaito, karpenter]),
)
pulumi.export("endpoint", phi.endpoint)
pulumi.export("identity", karpenter.identity_name)
