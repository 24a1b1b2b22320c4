"""From a validated stack config to each component's arguments: the whole of what this
program adds to the kaito_aks components (the config schema is the stack's; every rule and
every computed value is the components'). Pure data, so `validate` and the tests can use it alone."""

from __future__ import annotations

from dataclasses import dataclass

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksClusterArgs
from kaito_aks.azure.gpu_node_pool import GpuPoolSettings
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigClusterArgs
from kaito_aks.model.component import KaitoModelArgs, ModelEnvironment, ModelPlan, ModelSpec, model_inputs, plan_model
from kaito_aks.operators.gpu_operator import DEFAULT_VERSION as GPU_OPERATOR_DEFAULT_VERSION
from kaito_aks.operators.gpu_operator import GpuOperatorArgs
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs
from stacks.config import GpuNodePoolSpec, StackConfig


@dataclass(frozen=True)
class GpuPoolPlan:
    name: str
    sku: catalog.GpuSku
    settings: GpuPoolSettings


@dataclass(frozen=True)
class StackPlan:
    # Exactly one of: a kubeconfig cluster, or an AKS cluster (created or adopted).
    kubeconfig_cluster: KubeconfigClusterArgs | None
    aks_cluster: AksClusterArgs | None
    gpu_pools: tuple[GpuPoolPlan, ...]
    gpu_operator: GpuOperatorArgs | None  # pools: filled in with the GpuNodePool components
    kaito_install: bool  # false: KAITO is already on the cluster; only its CRDs are relied on
    kaito_chart: catalog.KaitoChart
    kaito: KaitoOperatorArgs
    models: tuple[KaitoModelArgs, ...]  # without the secrets and cluster access
    namespaces: tuple[str, ...]  # namespaces this stack creates


def build_plan(cfg: StackConfig) -> StackPlan:
    chart = catalog.kaito_charts()[cfg.kaito.version]
    access = cfg.cluster.kubeconfig
    pools = tuple(
        GpuPoolPlan(p.name, catalog.all_gpu_skus()[p.vm_size], gpu_pool_settings(p)) for p in cfg.gpu_node_pools
    )
    namespaces = {ws.namespace for ws in cfg.workspaces} - {"default"}
    return StackPlan(
        kubeconfig_cluster=KubeconfigClusterArgs(path=access.path, context=access.context) if access else None,
        aks_cluster=aks_cluster_args(cfg),
        gpu_pools=pools,
        gpu_operator=gpu_operator_args(cfg) if cfg.gpu_operator_enabled else None,
        kaito_install=cfg.kaito.install,
        kaito_chart=chart,
        kaito=kaito_operator_args(cfg),
        models=tuple(model_args(ws, cfg) for ws in cfg.workspaces),
        namespaces=tuple(sorted(namespaces)) if cfg.create_namespaces else (),
    )


def aks_cluster_args(cfg: StackConfig) -> AksClusterArgs | None:
    if cfg.cluster.aks is not None:
        aks = cfg.cluster.aks
        return AksClusterArgs(
            resource_group=aks.resource_group,
            name=aks.name,
            location=aks.location or cfg.azure_location,
            kubernetes_version=aks.kubernetes_version,
            system_pool_vm_size=aks.system_pool.vm_size,
            system_pool_count=aks.system_pool.count,
            tags={"managed-by": "pulumi", "app": "kaito-aks", **aks.tags},
            protect=aks.protect,
        )
    if cfg.cluster.existing is not None:
        existing = cfg.cluster.existing
        return AksClusterArgs(resource_group=existing.resource_group, name=existing.name, create=False)
    return None


def gpu_pool_settings(pool: GpuNodePoolSpec) -> GpuPoolSettings:
    return GpuPoolSettings(
        vm_size=pool.vm_size,
        gpu_driver=pool.gpu_driver,
        count=pool.count,
        autoscale_min=pool.autoscale.min if pool.autoscale else None,
        autoscale_max=pool.autoscale.max if pool.autoscale else None,
        spot=pool.spot,
        labels=dict(pool.labels),
        taints=list(pool.taints),
        os_disk_size_gb=pool.os_disk_size_gb,
        protect=pool.protect,
    )


def gpu_operator_args(cfg: StackConfig) -> GpuOperatorArgs:
    spec = cfg.gpu_operator
    return GpuOperatorArgs(
        version=spec.version if spec else GPU_OPERATOR_DEFAULT_VERSION,
        pools=tuple(gpu_pool_settings(p) for p in cfg.gpu_node_pools),
        values=dict(spec.values) if spec else {},
    )


def kaito_operator_args(cfg: StackConfig) -> KaitoOperatorArgs:
    args = KaitoOperatorArgs(
        version=cfg.kaito.version,
        node_provisioning=cfg.kaito.node_provisioning,
        feature_gates=dict(cfg.kaito.feature_gates),
        gpu_discovery="kaito" if cfg.kaito_bundles_gpu_discovery else "external",
        spot_nodes=any(p.spot for p in cfg.gpu_node_pools),
        values=dict(cfg.kaito.values),
    )
    taints = [t for p in cfg.gpu_node_pools for t in p.taints]
    if taints:
        args["gpu_node_taints"] = taints
    aks = cfg.cluster.aks or cfg.cluster.existing
    if aks is not None:
        args["cluster_name"] = aks.name
    return args


def model_args(ws: ModelSpec, cfg: StackConfig) -> KaitoModelArgs:
    """One workspace entry as KaitoModel args; the stack-wide KAITO settings fill what the entry leaves."""
    args: KaitoModelArgs = ws.model_dump(exclude_defaults=True)  # type: ignore[assignment]
    args.update(
        name=ws.name,
        kaito_version=cfg.kaito.version,
        node_provisioning=cfg.kaito.node_provisioning,
        wait_for_gpu_nodes=cfg.kaito.wait_for_gpu_nodes,
        gpu_nodes_timeout_minutes=cfg.kaito.gpu_nodes_timeout_minutes,
        wait_for_ready=cfg.kaito.wait_for_ready,
        ready_timeout_minutes=ws.ready_timeout_minutes or cfg.kaito.ready_timeout_minutes,
    )
    return args


def model_environment(cfg: StackConfig) -> ModelEnvironment:
    """The facts about this stack every model's rules and plan depend on."""
    chart = catalog.kaito_charts().get(cfg.kaito.version)
    return ModelEnvironment(chart, cfg.kaito.node_provisioning, has_hf_token=cfg.hf_token)


def model_plans(cfg: StackConfig) -> list[ModelPlan]:
    """The KAITO objects each workspace entry becomes: the same args, checks and plan as the
    KaitoModel components the program declares."""
    token: KaitoModelArgs = {"hf_token": "[secret]"} if cfg.hf_token else {}  # only its presence counts
    plans = []
    for ws in cfg.workspaces:
        inputs = model_inputs(ws.key, {**model_args(ws, cfg), **token})
        plans.append(plan_model(inputs.spec, inputs.env, inputs.waits))
    return plans
