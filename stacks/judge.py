"""Every rule of a stack, at its config path: the components' own rules, then what only a whole
stack can get wrong (stacks/rules.py) and the pools' budget (stacks/budget.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from kaito_aks import catalog, policy
from kaito_aks.azure.aks_cluster import aks_cluster_problems
from kaito_aks.azure.cpu_node_pool import cpu_node_pool_problems
from kaito_aks.azure.gpu_node_pool import gpu_node_pool_problems
from kaito_aks.cluster.kubeconfig_cluster import kubeconfig_cluster_problems
from kaito_aks.model.component import judge_model
from kaito_aks.model.placement import cpu_on_gpu_pools, cpu_on_no_pool
from kaito_aks.model.rules import SIZING_UNAFFECTED
from kaito_aks.operators.gpu_operator import gpu_operator_problems
from kaito_aks.operators.gpu_provisioner import gpu_provisioner_problems
from kaito_aks.operators.kaito_operator import kaito_operator_problems
from kaito_aks.operators.karpenter import karpenter_problems
from kaito_aks.operators.ragengine_operator import ragengine_operator_problems
from kaito_aks.problems import Problem
from kaito_aks.rag.component import judge_rag_engine
from stacks import budget, callers, capacity, hf_token, rules, serving
from stacks.config import (
    ModelConfig,
    PoolConfig,
    RagEngineConfig,
    StackConfig,
)
from stacks.defaults import Written


def once(problems: list[Problem]) -> list[Problem]:
    """Each problem once: two components may say the same thing at one path (a release the
    operator and the models both find unsupported)."""
    seen: set[tuple[object, ...]] = set()
    out: list[Problem] = []
    for p in problems:
        key = (p.path, p.code, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def judge(
    cfg: StackConfig, written: Written, base_dir: Path | None, tied: list[Problem]
) -> tuple[list[Problem], StackConfig]:
    """The components' own rules, each problem where its arg was written, then what only a whole
    stack can get wrong (stacks/rules.py: `tied`, those of tying RAG engines to workspaces, with
    them) and the pools' budget (stacks/budget.py): the errors, and the config with every warning
    (`warnings`, at config paths; each workspace's and engine's own, for its component to log)."""
    found = tied + _cluster_problems(cfg, written, base_dir)
    found += [p for pool in cfg.pools for p in map(pool.placed.where, gpu_node_pool_problems(pool.args))]
    found += [p for pool in cfg.cpu_pools for p in map(pool.placed.where, cpu_node_pool_problems(pool.args))]
    found += _operator_problems(cfg)
    workspaces, model_found, model_warned = _model_problems(cfg, written)
    found += model_found
    engines, engine_found, engine_warned = _engine_problems(cfg, tied)
    found += engine_found
    found += rules.check(cfg)
    found += serving.check(cfg, written) + list(serving.own_key_problems(cfg, written))
    found += hf_token.problems(cfg, written)
    found += callers.check(cfg, written)  # who a NetworkPolicy would cut on an adopted cluster
    sound = [w for w in workspaces if w.sizable]
    found += budget.check(cfg, [w.config for w in sound])
    if not policy.errors_of(found):  # the non-GPU pools' budget, of what is well formed
        found += capacity.check(cfg)
    found = [p for p in found if p.code != "pool-nodes"]  # a pool's counts are its own rules' (count, autoscale)
    if cfg.add_on:  # the add-on's refusal of a key says it all (not also what its release's rules imply)
        refused = [p.path for p in found if p.code == "add-on"]
        found = [p for p in found if p.code == "add-on" or not any(p.path[: len(r)] == r for r in refused)]
    warnings = [*cfg.warnings, *model_warned, *engine_warned, *policy.warnings_of(found)]
    cfg = dataclasses.replace(
        cfg,
        workspaces=tuple(w.config for w in workspaces),
        rag_engines=engines,
        warnings=tuple(once(warnings)),
    )
    return policy.errors_of(found), cfg


def _add_on_release(cfg: StackConfig, problem: Problem) -> bool:
    return cfg.add_on and problem.path[:2] == ("kaito", "version")


def _cluster_problems(cfg: StackConfig, written: Written, base_dir: Path | None) -> list[Problem]:
    if cfg.kubeconfig_cluster is not None:
        found = kubeconfig_cluster_problems(cfg.kubeconfig_cluster, base=base_dir)
        return [rules.stack_wording(p.under("cluster", "kubeconfig")) for p in found]
    if cfg.aks_cluster is not None:
        return [p.under("cluster", written.cluster_kind or "aks") for p in aks_cluster_problems(cfg.aks_cluster)]
    return []


def at_pools(problem: Problem, pools: Sequence[PoolConfig]) -> Problem | None:
    """A component's problem at `node_groups[i]...`, at the stack's gpuNodePools entry it describes."""
    path = problem.path
    if len(path) >= 2 and path[0] == "node_groups" and isinstance(path[1], int) and path[1] < len(pools):
        rest = path[2:]
        if rest and rest[0] in ("min_nodes", "max_nodes"):
            rest = ()  # (count or autoscale)
        return dataclasses.replace(problem, path=(*pools[path[1]].placed.at, *rest))
    if path == ("node_groups",):
        return dataclasses.replace(problem, path=("gpuNodePools",))
    return None


# What the stack's own rules (driver, discovery) or its models' (spot) say of the pools in its terms
STACK_SAYS = frozenset({"discovery-driver", "discovery", "gpu-driver", "spot-pool"})


def _operator_problems(cfg: StackConfig) -> list[Problem]:
    found: list[Problem] = []
    # who installs the pools' driver, and who discovers their GPUs: the stack's own rules say it in its terms
    operator = [p for p in kaito_operator_problems(cfg.kaito) if p.code not in STACK_SAYS]
    if cfg.add_on:  # refused at kaito.install, which says why: not the add-on's release again
        operator = [p for p in operator if p.path != ("version",)]
    if not cfg.kaito_install:  # only the release matters (the one rule, for Workspaces): installed elsewhere
        unsupported = catalog.unsupported_kaito_version(cfg.kaito.version)
        operator = [Problem.at("version", unsupported, "version")] if unsupported else []
    found += [at_pools(p, cfg.pools) or p.under("kaito") for p in operator]
    if cfg.gpu_operator is not None:
        found += [at_pools(p, cfg.pools) or p.under("gpuOperator") for p in gpu_operator_problems(cfg.gpu_operator)]
    if cfg.gpu_provisioner is not None:
        found += [p.under("gpuProvisioner") for p in gpu_provisioner_problems(cfg.gpu_provisioner)]
    if cfg.karpenter is not None:
        found += [p.under("karpenter") for p in karpenter_problems(cfg.karpenter)]
    if cfg.rag_operator is not None:
        rag = ragengine_operator_problems(cfg.rag_operator)
        found += [p.under("ragEngineOperator") for p in rag if p.path != ("version",)]
    return found


@dataclasses.dataclass(frozen=True)
class _Judged:
    config: ModelConfig
    sizable: bool  # its problems (if any) leave KAITO's sizing of it unchanged: it counts in the pools' budget


def _model_problems(cfg: StackConfig, written: Written) -> tuple[list[_Judged], list[Problem], list[Problem]]:
    """Each model's own rules (and, on a cluster it adopts, no CPU model on the pools the stack
    adds), at config paths in the stack's words: the models with their warnings, the errors, and
    the warnings at config paths."""
    groups = cfg.kaito.node_groups
    found: list[Problem] = []
    warned: list[Problem] = []
    judged_models: list[_Judged] = []
    for w in cfg.workspaces:
        _, own, warnings = judge_model(w.args)
        own = [p for p in own if p.code != "gpu-driver"]  # (the stack's `driver` rule says it, per pool)
        if written.cluster_kind == "existing" and w.args.node_groups is None:
            errors, more = policy.verdict(list(cpu_on_gpu_pools(w.args, groups)), w.args.bypass_checks)
            own, warnings = own + errors, warnings + more
        if cfg.pools_known:  # every node of the cluster is in a pool the stack knows
            errors, more = policy.verdict(list(cpu_on_no_pool(w.args, cfg.cpu_nodes, groups)), w.args.bypass_checks)
            own, warnings = own + errors, warnings + more
        if cfg.create_namespaces:
            own, warnings = rules.created_namespace(own, warnings, w.args.namespace)
        sizable = all(p.code in SIZING_UNAFFECTED for p in own)
        judged_models.append(_Judged(dataclasses.replace(w, warnings=tuple(warnings)), sizable))
        found += [rules.stack_wording(at_pools(p, cfg.pools) or w.placed.where(p), w.args) for p in own]
        warned += [rules.stack_wording(_at_workspace(p, w, cfg), w.args) for p in warnings]
    return judged_models, found, warned


def _at_workspace(problem: Problem, w: ModelConfig, cfg: StackConfig) -> Problem:
    """A model's warning at its config path: the pools' entries, or the workspace's (one that the
    pools are not known is about the workspace as a whole)."""
    if problem.code == "unsized":
        return w.placed.where(dataclasses.replace(problem, path=()))
    return at_pools(problem, cfg.pools) or w.placed.where(problem)


def _engine_problems(
    cfg: StackConfig, tied: list[Problem]
) -> tuple[tuple[RagEngineConfig, ...], list[Problem], list[Problem]]:
    """Each RAG engine's own rules at config paths (with the add-on, ragEngines are refused as a
    whole); an engine whose workspace could not be tied is not also told it lacks an LLM."""
    untied = {p.path[:2] for p in tied if p.code in ("rag-workspace", "rag-llm")}
    found: list[Problem] = []
    warned: list[Problem] = []
    engines: list[RagEngineConfig] = []
    for engine in cfg.rag_engines:
        _, own, warnings = judge_rag_engine(engine.args)
        if cfg.create_namespaces:
            own, warnings = rules.created_namespace(own, warnings, engine.args.namespace)
        if engine.placed.at[:2] in untied:
            own = [p for p in own if p.code != "inference-service"]
        found += [p for p in map(engine.placed.where, own) if not _add_on_release(cfg, p)]
        warned += [engine.placed.where(p) for p in warnings]
        engines.append(dataclasses.replace(engine, warnings=tuple(warnings)))
    return tuple(engines), found, warned
