"""What one RAG engine is: `RagEngineArgs`, the only declaration of its settings (KAITO's
RAGEngine, in kaito-aks' terms). The component and the provider schema read these fields, with
their docs, defaults and bounds, from here."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import field
from typing import Annotated, Any, Literal

import pulumi

from kaito_aks.cluster.kubeconfig_text import KubeconfigContents
from kaito_aks.endpoints import AllowFromArgs, LoadBalancerArgs
from kaito_aks.model.spec import DNS_SUBDOMAIN, MINUTES, LabelSelectorArgs
from kaito_aks.schema import DNS_LABEL, LATER, SWITCH, Input, Matches, MaxItems, Range, Secret, args_class

# KAITO names the Deployment and the Service after the RAGEngine: a Service name is a DNS-1035
# label (it starts with a letter).
DNS_1035_LABEL = Matches(
    r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?",
    "a DNS-1035 label (KAITO names the engine's Service after it): lowercase letters, digits and '-', starting "
    "with a letter, ending with a letter or digit, at most 63 characters",
)
# What KAITO's engine embeds with, whatever spec.embedding says (kaito-project/kaito#2365).
EFFECTIVE_EMBEDDING_MODEL = "BAAI/bge-small-en-v1.5"

VectorDbEngine = Literal["qdrant"]
"""An external vector database KAITO's engine can use (in-process FAISS is its default)."""


@args_class
class LocalEmbeddingArgs:
    """An embedding model the engine runs itself: `model_id` or `image`. KAITO 0.8.1 to 0.12.0
    do not pass either to the engine (kaito-project/kaito#2365): it embeds with
    BAAI/bge-small-en-v1.5 whatever they say."""

    model_id: str | None = None
    """A Hugging Face model id, downloaded when the engine starts (e.g. BAAI/bge-small-en-v1.5); give
    it or `image`."""
    image: str | None = None
    """A containerized embedding model: a full image reference with a tag (registry/repository:tag);
    give it or `model_id`."""
    image_pull_secret: Annotated[str, DNS_SUBDOMAIN] | None = None
    """A Secret to pull `image` with; default: none (a public image)."""
    model_access_secret: Annotated[str, DNS_SUBDOMAIN] | None = None
    """A Secret holding the Hugging Face token for `model_id`; default: none (a public model)."""


@args_class
class RemoteEmbeddingArgs:
    """An embedding service the engine calls (e.g. OpenAI's). KAITO 0.8.1 to 0.12.0 do not pass
    it to the engine (kaito-project/kaito#2365): it embeds locally with BAAI/bge-small-en-v1.5."""

    url: str
    """The embedding service's URL (e.g. https://api.openai.com/v1/embeddings)."""
    access_secret: Annotated[str, DNS_SUBDOMAIN] | None = None
    """A Secret holding the service's access token; default: none (no token sent)."""


@args_class
class EmbeddingArgs:
    """How the engine embeds documents and queries: `local` or `remote`, one of them."""

    local: LocalEmbeddingArgs | None = None
    """A model the engine runs itself (give this or `remote`)."""
    remote: RemoteEmbeddingArgs | None = None
    """A service the engine calls (give this or `local`)."""


@args_class
class InferenceServiceArgs:
    """The LLM the engine answers chat completions with: a model in the same program (its
    `endpoint`) or any OpenAI-compatible chat completions URL."""

    url: Annotated[str | Awaitable[str] | pulumi.Output[str | None], LATER]  # an Input[str], or a model's endpoint
    """The LLM's chat completions URL (http(s)://host/.../chat/completions), e.g. a KaitoModel's
    `endpoint` output, so the RAG engine is created after the model's Service (a tuning job's
    endpoint, which is empty, is refused at deploy time)."""
    context_window_size: Annotated[int, Range(1, None, "KAITO's webhook: ContextWindowSize must be a positive integer")]
    """The LLM's combined input and output token limit (e.g. its max-model-len); the engine fits
    the retrieved documents into it."""
    access_secret: Annotated[str, DNS_SUBDOMAIN] | None = None
    """An existing Secret with key LLM_ACCESS_SECRET: the bearer token the engine sends the LLM;
    default: none (no token sent)."""
    access_token: Secret[Input[str]] | None = None
    """The LLM's bearer token (kept secret), put in a Secret the component creates, instead of
    `access_secret`; default: none. A KAITO model needs none."""


@args_class
class RagComputeArgs:
    """The node the engine runs on, found among the nodes with `label_selector.match_labels` and
    the instance type (or provisioned by KAITO through the gpu-provisioner when none is Ready).
    It cannot change once created."""

    instance_type: str
    """The node's Azure VM size. KAITO 0.8: a GPU size of KAITO's table; 0.11+: a size of that
    table (GPU requests) or any N- or D-series size. Bring your own node: its exact size."""
    label_selector: LabelSelectorArgs
    """The labels the node carries (`match_labels`); the engine's pod is placed by them."""


@args_class
class VectorDbArgs:
    """An external vector database instead of the engine's in-process FAISS (KAITO 0.10+)."""

    url: str
    """Its URL (e.g. http://qdrant.default.svc.cluster.local:6333)."""
    engine: VectorDbEngine = "qdrant"
    """The database: qdrant."""
    access_secret: Annotated[str, DNS_SUBDOMAIN] | None = None
    """An existing Secret with key VECTOR_DB_ACCESS_SECRET; default: none (no key sent)."""
    access_token: Secret[Input[str]] | None = None
    """Its access key (kept secret), put in a Secret the component creates, instead of
    `access_secret`; default: none."""


@args_class
class StorageArgs:
    """Where the engine keeps its vectors; default (no `storage`): in memory, lost with the pod."""

    persistent_volume_claim: Annotated[str, DNS_SUBDOMAIN] | None = None
    """An existing PersistentVolumeClaim in the engine's namespace the indexes persist on; default:
    none (they live in the pod's memory)."""
    mount_path: str | None = None
    """Where the claim is mounted in the engine (an absolute path); KAITO's default /mnt/data."""
    vector_db: VectorDbArgs | None = None
    """An external vector database (KAITO 0.10+); default: the engine's in-process FAISS."""


@args_class
class GuardrailsArgs:
    """Output guardrails on the engine's non-streaming chat completions (KAITO 0.11+): the policy
    from `config_map`, from `policy`, or else the ragengine chart's default policy (redacts keys,
    tokens, e-mail addresses, phone and card numbers)."""

    config_map: Annotated[str, DNS_SUBDOMAIN] | None = None
    """An existing ConfigMap in the engine's namespace with key guardrails.yaml; default: `policy`,
    else the ragengine chart's default policy."""
    policy: dict[str, Any] | None = None
    """A policy document (KAITO's guardrails.yaml), put in a ConfigMap the component creates;
    edits reach the engine in place. Default: `config_map`, else the chart's default policy."""


@args_class
class RagEngineArgs:
    """One KAITO RAGEngine: documents indexed with an embedding model, retrieved into the
    prompts of an LLM (`inference_service`). Only `kaito_version` is required, and on KAITO 0.8
    `compute` and `inference_service` too."""

    kaito_version: str
    """The KAITO release the cluster runs (0.8.0, 0.8.1, 0.11.0, 0.12.0): decides the RAGEngine's
    API version (v1alpha1 on 0.8, v1beta1 on 0.11+) and KAITO's rules."""
    name: Annotated[str, DNS_1035_LABEL] | None = None
    """Kubernetes name of the RAGEngine, and of the Deployment and Service KAITO makes for it;
    default: the resource name."""
    namespace: Annotated[str, DNS_LABEL] = "default"
    """Namespace of the RAGEngine; it must exist."""
    embedding: EmbeddingArgs | None = None
    """How documents are embedded; default: locally with BAAI/bge-small-en-v1.5 (what KAITO's
    engine uses whatever this says, kaito-project/kaito#2365)."""
    inference_service: InferenceServiceArgs | None = None
    """The LLM that answers chat completions. Required on KAITO 0.8; without it on 0.11+ the
    engine is retrieve-only (POST /retrieve; chat completions answer 503)."""
    compute: RagComputeArgs | None = None
    """A node for the engine. Required on KAITO 0.8 (a GPU size of KAITO's table); on 0.11+
    without it the engine runs on any node with 0.5 CPU and 512Mi, and no node is provisioned."""
    storage: StorageArgs | None = None
    """Where vectors are kept; default: in memory, lost with the pod."""
    guardrails: GuardrailsArgs | None = None
    """Turn output guardrails on (KAITO 0.11+); default: off."""
    load_balancer: Annotated[bool | LoadBalancerArgs, SWITCH] = False
    """Also expose the engine through a load balancer (a Service <name>-lb of this component;
    KAITO's own, kaito.sh/enablelb, would be public and is never asked for): true is an internal
    Azure one, open to private address space; settings choose its client ranges or a public one
    (refused without `source_ranges`, and warned: the engine authenticates no one). Default:
    in-cluster only."""
    allow_from: Annotated[list[AllowFromArgs], MaxItems(50)] = field(default_factory=list[AllowFromArgs])
    """Pods of other namespaces allowed to call the engine; its NetworkPolicy admits its own
    namespace and these only. Default: none."""
    bypass_checks: Annotated[list[str], MaxItems(50)] = field(default_factory=list[str])
    """Codes of the program's refusals this engine goes past, for a user who knows better:
    refusals stricter than KAITO (KAITO admits the engine; docs/kaito-rules.md lists the codes).
    Each bypassed problem is still said, as a warning. Default: none."""
    kubeconfig: KubeconfigContents | None = None
    """Credentials the readiness wait reads the cluster with (kept secret; e.g. an AksCluster's or
    KubeconfigCluster's `kubeconfig` output). Default: those of the cluster's provider the engine is
    deployed through, where it carries them (a Python program's AksCluster or KubeconfigCluster
    `provider`); elsewhere give it, or turn the wait off."""
    context: str | None = None
    """Kubeconfig context for the wait; default: the provider's, or the current one."""
    wait_for_ready: bool = True
    """`pulumi up` waits until KAITO reports the engine serving (RAGEngineSucceeded)."""
    ready_timeout_minutes: Annotated[int, MINUTES] = 30
    """How long to wait for that (a new node, the images and the embedding model's download)."""
