"""Render a stack's whole desired state as files that diff well in a pull request.

The real program runs under the recording mock monitor (stacks/evaluate.py): no cloud account,
no cluster. Out comes one file per object, sorted and stable, with every secret redacted:

    <out>/kubernetes/<namespace>/<kind>-<name>.yaml   manifests as the API server receives them
    <out>/helm/<namespace>-<release>.yaml             chart, repository, version, namespace, values
    <out>/azure/<type>-<name>.yaml                    Azure resource type and properties
    <out>/order.yaml                                  creation waves and what waits on what
    <out>/outputs.yaml                                stack outputs
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from stacks.evaluate import Evaluation, Registration, Secret, evaluate, reveal
from stacks.stackfile import ROOT, read_stack_file

REDACTED = "[secret]"
MANIFEST_KEY_ORDER = ("apiVersion", "kind", "metadata")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"


def redact(value: Any) -> Any:
    """Replace every value the program marked secret, with sorted keys throughout."""
    if isinstance(value, Secret):
        return REDACTED
    if isinstance(value, dict):
        return {k: redact(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def manifest(r: Registration) -> dict[str, Any]:
    body = redact(r.inputs)
    if body.get("kind") == "Secret":  # never print Secret contents, marked or not; keep the keys
        for field in ("data", "stringData"):
            if field in body:
                keys = reveal(r.inputs[field])
                body[field] = dict.fromkeys(sorted(keys), REDACTED) if isinstance(keys, dict) else REDACTED
    ordered = {k: body[k] for k in MANIFEST_KEY_ORDER if k in body}
    ordered.update({k: v for k, v in body.items() if k not in ordered})
    return ordered


def helm_release(r: Registration) -> dict[str, Any]:
    body = redact(r.inputs)
    return {
        "release": body.get("name"),
        "chart": body.get("chart"),
        "repository": (body.get("repositoryOpts") or {}).get("repo"),
        "version": body.get("version"),
        "namespace": body.get("namespace"),
        "options": {
            k: v
            for k, v in body.items()
            if k not in ("name", "chart", "repositoryOpts", "version", "namespace", "values")
        },
        "values": body.get("values", {}),
    }


def _label(r: Registration) -> str:
    return f"{r.type}::{r.name}"


def dependency_order(ev: Evaluation) -> dict[str, Any]:
    """What the engine creates in which wave, and what each resource waits on (explicit
    dependencies, the resources its inputs come from, and its provider)."""
    by_urn = {r.urn: r for r in ev.resources}
    custom = [r for r in ev.resources if r.custom]

    def waits_on(r: Registration) -> set[str]:
        deps = {d for d in r.dependencies if d in by_urn and by_urn[d].custom}
        if r.provider_urn in by_urn:
            deps.add(r.provider_urn)
        return deps

    wave: dict[str, int] = {}

    def level(urn: str, seen: tuple[str, ...] = ()) -> int:
        if urn not in wave:
            if urn in seen:
                raise ValueError(f"dependency cycle through {urn}")
            wave[urn] = 1 + max((level(d, (*seen, urn)) for d in waits_on(by_urn[urn])), default=-1)
        return wave[urn]

    for r in custom:
        level(r.urn)
    waves: list[list[str]] = [[] for _ in range(max(wave.values(), default=-1) + 1)]
    for r in custom:
        waves[wave[r.urn]].append(_label(r))
    return {
        "waves": [sorted(w) for w in waves],
        "resources": {
            _label(r): {
                "waitsOn": sorted(_label(by_urn[d]) for d in waits_on(r)),
                "component": _label(by_urn[r.parent]) if r.parent in by_urn else None,
                "options": {
                    k: v
                    for k, v in sorted(r.options.items())
                    if k in ("protect", "replaceOnChanges", "deleteBeforeReplace", "ignoreChanges", "retainOnDelete")
                    and v
                },
            }
            for r in sorted(custom, key=_label)
        },
    }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def render_files(ev: Evaluation) -> dict[str, str]:
    """Relative path -> file text, for every object of the stack."""
    files: dict[str, Any] = {}
    for r in ev.resources:
        if not r.custom:
            continue
        if r.type == HELM_RELEASE:
            body = helm_release(r)
            files[f"helm/{body['namespace']}-{body['release']}.yaml"] = body
        elif r.type.startswith("kubernetes:"):
            body = manifest(r)
            meta = body.get("metadata", {})
            ns = meta.get("namespace", "_cluster")
            files[f"kubernetes/{ns}/{_slug(body['kind'])}-{_slug(meta['name'])}.yaml"] = body
        elif r.type.startswith("azure-native:"):
            files[f"azure/{_slug(r.type.split(':', 1)[1])}-{_slug(r.name)}.yaml"] = {
                "type": r.type,
                "properties": redact(r.inputs),
            }
        elif r.type.startswith("pulumi:providers:"):
            files[f"providers/{_slug(r.type.rsplit(':', 1)[1])}-{_slug(r.name)}.yaml"] = {
                "type": r.type,
                "properties": redact(r.inputs),
            }
    files["order.yaml"] = dependency_order(ev)
    files["outputs.yaml"] = redact(ev.outputs)
    return {path: _dump(body) for path, body in sorted(files.items())}


def _dump(body: Any) -> str:
    return yaml.safe_dump(body, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)


def render_stack(stack: str, out: Path, root: Path = ROOT) -> list[Path]:
    """Evaluate `Pulumi.<stack>.yaml` and write its render to `out` (replacing what was there)."""
    f = read_stack_file(stack, root)
    ev = evaluate(f.config, stack=stack, secrets=f.secrets)
    return write_files(render_files(ev), out)


def write_files(files: dict[str, str], out: Path) -> list[Path]:
    if out.exists():
        shutil.rmtree(out)
    written = []
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
