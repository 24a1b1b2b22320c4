"""KAITO 0.6.0, the AKS add-on's release: this library creates Workspaces for it (node
auto-provisioning, by 0.6's own rules and arithmetic) and refuses to install it."""

from __future__ import annotations

import pytest

import upstream_facts
from kaito_aks import KaitoModel, KaitoModelArgs, KaitoOperator, KaitoOperatorArgs, catalog
from kaito_aks.model.rules import model_problems
from kaito_aks.testing import run
from kube_schema import crd_validator
from test_components import WORKSPACE, on_cluster, refused

A100 = "Standard_NC24ads_A100_v4"
ADDON = {"kaito_version": "0.6.0", "node_provisioning": "auto", "wait_for_gpu_nodes": False, "wait_for_ready": False}


def addon_model(**kw: object) -> KaitoModelArgs:
    return KaitoModelArgs(**{**ADDON, "name": "m", "instance_type": A100, "model": "phi-4-mini-instruct", **kw})  # type: ignore[arg-type]


def problems(**kw: object) -> list[str]:
    return [p.text() for p in model_problems(addon_model(**kw))]


def test_the_operator_refuses_the_add_ons_release_naming_who_installs_it_and_what_it_installs():
    message = refused(lambda: KaitoOperator("kaito", KaitoOperatorArgs(version="0.6.0")))
    assert (
        "args.version: KAITO 0.6.0 is what the AKS add-on runs; this program installs 0.8.0, 0.8.1, 0.11.0 or 0.12.0"
        in message
    )


def test_a_model_on_the_add_on_is_a_workspace_its_crd_accepts():
    ev = run(lambda: KaitoModel("phi", addon_model(name="phi", replicas=2), opts=on_cluster()))
    workspaces = {w.inputs["metadata"]["name"]: w.inputs for w in ev.of_type(WORKSPACE)}
    assert sorted(workspaces) == ["phi-0", "phi-1"]
    errors = crd_validator(upstream_facts.crd("0.6.0", "workspaces.kaito.sh"), "v1beta1")
    for ws in workspaces.values():
        assert ws["resource"]["instanceType"] == A100
        assert "count" not in ws["resource"]  # the CRD's default: one node of the instance type
        assert errors(ws) == []
    assert ev.of_type("pulumi-python:dynamic/kaito-aks:GpuNodesReady") == []  # KAITO makes the nodes
    outputs = ev.component_outputs[ev.named("phi", "kaito-aks:index:KaitoModel").urn]
    assert outputs["model"] == "phi-4-mini-instruct"  # 0.6 serves the preset name


def test_the_add_on_creates_its_own_nodes_of_a_named_size():
    assert problems(node_provisioning="byo", instance_type=None) == [
        "node_provisioning: KAITO 0.6.0 (the AKS add-on) always creates the nodes of its Workspaces; set it to "
        "auto, with instance_type"
    ]
    assert problems(instance_type=None) == [
        "instance_type: required with node auto-provisioning: the Azure VM size KAITO creates nodes of (KAITO 0.6.0 "
        "would provision its Workspace CRD's default, Standard_NC24ads_A100_v4); phi-4-mini-instruct fits on "
        "Standard_NC4as_T4_v3 (1 node)"  # the V100s are retired by Azure
    ]
    assert problems(instance_type="Standard_NC24ads_A100") == [
        "instance_type: KAITO admits this, but its SKU table (0.6.0) has no Standard_NC24ads_A100, so it cannot size "
        "a preset on it (its webhook admits any Standard_N*/Standard_D* name, without sizing it); did you mean "
        "Standard_NC24ads_A100_v4, Standard_NC48ads_A100_v4, Standard_NC96ads_A100_v4? `models list` shows the sizes "
        "it knows (to deploy it anyway: bypass_checks: [instance-type-unknown])"
    ]
    # 0.6 matches sizes exactly, as 0.8 does: a size it cannot read as N- or D-series it denies
    assert problems(instance_type="standard_nc24ads_a100_v4")[0].startswith(
        "instance_type: KAITO 0.6.0 denies it: it creates nodes only of its GPU table or Azure N-series (GPU) and "
        'D-series sizes ("Unsupported instance type standard_nc24ads_a100_v4")'
    )
    assert problems(instance_type="Standard_NC24ADS_A100_V4")[0].startswith(
        "instance_type: KAITO admits this (its webhook takes any Standard_N* name), but KAITO 0.6.0 looks sizes up "
        "exactly (case included), so it cannot size a preset on this one: write Standard_NC24ads_A100_v4"
    )


def test_the_add_on_sizes_a_preset_by_gpu_count_and_memory_per_gpu_on_one_node():
    """0.6's webhook checks resource.count (1) nodes of the instance type against the preset's
    GPU count, memory per GPU and total memory (llama-3.3-70b-instruct: 4 GPUs of 80 GiB)."""
    llama = {"model": "llama-3.3-70b-instruct", "hf_token": "hf_x"}
    assert problems(**llama) == [
        "instance_type: KAITO 0.6.0's webhook would deny llama-3.3-70b-instruct on one node: Insufficient number of "
        "GPUs: Instance type Standard_NC24ads_A100_v4 provides 1, but preset llama-3.3-70b-instruct requires at least "
        "4; the smallest that fits: Standard_NC96ads_A100_v4 (to have KAITO admit it anyway: bypass_checks: "
        "[instance-type-fit], which sets KAITO's kaito.sh/bypass-resource-checks annotation)"
    ]
    assert (
        "Insufficient per GPU memory: Instance type Standard_ND96asr_A100_v4 provides 40Gi per GPU"
        in (problems(**llama, instance_type="Standard_ND96asr_A100_v4")[0])
    )
    assert problems(**llama, instance_type="Standard_NC96ads_A100_v4") == []
    # 0.8 sizes the same preset by the weights' size over BYO nodes: no GPU-count rule there
    assert catalog.presets("0.8")["llama-3.3-70b-instruct"].gpu_count == 1


def test_the_add_on_wants_a_secret_for_every_download_gated_or_not():
    args = {"model": "deepseek-r1-0528", "instance_type": "Standard_ND96isr_H200_v5"}
    assert problems(**args) == [
        "model: KAITO 0.6.0 downloads deepseek-r1-0528 from Hugging Face at start-up and admits it only with a "
        "modelAccessSecret: give hf_token, or model_access_secret (an existing Secret with key HF_TOKEN)"
    ]
    assert problems(**args, model_access_secret="hf") == []
    assert problems(model_access_secret="hf")[0].startswith(
        "model_access_secret: phi-4-mini-instruct ships its weights"
    )


def test_the_add_on_wants_max_model_len_on_several_small_gpus():
    t4x4 = {"instance_type": "Standard_NC64as_T4_v3"}
    assert problems(**t4x4) == [
        "config.vllm.max-model-len: KAITO 0.6.0 requires it on a multi-GPU size with less than 20 GiB per GPU "
        "(Standard_NC64as_T4_v3); set it (e.g. 4096)"
    ]
    assert problems(**t4x4, config={"vllm": {"max-model-len": 4096}}) == []
    assert problems(**t4x4, runtime="transformers") == []


def test_the_add_on_serves_its_own_preset_set():
    assert problems(model="phi-2") == []  # deprecated only from 0.8
    assert problems(model="gpt-oss-20b")[0].startswith("model: unknown KAITO 0.6.0 preset 'gpt-oss-20b'")
    assert problems(model="microsoft/phi-4")[0].startswith("model: unknown KAITO 0.6.0 preset 'microsoft/phi-4'")
    assert problems(model="Phi-4")[0].startswith("model: unknown KAITO 0.6.0 preset 'Phi-4'")


@pytest.mark.parametrize("version", ["0.13.0", "0.13.0-rc.2"])
def test_kaito_0_13_is_refused_as_not_yet_released(version):
    message = refused(lambda: KaitoOperator("kaito", KaitoOperatorArgs(version=version)))
    assert (
        f"args.version: KAITO {version} is not supported yet (it has only release candidates so far); use one of:"
        in (message)
    )
    assert next(p.text() for p in model_problems(addon_model(kaito_version=version, node_provisioning="byo"))) == (
        f"kaito_version: KAITO {version} is not supported yet (it has only release candidates so far); use one of: "
        "0.6.0 (the AKS add-on's), 0.8.0, 0.8.1, 0.11.0, 0.12.0"
    )
