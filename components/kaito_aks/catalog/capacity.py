"""The capacity budget's data (catalog/pod_requests.yaml): what AKS keeps of a node, the CPU VM
sizes' vCPUs and memory, and the requests of every pod the program installs or causes, by
component and chart version, each with where it was read. kaito_aks.capacity does the arithmetic."""

from __future__ import annotations

import math
from decimal import Decimal
from functools import cache
from typing import Literal

from pydantic import Field

from kaito_aks.camel import CamelModel
from kaito_aks.catalog import load_catalog
from kaito_aks.kube_json import QUANTITY

# A Kubernetes quantity's suffixes (k8s.io/apimachinery resource.Quantity): binary and decimal SI
_SCALE: dict[str, Decimal] = {
    "": Decimal(1),
    **{p: Decimal(10) ** e for p, e in zip("numkMGTPE", (-9, -6, -3, 3, 6, 9, 12, 15, 18), strict=True)},
    **{f"{p}i": Decimal(2) ** (10 * (i + 1)) for i, p in enumerate("KMGTPE")},
}


def _amount(quantity: str | int | float) -> Decimal | None:
    """A quantity's exact value in its unit (cores, bytes), read with the grammar every other
    reader checks it by (kube_json.QUANTITY); None: not a quantity, or below zero."""
    m = QUANTITY.fullmatch(str(quantity).strip())
    if m is None:
        return None
    suffix = m["suffix"] or ""
    scale = Decimal(10) ** int(suffix[1:]) if suffix[:1] in ("e", "E") else _SCALE[suffix]
    value = Decimal(m["number"]) * scale
    return value if value >= 0 else None


def cpu_millicores(quantity: str | int | float) -> int | None:
    """A CPU quantity ("100m", "1", 0.5) in millicores, rounded up; None: not a quantity."""
    value = _amount(quantity)
    return None if value is None else math.ceil(value * 1000)


def memory_mib(quantity: str | int | float) -> int | None:
    """A memory quantity ("64Mi", "2Gi", "1000M", bytes) in MiB, rounded up; None: not one."""
    value = _amount(quantity)
    return None if value is None else math.ceil(value / 2**20)


class UpstreamValue(CamelModel):
    """Where test_capacity finds a pod's numbers in components/tests/upstream/<data>/chart-values.yaml
    (dotted value paths; a list: the containers of one pod, summed)."""

    data: str
    cpu: str | list[str] | None = None
    memory: str | list[str] | None = None
    replicas: str | None = None
    none: str | None = None  # a `resources` value whose default is {}: the chart requests nothing


class PodKind(CamelModel):
    """One kind of pod: its requests (Kubernetes quantities), how many, where it may run."""

    name: str
    cpu: str
    memory: str
    replicas: int = 1
    per_node: bool = False
    tolerates: Literal["all"] | list[str] = []  # noqa: RUF012 (pydantic copies defaults)
    spread: bool = False
    source: str
    upstream: UpstreamValue | None = None

    @property
    def cpu_m(self) -> int:
        value = cpu_millicores(self.cpu)
        assert value is not None, f"{self.name}: cpu {self.cpu!r}"
        return value

    @property
    def memory_mi(self) -> int:
        value = memory_mib(self.memory)
        assert value is not None, f"{self.name}: memory {self.memory!r}"
        return value


class MemoryRule(CamelModel):
    """AKS's memory reservation from one Kubernetes minor on."""

    since: str
    eviction_mib: int = Field(default=0, alias="evictionMiB")
    per_pod_mb: int | None = Field(default=None, alias="perPodMB")
    base_mb: int | None = Field(default=None, alias="baseMB")
    at_most_share: float | None = None
    tiers: list[tuple[int | None, float]] | None = None  # (MiB of the tier, None: the rest; share)


class AksNodes(CamelModel):
    source: str
    max_pods: int
    reserved_cpu_millicores: dict[int, int]
    memory: list[MemoryRule]


class VmFamily(CamelModel):
    """CPU VM sizes of one family: the name pattern ({n}: the vCPUs), their vCPUs, GiB per vCPU."""

    pattern: str
    vcpus: list[int]
    gib_per_vcpu: float
    source: str


class KaitoPods(CamelModel):
    controller: list[PodKind]
    flux: list[PodKind]
    local_csi_driver: list[PodKind]
    gpu_feature_discovery: list[PodKind]


class RagEnginePods(CamelModel):
    remote: PodKind  # an engine that does not embed locally on a GPU size


class Pods(CamelModel):
    aks: list[PodKind]
    aks_managed_prometheus: list[PodKind]
    kaito: dict[str, KaitoPods]
    ragengine_operator: dict[str, list[PodKind]]
    rag_engine: dict[str, RagEnginePods]
    gpu_operator: dict[str, list[PodKind]]
    gpu_provisioner: dict[str, list[PodKind]]
    karpenter: dict[str, list[PodKind]]
    istio: dict[str, list[PodKind]]
    gateway_pods: dict[str, list[PodKind]]
    body_based_routing: dict[str, list[PodKind]]
    authorino: dict[str, list[PodKind]]
    authorino_instance: dict[str, list[PodKind]]
    keda: dict[str, list[PodKind]]
    keda_kaito_scaler: dict[str, list[PodKind]]
    endpoint_picker: dict[str, list[PodKind]]


class PodRequests(CamelModel):
    """catalog/pod_requests.yaml."""

    aks_nodes: AksNodes
    high_water: float
    vm_sizes: list[VmFamily]
    pods: Pods


@cache
def pod_requests() -> PodRequests:
    return PodRequests.model_validate(load_catalog("pod_requests.yaml"))


@cache
def cpu_vm_sizes() -> dict[str, tuple[int, int, str]]:
    """Every CPU VM size the catalog knows, lower case -> (vCPUs, memory MiB, its family's source)."""
    sizes: dict[str, tuple[int, int, str]] = {}
    for family in pod_requests().vm_sizes:
        for n in family.vcpus:
            name = family.pattern.replace("{n}", str(n))
            sizes[name.lower()] = (n, round(n * family.gib_per_vcpu * 1024), family.source)
    return sizes


def vm_size_name(size: str) -> str:
    """A size's name as the catalog writes it (Azure's are case-insensitive)."""
    for family in pod_requests().vm_sizes:
        for n in family.vcpus:
            name = family.pattern.replace("{n}", str(n))
            if name.lower() == size.lower():
                return name
    return size


def same_family_sizes(size: str) -> list[str]:
    """The sizes of `size`'s family, smallest first (none: a size the catalog does not know)."""
    for family in pod_requests().vm_sizes:
        names = [family.pattern.replace("{n}", str(n)) for n in sorted(family.vcpus)]
        if size.lower() in (n.lower() for n in names):
            return names
    return []
