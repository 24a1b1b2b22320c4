"""The rules of the models and RAG engines of one cluster together, which no component can see
alone: objects of one name in a namespace (a model's, an engine's Service, an engine's load
balancer), model ids two routes would share, a CPU model on another's auto-provisioned GPU
nodes, KAITO's auto-provisioned nodes at their most, one KAITO release, and the GPU pools'
budget (models, engines and the CPU pools they may use). `deploy_models` checks its models so;
a program of separate components (or this repository's stack) calls `check_together`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kaito_aks import catalog, policy
from kaito_aks.budget import CpuPools, budget
from kaito_aks.model.names import claimed_names, name_collisions
from kaito_aks.model.placement import cpu_on_provisioned_gpu_nodes
from kaito_aks.model.rules import SIZING_UNAFFECTED
from kaito_aks.model.serving import auto_provisioned_budget, route_collisions
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import NodeGroup
from kaito_aks.problems import Problem
from kaito_aks.rag.spec import RagEngineArgs

# A model's own advice on its pools' size, for it alone: where it shares them with others, the
# pools' budget counts it with them and gives the one count that fits all of them.
POOL_SIZE_ADVICE = "replicas-fit"


@dataclass(frozen=True)
class Together:
    """What `check_together` found: each problem at ("models", i, ...), ("engines", i, ...),
    ("node_groups", j) or ("models",) (errors, and warnings: `policy.warnings_of` tells them
    apart), and the models whose own advice on their pools' size the budget replaces."""

    problems: tuple[Problem, ...]
    counted: frozenset[int]  # models counted in a pools' budget that refuses: its count is the one to follow

    def own(self, i: int, problems: Sequence[Problem]) -> list[Problem]:
        """Model i's own problems, less its advice on its pools' size where the pools' budget gives
        the count that fits it and the models it shares them with (one answer, not two)."""
        return [p for p in problems if not (i in self.counted and p.code == POOL_SIZE_ADVICE)]


def sizable(problems: Sequence[Problem]) -> bool:
    """Whether a model with these problems of its own is sized by KAITO as it is written (its
    problems leave its sizing unchanged, or only say its pools are too small): the pools' budget
    counts it."""
    return all(p.code in SIZING_UNAFFECTED or p.code == POOL_SIZE_ADVICE or policy.is_warning(p) for p in problems)


def check_together(
    models: Sequence[tuple[str, KaitoModelArgs]],
    engines: Sequence[tuple[str, RagEngineArgs]] = (),
    node_groups: Sequence[NodeGroup] | None = None,
    cpu_pools: CpuPools = None,
    own: Sequence[Sequence[Problem]] | None = None,
    grow: str = "`max_nodes`",
) -> Together:
    """The rules of (who, args) of the models and RAG engines of one cluster together, each
    problem judged with the `bypass_checks` of the model it is about. `node_groups`: every GPU
    pool of the cluster (default: those the models name; none named and none given: the budget
    is not counted); `cpu_pools`: its CPU pools (name,
    size), where a RAG engine of a CPU size may run; `own`: each model's own problems (a model
    whose sizing they change is left out of the pools' budget); `grow`: how to give a pool nodes."""
    found: list[Problem] = []
    across = [*name_collisions(models), *cpu_on_provisioned_gpu_nodes(models), *route_collisions(models)]
    for i, problem in across:
        errors, warnings = policy.verdict([problem], models[i][1].bypass_checks)
        found += [p.under("models", i) for p in [*errors, *warnings]]
    found += [p.under("models") for p in auto_provisioned_budget(models)]
    versions = sorted({a.kaito_version for _, a in models})
    if len(versions) > 1:  # one cluster runs one KAITO release
        found.append(
            Problem.at(
                "models",
                f"mixes KAITO {', '.join(versions)}; the models of one call share one cluster, which runs one KAITO "
                "release: give every model the `kaito_version` the cluster runs",
                "kaito-versions",
            )
        )
    found += _engine_names(models, engines)
    counted = [j for j, (_, a) in enumerate(models) if a.node_groups and (own is None or sizable(own[j]))]
    pools = list(node_groups) if node_groups is not None else _named_pools([models[j][1] for j in counted])
    if node_groups is None and not pools:  # no GPU pool known: nothing to count against
        return Together(tuple(found), frozenset())
    shares = [(_label(*models[j]), models[j][1]) for j in counted]
    problems, inside = budget(shares, pools, [(_label(*e), e[1]) for e in engines], cpu_pools, grow)
    return Together((*found, *problems), frozenset(counted[k] for k in inside))


def _label(who: str, args: KaitoModelArgs | RagEngineArgs) -> str:
    """How the pools' budget names a model or engine: `who`, with its name where that is not it."""
    return who if args.name in (None, who) else f"{who} ({args.name})"


def _named_pools(models: Sequence[KaitoModelArgs]) -> list[NodeGroup]:
    """The GPU pools the models name (each once, by name)."""
    return list({g.name: g for a in models for g in a.node_groups or []}.values())


def _engine_names(
    models: Sequence[tuple[str, KaitoModelArgs]], engines: Sequence[tuple[str, RagEngineArgs]]
) -> list[Problem]:
    """A RAG engine takes its name (its Service, which KAITO names after it) and, with a load
    balancer, <name>-lb in its namespace: neither may be a name a model or another engine takes."""
    taken: dict[tuple[str, str], str] = {}
    for who, args in models:
        chart = catalog.kaito_charts().get(args.kaito_version)
        for name in claimed_names(args, chart) if chart is not None and args.name else ():
            taken.setdefault((args.namespace, name), who)
    found: list[Problem] = []
    for i, (who, args) in enumerate(engines):
        name = args.name or ""
        owner = taken.get((args.namespace, name))
        if owner is not None:
            why = f"{args.namespace}/{name} is also a name {owner} creates; KAITO names the engine's Service after it, so choose another"
            found.append(Problem(("engines", i, "name"), why, "name-collision"))
        taken.setdefault((args.namespace, name), who)
        if args.load_balancer:
            lb = f"{name}-lb"
            owner = taken.get((args.namespace, lb))
            if owner is not None:
                why = (
                    f"{args.namespace}/{lb} is also a name {owner} creates; the engine's load balancer is a Service "
                    "named <name>-lb, so rename one of them"
                )
                found.append(Problem(("engines", i, "load_balancer"), why, "name-collision"))
            taken.setdefault((args.namespace, lb), who)
    return found
