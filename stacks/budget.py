"""The GPU pools' node budget, stack-wide: each KAITO pod (a model's serving or tuning pod, a RAG
engine embedding locally) requests every GPU of its node, so the models and engines that select
the same pools must fit those pools' maximum nodes *together*. A model's own rule checks it
alone (model/rules.py `_serving_fit`); only the stack sees who shares a pool.

It applies where the stack knows every GPU pool (a cluster it creates, bring-your-own nodes),
and only to entries whose own rules passed (their problems are said already)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from kaito_aks import catalog
from kaito_aks.kaito import sizing
from kaito_aks.model.rules import match_labels, max_model_len
from kaito_aks.model.spec import KaitoModelArgs, is_gpu
from kaito_aks.nodes import NodeGroup, selects
from kaito_aks.problems import Problem
from kaito_aks.rag import rules as rag_rules
from stacks.config import RagEngineConfig, StackConfig

SYSTEM_POOL = "system"  # AksCluster's system pool (kaito_aks.azure.aks_cluster)
AGENTPOOL_LABELS = ("agentpool", "kubernetes.azure.com/agentpool")  # what AKS labels a pool's nodes with


@dataclass(frozen=True)
class Demand:
    """Nodes one entry occupies at once, on the pools it may use."""

    who: str  # "workspaces[0] (phi)"
    pools: frozenset[int]  # positions in StackConfig.pools
    nodes: int
    why: str  # how the count comes about
    engine: bool = False


def check(
    cfg: StackConfig,
    model_index: list[int],
    pool_index: list[int],
    rag_index: list[int],
    sound_models: Collection[int],
) -> list[Problem]:
    """Problems of the pools' budget. `sound_models`: positions in cfg.models whose own rules
    passed (the others are left out: their problem is said)."""
    if not cfg.pools_known:
        return []
    groups = list(cfg.kaito.node_groups)
    demands: list[Demand] = []
    problems: list[Problem] = []
    for n, (i, args) in enumerate(zip(model_index, cfg.models, strict=True)):
        if n in sound_models:
            demand = _model(args, groups, f"workspaces[{i}] ({args.name})")
            if demand is not None:
                demands.append(demand)
    system = (
        (SYSTEM_POOL, cfg.aks_cluster.system_pool.vm_size)
        if cfg.aks_cluster is not None and not cfg.aks_cluster.existing
        else None
    )
    for i, engine in zip(rag_index, cfg.rag_engines, strict=True):
        demand, problem = _engine(engine, groups, f"ragEngines[{i}] ({engine.args.name})", system)
        if problem is not None:
            problems.append(problem.under("ragEngines", i))
        if demand is not None:
            demands.append(demand)
    return problems + list(_over(demands, groups, pool_index))


def _model(args: KaitoModelArgs, groups: list[NodeGroup], who: str) -> Demand | None:
    """The nodes a GPU preset takes on its pools: KAITO's vLLM estimate per instance x replicas
    (as `_serving_fit` counts them), or a tuning job's nodes while it runs."""
    if args.node_provisioning != "byo" or args.image or not args.model or not is_gpu(args):
        return None
    chart = catalog.kaito_charts().get(args.kaito_version)
    preset = catalog.find_preset(args.model, chart.preset_catalog) if chart is not None else None
    if chart is None or preset is None:
        return None
    wanted = match_labels(args)
    pools = frozenset(j for j, g in enumerate(groups) if selects(wanted, g))
    sizes = {groups[j].vm_size for j in pools}
    sku = catalog.all_gpu_skus().get(sizes.pop()) if len(sizes) == 1 else None
    if sku is None:
        return None
    if args.tuning is not None:
        need = preset.tuning_gib or preset.model_gib
        nodes = max(1, math.ceil(need / sku.gpu_mem_gib))
        return Demand(who, pools, nodes, f"a tuning job on {_nodes(nodes)} while it runs")
    try:
        per_instance = sizing.nodes_per_instance(
            preset, sizing.NodeGpus.of_sku(sku), chart.preset_catalog, max_model_len(args)
        )
    except sizing.SizingError:
        return None
    return Demand(
        who,
        pools,
        per_instance * args.replicas,
        f"{args.replicas} replica(s) x {_nodes(per_instance)}, KAITO's vLLM estimate",
    )


def _engine(
    engine: RagEngineConfig, groups: list[NodeGroup], who: str, system: tuple[str, str] | None
) -> tuple[Demand | None, Problem | None]:
    """The node a RAG engine's compute takes: KAITO looks for a node with the selector's labels
    *and* the instance type (ragengine_controller.go getAllQualifiedNodes, v0.8.1 L439-482,
    v0.12.0 L458-493), else creates a NodeClaim, which nothing provisions with bring-your-own
    nodes; with a local embedding its pod then takes every GPU of that node (`gpu_request`).
    `system`: the created cluster's system pool (name, size), where a CPU size may run."""
    args = engine.args
    chart = rag_rules.chart_of(args)
    compute = args.compute
    if chart is None or compute is None or not compute.label_selector.match_labels:
        return None, None
    sku = rag_rules.table_size(compute.instance_type, chart)
    wanted = compute.label_selector.match_labels
    size = (sku.name if sku is not None else compute.instance_type).lower()
    pools = frozenset(j for j, g in enumerate(groups) if selects(wanted, g) and g.vm_size.lower() == size)
    labelled = [g.name for g in groups if selects(wanted, g)]
    named = {wanted.get(k) for k in AGENTPOOL_LABELS} - {None}
    on_system = system is not None and named == {system[0]}
    # not a GPU size: the system pool, or nodes this stack does not model (labels it cannot see)
    cpu_elsewhere = not named or system is None or (on_system and system[1].lower() == size)
    if sku is None and not labelled and cpu_elsewhere:
        return None, None
    if not pools:
        if labelled:
            found = f"the pools with those labels ({', '.join(labelled)}) are of other sizes"
        elif on_system and system is not None:
            found = f"the system pool with those labels is of {system[1]}"
        else:
            found = "no pool carries those labels"
        return None, Problem(
            ("compute",),
            f"KAITO runs the engine on a node with compute.labelSelector's labels and of instanceType "
            f"{compute.instance_type}, and {found}; it would ask for a new node, which nothing provisions with "
            "bring-your-own nodes: select a gpuNodePools entry of that size (e.g. {agentpool: <its name>}), or "
            "use its size",
            "rag-no-pool",
        )
    gpus = rag_rules.gpu_request(args)
    if gpus == 0:
        return None, None
    why = f"KAITO {chart.version} gives an engine that embeds locally every GPU of its instanceType ({gpus})"
    return Demand(who, pools, 1, why, engine=True), None


def _over(demands: list[Demand], groups: list[NodeGroup], pool_index: list[int]) -> Iterator[Problem]:
    """For each set of pools some entry selects, the entries confined to it against its nodes;
    only the smallest sets that overflow are reported, and a model alone never (its own rule
    says so)."""
    over: list[frozenset[int]] = []
    for pools in sorted({d.pools for d in demands if d.pools}, key=lambda s: (len(s), sorted(s))):
        inside = [d for d in demands if d.pools and d.pools <= pools]
        need = sum(d.nodes for d in inside)
        most = sum(groups[j].max_nodes for j in pools)
        if need <= most or any(s < pools for s in over):
            continue
        if len(inside) == 1 and not inside[0].engine:
            continue
        over.append(pools)
        names = ", ".join(groups[j].name for j in sorted(pools))
        size = groups[min(pools)].vm_size
        shares = "; ".join(f"{d.who} takes {d.nodes} ({d.why})" for d in inside)
        engines = [d for d in inside if d.engine]
        one = len(pools) == 1
        fix = f"give {'the pool' if one else 'the pools'} {_nodes(need - most)} more (count, or autoscale.max)"
        if engines and len(inside) > len(engines):
            fix += ", or give the RAG engine a pool of its own (compute.labelSelector and instanceType)"
        elif not engines:
            fix += ", or lower replicas"
        yield Problem(
            ("gpuNodePools", pool_index[min(pools)]),
            f"{'pool' if one else 'pools'} {names} {'has' if one else 'have'} at most {_nodes(most)} of {size}, "
            f"and {need} are needed at once: {shares}. Each KAITO pod takes every GPU of its node, so the rest "
            f"would stay Pending: {fix}",
            "pool-budget",
        )


def _nodes(n: int) -> str:
    return "1 node" if n == 1 else f"{n} nodes"
