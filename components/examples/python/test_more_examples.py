"""The other example programs of this folder under Pulumi's mocks (test_program.py tests the
first program alone)."""

import runpy
from pathlib import Path

from kaito_aks.testing import run


def test_kaito_creates_phis_node_through_gpu_provisioner() -> None:
    result = run(lambda: runpy.run_path(str(Path(__file__).with_name("auto_provisioning.py"))))
    [inference_set] = result.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert inference_set.inputs["spec"]["template"]["resource"] == {"instanceType": "Standard_NC24ads_A100_v4"}
    credential = result.named("gpu-provisioner-identity-federation")
    assert credential.inputs["subject"] == "system:serviceaccount:gpu-provisioner:gpu-provisioner"
    release = result.named("gpu-provisioner", "kubernetes:helm.sh/v3:Release")
    assert release.urn in inference_set.dependencies  # the provisioner is up before the model asks for a node


def test_the_rag_engine_answers_with_phis_endpoint_once_phi_serves() -> None:
    result = run(lambda: runpy.run_path(str(Path(__file__).with_name("rag_engine.py"))))
    [engine] = result.of_type("kubernetes:kaito.sh/v1beta1:RAGEngine")
    assert engine.inputs["spec"]["inferenceService"] == {
        "url": "http://phi.default.svc.cluster.local/v1/chat/completions",
        "contextWindowSize": 16384,
    }
    [inference_set] = result.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert inference_set.urn in engine.dependencies
    assert result.named("ragengine", "kubernetes:helm.sh/v3:Release").urn in engine.dependencies


def test_on_the_add_on_phi_waits_for_aks_kaito() -> None:
    result = run(lambda: runpy.run_path(str(Path(__file__).with_name("add_on.py"))))
    [workspace] = result.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    assert workspace.inputs["resource"]["instanceType"] == "Standard_NV36ads_A10_v5"
    assert result.of_type("kubernetes:helm.sh/v3:Release") == []  # AKS runs KAITO
    [ready] = result.of_type("pulumi-python:dynamic/kaito-aks:KaitoReady")
    assert ready.urn in workspace.dependencies


def test_karpenter_makes_phis_node_after_its_identity_and_before_kaito() -> None:
    result = run(lambda: runpy.run_path(str(Path(__file__).with_name("karpenter.py"))))
    [inference_set] = result.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert inference_set.inputs["spec"]["template"]["metadata"]["annotations"] == {
        "kaito.sh/node-class-name": "image-family-azure-linux"
    }
    credential = result.named("karpenter-identity-federation")
    assert credential.inputs["subject"] == "system:serviceaccount:karpenter:karpenter-sa"
    karpenter = result.named("karpenter", "kubernetes:helm.sh/v3:Release")
    assert credential.urn in karpenter.dependencies
    assert karpenter.urn in result.named("kaito", "kubernetes:helm.sh/v3:Release").dependencies
    assert karpenter.urn in inference_set.dependencies
