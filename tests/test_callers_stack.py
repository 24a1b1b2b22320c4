"""Callers a model's NetworkPolicy would cut on a cluster the stack does not create (issue 37):
announced, with the allowFrom that keeps them, until the stack file says who calls."""

from __future__ import annotations

from tests.conftest import config, warnings_of
from tests.test_aks import aks

PHI = {"name": "phi", "model": "phi-4-mini-instruct"}


def callers(cfg: dict[str, object]) -> list[str]:
    return [w for w in warnings_of(cfg, unsized=True, callers=True) if w.startswith("endpoints.allowFrom:")]


def test_an_adopted_cluster_announces_the_callers_its_policies_would_cut_and_how_to_keep_them():
    (said,) = callers(config([PHI, {**PHI, "name": "two", "namespace": "llm"}]))
    assert said.startswith(
        "endpoints.allowFrom: on a cluster this stack does not create, the NetworkPolicies of workspaces[0] "
        "(default/phi), workspaces[1] (llm/two) admit only their own namespace"
    )
    assert "Keep them with endpoints.allowFrom (e.g. [{namespace: ingress-nginx}]" in said
    assert said.endswith("write endpoints.allowFrom: [] when nothing else calls them")


def test_saying_who_calls_ends_it():
    assert callers(config([PHI], endpoints={"allowFrom": []})) == []
    assert callers(config([PHI], endpoints={"allowFrom": [{"namespace": "ingress-nginx"}]})) == []
    (said,) = callers(config([{**PHI, "allowFrom": [{"namespace": "web"}]}, {**PHI, "name": "two"}]))
    assert "workspaces[1] (default/two)" in said
    assert "workspaces[0]" not in said


def test_a_cluster_the_stack_creates_says_nothing():
    assert callers(aks()) == []
