"""Karpenter in the stack: the default of new stacks (kaito-aks:defaults: 2) for KAITO 0.12 in auto
mode, gpu-provisioner for every stack file without the key, the cluster's subnet, the order
(Karpenter, then KAITO, then the models), the node classes, and what contradicts it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kaito_aks import catalog
from kaito_aks.testing import api_server_fqdn
from stacks.cli import main as cli
from stacks.evaluate import reveal
from stacks.load import parse_stack_file
from stacks.stackfile import read_stack_file
from tests.conftest import ROOT, config, errors_of, run, warnings_of
from tests.test_aks import aks
from tests.test_stack_node_provisioning import A100, PHI_AUTO, auto

RELEASE = "kubernetes:helm.sh/v3:Release"
CLUSTER = "azure-native:containerservice:ManagedCluster"
ROLE = "azure-native:authorization:RoleAssignment"
INFERENCE_SET = "kubernetes:kaito.sh/v1beta1:InferenceSet"
NODECLAIMS_GONE = "pulumi-python:dynamic/kaito-aks:NodeClaimsGone"
V12 = {"version": "0.12.0", "nodeProvisioning": "auto"}
KARPENTER_MODE = {**V12, "nodeProvisioner": "karpenter"}


def new(workspaces: list[dict] | None = None, **keys: object) -> dict[str, object]:
    """An auto-mode AKS stack written against the newest defaults."""
    return {**auto(workspaces, **keys), "kaito-aks:defaults": 2}


# ---------------------------------------------------------------- which provisioner, by generation


def test_existing_stack_files_keep_gpu_provisioner():
    """Pulumi.auto.yaml (0.12, auto, no defaults key) is a stack made before generation 2: it must
    run what it ran (its render snapshot is unchanged too)."""
    cfg = parse_stack_file(read_stack_file("auto", ROOT))
    assert cfg.generation == 1
    assert cfg.kaito.node_provisioner == "gpu-provisioner"
    assert cfg.gpu_provisioner is not None
    assert cfg.karpenter is None
    assert cfg.aks_cluster is not None
    assert cfg.aks_cluster.node_subnet is None


def test_the_karpenter_example_stack_is_generation_2_on_karpenter():
    cfg = parse_stack_file(read_stack_file("karpenter", ROOT))
    assert cfg.generation == 2
    assert cfg.kaito.version == "0.12.0"
    assert cfg.kaito.node_provisioner == "karpenter"
    assert cfg.karpenter is not None
    assert cfg.karpenter.version == "1.12.0"
    assert cfg.gpu_provisioner is None


@pytest.mark.parametrize(
    ("stack", "provisioner"),
    [
        (auto(), "gpu-provisioner"),  # generation 1: as before
        (new(), "karpenter"),  # generation 2: KAITO 0.12's recommendation
        (new(kaito={"version": "0.11.0", "nodeProvisioning": "auto"}), "gpu-provisioner"),  # 0.11: both offered
        (new(kaito={"version": "0.8.1", "nodeProvisioning": "auto"}), "gpu-provisioner"),  # 0.8: no Karpenter
        (new(kaito={**V12, "nodeProvisioner": "gpu-provisioner"}), "gpu-provisioner"),  # said: kept
        (new(kaito={**V12, "install": False}), "gpu-provisioner"),  # KAITO installed elsewhere
    ],
)
def test_the_default_provisioner(stack: dict[str, object], provisioner: str):
    ev = run(stack)
    kaito = [r for r in ev.of_type(RELEASE) if r.name == "kaito"]
    names = {r.name for r in ev.of_type(RELEASE)}
    assert ("karpenter" in names) == (provisioner == "karpenter")
    if kaito and stack["kaito-aks:kaito"].get("version", "0.12.0") != "0.8.1":  # type: ignore[union-attr]
        expected = "karpenter" if provisioner == "karpenter" else "azure-gpu-provisioner"
        assert kaito[0].inputs["values"]["nodeProvisioner"] == expected


def test_0_11_takes_karpenter_when_asked():
    ev = run(new(kaito={"version": "0.11.0", "nodeProvisioning": "auto", "nodeProvisioner": "karpenter"}))
    assert ev.named("karpenter", RELEASE).inputs["version"] == "1.12.0"  # KAITO 0.11's pin too
    assert ev.named("kaito", RELEASE).inputs["values"]["nodeProvisioner"] == "karpenter"


# ---------------------------------------------------------------- what a Karpenter stack deploys


def test_karpenter_comes_after_its_identity_and_roles_and_kaito_and_the_models_after_it():
    ev = run(new())
    karpenter = ev.named("karpenter", RELEASE)
    kaito = ev.named("kaito", RELEASE)
    roles = [r for r in ev.of_type(ROLE) if r.name.startswith("karpenter-identity")]
    credential = ev.named("karpenter-identity-federation", "azure-native:managedidentity:FederatedIdentityCredential")
    token = ev.named("karpenter-bootstrap", "kubernetes:core/v1:Secret")
    for before in [*roles, credential, token]:
        assert before.urn in karpenter.dependencies, before.name
    assert karpenter.urn in kaito.dependencies  # KAITO exits if Karpenter does not answer in 120 s
    [inference_set] = ev.of_type(INFERENCE_SET)
    assert karpenter.urn in inference_set.dependencies
    assert kaito.urn in inference_set.dependencies
    gone = ev.named("karpenter/nodeclaims-gone", NODECLAIMS_GONE)
    assert karpenter.urn in gone.dependencies  # deleted before Karpenter, after the Workspaces
    assert gone.urn in inference_set.dependencies
    assert gone.inputs["labelSelector"] == "karpenter.kaito.sh/workspace-name"


def test_karpenters_identity_has_only_the_narrow_built_in_roles():
    ev = run(new())
    roles = catalog.azure_roles()
    by_guid = {v: k for k, v in roles.items()}
    cluster = ev.named("cluster", CLUSTER)
    granted = {}
    for role in ev.of_type(ROLE):
        guid = role.inputs["roleDefinitionId"].rsplit("/", 1)[1]
        granted[role.name] = (by_guid[guid], role.inputs["scope"])
    node_group = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/MC_rg_kaito-test_eastus2"
    subnet = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/"
        "virtualNetworks/kaito-test-vnet/subnets/nodes"
    )
    assert granted == {
        "karpenter-identity-virtual-machine-contributor": ("Virtual Machine Contributor", node_group),
        "karpenter-identity-network-contributor": ("Network Contributor", node_group),
        "karpenter-identity-managed-identity-operator": ("Managed Identity Operator", node_group),
        "karpenter-identity-network-contributor-2": ("Network Contributor", subnet),
        "cluster-subnet-network-contributor": ("Network Contributor", subnet),  # the cluster's own identity
        "cluster-deployer-cluster-admin": (  # who runs `pulumi up`, inside the cluster (issue 29)
            "Azure Kubernetes Service RBAC Cluster Admin",
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
            "Microsoft.ContainerService/managedClusters/kaito-test",
        ),
    }
    assert "Contributor" not in {g[0] for g in granted.values()}
    assert cluster.inputs["agentPoolProfiles"][0]["vnetSubnetID"] == subnet


def test_every_karpenter_value_comes_from_the_cluster_and_its_subnet():
    ev = run(new())
    values = ev.named("karpenter", RELEASE).inputs["values"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in values["controller"]["env"]}
    assert env["CLUSTER_NAME"] == "kaito-test"
    assert env["CLUSTER_ENDPOINT"] == f"https://{api_server_fqdn('kaito-test', 'eastus2')}:443"  # the cluster's FQDN
    assert env["KUBELET_BOOTSTRAP_TOKEN"] == {"secretKeyRef": {"name": "karpenter-bootstrap-token", "key": "token"}}
    assert env["AZURE_NODE_RESOURCE_GROUP"] == "MC_rg_kaito-test_eastus2"
    assert env["ARM_RESOURCE_GROUP"] == "rg"
    assert env["LOCATION"] == "eastus2"
    assert env["VNET_SUBNET_ID"].endswith("/virtualNetworks/kaito-test-vnet/subnets/nodes")
    assert env["NETWORK_PLUGIN"] == "azure"
    assert env["NETWORK_PLUGIN_MODE"] == "overlay"
    assert env["NODE_IDENTITIES"].endswith("/userAssignedIdentities/aks-agentpool")
    assert [e["name"] for e in values["controller"]["env"]] == catalog.karpenter_charts()["1.12.0"].controller_env
    assert values["settings"] == {"featureGates": {"staticCapacity": True}}
    assert values["serviceAccount"]["name"] == "karpenter-sa"
    credential = ev.named("karpenter-identity-federation", "azure-native:managedidentity:FederatedIdentityCredential")
    assert credential.inputs["subject"] == "system:serviceaccount:karpenter:karpenter-sa"
    # the token is a secret all the way: never in the release's values, the bootstrap Secret's data secret
    token = ev.named("karpenter-bootstrap", "kubernetes:core/v1:Secret")
    assert token.inputs["type"] == "bootstrap.kubernetes.io/token"
    assert "[secret]" not in str(values)
    assert reveal(token.inputs["stringData"])["auth-extra-groups"] == "system:bootstrappers:kaito-aks-karpenter"
    assert ev.outputs["karpenter"]["namespace"] == "karpenter"
    assert ev.outputs["charts"]["karpenter"] == {"version": "1.12.0"}


def test_node_classes_reach_kaito_as_its_annotation():
    ev = run(new([{**PHI_AUTO, "nodeClass": "azure-linux"}, {**PHI_AUTO, "name": "phi2", "nodeClass": "ubuntu"}]))
    sets = {r.inputs["metadata"]["name"]: r for r in ev.of_type(INFERENCE_SET)}
    assert sets["phi"].inputs["spec"]["template"]["metadata"]["annotations"] == {
        "kaito.sh/node-class-name": "image-family-azure-linux"
    }
    assert sets["phi2"].inputs["spec"]["template"]["metadata"]["annotations"] == {
        "kaito.sh/node-class-name": "image-family-ubuntu"
    }


# ---------------------------------------------------------------- what contradicts it


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (
            new(kaito={"version": "0.8.1", "nodeProvisioning": "auto", "nodeProvisioner": "karpenter"}),
            "kaito.nodeProvisioner: KAITO 0.8.1 has no Karpenter mode (it came in 0.11); use gpu-provisioner",
        ),
        (
            new(karpenter={"version": "1.12.0"}, kaito={**V12, "nodeProvisioner": "gpu-provisioner"}),
            "karpenter: configures a Karpenter this stack does not install",
        ),
        (
            new(karpenter={"install": True}, kaito={"version": "0.12.0"}),
            "karpenter.install: Karpenter makes KAITO's nodes with kaito.nodeProvisioning auto",
        ),
        (
            new(kaito=KARPENTER_MODE, cluster={"existing": {"resourceGroup": "rg", "name": "kaito-test"}}),
            "kaito.nodeProvisioner: this stack installs Karpenter with a cluster it creates (cluster.aks)",
        ),
        (
            new(kaito=KARPENTER_MODE, gpuProvisioner={"install": True}),
            "gpuProvisioner.install: KAITO in Karpenter mode (kaito.nodeProvisioner karpenter) asks gpu-provisioner",
        ),
        (
            auto(cluster={"aks": {"resourceGroup": "rg", "name": "kaito-test", "nodeSubnet": {}}}),
            "cluster.aks.nodeSubnet: gpu-provisioner creates AKS node pools without a subnet, and AKS keeps all of a "
            'cluster\'s pools in one VNet ("All or none of the agentpools should set vnetsubnetid")',
        ),
        (
            new(kaito=KARPENTER_MODE, karpenter={"values": {"settings": {"featureGates": {"staticCapacity": False}}}}),
            "karpenter.values.settings.featureGates.staticCapacity: KAITO sets each NodePool's replicas",
        ),
        (
            new(kaito=KARPENTER_MODE, karpenter={"values": {"controller": {"env": []}}}),
            "karpenter.values.controller.env: set from the cluster, its subnet, the identity and the bootstrap token",
        ),
        (
            new(kaito=KARPENTER_MODE, karpenter={"version": "1.10.2"}),
            "karpenter.version: Karpenter 1.10.2 is not supported; use 1.12.0",
        ),
        ({**auto(), "kaito-aks:defaults": 4}, "defaults: must be one of 1, 2, 3, not 4"),
        (
            auto([{**PHI_AUTO, "instanceType": "Standard_NC6s_v3"}]),
            "workspaces[0].instanceType: KAITO admits this, but KAITO 0.12.0 no longer supports NVIDIA V100 (Standard_NC6s_v3): its SKU table "
            "keeps only GPUs of CUDA compute capability 8.0 or newer (KAITO v0.12.0 "
            "pkg/sku/azure_sku_handler.go:19-20), and the V100's is 7.0; the nearest size it takes: "
            "Standard_NV36ads_A10_v5 (1x NVIDIA A10, 24 GiB)",
        ),
    ],
)
def test_what_contradicts_karpenter_is_refused_with_the_fix(cfg: dict[str, object], expected: str):
    errors = errors_of(cfg)
    assert any(e.startswith(expected) for e in errors), errors


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (
            auto([{**PHI_AUTO, "nodeClass": "azure-linux"}]),
            "workspaces[0].nodeClass: gpu-provisioner makes AKS agent pools of AKS's own node image",
        ),
        (
            aks(
                workspaces=[{"name": "phi", "model": "phi-4-mini-instruct", "nodeClass": "ubuntu"}],
                kaito={"version": "0.12.0"},
            ),
            "workspaces[0].nodeClass: with bring-your-own nodes KAITO makes no node",
        ),
        (
            aks(
                pools=[],
                workspaces=[{**PHI_AUTO, "nodeClass": "ubuntu"}],
                cluster={"aks": {"resourceGroup": "rg", "name": "kaito-test", "aiToolchainOperator": True}},
            ),
            "workspaces[0].nodeClass: KAITO 0.6.0 has no node classes (they came with its Karpenter mode, in 0.11)",
        ),
    ],
)
def test_a_node_class_where_kaito_makes_no_karpenter_node_pool_is_said_to_do_nothing(
    cfg: dict[str, object], expected: str
):
    """KAITO reads kaito.sh/node-class-name only in Karpenter mode (0.11+): elsewhere the
    annotation is admitted and does nothing, so it is a warning (issue 28's policy)."""
    said = warnings_of(cfg)
    assert any(w.startswith(expected) for w in said), said


def test_karpenter_already_running_on_an_adopted_cluster_is_taken_as_it_is():
    ev = run(
        new(
            kaito=KARPENTER_MODE,
            karpenter={"install": False},
            cluster={"existing": {"resourceGroup": "rg", "name": "kaito-test"}},
            workspaces=[{**PHI_AUTO, "nodeClass": "azure-linux"}],
        )
    )
    assert ev.named("kaito", RELEASE).inputs["values"]["nodeProvisioner"] == "karpenter"
    assert "karpenter" not in {r.name for r in ev.of_type(RELEASE)}


def test_kaito_installed_elsewhere_in_karpenter_mode_takes_node_classes():
    ev = run(
        config(
            [{**PHI_AUTO, "nodeClass": "azure-linux"}],
            kaito={**KARPENTER_MODE, "install": False},
            createNamespaces=False,
        )
    )
    [inference_set] = ev.of_type(INFERENCE_SET)
    assert inference_set.inputs["spec"]["template"]["metadata"]["annotations"] == {
        "kaito.sh/node-class-name": "image-family-azure-linux"
    }
    assert ev.of_type(RELEASE) == []


def test_a_node_subnet_takes_the_byo_gpu_pools_into_it():
    ev = run(aks(cluster={"aks": {"resourceGroup": "rg", "name": "kaito-test", "nodeSubnet": {}}}))
    pool = ev.named("gpu", "azure-native:containerservice:AgentPool")
    assert pool.inputs["vnetSubnetID"].endswith("/virtualNetworks/kaito-test-vnet/subnets/nodes")
    assert "vnetSubnetID" in pool.options["replaceOnChanges"]
    plain = run(aks()).named("gpu", "azure-native:containerservice:AgentPool")
    assert "vnetSubnetID" not in plain.inputs
    assert "vnetSubnetID" not in plain.options["replaceOnChanges"]  # existing pools record what they did


def test_a_first_generation_stack_choosing_karpenter_is_told_its_cluster_must_be_new(tmp_path: Path, capsys):
    stack = auto(kaito=KARPENTER_MODE)
    (tmp_path / "Pulumi.old.yaml").write_text(yaml.safe_dump({"config": stack}))
    (tmp_path / "Pulumi.yaml").write_text("name: kaito-aks\nruntime: python\n")
    assert cli(["validate", "old", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "warning: " in out
    assert "kaito.nodeProvisioner: Karpenter needs the cluster's nodes in a subnet it is given" in out


@pytest.mark.parametrize(
    ("stack", "said"),
    [
        ("auto", "auto: defaults generation 1 (the file has no kaito-aks:defaults): KAITO 0.12's nodes come from "),
        ("karpenter", "karpenter: defaults generation 2: KAITO 0.12's nodes come from Karpenter"),
    ],
)
def test_validate_says_the_generation_where_it_decides(stack: str, said: str, capsys):
    assert cli(["validate", stack, "--dir", str(ROOT)]) == 0
    assert said in capsys.readouterr().out


def test_validate_is_silent_about_the_generation_where_it_decides_nothing(capsys):
    assert cli(["validate", "dev", "--dir", str(ROOT)]) == 0
    assert "defaults generation" not in capsys.readouterr().out
    assert A100  # (the auto stacks' size)
