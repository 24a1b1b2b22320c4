"""A pinned Helm release from a chart repository: what both operators are installed as."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class ChartRelease:
    repository: str  # chart repository URL
    chart: str
    version: str  # pinned chart version
    release_name: str  # fixed, so the chart's object names are predictable
    namespace: str  # created if missing
    values: dict[str, Any]


def pinned_release(
    name: str, release: ChartRelease, timeout_seconds: int, opts: pulumi.ResourceOptions
) -> k8s.helm.v3.Release:
    """A Helm release that waits for its workloads to be ready and rolls back if they are not
    (atomic), so whatever depends on it starts against a working operator."""
    return k8s.helm.v3.Release(
        name,
        k8s.helm.v3.ReleaseArgs(
            name=release.release_name,
            chart=release.chart,
            version=release.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=release.repository),
            namespace=release.namespace,
            create_namespace=True,
            values=release.values,
            atomic=True,
            cleanup_on_fail=True,
            timeout=timeout_seconds,
        ),
        opts=opts,
    )
