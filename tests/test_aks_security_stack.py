"""The example stacks' AKS clusters as rendered: every one has Entra ID with Azure RBAC, no local
accounts, a policy engine and upgrade channels; prod a restricted API server and the Standard
tier; no identity holds Contributor or Owner; the stack file's keys reach the cluster and its
warnings are said where they were written."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaito_aks import catalog
from stacks.cli import main
from stacks.evaluate import evaluate
from stacks.load import parse_stack_file
from stacks.stackfile import read_stack_file
from tests.conftest import EXAMPLES, ROOT, errors_of, run

CLUSTER = "azure-native:containerservice:ManagedCluster"
ROLE = "azure-native:authorization:RoleAssignment"
WINDOW = "azure-native:containerservice:MaintenanceConfiguration"
CREATED = [s for s in EXAMPLES if "aks" in (read_stack_file(s).config.get("kaito-aks:cluster") or {})]
AKS = {"aks": {"resourceGroup": "rg", "name": "kaito-test", "kubernetesVersion": "1.33"}}


def aks(**cluster: object) -> dict[str, object]:
    return {
        "azure-native:location": "eastus2",
        "kaito-aks:cluster": {"aks": {**AKS["aks"], **cluster}},
        "kaito-aks:workspaces": [
            {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
        ],
    }


def test_the_example_stacks_that_create_a_cluster_are_the_aks_ones():
    assert set(CREATED) == {"addon", "auto", "dev", "hf", "karpenter", "prod", "serving"}


@pytest.mark.parametrize("stack", CREATED)
def test_every_aks_stack_renders_a_cluster_a_review_passes(stack: str):
    f = read_stack_file(stack)
    ev = run(f.config, stack=stack)
    c = ev.named("cluster", CLUSTER)
    assert c.inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert c.inputs["disableLocalAccounts"] is True
    assert c.inputs["networkProfile"]["networkPolicy"] == "cilium"
    assert {"networkProfile.networkPolicy", "networkProfile.networkDataplane"} <= set(c.options["ignoreChanges"])
    assert c.inputs["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    assert c.inputs["securityProfile"]["imageCleaner"]["enabled"] is True
    assert c.inputs["addonProfiles"]["azurepolicy"] == {"enabled": True}
    assert sorted(w.inputs["configName"] for w in ev.of_type(WINDOW)) == [
        "aksManagedAutoUpgradeSchedule",
        "aksManagedNodeOSUpgradeSchedule",
    ]
    grant = ev.named("cluster-deployer-cluster-admin", ROLE)
    assert grant.inputs["principalType"] in ("User", "ServicePrincipal")  # never left to Azure's default
    assert grant.inputs["roleDefinitionId"].endswith(
        catalog.azure_roles()["Azure Kubernetes Service RBAC Cluster Admin"]
    )


def test_prod_has_a_restricted_api_server_and_the_standard_tier_the_others_keep_free():
    for stack in CREATED:
        c = run(read_stack_file(stack).config, stack=stack).named("cluster", CLUSTER).inputs
        if stack == "prod":
            assert c["sku"] == {"name": "Base", "tier": "Standard"}
            assert c["apiServerAccessProfile"] == {"authorizedIPRanges": ["203.0.113.0/24"]}
        else:  # not set: AKS's Free on a new cluster, and an existing one keeps what it has
            assert "sku" not in c
            assert "apiServerAccessProfile" not in c


@pytest.mark.parametrize("stack", EXAMPLES)
def test_no_role_assignment_in_any_render_names_contributor_or_owner(stack: str):
    f = read_stack_file(stack)
    ev = evaluate(f.config, stack=stack, secrets=f.secrets)
    broad = set(catalog.too_broad_roles().values())
    assert broad >= {"b24988ac-6180-42a0-ab88-20f7382dd24c", "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"}
    for grant in ev.of_type(ROLE):
        assert grant.inputs["roleDefinitionId"].rsplit("/", 1)[1].lower() not in broad, (stack, grant.name)


def test_prods_placeholder_range_is_said_with_its_bypass_and_missing_defender_with_their_lines():
    warnings = {p.path: p.message for p in parse_stack_file(read_stack_file("prod")).warnings}
    placeholder = warnings[("cluster", "aks", "api_server", "authorized_ip_ranges", 0)]
    assert placeholder.startswith("bypassed (api-server-unroutable): 203.0.113.0/24 is a documentation range")
    assert placeholder.endswith("replace it before `pulumi up`")
    assert ("cluster", "aks", "defender") in warnings
    assert ("cluster", "aks", "tier") not in warnings
    for stack in ("dev", "hf", "auto", "addon"):
        assert not [p for p in parse_stack_file(read_stack_file(stack)).warnings if p.path[:2] == ("cluster", "aks")]


def test_the_stack_file_keys_reach_the_cluster():
    ev = run(
        aks(
            entra={
                "adminGroupObjectIds": ["66666666-7777-8888-9999-000000000000"],
                "admins": [{"objectId": "11111111-2222-3333-4444-555555555555", "principalType": "Group"}],
                "grantDeployer": False,
            },
            apiServer={"authorizedIpRanges": ["198.18.0.0/15"]},
            upgrade={"nodeOsChannel": "SecurityPatch", "window": {"day": "Saturday", "durationHours": 8}},
            tier="Standard",
            keyVaultSecretsProvider=True,
            systemPool={"zones": ["1", "2"], "maxSurge": "50%"},
            kubeloginMode="spn",
        )
    )
    c = ev.named("cluster", CLUSTER).inputs
    assert c["aadProfile"]["adminGroupObjectIDs"] == ["66666666-7777-8888-9999-000000000000"]
    assert c["apiServerAccessProfile"]["authorizedIPRanges"] == ["198.18.0.0/15"]
    assert c["autoUpgradeProfile"]["nodeOSUpgradeChannel"] == "SecurityPatch"
    assert c["agentPoolProfiles"][0]["availabilityZones"] == ["1", "2"]
    assert [g.inputs["principalType"] for g in ev.of_type(ROLE)] == ["Group"]
    assert {w.inputs["maintenanceWindow"]["durationHours"] for w in ev.of_type(WINDOW)} == {8}


def test_a_lowered_default_is_an_error_or_a_warning_at_its_config_path():
    assert errors_of(aks(upgrade={"channel": "stable"})) == [
        "cluster.aks.kubernetesVersion: upgrade.channel stable moves the cluster to newer minors, and the next `pulumi "
        "up` would then ask AKS to go back to 1.33, which it refuses: leave kubernetesVersion out, or use channel patch"
    ]
    errors = errors_of(
        aks(entra={"azureRbac": False}, apiServer={"private": True, "authorizedIpRanges": ["10.0.0.0/8"]})
    )
    assert sorted(e.split(":")[0] for e in errors) == [
        "cluster.aks.apiServer.authorizedIpRanges",
        "cluster.aks.entra.azureRbac",
    ]
    assert errors_of(aks(apiServer={"authorizedIpRanges": ["10.0.0.1/8"]}))[0].startswith(
        "cluster.aks.apiServer.authorizedIpRanges[0]: '10.0.0.1/8' is not a CIDR range"
    )


def test_production_warnings_follow_the_stack_name_or_protect():
    from stacks.load import stack_config

    raw = {k.removeprefix("kaito-aks:"): v for k, v in aks().items() if k.startswith("kaito-aks:")}

    def said(stack, raw=raw):
        return {p.path[-1] for p in stack_config(raw, azure_location="eastus2", stack=stack).warnings}

    assert {"tier", "defender", "api_server"} <= said("prod")
    assert "tier" not in said("dev")
    protected = {**raw, "cluster": {"aks": {**raw["cluster"]["aks"], "protect": True}}}  # type: ignore[index]
    assert "tier" in {p.path[-1] for p in stack_config(protected, azure_location="eastus2", stack="dev").warnings}


def test_an_existing_cluster_takes_its_login_mode_and_nothing_it_would_configure():
    existing = {"existing": {"resourceGroup": "rg", "name": "theirs", "kubeloginMode": "workloadidentity"}}
    ev = run({**aks(), "kaito-aks:cluster": existing})
    assert ev.of_type(CLUSTER) == []
    assert ev.of_type(ROLE) == []  # an adopted cluster's admins are its owner's business
    errors = errors_of(
        {**aks(), "kaito-aks:cluster": {"existing": {"resourceGroup": "rg", "name": "x", "tier": "Standard"}}}
    )
    assert errors[0].startswith("cluster.existing.tier: unknown key")


def test_a_placeholder_range_fails_validate_with_the_fix_and_prod_says_how_to_replace_it(tmp_path: Path, capsys):
    """Without the example's bypass, prod's placeholder is refused; the file says what to do."""
    text = (ROOT / "Pulumi.prod.yaml").read_text()
    assert "Before `pulumi up`, list here the" in text
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.placeholder.yaml").write_text(text.replace("      bypassChecks: [api-server-unroutable]", ""))
    assert main(["validate", "placeholder", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert (
        "Pulumi.placeholder.yaml:25: cluster.aks.apiServer.authorizedIpRanges[0]: 203.0.113.0/24 is a documentation "
        "range (RFC 5737/3849), never routed, so no runner's or admin's address is in it: `pulumi up` would create the "
        "cluster and then never reach its API server; list the egress ranges of where `pulumi up` runs (your CI "
        "runners, your admins' network) and the cluster's outbound IPs instead (an example's placeholder, never "
        "deployed, may stay with bypassChecks: [api-server-unroutable])"
    ) in out
