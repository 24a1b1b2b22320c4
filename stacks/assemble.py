"""The components' args from what a stack file writes and what the stack decides (its
defaults: stacks/defaults.py), each placed where it was written, with the stack's own warnings."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

import pulumi

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksClusterArgs, aks_cluster_warnings
from kaito_aks.azure.aks_security import is_production
from kaito_aks.azure.cpu_node_pool import CpuNodePoolArgs
from kaito_aks.azure.gpu_node_pool import GpuNodePoolArgs, node_group
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigClusterArgs
from kaito_aks.endpoints import INTERNAL_LB, load_balancer_of
from kaito_aks.model.config import max_model_len
from kaito_aks.model.names import endpoint_of
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import with_driver
from kaito_aks.operators.gpu_operator import GpuOperatorArgs
from kaito_aks.operators.gpu_provisioner import GpuProvisionerArgs
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs
from kaito_aks.operators.karpenter import KarpenterArgs, KarpenterNetworkArgs, KubeletIdentityArgs
from kaito_aks.operators.ragengine_operator import RagEngineOperatorArgs
from kaito_aks.pod_security import host_path_reason
from kaito_aks.problems import Problem
from kaito_aks.rag.spec import InferenceServiceArgs, RagEngineArgs
from kaito_aks.serving.spec import ModelMetricsArgs
from stacks import defaults, serving
from stacks.config import (
    FROM_CLUSTER,
    FROM_CLUSTER_ID,
    CpuPoolConfig,
    ModelConfig,
    Placed,
    PoolConfig,
    RagEngineConfig,
    StackConfig,
)
from stacks.defaults import Written
from stacks.hf_token import gets_hf_token
from stacks.nested_secrets import SECRET_PRESENT
from stacks.streaming import with_streaming


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


def assemble(
    written: Written, secrets: Secrets, azure_location: str | None, stack: str = ""
) -> tuple[StackConfig, list[Problem]]:
    """The components' args from what the file writes and what the stack decides, each placed
    where it was written; the problems of tying a RAG engine to a workspace."""
    kubeconfig_cluster, aks_cluster = _cluster(written, secrets, azure_location)
    if aks_cluster is not None and defaults.keda_add_on(written):
        aks_cluster = dataclasses.replace(aks_cluster, keda=True)
    pools = _pools(written)
    add_on = defaults.runs_add_on(aks_cluster)
    provisioning = defaults.node_provisioning(written.kaito, add_on)
    kaito_install = defaults.kaito_installed(written.kaito, add_on)
    gpu_operator_on = defaults.gpu_operator_on(written, provisioning == "auto")
    groups = [node_group(p.args, p.args.name or "") for p in pools]
    if gpu_operator_on:  # the stack's GPU Operator installs the driver the pools leave to it
        groups = [with_driver(g) for g in groups]
    version = defaults.kaito_version(written.kaito, aks_cluster)
    gates = written.kaito.get("feature_gates", {})
    if written.gateway is not None and kaito_install:
        gates = defaults.with_gateway_gate(written.kaito, catalog.kaito_charts().get(version))
    kaito = KaitoOperatorArgs(
        version=version,
        node_provisioning=provisioning,
        node_provisioner=defaults.node_provisioner(written, version, provisioning, add_on),
        feature_gates=gates,
        values=written.kaito.get("values", {}),
        gpu_discovery=defaults.gpu_discovery(written.kaito, gpu_operator_on),
        node_groups=groups,
        cluster_name=aks_cluster.name if aks_cluster is not None else None,
    )
    cpu_pools = _cpu_pools(written)
    knows_pools = defaults.pools_known(written, provisioning, len(pools) + len(cpu_pools))
    metrics = serving.metrics_args(written, aks_cluster)
    workspaces = _models(written, kaito, secrets, groups if knows_pools else None, metrics)
    served = serving.serving_args(written, kaito, [w.args for w in workspaces])
    workspaces = [dataclasses.replace(w, args=serving.with_scaler(w.args, served.autoscaling)) for w in workspaces]
    rag_engines, tied = _rag_engines(written, [w.args for w in workspaces], kaito.version)
    provisioner = _gpu_provisioner(written, kaito, kaito_install)
    karpenter = _karpenter(written, kaito, kaito_install)
    if aks_cluster is not None and written.cluster_kind == "aks":
        subnet = defaults.node_subnet(written.cluster or {}, karpenter is not None)
        aks_cluster = dataclasses.replace(aks_cluster, node_subnet=subnet)
    # (each model's and engine's own warnings are their rules', said by judge)
    warnings = _pod_security_warnings(workspaces, written.create_namespaces)
    if not written.is_azure:
        warnings += _internal_elsewhere(workspaces, rag_engines)
    protect = written.cluster_kind == "aks" and (written.cluster or {}).get("protect", False)
    if aks_cluster is not None:
        production = is_production(stack, protect)
        at = ("cluster", written.cluster_kind or "aks")
        warnings += [p.under(*at) for p in aks_cluster_warnings(aks_cluster, production)]
    cfg = StackConfig(
        kubeconfig_cluster=kubeconfig_cluster,
        aks_cluster=aks_cluster,
        cluster_protect=protect,
        kaito=kaito,
        kaito_install=kaito_install,
        gpu_discovery_given=written.kaito.get("gpu_discovery") is not None,
        workspaces=tuple(workspaces),
        pools=tuple(pools),
        cpu_pools=tuple(cpu_pools),
        gpu_operator=_gpu_operator(written, groups) if gpu_operator_on else None,
        gpu_provisioner=provisioner,
        karpenter=karpenter,
        generation=written.generation,
        given=_written_settings(written),
        rag_engines=tuple(rag_engines),
        rag_operator=RagEngineOperatorArgs(version=kaito.version, values=written.rag_engine_operator.get("values", {}))
        if defaults.rag_operator_on(written, kaito_install)
        else None,
        create_namespaces=written.create_namespaces,
        has_hf_token="hfToken" in secrets.present,
        has_kubeconfig="kubeconfig" in secrets.present,
        azure_location=azure_location,
        pools_known=knows_pools,
        warnings=(
            *warnings,
            *_provisioner_warnings(provisioner, kaito.version),
            *_karpenter_warnings(written, karpenter),
        ),
        gateway=served.gateway,
        autoscaling=served.autoscaling,
        metrics=served.metrics,
        dashboard=served.dashboard,
    )
    cfg = dataclasses.replace(cfg, warnings=(*cfg.warnings, *serving.warnings(cfg, written)))
    cfg, streaming_found = with_streaming(cfg, written)  # KAITO's ModelMirror/ModelStreaming (stacks/streaming.py)
    return cfg, [*tied, *streaming_found]


def _pod_security_warnings(workspaces: list[ModelConfig], create_namespaces: bool) -> list[Problem]:
    """A model whose pods mount a host directory makes the namespace the stack creates for it
    privileged (Pod Security's baseline refuses host paths): said at the model, with what that
    opens. In `default` (or a namespace not created here) its pods are admitted by whatever
    labels the namespace has."""
    found: list[Problem] = []
    said: set[str] = set()
    for w in workspaces:
        created = create_namespaces and w.args.namespace != "default"
        if not created and w.args.namespace not in said:
            said.add(w.args.namespace)
            found.append(
                w.placed.where(
                    Problem.at(
                        "namespace",
                        f"namespace {w.args.namespace} is not one this stack creates, so it gets no Pod Security labels "
                        "from it (its pods are admitted by whatever labels it has); a namespace of the models' own, "
                        "which the stack creates, enforces Pod Security's baseline level",
                        "pod-security-unlabelled",
                    )
                )
            )
        why = host_path_reason(w.args)
        if why is None or not created:
            continue
        found.append(
            w.placed.where(
                Problem.at(
                    "model",
                    f"{why}, which Pod Security's baseline level refuses: namespace {w.args.namespace} is created at the "
                    "privileged level, so any pod there may run privileged; give such models a namespace of their own",
                    "pod-security",
                )
            )
        )
    return found


def _internal_elsewhere(workspaces: list[ModelConfig], rag_engines: list[RagEngineConfig]) -> list[Problem]:
    """An internal load balancer on a cluster this stack does not know is AKS: the annotation
    that makes it internal is Azure's."""
    found: list[Problem] = []
    entries = [(w.args.load_balancer, w.placed) for w in workspaces] + [
        (e.args.load_balancer, e.placed) for e in rag_engines
    ]
    for value, placed in entries:
        lb = load_balancer_of(value)
        if lb is not None and lb.internal and not lb.annotations:
            why = (
                f"internal through Azure's annotation ({INTERNAL_LB}); on another cloud give that cloud's "
                "internal load balancer annotation in `annotations`, or its load balancer may be public"
            )
            found.append(placed.where(Problem.at("load_balancer", why, "load-balancer-cloud")))
    return found


def _cluster(
    written: Written, secrets: Secrets, azure_location: str | None
) -> tuple[KubeconfigClusterArgs | None, AksClusterArgs | None]:
    section = written.cluster
    if section is None:  # unusable: its problems are said, and nothing that depends on it
        return None, None
    if written.cluster_kind == "kubeconfig":
        return KubeconfigClusterArgs(**section, kubeconfig=secrets.value("kubeconfig")), None
    if written.cluster_kind == "existing":
        return None, AksClusterArgs(**section, existing=True)
    if written.cluster_kind == "aks":
        values = {k: v for k, v in section.items() if k != "protect"}
        location = defaults.cluster_location(section, azure_location)
        return None, AksClusterArgs(**values | {"location": location, "tags": defaults.cluster_tags(section)})
    return None, None


def _pools(written: Written) -> list[PoolConfig]:
    return [
        PoolConfig(
            GpuNodePoolArgs(
                **{k: v for k, v in entry.items() if k != "protect"},
                cluster_name=FROM_CLUSTER,
                resource_group_name=FROM_CLUSTER,
            ),
            entry.get("protect", False),
            Placed(("gpuNodePools", i)),
        )
        for i, entry in enumerate(written.pools)
        if entry is not None
    ]


def _cpu_pools(written: Written) -> list[CpuPoolConfig]:
    return [
        CpuPoolConfig(
            CpuNodePoolArgs(
                **{k: v for k, v in entry.items() if k != "protect"},
                cluster_name=FROM_CLUSTER,
                resource_group_name=FROM_CLUSTER,
            ),
            entry.get("protect", False),
            Placed(("cpuNodePools", i)),
        )
        for i, entry in enumerate(written.cpu_pools)
        if entry is not None
    ]


def _gpu_operator(written: Written, groups: list[Any]) -> GpuOperatorArgs:
    return GpuOperatorArgs(
        version=defaults.gpu_operator_version(written.gpu_operator),
        node_groups=groups if written.is_azure else [],
        values=written.gpu_operator.get("values", {}),
    )


def _gpu_provisioner(written: Written, kaito: KaitoOperatorArgs, kaito_install: bool) -> GpuProvisionerArgs | None:
    if not defaults.gpu_provisioner_on(written, kaito, kaito_install):
        return None
    chosen = written.gpu_provisioner
    return GpuProvisionerArgs(
        # the cluster's outputs, filled in by the program; stand-ins the rules accept
        cluster_id=FROM_CLUSTER_ID,
        location=FROM_CLUSTER,
        node_resource_group=FROM_CLUSTER,
        oidc_issuer_url=FROM_CLUSTER,
        version=defaults.gpu_provisioner_version(chosen, kaito.version),
        identity_name=chosen.get("identity_name"),
        values=chosen.get("values", {}),
    )


def _karpenter(written: Written, kaito: KaitoOperatorArgs, kaito_install: bool) -> KarpenterArgs | None:
    if not defaults.karpenter_on(written, kaito, kaito_install):
        return None
    chosen = written.karpenter
    return KarpenterArgs(
        # the cluster's outputs, filled in by the program; stand-ins the rules accept
        cluster_id=FROM_CLUSTER_ID,
        location=FROM_CLUSTER,
        node_resource_group=FROM_CLUSTER,
        oidc_issuer_url=FROM_CLUSTER,
        api_server_endpoint=FROM_CLUSTER,
        kubelet_identity=KubeletIdentityArgs(client_id=FROM_CLUSTER, resource_id=FROM_CLUSTER),
        network=KarpenterNetworkArgs(
            subnet_id=FROM_CLUSTER,
            vnet_guid=FROM_CLUSTER,
            plugin=FROM_CLUSTER,
            plugin_mode=FROM_CLUSTER,
            policy=FROM_CLUSTER,
            dataplane=FROM_CLUSTER,
        ),
        version=defaults.karpenter_version(chosen, kaito.version),
        identity_name=chosen.get("identity_name"),
        bootstrap_token_rotation=chosen.get("bootstrap_token_rotation", 0),
        bootstrap_token_lifetime_days=defaults.bootstrap_token_lifetime(chosen, written.generation),
        values=chosen.get("values", {}),
    )


def _written_settings(written: Written) -> frozenset[str]:
    """The settings the file writes whose default depends on others (the rules tell a written
    one from a decided one)."""
    present = {
        "kaito.install": written.kaito.get("install") is not None,
        "kaito.nodeProvisioning": written.kaito.get("node_provisioning") is not None,
        "kaito.version": written.kaito.get("version") is not None,
        "gpuOperator.enabled": written.gpu_operator.get("enabled") is not None,
        "gpuProvisioner.install": written.gpu_provisioner.get("install") is not None,
        "gpuProvisioner": any(k != "install" for k in written.gpu_provisioner),
        "karpenter.install": written.karpenter.get("install") is not None,
        "karpenter": any(k != "install" for k in written.karpenter),
        "kaito.nodeProvisioner": written.kaito.get("node_provisioner") is not None,
        "kaito.modelStreaming": written.kaito.get("model_streaming") is not None,
        "cluster.aks.nodeSubnet": written.cluster_kind == "aks"
        and (written.cluster or {}).get("node_subnet") is not None,
        "ragEngineOperator.install": written.rag_engine_operator.get("install") is not None,
        "ragEngineOperator": any(k != "install" for k in written.rag_engine_operator),
    }
    return frozenset(k for k, v in present.items() if v)


def _models(
    written: Written,
    kaito: KaitoOperatorArgs,
    secrets: Secrets,
    node_groups: list[Any] | None,
    metrics: ModelMetricsArgs | None = None,
) -> list[ModelConfig]:
    """Each usable workspace entry as a model's args: the entry's keys over the stack-wide ones
    (kaito.*, the secret hfToken, the pools of a cluster it creates, its route and ServiceMonitor),
    each placed where written."""
    stack_wide = defaults.stack_wide_model_args(kaito, written.kaito)
    paths = defaults.stack_wide_paths(kaito)
    hf_token = secrets.value("hfToken")
    models: list[ModelConfig] = []
    for i, entry in enumerate(written.workspaces):
        if entry is None:
            continue
        given = {k: v for k, v in entry.items() if v is not None and k not in (*serving.OWN_KEYS, "use_hf_token")}
        given["allow_from"] = defaults.allowed_callers(written.endpoints, given)
        token = hf_token if gets_hf_token(entry, kaito.version, written.generation) else None
        args = KaitoModelArgs(
            **defaults.model_defaults(stack_wide, given) | given,
            hf_token=token,
            node_groups=list(node_groups) if node_groups is not None else None,
        )
        args = serving.model_serving(entry, args, written, metrics)
        home = defaults.cpu_model_node_selector(args, written)
        if home is not None:
            args = dataclasses.replace(args, node_selector=home)
        filled = {k: p for k, p in paths.items() if k not in given}
        models.append(ModelConfig(args, Placed(("workspaces", i), filled)))
    return models


def _rag_engines(
    written: Written, models: list[KaitoModelArgs], version: str
) -> tuple[list[RagEngineConfig], list[Problem]]:
    """Each usable ragEngines entry as RagEngine args; an engine over a workspace answers with that
    model's endpoint, within its context window."""
    by_key = {(m.namespace, m.name): m for m in models}
    engines: list[RagEngineConfig] = []
    problems: list[Problem] = []
    for i, entry in enumerate(written.rag_engines):
        if entry is None:
            continue
        placed = Placed(("ragEngines", i), {"kaito_version": ("kaito", "version")})
        given = {k: v for k, v in entry.items() if v is not None and k not in ("workspace", "context_window_size")}
        given["allow_from"] = defaults.allowed_callers(written.endpoints, given)
        workspace: str | None = entry.get("workspace")
        service, found = _llm_of(entry, given, workspace, by_key, version)
        problems += [placed.where(p) for p in found]
        if service is not None:
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
    if model is None:
        elsewhere = "".join(
            f"; {workspace} is in namespace {ns}: set namespace: {ns} (an engine calls a model of its own namespace)"
            for ns, n in models
            if n == workspace
        )[:300]
        why = f"no workspaces[] entry named {workspace!r} in namespace {namespace}{elsewhere}"
        return None, [Problem.at("workspace", why, "rag-workspace")]
    if model.tuning is not None:
        return None, [Problem.at("workspace", f"{workspace} is a tuning job; it serves nothing", "rag-workspace")]
    window, problems = _context_window(model, workspace, window_given, version)
    return (InferenceServiceArgs(url=endpoint_of(model), context_window_size=window) if window else None), problems


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


def _provisioner_warnings(args: GpuProvisionerArgs | None, kaito_version: str) -> tuple[Problem, ...]:
    """A gpu-provisioner release other than the one KAITO's own charts pin for its minor works
    only as far as the two agree on the NodeClaim API: said, not refused."""
    pinned = catalog.gpu_provisioner_for_kaito(kaito_version)
    if args is None or pinned is None or args.version == pinned:
        return ()
    return (
        Problem(
            ("gpuProvisioner", "version"),
            f"KAITO {kaito_version} pins gpu-provisioner {pinned} (its chart's dependency); {args.version} is not "
            "tested with it: leave version out to use the pin",
            "provisioner-pin",
        ),
    )


def _karpenter_warnings(written: Written, karpenter: KarpenterArgs | None) -> tuple[Problem, ...]:
    """Karpenter needs the nodes' subnet, which a cluster gets only when it is created: a stack of
    the first generation of defaults may have created its cluster without one."""
    if karpenter is None or written.generation >= 2 or written.cluster_kind != "aks":
        return ()
    return (
        Problem(
            ("kaito", "node_provisioner"),
            "Karpenter needs the cluster's nodes in a subnet it is given (cluster.aks.nodeSubnet), which AKS sets "
            "only when it creates the cluster: a cluster this stack created earlier keeps AKS's managed VNet, and "
            "`pulumi up` refuses Karpenter there; use it with a new cluster (docs/upgrading.md)",
            "karpenter-subnet",
        ),
    )
