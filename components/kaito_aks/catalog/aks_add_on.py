"""What AKS's AI toolchain operator add-on runs (catalog/aks_add_on.yaml): a KAITO release per
Kubernetes minor, as Microsoft's AKS component table states it, and whether this library knows
the rules of the release a cluster gets."""

from __future__ import annotations

import re
from functools import cache

from kaito_aks.camel import CamelModel
from kaito_aks.catalog import kaito_charts, kubernetes_minor, load_catalog


class AksAddOn(CamelModel):
    """What AKS's AI toolchain operator add-on runs: a KAITO release per Kubernetes minor."""

    by_kubernetes_minor: dict[str, str]
    newest: str
    source: str

    @property
    def kaito_version(self) -> str:
        """The newest statement: the release of a cluster whose minor is not stated (or newer)."""
        return self.by_kubernetes_minor[self.newest]

    def kaito_on(self, kubernetes_version: str | None) -> str | None:
        """The KAITO release the add-on runs on a cluster of `kubernetes_version` (MAJOR.MINOR or
        MAJOR.MINOR.PATCH; None: AKS's default): its minor's; the newest statement for none or a
        newer minor; None for an older minor the table does not list."""
        if kubernetes_version is None or not re.fullmatch(r"\d+\.\d+(\.\d+)?", kubernetes_version):
            return self.kaito_version  # none, or not a version (the cluster's own rule says so)
        minor = ".".join(kubernetes_version.split(".")[:2])
        if minor in self.by_kubernetes_minor:
            return self.by_kubernetes_minor[minor]
        return self.kaito_version if kubernetes_minor(minor) > kubernetes_minor(self.newest) else None

    def judged_by(self, kubernetes_version: str | None) -> str:
        """The release whose rules judge the add-on's objects on a cluster of `kubernetes_version`:
        the one it runs there, or (one this library does not know the rules of: refused, see
        `unknown_on`) the newest statement's."""
        release = self.kaito_on(kubernetes_version)
        return release if release is not None and release in kaito_charts() else self.kaito_version

    def unknown_on(self, kubernetes_version: str | None) -> str | None:
        """Why the add-on's KAITO on a cluster of `kubernetes_version` is no release this library
        knows the rules of, with the minors whose release it knows; None: it knows it."""
        release = self.kaito_on(kubernetes_version)
        charts = kaito_charts()
        if release in charts:
            return None
        minor = ".".join((kubernetes_version or "").split(".")[:2])
        usable = sorted((m for m, v in self.by_kubernetes_minor.items() if v in charts), key=kubernetes_minor)
        listed = ", ".join(f"{m}: {v}" for m, v in self.by_kubernetes_minor.items())
        if release is None:
            why = f"Microsoft's AKS component table names no AI toolchain operator release for Kubernetes {minor} ({listed})"
        else:
            why = (
                f"with aiToolchainOperator AKS runs KAITO {release} on Kubernetes {minor} (Microsoft's AKS component "
                "table), a release this program does not know the rules of"
            )
        return f"{why}; use {usable[0]} or newer"


@cache
def aks_add_on() -> AksAddOn:
    """The KAITO release the AKS add-on runs, by Kubernetes minor, with where Microsoft says so."""
    return AksAddOn.model_validate(load_catalog("aks_add_on.yaml"))
