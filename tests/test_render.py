"""The credential-free render: golden snapshots per stack, determinism, no secrets, and
conformance of what it renders against the real KAITO CRDs and chart values."""

from __future__ import annotations

import difflib
import os

import pytest
import yaml

import upstream_facts
from kaito_aks import catalog
from kube_schema import crd_validator, unknown_value_paths
from stacks import declared
from stacks.evaluate import evaluate
from stacks.render import MARKER, REDACTED, render_files, write_files
from stacks.stackfile import read_stack_file
from tests.conftest import ROOT, config, run

SNAPSHOTS = ROOT / "tests" / "snapshots"
STACKS = sorted(declared.read(ROOT).snapshots)  # the examples, and the stacks of yours stacks.yaml asks for


def render(stack: str) -> dict[str, str]:
    f = read_stack_file(stack)
    return render_files(evaluate(f.config, stack=stack, secrets=f.secrets))


@pytest.fixture(scope="module", params=STACKS)
def rendered(request) -> tuple[str, dict[str, str]]:
    return request.param, render(request.param)


def test_every_example_and_asked_for_stack_is_rendered_and_snapshotted():
    assert set(STACKS) >= {"byo", "dev", "prod"}
    assert sorted(p.name for p in SNAPSHOTS.iterdir() if p.is_dir()) == STACKS


def test_render_matches_the_golden_snapshot(rendered):
    """Review a change in tests/snapshots/ like a `pulumi preview`. Regenerate: make snapshots."""
    stack, files = rendered
    target = SNAPSHOTS / stack
    if os.environ.get("UPDATE_SNAPSHOTS"):
        write_files(files, target)
    on_disk = {
        str(p.relative_to(target)): p.read_text() for p in sorted(target.rglob("*")) if p.is_file() and p.name != MARKER
    }
    diff = "".join(
        difflib.unified_diff(
            "".join(f"--- {k}\n{v}" for k, v in sorted(on_disk.items())).splitlines(True),
            "".join(f"--- {k}\n{v}" for k, v in sorted(files.items())).splitlines(True),
            f"snapshot/{stack}",
            f"render/{stack}",
        )
    )
    assert not diff, f"render of {stack} changed (run `make snapshots` if intended):\n{diff}"


def test_render_is_deterministic(rendered):
    stack, files = rendered
    assert render(stack) == files


def test_rendered_workspaces_and_inference_sets_pass_the_real_crd(rendered):
    stack, files = rendered
    version = read_version(files)
    chart = catalog.kaito_charts()[version]
    checked = 0
    for path, text in files.items():
        obj = yaml.safe_load(text)
        if isinstance(obj, dict) and obj.get("kind") in ("Workspace", "InferenceSet"):
            api = obj["apiVersion"].split("/")[1]
            crd = upstream_facts.crd(version, f"{obj['kind'].lower()}s.kaito.sh")
            assert crd_validator(crd, api)(obj) == [], path
            checked += 1
    # at least one KAITO object per workspace entry of the stack
    assert checked >= len(read_stack_file(stack).config.get("kaito-aks:workspaces", [])) > 0
    assert chart.version == version


def test_where_kaito_runs_elsewhere_every_kaito_object_waits_for_its_kind_to_be_served(rendered):
    """Review 2, B8: the stacks whose KAITO is not installed by them (the add-on, install false)
    create nothing of KAITO's before `kaito/ready` finds each kind they create served."""
    stack, files = rendered
    installed = yaml.safe_load(files["outputs.yaml"])["charts"]["kaito"]["installed"]
    order = yaml.safe_load(files["order.yaml"])["resources"]
    objects = {
        path: yaml.safe_load(text)
        for path, text in files.items()
        if path.startswith("kubernetes/") and yaml.safe_load(text)["apiVersion"].startswith("kaito.sh/")
    }
    assert objects, stack
    if installed:
        assert "waits/kaito_ready.yaml" not in files  # the Helm release's wait gives the same
        return
    wait = yaml.safe_load(files["waits/kaito_ready.yaml"])["properties"]
    served = {(k["plural"], k["version"]) for k in wait["kinds"]}
    for path, obj in objects.items():
        group_version = obj["apiVersion"].split("/")[1]
        assert (obj["kind"].lower() + "s", group_version) in served, path
        assert "waits/kaito_ready.yaml" in order[path]["waitsOn"], path
    assert wait["requireWebhook"] is yaml.safe_load(files["outputs.yaml"])["charts"]["kaito"]["byAksAddOn"]


def read_version(files: dict[str, str]) -> str:
    outputs = yaml.safe_load(files["outputs.yaml"])
    return outputs["charts"]["kaito"]["version"]


def test_rendered_helm_values_exist_in_the_pinned_charts(rendered):
    stack, files = rendered
    releases = [path for path in files if path.startswith("helm/")]
    if stack not in ("e2e", "addon"):  # KAITO installed elsewhere (kaito.install: false) or by AKS (the add-on)
        assert releases, f"{stack} renders no Helm release"
    for path, text in files.items():
        if not path.startswith("helm/"):
            continue
        release = yaml.safe_load(text)
        if release["chart"] == "workspace":
            version = release["version"]
            chart_values = upstream_facts.chart_values("kaito", version)
            allowed = tuple(catalog.kaito_charts()[version].subchart_toggles)
        elif release["chart"] == "ragengine":
            chart_values = upstream_facts.chart_values("kaito", release["version"], "ragengine")
            allowed = ()
        elif release["chart"] == "gpu-provisioner":
            chart_values = upstream_facts.chart_values("gpu-provisioner", f"v{release['version']}")
            allowed = ()
        elif release["chart"].endswith("/karpenter-crd"):  # the CRDs as templates: no values read
            assert release["values"] == {}, path
            continue
        elif release["chart"].endswith("/karpenter"):  # an OCI chart, by its full reference
            chart_values = upstream_facts.chart_values("karpenter", release["version"])
            allowed = ()
        elif release["chart"] == "istiod":  # its defaults under _internal_defaults_do_not_set
            chart_values = upstream_facts.serving_chart_values("istiod")["_internal_defaults_do_not_set"]
            allowed = ("meshConfig.extensionProviders",)  # (Istio's MeshConfig, merged whole: test_serving.py)
        elif release["chart"] == catalog.serving_charts().body_based_routing.chart:
            chart_values = upstream_facts.serving_chart_values("body-based-routing")
            allowed = ()
        elif release["chart"] in ("base", "authorino-operator", "keda", "keda-kaito-scaler"):
            assert release["values"] == {}, path  # the serving charts set nothing on these
            continue
        else:
            chart_values = upstream_facts.chart_values("gpu-operator", release["version"])
            allowed = ()
        assert unknown_value_paths(release["values"], chart_values, allowed) == [], path


def test_no_secret_reaches_the_render():
    token = "hf_render_must_never_show_this"
    ev = run(config([{"name": "llama", "model": "llama-3.1-8b-instruct"}]), hf_token=token)
    files = render_files(ev)
    assert all(token not in text for text in files.values())
    secret = yaml.safe_load(files["kubernetes/default/Secret-llama-hf-token.yaml"])
    assert secret["stringData"] == {"HF_TOKEN": REDACTED}


def test_aks_kubeconfig_is_redacted_everywhere():
    files = render("dev")
    assert yaml.safe_load(files["outputs.yaml"])["kubeconfig"] == REDACTED
    assert yaml.safe_load(files["providers/kubernetes-cluster.yaml"])["properties"]["kubeconfig"] == REDACTED
    assert all("mock-token" not in text for text in files.values())


def test_order_file_puts_cluster_pools_operators_and_workspaces_in_waves():
    waves = yaml.safe_load(render("dev")["order.yaml"])["waves"]

    def wave_of(label: str) -> int:
        return next(i for i, wave in enumerate(waves) if label in wave)

    group = wave_of("azure/resources_ResourceGroup-cluster-rg.yaml")
    cluster = wave_of("azure/containerservice_ManagedCluster-cluster.yaml")
    pool = wave_of("azure/containerservice_AgentPool-gpu.yaml")
    kaito = wave_of("helm/kaito-workspace-kaito-workspace.yaml")
    gpu_operator = wave_of("helm/gpu-operator-gpu-operator.yaml")
    workspace = wave_of("kubernetes/default/Workspace-phi-4-mini-0.yaml")
    assert group < cluster < pool < kaito == gpu_operator < workspace
