"""Prices read online from the Azure Retail Prices API (recorded items served here over HTTP,
filtered and paged as the API does: no network in tests), cached with their date, and used
offline; what nobody priced is "unpriced" with how to price it, never 0."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import yaml

from hostile_api import raw
from kaito_aks.catalog.retail_prices import (
    HOW_TO_PRICE,
    SOURCE,
    meter_kind,
    prices_from_items,
    read_cache,
)
from stacks.cli import ORDER, main

ROOT = Path(__file__).resolve().parent.parent
ITEMS: list[dict[str, Any]] = yaml.safe_load(
    (ROOT / "components" / "tests" / "data" / "retail_prices.yaml").read_text()
)["Items"]
PAGE = 5


@pytest.fixture
def retail_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The recorded items behind a local Retail Prices API; KAITO_AKS_RETAIL_PRICES_URL points at it."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            query = parse_qs(urlsplit(self.path).query)
            where = query.get("$filter", [""])[0]
            region = re.search(r"armRegionName eq '([^']+)'", where)
            sizes = set(re.findall(r"armSkuName eq '([^']+)'", where))
            kept = [
                i
                for i in ITEMS
                if (region is None or i["armRegionName"] == region.group(1))
                and (not sizes or i["armSkuName"] in sizes)
                and ("priceType eq 'Consumption'" not in where or i["type"] == "Consumption")
            ]
            skip = int(query.get("$skip", ["0"])[0])
            host = f"http://127.0.0.1:{self.server.server_address[1]}"
            more = skip + PAGE < len(kept)
            following = urlencode({"$filter": where, "$skip": skip + PAGE})
            link = f"{host}/api/retail/prices?{following}" if more else None
            body = {
                "BillingCurrency": "USD",
                "CustomerEntityId": "Default",
                "CustomerEntityType": "Retail",
                "Items": kept[skip : skip + PAGE],
                "NextPageLink": link,
                "Count": len(kept[skip : skip + PAGE]),
            }
            raw(200, json.dumps(body).encode())(self)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("KAITO_AKS_RETAIL_PRICES_URL", f"http://127.0.0.1:{server.server_address[1]}/api/retail/prices")
    yield seen
    server.shutdown()
    server.server_close()


def test_only_linux_pay_as_you_go_and_spot_meters_count_and_the_newest_wins() -> None:
    kinds = [meter_kind(i) for i in ITEMS[:5]]  # one size's: Linux, Windows, Low Priority, Spot, reservation
    assert kinds == ["payg", None, None, "spot", None]
    prices = prices_from_items(ITEMS, "2026-11-30")["eastus2"]
    a10 = prices["Standard_NV36ads_A10_v5"]
    assert (a10.usd_per_hour, a10.spot_usd_per_hour, a10.effective_date) == (3.2, 0.64, "2025-10-01")
    assert prices["Standard_NC40ads_H100_v5"].spot_usd_per_hour is None  # no Spot meter: none, not 0


def test_estimate_online_ranks_by_price_with_the_date_and_caches_them(
    retail_api: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "estimate", "llama-3.3-70b-instruct", "--region", "eastus2", "--online", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    priced = [(o["sku"], o["nodes"], o["usdPerHour"]) for o in answer["options"] if o["usdPerHour"] is not None]
    assert priced == [
        ("Standard_NC24ads_A100_v4", 3, 11.019),
        ("Standard_NC40ads_H100_v5", 2, 13.96),
        ("Standard_NC96ads_A100_v4", 1, 14.692),
        ("Standard_NC48ads_A100_v4", 2, 14.692),
        ("Standard_NV36ads_A10_v5", 9, 28.8),
        ("Standard_NV72ads_A10_v5", 5, 32.6),
        ("Standard_ND96isr_H100_v5", 1, 98.32),
    ]  # the cheapest fit first; at one price, fewer nodes first
    assert answer["options"][: len(priced)] == [o for o in answer["options"] if o["usdPerHour"] is not None]
    first = answer["options"][0]
    assert first["usdPerMonth"] == round(11.019 * 730, 2)
    assert first["spotUsdPerHour"] == round(3 * 0.7346, 4)
    assert first["priceSource"].startswith(f"{SOURCE}, eastus2, read 20")
    assert answer["order"] == ORDER
    assert "Standard_ND96isr_H200_v5" in answer["prices"]["unpriced"]  # not in the recorded answers
    assert len(retail_api) >= 3, retail_api  # two filters of at most 10 sizes, and their next pages
    cached = read_cache("eastus2")
    assert cached["Standard_NC24ads_A100_v4"].read_on == first["priceSource"].rsplit("read ", 1)[1]
    # offline now: the same prices, from the cache, with the date they were read
    assert main(["models", "estimate", "llama-3.3-70b-instruct", "--region", "eastus2"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "Standard_NC24ads_A100_v4" in x)
    assert "11.02" in line
    assert "8,044" in line
    assert f"pay-as-you-go Linux, 730-hour month: {SOURCE}, read 20" in out


def test_offline_without_a_cache_every_price_is_unpriced_with_how_to_price(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "estimate", "phi-4-mini-instruct", "--region", "eastus2"]) == 0
    out = capsys.readouterr().out
    assert " 0.00 " not in out
    assert "unpriced in eastus2: " in out
    assert HOW_TO_PRICE in out


def test_the_stack_cost_file_carries_the_source_and_date_and_no_zero(
    retail_api: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 36: render/dev/cost.yaml said gpuPoolsUsdPerHour {min: 0.0, max: 0.0} with no prices."""
    assert main(["render", "dev", "--out", str(tmp_path / "before")]) == 0
    before = yaml.safe_load((tmp_path / "before" / "dev" / "cost.yaml").read_text())
    assert before["usdPerHour"] is None
    assert before["usdPerMonth"] is None
    assert before["unpriced"] == ["Standard_D4s_v5", "Standard_NV36ads_A10_v5"]
    assert before["howToPrice"] == HOW_TO_PRICE
    assert all(line["usdPerHour"] is None for line in before["lines"])
    capsys.readouterr()
    assert main(["validate", "dev", "--online"]) == 0  # reads the prices (no Azure CLI here: quota not checked)
    out = capsys.readouterr().out
    assert "dev: prices read online from Azure Retail Prices API" in out
    assert "dev: quota not checked: " in out
    assert "VMs $6.98/h, $5,092/month in eastus2 (Azure Retail Prices API, read 20" in out, out
    assert main(["render", "dev", "--out", str(tmp_path / "after")]) == 0
    after = yaml.safe_load((tmp_path / "after" / "dev" / "cost.yaml").read_text())
    assert after["usdPerHour"] == {"min": 6.976, "max": 6.976}  # 2 A10 + 2 system + 1 CPU node
    assert after["sources"][0].startswith(f"{SOURCE}, read 20")
    assert after["unpriced"] == []


def test_a_spot_pool_whose_spot_price_is_unknown_is_unpriced_as_spot() -> None:
    """Its pay-as-you-go price is known, its Spot price is not: said so, never counted as either."""
    from kaito_aks.catalog.retail_prices import VmPrice
    from stacks.cost import CostLine, StackCost

    known = VmPrice("Standard_NV36ads_A10_v5", "eastus2", 3.2, None, "2026-01-01", "2026-01-01", "test")
    cost = StackCost("eastus2", [CostLine("GPU pool spot", known.size, 1, 2, spot=True, price=known)])
    assert cost.unpriced == ["Standard_NV36ads_A10_v5 (Spot)"]
    assert cost.total() is None
    assert cost.summary().startswith("cost unknown in eastus2: Standard_NV36ads_A10_v5 (Spot) unpriced")
