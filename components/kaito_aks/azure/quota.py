"""Can the subscription have the VMs a deployment needs in its region? Read before anything is
created: the regional vCPU quota and usage per VM family, the total regional and Spot vCPUs
(Microsoft.Compute usages), the sizes the region offers this subscription (Microsoft.Compute
resource SKUs, with their restrictions), and where a size is missing the nearest regions that
have it (Microsoft.Resources locations). Azure counts quota in vCPUs per family: a size's family
and vCPUs come from its resource SKU (`family`, capability `vCPUs`), the family's quota and use
from the usage of the same name (e.g. standardNCADSA100v4Family).

What already runs of this deployment (the cluster's pools; the VMs Karpenter made in the node
resource group) is in Azure's `currentValue` already: it is counted once, as needed, not also
as used."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from kaito_aks.azure.arm import (
    LOCATIONS_API,
    MANAGED_CLUSTER_API,
    SKUS_API,
    USAGES_API,
    VIRTUAL_MACHINES_API,
    ArmError,
    ArmReader,
    managed_cluster_path,
    number,
    obj,
    objs,
    text,
)
from kaito_aks.parsed import is_list
from kaito_aks.problems import PathPart, Problem

TOTAL = "cores"  # Total Regional vCPUs
SPOT = "lowPriorityCores"  # Total Regional Low-priority vCPUs (Spot VMs count here, not in their family)
NEAREST = 3  # regions named for a size the region lacks
MOST_REGIONS_READ = 12  # regions whose SKUs are read looking for them
AKS_DEFAULT_SURGE = "10%"  # AKS's max surge when a pool sets none


@dataclass(frozen=True)
class VmDemand:
    """The most VMs of one size something of the deployment runs (`nodes`), the extra ones an AKS
    upgrade adds to them for a while (`surge`), and where the deployment says so."""

    what: str  # e.g. "GPU pool a100", "model default/llama (KAITO's nodes)"
    vm_size: str
    nodes: int
    spot: bool = False
    path: tuple[PathPart, ...] = ()
    surge: int = 0


def surge_nodes(max_surge: str | None, nodes: int) -> int:
    """The extra nodes an AKS upgrade adds to a pool of `nodes`: a count, or a percentage
    rounded up, at least one (AKS's default 10%)."""
    given = max_surge or AKS_DEFAULT_SURGE
    if given.endswith("%"):
        return max(1, math.ceil(nodes * int(given[:-1]) / 100))
    return int(given)


@dataclass(frozen=True)
class Ours:
    """What of the deployment already runs (its cluster's pools, Karpenter's VMs): vCPUs by usage name."""

    vcpus: Mapping[str, int] = field(default_factory=dict[str, int])
    note: str = ""


@dataclass(frozen=True)
class Family:
    """One usage line the deployment needs: its name, quota, use, and who needs it."""

    name: str
    label: str  # Azure's localized name, e.g. "Standard NCADS_A100_v4 Family vCPUs"
    needed: int
    limit: int
    used: int
    ours: int
    needs: tuple[str, ...]
    surge: int = 0  # vCPUs an upgrade's surge nodes add for a while

    @property
    def free(self) -> int:
        return self.limit - (self.used - self.ours)

    @property
    def short(self) -> int:
        """vCPUs missing for what the deployment runs: its VMs cannot all be created."""
        return self.needed - self.free

    @property
    def short_in_upgrades(self) -> int:
        """vCPUs missing only for an upgrade's surge nodes: the VMs run, AKS's upgrades fail."""
        return self.needed + self.surge - self.free


@dataclass(frozen=True)
class CapacityVerdict:
    """The check's answer: every problem (short quota, sizes the region lacks), what was read, and
    the lines to say when it passes."""

    region: str
    problems: list[Problem] = field(default_factory=list[Problem])
    families: list[Family] = field(default_factory=list[Family])
    note: str = ""

    def summary(self) -> str:
        lines = ", ".join(f"{f.name} {f.needed + f.surge}/{f.free} vCPUs free" for f in self.families)
        return f"quota in {self.region} checked: {lines or 'nothing needed'}" + (f" ({self.note})" if self.note else "")


def _capabilities(sku: Mapping[str, Any]) -> dict[str, str]:
    return {text(c.get("name")): str(c.get("value")) for c in objs(sku.get("capabilities")) if c.get("name")}


def vcpus(sku: Mapping[str, Any]) -> int:
    return number(_capabilities(sku).get("vCPUs"))


def _restriction(sku: Mapping[str, Any], region: str) -> str | None:
    """Why the subscription cannot have the size in the region (a Location restriction), or None."""
    for r in objs(sku.get("restrictions")):
        if r.get("type") != "Location":
            continue
        listed = obj(r.get("restrictionInfo")).get("locations") or r.get("values")
        where = [text(x).lower() for x in cast(list[object], listed)] if is_list(listed) else []
        if region.lower() in where:
            return text(r.get("reasonCode")) or "restricted"
    return None


def vm_skus(skus: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The virtualMachines resource SKUs by name (lower case)."""
    return {text(s.get("name")).lower(): s for s in skus if s.get("resourceType") == "virtualMachines"}


def offered(skus: Mapping[str, Mapping[str, Any]], size: str, region: str) -> bool:
    sku = skus.get(size.lower())
    return sku is not None and _restriction(sku, region) is None


def _distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Great-circle distance in km between two locations' metadata latitude/longitude."""
    try:
        la1, lo1, la2, lo2 = (
            math.radians(float(x)) for x in (a["latitude"], a["longitude"], b["latitude"], b["longitude"])
        )
    except (KeyError, TypeError, ValueError):
        return math.inf
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371 * math.asin(min(1.0, math.sqrt(h)))


def nearest_regions_with(arm: ArmReader, subscription: str, region: str, sizes: Sequence[str]) -> dict[str, list[str]]:
    """For each size, the nearest physical regions (by the locations' coordinates) that offer it
    to this subscription; reads the SKUs of at most MOST_REGIONS_READ regions."""
    locations = arm.list(f"/subscriptions/{subscription}/locations", LOCATIONS_API)
    meta = {text(loc.get("name")).lower(): obj(loc.get("metadata")) for loc in locations}
    here = meta.get(region.lower(), {})
    physical = [n for n, m in meta.items() if m.get("regionType") == "Physical" and n != region.lower()]
    physical.sort(key=lambda n: (_distance(here, meta[n]), n))
    found: dict[str, list[str]] = {s: [] for s in sizes}
    for name in physical[:MOST_REGIONS_READ]:
        if all(len(v) >= NEAREST for v in found.values()):
            break
        skus = vm_skus(region_skus(arm, subscription, name))
        for size in sizes:
            if len(found[size]) < NEAREST and offered(skus, size, name):
                found[size].append(name)
    return found


def region_skus(arm: ArmReader, subscription: str, region: str) -> list[dict[str, Any]]:
    return arm.list(
        f"/subscriptions/{subscription}/providers/Microsoft.Compute/skus",
        SKUS_API,
        {"$filter": f"location eq '{region}'"},
    )


def ours_running(
    arm: ArmReader,
    subscription: str,
    skus: Mapping[str, Mapping[str, Any]],
    cluster: tuple[str, str] | None,
) -> Ours:
    """vCPUs by usage name of what the deployment's cluster (resource group, name) already runs:
    its agent pools (AKS's VM scale sets, gpu-provisioner's pools among them) and the VMs in its
    node resource group (Karpenter's). A cluster that does not exist yet runs nothing."""
    if cluster is None:
        return Ours()
    group, name = cluster
    try:
        found = arm.get(managed_cluster_path(subscription, group, name), MANAGED_CLUSTER_API)
    except ArmError as err:
        if err.status == 404:
            return Ours(note="a new cluster")
        raise
    props = obj(found.get("properties"))
    vms: list[tuple[str, int, bool]] = [
        (text(p.get("vmSize")), number(p.get("count")), p.get("scaleSetPriority") == "Spot")
        for p in objs(props.get("agentPoolProfiles"))
    ]
    node_group = text(props.get("nodeResourceGroup"))
    if node_group:
        try:
            machines = arm.list(
                f"/subscriptions/{subscription}/resourceGroups/{node_group}/providers/Microsoft.Compute/virtualMachines",
                VIRTUAL_MACHINES_API,
            )
        except ArmError as err:
            if err.status != 404:
                raise
            machines = []
        for vm in machines:
            p = obj(vm.get("properties"))
            vms.append((text(obj(p.get("hardwareProfile")).get("vmSize")), 1, p.get("priority") == "Spot"))
    out: dict[str, int] = {}
    for size, count, spot in vms:
        sku = skus.get(size.lower())
        if sku is None or count <= 0:
            continue
        cpus = vcpus(sku) * count
        for usage in (SPOT,) if spot else (text(sku.get("family")), TOTAL):
            out[usage] = out.get(usage, 0) + cpus
    return Ours(out, f"{sum(c for _, c, _ in vms)} node(s) of this deployment already run")


def request_command(family: str, region: str, subscription: str, wanted: int) -> str:
    """How to ask for more: the Azure CLI's quota extension (Microsoft.Quota), or the portal."""
    return (
        f"az quota create --resource-name {family} --scope /subscriptions/{subscription}/providers/Microsoft.Compute/"
        f"locations/{region} --limit-object value={wanted} --resource-type dedicated "
        f"(or the portal: Subscriptions > Usage + quotas, {family}, {region})"
    )


def capacity_verdict(
    demands: Sequence[VmDemand],
    region: str,
    arm: ArmReader,
    subscription: str,
    *,
    cluster: tuple[str, str] | None = None,
) -> CapacityVerdict:
    """Check `demands` in `region` for the subscription: every problem at once. Raises ArmError
    when Azure cannot be read."""
    skus = vm_skus(region_skus(arm, subscription, region))
    problems: list[Problem] = []
    missing: dict[str, list[VmDemand]] = {}
    usage_needs: dict[str, int] = {}
    usage_surge: dict[str, int] = {}
    who: dict[str, list[str]] = {}
    for d in demands:
        sku = skus.get(d.vm_size.lower())
        reason = "not offered" if sku is None else _restriction(sku, region)
        if sku is None or reason is not None:
            missing.setdefault(d.vm_size, []).append(d)
            continue
        cpus = vcpus(sku) * d.nodes
        for usage in (SPOT,) if d.spot else (text(sku.get("family")), TOTAL):
            usage_needs[usage] = usage_needs.get(usage, 0) + cpus
            usage_surge[usage] = usage_surge.get(usage, 0) + vcpus(sku) * d.surge
            who.setdefault(usage, []).append(f"{d.what}: {d.nodes} x {d.vm_size}")
    if missing:
        unread = ""
        try:
            nearest = nearest_regions_with(arm, subscription, region, sorted(missing))
        except ArmError as err:  # the size is still refused, without the regions
            nearest, unread = {}, f"the regions that offer it could not be read ({err})"
        for size, ds in sorted(missing.items()):
            sku = skus.get(size.lower())
            why = (
                f"is not offered in {region}"
                if sku is None
                else f"is restricted for this subscription in {region} ({_restriction(sku, region)})"
            )
            elsewhere = nearest.get(size, [])
            hint = (
                unread
                or (f"nearest regions that offer it to this subscription: {', '.join(elsewhere)}" if elsewhere else "")
                or f"none of the {MOST_REGIONS_READ} nearest regions offers it to this subscription"
            )
            for d in ds:
                problems.append(Problem(d.path, f"{size} {why}: {d.what}; {hint}", "vm-size-unavailable"))
    ours = ours_running(arm, subscription, skus, cluster)
    usages = {
        text(obj(u.get("name")).get("value")).lower(): u
        for u in arm.list(
            f"/subscriptions/{subscription}/providers/Microsoft.Compute/locations/{region}/usages", USAGES_API
        )
    }
    families: list[Family] = []
    for name, needed in sorted(usage_needs.items()):
        u = usages.get(name.lower())
        if u is None:
            continue  # Azure reports no quota line of that name: nothing to compare
        family = Family(
            name,
            text(obj(u.get("name")).get("localizedValue")) or name,
            needed,
            number(u.get("limit")),
            number(u.get("currentValue")),
            ours.vcpus.get(name, 0),
            tuple(who[name]),
            usage_surge.get(name, 0),
        )
        families.append(family)
        path = next((d.path for d in demands if any(w.startswith(f"{d.what}:") for w in who[name])), ())
        problem = _quota_problem(family, region, subscription, path)
        if problem is not None:
            problems.append(problem)
    return CapacityVerdict(region, problems, families, ours.note)


def _quota_problem(family: Family, region: str, subscription: str, path: tuple[PathPart, ...]) -> Problem | None:
    """A family short for what runs is refused; one short only for an upgrade's surge nodes is
    warned (the deployment runs; AKS's upgrades of those pools fail until the quota grows)."""
    if family.short_in_upgrades <= 0:
        return None
    already = f", {family.ours} of them this deployment's own" if family.ours else ""
    wanted = family.limit + family.short_in_upgrades  # enough for the upgrades too
    ask = f"Ask for {wanted} or more: {request_command(family.name, region, subscription, wanted)}"
    said = (
        f"{family.label} in {region}: the stack needs {family.needed} ({'; '.join(family.needs)}), the quota is "
        f"{family.limit} and {family.used} are used{already}"
    )
    if family.short > 0:
        upgrades = f" ({family.short_in_upgrades} with an upgrade's {family.surge} surge)" if family.surge else ""
        return Problem(path, f"{said}: {family.short} short{upgrades}. {ask}", "quota-short")
    return Problem(
        path,
        f"{said}, which fits, but an upgrade's surge nodes add {family.surge}: {family.short_in_upgrades} short "
        f"then, so AKS's node image and Kubernetes upgrades of these pools fail (or lower the pools' maxSurge). {ask}",
        "quota-surge",
    )
