"""Issue 28, the stack's side: refuse only what KAITO denies or what cannot serve, warn about the
rest, say a refusal stricter than KAITO as one with its way past (`bypassChecks`), and every
problem in one round. Each class of the issue, as the note on it settled it at the KAITO tags."""

from __future__ import annotations

import pytest

from tests.conftest import config, errors_of, run, warnings_of
from tests.test_aks import PHI, aks

WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
INFERENCE_SET = "kubernetes:kaito.sh/v1beta1:InferenceSet"
GPU_NODES = "pulumi-python:dynamic/kaito-aks:GpuNodesReady"


def pool(vm_size: str, count: int = 1, name: str = "gpu") -> dict[str, object]:
    return {"name": name, "vmSize": vm_size, "count": count}


# ---------------------------------------------------------------- (c) the transformers runtime: resource.count


@pytest.mark.parametrize(
    ("model", "vm_size", "version"),
    [
        ("falcon-40b-instruct", "Standard_NC96ads_A100_v4", "0.8.1"),
        ("qwen2.5-coder-32b-instruct", "Standard_NC24ads_A100_v4", "0.11.0"),
        ("qwen2.5-coder-32b-instruct", "Standard_NC24ads_A100_v4", "0.12.0"),
        ("phi-4", "Standard_NV72ads_A10_v5", "0.8.1"),  # 2 nodes: KAITO's multi-node rule is for distributed presets
    ],
)
def test_transformers_takes_resource_count_not_the_vllm_estimate(model, vm_size, version):
    """KAITO runs its vLLM node estimator only for vLLM; the transformers runtime takes
    resource.count, 1 (workspace_controller.go 0.8.1:612-626, 0.11.0:1125-1139, 0.12.0:1506-1520).
    Each was refused by the vLLM estimate; KAITO admits and serves each on one node."""
    count = 2 if model == "phi-4" else 1
    ws = {"name": "m", "model": model, "runtime": "transformers"}
    ev = run(aks(workspaces=[ws], pools=[pool(vm_size, count)], kaito={"version": version}))
    assert ev.of_type(WORKSPACE) or ev.of_type(INFERENCE_SET)


def test_transformers_replicas_take_a_node_each():
    ws = {"name": "m", "model": "phi-4-mini-instruct", "runtime": "transformers", "replicas": 3}
    err = errors_of(aks(workspaces=[ws], pools=[pool("Standard_NV36ads_A10_v5", 2)]))
    assert err[0].startswith(
        "workspaces[0].replicas: KAITO admits the object, and its controller will wait for 3 node(s) (3 replica(s) x 1, "
        "a replica takes 1 node with the transformers runtime)"
    ), err


def test_a_model_larger_than_a_node_under_transformers_cannot_serve_on_its_one_node():
    """KAITO admits phi-4 (27.31 GiB) on two A10 nodes (48 GiB as it counts them), but the transformers
    runtime runs on resource.count (1) node of 24 GiB."""
    ws = {"name": "m", "model": "phi-4", "runtime": "transformers"}
    (err,) = errors_of(aks(workspaces=[ws], pools=[pool("Standard_NV36ads_A10_v5", 2)]))
    assert err.startswith("workspaces[0].runtime: KAITO admits this, but its transformers runtime runs an instance on")
    assert err.endswith("(to deploy it anyway: bypassChecks: [fit-one-node-transformers])")


# ---------------------------------------------------------------- (d) modelAccessSecret on tuning


def test_model_access_secret_on_a_tuning_job_is_a_warning():
    """0.8.1's secret checks are inference-only (InferenceSpec.validateCreate, WV:582-589); the tuning
    job never reads the secret (preset_tuning.go): admitted, with no effect."""
    from tests.test_validation import TUNING, tuned

    said = warnings_of(tuned([{**TUNING, "modelAccessSecret": "hf"}]))
    assert said == [
        "workspaces[0].modelAccessSecret: has no effect on a tuning job (KAITO checks and passes the secret for serving "
        "only): remove it"
    ]
    run(tuned([{**TUNING, "modelAccessSecret": "hf"}]))


# ---------------------------------------------------------------- (e) the node estimate, said plainly


@pytest.mark.parametrize(
    ("model", "vm_size", "count", "nodes"),
    [
        ("openai/gpt-oss-120b", "Standard_NC48ads_A100_v4", 1, 2),
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "Standard_NV36ads_A10_v5", 1, 2),
        ("Qwen/Qwen3.5-122B-A10B", "Standard_NC40ads_H100_v5", 3, 4),
    ],
)
def test_replicas_fit_says_kaito_admits_and_waits(model, vm_size, count, nodes):
    """Run at the tag, KAITO's own estimator agrees on these counts (the note's check of 60 models x
    12 sizes): the refusal stands, said as what it is, with its way past."""
    ws = {"name": "m", "model": model}
    (err,) = errors_of(aks(workspaces=[ws], pools=[pool(vm_size, count)], kaito={"version": "0.12.0"}))
    assert err.startswith(
        f"workspaces[0].replicas: KAITO admits the object, and its controller will wait for {nodes} node(s) (1 "
        f"replica(s) x {nodes}, its vLLM node estimate for {model} on {vm_size}) that the pools it may use cannot "
        f"give (at most {count})"
    ), err
    assert "lower replicas" not in err  # replicas is 1
    assert err.endswith("(to deploy it anyway: bypassChecks: [replicas-fit])")
    bypassed = {**ws, "bypassChecks": ["replicas-fit"]}
    said = warnings_of(aks(workspaces=[bypassed], pools=[pool(vm_size, count)], kaito={"version": "0.12.0"}))
    assert [w for w in said if w.startswith("workspaces[0].replicas: bypassed (replicas-fit): KAITO admits")], said


# ---------------------------------------------------------------- the same GPUs in two pools


def test_pools_of_two_sizes_with_the_same_gpus_are_admitted_with_a_warning():
    """KAITO compares GPU product, count and memory (workspace_validation.go 0.12.0:585-593), not the size:
    NC40ads_H100_v5 and NCC40ads_H100_v5 are one H100 of 94 GiB each."""
    pools = [pool("Standard_NC40ads_H100_v5", 1, "a"), pool("Standard_NCC40ads_H100_v5", 1, "b")]
    said = warnings_of(aks(workspaces=[PHI], pools=pools, kaito={"version": "0.12.0"}))
    assert [w for w in said if w.startswith("workspaces[0].labelSelector: matches pools of different sizes (a, b)")]


# ---------------------------------------------------------------- bypassChecks, end to end


def test_a_bypassed_admission_check_sets_kaitos_own_annotation_and_the_wait_skips_it():
    """KAITO denies llama-3.3-70b on one A100 node (Insufficient total GPU memory); with its
    kaito.sh/bypass-resource-checks annotation it admits it (WV 0.8.1:472-487): the program sets it
    on the Workspace, and the GPU-node wait skips the same check."""
    ws = {"name": "llama", "model": "llama-3.3-70b-instruct", "modelAccessSecret": "hf"}
    a100 = [pool("Standard_NC24ads_A100_v4", 1)]
    (err,) = errors_of(aks(workspaces=[ws], pools=a100))
    assert err.endswith(
        "(to have KAITO admit it anyway: bypassChecks: [admission], which sets KAITO's kaito.sh/bypass-resource-checks "
        "annotation)"
    )
    bypassed = {**ws, "bypassChecks": ["admission", "replicas-fit"]}
    ev = run(aks(workspaces=[bypassed], pools=a100))
    (workspace,) = ev.of_type(WORKSPACE)
    assert workspace.inputs["metadata"]["annotations"] == {"kaito.sh/bypass-resource-checks": "true"}
    (wait,) = ev.of_type(GPU_NODES)
    assert [d["bypassResourceChecks"] for d in wait.inputs["demands"]] == [True]
    # 0.12: on the InferenceSet's template, which KAITO copies onto the Workspaces it makes
    ev = run(aks(workspaces=[bypassed], pools=a100, kaito={"version": "0.12.0"}))
    (inference_set,) = ev.of_type(INFERENCE_SET)
    annotations = inference_set.inputs["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"kaito.sh/bypass-resource-checks": "true"}
    # a model that bypasses nothing of KAITO's keeps its objects as they were (no diff for existing stacks)
    ev = run(aks(workspaces=[PHI]))
    (workspace,) = ev.of_type(WORKSPACE)
    assert "annotations" not in workspace.inputs["metadata"]
    (wait,) = ev.of_type(GPU_NODES)
    assert all("bypassResourceChecks" not in d for d in wait.inputs["demands"])


def test_a_denial_kaito_cannot_be_told_to_skip_is_not_bypassable():
    ws = {**PHI, "bypassChecks": ["source", "replica-fit", "config-section"]}
    errors = errors_of(config([ws]))
    assert errors == [
        'workspaces[0].bypassChecks[0]: KAITO\'s webhook denies this ("Preset or Template must be specified" WV '
        '0.8.1:547, 0.11.0:624, 0.12.0:828; "Preset and Template cannot be set at the same time" WV 0.8.1:552, '
        "0.11.0:629, 0.12.0:833); it cannot be bypassed: remove it",
        "workspaces[0].bypassChecks[1]: no rule is named 'replica-fit'; did you mean replicas-fit?",
    ]
    assert "workspaces[0].bypassChecks[0]: config-section is a warning, which refuses nothing: remove it" in (
        warnings_of(config([{**PHI, "bypassChecks": ["config-section"]}]))
    )


# ---------------------------------------------------------------- every problem in one round


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (  # the pools' budget was said only once the token was fixed
            aks(
                workspaces=[PHI, {"name": "llama", "model": "llama-3.1-8b-instruct"}],
                pools=[pool("Standard_NV36ads_A10_v5")],
            ),
            ["gpuNodePools[0]", "workspaces[1].model"],
        ),
        (  # a wrong workspace added "inferenceService: required"
            config([PHI], ragEngines=[{"name": "docs", "workspace": "phi4", "contextWindowSize": 4096}]),
            ["ragEngines[0].compute", "ragEngines[0].workspace"],
        ),
        (  # the unsupported version was said twice, with two lists
            config(
                [PHI],
                kaito={"version": "0.9.0"},
                ragEngines=[{"name": "docs", "workspace": "phi", "contextWindowSize": 4096}],
            ),
            ["kaito.version"],
        ),
    ],
)
def test_every_problem_in_one_round(cfg, expected):
    errors = errors_of(cfg)
    assert [e.split(": ")[0] for e in errors] == expected, errors
    assert not [e for e in errors if "inferenceService" in e]


def test_a_reserved_label_beside_others_is_dropped_as_kaito_drops_it():
    """From 0.11 KAITO drops the labels it reserves from a selector and lists nodes by the rest
    (SanitizedMatchLabels, labels.go 0.12.0:218): admitted, with a warning; the GPU-node wait
    lists the nodes as KAITO will."""
    selector = {"matchLabels": {"agentpool": "gpu", "kaito.sh/workspace": "x"}}
    cfg = aks(
        workspaces=[{**PHI, "labelSelector": selector}],
        pools=[pool("Standard_NV36ads_A10_v5")],
        kaito={"version": "0.12.0"},
    )
    said = warnings_of(cfg)
    assert [
        w for w in said if w.startswith('workspaces[0].labelSelector.matchLabels."kaito.sh/workspace": KAITO 0.12.0')
    ]
    ev = run(cfg)
    (inference_set,) = ev.of_type(INFERENCE_SET)
    assert inference_set.inputs["spec"]["labelSelector"] == selector  # as written: KAITO drops it
    (wait,) = ev.of_type(GPU_NODES)
    assert wait.inputs["selector"] == {"agentpool": "gpu"}


# ---------------------------------------------------------------- the stack's own codes


def test_every_stack_rule_code_is_in_the_stacks_table_or_the_librarys():
    """The library's table knows the library's codes only; the stack's own are its own
    (stacks/rules.py), and every code the stack says is in one of the two."""
    import sys

    from kaito_aks import policy
    from stacks.rules import STACK_RULES
    from tests.conftest import ROOT

    sys.path.insert(0, str(ROOT / "components" / "tests"))
    from test_admission_policy import codes_in_source

    said = codes_in_source(ROOT / "stacks")
    assert {c: at for c, at in said.items() if c not in STACK_RULES and c not in policy.RULES} == {}
    assert not set(STACK_RULES) & set(policy.RULES), "a code lives in one table"
    assert not set(STACK_RULES) & set(codes_in_source(ROOT / "components" / "kaito_aks"))
    for code, rule in STACK_RULES.items():
        assert rule.kind in policy.KINDS, code
        assert rule.bypass is None, code  # (no stack setting is a model's to pass)
