"""The readiness wait (issue #8 item 6): `pulumi up` ends when KAITO reports the model serving,
and fails with KAITO's own reason when it does not."""

from __future__ import annotations

from typing import Any

import pytest

from kaito_aks.waits.kube_client import KubeApiError
from kaito_aks.waits.model_ready import Watched, judge, wait_for_models

WS = Watched("Workspace", "kaito.sh/v1beta1", "default", "phi-0", "InferenceReady")


def obj(status: str | None, generation: int = 1, observed: int = 1, reason: str = "", message: str = ""):
    conditions = []
    if status is not None:
        conditions.append(
            {
                "type": "InferenceReady",
                "status": status,
                "observedGeneration": observed,
                "reason": reason,
                "message": message,
            }
        )
    return {"metadata": {"name": "phi-0", "generation": generation}, "status": {"conditions": conditions}}


def test_true_is_ready_even_with_an_older_generation():
    assert judge(obj("True"), WS).done
    # KAITO 0.8.1 rewrites a condition only when status, reason or message change, so after an
    # edit an unchanged True keeps the older observedGeneration for good.
    assert judge(obj("True", generation=2, observed=1), WS).done
    stale = judge(obj("False", generation=2, observed=1), WS)  # the False is from before the edit
    assert stale.waiting_for == "KAITO has not reconciled Workspace default/phi-0 generation 2 (at 1)"


def test_false_carries_kaitos_reason_and_message():
    check = judge(obj("False", reason="InferenceFailed", message="CUDA out of memory"), WS)
    assert not check.done
    assert check.waiting_for == (
        "Workspace default/phi-0 is not ready: InferenceReady=False (InferenceFailed: CUDA out of memory)"
    )


def test_no_condition_points_at_the_controller():
    check = judge(obj(None), WS)
    assert check.waiting_for == "Workspace default/phi-0 reports no InferenceReady condition"
    assert "KAITO workspace controller running" in check.hint


def test_while_kaito_provisions_a_node_its_nodeclaim_reason_is_in_the_wait():
    """Auto-provisioning: before InferenceReady exists, ResourceReady and NodeClaimReady say how
    getting the node goes; from 0.12 NodeClaimReady carries the NodeClaim's own failure."""
    quota = "Operation could not be completed as it results in exceeding approved standardNCADSA100v4Family quota"
    status = {
        "conditions": [
            {"type": "ResourceReady", "status": "False", "reason": "InsufficientCapacity", "message": quota},
            {"type": "NodeClaimReady", "status": "False", "reason": "InsufficientCapacity", "message": quota},
            {
                "type": "NodesReady",
                "status": "False",
                "reason": "NodeNotReady",
                "message": "Not enough Nodes are ready",
            },
        ]
    }
    check = judge({"metadata": {"name": "phi-0", "generation": 1}, "status": status}, WS)
    assert check.waiting_for == (
        "Workspace default/phi-0 reports no InferenceReady condition; "
        f"ResourceReady=False (InsufficientCapacity: {quota}); NodesReady=False (NodeNotReady: Not enough Nodes are ready)"
    )
    # 0.8 names it NodeClaimsReady, with counts only
    status["conditions"] = [
        {
            "type": "NodeClaimsReady",
            "status": "False",
            "reason": "NodeClaimNotReady",
            "message": "Ready NodeClaims are not enough",
        },
        {"type": "InferenceReady", "status": "False", "reason": "WorkspaceInferenceStatusNotReady"},
    ]
    check = judge({"metadata": {"name": "phi-0", "generation": 1}, "status": status}, WS)
    assert check.waiting_for == (
        "Workspace default/phi-0 is not ready: InferenceReady=False (WorkspaceInferenceStatusNotReady); "
        "NodeClaimsReady=False (NodeClaimNotReady: Ready NodeClaims are not enough)"
    )


def test_the_path_follows_kind_and_version():
    assert WS.path == "/apis/kaito.sh/v1beta1/namespaces/default/workspaces/phi-0"
    iset = Watched("InferenceSet", "kaito.sh/v1alpha1", "llm", "phi", "InferenceSetReady")
    assert iset.path == "/apis/kaito.sh/v1alpha1/namespaces/llm/inferencesets/phi"


class Cluster:
    def __init__(self, *answers: Any):
        self.answers = list(answers)
        self.now = 0.0

    def get(self, path: str, **_: str) -> dict[str, Any]:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def sleep(self, s: float) -> None:
        self.now += s

    def clock(self) -> float:
        return self.now


def test_the_wait_ends_when_the_condition_turns_true():
    cluster = Cluster(KubeApiError(404, "not found"), obj(None), obj("False", reason="Pending"), obj("True"))
    wait_for_models(cluster, [WS], 600, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert 0 < cluster.now < 600


def test_the_timeout_error_is_kaitos_reason():
    cluster = Cluster(obj("False", reason="InferenceFailed", message="failed to load the model"))
    with pytest.raises(RuntimeError) as err:
        wait_for_models(cluster, [WS], 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert str(err.value).startswith(
        "Workspace default/phi-0 is not ready: InferenceReady=False (InferenceFailed: failed to load the model) after 1m"
    )


class Models:
    """A cluster where each model turns ready at its own time (seconds after the wait starts),
    or never (None)."""

    def __init__(self, ready_at: dict[str, float | None]):
        self.ready_at = ready_at
        self.now = 0.0
        self.gets = 0

    def get(self, path: str, **_: str) -> dict[str, Any]:
        self.gets += 1
        name = path.rsplit("/", 1)[1]
        at = self.ready_at[name]
        status = "True" if at is not None and self.now >= at else "False"
        return {
            "metadata": {"name": name, "generation": 1},
            "status": {"conditions": [{"type": "InferenceReady", "status": status, "reason": "Pending"}]},
        }

    def sleep(self, s: float) -> None:
        self.now += s

    def clock(self) -> float:
        return self.now


def test_one_wait_for_many_models_takes_the_slowest_not_the_sum():
    names = [f"m{i}-0" for i in range(40)]
    cluster = Models({n: 60.0 + i for i, n in enumerate(names)})  # the slowest is ready at 99 s
    watched = [Watched("Workspace", "kaito.sh/v1beta1", "default", n, "InferenceReady") for n in names]
    wait_for_models(cluster, watched, 600, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert 99 <= cluster.now < 110


def test_every_model_that_does_not_serve_is_named_each_after_its_own_timeout():
    cluster = Models({"quick-0": None, "slow-0": None, "fine-0": 5.0})
    watched = [
        Watched("Workspace", "kaito.sh/v1beta1", "default", "quick-0", "InferenceReady", timeout_seconds=60),
        Watched("Workspace", "kaito.sh/v1beta1", "default", "slow-0", "InferenceReady", timeout_seconds=300),
        Watched("Workspace", "kaito.sh/v1beta1", "default", "fine-0", "InferenceReady"),
    ]
    with pytest.raises(RuntimeError) as err:
        wait_for_models(cluster, watched, 600, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    lines = str(err.value).splitlines()
    assert lines == [
        "Workspace default/quick-0 is not ready: InferenceReady=False (Pending) after 1m: "
        "kubectl describe workspace -n default quick-0",
        "Workspace default/slow-0 is not ready: InferenceReady=False (Pending) after 5m: "
        "kubectl describe workspace -n default slow-0",
    ]
    assert 300 <= cluster.now < 311  # the slow one's own limit, not the wait's 600 s


class Provisioning:
    """KAITO as it stands when a node it asked for does not come: the watched object, and what
    its children (0.12: the InferenceSet's Workspaces) or NodeClaims (0.8, 0.11) say."""

    def __init__(self, watched: dict[str, Any], children: list[dict[str, Any]], claims: list[dict[str, Any]]):
        self.watched, self.children, self.claims = watched, children, claims
        self.now = 0.0
        self.queries: list[tuple[str, dict[str, str]]] = []

    def get(self, path: str, **query: str) -> dict[str, Any]:
        self.queries.append((path, query))
        if path == "/apis/karpenter.sh/v1/nodeclaims":  # as the API server selects them by label
            wanted = dict(pair.split("=") for pair in query["labelSelector"].split(","))
            return {"items": [c for c in self.claims if wanted.items() <= c["metadata"]["labels"].items()]}
        if path.endswith("/workspaces"):
            return {"items": self.children}
        return self.watched

    def sleep(self, s: float) -> None:
        self.now += s

    def clock(self) -> float:
        return self.now


QUOTA = "Operation could not be completed as it results in exceeding approved standardNCADSA100v4Family quota"


def test_an_inference_sets_error_carries_its_child_workspaces_nodeclaim_reason():
    """0.12: the InferenceSet says only how many replicas are ready (inferenceset_controller.go);
    the child Workspace's NodeClaimReady holds the NodeClaim's failure."""
    inference_set = {
        "metadata": {"name": "phi", "generation": 1},
        "status": {
            "conditions": [
                {
                    "type": "InferenceSetReady",
                    "status": "False",
                    "reason": "inferencesetNotReady",
                    "message": "inferenceset is not ready, 0/1 replicas are ready",
                }
            ]
        },
    }
    child = {
        "metadata": {"name": "phi-7dkq2", "labels": {"inferenceset.kaito.sh/created-by": "phi"}},
        "status": {
            "conditions": [
                {"type": "NodeClaimReady", "status": "False", "reason": "InsufficientCapacity", "message": QUOTA},
                {"type": "ResourceReady", "status": "False", "reason": "InsufficientCapacity", "message": QUOTA},
            ]
        },
    }
    cluster = Provisioning(inference_set, [child], [])
    watched = Watched("InferenceSet", "kaito.sh/v1beta1", "default", "phi", "InferenceSetReady")
    with pytest.raises(RuntimeError) as err:
        wait_for_models(cluster, [watched], 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert str(err.value).startswith(
        "InferenceSet default/phi is not ready: InferenceSetReady=False (inferencesetNotReady: inferenceset is not "
        f"ready, 0/1 replicas are ready); its Workspace phi-7dkq2: ResourceReady=False (InsufficientCapacity: {QUOTA}) "
        "after 1m"
    )
    assert (
        "/apis/kaito.sh/v1beta1/namespaces/default/workspaces",
        {"labelSelector": "inferenceset.kaito.sh/created-by=phi"},
    ) in cluster.queries


def test_before_0_12_the_nodeclaim_itself_is_read_for_the_reason():
    """0.8/0.11: the Workspace says only "Ready NodeClaims are not enough"; the NodeClaim's first
    stage that is not True says why."""
    workspace = {
        "metadata": {"name": "phi-0", "generation": 1},
        "resource": {"instanceType": "Standard_NC24ads_A100_v4"},
        "status": {
            "conditions": [
                {
                    "type": "NodeClaimsReady",
                    "status": "False",
                    "reason": "NodeClaimNotReady",
                    "message": "Ready NodeClaims are not enough (TargetNodeClaims: 1, CurrentReadyNodeClaims: 0)",
                }
            ]
        },
    }
    claim = {
        "metadata": {
            "name": "ws8d2f0a1c3",
            "labels": {"kaito.sh/workspace": "phi-0", "kaito.sh/workspacenamespace": "default"},
        },
        "status": {
            "conditions": [
                {"type": "Launched", "status": "False", "reason": "LaunchFailed", "message": QUOTA},
                {"type": "Registered", "status": "Unknown", "reason": "AwaitingReconciliation"},
            ]
        },
    }
    cluster = Provisioning(workspace, [], [claim])
    with pytest.raises(RuntimeError) as err:
        wait_for_models(cluster, [WS], 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    message = str(err.value)
    assert f"; NodeClaim ws8d2f0a1c3: Launched=False (LaunchFailed: {QUOTA}) after 1m" in message
    assert (
        "/apis/karpenter.sh/v1/nodeclaims",
        {"labelSelector": "kaito.sh/workspace=phi-0,kaito.sh/workspacenamespace=default"},
    ) in cluster.queries


def test_in_karpenter_mode_the_nodeclaim_of_the_workspaces_nodepool_is_read_for_the_reason():
    """0.11 in Karpenter mode: the NodeClaims are Karpenter's, labelled from KAITO's NodePool."""
    workspace = {
        "metadata": {"name": "phi-0", "generation": 1},
        "resource": {"instanceType": "Standard_NC24ads_A100_v4"},
        "status": {"conditions": [{"type": "NodeClaimsReady", "status": "False", "reason": "NodeClaimNotReady"}]},
    }
    labels = {
        "karpenter.sh/nodepool": "default-phi-0",
        "karpenter.kaito.sh/workspace-name": "phi-0",
        "karpenter.kaito.sh/workspace-namespace": "default",
    }
    claim = {
        "metadata": {"name": "default-phi-0-x9k2m", "labels": labels},
        "status": {"conditions": [{"type": "Launched", "status": "False", "reason": "LaunchFailed", "message": QUOTA}]},
    }
    other = {
        **claim,
        "metadata": {
            "name": "default-qwen-0-a1b2c",
            "labels": {**labels, "karpenter.kaito.sh/workspace-name": "qwen-0"},
        },
    }
    cluster = Provisioning(workspace, [], [claim, other])
    with pytest.raises(RuntimeError) as err:
        wait_for_models(cluster, [WS], 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    message = str(err.value)
    assert f"; NodeClaim default-phi-0-x9k2m: Launched=False (LaunchFailed: {QUOTA}) after 1m" in message
    assert "qwen" not in message


def test_nodeclaims_it_may_not_read_leave_kaitos_own_words():
    workspace = {
        "metadata": {"name": "phi-0", "generation": 1},
        "resource": {"instanceType": "Standard_NC24ads_A100_v4"},
        "status": {"conditions": [{"type": "InferenceReady", "status": "False", "reason": "Pending"}]},
    }

    class Forbidden(Provisioning):
        def get(self, path: str, **query: str) -> dict[str, Any]:
            if "nodeclaims" in path:
                raise KubeApiError(403, "nodeclaims is forbidden")
            return super().get(path, **query)

    cluster = Forbidden(workspace, [], [])
    with pytest.raises(RuntimeError) as err:
        wait_for_models(cluster, [WS], 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert str(err.value).startswith("Workspace default/phi-0 is not ready: InferenceReady=False (Pending) after 1m")


MALFORMED = {
    "metadata that is a list": {"metadata": [], "status": {"conditions": []}},
    "a status that is text": {"metadata": {"name": "phi-0"}, "status": "Ready"},
    "conditions that are a map": {"metadata": {}, "status": {"conditions": {"type": "InferenceReady"}}},
    "conditions that are text": {"metadata": {}, "status": {"conditions": ["InferenceReady", None, 5]}},
    "a generation that is text": {
        "metadata": {"generation": "2"},
        "status": {"conditions": [{"type": "InferenceReady", "status": "False", "observedGeneration": 1}]},
    },
    "a reason that is a map": {
        "metadata": {"generation": 1},
        "status": {"conditions": [{"type": "InferenceReady", "status": "False", "reason": {"a": 1}}]},
    },
    "an object with nothing": {},
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_object_is_waited_for_and_said_in_one_line_never_a_traceback(name: str):
    """Before: KeyError, TypeError or AttributeError out of the provider on most of these."""
    cluster = Cluster(MALFORMED[name])
    with pytest.raises(RuntimeError) as err:
        wait_for_models(cluster, [WS], 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    said = str(err.value)
    assert said.isprintable(), said
    assert said.startswith("Workspace default/phi-0 "), said
    assert " after 1m: " in said


def test_an_object_that_says_true_in_odd_company_still_serves():
    odd = {"metadata": [], "status": {"conditions": ["x", {"type": "InferenceReady", "status": "True"}]}}
    cluster = Cluster(odd)
    wait_for_models(cluster, [WS], 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert cluster.now == 0
