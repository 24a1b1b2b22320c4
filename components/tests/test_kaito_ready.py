"""The wait for a KAITO this stack did not install (review 2, B8): the CRDs Established in the
version the models use, and KAITO's fail-closed admission webhook, found by its rules, with a
ready endpoint and its CA, before any KAITO object is created."""

from __future__ import annotations

from typing import Any

import pytest

from kaito_aks.waits.kaito_ready import (
    CRD_API,
    WEBHOOKS_API,
    KaitoKind,
    KaitoReadyProvider,
    gates,
    judge_crd,
    look,
    wait_for_kaito,
)
from kaito_aks.waits.kube_client import KubeApiError

WORKSPACES = KaitoKind("workspaces", "v1beta1")
INFERENCE_SETS = KaitoKind("inferencesets", "v1beta1")


def crd(kind: KaitoKind, established: str = "True", versions: tuple[str, ...] = ("v1alpha1", "v1beta1")) -> dict:
    return {
        "metadata": {"name": kind.crd},
        "spec": {"versions": [{"name": v, "served": True} for v in versions]},
        "status": {"conditions": [{"type": "Established", "status": established, "reason": "InitialNamesAccepted"}]},
    }


def webhook_configuration(
    name: str = "validation.workspace.kaito.sh",
    namespace: str = "kaito-workspace",
    service: str = "kaito-workspace",
    resources: tuple[str, ...] = ("workspaces",),
    ca: str = "LS0tLS1CRUdJTi==",
    failure_policy: str | None = "Fail",
) -> dict:
    """As KAITO's chart writes it (templates/webhooks.yaml, v0.8.1 and v0.12.0), the caBundle as
    its controller fills it in."""
    hook: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": service, "namespace": namespace, "port": 9443}, "caBundle": ca},
        "sideEffects": "None",
        "rules": [
            {
                "apiGroups": ["kaito.sh"],
                "apiVersions": ["v1alpha1", "v1beta1"],
                "resources": list(resources),
                "operations": ["CREATE", "UPDATE"],
            }
        ],
    }
    if failure_policy is not None:
        hook["failurePolicy"] = failure_policy
    return {"metadata": {"name": name}, "webhooks": [hook]}


def endpoint_slice(ready: bool | None = True) -> dict:
    conditions = {} if ready is None else {"ready": ready}
    return {"endpoints": [{"addresses": ["10.244.0.12"], "conditions": conditions}]}


class FakeCluster:
    """Answers GETs by path from a dict (an Exception is raised; a missing path is a 404)."""

    def __init__(self, objects: dict[str, Any]):
        self.objects = objects
        self.asked: list[tuple[str, dict[str, str]]] = []
        self.now = 0.0

    def get(self, path: str, **query: str) -> dict[str, Any]:
        self.asked.append((path, query))
        found = self.objects.get(path)
        if isinstance(found, Exception):
            raise found
        if found is None:
            raise KubeApiError(404, f"{path} not found")
        return found

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def clock(self) -> float:
        return self.now


def serving(
    configs: list[dict] | None = None,
    *,
    slices: list[dict] | None = None,
    service: bool = True,
    namespace: str = "kaito-workspace",
    name: str = "kaito-workspace",
    kinds: tuple[KaitoKind, ...] = (WORKSPACES,),
) -> dict[str, Any]:
    objects: dict[str, Any] = {f"{CRD_API}/{k.crd}": crd(k) for k in kinds}
    objects[WEBHOOKS_API] = {"items": [webhook_configuration()] if configs is None else configs}
    if service:
        objects[f"/api/v1/namespaces/{namespace}/services/{name}"] = {"metadata": {"name": name}}
    objects[f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"] = {
        "items": [endpoint_slice()] if slices is None else slices
    }
    return objects


def test_kaito_serving_passes():
    cluster = FakeCluster(serving())
    assert look(cluster, [WORKSPACES], require_webhook=True).done  # type: ignore[arg-type]
    # the endpoints are those of the webhook's Service, as EndpointSlices name it
    assert ("/apis/discovery.k8s.io/v1/namespaces/kaito-workspace/endpointslices", {
        "labelSelector": "kubernetes.io/service-name=kaito-workspace"
    }) in cluster.asked  # fmt: skip


def test_a_missing_or_unestablished_crd_is_waited_for_naming_where_kaito_runs():
    check = judge_crd(None, WORKSPACES)
    assert check.waiting_for == "the CustomResourceDefinition workspaces.kaito.sh does not exist"
    assert "kube-system" in check.hint  # the add-on
    assert "kaito-workspace" in check.hint  # the Helm chart
    ragengines = KaitoKind("ragengines", "v1beta1")  # a chart of its own, which the add-on lacks
    assert "RagEngineOperator; the stack's ragEngineOperator.install" in judge_crd(None, ragengines).hint
    check = judge_crd(crd(WORKSPACES, established="False"), WORKSPACES)
    assert (
        check.waiting_for
        == "the CustomResourceDefinition workspaces.kaito.sh is not Established (InitialNamesAccepted)"
    )
    assert not check.fatal


def test_a_crd_that_does_not_serve_the_models_version_fails_at_once():
    """An add-on on an older release than the stack was planned for: waiting cannot help."""
    check = judge_crd(crd(WORKSPACES, versions=("v1alpha1",)), WORKSPACES)
    assert check.fatal
    assert check.waiting_for == (
        "the cluster's KAITO serves workspaces.kaito.sh in v1alpha1, not v1beta1, which the models were planned for"
    )
    assert "kaito.version" in check.hint


def test_the_webhook_is_found_by_its_rules_not_its_name():
    """The add-on's configuration and Service have names and a namespace of their own."""
    addon = webhook_configuration(name="ai-toolchain-operator-validation", namespace="kube-system", service="kaito-wh")
    other = webhook_configuration(name="validation.other.example", resources=("pods",))
    found = gates([other, addon], {"workspaces"})
    assert [g.configuration for g in found] == ["ai-toolchain-operator-validation"]
    objects = serving([other, addon], namespace="kube-system", name="kaito-wh")
    assert look(FakeCluster(objects), [WORKSPACES], require_webhook=True).done  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "rule",
    [
        {"apiGroups": ["*"], "resources": ["*"], "operations": ["*"]},
        {"apiGroups": ["kaito.sh"], "resources": ["*/*"], "operations": ["CREATE"]},
    ],
)
def test_wildcard_rules_cover_workspaces(rule: dict):
    config = webhook_configuration()
    config["webhooks"][0]["rules"] = [rule]
    assert len(gates([config], {"workspaces"})) == 1


def test_webhooks_that_cannot_refuse_a_create_do_not_gate():
    ignore = webhook_configuration(failure_policy="Ignore")
    default = webhook_configuration(failure_policy=None)  # admissionregistration/v1 defaults to Fail
    update_only = webhook_configuration()
    update_only["webhooks"][0]["rules"][0]["operations"] = ["UPDATE"]
    assert [g.configuration for g in gates([ignore, default, update_only], {"workspaces"})] == [
        "validation.workspace.kaito.sh"
    ]
    assert gates([ignore], {"workspaces"}) == []


def test_with_the_add_on_no_webhook_configuration_yet_is_not_ready():
    check = look(FakeCluster(serving([])), [WORKSPACES], require_webhook=True)  # type: ignore[arg-type]
    assert not check.done
    assert check.waiting_for == (
        "no ValidatingWebhookConfiguration admits kaito.sh workspaces yet (KAITO registers its fail-closed webhook "
        "when it starts)"
    )
    # KAITO installed elsewhere may run without one (the e2e cluster has only the CRDs)
    assert look(FakeCluster(serving([])), [WORKSPACES], require_webhook=False).done  # type: ignore[arg-type]


@pytest.mark.parametrize("require_webhook", [True, False])
def test_a_webhook_that_exists_must_serve_whether_required_or_not(require_webhook: bool):
    no_endpoint = look(FakeCluster(serving(slices=[endpoint_slice(False)])), [WORKSPACES], require_webhook)  # type: ignore[arg-type]
    assert no_endpoint.waiting_for == (
        "KAITO's admission webhook validation.workspace.kaito.sh (service kaito-workspace/kaito-workspace) has no "
        "ready endpoint: its pod is not serving yet"
    )
    assert look(FakeCluster(serving(slices=[])), [WORKSPACES], require_webhook).waiting_for == no_endpoint.waiting_for  # type: ignore[arg-type]
    unset = look(FakeCluster(serving(slices=[endpoint_slice(None)])), [WORKSPACES], require_webhook)  # type: ignore[arg-type]
    assert unset.done  # `ready` unset means ready (EndpointConditions)
    no_service = look(FakeCluster(serving(service=False)), [WORKSPACES], require_webhook)  # type: ignore[arg-type]
    assert no_service.waiting_for == (
        "KAITO's admission webhook validation.workspace.kaito.sh calls service kaito-workspace/kaito-workspace, "
        "which does not exist"
    )
    no_ca = look(FakeCluster(serving([webhook_configuration(ca="")])), [WORKSPACES], require_webhook)  # type: ignore[arg-type]
    assert no_ca.waiting_for == (
        "KAITO's admission webhook validation.workspace.kaito.sh has no caBundle yet (KAITO writes its certificate "
        "into it when the webhook starts)"
    )


def test_a_webhook_for_another_kind_the_stack_creates_must_serve_too():
    sets = webhook_configuration(name="validation.inferenceset.kaito.sh", resources=("inferencesets",))
    objects = serving([webhook_configuration(), sets], slices=[], kinds=(WORKSPACES, INFERENCE_SETS))
    check = look(FakeCluster(objects), [WORKSPACES, INFERENCE_SETS], require_webhook=False)  # type: ignore[arg-type]
    assert not check.done
    assert gates([sets], {"workspaces"}) == []  # not one the stack's kinds meet otherwise


def test_credentials_that_may_not_read_them_skip_the_check_instead_of_failing():
    """Namespace-scoped credentials deployed with KAITO installed elsewhere before this wait."""
    objects = serving()
    objects[f"{CRD_API}/workspaces.kaito.sh"] = KubeApiError(403, "customresourcedefinitions is forbidden")
    objects[WEBHOOKS_API] = KubeApiError(403, "validatingwebhookconfigurations is forbidden")
    check = look(FakeCluster(objects), [WORKSPACES], require_webhook=False)  # type: ignore[arg-type]
    assert check.done
    assert check.found == {
        "unchecked": [
            "CRDs (HTTP 403: customresourcedefinitions is forbidden)",
            "the admission webhook (HTTP 403: validatingwebhookconfigurations is forbidden)",
        ]
    }


def test_the_wait_holds_until_the_crd_and_then_the_endpoint_come_and_times_out_with_what_is_missing():
    objects = serving(slices=[])
    del objects[f"{CRD_API}/workspaces.kaito.sh"]
    cluster = FakeCluster(objects)
    steps = iter(
        [
            lambda: None,
            lambda: objects.update({f"{CRD_API}/workspaces.kaito.sh": crd(WORKSPACES)}),
            lambda: None,
            lambda: objects.update(
                {"/apis/discovery.k8s.io/v1/namespaces/kaito-workspace/endpointslices": {"items": [endpoint_slice()]}}
            ),
        ]
    )

    def sleep(seconds: float) -> None:
        cluster.sleep(seconds)
        next(steps, lambda: None)()

    found = wait_for_kaito(cluster, [WORKSPACES], True, 900, sleep=sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert found == {"unchecked": []}
    assert 0 < cluster.now < 30

    stuck = FakeCluster(serving(slices=[]))
    with pytest.raises(RuntimeError) as err:
        wait_for_kaito(stuck, [WORKSPACES], True, 900, sleep=stuck.sleep, clock=stuck.clock)  # type: ignore[arg-type]
    assert str(err.value).startswith(
        "KAITO's admission webhook validation.workspace.kaito.sh (service kaito-workspace/kaito-workspace) has no "
        "ready endpoint: its pod is not serving yet after 15m: is KAITO running? The AKS add-on runs it in "
        "kube-system"
    )


def test_only_a_new_kind_or_webhook_rule_runs_the_wait_again():
    provider = KaitoReadyProvider()
    olds = {"kinds": [WORKSPACES.props()], "requireWebhook": True, "unchecked": []}
    assert provider.diff("id", olds, {**olds, "kubeconfig": "rotated", "timeoutSeconds": 60}).changes is False
    assert provider.diff("id", olds, {**olds, "kinds": [INFERENCE_SETS.props(), WORKSPACES.props()]}).changes is True
    assert provider.diff("id", olds, {**olds, "requireWebhook": False}).changes is True


def test_a_kind_is_named_after_the_object():
    assert KaitoKind.of("kaito.sh/v1beta1", "InferenceSet") == INFERENCE_SETS
    assert KaitoKind.of("kaito.sh/v1alpha1", "RAGEngine").crd == "ragengines.kaito.sh"


def test_the_readiness_waits_hint_names_both_places_kaito_runs():
    """Review 2, B8: the add-on runs KAITO in kube-system (Microsoft: `kubectl get deployment -n
    kube-system | grep kaito`), the Helm chart in kaito-workspace."""
    from kaito_aks.waits.model_ready import Watched, judge

    ws = Watched("Workspace", "kaito.sh/v1beta1", "default", "phi-0", "InferenceReady")
    hint = judge({"metadata": {"name": "phi-0", "generation": 1}, "status": {}}, ws).hint
    assert "kubectl -n kaito-workspace get pods" in hint
    assert "kubectl get deployment -n kube-system | grep kaito" in hint
    assert hint.endswith("kubectl describe workspace phi-0)")


def test_an_add_on_cluster_on_a_minor_that_runs_another_release_fails_at_once():
    """catalog/aks_add_on.yaml: 1.33 runs 0.4.5, 1.34 runs 0.6.0."""
    from kaito_aks.waits.kaito_ready import add_on_release_check

    assert add_on_release_check("1.34.2", "0.6.0").done
    check = add_on_release_check("1.33.5", "0.6.0")
    assert check.fatal
    assert not check.done
    assert check.waiting_for == (
        "the cluster runs Kubernetes 1.33.5, on which the AKS add-on runs KAITO 0.4.5 (catalog/aks_add_on.yaml)"
    )
    assert "upgrade the cluster, or give the release AKS runs" in check.hint
    assert "no KAITO release" in add_on_release_check("1.31.1", "0.6.0").waiting_for
    # the wait fails at once, before KAITO's serving is looked at
    cluster = FakeCluster(serving())
    with pytest.raises(RuntimeError, match=r"^the cluster runs Kubernetes 1\.33\.5, .* KAITO 0\.4\.5"):
        wait_for_kaito(cluster, [WORKSPACES], True, 900, ("1.33.5", "0.6.0"), sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert cluster.now == 0
    provider = KaitoReadyProvider()
    olds = {
        "kinds": [WORKSPACES.props()],
        "requireWebhook": True,
        "addOnRelease": "0.6.0",
        "kubernetesVersion": "1.33.5",
    }
    assert provider.diff("id", olds, {**olds, "kubernetesVersion": "1.34.1"}).changes is True  # upgraded: look again


MALFORMED = {
    "webhook configurations that are not a list": {WEBHOOKS_API: {"items": 5}},
    "a webhook configuration that is text": {WEBHOOKS_API: {"items": ["validation.workspace.kaito.sh"]}},
    "webhooks that are text": {WEBHOOKS_API: {"items": [{"metadata": [], "webhooks": "kaito"}]}},
    "rules that are text": {
        WEBHOOKS_API: {"items": [{"metadata": {"name": "v"}, "webhooks": [{"name": "v", "rules": ["kaito.sh"]}]}]}
    },
    "rule fields of other kinds": {
        WEBHOOKS_API: {
            "items": [
                {"webhooks": [{"rules": [{"apiGroups": "kaito.sh", "resources": [["workspaces"]], "operations": 1}]}]}
            ]
        }
    },
    "a CRD whose status is a list": {f"{CRD_API}/workspaces.kaito.sh": {"status": [], "spec": {"versions": "v1"}}},
    "a CRD whose conditions are text": {
        f"{CRD_API}/workspaces.kaito.sh": {"status": {"conditions": ["Established"]}, "spec": []}
    },
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_answer_is_waited_out_and_said_in_one_line_never_a_traceback(name: str):
    """Before: AttributeError or TypeError out of the provider on most of these."""
    cluster = FakeCluster({**serving(), **MALFORMED[name]})
    with pytest.raises(RuntimeError) as err:
        wait_for_kaito(cluster, [WORKSPACES], True, 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    said = str(err.value)
    assert said.isprintable(), said
    assert " after 1m: " in said, said
    assert 60 <= cluster.now < 71


def test_a_webhook_whose_service_is_not_a_map_is_not_a_traceback():
    config = webhook_configuration()
    config["webhooks"][0]["clientConfig"] = {"service": "kaito-workspace", "caBundle": "LS0t"}
    cluster = FakeCluster(serving([config]))
    with pytest.raises(RuntimeError) as err:
        wait_for_kaito(cluster, [WORKSPACES], True, 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert str(err.value).startswith(
        "KAITO's admission webhook validation.workspace.kaito.sh calls service /, which does not exist after 1m"
    )
