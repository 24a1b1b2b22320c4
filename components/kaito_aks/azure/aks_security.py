"""How an AKS cluster this library creates is secured: who may reach its API server and how they
sign in (Entra ID, Azure RBAC, no local accounts, authorized ranges or a private endpoint), the
policy engine that enforces NetworkPolicies, automatic upgrades in a maintenance window, and the
security add-ons. Each default is the secure one; turning one down is said as a warning naming
what it exposes. The args classes and their rules live here; aks_cluster.py builds the cluster.

Which of these apply to an existing cluster in place (`pulumi up` updates it) and which only to a
new one is in docs/security.md; the rule for the code is that a setting AKS cannot change in
place is either ignored on existing clusters (the network policy engine) or a replacement the
preview announces (a private API server)."""

from __future__ import annotations

import ipaddress
from dataclasses import field
from typing import Annotated, Literal

from pulumi_azure_native import containerservice

from kaito_aks.problems import Problem
from kaito_aks.schema import Check, Input, Matches, MaxItems, Range, args_class

GUID_TEXT = Matches(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "an object id (a GUID)"
)
# RFC 5737 (IPv4) and RFC 3849 (IPv6): addresses for documentation, never routed.
DOCUMENTATION_RANGES = tuple(
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
# Addresses no request to a public API server comes from (IANA's special-purpose registries):
# what each is, by block. A range inside one of them cannot be the egress of a runner or an admin.
UNROUTABLE_RANGES: tuple[tuple[str, str], ...] = (
    *((str(n), "a documentation range (RFC 5737/3849), never routed") for n in DOCUMENTATION_RANGES),
    ("0.0.0.0/8", '"this network" (RFC 1122), a source only while a host has no address'),
    ("::/128", "the unspecified address (RFC 4291)"),
    ("127.0.0.0/8", "loopback (RFC 1122), a host's own"),
    ("::1/128", "loopback (RFC 4291), a host's own"),
    ("169.254.0.0/16", "link-local (RFC 3927), never past its link"),
    ("fe80::/10", "link-local (RFC 4291), never past its link"),
    ("224.0.0.0/4", "multicast (RFC 5771), never a source"),
    ("ff00::/8", "multicast (RFC 4291), never a source"),
    ("240.0.0.0/4", "reserved (RFC 1112) or the broadcast address, never routed"),
    ("100::/64", "discard-only (RFC 6666), never routed"),
)
UNROUTABLE_CODE = "api-server-unroutable"
EVERYWHERE = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
Weekday = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
PrincipalType = Literal["User", "ServicePrincipal", "Group"]


def cidr_problem(value: str) -> str | None:
    """Why `value` is not an IP range in CIDR form (a.b.c.d/n), or None."""
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as err:
        return f"{value!r} is not a CIDR range such as 203.0.113.7/32 ({err})"
    if "/" not in value:
        return f"{value!r} has no prefix length: write {network}"
    return None


Cidr = Annotated[str, Check(cidr_problem)]
WORKSPACE_ID = Matches(
    r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.OperationalInsights/workspaces/[^/]+",
    "a Log Analytics workspace's resource id (/subscriptions/.../providers/Microsoft.OperationalInsights/workspaces/<name>)",
)


@args_class
class AdminArgs:
    """A principal given "Azure Kubernetes Service RBAC Cluster Admin" on the cluster."""

    object_id: Annotated[str, GUID_TEXT]
    """Its Entra object id."""
    principal_type: PrincipalType = "User"
    """User, ServicePrincipal (an app registration or managed identity, e.g. a CI identity) or
    Group: Azure refuses an assignment whose type does not match the principal."""


@args_class
class EntraArgs:
    """Microsoft Entra ID for the API server (AKS-managed; once on, AKS cannot turn it off): who
    signs in, and who is cluster admin."""

    azure_rbac: bool = True
    """Azure RBAC for Kubernetes authorization: Azure role assignments (this component's grants
    among them) decide what a principal may do inside the cluster, next to Kubernetes RBAC.
    Off: only Kubernetes RBAC, where only members of `admin_group_object_ids` are admins (warned)."""
    admins: Annotated[list[AdminArgs], MaxItems(50)] = field(default_factory=list[AdminArgs])
    """Principals given "Azure Kubernetes Service RBAC Cluster Admin" on the cluster: stable
    grants that do not depend on who runs `pulumi up` (a CI identity, a platform team). Needs
    `azure_rbac`. Default: none."""
    admin_group_object_ids: Annotated[list[Annotated[str, GUID_TEXT]], MaxItems(10)] = field(default_factory=list[str])
    """Entra groups whose members are cluster admins through Kubernetes RBAC (AKS's admin
    groups): they keep access whatever Azure RBAC says. Default: none."""
    grant_deployer: bool = True
    """Give whoever runs `pulumi up` (the azure-native provider's identity) "Azure Kubernetes
    Service RBAC Cluster Admin" on the cluster, so this program's Kubernetes provider and waits
    work once local accounts are off; the provider and waits start only when the grant has taken
    effect. The grant follows the identity that runs `up`: where a laptop and CI take turns, each
    run replaces it, so there set false and name the CI identity in `admins`."""
    deployer_principal_type: Literal["User", "ServicePrincipal"] | None = None
    """Whether the deployer is a user or a service principal (Azure refuses an assignment of the
    wrong type); default: read from the token the azure-native provider signs in with (an
    app-only token is a service principal's)."""


@args_class
class ApiServerArgs:
    """Who can reach the cluster's API server over the network."""

    authorized_ip_ranges: Annotated[list[Cidr], MaxItems(200, "AKS: at most 200 ranges")] = field(
        default_factory=list[str]
    )
    """The only ranges the public API server answers (CIDR, e.g. 203.0.113.0/24). Include where
    `pulumi up` runs (your network, your CI runners) and the cluster's own outbound IPs: AKS adds
    the latter itself only when a cluster is created with ranges; on an existing cluster a range
    list without them cuts its nodes off. Default: none (any address; warned on production)."""
    private: bool = False
    """A private API server, reachable only from the cluster's virtual network and peered ones
    (`pulumi up` must run there). Set when the cluster is created: changing it replaces the
    cluster (the preview says so). Not with `authorized_ip_ranges`."""


@args_class
class MaintenanceWindowArgs:
    """A weekly slot in which AKS may upgrade the cluster and its node images."""

    day: Weekday = "Sunday"
    """The day it starts."""
    start: Annotated[str, Matches(r"([01]\d|2[0-3]):[0-5]\d", "a time of day, HH:MM")] = "02:00"
    """Its start, HH:MM in `utc_offset`."""
    duration_hours: Annotated[int, Range(4, 24, "AKS: 4 to 24 hours; 4 or more with auto-upgrade")] = 4
    """How long it lasts."""
    utc_offset: Annotated[str, Matches(r"[+-](0\d|1[0-4]):[0-5]\d", "a UTC offset, +HH:MM or -HH:MM")] = "+00:00"
    """The time zone of `start`, e.g. +01:00."""


@args_class
class UpgradeArgs:
    """Automatic upgrades, in one maintenance window."""

    channel: Literal["patch", "stable", "rapid", "none"] = "patch"
    """Kubernetes upgrades: patch (the newest patch of the cluster's minor: fixes, no API
    changes), stable or rapid (newer minors; not with a pinned `kubernetes_version`, which the
    next `up` would try to go back to), none (warned: no security patches)."""
    node_os_channel: Literal["NodeImage", "SecurityPatch", "Unmanaged", "None"] = "NodeImage"
    """Node OS updates: NodeImage (a new node image weekly, AKS's default), SecurityPatch (OS
    security updates, fewer reimages), Unmanaged (the OS's own unattended upgrades, no reboot
    coordination; warned) or None (warned)."""
    window: MaintenanceWindowArgs = field(default_factory=MaintenanceWindowArgs)
    """When AKS may apply both (an aksManagedAutoUpgradeSchedule and an
    aksManagedNodeOSUpgradeSchedule maintenance configuration); default: Sundays from 02:00 UTC, 4
    hours."""


@args_class
class DefenderArgs:
    """Microsoft Defender for Containers on the cluster (billed through the subscription's
    Defender plan)."""

    log_analytics_workspace_id: Input[Annotated[str, WORKSPACE_ID]]
    """The Log Analytics workspace (resource id) its security data goes to."""


MAX_SURGE = Matches(r"[1-9]\d{0,2}|([1-9]\d?|100)%", "a node count (e.g. 1) or a percentage of the pool (e.g. 33%)")
Zone = Literal["1", "2", "3"]


def kubernetes_version_problems(channel: str, kubernetes_version: str | None) -> list[Problem]:
    """A pinned version the channel would move away from: AKS would upgrade the cluster, and the
    next `up` would ask for the old version again, which AKS refuses (no downgrades)."""
    if kubernetes_version is None or channel == "none":
        return []
    if channel in ("stable", "rapid"):
        why = (
            f"`upgrade.channel` {channel} moves the cluster to newer minors, and the next `pulumi up` would then ask AKS "
            f"to go back to {kubernetes_version}, which it refuses: leave `kubernetes_version` out, or use channel patch"
        )
        return [Problem.at("kubernetes_version", why, "upgrade-channel")]
    if channel == "patch" and kubernetes_version.count(".") == 2:
        minor = kubernetes_version.rsplit(".", 1)[0]
        why = (
            f"`upgrade.channel` patch moves the cluster to newer patches of {minor}, and the next `pulumi up` would then "
            f"ask AKS to go back to {kubernetes_version}, which it refuses: give the minor alone ({minor!r})"
        )
        return [Problem.at("kubernetes_version", why, "upgrade-channel")]
    return []


def access_problems(
    entra: EntraArgs, local_accounts: bool, api_server: ApiServerArgs, bypass_checks: list[str] | None = None
) -> list[Problem]:
    """Settings that leave nobody able to reach the cluster, or that AKS refuses together (an
    unroutable range that `bypass_checks` names: a bypassed warning)."""
    problems = unroutable_problems(api_server.authorized_ip_ranges, bypass_checks)
    problems += bypass_checks_problems(bypass_checks or [])
    if not entra.azure_rbac and not local_accounts and not entra.admin_group_object_ids:
        why = (
            "with `entra.azure_rbac` off and `local_accounts` off, only members of `entra.admin_group_object_ids` can reach the cluster "
            "(this program's Kubernetes provider included): name the Entra group(s) the deployer is in, or leave "
            "`entra.azure_rbac` on"
        )
        problems.append(Problem.at(("entra", "azure_rbac"), why, "cluster-access"))
    if entra.admins and not entra.azure_rbac:
        why = "these are Azure RBAC grants, which authorize nothing inside the cluster with `entra.azure_rbac` off: use `entra.admin_group_object_ids`"
        problems.append(Problem.at(("entra", "admins"), why, "cluster-access"))
    if api_server.private and api_server.authorized_ip_ranges:
        why = "AKS applies authorized ranges to a public API server only; a private one takes none: remove one of them"
        problems.append(Problem.at(("api_server", "authorized_ip_ranges"), why, "api-server"))
    return problems


def unroutable_problems(ranges: list[str], bypass_checks: list[str] | None = None) -> list[Problem]:
    """Authorized ranges no caller's address can be in (a documentation range, loopback, link-local,
    multicast, ...): with only such ranges `pulumi up` creates the cluster and then never reaches
    its API server. Refused, each at its entry; `bypass_checks` naming the code says it instead
    (a bypassed warning: e.g. an example's placeholder, to replace before `up`)."""
    found: list[Problem] = []
    for i, text in enumerate(ranges):
        if cidr_problem(text) is not None:
            continue
        network = ipaddress.ip_network(text)
        what = next((why for block, why in UNROUTABLE_RANGES if _within(network, ipaddress.ip_network(block))), None)
        if what is None or network in EVERYWHERE:
            continue
        found.append(
            Problem.at(
                ("api_server", "authorized_ip_ranges", i),
                f"{text} is {what}, so no runner's or admin's address is in it: `pulumi up` would create the cluster "
                "and then never reach its API server; list the egress ranges of where `pulumi up` runs (your CI "
                "runners, your admins' network) and the cluster's outbound IPs instead (an example's placeholder, "
                f"never deployed, may stay with `bypass_checks`: [{UNROUTABLE_CODE}])",
                UNROUTABLE_CODE,
            )
        )
    if bypass_checks and UNROUTABLE_CODE in bypass_checks:
        return [
            Problem(
                p.path,
                f"bypassed ({UNROUTABLE_CODE}): {p.message.split(' (an example')[0]}; replace it before `pulumi up`",
                p.code,
                True,
            )
            for p in found
        ]
    return found


def bypass_checks_problems(bypass_checks: list[str]) -> list[Problem]:
    """A cluster's `bypass_checks` may name only its own refusals that have a way past."""
    return [
        Problem.at(
            ("bypass_checks", i),
            f"{code!r} is no refusal of the cluster's that may be bypassed; the one that may: {UNROUTABLE_CODE}",
            "bypass",
        )
        for i, code in enumerate(bypass_checks)
        if code != UNROUTABLE_CODE
    ]


def ranges_warning(ranges: list[str]) -> Problem | None:
    """What authorized ranges must hold, and catch-alls among them (an unroutable range is
    refused: `unroutable_problems`)."""
    if not ranges:
        return None
    networks = [ipaddress.ip_network(r) for r in ranges if cidr_problem(r) is None]
    everywhere = [str(n) for n in networks if n in EVERYWHERE]
    said = [
        "the API server answers only these ranges: they must include where `pulumi up` runs (your network, your CI "
        "runners) and the cluster's outbound IPs (az aks show --query networkProfile.loadBalancerProfile."
        "effectiveOutboundIPs; AKS adds them itself only when it creates a cluster with ranges)"
    ]
    if everywhere:
        said.append(f"{', '.join(everywhere)} admits every address: no restriction")
    return Problem.at(("api_server", "authorized_ip_ranges"), "; ".join(said), "api-server-ranges")


def _within(
    network: ipaddress.IPv4Network | ipaddress.IPv6Network, outer: ipaddress.IPv4Network | ipaddress.IPv6Network
) -> bool:
    return network.version == outer.version and network.subnet_of(outer)  # type: ignore[arg-type]


def lowered_defaults(
    entra: EntraArgs,
    local_accounts: bool,
    network_policy: str,
    upgrade: UpgradeArgs,
    image_cleaner: bool,
    azure_policy: bool,
) -> list[Problem]:
    """Each secure default turned down, with what that exposes."""
    found: list[Problem] = []

    def say(path: tuple[str, ...], why: str, code: str) -> None:
        found.append(Problem.at(path, why, code))

    if local_accounts:
        say(
            ("local_accounts",),
            "local accounts are on: the cluster's admin certificate (`az aks get-credentials --admin`, "
            "listClusterAdminCredential) reaches it as cluster-admin past Entra ID and Azure RBAC, unaudited, and "
            "anyone with Contributor on it can list that certificate",
            "local-accounts",
        )
    if not entra.azure_rbac:
        say(
            ("entra", "azure_rbac"),
            "Azure RBAC for Kubernetes is off: Azure role assignments (admins, the deployer's grant) authorize nothing "
            "inside the cluster; only Kubernetes RBAC does, with the `entra.admin_group_object_ids` members as cluster admins "
            "(the identity running `pulumi up` must be one of them)",
            "azure-rbac",
        )
    if network_policy == "none":
        say(
            ("network_policy",),
            "no network policy engine: the NetworkPolicies this program creates (and any other) are not enforced, so "
            "every pod can reach every model and RAG engine",
            "network-policy",
        )
    if upgrade.channel == "none":
        say(("upgrade", "channel"), "no automatic Kubernetes upgrades: security patches wait for you", "upgrade")
    if upgrade.node_os_channel in ("None", "Unmanaged"):
        say(
            ("upgrade", "node_os_channel"),
            f"{upgrade.node_os_channel}: node OS security updates are not coordinated by AKS"
            + (" (none at all)" if upgrade.node_os_channel == "None" else " (no drain before a reboot)"),
            "upgrade",
        )
    if not image_cleaner:
        say(
            ("image_cleaner",),
            "Image Cleaner is off: unused images with known vulnerabilities stay on the nodes",
            "image-cleaner",
        )
    if not azure_policy:
        say(
            ("azure_policy",),
            "the Azure Policy add-on is off: no policy (e.g. the AKS baselines) is enforced or audited in the cluster",
            "azure-policy",
        )
    return found


KEY_VAULT_ADD_ON = "azureKeyvaultSecretsProvider"


def key_vault_add_on(enabled: bool | None) -> dict[str, containerservice.ManagedClusterAddonProfileArgs]:
    """The Key Vault secrets store add-on's profile when the args say it (none: left alone)."""
    if enabled is None:
        return {}
    config = {"enableSecretRotation": "true", "rotationPollInterval": "2m"} if enabled else None
    return {KEY_VAULT_ADD_ON: containerservice.ManagedClusterAddonProfileArgs(enabled=enabled, config=config)}


def left_alone(tier: str | None, key_vault_secrets_provider: bool | None) -> list[str]:
    """The cluster's settings someone may set by hand that the args do not set: never written, and
    ignored, so a stack deployed when the program wrote them sees no change and sends what it sent."""
    return [
        *(["sku"] if tier is None else []),
        *([f"addonProfiles.{KEY_VAULT_ADD_ON}"] if key_vault_secrets_provider is None else []),
    ]


def production_warnings(api_server: ApiServerArgs, tier: str | None, defender: DefenderArgs | None) -> list[Problem]:
    """What a production cluster (a stack named prod, or a protected cluster) should not lack."""
    found: list[Problem] = []
    if not api_server.private and not api_server.authorized_ip_ranges:
        found.append(
            Problem.at(
                ("api_server",),
                "a production cluster whose API server answers any address on the internet (only Entra ID stands "
                "between it and the world): set `api_server.authorized_ip_ranges` (or `api_server.private` on a new cluster)",
                "api-server-public",
            )
        )
    if tier in ("Free", None):
        free = "on the Free tier" if tier == "Free" else "without `tier` (a new one is created on the Free tier)"
        found.append(
            Problem.at(
                ("tier",),
                f"a production cluster {free}: no uptime SLA, and a control plane sized for tests; use Standard",
                "tier",
            )
        )
    if defender is None:
        found.append(
            Problem.at(
                ("defender",),
                "a production cluster without Microsoft Defender for Containers: no runtime threat detection or image "
                "vulnerability findings; give `defender.log_analytics_workspace_id`",
                "defender",
            )
        )
    return found


PRODUCTION_STACKS = frozenset({"prod", "production"})


def is_production(stack: str, protected: bool) -> bool:
    """A cluster held to production's warnings: in a stack named prod (or production), or protected."""
    return protected or stack.lower() in PRODUCTION_STACKS
