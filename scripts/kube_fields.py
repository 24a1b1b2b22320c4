#!/usr/bin/env python3
"""Derive, from Kubernetes' Go API types at a release tag, the JSON fields of the corev1 values
kaito-aks passes into KAITO's schemaless fields: a tuning `volumeSource` (corev1.VolumeSource) and
a custom image's `resources` (corev1.ResourceRequirements). KAITO's webhook decodes those strictly
(knative, DisallowUnknownFields), so an unknown key denies the Workspace.

Writes components/kaito_aks/catalog/kube_fields.yaml: every struct reachable from the roots, as
field name -> type, where a type is a struct's name, `string`, `bool`, `int32`, `int64`,
`quantity`, `intOrString`, `time`, `any`, `[]<type>` or `map[string]<type>`. Field names and types
only (facts), no upstream code or prose.

    python scripts/kube_fields.py --api <k8s.io/api repo> --apimachinery <k8s.io/apimachinery repo> --tag v0.35.0
    # --check: compare with the committed file, write nothing (exit 1 on drift)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "components" / "kaito_aks" / "catalog" / "kube_fields.yaml"
ROOTS = ("VolumeSource", "ResourceRequirements")
SOURCES = {  # package prefix -> (repository, path)
    "": ("api", "core/v1/types.go"),
    "metav1.": ("apimachinery", "pkg/apis/meta/v1/types.go"),
}
# Types that decode from a JSON scalar with their own rules.
SPECIAL = {
    "resource.Quantity": "quantity",
    "intstr.IntOrString": "intOrString",
    "metav1.Time": "time",
    "metav1.MicroTime": "time",
    "metav1.FieldsV1": "any",
    "runtime.RawExtension": "any",
    "types.UID": "string",
    "metav1.Duration": "string",
}
BASIC = {"string": "string", "bool": "bool", "int": "int64", "int32": "int32", "int64": "int64", "byte": "int32"}
STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.S | re.M)
NAMED = re.compile(r"^type (\w+) ((?:map\[\w+\])?[\w.\[\]*]+)\s*$", re.M)
FIELD = re.compile(r"^\t(?:(\w+)\s+)?([\w.\[\]*]+(?:\[[\w.]+\][\w.*\[\]]+)?)\s+`[^`]*json:\"([^\"]*)\"", re.M)


def read(repo: Path, tag: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{tag}:{path}"], check=True, capture_output=True, text=True
    ).stdout


class Types:
    def __init__(self, sources: dict[str, str]):
        self.structs: dict[str, str] = {}
        self.named: dict[str, str] = {}
        for prefix, text in sources.items():
            text = re.sub(r"^\s*//.*\n", "", text, flags=re.M)
            for name, body in STRUCT.findall(text):
                self.structs[prefix + name] = body
            for name, underlying in NAMED.findall(text):
                self.named[prefix + name] = (
                    underlying if "." in underlying or underlying in BASIC else prefix + underlying
                )
        self.prefix_of = {name: name[: name.index(".") + 1] if "." in name else "" for name in self.structs}
        self.out: dict[str, dict[str, str]] = {}

    def type_of(self, go: str, prefix: str) -> str:
        go = go.lstrip("*")
        if go.startswith("[]"):
            return "[]" + self.type_of(go[2:], prefix)
        if go.startswith("map["):
            value = go[go.index("]") + 1 :]
            return "map[string]" + self.type_of(value, prefix)
        if go in BASIC:
            return BASIC[go]
        name = go if "." in go else prefix + go
        if name in SPECIAL:
            return SPECIAL[name]
        if name in self.named:
            underlying = self.named[name]
            return self.type_of(underlying, prefix if "." not in underlying else "")
        if name in self.structs:
            self.struct(name)
            return name
        raise SystemExit(f"unknown Go type {go} (as {name})")

    def struct(self, name: str) -> dict[str, str]:
        if name in self.out:
            return self.out[name]
        fields: dict[str, str] = {}
        self.out[name] = fields
        prefix = self.prefix_of[name]
        for field, go, tag in FIELD.findall(self.structs[name]):
            json_name = tag.split(",")[0]
            if json_name == "-":
                continue
            if not field and not json_name:  # embedded and inline: its fields are this struct's
                fields.update(self.struct(self.type_of(go, prefix)))
                continue
            fields[json_name or field] = self.type_of(go, prefix)
        return fields


def derive(api: Path, apimachinery: Path, tag: str) -> dict[str, Any]:
    repos = {"api": api, "apimachinery": apimachinery}
    sources = {prefix: read(repos[repo], tag, path) for prefix, (repo, path) in SOURCES.items()}
    types = Types(sources)
    for root in ROOTS:
        types.struct(root)
    commits = {
        repo: subprocess.run(
            ["git", "-C", str(p), "rev-list", "-n1", tag], check=True, capture_output=True, text=True
        ).stdout.strip()
        for repo, p in repos.items()
    }
    return {
        "source": {"tag": tag, "k8s.io/api": commits["api"], "k8s.io/apimachinery": commits["apimachinery"]},
        "roots": list(ROOTS),
        "types": {name: dict(fields) for name, fields in sorted(types.out.items())},
    }


HEADER = """\
# corev1 JSON fields KAITO decodes strictly (a tuning volumeSource, a custom image's resources).
# Generated by scripts/kube_fields.py from Kubernetes' API types at the tag below; do not edit.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api", type=Path, required=True)
    parser.add_argument("--apimachinery", type=Path, required=True)
    parser.add_argument("--tag", default="v0.35.0")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = HEADER + yaml.safe_dump(derive(args.api, args.apimachinery, args.tag), sort_keys=False, width=120)
    if args.check:
        same = OUT.read_text() == text
        print("up to date" if same else f"{OUT} differs from {args.tag}")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
