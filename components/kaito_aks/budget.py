"""GPU pools shared by many KAITO pods: each pod (a model's serving or tuning pod, a RAG engine
that embeds locally) requests every GPU of its node, so the models and engines that select the
same pools must fit those pools' maximum nodes *together*. A model's own rules check it alone
(model/rules.py `_serving_fit`); only a program that knows them all sees who shares a pool:
`deploy_models` checks its models so, a program of separate components calls `pool_budget`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

from kaito_aks import catalog, policy
from kaito_aks.kaito import sizing
from kaito_aks.model.config import max_model_len
from kaito_aks.model.placement import node_lookup_labels
from kaito_aks.model.spec import KaitoModelArgs, is_gpu, serving_replicas
from kaito_aks.nodes import AGENTPOOL_LABELS, SYSTEM_POOL, NodeGroup, selects
from kaito_aks.problems import Problem, raise_if, shown
from kaito_aks.rag import rules as rag_rules
from kaito_aks.rag.spec import RagEngineArgs
from kaito_aks.schema import usable


@dataclass(frozen=True)
class Demand:
    """Nodes one model or engine occupies at once, on the pools it may use."""

    who: str  # how a problem names it, e.g. "phi" or "workspaces[0] (phi)"
    pools: frozenset[int]  # positions in the node groups
    nodes: int
    why: str  # how the count comes about
    engine: bool = False
    replicas: int = 1  # at most (an autoscaled model's maximum)
    scaled: bool = False  # an autoscaled model: its `autoscale.max_replicas` is what to lower
    bypassed: bool = False  # its `bypass_checks` name pool-budget: it does not count, and is said
    index: int = -1  # its position among the models (or engines) given


def pool_budget(
    models: Sequence[tuple[str, KaitoModelArgs]],
    node_groups: Sequence[NodeGroup],
    engines: Sequence[tuple[str, RagEngineArgs]] = (),
    system: CpuPools = None,
    grow: str = "`max_nodes`",
) -> list[Problem]:
    """Problems of the pools' budget: (who, args) of each model and RAG engine (each already
    passed its own rules), the GPU node groups they may land on (every one of the cluster's, or
    a pool the budget does not see could take the surplus), the system pool (name, size) when
    known, or a list of the CPU pools (name, size) the system pool among them. Problems are at ("node_groups", i) of the first pool of a set that overflows, or at
    an engine's `compute` ((engine position, problem)). `grow`: how to give a pool nodes."""
    raise_if("function", "pool_budget", _call_problems(models, node_groups, engines, system, grow))
    return budget(models, node_groups, engines, system, grow)[0]


def budget(
    models: Sequence[tuple[str, KaitoModelArgs]],
    node_groups: Sequence[NodeGroup],
    engines: Sequence[tuple[str, RagEngineArgs]] = (),
    system: CpuPools = None,
    grow: str = "`max_nodes`",
) -> tuple[list[Problem], set[int]]:
    """`pool_budget` of arguments known to be well formed, and the positions of the models
    counted in a set of pools it refuses (each such set's problem names what makes all of
    them fit at once)."""
    demands = [
        dataclasses.replace(d, index=i)
        for i, (who, args) in enumerate(models)
        if (d := model_demand(args, node_groups, who)) is not None
    ]
    problems: list[Problem] = []
    for i, (who, args) in enumerate(engines):
        demand, problem = engine_demand(args, node_groups, who, system)
        if problem is not None:
            problems.append(problem.under("engines", i))
        if demand is not None:
            demands.append(demand)
    counted = [d for d in demands if not d.bypassed]
    over = list(overflows(counted, node_groups, grow))
    errors = policy.verdict([*problems, *(p for p, _ in over)])[0]  # each with its way past
    refused = {p.path for p in errors}
    # what only the demands that bypass the budget overflow: said, as a bypassed warning
    said = [
        dataclasses.replace(p, message=f"bypassed (pool-budget): {p.message}", bypassed=True)
        for p, _ in overflows(demands, node_groups, grow)
        if p.path not in refused
    ]
    inside = {d.index for _, found in over for d in found if not d.engine}
    return [*errors, *said], inside


def _call_problems(models: object, node_groups: object, engines: object, system: object, grow: object) -> list[Problem]:
    """The call's own shape, said by arg (a program's mistake: never a TypeError from inside)."""
    problems: list[Problem] = []
    for arg, given, cls, what in (
        ("models", models, KaitoModelArgs, "(name, KaitoModelArgs)"),
        ("engines", engines, RagEngineArgs, "(name, RagEngineArgs)"),
    ):
        if not isinstance(given, list | tuple):
            problems.append(Problem.at(arg, f"must be a list of {what}, not {shown(given)}", "type"))
            continue
        for i, item in enumerate(cast(Sequence[object], given)):
            pair: tuple[object, ...] = cast(tuple[object, ...], item) if isinstance(item, tuple) else ()
            if len(pair) != 2 or not isinstance(pair[0], str) or not isinstance(pair[1], cls):
                problems.append(Problem.at((arg, i), f"must be {what}, not {shown(cast(object, item))}", "type"))
            elif not usable(pair[1]):  # (a value with problems keeps what is usable of it: that counts)
                why = "misses a required arg: check it first (check_model, check_rag_engine)"
                problems.append(Problem.at((arg, i), why, "type"))
    if not isinstance(node_groups, list | tuple):
        problems.append(Problem.at("node_groups", f"must be a list of NodeGroup, not {shown(node_groups)}", "type"))
    else:
        for i, group in enumerate(cast(Sequence[object], node_groups)):
            if not isinstance(group, NodeGroup):
                problems.append(Problem.at(("node_groups", i), f"must be a NodeGroup, not {shown(group)}", "type"))
            elif not usable(group):
                problems.append(Problem.at(("node_groups", i), "misses a required arg (name, vm_size)", "type"))
    if system is not None and _cpu_pools(system) is None:
        problems.append(
            Problem.at("system", f"must be (pool name, VM size) or a list of them, not {shown(system)}", "type")
        )
    if not isinstance(grow, str):
        problems.append(Problem.at("grow", f"must be text, not {shown(grow)}", "type"))
    return problems


def model_demand(args: KaitoModelArgs, groups: Sequence[NodeGroup], who: str) -> Demand | None:
    """The nodes a GPU preset takes on its pools: KAITO's vLLM estimate per instance x replicas
    (as `_serving_fit` counts them), or a tuning job's nodes while it runs."""
    if args.node_provisioning != "byo" or args.image or not args.model or not is_gpu(args):
        return None
    chart = catalog.kaito_charts().get(args.kaito_version)
    preset = catalog.find_preset(args.model, chart.preset_catalog) if chart is not None else None
    if chart is None or preset is None:
        return None
    wanted = node_lookup_labels(args, chart)
    pools = frozenset(j for j, g in enumerate(groups) if selects(wanted, g))
    sizes = {groups[j].vm_size for j in pools}
    sku = catalog.all_gpu_skus().get(sizes.pop()) if len(sizes) == 1 else None
    if sku is None:
        return None
    if args.tuning is not None and chart.tuning_needs_instance_type:
        return None  # refused on these nodes by its own rule (KAITO cannot start the job)
    if args.tuning is not None:
        need = preset.tuning_gib or preset.model_gib
        nodes = max(1, math.ceil(need / sku.gpu_mem_gib))
        return Demand(who, pools, nodes, f"a tuning job on {_nodes(nodes)} while it runs")
    return _serving_demand(args, preset, sku, chart, who, pools)


def _serving_demand(
    args: KaitoModelArgs,
    preset: catalog.Preset,
    sku: catalog.GpuSku,
    chart: catalog.KaitoChart,
    who: str,
    pools: frozenset[int],
) -> Demand | None:
    """A serving model's nodes at its most replicas: per replica, the transformers runtime's one
    node or KAITO's vLLM estimate on the pools' size."""
    bypassed = "pool-budget" in args.bypass_checks  # the model's own choice: it leaves the budget, said
    replicas = serving_replicas(args)
    scaled = " (`autoscale.max_replicas`)" if args.autoscale is not None else ""
    if args.runtime == "transformers":  # resource.count (1) node per Workspace, no estimator
        why = f"{replicas} replica(s){scaled} x 1 node, the transformers runtime's"
        return Demand(
            who, pools, replicas, why, replicas=replicas, scaled=args.autoscale is not None, bypassed=bypassed
        )
    try:
        per_instance = sizing.nodes_per_instance(
            preset, sizing.NodeGpus.of_sku(sku), chart.preset_catalog, max_model_len(args)
        )
    except sizing.SizingError:
        return None
    return Demand(
        who,
        pools,
        per_instance * replicas,
        f"{replicas} replica(s){scaled} x {_nodes(per_instance)}, KAITO's vLLM estimate",
        replicas=replicas,
        scaled=args.autoscale is not None,
        bypassed=bypassed,
    )


CpuPools = tuple[str, str] | Sequence[tuple[str, str]] | None


def _pair(value: object) -> tuple[str, str] | None:
    parts: tuple[object, ...] = cast(tuple[object, ...], value) if isinstance(value, tuple) else ()
    return (parts[0], parts[1]) if len(parts) == 2 and isinstance(parts[0], str) and isinstance(parts[1], str) else None


def _cpu_pools(system: object) -> list[tuple[str, str]] | None:
    """The CPU pools (name, size) `system` names: one pool, or a list of them; None: neither."""
    if system is None:
        return []
    one = _pair(system)
    if one is not None:
        return [one]
    if not isinstance(system, list | tuple):
        return None
    pairs = [_pair(p) for p in cast(Sequence[object], system)]
    return [p for p in pairs if p is not None] if all(p is not None for p in pairs) else None


def engine_demand(
    args: RagEngineArgs, groups: Sequence[NodeGroup], who: str, system: CpuPools = None
) -> tuple[Demand | None, Problem | None]:
    """The node a RAG engine's compute takes: KAITO looks for a node with the selector's labels
    *and* the instance type (ragengine_controller.go getAllQualifiedNodes, v0.8.1 L439-482,
    v0.12.0 L458-493), else creates a NodeClaim, which nothing provisions with bring-your-own
    nodes; with a local embedding its pod then takes every GPU of that node (`gpu_request`).
    `system`: the cluster's CPU pools (name, size; the system pool, or a list of them), where a CPU
    size may run, when known."""
    chart = rag_rules.chart_of(args)
    compute = args.compute
    if chart is None or compute is None or not compute.label_selector.match_labels:
        return None, None
    if "rag-no-pool" in args.bypass_checks:
        return None, None  # the engine's own choice
    sku = rag_rules.table_size(compute.instance_type, chart)
    wanted = compute.label_selector.match_labels
    size = (sku.name if sku is not None else compute.instance_type).lower()
    pools = frozenset(j for j, g in enumerate(groups) if selects(wanted, g) and g.vm_size.lower() == size)
    labelled = [g.name for g in groups if selects(wanted, g)]
    on_cpu, cpu_elsewhere = _on_cpu(wanted, size, system)
    if sku is None and not labelled and cpu_elsewhere:
        return None, None
    if not pools:
        return None, _no_pool(compute.instance_type, labelled, on_cpu)
    gpus = rag_rules.gpu_request(args)
    if gpus == 0:
        return None, None
    why = f"KAITO {chart.version} gives an engine that embeds locally every GPU of its instanceType ({gpus})"
    return Demand(who, pools, 1, why, engine=True, bypassed="pool-budget" in args.bypass_checks), None


def _on_cpu(wanted: dict[str, str], size: str, system: CpuPools) -> tuple[tuple[str, str] | None, bool]:
    """The CPU pool (name, size) an engine's labels name, if any; and whether its compute may run
    on CPU nodes (a CPU pool of its size, or nodes the program does not model: no pool named, or
    none known)."""
    named = {wanted.get(k) for k in AGENTPOOL_LABELS} - {None}
    cpu = _cpu_pools(system) or []
    on_cpu = next((p for p in cpu if named == {p[0]}), None)
    return on_cpu, not named or not cpu or (on_cpu is not None and on_cpu[1].lower() == size)


def _no_pool(instance_type: str, labelled: list[str], on_cpu: tuple[str, str] | None) -> Problem:
    """An engine's compute that no pool gives: none with its labels and its size."""
    if labelled:
        found = f"the pools with those labels ({', '.join(labelled)}) are of other sizes"
    elif on_cpu is not None:
        pool = "system pool" if on_cpu[0] == SYSTEM_POOL else f"CPU pool {on_cpu[0]}"
        found = f"the {pool} with those labels is of {on_cpu[1]}"
    else:
        found = "no pool carries those labels"
    return Problem(
        ("compute",),
        f"KAITO admits this, but it runs the engine on a node with `compute.label_selector`'s labels and of "
        f"`instance_type` {instance_type}, and {found}; it would ask for a new node, which nothing provisions with "
        "bring-your-own nodes: select a GPU pool of that size (e.g. {agentpool: <its name>}), or use its size",
        "rag-no-pool",
    )


def overflows(
    demands: Sequence[Demand], groups: Sequence[NodeGroup], grow: str = "`max_nodes`"
) -> Iterator[tuple[Problem, list[Demand]]]:
    """For each set of pools some entry selects, the entries confined to it against its nodes
    (the problem, and those entries); only the smallest sets that overflow are reported, and a
    model alone never (its own rule says so). The count it gives makes every entry fit at once."""
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
        yield _overflow(inside, [groups[j] for j in sorted(pools)], min(pools), need, most, grow), inside


def _overflow(inside: list[Demand], pools: list[NodeGroup], first: int, need: int, most: int, grow: str) -> Problem:
    """A set of pools that cannot give its entries their nodes at once: who takes what, and the
    count that makes every one of them fit (or what else would)."""
    one = len(pools) == 1
    shares = "; ".join(f"{d.who} takes {d.nodes} ({d.why})" for d in inside)
    fix = f"give {'the pool' if one else 'the pools'} {_nodes(need - most)} more ({grow})"
    engines = [d for d in inside if d.engine]
    if engines and len(inside) > len(engines):
        fix += ", or give the RAG engine a pool of its own (`compute.label_selector` and `instance_type`)"
    elif any(d.replicas > 1 for d in inside):  # (the knob of those with more than one)
        scaled = all(d.scaled for d in inside if d.replicas > 1)
        fix += ", or lower `autoscale.max_replicas`" if scaled else ", or lower replicas"
    else:
        fix += ", or select another pool for one of them (`label_selector`)"
    names = ", ".join(g.name for g in pools)
    return Problem(
        ("node_groups", first),
        f"KAITO admits each of these, but {'pool' if one else 'pools'} {names} {'has' if one else 'have'} at most "
        f"{_nodes(most)} of {pools[0].vm_size}, and {need} are needed at once: {shares}. Each KAITO pod takes every "
        f"GPU of its node, so the rest would stay Pending: {fix}",
        "pool-budget",
    )


def _nodes(n: int) -> str:
    return "1 node" if n == 1 else f"{n} nodes"
