"""`python -m stacks status`: what a deployed stack's models are doing, read from its cluster.

What was deployed comes from the stack's outputs (`pulumi stack output`: each model's KAITO
objects, endpoint and model id); what KAITO makes of it from the cluster, read with the stack's
own credentials (its `kubeconfig` output on AKS, else its cluster config's kubeconfig, as the
program's provider reads it) and the client the waits use. Credentials are never printed.

Exit codes: 0 every model serves; 1 one does not (waiting or failed); 2 the status cannot be read
(including every answer of the cluster's that is not a Kubernetes answer: a one-line error). What
the cluster says is printed with its control characters escaped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaito_aks.diagnose import Diagnosis, OneLook
from kaito_aks.kaito.modelmirror import MirrorStatus, read_mirror
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import bounded, escaped
from kaito_aks.serving.status import (
    AutoscalerStatus,
    GatewayStatus,
    RouteStatus,
    read_autoscaler,
    read_gateway,
    read_route,
)
from kaito_aks.vocabulary import GpuDemand
from kaito_aks.waits.kube_client import KubeApiError, KubeClient, KubeconfigError
from kaito_aks.waits.model_ready import Watched
from kaito_aks.waits.status import ModelStatus, Node, ObjectStatus, StatusReadError, read_model
from stacks import diagnosis as why
from stacks.stackfile import StackFile, StackFileError, read_stack_file

SERVING, NOT_SERVING, UNREADABLE = 0, 1, 2
PULUMI_TIMEOUT_SECONDS = 120
READ_SECONDS = 300.0  # one reading of the cluster, every call in it (each call: kube_client's own limit)
MESSAGE_CHARS = 160


class StatusError(Exception):
    """The stack's status cannot be read; the message says why and what to do."""


@dataclass(frozen=True)
class Served:
    """One thing the stack serves (a model, a RAG engine): its outputs and what KAITO reports."""

    key: str  # namespace/name
    kind: str  # model, ragEngine
    outputs: dict[str, Any]
    status: ModelStatus
    route: RouteStatus | None = None  # through the stack's gateway
    autoscaler: AutoscalerStatus | None = None
    mirror: MirrorStatus | None = None  # KAITO's ModelMirror of its weights (model streaming)
    diagnosis: Diagnosis | None = None  # why it does not serve (None: not looked, it serves)

    @property
    def state(self) -> str:
        """KAITO's word, unless a link of its chain is broken (a route not accepted, an
        AuthConfig not ready...): then it fails."""
        if self.diagnosis is not None and self.diagnosis.broken:
            return "failed"
        return self.status.state

    @property
    def ready(self) -> tuple[int, int]:
        """Replicas serving, of how many: KAITO's count, else (objects not made yet) the stack's."""
        served, of = self.status.ready
        wanted = self.outputs.get("replicas")
        if of == 0:
            of = wanted if isinstance(wanted, int) and self.kind == "model" else 1
        return served, of


@dataclass(frozen=True)
class StackStatus:
    stack: str
    kaito_version: str | None
    cluster: str  # how it was reached, never the credentials
    served: tuple[Served, ...]
    read_at: float
    gateway: dict[str, Any] | None = None  # the stack's `gateway` output
    gateway_status: GatewayStatus | None = None
    autoscaling: dict[str, Any] | None = None  # the stack's `autoscaling` output

    @property
    def code(self) -> int:
        gateway_up = self.gateway_status is None or self.gateway_status.programmed.status == "True"
        serving = all(s.state == "serving" for s in self.served)
        return SERVING if serving and gateway_up else NOT_SERVING


# ---------------------------------------------------------------- what was deployed, and how to reach it


def pulumi(root: Path, *args: str) -> str:
    """The Pulumi CLI's output (it may hold secrets: never printed)."""
    cli = shutil.which("pulumi")
    if cli is None:
        raise StatusError(
            "status reads the stack's outputs with the Pulumi CLI, which is not on PATH: install it "
            "(https://www.pulumi.com/docs/iac/download-install/) and log in to the stack's backend"
        )
    try:
        done = subprocess.run(
            [cli, *args, "--non-interactive"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=PULUMI_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise StatusError(f"`pulumi {' '.join(args[:2])}` did not finish: {err}") from None
    if done.returncode != 0:
        said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in said if line.startswith("error:")]  # the CLI's own, not a warning
        line = (errors or said or ["no message"])[-1]
        raise StatusError(f"`pulumi {' '.join(args[:2])}` failed: {bounded(line)}")
    return done.stdout


def selected_stack(root: Path) -> str:
    """The stack `pulumi stack select` chose, for `status` without a stack name."""
    try:
        name = pulumi(root, "stack", "--show-name").strip()
    except StatusError as err:
        raise StatusError(f"name a stack (no stack is selected: {err})") from None
    if not name:
        raise StatusError("name a stack: none is selected (`pulumi stack select <stack>`)")
    return name


def stack_outputs(stack: str, root: Path) -> dict[str, Any]:
    text = pulumi(root, "stack", "output", "--json", "--show-secrets", "--stack", stack)
    try:
        outputs = json.loads(text)
    except ValueError:
        raise StatusError(f"`pulumi stack output --stack {stack}` did not print JSON") from None
    if not is_dict(outputs) or not outputs:
        raise StatusError(f"stack {stack} has no outputs yet: run `pulumi up --stack {stack}` first")
    return dict(outputs)


def cluster_client(stack: str, f: StackFile, outputs: Mapping[str, Any], root: Path) -> tuple[KubeClient, str]:
    """The client and how the cluster is named: the stack's `kubeconfig` output (a cluster it
    made or adopted), else its cluster.kubeconfig (the secret kaito-aks:kubeconfig, a path, or
    $KUBECONFIG / ~/.kube/config, with its context), as the program's provider reads them."""
    name = str(outputs.get("clusterName") or stack)
    try:
        contents = outputs.get("kubeconfig")
        if isinstance(contents, str) and contents.strip():
            return KubeClient.from_kubeconfig(contents), f"cluster {name}"
        cluster = f.config.get("kaito-aks:cluster")
        given = cluster.get("kubeconfig") if is_dict(cluster) else None
        given = given if is_dict(given) else {}
        context = given.get("context") if isinstance(given.get("context"), str) else None
        path = given.get("path") if isinstance(given.get("path"), str) else None
        secret = None
        if "kaito-aks:kubeconfig" in f.secrets:
            secret = pulumi(root, "config", "get", "kaito-aks:kubeconfig", "--stack", stack)
        where = f"kubeconfig context {context}" if context else "the kubeconfig's current context"
        file = str(root / Path(path).expanduser()) if path else None  # relative to where `pulumi up` runs
        client = KubeClient.from_kubeconfig(secret, file, context)
        return client, f"cluster {name} ({where})"
    except KubeconfigError as err:  # its text never quotes the kubeconfig
        raise StatusError(f"the stack's kubeconfig cannot be used: {err}") from None


def watched_of(key: str, entry: object) -> list[Watched] | None:
    """The KAITO objects an output entry names (None for outputs of an earlier kaito-aks)."""
    found = entry.get("kaito") if is_dict(entry) else None
    if found is None:
        return None
    fields = ("kind", "apiVersion", "namespace", "name", "condition")
    sound = is_list(found) and all(
        is_dict(p) and all(isinstance(p.get(f), str) for f in fields) and "/" in p["apiVersion"] for p in found
    )
    try:
        if sound:
            return [Watched.from_props(p) for p in found]
    except (TypeError, ValueError):  # a timeoutSeconds that is not a number
        pass
    raise StatusError(f"the stack output for {key} does not name its KAITO objects as kaito-aks writes them")


@dataclass(frozen=True)
class Planned:
    """A model or RAG engine as the stack file plans it: how its outputs would read, its objects."""

    kind: str  # model, ragEngine
    outputs: dict[str, Any]
    watched: tuple[Watched, ...]
    selector: dict[str, str] | None = None  # nodes of your own: the matchLabels KAITO's webhook lists
    demands: tuple[GpuDemand, ...] = ()  # and what it asks of them


def planned_objects(f: StackFile) -> dict[str, Planned] | None:
    """What the stack file plans, by key (None when it does not validate): for outputs written
    before they named their objects, and for models added since the last `pulumi up` that
    succeeded (a failed `up` records no outputs, though KAITO may already have its objects)."""
    from kaito_aks.model.component import watched_objects
    from kaito_aks.model.names import endpoint_of
    from kaito_aks.model.plan import plan_model
    from kaito_aks.rag.component import watched_object
    from kaito_aks.rag.plan import plan_rag_engine
    from stacks.errors import StackConfigError
    from stacks.load import parse_stack_file

    try:
        cfg = parse_stack_file(f)
    except StackConfigError:
        return None
    out: dict[str, Planned] = {}
    for m in cfg.models:
        plan = plan_model(m)
        served = {
            "model": plan.served_model,
            "source": plan.model,
            "endpoint": endpoint_of(m) if plan.service else None,
            "replicas": plan.replicas,
        }
        nodes = plan.gpu_nodes
        out[plan.key] = Planned(
            "model",
            served,
            tuple(watched_objects(plan)),
            dict(nodes.selector) if nodes is not None else None,
            (nodes.demand,) if nodes is not None else (),
        )
    for e in cfg.rag_engines:
        engine = {"workspace": e.workspace}
        out[f"{e.args.namespace}/{e.args.name}"] = Planned(
            "ragEngine", engine, (watched_object(plan_rag_engine(e.args)),)
        )
    return out


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class Deployed:
    """What the stack deployed (its outputs, read once) and how to reach its cluster."""

    stack: str
    kaito_version: str | None
    cluster: str
    client: KubeClient
    entries: tuple[tuple[str, str, dict[str, Any], tuple[Watched, ...]], ...]  # kind, key, outputs, objects
    gateway: dict[str, Any] | None = None  # the `gateway` output
    autoscaling: dict[str, Any] | None = None  # the `autoscaling` output
    planned: dict[str, Planned] | None = None  # the stack file's plan (None: it does not validate)
    azure: why.AzureSide | None = None  # its agent pools, where gpu-provisioner makes the nodes


def deployed(stack: str, root: Path) -> Deployed:
    """Raises StatusError when the stack's outputs or credentials cannot be had."""
    try:
        f = read_stack_file(stack, root)
    except (FileNotFoundError, StackFileError) as err:
        raise StatusError(str(err)) from None
    outputs = stack_outputs(stack, root)
    client, cluster = cluster_client(stack, f, outputs, root)
    charts = outputs.get("charts")
    kaito = charts.get("kaito") if is_dict(charts) else None
    version = kaito.get("version") if is_dict(kaito) else None
    planned = planned_objects(f)
    entries: list[tuple[str, str, dict[str, Any], tuple[Watched, ...]]] = []
    for kind, section in (("model", "workspaces"), ("ragEngine", "ragEngines")):
        found = outputs.get(section)
        for key, value in found.items() if is_dict(found) else ():
            entry = dict(value) if is_dict(value) else {}
            watched = watched_of(str(key), entry)
            if watched is None:
                if planned is None:
                    raise StatusError(
                        "the stack's outputs do not name its KAITO objects (deployed by an earlier kaito-aks) and its "
                        "stack file does not validate: fix it and run `pulumi up` once"
                    )
                watched = list(planned[str(key)].watched) if str(key) in planned else []
            entries.append((kind, str(key), entry, tuple(watched)))
    known = {key for _, key, _, _ in entries}
    for key, p in (planned or {}).items():
        if key not in known:
            entries.append((p.kind, key, {**p.outputs, "inOutputs": False}, p.watched))
    gateway, autoscaling = outputs.get("gateway"), outputs.get("autoscaling")
    return Deployed(
        stack,
        version if isinstance(version, str) else None,
        cluster,
        client,
        tuple(entries),
        dict(gateway) if is_dict(gateway) else None,
        dict(autoscaling) if is_dict(autoscaling) else None,
        planned,
        why.azure_side(f, outputs),
    )


def read_stack(d: Deployed, *, clock: Callable[[], float] = time.time) -> StackStatus:
    """What KAITO reports now; raises StatusError when the cluster cannot be read (within
    READ_SECONDS in all)."""
    deadline = d.client.deadline = time.monotonic() + READ_SECONDS
    look = OneLook(d.client)  # each answer read once, however many of a model's links ask
    try:
        served = tuple(
            _served(d, look, kind, key, entry, watched, deadline, clock) for kind, key, entry, watched in d.entries
        )
        gateway = (
            read_gateway(look, str(d.gateway["namespace"]), str(d.gateway["name"]))
            if d.gateway is not None and isinstance(d.gateway.get("name"), str)
            else None
        )
    except StatusReadError as err:
        raise StatusError(f"{d.cluster}: {err}") from None
    except KubeApiError as err:  # an answer that is not one (not JSON, too large, a redirect...)
        raise StatusError(f"{d.cluster}: {err}") from None
    except KubeconfigError as err:  # fetching a fresh token (a token file, an exec plugin) failed
        raise StatusError(f"{d.cluster}: the credentials could not be renewed: {err}") from None
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as err:
        what = f"{type(err).__name__}: {err}"
        raise StatusError(
            f"{d.cluster}: an answer from the API server has a shape status cannot read ({what})"
        ) from None
    return StackStatus(d.stack, d.kaito_version, d.cluster, served, clock(), d.gateway, gateway, d.autoscaling)


def _served(
    d: Deployed,
    look: OneLook,
    kind: str,
    key: str,
    entry: dict[str, Any],
    watched: tuple[Watched, ...],
    deadline: float,
    clock: Callable[[], float],
) -> Served:
    """One model as KAITO reports it, its route and autoscaler, and (when it does not serve, or is
    routed or autoscaled) the chain it serves through."""
    status = read_model(look, watched, clock=clock)
    route, scaler = _serving(look, key, entry)
    plan = (d.planned or {}).get(key)
    subject = why.subject_of(
        key,
        entry,
        watched,
        d.gateway,
        d.kaito_version,
        serving=status.state == "serving",
        selector=plan.selector if plan is not None else None,
        demands=plan.demands if plan is not None else (),
    )
    found = why.explain(look, subject, d.azure, deadline, clock) if kind == "model" else None
    # the same look: the weights link's reading of the mirror, not a second GET
    mirror = read_mirror(look, entry["modelMirror"]) if isinstance(entry.get("modelMirror"), str) else None
    return Served(key, kind, entry, status, route, scaler, mirror=mirror, diagnosis=found)


def _serving(look: OneLook, key: str, entry: dict[str, Any]) -> tuple[RouteStatus | None, AutoscalerStatus | None]:
    """A model's route and autoscaler as the cluster reports them (None: it has none)."""
    route, scaled = entry.get("route"), entry.get("autoscaling")
    namespace, _, name = key.partition("/")
    try:
        found_route = read_route(look, dict(route)) if is_dict(route) else None
    except (KeyError, TypeError):
        raise StatusError(f"the stack output for {key} does not name its route as kaito-aks writes it") from None
    found_scaler = read_autoscaler(look, namespace, name) if is_dict(scaled) else None
    return found_route, found_scaler


# ---------------------------------------------------------------- printing


def age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def _conditions(o: ObjectStatus) -> str:
    said = []
    for c in o.conditions:
        text = f"{c.type}={c.status} ({c.reason or '-'}, {age(c.age_seconds)}"
        if c.status != "True" and c.message:
            text += f": {_short(c.message)}"
        said.append(text + ")")
    return " ".join(said)


def _short(message: str) -> str:
    said = bounded(message)
    return said if len(said) <= MESSAGE_CHARS else said[: MESSAGE_CHARS - 3] + "..."


def _replica_line(o: ObjectStatus) -> str:
    state = o.state if o.state == "serving" else f"{o.state}: {o.why}"
    parts = [f"{o.kind} {o.name}", state, *([_conditions(o)] if o.conditions else [])]
    if o.kind == "Workspace":
        parts.append(f"pods {o.pods_ready}/{o.pods} ready")
        if o.pods_said and o.pods_said != o.why:
            parts.append(_short(o.pods_said))
        if o.nodes:
            parts.append("on " + ", ".join(_node(n) for n in o.nodes))
        parts += [f"NodeClaim {c.name} {c.stage}" + (f" ({c.said})" if c.said else "") for c in o.node_claims]
    return "  ".join(parts)


def _node(n: Node) -> str:
    if not n.read:
        return n.name
    if n.gpu_product is None:
        return f"{n.name} (no GPU labels)"
    return f"{n.name} ({n.gpus if n.gpus is not None else '?'}x {n.gpu_product})"


def text(status: StackStatus) -> list[str]:
    serving = sum(s.state == "serving" for s in status.served)
    version = f"KAITO {status.kaito_version}, " if status.kaito_version else ""
    stamp = time.strftime("%H:%M:%S UTC", time.gmtime(status.read_at))
    lines = [f"{status.stack}: {version}{status.cluster}; {serving} of {len(status.served)} serving (read {stamp})"]
    lines += _gateway_lines(status)
    for s in status.served:
        served, of = s.ready
        o = s.outputs
        if s.kind == "ragEngine":
            ask = f"RAG engine over {o.get('workspace') or 'no workspace'}"
            endpoint = o.get("endpoint")
        elif o.get("endpoint") is None:
            ask, endpoint = "a tuning job", None
        else:
            ask = f"model id {o['model']}" if o.get("model") else "model id: ask GET /v1/models (a custom image)"
            endpoint = o.get("endpoint")
        head = [f"  {s.key}", f"{s.state} {served}/{of}", ask]
        if endpoint:
            head.append(str(endpoint))
        if o.get("inOutputs") is False:
            head.append("(in the stack file, not in the stack's outputs: the last `pulumi up` failed or has not run)")
        lines.append("  ".join(head))
        for obj in s.status.objects:
            if obj.kind != "Workspace" or s.kind == "ragEngine":
                lines.append("    " + _replica_line(obj))
        lines += ["    " + _replica_line(r) for r in s.status.replicas]
        if s.mirror is not None:
            lines.append("    " + s.mirror.text())
        if not s.status.objects:
            lines.append("    no KAITO objects known for it (its outputs name none, nor does the stack file)")
        if s.status.unreadable:
            lines.append(f"    (the credentials may not read {', '.join(s.status.unreadable)})")
        lines += _route_lines(s) + _autoscaler_lines(s, status.autoscaling)
        if s.diagnosis is not None and why.needs_telling(s.diagnosis, s.status):
            lines += why.lines(s.diagnosis)
    return lines


def _gateway_lines(status: StackStatus) -> list[str]:
    g, found = status.gateway, status.gateway_status
    if g is None:
        return []
    given = g.get("authentication")
    auth: dict[str, Any] = dict(given) if is_dict(given) else {}
    keys = auth.get("apiKeys") if is_list(auth.get("apiKeys")) else []
    entra = auth.get("entra") if is_dict(auth.get("entra")) else None
    said = [f"API keys ({', '.join(map(str, keys))})"] if keys else []
    if entra is not None:
        said.append(f"Entra tenant {entra.get('tenantId')} ({', '.join(map(str, entra.get('audiences') or []))})")
    who = ", ".join(said) or "none (unauthenticated)"
    state = "not found" if found is None or not found.found else found.programmed.text("Programmed")
    url = g.get("url") or (f"http://{found.address}" if found is not None and found.address else "(no address yet)")
    return [
        f"  gateway {url}  {g.get('exposure')} · Istio {g.get('istio')} · auth: {who}  {state}",
        f"    call: POST {url}/v1/chat/completions, Authorization: Bearer <key or token>, "
        '{"model": <a model id below>, ...}',
    ]


def _route_lines(s: Served) -> list[str]:
    route, found = s.outputs.get("route"), s.route
    if not is_dict(route) or found is None:
        return []
    ids = ", ".join(map(str, route.get("models") or []))
    if not found.found:
        return [f"    route {route.get('httpRoute')} not found (not created yet, or deleted)  model ids {ids}"]
    pool = f"pool {route.get('inferencePool')} " + (
        found.pool_accepted.text("Accepted") if found.pool_found else "not made yet (KAITO makes it through Flux)"
    )
    return [
        f"    route {route.get('httpRoute')} {found.accepted.text('Accepted')}, {found.resolved.text('ResolvedRefs')} · "
        f"{pool} · model ids {ids}"
    ]


def _autoscaler_lines(s: Served, autoscaling: dict[str, Any] | None) -> list[str]:
    plan, found = s.outputs.get("autoscaling"), s.autoscaler
    if not is_dict(plan) or found is None:
        return []
    served, of = s.ready
    rule = (
        f"up when {plan.get('metric')} > {plan.get('upThreshold')}, down < {plan.get('downThreshold')} "
        f"({plan.get('metricType')})"
    )
    scaler = (
        f"ScaledObject {found.ready.text('Ready')}, {found.active.text('Active')}"
        if found.scaled_object
        else "no ScaledObject yet (keda-kaito-scaler makes it)"
    )
    hpa = f" · HPA current {found.current}, desired {found.desired}" if found.current is not None else ""
    where = f" (KEDA in {autoscaling.get('namespace')})" if autoscaling else ""
    line = (
        f"    autoscaling {served}/{of} ready · min {plan.get('minReplicas')} · max {plan.get('maxReplicas')} · "
        f"{rule} · {scaler}{hpa}{where}"
    )
    unreadable = [f"    (the credentials may not read {', '.join(found.unreadable)})"] if found.unreadable else []
    return [line, *unreadable]


def as_json(status: StackStatus) -> dict[str, Any]:
    return {
        "stack": status.stack,
        "kaitoVersion": status.kaito_version,
        "cluster": status.cluster,
        "readAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(status.read_at)),
        "serving": status.code == SERVING,
        "models": [
            {
                "key": s.key,
                "kind": s.kind,
                "model": s.outputs.get("model"),
                "source": s.outputs.get("source"),
                "endpoint": s.outputs.get("endpoint"),
                "inOutputs": s.outputs.get("inOutputs", True),
                **s.status.to_json(),
                "state": s.state,
                "ready": "{}/{}".format(*s.ready),
                **({"diagnosis": s.diagnosis.to_json()} if s.diagnosis is not None else {}),
                **({"route": _route_json(s)} if s.route is not None else {}),
                **({"autoscaling": _autoscaler_json(s)} if s.autoscaler is not None else {}),
                **({"modelMirror": s.mirror.to_json()} if s.mirror is not None else {}),
            }
            for s in status.served
        ],
        **({"gateway": _gateway_json(status)} if status.gateway is not None else {}),
    }


def _said_json(said: Any) -> dict[str, str]:
    return {"status": said.status, "reason": said.reason, "message": said.message}


def _gateway_json(status: StackStatus) -> dict[str, Any]:
    found = status.gateway_status
    return {
        **(status.gateway or {}),
        "found": found is not None and found.found,
        "programmed": _said_json(found.programmed) if found is not None else None,
        "address": found.address if found is not None else "",
    }


def _route_json(s: Served) -> dict[str, Any]:
    found = s.route
    assert found is not None
    return {
        **(s.outputs.get("route") or {}),
        "found": found.found,
        "accepted": _said_json(found.accepted),
        "resolvedRefs": _said_json(found.resolved),
        "poolFound": found.pool_found,
        "poolAccepted": _said_json(found.pool_accepted),
    }


def _autoscaler_json(s: Served) -> dict[str, Any]:
    found = s.autoscaler
    assert found is not None
    return {
        **(s.outputs.get("autoscaling") or {}),
        "scaledObject": found.scaled_object,
        "ready": _said_json(found.ready),
        "active": _said_json(found.active),
        "currentReplicas": found.current,
        "desiredReplicas": found.desired,
        "unreadable": list(found.unreadable),
    }


def _signature(status: StackStatus) -> str:
    """What a change is, for --watch: everything but the ages and the time of reading."""

    def ageless(value: object) -> object:
        if is_dict(value):
            return {k: ageless(v) for k, v in value.items() if k not in ("ageSeconds", "readAt")}
        if is_list(value):
            return [ageless(v) for v in value]
        return value

    return json.dumps(ageless(as_json(status)), sort_keys=True, default=str)


# ---------------------------------------------------------------- the command


def run(
    stacks: list[str],
    root: Path,
    *,
    watch: bool = False,
    json_out: bool = False,
    interval: float = 5.0,
    timeout_minutes: float = 30.0,
    out: Callable[[str], None] = print,
    err: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> int:
    """Each stack's status (once, or with `watch` until every model serves, one fails, or the
    timeout); the worst exit code."""
    worst = SERVING
    for stack in stacks:
        code = _one(stack, root, watch, json_out, interval, timeout_minutes, out, err, sleep, clock)
        worst = max(worst, code)
    return worst


def _one(
    stack: str,
    root: Path,
    watch: bool,
    json_out: bool,
    interval: float,
    timeout_minutes: float,
    out: Callable[[str], None],
    err: Callable[[str], None],
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> int:
    start = clock()
    shown = ""
    try:
        d = deployed(stack, root)
    except StatusError as e:
        err(bounded(f"{stack}: {e}"))
        return UNREADABLE
    while True:
        try:
            status = read_stack(d, clock=clock)
        except StatusError as e:
            err(bounded(f"{stack}: {e}"))
            return UNREADABLE
        failed = any(s.state == "failed" for s in status.served)
        done = not watch or status.code == SERVING or failed or clock() - start >= timeout_minutes * 60
        signature = _signature(status)
        if signature != shown or done:
            if json_out:
                out(json.dumps(as_json(status), indent=None if watch else 2))
            elif signature != shown or not watch:
                for line in text(status):
                    out(escaped(line))  # the cluster's words, with no terminal escape in them
            shown = signature
        if done:
            if watch and status.code != SERVING and not failed:
                err(f"{stack}: not every model serves after {age(timeout_minutes * 60)}")
            return status.code
        sleep(interval)
