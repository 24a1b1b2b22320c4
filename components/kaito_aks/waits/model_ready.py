"""Wait until KAITO reports a model serving (or a tuning job started), and fail with KAITO's
own reason when it does not.

KAITO reports progress as status conditions: a Workspace's `InferenceReady` (tuning:
`JobStarted`), an InferenceSet's `InferenceSetReady`, a RAGEngine's `RAGEngineSucceeded`. `ModelReady` sits after those objects in
the graph and polls them, as `kubectl wait --for=condition=...` does, and runs again when the
objects change. pulumi-kubernetes' `pulumi.com/waitFor` annotation waits the same way but fails with "timed out waiting for the
condition" alone; this wait puts the condition's reason and message into the error.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.vocabulary import CREATED_BY_LABEL, WORKSPACE_LABEL
from kaito_aks.waits import args as wait_args
from kaito_aks.waits.answers import conditions_of, field_at, list_items, segment, text_at
from kaito_aks.waits.args import check_wait_args
from kaito_aks.waits.base import Check, ClusterWaitProvider, Watch, poll_each, wait_options
from kaito_aks.waits.kube_client import KubeApiError, KubeClient, Reader
from kaito_aks.waits.nodeclaims_gone import NODECLAIMS

__all__ = ["conditions_of", "field_at", "list_items"]  # read here by status, and by programs that did

KAITO_API = "/apis/kaito.sh"
FORBIDDEN = "this wait reads the KAITO objects it created: grant `get` on them, or turn the wait off (wait_for_ready / waitForReady)"
NO_CONTROLLER_HINT = (
    "is the KAITO workspace controller running? (KAITO's Helm chart: kubectl -n kaito-workspace get pods; the AKS "
    "add-on: kubectl get deployment -n kube-system | grep kaito; kubectl describe {kind} {name})"
)
# RAGEngines have an operator of their own (the ragengine chart).
CONTROLLER_HINTS = {
    "RAGEngine": "is the KAITO RAGEngine controller running? (kubectl -n kaito-ragengine get pods; kubectl describe "
    "{kind} {name})"
}


@dataclass(frozen=True)
class Watched:
    """One KAITO object and the condition that says it is serving."""

    kind: str  # Workspace, InferenceSet or RAGEngine
    api_version: str  # kaito.sh/v1beta1, kaito.sh/v1alpha1
    namespace: str
    name: str
    condition: str  # InferenceReady, InferenceSetReady, JobStarted, RAGEngineSucceeded
    timeout_seconds: float | None = None  # its own limit, when one wait watches several models

    @property
    def path(self) -> str:
        version = self.api_version.split("/", 1)[1]
        where = f"namespaces/{segment(self.namespace)}/{self.kind.lower()}s/{segment(self.name)}"
        return f"{KAITO_API}/{version}/{where}"

    def props(self) -> dict[str, Any]:
        props: dict[str, Any] = {
            "kind": self.kind,
            "apiVersion": self.api_version,
            "namespace": self.namespace,
            "name": self.name,
            "condition": self.condition,
        }
        if self.timeout_seconds is not None:
            props["timeoutSeconds"] = self.timeout_seconds
        return props

    @classmethod
    def from_props(cls, p: dict[str, Any]) -> Watched:
        limit = p.get("timeoutSeconds")
        return cls(
            p["kind"],
            p["apiVersion"],
            p["namespace"],
            p["name"],
            p["condition"],
            float(limit) if limit is not None else None,
        )


def judge(obj: dict[str, Any] | None, watched: Watched) -> Check:
    """Whether one object reports its condition True."""
    label = f"{watched.kind} {watched.namespace}/{watched.name}"
    hint = CONTROLLER_HINTS.get(watched.kind, NO_CONTROLLER_HINT).format(kind=watched.kind.lower(), name=watched.name)
    if obj is None:
        return Check(False, f"{label} does not exist", "was it deleted?")
    generation = field_at(obj, "metadata", "generation")
    conditions = conditions_of(obj)
    condition = next((c for c in conditions if c.get("type") == watched.condition), None)
    nodes = _node_progress(conditions)
    if condition is None:
        return Check(False, f"{label} reports no {watched.condition} condition" + nodes, hint)
    if condition.get("status") == "True":
        # Not gated on observedGeneration: KAITO 0.8.1 writes a condition only when its status,
        # reason or message change (UpdateStatusConditionIfNotMatch), so after an edit a True
        # condition keeps the older generation for good.
        return Check(True)
    observed = condition.get("observedGeneration", field_at(obj, "status", "observedGeneration"))
    if _number(generation) and _number(observed) and observed < generation:
        return Check(False, f"KAITO has not reconciled {label} generation {generation} (at {observed})", hint)
    return Check(
        False,
        f"{label} is not ready: {_said(condition)}" + nodes,
        f"kubectl describe {watched.kind.lower()} -n {watched.namespace} {watched.name}",
    )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# Where KAITO says how getting the nodes goes: ResourceReady copies the first of its node
# conditions that is not True; NodeClaimReady (0.9+; NodeClaimsReady before) carries, from 0.12,
# the NodeClaim's own failure (quota, SKU unavailable), truncated to 256 characters.
NODE_CONDITIONS = ("ResourceReady", "NodeClaimReady", "NodeClaimsReady", "NodesReady")


def _node_progress(conditions: list[dict[str, Any]]) -> str:
    """KAITO's node conditions that are not True, in its words ('' when there are none)."""
    said: list[str] = []
    for kind in NODE_CONDITIONS:
        c = next((c for c in conditions if c.get("type") == kind), None)
        if c is None or c.get("status") == "True":
            continue
        text = _said(c)
        if not any(text.split("=", 1)[1] == s.split("=", 1)[1] for s in said):  # ResourceReady repeats one
            said.append(text)
    return f"; {'; '.join(said)}" if said else ""


def reason_and_message(condition: dict[str, Any]) -> str:
    """A condition's reason and message, as far as it gives them ('' when neither)."""
    return ": ".join(str(x) for x in (condition.get("reason"), condition.get("message")) if x)


def _said(condition: dict[str, Any]) -> str:
    why = reason_and_message(condition)
    return f"{condition.get('type')}={condition.get('status')}" + (f" ({why})" if why else "")


def wait_for_models(
    client: Reader,
    watched: list[Watched],
    timeout_seconds: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Poll every object until each reports its condition or runs out of its own time; then
    fail naming every object that did not, with KAITO's reason and what its children or
    NodeClaims say (all at once: one wait may watch a whole stack's models)."""
    poll_each([_watch(client, w) for w in watched], timeout_seconds, forbidden=FORBIDDEN, sleep=sleep, clock=clock)


def _watch(client: Reader, w: Watched) -> Watch:
    last: list[dict[str, Any] | None] = [None]

    def look() -> Check:
        last[0] = read_watched(client, w)
        return judge(last[0], w)

    return Watch(
        look, w.timeout_seconds, lambda: provisioning_detail(client, last[0], w), lambda line: explain(client, w, line)
    )


def explain(client: Reader, w: Watched, said: str) -> str:
    """The first broken link of the model's chain (the failure library's walk of it), for an
    error that already says `said`."""
    from kaito_aks.diagnose import Subject, diagnose  # (it reads the waits' own readers)

    found = diagnose(client, Subject(f"{w.namespace}/{w.name}", (w,)))
    return found.explain(said)


# Where KAITO keeps what went wrong with a node it asked for. An InferenceSet reports only its
# replica count; its child Workspaces (labelled with its name) carry the node conditions, and
# from 0.12 their NodeClaimReady holds the NodeClaim's own failure. Before 0.12 KAITO's conditions
# say only "Ready NodeClaims are not enough": the reason is on the NodeClaim (karpenter.sh/v1,
# labelled with the Workspace), in its first condition of Launched, Registered, Initialized
# that is not True (what 0.12's FirstNodeClaimProvisioningState reports).
NODECLAIM_STAGES = ("Launched", "Registered", "Initialized")


def provisioning_detail(client: Reader, obj: dict[str, Any] | None, w: Watched) -> str:
    """What KAITO's children and NodeClaims say of a model that is not serving ('' when
    nothing, or when the credentials may not read them: this only adds to the error)."""
    if obj is None:
        return ""
    try:
        if w.kind == "InferenceSet":
            return _children_detail(client, w)
        if w.kind == "Workspace" and field_at(obj, "resource", "instanceType"):
            return _nodeclaims_detail(client, w.namespace, w.name)
    except (KubeApiError, OSError, ValueError, KeyError, TypeError, AttributeError):
        return ""
    return ""


def _children_detail(client: Reader, w: Watched) -> str:
    path, query = children_query(w)
    said: list[str] = []
    for child in list_items(client.get(path, **query)):
        conditions = conditions_of(child)
        serving = any(c.get("type") == "InferenceReady" and c.get("status") == "True" for c in conditions)
        progress = _node_progress(conditions)
        if not serving and progress:
            said.append(f"its Workspace {text_at(child, 'metadata', 'name')}: {progress.removeprefix('; ')}")
    return f"; {'; '.join(said)}" if said else ""


def _nodeclaims_detail(client: Reader, namespace: str, name: str) -> str:
    said: list[str] = []
    claims = [
        claim
        for query in (nodeclaims_query(namespace, name), karpenter_nodeclaims_query(namespace, name))
        for claim in list_items(client.get(NODECLAIMS, **query))
    ]
    for claim in claims:
        stage, condition = nodeclaim_stage(claim)
        if stage != "Ready" and (condition.get("reason") or condition.get("message")):
            said.append(f"NodeClaim {text_at(claim, 'metadata', 'name')}: {_said(condition)}")
    return f"; {'; '.join(said)}" if said else ""


def children_query(w: Watched) -> tuple[str, dict[str, str]]:
    """Where an InferenceSet's Workspaces are listed: its namespace's, labelled with its name."""
    version = w.api_version.split("/", 1)[1]
    path = f"{KAITO_API}/{version}/namespaces/{segment(w.namespace)}/workspaces"
    return path, {"labelSelector": f"{CREATED_BY_LABEL}={w.name}"}


def nodeclaims_query(namespace: str, name: str) -> dict[str, str]:
    """The NodeClaims KAITO made for a Workspace (labelled with it), for gpu-provisioner."""
    return {"labelSelector": f"{WORKSPACE_LABEL}={name},kaito.sh/workspacenamespace={namespace}"}


def karpenter_nodeclaims_query(namespace: str, name: str) -> dict[str, str]:
    """The NodeClaims Karpenter made for a Workspace's NodePool (0.11+ in Karpenter mode: the
    NodePool's template labels, which Karpenter copies onto them; nodepool.go)."""
    return {
        "labelSelector": f"karpenter.kaito.sh/workspace-name={name},karpenter.kaito.sh/workspace-namespace={namespace}"
    }


AWAITING_RECONCILIATION = "AwaitingReconciliation"  # a stage in progress, not an error (nodeclaim.go:412)


def nodeclaim_stage(claim: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Where a NodeClaim is stuck, by KAITO 0.12's FirstNodeClaimProvisioningState
    (pkg/utils/nodeclaim/nodeclaim.go:418) for one claim: the first of Launched, Registered,
    Initialized whose condition is not True and says something, an error before one that only
    awaits reconciliation; else the first stage not reached (its condition, or {} before it
    reports one); ("Ready", {}) when it has reached them all."""
    by_type = {c.get("type"): c for c in conditions_of(claim)}
    pending: tuple[str, dict[str, Any]] | None = None
    for stage in NODECLAIM_STAGES:
        condition = by_type.get(stage)
        if condition is None or condition.get("status") == "True" or not condition.get("message"):
            continue
        if condition.get("reason") != AWAITING_RECONCILIATION:
            return stage, condition
        pending = pending or (stage, condition)
    if pending is not None:
        return pending
    for stage in NODECLAIM_STAGES:
        if by_type.get(stage, {}).get("status") != "True":
            return stage, by_type.get(stage, {})
    return "Ready", {}


def read_watched(client: Reader, w: Watched) -> dict[str, Any] | None:
    try:
        return client.get(w.path)
    except KubeApiError as err:
        if err.status == 404:
            return None
        raise


class ModelReadyProvider(ClusterWaitProvider):
    compared = ("watched", "revision")  # an edit of the objects is waited for anew

    def id_of(self, props: dict[str, Any]) -> str:
        return "model-ready-" + hashlib.sha256(json.dumps(props["watched"], sort_keys=True).encode()).hexdigest()[:12]

    def limit_seconds(self, props: dict[str, Any]) -> float:
        limits = [float(p["timeoutSeconds"]) for p in props["watched"] if p.get("timeoutSeconds") is not None]
        return max([float(props["timeoutSeconds"]), *limits])

    def wait(self, client: KubeClient, props: dict[str, Any]) -> dict[str, Any]:
        watched = [Watched.from_props(p) for p in props["watched"]]
        wait_for_models(client, watched, float(props["timeoutSeconds"]))
        return {"ready": [w.name for w in watched]}


_PROVIDER = ModelReadyProvider()


class ModelReady(dynamic.Resource, module="kaito-aks", name="ModelReady"):
    """Holds the update until every watched KAITO object reports its condition True, or fails
    it after `timeout_minutes` with the condition's reason. Output: `ready` (the object names)."""

    ready: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        watched: list[Watched],
        revision: pulumi.Input[str],
        timeout_minutes: float,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`revision`: a digest of the watched objects' desired state; when it changes (an edit),
        the wait runs again. Depend it on the watched objects."""
        check_wait_args(
            "ModelReady",
            name,
            access,
            later=("revision",),
            watched=(watched, wait_args.list_of(Watched, "a Watched")),
            revision=(revision, wait_args.text),
            timeout_minutes=(timeout_minutes, wait_args.minutes),
            opts=(opts, wait_args.optional(wait_args.instance(pulumi.ResourceOptions, "pulumi.ResourceOptions"))),
        )
        props: dict[str, Any] = {
            "watched": [w.props() for w in watched],
            "revision": revision,
            "timeoutSeconds": timeout_minutes * 60,
            **access.props(),
            "ready": None,
        }
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))


def revision_of(manifests: list[dict[str, Any]]) -> str:
    """A digest of desired state: what the wait re-runs on."""
    return hashlib.sha256(json.dumps(manifests, sort_keys=True, default=str).encode()).hexdigest()[:16]
