#!/usr/bin/env python3
"""Copy the renders of every stack, and its stack file, from a released commit into
tests/data/released/: the baseline tests/test_no_replacement.py holds today's program to (no
resource of a stack that release deployed is replaced or deleted, whatever its type).

    python scripts/released_renders.py <commit>          # the release before the change
    python scripts/released_renders.py <commit> --check  # compare with what is committed

The renders are the commit's golden snapshots (tests/snapshots/<stack>/, written by `make
snapshots`): every Azure resource, Kubernetes object, Helm release, provider and wait the program
registered, with its inputs, its parent component and its options (order.yaml)."""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "released"
SNAPSHOTS = "tests/snapshots"


def _git(*args: str) -> bytes:
    result = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {result.stderr.decode().strip()}")
    return result.stdout


def files_at(commit: str) -> dict[str, tuple[str, bytes]]:
    """stack/relative path -> (path at the commit, content): each stack's snapshot files and its
    stack file."""
    listed = _git("ls-tree", "-r", "--name-only", commit, "--", SNAPSHOTS).decode().splitlines()
    out: dict[str, tuple[str, bytes]] = {}
    stacks: set[str] = set()
    for path in listed:
        rel = path.removeprefix(f"{SNAPSHOTS}/")
        stacks.add(rel.split("/")[0])
        out[rel] = (path, _git("show", f"{commit}:{path}"))
    for stack in sorted(stacks):
        name = f"Pulumi.{stack}.yaml"
        out[f"{stack}/{name}"] = (name, _git("show", f"{commit}:{name}"))
    return out


def provenance(commit: str, files: dict[str, tuple[str, bytes]]) -> dict[str, object]:
    stacks: dict[str, dict[str, dict[str, str]]] = {}
    for rel, (source, data) in sorted(files.items()):
        stack, _, path = rel.partition("/")
        stacks.setdefault(stack, {})[path] = {"from": source, "sha256": hashlib.sha256(data).hexdigest()}
    return {
        "what": "Every stack's renders (every registered resource's inputs, its parent component and its options) and "
        "its stack file, as the release of this commit made them: the baseline tests/test_no_replacement.py holds "
        "today's program and stack files to.",
        "commit": commit,
        "copiedBy": "scripts/released_renders.py (git show <commit>:<from>)",
        "stacks": stacks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the released commit (a full or short sha, or a ref)")
    parser.add_argument("--check", action="store_true", help="compare with the committed baseline; write nothing")
    args = parser.parse_args(argv)
    commit = _git("rev-parse", f"{args.commit}^{{commit}}").decode().strip()
    files = files_at(commit)
    prov = yaml.safe_dump(provenance(commit, files), sort_keys=False, width=120)
    if args.check:
        drift = [
            rel for rel, (_, data) in files.items() if not (OUT / rel).is_file() or (OUT / rel).read_bytes() != data
        ]
        if (OUT / "provenance.yaml").read_text() != prov:
            drift.append("provenance.yaml")
        for rel in drift:
            print(f"{rel}: differs from {commit}", file=sys.stderr)
        return 1 if drift else 0
    for rel, (_, data) in files.items():
        target = OUT / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (OUT / "provenance.yaml").write_text(prov)
    print(f"{OUT.relative_to(ROOT)}: {len(files)} files of {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
