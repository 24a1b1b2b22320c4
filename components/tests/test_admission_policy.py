"""Issue 28, the library's side: the policy is one table (kaito_aks/policy.py) every rule code is
in; a refusal stricter than KAITO says so, with its way past; and the traps a new user met with the
components alone are refused (or said) before anything registers, every problem in one round."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path
from typing import Any

import pulumi
import pytest

from kaito_aks import (
    ClusterAccess,
    GpuNodePool,
    GpuNodePoolArgs,
    GpuOperator,
    GpuOperatorArgs,
    InvalidArgsError,
    KaitoKind,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    KaitoReady,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    LabelSelectorArgs,
    NodeGroup,
    RagEngine,
    RagEngineArgs,
    RagEngineOperator,
    RagEngineOperatorArgs,
    deploy_models,
    policy,
)
from kaito_aks.model.component import check_model, judge_model
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, run

ROOT = Path(__file__).resolve().parents[2]
PHI = "phi-4-mini-instruct"
A10 = "Standard_NV36ads_A10_v5"
A100 = "Standard_NC24ads_A100_v4"
GPU = {"nvidia.com/gpu.present": "true"}  # what the models' default selector picks


def refused(program: Any, before: tuple[str, ...] = ()) -> str:
    """The InvalidArgsError a program raises; nothing registered but its own cluster."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)
    own = ("pulumi:providers:kubernetes", "kaito-aks:index:KubeconfigCluster", *before)  # (and what came before)
    assert [r.type for r in monitor.registrations if not r.type.startswith(own) and "azure-native" not in r.type] == []
    return str(err.value)


def cluster() -> pulumi.ResourceOptions:
    c = KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=MOCK_KUBECONFIG.format(cluster="dev")))
    return pulumi.ResourceOptions(providers=[c.provider])


# ---------------------------------------------------------------- one table


def codes_in_source(*folders: Path) -> dict[str, str]:
    """Every literal rule code a `Problem(...)` or `Problem.at(...)` is made with, and where."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if name not in ("Problem", "at"):
                    continue
                given = [*node.args[2:3], *(k.value for k in node.keywords if k.arg == "code")]
                for value in given:
                    for text in [n.value for n in ast.walk(value) if isinstance(n, ast.Constant)]:
                        if isinstance(text, str) and text and text == text.lower() and " " not in text:
                            found.setdefault(text, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_rule_code_is_in_the_one_table():
    missing = {
        code: where
        for code, where in codes_in_source(ROOT / "components" / "kaito_aks").items()
        if code not in policy.RULES
    }
    assert missing == {}


def test_the_table_keeps_to_the_policy():
    for code, rule in policy.RULES.items():
        assert rule.kind in policy.KINDS, code
        if rule.bypass == "kaito-annotation":  # only what KAITO's own annotation skips
            assert rule.kind == "denied", code
            assert code in ("admission", "fit-one-node", "instance-type-fit"), code
        elif rule.bypass == "program":
            assert rule.kind in ("cannot-serve", "stricter"), code
        else:
            assert rule.kind not in ("stricter",), code
    for code, rule in {**policy.MODEL_RULES, **policy.RAG_RULES}.items():
        if rule.kind in ("cannot-serve", "stricter"):  # a per-model way past every refusal stricter than KAITO
            assert rule.bypass == "program", code
        if rule.error and rule.kind != "program":
            assert rule.evidence, code  # KAITO's words, or the evidence it cannot serve


def problems_of(**kw: Any) -> list[str]:
    args = KaitoModelArgs(kaito_version=kw.pop("kaito_version", "0.8.1"), **kw)
    _, errors = check_model(args, "m")
    return [p.text() for p in errors]


# a model that breaks each refusal stricter than KAITO (KAITO admits it): its message says so
STRICTER = {
    "name-length": {"model": PHI, "name": "a" * 51},
    "gated": {"model": "gemma-3-4b-instruct"},
    "config-vllm-null": {"model": PHI, "config": {"vllm": None}},
    "config-value": {"model": PHI, "config": {"kv_cache_cpu_memory_utilization": "half"}},
    "max-model-len-null": {"model": PHI, "config": {"vllm": {"max-model-len": None}}},
    "adapter-name-length": {
        "model": PHI,
        "adapters": [{"name": "a" * 32, "image": "r.io/a:1", "image_pull_secrets": ["acr"]}],
    },
    "instance-type-unknown": {"model": PHI, "node_provisioning": "auto", "instance_type": "Standard_NC24ads_A100"},
    "instance-type-gpu": {"model": PHI, "node_provisioning": "auto", "instance_type": "Standard_NC6s_v3"},
    "instance-type-estimator": {
        "model": "falcon-40b-instruct",
        "node_provisioning": "auto",
        "instance_type": A10,
    },
    "tuning-byo": {
        "model": PHI,
        "tuning": {
            "method": "qlora",
            "input": {"urls": ["https://e.com/d"]},
            "output": {"image": "r.io/a:1", "image_push_secret": "p"},
        },
    },
    "volume-source": {
        "model": PHI,
        "node_provisioning": "auto",
        "instance_type": A100,
        "tuning": {
            "method": "qlora",
            "input": {"volume_source": {"emptyDir": {}, "hostPath": {"path": "/d"}}},
            "output": {"image": "r.io/a:1", "image_push_secret": "p"},
        },
    },
    "spot": {
        "model": PHI,
        "node_groups": [NodeGroup(name="gpu", vm_size=A100, spot=True, gpu_driver="aks", labels=GPU)],
    },
    "pool-taint": {
        "model": PHI,
        "node_groups": [
            NodeGroup(name="gpu", vm_size=A100, taints=["team=ml:NoSchedule"], gpu_driver="aks", labels=GPU)
        ],
    },
    "estimator": {
        "model": "falcon-40b-instruct",
        "node_groups": [NodeGroup(name="gpu", vm_size=A10, min_nodes=6, max_nodes=6, gpu_driver="aks", labels=GPU)],
    },
    "replicas-fit": {
        "model": PHI,
        "replicas": 2,
        "node_groups": [NodeGroup(name="gpu", vm_size=A10, gpu_driver="aks", labels=GPU)],
    },
    "fit-one-node-transformers": {
        "model": "phi-4",
        "runtime": "transformers",
        "node_groups": [NodeGroup(name="gpu", vm_size=A10, min_nodes=2, max_nodes=2, gpu_driver="aks", labels=GPU)],
    },
    "cpu-on-gpu": {
        "image": "ghcr.io/kaito-project/aikit/llama3.2:1b",
        "compute": "cpu",
        "node_groups": [NodeGroup(name="gpu", vm_size=A10, gpu_driver="aks")],
    },
    "gpu-driver": {
        "model": PHI,
        "node_groups": [NodeGroup(name="gpu", vm_size=A10, gpu_driver="operator", labels=GPU)],
    },
    "node-selector-auto": {
        "image": "r.io/llm:1",
        "compute": "cpu",
        "node_provisioning": "auto",
        "instance_type": "Standard_D8s_v5",
        "node_selector": {"disk": "ssd"},
    },
}


@pytest.mark.parametrize("code", sorted(STRICTER))
def test_a_refusal_stricter_than_kaito_says_kaito_admits_it_and_its_way_past(code: str):
    kw = dict(STRICTER[code])
    version = "0.12.0" if code in ("instance-type-unknown",) else "0.8.1"
    args = KaitoModelArgs(kaito_version=version, **kw)
    _, errors, _ = judge_model(args, "m")
    mine = [p for p in errors if p.code == code]
    assert mine, [p.text() for p in errors]
    assert "KAITO admits" in mine[0].message
    assert mine[0].message.endswith(f"(to deploy it anyway: `bypass_checks`: [{code}])")
    passed = KaitoModelArgs(kaito_version=version, bypass_checks=[code], **kw)
    _, errors, warnings = judge_model(passed, "m")
    assert code not in {p.code for p in errors}
    assert [w for w in warnings if w.code == code and w.message.startswith(f"bypassed ({code}): KAITO admits")]


def test_every_stricter_model_rule_is_exercised():
    unreachable = {"tuning-fit"}  # KAITO 0.8.1 to 0.12.0 tune only on instanceType (tuning-byo says so)
    stricter = {c for c, r in policy.MODEL_RULES.items() if r.kind in ("cannot-serve", "stricter")}
    # (judged across a stack's models and pools: tests/test_pool_budget.py, tests/test_cpu_pools.py)
    # (the capacity budget too: components/tests/test_capacity.py, tests/test_capacity_stack.py)
    assert stricter - unreachable - {"pool-budget", "rag-no-pool", "cpu-no-pool", "capacity"} == set(STRICTER)


# ---------------------------------------------------------------- the library's traps


def test_a_pool_left_to_the_gpu_operator_without_one_is_refused_with_kaitos_own_discovery():
    """GpuNodePool's default gpu_driver leaves the driver to the GPU Operator; KaitoOperator's default
    gpu_discovery runs KAITO's own discovery, without one: no driver at all."""

    def program(operator: bool) -> None:
        opts = cluster()
        pool = GpuNodePool("a100", GpuNodePoolArgs(cluster_name="c", resource_group_name="rg", vm_size=A100))
        groups = [pool.node_group]
        discovery = "kaito"
        if operator:
            gpu = GpuOperator("gpu-operator", GpuOperatorArgs(node_groups=groups), opts=opts)
            groups, discovery = gpu.node_groups, "external"
        KaitoOperator(
            "kaito", KaitoOperatorArgs(version="0.8.1", node_groups=groups, gpu_discovery=discovery), opts=opts
        )
        KaitoModel(
            "phi",
            KaitoModelArgs(
                kaito_version="0.8.1",
                model=PHI,
                node_groups=groups,
                label_selector=LabelSelectorArgs(match_labels={"agentpool": "a100"}),
            ),
            opts=opts,
        )

    message = refused(lambda: program(operator=False), ("kaito-aks:index:GpuNodePool", "azure-native"))
    assert (
        "args.node_groups[0]: KAITO admits this, but pool a100 leaves its GPU driver to the NVIDIA GPU Operator "
        "(gpu_driver operator)" in message
    )
    assert (
        "pass a GpuOperator's node_groups (it marks the pools it installs the driver on), set driver_installed on the "
        "NodeGroup if a GPU Operator or driver of yours is there, or give the pool gpu_driver aks" in message
    )
    ev = run(lambda: program(operator=True))  # the GpuOperator marks the pools it installs the driver on
    assert ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace")


def test_a_model_given_a_pool_nothing_installs_a_driver_on_is_refused_with_its_ways_past():
    """Issue 28: the library refuses the driver trap as the stack does (no driver: GFD never
    labels the nodes and KAITO's webhook denies the model), with its ways past."""
    group = NodeGroup(name="gpu", vm_size=A10, labels=GPU)

    def model(g: NodeGroup, bypass: list[str] | None = None) -> None:
        args = KaitoModelArgs(kaito_version="0.8.1", model=PHI, node_groups=[g], bypass_checks=bypass or [])
        KaitoModel("phi", args, opts=cluster())

    message = refused(lambda: model(group), ("kaito-aks:index:KaitoModel",))
    assert "args.node_groups[0]: KAITO admits this, but pool gpu leaves its GPU driver to the NVIDIA GPU Operator" in (
        message
    )
    workspace = "kubernetes:kaito.sh/v1beta1:Workspace"
    assert run(lambda: model(dataclasses.replace(group, driver_installed=True))).of_type(workspace)
    assert run(lambda: model(group, ["gpu-driver"])).of_type(workspace)


def test_a_model_checked_by_another_release_than_its_operator_is_refused():
    def program(model_version: str) -> None:
        opts = cluster()
        kaito = KaitoOperator(
            "kaito",
            KaitoOperatorArgs(version="0.12.0", node_groups=[NodeGroup(name="g", vm_size=A10, gpu_driver="aks")]),
            opts=opts,
        )
        after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[kaito]))
        KaitoModel("phi", KaitoModelArgs(kaito_version=model_version, model=PHI), opts=after)

    message = refused(lambda: program("0.8.1"), ("kaito-aks:index:KaitoOperator", "kubernetes:helm.sh"))
    assert (
        "args.kaito_version: KaitoOperator 'kaito' (in its options) installs KAITO 0.12.0, but this is checked by KAITO "
        "0.8.1's rules: one cluster runs one KAITO, so give 0.12.0"
    ) in message
    assert run(lambda: program("0.12.0")).of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")

    def group() -> None:
        opts = cluster()
        rag = RagEngineOperator("rag", RagEngineOperatorArgs(version="0.12.0"), opts=opts)
        after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[rag]))
        deploy_models("models", [("phi", KaitoModelArgs(kaito_version="0.11.0", model=PHI))], opts=after)
        RagEngine("docs", RagEngineArgs(kaito_version="0.11.0"), opts=after)

    before = ("kaito-aks:index:RagEngineOperator", "kubernetes:helm.sh")
    assert "installs KAITO 0.12.0, but this is checked by KAITO 0.11.0's rules" in refused(group, before)


def test_an_unsized_gpu_preset_says_what_cannot_be_checked(caplog: pytest.LogCaptureFixture):
    args = KaitoModelArgs(kaito_version="0.8.1", model="llama-3.3-70b-instruct", model_access_secret="hf")
    run(lambda: KaitoModel("llama", args, opts=cluster()))
    assert (
        "args.node_groups: not given: KAITO sizes llama-3.3-70b-instruct against the GPU nodes it finds" in caplog.text
    )
    assert "its node estimate and the pools' budget are not checked before deploy" in caplog.text


def test_a_pool_described_by_hand_is_selected_by_its_name_as_aks_labels_it():
    """NodeGroup.name is the pool's agentpool label (its doc), whoever made the pool."""
    group = NodeGroup(name="gpu", vm_size=A10, gpu_driver="aks")
    args = KaitoModelArgs(
        kaito_version="0.8.1",
        model=PHI,
        node_groups=[group],
        label_selector=LabelSelectorArgs(match_labels={"agentpool": "gpu"}),
    )
    assert check_model(args, "phi")[1] == []
    other = KaitoModelArgs(
        kaito_version="0.8.1",
        model=PHI,
        node_groups=[group],
        label_selector=LabelSelectorArgs(match_labels={"agentpool": "a100"}),
    )
    assert [p.code for p in check_model(other, "phi")[1]] == ["no-pool-matches"]


def test_a_retired_or_unknown_keyword_is_a_clean_refusal_not_a_type_error():
    message = refused(
        lambda: KaitoModel(
            "phi", KaitoModelArgs(kaito_version="0.8.1", model=PHI, preferred_nodes=["n"], replica=2), opts=cluster()
        )
    )  # type: ignore[call-arg]
    assert "args.preferred_nodes: removed in KAITO 0.8; use label_selector" in message
    assert "args.replica: unknown key; did you mean replicas?" in message


def test_deploy_models_says_every_problem_in_one_round():
    """A gated model without a token, two models their pool cannot hold, no credentials: one round."""
    a10 = NodeGroup(name="a10", vm_size=A10, labels={"agentpool": "a10"}, gpu_driver="aks")
    on = LabelSelectorArgs(match_labels={"agentpool": "a10"})

    def program() -> None:
        deploy_models(
            "models",
            [
                ("a", KaitoModelArgs(kaito_version="0.8.1", model=PHI, label_selector=on, node_groups=[a10])),
                (
                    "b",
                    KaitoModelArgs(
                        kaito_version="0.8.1", model="llama-3.1-8b-instruct", label_selector=on, node_groups=[a10]
                    ),
                ),
            ],
        )

    message = refused(program)
    assert "args.b.model: KAITO 0.8.1 denies it" in message
    assert "args.node_groups[0]: KAITO admits each of these, but pool a10 has at most 1 node" in message
    assert "args.access: the waits read the cluster" in message
    assert "3 problem(s)" in message


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"timeout_minutes": math.nan}, "args.timeout_minutes: must be a finite number of minutes, not nan"),
        ({"timeout_minutes": math.inf}, "args.timeout_minutes: must be a finite number of minutes, not inf"),
        ({"timeout_minutes": -5}, "args.timeout_minutes: must be more than 0 and at most 1440 minutes"),
        ({"timeout_minutes": "30"}, "args.timeout_minutes: must be a number of minutes, not '30'"),
        ({"access": None}, "args.access: must be a ClusterAccess"),
        ({"kinds": ["workspaces"]}, "args.kinds: entry 0 must be a KaitoKind, not 'workspaces'"),
        ({"kinds": []}, "args.kinds: must name at least one a KaitoKind"),
        ({"require_webhook": "yes"}, "args.require_webhook: must be true or false, not 'yes'"),
    ],
)
def test_kaito_ready_checks_its_args(given: dict[str, Any], said: str):
    kw: dict[str, Any] = {
        "access": ClusterAccess(kubeconfig=MOCK_KUBECONFIG.format(cluster="dev")),
        "kinds": [KaitoKind("workspaces", "v1beta1")],
        "require_webhook": True,
        **given,
    }
    assert said in refused(lambda: KaitoReady("kaito/ready", **kw))
