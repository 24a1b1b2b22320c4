"""Phi-4-mini on a new AKS cluster with no GPU pools: KAITO creates an A100 node for it
through gpu-provisioner, which signs in to Azure as a workload identity."""

import pulumi

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    GpuProvisioner,
    GpuProvisionerArgs,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
)

cluster = AksCluster("cluster", AksClusterArgs(resource_group="rg-kaito", name="kaito", location="eastus2"))
on_cluster = pulumi.ResourceOptions(provider=cluster.provider)
provisioner = GpuProvisioner(
    "gpu-provisioner",
    GpuProvisionerArgs(
        cluster_id=cluster.cluster_id,  # its agent pools' role, and its subscription and group
        location=cluster.location,
        node_resource_group=cluster.node_resource_group,
        oidc_issuer_url=cluster.oidc_issuer_url,  # the federated credential trusts the cluster's tokens
        version="0.4.3",
    ),
    opts=on_cluster,
)
kaito = KaitoOperator(
    "kaito",
    KaitoOperatorArgs(version="0.12.0", node_provisioning="auto", cluster_name=cluster.cluster_name),
    opts=on_cluster,
)
phi = KaitoModel(
    "phi",
    KaitoModelArgs(
        kaito_version="0.12.0",
        model="phi-4-mini-instruct",
        node_provisioning="auto",
        instance_type="Standard_NC24ads_A100_v4",  # checked against KAITO 0.12's SKU table and sizing
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[kaito, provisioner]),
)
pulumi.export("endpoint", phi.endpoint)
pulumi.export("identity", provisioner.identity_name)
