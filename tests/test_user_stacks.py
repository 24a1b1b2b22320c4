"""A user's own stack files beside the examples: the checks CI gives them (validate, the offline
render, no traceback), and proof that a stranger's stack file leaves the suite green. The
repository's examples and the stacks CI deploys are declared in stacks.yaml (stacks/declared.py)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stacks import declared
from stacks.cli import main
from tests.conftest import EXAMPLES, ROOT

USER_STACKS = declared.user_stacks(ROOT)
UNTRACKED = {".git", ".venv", "render", "out", "build", "__pycache__", ".pytest_cache", ".ruff_cache"}  # (.gitignore)


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(args))
    return code, out.getvalue()


@pytest.mark.skipif(not USER_STACKS, reason="no stack file of yours beside the examples (stacks.yaml)")
@pytest.mark.parametrize("stack", USER_STACKS or ["-"])
def test_your_stack_validates_and_renders_offline(stack: str, tmp_path: Path):
    """What CI checks of a stack of yours: every problem named (validate), and the whole program
    run under mocks (render), without a traceback. Its render is a snapshot only if stacks.yaml
    lists it under `snapshots`."""
    code, said = cli("validate", stack)
    assert code == 0, said
    code, said = cli("render", stack, "--out", str(tmp_path))
    assert code == 0, said
    assert (tmp_path / stack / "order.yaml").is_file()


def test_the_declared_examples_and_deployed_stacks_are_stack_files_here():
    d = declared.read(ROOT)
    assert set(EXAMPLES) >= {"byo", "dev", "prod"}
    assert [(x.stack, x.environment) for x in d.deploy] == [("dev", "dev"), ("prod", "production")]
    assert set(d.snapshots) >= set(d.examples)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("examples: [dev, nope]", "examples: nope: no Pulumi.nope.yaml here; add the file or remove the name"),
        ("examples: [dev, dev]", "examples: dev is named twice; keep one"),
        ("examples: dev", "examples: a list of stack names, e.g. [dev, prod]"),
        ("exampels: [dev]", "exampels: not a key of this file (examples, snapshots, deploy)"),
        ("deploy: [{stack: dev}]", "deploy[0]: write {stack: <name>, environment: <GitHub environment>}"),
        (
            "deploy: [{stack: dev, environment: dev}, {stack: dev, environment: x}]",
            "deploy[1].stack: dev is deployed twice; keep one",
        ),
        ("deploy: [{stack: '$(id)', environment: dev}]", "deploy[0].stack: '$(id)' is not a stack name"),
        ("snapshots: [mine]", "snapshots: mine: no Pulumi.mine.yaml here"),
    ],
)
def test_a_wrong_declaration_is_refused_with_the_fix(tmp_path: Path, text: str, said: str):
    (tmp_path / "Pulumi.dev.yaml").write_text("config: {}\n")
    (tmp_path / "stacks.yaml").write_text(text + "\n")
    with pytest.raises(declared.DeclaredError) as err:
        declared.read(tmp_path)
    assert said in str(err.value)


def test_a_pull_request_previews_the_deployed_stacks_it_changes():
    d = declared.Declared(
        ("dev",), ("dev",), (declared.Deployment("dev", "dev"), declared.Deployment("mine", "production"))
    )

    def stacks(*paths: str) -> list[str]:
        return [x.stack for x in declared.previewed(paths, d)]

    assert stacks("Pulumi.mine.yaml") == ["mine"]
    assert stacks("Pulumi.mine.yaml", "Pulumi.other.yaml", "docs/ci.md") == ["mine"]  # other: not deployed
    assert stacks("README.md", "docs/serving.md", "tests/test_cli.py", "components/tests/test_engine.py") == []
    for program in ("stacks/program.py", "components/kaito_aks/catalog/presets.yaml", "requirements.txt"):
        assert stacks(program) == ["dev", "mine"], program
    assert stacks("stacks.yaml") == ["dev", "mine"]
    assert stacks(".github/actions/pulumi-stack/action.yml") == ["dev", "mine"]  # the pipeline itself
    assert stacks() == []


def test_the_workflows_get_their_stacks_as_json_from_the_same_file():
    deploy = subprocess.run(
        [sys.executable, "-m", "stacks.declared", "deploy"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(deploy.stdout) == [
        {"stack": "dev", "environment": "dev"},
        {"stack": "prod", "environment": "production"},
    ]
    preview = subprocess.run(
        [sys.executable, "-m", "stacks.declared", "preview"],
        cwd=ROOT,
        input="Pulumi.prod.yaml\nREADME.md\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(preview.stdout) == [{"stack": "prod", "environment": "production"}]


# A stranger's stack: dev under another name, edited as README step 4 says (its resource group,
# cluster name and region), with a model of its own and a GPU node for it.
STRANGER = (
    (ROOT / "Pulumi.dev.yaml")
    .read_text()
    .replace("kaito-dev-rg", "team-llm-rg")
    .replace("name: kaito-dev", "name: team-llm")
    .replace("azure-native:location: eastus2", "azure-native:location: westus3")
    .replace("      count: 2\n      gpuDriver", "      count: 3\n      gpuDriver")
    .replace(
        "    - name: tiny-cpu\n",
        "    - name: qwen-coder\n      model: qwen2.5-coder-7b-instruct\n    - name: tiny-cpu\n",
    )
)
# The tests whose cases come from the set of stack files (the four a user's Pulumi.mine.yaml broke
# when every Pulumi.*.yaml was taken for an example), and this file's.
EXAMPLE_DEPENDENT = [
    "tests/test_fuzz.py::test_every_mistake_gets_a_clean_answer",
    "tests/test_render.py::test_every_example_and_asked_for_stack_is_rendered_and_snapshotted",
    "tests/test_render.py::test_render_matches_the_golden_snapshot[dev]",
    "tests/test_aks_security_stack.py::test_the_example_stacks_that_create_a_cluster_are_the_aks_ones",
    "tests/test_user_stacks.py::test_your_stack_validates_and_renders_offline",
]


def test_a_strangers_stack_file_leaves_the_suite_green(tmp_path: Path):
    """A copy of the checkout (as .ci/run makes it) with Pulumi.stranger.yaml beside the examples:
    the tests that read the stack files pass, the stranger's stack is validated and rendered, and
    collecting the suite adds only that check (no example test picks it up)."""
    copy = tmp_path / "kaito-aks"

    def left_out(folder: str, names: list[str]) -> set[str]:
        """What .gitignore keeps out, and a stack file of this checkout's user (the stranger is
        the only one)."""
        out = {n for n in names if n in UNTRACKED or n.endswith(".egg-info")}
        if Path(folder) == ROOT:
            out |= {n for n in names if (m := declared.STACK_FILE.match(n)) and m.group(1) not in EXAMPLES}
        return out

    shutil.copytree(ROOT, copy, ignore=left_out)  # (CI runs the suite in a copy that is no git checkout)

    def pytest_in_copy(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
            cwd=copy,
            capture_output=True,
            text=True,
        )

    def collected() -> set[str]:
        run = pytest_in_copy("--collect-only", "tests", "--ignore=tests/test_user_stacks.py")
        assert run.returncode == 0, run.stdout[-3000:]
        return {line for line in run.stdout.splitlines() if "::" in line}

    before = collected()
    (copy / "Pulumi.stranger.yaml").write_text(STRANGER)
    assert collected() == before  # no test over the examples takes the stranger for one
    run = pytest_in_copy("-rA", *EXAMPLE_DEPENDENT)
    assert run.returncode == 0, run.stdout[-5000:]
    assert "PASSED tests/test_user_stacks.py::test_your_stack_validates_and_renders_offline[stranger]" in run.stdout
