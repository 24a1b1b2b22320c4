"""`pip install` of components/ gives a self-contained, typed package: the example programs
(components/README.md and docs/library.md show them), written against it alone, type-check with
pyright and deploy under Pulumi's mocks with none of this repository's files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

COMPONENTS = Path(__file__).resolve().parent.parent
EXAMPLE = COMPONENTS / "examples" / "python"
VENV = COMPONENTS.parent / ".venv"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package pip-installed into a folder of its own, from a copy of components/."""
    work = tmp_path_factory.mktemp("package")
    source = work / "src"
    shutil.copytree(COMPONENTS, source, ignore=shutil.ignore_patterns("__pycache__", "tests", "examples", "*.egg-info"))
    target = work / "site"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--target",
        str(target),
        str(source),
    ]
    subprocess.run(pip, check=True, capture_output=True, cwd=work)
    for shipped in ("py.typed", "catalog/presets.yaml", "catalog/kaito_charts.yaml"):
        assert (target / "kaito_aks" / shipped).is_file(), shipped
    return target


@pytest.fixture
def user_program(tmp_path: Path) -> Path:
    program = tmp_path / "program"
    shutil.copytree(EXAMPLE, program)
    return program


def test_the_example_program_runs_from_the_installed_package_alone(installed: Path, user_program: Path):
    run = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_program.py",
            "test_more_examples.py",
        ],
        cwd=user_program,
        env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    where = subprocess.run(
        [sys.executable, "-P", "-c", "import kaito_aks; print(kaito_aks.__file__)"],
        env={"PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(installed)), where.stdout


def test_the_example_program_type_checks_against_the_installed_package(installed: Path, user_program: Path):
    """py.typed ships, so pyright reads the package's hints: a misspelt mode is an error."""
    config = {
        "extraPaths": [str(installed)],
        "venvPath": str(VENV.parent),
        "venv": VENV.name,
        "typeCheckingMode": "standard",
    }
    (user_program / "pyrightconfig.json").write_text(json.dumps(config))
    pyright = [
        str(VENV / "bin" / "pyright"),
        "--outputjson",
        "__main__.py",
        "auto_provisioning.py",
        "rag_engine.py",
        "add_on.py",
        "karpenter.py",
    ]
    clean = subprocess.run(pyright, cwd=user_program, capture_output=True, text=True)
    assert json.loads(clean.stdout)["summary"]["errorCount"] == 0, clean.stdout[-3000:]
    program = user_program / "__main__.py"
    program.write_text(program.read_text().replace('gpu_discovery="external"', 'gpu_discovery="externel"'))
    typo = subprocess.run(pyright, cwd=user_program, capture_output=True, text=True)
    messages = [d["message"] for d in json.loads(typo.stdout)["generalDiagnostics"]]
    assert any("'externel'" in m and "gpu_discovery" in m for m in messages), messages


def test_the_changelog_lists_this_version_and_every_alias_the_components_keep():
    import re

    import kaito_aks
    from kaito_aks.provider import components

    text = (COMPONENTS / "CHANGELOG.md").read_text()
    text = re.sub(r"^## Unreleased\n.*?(?=^## )", "", text, flags=re.M | re.S)  # changes not released yet
    assert re.search(r"^## (\S+)", text, re.M)[1] == kaito_aks.__version__  # type: ignore[index]
    # the newest release that moved anything lists every alias kept (releases since say "none new")
    release = next(r for r in text.split("\n## ")[1:] if "` <- `" in r)
    listed = {
        (now, old)
        for now, olds in re.findall(r"^- `([^`]+)` <- (.+)$", release, re.M)
        for old in re.findall(r"`([^`]+)`", olds)
    }
    kept = set()
    for token, (component, _) in components().items():
        module = __import__(component.__module__, fromlist=["FORMER_TYPES"])
        kept |= {(token, old) for old in module.FORMER_TYPES}
    assert listed == kept


def test_the_first_programs_test_stands_alone_beside_it(installed: Path, tmp_path: Path):
    """docs/library.md's test template, in a folder with the first program and nothing else."""
    alone = tmp_path / "mine"
    alone.mkdir()
    for name in ("__main__.py", "test_program.py"):
        shutil.copy(EXAMPLE / name, alone / name)
    run = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=alone,
        env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout


def test_the_first_program_is_a_pulumi_project_of_the_repositorys_virtualenv():
    """`pulumi preview` in its folder runs __main__.py with the .venv README step 3 makes (there,
    `python __main__.py` alone fails: a Pulumi program runs under the engine)."""
    import yaml

    project = yaml.safe_load((EXAMPLE / "Pulumi.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    assert "main" not in project  # __main__.py
    assert (EXAMPLE / project["runtime"]["options"]["virtualenv"]).resolve() == VENV.resolve()
