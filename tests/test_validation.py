"""One test per config rule: each bad config fails before any resource is registered, with the
config path and the fix in the message."""

from __future__ import annotations

import pytest

from tests.conftest import config, errors_of, run

WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"

PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
CPU = {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
TUNING = {
    "name": "tune",
    "model": "phi-4-mini-instruct",
    "tuning": {
        "method": "qlora",
        "input": {"urls": ["https://example.com/data.parquet"]},
        "output": {"image": "registry.example.com/adapters/phi:1", "imagePushSecret": "push"},
    },
}


def one_error(cfg, **kw) -> str:
    errors = errors_of(cfg, **kw)
    assert len(errors) == 1, errors
    return errors[0]


def test_preferred_nodes_is_rejected_with_its_replacement():
    err = one_error(config([PHI, {**PHI, "name": "p2", "preferredNodes": ["node-1"]}]))
    assert err == "workspaces[1].preferredNodes: removed in KAITO 0.8; use labelSelector"


def test_unknown_workspace_key_suggests_the_known_one():
    err = one_error(config([{**PHI, "replica": 2}]))
    assert err == "workspaces[0].replica: unknown key; did you mean replicas?"


def test_unknown_config_key_suggests_the_known_one():
    err = one_error({**config([PHI]), "kaito-aks:workspace": []})
    assert err.startswith("kaito-aks:workspace: unknown config key; did you mean kaito-aks:workspaces?")


def test_missing_cluster_says_what_to_set():
    err = one_error({"kaito-aks:workspaces": [PHI]})
    assert err.startswith("kaito-aks:cluster: required: set kubeconfig")


def test_cluster_needs_exactly_one_kind():
    err = one_error(config([PHI], cluster={"kubeconfig": {}, "existing": {"resourceGroup": "rg", "name": "c"}}))
    assert err.startswith("cluster: choose exactly one of kubeconfig")


@pytest.mark.parametrize("name", ["Phi", "phi_4", "-phi", "a" * 64])
def test_workspace_name_must_be_a_dns_label(name):
    err = one_error(config([{**PHI, "name": name}]))
    assert err.startswith("workspaces[0].name: '")
    assert "DNS-1123 label" in err


def test_namespace_must_be_a_dns_label():
    err = one_error(config([{**PHI, "namespace": "LLM"}]))
    assert err.startswith("workspaces[0].namespace: 'LLM' is not a DNS-1123 label")


def test_generated_workspace_names_must_leave_room_for_the_statefulset_hash():
    err = one_error(config([{**PHI, "name": "a" * 51}]))
    assert err.startswith("workspaces[0].name: Workspace name")
    assert "at most 52" in err


def test_duplicate_names_in_a_namespace():
    err = one_error(config([PHI, {**PHI}]))
    assert err.startswith("workspaces[1].name: default/phi is also created for workspaces[0]")


def test_same_name_in_two_namespaces_is_fine():
    ev = run(config([PHI, {**PHI, "namespace": "team-b"}]))
    placed = {(w.inputs["metadata"]["namespace"], w.inputs["metadata"]["name"]) for w in ev.of_type(WORKSPACE)}
    assert placed == {("default", "phi-0"), ("team-b", "phi-0")}


def test_replica_names_may_not_collide_with_another_workspace():
    err = one_error(config([{**PHI, "replicas": 2}, {**PHI, "name": "phi-1"}]))
    assert err.startswith("workspaces[1].name: default/phi-1 is also created for workspaces[0]")


def test_replicas_at_least_one():
    err = one_error(config([{**PHI, "replicas": 0}]))
    assert (
        err
        == "workspaces[0].replicas: must be from 1 to 1000, not 0 (a replica needs a node of its own; an AKS pool has at most 1000)"
    )


def test_wrong_types_name_the_path():
    err = one_error(config([{**PHI, "replicas": "two"}]))
    assert err.startswith("workspaces[0].replicas: must be a whole number, not 'two'")


def test_model_and_image_are_exclusive():
    err = one_error(config([{**PHI, "image": "x/y:1"}]))
    assert err == "workspaces[0]: give model (a KAITO preset) or image (a custom serving image), not both"


def test_model_or_image_is_required():
    err = one_error(config([{"name": "empty"}]))
    assert err.startswith("workspaces[0]: give model (a KAITO preset")


def test_preset_on_cpu_needs_an_image():
    err = one_error(config([{**PHI, "compute": "cpu"}]))
    assert err.startswith("workspaces[0].compute: preset 'phi-4-mini-instruct' needs GPUs; for CPU serving give image")


def test_unknown_preset_suggests_close_names():
    err = one_error(config([{**PHI, "model": "phi4-mini-instruct"}]))
    assert err.startswith(
        "workspaces[0].model: unknown KAITO 0.8.1 preset 'phi4-mini-instruct'; did you mean phi-4-mini-instruct"
    )


def test_hugging_face_ids_need_kaito_0_9_or_later():
    cfg = [{**PHI, "model": "microsoft/Phi-4-mini-instruct"}]
    assert "unknown KAITO 0.8.1 preset" in one_error(config(cfg))
    from tests.conftest import run

    run(config(cfg, kaito={"version": "0.12.0"}))


def test_phi_2_is_deprecated():
    err = one_error(config([{**PHI, "model": "phi-2"}]))
    assert err.startswith("workspaces[0].model: phi-2 is deprecated and rejected by KAITO")


def test_gated_preset_needs_the_hf_token():
    err = one_error(config([{**PHI, "model": "llama-3.1-8b-instruct"}]))
    assert err.startswith(
        "workspaces[0].model: llama-3.1-8b-instruct is gated on Hugging Face: run `pulumi config set --secret hfToken"
    )


def test_gated_preset_may_use_an_existing_secret_instead():
    ev = run(config([{**PHI, "model": "llama-3.1-8b-instruct", "modelAccessSecret": "hf"}]))
    (ws,) = ev.of_type(WORKSPACE)
    assert ws.inputs["inference"]["preset"]["presetOptions"] == {"modelAccessSecret": "hf"}
    assert ev.of_type("kubernetes:core/v1:Secret") == []  # the existing one is used, none created


def test_model_access_secret_on_a_preset_baked_into_an_image_is_rejected():
    err = one_error(config([{**PHI, "modelAccessSecret": "hf"}]))
    assert err.startswith("workspaces[0].modelAccessSecret: phi-4-mini-instruct ships its weights in an image")


def test_hf_token_must_be_a_secret():
    from pulumi.runtime import mocks  # noqa: F401 - keep pulumi's runtime imported

    from stacks.errors import StackConfigError
    from stacks.load import parse_stack_config

    with pytest.raises(StackConfigError) as err:
        parse_stack_config({"cluster": {"kubeconfig": {}}}, secrets=["hfToken"], plaintext_secrets=["hfToken"])
    assert err.value.lines[0].startswith("kaito-aks:hfToken: must be a secret: run `pulumi config set --secret hfToken")


def test_instance_type_is_rejected_in_byo_mode():
    err = one_error(config([{**PHI, "instanceType": "Standard_NC24ads_A100_v4"}]))
    assert err.startswith("workspaces[0].instanceType: KAITO rejects an instance type with bring-your-own nodes")


def test_the_inference_set_gate_is_refused_with_per_replica_workspaces():
    err = one_error(config([PHI], kaito={"featureGates": {"enableInferenceSetController": True}}))
    assert err.startswith("kaito.featureGates.enableInferenceSetController: with KAITO 0.8.1 this program serves")
    assert "adopts and deletes" in err
    run(config([PHI], kaito={"version": "0.12.0", "featureGates": {"enableInferenceSetController": True}}))


def test_ensure_node_class_gate_exists_in_0_8():
    ev = run(config([PHI], kaito={"featureGates": {"ensureNodeClass": False}}))
    (release,) = ev.of_type("kubernetes:helm.sh/v3:Release")
    assert release.inputs["values"]["featureGates"]["ensureNodeClass"] is False


def test_tuning_only_on_presets_that_support_it():
    err = one_error(config([{**TUNING, "model": "falcon-7b-instruct"}]))
    assert err.startswith("workspaces[0].tuning: KAITO cannot fine-tune falcon-7b-instruct; tunable presets:")


def test_tuning_input_needs_exactly_one_source():
    tuning = {**TUNING["tuning"], "input": {"urls": ["https://x"], "image": "data:1"}}
    err = one_error(config([{**TUNING, "tuning": tuning}]))
    assert err == "workspaces[0].tuning.input: needs exactly one of urls, image or volumeSource"


def test_tuning_output_image_needs_a_push_secret():
    tuning = {**TUNING["tuning"], "output": {"image": "registry.example.com/a:1"}}
    err = one_error(config([{**TUNING, "tuning": tuning}]))
    assert err == "workspaces[0].tuning.output.imagePushSecret: required with image: a Secret to push the adapter with"


def test_tuning_runs_once():
    err = one_error(config([{**TUNING, "replicas": 2}]))
    assert err == "workspaces[0].replicas: a tuning job runs once; replicas must be 1"


def test_unknown_feature_gate_would_crash_the_controller():
    err = one_error(config([PHI], kaito={"featureGates": {"enableMIG": True}}))
    assert err.startswith(
        "kaito.featureGates.enableMIG: unknown feature gate for KAITO 0.8.1 (the controller would crash)"
    )


def test_unknown_feature_gate_in_values_too():
    err = one_error(config([PHI], kaito={"values": {"featureGates": {"vllm": True}}}))
    assert err.startswith("kaito.values.featureGates.vllm: unknown feature gate")


def test_node_provisioning_gate_is_owned_by_node_provisioning():
    err = one_error(config([PHI], kaito={"featureGates": {"disableNodeAutoProvisioning": False}}))
    assert err == "kaito.featureGates.disableNodeAutoProvisioning: set by nodeProvisioning (byo | auto); remove it"


def test_feature_gates_are_booleans():
    err = one_error(config([PHI], kaito={"featureGates": {"vLLM": "yes please"}}))
    assert err.startswith("kaito.featureGates.vLLM: must be true or false, not 'yes please'")


def test_version_outside_the_supported_table():
    err = one_error(config([PHI], kaito={"version": "0.7.2"}))
    assert err == "kaito.version: KAITO 0.7.2 is not supported; use one of: 0.8.0, 0.8.1, 0.12.0"


def test_an_unsupported_version_does_not_hide_the_workspace_errors():
    bad = {"name": "Bad_Name", "model": "phi-4-mini-instruct", "image": "example/llm:1"}
    errs = errors_of(config([bad], kaito={"version": "9.9.9"}))
    assert errs[0].startswith("kaito.version: KAITO 9.9.9 is not supported")
    assert "workspaces[0]: give model (a KAITO preset) or image (a custom serving image), not both" in errs
    assert any(e.startswith("workspaces[0].name: 'Bad_Name' is not a DNS-1123 label") for e in errs)


def test_chart_values_must_exist_in_the_chart():
    err = one_error(config([PHI], kaito={"values": {"nodeProvisioner": "byo"}}))
    assert err == "kaito.values.nodeProvisioner: not a value of the KAITO 0.8.1 workspace chart"


def test_empty_label_selector_is_rejected():
    err = one_error(config([{**PHI, "labelSelector": {}}]))
    assert err.startswith("workspaces[0].labelSelector: matches every node; give matchLabels")


def test_byo_presets_need_match_labels():
    selector = {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}
    err = one_error(config([{**PHI, "labelSelector": selector}]))
    assert err.startswith("workspaces[0].labelSelector: KAITO finds bring-your-own GPU nodes by matchLabels")


def test_runtime_is_for_presets():
    err = one_error(config([{**CPU, "runtime": "transformers"}]))
    assert err.startswith("workspaces[0].runtime: selects how KAITO serves a preset")


def test_at_most_ten_adapters():
    adapters = [{"name": f"a{i}", "image": f"r/a{i}:1"} for i in range(11)]
    err = one_error(config([{**PHI, "adapters": adapters}]))
    assert err == "workspaces[0].adapters: has 11 entries; at most 10 (KAITO serves at most 10 per workspace)"


def test_adapter_strength_between_zero_and_one():
    err = one_error(config([{**PHI, "adapters": [{"name": "a", "image": "r/a:1", "strength": 1.5}]}]))
    assert err == "workspaces[0].adapters[0].strength: must be from 0 to 1, not 1.5"


def test_install_false_takes_no_chart_settings():
    err = one_error(config([PHI], kaito={"install": False, "featureGates": {"vLLM": False}}))
    assert err.startswith("kaito.install: featureGates and values configure the chart we install")


def test_every_problem_is_reported_at_once():
    errors = errors_of(config([{**PHI, "model": "phi-2"}, {**PHI, "name": "B"}], kaito={"featureGates": {"x": True}}))
    assert [e.split(":")[0] for e in errors] == ["kaito.featureGates.x", "workspaces[0].model", "workspaces[1].name"]


def test_kubeconfig_secret_only_for_kubeconfig_clusters():
    from stacks.errors import StackConfigError
    from stacks.load import parse_stack_config

    aks = {"aks": {"resourceGroup": "rg", "name": "c", "location": "eastus2"}}
    with pytest.raises(StackConfigError) as err:
        parse_stack_config({"cluster": aks}, secrets=["kubeconfig"])
    assert err.value.lines[0].startswith("kaito-aks:kubeconfig: only used with cluster.kubeconfig")
    with pytest.raises(StackConfigError) as err:
        parse_stack_config({"cluster": {"kubeconfig": {"path": "k"}}}, secrets=["kubeconfig"])
    assert err.value.lines[0].startswith("cluster.kubeconfig.path: the secret kaito-aks:kubeconfig already gives")


@pytest.mark.parametrize("contents", ["", "  \n"])
def test_an_empty_kubeconfig_secret_is_refused_not_read_as_the_local_kubeconfig(contents: str):
    """`pulumi config set --secret kubeconfig "$(cat missing-file)"`: the provider would read
    $KUBECONFIG or ~/.kube/config, and so would the waits."""
    from stacks.errors import StackConfigError
    from stacks.evaluate import ProgramMocks, RecordingMonitor, evaluate

    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(StackConfigError) as err:
        evaluate(
            config([PHI, {**PHI, "name": "p2", "replica": 2}], cluster={"kubeconfig": {}}),
            secrets={"kaito-aks:kubeconfig": contents},
            monitor=monitor,
        )
    assert monitor.registrations == []
    assert err.value.lines == [  # with the other problems, all at once
        "kaito-aks:kubeconfig: is empty, and the Kubernetes provider would then read $KUBECONFIG or ~/.kube/config "
        "(perhaps another cluster): give the kubeconfig's contents: `pulumi config set --secret kubeconfig < "
        "kubeconfig.yaml`, or `pulumi config rm kubeconfig` to use cluster.kubeconfig.path",
        "workspaces[1].replica: unknown key; did you mean replicas?",
    ]


def test_kubeconfig_secret_feeds_the_provider_as_a_secret():
    from stacks.evaluate import Secret, evaluate, reveal

    ev = evaluate(
        config([PHI], cluster={"kubeconfig": {"context": "ctx"}}),
        secrets={"kaito-aks:kubeconfig": "apiVersion: v1\nkind: Config\n"},
    )
    provider = ev.named("cluster", "pulumi:providers:kubernetes")
    assert isinstance(provider.inputs["kubeconfig"], Secret)
    assert reveal(provider.inputs["kubeconfig"]).startswith("apiVersion: v1")
    assert provider.inputs["context"] == "ctx"


def test_collision_messages_name_the_original_entry():
    errors = errors_of(config(["oops", PHI, PHI]))
    assert errors[0] == "workspaces[0]: must be a map of key: value, not 'oops'"
    assert errors[-1] == (
        "workspaces[2].name: default/phi is also created for workspaces[1]; choose names that do not collide "
        "(replicas are named <name>-0, <name>-1, ...)"
    )


def test_values_feature_gates_must_be_a_map_of_booleans():
    assert one_error(config([PHI], kaito={"values": {"featureGates": "vLLM=true"}})).startswith(
        "kaito.values.featureGates: must be a map of gate: true|false"
    )
    assert one_error(config([PHI], kaito={"values": {"featureGates": {"vLLM": "true"}}})).startswith(
        "kaito.values.featureGates.vLLM: must be true or false"
    )


def test_node_provisioner_value_is_owned_by_node_provisioning():
    err = one_error(config([PHI], kaito={"version": "0.12.0", "values": {"nodeProvisioner": "azure-gpu-provisioner"}}))
    assert err == "kaito.values.nodeProvisioner: set by nodeProvisioning (byo | auto); remove it"


@pytest.mark.parametrize("namespace", ["kube-system", "kaito-workspace", "gpu-operator"])
def test_reserved_namespaces(namespace):
    err = one_error(config([{**PHI, "namespace": namespace}]))
    assert err.startswith(f"workspaces[0].namespace: {namespace} belongs to the cluster or an operator release")


def test_vllm_refuses_adapter_strength():
    adapter = {"name": "sql", "image": "registry.example.com/sql:1", "strength": 0.5}
    err = one_error(config([{**PHI, "adapters": [adapter]}]))
    assert err == (
        "workspaces[0].adapters[0].strength: vLLM does not support adapter strength; remove it or set runtime "
        "transformers"
    )


def test_vllm_refuses_adapters_on_presets_that_disallow_lora():
    adapter = {"name": "sql", "image": "registry.example.com/sql:1"}
    err = one_error(config([{**PHI, "model": "falcon-7b-instruct", "adapters": [adapter]}]))
    assert err == (
        "workspaces[0].adapters: vLLM does not support LoRA adapters for falcon-7b-instruct; set runtime "
        "transformers or drop the adapters"
    )
    run(config([{**PHI, "model": "falcon-7b-instruct", "runtime": "transformers", "adapters": [adapter]}]))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("8k", "must be a whole number of tokens, not '8k' (KAITO parses it as an integer)"),
        (4096.5, "must be a whole number of tokens, not 4096.5 (KAITO parses it as an integer)"),
        (200000, "200000 exceeds phi-4-mini-instruct's context window of 131072 tokens"),
    ],
)
def test_max_model_len_is_an_integer_within_the_context_window(value, message):
    err = one_error(config([{**PHI, "config": {"vllm": {"max-model-len": value}}}]))
    assert err == f"workspaces[0].config.vllm.max-model-len: {message}"


def test_presets_removed_in_0_12_are_refused():
    err = one_error(config([{**PHI, "model": "falcon-7b"}], kaito={"version": "0.12.0"}))
    assert err.startswith("workspaces[0].model: KAITO 0.12.0 no longer serves falcon-7b")
    run(config([{**PHI, "model": "falcon-7b"}]))


@pytest.mark.parametrize("model", ["phi-4-mini-instruct", "ministral-3-8b-instruct"])
def test_0_12_has_no_transformers_runtime_for_some_presets(model):
    err = one_error(config([{**PHI, "model": model, "runtime": "transformers"}], kaito={"version": "0.12.0"}))
    assert err == f"workspaces[0].runtime: KAITO 0.12.0 cannot serve {model} with transformers; use vllm"
    run(config([{**PHI, "model": model, "runtime": "transformers"}]))  # 0.8.1 can


def test_model_access_secret_on_a_public_preset_only_0_12_accepts():
    ws = {**PHI, "modelAccessSecret": "hf"}
    assert one_error(config([ws])).startswith("workspaces[0].modelAccessSecret: phi-4-mini-instruct ships its weights")
    run(config([ws], kaito={"version": "0.12.0"}))
