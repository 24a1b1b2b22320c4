"""A stand-in for Microsoft's container registry (mcr.microsoft.com), which this machine cannot
reach, so that the Kubernetes provider's own Helm pulls the program's OCI charts by their real
references (oci://mcr.microsoft.com/aks/karpenter/<chart>, version 1.12.0) with no change to
the program.

It is an HTTP proxy on loopback: the provider, given HTTPS_PROXY, asks it to CONNECT to
mcr.microsoft.com:443 (any other host is refused); it answers that tunnel itself with TLS under
a certificate for mcr.microsoft.com signed by a throwaway CA (the provider trusts it through
SSL_CERT_FILE, for this test's processes only), and serves the OCI distribution API's reads
(manifests, blobs, tag lists) for the charts it was given, as Helm pushes them (a Helm config
blob and the chart's .tgz as the one layer). Nothing of upstream's code is served: the charts
are built by the test from the project's upstream data (CRDs) and say what they are."""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import io
import json
import ssl
import tarfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "mcr.microsoft.com"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_CHART = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"


def chart_archive(chart: dict[str, Any], files: dict[str, str]) -> bytes:
    """A chart as `helm package` makes it: <name>/Chart.yaml and the files under <name>/."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, text in {"Chart.yaml": yaml.safe_dump(chart), **files}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{chart['name']}/{path}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _certificates(work: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA (its certificate: what the provider is told to trust) and a certificate
    for mcr.microsoft.com it signs."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kaito-aks e2e stand-in CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    work.mkdir(parents=True, exist_ok=True)
    paths = (work / "ca.pem", work / "mcr.pem", work / "mcr.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


class StandInRegistry:
    """mcr.microsoft.com as this test needs it: `add(repository, chart, files)` publishes a chart
    under <repository>:<its version>; `env()` is what points a process at it."""

    def __init__(self, work: Path):
        self.ca, cert, key = _certificates(work)
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert, key)
        self.tls.set_alpn_protocols(["http/1.1"])
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[tuple[str, str], bytes] = {}  # (repository, tag or digest) -> manifest
        self.pulled: list[str] = []  # "<repository>:<tag>" of each manifest a client resolved
        self.refused: list[str] = []  # the hosts it would not tunnel to
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _proxy_handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add(self, repository: str, chart: dict[str, Any], files: dict[str, str]) -> None:
        archive = chart_archive(chart, files)
        config = json.dumps({"name": chart["name"], "version": chart["version"], "apiVersion": "v2"}).encode()
        for blob in (archive, config):
            self.blobs[_digest(blob)] = blob
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST,
                "config": {"mediaType": HELM_CONFIG, "digest": _digest(config), "size": len(config)},
                "layers": [{"mediaType": HELM_CHART, "digest": _digest(archive), "size": len(archive)}],
            }
        ).encode()
        self.manifests[(repository, str(chart["version"]))] = manifest
        self.manifests[(repository, _digest(manifest))] = manifest

    def env(self) -> dict[str, str]:
        port = self.server.server_address[1]
        return {
            "HTTPS_PROXY": f"http://127.0.0.1:{port}",
            "NO_PROXY": "127.0.0.1,localhost",
            "SSL_CERT_FILE": str(self.ca),
        }

    def start(self) -> StandInRegistry:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------ the OCI distribution API (reads)

    def answer(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        if path in ("/v2/", "/v2"):
            return 200, b"{}", {"Content-Type": "application/json"}
        parts = path.removeprefix("/v2/").split("/")
        if len(parts) >= 3 and parts[-2] == "manifests":
            repository, reference = "/".join(parts[:-2]), parts[-1]
            manifest = self.manifests.get((repository, reference))
            if manifest is None:
                return 404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', {"Content-Type": "application/json"}
            if not reference.startswith("sha256:"):
                self.pulled.append(f"{repository}:{reference}")
            return 200, manifest, {"Content-Type": MANIFEST, "Docker-Content-Digest": _digest(manifest)}
        if len(parts) >= 3 and parts[-2] == "blobs":
            blob = self.blobs.get(parts[-1])
            if blob is None:
                return 404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}', {"Content-Type": "application/json"}
            return 200, blob, {"Content-Type": "application/octet-stream", "Docker-Content-Digest": parts[-1]}
        if len(parts) >= 3 and parts[-2:] == ["tags", "list"]:
            repository = "/".join(parts[:-2])
            tags = sorted(t for r, t in self.manifests if r == repository and not t.startswith("sha256:"))
            return 200, json.dumps({"name": repository, "tags": tags}).encode(), {"Content-Type": "application/json"}
        return 404, b"{}", {"Content-Type": "application/json"}


def _registry_handler(registry: StandInRegistry) -> type[BaseHTTPRequestHandler]:
    class Registry(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _reply(self, head_only: bool) -> None:
            status, body, headers = registry.answer(self.path.split("?", 1)[0])
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head_only:
                self.wfile.write(body)

        def do_GET(self) -> None:
            self._reply(False)

        def do_HEAD(self) -> None:
            self._reply(True)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Registry


def _proxy_handler(registry: StandInRegistry) -> type[BaseHTTPRequestHandler]:
    registry_handler = _registry_handler(registry)

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_CONNECT(self) -> None:
            host, _, port = self.path.partition(":")
            if host != HOST or port not in ("", "443"):
                registry.refused.append(self.path)
                self.send_error(502, f"the stand-in registry tunnels to {HOST}:443 only")
                return
            self.send_response(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            try:
                tls = registry.tls.wrap_socket(self.connection, server_side=True)
            except (ssl.SSLError, OSError):
                self.close_connection = True
                return
            try:
                registry_handler(tls, self.client_address, self.server)
            finally:
                with contextlib.suppress(OSError):
                    tls.close()
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Proxy


def karpenter_crd_chart(crds: Iterator[Path] | list[Path], version: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Karpenter's karpenter-crd chart as its templates are at the tag: each CRD alone (the
    project's upstream data: its CRDs, descriptions stripped), no values read."""
    chart = {"apiVersion": "v2", "name": "karpenter-crd", "version": version, "appVersion": version,
             "description": "e2e: karpenter-crd rebuilt from Karpenter's CRDs at the tag"}  # fmt: skip
    files = {f"templates/{p.name}": p.read_text() for p in sorted(crds)}
    return chart, {"values.yaml": "{}\n", **files}


# The karpenter chart's stand-in: its crds/ folder is Karpenter's (as Helm installs it: once, never
# upgraded); its one template is a Deployment that takes what the program sets (the controller's
# environment, resources and pod annotations) where the real chart puts them
# (charts/karpenter/templates/deployment.yaml at v1.12.0: controller.env spliced into the
# container's env, podAnnotations on the pod template). Paused, with 0 replicas: no controller or
# kubelet runs here to roll it out, and Helm's wait takes a paused Deployment as ready
# (helm v3.18.6 pkg/kube/client.go:292, ready.go:113-116).
STAND_IN_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: karpenter
  namespace: {{ .Release.Namespace }}
  annotations:
    e2e: a stand-in for the karpenter chart's Deployment (no kubelet runs here)
spec:
  replicas: 0
  paused: true
  selector:
    matchLabels: {app.kubernetes.io/name: karpenter}
  template:
    metadata:
      labels: {app.kubernetes.io/name: karpenter}
      {{- with .Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      containers:
      - name: controller
        image: mcr.microsoft.com/aks/karpenter/controller:e2e-stand-in
        env:
        {{- with .Values.controller.env }}
          {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with .Values.controller.resources }}
        resources:
          {{- toYaml . | nindent 10 }}
        {{- end }}
"""


def karpenter_chart_stand_in(crds: list[Path], version: str) -> tuple[dict[str, Any], dict[str, str]]:
    chart = {"apiVersion": "v2", "name": "karpenter", "version": version, "appVersion": version,
             "description": "e2e stand-in for the karpenter chart: its CRDs in crds/, a Deployment of 0 replicas"}  # fmt: skip
    values = {"controller": {"env": [], "resources": {}}, "podAnnotations": {}}
    files = {f"crds/{p.name}": p.read_text() for p in sorted(crds)}
    return chart, {"values.yaml": yaml.safe_dump(values), "templates/deployment.yaml": STAND_IN_DEPLOYMENT, **files}
