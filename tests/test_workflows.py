"""The GitHub workflows: valid against GitHub's workflow schema, and doing what docs/ci.md says."""

from __future__ import annotations

import json
import re
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
    assert set(ci["on"]) == {"pull_request"}  # main's tests run in deploy.yml, before it deploys
    assert any(s.get("run") == "make test" for s in steps(ci["jobs"]["test"]))
    render = ci["jobs"]["render-diff"]
    assert 'make render AGAINST="$BASE"' in "\n".join(s.get("run", "") for s in steps(render))
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


def run_of(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


def test_pull_requests_preview_the_deployed_stacks_they_change_with_the_read_only_identity_and_skip_forks():
    """The stacks come from stacks.yaml (python -m stacks.declared preview, the tests' module), so
    a team adds a stack without editing a workflow."""
    preview = load("preview.yml")
    plan, job = preview["jobs"]["plan"], preview["jobs"]["preview"]
    assert plan["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert 'git diff --name-only "$BASE" HEAD | python -m stacks.declared preview' in run_of(plan)
    assert job["needs"] == "plan"
    assert job["strategy"]["matrix"] == {"include": "${{ fromJSON(needs.plan.outputs.stacks) }}"}
    assert job["permissions"]["id-token"] == "write"
    assert "environment" not in job
    stack = uses_of(job, "$/.github/actions/pulumi-stack")["with"]
    assert stack["stack"] == "${{ matrix.stack }}"
    assert stack["command"] == "preview"
    assert stack["client-id"] == "${{ vars.AZURE_PREVIEW_CLIENT_ID }}"
    assert stack["comment-on-pr"] == "true"


def test_the_plan_jobs_install_the_pyyaml_the_program_pins():
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().split() if "==" in line)
    for workflow, job in (("preview.yml", "plan"), ("deploy.yml", "plan")):
        assert f"pip install --quiet PyYAML=={pins['PyYAML']}" in run_of(load(workflow)["jobs"][job]), workflow


def test_deploy_tests_main_then_deploys_the_declared_stacks_one_at_a_time_in_order():
    deploy = load("deploy.yml")
    assert deploy["on"] == {"push": {"branches": ["main"]}, "workflow_dispatch": None}  # no workflow_run
    jobs = deploy["jobs"]
    assert {"make test", "make render"} <= {s.get("run") for s in steps(jobs["test"])}
    assert jobs["plan"]["needs"] == "test"
    assert "python -m stacks.declared deploy" in run_of(jobs["plan"])
    up = jobs["deploy"]
    assert up["needs"] == "plan"
    assert up["strategy"] == {
        "max-parallel": 1,
        "fail-fast": True,
        "matrix": {"include": "${{ fromJSON(needs.plan.outputs.stacks) }}"},
    }
    assert up["uses"] == "$/.github/workflows/pulumi-up.yml"
    assert up["with"] == {"stack": "${{ matrix.stack }}", "environment": "${{ matrix.environment }}"}
    assert up["secrets"] == {"PULUMI_ACCESS_TOKEN": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}


def test_each_stack_is_approved_against_a_fresh_preview_shown_before_the_gate():
    jobs = load("pulumi-up.yml")["jobs"]
    gate_free = jobs["preview"]
    assert "environment" not in gate_free
    stack = uses_of(gate_free, "$/.github/actions/pulumi-stack")["with"]
    assert (stack["stack"], stack["command"], stack["client-id"]) == (
        "${{ inputs.stack }}",
        "preview",
        "${{ vars.AZURE_PREVIEW_CLIENT_ID }}",
    )
    assert "GITHUB_STEP_SUMMARY" in steps(gate_free)[-1]["run"]
    up = jobs["up"]
    assert up["needs"] == "preview"
    assert up["environment"] == "${{ inputs.environment }}"
    assert uses_of(up, "$/.github/actions/pulumi-stack")["with"]["client-id"] == "${{ vars.AZURE_CLIENT_ID }}"


def every_file() -> list[Path]:
    return [*WORKFLOWS, ACTION]


def test_no_workflow_names_a_stack_or_inherits_every_secret():
    for path in every_file():
        text = path.read_text()
        assert "secrets: inherit" not in text, path
        for line in text.splitlines():
            if line.strip().startswith("stack:") and line.split(":", 1)[1].strip():  # (a value, not an input's name)
                assert "${{" in line, f"{path.name}: {line.strip()} (stacks come from stacks.yaml)"


USES = re.compile(r"^\s*(?:- )?uses:\s*(\S+)(?:\s+#\s*(\S+))?\s*$")


def test_every_action_is_pinned_to_a_commit_with_its_release_in_a_comment():
    found = 0
    for path in every_file():
        for line in path.read_text().splitlines():
            m = USES.match(line)
            if m is None:
                continue
            found += 1
            ref, release = m.groups()
            if ref.startswith("$/"):  # this repository's own, at the workflow's commit
                continue
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), f"{path.name}: {line.strip()}"
            assert re.fullmatch(r"v\d+(\.\d+)*", release or ""), f"{path.name}: {line.strip()} (the release?)"
    assert found >= 15


def test_every_job_has_its_own_permissions_and_no_checkout_keeps_its_credentials():
    for path in WORKFLOWS:
        workflow = load(path.name)
        assert workflow["permissions"] == {}, path.name
        for name, job in workflow["jobs"].items():
            assert "permissions" in job, f"{path.name}: {name}"
            for step in steps(job):
                if step.get("uses", "").startswith("actions/checkout"):
                    assert step["with"]["persist-credentials"] is False, f"{path.name}: {name}"


def zizmor(*paths: Path) -> list[dict]:
    """zizmor's findings (its default persona), offline: no network, no GitHub token."""
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "zizmor"),
            "--offline",
            "--format",
            "json",
            "--no-progress",
            *map(str, paths),
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)},
    )
    assert result.returncode in (0, 10, 11, 12, 13, 14), result.stderr
    return json.loads(result.stdout)


def test_zizmor_finds_nothing_in_the_workflows():
    found = zizmor(ROOT / ".github")
    assert found == [], [(f["ident"], f["locations"][0]["symbolic"]["key"], f["desc"]) for f in found]


def test_zizmor_would_catch_an_unpinned_action_an_injection_and_inherited_secrets(tmp_path: Path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "name: bad\non: pull_request\npermissions: {}\njobs:\n"
        "  x:\n    runs-on: ubuntu-latest\n    permissions: {}\n    steps:\n"
        "      - uses: actions/checkout@v4\n        with: {persist-credentials: false}\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n"
        "  y:\n    uses: octo/repo/.github/workflows/w.yml@main\n    permissions: {}\n    secrets: inherit\n"
    )
    assert {f["ident"] for f in zizmor(bad)} >= {"unpinned-uses", "template-injection", "secrets-inherit"}
