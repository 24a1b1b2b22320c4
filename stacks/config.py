"""The stack config schema: what a person writes under `config:` in Pulumi.<stack>.yaml.

Parsed with pydantic (camelCase keys, unknown keys are errors). Shape errors come from here;
rules that need the catalogs or several fields at once live in stacks/rules.py. Both report
every problem at once, each with its config path.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from components.kaito_api import DataDestination, DataSource, LabelSelector
from stacks.base import CamelModel

PROJECT = "kaito-aks"


# ---------------------------------------------------------------- cluster


class KubeconfigCluster(CamelModel):
    """An existing cluster reached through a kubeconfig. The file's contents may instead come
    from the secret config value `kaito-aks:kubeconfig`."""

    path: str | None = None  # default: $KUBECONFIG or ~/.kube/config
    context: str | None = None  # default: the kubeconfig's current context


class SystemPool(CamelModel):
    vm_size: str = "Standard_D4s_v5"
    count: int = Field(default=2, ge=1)


class AksClusterSpec(CamelModel):
    """An AKS cluster this stack creates (with its resource group)."""

    resource_group: str
    name: str
    location: str | None = None  # default: azure-native:location
    kubernetes_version: str | None = None  # e.g. "1.33"; default: AKS's default version
    system_pool: SystemPool = SystemPool()
    tags: dict[str, str] = {}
    protect: bool = False  # refuse to delete or replace the cluster (production)

    @field_validator("kubernetes_version")
    @classmethod
    def _version_format(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"1\.\d{2}(\.\d+)?", v):
            raise ValueError(
                f"kubernetesVersion {v!r} is not a Kubernetes version: write MAJOR.MINOR or "
                'MAJOR.MINOR.PATCH, quoted, e.g. "1.33"'
            )
        return v


class ExistingAksSpec(CamelModel):
    """An AKS cluster that already exists; the stack adopts it read-only."""

    resource_group: str
    name: str


class ClusterSpec(CamelModel):
    """Exactly one of: kubeconfig (any cluster), aks (create one), existing (adopt one)."""

    kubeconfig: KubeconfigCluster | None = None
    aks: AksClusterSpec | None = None
    existing: ExistingAksSpec | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ClusterSpec:
        chosen = [k for k in ("kubeconfig", "aks", "existing") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(
                "choose exactly one of kubeconfig (an existing cluster through a kubeconfig), "
                f"aks (create an AKS cluster) or existing (adopt an AKS cluster); got {chosen or 'none'}"
            )
        return self

    @property
    def is_azure(self) -> bool:
        return self.kubeconfig is None


# ---------------------------------------------------------------- KAITO operator


class KaitoSpec(CamelModel):
    version: str = "0.8.1"  # KAITO workspace chart and app version
    install: bool = True  # false: KAITO is already installed (AKS add-on, platform team)
    node_provisioning: Literal["byo", "auto"] = "byo"
    feature_gates: dict[str, bool] = {}  # merged over the version's defaults
    values: dict[str, Any] = {}  # extra chart values, deep-merged last
    # Who advertises GPUs and labels GPU nodes: KAITO's bundled device plugin, NFD and GFD
    # ("kaito"), or something else such as the NVIDIA GPU Operator ("external"). Default:
    # external when this stack installs the GPU Operator, else kaito.
    gpu_discovery: Literal["kaito", "external"] | None = None


# ---------------------------------------------------------------- GPU nodes (AKS)


class Autoscale(CamelModel):
    min: int = Field(ge=0)
    max: int = Field(ge=1)


class GpuNodePoolSpec(CamelModel):
    """A User-mode AKS node pool of one GPU VM size."""

    name: str
    vm_size: str  # a GPU SKU from stacks/catalog/azure_gpu_skus.yaml
    count: int | None = Field(default=None, ge=0)  # default 1 unless autoscale is set
    autoscale: Autoscale | None = None
    # operator: AKS skips the driver and the GPU Operator installs it; aks: AKS installs it.
    gpu_driver: Literal["operator", "aks"] = "operator"
    spot: bool = False
    labels: dict[str, str] = {}
    taints: list[str] = ["sku=gpu:NoSchedule"]
    os_disk_size_gb: int | None = Field(default=None, ge=30)
    protect: bool = False  # refuse to delete or replace the pool (production)

    @property
    def max_nodes(self) -> int:
        return self.autoscale.max if self.autoscale else (1 if self.count is None else self.count)

    @property
    def min_nodes(self) -> int:
        return self.autoscale.min if self.autoscale else (1 if self.count is None else self.count)

    @field_validator("name")
    @classmethod
    def _pool_name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9]{0,11}", v):
            raise ValueError(
                f"AKS node pool name {v!r} must be 1-12 lowercase letters and digits, starting with a letter"
            )
        return v


class GpuOperatorSpec(CamelModel):
    enabled: bool = True
    version: str = "v25.3.4"
    values: dict[str, Any] = {}


# ---------------------------------------------------------------- workspaces


class AdapterConfig(CamelModel):
    """A LoRA adapter served on top of a preset, from a container image."""

    name: str
    image: str
    strength: float | None = Field(default=None, ge=0, le=1)
    image_pull_secrets: list[str] | None = None


class TuningConfig(CamelModel):
    method: Literal["lora", "qlora"]
    input: DataSource
    output: DataDestination
    config: dict[str, Any] | None = None  # tuning parameters -> ConfigMap


class WorkspaceConfig(CamelModel):
    """One model deployment: a preset (GPU) or a custom image (e.g. llama.cpp on CPU)."""

    name: str
    namespace: str = "default"
    model: str | None = None  # a KAITO preset name
    image: str | None = None  # a custom serving image (inference.template), instead of a preset
    compute: Literal["gpu", "cpu"] = "gpu"
    replicas: int = Field(default=1, ge=1)
    label_selector: LabelSelector | None = None  # default: by compute (see README)
    runtime: Literal["vllm", "transformers"] | None = None  # default: the version's (vLLM)
    instance_type: str | None = None  # only with kaito.nodeProvisioning: auto
    adapters: list[AdapterConfig] = []
    config: dict[str, Any] | None = None  # runtime parameters -> ConfigMap inference_config.yaml
    tuning: TuningConfig | None = None
    model_access_secret: str | None = None  # an existing Secret with key HF_TOKEN
    load_balancer: bool = False  # expose through a LoadBalancer Service (kaito.sh/enablelb)
    port: int = Field(default=5000, ge=1, le=65535)  # container port of a custom image
    args: list[str] | None = None  # custom image arguments; default: AIKit's run --address=:<port>
    resources: dict[str, Any] | None = None  # container resources of a custom image

    @property
    def is_gpu(self) -> bool:
        """GPU workloads: compute gpu, or the vLLM runtime."""
        return self.compute == "gpu" or self.runtime == "vllm"


# ---------------------------------------------------------------- the stack


class StackConfig(CamelModel):
    """Everything under the `kaito-aks:` namespace of a stack's config."""

    cluster: ClusterSpec
    kaito: KaitoSpec = KaitoSpec()
    workspaces: list[WorkspaceConfig] = []
    gpu_node_pools: list[GpuNodePoolSpec] = []
    gpu_operator: GpuOperatorSpec | None = None
    create_namespaces: bool = True  # create the workspaces' namespaces (other than default)
    # Secret values are not part of the model; these say which secrets the stack has.
    hf_token: Annotated[bool, Field(exclude=True)] = False
    kubeconfig: Annotated[bool, Field(exclude=True)] = False
    # azure-native:location, for AKS clusters that do not name a location.
    azure_location: Annotated[str | None, Field(exclude=True)] = None

    @property
    def gpu_operator_enabled(self) -> bool:
        """The GPU Operator is installed by default on AKS stacks, never on kubeconfig stacks
        unless asked."""
        if self.gpu_operator is not None:
            return self.gpu_operator.enabled
        return self.cluster.is_azure and bool(self.gpu_node_pools)

    @property
    def kaito_bundles_gpu_discovery(self) -> bool:
        """Whether the KAITO release deploys its own device plugin, NFD and GFD."""
        if self.kaito.gpu_discovery is not None:
            return self.kaito.gpu_discovery == "kaito"
        return not self.gpu_operator_enabled


# Keys that existed in earlier KAITO/kaito-aks shapes, with the fix to give.
RETIRED_KEYS = {
    "preferredNodes": "removed in KAITO 0.8; use labelSelector",
    "count": "use replicas (resource.count is deprecated in KAITO and does not scale vLLM serving)",
    "preset": "use model",
    "instance": "use instanceType",
}
