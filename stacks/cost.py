"""What a stack's GPU pools cost per hour, from the price catalog (kaito_aks/catalog/azure_prices.yaml).

Only GPU pools are counted (the system pool and disks are not); autoscaled pools give a range.
A pool whose size has no price in the region is named as unpriced, never estimated."""

from __future__ import annotations

from dataclasses import dataclass, field

from kaito_aks import catalog
from kaito_aks.azure.gpu_node_pool import node_group
from stacks.config import StackConfig

DEFAULT_REGION = "eastus"


@dataclass(frozen=True)
class StackCost:
    region: str | None
    usd_per_hour_min: float = 0.0
    usd_per_hour_max: float = 0.0
    unpriced: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    pools: int = 0

    def summary(self) -> str:
        if not self.pools:
            return "no GPU pools created by this stack"
        where = self.region or "an unnamed region"
        if self.unpriced:
            return f"GPU pools unpriced in {where} ({', '.join(self.unpriced)}: import prices, see azure_prices.yaml)"
        span = f"${self.usd_per_hour_min:.2f}"
        if self.usd_per_hour_max != self.usd_per_hour_min:
            span += f"-${self.usd_per_hour_max:.2f}"
        return f"GPU pools {span}/h on demand in {where} ({'; '.join(self.sources)})"

    def as_dict(self) -> dict:
        return {
            "region": self.region,
            "gpuPoolsUsdPerHour": {"min": round(self.usd_per_hour_min, 4), "max": round(self.usd_per_hour_max, 4)},
            "unpriced": self.unpriced,
            "sources": self.sources,
        }


def stack_cost(cfg: StackConfig) -> StackCost:
    if not cfg.pools:
        return StackCost(region=None)
    aks = cfg.aks_cluster
    location = aks.location if aks is not None and not aks.existing else None
    region = (location if isinstance(location, str) else None) or cfg.azure_location
    table = catalog.prices(region) if region else {}
    low = high = 0.0
    unpriced: list[str] = []
    sources: set[str] = set()
    for pool in cfg.pools:
        group = node_group(pool.args, pool.args.name or "")
        price = table.get(group.vm_size)
        if price is None:
            unpriced.append(group.vm_size)
            continue
        low += group.min_nodes * price.usd_per_hour
        high += group.max_nodes * price.usd_per_hour
        sources.add(f"{price.source}, {price.effective_date}")
    return StackCost(region, low, high, sorted(set(unpriced)), sorted(sources), len(cfg.pools))
