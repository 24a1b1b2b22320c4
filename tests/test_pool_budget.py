"""The GPU pools' budget, stack-wide: every KAITO pod takes all GPUs of its node, so the models and
RAG engines that select the same pools must fit the pools' maximum nodes together (each model's
own rule sees only itself)."""

from __future__ import annotations

import pytest

from tests.conftest import errors_of, run
from tests.test_aks import aks

A10 = "Standard_NV36ads_A10_v5"
PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
PHI_4K = {**PHI, "config": {"vllm": {"max-model-len": 4096}}}
ON_GPU_POOL = {"instanceType": A10, "labelSelector": {"matchLabels": {"agentpool": "gpu"}}}
ENGINE = {"name": "docs", "workspace": "phi", "contextWindowSize": 4096, "compute": ON_GPU_POOL}
REMOTE = {"remote": {"url": "https://api.openai.com/v1/embeddings"}}


def pool(name: str = "gpu", count: int = 1, **kw: object) -> dict[str, object]:
    return {"name": name, "vmSize": A10, "count": count, **kw}


def test_the_dev_shape_a_model_and_an_engine_on_one_a10_node_is_refused_naming_both_and_the_fix():
    errors = errors_of(aks(pools=[pool()], workspaces=[PHI], ragEngines=[ENGINE]))
    assert errors == [
        "gpuNodePools[0]: KAITO admits each of these, but pool gpu has at most 1 node of Standard_NV36ads_A10_v5, and "
        "2 are needed at once: workspaces[0] (phi) takes 1 (1 replica(s) x 1 node, KAITO's vLLM estimate); "
        "ragEngines[0] (docs) takes 1 (KAITO 0.8.1 gives an engine that embeds locally every GPU of its instanceType "
        "(1)). Each KAITO pod takes every GPU of its node, so the rest would stay Pending: give the pool 1 node more "
        "(count, or autoscale.max), or give the RAG engine a pool of its own (compute.labelSelector and instanceType) "
        "(to deploy it anyway: bypassChecks: [pool-budget])"
    ]
    # the model (or the engine) that knows better leaves the budget, said as a warning of its own
    run(aks(pools=[pool()], workspaces=[{**PHI, "bypassChecks": ["pool-budget"]}], ragEngines=[ENGINE]))
    run(aks(pools=[pool()], workspaces=[PHI], ragEngines=[{**ENGINE, "bypassChecks": ["pool-budget"]}]))


def test_a_second_node_or_a_pool_of_its_own_makes_room_for_the_engine():
    run(aks(pools=[pool(count=2)], workspaces=[PHI], ragEngines=[ENGINE]))
    autoscaled = {"name": "gpu", "vmSize": A10, "autoscale": {"min": 1, "max": 2}}
    run(aks(pools=[autoscaled], workspaces=[PHI], ragEngines=[ENGINE]))
    own = {**ENGINE, "compute": {**ON_GPU_POOL, "labelSelector": {"matchLabels": {"agentpool": "rag"}}}}
    phi = {**PHI, "labelSelector": {"matchLabels": {"agentpool": "gpu"}}}
    run(aks(pools=[pool(), pool("rag")], workspaces=[phi], ragEngines=[own]))


def test_an_engine_without_gpus_shares_the_node():
    """0.8 with a remote embedding requests no GPU; 0.12 only with compute of a GPU size."""
    run(aks(pools=[pool()], workspaces=[PHI], ragEngines=[{**ENGINE, "embedding": REMOTE}]))
    v12 = {"version": "0.12.0"}
    run(aks(pools=[pool()], workspaces=[PHI_4K], kaito=v12, ragEngines=[{"name": "docs", "workspace": "phi"}]))


@pytest.mark.parametrize("version", ["0.11.0", "0.12.0"])
def test_on_0_11_and_0_12_an_engine_with_compute_of_a_gpu_size_counts(version: str):
    engine = {k: v for k, v in ENGINE.items() if k != "contextWindowSize"}  # phi's max-model-len
    errors = errors_of(aks(pools=[pool()], workspaces=[PHI_4K], kaito={"version": version}, ragEngines=[engine]))
    assert len(errors) == 1
    assert errors[0].startswith(
        "gpuNodePools[0]: KAITO admits each of these, but pool gpu has at most 1 node of Standard_NV36ads_A10_v5, and 2 "
        "are"
    )
    assert f"ragEngines[0] (docs) takes 1 (KAITO {version} gives an engine" in errors[0]


def test_models_that_each_fit_alone_are_counted_together():
    errors = errors_of(aks(pools=[pool(count=2)], workspaces=[{**PHI, "replicas": 2}, {**PHI, "name": "phi2"}]))
    assert errors == [
        "gpuNodePools[0]: KAITO admits each of these, but pool gpu has at most 2 nodes of Standard_NV36ads_A10_v5, and "
        "3 are needed at once: workspaces[0] (phi) takes 2 (2 replica(s) x 1 node, KAITO's vLLM estimate); "
        "workspaces[1] (phi2) takes 1 (1 replica(s) x 1 node, KAITO's vLLM estimate). Each KAITO pod takes every GPU "
        "of its node, so the rest would stay Pending: give the pool 1 node more (count, or autoscale.max), or lower "
        "replicas (to deploy it anyway: bypassChecks: [pool-budget])"
    ]
    # "lower replicas" only where a model has more than one (issue 28)
    errors = errors_of(aks(pools=[pool(count=1)], workspaces=[PHI, {**PHI, "name": "phi2"}]))
    assert "lower replicas" not in errors[0]
    assert "or select another pool for one of them (labelSelector)" in errors[0]


def test_pools_a_selector_picks_together_are_one_budget():
    """phi picks both pools by the GPU label, phi2 only `a`: 3 nodes on 2 pools of 1 node."""
    phi2 = {**PHI, "name": "phi2", "labelSelector": {"matchLabels": {"agentpool": "a"}}}
    fits = [{**PHI, "replicas": 1}, phi2]
    run(aks(pools=[pool("a"), pool("b")], workspaces=fits))
    errors = errors_of(aks(pools=[pool("a"), pool("b")], workspaces=[{**PHI, "replicas": 2}, phi2]))
    assert len(errors) == 1
    assert errors[0].startswith(
        "gpuNodePools[0]: KAITO admits each of these, but pools a, b have at most 2 nodes of Standard_NV36ads_A10_v5, "
        "and 3 are needed at once"
    )
    assert "give the pools 1 node more" in errors[0]


def test_an_engine_whose_selector_finds_no_pool_of_its_size_is_refused():
    """KAITO would create a NodeClaim for it, which nothing provisions with bring-your-own nodes."""
    elsewhere = {**ENGINE, "compute": {**ON_GPU_POOL, "labelSelector": {"matchLabels": {"agentpool": "rag"}}}}
    errors = errors_of(aks(pools=[pool(count=2)], workspaces=[PHI], ragEngines=[elsewhere]))
    assert errors == [
        "ragEngines[0].compute: KAITO admits this, but it runs the engine on a node with compute.labelSelector's "
        "labels and of instanceType Standard_NV36ads_A10_v5, and no pool carries those labels; it would ask for a new "
        "node, which nothing provisions with bring-your-own nodes: select a GPU pool of that size (e.g. {agentpool: "
        "<its name>}), or use its size (to deploy it anyway: bypassChecks: [rag-no-pool])"
    ]
    a100 = {**ON_GPU_POOL, "instanceType": "Standard_NC24ads_A100_v4"}
    errors = errors_of(aks(pools=[pool(count=2)], workspaces=[PHI], ragEngines=[{**ENGINE, "compute": a100}]))
    assert "the pools with those labels (gpu) are of other sizes" in errors[0]


def test_an_engine_on_a_cpu_size_must_name_nodes_of_that_size_too():
    """Review 3: KAITO matches the size for any instanceType; a CPU size on the GPU pool's labels
    finds no node. The system pool of that size is fine, and labels the stack cannot see are
    left to the cluster."""
    d4 = "Standard_D4s_v5"  # the system pool's default size
    on_gpu = {"instanceType": d4, "labelSelector": {"matchLabels": {"agentpool": "gpu"}}}
    on_system = {"instanceType": d4, "labelSelector": {"matchLabels": {"agentpool": "system"}}}
    on_system_d8 = {"instanceType": "Standard_D8s_v5", "labelSelector": {"matchLabels": {"agentpool": "system"}}}
    custom = {"instanceType": d4, "labelSelector": {"matchLabels": {"team": "rag"}}}
    v012 = {"version": "0.12.0"}
    errors = errors_of(
        aks(pools=[pool(count=2)], workspaces=[PHI], ragEngines=[{**ENGINE, "compute": on_gpu}], kaito=v012)
    )
    assert errors == [
        "ragEngines[0].compute: KAITO admits this, but it runs the engine on a node with compute.labelSelector's "
        "labels and of instanceType Standard_D4s_v5, and the pools with those labels (gpu) are of other sizes; it "
        "would ask for a new node, which nothing provisions with bring-your-own nodes: select a GPU pool of that size "
        "(e.g. {agentpool: <its name>}), or use its size (to deploy it anyway: bypassChecks: [rag-no-pool])"
    ]
    errors = errors_of(
        aks(pools=[pool(count=2)], workspaces=[PHI], ragEngines=[{**ENGINE, "compute": on_system_d8}], kaito=v012)
    )
    assert "and the system pool with those labels is of Standard_D4s_v5;" in errors[0]
    for compute in (on_system, custom):
        run(aks(pools=[pool(count=2)], workspaces=[PHI], ragEngines=[{**ENGINE, "compute": compute}], kaito=v012))


def test_a_model_that_does_not_fit_alone_is_said_once_by_its_own_rule():
    errors = errors_of(aks(pools=[pool()], workspaces=[{**PHI, "replicas": 2}]))
    assert [e.split(":")[0] for e in errors] == ["workspaces[0].replicas"]


def test_a_model_that_does_not_fit_alone_beside_others_is_said_once_by_the_budget_with_the_count_for_all():
    """Issue 36: the first advice is the one that works. Beside the engine on the same pool, the
    model's own "give the pool 1 node more" would fall one node short: the budget counts it with
    the engine and gives the count that fits both, once."""
    errors = errors_of(aks(pools=[pool()], workspaces=[{**PHI, "replicas": 2}], ragEngines=[ENGINE]))
    assert [e.split(":")[0] for e in errors] == ["gpuNodePools[0]"]
    assert "and 3 are needed at once" in errors[0]
    assert "give the pool 2 nodes more (count, or autoscale.max)" in errors[0]
    run(aks(pools=[pool(count=3)], workspaces=[{**PHI, "replicas": 2}], ragEngines=[ENGINE]))  # and it works


def test_the_budgets_first_count_is_the_one_that_works_llama_beside_phi_autoscaled():
    """Issue 36's stack: llama-3.1-8b on an A100 pool beside phi-4-mini autoscaled 1-3 on the same
    pool. `validate` said "give the pool 1 node more" (phi alone), then, with that done, that 4
    nodes are needed; now its first answer is the final one."""
    a100 = {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "count": 2}
    llama = {"name": "llama", "model": "llama-3.1-8b-instruct"}
    phi = {**PHI, "autoscale": {"minReplicas": 1, "maxReplicas": 3}}
    stack = {"pools": [a100], "workspaces": [llama, phi], "kaito": {"version": "0.12.0"}}
    errors = errors_of(aks(**stack), hf_token="hf_x")
    assert [e.split(":")[0] for e in errors] == ["gpuNodePools[0]"], errors
    assert "at most 2 nodes of Standard_NC24ads_A100_v4, and 4 are needed at once" in errors[0]
    assert "give the pool 2 nodes more (count, or autoscale.max), or lower autoscale.maxReplicas" in errors[0]
    assert "1 node more" not in " ".join(errors)
    run(aks(**{**stack, "pools": [{**a100, "count": 4}]}), hf_token="hf_x")  # the count it named fits
