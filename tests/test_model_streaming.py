"""KAITO's ModelMirror and ModelStreaming (kaito.modelStreaming): on by default only for a new
stack (`kaito-aks:defaults: 3`) that installs KAITO 0.12 on a cluster it creates; wired end to
end (the gates and defaults in KAITO's values, the cluster's Blob CSI driver, the StorageClass,
a ServiceAccount and federated credential per namespace, the blob read role, each vLLM preset's
annotations); refused where KAITO has none; no existing stack changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import errors_of, run

from kaito_aks.model_streaming import model_mirror_name
from kaito_aks.testing import reveal
from stacks.cli import main as cli

MODEL = "microsoft/Phi-4-mini-instruct"  # in KAITO 0.12's Hugging Face catalog


def stack(defaults: int | None = 3, **kaito: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "azure-native:location": "eastus2",
        "kaito-aks:cluster": {"aks": {"resourceGroup": "rg", "name": "aks"}},
        "kaito-aks:kaito": {"version": "0.12.0", "nodeProvisioning": "auto", **kaito},
        "kaito-aks:workspaces": [
            {"name": "phi", "namespace": "llm", "model": MODEL, "instanceType": "Standard_NC24ads_A100_v4"},
            {"name": "phi-2", "namespace": "llm", "model": MODEL, "instanceType": "Standard_NC24ads_A100_v4"},
        ],
    }
    if defaults is not None:
        config["kaito-aks:defaults"] = defaults
    return config


def test_a_new_012_stack_mirrors_and_streams_its_vllm_presets() -> None:
    ev = run(stack())
    cluster = reveal(ev.of_type("azure-native:containerservice:ManagedCluster")[0].inputs)
    assert cluster["storageProfile"] == {"blobCSIDriver": {"enabled": True}}
    release = reveal(next(r for r in ev.of_type("kubernetes:helm.sh/v3:Release") if r.name == "kaito").inputs)
    values = release["values"]
    assert values["featureGates"]["ModelMirror"] is True
    assert values["featureGates"]["ModelStreaming"] is True
    assert values["defaultModelMirrorStorageClass"] == "blob-fuse"
    assert values["defaultStreamingServiceAccount"] == "kaito-model-streamer"
    (sc,) = ev.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
    assert sc.inputs["provisioner"] == "blob.csi.azure.com"
    assert sc.inputs["parameters"] == {"protocol": "fuse2", "skuName": "Premium_LRS"}
    assert sc.inputs["reclaimPolicy"] == "Retain"
    (sa,) = ev.of_type("kubernetes:core/v1:ServiceAccount")  # one per namespace
    assert (sa.inputs["metadata"]["namespace"], sa.inputs["metadata"]["name"]) == ("llm", "kaito-model-streamer")
    assert "azure.workload.identity/client-id" in sa.inputs["metadata"]["annotations"]
    fic = ev.named("model-streaming-llm-federation", "azure-native:managedidentity:FederatedIdentityCredential")
    assert fic.inputs["subject"] == "system:serviceaccount:llm:kaito-model-streamer"
    assert fic.inputs["audiences"] == ["api://AzureADTokenExchange"]
    assert fic.inputs["resourceName"] == "aks-agentpool"  # the kubelet identity, in the node resource group
    assert fic.inputs["resourceGroupName"] == "MC_rg_aks_eastus2"
    reader = next(
        r for r in ev.of_type("azure-native:authorization:RoleAssignment") if r.name == "model-streaming-blob-reader"
    )
    assert reader.inputs["roleDefinitionId"].endswith("/roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1")
    assert reader.inputs["scope"].endswith("/resourceGroups/MC_rg_aks_eastus2")
    sets = {r.inputs["metadata"]["name"]: r.inputs for r in ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")}
    streamed = sets["phi"]["spec"]["template"]["metadata"]["annotations"]
    assert streamed["kaito.sh/model-mirror-storage-class"] == "blob-fuse"
    assert streamed["kaito.sh/streaming-service-account"] == "kaito-model-streamer"
    assert sets["phi-2"]["spec"]["template"]["metadata"]["annotations"] == streamed
    # the models wait for the pieces KAITO checks before it mirrors
    for model in ev.of_type("kaito-aks:index:KaitoModel"):
        assert sa.urn in model.dependencies
        assert fic.urn in model.dependencies
        assert reader.urn in model.dependencies


def test_the_mirror_kaito_makes_is_named_by_the_models_id() -> None:
    assert model_mirror_name(MODEL) == __import__("hashlib").sha256(MODEL.encode()).hexdigest()[:6]


@pytest.mark.parametrize("defaults", [None, 2])
def test_stacks_of_earlier_generations_keep_downloading(defaults: int | None) -> None:
    ev = run(stack(defaults))
    assert not ev.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
    assert not ev.of_type("kaito-aks:index:ModelStreaming")
    cluster = reveal(ev.of_type("azure-native:containerservice:ManagedCluster")[0].inputs)
    assert "storageProfile" not in cluster


def test_it_is_refused_where_kaito_has_none() -> None:
    (line,) = errors_of(
        stack(version="0.8.1", modelStreaming=True, nodeProvisioning="byo") | {"kaito-aks:workspaces": []}
    )
    assert line.startswith(
        "kaito.modelStreaming: KAITO 0.8.1 has no ModelMirror or ModelStreaming (the gates came in 0.11.0"
    )
    kubeconfig = stack(modelStreaming=True, install=False) | {"kaito-aks:cluster": {"kubeconfig": {"context": "x"}}}
    (line,) = [x for x in errors_of(kubeconfig) if x.startswith("kaito.modelStreaming")]
    assert "KAITO streams from Azure Blob storage on AKS only" in line


def test_it_can_be_turned_off_on_a_new_stack() -> None:
    ev = run(stack(modelStreaming=False))
    assert not ev.of_type("kaito-aks:index:ModelStreaming")


class _Cluster:
    """A reader answering one ModelMirror as KAITO 0.12's mirror controller reports it."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def get(self, path: str, **query: str) -> dict[str, Any]:
        from kaito_aks.waits.kube_client import KubeApiError

        if path not in self.objects:
            raise KubeApiError(404, f"{path} not found")
        return self.objects[path]


def test_status_shows_the_mirrors_download_progress() -> None:
    from kaito_aks.kaito.modelmirror import MODEL_MIRRORS, mirrored_model_id, read_mirror

    ev = run(stack())
    name = ev.outputs["workspaces"]["llm/phi"]["modelMirror"]
    assert name == model_mirror_name(MODEL)
    # a legacy preset name is mirrored under KAITO's catalog id for it (lower case, plugin.go@v0.12.0)
    assert mirrored_model_id("Phi-4-Mini-Instruct", "0.12.0") == "microsoft/phi-4-mini-instruct"
    downloading = {
        "metadata": {"name": name},
        "spec": {"mode": "Managed", "source": {"registry": "huggingface", "modelID": MODEL}},
        "status": {"phase": "Pending", "download": {"speedBytesPerSecond": 52_400_000, "remainingSeconds": 95}},
    }
    said = read_mirror(_Cluster({f"{MODEL_MIRRORS}/{name}": downloading}), name).text()
    assert said == f"ModelMirror {name}: Pending, downloading at 52.4 MB/s, about 1m35s left"
    done = {**downloading, "status": {"phase": "Ready", "download": {"speedBytesPerSecond": 0, "remainingSeconds": 0}}}
    assert (
        read_mirror(_Cluster({f"{MODEL_MIRRORS}/{name}": done}), name)
        .text()
        .endswith("Ready, the weights are mirrored")
    )
    assert "not made yet" in read_mirror(_Cluster({}), name).text()


@pytest.mark.parametrize(
    ("defaults", "kaito", "said"),
    [
        (3, {}, "defaults generation 3: KAITO mirrors and streams the vLLM presets' weights (kaito.modelStreaming)"),
        (2, {}, "defaults generation 2: the models download their weights when they start, as they always have"),
        (3, {"modelStreaming": False}, None),  # written: the generation decides nothing
    ],
)
def test_validate_says_what_the_generation_decides_of_the_weights(
    defaults: int, kaito: dict[str, Any], said: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "Pulumi.s.yaml").write_text(yaml.safe_dump({"config": stack(defaults, **kaito)}))
    (tmp_path / "Pulumi.yaml").write_text("name: kaito-aks\nruntime: python\n")
    assert cli(["validate", "s", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # the provisioner's note names the stack's own generation too
    assert f"s: defaults generation {defaults}: KAITO 0.12's nodes come from Karpenter" in out, out
    if said is None:
        assert "weights" not in out, out
    else:
        assert f"s: {said}" in out, out


def test_a_gate_written_off_wins_over_the_generation_and_contradicts_kaito_model_streaming() -> None:
    """Nothing is made for streaming that KAITO would not use (the gate written off: before, the
    StorageClass, identities and annotations were made all the same)."""
    off = {"featureGates": {"ModelStreaming": False}}
    ev = run(stack(**off))
    assert not ev.of_type("kaito-aks:index:ModelStreaming")
    sets = ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert all("kaito.sh/model-mirror-storage-class" not in str(s.inputs) for s in sets)
    (line,) = [x for x in errors_of(stack(modelStreaming=True, **off)) if x.startswith("kaito.modelStreaming")]
    assert "kaito.featureGates turns ModelStreaming off, which model streaming needs: remove one of the two" in line


def test_what_the_stack_cannot_manage_for_streaming_is_said() -> None:
    """An existing cluster's Blob CSI driver, and the gates of a KAITO installed elsewhere."""
    from conftest import warnings_of

    existing = stack(modelStreaming=True, install=False) | {
        "kaito-aks:cluster": {"existing": {"resourceGroup": "rg", "name": "aks"}}
    }
    said = [w for w in warnings_of(existing) if w.startswith("kaito.modelStreaming")]
    assert any("must run the Azure Blob CSI driver (az aks update --enable-blob-driver)" in w for w in said), said
    assert any(
        "KAITO is installed elsewhere (kaito.install: false): it must run with its ModelMirror and ModelStreaming "
        "feature gates on" in w
        for w in said
    ), said
