"""Phi-4-mini on a new AKS cluster, two replicas behind one endpoint, and a llama.cpp model on a
CPU pool of its own, from the kaito-aks components."""

import pulumi

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    AksClusterRefArgs,
    CpuNodePool,
    CpuNodePoolArgs,
    GpuNodePool,
    GpuNodePoolArgs,
    GpuOperator,
    GpuOperatorArgs,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    LabelSelectorArgs,
)

cluster = AksCluster("cluster", AksClusterArgs(resource_group="rg-kaito", name="kaito", location="eastus2"))
on_aks = AksClusterRefArgs.of(cluster)  # the cluster, as one argument of what acts on it
a100 = GpuNodePool("a100", GpuNodePoolArgs(cluster=on_aks, vm_size="Standard_NC24ads_A100_v4", count=2))
# CPU models run here rather than on the system pool, which AKS wants kept for system pods
cpu = CpuNodePool("cpu", CpuNodePoolArgs(cluster=on_aks, vm_size="Standard_D8s_v5"))
on_cluster = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[a100])
gpu_operator = GpuOperator("gpu-operator", GpuOperatorArgs(node_groups=[a100.node_group]), opts=on_cluster)
kaito = KaitoOperator(
    "kaito",
    KaitoOperatorArgs(
        version="0.8.1",
        gpu_discovery="external",
        node_groups=gpu_operator.node_groups,
        cluster_name=cluster.cluster_name,
    ),
    opts=on_cluster,
)
phi = KaitoModel(
    "phi",
    KaitoModelArgs(
        kaito_version="0.8.1",
        model="phi-4-mini-instruct",
        replicas=2,
        label_selector=LabelSelectorArgs(match_labels={"agentpool": "a100"}),
        # the pools as the GPU Operator leaves them (driver installed): KAITO's sizing and the selector
        # are checked at preview
        node_groups=gpu_operator.node_groups,
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[kaito, gpu_operator, a100]),
)
# KAITO lets a custom image's pods onto GPU nodes; the CPU pool's name (a label AKS sets) keeps
# this one off them (given the GPU pools, the model is refused at preview if it could still land there).
tiny = KaitoModel(
    "tiny",
    KaitoModelArgs(
        kaito_version="0.8.1",
        compute="cpu",
        image="ghcr.io/kaito-project/aikit/llama3.2:1b",
        node_selector={"kubernetes.azure.com/agentpool": cpu.cpu_nodes.name},
        node_groups=gpu_operator.node_groups,
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[kaito, cpu]),
)
pulumi.export("endpoint", phi.endpoint)
pulumi.export("cpuEndpoint", tiny.endpoint)
