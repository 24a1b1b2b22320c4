"""The `e2e` stack (Pulumi.e2e.yaml: KAITO already installed, a GPU, a CPU and a gated model)
through its life on a real API server: preview, a first `up` that waits for GPU discovery and for
every model to serve, what the server stored, no-op, scaling, an immutable change, a config edit,
failures with KAITO's reasons, a bad config, destroy. The tests run in order on one stack."""

from __future__ import annotations

import base64
import calendar
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import E2E_HF_TOKEN, ROOT, Cluster, Project, StandInGfd, StandInKaito, names, stack_project

STACK = "e2e"
GPU, CPU, GATED = "phi-4-mini", "tiny-cpu", "llama"
RAG = "docs-rag"
BROKEN, NO_NODE = "never-ready", "no-gpu-node"
GPU_NODE = "aks-a100-0"
# Labels of a Standard_NC24ads_A100_v4 node of an AKS pool `a100`, before GFD has run.
NODE_LABELS = {
    "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
    "agentpool": "a100",
    "kubernetes.azure.com/agentpool": "a100",
    "nvidia.com/gpu.present": "true",
}
# Longer than the same `up` takes to reach the Workspaces without the wait (about 4 s here).
GFD_DELAY_SECONDS = 10.0


@pytest.fixture(scope="module")
def project(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> Iterator[Project]:
    p = stack_project(bin_dir, cluster, work, "stack", STACK, kubernetes_provider)
    (p.path / f"Pulumi.{STACK}.yaml").write_text((ROOT / f"Pulumi.{STACK}.yaml").read_text())
    p.init()
    cluster.create_gpu_node(GPU_NODE, NODE_LABELS)  # Ready, not yet labelled by GPU Feature Discovery
    yield p
    p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)


def expected_workspaces(project: Project) -> dict[str, dict[str, Any]]:
    """What the program plans for the stack file as it is now (the same checks and plan)."""
    from kaito_aks.model.plan import plan_model
    from stacks.load import parse_stack_file
    from stacks.stackfile import read_stack_file

    cfg = parse_stack_file(read_stack_file(STACK, project.path))
    return {ws.metadata.name: ws.manifest() for m in cfg.models for ws in plan_model(m).workspaces}


def test_preview_shows_the_creates_and_the_shared_waits(project: Project) -> None:
    ops = project.preview_steps()
    assert set(ops) <= {"create", "same"}, sorted(ops)
    created = names(ops["create"])
    for name in (
        "models/gpu-nodes/{nvidia.com/gpu.present=true}",  # one wait for both presets on those nodes
        "models/ready",  # one readiness wait for every model
        f"default/{GPU}/{GPU}-0",
        f"default/{CPU}/{CPU}-0",
        f"default/{GATED}/{GATED}-0",
        f"default/{GATED}/{GATED}-hf-token",
    ):
        assert name in created, sorted(created)


def test_the_first_up_waits_for_gpu_discovery_then_for_every_model(
    project: Project, cluster: Cluster, kaito: StandInKaito
) -> None:
    gfd = StandInGfd(cluster, {GPU_NODE: GFD_DELAY_SECONDS})
    gfd.start()
    try:
        project.pulumi("up", "--yes", "--skip-preview")
    finally:
        gfd.stop()
    returned = time.time()
    assert GPU_NODE in gfd.labelled_at, "the GPU node was never labelled"
    stored = cluster.objects("workspaces.kaito.sh")
    for name in (f"{GPU}-0", f"{GATED}-0"):
        created = stored[name]["metadata"]["creationTimestamp"]
        # RFC 3339 UTC timestamps of one server, to the second: they compare as strings
        assert created >= gfd.labelled_at[GPU_NODE], f"{name} was created at {created}, before GFD labelled the node"
    found = project.outputs()["workspaces"]
    assert found[f"default/{GPU}"]["gpuNodes"] == {
        "nodes": [GPU_NODE],
        "gpuProduct": "NVIDIA-A100-PCIE-80GB",
        "gpusPerNode": 1,
        "gpuMemoryMiB": 81920,
        "gpuMemoryMiBPerNode": 81920,
    }
    for name, ws in stored.items():
        key = f"default/{name}/{ws['metadata']['uid']}"
        assert key in kaito.ready_at, f"pulumi up returned before {name} was InferenceReady"
        assert kaito.ready_at[key] <= returned, f"{name} became ready after pulumi up returned"


def test_the_server_stored_exactly_the_planned_objects(project: Project, cluster: Cluster) -> None:
    stored = cluster.objects("workspaces.kaito.sh")
    wanted = expected_workspaces(project)
    assert set(stored) == set(wanted)
    for name, want in wanted.items():
        got = stored[name]
        assert "spec" not in got, f"{name} has a spec"
        # What the server adds is the CRD's defaults: resource.count and preset.accessMode.
        assert got["resource"] == {"count": 1, **want["resource"]}
        want_inference = json.loads(json.dumps(want["inference"]))
        if "preset" in want_inference:
            want_inference["preset"] = {"accessMode": "public", **want_inference["preset"]}
        assert got["inference"] == want_inference
        assert got["metadata"]["labels"] == want["metadata"]["labels"]
    assert stored[f"{GATED}-0"]["inference"]["preset"]["presetOptions"] == {"modelAccessSecret": f"{GATED}-hf-token"}
    assert stored[f"{GPU}-0"]["resource"]["labelSelector"] == {"matchLabels": {"nvidia.com/gpu.present": "true"}}
    assert stored[f"{CPU}-0"]["resource"]["labelSelector"] == {"matchLabels": {"kubernetes.io/os": "linux"}}
    secret = cluster.objects("secrets")[f"{GATED}-hf-token"]
    assert set(secret["data"]) == {"HF_TOKEN"}
    assert base64.b64decode(secret["data"]["HF_TOKEN"]).decode() == E2E_HF_TOKEN
    service = cluster.objects("services")[GPU]
    assert service["spec"]["selector"] == {"inferenceset.kaito.sh/created-by": GPU, "apps.kubernetes.io/pod-index": "0"}


def test_the_rag_engine_answers_with_the_stacks_model_once_it_serves(
    project: Project, cluster: Cluster, kaito: StandInKaito
) -> None:
    """The RAGEngine as KAITO's v1alpha1 CRD stores it, its LLM the model's Service, created
    only once that model served, and `up` waited for it too."""
    from kaito_aks.rag.plan import plan_rag_engine
    from stacks.load import parse_stack_file
    from stacks.stackfile import read_stack_file

    cfg = parse_stack_file(read_stack_file(STACK, project.path))
    [engine] = cfg.rag_engines
    want = plan_rag_engine(engine.args).manifest()
    stored = cluster.objects("ragengines.kaito.sh")[RAG]
    assert stored["apiVersion"] == "kaito.sh/v1alpha1"
    assert stored["spec"]["inferenceService"] == {
        "url": f"http://{GPU}.default.svc.cluster.local/v1/chat/completions",  # the model's Service
        "contextWindowSize": 4096,
    }
    assert stored["spec"]["compute"] == {"count": 1, **want["spec"]["compute"]}  # the CRD's default added
    assert cluster.objects("services")[GPU]  # what the URL names exists
    model = cluster.objects("workspaces.kaito.sh")[f"{GPU}-0"]
    model_ready = kaito.ready_at[f"default/{GPU}-0/{model['metadata']['uid']}"]
    created = calendar.timegm(time.strptime(stored["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
    assert created >= int(model_ready) - 1, "the RAG engine was created before its model served"
    assert f"default/{RAG}/{stored['metadata']['uid']}" in kaito.ready_at, "up returned before the engine served"
    outputs = project.outputs()["ragEngines"][f"default/{RAG}"]
    assert outputs["endpoint"] == f"http://{RAG}.default.svc.cluster.local"
    assert outputs["workspace"] == GPU


def test_the_hf_token_is_in_the_state_only_encrypted(project: Project) -> None:
    forms = (E2E_HF_TOKEN, base64.b64encode(E2E_HF_TOKEN.encode()).decode())  # the provider stores data base64
    state = project.pulumi("stack", "export", quiet=True).stdout
    assert not any(f in state for f in forms), "the HF token appears in plaintext in the Pulumi state"
    revealed = project.pulumi("stack", "export", "--show-secrets", secret=True).stdout
    assert any(f in revealed for f in forms), "the state check is blind: the token is not in the decrypted state either"


def test_a_second_up_changes_nothing(project: Project, cluster: Cluster) -> None:
    before = cluster.snapshot()
    project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes")
    assert cluster.snapshot() == before


def test_replicas_1_to_2_adds_a_serving_instance_and_touches_nothing_else(project: Project, cluster: Cluster) -> None:
    before = cluster.snapshot()
    project.config_path("workspaces[0].replicas", "2")
    project.pulumi("up", "--yes", "--skip-preview")
    stored = cluster.objects("workspaces.kaito.sh")
    assert {f"{GPU}-0", f"{GPU}-1"} <= set(stored)
    assert stored[f"{GPU}-1"]["metadata"]["labels"]["inferenceset.kaito.sh/created-by"] == GPU  # behind the endpoint
    after = cluster.snapshot()
    assert all(after[k] == v for k, v in before.items()), "existing objects were modified by scaling"


def test_changing_the_preset_replaces_the_workspace(project: Project, cluster: Cluster) -> None:
    old_uid = cluster.objects("workspaces.kaito.sh")[f"{GPU}-0"]["metadata"]["uid"]
    project.config_path("workspaces[0].model", "phi-3.5-mini-instruct")
    ops = project.preview_steps()
    replaced = names(ops.get("replace", []) + ops.get("create-replacement", []) + ops.get("delete-replaced", []))
    assert f"default/{GPU}/{GPU}-0" in replaced, sorted(ops)
    project.pulumi("up", "--yes", "--skip-preview")
    ws = cluster.objects("workspaces.kaito.sh")[f"{GPU}-0"]
    assert ws["inference"]["preset"]["name"] == "phi-3.5-mini-instruct"
    assert ws["metadata"]["uid"] != old_uid, "the Workspace was patched, not replaced"


def test_a_config_edit_renames_its_configmap_so_kaito_rolls_the_pods(project: Project, cluster: Cluster) -> None:
    project.config_path("workspaces[2].config.vllm.max-model-len", "8192")
    project.pulumi("up", "--yes", "--skip-preview")
    first = cluster.objects("workspaces.kaito.sh")[f"{GATED}-0"]["inference"]["config"]
    project.config_path("workspaces[2].config.vllm.max-model-len", "4096")
    ops = project.preview_steps()
    assert f"default/{GATED}/{GATED}-0" in names(ops.get("update", [])), sorted(ops)
    replaced = names(ops.get("replace", []) + ops.get("create-replacement", []))
    assert f"default/{GATED}/{GATED}-inference-config" in replaced
    project.pulumi("up", "--yes", "--skip-preview")
    second = cluster.objects("workspaces.kaito.sh")[f"{GATED}-0"]["inference"]["config"]
    assert first != second, "the Workspace still names the old ConfigMap"
    maps = cluster.objects("configmaps")
    assert second in maps
    assert first not in maps
    assert "4096" in maps[second]["data"]["inference_config.yaml"]


def test_no_matching_node_and_a_model_that_never_serves_fail_with_the_reasons(
    project: Project, cluster: Cluster, kaito: StandInKaito
) -> None:
    kaito.failing[f"{BROKEN}-0"] = "failed to load the model: out of memory (stand-in reason)"
    project.config_path("workspaces[3].name", BROKEN)
    project.config_path("workspaces[3].model", "phi-3.5-mini-instruct")
    project.config_path("workspaces[3].readyTimeoutMinutes", "1")
    project.config_path("workspaces[4].name", NO_NODE)
    project.config_path("workspaces[4].model", "phi-3.5-mini-instruct")
    project.config_path("workspaces[4].labelSelector.matchLabels.agentpool", "h100")
    project.config_path("kaito.gpuNodesTimeoutMinutes", "1")
    result = project.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
    output = result.stdout + result.stderr
    assert result.returncode != 0, "pulumi up succeeded although a model never became ready"
    assert (
        f"Workspace default/{BROKEN}-0 is not ready: InferenceReady=False (InferenceFailed: {kaito.failing[f'{BROKEN}-0']}) after 1m"
        in output
    ), output[-3000:]
    assert "no node matches {agentpool=h100} after 1m: does the GPU pool exist" in output, output[-3000:]
    assert f"{NO_NODE}-0" not in cluster.objects("workspaces.kaito.sh"), "a Workspace was created without its nodes"
    for path in ("workspaces[4]", "workspaces[3]", "kaito.gpuNodesTimeoutMinutes"):
        project.pulumi("config", "rm", "--path", f"kaito-aks:{path}", quiet=True)
    project.pulumi("up", "--yes", "--skip-preview")
    assert f"{BROKEN}-0" not in cluster.objects("workspaces.kaito.sh"), "the failed Workspace was left behind"


def test_a_bad_config_fails_before_anything_changes(project: Project, cluster: Cluster) -> None:
    before = cluster.snapshot()
    project.config_path("workspaces[2].model", "phi-2")
    result = project.pulumi("up", "--yes", "--skip-preview", check=False, quiet=True)
    assert result.returncode != 0
    assert "workspaces[2].model: phi-2 is deprecated" in result.stdout + result.stderr
    assert cluster.snapshot() == before, "the cluster changed although the config was bad"
    project.config_path("workspaces[2].model", "llama-3.1-8b-instruct")


def test_destroy_leaves_nothing_behind(project: Project, cluster: Cluster) -> None:
    project.pulumi("destroy", "--yes", "--skip-preview")
    assert cluster.objects("workspaces.kaito.sh") == {}
    assert not any(n.endswith("-hf-token") for n in cluster.objects("secrets"))
    assert GPU not in cluster.objects("services")
