"""Reading Azure Resource Manager with the login `pulumi up` uses, for what pulumi-azure-native
3.29.0 has no invoke for: a subscription's regional vCPU quota and usage (Microsoft.Compute
usages), the VM sizes a region offers it (Microsoft.Compute resource SKUs) and the regions
(Microsoft.Resources locations). azure-native 3.29.0 exposes none of them (its `quota` module has
management-group quotas only), so the program asks the provider for an ARM token
(`azure-native:authorization:getClientToken`, the provider's own credentials: CLI, OIDC, service
principal, as configured) and its subscription (`getClientConfig`), and GETs ARM's REST API
directly; no Azure SDK is added. Outside a program (`validate --online`, `status`'s Azure side)
the token is the Azure CLI's (`az_cli_reader`). Either way the calls go through the cluster
client's transport (kaito_aks.waits.kube_client): no redirect followed, a bounded answer, one
deadline per call, one-line errors. One reader of gpu-provisioner's agent pools
(`AgentPoolReader`) serves the failure library.

Under the mock engine (`kaito_aks.testing.run`) nothing is read from Azure: the mocks' recorded
answers in the APIs' own shapes answer (`RecordedArm`), or the reading says it was not checked."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Generator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import bounded
from kaito_aks.waits.kube_client import KubeApiError, KubeClient
from kaito_aks.waits.kubeconfig import KubeconfigError

ARM_ENDPOINT = "https://management.azure.com"
ENDPOINT_ENV = "KAITO_AKS_ARM_ENDPOINT"  # another endpoint (a sovereign cloud's, or recorded answers)
# azure-native's `environment` setting -> its ARM endpoint
CLOUD_ENDPOINTS = {
    "public": ARM_ENDPOINT,
    "usgovernment": "https://management.usgovernmentcloudapi.net",
    "china": "https://management.chinacloudapi.cn",
}
# The API versions read (each a GA version of its provider)
USAGES_API = "2024-07-01"  # Microsoft.Compute usages (Usage - List)
SKUS_API = "2021-07-01"  # Microsoft.Compute resource SKUs (Resource Skus - List), its newest
LOCATIONS_API = "2022-12-01"  # Microsoft.Resources subscriptions locations (Subscriptions - List Locations)
MANAGED_CLUSTER_API = "2025-09-01"  # Microsoft.ContainerService managedClusters and agentPools, azure-native 3.29.0's
VIRTUAL_MACHINES_API = "2024-07-01"  # Microsoft.Compute virtualMachines (Virtual Machines - List)
MAX_PAGES = 100
PATH_SAFE = "/%!$&'()*+,;=:@~"  # RFC 3986's path characters, and escapes already made
# What a whole check may take, all its calls together: a preview waits no longer for Azure.
READ_SECONDS = 60.0
AZ_TIMEOUT_SECONDS = 60.0  # `az account get-access-token` (it may refresh the login first)


Json = dict[str, Any]


def obj(value: object) -> Json:
    """A JSON object of an ARM answer, or {} for anything else."""
    return cast(Json, value) if is_dict(value) else {}


def objs(value: object) -> list[Json]:
    """The JSON objects of an ARM answer's list ([] for anything else)."""
    return [cast(Json, v) for v in cast(list[object], value) if is_dict(v)] if is_list(value) else []


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


def number(value: object) -> int:
    return (
        int(value)
        if isinstance(value, int | float)
        else int(value)
        if isinstance(value, str) and value.isdigit()
        else 0
    )


class ArmError(Exception):
    """An ARM answer other than 200 (status 0: no answer at all)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ArmReader(Protocol):
    """GET an ARM collection or resource; collections give every page's `value` items."""

    def get(self, path: str, api_version: str, query: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def list(self, path: str, api_version: str, query: Mapping[str, str] | None = None) -> list[dict[str, Any]]: ...


@dataclass
class LiveArm:
    """ARM's REST API with a bearer token (azure-native's getClientToken's, or the Azure CLI's),
    through the cluster client's transport: no redirect is followed, at most its size limit is
    read, each call ends by `timeout` (and by `deadline` when the caller has one: a `status`
    reading's), errors are one line. The token goes to `endpoint` alone (a next page elsewhere is
    refused) and is never in its repr; all the calls together take at most `budget` seconds."""

    token: str = field(repr=False)
    endpoint: str = ARM_ENDPOINT
    timeout: float = 30.0
    budget: float = READ_SECONDS
    deadline: float | None = None  # time.monotonic() by which every call must end (None: none but the budget)
    calls: list[str] = field(default_factory=list[str])  # each GET's path and API version, in order
    _budget_ends: float | None = field(default=None, repr=False)
    _client: KubeClient | None = field(default=None, repr=False)

    def _seconds_left(self) -> float:
        now = time.monotonic()
        if self._budget_ends is None:
            self._budget_ends = now + self.budget
        left = self._budget_ends - now
        if left <= 0:
            raise ArmError(0, f"reading {self.endpoint} took longer than {self.budget:.0f} s ({len(self.calls)} calls)")
        return min(self.timeout, left)

    def _transport(self) -> KubeClient:
        """The connection to ARM, made once: a client of the endpoint with the token."""
        if self._client is None:
            try:
                self._client = KubeClient.from_kubeconfig(
                    {
                        "clusters": [{"name": "arm", "cluster": {"server": _origin(self.endpoint)}}],
                        "users": [{"name": "arm", "user": {"token": self.token}}],
                        "contexts": [{"name": "arm", "context": {"cluster": "arm", "user": "arm"}}],
                        "current-context": "arm",
                    }
                )
            except KubeconfigError as err:  # (its text quotes neither the token nor the config)
                raise ArmError(0, f"{self.endpoint} cannot be read: {err}") from None
            self._client.called = "Azure Resource Manager"
        return self._client

    def _get_url(self, url: str) -> dict[str, Any]:
        if not _same_origin(url, self.endpoint):
            raise ArmError(0, f"a next page outside {self.endpoint} ({urllib.parse.urlsplit(url).netloc}): not read")
        client = self._transport()
        client.timeout_seconds = self._seconds_left()
        client.deadline = self.deadline
        try:  # the path and query as ARM wrote them (a nextLink's $skiptoken untouched)
            return client.get(url[len(_origin(url)) :])
        except KubeApiError as err:
            said = str(err).removeprefix(f"HTTP {err.status}: ")
            raise ArmError(err.status, f"{err.status} {said}" if err.status else said) from None

    def _url(self, path: str, api_version: str, query: Mapping[str, str] | None) -> str:
        """The URL of an ARM path (a resource id as Azure writes it, or with segments already
        quoted): what a URL path cannot carry is quoted, escapes already there are kept."""
        self.calls.append(f"GET {path}?api-version={api_version}")
        params = urllib.parse.urlencode({"api-version": api_version, **(query or {})})
        return f"{self.endpoint.rstrip('/')}{urllib.parse.quote(path, safe=PATH_SAFE)}?{params}"

    def get(self, path: str, api_version: str, query: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._get_url(self._url(path, api_version, query))

    def list(self, path: str, api_version: str, query: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        url: str | None = self._url(path, api_version, query)
        items: list[dict[str, Any]] = []
        pages = 0
        while url and pages < MAX_PAGES:
            page = self._get_url(url)
            items += objs(page.get("value"))
            link = page.get("nextLink")
            url, pages = (link if isinstance(link, str) and link else None), pages + 1
        return items


def _same_origin(url: str, endpoint: str) -> bool:
    a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(endpoint)
    return (a.scheme, a.netloc.lower()) == (b.scheme, b.netloc.lower())


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass
class RecordedArm:
    """Recorded ARM answers, by path (no query): a collection's answer in ARM's own shape
    ({"value": [...]}) or a resource's; an int answers with that HTTP status instead (e.g. 404).
    Paths not recorded answer 404, as ARM does for a resource that does not exist."""

    answers: Mapping[str, Any]
    calls: list[str] = field(default_factory=list[str])

    def get(self, path: str, api_version: str, query: Mapping[str, str] | None = None) -> dict[str, Any]:
        self.calls.append(f"GET {path}?api-version={api_version}")
        answer = self.answers.get(path.lower(), self.answers.get(path, 404))
        if isinstance(answer, int):
            raise ArmError(answer, f"{answer} (recorded): {path}")
        if not is_dict(answer):
            raise ArmError(0, f"recorded answer of {path} is not a JSON object")
        return dict(answer)

    def list(self, path: str, api_version: str, query: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        out = objs(self.get(path, api_version, query).get("value"))
        wanted = _location_filter(query)
        if wanted is not None:  # the resource SKUs' $filter=location eq '<region>', applied as ARM does
            out = [i for i in out if wanted in [text(x).lower() for x in cast(list[object], i.get("locations") or [])]]
        return out


def _location_filter(query: Mapping[str, str] | None) -> str | None:
    text = (query or {}).get("$filter", "")
    prefix = "location eq '"
    return text[len(prefix) : -1].lower() if text.startswith(prefix) and text.endswith("'") else None


class NotCheckedError(Exception):
    """Azure cannot be read here (offline, under the mock engine without recorded answers)."""


# What the program reads ARM with: None -> live, through azure-native's credentials; set by
# kaito_aks.testing.run (the mocks' RecordedArm, or OFFLINE when they have none).
OFFLINE = "offline"
_READER: ContextVar[ArmReader | str | None] = ContextVar("kaito_aks_arm_reader", default=None)


@contextlib.contextmanager
def reading_with(reader: ArmReader | str | None) -> Generator[None, None, None]:
    """Within the block, ARM is read with `reader` (OFFLINE: not at all)."""
    token = _READER.set(reader)
    try:
        yield
    finally:
        _READER.reset(token)


def endpoint_for(environment: str | None) -> str:
    """ARM's endpoint: $KAITO_AKS_ARM_ENDPOINT, else azure-native's `environment`'s."""
    return os.environ.get(ENDPOINT_ENV) or CLOUD_ENDPOINTS.get((environment or "public").lower(), ARM_ENDPOINT)


def arm_reader() -> tuple[ArmReader, str]:
    """The reader and the subscription id: recorded answers under the mocks, else ARM itself
    with azure-native's token (raises NotCheckedError when neither can be had)."""
    given = _READER.get()
    if given == OFFLINE:
        raise NotCheckedError("offline (the mock engine, no Azure)")
    import pulumi
    from pulumi_azure_native import authorization

    try:
        subscription = authorization.get_client_config().subscription_id
    except Exception as err:
        raise NotCheckedError(f"azure-native has no Azure login here ({_first_line(err)})") from None
    if given is not None and not isinstance(given, str):
        return given, subscription
    try:
        token = authorization.get_client_token().token
    except Exception as err:
        raise NotCheckedError(f"no ARM token from azure-native ({_first_line(err)})") from None
    environment = pulumi.Config("azure-native").get("environment")
    return LiveArm(token, endpoint_for(environment)), subscription


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]


def az_cli_reader(
    subscription: str | None = None,
    environment: str | None = None,
    *,
    budget: float = READ_SECONDS,
    deadline: float | None = None,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> tuple[LiveArm, str]:
    """Outside a Pulumi program (`validate --online`, `status`): ARM with the Azure CLI's login, as
    azure-native uses it by default (`az account get-access-token` for the endpoint's audience),
    and the subscription (the one given, else the CLI's); raises NotCheckedError, saying why,
    without one. `deadline` (time.monotonic()) bounds the CLI too."""
    az = shutil.which("az")
    if az is None:
        raise NotCheckedError("the Azure CLI (az) is not on PATH")
    endpoint = endpoint_for(environment)
    command = [az, "account", "get-access-token", "--resource", endpoint.rstrip("/") + "/", "--output", "json"]
    if subscription:
        command += ["--subscription", subscription]
    seconds = AZ_TIMEOUT_SECONDS if deadline is None else min(AZ_TIMEOUT_SECONDS, deadline - time.monotonic())
    try:
        done = run(command, capture_output=True, text=True, timeout=max(seconds, 0.001), check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NotCheckedError(f"`az account get-access-token` did not finish ({type(err).__name__})") from None
    if done.returncode != 0:
        said = [line.strip() for line in (done.stderr or done.stdout or "").splitlines() if line.strip()]
        raise NotCheckedError(
            f"`az account get-access-token` failed: {bounded((said or ['no message'])[-1])} (az login)"
        )
    try:
        answer = obj(json.loads(done.stdout))
    except ValueError:
        raise NotCheckedError("`az account get-access-token` did not print JSON") from None
    token, sub = text(answer.get("accessToken")), subscription or text(answer.get("subscription"))
    if not token:
        raise NotCheckedError("`az account get-access-token` gave no token")
    if not sub:
        raise NotCheckedError("no Azure subscription is known (az account set --subscription)")
    return LiveArm(token, endpoint, budget=budget, deadline=deadline), sub


def managed_cluster_path(subscription: str, resource_group: str, cluster: str) -> str:
    """An AKS cluster's resource id, as Azure writes it (LiveArm quotes it for the URL)."""
    return (
        f"/subscriptions/{subscription}/resourceGroups/{resource_group}"
        f"/providers/Microsoft.ContainerService/managedClusters/{cluster}"
    )


@dataclass
class AgentPoolReader:
    """One AKS cluster's agent pools in ARM, one GET each (gpu-provisioner names each after its
    NodeClaim: pkg/providers/instance/instance.go:79@v0.4.3)."""

    arm: ArmReader
    subscription: str
    resource_group: str
    cluster: str

    def agent_pool(self, name: str) -> dict[str, Any] | None:
        """The agent pool's ARM resource (its shape at MANAGED_CLUSTER_API); None when there is none
        of that name. Raises ArmError when ARM cannot be read. (The name comes from the cluster:
        quoted, it cannot reach another path.)"""
        path = managed_cluster_path(self.subscription, self.resource_group, self.cluster)
        try:
            return self.arm.get(f"{path}/agentPools/{urllib.parse.quote(name, safe='')}", MANAGED_CLUSTER_API)
        except ArmError as err:
            if err.status == 404:
                return None
            raise
