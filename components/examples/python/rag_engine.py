"""A RAG engine over phi-4-mini on KAITO 0.12.0: KAITO's RAGEngine operator is a chart of its
own, and the engine takes the model's endpoint (an Output) as its LLM."""

import pulumi

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    AksClusterRefArgs,
    GpuNodePool,
    GpuNodePoolArgs,
    GpuOperator,
    GpuOperatorArgs,
    InferenceServiceArgs,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    LabelSelectorArgs,
    RagEngine,
    RagEngineArgs,
    RagEngineOperator,
    RagEngineOperatorArgs,
    StorageArgs,
)

cluster = AksCluster("cluster", AksClusterArgs(resource_group="rg-kaito", name="kaito", location="eastus2"))
a10 = GpuNodePool(
    "a10",
    GpuNodePoolArgs(cluster=AksClusterRefArgs.of(cluster), vm_size="Standard_NV36ads_A10_v5", count=1),
)
on_cluster = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[a10])
gpu_operator = GpuOperator("gpu-operator", GpuOperatorArgs(node_groups=[a10.node_group]), opts=on_cluster)
kaito = KaitoOperator(
    "kaito",
    KaitoOperatorArgs(
        version="0.12.0",
        gpu_discovery="external",
        node_groups=gpu_operator.node_groups,
        cluster_name=cluster.cluster_name,
    ),
    opts=on_cluster,
)
phi = KaitoModel(
    "phi",
    KaitoModelArgs(
        kaito_version="0.12.0",
        model="phi-4-mini-instruct",
        config={"vllm": {"max-model-len": 16384}},  # the engine's context window below
        label_selector=LabelSelectorArgs(match_labels={"agentpool": "a10"}),
        node_groups=gpu_operator.node_groups,
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[kaito, gpu_operator, a10]),
)
rag_operator = RagEngineOperator(
    "ragengine",
    RagEngineOperatorArgs(version="0.12.0"),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[kaito]),
)
docs = RagEngine(
    "docs",
    RagEngineArgs(
        kaito_version="0.12.0",  # no compute: on 0.11+ the engine runs on any node (0.5 CPU)
        inference_service=InferenceServiceArgs(url=phi.endpoint, context_window_size=16384),
        storage=StorageArgs(persistent_volume_claim="rag-vectors"),  # default: in memory
    ),
    # the endpoint makes it follow phi's Service; depending on phi starts it once phi serves
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[rag_operator, phi]),
)
pulumi.export("rag", docs.endpoint)  # POST /index, POST /v1/chat/completions, POST /retrieve
