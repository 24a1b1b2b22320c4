"""Phi-4-mini on an AKS cluster whose KAITO the AKS add-on runs: no KAITO chart, and the model
waits until AKS's KAITO serves (it rolls out after the cluster exists)."""

import pulumi

from kaito_aks import AksCluster, AksClusterArgs, KaitoKind, KaitoModel, KaitoModelArgs, KaitoReady

cluster = AksCluster(
    "cluster",
    AksClusterArgs(
        resource_group="rg-kaito",
        name="kaito",
        location="eastus2",
        kubernetes_version="1.34",  # the add-on's KAITO follows the minor: 1.34 runs 0.6.0
        ai_toolchain_operator=True,
    ),
)
ready = KaitoReady(
    "kaito-ready",
    cluster.provider.access,
    [KaitoKind.of("kaito.sh/v1beta1", "Workspace")],
    require_webhook=True,  # the add-on runs KAITO's fail-closed webhook
    add_on_release="0.6.0",  # fails at once if the cluster's minor runs another release
    kubernetes_version=cluster.kubernetes_version,
)
phi = KaitoModel(
    "phi",
    KaitoModelArgs(
        kaito_version="0.6.0",
        model="phi-4-mini-instruct",
        node_provisioning="auto",  # the add-on's KAITO creates the node
        instance_type="Standard_NV36ads_A10_v5",
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[ready]),
)
pulumi.export("endpoint", phi.endpoint)
