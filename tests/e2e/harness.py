"""The pieces the end-to-end tests run on: a real etcd and kube-apiserver on loopback, Pulumi
projects driven through the real CLI, and stand-ins for the controllers this machine cannot run
(no kubelet, no GPU, no KAITO controller), each saying so. Torn down whatever happens."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "kaito-aks-e2e-admin-token"
E2E_HF_TOKEN = "hf_e2e_not_a_real_token"  # Pulumi.e2e.yaml's hfToken (encrypted with the empty passphrase)
# A GPU node as GPU Feature Discovery labels an AKS Standard_NC24ads_A100_v4 node (one A100 80GB).
GFD_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-PCIE-80GB",
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.memory": "81920",
}
STACK_FILES = ["Pulumi.yaml", "__main__.py", "components", "stacks", "requirements.txt"]
TOOLS = ("etcd", "kube-apiserver", "kubectl", "pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _insecure_context() -> ssl.SSLContext:
    """The throwaway API server's self-signed certificate is not checked."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


_INSECURE = _insecure_context()


def http_ok(url: str, token: str | None = None) -> bool:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=2, context=_INSECURE) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def wait_for(check: Callable[[], bool], what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"{what} not ready after {seconds:.0f} s")


class Cluster:
    """etcd and kube-apiserver on free loopback ports, token auth, in a temp dir."""

    def __init__(self, bin_dir: Path, work: Path):
        self.bin, self.work = bin_dir, work
        self.kubeconfig = work / "kubeconfig"
        self.server = ""
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, *flags: str) -> None:
        """`flags`: more kube-apiserver flags (e.g. --enable-bootstrap-token-auth)."""
        for tool in TOOLS:
            if not os.access(self.bin / tool, os.X_OK):
                raise AssertionError(f"{self.bin / tool} is missing: run scripts/e2e-tools (it builds the toolchain)")
        certs, data = self.work / "certs", self.work / "etcd"
        certs.mkdir()
        subprocess.run(["openssl", "genrsa", "-out", str(certs / "sa.key"), "2048"], check=True, capture_output=True)
        subprocess.run(
            ["openssl", "rsa", "-in", str(certs / "sa.key"), "-pubout", "-out", str(certs / "sa.pub")],
            check=True,
            capture_output=True,
        )
        (self.work / "tokens.csv").write_text(f'{TOKEN},admin,admin,"system:masters"\n')
        client, peer, secure = free_port(), free_port(), free_port()
        self._spawn(
            "etcd", str(self.bin / "etcd"), "--data-dir", str(data), "--name", "e2e",
            "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"e2e=http://127.0.0.1:{peer}", "--unsafe-no-fsync",
        )  # fmt: skip
        wait_for(lambda: http_ok(f"http://127.0.0.1:{client}/health"), "etcd", 60)
        self._spawn(
            "kube-apiserver", str(self.bin / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{client}", "--bind-address=127.0.0.1", f"--secure-port={secure}",
            f"--cert-dir={certs}", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
            "--service-cluster-ip-range=10.0.0.0/24", "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={certs / 'sa.pub'}", f"--service-account-signing-key-file={certs / 'sa.key'}",
            f"--token-auth-file={self.work / 'tokens.csv'}", "--authorization-mode=RBAC",
            "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
            # No kube-controller-manager runs: without a garbage collector, foreground deletes
            # would wait forever on their finalizer.
            "--enable-garbage-collector=false", *flags,
        )  # fmt: skip
        self.server = f"https://127.0.0.1:{secure}"
        wait_for(lambda: http_ok(f"{self.server}/readyz", TOKEN), "kube-apiserver /readyz", 120)
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "e2e", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}],
                    "users": [{"name": "admin", "user": {"token": TOKEN}}],
                    "contexts": [
                        {"name": "e2e", "context": {"cluster": "e2e", "user": "admin", "namespace": "default"}}
                    ],
                    "current-context": "e2e",
                }
            )
        )
        wait_for(lambda: self.kubectl_ok("get", "namespace", "default"), "namespace default", 60)

    def _spawn(self, name: str, *cmd: str) -> None:
        log = open(self.work / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def stop(self) -> None:
        """The server first, then etcd; a throwaway cluster gets 5 s to exit cleanly."""
        for p in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def logs(self) -> str:
        out = []
        for name in ("kube-apiserver", "etcd"):
            path = self.work / f"{name}.log"
            if path.exists():
                out.append(f"--- last lines of {name}.log:\n" + "\n".join(path.read_text().splitlines()[-15:]))
        return "\n".join(out)

    # ------------------------------------------------------------------ reading and writing

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr[-1000:]}")
        return result

    def kubectl_ok(self, *args: str) -> bool:
        return self.kubectl(*args, check=False).returncode == 0

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One call as the e2e admin (JSON in, JSON out)."""
        data = json.dumps(body).encode() if body is not None else None
        content = "application/merge-patch+json" if method == "PATCH" else "application/json"
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content}
        req = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=5, context=_INSECURE) as resp:
            return json.loads(resp.read() or b"{}")

    def objects(self, kind: str, namespace: str = "default") -> dict[str, dict[str, Any]]:
        items = json.loads(self.kubectl("get", kind, "-n", namespace, "-o", "json").stdout)["items"]
        return {o["metadata"]["name"]: o for o in items}

    def snapshot(
        self,
        kinds: tuple[str, ...] = ("workspaces.kaito.sh", "ragengines.kaito.sh", "secrets", "services", "configmaps"),
    ) -> dict[str, str]:
        """kind/name -> resourceVersion of every object of the kinds our stacks create."""
        return {
            f"{kind}/{name}": o["metadata"]["resourceVersion"]
            for kind in kinds
            for name, o in self.objects(kind).items()
        }

    def apply(self, *files: Path) -> None:
        for f in files:
            self.kubectl("apply", "--server-side", "-f", str(f))

    def create_gpu_node(self, name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> None:
        """A GPU node as the kubelet registers it (no kubelet runs here): Ready, one nvidia.com/gpu
        advertised by the device plugin, the pool's labels and taint; no GFD labels yet. An
        earlier node of that name is replaced."""
        with contextlib.suppress(OSError):
            self.api("DELETE", f"/api/v1/nodes/{name}")
        wait_for(lambda: not self.kubectl_ok("get", "node", name), f"node {name} deleted", 30)
        self.api(
            "POST",
            "/api/v1/nodes",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": name, **labels},
                },
                "spec": {
                    "taints": taints if taints is not None else [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]
                },
            },
        )
        resources = {"cpu": "24", "memory": "220Gi", "pods": "110", "nvidia.com/gpu": "1"}
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "lastHeartbeatTime": now_rfc3339(),
            "lastTransitionTime": now_rfc3339(),
        }
        status = {"capacity": resources, "allocatable": resources, "conditions": [ready]}
        self.api("PATCH", f"/api/v1/nodes/{name}/status", {"status": status})

    def run_pod(self, namespace: str, name: str, node: str, labels: dict[str, str]) -> None:
        """A pod bound to `node` and Ready, as a StatefulSet controller and the kubelet would make it
        (neither runs here)."""
        self.api(
            "POST",
            f"/api/v1/namespaces/{namespace}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": labels},
                "spec": {"nodeName": node, "containers": [{"name": "server", "image": "registry.invalid/stand-in"}]},
            },
        )
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": now_rfc3339()}
        status = {"phase": "Running", "conditions": [ready]}
        self.api("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", {"status": status})

    def label_node(self, name: str, labels: dict[str, str], manager: str = "e2e") -> str:
        """Label a node; returns the API server's time of the update."""
        node = self.api("PATCH", f"/api/v1/nodes/{name}?fieldManager={manager}", {"metadata": {"labels": labels}})
        return str(max(m["time"] for m in node["metadata"]["managedFields"] if m.get("manager") == manager))


class StandIn:
    """A background thread standing in for a controller this e2e does not run."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> StandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        raise NotImplementedError


class StandInKaito(StandIn):
    """Stands in for KAITO's controllers (no kubelet, no GPUs here): sets each Workspace's
    InferenceReady and each RAGEngine's RAGEngineSucceeded condition as KAITO would once it
    serves: True `delay` seconds after it first sees the object, or False with a reason for
    names in `failing`. A Workspace with an instanceType (node auto-provisioning) first goes
    through KAITO's node stages: ResourceReady False (NodeClaimNotReady) while its node is made
    (`delay` seconds, or for names in `provisioning` until the test takes them out), then True,
    then InferenceReady `delay` seconds later. It records when, so a test can check that `pulumi up` waited."""

    KINDS = (
        ("kaito.sh/v1beta1", "workspaces", "InferenceReady"),
        ("kaito.sh/v1alpha1", "ragengines", "RAGEngineSucceeded"),
    )

    def __init__(self, cluster: Cluster, delay: float = 2.0):
        super().__init__(cluster)
        self.delay = delay
        self.failing: dict[str, str] = {}
        self.held: set[str] = set()  # names it leaves alone for now, as a controller that has not got to them
        self.provisioning: set[str] = set()  # auto-provisioned names whose node is not made until taken out
        self.node_made: dict[str, float] = {}  # key -> when its node was made
        self.ready_at: dict[str, float] = {}
        self.seen: dict[str, float] = {}
        self.conditions: dict[str, list[tuple[str, str, str]]] = {}  # key -> (type, status, reason) as set

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            self._reconcile_all()

    def _reconcile_all(self) -> None:
        for api, plural, condition in self.KINDS:
            with contextlib.suppress(OSError, ValueError):
                self._reconcile(api, plural, condition)

    def _reconcile(self, api: str, plural: str, ready_type: str) -> None:
        for obj in self.cluster.api("GET", f"/apis/{api}/{plural}")["items"]:
            meta = obj["metadata"]
            if meta["name"] in self.held or (meta.get("labels") or {}).get(CREATED_BY) in self.held:
                continue  # (an InferenceSet held: its Workspaces too)
            key = f"{meta['namespace']}/{meta['name']}/{meta['uid']}"
            first = self.seen.setdefault(key, time.time())
            had = {c["type"]: c for c in (obj.get("status") or {}).get("conditions", [])}
            want = "False" if meta["name"] in self.failing else "True"
            generation = meta.get("generation", 1)
            current = had.get(ready_type, {})
            # KAITO reconciles every spec change (a new generation) and reports on it
            if (current.get("status"), current.get("observedGeneration")) == (want, generation):
                continue
            waited = time.time() - first
            auto = bool((obj.get("resource") or {}).get("instanceType"))
            failed = self._node_failure(plural, obj, generation)
            if failed is not None:  # its node never comes: KAITO says why, and nothing serves
                if had.get("ResourceReady", {}).get("reason") != failed[-1]["reason"]:
                    self._patch(api, plural, meta, key, failed)
                continue
            held, weights = self._weights(plural, obj, generation)
            if held:  # KAITO holds the inference back until the weights are there
                said = ("status", "reason", "message")
                if any([had.get(c["type"], {}).get(k) for k in said] != [c[k] for k in said] for c in weights):
                    self._patch(api, plural, meta, key, weights)
                continue
            conditions: list[dict[str, Any]] = []
            if auto:  # KAITO makes a node first; ResourceReady tells how that goes
                if key not in self.node_made and self._node_ready(obj, waited):
                    self.node_made[key] = time.time()
                node_ready = key in self.node_made
                conditions.append(
                    self._condition(
                        "ResourceReady",
                        "True" if node_ready else "False",
                        "workspaceResourceStatusSuccess" if node_ready else "NodeClaimNotReady",
                        "workspace resource is ready" if node_ready else "Ready NodeClaims are not enough",
                        generation,
                    )
                )
                if not node_ready:
                    if had.get("ResourceReady", {}).get("status") != "False":
                        self._patch(api, plural, meta, key, conditions)
                    continue
                if time.time() - self.node_made[key] < self.delay:  # then the model starts on it
                    if had.get("ResourceReady", {}).get("status") != "True":
                        self._patch(api, plural, meta, key, conditions)
                    continue
            elif waited < self.delay:
                continue
            if want == "True":
                conditions.extend([*weights, *self._ready_conditions(plural, ready_type, generation)])
            else:
                conditions.append(
                    self._condition(ready_type, want, "InferenceFailed", self.failing[meta["name"]], generation)
                )
            self._patch(api, plural, meta, key, conditions)
            if want == "True":
                self.ready_at[key] = time.time()

    def _node_ready(self, obj: dict[str, Any], waited: float) -> bool:
        """Whether the node of an auto-provisioned object is there: `delay` seconds after KAITO
        first saw it (its provisioner stands in for itself), unless held in `provisioning`."""
        return waited >= self.delay and obj["metadata"]["name"] not in self.provisioning

    def _ready_conditions(self, plural: str, ready_type: str, generation: int) -> list[dict[str, Any]]:
        """What KAITO writes once the object serves."""
        return [self._condition(ready_type, "True", ready_type, "Inference has been deployed successfully", generation)]

    def _node_failure(self, plural: str, obj: dict[str, Any], generation: int) -> list[dict[str, Any]] | None:
        """The conditions of an object whose node never comes (None: it comes). Last: ResourceReady."""
        return None

    def _weights(self, plural: str, obj: dict[str, Any], generation: int) -> tuple[bool, list[dict[str, Any]]]:
        """Whether KAITO holds the object back for its weights (0.12's model mirror), and the
        conditions it reports about them (then, or beside the ready ones)."""
        return False, []

    @staticmethod
    def _condition(kind: str, status: str, reason: str, message: str, generation: int) -> dict[str, Any]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now_rfc3339(),
            "observedGeneration": generation,
        }

    def _patch(self, api: str, plural: str, meta: dict[str, Any], key: str, conditions: list[dict[str, Any]]) -> None:
        path = f"/apis/{api}/namespaces/{meta['namespace']}/{plural}/{meta['name']}/status"
        self.cluster.api("PATCH", path, {"status": {"conditions": conditions}})
        self.conditions.setdefault(key, []).extend((c["type"], c["status"], c["reason"]) for c in conditions)


CREATED_BY = "inferenceset.kaito.sh/created-by"  # KAITO 0.12 consts.WorkspaceCreatedByInferenceSetLabel
INFERENCESET_FINALIZER = "inferenceset.finalizer.kaito.sh"  # consts.InferenceSetFinalizer


class StandInKaito012(StandInKaito):
    """Stands in for KAITO 0.12.0's controllers, in its words (v0.12.0 source):

    - an InferenceSet (kaito.sh/v1beta1) gets KAITO's finalizer and `spec.replicas` child
      Workspaces, as pkg/inferenceset/inferenceset_controller.go and
      pkg/utils/inferenceset NewWorkspaceForInferenceSet make them: generateName `<name>-`
      (5 random characters), the template's annotations and labels plus `inferenceset.kaito.sh/created-by=<name>`,
      a controller ownerReference, the InferenceSet's labelSelector, the template's instanceType
      and inference. Its status: replicas, readyReplicas (children whose WorkspaceSucceeded is
      True), selector, and InferenceSetReady True `inferencesetReady` or False
      `inferencesetNotReady` ("inferenceset is not ready, r/n replicas are ready"). Deleted, it
      deletes its children and drops the finalizer (garbageCollectInferenceSet);
    - a Workspace goes through the node stages, then InferenceReady True
      `WorkspaceInferenceStatusSuccess` with WorkspaceSucceeded True `workspaceSucceeded`; the
      children of an InferenceSet named in `node_failing` instead stay with NodeClaimReady and
      ResourceReady False carrying the NodeClaim's reason and message (gpu-provisioner
      CollectNodeStatusInfo with FirstNodeClaimProvisioningState, 0.12), as when Azure refuses
      the node for quota;
    - a RAGEngine (kaito.sh/v1beta1) ends with NodeClaimReady, ResourceReady, ServiceReady and
      RAGEngineSucceeded True `ragengineSucceeded` (pkg/ragengine/controllers)."""

    KINDS = (
        ("kaito.sh/v1beta1", "workspaces", "InferenceReady"),
        ("kaito.sh/v1beta1", "ragengines", "RAGEngineSucceeded"),
    )

    def __init__(self, cluster: Cluster, delay: float = 2.0):
        super().__init__(cluster, delay)
        self.node_failing: dict[str, tuple[str, str]] = {}  # InferenceSet name -> NodeClaim (reason, message)

    def _reconcile_all(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._reconcile_inference_sets()
        super()._reconcile_all()

    def _ready_conditions(self, plural: str, ready_type: str, generation: int) -> list[dict[str, Any]]:
        c = self._condition
        if plural == "ragengines":
            return [
                c("NodeClaimReady", "True", "installNodePluginsSuccess", "nodeClaim plugins have been installed successfully", generation),
                c("ResourceReady", "True", "ragengineResourceStatusSuccess", "ragengine resource is ready", generation),
                c("ServiceReady", "True", "RAGEngineServiceSuccess", "Inference has been deployed successfully", generation),
                c(ready_type, "True", "ragengineSucceeded", "ragengine succeeds", generation),
            ]  # fmt: skip
        return [
            c(ready_type, "True", "WorkspaceInferenceStatusSuccess", "Inference has been deployed successfully", generation),
            c("WorkspaceSucceeded", "True", "workspaceSucceeded", "workspace succeeds", generation),
        ]  # fmt: skip

    def _node_failure(self, plural: str, obj: dict[str, Any], generation: int) -> list[dict[str, Any]] | None:
        parent = (obj["metadata"].get("labels") or {}).get(CREATED_BY)
        if plural != "workspaces" or parent not in self.node_failing:
            return None
        reason, message = self.node_failing[parent]
        c = self._condition
        return [
            c("InferenceReady", "False", "WorkspaceInferenceStatusPending", "Inference workload is not ready", generation),
            c("WorkspaceSucceeded", "False", "workspacePending", "workspace is waiting for inference workload readiness", generation),
            c("NodesReady", "False", "NodeNotReady", "Not enough Nodes are ready", generation),
            c("NodeClaimReady", "False", reason, message, generation),
            c("ResourceReady", "False", reason, message, generation),
        ]  # fmt: skip

    def _reconcile_inference_sets(self) -> None:
        for iset in self.cluster.api("GET", "/apis/kaito.sh/v1beta1/inferencesets")["items"]:
            meta = iset["metadata"]
            ns, name = meta["namespace"], meta["name"]
            base = f"/apis/kaito.sh/v1beta1/namespaces/{ns}"
            children = self.cluster.api("GET", f"{base}/workspaces?labelSelector={CREATED_BY}%3D{name}")["items"]
            finalizers = list(meta.get("finalizers") or [])
            if meta.get("deletionTimestamp"):
                for child in children:
                    with contextlib.suppress(OSError):
                        self.cluster.api("DELETE", f"{base}/workspaces/{child['metadata']['name']}")
                rest = [f for f in finalizers if f != INFERENCESET_FINALIZER]
                self.cluster.api("PATCH", f"{base}/inferencesets/{name}", {"metadata": {"finalizers": rest or None}})
                continue
            if INFERENCESET_FINALIZER not in finalizers:
                patch = {"metadata": {"finalizers": [*finalizers, INFERENCESET_FINALIZER]}}
                self.cluster.api("PATCH", f"{base}/inferencesets/{name}", patch)
            spec = iset["spec"]
            replicas = int(spec.get("replicas", 1))
            for _ in range(replicas - len(children)):
                self.cluster.api("POST", f"{base}/workspaces", self._child(iset))
            for child in children[replicas:]:  # scaled down (KAITO prefers not-ready ones)
                self.cluster.api("DELETE", f"{base}/workspaces/{child['metadata']['name']}")
            ready = sum(
                1
                for child in children[:replicas]
                for cond in (child.get("status") or {}).get("conditions", [])
                if cond["type"] == "WorkspaceSucceeded" and cond["status"] == "True"
            )
            self._report(iset, replicas, ready)

    @staticmethod
    def _child(iset: dict[str, Any]) -> dict[str, Any]:
        meta, spec = iset["metadata"], iset["spec"]
        template = spec.get("template") or {}
        labels = {**((template.get("metadata") or {}).get("labels") or {}), CREATED_BY: meta["name"]}
        owner = {
            "apiVersion": "kaito.sh/v1beta1",
            "kind": "InferenceSet",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        resource: dict[str, Any] = {"labelSelector": spec.get("labelSelector")}
        for field in ("instanceType", "partition"):  # instanceType: not in BYO mode
            if field in (template.get("resource") or {}):
                resource[field] = template["resource"][field]
        return {
            "apiVersion": "kaito.sh/v1beta1",
            "kind": "Workspace",
            # the template's annotations too (kaito.sh/node-class-name, kaito.sh/runtime)
            "metadata": {
                "generateName": f"{meta['name']}-",
                "labels": labels,
                "annotations": (template.get("metadata") or {}).get("annotations"),
                "ownerReferences": [owner],
            },
            "resource": resource,
            "inference": template.get("inference"),
        }

    def _report(self, iset: dict[str, Any], replicas: int, ready: int) -> None:
        meta = iset["metadata"]
        key = f"{meta['namespace']}/{meta['name']}/{meta['uid']}"
        status = iset.get("status") or {}
        generation = meta.get("generation", 1)
        if ready == replicas:
            cond = self._condition(
                "InferenceSetReady", "True", "inferencesetReady", "inferenceset is ready", generation
            )
        else:
            said = f"inferenceset is not ready, {ready}/{replicas} replicas are ready"
            cond = self._condition("InferenceSetReady", "False", "inferencesetNotReady", said, generation)
        had = next((c for c in status.get("conditions") or [] if c["type"] == "InferenceSetReady"), {})
        same = (status.get("replicas"), status.get("readyReplicas"), had.get("status"), had.get("message")) == (
            replicas,
            ready,
            cond["status"],
            cond["message"],
        )
        if same:
            return
        selector = f"{CREATED_BY}={meta['name']}"
        body = {"status": {"replicas": replicas, "readyReplicas": ready, "selector": selector, "conditions": [cond]}}
        self.cluster.api(
            "PATCH", f"/apis/kaito.sh/v1beta1/namespaces/{meta['namespace']}/inferencesets/{meta['name']}/status", body
        )
        self.conditions.setdefault(key, []).append((cond["type"], cond["status"], cond["reason"]))
        if cond["status"] == "True":
            self.ready_at[key] = time.time()


class StandInNamespaces(StandIn):
    """Stands in for the namespace controller and the garbage collector (neither runs here): a
    namespace being deleted loses its finalizers once nothing of the stack is left in it, as
    Kubernetes finalizes it after deleting its content. `finalized`: the names it let go."""

    def __init__(self, cluster: Cluster, names: set[str]):
        super().__init__(cluster)
        self.names = names
        self.finalized: set[str] = set()

    def _run(self) -> None:
        while not self._stop.wait(0.5) and self.finalized != self.names:
            for name in self.names - self.finalized:
                with contextlib.suppress(OSError, ValueError):
                    self._finalize(name)

    def _finalize(self, name: str) -> None:
        found = self.cluster.api("GET", f"/api/v1/namespaces/{name}")
        if not found["metadata"].get("deletionTimestamp"):
            return
        self.cluster.api("PATCH", f"/api/v1/namespaces/{name}", {"metadata": {"finalizers": None}})
        found["spec"]["finalizers"] = []
        self.cluster.api("PUT", f"/api/v1/namespaces/{name}/finalize", found)
        self.finalized.add(name)


class StandInGfd(StandIn):
    """Stands in for GPU Feature Discovery (no GPU, driver or GFD here): labels each node with
    nvidia.com/gpu.product/count/memory at its delay after starting, as GFD does once the
    driver is installed. `labelled_at`: the API server's time of each update."""

    def __init__(self, cluster: Cluster, delays: dict[str, float]):
        super().__init__(cluster)
        self.delays = delays
        self.labelled_at: dict[str, str] = {}

    def _run(self) -> None:
        start = time.monotonic()
        for node, delay in sorted(self.delays.items(), key=lambda kv: kv[1]):
            if self._stop.wait(max(0.0, start + delay - time.monotonic())):
                return
            self.labelled_at[node] = self.cluster.label_node(node, GFD_LABELS, "gpu-feature-discovery-stand-in")


class Project:
    """A Pulumi project in a temp dir, run with the real CLI on a local file backend (empty
    passphrase), the program's Python from the checkout's virtualenv."""

    def __init__(self, bin_dir: Path, cluster: Cluster, path: Path, stack: str):
        self.bin, self.cluster, self.path, self.stack = bin_dir, cluster, path, stack
        home = path.parent / f"{path.name}-home"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG", "ARM_"))},
            "PATH": f"{bin_dir}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
            "PULUMI_HOME": str(home),
            "PULUMI_BACKEND_URL": f"file://{path.parent / (path.name + '-state')}",
            "PULUMI_CONFIG_PASSPHRASE": "",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            "KUBECONFIG": str(cluster.kubeconfig),
            # The Python host the proxy can serve (sdk/v3 3.79, see scripts/e2e-tools) reads the
            # virtualenv from its command line, which today's engine no longer passes.
            "PULUMI_PYTHON_CMD": str(ROOT / ".venv" / "bin" / "python"),
        }
        path.mkdir(parents=True, exist_ok=True)
        (path.parent / (path.name + "-state")).mkdir(exist_ok=True)

    def sh(
        self, *cmd: str, check: bool = True, quiet: bool = False, secret: bool = False, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in the project; its output is printed (unless quiet; never when it may
        hold secrets)."""
        result = subprocess.run(cmd, cwd=self.path, env=self.env, capture_output=True, text=True, input=stdin)
        if not secret and (not quiet or (check and result.returncode != 0)):
            out = (result.stdout + result.stderr).strip()
            if out:
                print("\n".join("    " + line for line in out.splitlines()[-60:]))
        if check and result.returncode != 0:
            raise AssertionError(f"`{' '.join(cmd[:3])} ...` exited {result.returncode}")
        return result

    def pulumi(
        self, *args: str, check: bool = True, quiet: bool = False, secret: bool = False, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.sh(
            str(self.bin / "pulumi"),
            *args,
            "--non-interactive",
            "--stack",
            self.stack,
            check=check,
            quiet=quiet,
            secret=secret,
            stdin=stdin,
        )

    def status(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`python -m stacks status` of this stack, as a user runs it in the project."""
        python = str(ROOT / ".venv" / "bin" / "python")
        return self.sh(python, "-m", "stacks", "status", self.stack, *args, check=False, quiet=True)

    def watch_status(self, *args: str) -> Watching:
        """`python -m stacks status --watch` of this stack, running while the test goes on; its
        output read as it prints it (each change is flushed into the pipe)."""
        python = str(ROOT / ".venv" / "bin" / "python")
        env = {k: v for k, v in self.env.items() if k != "PYTHONUNBUFFERED"}  # the command flushes by itself
        cmd = [python, "-m", "stacks", "status", self.stack, "--watch", *args]
        return Watching(
            subprocess.Popen(cmd, cwd=self.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )

    def init(self) -> None:
        self.sh(str(self.bin / "pulumi"), "stack", "init", self.stack, "--non-interactive", quiet=True)

    def install_kubernetes_plugin(self, version: str) -> None:
        self.sh(
            str(self.bin / "pulumi"), "plugin", "install", "resource", "kubernetes", f"v{version}",
            "--file", str(self.bin / "pulumi-resource-kubernetes"), quiet=True,
        )  # fmt: skip

    def config_path(self, path: str, value: str) -> None:
        self.pulumi("config", "set", "--path", f"kaito-aks:{path}", value, quiet=True)

    def outputs(self) -> dict[str, Any]:
        return dict(json.loads(self.pulumi("stack", "output", "--json", quiet=True).stdout))

    def state(self) -> list[dict[str, Any]]:
        return list(json.loads(self.pulumi("stack", "export", quiet=True).stdout)["deployment"]["resources"])

    def preview_steps(self) -> dict[str, list[dict[str, Any]]]:
        """op -> the steps of `pulumi preview --json` (each with its urn and type)."""
        ops: dict[str, list[dict[str, Any]]] = {}
        for step in json.loads(self.pulumi("preview", "--json", quiet=True).stdout).get("steps", []):
            ops.setdefault(step["op"], []).append(step)
        return ops


class Watching:
    """A command running in the background whose output lines are collected as they come, so a
    test can act on what it has printed (not on how long it may take to print it)."""

    def __init__(self, process: subprocess.Popen[str]):
        self.process = process
        self.started = time.monotonic()
        self.lines: list[str] = []
        self.after: list[float] = []  # seconds from the start to each line
        self.ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line)
                self.after.append(time.monotonic() - self.started)
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def until(self, shown: Callable[[str], bool], what: str, seconds: float) -> None:
        """Return once the output so far satisfies `shown`; fail after `seconds` or if it ends first."""
        deadline = time.monotonic() + seconds
        with self._changed:
            while not shown("".join(self.lines)):
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    self.process.kill()
                    raise AssertionError(f"it did not show {what} within {seconds:.0f} s:\n{''.join(self.lines)}")
                self._changed.wait(left)

    def finish(self, seconds: float) -> subprocess.CompletedProcess[str]:
        """Its exit, output and errors once it ends by itself (killed after `seconds`)."""
        try:
            code = self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"it did not end within {seconds:.0f} s:\n{''.join(self.lines)}") from None
        self._reader.join()
        errors = self.process.stderr.read() if self.process.stderr is not None else ""
        return subprocess.CompletedProcess(self.process.args, code, "".join(self.lines), errors)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def names(steps: list[dict[str, Any]]) -> set[str]:
    return {s["urn"].rsplit("::", 1)[1] for s in steps}


def copy_into(src: Path, dest: Path) -> None:
    if src.is_dir():
        shutil.copytree(
            src,
            dest,
            ignore=shutil.ignore_patterns("__pycache__", "venv", "*.egg-info"),
            symlinks=True,
            dirs_exist_ok=True,
        )
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)


def installed_sdk_version(dist: str) -> str:
    """Version of a package in the checkout's virtualenv (the program's SDKs)."""
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    return subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


@contextlib.contextmanager
def timed(times: list[tuple[str, float]], what: str) -> Iterator[None]:
    start = time.monotonic()
    yield
    times.append((what, time.monotonic() - start))


def stack_project(bin_dir: Path, cluster: Cluster, work: Path, name: str, stack: str, provider_version: str) -> Project:
    """A copy of this repository's program (the checkout's virtualenv runs it) with one stack."""
    project = Project(bin_dir, cluster, work / name, stack)
    for f in STACK_FILES:
        copy_into(ROOT / f, project.path / f)
    (project.path / ".venv").symlink_to(ROOT / ".venv")
    project.install_kubernetes_plugin(provider_version)
    return project


# ---------------------------------------------------------------------------------- serving stand-ins

SERVING_ADDRESS = "10.224.0.42"  # what the stand-in for Istio reports as the gateway's address
POOL_API = "inference.networking.k8s.io/v1"
SCALER_PREFIX = "scaledobject.kaito.sh/"


class StandInServing(StandIn):
    """Stands in for what serves the models as one service, none of which runs here (no Istio,
    Flux, endpoint picker, Authorino, KEDA or keda-kaito-scaler), each in its own words:

    - KAITO 0.12 with its gateway extension (through Flux and the llm-d-router-gateway chart): per
      InferenceSet of a preset, the InferencePool `<name>-inferencepool` selecting the
      set's leader pods on port 5000 (pkg/workspace/manifests/manifests.go:421-491) and the
      endpoint picker's Service `<pool[:40]>-epp`, gRPC 9002;
    - Istio: each Gateway Accepted and Programmed with SERVING_ADDRESS; each HTTPRoute's parent
      Accepted, and ResolvedRefs once its InferencePool exists; the pool Accepted by the Gateway;
    - the Authorino operator: each Authorino Ready; Authorino: each AuthConfig Ready (Reconciled),
      or for `auth_failing` Ready False with its reason;
    - the endpoint picker's Deployment and the kubelet: one picker pod per pool, Running and Ready,
      or (InferenceSets in `picker_pending`) Pending, the scheduler's "Insufficient cpu" (it asks
      1 CPU and 2 GiB: manifests.go:436-447);
    - Istio's route status: a route named in `rejected_routes` not Accepted, with the reason;
    - keda-kaito-scaler 0.6.2: for each InferenceSet whose scaledobject.kaito.sh/* annotations it
      would accept (auto_provision_controller.go:357-423, provisioner.go:249-340), the ScaledObject
      named after it (provisioner.go:512-550), which KEDA's real CRD then judges;
    - KEDA: the HPA keda-hpa-<name> it would make, and, when told (`scale`), what that HPA does:
      PATCH the InferenceSet's /scale as its own field manager;
    - the namespace controller (kube-controller-manager does not run here): its namespace, once
      deleted, is finalized."""

    def __init__(self, cluster: Cluster, namespace: str):
        super().__init__(cluster)
        self.namespace = namespace
        self.pools: dict[str, dict[str, Any]] = {}
        self.scaled_objects: dict[str, dict[str, Any]] = {}
        self.picker_pending: set[str] = set()  # InferenceSets whose endpoint picker the scheduler cannot place
        self.rejected_routes: dict[str, tuple[str, str]] = {}  # HTTPRoute -> Accepted False (reason, message)
        self.auth_failing: tuple[str, str] | None = None  # every AuthConfig's Ready False (reason, message)
        self.scalers_failing: dict[str, tuple[str, str]] = {}  # ScaledObject -> Ready False (reason, message)

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            for step in (
                self._pools,
                self._pickers,
                self._gateways,
                self._routes,
                self._authorino,
                self._auth_configs,
                self._scaler,
                self._keda,
                self._finalize,
            ):
                with contextlib.suppress(OSError, ValueError, KeyError):
                    step()

    def _list(self, api: str, plural: str) -> list[dict[str, Any]]:
        prefix = "/api/v1" if api == "v1" else f"/apis/{api}"
        return list(self.cluster.api("GET", f"{prefix}/namespaces/{self.namespace}/{plural}")["items"])

    def _status(self, api: str, plural: str, name: str, status: dict[str, Any]) -> None:
        path = f"/apis/{api}/namespaces/{self.namespace}/{plural}/{name}/status"
        self.cluster.api("PATCH", path, {"status": status})

    @staticmethod
    def _condition(kind: str, status: str, reason: str, generation: int, message: str = "") -> dict[str, Any]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message or reason,
            "lastTransitionTime": now_rfc3339(),
            "observedGeneration": generation,
        }

    def _finalize(self) -> None:
        ns = self.cluster.api("GET", f"/api/v1/namespaces/{self.namespace}")
        if ns["metadata"].get("deletionTimestamp") and (ns.get("spec") or {}).get("finalizers"):
            body = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": self.namespace},
                "spec": {"finalizers": []},
            }
            self.cluster.api("PUT", f"/api/v1/namespaces/{self.namespace}/finalize", body)

    def _pools(self) -> None:
        have = {p["metadata"]["name"] for p in self._list(POOL_API, "inferencepools")}
        for iset in self._list("kaito.sh/v1beta1", "inferencesets"):
            name = iset["metadata"]["name"]
            if "preset" not in iset["spec"]["template"]["inference"]:
                continue  # KAITO makes pools for presets only
            pool = f"{name}-inferencepool"
            picker = f"{pool[:40]}-epp"
            if pool in have:
                continue
            body = {
                "apiVersion": POOL_API,
                "kind": "InferencePool",
                "metadata": {"name": pool, "labels": {"app.kubernetes.io/managed-by": "Helm"}},
                "spec": {
                    "selector": {"matchLabels": {CREATED_BY: name, "apps.kubernetes.io/pod-index": "0"}},
                    "targetPorts": [{"number": 5000}],
                    "endpointPickerRef": {"name": picker, "port": {"number": 9002}, "failureMode": "FailOpen"},
                },
            }
            self.pools[pool] = self.cluster.api(
                "POST", f"/apis/{POOL_API}/namespaces/{self.namespace}/inferencepools", body
            )
            service = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": picker},
                "spec": {
                    "selector": {"llm-d-router-gateway": picker},
                    "ports": [{"name": "grpc-ext-proc", "port": 9002, "protocol": "TCP"}],
                },
            }
            with contextlib.suppress(OSError):
                self.cluster.api("POST", f"/api/v1/namespaces/{self.namespace}/services", service)

    def _gateways(self) -> None:
        for gw in self._list("gateway.networking.k8s.io/v1", "gateways"):
            gen = gw["metadata"].get("generation", 1)
            status = gw.get("status") or {}
            if any(
                c["type"] == "Programmed" and c.get("observedGeneration") == gen for c in status.get("conditions", [])
            ):
                continue
            self._status(
                "gateway.networking.k8s.io/v1",
                "gateways",
                gw["metadata"]["name"],
                {
                    "addresses": [{"type": "IPAddress", "value": SERVING_ADDRESS}],
                    "conditions": [
                        self._condition("Accepted", "True", "Accepted", gen),
                        self._condition("Programmed", "True", "Programmed", gen),
                    ],
                },
            )

    def _routes(self) -> None:
        pools = {p["metadata"]["name"] for p in self._list(POOL_API, "inferencepools")}
        for route in self._list("gateway.networking.k8s.io/v1", "httproutes"):
            gen = route["metadata"].get("generation", 1)
            parent = route["spec"]["parentRefs"][0]
            backends = [b["name"] for rule in route["spec"]["rules"] for b in rule.get("backendRefs", [])]
            resolved = all(b in pools for b in backends)
            rejected = self.rejected_routes.get(route["metadata"]["name"])
            accepted = (
                self._condition("Accepted", "False", rejected[0], gen, rejected[1])
                if rejected
                else self._condition("Accepted", "True", "Accepted", gen)
            )
            conditions = [
                accepted,
                self._condition(
                    "ResolvedRefs",
                    "True" if resolved else "False",
                    "ResolvedRefs" if resolved else "BackendNotFound",
                    gen,
                ),
            ]
            had = (route.get("status") or {}).get("parents") or []
            if had and [(c["type"], c["status"]) for c in had[0]["conditions"]] == [
                (c["type"], c["status"]) for c in conditions
            ]:
                continue
            self._status(
                "gateway.networking.k8s.io/v1",
                "httproutes",
                route["metadata"]["name"],
                {
                    "parents": [
                        {"parentRef": parent, "controllerName": "istio.io/gateway-controller", "conditions": conditions}
                    ]
                },
            )
            for pool in backends:
                if pool in pools:
                    self._status(
                        POOL_API,
                        "inferencepools",
                        pool,
                        {
                            "parents": [
                                {
                                    "parentRef": {
                                        "kind": "Gateway",
                                        "name": parent["name"],
                                        "namespace": parent["namespace"],
                                    },
                                    "conditions": [self._condition("Accepted", "True", "Accepted", 1)],
                                }
                            ]
                        },
                    )

    def _authorino(self) -> None:
        for obj in self._list("operator.authorino.kuadrant.io/v1beta1", "authorinos"):
            if any(c["type"] == "Ready" for c in (obj.get("status") or {}).get("conditions", [])):
                continue
            self._status(
                "operator.authorino.kuadrant.io/v1beta1",
                "authorinos",
                obj["metadata"]["name"],
                {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "Provisioned",
                            "lastTransitionTime": now_rfc3339(),
                        }
                    ]
                },
            )

    def _pickers(self) -> None:
        """Each pool's endpoint picker pod (the chart's Deployment and the kubelet stand in)."""
        have = {p["metadata"]["name"] for p in self._list("v1", "pods")}
        for pool in self._list(POOL_API, "inferencepools"):
            picker = pool["spec"]["endpointPickerRef"]["name"]
            name = f"{picker}-7d9f5"
            if name in have:
                continue
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": {"llm-d-router-gateway": picker}},
                "spec": {
                    "containers": [
                        {"name": "epp", "image": "mcr.microsoft.com/oss/v2/llm-d/llm-d-router-endpoint-picker:v0.9.0"}
                    ]
                },
            }
            self.cluster.api("POST", f"/api/v1/namespaces/{self.namespace}/pods", body)
            model = pool["metadata"]["name"].removesuffix("-inferencepool")
            if model in self.picker_pending:
                said = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {sku: gpu}. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
                status = {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": said,
                            "lastTransitionTime": now_rfc3339(),
                        }
                    ],
                }
            else:
                ready = {"type": "Ready", "status": "True", "lastTransitionTime": now_rfc3339()}
                status = {"phase": "Running", "conditions": [ready]}
            self.cluster.api("PATCH", f"/api/v1/namespaces/{self.namespace}/pods/{name}/status", {"status": status})

    def _auth_configs(self) -> None:
        api = "authorino.kuadrant.io/v1beta3"
        for config in self._list(api, "authconfigs"):
            gen = config["metadata"].get("generation", 1)
            reason, message = self.auth_failing or ("Reconciled", "")
            status = "False" if self.auth_failing else "True"
            had = {c["type"]: c for c in (config.get("status") or {}).get("conditions", [])}
            if (had.get("Ready") or {}).get("status") == status and (had.get("Ready") or {}).get("reason") == reason:
                continue
            conditions = [
                self._condition("Available", status, reason, gen, message),
                self._condition("Ready", status, reason, gen, message),
            ]
            self._status(
                api,
                "authconfigs",
                config["metadata"]["name"],
                {
                    "conditions": conditions,
                    "summary": {  # (every field the CRD requires)
                        "ready": status == "True",
                        "hostsReady": ["*"] if status == "True" else [],
                        "numHostsReady": "1/1" if status == "True" else "0/1",
                        "numIdentitySources": 1,
                        "numMetadataSources": 0,
                        "numAuthorizationPolicies": 0,
                        "numResponseItems": 0,
                        "festivalWristbandEnabled": False,
                    },
                },
            )

    def _keda(self) -> None:
        """KEDA's status on each ScaledObject: Ready (or, for `scalers_failing`, not), idle."""
        for scaled in self._list("keda.sh/v1alpha1", "scaledobjects"):
            name = scaled["metadata"]["name"]
            gen = scaled["metadata"].get("generation", 1)
            reason, message = self.scalers_failing.get(name) or (
                "ScaledObjectReady",
                "ScaledObject is defined correctly and is ready for scaling",
            )
            status = "False" if name in self.scalers_failing else "True"
            had = {c["type"]: c for c in (scaled.get("status") or {}).get("conditions", [])}
            if (had.get("Ready") or {}).get("reason") == reason:
                continue
            conditions = [
                self._condition("Ready", status, reason, gen, message),
                self._condition(
                    "Active",
                    "False",
                    "ScalerNotActive",
                    gen,
                    "Scaling is not performed because triggers are not active",
                ),
                self._condition(
                    "Fallback", "False", "NoFallbackFound", gen, "No fallbacks are active on this scaled object"
                ),
            ]
            self._status("keda.sh/v1alpha1", "scaledobjects", name, {"conditions": conditions})

    def _scaler(self) -> None:
        for iset in self._list("kaito.sh/v1beta1", "inferencesets"):
            meta = iset["metadata"]
            annotations = meta.get("annotations") or {}
            if annotations.get(SCALER_PREFIX + "auto-provision") != "true":
                continue
            wanted = scaled_object(iset)
            if wanted is None or self.scaled_objects.get(meta["name"]) == wanted:
                continue
            base = f"/apis/keda.sh/v1alpha1/namespaces/{self.namespace}/scaledobjects"
            with contextlib.suppress(OSError):
                self.cluster.api("DELETE", f"{base}/{meta['name']}")
            self.cluster.api("POST", base, wanted)
            self.scaled_objects[meta["name"]] = wanted
            hpa = {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": f"keda-hpa-{meta['name']}"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "kaito.sh/v1beta1", "kind": "InferenceSet", "name": meta["name"]},
                    "minReplicas": wanted["spec"]["minReplicaCount"],
                    "maxReplicas": wanted["spec"]["maxReplicaCount"],
                    "metrics": [
                        {
                            "type": "External",
                            "external": {
                                "metric": {"name": "s0-composite-metric"},
                                "target": {"type": "Value", "value": "1"},
                            },
                        }
                    ],
                },
            }
            with contextlib.suppress(OSError):
                self.cluster.api(
                    "POST", f"/apis/autoscaling/v2/namespaces/{self.namespace}/horizontalpodautoscalers", hpa
                )

    def scale(self, name: str, replicas: int, manager: str = "e2e-hpa") -> None:
        """What the HPA does when the metric says so: PATCH the InferenceSet's /scale as its own
        field manager (then report it on the HPA)."""
        path = f"/apis/kaito.sh/v1beta1/namespaces/{self.namespace}/inferencesets/{name}/scale?fieldManager={manager}"
        self.cluster.api("PATCH", path, {"spec": {"replicas": replicas}})
        with contextlib.suppress(OSError):
            self.cluster.api(
                "PATCH",
                f"/apis/autoscaling/v2/namespaces/{self.namespace}/horizontalpodautoscalers/keda-hpa-{name}/status",
                {"status": {"currentReplicas": replicas, "desiredReplicas": replicas}},
            )


def scaled_object(iset: dict[str, Any]) -> dict[str, Any] | None:
    """The ScaledObject keda-kaito-scaler 0.6.2 makes from an InferenceSet's annotations, or None
    where it would skip the InferenceSet (it says nothing then)."""
    import yaml

    meta = iset["metadata"]
    a = meta.get("annotations") or {}
    try:
        most = int(a[SCALER_PREFIX + "max-replicas"])
        least = max(1, int(a.get(SCALER_PREFIX + "min-replicas", "1")))
        metrics = yaml.safe_load(a[SCALER_PREFIX + "metrics"])
    except (KeyError, ValueError):
        return None
    if most <= 1 or most < least or not isinstance(metrics, list) or not metrics:
        return None
    triggers, up, down = [], [], []
    for m in metrics:
        if m.get("type") not in ("gauge", "histogram") or "upthreshold" not in m or "downthreshold" not in m:
            return None
        if float(m["downthreshold"]) > float(m["upthreshold"]):
            return None
        var = "".join(c if c.isalnum() or c == "_" else "_" for c in m["name"])
        up.append(f"{var} > {m['upthreshold']}")
        down.append(f"{var} < {m['downthreshold']}")
        metadata = {
            "inferenceSetName": meta["name"],
            "inferenceSetNamespace": meta["namespace"],
            "scalerAddress": "keda-kaito-scaler.keda.svc.cluster.local:10450",
            "metricName": m["name"],
            "metricSource": "modelpod",
            "aggregation": "service-avg" if m["type"] == "gauge" else "windowed-avg",
        }
        if m["type"] == "histogram":
            metadata["metricCacheWindow"] = str(m.get("metriccachewindow", 300))
        triggers.append(
            {
                "type": "external",
                "name": var,
                "metadata": metadata,
                "metricType": "Value",
                "authenticationRef": {"name": "keda-kaito-scaler-creds", "kind": "ClusterTriggerAuthentication"},
            }
        )
    triggers.append(
        {
            "type": "external",
            "name": "readiness_gate",
            "metadata": {
                "inferenceSetName": meta["name"],
                "inferenceSetNamespace": meta["namespace"],
                "scalerAddress": "keda-kaito-scaler.keda.svc.cluster.local:10450",
                "metricName": "readiness_gate",
                "aggregation": "gate",
            },
            "metricType": "Value",
            "authenticationRef": {"name": "keda-kaito-scaler-creds", "kind": "ClusterTriggerAuthentication"},
        }
    )
    policy = {"type": "Pods", "value": 1, "periodSeconds": int(a.get(SCALER_PREFIX + "scaleupcooldown", "300"))}
    down_policy = {"type": "Pods", "value": 1, "periodSeconds": int(a.get(SCALER_PREFIX + "scaledowncooldown", "300"))}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": meta["name"],
            "annotations": {"scaledobject.kaito.sh/managed-by": "keda-kaito-scaler"},
            "ownerReferences": [
                {
                    "apiVersion": "kaito.sh/v1beta1",
                    "kind": "InferenceSet",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "kaito.sh/v1beta1", "kind": "InferenceSet", "name": meta["name"]},
            "pollingInterval": 15,
            "minReplicaCount": least,
            "maxReplicaCount": most,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleUp": {
                            "stabilizationWindowSeconds": int(a.get(SCALER_PREFIX + "evaluationwindow", "60")),
                            "selectPolicy": "Max",
                            "policies": [policy],
                            "tolerance": "0.1",
                        },
                        "scaleDown": {
                            "stabilizationWindowSeconds": down_policy["periodSeconds"],
                            "selectPolicy": "Max",
                            "policies": [down_policy],
                            "tolerance": "0.1",
                        },
                    }
                },
                "scalingModifiers": {
                    "formula": f"(readiness_gate == 1 && {' && '.join(up)}) ? 2.0 : (({' && '.join(down)}) ? 0.5 : 1.0)",
                    "target": "1",
                    "metricType": "Value",
                },
            },
            "triggers": triggers,
        },
    }
