"""The components' args, each built once from what a stack file writes (`Written`) and what the
stack decided (`Decisions`, stacks/decide.py): an entry's keys over the stack-wide ones, each
args placed where it was written. Nothing is decided here; the rules are stacks/judge.py's."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

import pulumi

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksClusterArgs
from kaito_aks.azure.cpu_node_pool import CpuNodePoolArgs, cpu_nodes
from kaito_aks.azure.gpu_node_pool import GpuNodePoolArgs, node_group
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigClusterArgs
from kaito_aks.model.config import max_model_len
from kaito_aks.model.names import endpoint_at, endpoint_of
from kaito_aks.model.serving import model_ids
from kaito_aks.model.spec import KaitoModelArgs, WeightsStreamingArgs
from kaito_aks.model_streaming import ModelStreamingArgs
from kaito_aks.model_streaming import chart_values as streaming_chart_values
from kaito_aks.nodes import CpuNodes, NodeGroup, system_pool_nodes
from kaito_aks.operators.gpu_operator import GpuOperatorArgs
from kaito_aks.operators.gpu_provisioner import GpuProvisionerArgs
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs, gate_at
from kaito_aks.operators.karpenter import KarpenterArgs
from kaito_aks.operators.ragengine_operator import RagEngineOperatorArgs
from kaito_aks.problems import Key, PathPart, Problem
from kaito_aks.rag.spec import InferenceServiceArgs, RagEngineArgs
from kaito_aks.schema import fields
from kaito_aks.serving.dashboard import VllmDashboardArgs
from kaito_aks.serving.gateway import InferenceGatewayArgs
from kaito_aks.serving.keda import KedaAutoscalingArgs, keda_namespace
from kaito_aks.serving.spec import DEFAULT_SCALER_NAMESPACE, GatewayRefArgs, ModelMetricsArgs
from stacks.config import (
    PROJECT,
    CpuPoolConfig,
    ModelConfig,
    Placed,
    PoolConfig,
    RagEngineConfig,
    StackConfig,
)
from stacks.decide import Decisions, Written
from stacks.nested_secrets import SECRET_PRESENT

# A model's own serving keys in the stack file (not KaitoModelArgs fields: the stack fills those).
OWN_KEYS = ("gateway", "metrics", "use_hf_token")
# What every model takes from the kaito section (where a problem about it is said).
WAITS = ("wait_for_ready", "ready_timeout_minutes", "wait_for_gpu_nodes", "gpu_nodes_timeout_minutes")


@dataclasses.dataclass(frozen=True)
class StackSecrets:
    hf_token: pulumi.Output[str] | None = None
    kubeconfig: pulumi.Output[str] | None = None


NO_SECRET_VALUES = StackSecrets()


@dataclasses.dataclass(frozen=True)
class Secrets:
    """The stack's secret keys: which are set, and their values where they are known."""

    present: Collection[str] = ()
    values: StackSecrets = StackSecrets()

    def value(self, key: str) -> Any:
        given = self.values.hf_token if key == "hfToken" else self.values.kubeconfig
        return given if given is not None else (SECRET_PRESENT if key in self.present else None)


def build(
    written: Written, decided: Decisions, secrets: Secrets, azure_location: str | None = None
) -> tuple[StackConfig, list[Problem]]:
    """Every component's args, each made once; and the problems of tying a RAG engine to a
    workspace (what the builder cannot make of what is written)."""
    kubeconfig_cluster, aks_cluster = _cluster(written, decided, secrets)
    pools = _pools(written.pools, GpuNodePoolArgs, PoolConfig, "gpuNodePools")
    cpu_pools = _pools(written.cpu_pools, CpuNodePoolArgs, CpuPoolConfig, "cpuNodePools")
    # the GPU pools of an AKS cluster (elsewhere, or with the cluster unusable, pools are refused)
    groups = [node_group(p.args, p.args.name or "", gpu_operator=decided.gpu_operator) for p in pools if decided.azure]
    keda, metrics = _keda(written, decided), _metrics(written, decided)
    workspaces = _models(written, decided, secrets, groups if decided.pools_known else None, metrics, keda)
    rag_engines, tied = _rag_engines(written, decided, [w.args for w in workspaces])
    cfg = StackConfig(
        kubeconfig_cluster=kubeconfig_cluster,
        aks_cluster=aks_cluster,
        cluster_protect=written.cluster_kind == "aks" and bool((written.cluster or {}).get("protect", False)),
        kaito_install=decided.kaito_install,
        add_on=decided.add_on,
        decided=decided,
        workspaces=tuple(workspaces),
        pools=tuple(pools),
        cpu_pools=tuple(cpu_pools),
        cpu_nodes=_cpu_nodes(aks_cluster, cpu_pools),
        generation=written.generation,
        rag_engines=tuple(rag_engines),
        create_namespaces=written.create_namespaces,
        namespaces=_namespaces(written, workspaces, rag_engines),
        has_hf_token="hfToken" in secrets.present,
        has_kubeconfig="kubeconfig" in secrets.present,
        azure_location=azure_location,
        pools_known=decided.pools_known,
        **_operators(written, decided, groups, aks_cluster),
        **_serving(written, decided, workspaces, keda, metrics),
        model_streaming=_model_streaming(decided, workspaces),
    )
    return cfg, tied


def _cpu_nodes(aks_cluster: AksClusterArgs | None, cpu_pools: list[CpuPoolConfig]) -> tuple[CpuNodes, ...]:
    """The CPU pools CPU models may run on, as placement sees them: the system pool of a cluster
    this stack creates, then its cpuNodePools."""
    created = aks_cluster is not None and not aks_cluster.existing
    system = (system_pool_nodes(aks_cluster.system_pool.vm_size),) if created and aks_cluster else ()
    return (*system, *(cpu_nodes(p.args, p.args.name or "") for p in cpu_pools))


def _namespaces(written: Written, models: list[ModelConfig], engines: list[RagEngineConfig]) -> tuple[str, ...]:
    """The namespaces this stack creates (createNamespaces): its models' and engines', but default."""
    used = {m.args.namespace for m in models} | {e.args.namespace for e in engines}
    return tuple(sorted(used - {"default"})) if written.create_namespaces else ()


def _keda(written: Written, decided: Decisions) -> KedaAutoscalingArgs | None:
    """KEDA, where the file configures it or a workspace autoscales."""
    entries = [e for e in written.workspaces if e is not None]
    if written.autoscaling is None and all(e.get("autoscale") is None for e in entries):
        return None
    return KedaAutoscalingArgs(kaito_version=decided.kaito_version, **(written.autoscaling or {}))


def _serving(
    written: Written,
    decided: Decisions,
    models: list[ModelConfig],
    keda: KedaAutoscalingArgs | None,
    metrics: ModelMetricsArgs | None,
) -> dict[str, Any]:
    """The gateway, KEDA, the metrics (where a workspace is scraped) and the dashboard."""
    return {
        "gateway": _gateway(written, decided, models),
        "autoscaling": keda,
        "metrics": metrics if any(m.args.metrics is not None for m in models) else None,
        "dashboard": VllmDashboardArgs(namespace=decided.dashboard_namespace) if decided.dashboard else None,
    }


def _operators(
    written: Written, decided: Decisions, groups: list[NodeGroup], aks_cluster: AksClusterArgs | None
) -> dict[str, Any]:
    """The operators' args: KAITO's (whoever installs it: the models' release and gates), and
    those of the GPU Operator, gpu-provisioner, Karpenter and the RAGEngine operator the stack
    installs (None: not installed)."""
    operator = {k: v for k, v in written.gpu_operator.items() if k != "enabled"}
    rag_values = written.rag_engine_operator.get("values", {})
    return {
        "kaito": KaitoOperatorArgs(
            version=decided.kaito_version,
            node_provisioning=decided.node_provisioning,
            node_provisioner=decided.node_provisioner,
            feature_gates=dict(decided.feature_gates),
            values=_kaito_values(written, decided),
            gpu_discovery=decided.gpu_discovery,
            node_groups=groups,
            cluster_name=aks_cluster.name if aks_cluster is not None else None,
        ),
        "gpu_operator": GpuOperatorArgs(**operator, node_groups=groups) if decided.gpu_operator else None,
        "gpu_provisioner": _gpu_provisioner(written, decided),
        "karpenter": _karpenter(written, decided),
        "rag_operator": RagEngineOperatorArgs(version=decided.kaito_version, values=rag_values)
        if decided.rag_operator
        else None,
    }


def _kaito_values(written: Written, decided: Decisions) -> dict[str, Any]:
    """kaito.values, with model streaming KAITO's defaults for it (its StorageClass and
    ServiceAccount; the gates are the decided ones) where the values do not say them."""
    values: dict[str, Any] = written.kaito.get("values", {})
    if not (decided.streaming and decided.kaito_install):
        return values
    extra = {k: v for k, v in streaming_chart_values().items() if k != "featureGates" and k not in values}
    return {**values, **extra}


def _model_streaming(decided: Decisions, models: list[ModelConfig]) -> ModelStreamingArgs | None:
    """KAITO's ModelMirror/ModelStreaming pieces for the namespaces of the models that stream (its
    `cluster`: given by the program, which creates the cluster)."""
    namespaces = sorted({m.args.namespace for m, streamed in zip(models, decided.streamed, strict=True) if streamed})
    if not namespaces:
        return None
    return ModelStreamingArgs(namespaces=namespaces, kaito_version=decided.kaito_version)


def _cluster(
    written: Written, decided: Decisions, secrets: Secrets
) -> tuple[KubeconfigClusterArgs | None, AksClusterArgs | None]:
    section = written.cluster
    if section is None:  # unusable: its problems are said, and nothing that depends on it
        return None, None
    if written.cluster_kind == "kubeconfig":
        return KubeconfigClusterArgs(**section, kubeconfig=secrets.value("kubeconfig")), None
    if written.cluster_kind == "existing":
        return None, AksClusterArgs(**section, existing=True)
    if written.cluster_kind == "aks":
        given = {k: v for k, v in section.items() if k != "protect"}
        return None, AksClusterArgs(
            **given
            | {
                "location": decided.cluster_location,
                # a created cluster's tags say who manages it; the file's own tags come on top
                "tags": {"managed-by": "pulumi", "app": "kaito-aks", **section.get("tags", {})},
                "keda": decided.keda_add_on,
                "node_subnet": decided.node_subnet,
                **({"blob_csi_driver": True} if decided.streaming else {}),  # (KAITO's mirror volumes)
            }
        )
    return None, None


def _pools(entries: tuple[Mapping[str, Any] | None, ...], cls: type, config: Any, key: str) -> list[Any]:
    """Each usable pool entry as its args (its `cluster`: given by the program, which creates the
    cluster), whether it is protected, and where it was written."""
    return [
        config(
            cls(**{k: v for k, v in entry.items() if k != "protect"}),
            bool(entry.get("protect", False)),
            Placed((key, i)),
        )
        for i, entry in enumerate(entries)
        if entry is not None
    ]


def _gpu_provisioner(written: Written, decided: Decisions) -> GpuProvisionerArgs | None:
    if not decided.gpu_provisioner:
        return None
    chosen = written.gpu_provisioner
    return GpuProvisionerArgs(  # (its `cluster`: given by the program, which creates the cluster)
        version=decided.gpu_provisioner_version,
        identity_name=chosen.get("identity_name"),
        values=chosen.get("values", {}),
    )


def _karpenter(written: Written, decided: Decisions) -> KarpenterArgs | None:
    if not decided.karpenter:
        return None
    chosen = written.karpenter
    return KarpenterArgs(  # (its `cluster`: given by the program, which creates the cluster)
        version=decided.karpenter_version,
        identity_name=chosen.get("identity_name"),
        bootstrap_token_rotation=chosen.get("bootstrap_token_rotation", 0),
        bootstrap_token_lifetime_days=decided.bootstrap_token_lifetime,
        values=chosen.get("values", {}),
    )


# ---------------------------------------------------------------- the models and engines


def _stack_wide(kaito: Mapping[str, Any], decided: Decisions) -> dict[str, Any]:
    """What every model takes from the kaito section (its release, node provisioning, waits), and,
    with the vLLM gate off, the runtime KAITO serves every preset with."""
    return {
        "kaito_version": decided.kaito_version,
        "node_provisioning": decided.node_provisioning,
        "node_provisioner": decided.node_provisioner,
        **{k: kaito[k] for k in WAITS if k in kaito},
        **({"runtime": decided.forced_runtime} if decided.forced_runtime is not None else {}),
    }


def _stack_wide_paths(written: Written, decided: Decisions) -> dict[str, tuple[PathPart, ...]]:
    """Where each stack-wide model arg is written: a model's problem about it is said there."""
    paths: dict[str, tuple[PathPart, ...]] = {
        "kaito_version": ("kaito", "version"),
        "node_provisioning": ("kaito", "node_provisioning"),
        "node_provisioner": ("kaito", "node_provisioner"),
        **{k: ("kaito", k) for k in WAITS},
        "hf_token": (Key(f"{PROJECT}:hfToken"),),  # (the secret config key)
    }
    if decided.forced_runtime is not None:
        paths["runtime"] = ("kaito", *gate_at(written.kaito.get("values", {}), "vLLM"))
    return paths


def _models(
    written: Written,
    decided: Decisions,
    secrets: Secrets,
    node_groups: list[NodeGroup] | None,
    metrics: ModelMetricsArgs | None,
    keda: KedaAutoscalingArgs | None,
) -> list[ModelConfig]:
    """Each usable workspace entry as a model's args, made once: the entry's keys over the
    stack-wide ones (kaito.*, the secret hfToken, the pools of a cluster it creates, its route,
    its ServiceMonitor, where a CPU model runs), each placed where written."""
    stack_wide = _stack_wide(written.kaito, decided)
    paths = _stack_wide_paths(written, decided)
    hf_token = secrets.value("hfToken")
    gateway = _gateway_ref(written.gateway) if written.gateway is not None else None
    scaler = keda_namespace(keda) if keda is not None else None
    callers = list(written.endpoints.get("allow_from") or [])
    models: list[ModelConfig] = []
    usable = [(i, e) for i, e in enumerate(written.workspaces) if e is not None]
    for j, (i, entry) in enumerate(usable):
        given = _written_model(entry, callers, decided.cpu_home[j], scaler)
        wide = {k: v for k, v in stack_wide.items() if not (k == "runtime" and given.get("image"))}
        if decided.streamed[j]:  # (KAITO mirrors and streams its weights: kaito.modelStreaming)
            given["weights_streaming"] = WeightsStreamingArgs()
        args = KaitoModelArgs(
            **wide | given,
            hf_token=hf_token if decided.hf_token[j] else None,
            node_groups=list(node_groups) if node_groups is not None else None,
            gateway=gateway if decided.routed[j] else None,
            metrics=metrics if decided.scraped[j] else None,
        )
        filled = {k: p for k, p in paths.items() if k not in given}
        # the GPU pools a model is given are the stack's; without them, what cannot be checked is the entry's
        filled["node_groups"] = ("gpuNodePools",) if node_groups is not None else ("workspaces", i)
        models.append(ModelConfig(args, Placed(("workspaces", i), filled, entry)))
    return models


def _written_model(
    entry: Mapping[str, Any], callers: list[Any], home: Mapping[str, str] | None, scaler: str | None
) -> dict[str, Any]:
    """A workspace entry's own args: the stack's callers before its own, where a CPU model that
    says nothing of where it runs goes, and (autoscaled) the namespace the stack's scaler runs in
    (its NetworkPolicy lets it in), unless the entry names another."""
    given = {k: v for k, v in entry.items() if v is not None and k not in OWN_KEYS}
    given["allow_from"] = [*callers, *(given.get("allow_from") or [])]
    if home is not None:
        given["node_selector"] = dict(home)
    autoscale = given.get("autoscale")
    if autoscale is not None and scaler is not None and autoscale.scaler_namespace == DEFAULT_SCALER_NAMESPACE:
        given["autoscale"] = dataclasses.replace(autoscale, scaler_namespace=scaler)
    return given


def _gateway_ref(section: Mapping[str, Any]) -> GatewayRefArgs:
    """The Gateway a routed model names (the program puts the InferenceGateway's outputs there)."""
    default = fields(InferenceGatewayArgs)
    return GatewayRefArgs(
        name=section.get("name", default["name"].default),
        namespace=section.get("namespace", default["namespace"].default),
    )


def _gateway(written: Written, decided: Decisions, models: list[ModelConfig]) -> InferenceGatewayArgs | None:
    """The gateway, routing every routed model's namespace (none where the release serves through
    no gateway: stacks/serving.py says why)."""
    chart = catalog.kaito_charts().get(decided.kaito_version)
    if written.gateway is None or chart is None or chart.serving is None:
        return None
    routed = [m.args for m in models if m.args.gateway is not None]
    namespaces = sorted({m.namespace for m in routed})
    ids = sorted({i for m in routed for i in model_ids(m, chart)})  # what its `GET /v1/models` lists
    section = {**written.gateway, "exposure": decided.gateway_exposure}
    return InferenceGatewayArgs(**section, model_namespaces=namespaces, models=ids)


def _metrics(written: Written, decided: Decisions) -> ModelMetricsArgs | None:
    if written.metrics is None:
        return None
    given = {k: v for k, v in written.metrics.items() if k in ("interval_seconds", "prometheus_namespace")}
    labels = dict(decided.metrics_labels) if decided.metrics_labels is not None else None
    return ModelMetricsArgs(flavour=decided.metrics_flavour, labels=labels, **given)


def _rag_engines(
    written: Written, decided: Decisions, models: list[KaitoModelArgs]
) -> tuple[list[RagEngineConfig], list[Problem]]:
    """Each usable ragEngines entry as RagEngine args; an engine over a workspace answers with that
    model's endpoint, within its context window. (The AKS add-on runs no RAGEngine operator: none
    is made, and its refusal of ragEngines says why.)"""
    if decided.add_on:
        return [], []
    version = decided.kaito_version
    by_key = {(m.namespace, m.name): m for m in models}
    callers = list(written.endpoints.get("allow_from") or [])
    engines: list[RagEngineConfig] = []
    problems: list[Problem] = []
    for i, entry in enumerate(written.rag_engines):
        if entry is None:
            continue
        placed = Placed(("ragEngines", i), {"kaito_version": ("kaito", "version")}, entry)
        given = {k: v for k, v in entry.items() if v is not None and k not in ("workspace", "context_window_size")}
        given["allow_from"] = [*callers, *(given.get("allow_from") or [])]
        workspace: str | None = entry.get("workspace")
        service, found = _llm_of(entry, given, workspace, by_key, version)
        problems += [p.under(*placed.at) for p in found]
        if service is not None and "inference_service" not in given:
            given["inference_service"] = service
        engines.append(RagEngineConfig(RagEngineArgs(kaito_version=version, **given), workspace, placed))
    return engines, problems


def _llm_of(
    entry: Mapping[str, Any],
    given: Mapping[str, Any],
    workspace: str | None,
    models: Mapping[tuple[str, str | None], KaitoModelArgs],
    version: str,
) -> tuple[InferenceServiceArgs | None, list[Problem]]:
    """The LLM an engine over a workspace answers with (the model's endpoint and context window),
    or what keeps it from one."""
    window_given: int | None = entry.get("context_window_size")
    if workspace is None:
        if window_given is None:
            return None, []
        why = "only with workspace; give inferenceService.contextWindowSize for another LLM"
        return None, [Problem.at("context_window_size", why, "rag-llm")]
    namespace = given.get("namespace", "default")
    model = models.get((namespace, workspace))
    if "inference_service" in given:
        why = "give workspace (a model of this stack) or inferenceService, not both"
        return None, [Problem.at("workspace", why, "rag-llm")]
    if model is None or model.tuning is not None:
        # (it answers at the endpoint written, and is judged so: every problem of it is said at once)
        url = endpoint_at(workspace, namespace)
        named = InferenceServiceArgs(url=url, context_window_size=window_given) if window_given else None
        return named, [_untied(workspace, namespace, model, models)]
    window, problems = _context_window(model, workspace, window_given, version)
    return (InferenceServiceArgs(url=endpoint_of(model), context_window_size=window) if window else None), problems


def _untied(
    workspace: str,
    namespace: str,
    model: KaitoModelArgs | None,
    models: Mapping[tuple[str, str | None], KaitoModelArgs],
) -> Problem:
    """Why an engine's workspace is no model it can call: none of that name there, or a tuning job."""
    if model is not None:
        return Problem.at("workspace", f"{workspace} is a tuning job; it serves nothing", "rag-workspace")
    elsewhere = "".join(
        f"; {workspace} is in namespace {ns}: set namespace: {ns} (an engine calls a model of its own namespace)"
        for ns, n in models
        if n == workspace
    )[:300]
    why = f"no workspaces[] entry named {workspace!r} in namespace {namespace}{elsewhere}"
    return Problem.at("workspace", why, "rag-workspace")


def _context_window(
    model: KaitoModelArgs, workspace: str, given: int | None, version: str
) -> tuple[int | None, list[Problem]]:
    """An engine's context window over a workspace: given, else the model's max-model-len; never
    beyond what the model takes (without max-model-len, its window in KAITO's catalog)."""
    limit = max_model_len(model)
    window = given or limit
    chart = catalog.kaito_charts().get(version)
    preset = catalog.find_preset(model.model, chart.preset_catalog) if chart and model.model else None
    bound = limit or (preset.token_limit if preset is not None else None)
    problems: list[Problem] = []
    if window is not None and bound is not None and window > bound:
        said = (
            f"config.vllm.max-model-len of {limit}"
            if limit
            else f"context window ({model.model}: {bound} tokens in KAITO {version}'s catalog)"
        )
        why = f"{window} exceeds {workspace}'s {said}: the engine would build prompts the model rejects; use at most "
        problems.append(
            Problem.at("context_window_size", f"{why}{bound}" + (" (or leave it out)" if limit else ""), "rag-window")
        )
    if window is None:
        why = (
            f"required: {workspace} is a custom image; give its context window here"
            if model.image
            else f"required: {workspace} sets no config.vllm.max-model-len, so KAITO sizes its context window from the "
            "GPU at start-up; give the window here (or set max-model-len on the workspace)"
        )
        problems.append(Problem.at("context_window_size", why, "required"))
    return window, problems
