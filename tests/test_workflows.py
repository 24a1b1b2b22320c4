"""The GitHub workflows: valid against GitHub's workflow schema, and doing what the README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def load(name: str) -> dict:
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on".
    return {
        ("on" if k is True else k): v
        for k, v in yaml.safe_load((ROOT / ".github/workflows" / name).read_text()).items()
    }


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def test_workflows_validate_against_the_github_workflow_schema():
    assert WORKFLOWS
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_broken_workflow_fails_the_schema(tmp_path: Path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: bad\non: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    stepz: []\n")
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(bad)],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0


def test_ci_runs_the_readme_test_command_and_posts_the_render_diff():
    ci = load("ci.yml")
    assert {"pull_request", "push"} <= set(ci["on"])
    assert any(s.get("run") == "make test" for s in steps(ci["jobs"]["test"]))
    render = ci["jobs"]["render-diff"]
    assert "make render" in "\n".join(s.get("run", "") for s in steps(render))
    assert any(s.get("uses", "").startswith("marocchino/sticky-pull-request-comment") for s in steps(render))


def test_preview_posts_a_diff_per_stack_with_azure_oidc():
    preview = load("preview.yml")
    assert preview["permissions"]["id-token"] == "write"
    job = preview["jobs"]["preview"]
    assert set(job["strategy"]["matrix"]["stack"]) == {"dev", "prod"}
    assert job["env"]["ARM_USE_OIDC"] == "true"
    pulumi = next(s for s in steps(job) if s.get("uses", "").startswith("pulumi/actions"))
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["comment-on-pr"] is True
    assert pulumi["with"]["diff"] is True
    login = next(s for s in steps(job) if s.get("uses", "").startswith("azure/login"))
    assert "client-secret" not in login["with"]


def test_deploy_goes_dev_then_protected_production():
    deploy = load("deploy.yml")
    assert deploy["on"]["push"]["branches"] == ["main"]
    jobs = deploy["jobs"]
    assert jobs["dev"]["with"] == {"stack": "dev", "environment": "dev"}
    assert jobs["prod"]["with"] == {"stack": "prod", "environment": "production"}
    assert jobs["prod"]["needs"] == "dev"
    up = load("pulumi-up.yml")["jobs"]["up"]
    assert up["environment"] == "${{ inputs.environment }}"
    pulumi = next(s for s in steps(up) if s.get("uses", "").startswith("pulumi/actions"))
    assert pulumi["with"]["command"] == "up"
