"""KAITO's RAGEngine (kaito.sh; api/v1alpha1/ragengine_types.go on 0.8, api/v1beta1 from 0.9),
field by field in KAITO's own names, one class per API version, with the fields that cannot
change in place beside them. Shapes only: what KAITO's ragengine webhook and controller
refuse or mishandle is in kaito_aks.rag.rules, which runs before any of these is built.

Unlike the Workspace, a RAGEngine keeps its settings under `spec`. The controller makes a
Deployment and a Service both named after the RAGEngine, in its namespace (Service port 80 ->
5000), and reports `RAGEngineSucceeded` once the Deployment's pod is ready.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from kaito_aks.kaito.meta import ApiModel, LabelSelector, ObjectMeta

KIND = "RAGEngine"
V1ALPHA1 = "kaito.sh/v1alpha1"
V1BETA1 = "kaito.sh/v1beta1"
ApiVersion = Literal["kaito.sh/v1alpha1", "kaito.sh/v1beta1"]

# The condition the controller sets True at the end of a reconcile whose Deployment is ready
# (ServiceReady is never set False again, so a stale True outlives later failures).
READY_CONDITION = "RAGEngineSucceeded"
# A RAGEngine annotated so gets a public LoadBalancer Service instead of ClusterIP (exact value
# "True"): no annotations, no source ranges, created once and never updated. kaito-aks never sets
# it (a RagEngine's load balancer is a Service of its own); an engine that had it keeps KAITO's
# public Service until that is deleted.
LOAD_BALANCER_ANNOTATION = "kaito.sh/enablelb"
# The label KAITO puts on the engine's pods (api/v1alpha1 and v1beta1 labels.go LabelRAGEngineName).
ENGINE_LABEL = "kaito.sh/ragengine"
ENGINE_PORT = 5000  # the engine's container port, the Service's target
# The Secret keys the engine's pod reads (secretKeyRef): the LLM's bearer token, the vector DB's.
LLM_ACCESS_SECRET_KEY = "LLM_ACCESS_SECRET"
VECTOR_DB_ACCESS_SECRET_KEY = "VECTOR_DB_ACCESS_SECRET"
# Guardrails (0.11+): the policy file a ConfigMap must hold, and the chart's default policy,
# which the controller copies from the chart's namespace when no ConfigMap is named.
GUARDRAILS_POLICY_KEY = "guardrails.yaml"
DEFAULT_GUARDRAILS_CONFIG_MAP = "ragengine-guardrails-policy-template"
# The engine keeps its vectors here when persistent storage is given without a mount path.
DEFAULT_MOUNT_PATH = "/mnt/data"
# The Service the controller makes: name = the RAGEngine's, port 80 -> the engine's 5000.
SERVICE_PORT = 80


class RagResourceSpec(ApiModel):
    """spec.compute (KAITO's shared ResourceSpec; count, preferredNodes and partition are left
    out: deprecated or unused by the RAGEngine controller)."""

    # The node size: looked up in KAITO's GPU table (GPU requests), used to find or provision a
    # node. Immutable.
    instance_type: str
    # Required by the CRD. The controller places the pod by its matchLabels. Immutable.
    label_selector: LabelSelector


class LocalEmbeddingSpec(ApiModel):
    """An embedding model run by the engine itself: image or modelID (0.11+ admits exactly one, which
    kaito_aks.rag.rules checks; 0.8 admits any, and reads modelID alone)."""

    image: str | None = None
    image_pull_secret: str | None = None
    model_id: str | None = Field(default=None, serialization_alias="modelID")
    model_access_secret: str | None = None


class RemoteEmbeddingSpec(ApiModel):
    url: str
    access_secret: str | None = None


class EmbeddingSpec(ApiModel):
    """Exactly one of local or remote."""

    local: LocalEmbeddingSpec | None = None
    remote: RemoteEmbeddingSpec | None = None

    @model_validator(mode="after")
    def _local_xor_remote(self) -> EmbeddingSpec:
        if (self.local is None) == (self.remote is None):
            raise ValueError("embedding needs exactly one of local or remote")
        return self


class InferenceServiceSpec(ApiModel):
    # The LLM's OpenAI-compatible chat completions URL (http(s), in or out of the cluster).
    url: str
    # A Secret (same namespace) with key LLM_ACCESS_SECRET, sent as a bearer token.
    access_secret: str | None = None
    # The LLM's combined input and output token limit.
    context_window_size: int = Field(gt=0)


# ---------------------------------------------------------------- kaito.sh/v1alpha1 (KAITO 0.8)


class StorageSpecV1Alpha1(ApiModel):
    # A PersistentVolumeClaim (same namespace) the vectors persist on; empty: an emptyDir.
    persistent_volume_claim: str | None = None
    mount_path: str | None = None


class RagEngineSpecV1Alpha1(ApiModel):
    # Optional in the CRD, but the 0.8 webhook dereferences it: required in practice.
    compute: RagResourceSpec
    storage: StorageSpecV1Alpha1 | None = None
    embedding: EmbeddingSpec
    inference_service: InferenceServiceSpec


class RagEngineV1Alpha1(ApiModel):
    """kaito.sh/v1alpha1 RAGEngine (the only version KAITO 0.8 serves)."""

    api_version: Literal["kaito.sh/v1alpha1"] = V1ALPHA1
    kind: Literal["RAGEngine"] = KIND
    metadata: ObjectMeta
    spec: RagEngineSpecV1Alpha1

    def manifest(self) -> dict[str, Any]:
        return self.to_api()


# ---------------------------------------------------------------- kaito.sh/v1beta1 (KAITO 0.9+)


class PersistentVolumeConfig(ApiModel):
    persistent_volume_claim: str
    mount_path: str | None = None


class VectorDbConfig(ApiModel):
    # No CRD enum; the engine accepts faiss (its in-process default) and qdrant, and crash-loops
    # on anything else.
    engine: str
    url: str
    # A Secret (same namespace) with key VECTOR_DB_ACCESS_SECRET.
    access_secret: str | None = None


class StorageSpecV1Beta1(ApiModel):
    persistent_volume: PersistentVolumeConfig | None = None
    vector_db: VectorDbConfig | None = Field(default=None, serialization_alias="vectorDB")


class ConfigMapReference(ApiModel):
    name: str


class GuardrailsSpec(ApiModel):
    """Output guardrails on non-streaming chat completions (KAITO 0.11+)."""

    enabled: bool
    # A ConfigMap (same namespace) with key guardrails.yaml; none: the chart's default policy.
    config_map_ref: ConfigMapReference | None = None


class RagEngineSpecV1Beta1(ApiModel):
    # Optional: without it the engine runs on any node with CPU requests (no node provisioned).
    compute: RagResourceSpec | None = None
    storage: StorageSpecV1Beta1 | None = None
    embedding: EmbeddingSpec
    # Optional: without it the engine is retrieve-only (POST /retrieve; chat answers 503).
    inference_service: InferenceServiceSpec | None = None
    guardrails: GuardrailsSpec | None = None


class RagEngineV1Beta1(ApiModel):
    """kaito.sh/v1beta1 RAGEngine (the storage version from KAITO 0.9)."""

    api_version: Literal["kaito.sh/v1beta1"] = V1BETA1
    kind: Literal["RAGEngine"] = KIND
    metadata: ObjectMeta
    spec: RagEngineSpecV1Beta1

    def manifest(self) -> dict[str, Any]:
        return self.to_api()


RagEngine = RagEngineV1Alpha1 | RagEngineV1Beta1

# What cannot change on an existing RAGEngine, so a change replaces it: what the webhook
# refuses to change (compute: v1alpha1 count, instanceType and labelSelector; v1beta1 also its
# presence), and what the controller reads only when it creates the Deployment and Service (it
# pushes later edits to the pod as environment variables alone): the storage volume, the
# guardrails policy volume. (The Service type's annotation is no longer set, so an engine that had
# it loses it in place: its index is kept.)
RAGENGINE_IMMUTABLE_PATHS: dict[str, tuple[str, ...]] = {
    V1ALPHA1: ("spec.compute", "spec.storage"),
    V1BETA1: ("spec.compute", "spec.storage.persistentVolume", "spec.guardrails"),
}
