"""The stacks this repository declares (stacks.yaml): its examples, the stacks whose render is kept
as a golden snapshot, and the stacks CI deploys, in order, each in its GitHub environment. Every
other Pulumi.<stack>.yaml beside Pulumi.yaml is a user's own stack: the tests check it as CI
should (validate, the offline render, no traceback), not against what an example shows.

The tests read this module, and so do the workflows (`python -m stacks.declared deploy|preview`:
which stacks to deploy, which a pull request's change previews), with PyYAML alone: nothing here
imports the program.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DECLARED = "stacks.yaml"
# A stack name as the Pulumi CLI takes it (and a file name can hold it): letters, digits, - _ .
STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NOT_A_STACK_NAME = "is not a stack name (letters, digits, - _ .)"
# What a pull request may change without changing what any stack deploys: prose, tests, tools.
INERT = re.compile(r"^(docs/|tests/|components/tests/|components/examples/|scripts/|\.ci/)|\.md$")
STACK_FILE = re.compile(r"^Pulumi\.([^/]+)\.yaml$")


class DeclaredError(Exception):
    """stacks.yaml says something that cannot be: names the key and the fix."""


@dataclass(frozen=True)
class Deployment:
    stack: str
    environment: str


@dataclass(frozen=True)
class Declared:
    examples: tuple[str, ...]
    snapshots: tuple[str, ...]  # the examples', and those asked for under `snapshots`
    deploy: tuple[Deployment, ...]  # in the order CI deploys them


def stack_names(root: Path = ROOT) -> list[str]:
    """Every stack of the project at root: the names of its Pulumi.<stack>.yaml files."""
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))


def stack_file_path(name: str, root: Path = ROOT) -> Path:
    return root / f"Pulumi.{name}.yaml"


def read(root: Path = ROOT) -> Declared:
    """stacks.yaml at root, checked: every stack it names has its file, none is named twice."""
    path = root / DECLARED
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeclaredError(
            f"no {DECLARED} beside Pulumi.yaml; it declares the examples and the stacks CI deploys"
        ) from None
    except yaml.YAMLError as err:
        raise DeclaredError(f"{DECLARED} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise DeclaredError(f"{DECLARED} is a map with the keys examples, snapshots and deploy")
    unknown = sorted(set(map(str, data)) - {"examples", "snapshots", "deploy"})
    problems = [f"{DECLARED}: {key}: not a key of this file (examples, snapshots, deploy)" for key in unknown]
    examples = _names(data.get("examples"), "examples", problems)
    asked = _names(data.get("snapshots"), "snapshots", problems)
    deploy = _deployments(data.get("deploy"), problems)
    present = set(stack_names(root))
    named = [*(("examples", s) for s in examples), *(("snapshots", s) for s in asked)]
    named += [("deploy", d.stack) for d in deploy]
    for key, stack in named:
        if stack not in present:
            problems.append(f"{DECLARED}: {key}: {stack}: no Pulumi.{stack}.yaml here; add the file or remove the name")
    if problems:
        raise DeclaredError("\n".join(problems))
    return Declared(tuple(examples), tuple(dict.fromkeys([*examples, *asked])), tuple(deploy))


def user_stacks(root: Path = ROOT) -> list[str]:
    """The stacks at root that are not the repository's examples: a user's own."""
    examples = set(read(root).examples)
    return [s for s in stack_names(root) if s not in examples]


def previewed(changed: Iterable[str], declared: Declared) -> list[Deployment]:
    """The deployed stacks a change (its paths, relative to the repository) may change: a stack
    whose file it changes; every one when it changes anything else but prose, tests and tools
    (the program, the library, the pins, the workflows, stacks.yaml itself)."""
    paths = [p.strip() for p in changed if p.strip()]
    stacks = {m.group(1) for p in paths if (m := STACK_FILE.match(p))}
    if any(not STACK_FILE.match(p) and not INERT.search(p) for p in paths):
        return list(declared.deploy)
    return [d for d in declared.deploy if d.stack in stacks]


def _is_stack_name(value: object) -> bool:
    return isinstance(value, str) and STACK_NAME.match(value) is not None


def _names(value: Any, key: str, problems: list[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"{DECLARED}: {key}: a list of stack names, e.g. [dev, prod]")
        return []
    names: list[str] = []
    for item in value:
        if not _is_stack_name(item):
            problems.append(f"{DECLARED}: {key}: {item!r} {NOT_A_STACK_NAME}")
        elif item in names:
            problems.append(f"{DECLARED}: {key}: {item} is named twice; keep one")
        else:
            names.append(item)
    return names


def _deployments(value: Any, problems: list[str]) -> list[Deployment]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"{DECLARED}: deploy: a list of {{stack: <name>, environment: <GitHub environment>}}")
        return []
    out: list[Deployment] = []
    for i, item in enumerate(value):
        at = f"{DECLARED}: deploy[{i}]"
        if not isinstance(item, dict) or set(map(str, item)) != {"stack", "environment"}:
            problems.append(f"{at}: write {{stack: <name>, environment: <GitHub environment>}}")
            continue
        stack, environment = item["stack"], item["environment"]
        if not _is_stack_name(stack):
            problems.append(f"{at}.stack: {stack!r} {NOT_A_STACK_NAME}")
        elif not isinstance(environment, str) or not environment.strip():
            problems.append(f"{at}.environment: the GitHub environment whose rules gate the deploy, e.g. production")
        elif any(d.stack == stack for d in out):
            problems.append(f"{at}.stack: {stack} is deployed twice; keep one")
        else:
            out.append(Deployment(stack, environment))
    return out


def main(argv: list[str] | None = None) -> int:
    """`deploy`: the stacks to deploy, in order; `preview`: those the paths on standard input (a
    pull request's changed files) may change. Each prints a JSON list of {stack, environment}
    for a workflow's matrix."""
    args = sys.argv[1:] if argv is None else argv
    if args not in (["deploy"], ["preview"]):
        print(
            "usage: python -m stacks.declared deploy|preview  (preview reads changed paths on stdin)", file=sys.stderr
        )
        return 2
    try:
        declared = read()
    except DeclaredError as err:
        print(err, file=sys.stderr)
        return 1
    chosen = declared.deploy if args == ["deploy"] else previewed(sys.stdin.read().splitlines(), declared)
    print(json.dumps([{"stack": d.stack, "environment": d.environment} for d in chosen]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
