"""The GPU pools' node budget, stack-wide (kaito_aks.budget at config paths): the models and RAG
engines of a stack that select the same pools must fit those pools' maximum nodes together.

It applies where the stack knows every GPU pool (a cluster it creates, bring-your-own nodes),
and only to entries whose own rules passed (their problems are said already)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from kaito_aks import budget
from kaito_aks.problems import PathPart, Problem, format_path
from stacks.config import ModelConfig, StackConfig


def check(cfg: StackConfig, sound: Collection[ModelConfig]) -> list[Problem]:
    """Problems of the pools' budget. `sound`: the models whose own rules passed (the others are
    left out: their problem is said)."""
    if not cfg.pools_known:
        return []
    models = [(f"{format_path(w.placed.at, 'schema')} ({w.args.name})", w.args) for w in sound]
    engines = [(f"{format_path(e.placed.at, 'schema')} ({e.args.name})", e.args) for e in cfg.rag_engines]
    cpu = [(p.name, p.vm_size) for p in cfg.cpu_nodes]  # (the system pool and cpuNodePools)
    found = budget.pool_budget(models, cfg.kaito.node_groups, engines, cpu or None, grow="count, or autoscale.max")
    return [dataclasses.replace(p, path=_at_config(p.path, cfg)) for p in found]


def _at_config(path: tuple[object, ...], cfg: StackConfig) -> tuple[PathPart, ...]:
    """A budget problem's path in the stack's config: node_groups[j] -> its gpuNodePools entry,
    engines[j] -> its ragEngines entry."""
    head, at, *rest = path
    assert isinstance(at, int)
    entry = cfg.pools[at] if head == "node_groups" else cfg.rag_engines[at]
    return (*entry.placed.at, *map(str, rest))
