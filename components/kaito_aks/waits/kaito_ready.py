"""Wait until a KAITO this stack did not install accepts objects: the CRDs of the kinds the stack
creates are Established (serving the version it creates) and KAITO's admission webhook, which
fails closed, has a ready endpoint.

When a stack installs KAITO, the Helm release's wait gives both before the first Workspace.
With the AKS add-on, AKS rolls KAITO out after the cluster exists, and with `kaito.install:
false` someone else runs it: nothing held the models back, so a first `up` could fail with "no
matches for kind Workspace" or the webhook's "connection refused". `KaitoReady` is that step.

The webhook is found by its rules (kaito.sh workspaces on CREATE), not by name: KAITO's chart
(v0.8.1 and v0.12.0 `templates/webhooks.yaml`) names it `validation.workspace.kaito.sh`, calling
the `kaito-workspace` Service in the release namespace, and its controller (knative) writes the
caBundle when it starts; the add-on runs KAITO in kube-system under names of its own. A
configuration that does not exist yet is "not ready" when a webhook is required (the add-on,
where KAITO certainly runs one); otherwise (KAITO installed elsewhere, possibly without its
webhook) every fail-closed webhook that exists must serve, and none is needed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks import catalog
from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.waits import args as wait_args
from kaito_aks.waits.answers import conditions_of, field_at, items_of, segment, text_at
from kaito_aks.waits.args import check_wait_args
from kaito_aks.waits.base import Check, ClusterWaitProvider, poll, wait_options
from kaito_aks.waits.kube_client import KubeApiError, Reader

GROUP = "kaito.sh"
CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEBHOOKS_API = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
DEFAULT_TIMEOUT_MINUTES = 15
WHERE_KAITO_RUNS = (
    "is KAITO running? The AKS add-on runs it in kube-system (kubectl get deployment -n kube-system | grep kaito), "
    "KAITO's Helm chart in kaito-workspace (kubectl -n kaito-workspace get pods)"
)
WHERE_RAGENGINE_RUNS = (
    "is KAITO's RAGEngine operator installed? It is a chart of its own (kaito/ragengine, namespace "
    "kaito-ragengine: RagEngineOperator; the stack's ragEngineOperator.install); the AKS add-on has none"
)
FORBIDDEN = (
    "this wait reads KAITO's CRDs, its webhook configuration and the webhook Service's endpoints: grant `get` on "
    "customresourcedefinitions and services, `list` on validatingwebhookconfigurations and endpointslices"
)


@dataclass(frozen=True)
class KaitoKind:
    """One kind of KAITO object the stack creates, as its CRD serves it."""

    plural: str  # workspaces, inferencesets, ragengines
    version: str  # v1beta1, v1alpha1

    @property
    def crd(self) -> str:
        return f"{self.plural}.{GROUP}"

    def props(self) -> dict[str, str]:
        return {"plural": self.plural, "version": self.version}

    @classmethod
    def of(cls, api_version: str, kind: str) -> KaitoKind:
        """The kind of an object (apiVersion kaito.sh/<version>, kind Workspace)."""
        return cls(kind.lower() + "s", api_version.split("/", 1)[1])


def judge_crd(crd: dict[str, Any] | None, kind: KaitoKind) -> Check:
    """Whether the CRD serves `kind` (Established, its version served)."""
    if crd is None:
        where = WHERE_RAGENGINE_RUNS if kind.plural == "ragengines" else WHERE_KAITO_RUNS
        return Check(False, f"the CustomResourceDefinition {kind.crd} does not exist", where)
    established = next((c for c in conditions_of(crd) if c.get("type") == "Established"), None)
    if established is None or established.get("status") != "True":
        said = ": ".join(str(x) for x in ((established or {}).get("reason"), (established or {}).get("message")) if x)
        return Check(
            False,
            f"the CustomResourceDefinition {kind.crd} is not Established" + (f" ({said})" if said else ""),
            f"kubectl describe crd {kind.crd}",
        )
    versions = field_at(crd, "spec", "versions")
    served = [str(v.get("name")) for v in (versions if is_list(versions) else []) if is_dict(v) and v.get("served")]
    if kind.version not in served:
        return Check(
            False,
            f"the cluster's KAITO serves {kind.crd} in {', '.join(served) or 'no version'}, not {kind.version}, which "
            "the models were planned for",
            "set the KAITO version (kaito.version; the library's kaito_version) to the release the cluster runs",
            fatal=True,
        )
    return Check(True)


def _texts(value: object) -> set[str]:
    return {v for v in value if isinstance(v, str)} if is_list(value) else set()


def _covers(rule: dict[str, Any], plurals: set[str]) -> bool:
    """Whether a webhook rule applies to creating one of `plurals` in kaito.sh (wildcards too)."""
    return (
        bool({GROUP, "*"} & _texts(rule.get("apiGroups")))
        and bool(({"*", "*/*"} | plurals) & _texts(rule.get("resources")))
        and bool({"CREATE", "*"} & _texts(rule.get("operations")))
    )


@dataclass(frozen=True)
class Gate:
    """One fail-closed webhook that admits the stack's KAITO objects."""

    configuration: str
    webhook: dict[str, Any]
    plurals: tuple[str, ...]  # what it admits, of the stack's kinds

    @property
    def label(self) -> str:
        name = text_at(self.webhook, "name") or ""
        return self.configuration if name == self.configuration else f"{self.configuration} ({name})"


def gates(configurations: list[dict[str, Any]], plurals: set[str]) -> list[Gate]:
    """The webhooks that can refuse creating the stack's objects: their rules cover kaito.sh
    `plurals` on CREATE and they fail closed (failurePolicy Fail, v1's default)."""
    found: list[Gate] = []
    for config in configurations:
        name = text_at(config, "metadata", "name") or ""
        entries = config.get("webhooks")
        for webhook in (w for w in (entries if is_list(entries) else []) if is_dict(w)):
            if webhook.get("failurePolicy", "Fail") != "Fail":
                continue
            found_rules = webhook.get("rules")
            rules = [r for r in found_rules if is_dict(r)] if is_list(found_rules) else []
            covered = sorted(p for p in plurals if any(_covers(r, {p}) for r in rules))
            if covered:
                found.append(Gate(name, webhook, tuple(covered)))
    return found


def _ready_endpoints(slices: list[dict[str, Any]]) -> int:
    """Addresses the API server may call: an EndpointSlice endpoint whose `ready` is not False
    (unset means ready, as Kubernetes documents)."""
    count = 0
    for s in slices:
        endpoints = s.get("endpoints")
        for e in (e for e in (endpoints if is_list(endpoints) else []) if is_dict(e)):
            if e.get("addresses") and field_at(e, "conditions", "ready") is not False:
                count += 1
    return count


def judge_gate(client: Reader, gate: Gate) -> Check:
    """Whether the API server can call one webhook: its Service exists, has a ready endpoint, and
    the configuration carries the CA (KAITO writes it when its webhook starts)."""
    what = f"KAITO's admission webhook {gate.label}"
    if field_at(gate.webhook, "clientConfig", "service") is None:  # a URL: served outside the cluster
        return Check(True)
    namespace = text_at(gate.webhook, "clientConfig", "service", "namespace") or ""
    name = text_at(gate.webhook, "clientConfig", "service", "name") or ""
    where = f"service {namespace}/{name}"
    if _get_or_none(client, f"/api/v1/namespaces/{segment(namespace)}/services/{segment(name)}") is None:
        return Check(False, f"{what} calls {where}, which does not exist", WHERE_KAITO_RUNS)
    answer = client.get(
        f"/apis/discovery.k8s.io/v1/namespaces/{segment(namespace)}/endpointslices",
        labelSelector=f"kubernetes.io/service-name={name}",
    )
    slices = items_of(answer, f"EndpointSlices of {where}")
    if _ready_endpoints(slices) == 0:
        return Check(
            False,
            f"{what} ({where}) has no ready endpoint: its pod is not serving yet",
            f"{WHERE_KAITO_RUNS}; kubectl -n {namespace} get endpointslices -l kubernetes.io/service-name={name}",
        )
    if not field_at(gate.webhook, "clientConfig", "caBundle"):
        return Check(
            False,
            f"{what} has no caBundle yet (KAITO writes its certificate into it when the webhook starts)",
            WHERE_KAITO_RUNS,
        )
    return Check(True)


def _get_or_none(client: Reader, path: str) -> dict[str, Any] | None:
    try:
        return client.get(path)
    except KubeApiError as err:
        if err.status == 404:
            return None
        raise


def look(client: Reader, kinds: list[KaitoKind], require_webhook: bool) -> Check:
    """One look: every CRD, then the webhook. Credentials that may not read CRDs or webhook
    configurations skip that part (recorded in `unchecked`): namespace-scoped credentials got
    by without this wait before, and must not fail now."""
    unchecked: list[str] = []
    try:
        for kind in kinds:
            check = judge_crd(_get_or_none(client, f"{CRD_API}/{segment(kind.crd)}"), kind)
            if not check.done:
                return check
    except KubeApiError as err:
        if err.status != 403:
            raise
        unchecked.append(f"CRDs ({err})")
    try:
        configurations = items_of(client.get(WEBHOOKS_API), "ValidatingWebhookConfigurations")
        plurals = {k.plural for k in kinds}
        found = gates(configurations, plurals)
        if require_webhook and not any("workspaces" in g.plurals for g in found):
            return Check(
                False,
                "no ValidatingWebhookConfiguration admits kaito.sh workspaces yet (KAITO registers its fail-closed "
                "webhook when it starts)",
                WHERE_KAITO_RUNS,
            )
        for gate in found:
            check = judge_gate(client, gate)
            if not check.done:
                return check
    except KubeApiError as err:
        if err.status != 403:
            raise
        unchecked.append(f"the admission webhook ({err})")
    return Check(True, found={"unchecked": unchecked})


def add_on_release_check(kubernetes_version: str, expected: str) -> Check:
    """The AKS add-on's KAITO follows the cluster's Kubernetes minor (catalog/aks_add_on.yaml):
    fatal when the minor the cluster runs has another release than `expected`, the one the
    objects behind this wait were checked by."""
    release = catalog.aks_add_on().kaito_on(kubernetes_version)
    if not kubernetes_version or release == expected:
        return Check(True)
    runs = f"KAITO {release}" if release else "no KAITO release Microsoft's AKS component table names"
    return Check(
        False,
        f"the cluster runs Kubernetes {kubernetes_version}, on which the AKS add-on runs {runs} "
        "(catalog/aks_add_on.yaml)",
        f"the models were checked by KAITO {expected}'s rules: upgrade the cluster, or give the release AKS runs "
        "(the stack's kaito.version)",
        fatal=True,
    )


def wait_for_kaito(
    client: Reader,
    kinds: list[KaitoKind],
    require_webhook: bool,
    timeout_seconds: float,
    add_on: tuple[str, str] | None = None,
    **clock: Any,
) -> dict[str, Any]:
    """Poll until `look` passes; fail after the timeout with what is missing. `add_on`: (the
    cluster's Kubernetes version, the add-on release expected), checked first."""

    def once() -> Check:
        if add_on is not None:
            check = add_on_release_check(*add_on)
            if not check.done:
                return check
        return look(client, kinds, require_webhook)

    return poll(once, timeout_seconds, forbidden=FORBIDDEN, **clock)


class KaitoReadyProvider(ClusterWaitProvider):
    # KAITO serving once is enough; a new kind, or an add-on cluster on another version, looks again
    compared = ("kinds", "requireWebhook", "addOnRelease", "kubernetesVersion")

    def id_of(self, props: dict[str, Any]) -> str:
        return "kaito-ready-" + hashlib.sha256(json.dumps(props["kinds"], sort_keys=True).encode()).hexdigest()[:12]

    def wait(self, client: Reader, props: dict[str, Any]) -> dict[str, Any]:
        kinds = [KaitoKind(k["plural"], k["version"]) for k in props["kinds"]]
        release, version = props.get("addOnRelease"), props.get("kubernetesVersion")
        add_on = (str(version), str(release)) if release and version else None
        return wait_for_kaito(client, kinds, bool(props["requireWebhook"]), float(props["timeoutSeconds"]), add_on)


_PROVIDER = KaitoReadyProvider()


class KaitoReady(dynamic.Resource, module="kaito-aks", name="KaitoReady"):
    """Holds what depends on it until the cluster's KAITO serves `kinds` (CRDs Established in
    that version) and its fail-closed admission webhook has a ready endpoint (`require_webhook`:
    one must exist; otherwise only those that exist must serve). Fails after `timeout_minutes`
    with what is missing. With the AKS add-on, `add_on_release` (the release the objects were
    checked by) and `kubernetes_version` (an `AksCluster`'s output) fail it at once when the
    cluster's minor runs another release. Output: `unchecked` (what the credentials could not read)."""

    unchecked: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        kinds: list[KaitoKind],
        require_webhook: bool,
        timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES,
        opts: pulumi.ResourceOptions | None = None,
        add_on_release: str | None = None,
        kubernetes_version: pulumi.Input[str] | None = None,
    ):
        check_wait_args(
            "KaitoReady",
            name,
            access,
            later=("kubernetes_version",),
            kinds=(kinds, wait_args.list_of(KaitoKind, "a KaitoKind", empty=False)),
            require_webhook=(require_webhook, wait_args.boolean),
            timeout_minutes=(timeout_minutes, wait_args.minutes),
            add_on_release=(add_on_release, wait_args.optional(wait_args.text)),
            kubernetes_version=(kubernetes_version, wait_args.optional(wait_args.text)),
            opts=(opts, wait_args.optional(wait_args.instance(pulumi.ResourceOptions, "pulumi.ResourceOptions"))),
        )
        props: dict[str, Any] = {
            "kinds": [k.props() for k in sorted(set(kinds), key=lambda k: (k.plural, k.version))],
            "requireWebhook": require_webhook,
            "timeoutSeconds": timeout_minutes * 60,
            "addOnRelease": add_on_release,
            "kubernetesVersion": kubernetes_version,
            **access.props(),
            "unchecked": None,
        }
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))
