"""KAITO's own sizing arithmetic, per release, so that `validate`, `models estimate` and the
GPU-discovery wait agree with what KAITO does at deploy time:

- admission (api/v1beta1/workspace_validation.go): in BYO mode the webhook counts the nodes that
  match the labelSelector *when the Workspace is created* and multiplies that count by GPU memory
  as KAITO reads it from GPU Feature Discovery's labels. 0.8 keeps the per-GPU label value (a
  two-GPU node counts as one GPU's memory); 0.11 and 0.12 multiply it by the GPU count. 0.6 (node
  auto-provisioning only) checks `resource.count` (1) nodes of the instance type from its SKU
  table: GPU count, memory per GPU and in total against the preset's requirements.
- the vLLM node estimator (pkg/workspace/estimator, 0.8+): how many nodes one serving instance
  spans, from the first ready node's labels: model size x 1.02 against per-GPU memory x 0.84 minus
  2.3 GiB and the KV cache of max-model-len tokens (default 2048). 0.11+ also keeps 5% of the
  model size. 0.6 has none: an instance runs on the `resource.count` nodes it provisions.

Releases are named by their preset catalog: "0.6", "0.8", "0.11", "0.12". `resource.count`
plays no part from 0.8: KAITO ignores it on the vLLM path."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from kaito_aks.catalog import GpuSku, Preset, generator, gpu_skus

GIB = 1 << 30
WEIGHT_EXPANSION = 1.02  # vLLM's loaded model vs its safetensors files
GPU_MEMORY_UTILIZATION = 0.84  # KAITO's default --gpu-memory-utilization
BASE_OVERHEAD_GIB = 2.3
OVERHEAD_WEIGHT_FACTOR = {"0.8": 0.0, "0.11": 0.05, "0.12": 0.05}
GPU_COUNT_CHECKED = ("0.6", "0.8")  # releases whose webhook checks a preset's GPU count
NO_ESTIMATOR = ("0.6",)  # releases that place an instance on resource.count (1) nodes
DEFAULT_MAX_MODEL_LEN = 2048


class SizingError(ValueError):
    """KAITO's estimator refuses the model on this hardware; the message is its reason."""


@dataclass(frozen=True)
class NodeGpus:
    """One node's GPUs as GPU Feature Discovery labels them (what KAITO sizes against)."""

    product: str  # nvidia.com/gpu.product
    count: int  # nvidia.com/gpu.count
    memory_mib: int  # nvidia.com/gpu.memory: one GPU's memory, MiB

    @classmethod
    def of_sku(cls, sku: GpuSku) -> NodeGpus:
        """What GFD reports for an Azure size, from the SKU table (real labels can be a little
        lower, e.g. 23028 MiB on an A10: the GPU-discovery wait re-checks with them)."""
        return cls(sku.gpu_model, sku.gpu_count, round(sku.gpu_mem_gib * 1024 / sku.gpu_count))

    @property
    def gib_per_gpu(self) -> int:
        return int(self.memory_mib / 1024 + 0.5)  # KAITO's rounding of the MiB label

    def kaito_node_memory(self, release: str) -> int:
        """Bytes of GPU memory per node in KAITO's GPUConfig for this release."""
        return self.gib_per_gpu * (1 if release == "0.8" else self.count) * GIB


class PresetDemand(Protocol):
    """What the webhook reads of a preset: a catalog `Preset`, or the wait's `GpuDemand`."""

    @property
    def name(self) -> str: ...
    @property
    def gpu_count(self) -> int: ...
    @property
    def model_gib(self) -> float: ...
    @property
    def per_gpu_gib(self) -> float: ...


def admission_denial(preset: PresetDemand, hw: NodeGpus, nodes: int, release: str) -> str | None:
    """Why the webhook denies a preset Workspace when `nodes` matching nodes exist (0.6: the
    nodes it would provision), or None."""
    if nodes == 0:
        return "No nodes found matching the specified label selector"
    if release in GPU_COUNT_CHECKED and nodes * hw.count < preset.gpu_count:
        return f"Insufficient number of GPUs: {nodes * hw.count}, preset {preset.name} requires {preset.gpu_count}"
    if hw.gib_per_gpu < preset.per_gpu_gib:
        return (
            f"Insufficient per GPU memory: {hw.gib_per_gpu} GiB per GPU, but preset {preset.name} requires at least "
            f"{preset.per_gpu_gib:g} GiB per GPU"
        )
    have = nodes * hw.kaito_node_memory(release)
    need = generator.quantity_bytes(preset.model_gib)
    if have < need:
        return (
            f"Insufficient total GPU memory: {nodes} node(s) x {hw.kaito_node_memory(release) // GIB} GiB = "
            f"{have // GIB} GiB, but preset {preset.name} requires at least {preset.model_gib} GiB"
        )
    return None


def nodes_to_admit(preset: Preset, hw: NodeGpus, release: str) -> int:
    """The fewest matching nodes that must exist for the webhook to admit the preset."""
    by_memory = math.ceil(generator.quantity_bytes(preset.model_gib) / hw.kaito_node_memory(release))
    by_gpus = math.ceil(preset.gpu_count / hw.count) if release in GPU_COUNT_CHECKED else 1
    return max(1, by_memory, by_gpus)


def nodes_per_instance(preset: Preset, hw: NodeGpus, release: str, max_model_len: int | None = None) -> int:
    """Nodes one serving instance spans on bring-your-own nodes, by KAITO's vLLM estimator (it
    reads the first ready node's GFD labels); SizingError when it refuses."""
    per_gpu = hw.kaito_node_memory(release) // hw.count
    return _vllm_nodes(preset, per_gpu, hw.count, hw.product, release, max_model_len)


def nodes_on_instance_type(preset: Preset, sku: GpuSku, release: str, max_model_len: int | None = None) -> int:
    """Nodes of `sku` one serving instance spans with node auto-provisioning: the estimator
    reads KAITO's SKU table then (the node's total GPU memory over its GPUs); SizingError when
    it refuses."""
    per_gpu = sku.gpu_mem_gib * GIB // sku.gpu_count
    return _vllm_nodes(preset, per_gpu, sku.gpu_count, f"{sku.name} ({sku.gpu_model})", release, max_model_len)


def _vllm_nodes(
    preset: Preset, per_gpu: int, gpus_per_node: int, node: str, release: str, max_model_len: int | None
) -> int:
    """KAITO's vLLM node estimator (pkg/workspace/estimator) for nodes of `gpus_per_node` GPUs
    of `per_gpu` bytes each."""
    if release in NO_ESTIMATOR:  # 0.6: an instance runs on the resource.count (1) nodes it provisions
        return 1
    tokens = max_model_len or DEFAULT_MAX_MODEL_LEN
    available = per_gpu * GPU_MEMORY_UTILIZATION
    model = preset.model_gib * GIB * WEIGHT_EXPANSION
    reserve = BASE_OVERHEAD_GIB * GIB + tokens * preset.bytes_per_token / gpus_per_node
    if release == "0.8" and preset.disable_tensor_parallelism and model + reserve > available:
        raise SizingError(
            f"one GPU of {per_gpu / GIB:.0f} GiB is too small for {preset.name}, which cannot be split across "
            f"GPUs: needs {(model + reserve) / GIB:.1f} GiB of the {available / GIB:.1f} GiB vLLM may use"
        )
    if available <= reserve:
        raise SizingError(
            f"GPU memory {per_gpu / GIB:.0f} GiB per GPU is too small: needs at least {reserve / GIB:.1f} GiB "
            f"overhead (2.3 GiB + KV cache for max-model-len {tokens})"
        )
    usable = (available - reserve) / (1 + OVERHEAD_WEIGHT_FACTOR[release])
    gpus = int(model / usable) + 1
    nodes = math.ceil(gpus / gpus_per_node)
    if nodes > 1 and (preset.disable_tensor_parallelism and release == "0.8"):
        raise SizingError(f"{preset.name} cannot be split across GPUs but needs {nodes} nodes")
    if nodes > 1 and not preset.distributed:
        raise SizingError(
            f"{preset.name} does not support multi-node inference in this release, but needs {nodes} nodes of "
            f"{node} ({gpus_per_node} x {per_gpu / GIB:.0f} GiB): use a node with more GPU memory"
        )
    return nodes


def instance_type_denial(preset: PresetDemand, sku: GpuSku, release: str) -> str | None:
    """Why KAITO's webhook denies a preset on one node of `sku` with node auto-provisioning, in
    its words, or None (workspace_validation.go: it checks the SKU table for the transformers
    runtime and tuning from 0.8, for every runtime on 0.6; 0.6 and 0.8 also count GPUs, 0.6
    checks memory per GPU)."""
    if release in GPU_COUNT_CHECKED and sku.gpu_count < preset.gpu_count:
        return (
            f"Insufficient number of GPUs: Instance type {sku.name} provides {sku.gpu_count}, but preset "
            f"{preset.name} requires at least {preset.gpu_count}"
        )
    per_gpu = sku.gpu_mem_gib // sku.gpu_count
    if per_gpu < preset.per_gpu_gib:
        return (
            f"Insufficient per GPU memory: Instance type {sku.name} provides {per_gpu}Gi per GPU, but preset "
            f"{preset.name} requires at least {preset.per_gpu_gib:g}Gi per GPU"
        )
    if sku.gpu_mem_gib * GIB < generator.quantity_bytes(preset.model_gib):
        return (
            f"Insufficient total GPU memory: Instance type {sku.name} has a total of {sku.gpu_mem_gib}Gi, but preset "
            f"{preset.name} requires at least {preset.model_gib}Gi"
        )
    return None


def smallest_instance_type(
    preset: Preset, skus: dict[str, GpuSku], release: str, *, transformers: bool, max_model_len: int | None = None
) -> tuple[GpuSku, int] | None:
    """The usable NVIDIA size KAITO would serve one instance of `preset` on with the least GPU
    memory in all (nodes x memory per node), and its node count; None when none would. Ties go
    to the size listed first (the catalog lists each family smallest first)."""
    best: tuple[float, int, GpuSku, int] | None = None
    for order, sku in enumerate(skus.values()):
        if sku.vendor != "nvidia" or sku.unusable:
            continue
        if transformers:
            nodes = 1 if instance_type_denial(preset, sku, release) is None else None
        else:
            try:
                nodes = nodes_on_instance_type(preset, sku, release, max_model_len)
            except SizingError:
                nodes = None
        if nodes is not None:
            key = (nodes * sku.gpu_mem_gib, order)
            if best is None or key < best[:2]:
                best = (*key, sku, nodes)
    return None if best is None else (best[2], best[3])


def nodes_for(preset: Preset, sku: GpuSku, release: str, max_model_len: int | None = None) -> int | None:
    """Nodes of `sku` that one instance needs so that KAITO both admits and schedules it (the
    larger of the two counts), or None when KAITO refuses the preset on that size."""
    hw = NodeGpus.of_sku(sku)
    if release in NO_ESTIMATOR:  # resource.count (1) nodes: admitted there, or not at all
        return None if admission_denial(preset, hw, 1, release) else 1
    try:
        serving = nodes_per_instance(preset, hw, release, max_model_len)
    except SizingError:
        return None
    admit = nodes_to_admit(preset, hw, release)
    if admit > 1 and not preset.distributed:
        return None
    return max(serving, admit)


def estimate(preset: Preset, release: str, max_nodes: int = 16) -> list[tuple[GpuSku, int]]:
    """Every usable NVIDIA size of the release's table that holds one instance of `preset`, with
    the nodes it takes by KAITO's arithmetic (`nodes_for`, at most `max_nodes`): the 8-GPU sizes as
    well as the smallest, for the caller to rank (by price, or by the GPU memory they cost)."""
    out: list[tuple[GpuSku, int]] = []
    for sku in gpu_skus(release).values():
        if sku.vendor != "nvidia" or sku.unusable:
            continue
        count = nodes_for(preset, sku, release)
        if count is not None and count <= max_nodes:
            out.append((sku, count))
    return out
