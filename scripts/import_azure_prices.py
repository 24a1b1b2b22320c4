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
sys.path.insert(0, str(ROOT / "components"))
from kaito_aks.catalog.retail_prices import prices_from_items  # noqa: E402

SOURCE = "Azure Retail Prices API (prices.azure.com/api/retail/prices)"


def import_prices(exports: list[dict[str, Any]], known: set[str], region: str | None) -> dict[str, dict[str, Any]]:
    """{region: {vmSize: {usdPerHour, effectiveDate, source}}} from API pages, by the library's rule
    for which meter is a Linux pay-as-you-go one (kaito_aks.catalog.retail_prices.meter_kind); the newest
    meter wins."""
    items = [item for page in exports for item in page.get("Items", [])]
    out: dict[str, dict[str, Any]] = {}
    for where, sizes in prices_from_items(items, read_on="").items():
        if region and where != region:
            continue
        for size, price in sizes.items():
            if size in known:
                out.setdefault(where, {})[size] = {
                    "usdPerHour": price.usd_per_hour,
                    "effectiveDate": price.effective_date,
                    "source": SOURCE,
                }
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
