"""One test per config rule: each bad config fails before any resource is registered, with the
config path and the fix in the message."""

from __future__ import annotations

import pytest

from kaito_aks.problems import shown
from tests.conftest import config, errors_of, run, warnings_of

WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"

PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
CPU = {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
TUNING = {
    "name": "tune",
    "model": "phi-4-mini-instruct",
    "instanceType": "Standard_NC24ads_A100_v4",
    "tuning": {
        "method": "qlora",
        "input": {"urls": ["https://example.com/data.parquet"]},
        "output": {"image": "registry.example.com/adapters/phi:1", "imagePushSecret": "push"},
    },
}


# KAITO sizes a tuning job from the workspace's instanceType (preset_tuning.go:148), so it tunes
# only with node auto-provisioning: KAITO installed elsewhere, creating the node.
AUTO = {"install": False, "nodeProvisioning": "auto"}


def tuned(workspaces, **kaito):
    """A stack of tuning workspaces on a KAITO that creates their nodes."""
    return config(workspaces, kaito={**AUTO, **kaito})


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
    assert err.startswith("workspaces[0].name: KAITO admits this, but Workspace name")
    assert "at most 52" in err
    assert err.endswith("(to deploy it anyway: bypassChecks: [name-length])")


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
        'workspaces[0].model: KAITO 0.8.1 denies it ("This preset requires authentication and needs a '
        'modelAccessSecret"): give hfToken, or modelAccessSecret (an existing Secret with key HF_TOKEN); in this '
        "stack: run `pulumi config set --secret hfToken"
    )
    # gated on Hugging Face, but KAITO's catalog (0.11+) never asks a secret: admitted, and the download fails
    err = one_error(config([{**PHI, "model": "llama-3.1-8b-instruct"}], kaito={"version": "0.12.0"}))
    assert err.startswith("workspaces[0].model: KAITO admits this, but llama-3.1-8b-instruct is gated on Hugging Face")
    assert err.endswith("(to deploy it anyway: bypassChecks: [gated])")


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
    from stacks.load import stack_config

    with pytest.raises(StackConfigError) as err:
        stack_config({"cluster": {"kubeconfig": {}}}, secrets=["hfToken"], plaintext_secrets=["hfToken"])
    assert err.value.lines[0].startswith("kaito-aks:hfToken: must be a secret: run `pulumi config set --secret hfToken")


def test_instance_type_is_rejected_in_byo_mode():
    err = one_error(config([{**PHI, "instanceType": "Standard_NC24ads_A100_v4"}]))
    assert err.startswith("workspaces[0].instanceType: KAITO rejects an instance type with bring-your-own nodes")


def test_the_inference_set_gate_is_warned_about_with_per_replica_workspaces():
    """It takes over Workspaces only for an InferenceSet of a model's name, which the program creates
    none of: it may, so it is said, not refused (issue 28)."""
    said = warnings_of(config([PHI], kaito={"featureGates": {"enableInferenceSetController": True}}))
    (warning,) = said
    assert warning.startswith("kaito.featureGates.enableInferenceSetController: with KAITO 0.8.1 this program serves")
    assert "adopts and deletes" in warning
    run(config([PHI], kaito={"version": "0.12.0", "featureGates": {"enableInferenceSetController": True}}))


def test_ensure_node_class_gate_exists_in_0_8():
    ev = run(config([PHI], kaito={"featureGates": {"ensureNodeClass": False}}))
    (release,) = ev.of_type("kubernetes:helm.sh/v3:Release")
    assert release.inputs["values"]["featureGates"]["ensureNodeClass"] is False


def test_tuning_only_on_presets_that_support_it():
    err = one_error(tuned([{**TUNING, "model": "falcon-7b-instruct"}]))
    assert err.startswith("workspaces[0].tuning: KAITO 0.8.1 cannot fine-tune falcon-7b-instruct; tunable presets:")


@pytest.mark.parametrize("version", ["0.11.0", "0.12.0"])
def test_mistral_7b_cannot_be_fine_tuned_on_0_11_or_0_12(version):
    """0.11 and 0.12 serve mistral-7b as mistral-7b-v0.3; its tuning parameters call MustGet("mistral-7b-v0.3"),
    which supported_models.yaml does not have (vllm_model.go 0.11.0:241-258, 0.12.0:256-271): the controller panics, so
    the webhook's admission would only lead to a tuning job that never starts."""
    gated = {**TUNING, "model": "mistral-7b", "modelAccessSecret": "hf"}  # gated from 0.11 (a download)
    err = one_error(tuned([gated], version=version))
    assert err.startswith(f"workspaces[0].tuning: KAITO {version} cannot fine-tune mistral-7b; tunable presets: ")
    assert "mistral-7b," not in err
    assert "phi-4-mini-instruct" in err
    run(tuned([{**TUNING, "model": "mistral-7b"}]))


def test_tuning_input_needs_exactly_one_source():
    tuning = {**TUNING["tuning"], "input": {"urls": ["https://x"], "image": "data:1"}}
    err = one_error(tuned([{**TUNING, "tuning": tuning}]))
    assert err == "workspaces[0].tuning.input: needs exactly one of urls, image or volumeSource"


def test_tuning_output_image_needs_a_push_secret():
    tuning = {**TUNING["tuning"], "output": {"image": "registry.example.com/a:1"}}
    err = one_error(tuned([{**TUNING, "tuning": tuning}]))
    assert err == "workspaces[0].tuning.output.imagePushSecret: required with image: a Secret to push the adapter with"


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://example.com/data.parquet", "data source URL must use HTTP or HTTPS"),
        ("file:///data/train.parquet", "invalid data source URL"),
        ("http://localhost:8080/data.parquet", "data source URL must not target a local or metadata endpoint"),
        ("http://metadata.google.internal/x", "data source URL must not target a local or metadata endpoint"),
        ("http://10.0.0.5/data.parquet", "data source URL must not target a loopback, private, or link-local address"),
        ("http://[fe80::1%25eth0]/d", "data source URL must not target a loopback, private, or link-local address"),
    ],
)
def test_tuning_urls_kaito_0_12_refuses(url, error):
    """validateDataSourceURL, new in 0.12.0 (workspace_validation.go:355-361, 383-413)."""
    ws = {**TUNING, "tuning": {**TUNING["tuning"], "input": {"urls": ["https://example.com/a.parquet", url]}}}
    err = one_error(tuned([ws], version="0.12.0"))
    assert err == f"workspaces[0].tuning.input.urls[1]: KAITO 0.12.0 denies it: {error}"
    run(tuned([ws]))  # 0.8.1 checks no URL
    run(tuned([ws], version="0.11.0"))  # nor does 0.11.0


QLORA = {"QuantizationConfig": {"load_in_4bit": True}, "TrainingArguments": {"output_dir": "/mnt/results"}}


@pytest.mark.parametrize(
    ("method", "given", "where", "message"),
    [
        ("qlora", {"lora": {}}, "training_config", "required: a map of sections (KAITO: \"Expected 'training_config'"),
        (
            "qlora",
            {**QLORA, "LoRAConfig": {"r": 8}},
            "training_config.LoRAConfig",
            "Unrecognized section (KAITO); did ",
        ),
        ("qlora", {"LoraConfig": {"r": 8}}, "training_config.QuantizationConfig", "method qlora needs load_in_4bit or"),
        (
            "qlora",
            {"QuantizationConfig": {"load_in_4bit": "yes"}},
            "training_config.QuantizationConfig.load_in_4bit",
            "must be true, false or null, not 'yes' (KAITO: value must be either nil or a boolean)",
        ),
        (
            "qlora",
            {"QuantizationConfig": {"load_in_4bit": True, "load_in_8bit": True}},
            "training_config.QuantizationConfig",
            "KAITO denies load_in_4bit and load_in_8bit both true",
        ),
        ("lora", QLORA, "training_config.QuantizationConfig", "KAITO denies load_in_4bit or load_in_8bit true with"),
        (
            "qlora",
            {**QLORA, "TrainingArguments": {"output_dir": "../results"}},
            "training_config.TrainingArguments.output_dir",
            "must name a directory under /mnt (KAITO: Invalid output_dir specified: '../results', must be a directory)",
        ),
        (
            "qlora",
            {**QLORA, "TrainingArguments": {"output_dir": 1}},
            "training_config.TrainingArguments.output_dir",
            "must be text, not 1 (KAITO: output_dir is not a string)",
        ),
    ],
)
@pytest.mark.parametrize("version", ["0.8.1", "0.12.0"])
def test_tuning_config_is_checked_as_kaito_checks_training_config_yaml(method, given, where, message, version):
    """tuning_config_validation.go (0.8.1:108-264, 0.12.0:108-263): the sections, the quantization
    the method implies, and an output_dir under /mnt."""
    body = given if "lora" in given else {"training_config": given}
    ws = {**TUNING, "tuning": {**TUNING["tuning"], "method": method, "config": body}}
    err = one_error(tuned([ws], version=version))
    assert err.startswith(f"workspaces[0].tuning.config.{where}: {message}"), err


def test_a_tuning_config_kaito_admits():
    ws = {**TUNING, "tuning": {**TUNING["tuning"], "config": {"training_config": {**QLORA, "LoraConfig": {"r": 8}}}}}
    run(tuned([ws], version="0.12.0"))
    lora = {
        "training_config": {"QuantizationConfig": {"load_in_4bit": False}, "TrainingArguments": {"output_dir": "x"}}
    }
    run(tuned([{**ws, "tuning": {**ws["tuning"], "method": "lora", "config": lora}}]))


@pytest.mark.parametrize(
    ("volume", "where", "message"),
    [
        (
            {"persistentVolumeClaim": {"claim": "data"}},
            "persistentVolumeClaim.claim",
            "not a field of Kubernetes' PersistentVolumeClaimVolumeSource (KAITO decodes it strictly: json: unknown "
            'field "claim"); did you mean claimName?',
        ),
        ({"pvc": {"claimName": "data"}}, "pvc", "not a field of Kubernetes' VolumeSource (KAITO decodes it strictly"),
        ({"emptyDir": {"sizeLimit": "10 GB"}}, "emptyDir.sizeLimit", "'10 GB' is not a Kubernetes quantity"),
        ({"hostPath": {"path": 1}}, "hostPath.path", "must be text, not 1"),
        (
            {"emptyDir": {}, "hostPath": {"path": "/d"}},
            "",
            "KAITO admits this, but it gives 2 volume types (emptyDir, hostPath) and Kubernetes",
        ),
    ],
)
@pytest.mark.parametrize("side", ["input", "output"])
def test_tuning_volume_sources_are_decoded_as_kaito_decodes_them(volume, where, message, side):
    """KAITO's webhook decodes the Workspace strictly (pkg/workspace/webhooks/webhooks.go, knative with
    DisallowUnknownFields); volumeSource is schemaless, so the API server prunes nothing before it."""
    ws = {**TUNING, "tuning": {**TUNING["tuning"], side: {"volumeSource": volume}}}
    err = one_error(tuned([ws]))
    path = f"workspaces[0].tuning.{side}.volumeSource" + (f".{where}" if where else "")
    assert err.startswith(f"{path}: {message}"), err


def test_a_volume_source_kaito_decodes():
    pvc = {"persistentVolumeClaim": {"claimName": "data", "readOnly": True}}
    run(tuned([{**TUNING, "tuning": {**TUNING["tuning"], "input": {"volumeSource": pvc}}}]))


@pytest.mark.parametrize(
    ("resources", "where", "message"),
    [
        ({"limit": {"cpu": "2"}}, "limit", "not a field of Kubernetes' ResourceRequirements (KAITO decodes it"),
        ({"limits": {"memory": "8 GB"}}, "limits.memory", "'8 GB' is not a Kubernetes quantity (e.g. 500m, 2, 16Gi)"),
        ({"requests": ["cpu"]}, "requests", "must be a map"),
    ],
)
def test_custom_image_resources_are_decoded_as_kaito_decodes_them(resources, where, message):
    """inference.template is schemaless too: KAITO's strict decoding sees the container's resources."""
    err = one_error(config([{**CPU, "resources": resources}]))
    assert err.startswith(f"workspaces[0].resources.{where}: {message}"), err
    run(config([{**CPU, "resources": {"requests": {"cpu": 0.5, "memory": "4Gi"}, "limits": {"memory": "8Gi"}}}]))


def test_tuning_runs_once():
    err = one_error(tuned([{**TUNING, "replicas": 2}]))
    assert err == "workspaces[0].replicas: a tuning job runs once; replicas must be 1"


def test_unknown_feature_gate_would_crash_the_controller():
    err = one_error(config([PHI], kaito={"featureGates": {"enableMIG": True}}))
    assert err.startswith(
        "kaito.featureGates.enableMIG: unknown feature gate for KAITO 0.8.1 (the controller would crash)"
    )


def test_unknown_feature_gate_in_values_too():
    err = one_error(config([PHI], kaito={"values": {"featureGates": {"vllm": True}}}))
    assert err.startswith("kaito.values.featureGates.vllm: unknown feature gate")
    assert err.endswith("did you mean vLLM?")  # review 4: the gate it resembles, not the whole list


def test_node_provisioning_gate_is_owned_by_node_provisioning():
    err = one_error(config([PHI], kaito={"featureGates": {"disableNodeAutoProvisioning": False}}))
    assert err == "kaito.featureGates.disableNodeAutoProvisioning: set by nodeProvisioning (byo | auto); remove it"


def test_model_streaming_needs_model_mirror():
    """KAITO's controller exits at start-up otherwise (cmd/workspace/main.go 0.11.0:163-168, 0.12.0:166-171)."""
    streaming = {"version": "0.12.0", "featureGates": {"ModelStreaming": True}}
    assert one_error(config([PHI], kaito=streaming)) == (
        "kaito.featureGates.ModelStreaming: KAITO's controller exits at start-up (\"ModelStreaming feature gate "
        'requires ModelMirror to be enabled"); set ModelMirror true as well'
    )
    in_values = {"version": "0.12.0", "values": {"featureGates": {"ModelStreaming": True}}}
    assert one_error(config([PHI], kaito=in_values)).startswith("kaito.values.featureGates.ModelStreaming: ")
    run(config([PHI], kaito={"version": "0.12.0", "featureGates": {"ModelStreaming": True, "ModelMirror": True}}))


def test_with_the_vllm_gate_off_every_model_runs_transformers():
    """KAITO ignores kaito.sh/runtime when the vLLM gate is off (api/v1beta1/labels.go 0.8.1:49-66,
    0.12.0:118-137), so its transformers rules apply to every model."""
    off = {"featureGates": {"vLLM": False}}
    ev = run(config([{**PHI, "adapters": [{"name": "sql", "image": "r.io/sql:1", "strength": 0.5}]}], kaito=off))
    (ws,) = ev.of_type(WORKSPACE)
    assert ws.inputs["metadata"]["annotations"] == {"kaito.sh/runtime": "transformers"}
    assert warnings_of(config([{**PHI, "runtime": "vllm"}], kaito=off)) == [
        "workspaces[0].runtime: KAITO serves every model with transformers while kaito.featureGates.vLLM is false "
        "(it ignores kaito.sh/runtime), so it has no effect: remove runtime, or turn the gate on"
    ]
    assert one_error(config([PHI], kaito={**off, "version": "0.12.0"})) == (
        "kaito.featureGates.vLLM: KAITO 0.12.0 cannot serve phi-4-mini-instruct with transformers; use vllm"
    )


def test_with_the_vllm_gate_off_a_custom_image_is_left_alone():
    """Review 2 P3: the gate picks how KAITO serves a preset; an image serves itself, and used to
    be refused at kaito.featureGates.vLLM."""
    image = {"name": "mine", "image": "example.io/llm:1"}
    ev = run(config([PHI, image], kaito={"featureGates": {"vLLM": False}}))
    mine = [w for w in ev.of_type(WORKSPACE) if w.inputs["metadata"]["name"] == "mine-0"]
    assert [w.inputs["metadata"].get("annotations") for w in mine] == [None]
    # a runtime on an image is said once, by the image's own rule (review 3)
    said = warnings_of(config([PHI, {**image, "runtime": "vllm"}], kaito={"featureGates": {"vLLM": False}}))
    assert said == [
        "workspaces[1].runtime: selects how KAITO serves a preset; a custom image serves itself, so it has no effect"
    ]


def test_feature_gates_are_booleans():
    err = one_error(config([PHI], kaito={"featureGates": {"vLLM": "yes please"}}))
    assert err.startswith("kaito.featureGates.vLLM: must be true or false, not 'yes please'")


def test_version_outside_the_supported_table():
    err = one_error(config([PHI], kaito={"version": "0.7.2"}))
    assert err == (
        "kaito.version: KAITO 0.7.2 is not supported; use one of: 0.6.0 (the AKS add-on's), 0.8.0, 0.8.1, 0.11.0, 0.12.0"
    )


def test_an_unsupported_version_does_not_hide_the_workspace_errors():
    bad = {"name": "Bad_Name", "model": "phi-4-mini-instruct", "image": "example/llm:1"}
    errs = errors_of(config([bad], kaito={"version": "9.9.9"}))
    assert errs[0].startswith("kaito.version: KAITO 9.9.9 is not supported")
    assert "workspaces[0]: give model (a KAITO preset) or image (a custom serving image), not both" in errs
    assert any(e.startswith("workspaces[0].name: 'Bad_Name' is not a DNS-1123 label") for e in errs)


def test_chart_values_the_chart_does_not_read_are_warned_about():
    """Helm passes a value the chart does not read: no effect, so a warning (issue 28)."""
    said = warnings_of(config([PHI], kaito={"values": {"nodeProvisioner": "byo"}}))
    assert said == ["kaito.values.nodeProvisioner: not a value of the KAITO 0.8.1 workspace chart"]


def test_empty_label_selector_is_rejected_for_a_byo_preset_and_warned_about_for_an_image():
    """KAITO lists bring-your-own nodes by matchLabels: with none, every node, the system pool's among them, whose
    nodes have no GPU labels ("Failed to get GPU config", workspace_validation.go 0.8.1:394). An image is admitted."""
    err = one_error(config([{**PHI, "labelSelector": {}}]))
    assert err.startswith("workspaces[0].labelSelector: KAITO lists bring-your-own nodes by matchLabels")
    assert (
        "workspaces[0].labelSelector: matches every node (KAITO admits it): give matchLabels to pick nodes"
        in warnings_of(config([{**CPU, "labelSelector": {}}]))
    )


def test_byo_presets_need_match_labels():
    selector = {"matchExpressions": [{"key": "agentpool", "operator": "In", "values": ["gpu"]}]}
    err = one_error(config([{**PHI, "labelSelector": selector}]))
    assert err.startswith("workspaces[0].labelSelector: KAITO lists bring-your-own nodes by matchLabels")


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ({"key": "zone", "operator": "NotIn", "values": ["1"]}, 'operator "NotIn" cannot be converted'),
        ({"key": "zone", "operator": "Exists"}, 'operator "Exists" cannot be converted'),
        (
            {"key": "zone", "operator": "In", "values": ["1", "2"]},
            'operator "In" without a single value cannot be converted',
        ),
    ],
)
@pytest.mark.parametrize("workspace", [PHI, CPU])
def test_match_expressions_must_convert_to_match_labels(expression, why, workspace):
    """KAITO denies a selector metav1.LabelSelectorAsMap cannot convert, presets and custom images alike
    (workspace_validation.go 0.8.1:360-364, 0.12.0:508-511; on update 0.12.0:813-816)."""
    selector = {"matchLabels": {"agentpool": "gpu"}, "matchExpressions": [expression]}
    err = one_error(config([{**workspace, "labelSelector": selector}]))
    assert err == (
        f"workspaces[0].labelSelector.matchExpressions[0]: KAITO denies it ({why} into the old label selector "
        "format): use In with one value, or matchLabels"
    )
    one = {"key": "zone", "operator": "In", "values": ["1"]}
    run(config([{**workspace, "labelSelector": {**selector, "matchExpressions": [one]}}]))


def test_labels_kaito_reserves_for_its_own_nodes_are_refused_in_a_selector_from_0_11():
    """KAITO 0.11+ drops reserved keys from a selector, and denies one left empty
    (workspace_validation.go 0.12.0:513-533, labels.go:218-259)."""
    only = {"matchLabels": {"kaito.sh/workspace": "phi"}}
    err = one_error(config([{**PHI, "labelSelector": only}], kaito={"version": "0.12.0"}))
    assert err == (
        'workspaces[0].labelSelector.matchLabels."kaito.sh/workspace": KAITO 0.12.0 reserves this label for the '
        'nodes it manages and denies a selector left without another ("matchLabels must contain at least one '
        'non-reserved label"); select by another label'
    )
    mixed = {"matchLabels": {"agentpool": "gpu", "karpenter.kaito.sh/workspace-name": "phi"}}
    (warning,) = warnings_of(config([{**PHI, "labelSelector": mixed}], kaito={"version": "0.12.0"}))  # KAITO drops it
    assert warning.startswith('workspaces[0].labelSelector.matchLabels."karpenter.kaito.sh/workspace-name": KAITO ')
    assert warning.endswith("drops it from a selector, so it has no effect; select by another label")
    run(config([{**PHI, "labelSelector": only}]))  # 0.8.1 lists nodes by every label given
    err = one_error(config([{**PHI, "labelSelector": only}], kaito={"version": "0.11.0"}))
    assert err.startswith('workspaces[0].labelSelector.matchLabels."kaito.sh/workspace": KAITO 0.11.0 reserves')


def test_runtime_is_for_presets():
    said = warnings_of(config([{**CPU, "runtime": "transformers"}]))
    assert any(w.startswith("workspaces[0].runtime: selects how KAITO serves a preset") for w in said), said


def test_at_most_ten_adapters():
    adapters = [{"name": f"a{i}", "image": f"r/a{i}:1"} for i in range(11)]
    err = one_error(config([{**PHI, "adapters": adapters}]))
    assert err == "workspaces[0].adapters: has 11 entries; at most 10 (KAITO serves at most 10 per workspace)"


def test_adapter_names_fit_the_container_and_volume_kaito_names_after_them():
    """KAITO names an adapter's init container puller-<name> and, with pull secrets, a volume
    docker-config-<name>-inference-adapter (manifests.go 0.8.1:283-290, 0.12.0:252-260); both are
    DNS-1123 labels, or the StatefulSet is refused after admission."""
    long = "a" * 57
    err = one_error(config([{**PHI, "adapters": [{"name": long, "image": "registry.example.com/sql:1"}]}]))
    assert err == (
        f"workspaces[0].adapters[0].name: {long!r} is not an adapter name: a DNS-1123 label of at most 56 characters "
        "(KAITO names its init container puller-<name>)"
    )
    dotted = one_error(config([{**PHI, "adapters": [{"name": "sql.v1", "image": "registry.example.com/sql:1"}]}]))
    assert dotted.startswith("workspaces[0].adapters[0].name: 'sql.v1' is not an adapter name")
    secret = {"name": "a" * 32, "image": "registry.example.com/sql:1", "imagePullSecrets": ["acr"]}
    assert one_error(config([{**PHI, "adapters": [secret]}])) == (
        "workspaces[0].adapters[0].name: KAITO admits this, but with imagePullSecrets it names a volume "
        "docker-config-<name>-inference-adapter, over 63 characters for a name of 32, and Kubernetes refuses the "
        "StatefulSet: at most 31 characters (to deploy it anyway: bypassChecks: [adapter-name-length])"
    )
    run(config([{**PHI, "adapters": [{**secret, "name": "a" * 31}, {"name": "b" * 56, "image": "r.io/b:1"}]}]))


@pytest.mark.parametrize(
    ("image", "error"),
    [
        ("0" * 64, f"invalid repository name ({'0' * 64}), cannot specify 64-byte hexadecimal strings"),
        ("-registry.example.com/sql:1", "invalid reference format"),
        ("myorg/Sql:1", "invalid reference format: repository name (myorg/Sql) must be lowercase"),
        ("registry.example.com/" + "s" * 256 + ":1", "repository name must not be more than 255 characters"),
        ("registry.example.com/sql@md5:" + "0" * 32, "unsupported digest algorithm"),
        ("registry.example.com/sql@sha256:" + "0" * 63, "invalid checksum digest length"),
    ],
)
@pytest.mark.parametrize("where", ["adapters[0].image", "tuning.input.image", "tuning.output.image"])
def test_images_must_parse_as_kaito_parses_them(image, error, where):
    """KAITO parses adapter and tuning images with distribution/reference's ParseDockerRef
    (workspace_validation.go 0.8.1:252-256, 288-290; 0.12.0:363-366, 431-433)."""
    tuning = TUNING["tuning"]
    ws = {
        "adapters[0].image": {**PHI, "adapters": [{"name": "sql", "image": image}]},
        "tuning.input.image": {**TUNING, "tuning": {**tuning, "input": {"image": image}}},
        "tuning.output.image": {**TUNING, "tuning": {**tuning, "output": {**tuning["output"], "image": image}}},
    }[where]
    assert one_error(config([ws]) if where.startswith("adapters") else tuned([ws])) == (
        f"workspaces[0].{where}: {shown(image)} is not an image reference: {error} (e.g. myacr.azurecr.io/adapters/sql:1)"
    )


def test_images_kaito_parses_are_accepted():
    for image in ("[fd00::1]:5000/adapters/sql:1", "registry.example.com/sql@sha512:" + "0" * 128, "Registry/sql:1"):
        run(config([{**PHI, "adapters": [{"name": "sql", "image": image}]}]))


def test_adapter_strength_between_zero_and_one():
    err = one_error(config([{**PHI, "adapters": [{"name": "a", "image": "r/a:1", "strength": 1.5}]}]))
    assert err == "workspaces[0].adapters[0].strength: must be from 0 to 1, not 1.5"


def test_install_false_takes_no_chart_settings():
    """Chart settings of a KAITO the stack does not install have no effect: said (issue 28)."""
    said = warnings_of(config([PHI], kaito={"install": False, "featureGates": {"ensureNodeClass": False}}))
    assert said == [
        "kaito.featureGates: configures the chart this stack installs; with kaito.install: false it has no effect: set "
        "it where KAITO is installed"
    ]
    (warning,) = warnings_of(config([PHI], kaito={"install": False, "values": {"logging": {"level": "debug"}}}))
    assert warning.startswith("kaito.values: configures the chart this stack installs")


def test_every_problem_is_reported_at_once():
    errors = errors_of(config([{**PHI, "model": "phi-2"}, {**PHI, "name": "B"}], kaito={"featureGates": {"x": True}}))
    assert [e.split(":")[0] for e in errors] == ["kaito.featureGates.x", "workspaces[0].model", "workspaces[1].name"]


def test_kubeconfig_secret_only_for_kubeconfig_clusters():
    from stacks.errors import StackConfigError
    from stacks.load import stack_config

    aks = {"aks": {"resourceGroup": "rg", "name": "c", "location": "eastus2"}}
    with pytest.raises(StackConfigError) as err:
        stack_config({"cluster": aks}, secrets=["kubeconfig"])
    assert err.value.lines[0].startswith("kaito-aks:kubeconfig: only used with cluster.kubeconfig")
    with pytest.raises(StackConfigError) as err:
        stack_config({"cluster": {"kubeconfig": {"path": "k"}}}, secrets=["kubeconfig"])
    assert err.value.lines[0] == (
        "cluster.kubeconfig.path: give the kubeconfig's contents (kubeconfig) or a file (path), not both; the secret "
        "kaito-aks:kubeconfig gives the contents already: remove one of them"
    )


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
    assert err == "kaito.values.nodeProvisioner: set by nodeProvisioning (byo | auto) and nodeProvisioner; remove it"


@pytest.mark.parametrize("namespace", ["kube-system", "kaito-workspace", "gpu-operator"])
def test_reserved_namespaces(namespace):
    """KAITO has no namespace rule; the stack creates the namespace, and one of the cluster's or an operator's
    cannot be created again: refused. Without createNamespaces it is said (the library warns)."""
    err = one_error(config([{**PHI, "namespace": namespace}]))
    assert err.startswith(f"workspaces[0].namespace: {namespace} exists already or belongs to an operator release")
    said = warnings_of(config([{**PHI, "namespace": namespace}], createNamespaces=False))
    assert said == [
        f"workspaces[0].namespace: {namespace} belongs to the cluster or an operator release (KAITO admits it): use a "
        "namespace of your own"
    ]


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
        ("8k", "must be a whole number of tokens, not '8k' (KAITO denies it: \"max-model-len must be an integer\")"),
        (4096.5, 'must be a whole number of tokens, not 4096.5 (KAITO denies it: "max-model-len must be an integer")'),
        (200000, "200000 exceeds phi-4-mini-instruct's context window of 131072 tokens"),
    ],
)
def test_max_model_len_is_an_integer_within_the_context_window(value, message):
    err = one_error(config([{**PHI, "config": {"vllm": {"max-model-len": value}}}]))
    assert err == f"workspaces[0].config.vllm.max-model-len: {message}"


@pytest.mark.parametrize(
    ("given", "where", "message"),
    [
        (
            {"vllm": ["--max-model-len", "4096"]},
            "config.vllm",
            "must be a map of vLLM arguments (KAITO: cannot unmarshal !!seq into map[string]string)",
        ),
        ({"vllm": "hello"}, "config.vllm", "must be a map of vLLM arguments (KAITO: cannot unmarshal !!str into"),
        (
            {"vllm": None},
            "config.vllm",
            "KAITO admits this, but its vLLM runtime reads `vllm: null` as None and fails on it (inference_api.py), so "
            "the server never starts: give a map or leave it out (to deploy it anyway: bypassChecks: [config-vllm-null])",
        ),
        (
            {"vllm": {"served-model-name": ["a", "b"]}},
            "config.vllm.served-model-name",
            "must be one value (KAITO: cannot unmarshal !!seq into string)",
        ),
        (
            {"vllm": {"speculative-config": {"method": "ngram"}}},
            "config.vllm.speculative-config",
            "must be one value (KAITO: cannot unmarshal !!map into string)",
        ),
        (
            {"kv_cache_cpu_memory_utilization": "half"},
            "config.kv_cache_cpu_memory_utilization",
            "KAITO admits this, but its vLLM runtime compares it with 0 (inference_api.py), which fails for 'half' and "
            "the server never starts: give a number",
        ),
    ],
)
@pytest.mark.parametrize(("model", "version"), [("phi-4-mini-instruct", "0.8.1"), ("Qwen/Qwen3.5-2B", "0.12.0")])
def test_runtime_config_is_what_kaito_reads_from_inference_config_yaml(given, where, message, model, version):
    """The webhook decodes `vllm` into map[string]string (inference_config_validation.go 0.8.1:35-39,
    86-89; 0.12.0:34-38, 79-82); KAITO's vLLM runtime reads vllm, kv_cache_cpu_memory_utilization and
    max_probe_steps and passes each vllm entry as --<name> str(value) (inference_api.py KaitoConfig); the
    node estimator scans the text for an unquoted max-model-len (pkg/utils/config_parser.go)."""
    err = one_error(config([{**PHI, "model": model, "config": given}], kaito={"version": version}))
    assert err.startswith(f"workspaces[0].{where}: {message}"), err


@pytest.mark.parametrize(
    ("given", "where", "message"),
    [
        (
            {"vllm": {"swap-space": None}},
            "config.vllm.swap-space",
            'is null: KAITO\'s vLLM runtime passes the text "None", which vLLM reads as unset only for arguments that '
            "may be None: give a value or remove it",
        ),
        (
            {"vllm": {"max_model_len": 8192}},
            "config.vllm.max_model_len",
            "write max-model-len: KAITO's webhook and node estimator read only that spelling (vLLM takes both), so "
            "KAITO sizes the model for 2048 tokens",
        ),
        (
            {"vllm": {"max-model-len": "4096"}},
            "config.vllm.max-model-len",
            "write the number 4096, not the text '4096': KAITO admits the text, but its node estimator (0.8+) reads "
            "only an unquoted number and sizes the model for 2048 tokens",
        ),
        (
            {"transformers": {"max_length": 4096}},
            "config.transformers",
            "KAITO reads only vllm, kv_cache_cpu_memory_utilization, max_probe_steps from inference_config.yaml, so "
            "this has no effect",
        ),
        ({"vlm": {}}, "config.vlm", "KAITO reads only vllm, kv_cache_cpu_memory_utilization, max_probe_steps from"),
        (
            {"kv_cache_cpu_memory_utilization": True},
            "config.kv_cache_cpu_memory_utilization",
            "is bool True, which KAITO's vLLM runtime reads as the number 1: give a number",
        ),
    ],
)
@pytest.mark.parametrize(("model", "version"), [("phi-4-mini-instruct", "0.8.1"), ("Qwen/Qwen3.5-2B", "0.12.0")])
def test_runtime_config_kaito_admits_with_no_effect_is_a_warning(given, where, message, model, version):
    """Issue 28: sections KAITO's webhook and runtime never read, and values its runtime may mishandle, are
    admitted by KAITO (inference_config_validation.go decodes only `vllm`, not strictly): warned, not refused."""
    said = warnings_of(config([{**PHI, "model": model, "config": given}], kaito={"version": version}))
    assert any(w.startswith(f"workspaces[0].{where}: {message}") for w in said), said


def test_runtime_config_has_no_effect_with_transformers():
    """KAITO mounts inference_config.yaml for vLLM only (pkg/model/interface.go 0.8.1:294-296, 0.12.0:482-484),
    and admits it with any runtime: a warning (issue 28), so a user who switches runtime is not blocked."""
    ws = {**PHI, "runtime": "transformers", "config": {"vllm": {"max-model-len": 4096}}}
    assert warnings_of(config([ws])) == [
        "workspaces[0].config: KAITO passes inference_config.yaml to vLLM only; with runtime transformers it has no "
        "effect: remove it, or use runtime vllm"
    ]
    run(config([ws]))
    run(config([{**PHI, "config": {"kv_cache_cpu_memory_utilization": 0, "vllm": {"max-model-len": 4096}}}]))


def test_ignored_inference_config_sections_warn():
    """The note's case: notes kept in the file beside vllm, on 0.8.1 and 0.12.0."""
    for version in ("0.8.1", "0.12.0"):
        ws = {**PHI, "config": {"notes": "x", "vllm": {"max-model-len": 4096}}}
        assert warnings_of(config([ws], kaito={"version": version})) == [
            "workspaces[0].config.notes: KAITO reads only vllm, kv_cache_cpu_memory_utilization, max_probe_steps from "
            "inference_config.yaml, so this has no effect"
        ]
        run(config([ws], kaito={"version": version}))


@pytest.mark.parametrize(("version", "vllm"), [("0.8.1", "0.12.0"), ("0.11.0", "0.22.1"), ("0.12.0", "0.25.1")])
def test_max_model_len_null_is_refused_with_the_images_evidence(version, vllm):
    """KAITO's webhook reads a null max-model-len as empty and admits it; the preset image's
    inference_api.py appends "--max-model-len None" (0.8.1:109-111, 0.11.0:135-137, 0.12.0:143-145),
    which the vLLM it ships cannot parse: the server exits at start."""
    err = one_error(config([{**PHI, "config": {"vllm": {"max-model-len": None}}}], kaito={"version": version}))
    assert err.startswith(
        "workspaces[0].config.vllm.max-model-len: KAITO admits this (its webhook reads null as empty), but its vLLM "
        f'image passes "--max-model-len None" (inference_api.py), which vLLM {vllm} cannot parse'
    ), err
    assert err.endswith("(to deploy it anyway: bypassChecks: [max-model-len-null])")
    ws = {**PHI, "config": {"vllm": {"max-model-len": None}}, "bypassChecks": ["max-model-len-null"]}
    run(config([ws], kaito={"version": version}))  # the user who knows better gets past it, warned


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
