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
