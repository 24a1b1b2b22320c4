"""kaito-aks: Pulumi components that serve open LLMs on Kubernetes with KAITO.

    from kaito_aks import AksCluster, GpuNodePool, GpuOperator, GpuProvisioner, KaitoOperator, KaitoModel
    from kaito_aks import deploy_models  # many models with their waits shared

Each component takes a frozen `...Args` dataclass (help(KaitoModelArgs) lists every arg) and
checks it before it registers anything, raising `InvalidArgsError` with every problem at once;
args already judged (`check_model`, wrapped in `Judged`) are taken as they are.
Names are imported on first use, so a process that needs one module (Pulumi's dynamic-provider
process running a wait) does not load the Azure SDK.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

_EXPORTS = {
    "AksCluster": "kaito_aks.azure.aks_cluster",
    "AksClusterArgs": "kaito_aks.azure.aks_cluster",
    "AksClusterRefArgs": "kaito_aks.azure.cluster_ref",
    "SystemPoolArgs": "kaito_aks.azure.system_pool",
    "NodeSubnetArgs": "kaito_aks.azure.aks_cluster",
    "SshPublicKey": "kaito_aks.azure.ssh_public_key",
    "GpuNodePool": "kaito_aks.azure.gpu_node_pool",
    "GpuNodePoolArgs": "kaito_aks.azure.gpu_node_pool",
    "AutoscaleArgs": "kaito_aks.azure.node_pool",
    "CpuNodePool": "kaito_aks.azure.cpu_node_pool",
    "CpuNodePoolArgs": "kaito_aks.azure.cpu_node_pool",
    "ModelStreaming": "kaito_aks.model_streaming",
    "ModelStreamingArgs": "kaito_aks.model_streaming",
    "WeightsStreamingArgs": "kaito_aks.model.spec",
    "WorkloadIdentity": "kaito_aks.azure.workload_identity",
    "WorkloadIdentityArgs": "kaito_aks.azure.workload_identity",
    "RoleGrantArgs": "kaito_aks.azure.workload_identity",
    "GpuProvisioner": "kaito_aks.operators.gpu_provisioner",
    "GpuProvisionerArgs": "kaito_aks.operators.gpu_provisioner",
    "Karpenter": "kaito_aks.operators.karpenter",
    "KarpenterArgs": "kaito_aks.operators.karpenter",
    "karpenter_cluster_args": "kaito_aks.operators.karpenter",
    "KarpenterNetworkArgs": "kaito_aks.operators.karpenter",
    "KarpenterCrds": "kaito_aks.operators.karpenter_crds",
    "KarpenterCrdsArgs": "kaito_aks.operators.karpenter_crds",
    "KubeletIdentityArgs": "kaito_aks.operators.karpenter",
    "NodeBootstrapToken": "kaito_aks.cluster.node_bootstrap",
    "NodeBootstrapTokenArgs": "kaito_aks.cluster.node_bootstrap",
    "KubeconfigCluster": "kaito_aks.cluster.kubeconfig_cluster",
    "KubeconfigClusterArgs": "kaito_aks.cluster.kubeconfig_cluster",
    "ClusterProvider": "kaito_aks.cluster.access",
    "ClusterAccess": "kaito_aks.cluster.access",
    "GpuOperator": "kaito_aks.operators.gpu_operator",
    "GpuOperatorArgs": "kaito_aks.operators.gpu_operator",
    "KaitoOperator": "kaito_aks.operators.kaito_operator",
    "KaitoOperatorArgs": "kaito_aks.operators.kaito_operator",
    "KaitoModel": "kaito_aks.model.component",
    "check_model": "kaito_aks.model.component",
    "Judged": "kaito_aks.validation",
    "KaitoModelArgs": "kaito_aks.model.spec",
    "deploy_models": "kaito_aks.model_group",
    "needs_hf_token": "kaito_aks.model.rules",
    "pool_budget": "kaito_aks.budget",
    "check_together": "kaito_aks.together",
    "Together": "kaito_aks.together",
    "ModelGroup": "kaito_aks.model_group",
    "AdapterArgs": "kaito_aks.model.spec",
    "LabelSelectorArgs": "kaito_aks.model.spec",
    "LabelSelectorRequirementArgs": "kaito_aks.model.spec",
    "TuningArgs": "kaito_aks.model.spec",
    "TuningInputArgs": "kaito_aks.model.spec",
    "TuningOutputArgs": "kaito_aks.model.spec",
    "RagEngineOperator": "kaito_aks.operators.ragengine_operator",
    "RagEngineOperatorArgs": "kaito_aks.operators.ragengine_operator",
    "RagEngine": "kaito_aks.rag.component",
    "RagEngineArgs": "kaito_aks.rag.spec",
    "EmbeddingArgs": "kaito_aks.rag.spec",
    "LocalEmbeddingArgs": "kaito_aks.rag.spec",
    "RemoteEmbeddingArgs": "kaito_aks.rag.spec",
    "InferenceServiceArgs": "kaito_aks.rag.spec",
    "RagComputeArgs": "kaito_aks.rag.spec",
    "StorageArgs": "kaito_aks.rag.spec",
    "VectorDbArgs": "kaito_aks.rag.spec",
    "GuardrailsArgs": "kaito_aks.rag.spec",
    "NodeGroup": "kaito_aks.nodes",
    "AKS_SYSTEM_POOL_LABELS": "kaito_aks.nodes",
    "KaitoReady": "kaito_aks.waits.kaito_ready",
    "KaitoKind": "kaito_aks.waits.kaito_ready",
    "InvalidArgsError": "kaito_aks.problems",
    "Problem": "kaito_aks.problems",
}

# Where the waits' providers lived before 0.2.0. Pulumi pickles a dynamic provider by its
# module path into each wait's state, and reads it back to refresh or delete the wait: these
# names keep stacks deployed by an earlier version working.
_STATE_MODULES = {
    "kaito_aks.gpu_nodes": "kaito_aks.waits.gpu_nodes",
    "kaito_aks.model_ready": "kaito_aks.waits.model_ready",
    "kaito_aks.cluster_wait": "kaito_aks.waits.base",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kaito_aks' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _install_state_modules() -> None:
    for old, new in _STATE_MODULES.items():
        if old not in sys.modules:
            sys.modules[old] = _LazyModule(old, new)  # type: ignore[assignment]


class _LazyModule:
    """A former module path that loads the module living there now on first attribute use."""

    def __init__(self, old: str, new: str) -> None:
        self._old, self._new = old, new

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._new)
        sys.modules[self._old] = module
        return getattr(module, attr)


_install_state_modules()

if TYPE_CHECKING:
    from kaito_aks.azure.aks_cluster import AksCluster, AksClusterArgs, NodeSubnetArgs
    from kaito_aks.azure.cluster_ref import AksClusterRefArgs
    from kaito_aks.azure.cpu_node_pool import CpuNodePool, CpuNodePoolArgs
    from kaito_aks.azure.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
    from kaito_aks.azure.node_pool import AutoscaleArgs
    from kaito_aks.azure.ssh_public_key import SshPublicKey
    from kaito_aks.azure.system_pool import SystemPoolArgs
    from kaito_aks.azure.workload_identity import RoleGrantArgs, WorkloadIdentity, WorkloadIdentityArgs
    from kaito_aks.budget import pool_budget
    from kaito_aks.cluster.access import ClusterAccess, ClusterProvider
    from kaito_aks.cluster.kubeconfig_cluster import KubeconfigCluster, KubeconfigClusterArgs
    from kaito_aks.cluster.node_bootstrap import NodeBootstrapToken, NodeBootstrapTokenArgs
    from kaito_aks.model.component import KaitoModel, check_model
    from kaito_aks.model.rules import needs_hf_token
    from kaito_aks.model.spec import (
        AdapterArgs,
        KaitoModelArgs,
        LabelSelectorArgs,
        LabelSelectorRequirementArgs,
        TuningArgs,
        TuningInputArgs,
        TuningOutputArgs,
        WeightsStreamingArgs,
    )
    from kaito_aks.model_group import ModelGroup, deploy_models
    from kaito_aks.model_streaming import ModelStreaming, ModelStreamingArgs
    from kaito_aks.nodes import AKS_SYSTEM_POOL_LABELS, NodeGroup
    from kaito_aks.operators.gpu_operator import GpuOperator, GpuOperatorArgs
    from kaito_aks.operators.gpu_provisioner import GpuProvisioner, GpuProvisionerArgs
    from kaito_aks.operators.kaito_operator import KaitoOperator, KaitoOperatorArgs
    from kaito_aks.operators.karpenter import (
        Karpenter,
        KarpenterArgs,
        KarpenterNetworkArgs,
        KubeletIdentityArgs,
        karpenter_cluster_args,
    )
    from kaito_aks.operators.karpenter_crds import KarpenterCrds, KarpenterCrdsArgs
    from kaito_aks.operators.ragengine_operator import RagEngineOperator, RagEngineOperatorArgs
    from kaito_aks.problems import InvalidArgsError, Problem
    from kaito_aks.rag.component import RagEngine
    from kaito_aks.rag.spec import (
        EmbeddingArgs,
        GuardrailsArgs,
        InferenceServiceArgs,
        LocalEmbeddingArgs,
        RagComputeArgs,
        RagEngineArgs,
        RemoteEmbeddingArgs,
        StorageArgs,
        VectorDbArgs,
    )
    from kaito_aks.together import Together, check_together
    from kaito_aks.validation import Judged
    from kaito_aks.waits.kaito_ready import KaitoKind, KaitoReady

__all__ = [
    "AKS_SYSTEM_POOL_LABELS",
    "AdapterArgs",
    "AksCluster",
    "AksClusterArgs",
    "AksClusterRefArgs",
    "AutoscaleArgs",
    "ClusterAccess",
    "ClusterProvider",
    "CpuNodePool",
    "CpuNodePoolArgs",
    "EmbeddingArgs",
    "GpuNodePool",
    "GpuNodePoolArgs",
    "GpuOperator",
    "GpuOperatorArgs",
    "GpuProvisioner",
    "GpuProvisionerArgs",
    "GuardrailsArgs",
    "InferenceServiceArgs",
    "InvalidArgsError",
    "Judged",
    "KaitoKind",
    "KaitoModel",
    "KaitoModelArgs",
    "KaitoOperator",
    "KaitoOperatorArgs",
    "KaitoReady",
    "Karpenter",
    "KarpenterArgs",
    "KarpenterCrds",
    "KarpenterCrdsArgs",
    "KarpenterNetworkArgs",
    "KubeconfigCluster",
    "KubeconfigClusterArgs",
    "KubeletIdentityArgs",
    "LabelSelectorArgs",
    "LabelSelectorRequirementArgs",
    "LocalEmbeddingArgs",
    "ModelGroup",
    "ModelStreaming",
    "ModelStreamingArgs",
    "NodeBootstrapToken",
    "NodeBootstrapTokenArgs",
    "NodeGroup",
    "NodeSubnetArgs",
    "Problem",
    "RagComputeArgs",
    "RagEngine",
    "RagEngineArgs",
    "RagEngineOperator",
    "RagEngineOperatorArgs",
    "RemoteEmbeddingArgs",
    "RoleGrantArgs",
    "SshPublicKey",
    "StorageArgs",
    "SystemPoolArgs",
    "Together",
    "TuningArgs",
    "TuningInputArgs",
    "TuningOutputArgs",
    "VectorDbArgs",
    "WeightsStreamingArgs",
    "WorkloadIdentity",
    "WorkloadIdentityArgs",
    "__version__",
    "check_model",
    "check_together",
    "deploy_models",
    "karpenter_cluster_args",
    "needs_hf_token",
    "pool_budget",
]
