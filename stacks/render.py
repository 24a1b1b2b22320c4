"""Render a stack's whole desired state as files that diff well in a pull request.

The real program runs under the recording mock monitor (stacks/evaluate.py): no cloud account,
no cluster. Out comes one file per object, sorted and stable, with every secret redacted:

    <out>/kubernetes/<namespace>/<kind>-<name>.yaml   manifests as the API server receives them
    <out>/helm/<namespace>-<release>.yaml             chart, repository, version, namespace, values
    <out>/manifests/<name>.yaml                       a release's manifest the provider applies (by URL)
    <out>/azure/<type>-<name>.yaml                    Azure resource type and properties
    <out>/waits/<name>.yaml                           what a wait (e.g. for GPU nodes) waits for
    <out>/order.yaml                                  creation waves and what waits on what, by file
    <out>/outputs.yaml                                stack outputs
    <out>/cost.yaml                                   each pool's and model's VMs per hour and month, with
                                                      the prices' source and date (stacks/cost.py)

Everything but cost.yaml depends on the stack file alone; cost.yaml's prices come from the price
cache a `--online` run filled (~/.cache/kaito-aks/prices), else the committed catalog.

`--out` folders carry a marker file; a folder without one is never replaced or deleted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from kaito_aks.problems import Problem
from stacks.errors import StackConfigError
from stacks.evaluate import Evaluation, Registration, Secret, evaluate, reveal
from stacks.stackfile import ROOT, StackFile, read_stack_file

REDACTED = "[secret]"
# Written into every render folder: only a folder holding it may be replaced by a new render.
MARKER = ".kaito-aks-render"
MANIFEST_KEY_ORDER = ("apiVersion", "kind", "metadata")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# A manifest the kubernetes provider fetches and applies itself (a component made by the
# provider): rendered as what it is asked to apply, and ordered like a resource.
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"


def rendered_resource(r: Registration) -> bool:
    return r.custom or r.type == CONFIG_FILE


DYNAMIC_PREFIX = "pulumi-python:dynamic/"


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


class RenderTargetError(Exception):
    """The --out folder holds files this command did not write."""


def dependency_order(ev: Evaluation, names: dict[str, str]) -> dict[str, Any]:
    """What the engine creates in which wave, and what each resource waits on (explicit
    dependencies, the resources its inputs come from, and its provider). Resources are named
    by the file they are rendered to (`names`: urn -> path); components by type::name."""
    by_urn = {r.urn: r for r in ev.resources}

    def _label(r: Registration) -> str:
        return names.get(r.urn, f"{r.type}::{r.name}")

    custom = [r for r in ev.resources if rendered_resource(r)]

    def waits_on(r: Registration) -> set[str]:
        deps = {d for d in r.dependencies if d in by_urn and rendered_resource(by_urn[d])}
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


def rendered_file(r: Registration) -> tuple[str, Any] | None:
    """(relative path, body) of one resource's file, or None for what is not rendered."""
    if r.type == CONFIG_FILE:
        return f"manifests/{_slug(r.name)}.yaml", {"type": r.type, "properties": redact(r.inputs)}
    if not r.custom:
        return None
    if r.type == HELM_RELEASE:
        body = helm_release(r)
        return f"helm/{body['namespace']}-{body['release']}.yaml", body
    if r.type.startswith("kubernetes:"):
        body = manifest(r)
        meta = body.get("metadata", {})
        ns = meta.get("namespace", "_cluster")
        return f"kubernetes/{ns}/{_slug(body['kind'])}-{_slug(meta['name'])}.yaml", body
    if r.type.startswith("azure-native:"):
        return f"azure/{_slug(r.type.split(':', 1)[1])}-{_slug(r.name)}.yaml", {
            "type": r.type,
            "properties": redact(r.inputs),
        }
    if r.type.startswith(DYNAMIC_PREFIX):
        # The serialized provider is code, not configuration; outputs are known only after `up`.
        inputs = {k: v for k, v in r.inputs.items() if k != "__provider" and v is not None}
        return f"waits/{_slug(r.name)}.yaml", {"type": r.type, "properties": redact(inputs)}
    if r.type.startswith("pulumi:providers:"):
        return f"providers/{_slug(r.type.rsplit(':', 1)[1])}-{_slug(r.name)}.yaml", {
            "type": r.type,
            "properties": redact(r.inputs),
        }
    return None


def render_files(ev: Evaluation) -> dict[str, str]:
    """Relative path -> file text, for every object of the stack."""
    files: dict[str, Any] = {}
    names: dict[str, str] = {}
    for r in ev.resources:
        rendered = rendered_file(r)
        if rendered is not None:
            path, body = rendered
            files[path] = body
            names[r.urn] = path
    files["order.yaml"] = dependency_order(ev, names)
    files["outputs.yaml"] = redact(ev.outputs)
    return {path: _dump(body) for path, body in sorted(files.items())}


def _dump(body: Any) -> str:
    return yaml.safe_dump(body, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)


def render_stack(
    stack: str, out: Path, root: Path = ROOT, f: StackFile | None = None
) -> tuple[list[Path], tuple[Problem, ...]]:
    """Evaluate `Pulumi.<stack>.yaml` (or `f`, read from it) and write its render to `out`
    (replacing what was there): the files written, and the config's warnings for the caller to
    say with the file's lines. The program runs in the stack's folder, as under `pulumi up`."""
    from stacks.cost import stack_cost
    from stacks.load import load_stack, parse_stack_file
    from stacks.program import build_stack

    f = f if f is not None else read_stack_file(stack, root)
    cfg = parse_stack_file(f)  # what `validate` checks, with the file's lines

    def program() -> None:
        build_stack(*load_stack(f))

    # The components log their warnings through the mock engine; the caller says them with the
    # file's lines instead (cfg.warnings), so they are not printed twice, once without a place.
    root_logger = logging.getLogger()
    level = root_logger.level
    root_logger.setLevel(logging.ERROR)
    try:
        with contextlib.chdir(f.path.parent if f.path is not None else root):
            ev = evaluate(f.config, stack=stack, secrets=f.secrets, program=program)
    except StackConfigError as err:
        raise err.with_source(f) from None
    finally:
        root_logger.setLevel(level)
    files = render_files(ev)
    files["cost.yaml"] = _dump(stack_cost(cfg).as_dict())
    return write_files(files, out), cfg.warnings


def write_files(files: dict[str, str], out: Path) -> list[Path]:
    """Write a render to `out`: into a fresh folder beside it first, then swapped in. An
    existing `out` is replaced only when it carries the render marker (an earlier render, or
    empty); anything else is left untouched and is an error."""
    if out.exists() and not (out / MARKER).exists() and (not out.is_dir() or any(out.iterdir())):
        raise RenderTargetError(
            f"{out} exists and was not written by render (no {MARKER} in it); "
            "choose another --out or move that folder away"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for rel, text in files.items():
            path = fresh / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (fresh / MARKER).write_text("written by `python -m stacks render`; replaced by the next render\n")
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / out.name)
            os.replace(fresh, out)
            shutil.rmtree(old)
        else:
            os.replace(fresh, out)
    finally:
        if fresh.exists():
            shutil.rmtree(fresh)
    return [out / rel for rel in files]
