"""Wait until the cluster serves a kind whose CRD someone else registers: the ServiceMonitors of
AKS's managed Prometheus (azmonitoring.coreos.com), whose add-on registers the CRD once its
ama-metrics pods run after the cluster has it turned on (learn.microsoft.com/azure/azure-monitor/
containers/prometheus-metrics-scrape-crd: "the enablement of Managed Prometheus automatically
deploys the custom resource definitions"), or a prometheus-operator's (monitoring.coreos.com),
which its chart installs. Created before its CRD, a ServiceMonitor fails `pulumi up` with "no
matches for kind" once the Kubernetes provider's few retries run out."""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.waits import args as wait_args
from kaito_aks.waits.answers import conditions_of, field_at, segment
from kaito_aks.waits.args import check_wait_args
from kaito_aks.waits.base import Check, ClusterWaitProvider, poll, wait_options
from kaito_aks.waits.kube_client import KubeApiError, Reader

CRD_API = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DEFAULT_TIMEOUT_MINUTES = 15
FORBIDDEN = "this wait reads a CustomResourceDefinition: grant `get` on customresourcedefinitions"


def judge(crd: dict[str, Any] | None, name: str, version: str, registered_by: str) -> Check:
    """Whether the CRD `name` is Established and serves `version`."""
    if crd is None:
        return Check(False, f"the CustomResourceDefinition {name} does not exist yet", registered_by)
    established = next((c for c in conditions_of(crd) if c.get("type") == "Established"), None)
    if established is None or established.get("status") != "True":
        return Check(False, f"the CustomResourceDefinition {name} is not Established", f"kubectl describe crd {name}")
    versions = field_at(crd, "spec", "versions")
    served = [str(v.get("name")) for v in (versions if is_list(versions) else []) if is_dict(v) and v.get("served")]
    if version not in served:
        return Check(
            False,
            f"the cluster serves {name} in {', '.join(served) or 'no version'}, not {version}",
            registered_by,
            fatal=True,
        )
    return Check(True)


def look(client: Reader, name: str, version: str, registered_by: str) -> Check:
    """One look. Credentials that may not read CRDs pass (recorded): the objects' own create
    then says what is missing, as it did before this wait."""
    try:
        return judge(client.get(f"{CRD_API}/{segment(name)}"), name, version, registered_by)
    except KubeApiError as err:
        if err.status == 404:
            return judge(None, name, version, registered_by)
        if err.status == 403:
            return Check(True, found={"unchecked": [f"the CustomResourceDefinition {name} ({err})"]})
        raise


class CrdServedProvider(ClusterWaitProvider):
    compared = ("crd", "version")  # served once is enough

    def id_of(self, props: dict[str, Any]) -> str:
        return "crd-served-" + hashlib.sha256(f"{props['crd']}/{props['version']}".encode()).hexdigest()[:12]

    def wait(self, client: Reader, props: dict[str, Any]) -> dict[str, Any]:
        name, version, by = str(props["crd"]), str(props["version"]), str(props.get("registeredBy") or "")
        found = poll(lambda: look(client, name, version, by), float(props["timeoutSeconds"]), forbidden=FORBIDDEN)
        return {"unchecked": found.get("unchecked", [])}


_PROVIDER = CrdServedProvider()


class CrdServed(dynamic.Resource, module="kaito-aks", name="CrdServed"):
    """Holds what depends on it until the cluster serves `crd` (e.g.
    servicemonitors.azmonitoring.coreos.com) in `version`: its CRD exists and is Established.
    Fails after `timeout_minutes` naming what is missing and `registered_by` (who registers it,
    where to look). Output: `unchecked` (what the credentials could not read)."""

    unchecked: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        crd: str,
        version: str,
        registered_by: str,
        timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES,
        opts: pulumi.ResourceOptions | None = None,
    ):
        check_wait_args(
            "CrdServed",
            name,
            access,
            crd=(crd, wait_args.text),
            version=(version, wait_args.text),
            registered_by=(registered_by, wait_args.text),
            timeout_minutes=(timeout_minutes, wait_args.minutes),
            opts=(opts, wait_args.optional(wait_args.instance(pulumi.ResourceOptions, "pulumi.ResourceOptions"))),
        )
        props: dict[str, Any] = {
            "crd": crd,
            "version": version,
            "registeredBy": registered_by,
            "timeoutSeconds": timeout_minutes * 60,
            **access.props(),
            "unchecked": None,
        }
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))


def served_kind(manifest: dict[str, Any]) -> tuple[str, str]:
    """(CRD name, version) of an object's kind: servicemonitors.<group>, v1."""
    group, version = str(manifest["apiVersion"]).split("/", 1)
    return f"{str(manifest['kind']).lower()}s.{group}", version
