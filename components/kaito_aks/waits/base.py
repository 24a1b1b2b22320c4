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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.problems import bounded
from kaito_aks.waits.kube_client import KubeApiError, KubeClient, KubeconfigError

# The credentials stay secret in the outputs too, should a provider ever echo them.
SECRET_OUTPUTS = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])


def wait_options(access: ClusterAccess, opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """A wait's options: its credentials kept secret, and held back until they work (`after`)."""
    after = pulumi.ResourceOptions(depends_on=list(access.after)) if access.after else None
    return pulumi.ResourceOptions.merge(pulumi.ResourceOptions.merge(opts, SECRET_OUTPUTS), after)


@dataclass(frozen=True)
class Check:
    """One look at the cluster: done (with what was found), or what is still missing."""

    done: bool
    waiting_for: str = ""  # what is missing
    hint: str = ""  # what to look at when it stays missing
    fatal: bool = False  # waiting cannot help: fail now
    found: dict[str, Any] | None = None


def _nothing() -> str:
    return ""


def _unexplained(_said: str) -> str:
    return ""


@dataclass(frozen=True)
class Watch:
    """One thing a wait waits for: how to look at it, its own time limit (None: the wait's), and
    what more to say when that runs out (`detail`: only adds to the error, so it never raises;
    `explain`: given the error's line, the first broken link of the chain, from the failure
    library, appended to it)."""

    look: Callable[[], Check]
    limit: float | None = None
    detail: Callable[[], str] = _nothing
    explain: Callable[[str], str] = _unexplained


UNANSWERED_HINT = (
    "is the cluster reachable, and is it its API server that answers (not a proxy or load balancer in front of it)?"
)


def poll(
    look: Callable[[], Check],
    timeout_seconds: float,
    *,
    forbidden: str,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    explain: Callable[[str], str] = _unexplained,
) -> dict[str, Any]:
    """Look until done; raise "<what is missing> after <timeout>: <hint>" when time runs out
    (and `explain`'s words on it)."""
    return poll_each([Watch(look, explain=explain)], timeout_seconds, forbidden=forbidden, sleep=sleep, clock=clock)[0]


def poll_each(
    watches: Sequence[Watch],
    timeout_seconds: float,
    *,
    forbidden: str,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> list[dict[str, Any]]:
    """Look at each watch until it is done or out of its own time; then fail naming every one
    that is not, all at once (one wait may watch a whole stack's models, which then take as long
    as the slowest, not the sum), a line each. What a look calls fatal fails it at once; 401/403
    and what retrying cannot fix (an untrusted certificate, a redirect) fail the wait at once, 401/403
    with `forbidden` (what the credentials must be allowed). An API server that does not answer
    usefully (unreachable, 5xx, cut off, not JSON, an answer of the wrong shape) is waited out:
    AKS upgrades restart it. Returns what each watch found."""
    start = clock()
    found: dict[int, dict[str, Any]] = {}
    pending = list(range(len(watches)))
    failed: list[str] = []
    while pending:
        still: list[int] = []
        for i in pending:
            watch = watches[i]
            check = _look(watch.look, forbidden)
            limit = watch.limit if watch.limit is not None else timeout_seconds
            if check.done:
                found[i] = check.found or {}
            elif check.fatal:
                failed.append(_explained(watch, f"{check.waiting_for}: {check.hint}"))
            elif clock() - start >= limit:
                failed.append(
                    _explained(watch, f"{check.waiting_for}{watch.detail()} after {duration(limit)}: {check.hint}")
                )
            else:
                still.append(i)
        pending = still
        if pending:
            waited = clock() - start
            nearest = min(_limit(watches[i], timeout_seconds) for i in pending) - waited
            sleep(min(1 + waited / 30, 10, max(nearest, 0.1)))
    if failed:
        raise RuntimeError("\n".join(bounded(line) for line in failed))
    return [found[i] for i in range(len(watches))]


def _explained(watch: Watch, line: str) -> str:
    """The error's line and, when the failure library finds one, the first broken link (never
    raises: it only adds to the error)."""
    try:
        more = watch.explain(line)
    except Exception:  # an explanation that fails (an odd answer, no time left) says nothing
        more = ""
    return f"{line}; {more}" if more else line


def _limit(watch: Watch, timeout_seconds: float) -> float:
    return watch.limit if watch.limit is not None else timeout_seconds


def _look(look: Callable[[], Check], forbidden: str) -> Check:
    """One look; what the API server's answers say becomes a Check, or fails the wait."""
    try:
        return look()
    except KubeApiError as err:
        if err.status in (401, 403):
            raise RuntimeError(
                bounded(f"the stack's Kubernetes credentials are refused ({err}): {forbidden}")
            ) from None
        if err.fatal:
            raise RuntimeError(str(err)) from None
        return Check(False, f"no usable answer from the API server ({err})", UNANSWERED_HINT)
    except KubeconfigError as err:  # renewing the credentials (a token file, an exec plugin) failed
        raise RuntimeError(bounded(f"the stack's Kubernetes credentials could not be renewed: {err}")) from None
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as err:
        # An answer of a shape the readers did not expect: waited out like any unusable answer,
        # and said (escaped) if it stays.
        what = f"{type(err).__name__}: {err}"
        return Check(
            False, f"an answer from the API server has a shape this wait cannot read ({what})", UNANSWERED_HINT
        )


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

    def limit_seconds(self, props: dict[str, Any]) -> float:
        """How long the wait may take in all: every call it makes to the cluster ends by then."""
        return float(props["timeoutSeconds"])

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        client = cluster_client(props, self.limit_seconds(props))
        found = self.wait(client, props)
        # Everything but the credentials goes to the outputs (diff compares outputs with inputs).
        return {**{k: v for k, v in props.items() if k != "kubeconfig"}, **found}


# The wait's last look comes at its limit; its calls, and the failure library's walk of the chain
# that explains it, get this long to end (a server that answers at all answers in milliseconds:
# the walk's dozen reads take a fraction of it), so the error names what the cluster last said and
# its first broken link; a server too slow for them leaves the error without the link.
LAST_LOOK_SECONDS = 5.0


def cluster_client(props: dict[str, Any], limit_seconds: float, doing: str = "") -> KubeClient:
    """The client a wait reads the cluster with (the stack's credentials, in `props`), every call
    of it ending within `limit_seconds` (and the last look's few seconds) from now. `doing`: what
    the error says it was for."""
    try:
        client = KubeClient.from_kubeconfig(props.get("kubeconfig"), props.get("kubeconfigPath"), props.get("context"))
    except (KubeconfigError, OSError) as err:
        raise RuntimeError(bounded(f"cannot use the stack's kubeconfig{doing}: {err}")) from None
    client.deadline = time.monotonic() + limit_seconds + LAST_LOOK_SECONDS
    return client
