#!/usr/bin/env python3
"""`make e2e`: the real Pulumi engine against a real kube-apiserver, offline.

1. etcd and kube-apiserver on loopback (free ports, token auth, a temp dir), torn down at the
   end whatever happens;
2. the real KAITO v0.8.1 CRDs, as on a cluster where KAITO is already installed (the stack says
   `kaito.install: false`);
3. a GPU node shaped like an AKS Standard_NC24ads_A100_v4 node, Ready, which a stand-in for
   GPU Feature Discovery labels only seconds after the first `pulumi up` starts, and a stand-in
   for KAITO's controller that reports Workspaces serving (or failing, with a reason);
4. the `e2e` stack (a GPU, a CPU and a gated workspace) on a local file backend:
   preview -> up (waits for the labels, then for the models) -> read back what the API server
   stored -> up again (no changes) -> replicas 1 -> 2 -> preset change (a replace) -> config
   edit (rolls) -> no matching node and a failing model (fail after their timeouts, with the
   reasons) -> a bad config (fails, cluster unchanged) -> destroy;
5. the same stack deployed by the program as it was before the kaito_aks package (git commit
   OLD_LAYOUT), then `preview`/`up --expect-no-changes` with today's (the aliases hold);
6. a Pulumi YAML program that adds the component provider (components/) and deploys one model
   through its own explicit provider, waits included (pulumi-language-yaml from e2e-tools).

Every assertion reads the API server. Nothing here passes without the engine and the server:
missing tools fail the run with the reason. The checkout is never modified: the project is
copied to the temp dir and runs there with the checkout's virtualenv.

    python scripts/e2e.py --bin <dir from scripts/e2e-tools> [--keep]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# KAITO's CRDs as the project derived them from the release (tests/upstream, see its provenance).
CRDS = ROOT / "components" / "tests" / "upstream" / "kaito-0.8.1" / "crds"
TOKEN = "kaito-aks-e2e-admin-token"
PROJECT_FILES = [
    "Pulumi.yaml",
    "Pulumi.e2e.yaml",
    "__main__.py",
    "components",
    "stacks",
    "requirements.txt",
]
STACK = "e2e"
# The last commit before the components became the kaito_aks package (issue #10): a stack it
# deployed must preview no changes with today's program (aliases where anything moved).
OLD_LAYOUT = "21b4115"
OLD_LAYOUT_FILES = ["Pulumi.yaml", "__main__.py", "components", "kaito_aks", "stacks", "requirements.txt"]
YAML_MODEL = "yaml-phi"
YAML_STACK = "yaml"
GPU, CPU, GATED = "phi-4-mini", "tiny-cpu", "llama"
BROKEN = "never-ready"
NO_NODE = "no-gpu-node"  # selects a pool that does not exist
GPU_NODE = "aks-a100-0"
# A node of an AKS Standard_NC24ads_A100_v4 pool as the kubelet registers it (one A100 80GB),
# before GPU Feature Discovery has labelled it.
GPU_NODE_LABELS = {
    "kubernetes.io/os": "linux",
    "kubernetes.io/hostname": GPU_NODE,
    "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
    "agentpool": "a100",
    "kubernetes.azure.com/agentpool": "a100",
    "nvidia.com/gpu.present": "true",
}
GFD_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-PCIE-80GB",
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.memory": "81920",
}
# Longer than the same `up` takes to reach the Workspaces without the wait (about 4 s here).
GFD_DELAY_SECONDS = 10.0
E2E_HF_TOKEN = "hf_e2e_not_a_real_token"  # Pulumi.e2e.yaml's hfToken (encrypted with the empty passphrase)


class E2EError(Exception):
    pass


class Run:
    def __init__(self, bin_dir: Path, work: Path):
        self.bin = bin_dir
        self.work = work
        self.times: list[tuple[str, float]] = []
        self.procs: list[subprocess.Popen] = []
        self.stand_ins: list[StandIn] = []
        self.server = ""
        self.kubeconfig = work / "kubeconfig"
        self.project = work / "project"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG", "ARM_"))},
            "PATH": f"{bin_dir}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
            "PULUMI_HOME": str(work / "pulumi-home"),
            "PULUMI_BACKEND_URL": f"file://{work / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": "",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            "KUBECONFIG": str(self.kubeconfig),
            # The language host the proxy can serve (sdk/v3 3.79, see scripts/e2e-tools) reads the
            # virtualenv from its command line, which today's engine no longer passes.
            "PULUMI_PYTHON_CMD": str(ROOT / ".venv" / "bin" / "python"),
        }

    # ------------------------------------------------------------------ plumbing

    @contextlib.contextmanager
    def step(self, name: str):
        print(f"\n=== {name}", flush=True)
        start = time.monotonic()
        yield
        took = time.monotonic() - start
        self.times.append((name, took))
        print(f"--- {name}: ok ({took:.1f} s)", flush=True)

    def sh(
        self,
        *cmd: str,
        check: bool = True,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        quiet: bool = False,
        secret: bool = False,
    ) -> subprocess.CompletedProcess:
        """Run a command and print its output (unless quiet; never when it may hold secrets)."""
        cwd = cwd or (self.project if self.project.exists() else self.work)
        result = subprocess.run(cmd, cwd=cwd, env=env or self.env, capture_output=True, text=True)
        if not secret and (not quiet or (check and result.returncode != 0)):
            out = (result.stdout + result.stderr).strip()
            if out:
                print("\n".join("    " + line for line in out.splitlines()[-60:]))
        if check and result.returncode != 0:
            raise E2EError(f"`{' '.join(cmd)}` exited {result.returncode}")
        return result

    def pulumi(
        self, *args: str, check: bool = True, quiet: bool = False, secret: bool = False
    ) -> subprocess.CompletedProcess:
        pulumi = str(self.bin / "pulumi")
        return self.sh(pulumi, *args, "--non-interactive", "--stack", STACK, check=check, quiet=quiet, secret=secret)

    def kubectl_json(self, *args: str) -> Any:
        out = self.sh(str(self.bin / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args, "-o", "json", quiet=True)
        return json.loads(out.stdout)

    def start(self, name: str, *cmd: str) -> None:
        log = open(self.work / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    def stop(self) -> None:
        """Stop the server first, then etcd; a throwaway cluster gets 5 s to exit cleanly."""
        start = time.monotonic()
        for stand_in in self.stand_ins:
            stand_in.stop()
        for p in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if self.procs:
            self.times.append(("tear down the cluster", time.monotonic() - start))

    # ------------------------------------------------------------------ the cluster

    def start_cluster(self) -> None:
        for tool in (
            "etcd",
            "kube-apiserver",
            "kubectl",
            "pulumi",
            "pulumi-language-python",
            "pulumi-resource-kubernetes",
        ):
            if not os.access(self.bin / tool, os.X_OK):
                raise E2EError(f"{self.bin / tool} is missing: run scripts/e2e-tools (it builds the toolchain)")
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
        self.start(
            "etcd", str(self.bin / "etcd"), "--data-dir", str(data), "--name", "e2e",
            "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"e2e=http://127.0.0.1:{peer}", "--unsafe-no-fsync",
        )  # fmt: skip
        wait_for(lambda: http_ok(f"http://127.0.0.1:{client}/health"), "etcd", 60)
        self.start(
            "kube-apiserver", str(self.bin / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{client}", "--bind-address=127.0.0.1", f"--secure-port={secure}",
            f"--cert-dir={certs}", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
            "--service-cluster-ip-range=10.0.0.0/24", "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={certs / 'sa.pub'}", f"--service-account-signing-key-file={certs / 'sa.key'}",
            f"--token-auth-file={self.work / 'tokens.csv'}", "--authorization-mode=RBAC",
            "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
            # No kube-controller-manager runs: without a garbage collector, foreground deletes
            # would wait forever on their finalizer.
            "--enable-garbage-collector=false",
        )  # fmt: skip
        server = f"https://127.0.0.1:{secure}"
        self.server = server
        wait_for(lambda: http_ok(f"{server}/readyz", TOKEN), "kube-apiserver /readyz", 120)
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "e2e", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
                    "users": [{"name": "admin", "user": {"token": TOKEN}}],
                    "contexts": [
                        {"name": "e2e", "context": {"cluster": "e2e", "user": "admin", "namespace": "default"}}
                    ],
                    "current-context": "e2e",
                }
            )
        )
        wait_for(lambda: self.kubectl_ok("get", "namespace", "default"), "namespace default", 60)

    def kubectl_ok(self, *args: str) -> bool:
        cmd = [str(self.bin / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args]
        return subprocess.run(cmd, env=self.env, capture_output=True).returncode == 0

    def install_kaito_crds(self) -> None:
        files = sorted(CRDS.glob("*.yaml"))
        if not files:
            raise E2EError(f"no KAITO CRDs under {CRDS}: regenerate them with scripts/upstream_data.py")
        for f in files:
            self.sh(
                str(self.bin / "kubectl"), "--kubeconfig", str(self.kubeconfig), "apply", "--server-side", "-f", str(f)
            )
        self.sh(
            str(self.bin / "kubectl"), "--kubeconfig", str(self.kubeconfig), "wait", "--for=condition=Established",
            "--timeout=60s", "crd/workspaces.kaito.sh", "crd/inferencesets.kaito.sh",
        )  # fmt: skip

    # ------------------------------------------------------------------ the project

    def prepare_project(self) -> None:
        self.project.mkdir()
        (self.work / "state").mkdir()
        for name in PROJECT_FILES:
            copy_into(ROOT / name, self.project / name)
        venv = ROOT / ".venv"
        if not (venv / "bin" / "python").exists():
            raise E2EError(f"{venv} is missing: run `make .venv/.installed` first")
        (self.project / ".venv").symlink_to(venv)
        provider_version = installed_sdk_version("pulumi-kubernetes")
        self.sh(
            str(self.bin / "pulumi"), "plugin", "install", "resource", "kubernetes", f"v{provider_version}",
            "--file", str(self.bin / "pulumi-resource-kubernetes"),
        )  # fmt: skip
        self.sh(str(self.bin / "pulumi"), "stack", "init", STACK, "--non-interactive")

    def use_layout(self, commit: str | None) -> None:
        """Make the project's program the one of `commit` (from git), or this checkout's."""
        for name in {*OLD_LAYOUT_FILES, *PROJECT_FILES} - {"Pulumi.e2e.yaml"}:
            path = self.project / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        if commit is None:
            for name in PROJECT_FILES:
                if name != "Pulumi.e2e.yaml":
                    copy_into(ROOT / name, self.project / name)
            return
        # .ci/run tests a copy without .git; it says where the clone's history is
        git_dir = os.environ.get("KAITO_AKS_GIT_DIR") or str(ROOT / ".git")
        archive = subprocess.run(
            ["git", "--git-dir", git_dir, "archive", "--format=tar", commit, *OLD_LAYOUT_FILES], capture_output=True
        )
        if archive.returncode != 0:
            raise E2EError(
                f"cannot read commit {commit} from {git_dir} (a shallow clone? set KAITO_AKS_GIT_DIR): "
                + archive.stderr.decode()[-300:]
            )
        subprocess.run(["tar", "-x", "-C", str(self.project)], input=archive.stdout, check=True)

    def config_path(self, path: str, value: str) -> None:
        self.pulumi("config", "set", "--path", f"kaito-aks:{path}", value, quiet=True)

    # ------------------------------------------------------------------ a YAML consumer

    def yaml_consumer(self) -> None:
        """The component provider (components/) used from Pulumi YAML: the schema comes from the
        package, the model is deployed through the program's own explicit provider, and the
        waits run (the GPU node is labelled, the stand-in KAITO reports ready)."""
        package = self.work / "kaito-aks"
        copy_into(ROOT / "components", package / "components")
        program = self.work / "yaml-program"
        program.mkdir()
        (program / "Pulumi.yaml").write_text(YAML_PROGRAM.replace("@PACKAGE@", str(package / "components")))
        plugin = Path(self.env["PULUMI_HOME"]) / "plugins" / f"language-yaml-v{yaml_version(self.bin)}"
        plugin.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.bin / "pulumi-language-yaml", plugin / "pulumi-language-yaml")
        pulumi = str(self.bin / "pulumi")
        env = dict(self.env)
        # The waits are dynamic resources: Pulumi's Python dynamic-provider process imports them
        # from kaito_aks, as it would from a pip-installed kaito-aks.
        env["PYTHONPATH"] = str(package / "components")

        def sh(*args: str, quiet: bool = False) -> subprocess.CompletedProcess:
            return self.sh(pulumi, *args, "--non-interactive", cwd=program, env=env, quiet=quiet)

        sh("stack", "init", YAML_STACK, quiet=True)
        subprocess.run(
            [pulumi, "config", "set", "--secret", "kubeconfig", "--non-interactive"],
            input=self.kubeconfig.read_text(), cwd=program, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        sh("config", "set", "--path", "pulumi:disable-default-providers[0]", "kubernetes", quiet=True)
        sh("up", "--yes", "--skip-preview")
        ws = self.objects("workspaces.kaito.sh").get(f"{YAML_MODEL}-0")
        expect(ws is not None, f"the YAML program created no Workspace {YAML_MODEL}-0")
        assert ws is not None
        expect(ws["inference"]["preset"]["name"] == "phi-4-mini-instruct", f"preset: {ws['inference']}")
        expect(ws["resource"]["labelSelector"] == {"matchLabels": {"agentpool": "a100"}}, f"{ws['resource']}")
        expect(YAML_MODEL in self.objects("services"), "no Service for the YAML program's model")
        outputs = json.loads(sh("stack", "output", "--json", quiet=True).stdout)
        expect(
            outputs.get("endpoint") == f"http://{YAML_MODEL}.default.svc.cluster.local/v1/chat/completions",
            f"outputs: {outputs}",
        )
        expect((outputs.get("gpuNodes") or {}).get("nodes") == [GPU_NODE], f"gpuNodes: {outputs.get('gpuNodes')}")
        state = sh("stack", "export", quiet=True).stdout
        expect("BEGIN CERTIFICATE" not in state and TOKEN not in state, "the kubeconfig is in the state in plaintext")
        sh("destroy", "--yes", "--skip-preview", quiet=True)
        expect(f"{YAML_MODEL}-0" not in self.objects("workspaces.kaito.sh"), "the YAML program left its Workspace")

    # ------------------------------------------------------------------ reading the cluster

    def objects(self, kind: str) -> dict[str, dict]:
        return {o["metadata"]["name"]: o for o in self.kubectl_json("get", kind, "-n", "default")["items"]}

    def snapshot(self) -> dict[str, str]:
        """name -> resourceVersion of every object our stack owns kinds of."""
        out = {}
        for kind in ("workspaces.kaito.sh", "secrets", "services", "configmaps"):
            for name, o in self.objects(kind).items():
                out[f"{kind}/{name}"] = o["metadata"]["resourceVersion"]
        return out


# A user's Pulumi YAML program: the package added from a local path, one model on the cluster.
YAML_PROGRAM = f"""\
name: kaito-aks-yaml-consumer
runtime: yaml
packages:
  kaito-aks: @PACKAGE@
config:
  kubeconfig:
    type: string
    secret: true
resources:
  cluster:
    type: pulumi:providers:kubernetes
    properties:
      kubeconfig: ${{kubeconfig}}
  phi:
    type: kaito-aks:KaitoModel
    properties:
      kaitoVersion: "0.8.1"
      name: {YAML_MODEL}
      model: phi-4-mini-instruct
      labelSelector:
        matchLabels:
          agentpool: a100
      kubeconfig: ${{kubeconfig}}
      readyTimeoutMinutes: 2
    options:
      providers:
        - ${{cluster}}
outputs:
  endpoint: ${{phi.endpoint}}
  model: ${{phi.model}}
  gpuNodes: ${{phi.gpuNodes}}
"""


def yaml_version(bin_dir: Path) -> str:
    stamp = bin_dir / ".pulumi-language-yaml.version"
    if not stamp.is_file():
        raise E2EError(f"no pulumi-language-yaml in {bin_dir}: run scripts/e2e-tools")
    return stamp.read_text().strip()


def copy_into(src: Path, dest: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "venv"), symlinks=True)
    else:
        shutil.copy2(src, dest)


def installed_sdk_version(dist: str) -> str:
    """Version of a package in the project's virtualenv (the program's SDKs)."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    return subprocess.run([str(venv_python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
            return resp.status == 200
    except OSError:
        return False


def api(server: str, method: str, path: str, body: dict | None = None) -> Any:
    """One call to the API server as the e2e admin (JSON in, JSON out)."""
    data = json.dumps(body).encode() if body is not None else None
    content = "application/merge-patch+json" if method == "PATCH" else "application/json"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content}
    req = urllib.request.Request(server + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=5, context=_INSECURE) as resp:
        return json.loads(resp.read() or b"{}")


class StandIn:
    """A background thread standing in for a controller this e2e does not run; stopped with the cluster."""

    def __init__(self, server: str, delay: float):
        self.server, self.delay = server, delay
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
    """Stands in for KAITO's workspace controller, which this e2e does not run (no kubelet, no
    GPUs): it sets each Workspace's InferenceReady condition as KAITO would once the model
    serves: True after `delay` seconds, or False with a reason for names in `failing`. It records
    when it did, so the test can check that `pulumi up` waited for it."""

    def __init__(self, server: str, delay: float = 2.0):
        super().__init__(server, delay)
        self.failing: dict[str, str] = {}
        self.ready_at: dict[str, float] = {}
        self.seen: dict[str, float] = {}

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            with contextlib.suppress(OSError, ValueError):
                self._reconcile()

    def _reconcile(self) -> None:
        items = api(self.server, "GET", "/apis/kaito.sh/v1beta1/workspaces")["items"]
        for ws in items:
            meta = ws["metadata"]
            key = f"{meta['namespace']}/{meta['name']}/{meta['uid']}"
            first = self.seen.setdefault(key, time.time())
            current = {c["type"]: c for c in (ws.get("status") or {}).get("conditions", [])}.get("InferenceReady", {})
            want = "False" if meta["name"] in self.failing else "True"
            generation = meta.get("generation", 1)
            # KAITO reconciles every spec change (a new generation) and reports on it
            if (current.get("status"), current.get("observedGeneration")) == (want, generation):
                continue
            if time.time() - first < self.delay:
                continue
            reason = self.failing.get(meta["name"], "InferenceReady")
            condition = {
                "type": "InferenceReady",
                "status": want,
                "reason": "InferenceFailed" if want == "False" else "InferenceReady",
                "message": reason if want == "False" else "Inference has been deployed successfully",
                "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "observedGeneration": generation,
            }
            path = f"/apis/kaito.sh/v1beta1/namespaces/{meta['namespace']}/workspaces/{meta['name']}/status"
            api(self.server, "PATCH", path, {"status": {"conditions": [condition]}})
            if want == "True":
                self.ready_at[key] = time.time()


def create_gpu_node(server: str) -> None:
    """Register a GPU node as the kubelet would (no kubelet runs here): Ready, one nvidia.com/gpu
    advertised by the device plugin, the AKS GPU pool's labels and taint; no GFD labels yet."""
    api(
        server,
        "POST",
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": GPU_NODE, "labels": GPU_NODE_LABELS},
            "spec": {"taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]},
        },
    )
    resources = {"cpu": "24", "memory": "220Gi", "pods": "110", "nvidia.com/gpu": "1"}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now}
    status = {"capacity": resources, "allocatable": resources, "conditions": [{**ready, "lastTransitionTime": now}]}
    api(server, "PATCH", f"/api/v1/nodes/{GPU_NODE}/status", {"status": status})


class StandInGfd(StandIn):
    """Stands in for GPU Feature Discovery (no GPU, driver or GFD here): labels the GPU node
    with nvidia.com/gpu.product/count/memory `delay` seconds after it starts, as GFD does once
    the driver is installed. `labelled_at` is the API server's time of that update."""

    MANAGER = "gpu-feature-discovery-stand-in"

    def __init__(self, server: str, delay: float):
        super().__init__(server, delay)
        self.labelled_at: str | None = None

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        path = f"/api/v1/nodes/{GPU_NODE}?fieldManager={self.MANAGER}"
        node = api(self.server, "PATCH", path, {"metadata": {"labels": GFD_LABELS}})
        times = [m["time"] for m in node["metadata"]["managedFields"] if m.get("manager") == self.MANAGER]
        self.labelled_at = max(times)


def wait_for(check, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise E2EError(f"{what} not ready after {seconds:.0f} s")


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise E2EError(message)


def preview_ops(result: subprocess.CompletedProcess) -> dict[str, list[str]]:
    """op -> resource names, from `pulumi preview --json`."""
    data = json.loads(result.stdout)
    ops: dict[str, list[str]] = {}
    for step in data.get("steps", []):
        ops.setdefault(step["op"], []).append(step["urn"].rsplit("::", 1)[1])
    return ops


# ---------------------------------------------------------------------- the scenario


def scenario(run: Run) -> None:
    from stacks.plan import model_plans

    from stacks.load import parse_stack_file
    from stacks.stackfile import read_stack_file

    with run.step("start etcd + kube-apiserver"):
        run.start_cluster()
    with run.step("install the KAITO v0.8.1 CRDs"):
        run.install_kaito_crds()
    with run.step("project, provider plugin, stack init"):
        run.prepare_project()
    with run.step("a GPU node joins, Ready, not yet labelled by GPU Feature Discovery"):
        create_gpu_node(run.server)

    def expected_workspaces() -> dict[str, dict]:
        f = read_stack_file(STACK, run.project)
        cfg = parse_stack_file(f)
        return {ws.metadata.name: ws.manifest() for m in model_plans(cfg) for ws in m.workspaces}

    with run.step("pulumi preview shows the creates"):
        ops = preview_ops(run.pulumi("preview", "--json", quiet=True))
        expect(set(ops) <= {"create", "same"}, f"unexpected operations in a first preview: {sorted(ops)}")
        created = set(ops.get("create", []))
        for name in (
            f"default/{GPU}/gpu-nodes",
            f"default/{GATED}/gpu-nodes",
            f"default/{GPU}/{GPU}-0",
            f"default/{CPU}/{CPU}-0",
            f"default/{GATED}/{GATED}-0",
            f"default/{GATED}/{GATED}-hf-token",
        ):
            expect(name in created, f"preview does not create {name}: {sorted(created)}")

    kaito = StandInKaito(run.server).start()
    run.stand_ins.append(kaito)

    with run.step("the first pulumi up waits for GFD's labels, then for every model to serve"):
        gfd = StandInGfd(run.server, GFD_DELAY_SECONDS)
        run.stand_ins.append(gfd)
        gfd.start()
        run.pulumi("up", "--yes", "--skip-preview")
        returned = time.time()
        expect(gfd.labelled_at is not None, "the GPU node was never labelled")
        stored = run.objects("workspaces.kaito.sh")
        for name in (f"{GPU}-0", f"{GATED}-0"):
            created = stored[name]["metadata"]["creationTimestamp"]
            # RFC 3339 UTC timestamps of one server, to the second: they compare as strings
            expect(created >= str(gfd.labelled_at), f"{name} was created at {created}, before GFD labelled the node")
        print(f"    GFD labels at {gfd.labelled_at} ({GFD_DELAY_SECONDS:g} s after up started); presets created after")
        found = json.loads(run.pulumi("stack", "output", "workspaces", "--json", quiet=True).stdout)
        expect(
            found[f"default/{GPU}"]["gpuNodes"]
            == {
                "nodes": [GPU_NODE],
                "gpuProduct": "NVIDIA-A100-PCIE-80GB",
                "gpusPerNode": 1,
                "gpuMemoryMiB": 81920,
                "gpuMemoryMiBPerNode": 81920,
            },
            f"gpuNodes output: {found[f'default/{GPU}']['gpuNodes']}",
        )
        for name, ws in stored.items():
            key = f"default/{name}/{ws['metadata']['uid']}"
            expect(key in kaito.ready_at, f"pulumi up returned before {name} was InferenceReady")
            expect(kaito.ready_at[key] <= returned, f"{name} became ready after pulumi up returned")
        waited = min(kaito.ready_at.values()) - min(kaito.seen.values())
        print(f"    models became ready {waited:.1f} s after their Workspaces were created; pulumi up waited")

    with run.step("the API server stored exactly the expected objects"):
        stored = run.objects("workspaces.kaito.sh")
        wanted = expected_workspaces()
        expect(set(stored) == set(wanted), f"Workspaces {sorted(stored)} != {sorted(wanted)}")
        for name, want in wanted.items():
            got = stored[name]
            expect("spec" not in got, f"{name} has a spec")
            # What the server adds is the CRD's defaults: resource.count and preset.accessMode.
            want_resource = {"count": 1, **want["resource"]}
            expect(got["resource"] == want_resource, f"{name}.resource: {got['resource']} != {want_resource}")
            want_inference = json.loads(json.dumps(want["inference"]))
            if "preset" in want_inference:
                want_inference["preset"] = {"accessMode": "public", **want_inference["preset"]}
            expect(got["inference"] == want_inference, f"{name}.inference: {got['inference']} != {want_inference}")
            expect(
                got["metadata"]["labels"] == want["metadata"]["labels"], f"{name} labels {got['metadata']['labels']}"
            )
        gated = stored[f"{GATED}-0"]["inference"]["preset"]
        expect(gated["presetOptions"] == {"modelAccessSecret": f"{GATED}-hf-token"}, f"gated preset options: {gated}")
        expect(
            stored[f"{GPU}-0"]["resource"]["labelSelector"] == {"matchLabels": {"nvidia.com/gpu.present": "true"}},
            "GPU selector",
        )
        expect(
            stored[f"{CPU}-0"]["resource"]["labelSelector"] == {"matchLabels": {"kubernetes.io/os": "linux"}},
            "CPU selector",
        )
        secret = run.objects("secrets")[f"{GATED}-hf-token"]
        expect(set(secret["data"]) == {"HF_TOKEN"}, f"secret keys: {sorted(secret['data'])}")
        expect(
            base64.b64decode(secret["data"]["HF_TOKEN"]).decode().startswith("hf_"),
            "HF_TOKEN is not the configured token",
        )
        svc = run.objects("services")[GPU]
        expect(
            svc["spec"]["selector"] == {"inferenceset.kaito.sh/created-by": GPU, "apps.kubernetes.io/pod-index": "0"},
            "service selector",
        )
        forms = (E2E_HF_TOKEN, base64.b64encode(E2E_HF_TOKEN.encode()).decode())  # the provider stores data base64
        state = run.pulumi("stack", "export", quiet=True).stdout
        expect(not any(f in state for f in forms), "the HF token appears in plaintext in the Pulumi state")
        revealed = run.pulumi("stack", "export", "--show-secrets", secret=True).stdout
        expect(
            any(f in revealed for f in forms),
            "the state check is blind: the token is not in the decrypted state either",
        )

    with run.step("a second pulumi up changes nothing"):
        before = run.snapshot()
        run.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes")
        expect(run.snapshot() == before, "objects changed on a no-op update")

    with run.step("replicas 1 -> 2 adds a serving instance, touches nothing else"):
        before = run.snapshot()
        run.config_path("workspaces[0].replicas", "2")
        result = run.pulumi("up", "--yes", "--skip-preview")
        expect("failed" not in result.stdout.lower(), "an update step failed")
        stored = run.objects("workspaces.kaito.sh")
        expect({f"{GPU}-0", f"{GPU}-1"} <= set(stored), f"replicas: {sorted(stored)}")
        expect(
            stored[f"{GPU}-1"]["metadata"]["labels"]["inferenceset.kaito.sh/created-by"] == GPU,
            "replica not behind the endpoint",
        )
        after = run.snapshot()
        expect(all(after[k] == v for k, v in before.items()), "existing objects were modified by scaling")

    with run.step("changing the preset (immutable in KAITO) is a replace, and succeeds"):
        old_uid = run.objects("workspaces.kaito.sh")[f"{GPU}-0"]["metadata"]["uid"]
        run.config_path("workspaces[0].model", "phi-3.5-mini-instruct")
        ops = preview_ops(run.pulumi("preview", "--json", quiet=True))
        replaced = (
            set(ops.get("replace", [])) | set(ops.get("create-replacement", [])) | set(ops.get("delete-replaced", []))
        )
        expect(f"default/{GPU}/{GPU}-0" in replaced, f"preset change is not a replace: {ops}")
        run.pulumi("up", "--yes", "--skip-preview")
        ws = run.objects("workspaces.kaito.sh")[f"{GPU}-0"]
        expect(ws["inference"]["preset"]["name"] == "phi-3.5-mini-instruct", "preset not changed")
        expect(ws["metadata"]["uid"] != old_uid, "the Workspace was patched, not replaced")

    with run.step("a config edit renames its ConfigMap, so the Workspace changes and KAITO rolls the pods"):
        run.config_path("workspaces[2].config.vllm.max-model-len", "8192")
        run.pulumi("up", "--yes", "--skip-preview")
        first = run.objects("workspaces.kaito.sh")[f"{GATED}-0"]["inference"]["config"]
        run.config_path("workspaces[2].config.vllm.max-model-len", "4096")
        ops = preview_ops(run.pulumi("preview", "--json", quiet=True))
        changed = {op: names for op, names in ops.items() if op != "same"}
        print(f"    preview: {changed}")
        expect(f"default/{GATED}/{GATED}-0" in ops.get("update", []), f"the Workspace is not updated: {ops}")
        replaced = set(ops.get("replace", [])) | set(ops.get("create-replacement", []))
        expect(f"default/{GATED}/{GATED}-inference-config" in replaced, f"the ConfigMap is not replaced: {ops}")
        run.pulumi("up", "--yes", "--skip-preview")
        second = run.objects("workspaces.kaito.sh")[f"{GATED}-0"]["inference"]["config"]
        expect(first != second, "the Workspace still names the old ConfigMap")
        maps = run.objects("configmaps")
        expect(second in maps and first not in maps, f"ConfigMaps: {sorted(maps)}")
        expect("4096" in maps[second]["data"]["inference_config.yaml"], "the new ConfigMap lacks the edit")

    with run.step("no matching GPU node, and a model that never serves: pulumi up fails after the timeouts"):
        kaito.failing[f"{BROKEN}-0"] = "failed to load the model: out of memory (stand-in reason)"
        run.config_path("workspaces[3].name", BROKEN)
        run.config_path("workspaces[3].model", "phi-3.5-mini-instruct")
        run.config_path("workspaces[3].readyTimeoutMinutes", "1")
        run.config_path("workspaces[4].name", NO_NODE)
        run.config_path("workspaces[4].model", "phi-3.5-mini-instruct")
        run.config_path("workspaces[4].labelSelector.matchLabels.agentpool", "h100")
        run.config_path("kaito.gpuNodesTimeoutMinutes", "1")
        result = run.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
        output = result.stdout + result.stderr
        shown = [line for line in output.splitlines() if BROKEN in line or NO_NODE in line or "condition" in line]
        print("\n".join("    " + line for line in shown)[-3000:])
        expect(result.returncode != 0, "pulumi up succeeded although a model never became ready")
        expect(
            f"Workspace default/{BROKEN}-0 is not ready: InferenceReady=False (InferenceFailed: "
            f"{kaito.failing[f'{BROKEN}-0']}) after 1m" in output,
            "the readiness failure does not give the Workspace and KAITO's reason",
        )
        expect(
            "no node matches {agentpool=h100} after 1m: does the GPU pool exist" in output,
            "the GPU-node wait did not fail with what is missing",
        )
        expect(f"{NO_NODE}-0" not in run.objects("workspaces.kaito.sh"), "a Workspace was created without its nodes")
        run.pulumi("config", "rm", "--path", "kaito-aks:workspaces[4]", quiet=True)
        run.pulumi("config", "rm", "--path", "kaito-aks:workspaces[3]", quiet=True)
        run.pulumi("config", "rm", "--path", "kaito-aks:kaito.gpuNodesTimeoutMinutes", quiet=True)
        run.pulumi("up", "--yes", "--skip-preview")
        expect(f"{BROKEN}-0" not in run.objects("workspaces.kaito.sh"), "the failed Workspace was left behind")

    with run.step("a bad config fails before anything changes in the cluster"):
        before = run.snapshot()
        run.config_path("workspaces[2].model", "phi-2")
        result = run.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
        expect(result.returncode != 0, "pulumi up accepted a bad config")
        expect(
            "workspaces[2].model: phi-2 is deprecated" in result.stdout + result.stderr,
            "the error does not name the config path and the problem",
        )
        expect(run.snapshot() == before, "the cluster changed although the config was bad")
        run.config_path("workspaces[2].model", "llama-3.1-8b-instruct")

    with run.step("pulumi destroy leaves no Workspace or Secret behind"):
        run.pulumi("destroy", "--yes", "--skip-preview")
        expect(run.objects("workspaces.kaito.sh") == {}, "Workspaces left behind")
        expect(not any(n.endswith("-hf-token") for n in run.objects("secrets")), "Secrets left behind")
        expect(GPU not in run.objects("services"), "Services left behind")

    with run.step("a stack deployed before the redesign (the old layout) previews no changes now"):
        shutil.copy2(ROOT / "Pulumi.e2e.yaml", run.project / "Pulumi.e2e.yaml")  # the stack's first config
        run.use_layout(OLD_LAYOUT)
        run.pulumi("up", "--yes", "--skip-preview", quiet=True)
        old_types = {
            r["type"] for r in json.loads(run.pulumi("stack", "export", quiet=True).stdout)["deployment"]["resources"]
        }
        expect("kaito-aks:kubernetes:KaitoWorkspace" in old_types, f"the old layout's types: {sorted(old_types)}")
        before = run.snapshot()
        run.use_layout(None)
        run.pulumi("preview", "--expect-no-changes", "--diff")
        run.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", quiet=True)
        resources = json.loads(run.pulumi("stack", "export", quiet=True).stdout)["deployment"]["resources"]
        types = {r["type"] for r in resources}
        expect("kaito-aks:kubernetes:KaitoModel" in types and "kaito-aks:kubernetes:KaitoWorkspace" not in types,
               f"the state was not moved to the new type: {sorted(types)}")  # fmt: skip
        expect(run.snapshot() == before, "upgrading the program changed objects in the cluster")
        run.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
        expect(run.objects("workspaces.kaito.sh") == {}, "Workspaces left behind")

    with run.step("a Pulumi YAML program adds the kaito-aks package and deploys one model"):
        run.yaml_consumer()


def versions(run: Run) -> str:
    pulumi = subprocess.run([str(run.bin / "pulumi"), "version"], capture_output=True, text=True).stdout.strip()
    kube = subprocess.run([str(run.bin / "kube-apiserver"), "--version"], capture_output=True, text=True).stdout.strip()
    etcd = subprocess.run([str(run.bin / "etcd"), "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return (
        f"pulumi CLI {pulumi}, Python SDK pulumi {installed_sdk_version('pulumi')}, "
        f"kubernetes provider {installed_sdk_version('pulumi-kubernetes')}, {kube}, {etcd}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", type=Path, required=True, help="bin dir printed by scripts/e2e-tools")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, state)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kaito-aks-e2e-"))
    run = Run(args.bin.resolve(), work)
    start = time.monotonic()
    failed = None
    try:
        scenario(run)
    except E2EError as err:
        failed = str(err)
    except Exception as err:  # a crash is a failure too, reported with the step times
        failed = f"{type(err).__name__}: {err}"
        import traceback

        traceback.print_exc()
    finally:
        run.stop()
    print("\nstep times:")
    for name, took in run.times:
        print(f"  {took:6.1f} s  {name}")
    print(f"  {time.monotonic() - start:6.1f} s  total")
    print(f"versions: {versions(run)}")
    if failed:
        for log in ("kube-apiserver", "etcd"):
            path = work / f"{log}.log"
            if path.exists():
                print(f"\n--- last lines of {log}.log:\n" + "\n".join(path.read_text().splitlines()[-15:]))
        print(f"\nE2E FAILED: {failed}   (work dir: {work})")
        return 1
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("\nE2E PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
