"""An AKS user kubeconfig made non-interactive. With Entra ID, AKS hands out a kubeconfig whose
user runs `kubelogin get-token --login devicecode ...`: a device-code prompt, which inside the
Kubernetes provider, the waits or a CI job would block unseen. This rewrites that exec plugin's
arguments for another login mode, as `kubelogin convert-kubeconfig -l <mode>` does
(Azure/kubelogin v0.2.19, pkg/internal/converter/convert.go); kubeconfigs of other users (a
client certificate, a token) are returned unchanged.

At `get-token` time kubelogin still reads AAD_LOGIN_METHOD (and AZURE_CLIENT_ID, AZURE_TENANT_ID,
AZURE_FEDERATED_TOKEN_FILE, AAD_SERVICE_PRINCIPAL_CLIENT_ID/SECRET, ...) from its environment
(pkg/internal/token/options.go UpdateFromEnv), so one kubeconfig serves a laptop and a CI job."""

from __future__ import annotations

from typing import Any, Literal, cast

import yaml

from kaito_aks.parsed import is_dict, is_list

LoginMode = Literal["azurecli", "workloadidentity", "spn", "msi"]
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
INSTALL_HINT = (
    "kubelogin is not installed, which is required to connect to an AKS cluster with Entra ID: "
    "https://azure.github.io/kubelogin/ (or `az aks install-cli`)"
)
# The arguments kubelogin keeps from the kubeconfig it converts, by login mode (convert.go): the
# server id always (the AKS API server's Entra application), the cache dir when set, and for a
# service principal its client and tenant ids and the cloud.
KEPT: dict[LoginMode, tuple[str, ...]] = {
    "azurecli": (),
    "workloadidentity": (),
    "msi": (),
    "spn": ("--client-id", "--tenant-id", "--environment"),
}


class KubeloginError(ValueError):
    """A kubeconfig whose kubelogin plugin cannot be converted (never quotes the kubeconfig)."""


def uses_kubelogin(user: object) -> bool:
    """Whether a kubeconfig user runs kubelogin (as kubelogin itself decides: its command's name)."""
    exec_: object = user.get("exec") if is_dict(user) else None
    command = exec_.get("command") if is_dict(exec_) else None
    return isinstance(command, str) and "kubelogin" in command.lower()


def _arg(args: list[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def converted_exec(exec_: dict[str, Any], mode: LoginMode, where: str) -> dict[str, Any]:
    """A kubelogin exec plugin's spec for `mode`: get-token --login <mode> --server-id <id>,
    plus what kubelogin keeps for that mode."""
    given: object = exec_.get("args") or []
    args = [a for a in cast(list[object], given) if isinstance(a, str)] if is_list(given) else []
    server = _arg(args, "--server-id")
    if not server:
        raise KubeloginError(f"{where}: its kubelogin arguments have no --server-id (the API server's Entra app)")
    out = ["get-token", "--login", mode, "--server-id", server]
    cache = _arg(args, "--cache-dir") or _arg(args, "--token-cache-dir")
    if cache:
        out += ["--cache-dir", cache]
    for flag in KEPT[mode]:
        value = _arg(args, flag)
        if value:
            out += [flag, value]
    if mode == "spn" and (_arg(args, "--client-id") is None or _arg(args, "--tenant-id") is None):
        raise KubeloginError(f"{where}: spn login needs --client-id and --tenant-id, which its arguments lack")
    hint = exec_.get("installHint")
    return {
        "apiVersion": EXEC_API_VERSION,
        "command": "kubelogin",
        "args": out,
        "env": None,
        "installHint": hint if isinstance(hint, str) and hint else INSTALL_HINT,
        "provideClusterInfo": False,
    }


def convert_kubeconfig(text: str, mode: LoginMode) -> str:
    """`text` with every kubelogin user switched to `mode` (non-interactive); `text` itself when
    no user runs kubelogin (a cluster without Entra ID: a certificate or token)."""
    config: object = yaml.safe_load(text)
    users: object = config.get("users") if is_dict(config) else None
    if not is_list(users) or not any(uses_kubelogin(u.get("user")) for u in users if is_dict(u)):
        return text
    for i, entry in enumerate(users):
        user = entry.get("user") if is_dict(entry) else None
        if is_dict(user) and uses_kubelogin(user):
            user["exec"] = converted_exec(user["exec"], mode, f"users[{i}]")
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def kubelogin_args(text: str) -> list[list[str]]:
    """The arguments of every kubelogin exec plugin of a kubeconfig (for tests and checks)."""
    config: object = yaml.safe_load(text)
    users: object = config.get("users") if is_dict(config) else None
    found: list[list[str]] = []
    for entry in users if is_list(users) else []:
        user = entry.get("user") if is_dict(entry) else None
        exec_: object = user.get("exec") if is_dict(user) else None
        args: object = exec_.get("args") if is_dict(exec_) and uses_kubelogin(user) else None
        if is_list(args):
            found.append([str(a) for a in cast(list[object], args)])
    return found
