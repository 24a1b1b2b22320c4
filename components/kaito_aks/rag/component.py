"""`RagEngine`: one KAITO RAGEngine as a component. The RAGEngine in KAITO's shape for the
release (kaito.sh/v1alpha1 on 0.8, v1beta1 on 0.11+), the Secrets and guardrails ConfigMap it
reads, and a wait so `pulumi up` ends with the engine serving."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import policy
from kaito_aks.cluster.kubernetes_object import KubernetesObject
from kaito_aks.endpoints import declare_network_policy, network_policy, service_manifest
from kaito_aks.kaito import ragengine as kaito
from kaito_aks.model.component import SKIP_AWAIT
from kaito_aks.operators.release import checked_workload
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import InvalidArgsError, Problem
from kaito_aks.rag.plan import RagEnginePlan, plan_rag_engine
from kaito_aks.rag.rules import effective_embedding, inference_url_problem, rag_engine_verdict
from kaito_aks.rag.spec import EFFECTIVE_EMBEDDING_MODEL, RagEngineArgs
from kaito_aks.validation import Judged, judged, validate
from kaito_aks.waits.model_ready import ModelReady, Watched, revision_of

TYPE = "kaito-aks:index:RagEngine"
FORMER_TYPES: tuple[str, ...] = ()
CHAT_PATH = "/v1/chat/completions"
RETRIEVE_PATH = "/retrieve"


def check_rag_engine(args: Any, name: str | None = None) -> tuple[RagEngineArgs | None, list[Problem]]:
    """A RAG engine's args (a RagEngineArgs, or a mapping of its args) checked: the args with
    their name resolved (default `name`), and every problem, each with the arg's path."""
    checked, problems, _ = judge_rag_engine(args, name)
    return checked, problems


def judge_rag_engine(args: Any, name: str | None = None) -> tuple[RagEngineArgs | None, list[Problem], list[Problem]]:
    """`check_rag_engine`, and the warnings (what refuses nothing), from one run of the rules."""
    checked, problems = validate(RagEngineArgs, args)
    if checked is not None and checked.name is None and name is not None:
        checked = dataclasses.replace(checked, name=name)
    errors, warnings = rag_engine_verdict(checked) if checked is not None else ([], [])
    return checked, problems + judged(checked, problems, [lambda _: errors]), warnings


def ignored_embedding(args: RagEngineArgs) -> str | None:
    """What the args ask to embed with that KAITO's engine does not use, if anything."""
    embedding = effective_embedding(args)
    if embedding.remote is not None:
        return f"the remote service {embedding.remote.url}"
    local = embedding.local
    if local is not None and local.image:
        return f"the image {local.image}"
    if local is not None and local.model_id and local.model_id != EFFECTIVE_EMBEDDING_MODEL:
        return local.model_id
    return None


class RagEngine(pulumi.ComponentResource):
    """One KAITO RAGEngine: a retrieval-augmented generation engine that indexes documents and
    answers OpenAI-compatible chat completions with an LLM, usually a KaitoModel of the same
    program (its `inference_service.url` a KaitoModel's `endpoint`). KAITO's controller runs it as a Deployment
    and a Service both named after it (so no other Service of its namespace may have that
    name). Deploy it through the cluster's provider and depend it on the RagEngineOperator (its
    admission webhook fails closed); depend it on the model as well to start it only once the
    model serves (the URL alone orders it after the model's Service).

    Every rule of KAITO's ragengine webhook is checked before anything registers, and so is
    what KAITO admits but mishandles. Known upstream defects, in KAITO 0.8.1 to 0.12.0 alike:
    the controller does not pass `embedding` to the engine (kaito-project/kaito#2365, open):
    it embeds locally with BAAI/bge-small-en-v1.5 whatever `embedding` says (a remote
    service's URL and secret, a model id or an image are emitted as KAITO's shape asks, and
    warned about, but unused). KAITO 0.8's webhook drops its own checks of `embedding` (they
    are enforced here) and crashes on a RAGEngine without `compute` (required here). What
    cannot change in place (compute, the storage volume, guardrails, the Service type) replaces
    the RAGEngine, which loses an in-memory index."""

    endpoint: pulumi.Output[str]
    """The engine's in-cluster URL (http://<name>.<namespace>.svc.cluster.local, port 80): POST
    /index, GET /indexes, POST /v1/chat/completions, ...; known once the engine serves (or is
    created, with `wait_for_ready` off)."""
    chat_endpoint: pulumi.Output[str | None]
    """Its OpenAI-compatible chat completions URL (retrieval-augmented); none when retrieve-only."""
    retrieve_endpoint: pulumi.Output[str | None]
    """Its retrieve-only search URL (POST /retrieve, KAITO 0.9+); none on 0.8."""
    api_version: pulumi.Output[str]
    """The RAGEngine's API version (kaito.sh/v1alpha1 on KAITO 0.8, kaito.sh/v1beta1 on 0.11+)."""

    plan: RagEnginePlan
    """The objects it creates, as data."""

    def __init__(
        self, name: str, args: RagEngineArgs | Judged[RagEngineArgs], opts: pulumi.ResourceOptions | None = None
    ):
        checked, warnings, access = checked_workload(
            "RagEngine",
            name,
            args,
            opts,
            judge_rag_engine,
            lambda a: a.wait_for_ready,
            "the readiness wait reads the cluster and has no credentials: deploy through a ClusterProvider (an "
            "AksCluster's or KubeconfigCluster's `provider`), give `kubeconfig` (e.g. their `kubeconfig` output), or "
            "turn off `wait_for_ready`",
        )
        args = checked
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        for warning in warnings:  # what refuses nothing: said, never silent
            pulumi.log.warn(warning.under("args").text(), resource=self)
        self.plan = plan = plan_rag_engine(args)
        ignored = ignored_embedding(args)
        if ignored is not None:
            pulumi.log.warn(
                f"KAITO {args.kaito_version} does not pass `embedding` to the engine (kaito-project/kaito#2365): it "
                f"embeds with {EFFECTIVE_EMBEDDING_MODEL}, not {ignored}",
                resource=self,
            )
        child = child_options(self, opts)
        prerequisites: list[pulumi.Resource] = []
        for secret in plan.secrets:
            prerequisites.append(
                k8s.core.v1.Secret(
                    f"{name}/{secret.name}",
                    metadata={"name": secret.name, "namespace": plan.namespace},
                    type="Opaque",
                    string_data={secret.key: pulumi.Output.secret(secret.token)},
                    opts=child,
                )
            )
        for cm in plan.config_maps:
            prerequisites.append(
                k8s.core.v1.ConfigMap(
                    f"{name}/{cm.name}",
                    metadata={"name": cm.name, "namespace": plan.namespace},
                    data=cm.data,
                    opts=child,
                )
            )

        manifest: dict[str, Any] = plan.manifest()
        revision: pulumi.Input[str] = revision_of([manifest, *(cm.data for cm in plan.config_maps)])
        if plan.url_at_deploy:
            assert plan.inference_url is not None
            given: pulumi.Output[str | None] = pulumi.Output.from_input(plan.inference_url)
            url = given.apply(lambda u: _checked_url(name, u, args.bypass_checks))
            manifest["spec"]["inferenceService"]["url"] = url
            revision = url.apply(lambda u: revision_of([plan.manifest(u), *(cm.data for cm in plan.config_maps)]))

        # KAITO's webhook looks for the guardrails ConfigMap, and the engine's pod reads the
        # Secrets, so those come first. The name is fixed: a replacement deletes first.
        aliases = (
            [pulumi.Alias(type_=f"kubernetes:{kaito.V1ALPHA1}:{kaito.KIND}")]
            if plan.api_version == kaito.V1BETA1
            else []
        )
        self.rag_engine = KubernetesObject(
            f"{name}/{plan.name}",
            manifest,
            opts=pulumi.ResourceOptions.merge(
                child_options(self, opts, depends_on=prerequisites, delete_before_replace=True),
                # an engine deployed on KAITO 0.8 (v1alpha1) is the same object on 0.11+ (v1beta1)
                pulumi.ResourceOptions(
                    replace_on_changes=list(kaito.RAGENGINE_IMMUTABLE_PATHS[plan.api_version]), aliases=aliases
                ),
            ),
        )
        self._endpoint_access(name, plan, child)
        self.ready: ModelReady | None = None
        gate: pulumi.Output[Any] = self.rag_engine.id
        if plan.readiness is not None and args.wait_for_ready:
            assert access is not None
            self.ready = ModelReady(
                f"{name}/ready",
                access,
                watched=[watched_object(plan)],
                revision=revision,
                timeout_minutes=plan.readiness.timeout_minutes,
                opts=child_options(self, opts, depends_on=[self.rag_engine]),
            )
            gate = self.ready.ready

        base = plan.endpoint
        chat = base + CHAT_PATH if plan.inference_url is not None else None
        retrieve = base + RETRIEVE_PATH if plan.retrieve_api else None
        self.endpoint = gate.apply(lambda _: base)
        self.chat_endpoint = gate.apply(lambda _: chat)
        self.retrieve_endpoint = gate.apply(lambda _: retrieve)
        self.api_version = pulumi.Output.from_input(plan.api_version)
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "chatEndpoint": self.chat_endpoint,
                "retrieveEndpoint": self.retrieve_endpoint,
                "apiVersion": self.api_version,
            }
        )

    @staticmethod
    def _endpoint_access(name: str, plan: RagEnginePlan, child: pulumi.ResourceOptions) -> None:
        """Who may call the engine (its NetworkPolicy), and its load balancer when asked: a
        Service of this component (internal unless said otherwise), beside KAITO's ClusterIP one."""
        policy = network_policy(
            plan.name,
            plan.namespace,
            {"matchLabels": plan.pods},
            list(plan.allow_from),
            plan.load_balancer,
            kaito.ENGINE_PORT,
        )
        declare_network_policy(f"{name}/{policy['metadata']['name']}", policy, child)
        if plan.load_balancer is not None:
            manifest = service_manifest(
                plan.load_balancer_service,
                plan.namespace,
                plan.pods,
                kaito.ENGINE_PORT,
                kaito.SERVICE_PORT,
                plan.load_balancer,
                dict(SKIP_AWAIT),
            )
            k8s.core.v1.Service(
                f"{name}/{plan.load_balancer_service}", metadata=manifest["metadata"], spec=manifest["spec"], opts=child
            )


def watched_object(plan: RagEnginePlan) -> Watched:
    """The RAGEngine and the condition that says it serves."""
    condition = plan.readiness.condition if plan.readiness is not None else kaito.READY_CONDITION
    return Watched(kaito.KIND, plan.api_version, plan.namespace, plan.name, condition)


def _checked_url(name: str, url: str | None, bypass_checks: list[str]) -> str:
    """An LLM URL known only at deploy time, held to the same rules (and policy) as one given as text."""
    if url is None:  # a KaitoModel's endpoint when it is a tuning job
        missing = Problem.at("url", "is None: a tuning job serves nothing; give a serving model's endpoint", "url")
        raise InvalidArgsError("RagEngine", name, [missing.under("inference_service")])
    problem = inference_url_problem(url)
    errors, warnings = policy.verdict([problem] if problem is not None else [], bypass_checks)
    for warning in warnings:
        pulumi.log.warn(f"RagEngine {name!r}: {warning.under('args', 'inference_service').text()}")
    if errors:
        raise InvalidArgsError("RagEngine", name, [p.under("inference_service") for p in errors])
    return url
