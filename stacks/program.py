"""The Pulumi program: one checked stack config in, components out, in dependency order.

    cluster -> GPU node pools -> { GPU Operator || KAITO operator || gpu-provisioner } -> models
    cluster -> Karpenter -> KAITO operator -> models                  (Karpenter mode)

(KAITO installed elsewhere, the AKS add-on's included: cluster -> KAITO serving -> models.)

No component reads config; each gets its args from StackConfig (stacks/load.py) and the outputs
and provider of the ones before it. Every Kubernetes resource uses the cluster's provider.
"""

from __future__ import annotations

import dataclasses
import gc

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksCluster
from kaito_aks.azure.cluster_ref import AksClusterRefArgs
from kaito_aks.azure.cpu_node_pool import CpuNodePool
from kaito_aks.azure.gpu_node_pool import GpuNodePool, initial_nodes
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigCluster
from kaito_aks.kaito.modelmirror import mirror_of
from kaito_aks.kaito.workspace import WORKSPACE_API_VERSION
from kaito_aks.model.component import watched_objects
from kaito_aks.model_group import ModelGroup, deploy_models
from kaito_aks.model_streaming import ModelStreaming
from kaito_aks.operators.gpu_operator import GpuOperator
from kaito_aks.operators.gpu_provisioner import GpuProvisioner
from kaito_aks.operators.kaito_operator import KaitoOperator
from kaito_aks.operators.karpenter import Karpenter
from kaito_aks.operators.ragengine_operator import RagEngineOperator
from kaito_aks.pod_security import namespace_level, pod_security_labels
from kaito_aks.rag.component import RagEngine, watched_object
from kaito_aks.serving.dashboard import VllmDashboard
from kaito_aks.serving.gateway import InferenceGateway
from kaito_aks.serving.keda import KedaAutoscaling
from kaito_aks.serving.spec import GatewayRefArgs
from kaito_aks.validation import Judged
from kaito_aks.waits.kaito_ready import KaitoKind, KaitoReady
from stacks.config import CpuPoolConfig, PoolConfig, StackConfig
from stacks.load import StackSecrets, load_stack
from stacks.quota import refuse_short_quota
from stacks.rules import STACK_RULES
from stacks.serving import WARNINGS as SERVING_WARNINGS

# The Pulumi SDK keeps tens of objects (Outputs, futures, tasks) per resource alive until the
# program ends; at Python's default thresholds every collection rescans them all, which makes
# evaluation superlinear in the number of resources (1000 workspaces: 8.2 s -> 4.5 s measured).
# So collect less often, and once the graph is declared, stop scanning it at all (gc.freeze):
# it lives until the program exits anyway.
GC_THRESHOLDS = (50_000, 20, 100)


def main() -> None:
    """The program's entry point (__main__.py): a process that declares the graph once and exits,
    so it may tune the collector for itself (nothing else, e.g. an Automation API host, should)."""
    gc.set_threshold(*GC_THRESHOLDS)
    build_stack(*load_stack())
    gc.freeze()


def build_stack(cfg: StackConfig, secrets: StackSecrets) -> None:
    """Declare the stack's resources; no process-wide side effects (usable from any host)."""
    refuse_short_quota(cfg)  # Azure's quota and sizes, before anything is registered
    cluster = _cluster(cfg)
    # the cluster as one argument of the components that act on it: its outputs
    ref = AksClusterRefArgs.of(cluster) if isinstance(cluster, AksCluster) else None
    pools, cpu_pools = _pools(cfg, cluster, ref)
    operators = _operators(cfg, cluster, ref, pools)
    # The namespaces it creates admit only pods of the strictest Pod Security level KAITO's pass.
    namespaces = {
        ns: k8s.core.v1.Namespace(
            f"namespace/{ns}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels=pod_security_labels(_level(cfg, ns))),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=pools),
        )
        for ns in cfg.namespaces
    }
    # KAITO's webhook fails closed, and in BYO mode it admits a preset only once matching GPU
    # nodes exist and GPU Feature Discovery has labelled them: the models wait for the pools,
    # the operators (when this stack installs them) and the namespaces; in auto mode for the
    # provisioner, so nothing asks for a node before something can make it (and on destroy the
    # Workspaces, with KAITO's NodeClaims, go while it still runs). Their waits are shared
    # (one per node selector, one for readiness), so N models take about the slowest one's time.
    serving = _serving(cfg, cluster)
    streaming = _model_streaming(cfg, cluster, ref, list(namespaces.values()))  # before the models it serves
    kaito_ready = _kaito_ready(cfg, cluster)
    # (and the CPU models for their CPU pools)
    ready = [
        *pools,
        *operators.all(serving.keda, streaming),
        *namespaces.values(),
        *([kaito_ready] if kaito_ready else []),
    ]
    group = deploy_models(
        "models",
        # judged by load_stack, with their warnings (each model logs its own)
        [(f"{w.args.namespace}/{w.args.name}", Judged(w.args, w.warnings)) for w in cfg.workspaces],
        opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[*ready, *cpu_pools]),
        # a routed model's route names the Gateway by its outputs (and so waits for it)
        gateway=GatewayRefArgs(name=serving.gateway.gateway_name, namespace=serving.gateway.namespace)
        if serving.gateway is not None
        else None,
    )
    nodes_by = operators.provisioner or operators.karpenter
    rag_engines = _rag_engines(cfg, cluster, group, operators.kaito, kaito_ready, nodes_by, namespaces)
    _export(cfg, cluster, group, operators.provisioner, rag_engines)
    _export_serving(cfg, group, serving)
    _export_karpenter(operators.karpenter)


def _level(cfg: StackConfig, namespace: str) -> str:
    """The Pod Security level a namespace this stack creates enforces: the strictest its models pass."""
    return namespace_level(w.args for w in cfg.workspaces if w.args.namespace == namespace)


def _cluster(cfg: StackConfig) -> AksCluster | KubeconfigCluster:
    if cfg.aks_cluster is not None:
        return AksCluster("cluster", cfg.aks_cluster, opts=pulumi.ResourceOptions(protect=cfg.cluster_protect or None))
    assert cfg.kubeconfig_cluster is not None
    return KubeconfigCluster("cluster", cfg.kubeconfig_cluster)


def _pools(
    cfg: StackConfig, cluster: AksCluster | KubeconfigCluster, ref: AksClusterRefArgs | None
) -> tuple[list[GpuNodePool], list[CpuNodePool]]:
    """The gpuNodePools and cpuNodePools, each given its cluster (a cluster with a subnet of its
    own keeps every pool in it: AKS keeps a cluster's pools in one VNet)."""
    if not isinstance(cluster, AksCluster):
        return [], []
    subnet = cluster.node_subnet_id if cfg.aks_cluster and cfg.aks_cluster.node_subnet else None
    gpu = [
        GpuNodePool(
            p.args.name or "", dataclasses.replace(p.args, cluster=ref, vnet_subnet_id=subnet), opts=_protect(p)
        )
        for p in cfg.pools
    ]
    cpu = [
        CpuNodePool(
            p.args.name or "", dataclasses.replace(p.args, cluster=ref, vnet_subnet_id=subnet), opts=_protect(p)
        )
        for p in cfg.cpu_pools
    ]
    return gpu, cpu


def _protect(pool: PoolConfig | CpuPoolConfig) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(protect=pool.protect or None)


@dataclasses.dataclass(frozen=True)
class Operators:
    gpu_operator: GpuOperator | None
    karpenter: Karpenter | None
    kaito: KaitoOperator | None
    provisioner: GpuProvisioner | None

    def all(self, *more: pulumi.Resource | None) -> list[pulumi.Resource]:
        """Those the stack installs (and `more`), in the order the models wait for them."""
        return [r for r in (self.kaito, self.gpu_operator, self.provisioner, self.karpenter, *more) if r is not None]


def _operators(
    cfg: StackConfig, cluster: AksCluster | KubeconfigCluster, ref: AksClusterRefArgs | None, pools: list[GpuNodePool]
) -> Operators:
    """The GPU Operator, Karpenter, KAITO and gpu-provisioner the stack installs, once the GPU
    nodes exist; the stack's own warnings said (the components log theirs)."""
    on_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=pools)
    gpu_operator = GpuOperator("gpu-operator", cfg.gpu_operator, opts=on_cluster) if cfg.gpu_operator else None
    karpenter = None
    if cfg.karpenter is not None:  # on the cluster this stack creates: every value from its outputs
        karpenter = Karpenter("karpenter", dataclasses.replace(cfg.karpenter, cluster=ref), opts=on_cluster)
    # KAITO in Karpenter mode exits unless Karpenter answers within 120 s of its start
    after = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[*pools, karpenter]) if karpenter else None
    kaito = KaitoOperator("kaito", cfg.kaito, opts=after or on_cluster) if cfg.kaito_install else None
    provisioner = None
    if cfg.gpu_provisioner is not None:
        args = dataclasses.replace(cfg.gpu_provisioner, cluster=ref)
        provisioner = GpuProvisioner("gpu-provisioner", args, opts=on_cluster)
        for warning in (w for w in cfg.warnings if w.path[:1] == ("gpuProvisioner",)):
            pulumi.log.warn(warning.text("schema"), resource=provisioner)
    for warning in cfg.warnings:  # the stack's own (the components log theirs)
        own = warning.code in STACK_RULES and warning.code not in SERVING_WARNINGS
        if own and warning.path[:1] != ("gpuProvisioner",):
            pulumi.log.warn(warning.text("schema"))
    return Operators(gpu_operator, karpenter, kaito, provisioner)


def _export_karpenter(karpenter: Karpenter | None) -> None:
    if karpenter is not None:
        pulumi.export(
            "karpenter",
            {
                "namespace": karpenter.namespace,
                "identityName": karpenter.identity_name,
                "clientId": karpenter.client_id,
                "principalId": karpenter.principal_id,
                "bootstrapTokenId": karpenter.bootstrap_token_id,
                "bootstrapTokenExpires": karpenter.bootstrap_token_expires,
            },
        )


def _model_streaming(
    cfg: StackConfig,
    cluster: AksCluster | KubeconfigCluster,
    ref: AksClusterRefArgs | None,
    namespaces: list[k8s.core.v1.Namespace],
) -> ModelStreaming | None:
    """KAITO's ModelMirror/ModelStreaming pieces, from the cluster's kubelet identity and OIDC issuer."""
    if cfg.model_streaming is None or ref is None:
        return None
    return ModelStreaming(
        "model-streaming",
        dataclasses.replace(cfg.model_streaming, cluster=ref),
        opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=namespaces),
    )


@dataclasses.dataclass(frozen=True)
class Serving:
    gateway: InferenceGateway | None
    keda: KedaAutoscaling | None
    dashboard: VllmDashboard | None


def _serving(cfg: StackConfig, cluster: AksCluster | KubeconfigCluster) -> Serving:
    """The gateway, KEDA and the dashboard. The gateway goes up beside the models (each model's
    route names it by its outputs, so the routes wait for it); the autoscaled models' InferenceSets
    are among the models, which wait for KEDA (and go before it on destroy, while KEDA can still
    drop the ScaledObjects its finalizer guards)."""
    opts = pulumi.ResourceOptions(providers=[cluster.provider])
    gateway = InferenceGateway("gateway", cfg.gateway, opts=opts) if cfg.gateway is not None else None
    keda = KedaAutoscaling("autoscaling", cfg.autoscaling, opts=opts) if cfg.autoscaling is not None else None
    for warning in (w for w in cfg.warnings if w.code in SERVING_WARNINGS):  # (validate says them too)
        pulumi.log.warn(warning.text("schema"), resource=gateway or keda)
    dashboard = VllmDashboard("dashboard", cfg.dashboard, opts=opts) if cfg.dashboard is not None else None
    return Serving(gateway, keda, dashboard)


def kaito_kinds(cfg: StackConfig) -> list[KaitoKind]:
    """The kinds of KAITO object the stack creates, as kaito_aks.model.plan and rag.plan emit
    them: Workspaces (an InferenceSet's replicas are Workspaces too), InferenceSets (0.12's
    serving models), RAGEngines (unless the stack installs their chart: its release waits for the CRD)."""
    chart = catalog.kaito_charts()[cfg.kaito.version]
    kinds: set[KaitoKind] = set()
    for m in (w.args for w in cfg.workspaces):
        kinds.add(KaitoKind.of(WORKSPACE_API_VERSION, "Workspace"))
        if m.tuning is None and chart.replicas == "inferenceSet":
            kinds.add(KaitoKind.of(chart.inference_set_api_version or "", "InferenceSet"))
    for engine in cfg.rag_engines if cfg.rag_operator is None else ():  # else its chart's wait gives the CRD
        kinds.add(KaitoKind.of(catalog.ragengine_charts()[engine.args.kaito_version].api_version, "RAGEngine"))
    return sorted(kinds, key=lambda k: k.plural)


def _kaito_ready(cfg: StackConfig, cluster: AksCluster | KubeconfigCluster) -> KaitoReady | None:
    """Where this stack does not install KAITO, its objects wait until KAITO serves: the CRDs
    Established, and its fail-closed admission webhook with a ready endpoint. A webhook is
    required with the AKS add-on (which certainly runs one, rolled out after the cluster exists);
    with `kaito.install: false` only those that exist must serve (a KAITO installed elsewhere may
    run without one, as the e2e's CRD-only cluster does)."""
    if cfg.kaito_install:
        return None  # the Helm release's wait gives the same
    kinds = kaito_kinds(cfg)
    if not kinds:
        return None
    # the add-on's release follows the cluster's Kubernetes minor, known for sure only now
    checked = isinstance(cluster, AksCluster) and cfg.add_on and "kaito.version" not in cfg.decided.written
    return KaitoReady(
        "kaito/ready",
        cluster.provider.access,
        kinds,
        require_webhook=cfg.add_on,
        add_on_release=cfg.kaito.version if checked else None,
        kubernetes_version=cluster.kubernetes_version if checked and isinstance(cluster, AksCluster) else None,
    )


def _rag_engines(
    cfg: StackConfig,
    cluster: AksCluster | KubeconfigCluster,
    group: ModelGroup,
    kaito: KaitoOperator | None,
    kaito_ready: KaitoReady | None,
    provisioner: GpuProvisioner | Karpenter | None,
    namespaces: dict[str, k8s.core.v1.Namespace],
) -> dict[str, RagEngine]:
    """KAITO's RAGEngine operator and the engines. An engine over a workspace takes the model's
    endpoint (an Output) and waits for the model to serve; the operator follows the workspace
    operator (on 0.8 its controller watches the NodeClaim CRD that chart installs); with KAITO
    installed elsewhere, every engine waits for its CRD (`kaito_ready`). In auto mode KAITO makes
    an engine's node too: the engine follows gpu-provisioner, and goes before it on destroy."""
    if not cfg.rag_engines and cfg.rag_operator is None:
        return {}
    operator = None
    if cfg.rag_operator is not None:
        operator = RagEngineOperator(
            "ragengine",
            cfg.rag_operator,
            opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[kaito] if kaito else []),
        )
    engines: dict[str, RagEngine] = {}
    for engine in cfg.rag_engines:
        args = engine.args
        key = f"{args.namespace}/{args.name}"
        after: list[pulumi.Resource] = [r for r in (operator, kaito_ready, provisioner) if r is not None]
        if args.namespace in namespaces:
            after.append(namespaces[args.namespace])
        if engine.workspace is not None and args.inference_service is not None:
            model_key = f"{args.namespace}/{engine.workspace}"
            model = group.models[model_key]
            args = dataclasses.replace(
                args, inference_service=dataclasses.replace(args.inference_service, url=model.endpoint)
            )
            after += [model, *group.waits_of(model_key)]
        engines[key] = RagEngine(key, args, opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=after))
    return engines


def _export(
    cfg: StackConfig,
    cluster: AksCluster | KubeconfigCluster,
    group: ModelGroup,
    provisioner: GpuProvisioner | None,
    rag_engines: dict[str, RagEngine],
) -> None:
    if isinstance(cluster, AksCluster):
        pulumi.export("kubeconfig", cluster.kubeconfig)
        pulumi.export("oidcIssuerUrl", cluster.oidc_issuer_url)
    pulumi.export("clusterName", cluster.cluster_name)
    skus = catalog.all_gpu_skus()
    pulumi.export(
        "nodePools",
        [
            {
                "name": p.args.name,
                "vmSize": p.args.vm_size,
                "gpuModel": skus[p.args.vm_size].gpu_model,
                "gpusPerNode": skus[p.args.vm_size].gpu_count,
                "gpuMemoryGiBPerNode": skus[p.args.vm_size].gpu_mem_gib,
                "nodes": initial_nodes(p.args)
                if p.args.autoscale is None
                else f"{p.args.autoscale.min}-{p.args.autoscale.max}",
                "gpuDriver": p.args.gpu_driver,
                "spot": p.args.spot,
            }
            for p in cfg.pools
        ],
    )
    pulumi.export(
        "charts",
        {
            "kaito": {
                "version": cfg.kaito.version,
                "installed": cfg.kaito_install,
                "byAksAddOn": cfg.add_on,
                "nodeProvisioning": cfg.kaito.node_provisioning,
            },
            "gpuOperator": {"version": cfg.gpu_operator.version} if cfg.gpu_operator else None,
            "gpuProvisioner": {"version": cfg.gpu_provisioner.version} if cfg.gpu_provisioner else None,
            **({"karpenter": {"version": cfg.karpenter.version}} if cfg.karpenter else {}),
            "ragEngineOperator": {"version": cfg.rag_operator.version} if cfg.rag_operator else None,
        },
    )
    if rag_engines:
        workspaces = {f"{e.args.namespace}/{e.args.name}": e.workspace for e in cfg.rag_engines}
        pulumi.export(
            "ragEngines",
            {
                key: {
                    "endpoint": engine.endpoint,
                    "chatEndpoint": engine.chat_endpoint,
                    "retrieveEndpoint": engine.retrieve_endpoint,
                    "workspace": workspaces[key],
                    "kaito": [watched_object(engine.plan).props()],
                }
                for key, engine in rag_engines.items()
            },
        )
    if provisioner is not None:
        pulumi.export(
            "gpuProvisioner",
            {
                "namespace": provisioner.namespace,
                "identityName": provisioner.identity_name,
                "clientId": provisioner.client_id,
                "principalId": provisioner.principal_id,
            },
        )
    mirrors = {  # the ModelMirror KAITO makes for each streaming model: what `status` reads
        f"{w.args.namespace}/{w.args.name}": mirror_of(w.args.model or "", cfg.kaito.version)
        for w in cfg.workspaces
        if w.args.weights_streaming is not None
    }
    pulumi.export(
        "workspaces",
        {
            key: {
                "model": m.model,
                "source": m.source,
                "endpoint": m.endpoint,
                "replicas": m.replicas,
                "gpuNodes": group.gpu_nodes_of(key),
                "instanceType": m.instance_type,
                # the objects whose condition says it serves: what `python -m stacks status` reads
                "kaito": [w.props() for w in watched_objects(m.plan)],
                **({"route": m.route} if m.plan.route is not None else {}),
                **({"autoscaling": m.autoscaling} if m.plan.autoscale is not None else {}),
                **({"modelMirror": mirrors[key]} if key in mirrors else {}),
            }
            for key, m in group.models.items()
        },
    )


def _export_serving(cfg: StackConfig, group: ModelGroup, serving: Serving) -> None:
    """The gateway's URL and what it routes, KEDA's pieces, the metrics' flavour."""
    if serving.gateway is not None:
        gateway = serving.gateway
        pulumi.export("gatewayUrl", gateway.url)
        pulumi.export(
            "gateway",
            {
                "url": gateway.url,
                "name": gateway.gateway_name,
                "namespace": gateway.namespace,
                "service": gateway.service,
                "authentication": gateway.authentication,
                "exposure": cfg.gateway.exposure if cfg.gateway is not None else None,
                "istio": catalog.serving_charts().istio.version,
                "models": {key: m.route for key, m in group.models.items() if m.plan.route is not None},
            },
        )
    if serving.keda is not None:
        pulumi.export(
            "autoscaling",
            {
                "namespace": serving.keda.namespace,
                "keda": serving.keda.keda_version,
                "kedaKaitoScaler": serving.keda.scaler_version,
            },
        )
    if cfg.metrics is not None:
        pulumi.export(
            "metrics",
            {
                "flavour": cfg.metrics.flavour,
                "dashboard": serving.dashboard.config_map if serving.dashboard is not None else None,
            },
        )
