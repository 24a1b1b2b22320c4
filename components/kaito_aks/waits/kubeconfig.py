"""Kubeconfigs read as kubectl reads them, and the credentials they lead to: the contents, a
path, or $KUBECONFIG's files merged; file paths relative to the file that names them; exec
credential plugins (kubelogin on Entra ID AKS clusters, aws eks get-token, gke-gcloud-auth-plugin)
run as client-go runs them. What the client does with them: kube_client.py."""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import os
import subprocess
from pathlib import Path
from typing import Any, cast

import yaml

from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import bounded

EXEC_TIMEOUT_SECONDS = 120
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_EXTENSION = "client.authentication.k8s.io/exec"  # the cluster extension passed to the plugin


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used (missing, malformed, an unknown context, a credential that
    cannot be had). The text never quotes the kubeconfig's contents."""

    def __init__(self, message: str):
        super().__init__(bounded(message))


# ---------------------------------------------------------------- the kubeconfig


def _default_paths() -> list[Path]:
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


# Fields holding file paths, resolved against the directory of the file that names them (kubectl).
_PATH_FIELDS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


def _resolved(kind: str, body: dict[str, Any], base: Path | None) -> dict[str, Any]:
    if base is None:
        return body
    out = dict(body)
    for name in _PATH_FIELDS.get(kind, ()):
        value = out.get(name)
        if isinstance(value, str) and value and not os.path.isabs(value):
            out[name] = str(base / value)
    spec = out.get("exec")
    if kind == "user" and is_dict(spec):
        command = spec.get("command")
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            out["exec"] = {**spec, "command": str(base / command)}
    return out


def load_kubeconfig(contents: str | dict[str, Any] | None = None, path: str | None = None) -> dict[str, Any]:
    """The kubeconfig as a dict: the given contents, else the file, else $KUBECONFIG's files
    merged as kubectl merges them (the first file to name a cluster, user or context wins).
    Contents may arrive already parsed (Pulumi YAML hands a YAML-looking config value over as
    a map). Relative file paths are resolved against the file that names them."""
    docs: list[tuple[object, Path | None]]
    try:
        if isinstance(contents, dict):
            docs = [(contents, None)]
        elif contents is not None:
            docs = [(yaml.safe_load(contents), None)]
        else:
            paths = [Path(path).expanduser()] if path else _default_paths()
            present = [p for p in paths if p.is_file()]
            if not present:
                raise KubeconfigError(f"no kubeconfig at {', '.join(str(p) for p in paths)}")
            docs = [(yaml.safe_load(p.read_text()), p.resolve().parent) for p in present]
    except yaml.YAMLError:
        # not the parser's message: it quotes the offending line, which may hold a token
        raise KubeconfigError("the kubeconfig is not valid YAML") from None
    except (OSError, UnicodeDecodeError) as err:
        raise KubeconfigError(f"the kubeconfig cannot be read: {os_reason(err)}") from None
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": [], "current-context": None}
    for found, base in docs:
        doc: object = {} if found is None else found  # an empty file
        if not is_dict(doc):
            raise KubeconfigError("the kubeconfig is not a YAML map")
        for section in ("clusters", "users", "contexts"):
            entries: object = doc.get(section) or []
            if not is_list(entries):
                raise KubeconfigError(f"the kubeconfig's {section} is not a list")
            kind = section[:-1]
            known = {e["name"] for e in merged[section]}
            for entry in entries:
                name = entry.get("name") if is_dict(entry) else None
                if not isinstance(name, str):
                    raise KubeconfigError(f"an entry of the kubeconfig's {section} has no name")
                body: object = entry.get(kind) or {}
                if not is_dict(body):
                    raise KubeconfigError(f"the kubeconfig's {kind} {name!r} is not a map")
                if name not in known:
                    known.add(name)
                    merged[section].append({"name": name, kind: _resolved(kind, dict(body), base)})
        current = doc.get("current-context")
        if not merged["current-context"] and isinstance(current, str):
            merged["current-context"] = current
    return merged


def named(config: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    for entry in config[section]:
        if entry["name"] == name:
            return entry[section[:-1]]
    raise KubeconfigError(f"the kubeconfig has no {section[:-1]} named {name!r}")


def text_field(entry: dict[str, Any], field: str, where: str) -> str | None:
    value = entry.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise KubeconfigError(f"{where}: {field} is not text")
    return value


def data_field(entry: dict[str, Any], field: str, where: str) -> bytes | None:
    """`<field>-data` (base64), else the file `<field>` names."""
    data = text_field(entry, f"{field}-data", where)
    if data is not None:
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise KubeconfigError(f"{where}: {field}-data is not base64") from None
    file = text_field(entry, field, where)
    if file is None:
        return None
    try:
        return Path(file).read_bytes()
    except OSError as err:
        raise KubeconfigError(f"{where}: {field} {file} cannot be read: {os_reason(err)}") from None


def field_of(entry: object, name: str) -> object:
    return entry.get(name) if is_dict(entry) else None


def os_reason(err: BaseException) -> str:
    return str(err.strerror) if isinstance(err, OSError) and err.strerror else type(err).__name__


def rfc3339(stamp: object) -> float | None:
    """An ExecCredential's expirationTimestamp (RFC 3339) as seconds since the epoch."""
    if not isinstance(stamp, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=datetime.UTC)).timestamp()


def exec_credential(spec: dict[str, Any], cluster: dict[str, Any], where: str) -> dict[str, Any]:
    """Run a client-go exec credential plugin, as kubectl does; its ExecCredential's status."""
    command = spec.get("command")
    if not isinstance(command, str) or not command:
        raise KubeconfigError(f"{where}: exec has no command")
    api_version = spec.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        raise KubeconfigError(
            f"{where}: exec apiVersion {api_version!r} is not one kubectl accepts ({', '.join(EXEC_API_VERSIONS)})"
        )
    if spec.get("interactiveMode") == "Always":
        raise KubeconfigError(
            f"{where}: credential plugin {command!r} needs a terminal (interactiveMode: Always), which the waits and "
            "`status` do not give it: log in without one (kubelogin: --login azurecli, spn or workloadidentity)"
        )
    info: dict[str, Any] = {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    if spec.get("provideClusterInfo") is True:
        info["spec"]["cluster"] = _cluster_info(cluster, where)
    env = _plugin_env(spec, where)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    given: object = spec.get("args") or []
    args = [a for a in given if isinstance(a, str)] if is_list(given) else None
    if args is None or len(args) != len(cast(list[object], given)):
        raise KubeconfigError(f"{where}: exec args are not a list of text")
    hint = spec.get("installHint")
    return _run_plugin([command, *args], env, f" ({hint})" if isinstance(hint, str) and hint else "")


def _cluster_info(cluster: dict[str, Any], where: str) -> dict[str, Any]:
    """What a plugin asking for it (provideClusterInfo) is told of the cluster (client-go's Cluster)."""
    ca = data_field(cluster, "certificate-authority", where)
    extensions = cluster.get("extensions")
    config = next(
        (e.get("extension") for e in extensions if is_dict(e) and e.get("name") == EXEC_EXTENSION),
        None,
    ) if is_list(extensions) else None  # fmt: skip
    shown = {
        "server": cluster.get("server"),
        "tls-server-name": cluster.get("tls-server-name"),
        "insecure-skip-tls-verify": cluster.get("insecure-skip-tls-verify"),
        "certificate-authority-data": base64.b64encode(ca).decode() if ca else None,
        "proxy-url": cluster.get("proxy-url"),
        "config": config,
    }
    return {k: v for k, v in shown.items() if v not in (None, "", False)}


def _plugin_env(spec: dict[str, Any], where: str) -> dict[str, str]:
    env = dict(os.environ)
    variables: object = spec.get("env") or []
    for var in variables if is_list(variables) else [None]:
        name, value = field_of(var, "name"), field_of(var, "value")
        if not isinstance(name, str) or not isinstance(value, str):
            raise KubeconfigError(f"{where}: an exec env entry is not a name and a value")
        env[name] = value
    return env


def _run_plugin(argv: list[str], env: dict[str, str], hint: str) -> dict[str, Any]:
    command = argv[0]
    try:
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=EXEC_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        why = (
            f"it did not finish in {EXEC_TIMEOUT_SECONDS}s"
            if isinstance(err, subprocess.TimeoutExpired)
            else os_reason(err)
        )
        raise KubeconfigError(f"credential plugin {command!r} could not run: {why}{hint}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[-500:]
        raise KubeconfigError(f"credential plugin {command!r} exited {done.returncode}: {said}")
    try:
        credential: object = json.loads(done.stdout)
    except (ValueError, RecursionError):
        credential = None
    status = credential.get("status") if is_dict(credential) else None
    if not is_dict(status):
        raise KubeconfigError(f"credential plugin {command!r} did not print an ExecCredential")
    return status
