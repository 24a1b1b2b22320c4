"""AksCluster, GpuNodePool and GpuOperator, and how they wire into KAITO: what the program emits."""

from __future__ import annotations

import pytest

import upstream_facts
from kaito_aks import catalog
from kube_schema import unknown_value_paths
from stacks.evaluate import Secret, reveal
from stacks.stackfile import read_stack_file
from tests.conftest import run

CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
RELEASE = "kubernetes:helm.sh/v3:Release"
PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
AKS = {"aks": {"resourceGroup": "rg", "name": "kaito-test", "kubernetesVersion": "1.33"}}
A10 = {"name": "gpu", "vmSize": "Standard_NV36ads_A10_v5", "count": 1}


def aks(pools=None, workspaces=None, **keys):
    cfg = {
        "azure-native:location": "eastus2",
        "kaito-aks:cluster": keys.pop("cluster", AKS),
        "kaito-aks:gpuNodePools": [A10] if pools is None else pools,
        "kaito-aks:workspaces": [PHI] if workspaces is None else workspaces,
    }
    cfg.update({f"kaito-aks:{k}": v for k, v in keys.items()})
    return cfg


def release(ev, name):
    return ev.named(name, RELEASE)


def test_cluster_has_system_identity_oidc_and_a_system_pool():
    ev = run(aks())
    group = ev.named("cluster-rg", "azure-native:resources:ResourceGroup")
    assert group.inputs["resourceGroupName"] == "rg"
    assert group.inputs["location"] == "eastus2"
    c = ev.named("cluster", CLUSTER)
    assert c.inputs["resourceName"] == "kaito-test"
    assert c.inputs["kubernetesVersion"] == "1.33"
    assert c.inputs["identity"] == {"type": "SystemAssigned"}
    assert c.inputs["oidcIssuerProfile"] == {"enabled": True}
    (system,) = c.inputs["agentPoolProfiles"]
    assert system["mode"] == "System"
    assert system["vmSize"] == "Standard_D4s_v5"
    assert system["count"] == 2
    assert group.urn in c.dependencies


def test_kubeconfig_is_a_secret_output_and_feeds_the_provider():
    ev = run(aks())
    assert isinstance(ev.outputs["kubeconfig"], Secret)
    assert "kind: Config" in reveal(ev.outputs["kubeconfig"])
    provider = ev.named("cluster", "pulumi:providers:kubernetes")
    assert isinstance(provider.inputs["kubeconfig"], Secret)
    assert ev.named("cluster", CLUSTER).urn in provider.dependencies


def test_existing_cluster_is_looked_up_not_created():
    ev = run(aks(cluster={"existing": {"resourceGroup": "rg", "name": "theirs"}}))
    assert ev.of_type(CLUSTER) == []
    assert ev.of_type("azure-native:resources:ResourceGroup") == []
    pool = ev.named("gpu", POOL)
    assert pool.inputs["resourceName"] == "theirs"
    assert pool.inputs["resourceGroupName"] == "rg"


def test_no_kubernetes_resource_uses_the_ambient_default_provider():
    for stack in ("dev", "prod"):
        f = read_stack_file(stack)
        ev = run(f.config, stack=stack)
        provider = ev.named("cluster", "pulumi:providers:kubernetes")
        k8s = [r for r in ev.resources if r.custom and r.type.startswith("kubernetes:")]
        assert k8s
        for r in k8s:
            assert r.provider_urn == provider.urn, (stack, r.name)


def test_gpu_pool_for_the_gpu_operator_skips_the_aks_driver():
    p = run(aks()).named("gpu", POOL)
    assert p.inputs["gpuProfile"] == {"driver": "None"}
    assert p.inputs["mode"] == "User"
    assert p.inputs["vmSize"] == "Standard_NV36ads_A10_v5"
    assert p.inputs["count"] == 1
    assert p.inputs["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert p.inputs["osSKU"] == "Ubuntu"


def test_gpu_pool_with_the_aks_driver():
    p = run(aks(pools=[{**A10, "gpuDriver": "aks"}], gpuOperator={"enabled": False})).named("gpu", POOL)
    assert p.inputs["gpuProfile"] == {"driver": "Install"}


def test_create_only_pool_settings_are_visible_replacements():
    p = run(aks()).named("gpu", POOL)
    assert {"gpuProfile", "nodeTaints", "vmSize"} <= set(p.options["replaceOnChanges"])
    assert p.options["deleteBeforeReplace"] is True


def test_spot_pool_carries_the_aks_spot_taint_and_priority():
    ev = run(aks(pools=[{**A10, "spot": True}], kaito={"version": "0.12.0"}))
    p = ev.named("gpu", POOL)
    assert p.inputs["scaleSetPriority"] == "Spot"
    assert p.inputs["scaleSetEvictionPolicy"] == "Delete"
    assert p.inputs["spotMaxPrice"] == -1
    assert p.inputs["nodeTaints"] == ["sku=gpu:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]
    assert release(ev, "kaito").inputs["values"]["spotInstance"] == {"enabled": True}
    tolerations = release(ev, "gpu-operator").inputs["values"]["daemonsets"]["tolerations"]
    assert {
        "key": "kubernetes.azure.com/scalesetpriority",
        "operator": "Equal",
        "value": "spot",
        "effect": "NoSchedule",
    } in tolerations


def test_autoscaling_pool_leaves_the_count_to_the_autoscaler():
    p = run(aks(pools=[{**A10, "count": None, "autoscale": {"min": 1, "max": 3}}])).named("gpu", POOL)
    assert p.inputs["enableAutoScaling"] is True
    assert (p.inputs["minCount"], p.inputs["maxCount"], p.inputs["count"]) == (1, 3, 1)
    assert p.options["ignoreChanges"] == ["count"]


def test_gpu_operator_release_is_pinned_from_nvidia():
    r = release(run(aks()), "gpu-operator")
    assert r.inputs["chart"] == "gpu-operator"
    assert r.inputs["version"] == "v25.3.4"
    assert r.inputs["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert r.inputs["namespace"] == "gpu-operator"


def test_gpu_operator_installs_driver_and_toolkit_when_the_pool_skips_them():
    values = release(run(aks()), "gpu-operator").inputs["values"]
    assert "driver" not in values
    assert "toolkit" not in values


def test_gpu_operator_uses_the_aks_driver_when_the_pool_keeps_it():
    values = release(run(aks(pools=[{**A10, "gpuDriver": "aks"}])), "gpu-operator").inputs["values"]
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}
    assert values["operator"] == {"runtimeClass": "nvidia-container-runtime"}


def test_operands_and_nfd_tolerate_every_pool_taint_on_top_of_the_chart_defaults():
    pools = [{**A10, "taints": ["sku=gpu:NoSchedule", "nvidia.com/gpu:NoSchedule"]}]
    values = release(run(aks(pools=pools)), "gpu-operator").inputs["values"]
    sku_gpu = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    nvidia = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert values["daemonsets"]["tolerations"] == [nvidia, sku_gpu]
    nfd = values["node-feature-discovery"]["worker"]["tolerations"]
    assert nfd[:2] == [
        {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    ]
    assert sku_gpu in nfd
    assert nvidia in nfd


@pytest.mark.parametrize("version", ["v25.3.4", "v26.7.0"])
@pytest.mark.parametrize("driver", ["operator", "aks"])
def test_every_gpu_operator_value_exists_in_that_charts_values_yaml(version, driver):
    values = release(
        run(aks(pools=[{**A10, "gpuDriver": driver}], gpuOperator={"version": version})), "gpu-operator"
    ).inputs["values"]
    assert unknown_value_paths(values, upstream_facts.chart_values("gpu-operator", version)) == []


def test_gpu_operator_catalog_defaults_match_the_chart():
    for version, chart in catalog.gpu_operator_charts().items():
        real = upstream_facts.chart_values("gpu-operator", version)
        assert [t.model_dump(exclude_none=True) for t in chart.daemonset_tolerations] == real["daemonsets"][
            "tolerations"
        ]
        assert [t.model_dump(exclude_none=True) for t in chart.nfd_worker_tolerations] == real[
            "node-feature-discovery"
        ]["worker"]["tolerations"]
        assert chart.value_keys == list(real)


def test_with_the_gpu_operator_kaito_drops_its_device_plugin_nfd_and_gfd():
    values = release(run(aks()), "kaito").inputs["values"]
    assert values["nvidiaDevicePlugin"] == {"enabled": False}
    assert values["gpu-feature-discovery"] == {"nfd": {"enabled": False}, "gfd": {"enabled": False}}
    assert values["clusterName"] == "kaito-test"


def test_without_the_gpu_operator_kaito_brings_gfd_for_gpu_present_labels():
    ev = run(aks(pools=[{**A10, "gpuDriver": "aks"}], gpuOperator={"enabled": False}))
    assert [r.name for r in ev.of_type(RELEASE)] == ["kaito"]
    values = release(ev, "kaito").inputs["values"]
    assert "nvidiaDevicePlugin" not in values
    assert values["featureGates"]["disableNodeAutoProvisioning"] is True  # the GFD subchart's condition
    # GFD and its NFD worker must run on the tainted GPU nodes, or no node is ever labelled and
    # the webhook denies every preset: the bundled chart's defaults plus the pool's taint
    sku_gpu = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    gfd = values["gpu-feature-discovery"]
    assert gfd["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        sku_gpu,
    ]
    assert gfd["nfd"]["worker"]["tolerations"][-1] == sku_gpu
    assert len(gfd["nfd"]["worker"]["tolerations"]) == 3


def test_dependency_order_cluster_pools_operators_in_parallel_then_workspaces():
    ev = run(aks())
    cluster, pool = ev.named("cluster", CLUSTER), ev.named("gpu", POOL)
    kaito, gpu_op = release(ev, "kaito"), release(ev, "gpu-operator")
    assert cluster.urn in pool.dependencies
    assert pool.urn in kaito.dependencies
    assert pool.urn in gpu_op.dependencies
    assert kaito.urn not in gpu_op.dependencies
    assert gpu_op.urn not in kaito.dependencies
    for ws in ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace"):
        assert {kaito.urn, gpu_op.urn} <= set(ws.dependencies)


def test_prod_protects_the_cluster_and_pools():
    f = read_stack_file("prod")
    ev = run(f.config, stack="prod")
    assert ev.named("cluster", CLUSTER).options["protect"] is True
    assert ev.named("cluster-rg", "azure-native:resources:ResourceGroup").options["protect"] is True
    for p in ev.of_type(POOL):
        assert p.options["protect"] is True
    assert ev.named("cluster", CLUSTER).inputs["tags"]["environment"] == "production"


def test_dev_does_not_protect():
    f = read_stack_file("dev")
    ev = run(f.config, stack="dev")
    assert ev.named("cluster", CLUSTER).options["protect"] is False


def test_outputs_name_the_cluster_pools_charts_and_workspaces():
    ev = run(aks(pools=[{**A10, "count": None, "autoscale": {"min": 1, "max": 2}}]))
    assert reveal(ev.outputs["clusterName"]) == "kaito-test"
    assert ev.outputs["nodePools"] == [
        {
            "name": "gpu",
            "vmSize": "Standard_NV36ads_A10_v5",
            "gpuModel": "NVIDIA A10",
            "gpusPerNode": 1,
            "gpuMemoryGiBPerNode": 24,
            "nodes": "1-2",
            "gpuDriver": "operator",
            "spot": False,
        }
    ]
    assert ev.outputs["charts"]["gpuOperator"] == {"version": "v25.3.4"}
    assert ev.outputs["charts"]["kaito"]["version"] == "0.8.1"
    assert (
        ev.outputs["workspaces"]["default/phi"]["endpoint"]
        == "http://phi.default.svc.cluster.local/v1/chat/completions"
    )
