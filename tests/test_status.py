"""`python -m stacks status` (issue 20): what KAITO reports for deployed models, read from the
cluster with the stack's credentials. The library's reader against canned API answers; the
command end to end against a local HTTP API server and a stand-in `pulumi` CLI that prints the
stack's outputs (the real CLI and API server run in tests/e2e/test_status.py)."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hostile_api import BROKEN, ESCAPES, ApiServer, Behaviour, Certs, Sink, drip, huge, make_certs, redirect
from kaito_aks.waits import kube_client
from kaito_aks.waits.kube_client import KubeApiError
from kaito_aks.waits.model_ready import Watched
from kaito_aks.waits.status import StatusReadError, read_model
from stacks.cli import main

TOKEN = "status-test-secret-token"


def condition(kind: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    """A condition KAITO set 2m5s ago."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 125))
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": since}


def workspace(name: str, *conditions: dict[str, Any], instance_type: str | None = None, **labels: str) -> dict:
    resource: dict[str, Any] = {"labelSelector": {"matchLabels": {"apps": name}}}
    if instance_type:
        resource["instanceType"] = instance_type
    return {
        "apiVersion": "kaito.sh/v1beta1",
        "kind": "Workspace",
        "metadata": {"name": name, "namespace": "default", "generation": 1, "labels": labels},
        "resource": resource,
        "status": {"conditions": list(conditions)},
    }


def serving() -> tuple[dict[str, Any], ...]:
    return (
        condition("ResourceReady", "True", "workspaceResourceStatusSuccess"),
        condition(
            "InferenceReady", "True", "WorkspaceInferenceStatusSuccess", "Inference has been deployed successfully"
        ),
    )


def pod(name: str, node: str, ready: bool = True, waiting: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if waiting:
        status["containerStatuses"] = [{"name": "c", "state": {"waiting": {"reason": waiting, "message": "pull"}}}]
    return {"metadata": {"name": name}, "spec": {"nodeName": node}, "status": status}


GPU_NODE = {
    "metadata": {
        "name": "aks-a100-0",
        "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-PCIE-80GB", "nvidia.com/gpu.count": "1"},
    }
}


def ws_path(name: str, plural: str = "workspaces") -> str:
    return f"/apis/kaito.sh/v1beta1/namespaces/default/{plural}/{name}"


def pods_path(workspace: str) -> str:
    return "/api/v1/namespaces/default/pods?" + urllib.parse.urlencode(
        {"labelSelector": f"kaito.sh/workspace={workspace}"}
    )


class FakeApi:
    """Answers by path (with its query), as the API server would; 404 for anything else."""

    def __init__(self, answers: dict[str, Any]):
        self.answers = answers
        self.seen: list[str] = []

    def get(self, path: str, **query: str) -> dict[str, Any]:
        full = path + ("?" + urllib.parse.urlencode(query) if query else "")
        self.seen.append(full)
        answer = self.answers.get(full)
        if isinstance(answer, int):
            raise KubeApiError(answer, "forbidden" if answer == 403 else "no")
        if answer is None:
            raise KubeApiError(404, "not found")
        return answer


def watched(name: str, kind: str = "Workspace", condition: str = "InferenceReady") -> Watched:
    return Watched(kind, "kaito.sh/v1beta1", "default", name, condition)


# ---------------------------------------------------------------- the library's reader


def test_a_serving_workspace_with_its_pod_node_and_gpus():
    api = FakeApi(
        {
            ws_path("phi-0"): workspace("phi-0", *serving()),
            pods_path("phi-0"): {"items": [pod("phi-0-0", "aks-a100-0")]},
            "/api/v1/nodes/aks-a100-0": GPU_NODE,
        }
    )
    status = read_model(api, [watched("phi-0")])
    assert status.state == "serving"
    assert status.ready == (1, 1)
    (replica,) = status.replicas
    assert (replica.pods_ready, replica.pods) == (1, 1)
    assert [(n.name, n.gpu_product, n.gpus) for n in replica.nodes] == [("aks-a100-0", "NVIDIA-A100-PCIE-80GB", 1)]
    inference = replica.conditions[1]
    assert (inference.type, inference.status, inference.reason) == (
        "InferenceReady",
        "True",
        "WorkspaceInferenceStatusSuccess",
    )
    assert 124 <= (inference.age_seconds or 0) <= 127


def test_a_workspace_kaito_has_not_reported_on_is_waiting_and_says_for_what():
    api = FakeApi({ws_path("tiny-0"): workspace("tiny-0"), pods_path("tiny-0"): {"items": []}})
    status = read_model(api, [watched("tiny-0")])
    assert status.state == "waiting"
    assert status.replicas[0].why == "KAITO has not reported on it yet"


def test_kaitos_failure_and_a_container_that_cannot_start_are_failures():
    failed = condition("InferenceReady", "False", "WorkspaceInferenceStatusFailed", "out of memory")
    api = FakeApi({ws_path("a-0"): workspace("a-0", failed), pods_path("a-0"): {"items": []}})
    status = read_model(api, [watched("a-0")])
    assert status.state == "failed"
    assert status.replicas[0].why == "InferenceReady=False (WorkspaceInferenceStatusFailed: out of memory)"
    api = FakeApi(
        {
            ws_path("b-0"): workspace("b-0"),
            pods_path("b-0"): {"items": [pod("b-0-0", "n", ready=False, waiting="ImagePullBackOff")]},
            "/api/v1/nodes/n": {"metadata": {"name": "n", "labels": {}}},
        }
    )
    status = read_model(api, [watched("b-0")])
    assert status.state == "failed"
    assert status.replicas[0].why == "pod b-0-0: ImagePullBackOff (pull)"
    assert status.replicas[0].nodes[0].gpu_product is None


def test_an_inference_set_counts_its_ready_replicas_and_shows_each_child():
    iset = {
        "metadata": {"name": "qwen", "namespace": "default", "generation": 1},
        "status": {
            "replicas": 2,
            "readyReplicas": 1,
            "conditions": [condition("InferenceSetReady", "False", "inferencesetNotReady", "1/2 replicas are ready")],
        },
    }
    children = "/apis/kaito.sh/v1beta1/namespaces/default/workspaces?" + urllib.parse.urlencode(
        {"labelSelector": "inferenceset.kaito.sh/created-by=qwen"}
    )
    pending = condition("ResourceReady", "False", "NodeClaimNotReady", "Ready NodeClaims are not enough")
    api = FakeApi(
        {
            ws_path("qwen", "inferencesets"): iset,
            children: {"items": [workspace("qwen-b", pending), workspace("qwen-a", *serving())]},
            pods_path("qwen-a"): {"items": []},
            pods_path("qwen-b"): {"items": []},
        }
    )
    status = read_model(api, [watched("qwen", "InferenceSet", "InferenceSetReady")])
    assert status.state == "waiting"
    assert status.ready == (1, 2)
    assert [(r.name, r.state) for r in status.replicas] == [("qwen-a", "serving"), ("qwen-b", "waiting")]


def test_an_auto_provisioned_workspace_shows_its_nodeclaims_stage():
    claims = "/apis/karpenter.sh/v1/nodeclaims?" + urllib.parse.urlencode(
        {"labelSelector": "kaito.sh/workspace=phi-0,kaito.sh/workspacenamespace=default"}
    )
    claim = {
        "metadata": {"name": "ws2a1b"},
        "status": {"conditions": [condition("Launched", "False", "LaunchFailed", "quota exceeded for NCADS_A100_v4")]},
    }
    api = FakeApi(
        {
            ws_path("phi-0"): workspace("phi-0", instance_type="Standard_NC24ads_A100_v4"),
            pods_path("phi-0"): {"items": []},
            claims: {"items": [claim]},
        }
    )
    status = read_model(api, [watched("phi-0")])
    (nc,) = status.replicas[0].node_claims
    assert (nc.name, nc.stage, nc.said) == ("ws2a1b", "Launched", "LaunchFailed: quota exceeded for NCADS_A100_v4")


def test_what_the_credentials_may_not_read_is_named_and_the_rest_shown():
    api = FakeApi({ws_path("phi-0"): workspace("phi-0", *serving()), pods_path("phi-0"): 403})
    status = read_model(api, [watched("phi-0")])
    assert status.state == "serving"
    assert status.unreadable == ("pods in default",)
    with pytest.raises(StatusReadError, match=r"may not read workspaces\.kaito\.sh in namespace default"):
        read_model(FakeApi({ws_path("phi-0"): 403}), [watched("phi-0")])


def test_an_unreachable_cluster_is_an_error():
    class Down:
        def get(self, path: str, **query: str) -> dict[str, Any]:
            raise KubeApiError(0, "cannot reach https://10.0.0.1:443: timed out")

    with pytest.raises(StatusReadError, match="cannot reach"):
        read_model(Down(), [watched("phi-0")])


# ---------------------------------------------------------------- the command


@dataclass(frozen=True)
class Raw:
    """An answer written as it is (hostile_api: a redirect, a drip, a body that is not JSON)."""

    behaviour: Behaviour


class _Api(BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, Any]] = {}
    tokens: ClassVar[list[str | None]] = []
    reads: ClassVar[int] = 0

    def do_GET(self) -> None:
        _Api.tokens.append(self.headers.get("Authorization"))
        _Api.reads += 1
        answer = _Api.answers.get(self.path)
        if isinstance(answer, Raw):
            answer.behaviour(self)
            return
        if callable(answer):
            answer = answer()
        code = answer if isinstance(answer, int) else 200 if answer is not None else 404
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(
            json.dumps(answer if code == 200 else {"message": "forbidden" if code == 403 else "no"}).encode()
        )

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)  # a cut answer still being written holds up no other
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Api.answers, _Api.tokens, _Api.reads = {}, [], 0
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def kubeconfig(server: str) -> str:
    return json.dumps(
        {
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {"token": TOKEN}}],
            "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "lab",
        }
    )


def outputs(**extra: Any) -> dict[str, Any]:
    return {
        "clusterName": "lab",
        "charts": {"kaito": {"version": "0.8.1"}},
        "workspaces": {
            "default/phi": {
                "model": "phi-4-mini-instruct",
                "source": "phi-4-mini-instruct",
                "endpoint": "http://phi.default.svc.cluster.local/v1/chat/completions",
                "replicas": 1,
                "kaito": [watched("phi-0").props()],
            },
            "default/tiny": {
                "model": None,
                "source": "ghcr.io/kaito-project/aikit/llama3.2:1b",
                "endpoint": "http://tiny.default.svc.cluster.local/v1/chat/completions",
                "replicas": 1,
                "kaito": [watched("tiny-0").props()],
            },
        },
        **extra,
    }


@pytest.fixture
def project(tmp_path: Path, api: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a kubeconfig stack `lab` whose kubeconfig file points at the fake API, and a
    stand-in `pulumi` on PATH printing $FAKE_OUTPUTS for `stack output`."""
    (tmp_path / "kubeconfig").write_text(kubeconfig(api))
    (tmp_path / "Pulumi.lab.yaml").write_text(
        "config:\n  kaito-aks:cluster:\n    kubeconfig:\n      path: kubeconfig\n      context: lab\n"
        "  kaito-aks:workspaces:\n    - {name: phi, model: phi-4-mini-instruct}\n"
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "pulumi"
    cli.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "args = sys.argv[1:]\n"
        "if args[:2] == ['stack', 'output'] and '--show-secrets' in args:\n"
        "    print(os.environ['FAKE_OUTPUTS'])\n"
        "elif args[:2] == ['stack', '--show-name'] and os.environ.get('FAKE_SELECTED'):\n"
        "    print(os.environ['FAKE_SELECTED'])\n"
        "elif args[:2] == ['stack', '--show-name']:\n"
        "    print('warning: a newer version of Pulumi is available', file=sys.stderr)\n"
        "    print('error: no stack selected; please use `pulumi stack select`', file=sys.stderr); sys.exit(255)\n"
        "else:\n"
        "    print('error: unexpected ' + ' '.join(args), file=sys.stderr); sys.exit(1)\n"
    )
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(outputs()))
    _Api.answers.update(
        {
            ws_path("phi-0"): workspace("phi-0", *serving()),
            pods_path("phi-0"): {"items": [pod("phi-0-0", "aks-a100-0")]},
            "/api/v1/nodes/aks-a100-0": GPU_NODE,
            ws_path("tiny-0"): workspace("tiny-0"),
            pods_path("tiny-0"): {"items": []},
        }
    )
    return tmp_path


def test_status_prints_a_line_per_model_and_replica_and_exits_1_while_one_waits(project, capsys):
    code = main(["status", "lab", "--dir", str(project)])
    out, err = capsys.readouterr()
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0].startswith("lab: KAITO 0.8.1, cluster lab (kubeconfig context lab); 1 of 2 serving")
    assert lines[1] == (
        "  default/phi  serving 1/1  model id phi-4-mini-instruct  http://phi.default.svc.cluster.local/v1/chat/completions"
    )
    assert lines[2].startswith("    Workspace phi-0  serving  ResourceReady=True (workspaceResourceStatusSuccess, 2m)")
    assert lines[2].endswith("pods 1/1 ready  on aks-a100-0 (1x NVIDIA-A100-PCIE-80GB)")
    assert lines[3].startswith("  default/tiny  waiting 0/1  model id: ask GET /v1/models (a custom image)")
    assert lines[4] == ("    Workspace tiny-0  waiting: KAITO has not reported on it yet  pods 0/0 ready")
    assert TOKEN not in out + err
    assert set(_Api.tokens) == {f"Bearer {TOKEN}"}  # the stack's kubeconfig, no other


def test_status_json_for_scripts(project, capsys):
    assert main(["status", "lab", "--json", "--dir", str(project)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["serving"] is False
    phi, tiny = doc["models"]
    assert (phi["key"], phi["state"], phi["ready"], phi["model"]) == (
        "default/phi",
        "serving",
        "1/1",
        "phi-4-mini-instruct",
    )
    assert phi["replicas"][0]["nodes"] == [
        {"name": "aks-a100-0", "gpuProduct": "NVIDIA-A100-PCIE-80GB", "gpus": 1, "read": True}
    ]
    assert phi["replicas"][0]["conditions"][1]["reason"] == "WorkspaceInferenceStatusSuccess"
    assert tiny["state"] == "waiting"


def test_watch_follows_until_every_model_serves(project, capsys):
    calls = {"n": 0}

    def tiny() -> dict[str, Any]:
        calls["n"] += 1
        return workspace("tiny-0", *serving()) if calls["n"] >= 3 else workspace("tiny-0")

    _Api.answers[ws_path("tiny-0")] = tiny
    from stacks import status

    printed: list[str] = []
    code = status.run(["lab"], project, watch=True, interval=0, out=printed.append, sleep=lambda _: None)
    assert code == 0
    heads = [line for line in printed if line.startswith("lab: ")]
    assert len(heads) == 2, printed  # printed when it changed, not at every read
    assert "1 of 2 serving" in heads[0]
    assert "2 of 2 serving" in heads[1]
    assert calls["n"] == 3


def test_watch_stops_at_a_failure_with_exit_1(project, capsys):
    failed = condition("InferenceReady", "False", "WorkspaceInferenceStatusFailed", "image not found")
    _Api.answers[ws_path("tiny-0")] = workspace("tiny-0", failed)
    code = main(["status", "lab", "--watch", "--interval", "0.01", "--dir", str(project)])
    out = capsys.readouterr().out
    assert code == 1
    assert "default/tiny  failed 0/1" in out
    assert "failed: InferenceReady=False (WorkspaceInferenceStatusFailed: image not found)" in out


def test_no_outputs_yet_an_unreachable_cluster_and_refused_credentials_say_so_with_exit_2(project, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_OUTPUTS", "{}")
    assert main(["status", "lab", "--dir", str(project)]) == 2
    assert capsys.readouterr().err.strip() == "lab: stack lab has no outputs yet: run `pulumi up --stack lab` first"

    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(outputs()))
    _Api.answers[ws_path("phi-0")] = 403
    assert main(["status", "lab", "--dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert (
        "lab: cluster lab (kubeconfig context lab): the credentials may not read workspaces.kaito.sh in namespace default"
        in err
    )

    (project / "kubeconfig").write_text(kubeconfig("http://127.0.0.1:9"))  # nothing listens there
    assert main(["status", "lab", "--dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert "cannot reach http://127.0.0.1:9" in err
    assert TOKEN not in err


def test_without_the_pulumi_cli_status_says_what_it_needs(project, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(project))  # no pulumi there
    assert main(["status", "lab", "--dir", str(project)]) == 2
    assert "with the Pulumi CLI, which is not on PATH" in capsys.readouterr().err


def test_an_aks_stack_is_read_with_its_kubeconfig_output(project, capsys, monkeypatch, api):
    (project / "Pulumi.lab.yaml").write_text("config:\n  kaito-aks:cluster:\n    aks: {resourceGroup: rg, name: lab}\n")
    (project / "kubeconfig").unlink()
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(outputs(kubeconfig=kubeconfig(api))))
    assert main(["status", "lab", "--dir", str(project)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("lab: KAITO 0.8.1, cluster lab; 1 of 2 serving")
    assert TOKEN not in out


def test_outputs_of_an_earlier_kaito_aks_are_read_by_the_stack_files_plan(project, capsys, monkeypatch):
    old = outputs()
    for entry in old["workspaces"].values():
        del entry["kaito"]
    del old["workspaces"]["default/tiny"]
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(old))
    assert main(["status", "lab", "--dir", str(project)]) == 0
    assert "Workspace phi-0  serving" in capsys.readouterr().out


def test_a_model_added_since_the_last_successful_up_is_read_from_the_stack_file(project, capsys, monkeypatch):
    """A failed `up` records no outputs, though KAITO may have its objects: the stack file says what to read."""
    partial = outputs()
    del partial["workspaces"]["default/phi"]
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(partial))
    assert main(["status", "lab", "--dir", str(project)]) == 1
    out = capsys.readouterr().out
    assert (
        "  default/phi  serving 1/1  model id phi-4-mini-instruct  http://phi.default.svc.cluster.local/v1/chat/completions"
        "  (in the stack file, not in the stack's outputs: the last `pulumi up` failed or has not run)"
    ) in out


def test_without_a_stack_name_status_reads_the_selected_stack(project, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_SELECTED", "lab")
    assert main(["status", "--dir", str(project)]) == 1
    assert capsys.readouterr().out.startswith("lab: KAITO 0.8.1")
    monkeypatch.delenv("FAKE_SELECTED")
    assert main(["status", "--dir", str(project)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "name a stack (no stack is selected: `pulumi stack --show-name` failed: "
        "error: no stack selected; please use `pulumi stack select`)"
    )


def test_a_model_whose_objects_are_not_known_is_not_serving(project, capsys, monkeypatch):
    odd = outputs()
    odd["workspaces"]["default/phi"]["kaito"] = []
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(odd))
    assert main(["status", "lab", "--dir", str(project)]) == 1
    out = capsys.readouterr().out
    assert "  default/phi  waiting 0/1" in out
    assert "no KAITO objects known for it" in out


def test_malformed_outputs_are_an_error_naming_the_model_not_a_traceback(project, capsys, monkeypatch):
    odd = outputs()
    odd["workspaces"]["default/phi"]["kaito"] = [{"kind": "Workspace", "name": "phi-0"}]
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(odd))
    assert main(["status", "lab", "--dir", str(project)]) == 2
    assert capsys.readouterr().err.strip() == (
        "lab: the stack output for default/phi does not name its KAITO objects as kaito-aks writes them"
    )


def test_a_pod_the_scheduler_cannot_place_says_why(project, capsys):
    unscheduled = {
        "metadata": {"name": "tiny-0-0"},
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
                }
            ]
        },
    }
    _Api.answers[pods_path("tiny-0")] = {"items": [unscheduled]}
    assert main(["status", "lab", "--dir", str(project)]) == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if "Workspace tiny-0" in line)
    assert line.endswith(
        "pods 0/1 ready  pod tiny-0-0 not scheduled (Unschedulable: 0/3 nodes are available: 3 node(s) didn't match "
        "Pod's node affinity/selector.)"
    )


def test_expired_credentials_are_said_as_such(project, capsys):
    _Api.answers[ws_path("phi-0")] = 401
    assert main(["status", "lab", "--dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert "the cluster refused the credentials (HTTP 401" in err
    assert "log in again" in err


def test_the_watch_interval_must_be_positive(project, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["status", "lab", "--watch", "--interval", "-1", "--dir", str(project)])
    assert exit_.value.code == 2
    assert "-1 must be more than 0" in capsys.readouterr().err


def test_a_nodeclaims_stage_is_kaitos_first_provisioning_state():
    """KAITO 0.12's FirstNodeClaimProvisioningState: an error wins over a stage that only awaits
    reconciliation; conditions not reported yet are skipped."""
    from kaito_aks.waits.model_ready import nodeclaim_stage

    def claim(*conditions: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": "nc"}, "status": {"conditions": list(conditions)}}

    awaiting = condition("Launched", "False", "AwaitingReconciliation", "object is awaiting reconciliation")
    failed = condition("Registered", "False", "RegistrationFailed", "node never joined")
    assert nodeclaim_stage(claim(awaiting, failed)) == ("Registered", failed)
    assert nodeclaim_stage(claim(awaiting)) == ("Launched", awaiting)
    late = condition("Initialized", "False", "NotInitialized", "device plugin not ready")
    assert nodeclaim_stage(claim(condition("Launched", "True", "Launched"), late)) == ("Initialized", late)
    assert nodeclaim_stage(claim()) == ("Launched", {})  # nothing reported yet
    done = [condition(t, "True", t) for t in ("Launched", "Registered", "Initialized")]
    assert nodeclaim_stage(claim(*done)) == ("Ready", {})


def test_odd_object_fields_in_the_outputs_are_refused_by_name(project, capsys, monkeypatch):
    odd = outputs()
    odd["workspaces"]["default/phi"]["kaito"] = [{**watched("phi-0").props(), "kind": 5}]
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(odd))
    assert main(["status", "lab", "--dir", str(project)]) == 2
    assert "the stack output for default/phi does not name its KAITO objects" in capsys.readouterr().err


def test_a_credential_plugin_that_gives_a_certificate_without_its_key_is_said(tmp_path: Path):
    from kaito_aks.waits.kube_client import KubeClient, KubeconfigError

    plugin = tmp_path / "plugin"
    plugin.write_text(f'#!{sys.executable}\nprint(\'{{"status": {{"clientCertificateData": "x"}}}}\')\n')
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    config = json.loads(kubeconfig("http://127.0.0.1:9"))
    config["users"][0]["user"] = {"exec": {"command": str(plugin), "apiVersion": "client.authentication.k8s.io/v1"}}
    with pytest.raises(KubeconfigError, match="a client certificate without its key"):
        KubeClient.from_kubeconfig(config)


# ---------------------------------------------------------------- broken and hostile API servers (issue 29)


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """`status` exits 2 with a single line on stderr (no traceback), the token in neither stream."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.endswith("\n")
    assert err[:-1].isprintable(), err  # one line, nothing raw from the cluster
    assert TOKEN not in out + err
    return err.strip()


def test_a_redirect_is_a_one_line_error_and_the_token_goes_nowhere(project, capsys):
    sink = Sink()
    try:
        _Api.answers[ws_path("phi-0")] = Raw(redirect(f"http://127.0.0.1:{sink.port}/collect"))
        err = one_line_error(capsys, ["status", "lab", "--dir", str(project)])
        assert err.startswith("lab: cluster lab (kubeconfig context lab): HTTP 302: the API server redirects GET ")
        assert f"to http://127.0.0.1:{sink.port}/collect; kaito-aks follows no redirect" in err
        assert sink.connections == 0
    finally:
        sink.stop()


@pytest.mark.parametrize("name", list(BROKEN))
def test_every_broken_answer_is_a_one_line_error_with_exit_2(project, capsys, name):
    """Before: 7 of these ended in a traceback and exit 1 (which says "not serving")."""
    _Api.answers[ws_path("phi-0")] = Raw(BROKEN[name])
    err = one_line_error(capsys, ["status", "lab", "--dir", str(project)])
    assert err.startswith("lab: cluster lab (kubeconfig context lab): "), err


def test_an_answer_too_large_and_a_list_that_is_not_one_are_one_line_errors(project, capsys):
    _Api.answers[ws_path("phi-0")] = Raw(huge(40 * 2**20))
    err = one_line_error(capsys, ["status", "lab", "--dir", str(project)])
    assert err.endswith(
        "answer to GET /apis/kaito.sh/v1beta1/namespaces/default/workspaces/phi-0 is larger than 32 MiB, which kaito-aks does not read"
    )
    _Api.answers[ws_path("phi-0")] = workspace("phi-0", *serving())
    _Api.answers[pods_path("phi-0")] = {"items": 5}
    err = one_line_error(capsys, ["status", "lab", "--dir", str(project)])
    assert err == (
        "lab: cluster lab (kubeconfig context lab): the API server's list of pods in default is not a Kubernetes "
        "list (items that are objects)"
    )


def test_a_server_that_drips_its_answer_is_cut_at_the_calls_deadline(project, capsys, monkeypatch):
    monkeypatch.setattr(kube_client, "REQUEST_TIMEOUT_SECONDS", 1.0)
    _Api.answers[ws_path("phi-0")] = Raw(drip(seconds=30))
    start = time.monotonic()
    err = one_line_error(capsys, ["status", "lab", "--dir", str(project)])
    assert time.monotonic() - start < 15  # not the 30 s the server drips for
    assert err.endswith(
        "did not answer GET /apis/kaito.sh/v1beta1/namespaces/default/workspaces/phi-0 in full within 1s"
    )


def test_odd_shapes_in_kaitos_objects_are_shown_not_a_traceback(project, capsys):
    """An object whose fields have other shapes than Kubernetes writes is still read: what can
    be shown is, the rest is not (exit 1: nothing says it serves)."""
    _Api.answers[ws_path("phi-0")] = {"metadata": [], "status": {"conditions": ["x", {"type": 5}, None]}}
    _Api.answers[ws_path("tiny-0")] = {"metadata": {"generation": "2"}, "status": "ready", "resource": []}
    _Api.answers[pods_path("phi-0")] = {"items": [{"metadata": {"name": 7}, "spec": [], "status": {"conditions": {}}}]}
    assert main(["status", "lab", "--dir", str(project)]) == 1
    out = capsys.readouterr().out
    assert "Workspace phi-0  waiting: no InferenceReady yet" in out
    assert "Workspace tiny-0  waiting: KAITO has not reported on it yet" in out


def test_the_clusters_words_are_printed_escaped(project, capsys):
    failed = condition("InferenceReady", "False", "WorkspaceInferenceStatusFailed", f"out of memory{ESCAPES}")
    _Api.answers[ws_path("tiny-0")] = workspace("tiny-0", failed)
    _Api.answers[pods_path("tiny-0")] = {"items": [pod(f"tiny-0-0{ESCAPES}", "aks-a100-0", ready=False)]}
    assert main(["status", "lab", "--dir", str(project)]) == 1
    out, err = capsys.readouterr()
    assert all(line.isprintable() for line in (out + err).splitlines())
    assert r"out of memory\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\r\u202e" in out
    _Api.answers[ws_path("phi-0")] = Raw(lambda h: _status_with_message(h, f"forbidden {ESCAPES}"))
    err = one_line_error(capsys, ["status", "lab", "--dir", str(project)])
    assert err.endswith(
        r"(HTTP 403: forbidden \x1b[31mRED\x1b[0m\x1b]0;pwned\x07\r\u202e): grant get and list on KAITO's objects, and on pods and nodes for the rest"
    )


def _status_with_message(handler: BaseHTTPRequestHandler, message: str) -> None:
    body = json.dumps({"kind": "Status", "message": message}).encode()
    handler.send_response(403)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def test_only_the_kubeconfigs_ca_is_trusted(project, capsys, monkeypatch, certs):
    """A server whose certificate the machine's store trusts but the kubeconfig's CA does not
    sign gets no request (no token): exit 2."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certs.system.cert))
    server = ApiServer(tls=certs.system_server)
    try:
        server.routes.update(_Api.answers)
        ca = base64.b64encode(certs.cluster.cert.read_bytes()).decode()
        config = json.loads(kubeconfig(server.url))
        config["clusters"][0]["cluster"]["certificate-authority-data"] = ca
        (project / "kubeconfig").write_text(json.dumps(config))
        err = one_line_error(capsys, ["status", "lab", "--dir", str(project)])
        assert f"the API server at {server.url} is not trusted (" in err
        assert server.seen == []
        del config["clusters"][0]["cluster"]["certificate-authority-data"]  # no CA named: the machine's store
        (project / "kubeconfig").write_text(json.dumps(config))
        assert main(["status", "lab", "--dir", str(project)]) == 1
        assert "1 of 2 serving" in capsys.readouterr().out
    finally:
        server.stop()


def test_watch_into_a_pipe_prints_each_change_as_it_comes(project):
    """`status --watch | tee` (and the e2e, which reads it as it runs): each change reaches the
    pipe when it is printed, not when the watch ends."""
    watch = subprocess.Popen(
        [sys.executable, "-m", "stacks", "status", "lab", "--watch", "--interval", "0.2", "--dir", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},  # as a plain shell runs it
    )
    try:
        first = _line_within(watch, 60)  # tiny-0 still waits: the watch goes on
        assert first.startswith("lab: KAITO 0.8.1, cluster lab (kubeconfig context lab); 1 of 2 serving"), first
        _Api.answers[ws_path("tiny-0")] = workspace("tiny-0", *serving())
        out, err = watch.communicate(timeout=60)
        assert watch.returncode == 0, err
        assert "2 of 2 serving" in out
    finally:
        watch.kill()
        watch.wait()


def _line_within(process: subprocess.Popen[str], seconds: float) -> str:
    """The process's next stdout line, read in a thread so a missing line fails the test in time."""
    got: list[str] = []
    reader = threading.Thread(
        target=lambda: got.append(process.stdout.readline() if process.stdout else ""), daemon=True
    )
    reader.start()
    reader.join(seconds)
    assert got, f"nothing printed within {seconds:g} s"
    return got[0]


# ---------------------------------------------------------------- why it does not serve (issue 35)


def test_status_explains_a_model_that_does_not_serve_with_its_first_broken_link(project, capsys):
    failed = condition("InferenceReady", "False", "WorkspaceInferenceStatusFailed", "image not found")
    _Api.answers[ws_path("tiny-0")] = workspace("tiny-0", condition("ResourceReady", "True", "x"), failed)
    stuck = pod("tiny-0-0", "aks-a100-0", ready=False, waiting="ImagePullBackOff")
    _Api.answers[pods_path("tiny-0")] = {"items": [stuck]}
    assert main(["status", "lab", "--dir", str(project)]) == 1
    out = capsys.readouterr().out
    block = out.split("  default/tiny  ", 1)[1]
    assert "    first broken link: pods (pod tiny-0-0)\n      container c: ImagePullBackOff: pull\n" in block
    assert "      means: the node cannot pull the container's image" in block
    assert "    chain: Azure node pool - · NodeClaims - · nodes " in block
    assert "pods BROKEN (container c: ImagePullBackOff: pull)" in block
    assert "first broken link" not in out.split("  default/tiny  ", 1)[0]  # phi serves: nothing said of it
    assert main(["status", "lab", "--json", "--dir", str(project)]) == 1
    phi, tiny = json.loads(capsys.readouterr().out)["models"]
    assert "diagnosis" not in phi  # serving, neither routed nor autoscaled: not walked, nothing more read
    assert tiny["diagnosis"]["firstBroken"]["finding"]["detector"] == "image-pull-failed"
    assert [link["link"] for link in tiny["diagnosis"]["links"]][:4] == ["azure", "nodeclaims", "nodes", "kaito"]


def test_a_mirror_being_downloaded_is_one_reading_for_its_line_and_the_weights_link(project, capsys, monkeypatch):
    """KAITO 0.12 holds phi for its weights: status prints the ModelMirror's line and the
    diagnosis's weights link from one GET of the mirror, in one wording."""
    from kaito_aks.kaito.modelmirror import MODEL_MIRRORS, mirror_of

    name = mirror_of("phi-4-mini-instruct", "0.12.0")
    entry = {**outputs()["workspaces"]["default/phi"], "modelMirror": name}
    monkeypatch.setenv(
        "FAKE_OUTPUTS",
        json.dumps(outputs(charts={"kaito": {"version": "0.12.0"}}, workspaces={"default/phi": entry})),
    )
    held = workspace(
        "phi-0",
        condition("ResourceReady", "False", "ModelMirrorNotReady", "Model download in progress"),
        condition("ModelMirrorReady", "False", "ModelMirrorPending", "Model download in progress"),
    )
    _Api.answers[ws_path("phi-0")] = {**held, "inference": {"preset": {"name": "phi-4-mini-instruct"}}}
    labels = {**GPU_NODE["metadata"]["labels"], "nvidia.com/gpu.memory": "81920", "apps": "phi-0"}
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"nvidia.com/gpu": "1"}}
    node = {"metadata": {"name": "aks-a100-0", "labels": labels}, "status": ready}
    _Api.answers["/api/v1/nodes?labelSelector=apps%3Dphi-0"] = {"items": [node]}
    gets: list[str] = []
    mirror = {
        "metadata": {"name": name},
        "status": {"phase": "Pending", "download": {"speedBytesPerSecond": 52_400_000, "remainingSeconds": 95}},
    }
    _Api.answers[f"{MODEL_MIRRORS}/{name}"] = lambda: gets.append(name) or mirror
    _Api.answers[MODEL_MIRRORS] = lambda: gets.append("every mirror") or {"items": [mirror]}
    assert main(["status", "lab", "--dir", str(project)]) == 1
    out = capsys.readouterr().out
    progress = "downloading at 52.4 MB/s, about 1m35s left"
    assert f"    ModelMirror {name}: Pending, {progress}\n" in out, out
    assert f"    waits at: weights (ModelMirror {name})\n      Model download in progress, {progress}\n" in out, out
    assert f"weights waiting (Model download in progress, {progress})" in out, out
    assert gets == [name], "the mirror is read once for the line and the link"


def test_every_detector_of_the_failure_library_is_documented():
    from kaito_aks.diagnose import DETECTORS

    page = (Path(__file__).resolve().parents[1] / "docs" / "operations.md").read_text()
    assert [name for name in DETECTORS if f"| `{name}` |" not in page] == []


SUB = "00000000-0000-0000-0000-000000000000"
POOL_PATH = (
    f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/lab/agentPools/"
    "ws1a2b3c4?api-version=2025-09-01"
)


@pytest.fixture
def aks_project(project: Path, monkeypatch: pytest.MonkeyPatch, api: str) -> Path:
    """An AKS stack whose KAITO makes its nodes with gpu-provisioner: phi's NodeClaim did not
    launch, and ARM (the fake API server here) holds its agent pool, refused for quota."""
    from diagnose_answers import CUT_ERROR, GPU_PROVISIONER_LABELS, QUOTA_MESSAGE, agent_pool, nodeclaim
    from diagnose_answers import cond as claim_cond

    (project / "Pulumi.lab.yaml").write_text(
        "config:\n  kaito-aks:cluster:\n    aks: {resourceGroup: rg, name: lab}\n"
        f"  azure-native:subscriptionId: {SUB}\n"
    )
    (project / "kubeconfig").unlink()
    monkeypatch.setenv(
        "FAKE_OUTPUTS",
        json.dumps(
            outputs(
                kubeconfig=kubeconfig(api),
                charts={"kaito": {"version": "0.8.1"}, "gpuProvisioner": {"version": "0.3.8"}},
            )
        ),
    )
    monkeypatch.setenv("KAITO_AKS_ARM_ENDPOINT", api)  # ARM, stood in for by the fake API server
    waiting = condition("ResourceReady", "False", "NodeClaimNotReady", "Ready NodeClaims are not enough")
    _Api.answers[ws_path("phi-0")] = workspace("phi-0", waiting, instance_type="Standard_NC24ads_A100_v4")
    claims = "/apis/karpenter.sh/v1/nodeclaims?" + urllib.parse.urlencode(
        {"labelSelector": "kaito.sh/workspace=phi-0,kaito.sh/workspacenamespace=default"}
    )
    claim = nodeclaim("ws1a2b3c4", GPU_PROVISIONER_LABELS, claim_cond("Launched", "Unknown", "LaunchFailed", CUT_ERROR))
    _Api.answers[claims] = {"items": [claim]}
    _Api.answers[POOL_PATH] = agent_pool("ws1a2b3c4", "Failed", "QuotaExceeded", QUOTA_MESSAGE)
    return project


def _az(project: Path, script: str) -> None:
    az = project / "bin" / "az"
    az.write_text(f"#!{sys.executable}\nimport json, os, sys\n{script}\n")
    az.chmod(az.stat().st_mode | stat.S_IXUSR)


def test_on_aks_the_agent_pool_of_a_nodeclaim_that_did_not_launch_is_read_with_the_azure_clis_login(
    aks_project, capsys, api
):
    _az(
        aks_project,
        "open(os.environ['AZ_CALLS'], 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"print(json.dumps({{'accessToken': 'arm-secret-token', 'subscription': '{SUB}', 'tokenType': 'Bearer'}}))",
    )
    calls = aks_project / "az-calls"
    os.environ["AZ_CALLS"] = str(calls)
    try:
        assert main(["status", "lab", "--dir", str(aks_project)]) == 1
    finally:
        del os.environ["AZ_CALLS"]
    out, err = capsys.readouterr()
    block = out.split("  default/phi  ", 1)[1].split("  default/tiny  ", 1)[0]
    assert "    first broken link: Azure node pool (agent pool ws1a2b3c4)\n" in block, block
    assert "QuotaExceeded: Preflight validation check" in block
    assert "means: the subscription has no vCPU quota left for standardNCADSA100v4Family in eastus2" in block
    # a token for the endpoint it goes to (https://management.azure.com/ without the stand-in)
    assert calls.read_text().split() == [
        "account", "get-access-token", "--resource", f"{api}/", "--output", "json", "--subscription", SUB,
    ]  # fmt: skip
    assert "arm-secret-token" not in out + err
    assert "Bearer arm-secret-token" in _Api.tokens  # ARM got the CLI's token, the cluster its own
    assert f"Bearer {TOKEN}" in _Api.tokens


def test_without_an_azure_login_the_azure_side_says_why_and_the_nodeclaim_speaks(aks_project, capsys):
    _az(aks_project, "print('ERROR: Please run az login to setup account.', file=sys.stderr); sys.exit(1)")
    assert main(["status", "lab", "--dir", str(aks_project)]) == 1
    block = capsys.readouterr().out.split("  default/phi  ", 1)[1]
    assert "    first broken link: NodeClaims (NodeClaim ws1a2b3c4)" in block, block
    assert "Azure node pool not read (`az account get-access-token` failed: ERROR: Please run az login" in block
