"""The non-GPU pools' capacity budget of a stack (stacks/capacity.py over kaito_aks.capacity):
`validate` of the serving example with 2, 4 and 8 routed models says with numbers which fit its
system pool and what to change when they do not; every example stack's budget is printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.cli import main
from tests.conftest import ROOT


def serving_with(tmp_path: Path, models: int, **change: Any) -> str:
    """The serving example with `models` routed models (autoscaled 1-2 each), as a stack file."""
    doc = yaml.safe_load((ROOT / "Pulumi.serving.yaml").read_text())
    config = doc["config"]
    config["kaito-aks:workspaces"] = [
        {"name": f"phi-{i}", "namespace": "llm", "model": "phi-4-mini-instruct", "autoscale": {"maxReplicas": 2}}
        for i in range(models)
    ]
    config["kaito-aks:gpuNodePools"][0]["autoscale"]["max"] = 2 * models
    config.update({f"kaito-aks:{k}": v for k, v in change.items()})
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    name = f"serving{models}"
    (tmp_path / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc))
    return name


def validate(tmp_path: Path, stack: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate", stack, "--dir", str(tmp_path)])
    return code, capsys.readouterr().out


def test_two_routed_models_fit_the_serving_examples_system_pool(tmp_path: Path, capsys):
    code, out = validate(tmp_path, serving_with(tmp_path, 2), capsys)
    assert code == 0
    assert (
        "serving2: capacity system (cluster.aks.systemPool, 2 x Standard_D4s_v5): 4.58 CPU of 7.37 CPU (62%) and "
        "8.9 GiB of 22.9 GiB (39%) requested, under the 80% mark"
    ) in out
    assert "2 x endpoint picker: 1 CPU, 2 GiB each; istiod (Istio 1.29.6): 500m CPU, 2 GiB;" in out
    assert "high-water" not in out


def test_four_fit_above_the_high_water_mark_and_are_warned_with_the_fix(tmp_path: Path, capsys):
    code, out = validate(tmp_path, serving_with(tmp_path, 4), capsys)
    assert code == 0
    assert (
        "serving4: warning: Pulumi.serving4.yaml:4: cluster.aks.systemPool: system (cluster.aks.systemPool, 2 x "
        "Standard_D4s_v5): its pods request 6.58 CPU of 7.37 CPU (89%) and 12.9 GiB of 22.9 GiB (56%), above the 80% "
        "high-water mark"
    ) in out
    assert "give system 1 more node (count 2 -> 3; the system pool's count and size apply when the cluster is" in out


def test_eight_are_refused_with_the_numbers_and_every_fix(tmp_path: Path, capsys):
    code, out = validate(tmp_path, serving_with(tmp_path, 8), capsys)
    assert code == 1
    (line,) = [ln for ln in out.splitlines() if "cannot hold" in ln]
    assert line.startswith(
        "  Pulumi.serving8.yaml:4: cluster.aks.systemPool: system (cluster.aks.systemPool, 2 x Standard_D4s_v5) cannot "
        "hold what must run there: its pods request 10.58 CPU and 20.9 GiB (8 x endpoint picker: 1 CPU, 2 GiB each;"
    )
    assert (
        "and their nodes leave 7.37 CPU and 22.9 GiB (a Standard_D4s_v5 node: 4 vCPUs and 16 GiB, less AKS's 140m CPU "
        "and 4 GiB reserved and 100 MiB eviction threshold (Kubernetes 1.29+), less 175m CPU and 444 MiB of "
        "DaemonSets); pods of 3.21 CPU beyond it would stay Pending"
    ) in line
    assert "give system 1 more node (count 2 -> 3; 4 to stay under 80%;" in line
    assert "or nodes of Standard_D8s_v5 (2 of them leave 15.29 CPU and 53.5 GiB)" in line
    assert "or a cpuNodePools entry without taints, where the endpoint pickers and the operators may run too" in line
    assert line.endswith("(to deploy it anyway: bypassChecks: [capacity])")


@pytest.mark.parametrize(
    "change",
    [
        {"cluster": {"aks": {"resourceGroup": "rg", "name": "kaito-serving", "kubernetesVersion": "1.33",
                             "managedPrometheus": True, "systemPool": {"count": 4}}}},
        {"cpuNodePools": [{"name": "serving", "vmSize": "Standard_D4s_v5", "count": 2}]},
        {"cluster": {"aks": {"resourceGroup": "rg", "name": "kaito-serving", "kubernetesVersion": "1.33",
                             "managedPrometheus": True, "systemPool": {"vmSize": "Standard_D8s_v5"}}}},
    ],
    ids=["more-system-nodes", "an-untainted-cpu-pool", "a-larger-size"],
)  # fmt: skip
def test_each_fix_the_refusal_names_makes_room_for_eight(tmp_path: Path, capsys, change: dict[str, Any]):
    code, out = validate(tmp_path, serving_with(tmp_path, 8, **change), capsys)
    assert code == 0, out
    assert "cannot hold" not in out


def test_a_models_bypass_leaves_the_budget_and_is_said(tmp_path: Path, capsys):
    stack = serving_with(tmp_path, 8)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    doc = yaml.safe_load(path.read_text())
    for w in doc["config"]["kaito-aks:workspaces"][4:]:
        w["bypassChecks"] = ["capacity"]
    path.write_text(yaml.safe_dump(doc))
    code, out = validate(tmp_path, stack, capsys)
    assert code == 0
    assert "warning: Pulumi.serving8.yaml:4: cluster.aks.systemPool: bypassed (capacity): system" in out


EXPECTED = {
    "serving": "4.58 CPU of 7.37 CPU (62%) and 8.9 GiB of 22.9 GiB (39%)",
    "prod": "540m CPU of 23.09 CPU (2%) and 688 MiB of 80.7 GiB (1%)",
    "karpenter": "2.23 CPU of 7.48 CPU (30%) and 2.3 GiB of 23.4 GiB (10%)",  # Karpenter's 2 x 1 CPU / 1 GiB
    "auto": "430m CPU of 7.48 CPU (6%) and 332 MiB of 23.4 GiB (1%)",
    "hf": "540m CPU of 7.47 CPU (7%) and 688 MiB of 23.2 GiB (3%)",
    "addon": "200m CPU of 7.56 CPU (3%) and 140 MiB of 23.6 GiB (1%)",
}


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_every_example_stack_prints_its_budget(stack: str, capsys):
    assert main(["validate", stack]) == 0
    out = capsys.readouterr().out
    assert f"{stack}: capacity system (cluster.aks.systemPool, " in out
    assert EXPECTED[stack] in out


def test_dev_counts_its_cpu_model_on_its_cpu_pool_and_the_rest_on_both(capsys):
    assert main(["validate", "dev"]) == 0
    out = capsys.readouterr().out
    assert "dev: capacity cpu (cpuNodePools[0], 1 x Standard_D4s_v5): 2 CPU of 3.73 CPU (54%)" in out
    assert "dev: capacity system (cluster.aks.systemPool, 2 x Standard_D4s_v5) and cpu (cpuNodePools[0], 1 x" in out


@pytest.mark.parametrize("stack", ["byo", "e2e"])
def test_a_cluster_the_stack_does_not_create_is_not_measured(stack: str, capsys):
    assert main(["validate", stack]) == 0
    assert f"{stack}: capacity: not measured (cluster.kubeconfig: the cluster's pools are not this stack's)" in (
        capsys.readouterr().out
    )
