"""Models that keep serving through AKS's node reimages and upgrades (issue 37): a disruption
budget for every model of two or more instances, and `validate` saying for each whether it keeps
serving in the stack's maintenance window."""

from __future__ import annotations

from kaito_aks.model.disruption import disruption_budget, upgrade_note
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.serving.spec import ModelAutoscaleArgs
from stacks.cli import main
from tests.conftest import config, run

PDB = "kubernetes:policy/v1:PodDisruptionBudget"


def model(**kw: object) -> KaitoModelArgs:
    return KaitoModelArgs(kaito_version="0.12.0", name="phi", model="phi-4-mini-instruct", **kw)  # type: ignore[arg-type]


def test_a_model_of_two_or_more_instances_gets_a_disruption_budget_of_one_pod_at_a_time():
    ev = run(
        config(
            [
                {"name": "phi", "model": "phi-4-mini-instruct", "replicas": 2},
                {"name": "one", "model": "phi-4-mini-instruct"},
            ]
        )
    )
    (budget,) = ev.of_type(PDB)
    assert budget.inputs["metadata"]["name"] == "phi"
    assert budget.inputs["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"inferenceset.kaito.sh/created-by": "phi"}},
    }
    # the same pods as its NetworkPolicy's
    (policy,) = [
        p
        for p in ev.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if p.inputs["metadata"]["name"] == "phi-ingress"
    ]
    assert policy.inputs["spec"]["podSelector"] == budget.inputs["spec"]["selector"]
    assert disruption_budget(model(), "phi", "llm", {}) is None  # one instance: a budget would only hold a drain


def test_each_model_says_whether_it_keeps_serving_through_a_reimage():
    assert upgrade_note(model(replicas=3)).startswith("keeps serving (3 replicas")
    assert (
        upgrade_note(model())
        == "stops while its node is reimaged or upgraded (1 replica: replicas: 2 keeps one serving)"
    )
    scaled = upgrade_note(model(autoscale=ModelAutoscaleArgs(min_replicas=1, max_replicas=3)))
    assert scaled.endswith(
        "at its minimum of 1 it stops while its node is reimaged (autoscale.minReplicas: 2 keeps one serving)"
    )


def test_validate_says_the_window_and_each_model(capsys):
    assert main(["validate", "prod"]) == 0
    out = capsys.readouterr().out
    assert (
        "prod: upgrades: node images (NodeImage) and Kubernetes (patch) upgrades on Sundays from 02:00 +00:00 for 4 h "
        "(cluster.aks.upgrade.window), a node drained at a time"
    ) in out
    assert (
        "prod: upgrades: workspaces[0] (llm/phi-4) keeps serving (3 replicas; its disruption budget lets one go at a time)"
        in out
    )
    assert (
        "prod: upgrades: workspaces[3] (llm/r1-distill) stops while its node is reimaged or upgraded (1 replica" in out
    )
