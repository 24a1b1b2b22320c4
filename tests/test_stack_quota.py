"""The stack program checks Azure's quota and VM sizes before it registers anything (what
`pulumi preview` runs), here with recorded Azure Resource Manager answers given to the mocks;
without answers (the render, tests) it says it did not check."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaito_aks.testing import MOCK_SUBSCRIPTION
from stacks.errors import StackConfigError
from stacks.evaluate import ProgramMocks, RecordingMonitor, evaluate
from stacks.load import parse_stack_file
from stacks.quota import vm_demands
from stacks.stackfile import read_stack_file

ROOT = Path(__file__).resolve().parent.parent
ANSWERS: dict[str, Any] = yaml.safe_load((ROOT / "components" / "tests" / "data" / "arm_answers.yaml").read_text())
USAGES = f"/subscriptions/{MOCK_SUBSCRIPTION}/providers/Microsoft.Compute/locations/eastus2/usages"


def dev_config(**changes: Any) -> dict[str, Any]:
    config = dict(read_stack_file("dev", ROOT).config)
    config.update(changes)
    return config


def preview(config: dict[str, Any], arm: dict[str, Any] | None = ANSWERS) -> RecordingMonitor:
    monitor = RecordingMonitor(ProgramMocks(arm=arm))
    evaluate(config, stack="dev", monitor=monitor)
    return monitor


def test_the_dev_stack_needs_its_pools_at_their_most_with_an_upgrades_surge() -> None:
    demands = vm_demands(parse_stack_file(read_stack_file("dev", ROOT)))
    assert [(d.what, d.vm_size, d.nodes, d.surge, d.path) for d in demands] == [
        ("the system pool", "Standard_D4s_v5", 2, 1, ("cluster", "aks", "system_pool", "vm_size")),
        ("CPU pool cpu", "Standard_D4s_v5", 1, 1, ("cpuNodePools", 0, "vm_size")),
        ("GPU pool gpu", "Standard_NV36ads_A10_v5", 2, 1, ("gpuNodePools", 0, "vm_size")),
    ]


def test_a_family_short_of_quota_stops_the_preview_before_anything_is_registered() -> None:
    monitor = RecordingMonitor(ProgramMocks(arm=with_limit("standardNVADSA10v5Family", 36)))
    with pytest.raises(StackConfigError) as err:
        evaluate(dev_config(), stack="dev", monitor=monitor)
    assert monitor.registrations == [], "resources were registered before the quota refusal"
    (line,) = err.value.lines
    assert line.startswith(
        "gpuNodePools[0].vmSize: Standard NVADSA10v5 Family vCPUs in eastus2: the stack needs 72 (GPU pool gpu: 2 x "
        "Standard_NV36ads_A10_v5), the quota is 36 and 0 are used: 36 short (72 with an upgrade's 36 surge). Ask "
        "for 108 or more: az quota create "
    ), line


def test_a_family_short_only_for_an_upgrades_surge_is_warned_and_the_preview_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The recorded quota of 72 holds dev's two A10 nodes but not the third an upgrade adds: the
    VMs can all run, so the stack is not refused (it was before: an unchanged deployed stack with
    exactly its nodes' quota would have been stopped); its upgrades would fail, which is said."""
    with caplog.at_level(logging.INFO):
        monitor = preview(dev_config(), arm=ANSWERS)
    assert monitor.registrations
    (warned,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "surge" in r.getMessage()]
    assert warned.startswith(
        "gpuNodePools[0].vmSize: Standard NVADSA10v5 Family vCPUs in eastus2: the stack needs 72 (GPU pool gpu: 2 x "
        "Standard_NV36ads_A10_v5), the quota is 72 and 0 are used, which fits, but an upgrade's surge nodes add 36: "
        "36 short then, so AKS's node image and Kubernetes upgrades of these pools fail (or lower the pools' "
        "maxSurge). Ask for 108 or more"
    ), warned


def with_limit(family: str, limit: int) -> dict[str, Any]:
    """The recorded answers with the subscription's quota of `family` in eastus2 raised to `limit`."""
    answers = copy.deepcopy(ANSWERS)
    for usage in answers[USAGES]["value"]:
        if usage["name"]["value"] == family:
            usage["limit"] = limit
    return answers


def test_a_stack_within_its_quota_previews_and_says_what_was_checked(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        monitor = preview(dev_config(), arm=with_limit("standardNVADSA10v5Family", 108))
    assert monitor.registrations
    said = " ".join(r.getMessage() for r in caplog.records)
    assert (
        "quota in eastus2 checked: cores 128/342 vCPUs free, standardDSv5Family 20/92 vCPUs free, "
        "standardNVADSA10v5Family 108/108 vCPUs free (a new cluster)"
    ) in said, said


def test_a_size_the_region_lacks_is_refused_with_the_regions_that_have_it() -> None:
    pools = [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 1, "gpuDriver": "operator"}]
    with pytest.raises(StackConfigError) as err:
        preview(dev_config(**{"kaito-aks:gpuNodePools": pools, "kaito-aks:ragEngines": []}))
    (line,) = [x for x in err.value.lines if "H100" in x and "nearest" in x]
    assert line.endswith("nearest regions that offer it to this subscription: eastus, southcentralus, westus3"), line


def test_offline_nothing_is_read_and_the_stack_says_it_did_not_check(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        monitor = preview(dev_config(), arm=None)
    assert monitor.registrations
    assert "quota not checked: offline (the mock engine, no Azure)" in caplog.text


def test_an_azure_that_does_not_answer_is_a_warning_with_the_rights_to_read_and_the_preview_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        monitor = preview(dev_config(), arm={**ANSWERS, USAGES: 403})
    assert monitor.registrations
    (said,) = [r for r in caplog.records if "quota not checked" in r.getMessage()]
    assert said.levelno == logging.WARNING
    assert said.getMessage() == (
        f"quota not checked: Azure answered 403 (recorded): {USAGES}: the deployment goes on unchecked; reading "
        "needs Microsoft.Compute/locations/usages/read, Microsoft.Compute/skus/read and "
        "Microsoft.Resources/subscriptions/locations/read (the Reader role on the subscription has them)"
    )


def test_what_the_quota_is_checked_against_is_what_the_cost_file_prices(tmp_path: Path) -> None:
    """One list of the stack's VMs for both: a RAG engine's node KAITO makes is checked and
    priced (the cost file left it out), at its fewest and most nodes and with a pool's surge."""
    from stacks.cost import cost_lines

    config = dict(read_stack_file("auto", ROOT).config)
    config["kaito-aks:ragEngines"] = [
        {
            "name": "docs-rag",
            "workspace": "phi-4-mini",
            "contextWindowSize": 4096,
            "compute": {"instanceType": "Standard_NC24ads_A100_v4", "labelSelector": {"matchLabels": {"apps": "r"}}},
        }
    ]
    (tmp_path / "Pulumi.auto.yaml").write_text(yaml.safe_dump({"config": config}))
    (tmp_path / "Pulumi.yaml").write_text("name: kaito-aks\nruntime: python\n")
    cfg = parse_stack_file(read_stack_file("auto", tmp_path))
    demands = [(d.what, d.vm_size) for d in vm_demands(cfg)]
    priced = [(c.what, c.vm_size) for c in cost_lines(cfg)]
    assert demands == priced
    assert ("RAG engine default/docs-rag (KAITO's node)", "Standard_NC24ads_A100_v4") in priced
    system = next(c for c in cost_lines(cfg) if c.what == "the system pool")
    assert (system.min_nodes, system.max_nodes) == (2, 2)  # no surge in the price: it runs during upgrades only
    system_demand = next(d for d in vm_demands(cfg) if d.what == "the system pool")
    assert system_demand.nodes + system_demand.surge == 3
