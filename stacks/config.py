"""The stack config schema: what a person writes under `config:` in Pulumi.<stack>.yaml.

Parsed with pydantic (camelCase keys, unknown keys are errors). Shape errors come from here;
rules that need the catalogs or several fields at once live in stacks/rules.py. Both report
every problem at once, each with its config path.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from kaito_aks.camel import CamelModel
from kaito_aks.model.component import ModelSpec
from kaito_aks.scheduling import DEFAULT_GPU_TAINTS

PROJECT = "kaito-aks"


# ---------------------------------------------------------------- cluster


class KubeconfigCluster(CamelModel):
    """An existing cluster reached through a kubeconfig. The file's contents may instead come
    from the secret config value `kaito-aks:kubeconfig`."""

    path: str | None = Field(None, description="kubeconfig file; default: $KUBECONFIG, then ~/.kube/config")
    context: str | None = Field(None, description="kubeconfig context; default: the file's current context")


class SystemPool(CamelModel):
    """The AKS system node pool (runs the operators, not models)."""

    vm_size: str = Field("Standard_D4s_v5", description="VM size of the system nodes")
    count: int = Field(2, ge=1, description="number of system nodes")


class AksClusterSpec(CamelModel):
    """An AKS cluster this stack creates (with its resource group)."""

    resource_group: str = Field(description="resource group to create for the cluster")
    name: str = Field(description="cluster name (also its DNS prefix and KAITO's clusterName)")
    location: str | None = Field(None, description="Azure region; default: `azure-native:location`")
    kubernetes_version: str | None = Field(None, description='e.g. `"1.33"` (quoted); default: AKS\'s default')
    system_pool: SystemPool = Field(SystemPool(), description="`{vmSize, count}` of the system pool")
    tags: dict[str, str] = Field({}, description="Azure tags on the resource group and cluster")
    protect: bool = Field(False, description="refuse to delete or replace the cluster (production)")

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

    resource_group: str = Field(description="the cluster's resource group")
    name: str = Field(description="the cluster's name")


class ClusterSpec(CamelModel):
    """Exactly one of: kubeconfig (any cluster), aks (create one), existing (adopt one)."""

    kubeconfig: KubeconfigCluster | None = Field(None, description="any existing cluster, through a kubeconfig")
    aks: AksClusterSpec | None = Field(None, description="an AKS cluster this stack creates")
    existing: ExistingAksSpec | None = Field(None, description="an AKS cluster that already exists")

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
    """The KAITO workspace operator."""

    version: str = Field("0.8.1", description="KAITO chart and app version: 0.8.0, 0.8.1 or 0.12.0")
    install: bool = Field(
        True, description="false: KAITO is already installed (AKS add-on, platform team); only Workspaces are created"
    )
    node_provisioning: Literal["byo", "auto"] = Field(
        "byo", description="byo: your nodes, auto-provisioning off; auto: KAITO creates `instanceType` nodes"
    )
    feature_gates: dict[str, bool] = Field(
        {}, description="merged over the version's defaults; an unknown gate is an error"
    )
    values: dict[str, Any] = Field({}, description="extra chart values, deep-merged last")
    gpu_discovery: Literal["kaito", "external"] | None = Field(
        None,
        description="who runs the device plugin, NFD and GFD: KAITO's bundled ones, or `external` (e.g. the GPU "
        "Operator); default: external when this stack installs the GPU Operator",
    )
    wait_for_ready: bool = Field(
        True,
        description="`pulumi up` waits until every model serves (Workspace InferenceReady, InferenceSet "
        "InferenceSetReady, tuning JobStarted); false: it returns once the objects exist",
    )
    ready_timeout_minutes: int = Field(
        30, ge=1, description="how long to wait per model (large downloads take 20+ minutes); per workspace too"
    )
    wait_for_gpu_nodes: bool = Field(
        True,
        description="before creating a preset, wait until the nodes its labelSelector matches are Ready and labelled "
        "by GPU Feature Discovery, as KAITO's webhook requires; false: for credentials that may not list nodes",
    )
    gpu_nodes_timeout_minutes: int = Field(
        20, ge=1, description="how long to wait for those GPU nodes before failing the update"
    )


# ---------------------------------------------------------------- GPU nodes (AKS)


class Autoscale(CamelModel):
    """Cluster-autoscaler bounds of a node pool."""

    min: int = Field(ge=0, description="fewest nodes (BYO presets need at least one to be admitted)")
    max: int = Field(ge=1, description="most nodes")


class GpuNodePoolSpec(CamelModel):
    """A User-mode AKS node pool of one GPU VM size."""

    name: str = Field(description="pool name: 1-12 lowercase letters and digits")
    vm_size: str = Field(description="a GPU VM size KAITO knows (`python -m stacks models estimate <preset>`)")
    count: int | None = Field(None, ge=0, description="fixed node count (default 1), or use autoscale")
    autoscale: Autoscale | None = Field(None, description="`{min, max}` instead of count")
    gpu_driver: Literal["operator", "aks"] = Field(
        "operator",
        description="operator: AKS skips the driver (gpuProfile.driver None) and the GPU Operator installs it; aks: AKS installs it",
    )
    spot: bool = Field(False, description="Azure Spot VMs (carry the AKS spot taint; needs KAITO 0.12)")
    labels: dict[str, str] = Field({}, description="node labels (select a pool with labelSelector)")
    taints: list[str] = Field(
        list(DEFAULT_GPU_TAINTS), description="node taints; KAITO presets tolerate sku=gpu and nvidia.com/gpu"
    )
    os_disk_size_gb: int | None = Field(
        None, ge=30, alias="osDiskSizeGB", description="OS disk size in GB (model weights are cached on it)"
    )
    protect: bool = Field(False, description="refuse to delete or replace the pool (production)")

    @property
    def max_nodes(self) -> int:
        return self.autoscale.max if self.autoscale else (1 if self.count is None else self.count)

    @property
    def min_nodes(self) -> int:
        return self.autoscale.min if self.autoscale else (1 if self.count is None else self.count)


class GpuOperatorSpec(CamelModel):
    """The NVIDIA GPU Operator (driver, toolkit, device plugin, NFD, GFD on GPU nodes)."""

    enabled: bool | None = Field(
        None, description="default: on for AKS stacks with GPU pools, off for kubeconfig stacks"
    )
    version: str = Field("v25.3.4", description="chart version: v25.3.4 or v26.7.0")
    values: dict[str, Any] = Field({}, description="extra chart values, deep-merged last")


# ---------------------------------------------------------------- workspaces


# One workspace entry is a kaito_aks.kaito_model.ModelSpec: the component's own schema.


# ---------------------------------------------------------------- the stack


class StackConfig(CamelModel):
    """Everything under the `kaito-aks:` namespace of a stack's config."""

    cluster: ClusterSpec = Field(description="where KAITO runs: kubeconfig, aks or existing")
    kaito: KaitoSpec = Field(KaitoSpec(), description="the KAITO operator")
    workspaces: list[ModelSpec] = Field([], description="the models to serve or tune")
    gpu_node_pools: list[GpuNodePoolSpec] = Field([], description="AKS GPU node pools (aks/existing clusters)")
    gpu_operator: GpuOperatorSpec | None = Field(None, description="the NVIDIA GPU Operator")
    create_namespaces: bool = Field(True, description="create the workspaces' namespaces (other than default)")
    # Secret values are not part of the model; these say which secrets the stack has.
    hf_token: Annotated[bool, Field(exclude=True)] = False
    kubeconfig: Annotated[bool, Field(exclude=True)] = False
    # azure-native:location, for AKS clusters that do not name a location.
    azure_location: Annotated[str | None, Field(exclude=True)] = None
    # Config lists that had malformed entries (reported already; rules skip what needs them all).
    incomplete: Annotated[tuple[str, ...], Field(exclude=True)] = ()

    @property
    def gpu_operator_enabled(self) -> bool:
        """The GPU Operator is installed by default on AKS stacks, never on kubeconfig stacks
        unless asked."""
        if self.gpu_operator is not None and self.gpu_operator.enabled is not None:
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
