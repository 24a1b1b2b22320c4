"""Phi-4-mini on a new AKS cluster with no GPU pools: KAITO creates an A100 node for it
through gpu-provisioner, which signs in to Azure as a workload identity."""

import pulumi

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    AksClusterRefArgs,
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
    # the cluster's id (its agent pools' role), region, node resource group and OIDC issuer (the
    # federated credential trusts the cluster's tokens), as one argument
    GpuProvisionerArgs(cluster=AksClusterRefArgs.of(cluster), version="0.4.3"),
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
