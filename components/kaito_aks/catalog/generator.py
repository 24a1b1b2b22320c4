"""KAITO's preset generator arithmetic (presets/workspace/generator, KAITO >= 0.11): what KAITO
derives from a Hugging Face model's numbers (its model-catalog entry, or its config.json) to size
it. The catalog and the rules read a model's needs through these, so they are KAITO's own."""

from __future__ import annotations

import math
from decimal import Decimal

SYSTEM_FILE_DISK_GIB = 80  # SystemFileDiskSizeGiB: the disk beyond the weights


def kv_cache_bytes_per_token(
    *,
    hidden_size: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int = 0,
    kv_lora_rank: int = 0,
    qk_rope_head_dim: int = 0,
) -> int:
    """calculateKVCacheTokenSize: KV-cache bytes per token, in fp16 whatever the model's KV-cache
    dtype. MLA models (kv_lora_rank set) keep the compressed latent plus the rope part; the rest
    keep a key and a value per KV head (MHA, GQA, MQA alike)."""
    if head_dim == 0 and heads > 0:
        head_dim = hidden_size // heads
    if kv_heads == 0 and heads > 0:
        kv_heads = heads
    if kv_lora_rank > 0:
        elements = kv_lora_rank + qk_rope_head_dim
    elif heads > 0 and kv_heads > 0 and head_dim > 0:
        elements = 2 * kv_heads * head_dim
    else:
        elements = 0
    return elements * layers * 2


def disk_gib(model_gib: float) -> int:
    """calculateStorageSize: the weights plus room for the system, whole GiB."""
    return int(model_gib + SYSTEM_FILE_DISK_GIB)


def quantity_bytes(gib: float) -> int:
    """resource.Quantity("<gib>Gi").Value(): bytes, rounded up (what the webhook compares)."""
    return math.ceil(Decimal(str(gib)) * (1 << 30))


def short_name(model_id: str) -> str:
    """The name KAITO registers a Hugging Face model under: its last segment, lower case (keys
    of the Transformers and tuning tables)."""
    return model_id.rsplit("/", 1)[-1].lower()
