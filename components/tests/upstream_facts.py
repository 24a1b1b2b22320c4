"""The upstream facts the tests check against, as committed under tests/upstream/<project>-<version>/
(derived from upstream files at each release tag by scripts/upstream_data.py; see each folder's
provenance.yaml). Nothing here reads outside the repository."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

UPSTREAM = Path(__file__).resolve().parent / "upstream"


def folder(project: str, version: str) -> Path:
    """`tests/upstream/<project>-<version>`, e.g. ("kaito", "0.8.1"), ("gpu-operator", "v25.3.4")."""
    path = UPSTREAM / f"{project}-{version}"
    if not path.is_dir():
        pytest.fail(f"no upstream data for {project} {version}: run scripts/upstream_data.py {project} ...")
    return path


@cache
def load(project: str, version: str, name: str) -> Any:
    path = folder(project, version) / name
    if not path.exists():
        pytest.fail(f"{path} is missing: regenerate it with scripts/upstream_data.py")
    return yaml.safe_load(path.read_text())


def chart_values(project: str, version: str, sub: str = "") -> dict[str, Any]:
    """A chart's values.yaml defaults, rebuilt as the nested map Helm merges into. `sub`: a
    further chart of the release, in its own folder (KAITO's "ragengine")."""
    values: dict[str, Any] = {}
    for leaf in load(project, version, _in(sub, "chart-values.yaml"))["values"]:
        node = values
        for key in leaf["path"][:-1]:
            node = node.setdefault(key, {})
        if leaf["path"]:
            node[leaf["path"][-1]] = leaf["default"]
    return values


def chart(project: str, version: str, sub: str = "") -> dict[str, Any]:
    return load(project, version, _in(sub, "chart.yaml"))


def _in(sub: str, name: str) -> str:
    return f"{sub}/{name}" if sub else name


def crd(version: str, name: str) -> dict[str, Any]:
    """A KAITO CRD manifest (descriptions stripped), e.g. crd("0.8.1", "workspaces.kaito.sh"),
    crd("0.12.0", "ragengines.kaito.sh")."""
    return load("kaito", version, f"crds/{name}.yaml")


def kaito(version: str, name: str) -> dict[str, Any]:
    """presets, preset-definitions, skus or feature-gates of a KAITO release."""
    return load("kaito", version, f"{name}.yaml")


def serving_folders() -> dict[str, str]:
    """project -> the folder of the CRDs the serving objects, and the charts the values the
    serving releases set, are checked against, at the releases catalog/serving_charts.yaml pins
    (and the ones they run)."""
    from kaito_aks import catalog

    pins = catalog.serving_charts()
    return {
        "gateway-api": f"gateway-api-{pins.gateway_api_crds.version}",
        "istio-api": f"istio-api-v{pins.istio.version}",
        "keda": f"keda-v{pins.keda.version}",
        "authorino": f"authorino-{pins.authorino.runs}",
        "authorino-operator": f"authorino-operator-v{pins.authorino.version}",
        "prometheus-operator": f"prometheus-operator-{pins.prometheus_operator.version}",
        "body-based-routing": f"body-based-routing-{pins.body_based_routing.version}",
        "istiod": f"istiod-{pins.istio.version}",
    }


def serving_crd(project: str, name: str) -> dict[str, Any]:
    """A serving piece's CRD at the pinned release, e.g. serving_crd("gateway-api", "httproutes.gateway.networking.k8s.io")."""
    folder_name = serving_folders()[project]
    project_name, _, version = folder_name.rpartition("-")
    return load(project_name, version, f"crds/{name}.yaml")


def serving_crd_files() -> list[Path]:
    """Every serving CRD file, for an API server to install."""
    return sorted(f for name in serving_folders().values() for f in (UPSTREAM / name / "crds").glob("*.yaml"))


def serving_chart_values(project: str) -> dict[str, Any]:
    """The values.yaml defaults of a serving chart at its pin (istiod, body-based-routing)."""
    project_name, _, version = serving_folders()[project].rpartition("-")
    return chart_values(project_name, version)


def capacity_folders() -> set[str]:
    """The folders the capacity budget's pod requests (catalog/pod_requests.yaml `upstream`) are
    checked against: each chart at the version a pinned release bundles or runs."""
    from kaito_aks.catalog.capacity import pod_requests

    found: set[str] = set()
    for kinds in _pod_kinds(pod_requests().pods.model_dump()):
        upstream = kinds.get("upstream")
        if upstream:
            found.add(upstream["data"].split("/")[0])
    return found


def _pod_kinds(node: object) -> list[dict]:
    """Every pod kind in the catalog's `pods` (dicts with a `source`), however deep."""
    if isinstance(node, dict):
        if "source" in node:
            return [node]
        return [k for v in node.values() for k in _pod_kinds(v)]
    if isinstance(node, list):
        return [k for v in node for k in _pod_kinds(v)]
    return []
