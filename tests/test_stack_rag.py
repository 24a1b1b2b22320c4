"""RAG engines in the stack config: an engine over a model of the stack (its endpoint, created
once the model serves), KAITO's RAGEngine operator beside the workspace operator, and what
cannot work refused at its config path."""

from __future__ import annotations

import pytest

from tests.conftest import config, errors_of, run, warnings_of
from tests.test_aks import aks

RELEASE = "kubernetes:helm.sh/v3:Release"
RAG_V1ALPHA1 = "kubernetes:kaito.sh/v1alpha1:RAGEngine"
RAG_V1BETA1 = "kubernetes:kaito.sh/v1beta1:RAGEngine"
PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
COMPUTE = {"instanceType": "Standard_NV36ads_A10_v5", "labelSelector": {"matchLabels": {"agentpool": "gpu"}}}
RAG = {"name": "docs", "workspace": "phi", "contextWindowSize": 4096, "compute": COMPUTE}
# The engine embeds locally and KAITO gives it every GPU of its A10 node: a node of its own.
TWO_A10 = [{"name": "gpu", "vmSize": "Standard_NV36ads_A10_v5", "count": 2}]


def test_an_engine_over_a_workspace_answers_with_its_endpoint_once_it_serves():
    ev = run(aks(pools=TWO_A10, ragEngines=[RAG]))
    [engine] = ev.of_type(RAG_V1ALPHA1)  # KAITO 0.8.1: v1alpha1
    assert engine.inputs["spec"]["inferenceService"] == {
        "url": "http://phi.default.svc.cluster.local/v1/chat/completions",
        "contextWindowSize": 4096,
    }
    ready = ev.named("models/ready/{nvidia.com/gpu.present=true}", "pulumi-python:dynamic/kaito-aks:ModelReady")
    service = ev.named("default/phi/phi", "kubernetes:core/v1:Service")
    assert ready.urn in engine.dependencies  # created once the model serves
    assert service.urn in engine.dependencies  # through the endpoint Output as well
    operator = ev.named("ragengine", RELEASE)
    assert operator.inputs["chart"] == "ragengine"
    assert operator.inputs["version"] == "0.8.1"  # the workspace chart's version
    assert operator.inputs["namespace"] == "kaito-ragengine"
    assert ev.named("kaito", RELEASE).urn in operator.dependencies
    assert operator.urn in engine.dependencies
    out = ev.outputs["ragEngines"]["default/docs"]
    assert out["workspace"] == "phi"
    assert ev.outputs["charts"]["ragEngineOperator"] == {"version": "0.8.1"}


def test_on_0_12_an_engine_needs_no_node_and_its_max_model_len_is_its_window():
    phi = {**PHI, "config": {"vllm": {"max-model-len": 8192}}}
    ev = run(
        aks(
            workspaces=[phi],
            kaito={"version": "0.12.0"},
            ragEngines=[{"name": "docs", "workspace": "phi", "namespace": "default"}],
        )
    )
    [engine] = ev.of_type(RAG_V1BETA1)
    assert engine.inputs["spec"]["inferenceService"]["contextWindowSize"] == 8192
    assert "compute" not in engine.inputs["spec"]


def test_on_0_11_an_engine_over_a_workspace_is_v1beta1_and_the_operator_is_the_0_11_chart():
    phi = {**PHI, "config": {"vllm": {"max-model-len": 8192}}}
    ev = run(
        aks(
            pools=TWO_A10,
            workspaces=[phi],
            kaito={"version": "0.11.0"},
            ragEngines=[{"name": "docs", "workspace": "phi", "compute": COMPUTE}],
        )
    )
    assert ev.of_type(RAG_V1ALPHA1) == []
    [engine] = ev.of_type(RAG_V1BETA1)  # 0.11's storage version
    assert engine.inputs["spec"]["inferenceService"] == {
        "url": "http://phi.default.svc.cluster.local/v1/chat/completions",  # served under the workspace name
        "contextWindowSize": 8192,
    }
    assert engine.inputs["spec"]["compute"] == {
        "instanceType": "Standard_NV36ads_A10_v5",
        "labelSelector": {"matchLabels": {"agentpool": "gpu"}},
    }
    operator = ev.named("ragengine", RELEASE)
    assert (operator.inputs["chart"], operator.inputs["version"]) == ("ragengine", "0.11.0")
    assert ev.named("kaito", RELEASE).inputs["version"] == "0.11.0"
    assert operator.urn in engine.dependencies
    assert ev.outputs["charts"]["ragEngineOperator"] == {"version": "0.11.0"}
    out = ev.outputs["ragEngines"]["default/docs"]
    assert out["retrieveEndpoint"] == "http://docs.default.svc.cluster.local/retrieve"  # 0.9+


def test_kaito_installed_elsewhere_installs_no_ragengine_operator_unless_asked():
    cfg = config([PHI], kaito={"install": False}, ragEngines=[RAG])
    ev = run(cfg)
    assert ev.of_type(RELEASE) == []
    assert len(ev.of_type(RAG_V1ALPHA1)) == 1
    ev = run(config([PHI], kaito={"install": False}, ragEngines=[RAG], ragEngineOperator={"install": True}))
    assert [r.name for r in ev.of_type(RELEASE)] == ["ragengine"]


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        (
            {**RAG, "workspace": "nope"},
            "ragEngines[0].workspace: no workspaces[] entry named 'nope' in namespace default",
        ),
        (
            {**RAG, "inferenceService": {"url": "http://x/v1/chat/completions", "contextWindowSize": 1}},
            "ragEngines[0].workspace: give workspace (a model of this stack) or inferenceService, not both",
        ),
        (
            {k: v for k, v in RAG.items() if k != "contextWindowSize"},
            "ragEngines[0].contextWindowSize: required: phi sets no config.vllm.max-model-len",
        ),
        ({**RAG, "name": "phi"}, "ragEngines[0].name: default/phi is also a name workspaces[0] creates"),
        (  # review 4: an image has no max-model-len to take, nor a GPU to size from
            {k: v for k, v in {**RAG, "workspace": "tiny"}.items() if k != "contextWindowSize"},
            "ragEngines[0].contextWindowSize: required: tiny is a custom image; give its context window here",
        ),
        (  # review 4: the workspace is in another namespace
            {**RAG, "workspace": "llm-phi"},
            "ragEngines[0].workspace: no workspaces[] entry named 'llm-phi' in namespace default; llm-phi is in "
            "namespace llm: set namespace: llm",
        ),
        (
            {"name": "docs", "contextWindowSize": 10, "compute": COMPUTE},
            "ragEngines[0].contextWindowSize: only with workspace",
        ),
        (
            {
                "name": "docs",
                "compute": COMPUTE,
                "inferenceService": {
                    "url": "https://api.example.com/v1/chat/completions",
                    "contextWindowSize": 8000,
                    "accessToken": "sk-plaintext",
                },
            },
            "ragEngines[0].inferenceService.accessToken: a token in the stack file is plaintext",
        ),
        ({**RAG, "compute": None}, "ragEngines[0].compute: required on KAITO 0.8"),
        ({**RAG, "name": "Docs"}, "ragEngines[0].name: 'Docs' is not a DNS-1035 label"),
    ],
)
def test_what_cannot_work_is_refused_at_its_config_path(engine: dict[str, object], expected: str):
    engine = {k: v for k, v in engine.items() if v is not None}
    errors = errors_of(config(WORKSPACES, ragEngines=[engine]))
    assert any(e.startswith(expected) for e in errors), errors


SHORT = {"name": "short", "model": "phi-4-mini-instruct", "config": {"vllm": {"max-model-len": 2048}}}
WORKSPACES = [
    PHI,
    SHORT,
    {"name": "phi3", "model": "phi-3-mini-4k-instruct"},
    {"name": "llm-phi", "namespace": "llm", "model": "phi-4-mini-instruct"},
    {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"},
]


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        (  # review 3: without max-model-len, the model's own window
            {**RAG, "workspace": "phi3", "contextWindowSize": 999999},
            "ragEngines[0].contextWindowSize: 999999 exceeds phi3's context window (phi-3-mini-4k-instruct: 4096 "
            "tokens in KAITO 0.8.1's catalog): the engine would build prompts the model rejects; use at most 4096",
        ),
        (  # review 2 G5: a window the model refuses
            {**RAG, "workspace": "short"},
            "ragEngines[0].contextWindowSize: 4096 exceeds short's config.vllm.max-model-len of 2048: the engine would "
            "build prompts the model rejects; use at most 2048 (or leave it out)",
        ),
    ],
)
def test_a_window_longer_than_the_models_is_said(engine: dict[str, object], expected: str):
    """Long prompts get 400; short ones serve: it may be a mistake, so it is said, not refused (issue 28)."""
    said = warnings_of(config(WORKSPACES, ragEngines=[engine]))
    assert any(w.startswith(expected) for w in said), said


def test_ragengine_operator_settings_without_the_operator_are_said():
    said = warnings_of(config([PHI], kaito={"install": False}, ragEngineOperator={"values": {"replicaCount": 1}}))
    assert any(
        w.startswith("ragEngineOperator: configures a RAGEngine operator this stack does not install") for w in said
    )
