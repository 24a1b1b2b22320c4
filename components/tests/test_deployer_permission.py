"""The deployer keeps a way into the cluster when its local accounts go off (issue 37): the
AksCluster's update waits for a check that the deployer may write its cluster-admin grant, or
holds one, asked of Azure's permissions list with the provider's own token."""

from __future__ import annotations

from typing import Any

import pytest

from kaito_aks import AksCluster, AksClusterArgs
from kaito_aks.azure import deployer_permission
from kaito_aks.azure.arm import ARM_ENDPOINT, ArmReader, LiveArm, RecordedArm
from kaito_aks.azure.deployer_permission import (
    CLUSTER_ADMIN_DATA,
    ROLE_ASSIGNMENTS_WRITE,
    DeployerPermissionProvider,
    allows,
    cluster_scopes,
    verdict,
)
from kaito_aks.testing import run

SCOPES = cluster_scopes("sub", "rg", "aks")
CLUSTER = "azure-native:containerservice:ManagedCluster"
CHECK = "pulumi-python:dynamic/kaito-aks:DeployerPermission"


NAMES = dict(zip(("cluster", "group", "subscription"), SCOPES, strict=True))


class Answers(RecordedArm):
    """ARM's answers: the permissions list of each scope ("cluster", "group", "subscription"),
    an HTTP status, or (not given) 404; `seen`: the scopes asked, in order."""

    def __init__(self, **by_scope: Any):
        permissions = "/providers/Microsoft.Authorization/permissions"
        super().__init__({f"{NAMES[name]}{permissions}": answer for name, answer in by_scope.items()})

    @property
    def seen(self) -> list[str]:
        asked = [c.removeprefix("GET ").split("/providers/Microsoft.Authorization/")[0] for c in self.calls]
        assert all(c.endswith("?api-version=2022-04-01") for c in self.calls)
        return [next(n for n, scope in NAMES.items() if scope == a) for a in asked]


def listed(*entries: dict[str, list[str]]) -> dict[str, Any]:
    return {"value": list(entries)}


CONTRIBUTOR = {"actions": ["*"], "notActions": ["Microsoft.Authorization/*/Delete", "Microsoft.Authorization/*/Write"]}
RBAC_ADMIN = {
    "actions": ["Microsoft.Authorization/roleAssignments/write", "Microsoft.Authorization/roleAssignments/delete"]
}
OWNER = {"actions": ["*"]}
CLUSTER_ADMIN = {
    "actions": ["Microsoft.ContainerService/managedClusters/listClusterUserCredential/action"],
    "dataActions": [CLUSTER_ADMIN_DATA],
}


def test_wildcards_and_not_actions_are_azures():
    assert allows([OWNER], ROLE_ASSIGNMENTS_WRITE)
    assert allows([RBAC_ADMIN], ROLE_ASSIGNMENTS_WRITE)
    assert not allows([CONTRIBUTOR], ROLE_ASSIGNMENTS_WRITE)  # Contributor may not grant roles
    assert allows([CONTRIBUTOR, RBAC_ADMIN], ROLE_ASSIGNMENTS_WRITE)  # each assignment on its own
    assert allows([CLUSTER_ADMIN], CLUSTER_ADMIN_DATA, data=True)
    assert not allows([OWNER], CLUSTER_ADMIN_DATA, data=True)  # actions are not data actions
    assert not allows("nonsense", ROLE_ASSIGNMENTS_WRITE)


def test_a_contributor_without_a_grant_is_refused_before_the_cluster_changes_with_the_fix():
    fetch = Answers(cluster=listed(CONTRIBUTOR))
    why = verdict(SCOPES, "t", fetch)
    assert why is not None
    assert why.startswith("the identity running `pulumi up` may not write role assignments at /subscriptions/sub/")
    assert "Role Based Access Control Administrator" in why
    assert "set entra.grantDeployer false and name the cluster's admins" in why
    assert "keep localAccounts true for now" in why
    assert fetch.seen == ["cluster"]


@pytest.mark.parametrize(
    ("where", "answer"),
    [
        ("cluster", listed(CONTRIBUTOR, CLUSTER_ADMIN)),  # granted already (by someone who may)
        ("cluster", listed(RBAC_ADMIN)),  # may grant itself
        ("group", listed(OWNER)),  # a new cluster: its resource group's
        ("subscription", listed(OWNER)),  # a new resource group: the subscription's
    ],
)
def test_a_deployer_who_may_grant_or_holds_the_grant_passes(where: str, answer: dict[str, Any]):
    fetch = Answers(**{where: answer})
    assert verdict(SCOPES, "t", fetch) is None
    assert fetch.seen[-1] == where


def test_what_cannot_be_known_is_left_to_the_role_assignment():
    assert verdict(SCOPES, "t", Answers(cluster=500)) is None
    assert verdict(SCOPES, "t", Answers()) is None  # nowhere: the grant's own answer says it


def test_the_provider_refuses_or_records_without_the_token_and_runs_again_for_another_deployer(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(deployer_permission, "_arm", arm_with_token("t", Answers(cluster=listed(CONTRIBUTOR))))
    with pytest.raises(RuntimeError, match="may not write role assignments"):
        DeployerPermissionProvider().create({"scopes": SCOPES, "principal": "p", "token": "t"})
    monkeypatch.setattr(deployer_permission, "_arm", arm_with_token("t", Answers(cluster=listed(RBAC_ADMIN))))
    made = DeployerPermissionProvider().create({"scopes": SCOPES, "principal": "p", "token": "t"})
    assert "token" not in made.outs
    provider = DeployerPermissionProvider()
    assert not provider.diff(
        "x", {"principal": "p", "scopes": SCOPES}, {"principal": "p", "scopes": SCOPES, "token": "u"}
    ).changes
    again = provider.diff("x", {"principal": "p", "scopes": SCOPES}, {"principal": "q", "scopes": SCOPES})
    assert again.changes
    assert again.replaces == ["principal"]


def arm_with_token(expected: str, answers: ArmReader) -> Any:
    def arm(token: str) -> ArmReader:
        assert token == expected
        return answers

    return arm


def test_azure_is_asked_with_the_one_arm_client(monkeypatch: pytest.MonkeyPatch):
    """The provider's token to ARM's endpoint alone, through kaito_aks.azure.arm (no redirect
    followed, a bounded answer, the token never in its repr)."""
    monkeypatch.delenv("KAITO_AKS_ARM_ENDPOINT", raising=False)
    arm = deployer_permission._arm("t0ken")
    assert isinstance(arm, LiveArm)
    assert (arm.token, arm.endpoint) == ("t0ken", ARM_ENDPOINT)
    assert "t0ken" not in repr(arm)


def program(**kw: Any) -> Any:
    return lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2", **kw))


def test_the_cluster_waits_for_the_check_when_it_turns_local_accounts_off_and_grants_the_deployer():
    ev = run(program())
    (check,) = ev.of_type(CHECK)
    assert check.urn in ev.named("c", CLUSTER).dependencies
    assert check.inputs["scopes"][0].endswith(
        "/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks"
    )
    for kw in ({"local_accounts": True}, {"entra": {"grant_deployer": False}}):
        assert run(program(**kw)).of_type(CHECK) == []
