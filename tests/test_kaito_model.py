"""KaitoModel: the Workspaces, InferenceSets, Secrets, ConfigMaps and Services emitted."""

from __future__ import annotations

import pytest
import yaml

import upstream_facts
from kube_schema import crd_validator
from stacks.evaluate import AFTER_UP, GPU_NODES_OUTPUTS, Secret, reveal
from tests.conftest import config, run

MODEL_READY = "pulumi-python:dynamic/kaito-aks:ModelReady"

WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
PHI = {"name": "phi", "model": "phi-4-mini-instruct"}
CPU = {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
LLAMA = {"name": "llama", "model": "llama-3.1-8b-instruct", "namespace": "llm"}
TOKEN = "hf_very_secret_token_value"


@pytest.fixture(scope="module")
def workspace_errors():
    return crd_validator(upstream_facts.crd("0.8.1", "workspaces.kaito.sh"), "v1beta1")


def workspaces(ev):
    return {r.inputs["metadata"]["name"]: r for r in ev.of_type(WORKSPACE)}


def test_workspace_has_top_level_resource_and_inference_and_no_spec(workspace_errors):
    (ws,) = workspaces(run(config([PHI]))).values()
    assert set(ws.inputs) == {"apiVersion", "kind", "metadata", "resource", "inference"}
    assert ws.inputs["inference"] == {"preset": {"name": "phi-4-mini-instruct"}}
    assert ws.inputs["resource"] == {"labelSelector": {"matchLabels": {"nvidia.com/gpu.present": "true"}}}
    assert workspace_errors(ws.inputs) == []


def test_cpu_workspace_selects_linux_nodes_and_runs_the_image_as_a_template(workspace_errors):
    (ws,) = workspaces(run(config([CPU]))).values()
    assert ws.inputs["resource"]["labelSelector"] == {"matchLabels": {"kubernetes.io/os": "linux"}}
    (container,) = ws.inputs["inference"]["template"]["spec"]["containers"]
    assert container["image"] == CPU["image"]
    assert container["args"] == ["run", "--address=:5000"]
    assert container["ports"] == [{"name": "http", "containerPort": 5000, "protocol": "TCP"}]
    assert "preset" not in ws.inputs["inference"]
    assert workspace_errors(ws.inputs) == []


def test_vllm_runtime_means_gpu_nodes():
    cpu_vllm = {**PHI, "compute": "gpu", "runtime": "vllm"}
    (ws,) = workspaces(run(config([cpu_vllm]))).values()
    assert ws.inputs["resource"]["labelSelector"]["matchLabels"] == {"nvidia.com/gpu.present": "true"}
    assert ws.inputs["metadata"]["annotations"]["kaito.sh/runtime"] == "vllm"


def test_a_user_label_selector_is_kept_as_written(workspace_errors):
    selector = {
        "matchLabels": {"agentpool": "gpu"},
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["1"]}],
    }
    (ws,) = workspaces(run(config([{**PHI, "labelSelector": selector}]))).values()
    assert ws.inputs["resource"]["labelSelector"] == selector
    assert workspace_errors(ws.inputs) == []


def test_byo_workspaces_carry_no_instance_type():
    (ws,) = workspaces(run(config([PHI]))).values()
    assert "instanceType" not in ws.inputs["resource"]


def test_replicas_on_0_8_are_one_workspace_each_behind_one_service():
    ev = run(config([{**PHI, "replicas": 3}]))
    ws = workspaces(ev)
    assert sorted(ws) == ["phi-0", "phi-1", "phi-2"]
    for w in ws.values():
        assert w.inputs["metadata"]["labels"]["inferenceset.kaito.sh/created-by"] == "phi"
        assert "count" not in w.inputs["resource"]  # deprecated; the vLLM path ignores it
    (svc,) = ev.of_type("kubernetes:core/v1:Service")
    assert svc.inputs["metadata"]["name"] == "phi"
    assert svc.inputs["spec"]["selector"] == {
        "inferenceset.kaito.sh/created-by": "phi",
        "apps.kubernetes.io/pod-index": "0",
    }
    assert svc.inputs["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": 5000, "protocol": "TCP"}]
    assert svc.inputs["spec"]["type"] == "ClusterIP"
    out = ev.outputs["workspaces"]["default/phi"]
    assert out == {
        "model": "phi-4-mini-instruct",  # KAITO 0.8 serves a preset under its name
        "source": "phi-4-mini-instruct",
        "replicas": 3,
        "endpoint": "http://phi.default.svc.cluster.local/v1/chat/completions",
        "gpuNodes": dict.fromkeys(GPU_NODES_OUTPUTS, AFTER_UP),  # what the wait finds at `up`
        "instanceType": None,  # bring-your-own nodes
        "kaito": [  # what `python -m stacks status` reads: each replica's Workspace and its serving condition
            {
                "kind": "Workspace",
                "apiVersion": "kaito.sh/v1beta1",
                "namespace": "default",
                "name": f"phi-{i}",
                "condition": "InferenceReady",
            }
            for i in range(3)
        ],
    }


def test_scaling_keeps_the_existing_replicas():
    one = set(workspaces(run(config([PHI]))))
    three = set(workspaces(run(config([{**PHI, "replicas": 3}]))))
    assert one < three


def test_the_served_model_id_on_0_12_is_the_inference_set_name():
    """KAITO 0.12 passes the InferenceSet's name to vLLM as --served-model-name for the Workspaces
    an InferenceSet creates (pkg/model/interface.go): a client sending the preset name gets 404."""
    ev = run(config([{**PHI, "name": "chat"}], kaito={"version": "0.12.0"}))
    out = ev.outputs["workspaces"]["default/chat"]
    assert out["model"] == "chat"
    assert out["source"] == "phi-4-mini-instruct"
    custom = run(config([{"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}]))
    assert custom.outputs["workspaces"]["default/tiny"]["model"] is None  # ask the image: GET /v1/models


def test_replicas_on_0_12_are_an_inference_set():
    ev = run(config([{**PHI, "replicas": 3}], kaito={"version": "0.12.0"}))
    assert ev.of_type(WORKSPACE) == []
    (iset,) = ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    spec = iset.inputs["spec"]
    assert spec["replicas"] == 3
    assert spec["labelSelector"] == {"matchLabels": {"nvidia.com/gpu.present": "true"}}
    assert spec["template"] == {"inference": {"preset": {"name": "phi-4-mini-instruct"}}}
    errors = crd_validator(upstream_facts.crd("0.12.0", "inferencesets.kaito.sh"), "v1beta1")
    assert errors(iset.inputs) == []


def test_immutable_fields_replace_and_delete_first():
    (ws,) = workspaces(run(config([PHI]))).values()
    assert set(ws.options["replaceOnChanges"]) >= {
        "resource.labelSelector",
        "resource.instanceType",
        "resource.count",
        "inference.preset",
    }
    assert ws.options["deleteBeforeReplace"] is True


def replaced_by(paths: list[str], changed: str) -> bool:
    """Whether a change at `changed` replaces the object (Pulumi replaces on a listed path or below it)."""
    return any(changed == p or changed.startswith(p + ".") for p in paths)


@pytest.mark.parametrize(
    ("version", "kind", "preset"),
    [
        ("0.8.1", WORKSPACE, "inference.preset"),
        ("0.12.0", "kubernetes:kaito.sh/v1beta1:InferenceSet", "spec.template.inference.preset"),
    ],
)
def test_a_new_model_access_secret_replaces_what_kaito_would_not_update(version, kind, preset):
    """KAITO's webhook compares the whole preset on update, presetOptions included ("field is
    immutable: inference.preset", workspace_validation.go 0.8.1:610-612, 0.12.0:895-897): giving
    hfToken or modelAccessSecret to a running model must replace it, not be denied mid-update."""
    (obj,) = run(config([{**LLAMA, "modelAccessSecret": "hf"}], kaito={"version": version})).of_type(kind)
    assert replaced_by(obj.options["replaceOnChanges"], f"{preset}.presetOptions.modelAccessSecret")
    assert replaced_by(obj.options["replaceOnChanges"], f"{preset}.name")


def test_workspaces_wait_for_the_kaito_operator():
    ev = run(config([PHI]))
    release = ev.named("kaito", "kubernetes:helm.sh/v3:Release")
    in_cluster = [
        r for r in ev.resources if r.type.startswith("kubernetes:") and r.type != "kubernetes:helm.sh/v3:Release"
    ]
    assert {r.type for r in in_cluster} >= {"kubernetes:kaito.sh/v1beta1:Workspace", "kubernetes:core/v1:Service"}
    for r in in_cluster:
        assert release.urn in r.dependencies, r.name


def test_gated_preset_gets_a_secret_with_hf_token_key_and_the_workspace_points_at_it(workspace_errors):
    ev = run(config([LLAMA]), hf_token=TOKEN)
    secret = ev.named("llm/llama/llama-hf-token", "kubernetes:core/v1:Secret")
    assert secret.inputs["metadata"] == {"name": "llama-hf-token", "namespace": "llm"}
    assert isinstance(secret.inputs["stringData"], Secret)
    assert reveal(secret.inputs["stringData"]) == {"HF_TOKEN": TOKEN}
    ws = workspaces(ev)["llama-0"]
    assert ws.inputs["inference"]["preset"]["presetOptions"] == {"modelAccessSecret": "llama-hf-token"}
    assert secret.urn in ws.dependencies
    assert workspace_errors(ws.inputs) == []


def test_the_hf_token_never_appears_outside_a_secret():
    ev = run(config([LLAMA, PHI]), hf_token=TOKEN)

    def plain(value):
        if isinstance(value, Secret):
            return ""
        if isinstance(value, dict):
            return " ".join(plain(v) for v in value.values())
        if isinstance(value, list):
            return " ".join(plain(v) for v in value)
        return str(value)

    for r in ev.resources:
        assert TOKEN not in plain(r.inputs), r.name
    assert TOKEN not in plain(ev.outputs)


def test_presets_baked_into_images_get_no_token():
    ev = run(config([PHI]), hf_token=TOKEN)
    assert ev.of_type("kubernetes:core/v1:Secret") == []
    (ws,) = workspaces(ev).values()
    assert "presetOptions" not in ws.inputs["inference"]["preset"]


def test_existing_model_access_secret_is_used_as_is():
    ev = run(config([{**LLAMA, "modelAccessSecret": "platform-hf"}]))
    assert ev.of_type("kubernetes:core/v1:Secret") == []
    assert workspaces(ev)["llama-0"].inputs["inference"]["preset"]["presetOptions"] == {
        "modelAccessSecret": "platform-hf"
    }


def test_runtime_config_becomes_a_configmap_the_workspace_names(workspace_errors):
    ev = run(config([{**PHI, "config": {"vllm": {"max-model-len": 8192}}}]))
    cm = ev.named("default/phi/phi-inference-config", "kubernetes:core/v1:ConfigMap")
    assert yaml.safe_load(cm.inputs["data"]["inference_config.yaml"]) == {"vllm": {"max-model-len": 8192}}
    ws = workspaces(ev)["phi-0"]
    assert ws.inputs["inference"]["config"] == cm.inputs["metadata"]["name"]
    assert cm.inputs["metadata"]["name"].startswith("phi-inference-config-")
    assert cm.urn in ws.dependencies
    assert workspace_errors(ws.inputs) == []


def test_a_config_edit_changes_what_kaito_rolls_out():
    """KAITO does not watch ConfigMaps; it rolls the serving pods when the Workspace's spec hash
    changes. A config edit gives the ConfigMap a new name (same Pulumi resource: previewed as a
    replacement) and so changes the Workspace's inference.config."""
    before = run(config([{**PHI, "config": {"vllm": {"max-model-len": 8192}}}]))
    after = run(config([{**PHI, "config": {"vllm": {"max-model-len": 4096}}}]))
    old = before.named("default/phi/phi-inference-config", "kubernetes:core/v1:ConfigMap")
    new = after.named("default/phi/phi-inference-config", "kubernetes:core/v1:ConfigMap")
    assert old.inputs["metadata"]["name"] != new.inputs["metadata"]["name"]
    assert workspaces(after)["phi-0"].inputs["inference"]["config"] == new.inputs["metadata"]["name"]
    same = run(config([{**PHI, "config": {"vllm": {"max-model-len": 8192}}}]))
    again = same.named("default/phi/phi-inference-config", "kubernetes:core/v1:ConfigMap")
    assert again.inputs["metadata"]["name"] == old.inputs["metadata"]["name"]  # no edit, no roll


def test_0_12_inference_set_edits_that_must_reach_pods_replace_it():
    from kaito_aks.kaito.inferenceset import INFERENCE_SET_IMMUTABLE_PATHS

    assert "spec.template.inference.config" in INFERENCE_SET_IMMUTABLE_PATHS
    assert "spec.template.inference.adapters" in INFERENCE_SET_IMMUTABLE_PATHS
    ev = run(config([PHI], kaito={"version": "0.12.0"}))
    (iset,) = ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert "spec.template.inference.config" in iset.options["replaceOnChanges"]


def test_pulumi_up_waits_until_each_model_serves():
    ev = run(config([{**PHI, "replicas": 2}]))
    (ready,) = ev.of_type(MODEL_READY)
    assert [w["name"] for w in ready.inputs["watched"]] == ["phi-0", "phi-1"]
    assert {w["condition"] for w in ready.inputs["watched"]} == {"InferenceReady"}
    assert ready.inputs["timeoutSeconds"] == 1800
    assert set(ready.dependencies) >= {w.urn for w in workspaces(ev).values()}  # after the objects it watches
    slow = run(config([{**PHI, "readyTimeoutMinutes": 45}], kaito={"readyTimeoutMinutes": 20})).of_type(MODEL_READY)
    assert slow[0].inputs["timeoutSeconds"] == 2700
    assert slow[0].inputs["watched"][0]["timeoutSeconds"] == 2700
    assert run(config([PHI], kaito={"waitForReady": False})).of_type(MODEL_READY) == []
    (iset_ready,) = run(config([PHI], kaito={"version": "0.12.0"})).of_type(MODEL_READY)
    assert iset_ready.inputs["watched"] == [
        {
            "kind": "InferenceSet",
            "apiVersion": "kaito.sh/v1beta1",
            "namespace": "default",
            "name": "phi",
            "condition": "InferenceSetReady",
            "timeoutSeconds": 1800,
        }
    ]


def test_one_readiness_wait_watches_every_model_each_within_its_own_timeout():
    quick = {**PHI, "name": "quick", "readyTimeoutMinutes": 5}
    ev = run(config([PHI, quick], kaito={"readyTimeoutMinutes": 20}))
    (ready,) = ev.of_type(MODEL_READY)
    assert {w["name"]: w["timeoutSeconds"] for w in ready.inputs["watched"]} == {"phi-0": 1200, "quick-0": 300}
    assert ready.inputs["timeoutSeconds"] == 1200
    assert set(ready.dependencies) >= {w.urn for w in workspaces(ev).values()}


def test_an_edit_that_rolls_the_pods_is_waited_for_again():
    def revision(ws: dict) -> str:
        (ready,) = run(config([ws])).of_type(MODEL_READY)
        return ready.inputs["revision"]

    base = revision(PHI)
    assert revision(PHI) == base
    assert revision({**PHI, "config": {"vllm": {"max-model-len": 4096}}}) != base
    assert revision({**PHI, "model": "phi-3.5-mini-instruct"}) != base


def test_adapters_are_named_image_sources(workspace_errors):
    adapter = {"name": "phi-sql", "image": "registry.example.com/adapters/phi-sql:1", "strength": 0.5}
    (ws,) = workspaces(run(config([{**PHI, "runtime": "transformers", "adapters": [adapter]}]))).values()
    assert ws.inputs["inference"]["adapters"] == [
        {"source": {"name": "phi-sql", "image": "registry.example.com/adapters/phi-sql:1"}, "strength": "0.5"}
    ]
    assert workspace_errors(ws.inputs) == []


def test_tuning_workspace_shape(workspace_errors):
    tuning = {
        "method": "lora",  # qlora would need QuantizationConfig.load_in_4bit (KAITO's webhook)
        "input": {"urls": ["https://example.com/data.parquet"]},
        "output": {"image": "registry.example.com/adapters/phi:1", "imagePushSecret": "push"},
        "config": {"training_config": {"TrainingArguments": {"num_train_epochs": 1}}},
    }
    tuned = {**PHI, "name": "tune", "instanceType": "Standard_NC24ads_A100_v4", "tuning": tuning}
    ev = run(config([tuned], kaito={"install": False, "nodeProvisioning": "auto"}))  # KAITO tunes on its node
    (ws,) = workspaces(ev).values()
    assert ws.inputs["metadata"]["name"] == "tune"
    assert "inference" not in ws.inputs
    assert ws.inputs["tuning"] == {
        "preset": {"name": "phi-4-mini-instruct"},
        "method": "lora",
        "config": ws.inputs["tuning"]["config"],
        "input": {"urls": ["https://example.com/data.parquet"]},
        "output": {"image": "registry.example.com/adapters/phi:1", "imagePushSecret": "push"},
    }
    assert ws.inputs["tuning"]["config"].startswith("tune-tuning-config-")
    (ready,) = ev.of_type(MODEL_READY)
    assert ready.inputs["watched"][0]["condition"] == "JobStarted"
    assert ev.of_type("kubernetes:core/v1:Service") == []
    assert workspace_errors(ws.inputs) == []


def test_load_balancer_exposes_the_model_service():
    ev = run(config([{**PHI, "loadBalancer": True}]))
    (svc,) = ev.of_type("kubernetes:core/v1:Service")
    assert svc.inputs["spec"]["type"] == "LoadBalancer"


def test_non_default_namespaces_are_created_first():
    ev = run(config([LLAMA]), hf_token=TOKEN)
    ns = ev.named("namespace/llm", "kubernetes:core/v1:Namespace")
    in_llm = [
        r
        for r in ev.resources
        if r.type.startswith("kubernetes:") and r.inputs.get("metadata", {}).get("namespace") == "llm"
    ]
    assert {r.type for r in in_llm} >= {"kubernetes:kaito.sh/v1beta1:Workspace", "kubernetes:core/v1:Secret"}
    for r in in_llm:
        assert ns.urn in r.dependencies, r.name


def test_component_type_tokens_and_parents():
    ev = run(config([PHI]))
    comp = ev.named("default/phi", "kaito-aks:index:KaitoModel")
    # The token the component provider serves, with an alias for each earlier one: every stack
    # deployed by an earlier version keeps its URNs.
    assert [a["spec"]["type"] for a in comp.options["aliases"]] == [
        "kaito-aks:kubernetes:KaitoModel",
        "kaito-aks:kubernetes:KaitoWorkspace",
    ]
    children = [r for r in ev.resources if r.name.startswith("default/phi/")]
    assert {r.name for r in children} >= {"default/phi/phi-0", "default/phi/phi"}
    for r in children:
        assert r.parent == comp.urn


def test_each_models_rules_run_once_per_up(monkeypatch: pytest.MonkeyPatch):
    """The config is checked first, then deploy_models and each KaitoModel take the same args:
    nothing is checked twice (review 1, G4)."""
    from kaito_aks.model import component

    counts: dict[str, int] = {}
    rules = component.model_verdict

    def counted(args):
        counts[args.name] = counts.get(args.name, 0) + 1
        return rules(args)

    monkeypatch.setattr(component, "model_verdict", counted)
    ev = run(config([PHI, CPU, LLAMA]), hf_token=TOKEN)
    assert len(ev.of_type("kaito-aks:index:KaitoModel")) == 3
    assert counts == {"phi": 1, "tiny": 1, "llama": 1}
