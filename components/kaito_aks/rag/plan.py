"""One RAG engine as the Kubernetes objects that make it: pure data, so a program, a render or a
test can look at it without Pulumi. The LLM's URL may be known only at deploy time (another
resource's output): the RAGEngine then carries a placeholder the component fills in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import yaml

from kaito_aks import catalog
from kaito_aks.endpoints import AllowFromArgs, LoadBalancerArgs, load_balancer_of
from kaito_aks.kaito import ragengine as kaito
from kaito_aks.kaito.meta import ObjectMeta
from kaito_aks.model.plan import ConfigMapPlan, ReadinessPlan, selector_of
from kaito_aks.rag.rules import effective_embedding
from kaito_aks.rag.spec import EmbeddingArgs, RagComputeArgs, RagEngineArgs
from kaito_aks.vocabulary import MANAGED_BY

# Stands for an LLM URL known only at deploy time, in the RAGEngine as planned.
DEPLOY_TIME_URL = "http://known-after-deploy.invalid/v1/chat/completions"


@dataclass(frozen=True)
class SecretPlan:
    """A Secret the component creates from a token given in the args."""

    name: str
    key: str  # the key KAITO's engine reads (secretKeyRef)
    token: pulumi.Input[str]


@dataclass(frozen=True)
class RagEnginePlan:
    """One RAG engine as the objects that make it."""

    name: str
    namespace: str
    api_version: kaito.ApiVersion
    engine: kaito.RagEngine  # LLM URL: DEPLOY_TIME_URL when `inference_url` is an output
    inference_url: pulumi.Input[str] | pulumi.Output[str | None] | None  # the LLM's chat completions URL as given
    secrets: tuple[SecretPlan, ...]  # created before the RAGEngine, which reads them
    config_maps: tuple[ConfigMapPlan, ...]  # likewise (the guardrails policy)
    load_balancer: LoadBalancerArgs | None
    allow_from: tuple[AllowFromArgs, ...]
    retrieve_api: bool
    readiness: ReadinessPlan | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def url_at_deploy(self) -> bool:
        return self.inference_url is not None and not isinstance(self.inference_url, str)

    @property
    def pods(self) -> dict[str, str]:
        """The engine's pods, as KAITO labels them."""
        return {kaito.ENGINE_LABEL: self.name}

    @property
    def load_balancer_service(self) -> str:
        """The name of the engine's load balancer Service (KAITO's own Service has its name)."""
        return f"{self.name}-lb"

    @property
    def endpoint(self) -> str:
        """The engine's in-cluster base URL: the Service KAITO makes, named after the RAGEngine."""
        return f"http://{self.name}.{self.namespace}.svc.cluster.local"

    def manifest(self, inference_url: str | None = None) -> dict[str, Any]:
        """The RAGEngine as the API server receives it; `inference_url`: the deploy-time URL."""
        manifest = self.engine.manifest()
        if inference_url is not None and self.url_at_deploy:
            manifest["spec"]["inferenceService"]["url"] = inference_url
        return manifest


def plan_rag_engine(args: RagEngineArgs) -> RagEnginePlan:
    """The objects of a RAG engine whose args passed `rag_engine_problems`."""
    chart = catalog.ragengine_charts()[args.kaito_version]
    name = args.name or ""
    secrets: list[SecretPlan] = []
    config_maps: list[ConfigMapPlan] = []

    inference = None
    url: pulumi.Input[str] | pulumi.Output[str | None] | None = None
    service = args.inference_service
    if service is not None:
        url = service.url
        access = service.access_secret
        if service.access_token is not None:
            access = f"{name}-llm-access"
            secrets.append(SecretPlan(access, kaito.LLM_ACCESS_SECRET_KEY, service.access_token))
        inference = kaito.InferenceServiceSpec(
            url=url if isinstance(url, str) else DEPLOY_TIME_URL,
            access_secret=access,
            context_window_size=service.context_window_size,
        )

    metadata = ObjectMeta(name=name, namespace=args.namespace, labels=dict(MANAGED_BY))
    embedding = _embedding(effective_embedding(args))
    storage = args.storage
    engine: kaito.RagEngine
    if chart.api_version == kaito.V1ALPHA1:
        # the rules require both on 0.8
        assert args.compute is not None
        assert inference is not None
        engine = kaito.RagEngineV1Alpha1(
            metadata=metadata,
            spec=kaito.RagEngineSpecV1Alpha1(
                compute=_compute(args.compute),
                storage=kaito.StorageSpecV1Alpha1(
                    persistent_volume_claim=storage.persistent_volume_claim, mount_path=storage.mount_path
                )
                if storage is not None
                else None,
                embedding=embedding,
                inference_service=inference,
            ),
        )
    else:
        guardrails = None
        if args.guardrails is not None:
            config_map = args.guardrails.config_map
            if args.guardrails.policy is not None:
                config_map = f"{name}-guardrails-policy"
                text = yaml.safe_dump(args.guardrails.policy, sort_keys=False, default_flow_style=False)
                config_maps.append(ConfigMapPlan(config_map, {kaito.GUARDRAILS_POLICY_KEY: text}))
            guardrails = kaito.GuardrailsSpec(
                enabled=True,
                config_map_ref=kaito.ConfigMapReference(name=config_map) if config_map is not None else None,
            )
        engine = kaito.RagEngineV1Beta1(
            metadata=metadata,
            spec=kaito.RagEngineSpecV1Beta1(
                compute=_compute(args.compute) if args.compute is not None else None,
                storage=_storage_v1beta1(args, name, secrets),
                embedding=embedding,
                inference_service=inference,
                guardrails=guardrails,
            ),
        )

    return RagEnginePlan(
        name=name,
        namespace=args.namespace,
        api_version=chart.api_version,
        engine=engine,
        inference_url=url,
        secrets=tuple(secrets),
        config_maps=tuple(config_maps),
        load_balancer=load_balancer_of(args.load_balancer),
        allow_from=tuple(args.allow_from),
        retrieve_api=chart.retrieve_api,
        readiness=ReadinessPlan(kaito.READY_CONDITION, args.ready_timeout_minutes),
    )


def _compute(compute: RagComputeArgs) -> kaito.RagResourceSpec:
    return kaito.RagResourceSpec(
        instance_type=compute.instance_type, label_selector=selector_of(compute.label_selector)
    )


def _embedding(embedding: EmbeddingArgs) -> kaito.EmbeddingSpec:
    local, remote = embedding.local, embedding.remote
    return kaito.EmbeddingSpec(
        local=kaito.LocalEmbeddingSpec(
            image=local.image,
            image_pull_secret=local.image_pull_secret,
            model_id=local.model_id,
            model_access_secret=local.model_access_secret,
        )
        if local is not None
        else None,
        remote=kaito.RemoteEmbeddingSpec(url=remote.url, access_secret=remote.access_secret)
        if remote is not None
        else None,
    )


def _storage_v1beta1(args: RagEngineArgs, name: str, secrets: list[SecretPlan]) -> kaito.StorageSpecV1Beta1 | None:
    storage = args.storage
    if storage is None:
        return None
    volume = (
        kaito.PersistentVolumeConfig(
            persistent_volume_claim=storage.persistent_volume_claim, mount_path=storage.mount_path
        )
        if storage.persistent_volume_claim is not None
        else None
    )
    db = storage.vector_db
    vector_db = None
    if db is not None:
        access = db.access_secret
        if db.access_token is not None:
            access = f"{name}-vector-db-access"
            secrets.append(SecretPlan(access, kaito.VECTOR_DB_ACCESS_SECRET_KEY, db.access_token))
        vector_db = kaito.VectorDbConfig(engine=db.engine, url=db.url, access_secret=access)
    return kaito.StorageSpecV1Beta1(persistent_volume=volume, vector_db=vector_db)
