"""KAITO's Hugging Face model catalog (0.11+), tried as a new user would: a catalog id is sized by
KAITO's own arithmetic and refused where KAITO would deny it; an id outside the catalog is
accepted with a warning naming what cannot be checked offline; legacy names and letter case
resolve as KAITO resolves them."""

from __future__ import annotations

import logging

import pytest

from stacks.cli import main
from tests.conftest import config, errors_of, run
from tests.test_aks import aks

V12 = {"version": "0.12.0"}
WORKSPACE = "kubernetes:kaito.sh/v1beta1:InferenceSet"
GPU_NODES = "pulumi-python:dynamic/kaito-aks:GpuNodesReady"


def one_error(cfg) -> str:
    errors = errors_of(cfg)
    assert len(errors) == 1, errors
    return errors[0]


def model(name: str, **more) -> dict:
    return {"name": "m", "model": name, **more}


def test_a_catalog_model_too_large_for_the_pool_is_refused_like_its_preset_twin():
    """DeepSeek-V3.2 (642.14 GiB) on one A10 node: KAITO's webhook denies it, as it denies the
    same-size preset deepseek-r1-0528."""
    err = one_error(aks(workspaces=[model("deepseek-ai/DeepSeek-V3.2")], kaito=V12))
    assert err.startswith(
        "workspaces[0].model: KAITO 0.12.0's admission webhook would deny it: Insufficient total GPU memory: "
        "1 node(s) x 24 GiB = 24 GiB, but preset deepseek-ai/DeepSeek-V3.2 requires at least 642.14 GiB"
    )
    assert "models estimate deepseek-ai/DeepSeek-V3.2 --pool Standard_NV36ads_A10_v5 --version 0.12.0" in err
    twin = one_error(aks(workspaces=[model("deepseek-r1-0528")], kaito=V12))
    assert twin.startswith("workspaces[0].model: KAITO 0.12.0's admission webhook would deny it")


def test_a_catalog_model_that_fits_passes_and_is_sized_by_kaitos_estimator():
    """Qwen3.5-2B (4.24 GiB) fits one A10; three replicas need three nodes."""
    run(aks(workspaces=[model("Qwen/Qwen3.5-2B")], kaito=V12))
    err = one_error(aks(workspaces=[model("Qwen/Qwen3.5-2B", replicas=3)], kaito=V12))
    assert err.startswith(
        "workspaces[0].replicas: KAITO admits the object, and its controller will wait for 3 node(s) (3 replica(s) x 1, "
        "its vLLM node estimate for Qwen/Qwen3.5-2B on Standard_NV36ads_A10_v5)"
    )


def test_catalog_ids_and_legacy_names_resolve_in_any_letter_case_from_0_11():
    ev = run(config([model("qwen/qwen3.5-2b"), {"name": "p", "model": "Phi-4-Mini-Instruct"}], kaito=V12))
    assert len(ev.of_type(WORKSPACE)) == 2
    err = one_error(config([{"name": "p", "model": "Phi-4-Mini-Instruct"}]))  # 0.8 matches names exactly
    assert err.startswith("workspaces[0].model: unknown KAITO 0.8.1 preset 'Phi-4-Mini-Instruct'")


def test_a_catalog_models_context_window_bounds_max_model_len():
    err = one_error(config([model("Qwen/Qwen3.5-2B", config={"vllm": {"max-model-len": 300000}})], kaito=V12))
    assert (
        err
        == "workspaces[0].config.vllm.max-model-len: 300000 exceeds Qwen/Qwen3.5-2B's context window of 262144 tokens"
    )


@pytest.mark.parametrize(
    "name", ["Qwen/Qwen3.5-2B", "mistral-large-3-675b-instruct", "mistralai/Mistral-Large-3-675B-Instruct-2512"]
)
def test_catalog_models_without_a_transformers_base_command_are_vllm_only(name):
    err = one_error(config([model(name, runtime="transformers")], kaito=V12))
    assert err == f"workspaces[0].runtime: KAITO 0.12.0 cannot serve {name} with transformers; use vllm"


def test_only_the_models_kaito_fine_tunes_can_be_tuned():
    tuning = {
        "method": "qlora",
        "input": {"urls": ["https://example.com/data.parquet"]},
        "output": {"image": "registry.example.com/adapters/m:1", "imagePushSecret": "push"},
    }
    auto = {**V12, "install": False, "nodeProvisioning": "auto"}  # KAITO tunes only on a node it creates
    a100 = "Standard_NC24ads_A100_v4"
    for name in ("Qwen/Qwen3.5-2B", "foo/NotAModel"):
        err = one_error(config([model(name, tuning=tuning, instanceType=a100)], kaito=auto))
        assert err.startswith(f"workspaces[0].tuning: KAITO 0.12.0 cannot fine-tune {name}; tunable presets: phi-3")
    run(config([model("microsoft/Phi-4", tuning=tuning, instanceType="Standard_NC48ads_A100_v4")], kaito=auto))


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.1-8B-Instruct", "google/gemma-3-4b-it", "gemma-3-27b-instruct"])
def test_gated_catalog_models_need_a_token(name):
    err = one_error(config([model(name)], kaito=V12))
    assert err.startswith(
        f"workspaces[0].model: KAITO admits this, but {name} is gated on Hugging Face and KAITO's pod"
    )
    assert "run `pulumi config set --secret hfToken <token>`" in err
    run(config([model(name)], kaito=V12), hf_token="hf_x")


def test_an_image_preset_needs_no_token_however_its_repository_is_gated():
    """mistral-7b's weights ship in KAITO 0.8's image: no download, no token; on 0.12 it downloads."""
    run(config([model("mistral-7b")]))
    assert one_error(config([model("mistral-7b")], kaito=V12)).startswith(
        "workspaces[0].model: KAITO admits this, but mistral-7b is gated on Hugging Face"
    )


def test_an_id_outside_the_catalog_passes_validate_with_a_warning(tmp_path, capsys):
    text = (
        "config:\n  kaito-aks:cluster:\n    kubeconfig: {context: test}\n"
        '  kaito-aks:kaito: {version: "0.12.0"}\n'
        "  kaito-aks:workspaces:\n    - name: m\n      model: foo/NotAModel\n"
    )
    (tmp_path / "Pulumi.hf.yaml").write_text(text)
    assert main(["validate", "hf", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    warning = next(line for line in out.splitlines() if "warning" in line and "model catalog" in line)
    assert warning.startswith(
        "hf: warning: Pulumi.hf.yaml:7: workspaces[0].model: foo/NotAModel is not in KAITO 0.12.0's model catalog: "
        "KAITO sizes it from Hugging Face when the Workspace is created"
    )
    assert "huggingface.co over HTTPS from the KAITO controller pod" in warning
    assert "hfToken or modelAccessSecret" in warning
    assert "hf: ok" in out


def test_an_id_outside_the_catalog_is_logged_by_the_component_and_waits_for_its_nodes(caplog):
    with caplog.at_level(logging.WARNING):
        ev = run(config([model("foo/NotAModel")], kaito=V12))
    assert any("args.model: foo/NotAModel is not in KAITO 0.12.0's model catalog" in r.message for r in caplog.records)
    (wait,) = ev.of_type(GPU_NODES)
    assert wait.inputs["demands"] == [{"preset": "foo/NotAModel", "gpuCount": 1, "modelGiB": 0.0, "release": "0.12"}]
    with caplog.at_level(logging.WARNING):
        caplog.clear()
        run(config([model("Qwen/Qwen3.5-2B")], kaito=V12))
    assert not [r for r in caplog.records if "model catalog" in r.message]


def test_a_hugging_face_id_is_no_preset_before_0_11():
    err = one_error(config([model("foo/NotAModel")]))
    assert err.startswith("workspaces[0].model: unknown KAITO 0.8.1 preset 'foo/NotAModel'")
