"""What a stack's VMs cost, per pool and per model (KAITO's nodes), hourly and monthly, from the
prices known for its region (kaito_aks.catalog.retail_prices: read online from the Azure Retail Prices
API and cached, else the cache, else the committed catalog).

A size nobody has priced is named as unpriced, with how to price it; it is never counted as 0,
and a total that would need it is not given. Disks, load balancers and traffic are not counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kaito_aks.catalog.retail_prices import HOURS_PER_MONTH, HOW_TO_PRICE, PriceBook, VmPrice, price_book
from stacks.config import StackConfig
from stacks.quota import stack_region, vm_lines

DEFAULT_REGION = "eastus"


@dataclass(frozen=True)
class CostLine:
    """One pool, or one model's KAITO-made nodes: its size, its fewest and most nodes, its price."""

    what: str
    vm_size: str
    min_nodes: int
    max_nodes: int
    spot: bool = False
    price: VmPrice | None = None

    @property
    def usd_per_node_hour(self) -> float | None:
        if self.price is None:
            return None
        return self.price.spot_usd_per_hour if self.spot else self.price.usd_per_hour

    def as_dict(self) -> dict[str, Any]:
        each = self.usd_per_node_hour
        return {
            "what": self.what,
            "vmSize": self.vm_size,
            "nodes": self.min_nodes if self.min_nodes == self.max_nodes else f"{self.min_nodes}-{self.max_nodes}",
            **({"spot": True} if self.spot else {}),
            "usdPerHour": None if each is None else _span(each * self.min_nodes, each * self.max_nodes),
            "usdPerMonth": None
            if each is None
            else _span(each * self.min_nodes * HOURS_PER_MONTH, each * self.max_nodes * HOURS_PER_MONTH),
            **({"unpriced": True} if each is None else {}),
        }


def _span(low: float, high: float) -> dict[str, float]:
    return {"min": round(low, 4), "max": round(high, 4)}


@dataclass(frozen=True)
class StackCost:
    region: str | None
    lines: list[CostLine] = field(default_factory=list[CostLine])
    book: PriceBook | None = None

    @property
    def unpriced(self) -> list[str]:
        """The sizes without a price; `(Spot)` where only the Spot price is missing."""
        return sorted(
            {
                f"{line.vm_size} (Spot)" if line.spot and line.price is not None else line.vm_size
                for line in self.lines
                if line.usd_per_node_hour is None
            }
        )

    def total(self) -> tuple[float, float] | None:
        """The hourly total (fewest nodes, most nodes), or None when a size is unpriced."""
        if not self.lines or self.unpriced:
            return None
        low = sum((line.usd_per_node_hour or 0.0) * line.min_nodes for line in self.lines)
        high = sum((line.usd_per_node_hour or 0.0) * line.max_nodes for line in self.lines)
        return low, high

    def sources(self) -> list[str]:
        return self.book.sources() if self.book is not None else []

    def summary(self) -> str:
        if not self.lines:
            return "no VMs created by this stack"
        where = self.region or "an unnamed region"
        total = self.total()
        if total is None:
            return f"cost unknown in {where}: {', '.join(self.unpriced)} unpriced ({HOW_TO_PRICE})"
        low, high = total
        hourly = f"${low:,.2f}" + (f"-${high:,.2f}" if high != low else "")
        monthly = f"${low * HOURS_PER_MONTH:,.0f}" + (f"-${high * HOURS_PER_MONTH:,.0f}" if high != low else "")
        return f"VMs {hourly}/h, {monthly}/month in {where} ({'; '.join(self.sources())})"

    def as_dict(self) -> dict[str, Any]:
        total = self.total()
        return {
            "region": self.region,
            "sources": self.sources(),
            "usdPerHour": None if total is None else _span(*total),
            "usdPerMonth": None if total is None else _span(total[0] * HOURS_PER_MONTH, total[1] * HOURS_PER_MONTH),
            "unpriced": self.unpriced,
            **({"howToPrice": HOW_TO_PRICE} if self.unpriced else {}),
            "lines": [line.as_dict() for line in self.lines],
            "notCounted": "disks, load balancers, public IPs, traffic, managed Prometheus",
        }


def cost_lines(cfg: StackConfig) -> list[CostLine]:
    """The stack's VMs (quota.vm_lines: each pool, each model and RAG engine KAITO makes nodes
    for), with their fewest and most nodes."""
    return [CostLine(v.what, v.vm_size, v.min_nodes, v.max_nodes, v.spot) for v in vm_lines(cfg)]


def stack_cost(cfg: StackConfig, *, online: bool = False) -> StackCost:
    lines = cost_lines(cfg)
    region = stack_region(cfg)
    if not lines or region is None:
        return StackCost(region, lines)
    book = price_book(region, [line.vm_size for line in lines], online=online)
    priced = [CostLine(li.what, li.vm_size, li.min_nodes, li.max_nodes, li.spot, book.get(li.vm_size)) for li in lines]
    return StackCost(region, priced, book)
