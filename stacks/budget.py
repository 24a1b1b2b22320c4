"""The GPU pools' node budget, stack-wide (kaito_aks.budget at config paths): the models and RAG
engines of a stack that select the same pools must fit those pools' maximum nodes together.

It applies where the stack knows every GPU pool (a cluster it creates, bring-your-own nodes),
and only to entries whose own rules passed (their problems are said already)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from kaito_aks import budget
from kaito_aks.nodes import SYSTEM_POOL
from kaito_aks.problems import Problem
from stacks.config import StackConfig


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
    models = [
        (f"workspaces[{i}] ({args.name})", args)
        for n, (i, args) in enumerate(zip(model_index, cfg.models, strict=True))
        if n in sound_models
    ]
    engines = [(f"ragEngines[{i}] ({e.args.name})", e.args) for i, e in zip(rag_index, cfg.rag_engines, strict=True)]
    created = cfg.aks_cluster is not None and not cfg.aks_cluster.existing
    system = (SYSTEM_POOL, cfg.aks_cluster.system_pool.vm_size) if cfg.aks_cluster and created else None
    found = budget.pool_budget(models, cfg.kaito.node_groups, engines, system, grow="count, or autoscale.max")
    return [dataclasses.replace(p, path=_at_config(p.path, pool_index, rag_index)) for p in found]


def _at_config(path: tuple[object, ...], pool_index: list[int], rag_index: list[int]) -> tuple[str | int, ...]:
    """A budget problem's path in the stack's config: node_groups[j] -> gpuNodePools[i],
    engines[j] -> ragEngines[i]."""
    head, at, *rest = path
    assert isinstance(at, int)
    if head == "node_groups":
        return ("gpuNodePools", pool_index[at], *map(str, rest))
    return ("ragEngines", rag_index[at], *map(str, rest))
