"""What KAITO says of models already deployed, read from the cluster: each serving object's
conditions (reasons, ages), the pods and nodes a replica runs on, and the NodeClaims of the
nodes KAITO makes. Read-only, through the client the waits use; `python -m stacks status`
prints it, and any program may call `read_model` with the objects a KaitoModel watches
(`watched_objects(model.plan)`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from kaito_aks.parsed import is_list
from kaito_aks.waits.answers import conditions_of, field_at, items_of, seconds_since, segment
from kaito_aks.waits.gpu_nodes import GPU_COUNT, GPU_PRODUCT
from kaito_aks.waits.kube_client import KubeApiError, Reader
from kaito_aks.waits.model_ready import (
    NODECLAIMS,
    WORKSPACE_LABEL,
    Watched,
    children_query,
    judge,
    karpenter_nodeclaims_query,
    nodeclaim_stage,
    nodeclaims_query,
    read_watched,
    reason_and_message,
)

# A container that waits for one of these will not start without a change: the model failed.
STUCK_CONTAINER_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)

State = Literal["serving", "waiting", "failed"]


REFUSED = (
    "the cluster refused the credentials ({err}): they have expired or are not the cluster's; log in again "
    "(e.g. az aks get-credentials, kubelogin) or refresh the kubeconfig"
)


class StatusReadError(RuntimeError):
    """The status cannot be read: the cluster does not answer, or the credentials may not read
    the KAITO objects themselves."""


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    age_seconds: float | None  # since its last transition

    def failing(self) -> bool:
        """KAITO's own word for a failure (WorkspaceInferenceStatusFailed, a NodeClaim's launch
        failure): a False condition whose reason says Failed."""
        return self.status == "False" and "fail" in self.reason.lower()

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "ageSeconds": None if self.age_seconds is None else round(self.age_seconds),
        }


@dataclass(frozen=True)
class Node:
    name: str
    gpu_product: str | None  # GPU Feature Discovery's labels; None on CPU nodes (or not labelled yet)
    gpus: int | None
    read: bool = True  # False: the credentials may not read nodes

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "gpuProduct": self.gpu_product, "gpus": self.gpus, "read": self.read}


@dataclass(frozen=True)
class NodeClaim:
    name: str
    stage: str  # the first of Launched, Registered, Initialized that is not True, else Ready
    said: str  # its reason and message there

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "stage": self.stage, "said": self.said}


@dataclass(frozen=True)
class ObjectStatus:
    """One KAITO object (a Workspace, an InferenceSet) as its controller reports it."""

    kind: str
    name: str
    state: State
    why: str  # what it waits for or why it failed ('' when serving)
    conditions: tuple[Condition, ...] = ()
    pods_ready: int = 0
    pods: int = 0
    pods_said: str = ""  # why a pod is not running (the scheduler's word, a container's)
    nodes: tuple[Node, ...] = ()
    node_claims: tuple[NodeClaim, ...] = ()
    ready_replicas: int | None = None  # an InferenceSet's count
    replicas: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "state": self.state,
            "why": self.why,
            "conditions": [c.to_json() for c in self.conditions],
        }
        if self.kind == "InferenceSet":
            out |= {"readyReplicas": self.ready_replicas, "replicas": self.replicas}
        else:
            out |= {
                "pods": {"ready": self.pods_ready, "total": self.pods, "said": self.pods_said},
                "nodes": [n.to_json() for n in self.nodes],
                "nodeClaims": [c.to_json() for c in self.node_claims],
            }
        return out


@dataclass(frozen=True)
class ModelStatus:
    """A model: the objects that say whether it serves, and its replicas (for a Workspace per
    replica the same Workspaces; for an InferenceSet the Workspaces KAITO made for it)."""

    objects: tuple[ObjectStatus, ...]
    replicas: tuple[ObjectStatus, ...]
    unreadable: tuple[str, ...] = ()  # what the credentials may not read (the rest is shown)

    @property
    def state(self) -> State:
        every = (*self.objects, *self.replicas)
        if any(o.state == "failed" for o in every):
            return "failed"
        serving = bool(self.objects) and all(o.state == "serving" for o in self.objects)
        return "serving" if serving else "waiting"  # no object known: nothing says it serves

    @property
    def ready(self) -> tuple[int, int]:
        """Replicas serving, of how many."""
        sets = [o for o in self.objects if o.kind == "InferenceSet"]
        if sets:
            return sum(o.ready_replicas or 0 for o in sets), sum(o.replicas or 0 for o in sets)
        return sum(o.state == "serving" for o in self.objects), len(self.objects)

    def to_json(self) -> dict[str, Any]:
        served, of = self.ready
        return {
            "state": self.state,
            "ready": f"{served}/{of}",
            "objects": [o.to_json() for o in self.objects if o.kind == "InferenceSet"],
            "replicas": [o.to_json() for o in self.replicas],
            "unreadable": list(self.unreadable),
        }


@dataclass
class _Pass:
    """One reading of the cluster: nodes are read once however many replicas run on them."""

    reader: Reader
    now: float
    nodes: dict[str, Node | None] = field(default_factory=dict[str, "Node | None"])
    unreadable: list[str] = field(default_factory=list[str])

    def get(self, path: str, what: str, **query: str) -> dict[str, Any] | None:
        """An answer, or None when the object (or its kind) is not there or may not be read
        (said in `unreadable`)."""
        try:
            return self.reader.get(path, **query)
        except KubeApiError as err:
            if err.status == 0:
                raise StatusReadError(str(err)) from None
            if err.status == 401:
                raise StatusReadError(REFUSED.format(err=err)) from None
            if err.status == 403:
                if what not in self.unreadable:
                    self.unreadable.append(what)
                return None
            if err.status == 404:
                return None
            raise StatusReadError(f"reading {what}: {err}") from None


def read_model(reader: Reader, watched: Iterable[Watched], *, clock: Callable[[], float] = time.time) -> ModelStatus:
    """What KAITO reports for one model, from the objects whose condition says it serves.
    Raises StatusReadError when the cluster does not answer or the KAITO objects may not be
    read; pods, nodes and NodeClaims the credentials may not read are named in `unreadable`."""
    p = _Pass(reader, clock())
    objects: list[ObjectStatus] = []
    replicas: list[ObjectStatus] = []
    for w in watched:
        try:
            obj = read_watched(reader, w)
        except KubeApiError as err:
            if err.status == 401:
                raise StatusReadError(REFUSED.format(err=err)) from None
            if err.status == 403:
                plural = f"{w.kind.lower()}s.{w.api_version.split('/')[0]}"
                raise StatusReadError(
                    f"the credentials may not read {plural} in namespace {w.namespace} ({err}): grant get and list "
                    "on KAITO's objects, and on pods and nodes for the rest"
                ) from None
            raise StatusReadError(str(err)) from None
        status = _object_status(p, obj, w)
        objects.append(status)
        if w.kind == "InferenceSet" and obj is not None:
            replicas += _children(p, w)
        elif w.kind == "Workspace":
            replicas.append(status)
    return ModelStatus(tuple(objects), tuple(replicas), tuple(p.unreadable))


def _children(p: _Pass, w: Watched) -> list[ObjectStatus]:
    """An InferenceSet's Workspaces (labelled with its name, made from its template)."""
    path, query = children_query(w)
    what = f"workspaces.kaito.sh in {w.namespace}"
    children = sorted(
        items_of(p.get(path, what, **query) or {}, what), key=lambda o: str(field_at(o, "metadata", "name"))
    )
    return [
        _object_status(
            p, child, Watched("Workspace", w.api_version, w.namespace, child["metadata"]["name"], "InferenceReady")
        )
        for child in children
        if isinstance(field_at(child, "metadata", "name"), str)
    ]


def _object_status(p: _Pass, obj: dict[str, Any] | None, w: Watched) -> ObjectStatus:
    check = judge(obj, w)
    conditions = tuple(_condition(c, p.now) for c in conditions_of(obj or {}))
    ready_replicas = replicas = None
    if w.kind == "InferenceSet" and obj is not None:
        ready_replicas = _int(field_at(obj, "status", "readyReplicas")) or 0
        replicas = _int(field_at(obj, "status", "replicas"))
        replicas = replicas if replicas is not None else _int(field_at(obj, "spec", "replicas"))
    pods_ready = pods = 0
    nodes: tuple[Node, ...] = ()
    claims: tuple[NodeClaim, ...] = ()
    stuck = pending = ""
    if w.kind == "Workspace" and obj is not None:
        pods_ready, pods, on, stuck, pending = _pods(p, w)
        workers = field_at(obj, "status", "workerNodes")
        names = on or [n for n in (workers if is_list(workers) else []) if isinstance(n, str)]
        nodes = tuple(n for n in (_node(p, name) for name in dict.fromkeys(names)) if n is not None)
        if field_at(obj, "resource", "instanceType"):
            claims = _node_claims(p, w)
    failing = next((c for c in conditions if c.failing()), None)
    state: State = "waiting"
    why = _waiting_for(obj, w, conditions)
    if check.done:
        state, why = "serving", ""
    elif failing is not None or stuck:
        state = "failed"
        why = f"{failing.type}=False ({failing.reason}: {failing.message})" if failing is not None else stuck
    return ObjectStatus(
        w.kind,
        w.name,
        state,
        why,
        conditions=conditions,
        pods_ready=pods_ready,
        pods=pods,
        pods_said=stuck or pending,
        nodes=nodes,
        node_claims=claims,
        ready_replicas=ready_replicas,
        replicas=replicas,
    )


def _waiting_for(obj: dict[str, Any] | None, w: Watched, conditions: tuple[Condition, ...]) -> str:
    """What a replica waits for, in a few words (its conditions say the rest)."""
    if obj is None:
        return "not found (not created yet, or deleted)"
    if not conditions:
        return "KAITO has not reported on it yet"
    said = next((c for c in conditions if c.type == w.condition), None)
    if said is None:
        return f"no {w.condition} yet"
    generation, observed = field_at(obj, "metadata", "generation"), field_at(obj, "status", "observedGeneration")
    if isinstance(generation, int) and isinstance(observed, int) and observed < generation:
        return f"KAITO has not reconciled generation {generation} yet (at {observed})"
    return f"{said.type}={said.status}"


def _pods(p: _Pass, w: Watched) -> tuple[int, int, list[str], str, str]:
    """Ready pods, pods, the nodes they run on, why a container will not start, and why a pod
    is not scheduled (the scheduler's message, e.g. no node matches or fits) ('' when none)."""
    path = f"/api/v1/namespaces/{segment(w.namespace)}/pods"
    what = f"pods in {w.namespace}"
    answer = items_of(p.get(path, what, labelSelector=f"{WORKSPACE_LABEL}={w.name}") or {}, what)
    ready = total = 0
    on: list[str] = []
    stuck = pending = ""
    for pod in answer:
        total += 1
        name = field_at(pod, "metadata", "name")
        conditions = conditions_of(pod)
        ready += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        unscheduled = next(
            (c for c in conditions if c.get("type") == "PodScheduled" and c.get("status") == "False"), None
        )
        if unscheduled is not None and not pending:
            said = reason_and_message(unscheduled)
            pending = f"pod {name} not scheduled" + (f" ({said})" if said else "")
        node = field_at(pod, "spec", "nodeName")
        if isinstance(node, str) and node:
            on.append(node)
        containers = field_at(pod, "status", "containerStatuses")
        for container in containers if is_list(containers) else []:
            reason = field_at(container, "state", "waiting", "reason")
            message = field_at(container, "state", "waiting", "message")
            if reason in STUCK_CONTAINER_REASONS and not stuck:
                stuck = f"pod {name}: {reason}" + (f" ({message})" if message else "")
    return ready, total, on, stuck, pending


def _node(p: _Pass, name: str) -> Node | None:
    if name not in p.nodes:
        obj = p.get(f"/api/v1/nodes/{segment(name)}", "nodes")
        if obj is None:
            p.nodes[name] = Node(name, None, None, read=False) if "nodes" in p.unreadable else None
        else:
            product = field_at(obj, "metadata", "labels", GPU_PRODUCT)
            count = field_at(obj, "metadata", "labels", GPU_COUNT)
            p.nodes[name] = Node(name, product if isinstance(product, str) else None, _int(count))
    return p.nodes[name]


def _node_claims(p: _Pass, w: Watched) -> tuple[NodeClaim, ...]:
    what = "nodeclaims.karpenter.sh"
    claims = [
        claim
        for query in (nodeclaims_query(w.namespace, w.name), karpenter_nodeclaims_query(w.namespace, w.name))
        for claim in items_of(p.get(NODECLAIMS, what, **query) or {}, what)
    ]
    out: list[NodeClaim] = []
    for claim in claims:
        stage, c = nodeclaim_stage(claim)
        out.append(NodeClaim(str(field_at(claim, "metadata", "name")), stage, reason_and_message(c)))
    return tuple(out)


def _condition(c: dict[str, Any], now: float) -> Condition:
    return Condition(
        str(c.get("type", "")),
        str(c.get("status", "")),
        str(c.get("reason") or ""),
        str(c.get("message") or ""),
        seconds_since(c.get("lastTransitionTime"), now),
    )


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None
