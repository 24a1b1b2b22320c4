"""A pinned Helm release from a chart repository (or an OCI registry): what the operators are
installed as."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.catalog import ChartSource, HelmChartPin
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import Key, Problem

OCI = "oci://"


@dataclass(frozen=True)
class ChartRelease:
    # chart repository URL, or an OCI registry path (oci://...) that holds the chart; None:
    # `chart` is a full OCI reference (oci://.../<chart>)
    repository: str | None
    chart: str
    version: str  # pinned chart version
    release_name: str  # fixed, so the chart's object names are predictable
    namespace: str  # created if missing
    values: dict[str, Any]

    @classmethod
    def of(cls, source: ChartSource, version: str, values: dict[str, Any]) -> ChartRelease:
        return cls(source.repository, source.chart, version, source.release_name, source.namespace, values)

    @classmethod
    def pinned(cls, pin: HelmChartPin, namespace: str, values: dict[str, Any]) -> ChartRelease:
        """A chart of catalog/serving_charts.yaml, in its own namespace if it names one, else `namespace`."""
        return cls(pin.repository, pin.chart, pin.version, pin.release_name, pin.namespace or namespace, values)


def pinned_release(
    name: str, release: ChartRelease, timeout_seconds: int, opts: pulumi.ResourceOptions, *, skip_crds: bool = False
) -> k8s.helm.v3.Release:
    """A Helm release that waits for its workloads to be ready and rolls back if they are not
    (atomic), so whatever depends on it starts against a working operator. `skip_crds`: the
    chart's crds/ folder is not installed (its CRDs come from elsewhere)."""
    # Helm pulls a chart from an OCI registry by its full reference, with no repository.
    oci = release.repository is not None and release.repository.startswith(OCI)
    return k8s.helm.v3.Release(
        name,
        k8s.helm.v3.ReleaseArgs(
            name=release.release_name,
            chart=f"{release.repository}/{release.chart}" if oci else release.chart,
            version=release.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=release.repository)
            if release.repository and not oci
            else None,
            namespace=release.namespace,
            create_namespace=True,
            values=release.values,
            atomic=True,
            cleanup_on_fail=True,
            timeout=timeout_seconds,
            skip_crds=True if skip_crds else None,
        ),
        opts=opts,
    )


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's rule: maps merge key by key, anything else (lists too) is replaced. Maps and lists
    are copied; other values (an Output among them) are shared, never deep-copied."""
    out = _copy(base)
    for key, value in override.items():
        if is_dict(value) and is_dict(out.get(key)):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = _copy(value)
    return out


def _copy(value: Any) -> Any:
    if is_dict(value):
        return {k: _copy(v) for k, v in value.items()}
    if is_list(value):
        return [_copy(v) for v in value]
    return value


def set_path(values: dict[str, Any], dotted: str, value: Any) -> None:
    """Set `a.b.c` in nested values, making the maps on the way."""
    *parents, leaf = dotted.split(".")
    for p in parents:
        values = values.setdefault(p, {})
    values[leaf] = value


def value_at(values: Mapping[str, Any], path: tuple[str, ...]) -> object:
    """The value at a path of nested maps (None: not there)."""
    node: object = values
    for part in path:
        node = node.get(part) if is_dict(node) else None
    return node


def unread_values(values: Mapping[str, Any], value_keys: Collection[str], chart: str) -> list[Problem]:
    """The values `chart` does not read (Helm passes them on, to no effect)."""
    return [
        Problem(("values", Key(key)), f"not a value of the {chart} chart", "chart-value")
        for key in values
        if key not in value_keys
    ]


def managed_values(values: Mapping[str, Any], managed: Mapping[tuple[str, ...], str]) -> list[Problem]:
    """The values a component sets itself (`managed`: each one's path and who sets it), given."""
    return [
        Problem(("values", *map(Key, path)), f"{why}; remove it", "managed-value")
        for path, why in managed.items()
        if value_at(values, path) is not None
    ]
