"""The budget itself: every pod placed on the pools it may run on, every set of pools against
what its pods request together, at the pools' most nodes. Refused: a set whose pods request more
than its nodes leave them (the requests counted are a lower bound of what runs there, the
allocatable an upper bound, so the rest provably stays Pending), a pod no node of its pools can
hold, a pod that must have a node of its own more often than there are nodes. Warned: a set
above the high-water mark, a pool of a size the catalog does not know (not measured)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kaito_aks import policy
from kaito_aks.capacity import Capacity, CapacityPool, PodSet, total
from kaito_aks.capacity.nodes import Allocatable, allocatable
from kaito_aks.catalog.capacity import pod_requests, same_family_sizes
from kaito_aks.problems import Problem, format_path

# A pod, and how many of it
Count = tuple[PodSet, int]
CPU_POOL_HINT = "an untainted CpuNodePool (the endpoint pickers and the operators carry no node selector)"


@dataclass(frozen=True)
class Room:
    """CPU (millicores) and memory (MiB)."""

    cpu: int = 0
    memory: int = 0

    def __add__(self, other: Room) -> Room:
        return Room(self.cpu + other.cpu, self.memory + other.memory)

    def __sub__(self, other: Room) -> Room:
        return Room(self.cpu - other.cpu, self.memory - other.memory)

    def times(self, n: int) -> Room:
        return Room(self.cpu * n, self.memory * n)

    def holds(self, other: Room) -> bool:
        return other.cpu <= self.cpu and other.memory <= self.memory


@dataclass(frozen=True)
class Share:
    """A set of pools and the pods that may run nowhere else: what they request against what the
    pools' nodes leave them."""

    pools: tuple[CapacityPool, ...]
    node: tuple[Allocatable, ...]  # each pool's node
    per_node: tuple[Room, ...]  # what the DaemonSets take of each pool's node
    pods: tuple[Count, ...]  # every pod confined to these pools (counted ones)
    requested: Room
    most: Room  # at the pools' most nodes
    least: Room  # at their fixed counts or the autoscaler's minimums


@dataclass(frozen=True)
class Budget:
    problems: list[Problem]
    shares: list[Share]
    unmeasured: list[CapacityPool]


def capacity_budget(
    parts: Sequence[Capacity], high_water: float | None = None, cpu_pool_hint: str = CPU_POOL_HINT
) -> Budget:
    """Every pod of `parts` on every pool of `parts`: the problems (refusals and warnings, each at
    its pool's or pod's `at`) and each set of pools with what runs there, for the budget's lines."""
    mark = pod_requests().high_water if high_water is None else high_water
    whole = total(parts)
    pools = list(whole.pools)
    nodes = [allocatable(p.vm_size, p.kubernetes_version) for p in pools]
    problems = [_unmeasured(p) for p, n in zip(pools, nodes, strict=True) if n is None]
    known = [j for j, n in enumerate(nodes) if n is not None]
    counted = [p for p in whole.pods if not p.bypassed]
    per_node = [_daemonsets(pool, counted) for pool in pools]
    free = [n and Room(n.cpu_m, n.pod_memory_mi) - d for n, d in zip(nodes, per_node, strict=True)]
    problems += [
        _daemonsets_too_big(pools[j], nodes[j], per_node[j]) for j in known if not _room(free[j]).holds(Room())
    ]
    placed = [(p, frozenset(j for j, pool in enumerate(pools) if _may_run(p, pool))) for p in whole.pods]
    placed = [(p, e) for p, e in placed if not p.per_node]
    unknown = {j for j in range(len(pools)) if nodes[j] is None}
    measured = [(p, e) for p, e in placed if e and not e & unknown]
    problems += [_nowhere(p, pools) for p, e in placed if not e and not p.model and not p.bypassed]
    for p, e in measured:
        problems += _pod_fits(p, sorted(e), pools, nodes, free)
    shares = _shares([(p, e) for p, e in measured if not p.bypassed], pools, nodes, per_node, free)
    errors = policy.verdict([*problems, *_overflows(shares, pools, free, cpu_pool_hint)])[0]
    refused = {p.path for p in errors}
    warned = [*policy.warnings_of(problems), *(_high(s, mark, cpu_pool_hint) for s in shares if _above(s, mark))]
    # what only the pods that bypass the budget overflow: said, as a bypassed warning
    every = _shares(measured, pools, nodes, per_node, free)
    said = [
        dataclasses.replace(p, message=f"bypassed ({p.code}): {p.message}", bypassed=True)
        for p in _overflows(every, pools, free, cpu_pool_hint)
        if p.path not in refused
    ]
    return Budget([*errors, *warned, *said], shares, [pools[j] for j in unknown])


def _room(value: Room | None) -> Room:
    return value if value is not None else Room()


def _may_run(pod: PodSet, pool: CapacityPool) -> bool:
    """Whether the scheduler may put the pod on the pool's nodes: they carry every label its
    selector asks for, and it tolerates their NoSchedule and NoExecute taints."""
    if any(pool.labels.get(k) != v for k, v in pod.selector.items()):
        return False
    return all(pod.tolerates_taint(t) for t in pool.taints)


def _daemonsets(pool: CapacityPool, pods: Sequence[PodSet]) -> Room:
    return sum((Room(p.cpu_m, p.memory_mi) for p in pods if p.per_node and _may_run(p, pool)), Room())


def _shares(
    placed: Sequence[tuple[PodSet, frozenset[int]]],
    pools: Sequence[CapacityPool],
    nodes: Sequence[Allocatable | None],
    per_node: Sequence[Room],
    free: Sequence[Room | None],
) -> list[Share]:
    """Each set of pools some pod is confined to, smallest first, with every pod confined to it."""
    out: list[Share] = []
    for pools_set in sorted({e for _, e in placed}, key=lambda s: (len(s), sorted(s))):
        inside = [(p, p.replicas) for p, e in placed if e <= pools_set]
        order = sorted(pools_set)
        requested = sum((Room(p.cpu_m, p.memory_mi).times(n) for p, n in inside), Room())
        most = sum((_room(free[j]).times(pools[j].max_nodes) for j in order), Room())
        least = sum((_room(free[j]).times(pools[j].nodes) for j in order), Room())
        node = tuple(n for j in order if (n := nodes[j]) is not None)
        out.append(
            Share(
                tuple(pools[j] for j in order),
                node,
                tuple(per_node[j] for j in order),
                tuple(inside),
                requested,
                most,
                least,
            )
        )
    return out


def _overflows(
    shares: Sequence[Share], pools: Sequence[CapacityPool], free: Sequence[Room | None], hint: str
) -> Iterator[Problem]:
    """The smallest sets of pools whose pods request more than their nodes leave."""
    over: list[frozenset[str]] = []
    for s in shares:
        names = frozenset(p.name for p in s.pools)
        if s.most.holds(s.requested) or any(o < names for o in over):
            continue
        over.append(names)
        yield _overflow(s, hint)


def _overflow(s: Share, hint: str) -> Problem:
    first = s.pools[0]
    left = _left(s)
    fix = [_more_nodes(s), *_bigger_size(s), hint]
    models = any(p.model for p, _ in s.pods)
    return Problem(
        first.at,
        f"{_pools_text(s)} cannot hold what must run there: its pods request {_cpu(s.requested.cpu)} and "
        f"{_mem(s.requested.memory)} ({_pods_text(s.pods)}), and {_allocatable_text(s)}; {left} would stay Pending (an endpoint picker "
        "Pending breaks its model's route; an atomic Helm release whose pods cannot schedule rolls back): "
        + ", or ".join(f for f in fix if f),
        "capacity" if models else "capacity-pools",
    )


def _left(s: Share) -> str:
    cpu, memory = s.requested.cpu - s.most.cpu, s.requested.memory - s.most.memory
    parts = [f"{_cpu(cpu)}" if cpu > 0 else "", f"{_mem(memory)}" if memory > 0 else ""]
    return "pods of " + " and ".join(p for p in parts if p) + " beyond it"


def _needed(s: Share, pool_index: int, room: Room, target: float) -> int:
    """Nodes to add to one pool of the share (of `room` free each) for its pods to take at most
    `target` of the share's nodes."""
    gap_cpu = s.requested.cpu / target - s.most.cpu
    gap_memory = s.requested.memory / target - s.most.memory
    nodes = 0.0
    if gap_cpu > 0 and room.cpu > 0:
        nodes = max(nodes, gap_cpu / room.cpu)
    if gap_memory > 0 and room.memory > 0:
        nodes = max(nodes, gap_memory / room.memory)
    del pool_index
    return math.ceil(nodes - 1e-9)


def _more_nodes(s: Share) -> str:
    pool = s.pools[0]
    room = Room(s.node[0].cpu_m, s.node[0].pod_memory_mi) - s.per_node[0]
    extra = _needed(s, 0, room, 1.0)
    mark = pod_requests().high_water
    calm = _needed(s, 0, room, mark)
    more = f"{pool.grow} {pool.max_nodes} -> {pool.max_nodes + extra}"
    if calm > extra:
        more += f"; {pool.max_nodes + calm} to stay under {mark:.0%}"
    return f"give {pool.name} {extra} more node{'s' if extra != 1 else ''} ({more}{_note(pool)})"


def _note(pool: CapacityPool) -> str:
    return f"; {pool.note}" if pool.note else ""


def _bigger_size(s: Share) -> Iterator[str]:
    """The smallest size of the first pool's family whose nodes would hold the share under the mark."""
    pool = s.pools[0]
    mark = pod_requests().high_water
    others = s.most - (Room(s.node[0].cpu_m, s.node[0].pod_memory_mi) - s.per_node[0]).times(pool.max_nodes)
    for size in same_family_sizes(pool.vm_size):
        node = allocatable(size, pool.kubernetes_version)
        if node is None or node.vcpus <= s.node[0].vcpus:
            continue
        room = (Room(node.cpu_m, node.pod_memory_mi) - s.per_node[0]).times(pool.max_nodes) + others
        if room.cpu * mark >= s.requested.cpu and room.memory * mark >= s.requested.memory:
            yield f"nodes of {size} ({pool.max_nodes} of them leave {_cpu(room.cpu)} and {_mem(room.memory)})"
            return


def _above(s: Share, mark: float) -> bool:
    return s.most.holds(s.requested) and not Room(int(s.most.cpu * mark), int(s.most.memory * mark)).holds(s.requested)


def _high(s: Share, mark: float, hint: str) -> Problem:
    room = Room(s.node[0].cpu_m, s.node[0].pod_memory_mi) - s.per_node[0]
    calm = _needed(s, 0, room, mark)
    return Problem(
        s.pools[0].at,
        f"{_pools_text(s)}: its pods request {_share(s)}, above the {mark:.0%} high-water mark (AKS's own pods whose "
        "requests are not published, a rolling update's extra pod and imperfect packing take the rest); "
        f"give {s.pools[0].name} {calm} more node{'s' if calm != 1 else ''} ({s.pools[0].grow} {s.pools[0].max_nodes} -> "
        f"{s.pools[0].max_nodes + calm}{_note(s.pools[0])}), or {hint}",
        "capacity-high",
    )


def _pod_fits(
    pod: PodSet,
    pools_set: Sequence[int],
    pools: Sequence[CapacityPool],
    nodes: Sequence[Allocatable | None],
    free: Sequence[Room | None],
) -> list[Problem]:
    need = Room(pod.cpu_m, pod.memory_mi)
    found: list[Problem] = []
    if not any(_room(free[j]).holds(need) for j in pools_set):
        biggest = max(pools_set, key=lambda j: (_room(free[j]).cpu, _room(free[j]).memory))
        room = _room(free[biggest])
        found.append(
            Problem(
                pod.at or pools[biggest].at,
                f"{pod.who} requests {_cpu(pod.cpu_m)} and {_mem(pod.memory_mi)} on one node, and a node of "
                f"{pools[biggest].name} ({pools[biggest].vm_size}) leaves {_cpu(room.cpu)} and {_mem(room.memory)} "
                "after AKS's reservation and the DaemonSets: it would stay Pending; use a larger VM size for the pool",
                "capacity" if pod.model else "capacity-pools",
            )
        )
    most = sum(pools[j].max_nodes for j in pools_set)
    if pod.spread and pod.replicas > most:
        found.append(
            Problem(
                pod.at or pools[pools_set[0]].at,
                f"{pod.who} runs {pod.replicas} replicas, never two on one node, and its pools have at most {most} "
                f"node{'s' if most != 1 else ''}: give them {pod.replicas - most} more",
                "capacity-pools",
            )
        )
    del nodes
    return found


def _nowhere(pod: PodSet, pools: Sequence[CapacityPool]) -> Problem:
    taints = sorted({t for p in pools for t in p.taints if not pod.tolerates_taint(t)})
    return Problem(
        pod.at or (pools[0].at if pools else ()),
        f"{pod.who} may run on none of the cluster's non-GPU pools"
        + (f" (it tolerates none of {', '.join(taints)})" if taints else " (none carries the labels it selects)")
        + ": it would stay Pending; keep one pool without taints (the system pool has none)",
        "capacity-pools",
    )


def _daemonsets_too_big(pool: CapacityPool, node: Allocatable | None, per_node: Room) -> Problem:
    assert node is not None
    return Problem(
        pool.at,
        f"the DaemonSets on each node of {pool.name} request {_cpu(per_node.cpu)} and {_mem(per_node.memory)}, and a "
        f"node of {pool.vm_size} leaves {_cpu(node.cpu_m)} and {_mem(node.pod_memory_mi)}: use a larger VM size",
        "capacity-pools",
    )


def _unmeasured(pool: CapacityPool) -> Problem:
    return Problem(
        pool.at,
        f"{pool.vm_size} is not a VM size the capacity budget knows (catalog/pod_requests.yaml vmSizes): what runs on "
        f"{pool.name} is not counted against its nodes",
        "capacity-size",
    )


# ---------------------------------------------------------------- words


def _cpu(m: int) -> str:
    if m % 1000 == 0:
        return f"{m // 1000} CPU"
    return f"{m}m CPU" if m < 1000 else f"{m / 1000:.2f} CPU"


def _mem(mi: int) -> str:
    if mi < 1024:
        return f"{mi} MiB"
    gib = mi / 1024
    return f"{gib:.0f} GiB" if mi % 1024 == 0 else f"{gib:.1f} GiB"


def _pools_text(s: Share) -> str:
    return " and ".join(f"{p.name} ({_where(p)}{_nodes_text(p)} x {p.vm_size})" for p in s.pools)


def _where(p: CapacityPool) -> str:
    return f"{format_path(p.at, 'schema')}, " if p.at else ""


def _nodes_text(p: CapacityPool) -> str:
    return str(p.max_nodes) if p.nodes == p.max_nodes else f"{p.nodes}-{p.max_nodes}"


def _allocatable_text(s: Share) -> str:
    node = s.node[0]
    daemonsets = s.per_node[0]
    text = (
        f"their nodes leave {_cpu(s.most.cpu)} and {_mem(s.most.memory)} (a {node.vm_size} node: {node.vcpus} vCPUs and "
        f"{_mem(node.memory_mi)}, less AKS's {node.reserved_cpu_m}m CPU and {_mem(node.reserved_memory_mi)} reserved "
        f"and {node.eviction_mi} MiB eviction threshold (Kubernetes {node.rule}), less "
        f"{_cpu(daemonsets.cpu)} and {_mem(daemonsets.memory)} of DaemonSets)"
    )
    return text


def _share(s: Share) -> str:
    cpu = s.requested.cpu / s.most.cpu if s.most.cpu else 0.0
    memory = s.requested.memory / s.most.memory if s.most.memory else 0.0
    return (
        f"{_cpu(s.requested.cpu)} of {_cpu(s.most.cpu)} ({cpu:.0%}) and {_mem(s.requested.memory)} of "
        f"{_mem(s.most.memory)} ({memory:.0%})"
    )


def _pods_text(pods: Sequence[Count]) -> str:
    """The pods, alike ones together, the largest first: "2 x endpoint picker: 1 CPU, 2 GiB each"."""
    groups: dict[tuple[str, int, int], int] = {}
    for p, n in pods:
        name = p.who.split(" of ")[0] if p.model else p.who
        key = (name, p.cpu_m, p.memory_mi)
        groups[key] = groups.get(key, 0) + n
    ordered = sorted(groups.items(), key=lambda kv: (-kv[0][1] * kv[1], -kv[0][2] * kv[1], kv[0][0]))
    return "; ".join(
        f"{f'{n} x ' if n > 1 else ''}{name}: {_cpu(cpu) if cpu else 'no CPU'}, {_mem(memory) if memory else 'no memory'}"
        + (" each" if n > 1 else "")
        for (name, cpu, memory), n in ordered
    )


def budget_lines(budget: Budget) -> list[str]:
    """The budget, one line per set of pools (and what runs there), and the pools not measured."""
    mark = pod_requests().high_water
    lines: list[str] = []
    for s in budget.shares:
        state = "over its nodes" if not s.most.holds(s.requested) else "above" if _above(s, mark) else "under"
        grow = (
            f"; at the autoscalers' minimum {_cpu(s.least.cpu)} and {_mem(s.least.memory)}" if s.least != s.most else ""
        )
        lines.append(
            f"capacity {_pools_text(s)}: {_share(s)} requested, {state} the {mark:.0%} mark"
            if state != "over its nodes"
            else f"capacity {_pools_text(s)}: {_share(s)} requested, over its nodes"
        )
        lines.append(f"  {_allocatable_text(s).removeprefix('their nodes leave ')}{grow}; on it: {_pods_text(s.pods)}")
    lines += [
        f"capacity {p.name} ({p.vm_size}): not measured (a VM size the catalog does not know)"
        for p in budget.unmeasured
    ]
    return lines
