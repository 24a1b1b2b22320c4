"""Read-only calls to a Kubernetes API server with a kubeconfig's credentials, standard library only.

The GPU-node wait runs inside Pulumi's dynamic-provider process and needs one thing from the
cluster: a list of nodes. It reads the same kubeconfig the stack's Kubernetes provider uses
(contents, a path, or $KUBECONFIG / ~/.kube/config) and supports what clusters hand out: bearer
tokens (also from a file), client certificates, a CA bundle or insecure-skip-tls-verify, and
exec credential plugins (kubelogin on Entra AKS clusters, aws eks get-token, gke-gcloud-auth-plugin).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

from kaito_aks.parsed import is_dict

REQUEST_TIMEOUT_SECONDS = 30


class Reader(Protocol):
    """What reads the cluster: a KubeClient, or a stand-in for it in tests."""

    def get(self, path: str, **query: str) -> dict[str, Any]: ...


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used (missing, malformed, or an unknown context)."""


class KubeApiError(RuntimeError):
    """The API server answered with an error status (or could not be reached)."""

    def __init__(self, status: int, message: str, fatal: bool = False):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.fatal = fatal  # retrying cannot help (e.g. the server's certificate is not trusted)


def _default_paths() -> list[Path]:
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


def load_kubeconfig(contents: str | dict[str, Any] | None = None, path: str | None = None) -> dict[str, Any]:
    """The kubeconfig as a dict: the given contents, else the file, else $KUBECONFIG's files
    merged as kubectl merges them (the first file to name a cluster, user or context wins).
    Contents may arrive already parsed (Pulumi YAML hands a YAML-looking config value over as
    a map)."""
    try:
        if isinstance(contents, dict):
            docs: list[Any] = [contents]
        elif contents is not None:
            docs = [yaml.safe_load(contents)]
        else:
            paths = [Path(path).expanduser()] if path else _default_paths()
            present = [p for p in paths if p.is_file()]
            if not present:
                raise KubeconfigError(f"no kubeconfig at {', '.join(str(p) for p in paths)}")
            docs = [yaml.safe_load(p.read_text()) for p in present]
    except yaml.YAMLError:
        # not the parser's message: it quotes the offending line, which may hold a token
        raise KubeconfigError("the kubeconfig is not valid YAML") from None
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "current-context": None}
    for doc in docs:
        if not is_dict(doc):
            raise KubeconfigError("the kubeconfig is not a YAML map")
        for section in ("clusters", "users", "contexts"):
            known = {e.get("name") for e in merged[section]}
            entries: list[dict[str, Any]] = doc.get(section) or []
            merged[section] += [e for e in entries if e.get("name") not in known]
        merged["current-context"] = merged["current-context"] or doc.get("current-context")
    return merged


def _named(config: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    entries: list[dict[str, Any]] = config.get(section) or []
    for entry in entries:
        if entry.get("name") == name:
            return entry.get(section[:-1]) or {}
    raise KubeconfigError(f"the kubeconfig has no {section[:-1]} named {name!r}")


@dataclass
class KubeClient:
    server: str
    context: ssl.SSLContext
    headers: dict[str, str]
    # A fresh bearer token (exec plugins, tokenFile), asked for when the server answers 401:
    # short-lived tokens (EKS: 15 minutes) expire during long waits.
    refresh_token: Callable[[], str | None] | None = None

    @classmethod
    def from_kubeconfig(
        cls, contents: str | dict[str, Any] | None = None, path: str | None = None, context: str | None = None
    ) -> KubeClient:
        config = load_kubeconfig(contents, path)
        name = context or config.get("current-context")
        if not name:
            raise KubeconfigError("the kubeconfig has no current-context; name a context")
        ctx = _named(config, "contexts", name)
        cluster = _named(config, "clusters", ctx.get("cluster", ""))
        user = _named(config, "users", ctx.get("user", "")) if ctx.get("user") else {}
        server = cluster.get("server")
        if not server:
            raise KubeconfigError(f"cluster {ctx.get('cluster')!r} has no server")

        tls = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify"):
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        elif cluster.get("certificate-authority-data"):
            tls.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif cluster.get("certificate-authority"):
            tls.load_verify_locations(cafile=cluster["certificate-authority"])

        headers = {"Accept": "application/json"}
        cert = _file_or_data(user, "client-certificate")
        key = _file_or_data(user, "client-key")

        def fresh_token() -> str | None:
            nonlocal cert, key
            token = user.get("token")
            if not token and user.get("tokenFile"):
                token = Path(user["tokenFile"]).read_text().strip()
            if user.get("exec"):
                status = _exec_credential(user["exec"], cluster)
                token = status.get("token") or token
                if status.get("clientCertificateData"):
                    if not isinstance(status.get("clientKeyData"), str):
                        raise KubeconfigError(
                            f"credential plugin {user['exec'].get('command')!r} gave a client certificate without its key"
                        )
                    cert, key = str(status["clientCertificateData"]).encode(), status["clientKeyData"].encode()
            return token

        token = fresh_token()
        if cert and key:
            _load_client_cert(tls, cert, key)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        refresh = fresh_token if (user.get("exec") or user.get("tokenFile")) else None
        return cls(server.rstrip("/"), tls, headers, refresh)

    def get(self, path: str, **query: str) -> dict[str, Any]:
        try:
            return self._get(path, query)
        except KubeApiError as err:
            token = self.refresh_token() if (err.status == 401 and self.refresh_token) else None
            if not token:
                raise
            self.headers["Authorization"] = f"Bearer {token}"
            return self._get(path, query)

    def _get(self, path: str, query: dict[str, str]) -> dict[str, Any]:
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS, context=self.context) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            try:
                message = json.loads(err.read()).get("message", err.reason)
            except ValueError:
                message = str(err.reason)
            raise KubeApiError(err.code, message) from None
        except OSError as err:
            untrusted = isinstance(getattr(err, "reason", err), ssl.SSLCertVerificationError)
            raise KubeApiError(0, f"cannot reach {self.server}: {err}", fatal=untrusted) from None


def _file_or_data(user: dict[str, Any], field: str) -> bytes | None:
    if user.get(f"{field}-data"):
        return base64.b64decode(user[f"{field}-data"])
    if user.get(field):
        return Path(user[field]).read_bytes()
    return None


def _load_client_cert(tls: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl reads certificates from files only: write them to a private temp dir, then delete it."""
    with tempfile.TemporaryDirectory(prefix="kaito-aks-") as tmp:
        cert_file, key_file = Path(tmp, "client.crt"), Path(tmp, "client.key")
        for f, data in ((cert_file, cert), (key_file, key)):
            f.touch(mode=0o600)
            f.write_bytes(data)
        tls.load_cert_chain(cert_file, key_file)


def _exec_credential(spec: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    """Run a client-go exec credential plugin; its ExecCredential's status holds the credential."""
    api_version = spec.get("apiVersion", "client.authentication.k8s.io/v1")
    info: dict[str, Any] = {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = {"server": cluster.get("server"), "config": cluster.get("extensions")}
    env_vars: list[dict[str, str]] = spec.get("env") or []
    env = {**os.environ, **{e["name"]: e["value"] for e in env_vars}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    args: list[str] = spec.get("args") or []
    command = [spec["command"], *args]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        hint = f" ({spec['installHint']})" if spec.get("installHint") else ""
        raise KubeconfigError(f"credential plugin {spec['command']!r} could not run: {err}{hint}") from None
    if done.returncode != 0:
        raise KubeconfigError(
            f"credential plugin {spec['command']!r} exited {done.returncode}: {done.stderr.strip()[-500:]}"
        )
    try:
        return json.loads(done.stdout).get("status") or {}
    except ValueError:
        raise KubeconfigError(f"credential plugin {spec['command']!r} did not print an ExecCredential") from None
