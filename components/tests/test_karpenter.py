"""Karpenter as a library user builds it: the component on an AksCluster created with a node
subnet, its bootstrap token and SSH key (dynamic resources: their providers called directly),
what it refuses, and the destroy wait in Karpenter mode."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pulumi
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    Karpenter,
    KarpenterArgs,
    KarpenterNetworkArgs,
    KubeletIdentityArgs,
    NodeBootstrapToken,
    NodeBootstrapTokenArgs,
    NodeSubnetArgs,
    catalog,
    karpenter_cluster_args,
)
from kaito_aks.azure.ssh_public_key import SshPublicKeyProvider, openssh_public_key
from kaito_aks.cluster import node_bootstrap
from kaito_aks.cluster.crd_adoption import MANAGED_BY, RELEASE_NAME, RELEASE_NAMESPACE, adopt
from kaito_aks.cluster.node_bootstrap import BootstrapTokenProvider
from kaito_aks.problems import InvalidArgsError
from kaito_aks.testing import AFTER_UP, ProgramMocks, RecordingMonitor, Secret, api_server_fqdn, reveal, run
from kaito_aks.waits.kube_client import KubeApiError
from kaito_aks.waits.nodeclaims_gone import KARPENTER_NODECLAIMS, wait_until_gone
from test_components import kubeconfig_cluster, refused
from test_node_provisioning import NodeClaims

RELEASE = "kubernetes:helm.sh/v3:Release"
ROLE = "azure-native:authorization:RoleAssignment"


def karpenter_on(cluster: AksCluster, **extra: Any) -> Karpenter:
    return Karpenter(
        "karpenter",
        KarpenterArgs(
            **karpenter_cluster_args(cluster),
            **extra,
        ),
        opts=pulumi.ResourceOptions(providers=[cluster.provider]),
    )


def cluster(**extra: Any) -> AksCluster:
    args = {"resource_group": "rg", "name": "kaito-karpenter", "location": "eastus2", "node_subnet": NodeSubnetArgs()}
    return AksCluster("c", AksClusterArgs(**{**args, **extra}))


def test_karpenter_on_a_created_cluster_then_kaito_in_karpenter_mode():
    def program() -> None:
        aks = cluster()
        karpenter = karpenter_on(aks)
        KaitoOperator(
            "kaito",
            KaitoOperatorArgs(version="0.12.0", node_provisioning="auto", node_provisioner="karpenter"),
            opts=pulumi.ResourceOptions(providers=[aks.provider], depends_on=[karpenter]),
        )

    ev = run(program)
    release = ev.named("karpenter", RELEASE)
    assert release.inputs["chart"] == "oci://mcr.microsoft.com/aks/karpenter/karpenter"  # an OCI chart: no repo
    assert "repositoryOpts" not in release.inputs
    assert release.inputs["version"] == "1.12.0"
    assert release.inputs["namespace"] == "karpenter"
    assert release.urn in ev.named("kaito", RELEASE).dependencies
    system = ev.named("c", "azure-native:containerservice:ManagedCluster").inputs["agentPoolProfiles"][0]
    subnet = ev.named("c-nodes", "azure-native:network:Subnet")
    vnet = ev.named("c-vnet", "azure-native:network:VirtualNetwork")
    assert vnet.inputs["addressSpace"] == {"addressPrefixes": ["10.224.0.0/12"]}
    assert subnet.inputs["addressPrefix"] == "10.224.0.0/16"
    assert system["vnetSubnetID"].endswith("/virtualNetworks/kaito-karpenter-vnet/subnets/nodes")
    names = {r.name for r in ev.of_type(ROLE)}
    assert names == {
        "c-deployer-cluster-admin",  # the deployer's AKS RBAC Cluster Admin (issue 29)
        "c-subnet-network-contributor",
        "karpenter-identity-virtual-machine-contributor",
        "karpenter-identity-network-contributor",
        "karpenter-identity-managed-identity-operator",
        "karpenter-identity-network-contributor-2",
    }
    contributor, owner = catalog.azure_roles()["Contributor"], "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
    assert not [r for r in ev.of_type(ROLE) if r.inputs["roleDefinitionId"].endswith((contributor, owner))]
    token = ev.named("karpenter-bootstrap-token", "kubernetes:core/v1:Secret")
    assert isinstance(token.inputs["stringData"], Secret)  # the token: a secret in the Secret too
    assert token.urn in release.dependencies
    component = ev.component_outputs[next(r.urn for r in ev.resources if r.type == "kaito-aks:index:Karpenter")]
    assert component["namespace"] == "karpenter"


def test_a_cluster_without_a_node_subnet_reports_none():
    ev = run(lambda: pulumi.export("subnet", cluster(node_subnet=None).node_subnet_id))
    assert ev.outputs["subnet"] == ""
    assert ev.of_type("azure-native:network:VirtualNetwork") == []


def test_a_subnet_of_yours_is_read_not_made():
    mine = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net/providers/Microsoft.Network/"
        "virtualNetworks/hub/subnets/aks"
    )

    def program() -> None:
        aks = cluster(node_subnet=NodeSubnetArgs(subnet_id=mine))
        pulumi.export("subnet", aks.node_subnet_id)
        pulumi.export("guid", aks.vnet_guid)

    ev = run(program)
    assert ev.of_type("azure-native:network:VirtualNetwork") == []
    assert ev.outputs["subnet"] == mine
    assert ev.outputs["guid"] == "(known after pulumi up)"  # read from Azure (getVirtualNetwork)
    assert ev.named("c-subnet-network-contributor", ROLE).inputs["scope"] == mine


@pytest.mark.parametrize(
    ("subnet", "expected"),
    [
        (
            NodeSubnetArgs(subnet_id="/subscriptions/x/resourceGroups/y"),
            "args.node_subnet.subnet_id: must be a subnet's resource id",
        ),
        (
            NodeSubnetArgs(address_prefix="10.0.0.0/16"),
            "args.node_subnet.address_prefix: 10.0.0.0/16 is not inside the VNet's address_space 10.224.0.0/12",
        ),
        (NodeSubnetArgs(address_space="10.224.0.0"), "args.node_subnet.address_space: "),
    ],
)
def test_a_node_subnet_that_cannot_work_is_refused(subnet: NodeSubnetArgs, expected: str):
    assert expected in refused(lambda: cluster(node_subnet=subnet))


def test_an_adopted_cluster_takes_no_node_subnet():
    message = refused(
        lambda: AksCluster(
            "c", AksClusterArgs(resource_group="rg", name="aks", existing=True, node_subnet=NodeSubnetArgs())
        )
    )
    assert "args.node_subnet: configures a cluster this component creates" in message


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"version": "1.10.2"}, "args.version: Karpenter 1.10.2 is not supported; use 1.12.0"),
        ({"values": {"serviceAccount": {"name": "x"}}}, "args.values.serviceAccount: set for the component's"),
        ({"values": {"settings": {"clusterName": "x"}}}, "args.values.settings.clusterName: set from the cluster"),
        (
            {"values": {"settings": {"featureGates": {"staticCapacity": False}}}},
            "args.values.settings.featureGates.staticCapacity: KAITO sets each NodePool's replicas",
        ),
        ({"bootstrap_token_rotation": -1}, "args.bootstrap_token_rotation: "),
        ({"bootstrap_token_lifetime_days": 0}, "args.bootstrap_token_lifetime_days: "),
        ({"bootstrap_token_lifetime_days": 366}, "args.bootstrap_token_lifetime_days: "),
    ],
)
def test_what_karpenter_refuses(extra: dict[str, Any], expected: str):
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(lambda: karpenter_on(cluster(), **extra), monitor=monitor)
    assert expected in str(err.value)
    assert not [r for r in monitor.registrations if "karpenter" in r.name], "registered before refusing"


def test_a_value_the_karpenter_chart_does_not_read_is_warned_not_refused():
    """Helm passes an unknown value on and the chart ignores it: no effect, so a warning (issue 28)."""
    monitor = RecordingMonitor(ProgramMocks())
    run(lambda: karpenter_on(cluster(), values={"replica": 1}), monitor=monitor)
    assert [r for r in monitor.registrations if "karpenter" in r.name]


def test_karpenter_needs_the_credentials_of_its_destroy_wait_or_none():
    def program() -> None:
        aks = kubeconfig_cluster()
        Karpenter(
            "karpenter",
            KarpenterArgs(
                cluster_id=(
                    "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks"
                ),
                location="eastus2",
                node_resource_group="MC_rg_aks_eastus2",
                oidc_issuer_url="https://oidc.example/aks/",
                api_server_endpoint="https://aks-12345678.hcp.eastus2.azmk8s.io:443",
                kubelet_identity=KubeletIdentityArgs(client_id="c", resource_id="r"),
                network=KarpenterNetworkArgs(
                    subnet_id="/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/n",
                    vnet_guid="g",
                    plugin="azure",
                    plugin_mode="overlay",
                    policy="cilium",
                    dataplane="cilium",
                ),
                ssh_public_key="ssh-rsa AAAAmine",
                wait_for_nodeclaims_on_delete=False,
            ),
            opts=pulumi.ResourceOptions(provider=pulumi.ProviderResource("kubernetes", "plain")),
        )
        del aks

    ev = run(program)
    assert ev.of_type("pulumi-python:dynamic/kaito-aks:NodeClaimsGone") == []
    assert ev.of_type("pulumi-python:dynamic/kaito-aks:CrdsAdopted") == []  # no credentials: nothing handed over
    assert ev.of_type("pulumi-python:dynamic/kaito-aks:SshPublicKey") == []  # given: none made
    env = {e["name"]: e.get("value") for e in ev.named("karpenter", RELEASE).inputs["values"]["controller"]["env"]}
    assert env["SSH_PUBLIC_KEY"] == "ssh-rsa AAAAmine"
    assert env["AZURE_SUBSCRIPTION_ID"] == "s"  # the cluster's subscription, from its resource id


def test_a_short_api_server_name_stops_karpenter_before_it_is_installed():
    """Karpenter 1.12 takes the cluster id from the API server name's first 33 characters."""
    monitor = RecordingMonitor(ProgramMocks())
    short = api_server_fqdn("a", "eastus2")  # a-<8 hex>.hcp.eastus2.azmk8s.io: 32 characters
    with pytest.raises(Exception, match=re.escape(f"the API server's host name '{short}' is shorter than 33")):
        run(lambda: karpenter_on(cluster(name="a")), monitor=monitor)
    # the controller is not installed (its CRDs, inert without it, may be)
    assert not [r for r in monitor.registrations if r.type == RELEASE and r.urn.endswith("::karpenter")]
    run(lambda: karpenter_on(cluster()))


def test_a_cluster_in_aks_managed_vnet_stops_karpenter_before_it_is_installed():
    """A cluster made without a node subnet (or before this program offered one) reports none."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(
        Exception, match="Karpenter must be given the subnet of the cluster's nodes, and this cluster's"
    ):
        run(lambda: karpenter_on(cluster(node_subnet=None)), monitor=monitor)
    assert not [r for r in monitor.registrations if r.type == RELEASE and r.urn.endswith("::karpenter")]


# ---------------------------------------------------------------- the bootstrap token and the SSH key


def test_the_bootstrap_token_is_random_in_kubernetes_format_and_kept_until_rotated():
    provider = BootstrapTokenProvider()
    made = [provider.create({"rotation": 0, "lifetimeDays": 30}) for _ in range(3)]
    for result in made:
        outs = result.outs or {}
        assert re.fullmatch(r"[a-z0-9]{6}", outs["token_id"])
        assert re.fullmatch(r"[a-z0-9]{16}", outs["token_secret"])
        assert result.id == f"bootstrap-token-{outs['token_id']}"
    assert len({(r.outs or {})["token_secret"] for r in made}) == 3
    outs = made[0].outs or {}
    assert provider.diff("id", outs, {"rotation": 0, "lifetimeDays": 30}).changes is False
    rotated = provider.diff("id", outs, {"rotation": 1, "lifetimeDays": 30})
    assert rotated.changes is True
    assert rotated.replaces == ["rotation"]
    relived = provider.diff("id", outs, {"rotation": 0, "lifetimeDays": 7})
    assert relived.replaces == ["lifetimeDays"]


def test_the_bootstrap_token_expires_and_is_renewed_by_the_first_up_after_half_its_life(
    monkeypatch: pytest.MonkeyPatch,
):
    clock = [datetime(2026, 12, 1, 9, 30, 15, 123, tzinfo=UTC)]
    monkeypatch.setattr(node_bootstrap, "now", lambda: clock[0])
    provider = BootstrapTokenProvider()
    outs = provider.create({"rotation": 0, "lifetimeDays": 30}).outs or {}
    # RFC 3339 as the bootstrap-token authenticator parses it (time.RFC3339)
    assert (outs["issued"], outs["expires"]) == ("2026-12-01T09:30:15Z", "2026-12-31T09:30:15Z")
    news = {"rotation": 0, "lifetimeDays": 30}
    clock[0] += timedelta(days=14, hours=23)
    assert provider.diff("id", outs, news).changes is False  # a day before half its life: kept
    clock[0] += timedelta(hours=1)
    due = provider.diff("id", outs, news)  # half its life: replaced (create first, then delete)
    assert (due.changes, due.replaces, due.delete_before_replace) == (True, ["expires"], False)
    assert (provider.create(news).outs or {})["expires"] == "2027-01-15T09:30:15Z"


def test_a_token_made_before_tokens_expired_is_kept_until_a_lifetime_is_given():
    """What a stack deployed before issue 37 holds in its state: kept while its lifetime is None
    (the stack's generations 1 and 2, warned), replaced once when a lifetime is given."""
    provider = BootstrapTokenProvider()
    olds = {"rotation": 0, "token_id": "abcdef", "token_secret": "0123456789abcdef"}
    forever = {"rotation": 0, "lifetimeDays": None, "token_id": None, "token_secret": None}
    assert provider.diff("bootstrap-token-abcdef", olds, forever).changes is False
    news = {**forever, "lifetimeDays": 30}
    diff = provider.diff("bootstrap-token-abcdef", olds, news)
    assert (diff.changes, diff.replaces, diff.delete_before_replace) == (True, ["lifetimeDays"], False)
    outs = provider.create(news).outs or {}
    assert outs["token_id"] != "abcdef"
    assert provider.diff("bootstrap-token-x", outs, news).changes is False
    never = provider.create(forever).outs or {}
    assert (never["lifetimeDays"], never["expires"]) == (None, "")


def test_the_bootstrap_tokens_secret_and_bindings():
    def program() -> None:
        aks = kubeconfig_cluster()
        NodeBootstrapToken(
            "join",
            NodeBootstrapTokenArgs(group="system:bootstrappers:mine"),
            opts=pulumi.ResourceOptions(provider=aks.provider),
        )

    ev = run(program)
    secret = ev.named("join", "kubernetes:core/v1:Secret")
    assert secret.inputs["type"] == "bootstrap.kubernetes.io/token"
    assert secret.inputs["metadata"]["namespace"] == "kube-system"
    data = reveal(secret.inputs["stringData"])
    assert data["usage-bootstrap-authentication"] == "true"
    assert "usage-bootstrap-signing" not in data  # authentication only
    assert data["expiration"] == AFTER_UP  # the token's expiry, made at `pulumi up`
    assert data["auth-extra-groups"] == "system:bootstrappers:mine"
    bindings = {
        r.inputs["roleRef"]["name"]: r for r in ev.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    }
    assert set(bindings) == {
        "system:node-bootstrapper",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    }
    for binding in bindings.values():
        assert binding.inputs["subjects"] == [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers:mine"}
        ]
    token = ev.named("join-token", "pulumi-python:dynamic/kaito-aks:BootstrapToken")
    assert token.options["additionalSecretOutputs"] == ["token_secret"]
    with pytest.raises(InvalidArgsError) as err:
        run(
            lambda: NodeBootstrapToken(
                "j",
                NodeBootstrapTokenArgs(group="admins"),
                opts=pulumi.ResourceOptions(provider=kubeconfig_cluster().provider),
            )
        )
    assert "args.group: 'admins' is not a group of bootstrap-token holders (system:bootstrappers:, then " in str(
        err.value
    )


def test_the_ssh_key_is_a_real_rsa_4096_public_key_and_nothing_else():
    result = SshPublicKeyProvider().create({})
    assert set(result.outs or {}) == {"public_key_openssh"}  # no private key in state
    key = (result.outs or {})["public_key_openssh"]
    assert key.startswith("ssh-rsa AAAA")
    parsed = serialization.load_ssh_public_key(key.encode())
    assert isinstance(parsed, rsa.RSAPublicKey)
    assert parsed.key_size == 4096
    assert openssh_public_key(2048) != openssh_public_key(2048)
    assert SshPublicKeyProvider().diff("id", {"public_key_openssh": key}, {"public_key_openssh": None}).changes is False


# ---------------------------------------------------------------- destroy


def test_the_destroy_wait_in_karpenter_mode_looks_for_the_nodeclaims_of_kaitos_nodepools():
    labelled = {
        "items": [{"metadata": {"name": "kaito012-phi-x7k2q-abcde", "labels": {KARPENTER_NODECLAIMS: "phi-x7k2q"}}}]
    }
    cluster_ = NodeClaims(labelled, labelled, {"items": []})
    wait_until_gone(
        cluster_,
        600,
        selector=KARPENTER_NODECLAIMS,
        provisioner="Karpenter",
        sleep=cluster_.sleep,
        clock=cluster_.clock,  # type: ignore[arg-type]
    )
    assert cluster_.queries[0] == {"labelSelector": "karpenter.kaito.sh/workspace-name"}
    stuck = NodeClaims(labelled)
    with pytest.raises(RuntimeError) as err:
        wait_until_gone(
            stuck,
            60,
            selector=KARPENTER_NODECLAIMS,
            provisioner="Karpenter",
            sleep=stuck.sleep,
            clock=stuck.clock,  # type: ignore[arg-type]
        )
    assert str(err.value).startswith(
        "KAITO's NodeClaims kaito012-phi-x7k2q-abcde still exist, so Karpenter is not removed yet (their VMs would stay)"
    )


# ---------------------------------------------------------------- KAITO 0.12's GPUs


@pytest.mark.parametrize(
    ("size", "nearest"),
    [
        ("Standard_NC4as_T4_v3", "Standard_NV36ads_A10_v5"),
        ("Standard_NC8as_T4_v3", "Standard_NV36ads_A10_v5"),
        ("Standard_NC16as_T4_v3", "Standard_NV36ads_A10_v5"),
        ("Standard_NC64as_T4_v3", "Standard_NC24ads_A100_v4"),  # 4 x 16 GiB: one 80 GiB A100
        ("Standard_NV12s_v3", "Standard_NV36ads_A10_v5"),
        ("Standard_NV24s_v3", "Standard_NV36ads_A10_v5"),
        ("Standard_NV48s_v3", "Standard_NV72ads_A10_v5"),
        ("Standard_NC24rs_v3", "Standard_NC24ads_A100_v4"),  # V100, gone since 0.9, below 8.0 too
    ],
)
def test_kaito_0_12_refuses_gpus_below_compute_capability_8_with_the_nearest_size(size: str, nearest: str):
    why = catalog.dropped_sku(size, "0.12", "0.12.0")
    assert why is not None
    sku = catalog.all_gpu_skus()[size]
    assert (
        f"KAITO 0.12.0 no longer supports {sku.gpu_model} ({size}): its SKU table keeps only GPUs of CUDA compute "
        in why
    )
    assert "capability 8.0 or newer (KAITO v0.12.0 pkg/sku/azure_sku_handler.go:19-20)" in why
    assert f"is {sku.compute_capability}; the nearest size it takes: {nearest} (" in why
    taken = catalog.gpu_skus("0.12")[nearest]
    assert taken.gpu_mem_gib >= sku.gpu_mem_gib
    assert (taken.compute_capability or 0) >= 8.0
    assert catalog.dropped_sku(nearest, "0.12", "0.12.0") is None


# ---------------------------------------------------------------- for the long run (issue 37)


def test_the_controller_has_upstreams_requests_and_limits_and_its_crds_come_from_the_crd_chart():
    ev = run(lambda: karpenter_on(cluster()))
    release = ev.named("karpenter", RELEASE)
    # Karpenter's README L177-180 and KAITO's Makefile L520-523: 1 CPU, 1 GiB, requests = limits
    resources = release.inputs["values"]["controller"]["resources"]
    assert resources == {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    assert release.inputs["skipCrds"] is True  # the chart's crds/ folder, which Helm never upgrades
    crds = ev.named("karpenter-crds", RELEASE)
    assert (crds.inputs["chart"], crds.inputs["version"]) == (
        "oci://mcr.microsoft.com/aks/karpenter/karpenter-crd",
        "1.12.0",
    )
    assert (crds.inputs["name"], crds.inputs["namespace"]) == ("karpenter-crd", "karpenter")
    assert crds.inputs["values"] == {}
    assert crds.options["retainOnDelete"] is True  # destroy leaves the CRDs, as the crds/ folder did
    assert crds.urn in release.dependencies  # the CRDs before the controller
    adopted = ev.named("karpenter-crds/adopted", "pulumi-python:dynamic/kaito-aks:CrdsAdopted")
    assert adopted.urn in crds.dependencies  # handed over before the chart is installed
    assert adopted.inputs["crds"] == catalog.karpenter_charts()["1.12.0"].crds
    assert (adopted.inputs["release"], adopted.inputs["releaseNamespace"]) == ("karpenter-crd", "karpenter")
    assert isinstance(adopted.inputs["kubeconfig"], Secret)
    assert adopted.options["additionalSecretOutputs"] == ["kubeconfig"]


def test_a_vnet_guid_not_given_is_read_from_the_subnets_vnet():
    """Karpenter reads it itself otherwise, with a role that cannot, and exits (operator.go L133-137)."""
    calls: list[dict[str, Any]] = []

    class Mocks(ProgramMocks):
        def call(self, args: Any) -> dict[str, Any]:
            if args.token == "azure-native:network:getVirtualNetwork":
                calls.append(dict(args.args))
                return {"name": args.args["virtualNetworkName"], "resourceGuid": "11111111-2222-3333-4444-555555555555"}
            return super().call(args)

    subnet = "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hub/subnets/aks"

    def program(guid: str) -> None:
        aks = cluster()
        args = karpenter_cluster_args(aks)
        args["network"] = KarpenterNetworkArgs(
            subnet_id=subnet, vnet_guid=guid, plugin="azure", plugin_mode="overlay", policy="cilium", dataplane="cilium"
        )
        Karpenter("karpenter", KarpenterArgs(**args), opts=pulumi.ResourceOptions(providers=[aks.provider]))

    def vnet_guid(ev: Any) -> str:
        env = ev.named("karpenter", RELEASE).inputs["values"]["controller"]["env"]
        return next(e["value"] for e in env if e["name"] == "VNET_GUID")

    ev = run(lambda: program(""), monitor=RecordingMonitor(Mocks()))
    assert vnet_guid(ev) == "11111111-2222-3333-4444-555555555555"
    assert [c for c in calls if c.get("virtualNetworkName") == "hub"] == [
        {"resourceGroupName": "net", "virtualNetworkName": "hub"}
    ]
    calls.clear()
    ev = run(lambda: program("given"), monitor=RecordingMonitor(Mocks()))
    assert vnet_guid(ev) == "given"
    assert not [c for c in calls if c.get("virtualNetworkName") == "hub"]  # given: not read


def test_a_vnet_without_a_guid_stops_karpenter_before_it_is_installed():
    class Mocks(ProgramMocks):
        def call(self, args: Any) -> dict[str, Any]:
            if args.token == "azure-native:network:getVirtualNetwork":
                return {"name": args.args["virtualNetworkName"]}
            return super().call(args)

    def program() -> None:
        aks = cluster()
        args = karpenter_cluster_args(aks)
        args["network"] = KarpenterNetworkArgs(
            subnet_id="/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hub/subnets/a",
            vnet_guid="",
            plugin="azure",
            plugin_mode="overlay",
            policy="cilium",
            dataplane="cilium",
        )
        Karpenter("karpenter", KarpenterArgs(**args), opts=pulumi.ResourceOptions(providers=[aks.provider]))

    monitor = RecordingMonitor(Mocks())
    with pytest.raises(Exception, match="reports no resource GUID, which Karpenter needs"):
        run(program, monitor=monitor)
    assert not [r for r in monitor.registrations if r.type == RELEASE and r.urn.endswith("::karpenter")]


def test_the_token_lifetime_reaches_the_token_and_its_expiry_the_outputs():
    ev = run(lambda: karpenter_on(cluster(), bootstrap_token_lifetime_days=10))
    token = ev.named("karpenter-bootstrap-token", "pulumi-python:dynamic/kaito-aks:BootstrapToken")
    assert token.inputs["lifetimeDays"] == 10
    component = ev.component_outputs[next(r.urn for r in ev.resources if r.type == "kaito-aks:index:Karpenter")]
    assert component["bootstrapTokenExpires"] == AFTER_UP


class CrdApi:
    """The CRDs of an API server, as the adoption step reads and patches them."""

    def __init__(self, crds: dict[str, dict[str, Any]]):
        self.crds = crds
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def get(self, path: str, **query: str) -> dict[str, Any]:
        name = path.rsplit("/", 1)[1]
        if name not in self.crds:
            raise KubeApiError(404, f"customresourcedefinitions {name!r} not found")
        return self.crds[name]

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.patches.append((path, body))
        return self.crds[path.rsplit("/", 1)[1]]


def test_crds_an_earlier_install_left_are_handed_to_the_crd_chart_and_nothing_else_is_touched():
    owned = {
        "annotations": {RELEASE_NAME: "karpenter-crd", RELEASE_NAMESPACE: "karpenter"},
        "labels": {MANAGED_BY: "Helm"},
    }
    api = CrdApi(
        {
            "nodepools.karpenter.sh": {"metadata": {"name": "nodepools.karpenter.sh"}},  # from crds/: no owner
            "nodeclaims.karpenter.sh": {"metadata": {"name": "nodeclaims.karpenter.sh", **owned}},  # ours already
        }
    )
    names = catalog.karpenter_charts()["1.12.0"].crds
    check = adopt(api, names, "karpenter-crd", "karpenter")
    assert check.done
    assert check.found == {"adopted": ["nodepools.karpenter.sh"]}
    # a merge patch of Helm's three ownership keys, nothing else (absent CRDs: the chart creates them)
    assert api.patches == [
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.karpenter.sh",
            {
                "metadata": {
                    "labels": {"app.kubernetes.io/managed-by": "Helm"},
                    "annotations": {
                        "meta.helm.sh/release-name": "karpenter-crd",
                        "meta.helm.sh/release-namespace": "karpenter",
                    },
                }
            },
        )
    ]
    other = CrdApi(
        {
            "nodepools.karpenter.sh": {
                "metadata": {"annotations": {RELEASE_NAME: "aks-managed-karpenter", RELEASE_NAMESPACE: "kube-system"}}
            }
        }
    )
    refused_ = adopt(other, names, "karpenter-crd", "karpenter")
    assert refused_.fatal
    assert not other.patches
    assert refused_.waiting_for == (
        "the CustomResourceDefinition nodepools.karpenter.sh belongs to the Helm release aks-managed-karpenter in "
        "kube-system"
    )
