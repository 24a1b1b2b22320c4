"""Each component built alone, as a user's program and test would build it (`from kaito_aks import
...`, `kaito_aks.testing.run`): what it registers, and every misuse refused, by arg, before
anything is registered."""

from __future__ import annotations

import pickle
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pytest

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    AutoscaleArgs,
    GpuNodePool,
    GpuNodePoolArgs,
    GpuOperator,
    GpuOperatorArgs,
    InvalidArgsError,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    LabelSelectorArgs,
    NodeGroup,
)
from kaito_aks.nodes import SPOT_TAINT
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, reveal, run

CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
RELEASE = "kubernetes:helm.sh/v3:Release"
WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
A100 = "Standard_NC24ads_A100_v4"
A10 = "Standard_NV36ads_A10_v5"
KUBECONFIG = MOCK_KUBECONFIG.format(cluster="dev")  # a kubeconfig with a cluster (and context) dev


def aks() -> AksCluster:
    return AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2"))


def pool(cluster: AksCluster, name: str = "gpu", **kw: object) -> GpuNodePool:
    return GpuNodePool(
        name,
        GpuNodePoolArgs(
            cluster_name=cluster.cluster_name, resource_group_name=cluster.resource_group_name, vm_size=A100, **kw
        ),  # type: ignore[arg-type]
    )


def on_cluster() -> pulumi.ResourceOptions:
    """Through an explicit Kubernetes provider, one that carries no credentials for the waits."""
    return pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(KUBECONFIG)))


def refused(program: object) -> str:
    """The InvalidArgsError a program raises, after checking nothing was registered."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)  # type: ignore[arg-type]
    # nothing of the component: only the providers the program made first
    assert [r for r in monitor.registrations if not r.type.startswith("pulumi:providers:")] == [], "registered"
    return str(err.value)


# ---------------------------------------------------------------- AKS


def test_a_protected_component_protects_its_children():
    def program() -> None:
        protected = pulumi.ResourceOptions(protect=True)
        cluster = AksCluster(
            "cluster", AksClusterArgs(resource_group="rg", name="aks", location="eastus2"), opts=protected
        )
        GpuNodePool(
            "gpu",
            GpuNodePoolArgs(
                cluster_name=cluster.cluster_name, resource_group_name=cluster.resource_group_name, vm_size=A100
            ),
            opts=protected,
        )

    ev = run(program)
    assert ev.named("cluster", CLUSTER).options["protect"] is True
    assert ev.named("gpu", POOL).options["protect"] is True


def test_the_cluster_leaves_separately_managed_pools_alone_and_reports_its_identity_facts():
    ev = run(aks)
    assert sorted(ev.named("c", CLUSTER).options["ignoreChanges"]) == [
        "addonProfiles.azureKeyvaultSecretsProvider",  # (a tier and add-on the args do not set: left alone)
        "agentPoolProfiles",
        "networkProfile.networkDataplane",
        "networkProfile.networkPolicy",
        "sku",
    ]
    outputs = ev.component_outputs[ev.named("c", "kaito-aks:index:AksCluster").urn]
    assert outputs["oidcIssuerUrl"] == "https://oidc.example/c/"  # what Azure reports for the cluster
    assert outputs["nodeResourceGroup"] == "MC_rg_aks_eastus2"


def test_cluster_names_azure_refuses_are_named():
    message = refused(lambda: AksCluster("c", AksClusterArgs(resource_group="rg\x01", name="phi--")))
    assert "args.resource_group: contains control characters" in message
    assert "args.name: 'phi--' is not an AKS cluster name" in message
    message = refused(lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="phi_4")))
    assert "args.name: 'phi_4' is not usable as the cluster's DNS prefix" in message


def test_a_gpu_pool_carries_the_label_default_model_selectors_match_and_describes_its_nodes():
    nodes: list[NodeGroup] = []

    def program() -> None:
        p = pool(aks(), labels={"team": "ml"}, autoscale=AutoscaleArgs(min=1, max=3), spot=True)
        nodes.append(p.node_group)

    ev = run(program)
    assert ev.named("gpu", POOL).inputs["nodeLabels"] == {"nvidia.com/gpu.present": "true", "team": "ml"}
    assert ev.named("gpu", POOL).inputs["nodeTaints"] == ["sku=gpu:NoSchedule", SPOT_TAINT]
    group = nodes[0]
    assert (group.min_nodes, group.max_nodes, group.spot) == (1, 3, True)
    assert group.labels["agentpool"] == "gpu"
    assert group.labels["kubernetes.azure.com/scalesetpriority"] == "spot"


def test_two_clusters_in_one_program_each_have_a_pool_named_gpu():
    def program() -> None:
        for region in ("east", "west"):
            cluster = AksCluster(region, AksClusterArgs(resource_group=f"rg-{region}", name=f"aks-{region}"))
            GpuNodePool(
                f"{region}-gpu",
                GpuNodePoolArgs(
                    cluster_name=cluster.cluster_name,
                    resource_group_name=cluster.resource_group_name,
                    vm_size=A100,
                    name="gpu",
                ),
            )

    ev = run(program)
    pools = [ev.named(f"{r}-gpu", POOL) for r in ("east", "west")]
    assert [p.inputs["agentPoolName"] for p in pools] == ["gpu", "gpu"]
    assert [p.inputs["resourceName"] for p in pools] == ["aks-east", "aks-west"]


def test_a_pool_refuses_what_aks_and_kaito_cannot_use_naming_each_arg():
    message = refused(
        lambda: GpuNodePool(
            "gpu",
            GpuNodePoolArgs(
                cluster_name="aks",
                resource_group_name="rg",
                vm_size="Standard_NC24ads_A100",
                count=2,
                autoscale=AutoscaleArgs(min=3, max=2),
                taints=["nope"],
                labels={"bad key!": "x"},
                os_disk_size_gb=10_000_000,
            ),
        )
    )
    for expected in (
        "args.vm_size: Standard_NC24ads_A100 is not a GPU VM size KAITO knows; did you mean Standard_NC24ads_A100_v4",
        "args.taints[0]: 'nope' is not a taint",
        "args.labels: label key 'bad key!'",
        "args.os_disk_size_gb: must be from 30 to 2048, not 10000000",
        "args.autoscale: give count or autoscale, not both",
        "args.autoscale: min (3) is greater than max (2)",
    ):
        assert expected in message


def test_a_wrong_shape_is_named_not_an_attribute_error_deep_inside():
    message = refused(lambda: GpuOperator("g", GpuOperatorArgs(node_groups=["a10"])))  # type: ignore[list-item]
    assert "args.node_groups[0]: must be a NodeGroup (a map of its args), not 'a10'" in message
    message = refused(lambda: GpuOperator("g", "v25.3.4"))  # type: ignore[arg-type]
    assert "must be a GpuOperatorArgs, not 'v25.3.4'" in message
    # a mapping of the args (as other languages send them) is checked the same way
    message = refused(lambda: GpuOperator("g", {"version": "v25.3.4", "nodeGroups": []}))  # type: ignore[arg-type]
    assert "args.nodeGroups: unknown key; did you mean node_groups?" in message


# ---------------------------------------------------------------- operators


def test_kaito_operator_computes_its_chart_values():
    ev = run(
        lambda: KaitoOperator(
            "kaito",
            KaitoOperatorArgs(version="0.8.1", gpu_discovery="external", feature_gates={"vLLM": True}),
            opts=on_cluster(),
        )
    )
    values = ev.named("kaito", RELEASE).inputs["values"]
    assert values["featureGates"]["disableNodeAutoProvisioning"] is True  # BYO unless asked
    assert values["featureGates"]["vLLM"] is True
    assert values["nvidiaDevicePlugin"] == {"enabled": False}  # the GPU Operator runs it
    assert values["gpu-feature-discovery"] == {"nfd": {"enabled": False}, "gfd": {"enabled": False}}


def test_kaito_operator_takes_the_cluster_name_from_another_resource():
    """The chart values held an Output and were deep-copied: '__getstate__ can only be called
    during serialization'."""

    def program() -> None:
        cluster = aks()
        KaitoOperator(
            "kaito",
            KaitoOperatorArgs(version="0.8.1", cluster_name=cluster.cluster_name),
            opts=pulumi.ResourceOptions(provider=cluster.provider),
        )

    ev = run(program)
    assert ev.named("kaito", RELEASE).inputs["values"]["clusterName"] == "aks"


def test_kaito_operator_refuses_an_unknown_gate_before_registering_anything():
    message = refused(
        lambda: KaitoOperator("kaito", KaitoOperatorArgs(version="0.8.1", feature_gates={"noSuchGate": True}))
    )
    assert "args.feature_gates.noSuchGate: unknown feature gate for KAITO 0.8.1" in message


def test_kaito_operators_bundled_discovery_tolerates_the_pools_taints_spot_included():
    spot = NodeGroup(name="spot", vm_size=A100, taints=["team=ml:NoSchedule"], spot=True, gpu_driver="aks")
    ev = run(lambda: KaitoOperator("kaito", KaitoOperatorArgs(version="0.12.0", node_groups=[spot]), opts=on_cluster()))
    values = ev.named("kaito", RELEASE).inputs["values"]
    tolerations = values["gpu-feature-discovery"]["tolerations"]
    assert {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"} in tolerations
    assert {
        "key": "kubernetes.azure.com/scalesetpriority",
        "operator": "Equal",
        "value": "spot",
        "effect": "NoSchedule",
    } in tolerations


def test_gpu_operator_tolerates_the_pools_it_is_given():
    def program() -> None:
        cluster = aks()
        spot = pool(cluster, "spot", spot=True, taints=["team=ml:NoSchedule"])
        GpuOperator(
            "gpu-operator",
            GpuOperatorArgs(node_groups=[spot.node_group]),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[spot]),
        )

    ev = run(program)
    release = ev.named("gpu-operator", RELEASE)
    tolerations = release.inputs["values"]["daemonsets"]["tolerations"]
    assert {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"} in tolerations
    assert any(t["key"] == SPOT_TAINT.split("=")[0] for t in tolerations)
    assert ev.named("spot", POOL).urn in release.dependencies


def test_the_operators_refuse_what_their_charts_cannot_do():
    spot = NodeGroup(name="spot", vm_size=A100, spot=True)  # its driver left to a GPU Operator nothing installs
    message = refused(lambda: KaitoOperator("kaito", KaitoOperatorArgs(version="0.8.1", node_groups=[spot])))
    assert (
        "args.node_groups[0]: KAITO admits this, but pool spot leaves its GPU driver to the NVIDIA GPU Operator"
        in message
    )
    # a spot pool KAITO 0.8's presets cannot use is said (a model that selects it is refused)
    assert "args.node_groups[0].spot" not in message
    mixed = [NodeGroup(name="a", vm_size=A100, gpu_driver="aks"), NodeGroup(name="b", vm_size=A100)]
    message = refused(lambda: GpuOperator("gpu-operator", GpuOperatorArgs(node_groups=mixed)))
    assert "args.node_groups: every GPU pool needs the same gpu_driver" in message


# ---------------------------------------------------------------- models


def kubeconfig_cluster() -> KubeconfigCluster:
    return KubeconfigCluster("cluster", KubeconfigClusterArgs(kubeconfig=KUBECONFIG, context="dev"))


def test_a_model_serves_replicas_behind_one_endpoint_with_the_providers_credentials():
    def program() -> None:
        cluster = kubeconfig_cluster()
        KaitoModel(
            "phi",
            KaitoModelArgs(kaito_version="0.8.1", model="phi-4-mini-instruct", replicas=2),
            opts=pulumi.ResourceOptions(provider=cluster.provider),
        )

    ev = run(program)
    workspaces = ev.of_type(WORKSPACE)
    assert sorted(r.inputs["metadata"]["name"] for r in workspaces) == ["phi-0", "phi-1"]
    outputs = ev.component_outputs[ev.named("phi", "kaito-aks:index:KaitoModel").urn]
    assert outputs["endpoint"] == "http://phi.default.svc.cluster.local/v1/chat/completions"
    assert outputs["model"] == "phi-4-mini-instruct"
    wait = ev.named("phi/ready", "pulumi-python:dynamic/kaito-aks:ModelReady")
    assert reveal(wait.inputs["kubeconfig"]) == KUBECONFIG  # the provider's, kept secret
    assert wait.inputs["context"] == "dev"


def test_a_model_with_no_credentials_is_refused_rather_than_reading_the_local_kubeconfig():
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(
            lambda: KaitoModel(
                "phi", KaitoModelArgs(kaito_version="0.8.1", model="phi-4-mini-instruct"), opts=on_cluster()
            ),
            monitor=monitor,
        )
    assert "args.kubeconfig: the waits read the cluster and have no credentials" in str(err.value)
    assert [r.type for r in monitor.registrations] == ["pulumi:providers:kubernetes"]  # only the plain provider
    quiet = KaitoModelArgs(
        kaito_version="0.8.1", model="phi-4-mini-instruct", wait_for_gpu_nodes=False, wait_for_ready=False
    )
    ev = run(lambda: KaitoModel("phi", quiet, opts=on_cluster()))
    assert len(ev.of_type(WORKSPACE)) == 1


def test_a_kubeconfig_cluster_refuses_a_path_that_is_no_kubeconfig(tmp_path: Path):
    for path, why in (
        ("", "is not a path (it is empty)"),
        (str(tmp_path), "is not a file"),
        (str(tmp_path / "nope"), "does not exist"),
        ("/dev/null", "is not a file"),
    ):
        message = refused(lambda path=path: KubeconfigCluster("c", KubeconfigClusterArgs(path=path)))
        assert f"args.path: {path!r} {why}" in message or f"args.path: {path} {why}" in message, message


def test_a_model_reports_every_bad_arg_at_once():
    shapes = {
        "kaito_version": "0.8.1",
        "model": "phi-4-mini-instruct",
        "replicas": 0,
        "compute": "tpu",
        "preferred_nodes": ["n"],
    }
    message = refused(lambda: KaitoModel("phi", shapes))  # type: ignore[arg-type]
    assert "args.compute: must be one of gpu, cpu, not 'tpu'" in message
    assert "args.replicas: must be from 1 to 1000, not 0" in message
    assert "args.preferred_nodes: removed in KAITO 0.8; use label_selector" in message
    rules = KaitoModelArgs(
        kaito_version="0.8.1",
        name="Phi",
        model="phi-4-mini-instruct",
        adapters=[{"name": "a", "image": "x", "strength": 0.5}, {"name": "a", "image": "y"}],  # type: ignore[list-item]
        wait_for_gpu_nodes=False,
        wait_for_ready=False,
    )
    message = refused(lambda: KaitoModel("phi", rules))
    assert "args.name: 'Phi' is not a DNS-1123 label" in message
    assert "args.adapters[0].strength: vLLM does not support adapter strength" in message
    assert "args.adapters[1].name: two adapters are named 'a' (KAITO: \"Duplicate adapter source name\")" in message


def test_a_model_given_the_pools_checks_kaitos_sizing_and_its_selector_at_preview():
    a10 = NodeGroup(
        name="a10", vm_size=A10, labels={"agentpool": "a10", "nvidia.com/gpu.present": "true"}, gpu_driver="aks"
    )
    quiet = {"wait_for_gpu_nodes": False, "wait_for_ready": False}
    message = refused(
        lambda: KaitoModel(
            "llama",
            KaitoModelArgs(
                kaito_version="0.8.1", model="llama-3.3-70b-instruct", hf_token="t", node_groups=[a10], **quiet
            ),
        )  # type: ignore[arg-type]
    )
    assert "args.model: llama-3.3-70b-instruct needs" in message or "admission webhook would deny it" in message
    message = refused(
        lambda: KaitoModel(
            "phi",
            KaitoModelArgs(
                kaito_version="0.8.1",
                model="phi-4-mini-instruct",
                label_selector=LabelSelectorArgs(match_labels={"agentpool": "h100"}),
                node_groups=[a10],
                **quiet,  # type: ignore[arg-type]
            ),
        )
    )
    assert "args.label_selector: matches no GPU node pool" in message
    ev = run(
        lambda: KaitoModel(
            "phi",
            KaitoModelArgs(kaito_version="0.8.1", model="phi-4-mini-instruct", node_groups=[a10], **quiet),  # type: ignore[arg-type]
            opts=on_cluster(),
        )
    )
    assert len(ev.of_type(WORKSPACE)) == 1


def test_an_unknown_kaito_version_is_named_with_the_supported_ones():
    message = refused(
        lambda: KaitoModel(
            "phi",
            KaitoModelArgs(
                kaito_version="0.9.9", model="phi-4-mini-instruct", wait_for_gpu_nodes=False, wait_for_ready=False
            ),
        )
    )
    assert (
        "args.kaito_version: KAITO 0.9.9 is not supported; use one of: 0.6.0 (the AKS add-on's), 0.8.0, 0.8.1, 0.11.0, 0.12.0"
        in message
    )


# ---------------------------------------------------------------- the package


def test_stacks_deployed_before_the_waits_moved_still_find_their_providers():
    """A wait's provider is pickled into the state by module path (`kaito_aks.gpu_nodes` until
    0.2.0); Pulumi reads it back to refresh or delete the wait."""
    old = b"\x80\x04\x95/\x00\x00\x00\x00\x00\x00\x00\x8c\x13kaito_aks.gpu_nodes\x94\x8c\x10GpuNodesProvider\x94\x93\x94)\x81\x94."
    provider = pickle.loads(old)
    assert type(provider).__module__ == "kaito_aks.waits.gpu_nodes"
    ready = b"\x80\x04\x953\x00\x00\x00\x00\x00\x00\x00\x8c\x15kaito_aks.model_ready\x94\x8c\x12ModelReadyProvider\x94\x93\x94)\x81\x94."
    assert type(pickle.loads(ready)).__name__ == "ModelReadyProvider"


def test_help_shows_every_arg_with_its_default():
    doc = KaitoModelArgs.__doc__ or ""
    assert "replicas (whole number, 1-1000, default 1):" in doc
    assert "Serving instances behind the one endpoint." in doc
    assert "kaito_version (text, required):" in doc


def test_help_shows_bounds_and_nested_types_as_the_schema_does():
    doc = KaitoModelArgs.__doc__ or ""
    assert "adapters (list of AdapterArgs, at most 10):" in doc
    assert "label_selector (LabelSelectorArgs):" in doc
    assert "node_groups (list of NodeGroup):" in doc
    assert "gpu_nodes_timeout_minutes (whole number, 1-1440, default 20):" in doc
    assert "count (whole number, 0-1000):" in (GpuNodePoolArgs.__doc__ or "")
