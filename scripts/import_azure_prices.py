#!/usr/bin/env python3
"""Refresh kaito_aks/catalog/azure_prices.yaml from exports of the Azure Retail Prices API.

    curl -s "https://prices.azure.com/api/retail/prices?\\$filter=serviceName eq 'Virtual Machines' \\
      and armRegionName eq 'eastus' and priceType eq 'Consumption'" > eastus.json   # each page
    python scripts/import_azure_prices.py eastus*.json [--region eastus]

Only Linux pay-as-you-go meters of the GPU sizes in kaito_aks/catalog/azure_gpu_skus.yaml are kept
(no Spot, Low Priority, Windows or reservations); prices already in the file for other regions
or sizes stay.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "components" / "kaito_aks" / "catalog"
SOURCE = "Azure Retail Prices API (prices.azure.com/api/retail/prices)"


def linux_on_demand(item: dict[str, Any]) -> bool:
    names = f"{item.get('skuName', '')} {item.get('meterName', '')}"
    return (
        item.get("serviceName") == "Virtual Machines"
        and item.get("type") == "Consumption"
        and item.get("currencyCode") == "USD"
        and item.get("unitOfMeasure") == "1 Hour"
        and "Windows" not in item.get("productName", "")
        and "Spot" not in names
        and "Low Priority" not in names
    )


def import_prices(exports: list[dict[str, Any]], known: set[str], region: str | None) -> dict[str, dict[str, Any]]:
    """{region: {vmSize: {usdPerHour, effectiveDate, source}}} from API pages; the newest meter wins."""
    out: dict[str, dict[str, Any]] = {}
    for page in exports:
        for item in page.get("Items", []):
            size, where = item.get("armSkuName"), item.get("armRegionName")
            if size not in known or not linux_on_demand(item) or (region and where != region):
                continue
            date = str(item.get("effectiveStartDate", ""))[:10]
            current = out.setdefault(where, {}).get(size)
            if current is None or date > current["effectiveDate"]:
                out[where][size] = {"usdPerHour": float(item["retailPrice"]), "effectiveDate": date, "source": SOURCE}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="+", type=Path, help="JSON pages saved from the Retail Prices API")
    parser.add_argument("--region", help="keep one armRegionName only (e.g. eastus)")
    parser.add_argument("--out", type=Path, default=CATALOG / "azure_prices.yaml")
    args = parser.parse_args(argv)
    known = set(yaml.safe_load((CATALOG / "azure_gpu_skus.yaml").read_text())["skus"])
    try:
        pages = [json.loads(p.read_text()) for p in args.exports]
    except (OSError, json.JSONDecodeError) as err:
        print(f"import_azure_prices: {err}", file=sys.stderr)
        return 1
    found = import_prices(pages, known, args.region)
    if not found:
        print("import_azure_prices: no Linux on-demand price of a known GPU size in these files", file=sys.stderr)
        return 1
    text = args.out.read_text() if args.out.exists() else ""
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    data = (yaml.safe_load(text) or {}).get("prices") or {}
    for where, sizes in found.items():
        data.setdefault(where, {}).update(sizes)
    ordered = {w: dict(sorted(data[w].items())) for w in sorted(data)}
    args.out.write_text(header + yaml.safe_dump({"prices": ordered}, sort_keys=False, width=120))
    print(f"{sum(len(v) for v in found.values())} price(s) written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
