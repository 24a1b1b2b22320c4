"""What Azure VM sizes cost, from the Azure Retail Prices API, with the date they were read.

The API (GET https://prices.azure.com/api/retail/prices, unversioned GA; public, no credentials)
answers `{"BillingCurrency", "Items": [...], "NextPageLink", "Count"}` for an OData `$filter` on
`serviceName`, `armRegionName`, `armSkuName` and `priceType`; pages of at most 100 items follow
each other through `NextPageLink`. A VM size has one Linux pay-as-you-go meter per region (its
`skuName` plain, e.g. "NC24ads A100 v4"), a Spot meter ("... Spot") and a Low Priority one,
each a separate item, besides the Windows ones (`productName` "... Windows").

Prices read online are cached with their date outside the checkout
($KAITO_AKS_PRICE_CACHE, else $XDG_CACHE_HOME/kaito-aks/prices, else ~/.cache/kaito-aks/prices,
one JSON file per region); offline a size's price comes from that cache, else from the committed
catalog (catalog/azure_prices.yaml, refreshed by scripts/import_azure_prices.py), else it is
unpriced: never 0, never guessed."""

from __future__ import annotations

import datetime
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaito_aks.parsed import is_dict, is_list

RETAIL_PRICES_URL = "https://prices.azure.com/api/retail/prices"
URL_ENV = "KAITO_AKS_RETAIL_PRICES_URL"  # another endpoint (a proxy, or recorded answers)
CACHE_ENV = "KAITO_AKS_PRICE_CACHE"
SOURCE = "Azure Retail Prices API"
CATALOG_SOURCE = "the committed catalog (components/kaito_aks/catalog/azure_prices.yaml)"
HOURS_PER_MONTH = 730  # Azure's pricing calculator's month
SIZES_PER_REQUEST = 10  # armSkuName alternatives in one $filter (keeps the URL short)
MAX_PAGES = 50
HOW_TO_PRICE = (
    "price it with `python -m stacks models estimate <model> --online` or `python -m stacks validate <stack> "
    "--online` (they read the Azure Retail Prices API, no credentials, and cache the prices), or commit prices "
    "with scripts/import_azure_prices.py"
)


class PricesUnavailableError(Exception):
    """The Retail Prices API could not be read (no network, an error answer)."""


@dataclass(frozen=True)
class VmPrice:
    """The hourly USD prices of one Linux VM size in one region: pay-as-you-go, and Spot where
    Azure sells it (None: no Spot meter)."""

    size: str
    region: str
    usd_per_hour: float
    spot_usd_per_hour: float | None
    effective_date: str  # the meter's effectiveStartDate (YYYY-MM-DD)
    read_on: str  # the date the price was read from the API, or the catalog entry's date
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "usdPerHour": self.usd_per_hour,
            "spotUsdPerHour": self.spot_usd_per_hour,
            "effectiveDate": self.effective_date,
            "readOn": self.read_on,
            "source": self.source,
        }


def _item_text(item: Mapping[str, Any], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def meter_kind(item: Mapping[str, Any]) -> str | None:
    """'payg' for a Linux pay-as-you-go hourly USD meter of a VM, 'spot' for its Spot meter, None
    for anything else (Windows, Low Priority, reservations, DevTest, other currencies)."""
    names = f"{_item_text(item, 'skuName')} {_item_text(item, 'meterName')}"
    if (
        _item_text(item, "serviceName") != "Virtual Machines"
        or _item_text(item, "type") != "Consumption"
        or _item_text(item, "currencyCode") not in ("USD", "")
        or _item_text(item, "unitOfMeasure") != "1 Hour"
        or "Windows" in _item_text(item, "productName")
        or "Low Priority" in names
    ):
        return None
    return "spot" if "Spot" in names else "payg"


def prices_from_items(items: Iterable[Mapping[str, Any]], read_on: str) -> dict[str, dict[str, VmPrice]]:
    """{region: {size: VmPrice}} from Retail Prices items; of several meters of a kind the newest wins."""
    found: dict[tuple[str, str], dict[str, tuple[str, float]]] = {}
    for item in items:
        size, region, kind = _item_text(item, "armSkuName"), _item_text(item, "armRegionName"), meter_kind(item)
        price = item.get("retailPrice")
        if not size or not region or kind is None or not isinstance(price, int | float):
            continue
        date = _item_text(item, "effectiveStartDate")[:10]
        meters = found.setdefault((region, size), {})
        if kind not in meters or date > meters[kind][0]:
            meters[kind] = (date, float(price))
    out: dict[str, dict[str, VmPrice]] = {}
    for (region, size), meters in found.items():
        if "payg" not in meters:
            continue  # Spot alone: no pay-as-you-go price to show
        date, hourly = meters["payg"]
        spot = meters["spot"][1] if "spot" in meters else None
        out.setdefault(region, {})[size] = VmPrice(size, region, hourly, spot, date, read_on, SOURCE)
    return out


def retail_filter(region: str, sizes: Iterable[str]) -> str:
    """The OData filter for the VM meters of `sizes` in `region` (names are Azure's, quoted)."""
    either = " or ".join(f"armSkuName eq '{s}'" for s in sorted(set(sizes)))
    return (
        f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}' and priceType eq 'Consumption' "
        f"and ({either})"
    )


Opener = Callable[[str, float], Any]  # (url, timeout) -> the parsed JSON answer


def _open_json(url: str, timeout: float) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "kaito-aks"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.load(answer)


def endpoint() -> str:
    return os.environ.get(URL_ENV) or RETAIL_PRICES_URL


def fetch_items(
    region: str, sizes: Iterable[str], *, opener: Opener = _open_json, timeout: float = 20.0
) -> list[dict[str, Any]]:
    """Every Retail Prices item of `sizes` in `region`, all pages (PricesUnavailableError when the API
    cannot be read)."""
    wanted = sorted(set(sizes))
    items: list[dict[str, Any]] = []
    for start in range(0, len(wanted), SIZES_PER_REQUEST):
        query = urllib.parse.urlencode({"$filter": retail_filter(region, wanted[start : start + SIZES_PER_REQUEST])})
        url: str | None = f"{endpoint()}?{query}"
        pages = 0
        while url and pages < MAX_PAGES:
            try:
                page = opener(url, timeout)
            except (OSError, ValueError, urllib.error.URLError) as err:
                raise PricesUnavailableError(f"{SOURCE} at {endpoint()} could not be read: {err}") from None
            if not is_dict(page) or not is_list(page.get("Items")):
                raise PricesUnavailableError(f"{SOURCE} answered without Items: {str(page)[:200]}")
            items += [i for i in page["Items"] if is_dict(i)]
            link = page.get("NextPageLink")
            # the link as given, any character a URL cannot carry quoted (existing escapes kept)
            url = urllib.parse.quote(link, safe="%/:=&?~#+!$,;'@()*[]") if isinstance(link, str) and link else None
            pages += 1
    return items


# ---------------------------------------------------------------- the cache


def cache_dir() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kaito-aks" / "prices"


def _cache_file(region: str) -> Path:
    return cache_dir() / f"{region}.json"


def read_cache(region: str) -> dict[str, VmPrice]:
    """The prices cached for `region` (empty when none or unreadable)."""
    try:
        data = json.loads(_cache_file(region).read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, VmPrice] = {}
    entries = data.get("prices") if is_dict(data) else None
    for size, p in (entries or {}).items() if is_dict(entries) else ():
        try:
            spot = p.get("spotUsdPerHour")
            out[size] = VmPrice(
                size,
                region,
                float(p["usdPerHour"]),
                float(spot) if spot is not None else None,
                str(p["effectiveDate"]),
                str(p["readOn"]),
                str(p.get("source") or SOURCE),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def write_cache(region: str, found: Mapping[str, VmPrice]) -> Path:
    """Merge `found` into the region's cache file; returns its path."""
    merged = {**read_cache(region), **found}
    path = _cache_file(region)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"region": region, "prices": {s: p.as_dict() for s, p in sorted(merged.items())}}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True))
    tmp.replace(path)
    return path


# ---------------------------------------------------------------- what a caller asks


@dataclass(frozen=True)
class PriceBook:
    """The prices known for one region: each with its source and date; `unpriced` the sizes asked
    for that none knows; `note` what was read (online, the cache, the catalog) or why not."""

    region: str
    prices: dict[str, VmPrice] = field(default_factory=dict[str, VmPrice])
    unpriced: list[str] = field(default_factory=list[str])
    online: bool = False
    note: str = ""

    def get(self, size: str) -> VmPrice | None:
        return self.prices.get(size)

    def sources(self) -> list[str]:
        """Each source with its dates, e.g. 'Azure Retail Prices API, read 2026-11-30'."""
        dates: dict[str, set[str]] = {}
        for p in self.prices.values():
            dates.setdefault(p.source, set()).add(p.read_on)
        return [f"{s}, {'read ' if s == SOURCE else ''}{', '.join(sorted(d))}" for s, d in sorted(dates.items())]


def catalog_prices(region: str) -> dict[str, VmPrice]:
    """The committed catalog's prices for `region`."""
    from kaito_aks import catalog

    return {
        size: VmPrice(size, region, p.usd_per_hour, None, p.effective_date, p.effective_date, CATALOG_SOURCE)
        for size, p in catalog.prices(region).items()
    }


def price_book(region: str, sizes: Iterable[str], *, online: bool = False, opener: Opener = _open_json) -> PriceBook:
    """The prices of `sizes` in `region`: online read fresh from the Retail Prices API (and cached);
    offline, or where the API cannot be read, from the cache, then the committed catalog."""
    wanted = sorted(set(sizes))
    fresh: dict[str, VmPrice] = {}
    note = ""
    if online and wanted:
        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        try:
            fresh = prices_from_items(fetch_items(region, wanted, opener=opener), today).get(region, {})
            note = f"read online from {SOURCE} ({endpoint()}) on {today}"
            if fresh:
                try:
                    note += f", cached in {write_cache(region, fresh)}"
                except OSError as err:
                    note += f" (not cached: {err})"
        except PricesUnavailableError as err:
            note = f"{err}; offline prices used"
    known = {**catalog_prices(region), **read_cache(region), **fresh}
    prices = {s: known[s] for s in wanted if s in known}
    return PriceBook(region, prices, [s for s in wanted if s not in prices], online, note)
