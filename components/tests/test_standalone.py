"""A program written outside this repository gets every check the stack gets: the library alone
refuses what the stack's config would be refused for, before anything registers (review 1:
B3, B4, B5, G1, G2, G4, G7)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    GpuNodePool,
    GpuNodePoolArgs,
    GpuOperator,
    GpuOperatorArgs,
    InferenceServiceArgs,
    InvalidArgsError,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    LabelSelectorArgs,
    NodeGroup,
    RagComputeArgs,
    RagEngine,
    RagEngineArgs,
    RagEngineOperator,
    RagEngineOperatorArgs,
    check_model,
    check_together,
    pool_budget,
)
from kaito_aks.model import component
from kaito_aks.model_group import deploy_models
from kaito_aks.serving.spec import ModelAutoscaleArgs
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, reveal, run

A100 = "Standard_NC24ads_A100_v4"
T4 = "Standard_NC4as_T4_v3"
KUBECONFIG = MOCK_KUBECONFIG.format(cluster="dev")
WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
PHI = "phi-4-mini-instruct"


def refused(program: Any) -> str:
    """The InvalidArgsError a program raises; nothing registered but the program's own cluster."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)
    own = ("pulumi:providers:kubernetes", "kaito-aks:index:KubeconfigCluster")
    assert [r.type for r in monitor.registrations if r.type not in own] == []
    return str(err.value)


def cluster() -> KubeconfigCluster:
    return KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=KUBECONFIG))


def through(c: KubeconfigCluster) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(providers=[c.provider])


def pool(name: str, vm_size: str = A100, **kw: Any) -> NodeGroup:
    kw.setdefault("gpu_driver", "aks")
    return NodeGroup(name=name, vm_size=vm_size, labels={"agentpool": name, "nvidia.com/gpu.present": "true"}, **kw)


def on_pool(name: str, **kw: Any) -> KaitoModelArgs:
    return KaitoModelArgs(
        kaito_version=kw.pop("kaito_version", "0.8.1"),
        model=PHI,
        label_selector=LabelSelectorArgs(match_labels={"agentpool": name}),
        **kw,
    )


# ---------------------------------------------------------------- B3: empty kubeconfig contents


@pytest.mark.parametrize("contents", ["", "   \n"])
def test_empty_kubeconfig_contents_are_refused_never_the_ambient_kubeconfig(contents: str):
    message = refused(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=contents)))
    assert "args.kubeconfig: is empty, and the Kubernetes provider would then read $KUBECONFIG" in message
    message = refused(
        lambda: KaitoModel(
            "m", KaitoModelArgs(kaito_version="0.8.1", model=PHI, kubeconfig=contents), opts=through_plain()
        )
    )
    assert "args.kubeconfig: is empty" in message
    message = refused(
        lambda: RagEngine("r", RagEngineArgs(kaito_version="0.12.0", kubeconfig=contents), opts=through_plain())
    )
    assert "args.kubeconfig: is empty" in message


def test_a_refusal_is_a_pulumi_run_error_so_preview_shows_no_traceback():
    """Pulumi's Python host prints a RunError's message alone; any other exception with its traceback."""
    message = refused(
        lambda: KaitoModel("m", KaitoModelArgs(kaito_version="0.9.0", model=PHI), opts=through(cluster()))
    )
    with pytest.raises(pulumi.RunError):
        run(lambda: KaitoModel("m", KaitoModelArgs(kaito_version="0.9.0", model=PHI), opts=through(cluster())))
    assert "KAITO 0.9.0 is not supported" in message


def test_a_gated_model_too_big_for_its_pool_is_told_both_at_once():
    """The stranger's check: the token problem does not hide the sizing one."""
    a10 = pool("a10", "Standard_NV36ads_A10_v5")
    args = on_pool("a10", node_groups=[a10])
    args = dataclasses.replace(args, model="llama-3.3-70b-instruct")
    message = refused(lambda: KaitoModel("m", args, opts=through(cluster())))
    assert 'args.model: KAITO 0.8.1 denies it ("This preset requires authentication' in message
    assert "args.model: KAITO 0.8.1's admission webhook would deny it: Insufficient total GPU memory" in message
    assert "1 problem(s)" not in message, message


def test_kubeconfig_contents_must_have_the_context_given():
    """Review 4: a file path was checked for its context, contents were not."""
    message = refused(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=KUBECONFIG, context="prod")))
    assert "args.context: the kubeconfig contents (kubeconfig): no context 'prod'; it has: dev" in message, message
    assert "server" not in message  # the contents stay unshown


def test_kubeconfig_contents_known_at_preview_must_list_a_cluster():
    message = refused(
        lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig="apiVersion: v1\nkind: Config\n"))
    )
    assert "args.kubeconfig: is not a kubeconfig (it lists no clusters)" in message
    message = refused(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig="token: [s3cret")))
    assert "args.kubeconfig: is not a kubeconfig (not YAML)" in message
    assert "s3cret" not in message  # never quoted: it holds credentials


def test_kubeconfig_contents_known_only_at_deploy_time_fail_the_provider_when_empty():
    with pytest.raises(Exception, match="the kubeconfig contents is empty"):
        run(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=pulumi.Output.from_input(""))))
    ev = run(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=pulumi.Output.from_input(KUBECONFIG))))
    assert reveal(ev.named("c", "pulumi:providers:kubernetes").inputs["kubeconfig"]) == KUBECONFIG


def through_plain() -> pulumi.ResourceOptions:
    """An explicit provider that gives the waits no credentials."""
    return pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(KUBECONFIG)))


# ---------------------------------------------------------------- B4: spot pools on KAITO 0.8


def test_a_model_on_kaito_0_8_refuses_a_spot_pool_it_selects():
    spot = pool("spot", spot=True)
    message = refused(lambda: KaitoModel("m", on_pool("spot", node_groups=[spot]), opts=through(cluster())))
    assert (
        "args.node_groups[0].spot: KAITO admits this, but KAITO 0.8.1's pods do not tolerate the AKS spot taint; use "
        "KAITO 0.11.0 or 0.12.0 (spotInstance) or a regular pool (to deploy it anyway: bypass_checks: [spot])"
    ) in message
    # a spot pool it does not select, or KAITO 0.12 (spotInstance), is fine
    regular = pool("a100")
    ev = run(lambda: KaitoModel("m", on_pool("a100", node_groups=[spot, regular]), opts=through(cluster())))
    assert len(ev.of_type(WORKSPACE)) == 1
    ev = run(
        lambda: KaitoModel("m", on_pool("spot", node_groups=[spot], kaito_version="0.12.0"), opts=through(cluster()))
    )
    assert [r for r in ev.resources if r.type.endswith(":InferenceSet")]


# ---------------------------------------------------------------- B5 and polish 5: defaulted names


def test_a_pools_default_name_is_checked_like_a_given_one():
    def program() -> None:
        GpuNodePool("gpu-pool-a100-east", GpuNodePoolArgs(cluster_name="c", resource_group_name="r", vm_size=A100))

    message = refused(program)
    assert (
        "args.name: 'gpu-pool-a100-east' is not an AKS node pool name: 1-12 lowercase letters and digits, starting "
        "with a letter; it is the resource name, which name defaults to: set name"
    ) in message
    ev = run(
        lambda: GpuNodePool(
            "gpu-pool-a100-east", GpuNodePoolArgs(cluster_name="c", resource_group_name="r", vm_size=A100, name="a100")
        )
    )
    assert ev.named("gpu-pool-a100-east", "azure-native:containerservice:AgentPool").inputs["agentPoolName"] == "a100"


def test_a_models_default_name_says_it_is_the_resource_name():
    quiet = {"wait_for_gpu_nodes": False, "wait_for_ready": False}
    message = refused(
        lambda: KaitoModel("Phi_4", KaitoModelArgs(kaito_version="0.8.1", model=PHI, **quiet), opts=through_plain())
    )
    assert "args.name: 'Phi_4' is not a DNS-1123 label" in message
    assert "it is the resource name, which name defaults to: set name" in message
    given = refused(
        lambda: KaitoModel(
            "m", KaitoModelArgs(kaito_version="0.8.1", model=PHI, name="Phi_4", **quiet), opts=through_plain()
        )
    )
    assert "defaults to" not in given


# ---------------------------------------------------------------- G1: every check the stack makes


def test_deploy_models_refuses_two_models_whose_objects_collide():
    def program() -> None:
        c = cluster()
        deploy_models(
            "models",
            [
                ("a", KaitoModelArgs(kaito_version="0.8.1", model=PHI, name="phi")),
                ("b", KaitoModelArgs(kaito_version="0.8.1", model="phi-4", name="phi")),
            ],
            opts=through(c),
        )

    message = refused(program)
    assert (
        "args.b.name: default/phi is also created for a; choose names that do not collide (replicas are named "
        "<name>-0, <name>-1, ...)"
    ) in message

    # replicas: phi (2 replicas) makes phi-1, which a model named phi-1 would take as well
    def replicas() -> None:
        deploy_models(
            "models",
            [
                ("a", KaitoModelArgs(kaito_version="0.8.1", model=PHI, name="phi", replicas=2)),
                ("b", KaitoModelArgs(kaito_version="0.8.1", model=PHI, name="phi-1")),
            ],
            opts=through(cluster()),
        )

    assert "args.b.name: default/phi-1 is also created for a" in refused(replicas)


def test_deploy_models_refuses_models_that_fit_their_pool_only_one_at_a_time():
    """Review 4: the stack's pool budget, now in the library. Each phi-4-mini takes a whole A10
    node; a one-node pool holds one of them."""
    a10 = pool("a10", "Standard_NV36ads_A10_v5")

    def program(nodes: int) -> None:
        group = NodeGroup(
            name=a10.name, vm_size=a10.vm_size, labels=a10.labels, max_nodes=nodes, min_nodes=nodes, gpu_driver="aks"
        )
        deploy_models(
            "models",
            [(n, on_pool("a10", node_groups=[group])) for n in ("a", "b")],
            opts=through(cluster()),
        )

    message = refused(lambda: program(1))
    assert (
        "args.node_groups[0]: KAITO admits each of these, but pool a10 has at most 1 node of Standard_NV36ads_A10_v5, "
        "and 2 are needed at once: a takes 1 (1 replica(s) x 1 node, KAITO's vLLM estimate); b takes 1 (1 replica(s) "
        "x 1 node, KAITO's vLLM estimate). Each KAITO pod takes every GPU of its node, so the rest would stay Pending: "
        "give the pool 1 node more (max_nodes), or select another pool for one of them (label_selector) (to deploy it "
        "anyway: bypass_checks: [pool-budget])"
    ) in message
    assert len(run(lambda: program(2)).of_type(WORKSPACE)) == 2


def test_node_groups_with_auto_provisioning_are_warned_about_not_ignored(caplog: pytest.LogCaptureFixture):
    """Review 4: KAITO creates the nodes of instance_type; groups given there check nothing. They
    change nothing either, so they are said, not refused (issue 28)."""
    args = KaitoModelArgs(
        kaito_version="0.12.0", model=PHI, node_provisioning="auto", instance_type=A100, node_groups=[pool("a100")]
    )
    run(lambda: KaitoModel("m", args, opts=through(cluster())))
    assert "args.node_groups: describe bring-your-own nodes, which KAITO does not use" in caplog.text


def test_deploy_models_refuses_models_of_two_kaito_releases():
    """Review 4: the models of one call go to one cluster (`opts`), which runs one KAITO."""

    def program() -> None:
        deploy_models(
            "models",
            [("a", on_pool("a100")), ("b", on_pool("a100", kaito_version="0.12.0"))],
            opts=through(cluster()),
        )

    assert "args.models: mixes KAITO 0.12.0, 0.8.1; the models of one call share one cluster" in refused(program)


def test_deploy_models_names_a_list_of_args_without_resource_names():
    def program() -> None:
        deploy_models("models", [on_pool("a100")], opts=through(cluster()))  # type: ignore[list-item]

    assert "args.models[0]: must be (resource name, KaitoModelArgs), not a KaitoModelArgs" in refused(program)


def test_a_program_of_separate_components_asks_pool_budget():
    a10 = NodeGroup(name="a10", vm_size="Standard_NV36ads_A10_v5", labels={"agentpool": "a10"})
    models = [(n, on_pool("a10", node_groups=[a10])) for n in ("a", "b")]
    engine = RagEngineArgs(
        kaito_version="0.8.1",
        inference_service=InferenceServiceArgs(
            url="http://a.default.svc/v1/chat/completions", context_window_size=4096
        ),
        compute=RagComputeArgs(
            instance_type="Standard_NV36ads_A10_v5", label_selector=LabelSelectorArgs(match_labels={"agentpool": "a10"})
        ),
    )
    [problem] = pool_budget(models[:1], [a10], [("docs", engine)])
    assert problem.path == ("node_groups", 0)
    assert "docs takes 1 (KAITO 0.8.1 gives an engine that embeds locally every GPU" in problem.message
    assert pool_budget(models[:1], [dataclasses.replace(a10, max_nodes=2, min_nodes=2)], [("docs", engine)]) == []


def test_a_pool_described_by_hand_is_checked_like_a_gpu_node_pool():
    misspelt = pool("q", vm_size="Standard_NC24ads_A100_v5")
    upside_down = pool("q", min_nodes=5, max_nodes=1)
    for group, expected in (
        (
            misspelt,
            "args.node_groups[0].vm_size: Standard_NC24ads_A100_v5 is not a GPU VM size KAITO knows; did you mean Standard_NC24ads_A100_v4",
        ),
        (upside_down, "args.node_groups[0].min_nodes: is greater than max_nodes (5 > 1)"),
    ):
        model = refused(lambda g=group: KaitoModel("m", on_pool("q", node_groups=[g]), opts=through(cluster())))
        assert expected in model
        operator = refused(
            lambda g=group: KaitoOperator(
                "kaito", KaitoOperatorArgs(version="0.8.1", node_groups=[g]), opts=through(cluster())
            )
        )
        assert expected in operator
        gpu = refused(lambda g=group: GpuOperator("gpu", GpuOperatorArgs(node_groups=[g]), opts=through(cluster())))
        assert expected in gpu


def test_a_gpu_kaito_dropped_is_named_in_one_message_wherever_pools_are_taken(caplog: pytest.LogCaptureFixture):
    """KAITO 0.12 admits bring-your-own nodes by their GPU labels alone, so a GPU its table dropped
    is a warning (issue 28), said alike by the operator and the model."""
    t4 = pool("t4", vm_size=T4, gpu_driver="aks", driver_installed=True)
    expected = (
        "args.node_groups[0].vm_size: KAITO 0.12.0 no longer supports NVIDIA T4 (Standard_NC4as_T4_v3): its SKU table keeps "
        "only GPUs of CUDA compute capability 8.0 or newer (KAITO v0.12.0 pkg/sku/azure_sku_handler.go:19-20), and the "
        "T4's is 7.5; the nearest size it takes: Standard_NV36ads_A10_v5 (1x NVIDIA A10, 24 GiB)"
    )
    run(lambda: KaitoOperator("kaito", KaitoOperatorArgs(version="0.12.0", node_groups=[t4]), opts=through(cluster())))
    assert expected in caplog.text
    caplog.clear()
    run(lambda: KaitoModel("m", on_pool("t4", node_groups=[t4], kaito_version="0.12.0"), opts=through(cluster())))
    assert expected in caplog.text
    ev = run(
        lambda: KaitoOperator("kaito", KaitoOperatorArgs(version="0.8.1", node_groups=[t4]), opts=through(cluster()))
    )
    assert ev.named("kaito", "kubernetes:helm.sh/v3:Release")


# ---------------------------------------------------------------- G2: never the default provider


def test_every_in_cluster_component_needs_an_explicit_kubernetes_provider():
    quiet = {"wait_for_gpu_nodes": False, "wait_for_ready": False}
    expected = (
        "opts: no Kubernetes provider: deploy through AksCluster.provider / KubeconfigCluster.provider or pass a "
        "kubernetes Provider in opts"
    )
    programs = [
        lambda: KaitoModel("m", KaitoModelArgs(kaito_version="0.8.1", model=PHI, **quiet)),
        lambda: KaitoOperator("kaito", KaitoOperatorArgs(version="0.8.1")),
        lambda: GpuOperator("gpu", GpuOperatorArgs()),
        lambda: RagEngineOperator("rag", RagEngineOperatorArgs(version="0.12.0")),
        lambda: RagEngine("rag", RagEngineArgs(kaito_version="0.12.0", wait_for_ready=False)),
    ]
    for program in programs:
        assert expected in refused(program)


def test_a_provider_inherited_from_a_parent_counts_and_carries_its_credentials():
    def program() -> None:
        c = cluster()
        parent = pulumi.ComponentResource(
            "my:index:Models", "parent", None, pulumi.ResourceOptions(providers=[c.provider])
        )
        KaitoModel("m", KaitoModelArgs(kaito_version="0.8.1", model=PHI), opts=pulumi.ResourceOptions(parent=parent))

    ev = run(program)
    (workspace,) = ev.of_type(WORKSPACE)
    assert workspace.provider_urn == ev.named("c", "pulumi:providers:kubernetes").urn
    ready = ev.named("m/ready", "pulumi-python:dynamic/kaito-aks:ModelReady")
    assert reveal(ready.inputs["kubeconfig"]) == KUBECONFIG  # the waits got the parent's ClusterProvider's


# ---------------------------------------------------------------- G4: the model rules run once


def test_deploy_models_checks_each_model_once(monkeypatch: pytest.MonkeyPatch):
    counts: dict[str, int] = {}
    rules = component.model_verdict

    def counted(args: KaitoModelArgs) -> tuple[list[Any], list[Any]]:
        counts[args.name or ""] = counts.get(args.name or "", 0) + 1
        return rules(args)

    monkeypatch.setattr(component, "model_verdict", counted)

    def program() -> None:
        models = [(n, KaitoModelArgs(kaito_version="0.8.1", model=PHI, name=n)) for n in ("a", "b")]
        deploy_models("models", models, opts=through(cluster()))

    ev = run(program)
    assert len(ev.of_type(WORKSPACE)) == 2
    assert counts == {"a": 1, "b": 1}


# ---------------------------------------------------------------- G7: Pulumi's plain mocks


class PlainMocks(pulumi.runtime.Mocks):
    """The mocks Pulumi's docs show: every resource echoes its inputs, every call answers {}."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return {}


def test_plain_pulumi_mocks_get_a_clear_error_from_aks_cluster_not_a_type_error():
    errors: list[BaseException] = []

    def program() -> None:
        AksCluster("c", AksClusterArgs(resource_group="rg", name="kaito", location="eastus"))

    pulumi.runtime.set_mocks(PlainMocks(), preview=False)
    try:

        @pulumi.runtime.test
        def declared() -> pulumi.Output[Any]:
            program()
            return pulumi.Output.from_input(None)

        declared()
    except Exception as err:
        errors.append(err)
    assert errors, "the missing credentials went unnoticed"
    assert not isinstance(errors[0], TypeError), errors[0]
    assert "listManagedClusterUserCredentials" in str(errors[0])


def test_kubeconfig_contents_pulumi_yaml_hands_over_as_a_map_reach_the_waits():
    """Pulumi YAML passes a YAML-looking secret config value to construct already parsed."""
    parsed = {"apiVersion": "v1", "clusters": [{"name": "dev", "cluster": {"server": "https://dev"}}]}

    def program() -> None:
        KaitoModel(
            "m",
            KaitoModelArgs(kaito_version="0.8.1", model=PHI, kubeconfig=pulumi.Output.secret(parsed)),  # type: ignore[arg-type]
            opts=through_plain(),
        )

    ev = run(program)
    assert reveal(ev.named("m/ready", "pulumi-python:dynamic/kaito-aks:ModelReady").inputs["kubeconfig"]) == parsed


# ---------------------------------------------------------------- the models and engines of one cluster together


def test_check_together_refuses_a_rag_engine_named_like_a_model_for_every_program():
    """The RAG engine's Service is named after it: a model's name in its namespace collides (the
    stack checked this alone before; check_together is the library's, deploy_models' and the stack's)."""
    engine = RagEngineArgs(
        kaito_version="0.8.1",
        name="a",
        inference_service=InferenceServiceArgs(
            url="http://a.default.svc/v1/chat/completions", context_window_size=4096
        ),
    )
    together = check_together([("a", KaitoModelArgs(kaito_version="0.8.1", model=PHI, name="a"))], [("docs", engine)])
    [problem] = together.problems
    assert problem.path == ("engines", 0, "name")
    assert problem.code == "name-collision"
    assert problem.message.startswith("default/a is also a name a creates; KAITO names the engine's Service after it")


def test_the_pools_budget_gives_the_count_that_fits_every_model_on_the_pool_in_one_answer():
    """Issue 36: llama on an A100 pool of 2 nodes beside phi autoscaled 1-3 on the same pool. Phi's
    own rule would say "give the pool 1 node more" (phi alone needs 3); the pools' budget counts it
    with llama (4 at once) and its answer, 2 more, is the only one given."""
    a100 = NodeGroup(name="a100", vm_size="Standard_NC24ads_A100_v4", min_nodes=2, max_nodes=2, gpu_driver="aks")
    groups = {"kaito_version": "0.12.0", "node_groups": [a100]}
    llama = dataclasses.replace(on_pool("a100", **groups), model="llama-3.1-8b-instruct", hf_token="hf_not_a_token")
    phi = on_pool("a100", autoscale=ModelAutoscaleArgs(min_replicas=1, max_replicas=3), **groups)
    models = [("llama", llama), ("phi", phi)]
    own = [check_model(a, n)[1] for n, a in models]
    assert [p.code for p in own[1]] == ["replicas-fit"]  # alone: "give the pool 1 node more"
    together = check_together(models, own=own)
    assert together.own(1, own[1]) == []  # the budget's count replaces it
    [problem] = together.problems
    assert problem.path == ("node_groups", 0)
    assert "at most 2 nodes of Standard_NC24ads_A100_v4, and 4 are needed at once" in problem.message
    assert "give the pool 2 nodes more" in problem.message


def test_deploy_models_gives_one_pool_size_answer():
    a100 = NodeGroup(name="a100", vm_size="Standard_NC24ads_A100_v4", min_nodes=2, max_nodes=2, gpu_driver="aks")
    groups = {"kaito_version": "0.12.0", "node_groups": [a100]}
    llama = dataclasses.replace(on_pool("a100", **groups), model="llama-3.1-8b-instruct", hf_token="hf_not_a_token")
    phi = on_pool("a100", autoscale=ModelAutoscaleArgs(min_replicas=1, max_replicas=3), **groups)
    said = refused(lambda: deploy_models("models", [("llama", llama), ("phi", phi)], opts=through(cluster())))
    assert "give the pool 2 nodes more" in said
    assert "give the pool 1 node more" not in said
