"""The stack file's schema: what a person writes under `config:` in Pulumi.<stack>.yaml (keys under
`kaito-aks:`), as one nested schema of the file's own shape, and StackConfig, the checked result
the program builds its components from.

Nothing here declares a model, a pool or an operator setting again: each section of the file is
the fields of a component's Args minus what the stack fills in itself (a model's KAITO release,
its pools, its credentials), with their types, bounds, docs and defaults, plus the few settings
only a whole stack has (`kaito.install`, a pool's `protect`, ...). pydantic reads the whole file
in one call (stacks/load.py), so each problem is born at its config path; the same sections
give the configuration reference (docs/configuration.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any, Optional, cast

import typing_extensions
from pydantic import BeforeValidator, ConfigDict, TypeAdapter

from kaito_aks.azure.aks_cluster import AksClusterArgs
from kaito_aks.azure.cpu_node_pool import CpuNodePoolArgs
from kaito_aks.azure.gpu_node_pool import GpuNodePoolArgs
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigClusterArgs
from kaito_aks.endpoints import AllowFromArgs
from kaito_aks.model.spec import READY_TIMEOUT_MINUTES, KaitoModelArgs
from kaito_aks.model_streaming import ModelStreamingArgs
from kaito_aks.nodes import CpuNodes
from kaito_aks.operators.gpu_operator import GpuOperatorArgs
from kaito_aks.operators.gpu_provisioner import GpuProvisionerArgs
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs
from kaito_aks.operators.karpenter import KarpenterArgs
from kaito_aks.operators.ragengine_operator import RagEngineOperatorArgs
from kaito_aks.pod_security import namespace_level
from kaito_aks.problems import PathPart, Problem, camel
from kaito_aks.rag.spec import RagEngineArgs
from kaito_aks.schema import REQUIRED, SHAPED, Field, MaxItems, Range, fields, optional_of
from kaito_aks.serving.dashboard import VllmDashboardArgs
from kaito_aks.serving.gateway import InferenceGatewayArgs
from kaito_aks.serving.keda import KedaAutoscalingArgs
from kaito_aks.serving.spec import ModelMetricsArgs
from kaito_aks.validation import RETIRED_KEYS, SECTION_FIELDS, SOFT
from kaito_aks.vocabulary import GpuDiscovery
from stacks.decide import Decisions, Generation, decision_docs

PROJECT = "kaito-aks"
DECISION_DOCS = decision_docs()
SECRET_KEYS = ("hfToken", "kubeconfig")
# Keys that hold secrets inside them (set with `pulumi config set --path --secret`; Pulumi then
# marks the whole key secret): the config paths where a secret may be, by key.
NESTED_SECRETS: dict[str, tuple[tuple[str, ...], ...]] = {
    "gateway": (("apiKeys", "*"), ("tls", "certificate"), ("tls", "key")),
}
NESTED_SECRET_DOCS = {
    "gateway.apiKeys.<name>": "an API key of the gateway; `pulumi config set --path --secret "
    "'kaito-aks:gateway.apiKeys.<name>' \"$(openssl rand -hex 32)\"`",
    "gateway.tls.certificate, gateway.tls.key": "the gateway's HTTPS certificate and key (PEM); `pulumi config set --path "
    "--secret 'kaito-aks:gateway.tls.key' < key.pem`",
}
SECRET_DOCS = {
    "hfToken": "Hugging Face token for the models that need one (gated: `models list` says which) and those whose "
    "workspace asks (useHfToken); before `kaito-aks:defaults: 3`, every model whose weights are downloaded at start-up; "
    "`pulumi config set --secret hfToken <token>`",
    "kubeconfig": "kubeconfig contents for a kubeconfig cluster, instead of a file; "
    "`pulumi config set --secret kubeconfig < file`",
}

# ---------------------------------------------------------------- a section: args fields, and the stack's own


def decided_doc(doc: str, decision: str | None) -> str:
    """A key's doc with the default the stack decides for it: the decision's own docstring
    (stacks/decide.py), so the reference and the code say it once."""
    return f"{doc.rstrip()} Default: {DECISION_DOCS[decision]}" if decision else doc


@dataclass(frozen=True)
class Take:
    """Fields of one args class a section offers: all but `without` (what the stack fills in),
    or `only` those. `required`: required here whatever the class says; `decided`: fields whose
    default the stack decides, by the decision's name (stacks/decide.py: its doc says the
    default; "": the field's doc says where the stack takes it from); `docs`: the stack's wording."""

    cls: type
    without: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    decided: Mapping[str, str] = field(default_factory=dict[str, str])
    docs: Mapping[str, str] = field(default_factory=dict[str, str])

    def fields(self) -> dict[str, Field]:
        every = fields(self.cls)
        names = self.only or tuple(n for n in every if n not in self.without)
        out: dict[str, Field] = {}
        for name in names:
            f = every[name]
            default = REQUIRED if name in self.required else (None if name in self.decided else f.default)
            required = name in self.required
            out[name] = Field(
                name=name,
                type=(optional_of(f.type) or f.type) if required else f.type,  # required: null is no value
                doc=decided_doc(self.docs.get(name, f.doc), self.decided.get(name)),
                owner=f.owner,
                default=default,
                default_factory=None if name in self.required or name in self.decided else f.default_factory,
            )
        return out


@dataclass(frozen=True)
class Own:
    """A setting only a whole stack has (no component takes it): its type and doc; its default
    is `default`, or the stack decides it (`decided`: the decision, whose doc says the default)."""

    type: Any
    doc: str
    default: Any = None
    decided: str | None = None


@dataclass(frozen=True)
class Section:
    """A map of the stack file (a list's entry: `path` ends in []): its keys are the fields of its
    takes and its own settings, in camelCase."""

    path: str
    doc: str
    takes: tuple[Take, ...] = ()
    own: Mapping[str, Own] = field(default_factory=dict[str, Own])

    def fields(self) -> dict[str, Field]:
        """Its keys by arg name, the required ones first."""
        out: dict[str, Field] = {}
        for take in self.takes:
            out |= take.fields()
        for name, setting in self.own.items():
            doc = decided_doc(setting.doc, setting.decided)
            out[name] = Field(name=name, type=setting.type, doc=doc, owner=Section, default=setting.default)
        return dict(sorted(out.items(), key=lambda item: not item[1].required))

    @cached_property
    def schema(self) -> Any:
        """The section as pydantic reads it: a TypedDict of what the file writes (only the keys
        it writes come out, by arg name), camelCase keys, unknown keys refused."""
        every = self.fields()
        typed = {n: Annotated[f.type, SHAPED] for n, f in every.items()}
        keys = {n: (typing_extensions.Required[typed[n]] if f.required else typed[n]) for n, f in every.items()}
        section = typed_dict(self.path.replace("[]", "") or "top", keys, {n: f.type for n, f in every.items()})
        section.__docs__ = {n: f.doc for n, f in every.items()}
        # a class's retired keys, where the section stands for that class (it takes more than a few fields)
        retired = {k: v for t in self.takes if not t.only for k, v in getattr(t.cls, RETIRED_KEYS, {}).items()}
        setattr(section, RETIRED_KEYS, retired)
        return Annotated[section, SOFT]


def typed_dict(name: str, keys: Mapping[str, Any], types: Mapping[str, Any], **config: Any) -> Any:
    """A map of the file as pydantic reads it: a TypedDict of `keys` (only those written come out,
    by arg name), with the section config; `types`: its keys' types, for the problems' words."""
    made: Any = cast(Any, typing_extensions.TypedDict)(name, dict(keys), total=False)
    made.__pydantic_config__ = {**SECTION_CONFIG, **config}
    setattr(made, SECTION_FIELDS, dict(types))
    return made


SECTION_CONFIG = ConfigDict(
    strict=True,
    extra="forbid",
    alias_generator=camel,
    validate_by_alias=True,
    validate_by_name=False,  # a stack file writes camelCase
    loc_by_alias=False,
    allow_inf_nan=False,
)

# ---------------------------------------------------------------- the sections

WAITS = ("wait_for_ready", "ready_timeout_minutes", "wait_for_gpu_nodes", "gpu_nodes_timeout_minutes")
# What the stack fills in for every model (kaito.*, its pools, the secret hfToken, the cluster's
# credentials), and the stack-wide waits (kaito.*; readyTimeoutMinutes may be given per model too).
MODEL_FILLED = (
    "gateway",  # (a workspace's own `gateway` and `metrics` say whether it is routed and scraped)
    "metrics",
    "kaito_version",
    "node_provisioning",
    "hf_token",
    "node_groups",
    "kubeconfig",
    "context",
    "wait_for_ready",
    "wait_for_gpu_nodes",
    "gpu_nodes_timeout_minutes",
    "node_provisioner",
)

TOP = Section(
    "",
    "Top-level keys (namespace `kaito-aks:`)",
    own={
        "create_namespaces": Own(bool, "Create the workspaces' namespaces (other than default).", True),
        "defaults": Own(
            Generation,
            "The generation of this program's defaults the stack was made with: 1 (no key: the stacks made before "
            "generation 2, which keep gpu-provisioner for KAITO 0.12 in auto mode), 2 (Karpenter is KAITO 0.12's "
            "auto-mode provisioner on a cluster the stack creates) or 3 (a new stack: as 2, `hfToken` goes only "
            "to the models that need it, or ask for it with useHfToken, and KAITO 0.12 installed on a cluster the "
            "stack creates mirrors and streams its vLLM presets' weights, kaito.modelStreaming); docs/upgrading.md "
            "lists what each changes. Upgrading this program never changes a stack's generation.",
            1,
        ),
    },
)
KUBECONFIG = Section(
    "cluster.kubeconfig",
    "An existing cluster reached through a kubeconfig. The file's contents may instead come from the "
    "secret config value `kaito-aks:kubeconfig`.",
    (Take(KubeconfigClusterArgs, without=("kubeconfig",)),),
)
AKS = Section(
    "cluster.aks",
    "An AKS cluster this stack creates (with its resource group).",
    (
        Take(
            AksClusterArgs,
            without=("existing", "keda"),  # (the KEDA add-on: autoscaling.keda addon)
            decided={"node_subnet": "node_subnet", "location": "cluster_location"},
            docs={
                "location": "Azure region.",
                "name": "The cluster's name (also its DNS prefix and KAITO's clusterName).",
                "node_subnet": "The subnet of the cluster's nodes: made with the cluster (addressSpace, "
                "addressPrefix) or yours (subnetId).",
            },
        ),
    ),
    own={"protect": Own(bool, "Refuse to delete or replace the cluster (production).", False)},
)
EXISTING = Section(
    "cluster.existing",
    "An AKS cluster that already exists; the stack adopts it read-only.",
    (
        Take(
            AksClusterArgs,
            only=("resource_group", "name", "ai_toolchain_operator", "kubelogin_mode"),
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
        Take(
            KaitoOperatorArgs,
            without=("node_groups", "cluster_name", "gpu_discovery"),
            decided={
                "version": "kaito_version",
                "node_provisioning": "node_provisioning",
                "node_provisioner": "node_provisioner",
            },
            docs={
                "version": "The KAITO release (chart and app version).",
                "node_provisioning": "byo: your GPU nodes (gpuNodePools), auto-provisioning off; auto: KAITO creates "
                "a node of each workspace's instanceType.",
                "node_provisioner": "With auto: what makes KAITO's nodes: gpu-provisioner (an AKS node pool per "
                "node) or karpenter (KAITO 0.11+: self-hosted Karpenter, its VMs from KAITO's node classes; "
                "installed with a cluster this stack creates).",
            },
        ),
        Take(
            KaitoModelArgs,
            only=WAITS,
            docs={
                "ready_timeout_minutes": "How long to wait per model (large downloads take 20+ minutes); per workspace "
                f"too. Default: {READY_TIMEOUT_MINUTES['byo']} minutes, {READY_TIMEOUT_MINUTES['auto']} with "
                "nodeProvisioning auto (KAITO's new node takes about 7 minutes to be ready)."
            },
        ),
    ),
    own={
        "gpu_discovery": Own(
            GpuDiscovery | None,
            "kaito: KAITO's bundled device plugin, NFD and GFD; external (e.g. the GPU Operator).",
            decided="gpu_discovery",
        ),
        "install": Own(
            bool,
            "false: KAITO is already installed (a platform team's release, the AKS add-on); only Workspaces are "
            "created.",
            decided="kaito_install",
        ),
        "model_streaming": Own(
            bool | None,
            "KAITO 0.11+'s ModelMirror and ModelStreaming on AKS: each vLLM preset's weights are downloaded once "
            "into a Blob volume while its GPU node is made, and streamed into vLLM (the gates, the cluster's Blob CSI "
            "driver, the blob-fuse StorageClass, a kaito-model-streamer ServiceAccount and federated credential per "
            "namespace, Storage Blob Data Reader for the kubelet identity).",
            decided="model_streaming",
        ),
    },
)
GPU_PROVISIONER = Section(
    "gpuProvisioner",
    "gpu-provisioner, which turns KAITO's NodeClaims into AKS node pools (kaito.nodeProvisioning auto), and "
    "its Azure workload identity (a custom role on the cluster: its agent pools, read, write, delete).",
    (
        Take(
            GpuProvisionerArgs,
            only=("version", "identity_name", "values"),
            decided={"version": "gpu_provisioner_version"},
            docs={
                "version": "Chart version: 0.3.8, 0.4.2 or 0.4.3.",
                "identity_name": "Azure name of its managed identity, in the cluster's resource group; default: "
                "<cluster name>-gpu-provisioner (one per cluster, when stacks share a resource group).",
            },
        ),
    ),
    own={"install": Own(bool | None, "Whether the stack installs gpu-provisioner.", decided="gpu_provisioner")},
)
KARPENTER = Section(
    "karpenter",
    "Self-hosted Azure Karpenter, which makes KAITO's nodes with kaito.nodeProvisioner karpenter, and its Azure "
    "workload identity (Virtual Machine Contributor, Network Contributor and Managed Identity Operator on the "
    "node resource group; Network Contributor on the nodes' subnet).",
    (
        Take(
            KarpenterArgs,
            only=("version", "identity_name", "bootstrap_token_rotation", "bootstrap_token_lifetime_days", "values"),
            decided={"version": "karpenter_version", "bootstrap_token_lifetime_days": "bootstrap_token_lifetime"},
            docs={
                "version": "Chart version: 1.12.0.",
                "identity_name": "Azure name of its managed identity, in the cluster's resource group; default: "
                "<cluster name>-karpenter.",
                "bootstrap_token_lifetime_days": "Days the nodes' bootstrap token lives; `pulumi up` renews it once "
                "half of that has passed (bring the stack up at least that often).",
            },
        ),
    ),
    own={"install": Own(bool | None, "Whether the stack installs Karpenter.", decided="karpenter")},
)
GPU_OPERATOR = Section(
    "gpuOperator",
    "The NVIDIA GPU Operator (driver, toolkit, device plugin, NFD, GFD on GPU nodes).",
    (Take(GpuOperatorArgs, without=("node_groups",)),),
    own={"enabled": Own(bool | None, "Whether the stack installs the NVIDIA GPU Operator.", decided="gpu_operator")},
)
POOL = Section(
    "gpuNodePools[]",
    "A User-mode AKS node pool of one GPU VM size.",
    (
        Take(
            GpuNodePoolArgs,
            without=("cluster", "cluster_name", "resource_group_name"),
            required=("name",),
            docs={"name": "The pool name: 1-12 lowercase letters and digits."},
        ),
    ),
    own={"protect": Own(bool, "Refuse to delete or replace the pool (production).", False)},
)
CPU_POOL = Section(
    "cpuNodePools[]",
    "An AKS node pool of one CPU VM size (aks/existing clusters): CPU models and RAG engines run there instead of "
    "on the system pool (mode User; the first untainted one takes every CPU model that says nothing of where it "
    "runs), or a second system pool (mode System).",
    (
        Take(
            CpuNodePoolArgs,
            without=("cluster", "cluster_name", "resource_group_name", "vnet_subnet_id"),  # (the cluster's)
            required=("name",),
            docs={"name": "The pool name: 1-12 lowercase letters and digits."},
        ),
    ),
    own={"protect": Own(bool, "Refuse to delete or replace the pool (production).", False)},
)
WORKSPACE = Section(
    "workspaces[]",
    "One model deployment: a preset (GPU) or a custom image (e.g. llama.cpp on CPU).",
    (
        Take(
            KaitoModelArgs,
            without=MODEL_FILLED,
            required=("name",),
            decided={"ready_timeout_minutes": "", "node_selector": "cpu_home"},
            docs={
                "name": "DNS-1123 name; also the Service (endpoint) name.",
                "namespace": "Created unless `default` (see createNamespaces).",
                "ready_timeout_minutes": "Wait this long for this model to serve; default: kaito.readyTimeoutMinutes "
                f"({READY_TIMEOUT_MINUTES['byo']} minutes, {READY_TIMEOUT_MINUTES['auto']} with nodeProvisioning auto).",
                "node_selector": "Labels a custom image's nodes must carry too (KAITO keeps its pod's nodeSelector).",
                "instance_type": "The Azure VM size KAITO creates this workspace's nodes of; required with "
                "kaito.nodeProvisioning auto, refused with byo.",
            },
        ),
    ),
    own={
        "gateway": Own(
            bool | None,
            "Route the model through the stack's gateway (its model id picks its route).",
            decided="routed",
        ),
        "metrics": Own(bool | None, "Have Prometheus scrape the model's vLLM metrics.", decided="scraped"),
        "use_hf_token": Own(
            bool | None,
            "Give the model the stack's `hfToken` (a Secret `<name>-hf-token`, its modelAccessSecret), e.g. for a "
            "private Hugging Face repository; false: never.",
            decided="hf_token",
        ),
    },
)
GATEWAY = Section(
    "gateway",
    "One OpenAI-compatible gateway for the stack's models, with authentication at its door (KAITO 0.12: Istio with "
    "KAITO's gateway extension, body-based routing by `model`, Authorino). Each workspace that is a vLLM preset is "
    "routed through it (workspaces[].gateway).",
    (
        Take(
            InferenceGatewayArgs,
            without=("model_namespaces", "models"),
            decided={"exposure": "gateway_exposure"},
            docs={
                "exposure": "internal: an Azure internal load balancer (the VNet); public: an Azure public load "
                "balancer, from sourceRanges only, with tls (warned); cluster: a ClusterIP Service (kubectl "
                "port-forward).",
                "api_keys": "API keys by name, each a secret: `pulumi config set --path --secret "
                "'kaito-aks:gateway.apiKeys.<name>' <key>` (at least 32 characters, e.g. `openssl rand -hex 32`); "
                "clients send `Authorization: Bearer <key>`. Rotate a key by setting it again; add or remove names "
                "freely.",
                "tls": "Serve HTTPS on 443 (required with exposure public); certificate and key are secrets: `pulumi "
                "config set --path --secret 'kaito-aks:gateway.tls.key' < key.pem`.",
            },
        ),
    ),
)
AUTOSCALING = Section(
    "autoscaling",
    "KEDA and keda-kaito-scaler, installed when a workspace has autoscale (KAITO 0.12): where KEDA comes from.",
    (Take(KedaAutoscalingArgs, without=("kaito_version",)),),
)
METRICS = Section(
    "metrics",
    "Prometheus scrapes every vLLM model's metrics (a ServiceMonitor on its Service; workspaces[].metrics), and a "
    "Grafana dashboard of them.",
    (
        Take(
            ModelMetricsArgs,
            decided={"flavour": "metrics_flavour", "labels": "metrics_labels"},
            docs={
                "flavour": "azureManagedPrometheus (AKS's managed Prometheus) or prometheusOperator (e.g. "
                "kube-prometheus-stack).",
                "labels": "Labels on the ServiceMonitors.",
            },
        ),
    ),
    own={
        "dashboard": Own(
            bool,
            "With prometheusOperator: the Grafana dashboard as a ConfigMap its sidecar loads (label "
            'grafana_dashboard: "1") in dashboardNamespace. Azure Managed Grafana: import `python -m stacks '
            "dashboard` instead.",
            True,
        ),
        "dashboard_namespace": Own(
            str | None, "The dashboard ConfigMap's namespace (it must exist).", decided="dashboard_namespace"
        ),
    },
)
RAG_ENGINE_OPERATOR = Section(
    "ragEngineOperator",
    "KAITO's RAGEngine operator (the `kaito/ragengine` chart, the version of kaito.version).",
    (Take(RagEngineOperatorArgs, without=("version",)),),
    own={"install": Own(bool | None, "Whether the stack installs KAITO's RAGEngine operator.", decided="rag_operator")},
)
RAG_ENGINE = Section(
    "ragEngines[]",
    "A KAITO RAGEngine: documents indexed and retrieved into the prompts of a model of this stack (workspace) "
    "or any OpenAI-compatible LLM (inferenceService).",
    (
        Take(
            RagEngineArgs,
            without=("kaito_version", "kubeconfig", "context", "wait_for_ready"),
            required=("name",),
            docs={"namespace": "Created unless `default` (see createNamespaces)."},
        ),
    ),
    own={
        "workspace": Own(
            str | None,
            "A workspaces[] entry of the same namespace whose model answers the engine's chat completions (instead "
            "of inferenceService): its endpoint, and the engine waits for it to serve.",
        ),
        "context_window_size": Own(
            Optional[Annotated[int, Range(1, None, "a positive number of tokens")]],  # noqa: UP045 (a value, not a hint)
            "With workspace: the model's context window; default: the workspace's config.vllm.max-model-len "
            "(without one, KAITO sizes it from the GPU at start-up, so say it here).",
        ),
    },
)
ENDPOINTS = Section(
    "endpoints",
    "Who may call the models and RAG engines: each gets a NetworkPolicy admitting its own namespace, these, and "
    "its load balancer's clients (enforced where the cluster has a policy engine; AKS clusters this stack creates "
    "run Cilium).",
    own={
        "allow_from": Own(
            Annotated[list[AllowFromArgs], MaxItems(50)],
            "Namespaces (and, with podLabels, only their pods matching) allowed to call every workspace and RAG "
            "engine of the stack, e.g. a gateway's or a monitoring namespace; an entry's own allowFrom adds to "
            "these. Default: none.",
        )
    },
)
CLUSTER_CHOICES = {"kubeconfig": KUBECONFIG, "aks": AKS, "existing": EXISTING}
SECTIONS = (KUBECONFIG, AKS, EXISTING, KAITO, POOL, CPU_POOL, GPU_OPERATOR, GPU_PROVISIONER, KARPENTER, WORKSPACE)
SECTIONS += (RAG_ENGINE_OPERATOR,)
SECTIONS += (RAG_ENGINE, ENDPOINTS, GATEWAY, AUTOSCALING, METRICS)


def _empty_if_null(value: Any) -> Any:
    return {} if value is None else value  # `kubeconfig:` with nothing under it: the defaults


_CLUSTER = typed_dict(
    "cluster",
    {kind: Annotated[s.schema, BeforeValidator(_empty_if_null)] for kind, s in CLUSTER_CHOICES.items()},
    {kind: s.schema for kind, s in CLUSTER_CHOICES.items()},
)
_CLUSTER.__docs__ = {kind: s.doc for kind, s in CLUSTER_CHOICES.items()}
CLUSTER: Any = Annotated[_CLUSTER, SOFT]  # (exactly one of them: stacks/load.py)

# The file: its top-level keys (each under `kaito-aks:`), each read on its own.
FILE_KEYS: dict[str, Any] = {
    "cluster": CLUSTER,
    "kaito": KAITO.schema,
    "workspaces": Annotated[list[WORKSPACE.schema], SOFT],
    "gpu_node_pools": Annotated[list[POOL.schema], SOFT],
    "cpu_node_pools": Annotated[list[CPU_POOL.schema], SOFT],
    "gpu_operator": GPU_OPERATOR.schema,
    "gpu_provisioner": GPU_PROVISIONER.schema,
    "karpenter": KARPENTER.schema,
    "rag_engine_operator": RAG_ENGINE_OPERATOR.schema,
    "rag_engines": Annotated[list[RAG_ENGINE.schema], SOFT],
    "endpoints": ENDPOINTS.schema,
    "create_namespaces": Annotated[bool, SOFT],
    "gateway": GATEWAY.schema,
    "autoscaling": AUTOSCALING.schema,
    "metrics": METRICS.schema,
    "defaults": Annotated[Generation, SOFT],
}
TOP_KEYS = {camel(k) for k in FILE_KEYS}
_FILE = typed_dict("file", FILE_KEYS, FILE_KEYS, extra="ignore")  # (the other keys: stacks/load.py says them)
STACK_FILE: TypeAdapter[dict[str, Any]] = TypeAdapter(_FILE)
"""The whole file (its kaito-aks keys, without the namespace), read in one call; a section or an
entry with problems holds them (validation.Refused) and does not stop the rest."""

# ---------------------------------------------------------------- the result


@dataclass(frozen=True)
class Placed:
    """Where the args of one entry came from: the entry's config path, and the config path of
    each arg the stack filled in (a model's KAITO release is kaito.version's), so a component's
    problem about an arg is said where the arg was written (stacks/judge.py); and a list entry as
    written, for the rules that ask what its args cannot tell (whether it wrote gateway or allowFrom)."""

    at: tuple[PathPart, ...]
    filled: Mapping[str, tuple[PathPart, ...]] = field(default_factory=dict[str, tuple[PathPart, ...]])
    written: Mapping[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True)
class PoolConfig:
    args: GpuNodePoolArgs  # its cluster: given by the program
    protect: bool = False
    placed: Placed = Placed(())


@dataclass(frozen=True)
class CpuPoolConfig:
    args: CpuNodePoolArgs  # its cluster: given by the program
    protect: bool = False
    placed: Placed = Placed(())


@dataclass(frozen=True)
class ModelConfig:
    args: KaitoModelArgs
    placed: Placed = Placed(())
    warnings: tuple[Problem, ...] = ()  # its rules' warnings, relative to its args (the component logs them)


@dataclass(frozen=True)
class RagEngineConfig:
    args: RagEngineArgs  # a workspace's endpoint: its in-cluster URL, the Output at `up`
    workspace: str | None = None  # the workspaces[] entry it answers with
    placed: Placed = Placed(())
    warnings: tuple[Problem, ...] = ()  # its rules' warnings, relative to its args (the component logs them)


@dataclass(frozen=True)
class StackConfig:
    """A stack's config, checked, as the components' args (each built once, stacks/build.py),
    with the decisions they were built from."""

    kubeconfig_cluster: KubeconfigClusterArgs | None
    aks_cluster: AksClusterArgs | None
    cluster_protect: bool
    kaito: KaitoOperatorArgs
    kaito_install: bool
    add_on: bool  # AKS runs KAITO (the AI toolchain operator add-on)
    decided: Decisions
    workspaces: tuple[ModelConfig, ...]
    pools: tuple[PoolConfig, ...]
    gpu_operator: GpuOperatorArgs | None  # None: not installed
    gpu_provisioner: GpuProvisionerArgs | None  # None: not installed; its cluster: given by the program
    karpenter: KarpenterArgs | None  # None: not installed; its cluster: given by the program
    generation: Generation  # kaito-aks:defaults (1 when the file has no such key)
    rag_engines: tuple[RagEngineConfig, ...]
    rag_operator: RagEngineOperatorArgs | None  # None: not installed
    create_namespaces: bool
    has_hf_token: bool
    has_kubeconfig: bool
    azure_location: str | None
    cpu_pools: tuple[CpuPoolConfig, ...] = ()
    # The CPU pools CPU models may run on, as placement sees them: the system pool of a cluster
    # this stack creates, then its cpuNodePools.
    cpu_nodes: tuple[CpuNodes, ...] = ()
    namespaces: tuple[str, ...] = ()  # the namespaces this stack creates
    # Every GPU pool the models and engines may land on is in `pools` (a cluster this stack
    # creates, bring-your-own nodes): what they need together can be counted.
    pools_known: bool = False
    # What cannot be checked before KAITO sees it (e.g. a Hugging Face id outside KAITO's
    # catalog), at config paths: `validate` prints them; under `pulumi up` each model logs its own.
    warnings: tuple[Problem, ...] = ()
    # Serving the models as one service: the gateway (the models it routes carry its name in
    # their args), KEDA for the autoscaled models, Prometheus scraping and the dashboard.
    gateway: InferenceGatewayArgs | None = None
    autoscaling: KedaAutoscalingArgs | None = None
    metrics: ModelMetricsArgs | None = None
    dashboard: VllmDashboardArgs | None = None
    # KAITO's ModelMirror/ModelStreaming pieces (stacks/streaming.py); its cluster inputs: placeholders
    model_streaming: ModelStreamingArgs | None = None

    @property
    def models(self) -> tuple[KaitoModelArgs, ...]:
        return tuple(w.args for w in self.workspaces)

    def pod_security(self, namespace: str) -> str:
        """The Pod Security level a namespace this stack creates enforces (the program's: stacks/program.py)."""
        return namespace_level(w.args for w in self.workspaces if w.args.namespace == namespace)
