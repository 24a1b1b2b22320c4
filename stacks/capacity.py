"""The non-GPU pools' capacity budget of a stack (kaito_aks.capacity at config paths): what every
component the stack installs, every routed model's endpoint picker, every CPU model and RAG
engine and AKS's own pods request, placed on the system pool and the CPU pools, against what AKS
leaves of their nodes. It applies to a cluster the stack creates (its pools are known);
`validate` and `render` print it."""

from __future__ import annotations

from kaito_aks.azure.cpu_node_pool import cpu_pool_capacity
from kaito_aks.azure.system_pool import cluster_capacity
from kaito_aks.capacity import Capacity
from kaito_aks.capacity.budget import Budget, budget_lines, capacity_budget
from kaito_aks.model.capacity import model_capacity
from kaito_aks.operators.gpu_operator import gpu_operator_capacity
from kaito_aks.operators.gpu_provisioner import gpu_provisioner_capacity
from kaito_aks.operators.kaito_operator import kaito_operator_capacity
from kaito_aks.operators.karpenter import karpenter_capacity
from kaito_aks.operators.ragengine_operator import ragengine_operator_capacity
from kaito_aks.problems import Problem
from kaito_aks.rag.rules import rag_engine_capacity
from kaito_aks.serving.gateway import inference_gateway_capacity
from kaito_aks.serving.keda import keda_autoscaling_capacity
from stacks.config import StackConfig

CPU_POOL_HINT = (
    "a cpuNodePools entry without taints, where the endpoint pickers and the operators may run too (they carry no "
    "node selector)"
)


def parts(cfg: StackConfig) -> list[Capacity]:
    """What each piece of the stack adds to the non-GPU nodes, said at its config path; none when
    the stack does not create the cluster (its pools are not known)."""
    aks = cfg.aks_cluster
    if aks is None or aks.existing:
        return []
    version = aks.kubernetes_version
    found = [
        cluster_capacity(aks.system_pool, version, aks.managed_prometheus).at("cluster", "aks"),
        *(cpu_pool_capacity(p.args, p.args.name or "", version).at(*p.placed.at) for p in cfg.cpu_pools),
    ]
    if cfg.kaito_install and not cfg.add_on:
        found.append(kaito_operator_capacity(cfg.kaito))
    if cfg.gpu_operator is not None:
        found.append(gpu_operator_capacity(cfg.gpu_operator))
    if cfg.gpu_provisioner is not None:
        found.append(gpu_provisioner_capacity(cfg.gpu_provisioner))
    if cfg.karpenter is not None:
        found.append(karpenter_capacity(cfg.karpenter))
    if cfg.rag_operator is not None:
        found.append(ragengine_operator_capacity(cfg.rag_operator))
    if cfg.gateway is not None:
        found.append(inference_gateway_capacity(cfg.gateway))
    if cfg.autoscaling is not None:
        found.append(keda_autoscaling_capacity(cfg.autoscaling))
    found += [model_capacity(w.args, w.args.name or "", w.placed.at) for w in cfg.workspaces]
    found += [rag_engine_capacity(e.args, e.args.name or "", e.placed.at) for e in cfg.rag_engines]
    return found


def budget(cfg: StackConfig) -> Budget | None:
    found = parts(cfg)
    return capacity_budget(found, cpu_pool_hint=CPU_POOL_HINT) if found else None


def check(cfg: StackConfig) -> list[Problem]:
    """The budget's problems (refusals and warnings), at config paths."""
    found = budget(cfg)
    return found.problems if found is not None else []


def lines(cfg: StackConfig) -> list[str]:
    """What `validate` and `render` print of the budget."""
    found = budget(cfg)
    if found is None:
        where = "cluster.existing" if cfg.aks_cluster is not None else "cluster.kubeconfig"
        return [f"capacity: not measured ({where}: the cluster's pools are not this stack's)"]
    return budget_lines(found)
