"""`pip install` of this repository gives a self-contained package (issue #10): the components,
KAITO API types, waits and catalogs, usable by a program that has none of this repo's files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT

# A user's program: one model on an existing cluster, built from the package alone, under mocks.
USER_PROGRAM = textwrap.dedent(
    """
    import json
    import pulumi
    from pulumi.runtime import mocks

    class Mocks(mocks.Mocks):
        def new_resource(self, args):
            registered.append(args.typ)
            return args.name + "-id", args.inputs
        def call(self, args):
            return {}

    registered = []
    mocks.set_mocks(Mocks(), project="user", stack="dev", preview=False)

    from kaito_aks import catalog
    from kaito_aks.model.component import KaitoModel, KaitoModelArgs
    from kaito_aks.cluster.kubeconfig_cluster import KubeconfigCluster, KubeconfigClusterArgs

    assert "phi-4-mini-instruct" in catalog.presets("0.8")  # catalogs ship as package data

    @pulumi.runtime.test
    def deploy():
        cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(context="dev"))
        model = KaitoModel(
            "phi",
            KaitoModelArgs(kaito_version="0.8.1", model="phi-4-mini-instruct", replicas=2, wait_for_gpu_nodes=False),
            opts=pulumi.ResourceOptions(providers=[cluster.provider]),
        )
        return model.endpoint.apply(lambda e: print("endpoint", e))

    deploy()
    print(json.dumps(sorted(set(registered))))
    """
)


def test_the_installed_package_deploys_a_model_without_this_repository(tmp_path: Path):
    source = tmp_path / "src"
    shutil.copytree(ROOT / "components", source, ignore=shutil.ignore_patterns("__pycache__", "tests", "*.egg-info"))
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--target", str(target), str(source)], check=True, capture_output=True, cwd=tmp_path)
    assert (target / "kaito_aks" / "catalog" / "presets.yaml").is_file()

    program = tmp_path / "user" / "program.py"
    program.parent.mkdir()
    program.write_text(USER_PROGRAM)
    # -P: the program's folder is not on sys.path; the package comes from `target` only
    run = subprocess.run(
        [sys.executable, "-P", str(program)],
        cwd=program.parent,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "kubernetes:kaito.sh/v1beta1:Workspace" in run.stdout
    assert "kubernetes:core/v1:Service" in run.stdout
    assert "endpoint http://phi.default.svc.cluster.local/v1/chat/completions" in run.stdout
    assert "components" not in run.stderr
