"""Hand CRDs that exist already to the Helm release that is to own them from now on.

Helm installs a chart's crds/ folder once, with no ownership metadata, and never upgrades it; a
chart that holds the same CRDs as templates (Karpenter's karpenter-crd) upgrades them, but its
first install refuses a CRD that exists without that metadata ("... exists and cannot be
imported into the current release: invalid ownership metadata", helm v3.18.6
pkg/action/install.go:349-358, validate.go:65-91; the Helm the Kubernetes provider 4.25.0 embeds).
Helm adopts an existing object whose label `app.kubernetes.io/managed-by` is `Helm` and whose
annotations `meta.helm.sh/release-name` and `meta.helm.sh/release-namespace` name the release
being installed (validate.go:94-120 checkOwnership; pulumi-kubernetes 4.25.0 does not offer
Helm's --take-ownership): this step writes exactly those three, by a JSON merge patch that changes nothing
else, on each CRD that exists and carries no owner yet, before the release is installed. The
CRDs stay as they are (same uid, their objects untouched); Helm then applies the chart's CRDs
over them as an upgrade of what it owns. A CRD another release owns is refused by name. A
cluster without them gets nothing: the release creates them."""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.parsed import is_dict
from kaito_aks.waits.answers import field_at, segment
from kaito_aks.waits.base import Check, ClusterWaitProvider, poll, wait_options
from kaito_aks.waits.kube_client import KubeApiError, KubeClient, Writer

CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MANAGED_BY = "app.kubernetes.io/managed-by"
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
TIMEOUT_SECONDS = 300
FORBIDDEN = "this step reads and labels CustomResourceDefinitions: grant `get` and `patch` on them"


def helm_ownership(release: str, namespace: str) -> dict[str, Any]:
    """The metadata by which Helm recognises an object as a release's own."""
    return {
        "metadata": {
            "labels": {MANAGED_BY: "Helm"},
            "annotations": {RELEASE_NAME: release, RELEASE_NAMESPACE: namespace},
        }
    }


def owner_of(crd: dict[str, Any]) -> tuple[str, str] | None:
    """The Helm release (name, namespace) a CRD's annotations name, or None."""
    annotations = field_at(crd, "metadata", "annotations")
    if not is_dict(annotations):
        return None
    name, namespace = annotations.get(RELEASE_NAME), annotations.get(RELEASE_NAMESPACE)
    return (str(name), str(namespace)) if isinstance(name, str) and name else None


def adopt(client: Writer, crds: list[str], release: str, namespace: str) -> Check:
    """One pass over `crds`: each that exists unowned is labelled for `release`. Done with the
    names it labelled; fatal when one belongs to another release."""
    adopted: list[str] = []
    for name in crds:
        path = f"{CRD_API}/{segment(name)}"
        try:
            crd = client.get(path)
        except KubeApiError as err:
            if err.status == 404:
                continue  # not installed yet: the release creates it
            raise
        owner = owner_of(crd)
        if owner == (release, namespace) and field_at(crd, "metadata", "labels", MANAGED_BY) == "Helm":
            continue
        if owner is not None and owner != (release, namespace):
            return Check(
                False,
                f"the CustomResourceDefinition {name} belongs to the Helm release {owner[0]} in {owner[1]}",
                f"one Helm release owns an object, so it cannot also be {release}'s: if that release is no longer "
                f"wanted, release the CRD from it (kubectl annotate crd {name} {RELEASE_NAME}- {RELEASE_NAMESPACE}-) "
                "before uninstalling it, then `pulumi up` again",
                fatal=True,
            )
        client.patch(path, helm_ownership(release, namespace))
        adopted.append(name)
    return Check(True, found={"adopted": adopted})


class CrdAdoptionProvider(ClusterWaitProvider):
    """Create and update adopt (again when the CRDs or the release change); delete does nothing
    (the CRDs stay the release's)."""

    compared = ("crds", "release", "releaseNamespace")

    def id_of(self, props: dict[str, Any]) -> str:
        key = f"{props.get('releaseNamespace')}/{props.get('release')}|{props.get('context')}"
        return f"crds-adopted-{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    def wait(self, client: KubeClient, props: dict[str, Any]) -> dict[str, Any]:
        crds, release, namespace = list(props["crds"]), str(props["release"]), str(props["releaseNamespace"])
        return poll(lambda: adopt(client, crds, release, namespace), self.limit_seconds(props), forbidden=FORBIDDEN)


_PROVIDER = CrdAdoptionProvider()


class CrdsAdopted(pulumi.dynamic.Resource, module="kaito-aks", name="CrdsAdopted"):
    """Before the Helm release `release` (in `namespace`) that holds `crds` as templates is
    installed: each of them that exists without an owner is labelled as that release's, so
    Helm adopts it instead of refusing it. Depend the release on it. `adopted`: the names it
    labelled (none on a cluster that had none)."""

    adopted: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        crds: list[str],
        release: str,
        namespace: str,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props: dict[str, Any] = {
            **access.props(),
            "crds": sorted(crds),
            "release": release,
            "releaseNamespace": namespace,
            "timeoutSeconds": TIMEOUT_SECONDS,
            "adopted": None,
        }
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))
