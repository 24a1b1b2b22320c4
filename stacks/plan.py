"""From a validated stack config to a plan: which components exist and with what typed
arguments. Pure data (no resources are created here), so `validate` and the tests can use it alone."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import yaml

from kaito_aks import catalog
from kaito_aks.aks_cluster import AksClusterArgs
from kaito_aks.gpu_node_pool import GpuPoolSettings
from kaito_aks.gpu_nodes import GpuDemand
from kaito_aks.helm import ChartRelease
from kaito_aks.kaito_api import (
    INFERENCE_CONFIG_KEY,
    RUNTIME_ANNOTATION,
    TUNING_CONFIG_KEY,
    AdapterSpec,
    DataSource,
    InferenceSet,
    InferenceSetResource,
    InferenceSetSpec,
    InferenceSetTemplate,
    InferenceSpec,
    ObjectMeta,
    PresetOptions,
    PresetSpec,
    ResourceSpec,
    TuningSpec,
    Workspace,
)
from kaito_aks.kaito_workspace import ConfigMapPlan, GpuNodesPlan, ModelPlan, ReadinessPlan, ServicePlan
from kaito_aks.kubeconfig_cluster import KubeconfigClusterArgs
from stacks import names
from stacks.config import GpuNodePoolSpec, GpuOperatorSpec, StackConfig, WorkspaceConfig

MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "kaito-aks"}
# Resources of a custom (CPU) serving container when the config names none.
DEFAULT_TEMPLATE_RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}
PRESET_PORT = 5000  # KAITO's preset servers listen here


@dataclass(frozen=True)
class KaitoPlan:
    install: bool  # false: KAITO is already on the cluster; only its CRDs are relied on
    chart: catalog.KaitoChart
    operator: ChartRelease


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
    gpu_operator: ChartRelease | None
    kaito: KaitoPlan
    models: tuple[ModelPlan, ...]
    namespaces: tuple[str, ...]  # namespaces this stack creates


def build_plan(cfg: StackConfig) -> StackPlan:
    chart = catalog.kaito_charts()[cfg.kaito.version]
    models = tuple(model_plan(ws, cfg, chart) for ws in cfg.workspaces)
    namespaces = tuple(sorted({m.namespace for m in models} - {"default"})) if cfg.create_namespaces else ()
    access = cfg.cluster.kubeconfig
    pools = tuple(gpu_pool_plan(p) for p in cfg.gpu_node_pools)
    return StackPlan(
        kubeconfig_cluster=KubeconfigClusterArgs(path=access.path, context=access.context) if access else None,
        aks_cluster=aks_cluster_args(cfg),
        gpu_pools=pools,
        gpu_operator=gpu_operator_args(cfg, pools) if cfg.gpu_operator_enabled else None,
        kaito=kaito_plan(cfg, chart),
        models=models,
        namespaces=namespaces,
    )


# ---------------------------------------------------------------- Azure


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


def gpu_pool_plan(pool: GpuNodePoolSpec) -> GpuPoolPlan:
    return GpuPoolPlan(
        name=pool.name,
        sku=catalog.all_gpu_skus()[pool.vm_size],
        settings=GpuPoolSettings(
            vm_size=pool.vm_size,
            gpu_driver=pool.gpu_driver,
            count=None if pool.autoscale else pool.min_nodes,
            autoscale_min=pool.autoscale.min if pool.autoscale else None,
            autoscale_max=pool.autoscale.max if pool.autoscale else None,
            spot=pool.spot,
            labels={**names.GPU_PRESENT_LABEL, **pool.labels},
            taints=list(pool.taints),
            os_disk_size_gb=pool.os_disk_size_gb,
            protect=pool.protect,
        ),
    )


def taint_toleration(taint: str) -> dict[str, str]:
    """`key=value:Effect` -> Equal toleration; `key:Effect` -> Exists toleration."""
    spec, effect = taint.rsplit(":", 1)
    if "=" in spec:
        key, value = spec.split("=", 1)
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": spec, "operator": "Exists", "effect": effect}


def merge_tolerations(defaults: list[catalog.Toleration], extra: list[dict[str, str]]) -> list[dict[str, str]]:
    """A chart's default tolerations plus ours, once each (Helm replaces lists, so the defaults are repeated)."""
    out: list[dict[str, str]] = []
    for t in [d.model_dump(exclude_none=True) for d in defaults] + extra:
        if t not in out:
            out.append(t)
    return out


def gpu_operator_args(cfg: StackConfig, pools: tuple[GpuPoolPlan, ...]) -> ChartRelease:
    version = cfg.gpu_operator.version if cfg.gpu_operator else GpuOperatorSpec().version
    chart = catalog.gpu_operator_charts()[version]
    source = catalog.gpu_operator_chart_source()
    return ChartRelease(
        repository=source.repository,
        chart=source.chart,
        version=version,
        release_name=source.release_name,
        namespace=source.namespace,
        values=gpu_operator_values(cfg, chart, pools),
    )


def gpu_operator_values(
    cfg: StackConfig, chart: catalog.GpuOperatorChart, pools: tuple[GpuPoolPlan, ...]
) -> dict[str, Any]:
    """Operands and NFD must tolerate the GPU pools' taints, or NFD/GFD never label the nodes
    and nothing schedules. When AKS installed the driver and toolkit, the operator uses them."""
    extra = [taint_toleration(t) for pool in pools for t in pool.settings.node_taints]
    values: dict[str, Any] = {
        "daemonsets": {"tolerations": merge_tolerations(chart.daemonset_tolerations, extra)},
        "node-feature-discovery": {"worker": {"tolerations": merge_tolerations(chart.nfd_worker_tolerations, extra)}},
    }
    if pools and all(p.settings.gpu_driver == "aks" for p in pools):
        # AKS's driver and container toolkit stay; the operator adds the rest around them.
        values["driver"] = {"enabled": False}
        values["toolkit"] = {"enabled": False}
        values["operator"] = {"runtimeClass": "nvidia-container-runtime"}
    return deep_merge(values, cfg.gpu_operator.values if cfg.gpu_operator else {})


# ---------------------------------------------------------------- KAITO operator


def kaito_plan(cfg: StackConfig, chart: catalog.KaitoChart) -> KaitoPlan:
    source = catalog.kaito_chart_source()
    return KaitoPlan(
        install=cfg.kaito.install,
        chart=chart,
        operator=ChartRelease(
            repository=source.repository,
            chart=source.chart,
            version=chart.version,
            release_name=source.release_name,
            namespace=source.namespace,
            values=kaito_values(cfg, chart),
        ),
    )


def kaito_values(cfg: StackConfig, chart: catalog.KaitoChart) -> dict[str, Any]:
    """The workspace chart's values: the version's gates with the user's over them, the
    node-provisioning switches, coexistence with an external GPU stack, then user values."""
    byo = cfg.kaito.node_provisioning == "byo"
    values: dict[str, Any] = {
        "featureGates": {**chart.feature_gates, **cfg.kaito.feature_gates, "disableNodeAutoProvisioning": byo},
    }
    if chart.node_provisioner is not None:
        values["nodeProvisioner"] = chart.node_provisioner.byo if byo else chart.node_provisioner.auto
    aks = cfg.cluster.aks or cfg.cluster.existing
    if aks is not None:
        values["clusterName"] = aks.name
    if not cfg.kaito_bundles_gpu_discovery:
        # Another stack (the GPU Operator) runs the device plugin, NFD and GFD; a second copy
        # fights it over node labels and GPU advertisement.
        values["nvidiaDevicePlugin"] = {"enabled": False}
        if byo:  # KAITO bundles GFD (with NFD) only in BYO mode
            values["gpu-feature-discovery"] = {"nfd": {"enabled": False}, "gfd": {"enabled": False}}
    elif byo:
        # KAITO's GFD and NFD worker must run on the GPU nodes to label them, or its webhook
        # denies every preset; their defaults do not tolerate the GPU nodes' taint.
        taints = [t for p in cfg.gpu_node_pools for t in p.taints] or list(names.AKS_GPU_TAINTS)
        extra = [taint_toleration(t) for t in taints]
        values["gpu-feature-discovery"] = {
            "tolerations": merge_tolerations(chart.bundled_gfd_tolerations, extra),
            "nfd": {"worker": {"tolerations": merge_tolerations(chart.bundled_nfd_worker_tolerations, extra)}},
        }
    if chart.spot_toleration and any(p.spot for p in cfg.gpu_node_pools):
        # KAITO's preset pods get the AKS spot toleration only when asked.
        _set_path(values, chart.spot_toleration, True)
    return deep_merge(values, cfg.kaito.values)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's rule: maps merge key by key, anything else (lists too) is replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _set_path(values: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        values = values.setdefault(p, {})
    values[leaf] = value


# ---------------------------------------------------------------- workspaces


def model_plan(ws: WorkspaceConfig, cfg: StackConfig, chart: catalog.KaitoChart) -> ModelPlan:
    preset = catalog.presets(chart.preset_catalog).get(ws.model or "")
    auto = cfg.kaito.node_provisioning == "auto"
    resource = ResourceSpec(
        instance_type=ws.instance_type if auto else None,
        label_selector=ws.label_selector or names.default_label_selector(ws.is_gpu),
    )
    annotations = {RUNTIME_ANNOTATION: ws.runtime} if ws.runtime else None
    config_maps: list[ConfigMapPlan] = []

    if ws.tuning is not None:
        tuning_config = None
        if ws.tuning.config is not None:
            text = _yaml(ws.tuning.config)
            tuning_config = names.tuning_config_map(ws.name, text)
            config_maps.append(ConfigMapPlan(tuning_config, {TUNING_CONFIG_KEY: text}, key=f"{ws.name}-tuning-config"))
        workspace = Workspace(
            metadata=_meta(ws.name, ws.namespace, {}, annotations),
            resource=resource,
            tuning=TuningSpec(
                preset=PresetSpec(name=ws.model or ""),
                method=ws.tuning.method,
                config=tuning_config,
                input=ws.tuning.input,
                output=ws.tuning.output,
            ),
        )
        return ModelPlan(
            name=ws.name,
            namespace=ws.namespace,
            model=ws.model or "",
            replicas=1,
            workspaces=(workspace,),
            inference_set=None,
            config_maps=tuple(config_maps),
            hf_token_secret=None,
            service=None,
            readiness=_readiness(cfg, ws, "JobStarted"),
        )

    # Attach the Hugging Face token to presets that download weights at start-up: required for
    # gated ones, and avoids anonymous rate limits for the rest. Presets baked into images
    # must not carry one (the webhook rejects it).
    downloads = preset.download_at_runtime if preset else bool(ws.model)
    hf_secret = names.hf_token_secret(ws.name) if (downloads and cfg.hf_token and not ws.model_access_secret) else None
    access_secret = ws.model_access_secret or hf_secret

    inference_config = None
    if ws.config is not None:
        text = _yaml(ws.config)
        inference_config = names.inference_config_map(ws.name, text)
        config_maps.append(
            ConfigMapPlan(inference_config, {INFERENCE_CONFIG_KEY: text}, key=f"{ws.name}-inference-config")
        )

    inference = InferenceSpec(
        preset=PresetSpec(
            name=ws.model,
            preset_options=PresetOptions(model_access_secret=access_secret) if access_secret else None,
        )
        if ws.model
        else None,
        template=None if ws.model else _pod_template(ws),
        config=inference_config,
        adapters=[_adapter(a) for a in ws.adapters] or None,
    )

    workspaces: tuple[Workspace, ...] = ()
    inference_set = None
    if chart.replicas == "inferenceSet":
        inference_set = InferenceSet(
            api_version=chart.inference_set_api_version or "",
            metadata=_meta(ws.name, ws.namespace, {}, None),
            spec=InferenceSetSpec(
                replicas=ws.replicas,
                label_selector=resource.label_selector,
                template=InferenceSetTemplate(
                    metadata={"annotations": annotations} if annotations else None,
                    resource=InferenceSetResource(instance_type=resource.instance_type) if auto else None,
                    inference=inference,
                ),
            ),
        )
    else:
        group = {names.GROUP_LABEL: ws.name}
        workspaces = tuple(
            Workspace(
                metadata=_meta(replica, ws.namespace, group, annotations),
                resource=resource,
                inference=inference,
            )
            for replica in names.replica_names(ws.name, ws.replicas, chart)
        )

    service = ServicePlan(
        name=ws.name,
        selector={names.GROUP_LABEL: ws.name, names.LEADER_POD_LABEL: "0"},
        target_port=PRESET_PORT if ws.model else ws.port,
        load_balancer=ws.load_balancer,
    )
    return ModelPlan(
        name=ws.name,
        namespace=ws.namespace,
        model=ws.model or ws.image or "",
        replicas=ws.replicas,
        workspaces=workspaces,
        inference_set=inference_set,
        config_maps=tuple(config_maps),
        hf_token_secret=hf_secret,
        service=service,
        served_model=served_model_id(ws, chart),
        gpu_nodes=gpu_nodes_plan(ws, cfg, preset, resource, chart),
        readiness=_readiness(cfg, ws, "InferenceSetReady" if inference_set else "InferenceReady"),
    )


def gpu_nodes_plan(
    ws: WorkspaceConfig, cfg: StackConfig, preset: catalog.Preset | None, resource: ResourceSpec, chart
) -> GpuNodesPlan | None:
    """KAITO's webhook checks the matched nodes for presets in BYO mode only (a custom image's
    needs are unknown to it; NAP creates its own nodes)."""
    selector = resource.label_selector.match_labels if resource.label_selector else None
    if not (cfg.kaito.wait_for_gpu_nodes and cfg.kaito.node_provisioning == "byo" and preset and selector):
        return None
    demand = GpuDemand(preset.name, preset.gpu_count, preset.model_gib, chart.preset_catalog)
    return GpuNodesPlan(dict(selector), demand, cfg.kaito.gpu_nodes_timeout_minutes)


def served_model_id(ws: WorkspaceConfig, chart: catalog.KaitoChart) -> str | None:
    """What a client puts in `model` (KAITO 0.8: the preset; 0.12: the InferenceSet's name)."""
    if not ws.model:
        return None
    return ws.name if chart.served_model_id == "inferenceSet" else ws.model


def _readiness(cfg: StackConfig, ws: WorkspaceConfig, condition: str) -> ReadinessPlan | None:
    """`pulumi up` ends with the model serving (or the tuning job started), not merely created."""
    if not cfg.kaito.wait_for_ready:
        return None
    return ReadinessPlan(condition, ws.ready_timeout_minutes or cfg.kaito.ready_timeout_minutes)


def _meta(name: str, namespace: str, labels: dict[str, str], annotations: dict[str, str] | None) -> ObjectMeta:
    return ObjectMeta(name=name, namespace=namespace, labels={**MANAGED_BY, **labels}, annotations=annotations)


def _pod_template(ws: WorkspaceConfig) -> dict[str, Any]:
    """A pod for a custom serving image; KAITO adds node affinity from the labelSelector and
    fronts it with its Service on port 80 -> 5000."""
    container = {
        "name": ws.name,
        "image": ws.image,
        "args": ws.args if ws.args is not None else ["run", f"--address=:{ws.port}"],
        "ports": [{"name": "http", "containerPort": ws.port, "protocol": "TCP"}],
        "resources": ws.resources or DEFAULT_TEMPLATE_RESOURCES,
    }
    return {"spec": {"containers": [container]}}


def _adapter(a) -> AdapterSpec:
    return AdapterSpec(
        source=DataSource(name=a.name, image=a.image, image_pull_secrets=a.image_pull_secrets),
        strength=None if a.strength is None else str(a.strength),
    )


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False)
