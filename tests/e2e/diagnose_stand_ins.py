"""Stand-ins that make a model fail the ways a real cluster does, each in the words of what it
stands in for (none of them runs here): the scheduler and the kubelet (a pod Pending for CPU, an
image that cannot be pulled, a container that keeps crashing), KAITO 0.12 classifying its pods
into InferenceReady (pkg/workspace/controllers/workspace_controller.go:895-1115@v0.12.0), a
kubelet's log endpoint (the API server proxies `pods/<pod>/log` to it), and KAITO's admission
webhook (the API server calls it on every Workspace create in the namespace)."""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from harness import CREATED_BY, Cluster, StandIn, now_rfc3339

from hostile_api import Ca, issue, make_ca

# What each trouble leaves on the pod (the kubelet's or the scheduler's words) and what KAITO 0.12
# says of it on InferenceReady (its reason and message format).
PULL_MESSAGE = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "mcr.microsoft.com/aks/kaito/kaito-base:0.5.0-typo": '
    "not found (stand-in kubelet)"
)
CPU_MESSAGE = (
    "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {sku: gpu}. preemption: 0/3 nodes "
    "are available: 3 No preemption victims found for incoming pod. (stand-in scheduler)"
)
CRASH_LOG = (
    "INFO 11-26 10:02:11 [api_server.py:1512] vLLM API server version 0.25.1\n"
    "INFO 11-26 10:02:40 [gpu_model_runner.py:2007] Model loading took 7.17 GiB\n"
    "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (9.91 GiB). Based on the available memory, the "
    "estimated maximum model length is 81184. Try increasing `gpu_memory_utilization` or decreasing "
    "`max_model_len` when initializing the engine. (stand-in log)\n"
)


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now_rfc3339()}


class StandInTrouble(StandIn):
    """For each model named in `troubles` (an InferenceSet: its Workspaces; else its Workspace
    <name>-0): the pod KAITO's StatefulSet would make, as the scheduler and the kubelet leave it
    ("pull", "crash", "cpu"), and KAITO 0.12's conditions on the Workspace. The models must be
    `held` by the KAITO stand-in, which leaves them alone. A crashing pod runs on `log_node`,
    whose stand-in kubelet serves its log."""

    def __init__(self, cluster: Cluster, namespace: str, troubles: dict[str, str], log_node: str):
        super().__init__(cluster)
        self.namespace, self.troubles, self.log_node = namespace, troubles, log_node
        self.done: set[str] = set()  # Workspaces whose trouble is in place

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            with contextlib.suppress(OSError, ValueError, KeyError):
                self._once()

    def _once(self) -> None:
        base = f"/apis/kaito.sh/v1beta1/namespaces/{self.namespace}/workspaces"
        for ws in self.cluster.api("GET", base)["items"]:
            meta = ws["metadata"]
            model = (meta.get("labels") or {}).get(CREATED_BY) or meta["name"].removesuffix("-0")
            trouble = self.troubles.get(model)
            if trouble is None or meta["name"] in self.done:
                continue
            self._node(ws, trouble)
            self._pod(meta["name"], trouble)
            reason, message = self._kaito_says(meta["name"], trouble)
            conditions = [
                _condition("ResourceReady", "True", "workspaceResourceStatusSuccess", "workspace resource is ready"),
                _condition("InferenceReady", "False", reason, message),
                _condition("WorkspaceSucceeded", "False", "workspacePending", "workspace is waiting for inference workload readiness"),
            ]  # fmt: skip
            self.cluster.api("PATCH", f"{base}/{meta['name']}/status", {"status": {"conditions": conditions}})
            self.done.add(meta["name"])

    @staticmethod
    def _kaito_says(workspace: str, trouble: str) -> tuple[str, str]:
        """KAITO 0.12's reason and message (workspace_controller.go:1005-1093@v0.12.0)."""
        if trouble == "pull":
            return "ImagePullError", f'container "{workspace}" image pull failed (ErrImagePull): {PULL_MESSAGE}'
        if trouble == "crash":
            return (
                "ContainerCrashLoopBackOff",
                f'container "{workspace}" is in CrashLoopBackOff; last termination: exit code 1',
            )
        return "Unschedulable", f'pod "{workspace}-0" is unschedulable: {CPU_MESSAGE}'

    def _node(self, ws: dict[str, Any], trouble: str) -> None:
        """The node KAITO's provisioner made for the Workspace (labelled with its selector); a
        crashing pod's is the node whose stand-in kubelet serves its log."""
        labels = {**((ws.get("resource") or {}).get("labelSelector") or {}).get("matchLabels", {})}
        labels["node.kubernetes.io/instance-type"] = (ws.get("resource") or {}).get("instanceType", "")
        if trouble == "crash":
            self.cluster.label_node(self.log_node, labels, "why-stand-in")
        else:
            self.cluster.create_gpu_node(f"{ws['metadata']['name']}-node", labels)

    def _pod(self, workspace: str, trouble: str) -> None:
        name = f"{workspace}-0"
        spec: dict[str, Any] = {
            "containers": [{"name": workspace, "image": "mcr.microsoft.com/aks/kaito/kaito-base:0.5.0"}]
        }
        if trouble == "crash":
            spec["nodeName"] = self.log_node
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"kaito.sh/workspace": workspace}},
            "spec": spec,
        }
        with contextlib.suppress(OSError):
            self.cluster.api("POST", f"/api/v1/namespaces/{self.namespace}/pods", body)
        if trouble == "pull":
            waiting = {"waiting": {"reason": "ErrImagePull", "message": PULL_MESSAGE}}
            status: dict[str, Any] = {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": workspace,
                        "ready": False,
                        "restartCount": 0,
                        "image": "x",
                        "imageID": "",
                        "state": waiting,
                    }
                ],
            }
        elif trouble == "crash":
            terminated = {"exitCode": 1, "reason": "Error", "startedAt": now_rfc3339(), "finishedAt": now_rfc3339()}
            waiting = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off 1m20s restarting failed container={workspace} pod={name}",
                }
            }
            status = {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": workspace,
                        "ready": False,
                        "restartCount": 4,
                        "image": "x",
                        "imageID": "",
                        "state": waiting,
                        "lastState": {"terminated": terminated},
                    }
                ],
            }
        else:
            status = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": CPU_MESSAGE,
                        "lastTransitionTime": now_rfc3339(),
                    }
                ],
            }
        self.cluster.api("PATCH", f"/api/v1/namespaces/{self.namespace}/pods/{name}/status", {"status": status})  # fmt: skip


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _StandInHttps:
    """An HTTPS server on 127.0.0.1 with a certificate of its own test CA."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]

    def __init__(self, folder: Path, name: str):
        self.ca: Ca = make_ca(folder, name)
        cert, key = issue(self.ca, folder, f"{name}-server")
        self.server = _Server(("127.0.0.1", 0), self.handler)
        self.server.stand_in = self  # type: ignore[attr-defined]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


class _KubeletHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        stand_in: StandInKubelet = self.server.stand_in  # type: ignore[attr-defined]
        stand_in.asked.append(self.path)
        path = self.path.split("?", 1)[0]
        body = next((log for prefix, log in stand_in.logs.items() if path.startswith(prefix)), "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class StandInKubelet(_StandInHttps):
    """Stands in for a node's kubelet (none runs here): answers the API server's
    /containerLogs/<namespace>/<pod>/<container> with the log of the first path prefix in `logs`
    that matches. `register`: a node whose status points the API server at it (InternalIP
    127.0.0.1, kubeletEndpoint its port)."""

    handler = _KubeletHandler

    def __init__(self, folder: Path):
        super().__init__(folder, "kubelet")
        self.logs: dict[str, str] = {}
        self.asked: list[str] = []

    def register(self, cluster: Cluster, node: str) -> None:
        cluster.create_gpu_node(node, {"apps": "diag-kubelet"})
        status = {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],  # (a Hostname would be dialled first)
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
        }
        cluster.api("PATCH", f"/api/v1/nodes/{node}/status", {"status": status})


class _WebhookHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        stand_in: StandInWebhook = self.server.stand_in  # type: ignore[attr-defined]
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        request = review["request"]
        name = (request.get("object") or {}).get("metadata", {}).get("name") or request.get("name") or ""
        stand_in.asked.append(name)
        denial = stand_in.denials.get(name)
        response: dict[str, Any] = {"uid": request["uid"], "allowed": denial is None}
        if denial is not None:
            response["status"] = {"code": 400, "message": f"validation failed: {denial}", "reason": "BadRequest"}
        body = json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class StandInWebhook(_StandInHttps):
    """Stands in for KAITO's validating webhook (validation.workspace.kaito.sh, failurePolicy Fail:
    charts/kaito/workspace/templates/webhooks.yaml@v0.12.0): the API server calls it on each
    Workspace create in `namespace`; it denies the names in `denials` with KAITO's words
    ("validation failed: ..."), and admits the rest."""

    handler = _WebhookHandler
    NAME = "validation.workspace.kaito.sh"

    def __init__(self, folder: Path, cluster: Cluster, namespace: str):
        super().__init__(folder, "kaito-webhook")
        self.cluster = cluster
        self.denials: dict[str, str] = {}
        self.asked: list[str] = []
        config = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": f"{self.NAME}-{namespace}"},
            "webhooks": [
                {
                    "name": self.NAME,
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 10,
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{self.port}/validate/workspace.kaito.sh",
                        "caBundle": base64.b64encode(self.ca.cert.read_bytes()).decode(),
                    },
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "rules": [
                        {
                            "apiGroups": ["kaito.sh"],
                            "apiVersions": ["*"],
                            "resources": ["workspaces"],
                            "operations": ["CREATE"],
                        }
                    ],
                }
            ],
        }
        self.config_name = config["metadata"]["name"]
        cluster.api("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", config)
        time.sleep(1)  # the API server picks the configuration up

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.cluster.api(
                "DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{self.config_name}"
            )
        super().stop()
