"""The words every layer of kaito-aks shares: the modes the args choose between, and what a
model asks of its GPU nodes. Any module may import this one; it imports only the standard
library, so a spec, a rule, a plan and a wait speak the same terms without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

NodeProvisioning = Literal["byo", "auto"]
"""byo: your GPU nodes, found by label selector (auto-provisioning off); auto: KAITO creates a
node of each Workspace's instance type."""
NodeProvisioner = Literal["gpu-provisioner", "karpenter"]
"""What turns the NodeClaims KAITO creates in auto mode into nodes."""
GpuDiscovery = Literal["kaito", "external"]
"""kaito: KAITO's bundled device plugin, NFD and GFD label the GPU nodes; external: another
install (the NVIDIA GPU Operator) runs them and KAITO's copies are switched off."""
GpuDriver = Literal["operator", "aks"]
"""operator: AKS skips the driver (gpuProfile.driver None) and the NVIDIA GPU Operator installs
it; aks: AKS installs the driver and container toolkit."""


@dataclass(frozen=True)
class GpuDemand:
    """What KAITO's webhook asks of the nodes for one preset (the fields it reads): what a model's
    plan hands the GPU-node wait, which judges the nodes against it."""

    name: str  # the preset
    gpu_count: int  # GPUs it needs (KAITO 0.8 checks nodes x GPUs against this)
    model_gib: float  # the size of its weights (0: not known offline, a Hugging Face id KAITO sizes)
    release: str  # "0.8", "0.11" or "0.12": KAITO's arithmetic differs

    @property
    def per_gpu_gib(self) -> float:
        return 0.0  # a requirement of 0.6 only, which provisions its own nodes (no wait)

    def as_props(self) -> dict[str, Any]:
        return {"preset": self.name, "gpuCount": self.gpu_count, "modelGiB": self.model_gib, "release": self.release}

    @classmethod
    def from_props(cls, props: dict[str, Any]) -> GpuDemand:
        return cls(props["preset"], int(props["gpuCount"]), float(props["modelGiB"]), props["release"])


def selector_text(selector: dict[str, str]) -> str:
    """A node selector as one stable text ({agentpool=a100, sku=gpu}): the key models that share
    their nodes share their waits under."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(selector.items())) + "}"
