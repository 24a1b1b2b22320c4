"""Karpenter as a library user builds it: the component on an AksCluster created with a node
subnet, its bootstrap token and SSH key (dynamic resources: their providers called directly),
what it refuses, and the destroy wait in Karpenter mode."""

from __future__ import annotations

import re
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
from kaito_aks.cluster.node_bootstrap import BootstrapTokenProvider
from kaito_aks.problems import InvalidArgsError
from kaito_aks.testing import ProgramMocks, RecordingMonitor, Secret, api_server_fqdn, reveal, run
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
    assert not [r for r in monitor.registrations if r.type == RELEASE]
    run(lambda: karpenter_on(cluster()))


def test_a_cluster_in_aks_managed_vnet_stops_karpenter_before_it_is_installed():
    """A cluster made without a node subnet (or before this program offered one) reports none."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(
        Exception, match="Karpenter must be given the subnet of the cluster's nodes, and this cluster's"
    ):
        run(lambda: karpenter_on(cluster(node_subnet=None)), monitor=monitor)
    assert not [r for r in monitor.registrations if r.type == RELEASE]


# ---------------------------------------------------------------- the bootstrap token and the SSH key


def test_the_bootstrap_token_is_random_in_kubernetes_format_and_kept_until_rotated():
    provider = BootstrapTokenProvider()
    made = [provider.create({"rotation": 0}) for _ in range(3)]
    for result in made:
        outs = result.outs or {}
        assert re.fullmatch(r"[a-z0-9]{6}", outs["token_id"])
        assert re.fullmatch(r"[a-z0-9]{16}", outs["token_secret"])
        assert result.id == f"bootstrap-token-{outs['token_id']}"
    assert len({(r.outs or {})["token_secret"] for r in made}) == 3
    assert provider.diff("id", {"rotation": 0}, {"rotation": 0}).changes is False
    rotated = provider.diff("id", {"rotation": 0}, {"rotation": 1})
    assert rotated.changes is True
    assert rotated.replaces == ["rotation"]


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
    assert "expiration" not in data
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
