"""A pool replacement announced (issue 27): `validate` and `render` list the models on each pool,
and with `--against <git ref>` every GPU or CPU pool whose create-only settings changed since
that ref, with the models it takes down and the no-downtime recipe."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kaito_aks.azure import cpu_node_pool, gpu_node_pool
from kaito_aks.azure.node_pool import create_only_args
from stacks.cli import main
from stacks.pool_changes import RECIPE_DOC
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose first commit holds the dev stack as shipped."""
    shutil.copy(ROOT / "Pulumi.dev.yaml", tmp_path / "Pulumi.dev.yaml")
    git(tmp_path, "init", "-q")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
    return tmp_path


def edit(repo: Path, change) -> None:
    path = repo / "Pulumi.dev.yaml"
    doc = yaml.safe_load(path.read_text())
    change(doc["config"])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_validate_lists_the_models_on_each_pool(capsys):
    assert main(["validate", "dev"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("dev: pool ")] == [
        "dev: pool gpu (Standard_NV36ads_A10_v5, gpuNodePools[0]): workspaces[0] (default/phi-4-mini), ragEngines[0] "
        "(default/docs-rag)",
        "dev: pool system (Standard_D4s_v5, cluster.aks.systemPool): no model",
        "dev: pool cpu (Standard_D4s_v5, cpuNodePools[0]): workspaces[1] (default/tiny-cpu)",
    ]


def test_a_changed_gpu_size_and_cpu_zones_are_announced_with_the_models_they_take_down(repo: Path, capsys):
    def change(config: dict) -> None:
        for pool in config["kaito-aks:gpuNodePools"]:
            pool["vmSize"] = "Standard_NV72ads_A10_v5"
        config["kaito-aks:ragEngines"][0]["compute"]["instanceType"] = "Standard_NV72ads_A10_v5"
        config["kaito-aks:cpuNodePools"][0]["zones"] = ["2", "1"]
        config["kaito-aks:cpuNodePools"][0]["count"] = 3  # in place: not announced

    edit(repo, change)
    assert main(["validate", "dev", "--dir", str(repo), "--against", "HEAD"]) == 0
    notices = [line for line in capsys.readouterr().out.splitlines() if "notice:" in line]
    assert notices == [
        "dev: notice: gpuNodePools[0] (gpu) is replaced (vmSize Standard_NV36ads_A10_v5 -> Standard_NV72ads_A10_v5): "
        "workspaces[0] (default/phi-4-mini), ragEngines[0] (default/docs-rag) go down until the new pool is ready; "
        "without downtime: add a pool beside it, point the models' selectors at the new one (labelSelector; a CPU "
        "model's nodeSelector), then remove this one, one `pulumi up` each "
        f"({RECIPE_DOC})",
        "dev: notice: cpuNodePools[0] (cpu) is replaced (zones [] -> [2, 1]): workspaces[1] (default/tiny-cpu) go down "
        "until the new pool is ready; without downtime: add a pool beside it, point the models' selectors at the new "
        "one (labelSelector; a CPU model's nodeSelector), then remove this one, one `pulumi up` each "
        f"({RECIPE_DOC})",
    ]
    out = repo / "render"
    assert main(["render", "dev", "--dir", str(repo), "--out", str(out), "--against", "HEAD"]) == 0
    assert sum("notice:" in line for line in capsys.readouterr().out.splitlines()) == 2
    assert (out / "dev" / "order.yaml").is_file()


def test_a_driver_spot_taint_or_disk_change_of_a_gpu_pool_is_announced_and_an_unchanged_file_is_quiet(
    repo: Path, capsys
):
    assert main(["validate", "dev", "--dir", str(repo), "--against", "HEAD"]) == 0
    assert "notice:" not in capsys.readouterr().out

    def change(config: dict) -> None:
        pool = config["kaito-aks:gpuNodePools"][0]
        pool.update(gpuDriver="aks", osDiskSizeGB=256, taints=["sku=gpu:NoSchedule", "team=ml:PreferNoSchedule"])

    edit(repo, change)
    assert main(["validate", "dev", "--dir", str(repo), "--against", "HEAD"]) == 0
    [notice] = [line for line in capsys.readouterr().out.splitlines() if "notice:" in line]
    assert (
        "(gpuDriver operator -> aks; taints [sku=gpu:NoSchedule] -> [sku=gpu:NoSchedule, team=ml:PreferNoSchedule]; "
        in (notice)
    )
    assert "osDiskSizeGB (unset) -> 256)" in notice


def test_the_fields_compared_are_the_pools_replace_on_changes():
    assert set(create_only_args(gpu_node_pool.CREATE_ONLY_PROPERTIES)) == {
        "gpu_driver",
        "taints",
        "vm_size",
        "spot",
        "os_disk_size_gb",
        "zones",
    }
    assert create_only_args(cpu_node_pool.CREATE_ONLY_PROPERTIES) == [
        "vm_size",
        "zones",
        "os_disk_size_gb",
        "vnet_subnet_id",
    ]


def test_a_missing_ref_or_a_new_stack_is_said(repo: Path, capsys):
    assert main(["validate", "dev", "--dir", str(repo), "--against", "no-such-ref"]) == 2
    assert "dev: --against no-such-ref: no such commit in the repository at" in capsys.readouterr().err
    git(repo, "rm", "-q", "--cached", "Pulumi.dev.yaml")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "gone")
    assert main(["validate", "dev", "--dir", str(repo), "--against", "HEAD"]) == 0
    assert "dev: Pulumi.dev.yaml does not exist at HEAD: a new stack, no pool replaced" in capsys.readouterr().out
