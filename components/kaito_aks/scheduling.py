"""How GPU workloads find and tolerate GPU nodes: the labels and taints GPU nodes carry and the
tolerations the operators need for them (one place, so the pools, both operators, the models
and the stack's placement checks agree)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kaito_aks.catalog import Toleration

# The label NVIDIA's GPU Operator puts on GPU nodes; GpuNodePool also sets it on the AKS GPU pools
# it creates, so it is there from a node's first minute. (Standalone GPU Feature Discovery
# publishes nvidia.com/gpu.product/count/memory, which KAITO reads, but not this one.)
GPU_PRESENT_LABEL = {"nvidia.com/gpu.present": "true"}
LINUX_LABEL = {"kubernetes.io/os": "linux"}
# The taint AKS GPU pools conventionally carry (and KAITO's presets and device plugin tolerate);
# assumed for GPU nodes of clusters the program does not create.
DEFAULT_GPU_TAINTS = ("sku=gpu:NoSchedule",)
# AKS puts this taint on every spot node; declaring it keeps the pool's taints as Azure reports
# them, and KAITO (0.12+) and the GPU Operator tolerate it.
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"


def taint_toleration(taint: str) -> dict[str, str]:
    """`key=value:Effect` -> Equal toleration; `key:Effect` -> Exists toleration."""
    spec, effect = taint.rsplit(":", 1)
    if "=" in spec:
        key, value = spec.split("=", 1)
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": spec, "operator": "Exists", "effect": effect}


def merge_tolerations(defaults: Iterable[Toleration], taints: Iterable[str]) -> list[dict[str, Any]]:
    """A chart's default tolerations plus one per taint, once each (Helm replaces lists, so the
    defaults are repeated)."""
    out: list[dict[str, Any]] = []
    for t in [*(d.model_dump(exclude_none=True) for d in defaults), *(taint_toleration(t) for t in taints)]:
        if t not in out:
            out.append(t)
    return out
