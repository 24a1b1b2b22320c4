"""The KAITO releases a user of this program may have, from KAITO's own install paths: 0.11.0
(KAITO's Terraform), 0.12.0 and 0.8.x (the chart), 0.6.0 (the AKS add-on: Workspaces only); every
other release refused by name with the supported list. What the program emits for each."""

from __future__ import annotations

import json

import pytest

import upstream_facts
from kaito_aks import catalog
from kube_schema import crd_validator
from stacks.cli import main
from tests.conftest import config, errors_of, run, warnings_of
from tests.test_aks import A10, aks

WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
RELEASE = "kubernetes:helm.sh/v3:Release"
V11 = {"version": "0.11.0"}
PHI = {"name": "phi", "model": "phi-4-mini-instruct"}


def one_error(cfg) -> str:
    errors = errors_of(cfg)
    assert len(errors) == 1, errors
    return errors[0]


# ---------------------------------------------------------------- 0.11.0


def test_0_11_serves_replicas_as_workspaces_under_the_workspace_name():
    """0.11's InferenceSet requires an instanceType (BYO forbids one), so each replica is a
    Workspace; KAITO 0.11 serves a Workspace labelled created-by=<name> under <name>."""
    ev = run(config([{**PHI, "replicas": 2}], kaito=V11))
    assert ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet") == []
    workspaces = {w.inputs["metadata"]["name"]: w.inputs for w in ev.of_type(WORKSPACE)}
    assert sorted(workspaces) == ["phi-0", "phi-1"]
    errors = crd_validator(upstream_facts.crd("0.11.0", "workspaces.kaito.sh"), "v1beta1")
    for ws in workspaces.values():
        assert ws["metadata"]["labels"]["inferenceset.kaito.sh/created-by"] == "phi"
        assert errors(ws) == []
    assert ev.outputs["workspaces"]["default/phi"]["model"] == "phi"  # not the preset name


def test_0_11_installs_its_chart_in_byo_mode_with_its_own_gates():
    ev = run(config([PHI], kaito=V11))
    values = ev.named("kaito", RELEASE).inputs["values"]
    assert values["nodeProvisioner"] == "byo"
    assert values["featureGates"] == {
        **catalog.kaito_charts()["0.11.0"].feature_gates,
        "disableNodeAutoProvisioning": True,
    }
    assert ev.named("kaito", RELEASE).inputs["version"] == "0.11.0"


def test_0_11_leaves_its_inference_set_controller_on():
    """0.11's controller lists Workspaces in its own namespace for a set of the same name, so the
    replicas' label is safe with the gate on (0.8's lists every namespace)."""
    run(config([PHI], kaito={**V11, "featureGates": {"enableInferenceSetController": True}}))
    said = warnings_of(config([PHI], kaito={"featureGates": {"enableInferenceSetController": True}}))
    assert said[0].startswith("kaito.featureGates.enableInferenceSetController: with KAITO 0.8.1 this program")


def test_0_11_takes_t4_pools_and_warns_of_v100_by_its_own_table():
    """Bring-your-own nodes are admitted by their GPU labels; a size the release's table dropped
    is said, not refused (issue 28)."""
    t4 = {**A10, "vmSize": "Standard_NC4as_T4_v3"}
    run(aks(pools=[t4], workspaces=[{**PHI, "model": "phi-3-mini-4k-instruct"}], kaito=V11))
    v100 = {**A10, "vmSize": "Standard_NC24rs_v3"}
    said = warnings_of(aks(pools=[v100], workspaces=[{**PHI, "model": "phi-3-mini-4k-instruct"}], kaito=V11))
    assert said == [
        "gpuNodePools[0].vmSize: KAITO 0.11.0 no longer supports NVIDIA V100 (Standard_NC24rs_v3): its SKU table "
        "dropped the size in 0.9; the nearest size it takes: Standard_NC64as_T4_v3 (4x NVIDIA T4, 64 GiB)"
    ]


def test_0_11_has_its_own_51_model_catalog(capsys):
    assert main(["models", "list", "--version", "0.11.0"]) == 0
    out = capsys.readouterr().out
    assert "the 51 models of its Hugging Face model catalog" in out
    assert "deepseek-ai/DeepSeek-V3.2" not in out  # added in 0.12
    # on 0.11 DeepSeek-V3.2 is an id outside the catalog: KAITO sizes it from Hugging Face
    ev = run(aks(workspaces=[{"name": "ds", "model": "deepseek-ai/DeepSeek-V3.2"}], kaito=V11))
    assert len(ev.of_type(WORKSPACE)) == 1


# ---------------------------------------------------------------- 0.6.0, the AKS add-on's


def test_a_stack_does_not_install_the_add_ons_release():
    errs = errors_of(config([PHI], kaito={"version": "0.6.0"}))
    assert (
        "kaito.version: KAITO 0.6.0 is what the AKS add-on runs; this program installs 0.8.0, 0.8.1, 0.11.0 or 0.12.0"
        in errs
    )
    err = one_error(config([PHI], kaito={"version": "0.6.0", "install": False}))
    assert err.startswith("kaito.nodeProvisioning: KAITO 0.6.0 (the AKS add-on) always creates the nodes")


def test_models_list_shows_the_add_ons_presets(capsys):
    rows = {r["model"]: r for r in cli_json(capsys, "models", "list", "--version", "0.6.0")}
    assert len(rows) == 22
    assert "phi-2" in rows
    assert "gpt-oss-20b" not in rows
    assert (rows["llama-3.3-70b-instruct"]["gpus"], rows["llama-3.3-70b-instruct"]["gpuMemoryGiB"]) == (4, 320)


@pytest.mark.parametrize("version", ["0.13.0", "0.13.0-rc.1", "0.7.2", "v0.12.0"])
def test_other_releases_are_refused_by_name_with_the_supported_list(version):
    err = one_error(config([PHI], kaito={"version": version}))
    assert err.startswith(f"kaito.version: KAITO {version} is not supported")
    assert err.endswith("use one of: 0.6.0 (the AKS add-on's), 0.8.0, 0.8.1, 0.11.0, 0.12.0")
    assert ("release candidates" in err) == version.startswith("0.13")


def cli_json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)
