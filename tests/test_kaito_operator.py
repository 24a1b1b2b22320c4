"""KaitoOperator: the Helm release the program emits, per version and mode."""

from __future__ import annotations

import pytest

import upstream_facts
from kube_schema import unknown_value_paths
from tests.conftest import config, run

PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
RELEASE = "kubernetes:helm.sh/v3:Release"


def release(ev):
    (r,) = ev.of_type(RELEASE)
    return r


def chart_values(version: str) -> dict:
    return upstream_facts.chart_values("kaito", version)


def test_release_is_the_pinned_official_chart():
    r = release(run(config([PHI])))
    assert r.inputs["chart"] == "workspace"
    assert r.inputs["version"] == "0.8.1"
    assert r.inputs["repositoryOpts"] == {"repo": "https://kaito-project.github.io/kaito/charts/kaito"}
    assert r.inputs["namespace"] == "kaito-workspace"
    assert r.inputs["name"] == "kaito-workspace"
    assert r.inputs["createNamespace"] is True
    assert r.inputs["atomic"] is True
    assert r.parent.endswith("kaito-aks:index:KaitoOperator::kaito")


def test_byo_mode_disables_node_auto_provisioning_with_every_0_8_gate_explicit():
    values = release(run(config([PHI]))).inputs["values"]
    assert values["featureGates"] == {
        "vLLM": True,
        "disableNodeAutoProvisioning": True,
        "gatewayAPIInferenceExtension": False,
        "enableInferenceSetController": False,
    }
    assert "nodeProvisioner" not in values  # the 0.8 chart has no such value


def test_byo_mode_on_0_12_also_sets_node_provisioner_byo():
    values = release(run(config([PHI], kaito={"version": "0.12.0"}))).inputs["values"]
    assert values["nodeProvisioner"] == "byo"
    assert values["featureGates"]["disableNodeAutoProvisioning"] is True
    assert values["featureGates"]["enableInferenceSetController"] is True


def test_user_gates_merge_over_the_version_defaults():
    values = release(run(config([PHI], kaito={"featureGates": {"gatewayAPIInferenceExtension": True}}))).inputs[
        "values"
    ]
    assert values["featureGates"]["gatewayAPIInferenceExtension"] is True
    assert values["featureGates"]["vLLM"] is True


def test_user_values_are_deep_merged_last():
    values = release(
        run(config([PHI], kaito={"values": {"logging": {"level": "info"}, "nvidiaDevicePlugin": {"enabled": False}}}))
    ).inputs["values"]
    assert values["logging"] == {"level": "info"}
    assert values["nvidiaDevicePlugin"] == {"enabled": False}
    assert values["featureGates"]["disableNodeAutoProvisioning"] is True


def test_kaito_bundles_its_gpu_discovery_when_nothing_else_does():
    """On a cluster reached by kubeconfig the GPU nodes' taints are unknown: the AKS GPU taint
    (which KAITO's device plugin and presets tolerate) is tolerated by its GFD and NFD worker too."""
    values = release(run(config([PHI]))).inputs["values"]
    assert "nvidiaDevicePlugin" not in values
    gfd = values["gpu-feature-discovery"]
    sku_gpu = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    assert sku_gpu in gfd["tolerations"]
    assert sku_gpu in gfd["nfd"]["worker"]["tolerations"]
    assert values.get("cloudProviderName") is None  # azure (the chart's): its device plugin needs AKS nodes


def test_external_gpu_discovery_turns_off_kaitos_device_plugin_nfd_and_gfd():
    values = release(run(config([PHI], kaito={"gpuDiscovery": "external"}))).inputs["values"]
    assert values["nvidiaDevicePlugin"] == {"enabled": False}
    assert values["gpu-feature-discovery"] == {"nfd": {"enabled": False}, "gfd": {"enabled": False}}


@pytest.mark.parametrize("version", ["0.8.1", "0.12.0"])
@pytest.mark.parametrize("kaito", [{}, {"gpuDiscovery": "external"}, {"gpuDiscovery": "kaito"}])
def test_every_value_we_set_exists_in_that_charts_values_yaml(version, kaito):
    from kaito_aks import catalog

    values = release(run(config([PHI], kaito={"version": version, **kaito}))).inputs["values"]
    allowed = tuple(catalog.kaito_charts()[version].subchart_toggles)
    assert unknown_value_paths(values, chart_values(version), allowed) == []


def test_install_false_installs_nothing_and_workspaces_wait_for_kaito_serving_then_their_gpu_nodes():
    ev = run(config([PHI], kaito={"install": False}))
    assert ev.of_type(RELEASE) == []
    assert ev.of_type("kaito-aks:index:KaitoOperator") == []
    (ws,) = ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    (wait,) = ev.of_type("pulumi-python:dynamic/kaito-aks:GpuNodesReady")
    (kaito,) = ev.of_type("pulumi-python:dynamic/kaito-aks:KaitoReady")  # KAITO runs elsewhere: it must serve
    assert set(ws.dependencies) == {kaito.urn, wait.urn}
    assert wait.dependencies == [kaito.urn]
    assert kaito.dependencies == []
    assert ev.outputs["charts"]["kaito"]["installed"] is False


def test_release_uses_the_clusters_explicit_provider():
    ev = run(config([PHI]))
    provider = ev.named("cluster", "pulumi:providers:kubernetes")
    assert release(ev).provider_urn == provider.urn
