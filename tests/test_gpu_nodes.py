"""The wait for GPU nodes before a preset is created (KAITO's BYO admission, issue #8 item 1):
what it judges from Node objects, how it polls and fails, how it reads a kubeconfig, and where
the program puts it in the graph."""

from __future__ import annotations

import json
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from kaito_aks import catalog
from kaito_aks.waits.gpu_nodes import GpuDemand, GpuNodesProvider, survey, wait_for_gpu_nodes
from kaito_aks.waits.kube_client import KubeApiError, KubeClient, KubeconfigError
from stacks.evaluate import Secret, evaluate
from stacks.render import render_files
from tests.conftest import config, run
from tests.test_aks import aks

SELECTOR = {"nvidia.com/gpu.present": "true"}
WAIT = "pulumi-python:dynamic/kaito-aks:GpuNodesReady"
WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
PHI = {"name": "phi", "model": "phi-4-mini-instruct"}


def demand(preset: str, release: str = "0.8") -> GpuDemand:
    p = catalog.presets(release)[preset]
    return GpuDemand(p.name, p.gpu_count, p.model_gib, release)


PHI_DEMAND = demand("phi-4-mini-instruct")


def node(name: str, *, gfd: bool = True, ready: bool = True, gpus: int = 1, product: str = "NVIDIA-A100-PCIE-80GB"):
    """A node as GPU Feature Discovery labels an A100 80GB size with `gpus` GPUs."""
    labels = {"nvidia.com/gpu.present": "true"}
    if gfd:
        labels.update(
            {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.memory": "81920"}
        )
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "allocatable": {"nvidia.com/gpu": str(gpus)},
        },
    }


# ---------------------------------------------------------------- judging the nodes


def test_no_node_is_waited_for_and_explains_the_pool_at_zero():
    s = survey([], SELECTOR, PHI_DEMAND)
    assert not s.done
    assert not s.fatal
    assert s.waiting_for == "no node matches {nvidia.com/gpu.present=true}"
    assert "autoscale.min >= 1" in s.hint


def test_a_node_without_gfd_labels_is_waited_for_with_the_gfd_hint():
    s = survey([node("a"), node("b", gfd=False)], SELECTOR, PHI_DEMAND)
    assert not s.done
    assert not s.fatal
    assert s.waiting_for == "node(s) b matching {nvidia.com/gpu.present=true} do not carry nvidia.com/gpu.product"
    assert "GPU Feature Discovery" in s.hint


def test_a_ready_node_that_advertises_gpus_is_waited_for():
    assert survey([node("a", ready=False)], SELECTOR, None).waiting_for.startswith(
        "no node matching {nvidia.com/gpu.present=true} is Ready"
    )
    s = survey([node("a", gpus=0)], SELECTOR, None)
    assert s.waiting_for.startswith("no Ready node matching {nvidia.com/gpu.present=true} advertises nvidia.com/gpu")
    assert "device plugin" in s.hint
    # as KAITO: one node in an upgrade (NotReady) does not hold back the others
    assert survey([node("a"), node("b", ready=False)], SELECTOR, None).done


def test_different_gpu_products_fail_at_once_as_kaito_would_deny_them():
    s = survey([node("a"), node("b", product="NVIDIA-A10")], SELECTOR, PHI_DEMAND)
    assert s.fatal
    assert "Non-uniform GPU product" in s.waiting_for
    assert "a: 1 x NVIDIA-A100-PCIE-80GB, b: 1 x NVIDIA-A10" in s.waiting_for


def test_labels_kaito_cannot_parse_fail_at_once():
    bad = node("a")
    bad["metadata"]["labels"]["nvidia.com/gpu.memory"] = "80GB"
    assert survey([bad], SELECTOR, PHI_DEMAND).fatal


def test_kaitos_arithmetic_is_rerun_with_the_labels_found():
    # One two-GPU A100 node (Standard_NC48ads_A100_v4): KAITO 0.8 counts the per-GPU label once
    # per node (80 GiB) and denies the 70B model; 0.12 multiplies by the GPU count and admits it.
    s = survey([node("a", gpus=2)], SELECTOR, demand("llama-3.3-70b-instruct"))
    assert not s.done
    assert not s.fatal  # another node may still join
    assert "KAITO 0.8 would deny llama-3.3-70b-instruct on the 1 node(s)" in s.waiting_for
    assert "Insufficient total GPU memory" in s.waiting_for
    assert survey([node("a", gpus=2), node("b", gpus=2)], SELECTOR, demand("llama-3.3-70b-instruct")).done
    assert survey([node("a", gpus=2)], SELECTOR, demand("llama-3.3-70b-instruct", "0.12")).done


def test_ready_nodes_export_the_hardware_kaito_sizes_against():
    s = survey([node("b"), node("a")], SELECTOR, PHI_DEMAND)
    assert s.done
    assert s.found == {
        "nodes": ["a", "b"],
        "gpuProduct": "NVIDIA-A100-PCIE-80GB",
        "gpusPerNode": 1,
        "gpuMemoryMiB": 81920,
        "gpuMemoryMiBPerNode": 81920,
    }


# ---------------------------------------------------------------- polling


class FakeCluster:
    """Answers node lists from a script: one list per poll, the last one repeated."""

    def __init__(self, *lists: Any):
        self.lists = list(lists)
        self.queries: list[dict[str, str]] = []
        self.now = 0.0

    def get(self, path: str, **query: str) -> dict[str, Any]:
        assert path == "/api/v1/nodes"
        self.queries.append(query)
        answer = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        if isinstance(answer, Exception):
            raise answer
        return {"items": answer}

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def clock(self) -> float:
        return self.now


def wait(cluster: FakeCluster, demand: GpuDemand | None = PHI_DEMAND, timeout: float = 1200) -> dict[str, Any]:
    return wait_for_gpu_nodes(cluster, SELECTOR, demand, timeout, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]


def test_the_wait_returns_once_gfd_has_labelled_the_nodes():
    cluster = FakeCluster([], [node("a", gfd=False)], [node("a", gfd=False)], [node("a")])
    assert wait(cluster)["nodes"] == ["a"]
    assert len(cluster.queries) == 4
    assert cluster.queries[0] == {"labelSelector": "nvidia.com/gpu.present=true"}


def test_the_wait_fails_after_its_timeout_saying_what_is_missing():
    cluster = FakeCluster([node("a", gfd=False)])
    with pytest.raises(RuntimeError) as err:
        wait(cluster, timeout=1200)
    assert str(err.value).startswith(
        "node(s) a matching {nvidia.com/gpu.present=true} do not carry nvidia.com/gpu.product after 20m: "
        "is GPU Feature Discovery running on the pool?"
    )
    assert 1200 <= cluster.now < 1211


def test_the_wait_fails_at_once_on_what_waiting_cannot_fix():
    cluster = FakeCluster([node("a"), node("b", product="NVIDIA-A10")])
    with pytest.raises(RuntimeError, match="Non-uniform GPU product"):
        wait(cluster)
    assert cluster.now == 0
    forbidden = FakeCluster(KubeApiError(403, 'nodes is forbidden: User "dev" cannot list resource "nodes"'))
    with pytest.raises(RuntimeError, match=r"grant `list` on nodes, or turn the wait off"):
        wait(forbidden)


def test_the_wait_rides_out_an_unreachable_api_server():
    cluster = FakeCluster(KubeApiError(0, "cannot reach https://x: connection refused"), [node("a")])
    assert wait(cluster)["gpuProduct"] == "NVIDIA-A100-PCIE-80GB"


MALFORMED_NODE_LISTS = {
    "items that are not a list": 5,
    "items that are not objects": [5, "node"],
    "a node whose metadata is a list": [{"metadata": [], "status": {}}],
    "a node without a name": [{"metadata": {"labels": {}}}],
}
MALFORMED_NODES = {
    "labels that are numbers": {**node("a"), "metadata": {"name": "a", "labels": {"nvidia.com/gpu.product": 7}}},
    "a status that is text": {**node("a"), "status": "Ready"},
    "conditions that are a map": {**node("a"), "status": {"conditions": {"type": "Ready", "status": "True"}}},
    "conditions that are text": {**node("a"), "status": {"conditions": ["Ready"], "allocatable": []}},
}


@pytest.mark.parametrize("name", [*MALFORMED_NODE_LISTS, *MALFORMED_NODES])
def test_a_malformed_answer_is_waited_out_and_said_in_one_line_never_a_traceback(name: str):
    """Before: KeyError, TypeError or AttributeError out of the provider on most of these."""
    items = MALFORMED_NODE_LISTS[name] if name in MALFORMED_NODE_LISTS else [MALFORMED_NODES[name]]

    class Odd(FakeCluster):
        def get(self, path: str, **query: str) -> dict[str, Any]:
            super().get(path, **query)
            return {"items": items}

    cluster = Odd([])
    with pytest.raises(RuntimeError) as err:
        wait(cluster, timeout=60)
    said = str(err.value)
    assert said.isprintable(), said
    assert 60 <= cluster.now < 71  # waited out, then said
    if name in MALFORMED_NODE_LISTS:
        assert said.startswith("no usable answer from the API server (the API server's list of nodes ")
    else:
        assert "matching {nvidia.com/gpu.present=true}" in said


def test_only_what_decides_the_wait_is_a_change():
    olds = {"selector": SELECTOR, "demand": PHI_DEMAND.as_props(), "workspaces": ["phi-0"], "nodes": ["a"]}
    provider = GpuNodesProvider()
    rotated = {**olds, "kubeconfig": "new credentials", "timeoutSeconds": 60}
    assert provider.diff("id", olds, rotated).changes is False
    assert provider.diff("id", olds, {**olds, "workspaces": ["phi-0", "phi-1"]}).changes is True
    assert provider.diff("id", olds, {**olds, "selector": {"agentpool": "a100"}}).changes is True


# ---------------------------------------------------------------- the kubeconfig client


class _Api(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self):
        _Api.seen.append((self.path, self.headers.get("Authorization")))
        if self.headers.get("Authorization") == "Bearer expired":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"message": "Unauthorized"}')
            return
        body = json.dumps({"items": [node("a")]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api_server():
    server = HTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Api.seen = []
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def kubeconfig(server: str, user: dict[str, Any], context: str = "e2e") -> str:
    return yaml.safe_dump(
        {
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
            "current-context": context,
        }
    )


def test_the_client_lists_nodes_with_the_kubeconfigs_token(api_server):
    client = KubeClient.from_kubeconfig(kubeconfig(api_server, {"token": "t0k"}))
    assert client.get("/api/v1/nodes", labelSelector="a=b,c=d")["items"][0]["metadata"]["name"] == "a"
    assert _Api.seen == [("/api/v1/nodes?labelSelector=a%3Db%2Cc%3Dd", "Bearer t0k")]


def test_the_client_takes_a_kubeconfig_already_parsed(api_server):
    """Pulumi YAML passes a YAML-looking config value to the component as a map."""
    client = KubeClient.from_kubeconfig(yaml.safe_load(kubeconfig(api_server, {"token": "t0k"})))
    client.get("/api/v1/nodes")
    assert _Api.seen[-1][1] == "Bearer t0k"


def test_the_client_runs_exec_credential_plugins(api_server, tmp_path: Path):
    plugin = tmp_path / "get-token"
    plugin.write_text(
        f"#!{sys.executable}\nimport json, os\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert info['spec']['interactive'] is False\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',"
        " 'status': {'token': 'from-' + os.environ['TENANT']}}))\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "env": [{"name": "TENANT", "value": "entra"}],
        }
    }
    KubeClient.from_kubeconfig(kubeconfig(api_server, user)).get("/api/v1/nodes")
    assert _Api.seen[-1][1] == "Bearer from-entra"


def test_the_client_merges_kubeconfig_files_and_names_a_missing_context(api_server, tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text(kubeconfig(api_server, {"token": "first"}, context="one"))
    second.write_text(kubeconfig("http://127.0.0.1:9", {"token": "second"}, context="two"))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    KubeClient.from_kubeconfig(context="two").get("/api/v1/nodes")  # cluster "c" and user "u": first file wins
    assert _Api.seen[-1][1] == "Bearer first"
    with pytest.raises(KubeconfigError, match="no context named 'three'"):
        KubeClient.from_kubeconfig(context="three")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(KubeconfigError, match="no kubeconfig at"):
        KubeClient.from_kubeconfig()


def test_an_expired_token_is_fetched_again_once(api_server, tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("expired")
    client = KubeClient.from_kubeconfig(kubeconfig(api_server, {"tokenFile": str(token)}))
    token.write_text("fresh")  # rotated, as projected service-account tokens and exec plugins are
    assert client.get("/api/v1/nodes")["items"]
    assert [auth for _, auth in _Api.seen] == ["Bearer expired", "Bearer fresh"]


def test_a_malformed_kubeconfig_is_reported_without_its_contents():
    with pytest.raises(KubeconfigError) as err:
        KubeClient.from_kubeconfig("users:\n- user: {token: sekret-tok: en}\n")
    assert "sekret" not in str(err.value)


# ---------------------------------------------------------------- in the program


def test_presets_wait_for_their_gpu_nodes_and_custom_images_do_not():
    cpu = {"name": "cpu", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
    ev = run(config([PHI, cpu], kaito={"gpuNodesTimeoutMinutes": 5}))
    (wait_,) = ev.of_type(WAIT)
    assert wait_.name == "models/gpu-nodes/{nvidia.com/gpu.present=true}"  # one per node selector
    assert wait_.inputs["selector"] == SELECTOR
    assert wait_.inputs["demands"] == [PHI_DEMAND.as_props()]
    assert wait_.inputs["workspaces"] == ["phi-0"]
    assert wait_.inputs["timeoutSeconds"] == 300
    assert wait_.inputs["context"] == "test"
    assert wait_.options["additionalSecretOutputs"] == ["kubeconfig"]
    by_name = {w.inputs["metadata"]["name"]: w for w in ev.of_type(WORKSPACE)}
    assert wait_.urn in by_name["phi-0"].dependencies
    assert wait_.urn not in by_name["cpu-0"].dependencies


def test_models_on_the_same_nodes_share_one_wait_that_checks_each_of_them():
    llama = {"name": "llama", "model": "llama-3.1-8b-instruct", "modelAccessSecret": "hf"}
    a100 = {"name": "a100", "model": "phi-4-mini-instruct", "labelSelector": {"matchLabels": {"agentpool": "a100"}}}
    ev = run(config([PHI, llama, a100]))
    waits = {w.inputs["selector"].get("agentpool", "default"): w for w in ev.of_type(WAIT)}
    assert set(waits) == {"default", "a100"}
    assert [d["preset"] for d in waits["default"].inputs["demands"]] == ["phi-4-mini-instruct", "llama-3.1-8b-instruct"]
    assert waits["default"].inputs["workspaces"] == ["llama-0", "phi-0"]
    by_name = {w.inputs["metadata"]["name"]: w for w in ev.of_type(WORKSPACE)}
    assert waits["default"].urn in by_name["llama-0"].dependencies
    assert waits["a100"].urn not in by_name["llama-0"].dependencies


def test_the_wait_follows_the_selector_and_can_be_turned_off():
    pinned = {**PHI, "labelSelector": {"matchLabels": {"agentpool": "a100"}}}
    (wait_,) = run(config([pinned])).of_type(WAIT)
    assert wait_.inputs["selector"] == {"agentpool": "a100"}
    assert run(config([PHI], kaito={"waitForGpuNodes": False})).of_type(WAIT) == []
    tuning = {
        **PHI,
        "instanceType": "Standard_NC24ads_A100_v4",  # KAITO tunes only on a node it creates
        "tuning": {
            "method": "lora",
            "input": {"urls": ["https://x/d.parquet"]},
            "output": {"image": "r/a:1", "imagePushSecret": "push"},
        },
    }
    auto = {"install": False, "nodeProvisioning": "auto"}
    assert run(config([tuning], kaito=auto)).of_type(WAIT) == []  # KAITO brings the node


def test_the_kubeconfig_reaches_the_wait_only_as_a_secret():
    ev = evaluate(config([PHI]), secrets={"kaito-aks:kubeconfig": "apiVersion: v1\nkind: Config\n"})
    (wait_,) = ev.of_type(WAIT)
    assert isinstance(wait_.inputs["kubeconfig"], Secret)
    assert isinstance(wait_.inputs["__provider"], Secret)
    text = "".join(render_files(ev).values())
    assert "kind: Config" not in text
    assert "__provider" not in text


def test_on_aks_the_wait_uses_the_clusters_credentials_after_the_pools_and_operators():
    ev = run(aks())
    waits = ev.of_type(WAIT)
    assert waits
    for wait_ in waits:
        assert isinstance(wait_.inputs["kubeconfig"], Secret)
        types = {ev.by_urn(d).type for d in wait_.dependencies}
        assert {"azure-native:containerservice:AgentPool", "kubernetes:helm.sh/v3:Release"} <= types


def test_0_12_waits_for_the_gpu_nodes_again_on_every_inference_set_change():
    """0.12's InferenceSet webhook re-runs the child Workspace's create checks on every update
    (inferenceset_validation.go:54-56, pkg/utils/inferenceset ValidateWorkspaceForInferenceSet): a
    replicas change is denied while no matching GPU node is labelled, so the wait looks first.
    Per-replica Workspaces (0.8) are admitted once: only a new one re-runs it."""

    def guarded(replicas: int, version: str) -> list[str]:
        (wait,) = run(config([{**PHI, "replicas": replicas}], kaito={"version": version})).of_type(WAIT)
        return wait.inputs["workspaces"]

    one, two = guarded(1, "0.12.0"), guarded(2, "0.12.0")
    assert one[0].startswith("phi@")
    assert GpuNodesProvider().diff("id", {"workspaces": one}, {"workspaces": two}).changes
    assert guarded(1, "0.12.0") == one  # no change, no new wait
    assert guarded(2, "0.8.1") == ["phi-0", "phi-1"]
