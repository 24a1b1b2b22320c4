"""AksCluster secured by default, as the library emits it: Entra ID with Azure RBAC and no local
accounts, the cluster admins' grants and the step that waits for them, the kubeconfig made
non-interactive (kubelogin), Cilium, upgrades in a window, the add-ons; every option and every
warning or refusal of a lowered default."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pulumi
import pytest
import yaml

from kaito_aks import AksCluster, AksClusterArgs, InvalidArgsError
from kaito_aks.azure.aks_cluster import aks_cluster_problems, aks_cluster_warnings
from kaito_aks.azure.aks_security import (
    AdminArgs,
    ApiServerArgs,
    DefenderArgs,
    EntraArgs,
    MaintenanceWindowArgs,
    UpgradeArgs,
    is_production,
)
from kaito_aks.azure.cluster_admins import principal_type_of_token
from kaito_aks.cluster.kubelogin import KubeloginError, convert_kubeconfig, kubelogin_args
from kaito_aks.testing import MOCK_SUBSCRIPTION, ProgramMocks, RecordingMonitor, Secret, cluster_id, reveal, run
from kaito_aks.waits.access_granted import admin_access, wait_for_access
from kaito_aks.waits.kube_client import KubeApiError

CLUSTER = "azure-native:containerservice:ManagedCluster"
ROLE = "azure-native:authorization:RoleAssignment"
WINDOW = "azure-native:containerservice:MaintenanceConfiguration"
PROVIDER = "pulumi:providers:kubernetes"
ACCESS = "pulumi-python:dynamic/kaito-aks:AccessGranted"
CLUSTER_ADMIN = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
SERVER_ID = "6dae42f8-4368-4678-94ff-3960e28e3630"  # AKS's API server application (kubelogin docs)
CLIENT_ID = "80faf920-1908-4b52-b5ef-a8e7bedfc67a"  # Azure CLI's client application for AKS
ADMIN = "11111111-2222-3333-4444-555555555555"
GROUP = "66666666-7777-8888-9999-000000000000"


def args(**kw: Any) -> AksClusterArgs:
    return AksClusterArgs(resource_group="rg", name="aks", location="eastus2", **kw)


def cluster_program(**kw: Any) -> Any:
    def program() -> None:
        AksCluster("c", args(**kw))

    return program


def paths(problems: list[Any]) -> list[tuple[Any, ...]]:
    return [p.path for p in problems]


# ---------------------------------------------------------------- the cluster as rendered


def test_a_new_cluster_signs_in_through_entra_with_azure_rbac_and_no_local_accounts():
    c = run(cluster_program()).named("c", CLUSTER).inputs
    assert c["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert c["disableLocalAccounts"] is True
    assert "apiServerAccessProfile" not in c  # public, no ranges: the default (warned on production)
    assert c["networkProfile"]["networkDataplane"] == c["networkProfile"]["networkPolicy"] == "cilium"
    assert c["networkProfile"]["networkPluginMode"] == "overlay"
    assert c["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    assert c["securityProfile"]["imageCleaner"] == {"enabled": True, "intervalHours": 168}
    assert c["securityProfile"]["workloadIdentity"] == {"enabled": True}
    assert "defender" not in c["securityProfile"]
    # a tier and the Key Vault add-on the args do not set are not written, and ignored: AKS's
    # defaults on a new cluster, what someone set by hand on an existing one
    assert c["addonProfiles"] == {"azurepolicy": {"enabled": True}}
    assert "sku" not in c
    ignored = run(cluster_program()).named("c", CLUSTER).options["ignoreChanges"]
    assert {"sku", "addonProfiles.azureKeyvaultSecretsProvider"} <= set(ignored)
    (system,) = c["agentPoolProfiles"]
    assert system["upgradeSettings"] == {"maxSurge": "33%"}
    assert "availabilityZones" not in system


def test_what_cannot_change_in_place_is_ignored_or_announced():
    options = run(cluster_program()).named("c", CLUSTER).options
    # the policy engine of an existing cluster is kept (adding it would replace the cluster)
    assert {"networkProfile.networkPolicy", "networkProfile.networkDataplane"} <= set(options["ignoreChanges"])
    assert options["replaceOnChanges"] == ["apiServerAccessProfile.enablePrivateCluster"]


def test_every_option_reaches_the_cluster():
    ev = run(
        cluster_program(
            entra=EntraArgs(admin_group_object_ids=[GROUP]),
            api_server=ApiServerArgs(authorized_ip_ranges=["198.18.0.0/15", "20.62.7.1/32"]),
            tier="Standard",
            defender=DefenderArgs(
                log_analytics_workspace_id=f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/ops/providers/"
                "Microsoft.OperationalInsights/workspaces/sec"
            ),
            image_cleaner=False,
            azure_policy=False,
            key_vault_secrets_provider=True,
            upgrade=UpgradeArgs(
                node_os_channel="SecurityPatch",
                window=MaintenanceWindowArgs(day="Saturday", start="23:30", duration_hours=6, utc_offset="+01:00"),
            ),
            system_pool={"zones": ["1", "2", "3"], "max_surge": "1"},
        )
    )
    c = ev.named("c", CLUSTER).inputs
    assert c["aadProfile"]["adminGroupObjectIDs"] == [GROUP]
    assert c["apiServerAccessProfile"] == {"authorizedIPRanges": ["198.18.0.0/15", "20.62.7.1/32"]}
    assert c["sku"]["tier"] == "Standard"
    assert c["securityProfile"]["defender"] == {
        "logAnalyticsWorkspaceResourceId": f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/ops/providers/"
        "Microsoft.OperationalInsights/workspaces/sec",
        "securityMonitoring": {"enabled": True},
    }
    assert c["securityProfile"]["imageCleaner"] == {"enabled": False}
    assert c["addonProfiles"]["azurepolicy"] == {"enabled": False}
    assert c["addonProfiles"]["azureKeyvaultSecretsProvider"] == {
        "enabled": True,
        "config": {"enableSecretRotation": "true", "rotationPollInterval": "2m"},
    }
    assert c["autoUpgradeProfile"]["nodeOSUpgradeChannel"] == "SecurityPatch"
    (system,) = c["agentPoolProfiles"]
    assert system["availabilityZones"] == ["1", "2", "3"]
    assert system["upgradeSettings"] == {"maxSurge": "1"}
    windows = {w.inputs["configName"]: w.inputs["maintenanceWindow"] for w in ev.of_type(WINDOW)}
    assert set(windows) == {"aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule"}
    assert windows["aksManagedNodeOSUpgradeSchedule"] == {
        "schedule": {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}},
        "startTime": "23:30",
        "durationHours": 6,
        "utcOffset": "+01:00",
    }


def test_a_private_api_server_and_no_policy_engine_render_only_what_is_asked():
    c = run(cluster_program(api_server=ApiServerArgs(private=True), network_policy="none")).named("c", CLUSTER).inputs
    assert c["apiServerAccessProfile"] == {"enablePrivateCluster": True}
    assert "networkPolicy" not in c["networkProfile"]
    assert "networkDataplane" not in c["networkProfile"]


def test_a_maintenance_window_only_for_the_channels_in_use():
    ev = run(cluster_program(upgrade=UpgradeArgs(channel="none", node_os_channel="Unmanaged")))
    assert ev.of_type(WINDOW) == []
    ev = run(cluster_program(upgrade=UpgradeArgs(node_os_channel="None")))
    assert [w.inputs["configName"] for w in ev.of_type(WINDOW)] == ["aksManagedAutoUpgradeSchedule"]
    assert all(w.inputs["resourceName"] == "aks" for w in ev.of_type(WINDOW))


# ---------------------------------------------------------------- who is cluster admin


def test_the_deployer_is_cluster_admin_and_the_provider_and_waits_start_once_that_works():
    ev = run(cluster_program())
    grant = ev.named("c-deployer-cluster-admin", ROLE)
    assert grant.inputs["scope"] == cluster_id("rg", "aks")
    assert grant.inputs["roleDefinitionId"] == (
        f"/subscriptions/{MOCK_SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{CLUSTER_ADMIN}"
    )
    assert grant.inputs["principalType"] == "User"  # the mocks sign in as a user; never left to Azure's default
    access = ev.named("c/access-granted", ACCESS)
    assert grant.urn in access.dependencies
    assert isinstance(access.inputs["kubeconfig"], Secret)
    provider = ev.named("c", PROVIDER)
    assert access.urn in provider.dependencies
    # ... through depends_on alone: its kubeconfig never waits on a grant, so it stays known at
    # preview (unknown, the Kubernetes provider would replace every object it manages)
    assert not {grant.urn, access.urn} & set(provider.property_dependencies["kubeconfig"])


def test_admins_are_granted_by_object_id_and_the_deployer_can_be_left_out():
    ev = run(
        cluster_program(
            entra=EntraArgs(
                grant_deployer=False, admins=[AdminArgs(object_id=ADMIN, principal_type="ServicePrincipal")]
            )
        )
    )
    (grant,) = ev.of_type(ROLE)
    assert grant.name == f"c-cluster-admin-{ADMIN}"  # a reordered list renames nothing
    assert (grant.inputs["principalId"], grant.inputs["principalType"]) == (ADMIN, "ServicePrincipal")
    assert ev.named("c/access-granted", ACCESS).inputs["principals"] == [ADMIN]


def test_without_azure_rbac_nothing_is_granted_or_waited_for():
    ev = run(cluster_program(entra=EntraArgs(azure_rbac=False, admin_group_object_ids=[GROUP])))
    assert ev.of_type(ROLE) == []
    assert ev.of_type(ACCESS) == []
    assert ev.named("c", CLUSTER).inputs["aadProfile"]["enableAzureRBAC"] is False


def token(claims: dict[str, Any]) -> str:
    parts = [{"alg": "RS256"}, claims]
    return ".".join(base64.urlsafe_b64encode(json.dumps(p).encode()).decode().rstrip("=") for p in parts) + ".sig"


def test_the_deployers_type_is_read_from_its_token():
    assert principal_type_of_token(token({"idtyp": "app", "oid": "x"})) == "ServicePrincipal"
    assert principal_type_of_token(token({"oid": "x", "roles": []})) == "ServicePrincipal"  # no scp: app-only
    assert principal_type_of_token(token({"idtyp": "user", "scp": "user_impersonation"})) == "User"
    assert principal_type_of_token("not-a-jwt") == "User"


class SignedInAs(ProgramMocks):
    """Mocks whose azure-native provider signs in with `claims` and whose AKS lists `kubeconfig`."""

    def __init__(self, claims: dict[str, Any] | None = None, kubeconfig: str | None = None):
        super().__init__()
        self.claims, self.kubeconfig = claims, kubeconfig

    def call(self, args: Any) -> dict[str, Any]:
        if args.token == "azure-native:authorization:getClientToken" and self.claims is not None:
            return {"token": token(self.claims)}
        if args.token.endswith("listManagedClusterUserCredentials") and self.kubeconfig is not None:
            assert args.args["format"] == "exec"
            return {
                "kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(self.kubeconfig.encode()).decode()}]
            }
        return super().call(args)


def test_a_service_principal_deployer_is_granted_as_one_unless_told_otherwise():
    ev = run(cluster_program(), monitor=RecordingMonitor(SignedInAs({"idtyp": "app"})))
    assert ev.named("c-deployer-cluster-admin", ROLE).inputs["principalType"] == "ServicePrincipal"
    ev = run(
        cluster_program(entra=EntraArgs(deployer_principal_type="User")),
        monitor=RecordingMonitor(SignedInAs({"idtyp": "app"})),
    )
    assert ev.named("c-deployer-cluster-admin", ROLE).inputs["principalType"] == "User"


def test_a_protected_cluster_leaves_its_grants_unprotected():
    """The deployer's grant is replaced when someone else runs `up`: protected, that would fail."""
    ev = run(lambda: AksCluster("c", args(), opts=pulumi.ResourceOptions(protect=True)))
    assert ev.named("c", CLUSTER).options["protect"] is True
    assert ev.named("c-deployer-cluster-admin", ROLE).options["protect"] is False
    assert ev.named("c/access-granted", ACCESS).options["protect"] is False


# ---------------------------------------------------------------- the kubeconfig


def aks_kubeconfig(args: list[str] | None = None) -> str:
    """A user kubeconfig in the shape AKS lists for an Entra cluster (format exec): kubelogin
    with device-code login."""
    login = args or [
        "get-token", "--environment", "AzurePublicCloud", "--server-id", SERVER_ID, "--client-id", CLIENT_ID,
        "--tenant-id", "72f988bf-0000-0000-0000-000000000000", "--login", "devicecode",
    ]  # fmt: skip
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "aks", "cluster": {"server": "https://aks.hcp.example.azmk8s.io:443"}}],
            "contexts": [{"name": "aks", "context": {"cluster": "aks", "user": "clusterUser_rg_aks"}}],
            "current-context": "aks",
            "users": [
                {
                    "name": "clusterUser_rg_aks",
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "kubelogin",
                            "args": login,
                            "env": None,
                            "installHint": "install kubelogin",
                            "provideClusterInfo": False,
                        }
                    },
                }
            ],
        }
    )


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("azurecli", ["get-token", "--login", "azurecli", "--server-id", SERVER_ID]),
        ("workloadidentity", ["get-token", "--login", "workloadidentity", "--server-id", SERVER_ID]),
        ("msi", ["get-token", "--login", "msi", "--server-id", SERVER_ID]),
        (
            "spn",
            [
                "get-token", "--login", "spn", "--server-id", SERVER_ID, "--client-id", CLIENT_ID,
                "--tenant-id", "72f988bf-0000-0000-0000-000000000000", "--environment", "AzurePublicCloud",
            ],
        ),
    ],
)  # fmt: skip
def test_the_device_code_login_is_converted_as_kubelogin_convert_kubeconfig_does(mode: Any, expected: list[str]):
    converted = convert_kubeconfig(aks_kubeconfig(), mode)
    assert kubelogin_args(converted) == [expected]
    user = yaml.safe_load(converted)["users"][0]["user"]["exec"]
    assert user["command"] == "kubelogin"
    assert user["installHint"] == "install kubelogin"  # kept, as kubelogin keeps it
    assert yaml.safe_load(converted)["clusters"] == yaml.safe_load(aks_kubeconfig())["clusters"]  # same cluster


def test_a_kubeconfig_without_kubelogin_is_left_as_it_is():
    plain = "apiVersion: v1\nkind: Config\nclusters: []\nusers:\n- name: u\n  user: {token: t}\n"
    assert convert_kubeconfig(plain, "azurecli") is plain


def test_a_kubelogin_user_without_a_server_id_is_refused_without_quoting_it():
    with pytest.raises(KubeloginError, match="no --server-id") as err:
        convert_kubeconfig(
            aks_kubeconfig(["get-token", "--login", "devicecode", "--tenant-id", "secret-t"]), "azurecli"
        )
    assert "secret-t" not in str(err.value)


def test_the_kubeconfig_output_logs_in_without_a_prompt(caplog: pytest.LogCaptureFixture, monkeypatch: Any):
    monkeypatch.setenv("PATH", "/nonexistent")  # no kubelogin here: said
    with caplog.at_level(logging.WARNING):
        ev = run(
            cluster_program(kubelogin_mode="workloadidentity"),
            monitor=RecordingMonitor(SignedInAs(kubeconfig=aks_kubeconfig())),
        )
    kubeconfig = reveal(ev.component_outputs[ev.named("c", "kaito-aks:index:AksCluster").urn]["kubeconfig"])
    assert kubelogin_args(kubeconfig) == [["get-token", "--login", "workloadidentity", "--server-id", SERVER_ID]]
    assert kubelogin_args(reveal(ev.named("c", PROVIDER).inputs["kubeconfig"])) == kubelogin_args(kubeconfig)
    assert "its kubeconfig runs kubelogin, which is not on PATH here" in caplog.text


# ---------------------------------------------------------------- the policy engine at deploy time


class Engine(ProgramMocks):
    """Mocks whose AKS reports the cluster's network profile without a policy engine (a cluster
    created before this program set Cilium: ignore_changes keeps its old inputs)."""

    def computed(self, typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        id_, out = super().computed(typ, name, inputs)
        if typ == CLUSTER:
            network = {
                k: v for k, v in inputs["networkProfile"].items() if k not in ("networkPolicy", "networkDataplane")
            }
            out = {**out, "networkProfile": network}
        return id_, out

    def call(self, args: Any) -> dict[str, Any]:
        answer = super().call(args)
        if args.token.endswith("getManagedCluster"):
            answer["networkProfile"] = {"networkPlugin": "azure", "networkPolicy": "none"}
        return answer


def test_a_cluster_without_a_policy_engine_is_warned_about_with_the_migration(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING):
        run(cluster_program())
    assert "no network policy engine" not in caplog.text
    with caplog.at_level(logging.WARNING):
        run(cluster_program(), monitor=RecordingMonitor(Engine()))
    assert "the cluster has no network policy engine, so the NetworkPolicies this program creates are not enforced" in (
        caplog.text
    )
    assert "--network-dataplane cilium --network-policy cilium`, then `pulumi refresh`" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        run(
            lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="theirs", existing=True)),
            monitor=RecordingMonitor(Engine()),
        )
    assert "the cluster has no network policy engine" in caplog.text


# ---------------------------------------------------------------- refused, warned


def test_settings_that_lock_everyone_out_or_that_aks_refuses_together_are_refused():
    problems = aks_cluster_problems(
        args(
            entra=EntraArgs(azure_rbac=False, admins=[AdminArgs(object_id=ADMIN)]),
            api_server=ApiServerArgs(private=True, authorized_ip_ranges=["198.18.0.0/15"]),
        )
    )
    assert paths(problems) == [("entra", "azure_rbac"), ("entra", "admins"), ("api_server", "authorized_ip_ranges")]
    with pytest.raises(InvalidArgsError) as err:
        AksCluster("c", args(entra=EntraArgs(admins=[AdminArgs(object_id=ADMIN), AdminArgs(object_id=ADMIN.upper())])))
    assert "args.entra.admins[1]: 11111111-2222-3333-4444-555555555555 is listed twice" in str(err.value)


@pytest.mark.parametrize(
    ("channel", "version", "refused"),
    [("stable", "1.33", True), ("rapid", "1.33", True), ("stable", None, False), ("patch", "1.33", False),
     ("patch", "1.33.2", True), ("none", "1.33.2", False)],
)  # fmt: skip
def test_a_pinned_version_the_upgrade_channel_would_leave_is_refused(channel: Any, version: Any, refused: bool):
    problems = aks_cluster_problems(args(kubernetes_version=version, upgrade=UpgradeArgs(channel=channel)))
    assert paths(problems) == ([("kubernetes_version",)] if refused else [])
    if refused:
        assert "which it refuses" in problems[0].message


def test_bad_values_are_named():
    with pytest.raises(InvalidArgsError) as err:
        AksCluster(
            "c",
            args(
                api_server={"authorized_ip_ranges": ["10.0.0.1/8", "nonsense", "10.1.2.3"]},
                entra={"admins": [{"object_id": "me"}]},
                upgrade={"window": {"start": "25:00", "duration_hours": 2}},
                system_pool={"max_surge": "200%"},
                defender={"log_analytics_workspace_id": "ws"},
            ),
        )
    text = str(err.value)
    for said in (
        "api_server.authorized_ip_ranges[0]: '10.0.0.1/8' is not a CIDR range",
        "api_server.authorized_ip_ranges[1]: 'nonsense' is not a CIDR range",
        "api_server.authorized_ip_ranges[2]: '10.1.2.3' has no prefix length: write 10.1.2.3/32",
        "entra.admins[0].object_id: 'me' is not an object id",
        "upgrade.window.start: '25:00' is not a time of day",
        "upgrade.window.duration_hours: must be from 4 to 24",
        "system_pool.max_surge: '200%' is not a node count",
        "defender.log_analytics_workspace_id: 'ws' is not a Log Analytics workspace's resource id",
    ):
        assert said in text, text


def test_the_defaults_warn_of_nothing_but_each_lowered_one_is_said():
    assert aks_cluster_warnings(args()) == []
    lowered = args(
        local_accounts=True,
        entra=EntraArgs(azure_rbac=False, admin_group_object_ids=[GROUP]),
        network_policy="none",
        upgrade=UpgradeArgs(channel="none", node_os_channel="Unmanaged"),
        image_cleaner=False,
        azure_policy=False,
    )
    said = {p.path: p.message for p in aks_cluster_warnings(lowered)}
    assert list(said) == [
        ("local_accounts",),
        ("entra", "azure_rbac"),
        ("network_policy",),
        ("upgrade", "channel"),
        ("upgrade", "node_os_channel"),
        ("image_cleaner",),
        ("azure_policy",),
    ]
    assert "admin certificate" in said["local_accounts",]
    assert "past Entra ID and Azure RBAC" in said["local_accounts",]
    assert "NetworkPolicies this program creates (and any other) are not enforced" in said["network_policy",]


def test_authorized_ranges_say_what_they_must_hold_and_catch_alls():
    (warning,) = aks_cluster_warnings(args(api_server=ApiServerArgs(authorized_ip_ranges=["198.18.0.0/15"])))
    assert warning.path == ("api_server", "authorized_ip_ranges")
    assert "where `pulumi up` runs" in warning.message
    assert "the cluster's outbound IPs" in warning.message
    (warning,) = aks_cluster_warnings(args(api_server=ApiServerArgs(authorized_ip_ranges=["0.0.0.0/0"])))
    assert "0.0.0.0/0 admits every address" in warning.message


UNROUTABLE = [
    ("203.0.113.0/24", "a documentation range (RFC 5737/3849), never routed"),
    ("192.0.2.7/32", "a documentation range (RFC 5737/3849), never routed"),
    ("2001:db8::/48", "a documentation range (RFC 5737/3849), never routed"),
    ("127.0.0.1/32", "loopback (RFC 1122), a host's own"),
    ("::1/128", "loopback (RFC 4291), a host's own"),
    ("169.254.10.0/24", "link-local (RFC 3927), never past its link"),
    ("fe80::/64", "link-local (RFC 4291), never past its link"),
    ("239.1.1.0/24", "multicast (RFC 5771), never a source"),
    ("0.0.0.0/32", '"this network" (RFC 1122), a source only while a host has no address'),
    ("255.255.255.255/32", "reserved (RFC 1112) or the broadcast address, never routed"),
]


@pytest.mark.parametrize(("cidr", "what"), UNROUTABLE)
def test_a_range_no_caller_can_be_in_is_refused_with_the_fix(cidr: str, what: str):
    (problem,) = aks_cluster_problems(args(api_server=ApiServerArgs(authorized_ip_ranges=["20.62.7.0/24", cidr])))
    assert problem.path == ("api_server", "authorized_ip_ranges", 1)
    assert problem.code == "api-server-unroutable"
    assert problem.message.startswith(f"{cidr} is {what}, so no runner's or admin's address is in it: `pulumi up`")
    assert "list the egress ranges of where `pulumi up` runs (your CI runners, your admins' network)" in problem.message


def test_routable_ranges_and_ranges_around_a_special_block_pass():
    wide = ["20.62.7.0/24", "10.0.0.0/8", "192.0.0.0/16", "0.0.0.0/0", "2603:1030::/32"]
    assert aks_cluster_problems(args(api_server=ApiServerArgs(authorized_ip_ranges=wide))) == []


def test_an_examples_placeholder_is_kept_with_its_bypass_and_said():
    placeholder = args(
        api_server=ApiServerArgs(authorized_ip_ranges=["203.0.113.0/24"]), bypass_checks=["api-server-unroutable"]
    )
    (said,) = aks_cluster_problems(placeholder)
    assert said.bypassed
    assert said.message.startswith("bypassed (api-server-unroutable): 203.0.113.0/24 is a documentation range")
    assert said.message.endswith("replace it before `pulumi up`")
    (wrong,) = aks_cluster_problems(args(bypass_checks=["capacity"]))
    assert wrong.path == ("bypass_checks", 0)
    assert "the one that may: api-server-unroutable" in wrong.message


def test_production_is_held_to_more_and_says_so():
    assert is_production("prod", False)
    assert is_production("Production", False)
    assert is_production("dev", True)
    assert not is_production("dev", False)
    said = [p.path for p in aks_cluster_warnings(args(), production=True)]
    assert said == [("api_server",), ("tier",), ("defender",)]
    hardened = args(
        api_server=ApiServerArgs(authorized_ip_ranges=["198.18.0.0/15"]),
        tier="Standard",
        defender=DefenderArgs(
            log_analytics_workspace_id="/subscriptions/s/resourceGroups/g/providers/Microsoft.OperationalInsights/workspaces/w"
        ),
    )
    assert [p.path for p in aks_cluster_warnings(hardened, production=True)] == [("api_server", "authorized_ip_ranges")]
    private = [p.path for p in aks_cluster_warnings(args(api_server=ApiServerArgs(private=True)), production=True)]
    assert ("api_server",) not in private
    assert ("api_server", "private") in private


def test_the_component_logs_its_warnings_production_by_stack_name_or_protection(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING):
        run(cluster_program(local_accounts=True), stack="dev")
    assert "args.local_accounts: local accounts are on" in caplog.text
    assert "production cluster" not in caplog.text
    for stack, opts in (("prod", None), ("dev", pulumi.ResourceOptions(protect=True))):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            run(lambda opts=opts: AksCluster("c", args(), opts=opts), stack=stack)
        assert "args.tier: a production cluster without tier (a new one is created on the Free tier)" in caplog.text


def test_an_existing_cluster_takes_only_where_it_is_and_how_to_reach_it():
    existing = {"resource_group": "rg", "name": "theirs", "existing": True}
    assert aks_cluster_problems(AksClusterArgs(**existing, kubelogin_mode="spn", ai_toolchain_operator=True)) == []
    problems = aks_cluster_problems(AksClusterArgs(**existing, tier="Standard", local_accounts=True))
    assert paths(problems) == [("local_accounts",), ("tier",)]
    assert aks_cluster_warnings(AksClusterArgs(**existing)) == []


# ---------------------------------------------------------------- the wait for the grants


class Refusing:
    """An API server that refuses (`status`) `times` times, then answers."""

    def __init__(self, times: int, status: int = 403):
        self.left, self.status, self.calls = times, status, []

    def get(self, path: str, **query: str) -> dict[str, Any]:
        self.calls.append((path, query))
        if self.left:
            self.left -= 1
            raise KubeApiError(self.status, "forbidden")
        return {"items": []}


def test_the_grant_is_waited_for_while_the_api_server_still_refuses():
    server = Refusing(3)
    clock = iter(range(1000)).__next__
    wait_for_access(server, [ADMIN], 600, sleep=lambda _: None, clock=lambda: float(clock()))
    assert len(server.calls) == 4
    assert server.calls[0] == ("/apis/rbac.authorization.k8s.io/v1/clusterroles", {"limit": "1"})
    assert admin_access(Refusing(0), []).done


def test_a_grant_that_never_takes_effect_fails_naming_whose_and_what_to_check():
    clock = iter(range(0, 100000, 60)).__next__
    with pytest.raises(RuntimeError) as err:
        wait_for_access(Refusing(10**6, 401), [ADMIN], 600, sleep=lambda _: None, clock=lambda: float(clock()))
    assert f"the cluster admin role of {ADMIN} takes effect" in str(err.value)
    assert "az role assignment list" in str(err.value)


def test_other_failures_are_the_usual_waits_answer():
    server = Refusing(1, 500)
    clock = iter(range(1000)).__next__
    wait_for_access(server, [], 600, sleep=lambda _: None, clock=lambda: float(clock()))
    assert len(server.calls) == 2


# ---------------------------------------------------------------- GPU pools


def test_a_gpu_pools_zones_are_a_replacement_and_its_surge_an_update():
    from kaito_aks import GpuNodePool, GpuNodePoolArgs

    def program() -> None:
        GpuNodePool(
            "plain", GpuNodePoolArgs(cluster_name="aks", resource_group_name="rg", vm_size="Standard_NC24ads_A100_v4")
        )
        GpuNodePool(
            "zoned",
            GpuNodePoolArgs(
                cluster_name="aks",
                resource_group_name="rg",
                vm_size="Standard_NC24ads_A100_v4",
                zones=["1", "3"],
                max_surge="1",
            ),
        )

    ev = run(program)
    plain, zoned = (
        ev.named("plain", "azure-native:containerservice:AgentPool"),
        ev.named("zoned", "azure-native:containerservice:AgentPool"),
    )
    assert "availabilityZones" not in plain.inputs
    assert "upgradeSettings" not in plain.inputs
    assert zoned.inputs["availabilityZones"] == ["1", "3"]
    assert zoned.inputs["upgradeSettings"] == {"maxSurge": "1"}
    assert "availabilityZones" in zoned.options["replaceOnChanges"]
    assert "upgradeSettings" not in zoned.options["replaceOnChanges"]
