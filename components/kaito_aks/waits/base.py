"""What the program's waits share: steps in the Pulumi graph that hold back what depends on
them until the cluster reports something (GPU nodes labelled, a model serving), or fail the
update after a timeout with what was missing.

Each wait is a Pulumi dynamic resource. Its provider runs in Pulumi's dynamic-provider process,
found there by its module path, and reaches the cluster with the stack's own credentials
(`kaito_aks.cluster.access.ClusterAccess`): the kubeconfig contents travel as a secret input (encrypted in state, redacted
in render) and never reach the outputs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks.waits.kube_client import KubeApiError, KubeClient, KubeconfigError

# The credentials stay secret in the outputs too, should a provider ever echo them.
SECRET_OUTPUTS = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])


@dataclass(frozen=True)
class Check:
    """One look at the cluster: done (with what was found), or what is still missing."""

    done: bool
    waiting_for: str = ""  # what is missing
    hint: str = ""  # what to look at when it stays missing
    fatal: bool = False  # waiting cannot help: fail now
    found: dict[str, Any] | None = None


def poll(
    look: Callable[[], Check],
    timeout_seconds: float,
    *,
    forbidden: str,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Look until done; raise "<what is missing> after <timeout>: <hint>" when time runs out.
    An unreachable API server is waited out (AKS upgrades restart it); 401/403 fail at once
    with `forbidden` (what the credentials must be allowed)."""
    start = clock()
    while True:
        try:
            check = look()
        except KubeApiError as err:
            if err.status in (401, 403):
                raise RuntimeError(f"the stack's Kubernetes credentials are refused ({err}): {forbidden}") from None
            if err.fatal:
                raise RuntimeError(str(err)) from None
            check = Check(False, f"the API server did not answer ({err})", "is the cluster reachable?")
        if check.done:
            return check.found or {}
        if check.fatal:
            raise RuntimeError(f"{check.waiting_for}: {check.hint}")
        waited = clock() - start
        if waited >= timeout_seconds:
            raise RuntimeError(f"{check.waiting_for} after {duration(timeout_seconds)}: {check.hint}")
        sleep(min(1 + waited / 30, 10, max(timeout_seconds - waited, 0.1)))


def duration(seconds: float) -> str:
    return f"{seconds / 60:g}m" if seconds >= 60 else f"{seconds:g}s"


class ClusterWaitProvider(dynamic.ResourceProvider):
    """Create and update wait; delete does nothing. Only `compared` inputs are changes: rotated
    credentials or a new timeout must not re-run a wait, nor show in preview."""

    compared: tuple[str, ...] = ()

    def wait(self, client: KubeClient, props: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        changed = [k for k in self.compared if olds.get(k) != news.get(k)]
        return dynamic.DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        return dynamic.CreateResult(self.id_of(props), self._run(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        return dynamic.UpdateResult(self._run(news))

    def id_of(self, props: dict[str, Any]) -> str:
        raise NotImplementedError

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        try:
            client = KubeClient.from_kubeconfig(
                props.get("kubeconfig"), props.get("kubeconfigPath"), props.get("context")
            )
        except (KubeconfigError, OSError) as err:
            raise RuntimeError(f"cannot use the stack's kubeconfig: {err}") from None
        found = self.wait(client, props)
        # Everything but the credentials goes to the outputs (diff compares outputs with inputs).
        return {**{k: v for k, v in props.items() if k != "kubeconfig"}, **found}
