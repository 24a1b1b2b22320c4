"""The stack config: what a person writes under `config:` in Pulumi.<stack>.yaml, mapped onto
the components' own args.

Nothing here declares a model, a pool or an operator setting again: each config section is a
list of `Part`s, fields taken by name from a component's Args dataclass (with its type, bounds,
docs and default), plus the few settings only a whole stack has (`StackKaito.install`, a pool's
`protect`, ...), declared once below. The same sections drive the checks, the README's config
reference and `StackConfig`, the typed result the program builds its components from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from kaito_aks.azure.aks_cluster import AksClusterArgs, SystemPoolArgs
from kaito_aks.azure.gpu_node_pool import AutoscaleArgs, GpuNodePoolArgs
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigClusterArgs
from kaito_aks.model.spec import RETIRED, AdapterArgs, KaitoModelArgs, TuningArgs
from kaito_aks.operators.gpu_operator import GpuOperatorArgs
from kaito_aks.operators.gpu_provisioner import GpuProvisionerArgs
from kaito_aks.operators.kaito_operator import GpuDiscovery, KaitoOperatorArgs
from kaito_aks.operators.ragengine_operator import RagEngineOperatorArgs
from kaito_aks.problems import Key, PathPart, Problem, camel, did_you_mean, shown
from kaito_aks.rag.spec import (
    EmbeddingArgs,
    GuardrailsArgs,
    InferenceServiceArgs,
    RagComputeArgs,
    RagEngineArgs,
    StorageArgs,
)
from kaito_aks.schema import Field, Range, args_class, fields
from kaito_aks.validation import check_value, unusable

PROJECT = "kaito-aks"
DEFAULT_KAITO_VERSION = "0.8.1"
# Stands in for outputs of resources the program creates later (the cluster's name and group),
# so a pool's args can be checked before anything exists.
FROM_CLUSTER = "(from the cluster)"
FROM_CLUSTER_ID = (
    "/subscriptions/(from-the-cluster)/resourceGroups/(from-the-cluster)/providers/"
    "Microsoft.ContainerService/managedClusters/(from-the-cluster)"
)


# ---------------------------------------------------------------- what only a stack has


@args_class
class StackKaito:
    """Stack-wide KAITO settings."""

    install: bool = True
    """false: KAITO is already installed (a platform team's release); only Workspaces are created."""


@args_class
class StackProtect:
    """Protection of what the stack creates."""

    protect: bool = False
    """Refuse to delete or replace it (production)."""


@args_class
class StackGpuOperator:
    """Whether the stack installs the NVIDIA GPU Operator."""

    enabled: bool | None = None
    """Default: on for AKS stacks with GPU pools, off for kubeconfig stacks."""


@args_class
class StackGpuProvisioner:
    """Whether the stack installs gpu-provisioner."""

    install: bool | None = None
    """Default: on with kaito.nodeProvisioning auto when this stack installs KAITO on an AKS
    cluster (cluster.aks or cluster.existing)."""


@args_class
class StackRagEngineOperator:
    """Whether the stack installs KAITO's RAGEngine operator."""

    install: bool | None = None
    """Default: on when the stack has ragEngines and installs KAITO (kaito.install)."""


@args_class
class StackRagEngine:
    """What ties a RAG engine to a model of this stack."""

    workspace: str | None = None
    """A workspaces[] entry of the same namespace whose model answers the engine's chat
    completions (instead of inferenceService): its endpoint, and the engine waits for it to serve."""
    context_window_size: Annotated[int, Range(1, None, "a positive number of tokens")] | None = None
    """With workspace: the model's context window; default: the workspace's config.vllm.max-model-len
    (without one, KAITO sizes it from the GPU at start-up, so say it here)."""


@args_class
class StackDiscovery:
    """Who labels the GPU nodes."""

    gpu_discovery: GpuDiscovery | None = None
    """kaito: KAITO's bundled device plugin, NFD and GFD; external (e.g. the GPU Operator); default:
    external when this stack installs the GPU Operator."""


@args_class
class StackNamespaces:
    """Namespaces."""

    create_namespaces: bool = True
    """Create the workspaces' namespaces (other than default)."""


# ---------------------------------------------------------------- sections: config keys -> args fields


@dataclass(frozen=True)
class Part:
    """Fields of one args class that a config section offers, by name."""

    cls: type
    names: tuple[str, ...]
    required: tuple[str, ...] = ()  # required here, whatever the class says
    defaults: Mapping[str, Any] = field(default_factory=dict)  # the stack's default, when it differs
    docs: Mapping[str, str] = field(default_factory=dict)  # the stack's wording, when it differs

    def fields(self) -> dict[str, Field]:
        every = fields(self.cls)
        out: dict[str, Field] = {}
        for name in self.names:
            f = every[name]
            if name in self.defaults:
                f = dataclasses.replace(f, default=self.defaults[name], default_factory=None)
            if name in self.docs:
                f = dataclasses.replace(f, doc=self.docs[name])
            out[name] = f
        return out


@dataclass(frozen=True)
class Section:
    """A config map: its keys are the fields of its parts (camelCase)."""

    path: str
    doc: str
    parts: tuple[Part, ...]
    retired: Mapping[str, str] = field(default_factory=dict)

    def keys(self) -> dict[str, tuple[Part, Field]]:
        return {camel(n): (p, f) for p in self.parts for n, f in p.fields().items()}

    def required(self) -> list[tuple[Part, Field]]:
        return [
            (p, f)
            for p in self.parts
            for n, f in p.fields().items()
            if n in p.required or (f.required and not _filled_by_stack(p.cls, n))
        ]


def _filled_by_stack(cls: type, name: str) -> bool:
    """Required args the stack supplies itself (not config keys)."""
    return (cls, name) in {(GpuNodePoolArgs, "cluster_name"), (GpuNodePoolArgs, "resource_group_name")}


WAITS = (
    "wait_for_ready",
    "ready_timeout_minutes",
    "wait_for_gpu_nodes",
    "gpu_nodes_timeout_minutes",
)
WORKSPACE_KEYS = (
    "name",
    "namespace",
    "model",
    "image",
    "compute",
    "replicas",
    "label_selector",
    "node_selector",
    "runtime",
    "instance_type",
    "adapters",
    "config",
    "tuning",
    "model_access_secret",
    "ready_timeout_minutes",
    "load_balancer",
    "port",
    "args",
    "resources",
)

TOP = Section(
    "",
    "Top-level keys (namespace `kaito-aks:`)",
    (Part(StackNamespaces, ("create_namespaces",)),),
)
KUBECONFIG = Section(
    "cluster.kubeconfig",
    "An existing cluster reached through a kubeconfig. The file's contents may instead come from the "
    "secret config value `kaito-aks:kubeconfig`.",
    (Part(KubeconfigClusterArgs, ("path", "context")),),
)
AKS = Section(
    "cluster.aks",
    "An AKS cluster this stack creates (with its resource group).",
    (
        Part(
            AksClusterArgs,
            (
                "resource_group",
                "name",
                "location",
                "kubernetes_version",
                "system_pool",
                "tags",
                "ai_toolchain_operator",
            ),
            docs={
                "location": "Azure region; default: `azure-native:location`",
                "name": "The cluster's name (also its DNS prefix and KAITO's clusterName).",
            },
        ),
        Part(StackProtect, ("protect",), docs={"protect": "Refuse to delete or replace the cluster (production)."}),
    ),
)
EXISTING = Section(
    "cluster.existing",
    "An AKS cluster that already exists; the stack adopts it read-only.",
    (
        Part(
            AksClusterArgs,
            ("resource_group", "name", "ai_toolchain_operator"),
            docs={
                "ai_toolchain_operator": "The cluster runs the AKS AI toolchain operator add-on (AKS's KAITO); "
                "checked at deploy time."
            },
        ),
    ),
)
KAITO = Section(
    "kaito",
    "The KAITO workspace operator, and how `pulumi up` waits for the models.",
    (
        Part(
            KaitoOperatorArgs,
            ("version", "node_provisioning", "node_provisioner", "feature_gates", "values"),
            defaults={"version": None, "node_provisioning": None},
            docs={
                "version": f"The KAITO release (chart and app version); default: {DEFAULT_KAITO_VERSION}, or with "
                "the AKS add-on the release it runs on the cluster's Kubernetes minor (catalog/aks_add_on.yaml: "
                "0.6.0 on 1.34, on a newer minor, or when the minor is not known).",
                "node_provisioning": "byo: your GPU nodes (gpuNodePools), auto-provisioning off; auto: KAITO creates "
                "a node of each workspace's instanceType; default: byo, or auto with the AKS add-on.",
            },
        ),
        Part(StackDiscovery, ("gpu_discovery",)),
        Part(
            StackKaito,
            ("install",),
            defaults={"install": None},
            docs={
                "install": "false: KAITO is already installed (a platform team's release, the AKS add-on); only "
                "Workspaces are created. Default: true, false with the AKS add-on."
            },
        ),
        Part(
            KaitoModelArgs,
            WAITS,
            docs={
                "ready_timeout_minutes": "How long to wait per model (large downloads take 20+ minutes); per workspace too."
            },
        ),
    ),
)
GPU_PROVISIONER = Section(
    "gpuProvisioner",
    "gpu-provisioner, which turns KAITO's NodeClaims into AKS node pools (kaito.nodeProvisioning auto), and "
    "its Azure workload identity (Contributor on the cluster).",
    (
        Part(StackGpuProvisioner, ("install",)),
        Part(
            GpuProvisionerArgs,
            ("version", "identity_name", "values"),
            defaults={"version": None},
            docs={
                "version": "Chart version: 0.3.8, 0.4.2 or 0.4.3; default: the one KAITO's own install pairs with "
                "kaito.version (0.8: 0.3.8, 0.11: 0.4.2, 0.12: 0.4.3).",
                "identity_name": "Azure name of its managed identity, in the cluster's resource group; default: "
                "<cluster name>-gpu-provisioner (one per cluster, when stacks share a resource group).",
            },
        ),
    ),
)
GPU_OPERATOR = Section(
    "gpuOperator",
    "The NVIDIA GPU Operator (driver, toolkit, device plugin, NFD, GFD on GPU nodes).",
    (Part(StackGpuOperator, ("enabled",)), Part(GpuOperatorArgs, ("version", "values"))),
)
POOL = Section(
    "gpuNodePools[]",
    "A User-mode AKS node pool of one GPU VM size.",
    (
        Part(
            GpuNodePoolArgs,
            ("name", "vm_size", "count", "autoscale", "gpu_driver", "spot", "labels", "taints", "os_disk_size_gb"),
            required=("name",),
            docs={"name": "The pool name: 1-12 lowercase letters and digits."},
        ),
        Part(StackProtect, ("protect",), docs={"protect": "Refuse to delete or replace the pool (production)."}),
    ),
)
WORKSPACE = Section(
    "workspaces[]",
    "One model deployment: a preset (GPU) or a custom image (e.g. llama.cpp on CPU).",
    (
        Part(
            KaitoModelArgs,
            WORKSPACE_KEYS,
            required=("name",),
            docs={
                "name": "DNS-1123 name; also the Service (endpoint) name.",
                "namespace": "Created unless `default` (see createNamespaces).",
                "ready_timeout_minutes": "Wait this long for this model to serve; default: kaito.readyTimeoutMinutes.",
                "node_selector": "Labels a custom image's nodes must carry too (KAITO keeps its pod's nodeSelector); "
                "default on AKS for a CPU model without labelSelector: kubernetes.azure.com/mode: system, the system "
                "pool, so it never takes a GPU node.",
                "instance_type": "The Azure VM size KAITO creates this workspace's nodes of; required with "
                "kaito.nodeProvisioning auto, refused with byo.",
            },
            defaults={"ready_timeout_minutes": None},
        ),
    ),
    retired=RETIRED,
)

RAG_ENGINE_OPERATOR = Section(
    "ragEngineOperator",
    "KAITO's RAGEngine operator (the `kaito/ragengine` chart, the version of kaito.version).",
    (Part(StackRagEngineOperator, ("install",)), Part(RagEngineOperatorArgs, ("values",))),
)
RAG_ENGINE = Section(
    "ragEngines[]",
    "A KAITO RAGEngine: documents indexed and retrieved into the prompts of a model of this stack (workspace) "
    "or any OpenAI-compatible LLM (inferenceService).",
    (
        Part(
            RagEngineArgs,
            (
                "name",
                "namespace",
                "embedding",
                "inference_service",
                "compute",
                "storage",
                "guardrails",
                "load_balancer",
                "ready_timeout_minutes",
            ),
            required=("name",),
            docs={"namespace": "Created unless `default` (see createNamespaces)."},
        ),
        Part(StackRagEngine, ("workspace", "context_window_size")),
    ),
)

# The nested arg classes the README documents under their section.
NESTED: Sequence[tuple[str, type]] = (
    ("cluster.aks.systemPool", SystemPoolArgs),
    ("gpuNodePools[].autoscale", AutoscaleArgs),
    ("workspaces[].adapters[]", AdapterArgs),
    ("workspaces[].tuning", TuningArgs),
    ("ragEngines[].inferenceService", InferenceServiceArgs),
    ("ragEngines[].compute", RagComputeArgs),
    ("ragEngines[].storage", StorageArgs),
    ("ragEngines[].guardrails", GuardrailsArgs),
    ("ragEngines[].embedding", EmbeddingArgs),
)
CLUSTER_CHOICES = {"kubeconfig": KUBECONFIG, "aks": AKS, "existing": EXISTING}
TOP_KEYS = {
    "cluster",
    "kaito",
    "workspaces",
    "gpuNodePools",
    "gpuOperator",
    "gpuProvisioner",
    "ragEngineOperator",
    "ragEngines",
    "createNamespaces",
}
SECRET_KEYS = ("hfToken", "kubeconfig")
SECRET_DOCS = {
    "hfToken": "Hugging Face token for gated presets (llama); `pulumi config set --secret hfToken <token>`",
    "kubeconfig": "kubeconfig contents for a kubeconfig cluster, instead of a file; "
    "`pulumi config set --secret kubeconfig < file`",
}


def read_section(
    section: Section, data: Any, path: tuple[PathPart, ...], out: list[Problem]
) -> dict[type, dict[str, Any]] | None:
    """A config map's values, by the args class each key belongs to; problems appended (every
    key is checked; an unknown one is named with a suggestion from this section only). A key
    with a problem is left out of the values. None when `data` is not a map or a required key
    is missing."""
    if not isinstance(data, Mapping):
        out.append(Problem(path, f"must be a map of key: value, not {shown(data)}", "type"))
        return None
    keys = section.keys()
    values: dict[type, dict[str, Any]] = {p.cls: {} for p in section.parts}
    for key, value in data.items():
        if not isinstance(key, str) or key not in keys:
            out.append(_unknown(section, str(key), list(keys), path))
            continue
        part, f = keys[key]
        before = len(out)
        checked = check_value(f.type, value, (*path, f.name), "schema", out)
        if not unusable(out[before:]):
            values[part.cls][f.name] = checked  # well typed, perhaps out of bounds: the rules judge the rest
    missing = False
    for part, f in section.required():
        if f.name not in values[part.cls]:
            missing = True
            if camel(f.name) not in data:
                out.append(
                    Problem(
                        (*path, f.name), "required: " + (f.doc.split("\n")[0].rstrip(".") if f.doc else ""), "required"
                    )
                )
    return None if missing else values


def _unknown(section: Section, key: str, known: list[str], path: tuple[PathPart, ...]) -> Problem:
    for old, fix in section.retired.items():
        if key in (old, camel(old)):
            return Problem((*path, Key(key)), fix, "retired")
    close = did_you_mean(key, known)
    hint = f"did you mean {close[0]}?" if close else f"known keys: {', '.join(known)}"
    return Problem((*path, Key(key)), f"unknown key; {hint}", "unknown")


# ---------------------------------------------------------------- the result


@dataclass(frozen=True)
class PoolConfig:
    args: GpuNodePoolArgs  # cluster_name and resource_group_name: filled in by the program
    protect: bool = False


@dataclass(frozen=True)
class RagEngineConfig:
    args: RagEngineArgs  # a workspace's endpoint: its in-cluster URL, the Output at `up`
    workspace: str | None = None  # the workspaces[] entry it answers with


@dataclass(frozen=True)
class StackConfig:
    """A stack's config, checked, as the components' args."""

    kubeconfig_cluster: KubeconfigClusterArgs | None
    aks_cluster: AksClusterArgs | None
    cluster_protect: bool
    kaito: KaitoOperatorArgs
    kaito_install: bool
    gpu_discovery_given: bool  # kaito.gpuDiscovery was written
    models: tuple[KaitoModelArgs, ...]
    pools: tuple[PoolConfig, ...]
    gpu_operator: GpuOperatorArgs | None  # None: not installed
    gpu_operator_written: bool  # the gpuOperator key is there
    gpu_provisioner: GpuProvisionerArgs | None  # None: not installed; its cluster inputs: placeholders
    given: frozenset[str]  # the settings written in the file whose default depends on others, e.g. "kaito.install"
    rag_engines: tuple[RagEngineConfig, ...]
    rag_operator: RagEngineOperatorArgs | None  # None: not installed
    create_namespaces: bool
    has_hf_token: bool
    has_kubeconfig: bool
    azure_location: str | None
    # Every GPU pool the models and engines may land on is in `pools` (a cluster this stack
    # creates, bring-your-own nodes): what they need together can be counted.
    pools_known: bool = False
    # What cannot be checked before KAITO sees it (e.g. a Hugging Face id outside KAITO's
    # catalog), at config paths: `validate` prints them; under `pulumi up` each model logs its own.
    warnings: tuple[Problem, ...] = ()

    @property
    def is_azure(self) -> bool:
        return self.aks_cluster is not None

    @property
    def add_on(self) -> bool:
        """AKS runs KAITO (the AI toolchain operator add-on)."""
        return self.aks_cluster is not None and self.aks_cluster.ai_toolchain_operator

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces this stack creates."""
        if not self.create_namespaces:
            return ()
        used = {m.namespace for m in self.models} | {r.args.namespace for r in self.rag_engines}
        return tuple(sorted(used - {"default"}))


def defaults(cls: type) -> dict[str, Any]:
    return {n: f.default_value() for n, f in fields(cls).items() if not f.required}


def model_defaults(kaito: dict[type, dict[str, Any]], operator: KaitoOperatorArgs) -> dict[str, Any]:
    """What every workspace gets from the `kaito` section (with its defaults resolved)."""
    waits = kaito[KaitoModelArgs]
    return {
        "kaito_version": operator.version,
        "node_provisioning": operator.node_provisioning,
        **{k: waits[k] for k in WAITS if k in waits},
    }
