"""Walk one model's chain on the cluster: read what each link is made of (read-only, through the
client the waits use, within its deadline) and judge it with the failure library's detectors.
`python -m stacks status` calls `diagnose` for each model that does not serve; the waits call it
when they give up. A link whose objects the credentials may not read (or that time runs out on)
is `unread`, never an error: the diagnosis only adds to what the caller says."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kaito_aks import catalog
from kaito_aks.azure.arm import ArmError
from kaito_aks.diagnose import azure, cluster, serving, workload
from kaito_aks.diagnose.chain import Diagnosis, Finding, Link, found, in_order, worst
from kaito_aks.kaito.modelmirror import mirror_of, read_mirror
from kaito_aks.parsed import is_dict
from kaito_aks.vocabulary import WORKSPACE_LABEL, GpuDemand
from kaito_aks.waits.answers import conditions_of, field_at, items_of, labels_of, seconds_since, segment, text_at
from kaito_aks.waits.gpu_nodes import GFD_LABELS, survey
from kaito_aks.waits.kaito_ready import WEBHOOKS_API, gates, judge_gate
from kaito_aks.waits.kube_client import KubeApiError, Reader
from kaito_aks.waits.model_ready import (
    NODECLAIMS,
    Watched,
    children_query,
    karpenter_nodeclaims_query,
    nodeclaim_stage,
    nodeclaims_query,
)

LOG_TAIL_LINES = "20"
LOG_BYTES = "16384"
EVENTS = "/api/v1/namespaces/default/events"  # a NodeClaim's (cluster-scoped) events land in default
DAEMONSETS = "/apis/apps/v1/daemonsets"
HELM_RELEASES = "helm.toolkit.fluxcd.io/v2"


@runtime_checkable
class LogReader(Protocol):
    """A reader that also reads text (a container's log): KubeClient."""

    def get_text(self, path: str, **query: str) -> str: ...


class AgentPools(Protocol):
    """Reads gpu-provisioner's AKS agent pools from ARM (kaito_aks.azure.arm.AgentPoolReader);
    raises ArmError when ARM cannot be read."""

    def agent_pool(self, name: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Route:
    """How a routed model is reached: its `route` output (namespace, httpRoute, inferencePool,
    inferencePoolApiVersion, endpointPicker), the label its picker's pods carry, its Gateway and the
    gateway's AuthConfig ((namespace, name); None: none)."""

    route: dict[str, Any]
    picker_label: str
    gateway: tuple[str, str] | None = None
    auth_config: tuple[str, str] | None = None


@dataclass(frozen=True)
class Subject:
    """A model as the caller knows it: its KAITO objects and, where it has them, its route, the
    InferenceSet KEDA scales, and (nodes of your own) the labelSelector and presets KAITO's
    webhook judges (for a model whose object does not exist: why it was refused)."""

    name: str  # namespace/name
    watched: tuple[Watched, ...]
    route: Route | None = None
    scaled: str | None = None
    selector: dict[str, str] | None = None
    demands: tuple[GpuDemand, ...] = ()
    serving: bool = False  # KAITO already says it serves: its workload links are not read again
    kaito_version: str | None = None  # the KAITO release (None: not known), for the name of a model's ModelMirror


class OneLook:
    """One look at the cluster: every answer (and refusal) read once, however many links ask."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self.answers: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Any] | KubeApiError] = {}
        self.calls = 0

    def get(self, path: str, **query: str) -> dict[str, Any]:
        key = (path, tuple(sorted(query.items())))
        if key not in self.answers:
            self.calls += 1
            try:
                self.answers[key] = self.reader.get(path, **query)
            except KubeApiError as err:
                self.answers[key] = err
        answer = self.answers[key]
        if isinstance(answer, KubeApiError):
            raise KubeApiError(answer.status, str(answer).removeprefix(f"HTTP {answer.status}: "), answer.fatal)
        return answer

    def get_text(self, path: str, **query: str) -> str:
        if not isinstance(self.reader, LogReader):
            raise KubeApiError(0, "this reader reads no text")
        self.calls += 1
        return self.reader.get_text(path, **query)


class _UnreadError(Exception):
    """A read the credentials may not make (or that failed): the link is `unread`."""

    def __init__(self, what: str, err: KubeApiError):
        super().__init__(f"{what}: {err}")


@dataclass
class _Walk:
    reader: Reader
    now: float
    arm: AgentPools | str | None  # str: why the Azure side is not read
    links: list[Link] = field(default_factory=list[Link])

    def get(self, path: str, what: str, **query: str) -> dict[str, Any] | None:
        """An answer; None when it is not there (404); _UnreadError when it may not be read."""
        try:
            return self.reader.get(path, **query)
        except KubeApiError as err:
            if err.status == 404:
                return None
            raise _UnreadError(what, err) from None

    def items(self, path: str, what: str, **query: str) -> list[dict[str, Any]]:
        return items_of(self.get(path, what, **query) or {}, what)

    def add(self, name: str, judge: Callable[[], Link]) -> Link:
        """Judge one link; a read it may not make leaves it unread."""
        try:
            link = judge()
        except _UnreadError as err:
            link = Link(name, "unread", str(err))
        except KubeApiError as err:  # a list that is not one
            link = Link(name, "unread", str(err))
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as err:
            link = Link(name, "unread", f"an answer of a shape this cannot read ({type(err).__name__})")
        self.links.append(link)
        return link

    # ------------------------------------------------------------ KAITO's objects

    def model(self, subject: Subject) -> None:
        for w in subject.watched:
            obj = self.add_kaito_object(w, subject)
            if obj is None:
                continue
            if w.kind == "InferenceSet":
                self.inference_set(w, obj, subject)
            elif w.kind == "Workspace":
                self.workspace(w, obj, subject)

    def add_kaito_object(self, w: Watched, subject: Subject) -> dict[str, Any] | None:
        """The KAITO object (its own links judge it); when it is missing, why."""
        try:
            obj = self.get(w.path, f"{w.kind.lower()}s.kaito.sh in {w.namespace}")
        except _UnreadError as err:
            self.links.append(Link("kaito", "unread", str(err)))
            return None
        if obj is None:
            self.add("kaito", lambda: self.missing(w, subject))
        return obj

    def missing(self, w: Watched, subject: Subject) -> Link:
        """Why a KAITO object is not there: KAITO's webhook does not answer, or denies it (the
        same check on nodes of your own), or it was never created."""
        configurations = self.items(WEBHOOKS_API, "validatingwebhookconfigurations")
        for gate in gates(configurations, {f"{w.kind.lower()}s"}):
            check = judge_gate(self.reader, gate)
            if not check.done:
                return found(cluster.kaito_webhook_unavailable(w.kind, w.name, check.waiting_for, check.hint), "kaito")
        if subject.selector is not None and subject.demands:
            query = ",".join(f"{k}={v}" for k, v in sorted(subject.selector.items()))
            nodes = self.items("/api/v1/nodes", "nodes", labelSelector=query)
            self.nodes_link(nodes, subject.selector, own_nodes=True, preset=True)
            check = survey(nodes, subject.selector, list(subject.demands))
            if not check.done and "would deny" in check.waiting_for:
                return found(cluster.kaito_admission_denied(w.kind, w.name, check.waiting_for, check.hint), "kaito")
        return found(cluster.kaito_object_missing(w.kind, w.namespace, w.name), "kaito")

    def inference_set(self, w: Watched, obj: dict[str, Any], subject: Subject) -> None:
        path, query = children_query(w)
        children: list[dict[str, Any]] = []

        def judge() -> Link:
            children.extend(self.items(path, f"workspaces.kaito.sh in {w.namespace}", **query))
            if children:  # its Workspaces say how each replica goes
                own = self.own_condition(obj, w)
                return Link("kaito", "ok", "" if own.state == "ok" else f"{own.brief}: see its Workspaces")
            silent = cluster.kaito_silent(
                obj, w.kind, seconds_since(field_at(obj, "metadata", "creationTimestamp"), self.now)
            )
            if silent is not None:
                return found(silent, "kaito")
            return Link("kaito", "waiting", f"KAITO has made no Workspace for the {w.kind} yet")

        self.add("kaito", judge)
        for child in children:
            name = text_at(child, "metadata", "name")
            if name:
                self.workspace(Watched("Workspace", w.api_version, w.namespace, name, "InferenceReady"), child, subject)

    def own_condition(self, obj: dict[str, Any], w: Watched) -> Link:
        c = next((c for c in conditions_of(obj) if c.get("type") == w.condition), None)
        if c is not None and c.get("status") == "True":
            return Link("kaito", "ok")
        said = (
            f"{w.condition}={c.get('status')} ({c.get('reason')}: {c.get('message')})" if c else f"no {w.condition} yet"
        )
        return Link("kaito", "waiting", said)

    def workspace(self, w: Watched, obj: dict[str, Any], subject: Subject) -> None:
        """A Workspace (a replica): its NodeClaims, nodes, pods, weights, then KAITO's word on it."""
        instance_type = text_at(obj, "resource", "instanceType")
        conditions = {str(c.get("type")): c for c in conditions_of(obj)}
        if not conditions:  # KAITO has not reconciled it: nothing else is made yet
            self.add("kaito", lambda: self.kaito_conditions(obj, w, []))
            return
        claims: list[dict[str, Any]] = []
        before = len(self.links)
        if instance_type:
            self.add("nodeclaims", lambda: self.nodeclaims(w, conditions, claims))
            if isinstance(self.arm, str):
                self.links.append(Link("azure", "unread", self.arm))
            elif self.arm is not None:
                arm = self.arm
                self.add("azure", lambda: self.agent_pools(arm, claims))
        selector = field_at(obj, "resource", "labelSelector", "matchLabels")
        preset = field_at(obj, "inference", "preset", "name") is not None
        if is_dict(selector) and selector:
            labels = {str(k): str(v) for k, v in selector.items()}
            query = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
            nodes: list[dict[str, Any]] = []

            def judge_nodes() -> Link:
                nodes.extend(self.items("/api/v1/nodes", "nodes", labelSelector=query))
                age = seconds_since(field_at(obj, "metadata", "creationTimestamp"), self.now)
                own = not instance_type
                return self.judge_nodes(
                    nodes, labels, own_nodes=own, preset=preset, gpu=_gpu(instance_type, preset), age=age
                )

            self.add("nodes", judge_nodes)
        self.add("pods", lambda: self.pods(w, conditions))
        if "ModelMirrorReady" in conditions:
            mirrored = conditions["ModelMirrorReady"]
            self.add("weights", lambda: self.weights(obj, mirrored, subject.kaito_version))
        mine = self.links[before:]
        self.add("kaito", lambda: self.kaito_conditions(obj, w, mine))

    # ------------------------------------------------------------ the Azure side

    def nodeclaims(self, w: Watched, conditions: dict[str, dict[str, Any]], out: list[dict[str, Any]]) -> Link:
        what = "nodeclaims.karpenter.sh"
        for query in (nodeclaims_query(w.namespace, w.name), karpenter_nodeclaims_query(w.namespace, w.name)):
            out.extend(self.items(NODECLAIMS, what, **query))
        looks = [self.nodeclaim(claim) for claim in out]
        if not out and conditions.get("ResourceReady", {}).get("status") == "True":
            return Link("nodeclaims", "ok")  # KAITO has its nodes (their NodeClaims are not labelled for it)
        if not out:
            kaito = next((conditions[k] for k in ("NodeClaimReady", "ResourceReady") if k in conditions), None)
            said = str((kaito or {}).get("message") or "")
            classified = azure.azure_error("", said) if kaito is not None and kaito.get("status") != "True" else None
            if classified is not None:  # 0.12 copies the NodeClaim's error (which may be gone)
                return found(classified, "nodeclaims")
            events = self.items(
                EVENTS,
                "events in default",
                fieldSelector="involvedObject.kind=NodeClaim,reason=InsufficientCapacityError",
            )
            prefix = f"{w.namespace}-{w.name}-"
            mine = [
                e
                for e in azure.nodeclaim_events(events)
                if (text_at(e, "involvedObject", "name") or "").startswith(prefix)
            ]
            hit = azure.karpenter_insufficient_capacity(mine[0]) if mine else None
            if hit is not None:
                return found(hit, "nodeclaims")
            return Link("nodeclaims", "waiting", "no NodeClaim yet")
        return worst(looks) or Link("nodeclaims", "ok")

    def nodeclaim(self, claim: dict[str, Any]) -> Link:
        name = text_at(claim, "metadata", "name") or ""
        stage, c = nodeclaim_stage(claim)
        if stage == "Ready":
            return Link("nodeclaims", "ok")
        reason, message = str(c.get("reason") or ""), str(c.get("message") or "")
        age = seconds_since(c.get("lastTransitionTime"), self.now)
        hit: Finding | None
        if stage == "Launched":
            hit = azure.nodeclaim_launch_failed(name, reason, message)
        elif stage == "Registered":
            hit = azure.nodeclaim_not_registered(name, reason, message, age)
        else:
            hit = azure.nodeclaim_not_initialized(name, reason, message, age)
        return (
            found(hit, "nodeclaims") if hit is not None else Link("nodeclaims", "waiting", f"NodeClaim {name}: {stage}")
        )

    def agent_pools(self, arm: AgentPools, claims: list[dict[str, Any]]) -> Link:
        """gpu-provisioner's agent pool of each NodeClaim not launched yet (named after it)."""
        looks: list[Link] = []
        for claim in claims:
            if WORKSPACE_LABEL not in labels_of(claim) or nodeclaim_stage(claim)[0] != "Launched":
                continue
            name = text_at(claim, "metadata", "name") or ""
            try:
                pool = arm.agent_pool(name)
            except ArmError as err:
                looks.append(Link("azure", "unread", f"agent pool {name}: {err}"))
                continue
            hit = azure.agent_pool_failed(pool) if pool is not None else None
            looks.append(found(hit, "azure") if hit is not None else Link("azure", "ok" if pool else "none"))
        return worst(looks) or Link("azure", "none")

    # ------------------------------------------------------------ nodes

    def judge_nodes(
        self,
        nodes: list[dict[str, Any]],
        selector: dict[str, str],
        *,
        own_nodes: bool,
        preset: bool,
        gpu: bool,
        age: float | None = None,
    ) -> Link:
        """The nodes a Workspace selects; `age`: the Workspace's (math.inf: it does not exist)."""
        if not nodes:
            return found(cluster.no_matching_node(selector, own_nodes, age), "nodes")
        looks: list[Link] = []
        for node in nodes:
            hit = cluster.node_not_ready(node) or (cluster.node_no_gpus(node) if gpu else None)
            if hit is None and own_nodes and preset and any(label not in labels_of(node) for label in GFD_LABELS):
                hit = cluster.gfd_labels_missing(node, self.gfd_daemonsets())
            looks.append(found(hit, "nodes") if hit is not None else Link("nodes", "ok"))
        return worst(looks) or Link("nodes", "ok")

    def nodes_link(
        self, nodes: list[dict[str, Any]], selector: dict[str, str], *, own_nodes: bool, preset: bool
    ) -> None:
        self.add(
            "nodes",
            lambda: self.judge_nodes(nodes, selector, own_nodes=own_nodes, preset=preset, gpu=preset, age=math.inf),
        )

    def gfd_daemonsets(self) -> list[dict[str, Any]] | None:
        """GPU Feature Discovery's DaemonSets (the GPU Operator's `gpu-feature-discovery`, the
        device-plugin chart's `<release>-gpu-feature-discovery`); None: not readable."""
        try:
            every = self.items(DAEMONSETS, "daemonsets")
        except _UnreadError:
            return None
        return [d for d in every if (text_at(d, "metadata", "name") or "").endswith("gpu-feature-discovery")]

    # ------------------------------------------------------------ pods and weights

    def pods(self, w: Watched, conditions: dict[str, dict[str, Any]]) -> Link:
        path = f"/api/v1/namespaces/{segment(w.namespace)}/pods"
        pods = self.items(path, f"pods in {w.namespace}", labelSelector=f"{WORKSPACE_LABEL}={w.name}")
        if not pods:
            resource = conditions.get("ResourceReady", {})
            if resource.get("status") != "True":
                return Link("pods", "none", "KAITO makes them once its nodes are ready")
            return Link("pods", "waiting", "no pod yet")
        return self.judge_pods(pods, "the model")

    def judge_pods(self, pods: list[dict[str, Any]], what: str, link: str = "pods") -> Link:
        looks: list[Link] = []
        for pod in pods:
            hit = self.crash(pod)
            for judge in workload.POD_DETECTORS:
                if hit is not None:
                    break
                hit = (
                    workload.pod_pending_resources(pod, what) if judge is workload.pod_pending_resources else judge(pod)
                )
            if hit is not None:
                looks.append(found(hit, link))
            elif _pod_ready(pod):
                looks.append(Link(link, "ok"))
            else:
                phase = text_at(pod, "status", "phase") or "Pending"
                looks.append(Link(link, "waiting", f"pod {text_at(pod, 'metadata', 'name')} {phase}, not ready yet"))
        return worst(looks) or Link(link, "ok")

    def crash(self, pod: dict[str, Any]) -> Finding | None:
        """A crashed container, with the last lines of its previous run's log when it can be read
        (needs the node's kubelet; its termination message otherwise)."""
        hit = workload.crashed(pod)
        if hit is None:
            return None
        log: str | None = None
        if isinstance(self.reader, LogReader):
            namespace, name = text_at(pod, "metadata", "namespace") or "", text_at(pod, "metadata", "name") or ""
            path = f"/api/v1/namespaces/{segment(namespace)}/pods/{segment(name)}/log"
            container = text_at(hit[0], "name") or ""
            previous = "false" if field_at(hit[0], "state", "terminated") is not None else "true"
            try:
                log = self.reader.get_text(
                    path, container=container, previous=previous, tailLines=LOG_TAIL_LINES, limitBytes=LOG_BYTES
                )
            except KubeApiError:
                log = None
        return workload.container_crash(pod, log)

    def weights(self, obj: dict[str, Any], condition: dict[str, Any], kaito_version: str | None) -> Link:
        """The Workspace's ModelMirror, by the name KAITO gives it (kaito_aks.kaito.modelmirror)."""
        if condition.get("status") == "True":
            return Link("weights", "ok")
        preset = str(field_at(obj, "inference", "preset", "name") or "")
        name = mirror_of(preset, kaito_version)
        try:
            mirror = read_mirror(self.reader, name)
        except KubeApiError as err:
            raise _UnreadError("modelmirrors.kaito.sh", err) from None
        if mirror.unread:
            return Link("weights", "unread", mirror.unread)
        hit = workload.weights_download(mirror, condition)
        return found(hit, "weights") if hit is not None else Link("weights", "ok")

    def kaito_conditions(self, obj: dict[str, Any], w: Watched, others: list[Link]) -> Link:
        """KAITO's word on a Workspace, after its other links: a failure KAITO reports that no
        other link explains is broken here; a condition that only waits for a link that is
        broken or in progress (its nodes, pods, weights) leaves this link holding."""
        silent = cluster.kaito_silent(
            obj, w.kind, seconds_since(field_at(obj, "metadata", "creationTimestamp"), self.now)
        )
        if silent is not None:
            return found(silent, "kaito")
        c = next((c for c in conditions_of(obj) if c.get("type") == w.condition), None)
        if c is not None and c.get("status") == "True":
            return Link("kaito", "ok")
        said = f"{w.condition}={c.get('status')} ({c.get('reason')})" if c is not None else f"no {w.condition} yet"
        explained = [link for link in others if link.state in ("broken", "waiting")]
        pods_broken = any(link.name == "pods" and link.state == "broken" for link in others)
        hit = cluster.kaito_inference_failed(c) if c is not None else None
        if hit is not None and not pods_broken:  # (its pods say more of its workload than KAITO does)
            return found(hit, "kaito")
        if explained:
            return Link("kaito", "ok", f"{said}: waits for its {explained[0].title}")
        return self.own_condition(obj, w)

    # ------------------------------------------------------------ serving

    def serving(self, subject: Subject) -> None:
        if subject.route is not None:
            r = subject.route
            self.add("picker", lambda: self.picker(r))
            self.add("route", lambda: self.route(r))
            if r.auth_config is not None:
                namespace, name = r.auth_config
                self.add("auth", lambda: self.auth(namespace, name))
        if subject.scaled is not None:
            namespace = subject.name.partition("/")[0]
            name = subject.scaled
            self.add("autoscaler", lambda: self.autoscaler(namespace, name))

    def picker(self, r: Route) -> Link:
        route = r.route
        namespace, pool_name = str(route["namespace"]), str(route["inferencePool"])
        api = str(route["inferencePoolApiVersion"])
        pool = self.get(
            f"/apis/{api}/namespaces/{segment(namespace)}/inferencepools/{segment(pool_name)}", "inferencepools"
        )
        picker = str(route.get("endpointPicker") or "")
        # every picker of the namespace in one list: one look serves all its routed models
        every = self.items(
            f"/api/v1/namespaces/{segment(namespace)}/pods", f"pods in {namespace}", labelSelector=r.picker_label
        )
        pods = [p for p in every if labels_of(p).get(r.picker_label) == picker]
        if pool is None or not pods:
            path = f"/apis/{HELM_RELEASES}/namespaces/{segment(namespace)}/helmreleases/{segment(pool_name)}"
            try:
                release = self.get(path, "helmreleases")
            except _UnreadError:
                release = None
            return found(serving.picker_not_made(pool_name, release), "picker")
        hit = serving.pool_not_accepted(pool)
        if hit is not None:
            return found(hit, "picker")
        return self.judge_pods(pods, "the endpoint picker", link="picker")

    def route(self, r: Route) -> Link:
        route = r.route
        if r.gateway is not None:
            namespace, name = r.gateway
            gateway = self.get(
                f"/apis/gateway.networking.k8s.io/v1/namespaces/{segment(namespace)}/gateways/{segment(name)}",
                "gateways",
            )
            hit = serving.gateway_not_programmed(gateway, namespace, name)
            if hit is not None:
                return found(hit, "route")
        namespace, name = str(route["namespace"]), str(route["httpRoute"])
        obj = self.get(
            f"/apis/gateway.networking.k8s.io/v1/namespaces/{segment(namespace)}/httproutes/{segment(name)}",
            "httproutes",
        )
        if obj is None:
            return Link("route", "broken", f"HTTPRoute {namespace}/{name} does not exist")
        hit = serving.route_not_accepted(obj) or serving.route_refs_unresolved(obj)
        return found(hit, "route") if hit is not None else Link("route", "ok")

    def auth(self, namespace: str, name: str) -> Link:
        path = f"/apis/authorino.kuadrant.io/v1beta3/namespaces/{segment(namespace)}/authconfigs/{segment(name)}"
        hit = serving.auth_not_ready(self.get(path, "authconfigs.authorino.kuadrant.io"), namespace, name)
        return found(hit, "auth") if hit is not None else Link("auth", "ok")

    def autoscaler(self, namespace: str, name: str) -> Link:
        path = f"/apis/keda.sh/v1alpha1/namespaces/{segment(namespace)}/scaledobjects/{segment(name)}"
        hit = serving.scaler_not_ready(self.get(path, "scaledobjects.keda.sh"), name)
        return found(hit, "autoscaler") if hit is not None else Link("autoscaler", "ok")


def _pod_ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions_of(pod))


def _gpu(instance_type: str | None, preset: bool) -> bool:
    """Whether the nodes must advertise GPUs: a GPU size, or a preset on nodes of your own."""
    if instance_type:
        return instance_type in catalog.all_gpu_skus()
    return preset


def diagnose(
    reader: Reader,
    subject: Subject,
    *,
    arm: AgentPools | str | None = None,
    clock: Callable[[], float] = time.time,
) -> Diagnosis:
    """Why `subject` does or does not serve: each link of its chain. Reads only; each call ends by
    the reader's deadline; what may not be read is an `unread` link. `arm`: gpu-provisioner's
    agent pools in Azure (a str: why they cannot be read; None: not looked for)."""
    walk = _Walk(reader, clock(), arm)
    if subject.serving:
        walk.links += [Link(name, "ok") for name in ("nodeclaims", "nodes", "kaito", "pods")]
    else:
        walk.model(subject)
    walk.serving(subject)
    return Diagnosis(f"model {subject.name}", in_order(walk.links))


def explain_nodes(reader: Reader, selector: dict[str, str], *, clock: Callable[[], float] = time.time) -> Diagnosis:
    """The nodes link alone, for nodes of your own that a preset will be admitted on (the GPU-node
    wait): none matches, one is not Ready, advertises no GPUs, or lacks GFD's labels (and why)."""
    walk = _Walk(reader, clock(), None)
    query = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))

    def judge() -> Link:
        nodes = walk.items("/api/v1/nodes", "nodes", labelSelector=query)
        return walk.judge_nodes(nodes, selector, own_nodes=True, preset=True, gpu=True, age=math.inf)

    walk.add("nodes", judge)
    return Diagnosis(f"nodes {selector}", in_order(walk.links))
