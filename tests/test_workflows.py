"""The GitHub workflows: valid against GitHub's workflow schema, and doing what docs/ci.md says."""

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
    # next to it, the diff of the committed provider schema: the API every Pulumi language sees
    scripts = "\n".join(s.get("run", "") for s in steps(render))
    assert "-- components/schema.json > schema.diff" in scripts
    assert "Provider schema diff" in scripts


ACTION = ROOT / ".github" / "actions" / "pulumi-stack" / "action.yml"


def test_the_shared_action_validates_against_the_github_action_schema():
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions", str(ACTION)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def action_steps() -> list[dict]:
    return yaml.safe_load(ACTION.read_text())["runs"]["steps"]


def uses_of(job: dict, prefix: str) -> dict:
    return next(s for s in steps(job) if s.get("uses", "").startswith(prefix))


def test_the_pulumi_cli_is_pinned_to_the_sdk_version():
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().split() if "==" in line)
    pulumi = next(s for s in action_steps() if s.get("uses", "").startswith("pulumi/actions"))
    assert pulumi["with"]["pulumi-version"] == pins["pulumi"]
    login = next(s for s in action_steps() if s.get("uses", "").startswith("azure/login"))
    assert "client-secret" not in login["with"]
    assert any(s.get("uses", "").startswith("azure/use-kubelogin") for s in action_steps())


def test_pull_request_previews_use_the_read_only_identity_and_skip_forks():
    preview = load("preview.yml")
    assert preview["permissions"]["id-token"] == "write"
    job = preview["jobs"]["preview"]
    assert job["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert set(job["strategy"]["matrix"]["stack"]) == {"dev", "prod"}
    assert "environment" not in job
    stack = uses_of(job, "./.github/actions/pulumi-stack")["with"]
    assert stack["command"] == "preview"
    assert stack["client-id"] == "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"
    assert stack["comment-on-pr"] == "true"


def test_deploy_runs_after_ci_passed_on_main_and_deploys_that_commit():
    deploy = load("deploy.yml")
    assert deploy["on"]["workflow_run"] == {"workflows": ["ci"], "types": ["completed"], "branches": ["main"]}
    assert "push" not in deploy["on"]
    dev = deploy["jobs"]["dev"]
    assert "github.event.workflow_run.conclusion == 'success'" in dev["if"]
    assert "github.event.workflow_run.event == 'push'" in dev["if"]
    for job in ("dev", "prod"):
        assert deploy["jobs"][job]["with"]["ref"] == "${{ github.event.workflow_run.head_sha || github.sha }}"
    ci = load("ci.yml")
    assert ci["name"] == "ci"
    assert "if" not in ci["jobs"]["render-diff"]  # the render check runs on main too


def test_production_is_approved_against_a_fresh_preview_shown_before_the_gate():
    jobs = load("deploy.yml")["jobs"]
    assert jobs["dev"]["with"]["environment"] == "dev"
    assert jobs["prod"]["with"]["environment"] == "production"
    assert jobs["prod-preview"]["needs"] == "dev"
    assert jobs["prod"]["needs"] == "prod-preview"
    gate_free = jobs["prod-preview"]
    assert "environment" not in gate_free
    stack = uses_of(gate_free, "./.github/actions/pulumi-stack")["with"]
    assert (stack["stack"], stack["command"], stack["client-id"]) == (
        "prod",
        "preview",
        "${{ vars.AZURE_PREVIEW_CLIENT_ID }}",
    )
    assert "GITHUB_STEP_SUMMARY" in steps(gate_free)[-1]["run"]
    up = load("pulumi-up.yml")["jobs"]["up"]
    assert up["environment"] == "${{ inputs.environment }}"
    assert uses_of(up, "./.github/actions/pulumi-stack")["with"]["client-id"] == "${{ vars.AZURE_CLIENT_ID }}"
    assert uses_of(up, "actions/checkout")["with"]["ref"] == "${{ inputs.ref }}"
