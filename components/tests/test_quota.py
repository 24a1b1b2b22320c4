"""The capacity check against recorded Azure Resource Manager answers (components/tests/data/
arm_answers.yaml, in ARM's shapes): a family short of quota is refused with the numbers and the
request command, a size the region lacks (or restricts for the subscription) names the nearest
regions that offer it, and what the deployment already runs is not counted twice."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from hostile_api import huge, raw, redirect
from kaito_aks.azure.arm import MANAGED_CLUSTER_API, ArmError, LiveArm, RecordedArm
from kaito_aks.azure.quota import VmDemand, capacity_verdict, surge_nodes
from kaito_aks.testing import MOCK_SUBSCRIPTION

ANSWERS: dict[str, Any] = yaml.safe_load((Path(__file__).parent / "data" / "arm_answers.yaml").read_text())
SUB = MOCK_SUBSCRIPTION
A10 = "Standard_NV36ads_A10_v5"
H100 = "Standard_ND96isr_H100_v5"
D4 = "Standard_D4s_v5"
CLUSTER = f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks"


def recorded(**more: Any) -> RecordedArm:
    return RecordedArm({k.lower(): v for k, v in {**ANSWERS, **more}.items()})


def test_surge_is_a_count_or_a_percentage_rounded_up_at_least_one() -> None:
    assert surge_nodes(None, 2) == 1  # AKS's 10%, at least one
    assert surge_nodes("33%", 2) == 1
    assert surge_nodes("50%", 5) == 3
    assert surge_nodes("2", 9) == 2


def test_a_family_short_of_quota_is_refused_with_the_numbers_and_the_request() -> None:
    demands = [VmDemand("the system pool", D4, 3, path=("system",)), VmDemand("GPU pool gpu", A10, 3, path=("gpu",))]
    verdict = capacity_verdict(demands, "eastus2", recorded(), SUB)
    (problem,) = verdict.problems
    assert problem.code == "quota-short"
    assert problem.path == ("gpu",)
    assert problem.message.startswith(
        "Standard NVADSA10v5 Family vCPUs in eastus2: the stack needs 108 (GPU pool gpu: 3 x Standard_NV36ads_A10_v5), "
        "the quota is 72 and 0 are used: 36 short. Ask for 108 or more: az quota create --resource-name "
        f"standardNVADSA10v5Family --scope /subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus2 "
        "--limit-object value=108 --resource-type dedicated"
    ), problem.message
    by_name = {f.name: f for f in verdict.families}
    assert (by_name["standardDSv5Family"].needed, by_name["standardDSv5Family"].free) == (12, 92)
    assert by_name["cores"].needed == 120  # every non-Spot vCPU counts against the regional total too


def test_spot_nodes_count_against_the_spot_vcpus_not_their_family() -> None:
    verdict = capacity_verdict([VmDemand("GPU pool spot", A10, 2, spot=True)], "eastus2", recorded(), SUB)
    assert verdict.problems == []
    assert [(f.name, f.needed) for f in verdict.families] == [("lowPriorityCores", 72)]


def test_a_size_the_region_restricts_names_the_nearest_regions_that_offer_it() -> None:
    arm = recorded()
    verdict = capacity_verdict([VmDemand("GPU pool h100", H100, 1, path=("h100",))], "eastus2", arm, SUB)
    (problem,) = verdict.problems
    assert problem.code == "vm-size-unavailable"
    assert problem.message == (
        "Standard_ND96isr_H100_v5 is restricted for this subscription in eastus2 (NotAvailableForSubscription): "
        "GPU pool h100; nearest regions that offer it to this subscription: eastus, southcentralus, westus3"
    )
    # the nearest first, and no further than needed: centralus (no H100) was read, westeurope not
    skus_read = [c for c in arm.calls if "/skus" in c]
    assert len(skus_read) == 1 + 4, arm.calls


def test_a_size_no_region_near_offers_says_so() -> None:
    verdict = capacity_verdict([VmDemand("GPU pool x", "Standard_NC40ads_H100_v5", 1)], "eastus2", recorded(), SUB)
    (problem,) = verdict.problems
    assert "is not offered in eastus2" in problem.message
    assert "none of the 12 nearest regions offers it" in problem.message


def test_a_size_the_region_lacks_is_refused_even_when_the_other_regions_cannot_be_read() -> None:
    verdict = capacity_verdict(
        [VmDemand("GPU pool h100", H100, 1, path=("h100",))],
        "eastus2",
        recorded(**{f"/subscriptions/{SUB}/locations": 403}),
        SUB,
    )
    (problem,) = verdict.problems
    assert problem.message.endswith(
        f"GPU pool h100; the regions that offer it could not be read (403 (recorded): /subscriptions/{SUB}/locations)"
    ), problem.message


def test_what_the_deployment_already_runs_is_not_counted_twice() -> None:
    """An A10 pool of 2 already running (72 vCPUs used, all ours): growing it to 3 nodes plus a
    surge needs 144, and the quota of 72 is then 72 short, not 144."""
    usages_path = f"/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus2/usages"
    usages = json.loads(json.dumps(ANSWERS[usages_path]))
    for u in usages["value"]:
        if u["name"]["value"] == "standardNVADSA10v5Family":
            u["currentValue"] = 72
    cluster = {
        "name": "aks",
        "properties": {
            "nodeResourceGroup": "MC_rg_aks_eastus2",
            "agentPoolProfiles": [
                {"name": "system", "vmSize": D4, "count": 2, "mode": "System"},
                {"name": "gpu", "vmSize": A10, "count": 2, "mode": "User"},
            ],
        },
    }
    arm = recorded(**{usages_path: usages, CLUSTER: cluster})
    verdict = capacity_verdict([VmDemand("GPU pool gpu", A10, 4)], "eastus2", arm, SUB, cluster=("rg", "aks"))
    (problem,) = verdict.problems
    assert "the stack needs 144" in problem.message
    assert "72 are used, 72 of them this deployment's own" in problem.message
    assert "72 short" in problem.message
    assert f"GET {CLUSTER}?api-version={MANAGED_CLUSTER_API}" in arm.calls


def test_a_new_cluster_runs_nothing_yet() -> None:
    verdict = capacity_verdict([VmDemand("GPU pool gpu", A10, 2)], "eastus2", recorded(), SUB, cluster=("rg", "aks"))
    assert verdict.problems == []
    assert verdict.note == "a new cluster"


@pytest.fixture
def arm_server() -> Iterator[tuple[str, list[str]]]:
    """The recorded answers served over HTTP as ARM serves them (a page and its nextLink)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            url = urlsplit(self.path)
            if url.path == "/moved":  # a redirect elsewhere, which would take the token along
                redirect("http://attacker.example/steal")(self)
                return
            if url.path == "/huge":  # more than the client reads
                huge(64 * 2**20, declare=True)(self)
                return
            if self.headers.get("Authorization") != "Bearer t0ken":
                self._send(401, {"error": {"code": "InvalidAuthenticationToken", "message": "no"}})
                return
            answer = ANSWERS.get(url.path)
            if answer is None:
                self._send(404, {"error": {"code": "NotFound", "message": url.path}})
                return
            items = answer["value"]
            if "page=2" in url.query:
                self._send(200, {"value": items[1:]})
            else:
                host = f"http://127.0.0.1:{self.server.server_address[1]}"
                self._send(200, {"value": items[:1], "nextLink": f"{host}{url.path}?{url.query}&page=2"})

        def _send(self, status: int, body: Any) -> None:
            raw(status, json.dumps(body).encode())(self)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_the_live_reader_sends_the_token_follows_next_links_and_reports_arms_errors(
    arm_server: tuple[str, list[str]],
) -> None:
    endpoint, seen = arm_server
    arm = LiveArm("t0ken", endpoint)
    usages = arm.list(f"/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus2/usages", "2024-07-01")
    assert len(usages) == len(
        ANSWERS[f"/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus2/usages"]["value"]
    )
    assert len(seen) == 2
    assert "api-version=2024-07-01" in seen[0]
    with pytest.raises(ArmError) as err:
        LiveArm("wrong", endpoint).get(f"/subscriptions/{SUB}/locations", "2022-12-01")
    assert err.value.status == 401
    assert "InvalidAuthenticationToken" in str(err.value)
    with pytest.raises(ArmError) as err:
        LiveArm("t0ken", "http://127.0.0.1:1").get("/x", "1")
    assert err.value.status == 0


def test_the_token_goes_to_arm_alone_and_is_never_shown(arm_server: tuple[str, list[str]]) -> None:
    """A next page on another host is not followed with the token, and the reader's repr (in a
    traceback, a log) does not carry it."""
    endpoint, _ = arm_server
    assert "t0ken" not in repr(LiveArm("t0ken", endpoint))
    with pytest.raises(ArmError) as err:  # every page, a nextLink too, is read through _get_url
        LiveArm("t0ken", endpoint)._get_url("https://attacker.example/steal?page=2")
    assert str(err.value) == f"a next page outside {endpoint} (attacker.example): not read"


def test_arm_is_read_with_the_cluster_clients_guarantees(arm_server: tuple[str, list[str]]) -> None:
    """No redirect is followed (the token would go along), and an answer larger than the client
    reads is refused before it is read: the transport of kaito_aks.waits.kube_client."""
    endpoint, seen = arm_server
    with pytest.raises(ArmError) as err:
        LiveArm("t0ken", endpoint).get("/moved", "1")
    assert err.value.status == 302
    assert str(err.value) == (
        "302 Azure Resource Manager redirects GET /moved?api-version=1 to http://attacker.example/steal; kaito-aks "
        f"follows no redirect (the credentials go to {endpoint} only)"
    )
    with pytest.raises(ArmError) as err:
        LiveArm("t0ken", endpoint).get("/huge", "1")
    assert str(err.value) == (
        "Azure Resource Manager's answer to GET /huge?api-version=1 is larger than 32 MiB, which kaito-aks does not read"
    )
    assert seen == ["/moved?api-version=1", "/huge?api-version=1"]


class _Az:
    """An `az` on PATH whose run (`run`, given to az_cli_reader) answers `code`, `out` and `err`,
    and what it was run with (its command, its timeout)."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int = 0, out: str = "", err: str = ""):
        (tmp_path / "az").write_text("#!/bin/sh\n")
        (tmp_path / "az").chmod(0o755)
        monkeypatch.setenv("PATH", str(tmp_path))
        self.answer = (code, out, err)
        self.ran: list[tuple[list[str], float]] = []

    def run(self, command: list[str], **kw: Any) -> Any:
        from subprocess import CompletedProcess

        self.ran.append((command[1:], kw["timeout"]))
        return CompletedProcess(command, *self.answer)


def test_the_azure_clis_token_is_for_the_clouds_arm_and_its_subscription_the_stacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaito_aks.azure.arm import az_cli_reader

    az = _Az(tmp_path, monkeypatch, out=json.dumps({"accessToken": "t0ken", "subscription": "the-clis"}))
    arm, sub = az_cli_reader(run=az.run)
    assert (arm.token, arm.endpoint, sub) == ("t0ken", "https://management.azure.com", "the-clis")
    arm, sub = az_cli_reader(SUB, "usgovernment", run=az.run)
    assert (arm.endpoint, sub) == ("https://management.usgovernmentcloudapi.net", SUB)
    assert [command for command, _ in az.ran] == [
        ["account", "get-access-token", "--resource", "https://management.azure.com/", "--output", "json"],
        [
            "account", "get-access-token", "--resource", "https://management.usgovernmentcloudapi.net/",
            "--output", "json", "--subscription", SUB,
        ],
    ]  # fmt: skip
    assert "t0ken" not in repr(arm)


@pytest.mark.parametrize(
    ("code", "out", "err", "said"),
    [
        (
            1,
            "",
            "WARNING: a newer az\nERROR: Please run 'az login' to setup account.\n",
            "`az account get-access-token` failed: ERROR: Please run 'az login' to setup account. (az login)",
        ),
        (0, "not json", "", "`az account get-access-token` did not print JSON"),
        (0, json.dumps({"subscription": SUB}), "", "`az account get-access-token` gave no token"),
        (0, json.dumps({"accessToken": "t"}), "", "no Azure subscription is known (az account set --subscription)"),
    ],
)
def test_without_a_login_the_azure_cli_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, out: str, err: str, said: str
) -> None:
    from kaito_aks.azure.arm import NotCheckedError, az_cli_reader

    az = _Az(tmp_path, monkeypatch, code, out, err)
    with pytest.raises(NotCheckedError) as why:
        az_cli_reader(run=az.run)
    assert str(why.value) == said


def test_without_the_azure_cli_and_past_a_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from kaito_aks.azure.arm import NotCheckedError, az_cli_reader

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NotCheckedError) as why:
        az_cli_reader()
    assert str(why.value) == "the Azure CLI (az) is not on PATH"
    az = _Az(tmp_path, monkeypatch, out=json.dumps({"accessToken": "t", "subscription": SUB}))
    arm, _ = az_cli_reader(deadline=time.monotonic() + 5, run=az.run)
    assert az.ran[0][1] <= 5, "the CLI is bounded by the caller's deadline"
    assert arm.deadline is not None


def test_the_check_takes_at_most_its_time_budget(arm_server: tuple[str, list[str]]) -> None:
    endpoint, seen = arm_server
    arm = LiveArm("t0ken", endpoint, budget=0.0)
    with pytest.raises(ArmError) as err:
        arm.get(f"/subscriptions/{SUB}/locations", "2022-12-01")
    assert str(err.value) == f"reading {endpoint} took longer than 0 s (1 calls)"
    assert seen == [], "a call was made past the budget"


def test_in_a_program_arm_is_read_with_azure_natives_token_at_its_clouds_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a real `pulumi preview` does (azure-native's invokes stood in for): the token and the
    subscription from the provider, ARM's endpoint from its `environment`."""
    from types import SimpleNamespace

    import pulumi
    from pulumi_azure_native import authorization

    from kaito_aks.azure.arm import arm_reader

    monkeypatch.setattr(authorization, "get_client_config", lambda: SimpleNamespace(subscription_id=SUB))
    monkeypatch.setattr(authorization, "get_client_token", lambda: SimpleNamespace(token="t0ken"))
    monkeypatch.setattr(pulumi.Config, "get", lambda self, key: "usgovernment" if key == "environment" else None)
    monkeypatch.delenv("KAITO_AKS_ARM_ENDPOINT", raising=False)
    arm, subscription = arm_reader()
    assert subscription == SUB
    assert isinstance(arm, LiveArm)
    assert (arm.token, arm.endpoint) == ("t0ken", "https://management.usgovernmentcloudapi.net")


def test_a_family_that_holds_the_nodes_but_not_an_upgrades_surge_is_warned_not_refused() -> None:
    """Two A10 nodes fit the recorded quota of 72; the third an upgrade adds does not."""
    from kaito_aks import policy

    verdict = capacity_verdict([VmDemand("GPU pool gpu", A10, 2, path=("gpu",), surge=1)], "eastus2", recorded(), SUB)
    (problem,) = verdict.problems
    assert (problem.code, policy.is_warning(problem)) == ("quota-surge", True)
    assert "which fits, but an upgrade's surge nodes add 36: 36 short then" in problem.message
    short = capacity_verdict([VmDemand("GPU pool gpu", A10, 3, path=("gpu",), surge=1)], "eastus2", recorded(), SUB)
    (refused,) = short.problems
    assert (refused.code, policy.is_warning(refused)) == ("quota-short", False)
    assert "36 short (72 with an upgrade's 36 surge). Ask for 144 or more" in refused.message
