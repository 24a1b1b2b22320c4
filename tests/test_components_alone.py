"""Components built directly with their own args, as a user's program or test would (issue #10):
Pulumi details that callers rely on."""

from __future__ import annotations

import gc

import pulumi

from kaito_aks.azure.aks_cluster import AksCluster, AksClusterArgs
from kaito_aks.azure.gpu_node_pool import GpuNodePool, GpuNodePoolArgs, GpuPoolSettings
from stacks.evaluate import evaluate
from tests.conftest import config

CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"


def test_a_protected_component_protects_its_children():
    def program() -> None:
        protected = pulumi.ResourceOptions(protect=True)
        cluster = AksCluster(
            "cluster", AksClusterArgs(resource_group="rg", name="aks", location="eastus2"), opts=protected
        )
        GpuNodePool(
            "gpu", GpuNodePoolArgs(cluster, GpuPoolSettings(vm_size="Standard_NC24ads_A100_v4")), opts=protected
        )

    ev = evaluate({}, program=program)
    assert ev.named("cluster", CLUSTER).options["protect"] is True  # args.protect=False must not win
    assert ev.named("gpu", POOL).options["protect"] is True


def test_the_cluster_leaves_separately_managed_pools_alone():
    ev = evaluate({}, program=lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks")))
    assert ev.named("c", CLUSTER).options["ignoreChanges"] == ["agentPoolProfiles"]


def test_building_the_stack_leaves_the_garbage_collector_alone():
    """An Automation API host calls build_stack in its own long-lived process."""
    from stacks.load import load_stack
    from stacks.program import build_stack

    thresholds = gc.get_threshold()
    seen = []

    def program() -> None:
        build_stack(*load_stack())
        seen.append((gc.get_threshold(), gc.get_freeze_count()))

    evaluate(config([{"name": "phi", "model": "phi-4-mini-instruct"}]), program=program)
    assert seen == [(thresholds, 0)]


# ---------------------------------------------------------------- each component with its own args

RELEASE = "kubernetes:helm.sh/v3:Release"


def test_kaito_operator_computes_its_chart_values():
    from kaito_aks.operators.kaito_operator import KaitoOperator, KaitoOperatorArgs

    ev = evaluate(
        {},
        program=lambda: KaitoOperator(
            "kaito", KaitoOperatorArgs(version="0.8.1", gpu_discovery="external", feature_gates={"vLLM": True})
        ),
    )
    values = ev.named("kaito", RELEASE).inputs["values"]
    assert values["featureGates"]["disableNodeAutoProvisioning"] is True  # BYO unless asked
    assert values["featureGates"]["vLLM"] is True
    assert values["nvidiaDevicePlugin"] == {"enabled": False}  # the GPU Operator runs it
    assert values["gpu-feature-discovery"] == {"nfd": {"enabled": False}, "gfd": {"enabled": False}}


def test_kaito_operator_refuses_an_unknown_gate_before_registering_anything():
    import pytest

    from kaito_aks.operators.kaito_operator import KaitoOperator, KaitoOperatorArgs

    with pytest.raises(ValueError, match=r"args\.featureGates\.noSuchGate: unknown feature gate for KAITO 0\.8\.1"):
        KaitoOperator("kaito", KaitoOperatorArgs(version="0.8.1", feature_gates={"noSuchGate": True}))


def test_gpu_operator_tolerates_the_pools_it_is_given_and_waits_for_them():
    from kaito_aks.operators.gpu_operator import GpuOperator, GpuOperatorArgs
    from kaito_aks.scheduling import SPOT_TAINT

    def program() -> None:
        cluster = AksCluster("c", AksClusterArgs(resource_group="rg", name="aks"))
        spot = GpuNodePool(
            "spot",
            GpuNodePoolArgs(
                cluster, GpuPoolSettings(vm_size="Standard_NC24ads_A100_v4", spot=True, taints=["team=ml:NoSchedule"])
            ),
        )
        GpuOperator("gpu-operator", GpuOperatorArgs(pools=[spot]))

    ev = evaluate({}, program=program)
    release = ev.named("gpu-operator", RELEASE)
    tolerations = release.inputs["values"]["daemonsets"]["tolerations"]
    assert {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"} in tolerations
    spot_key = SPOT_TAINT.split("=")[0]
    assert any(t["key"] == spot_key for t in tolerations)
    assert ev.named("spot", POOL).urn in release.dependencies


def test_a_gpu_pool_alone_carries_the_label_default_model_selectors_match():
    ev = evaluate(
        {},
        program=lambda: GpuNodePool(
            "gpu",
            GpuNodePoolArgs(
                AksCluster("c", AksClusterArgs(resource_group="rg", name="aks")),
                GpuPoolSettings(vm_size="Standard_NC24ads_A100_v4", labels={"team": "ml"}),
            ),
        ),
    )
    assert ev.named("gpu", POOL).inputs["nodeLabels"] == {"nvidia.com/gpu.present": "true", "team": "ml"}


def test_two_clusters_in_one_program_each_have_a_pool_named_gpu():
    def program() -> None:
        for region in ("east", "west"):
            cluster = AksCluster(region, AksClusterArgs(resource_group=f"rg-{region}", name=f"aks-{region}"))
            settings = GpuPoolSettings(vm_size="Standard_NC24ads_A100_v4")
            GpuNodePool(f"{region}-gpu", GpuNodePoolArgs(cluster, settings, pool_name="gpu"))

    ev = evaluate({}, program=program)
    pools = [ev.named(f"{r}-gpu", POOL) for r in ("east", "west")]
    assert [p.inputs["agentPoolName"] for p in pools] == ["gpu", "gpu"]
    assert [p.inputs["resourceName"] for p in pools] == ["aks-east", "aks-west"]


def test_the_cluster_outputs_its_oidc_issuer():
    ev = evaluate({}, program=lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks")))
    outputs = ev.component_outputs[ev.named("c", "kaito-aks:azure:AksCluster").urn]
    assert outputs["oidcIssuerUrl"] == "https://oidc.example/c/"  # what Azure reports for the cluster


def test_a_model_reports_every_bad_arg_at_once():
    import pytest

    from kaito_aks.model.component import KaitoModel, KaitoModelArgs

    shapes = KaitoModelArgs(kaito_version="0.8.1", model="phi-4-mini-instruct", replicas=0, compute="tpu")
    with pytest.raises(
        ValueError, match=r"^KaitoModel phi: args\.compute: .*; args\.replicas: Input should be greater"
    ):
        KaitoModel("phi", shapes)
    rules = KaitoModelArgs(
        kaito_version="0.8.1",
        name="Phi",
        model="phi-4-mini-instruct",
        adapters=[{"name": "a", "image": "x", "strength": 0.5}],
    )
    with pytest.raises(
        ValueError, match=r"args\.name: name 'Phi' is not a DNS-1123 label.*args\.adapters\[0\]\.strength: vLLM"
    ):
        KaitoModel("phi", rules)


def test_a_model_alone_serves_replicas_behind_one_endpoint_that_depends_on_its_service():
    from kaito_aks.model.component import KaitoModel, KaitoModelArgs

    ev = evaluate(
        {},
        program=lambda: KaitoModel(
            "phi",
            KaitoModelArgs(kaito_version="0.8.1", model="phi-4-mini-instruct", replicas=2, wait_for_gpu_nodes=False),
        ),
    )
    workspaces = [r for r in ev.resources if r.type == "kubernetes:kaito.sh/v1beta1:Workspace"]
    assert sorted(r.inputs["metadata"]["name"] for r in workspaces) == ["phi-0", "phi-1"]
    outputs = ev.component_outputs[ev.named("phi", "kaito-aks:kubernetes:KaitoModel").urn]
    assert outputs["endpoint"] == "http://phi.default.svc.cluster.local/v1/chat/completions"
    assert outputs["model"] == "phi-4-mini-instruct"


def test_the_operators_refuse_what_their_charts_cannot_do():
    import pytest

    from kaito_aks.operators.gpu_operator import GpuOperator, GpuOperatorArgs
    from kaito_aks.operators.kaito_operator import KaitoOperator, KaitoOperatorArgs

    with pytest.raises(ValueError, match=r"args\.spotNodes: KAITO 0\.8\.1's pods do not tolerate the AKS spot taint"):
        KaitoOperator("kaito", KaitoOperatorArgs(version="0.8.1", spot_nodes=True))
    mixed = [
        GpuPoolSettings(vm_size="Standard_NC24ads_A100_v4", gpu_driver="aks"),
        GpuPoolSettings(vm_size="Standard_NC24ads_A100_v4", gpu_driver="operator"),
    ]
    with pytest.raises(ValueError, match=r"args\.pools: with the GPU Operator every GPU pool needs the same gpuDriver"):
        GpuOperator("gpu-operator", GpuOperatorArgs(pools=mixed))
