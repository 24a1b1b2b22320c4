"""One model as the Kubernetes objects that serve or tune it: pure data, so a program, a render or
a test can look at it without Pulumi."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, cast

import yaml

from kaito_aks import catalog, policy
from kaito_aks.endpoints import AllowFromArgs, LoadBalancerArgs, load_balancer_of
from kaito_aks.kaito.inferenceset import InferenceSet, InferenceSetResource, InferenceSetSpec, InferenceSetTemplate
from kaito_aks.kaito.meta import DataDestination, DataSource, LabelSelector, LabelSelectorRequirement, ObjectMeta
from kaito_aks.kaito.workspace import (
    BYPASS_ANNOTATION,
    INFERENCE_CONFIG_KEY,
    NODE_CLASS_ANNOTATION,
    RUNTIME_ANNOTATION,
    TUNING_CONFIG_KEY,
    AdapterSpec,
    InferenceSpec,
    PresetOptions,
    PresetSpec,
    ResourceSpec,
    TuningSpec,
    Workspace,
)
from kaito_aks.model.names import hf_token_secret_name, workspace_names
from kaito_aks.model.placement import match_labels, node_lookup_labels
from kaito_aks.model.serving import routed_plan, scaled_plan
from kaito_aks.model.spec import AdapterArgs, KaitoModelArgs, LabelSelectorArgs, TuningArgs, ready_timeout
from kaito_aks.model_streaming import model_annotations
from kaito_aks.serving.metrics import service_labels, service_monitor
from kaito_aks.serving.route import RoutePlan
from kaito_aks.serving.scaler import PATCH_FORCE, AutoscalePlan
from kaito_aks.serving.spec import GatewayRefArgs
from kaito_aks.vocabulary import CREATED_BY_LABEL, GATEWAY_NAME_LABEL, MANAGED_BY, WORKSPACE_LABEL, GpuDemand

PRESET_PORT = 5000  # KAITO's preset servers listen here
SERVICE_PORT_NAME = "http"  # the model's Service port (80 -> the serving port)
# Resources of a custom (CPU) serving container when none are given.
DEFAULT_TEMPLATE_RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}
# The one Workspace label KAITO copies onto its pods (and StatefulSet selector), so one Service
# can select the serving pods of every replica.
GROUP_LABEL = CREATED_BY_LABEL
# Only pod 0 of a (possibly multi-node) instance serves the API.
LEADER_POD_LABEL = "apps.kubernetes.io/pod-index"


@dataclass(frozen=True)
class ConfigMapPlan:
    name: str  # content-addressed: a new name is what rolls the serving pods
    data: dict[str, str]
    key: str = ""  # stable Pulumi name, so an edit previews as a replacement of the same ConfigMap


@dataclass(frozen=True)
class ServicePlan:
    """One Service over every replica's serving pod: the model's stable endpoint."""

    name: str
    selector: dict[str, str]
    target_port: int
    load_balancer: LoadBalancerArgs | None
    pods: dict[str, Any]  # a label selector of every pod of the model (each replica's, workers too)
    allow_from: tuple[AllowFromArgs, ...] = ()
    labels: dict[str, str] | None = None  # (for its ServiceMonitor to select it)


@dataclass(frozen=True)
class GpuNodesPlan:
    """The GPU nodes KAITO's webhook must find before it admits the preset (BYO mode)."""

    selector: dict[str, str]  # the Workspaces' matchLabels
    demand: GpuDemand
    timeout_minutes: int


@dataclass(frozen=True)
class ReadinessPlan:
    """What says the model serves (a KAITO status condition) and how long to wait for it."""

    condition: str  # InferenceReady, InferenceSetReady, JobStarted
    timeout_minutes: int


@dataclass(frozen=True)
class ModelPlan:
    """One model as the Kubernetes objects that serve or tune it."""

    name: str
    namespace: str
    model: str  # preset name, Hugging Face ID, or custom image
    replicas: int
    workspaces: tuple[Workspace, ...]
    inference_set: InferenceSet | None
    config_maps: tuple[ConfigMapPlan, ...]
    hf_token_secret: str | None  # Secret to create from the Hugging Face token
    service: ServicePlan | None
    # The model id clients send (OpenAI `model`): KAITO 0.8 serves a preset under its preset
    # name; 0.11 and 0.12 under the model's name (the created-by label, the InferenceSet's name).
    # None for a custom image (ask it: GET /v1/models) and for tuning.
    served_model: str | None = None
    gpu_nodes: GpuNodesPlan | None = None  # what KAITO's webhook will look for before admitting it
    readiness: ReadinessPlan | None = None  # what says it serves
    instance_type: str | None = None  # the VM size KAITO provisions (auto mode)
    route: RoutePlan | None = None  # its route through the gateway
    autoscale: AutoscalePlan | None = None  # what the scaler is told (its InferenceSet's replicas are the scaler's)
    service_monitor: dict[str, Any] | None = None  # Prometheus scraping its Service

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def admitted(self) -> list[str]:
        """What KAITO's webhook admits against the GPU nodes, for the GPU-node wait to re-check
        them when it changes: a Workspace by name (admitted once, when created), an InferenceSet
        by name and content, since 0.12's webhook re-runs its Workspace's create checks, nodes
        included, on every update (api/v1beta1/inferenceset_validation.go:54-56)."""
        names = [ws.metadata.name for ws in self.workspaces]
        if self.inference_set is not None:
            manifest = json.dumps(self.inference_set.manifest(), sort_keys=True)
            names.append(f"{self.inference_set.metadata.name}@{content_hash(manifest)}")
        return names

    def manifests(self) -> list[dict[str, Any]]:
        """The KAITO objects as the API server receives them."""
        return [ws.manifest() for ws in self.workspaces] + (
            [self.inference_set.manifest()] if self.inference_set else []
        )


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:8]


def label_selector(args: KaitoModelArgs) -> LabelSelector:
    """The Workspaces' node selector: the one given, else `match_labels`' default for the mode."""
    given: LabelSelectorArgs | None = args.label_selector
    return LabelSelector(match_labels=match_labels(args)) if given is None else selector_of(given)


def selector_of(given: LabelSelectorArgs) -> LabelSelector:
    """A selector as given, as Kubernetes writes it."""
    return LabelSelector(
        match_labels=dict(given.match_labels) if given.match_labels else None,
        match_expressions=[
            LabelSelectorRequirement(key=e.key, operator=e.operator, values=e.values) for e in given.match_expressions
        ]
        if given.match_expressions
        else None,
    )


def plan_model(args: KaitoModelArgs, gateway: GatewayRefArgs | None = None) -> ModelPlan:
    """The objects that serve (or tune) a model whose args passed `model_problems`; a routed
    model's NetworkPolicy lets in `gateway`'s pods (default: its own `gateway`)."""
    chart = catalog.kaito_charts()[args.kaito_version]
    auto = args.node_provisioning == "auto"
    resource = ResourceSpec(instance_type=args.instance_type if auto else None, label_selector=label_selector(args))
    annotations = {RUNTIME_ANNOTATION: args.runtime} if args.runtime else {}
    if args.node_class is not None and auto:  # (the class's name in the chart: catalog/kaito_charts.yaml)
        annotations[NODE_CLASS_ANNOTATION] = chart.node_classes[args.node_class]
    if args.weights_streaming is not None and args.tuning is None:
        annotations.update(
            model_annotations(args.weights_streaming.storage_class, args.weights_streaming.service_account)
        )
    annotations = annotations or None
    if args.tuning is not None:
        return _tuning_plan(args, args.tuning, resource, annotations)
    if policy.annotation_bypassed(args.bypass_checks):  # KAITO's own bypass of its GPU count and memory checks
        annotations = {**(annotations or {}), BYPASS_ANNOTATION: "true"}
    name = args.name or ""
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    hf_secret = _hf_token_secret(args, preset)
    config_maps, inference = _inference(args, args.model_access_secret or hf_secret)
    autoscale = scaled_plan(args)
    workspaces, inference_set = _replicas(args, chart, resource, annotations, inference, autoscale)
    monitored = args.metrics is not None
    return ModelPlan(
        name=name,
        namespace=args.namespace,
        model=args.model or args.image or "",
        replicas=args.replicas,
        workspaces=workspaces,
        inference_set=inference_set,
        config_maps=config_maps,
        hf_token_secret=hf_secret,
        service=ServicePlan(
            name=name,
            **_selectors(args, chart),
            target_port=PRESET_PORT if args.model else args.port,
            load_balancer=load_balancer_of(args.load_balancer),
            allow_from=(*args.allow_from, *_service_callers(args, gateway)),
            labels=service_labels(name) if monitored else None,
        ),
        served_model=served_model_id(args, chart),
        gpu_nodes=_gpu_nodes(args, chart, preset, resource),
        readiness=ReadinessPlan("InferenceSetReady" if inference_set else "InferenceReady", ready_timeout(args)),
        instance_type=resource.instance_type,
        route=routed_plan(args, chart),
        autoscale=autoscale,
        service_monitor=service_monitor(name, args.namespace, SERVICE_PORT_NAME, args.metrics)
        if args.metrics is not None
        else None,
    )


def _tuning_plan(
    args: KaitoModelArgs, tuning: TuningArgs, resource: ResourceSpec, annotations: dict[str, str] | None
) -> ModelPlan:
    """A tuning job: one Workspace, its training_config.yaml in a ConfigMap named after its content."""
    name = args.name or ""
    config_maps: list[ConfigMapPlan] = []
    tuning_config = None
    if tuning.config is not None:
        text = _yaml(tuning.config)
        tuning_config = f"{name}-tuning-config-{content_hash(text)}"
        config_maps.append(ConfigMapPlan(tuning_config, {TUNING_CONFIG_KEY: text}, key=f"{name}-tuning-config"))
    source, out = tuning.input, tuning.output
    workspace = Workspace(
        metadata=_meta(name, args.namespace, {}, annotations),
        resource=resource,
        tuning=TuningSpec(
            preset=PresetSpec(name=args.model or ""),
            method=tuning.method,
            config=tuning_config,
            input=DataSource(
                urls=source.urls,
                image=source.image,
                volume_source=source.volume_source,
                image_pull_secrets=source.image_pull_secrets,
            ),
            output=DataDestination(
                image=out.image, image_push_secret=out.image_push_secret, volume_source=out.volume_source
            ),
        ),
    )
    return ModelPlan(
        name=name,
        namespace=args.namespace,
        model=args.model or "",
        replicas=1,
        workspaces=(workspace,),
        inference_set=None,
        config_maps=tuple(config_maps),
        hf_token_secret=None,
        service=None,
        readiness=ReadinessPlan("JobStarted", ready_timeout(args)),
        instance_type=resource.instance_type,
    )


def _hf_token_secret(args: KaitoModelArgs, preset: catalog.Preset | None) -> str | None:
    """The Secret the Hugging Face token goes in: for presets that download weights at start-up
    (required for gated ones, and avoids anonymous rate limits for the rest). Presets baked into
    images must not carry one (the webhook rejects it)."""
    downloads = preset.download_at_runtime if preset else bool(args.model)
    given = downloads and args.hf_token is not None and not args.model_access_secret
    return hf_token_secret_name(args.name or "") if given else None


def _inference(args: KaitoModelArgs, access_secret: str | None) -> tuple[tuple[ConfigMapPlan, ...], InferenceSpec]:
    """What serves: the preset (with its access secret) or the custom image's pod, adapters, and
    the runtime config in a ConfigMap named after its content (KAITO does not watch ConfigMaps,
    but a new name changes the Workspace's inference.config, which KAITO rolls out to the pods)."""
    name = args.name or ""
    config_maps: tuple[ConfigMapPlan, ...] = ()
    inference_config = None
    if args.config is not None:
        text = _yaml(args.config)
        inference_config = f"{name}-inference-config-{content_hash(text)}"
        config_maps = (ConfigMapPlan(inference_config, {INFERENCE_CONFIG_KEY: text}, key=f"{name}-inference-config"),)
    preset = (
        PresetSpec(
            name=args.model,
            preset_options=PresetOptions(model_access_secret=access_secret) if access_secret else None,
        )
        if args.model
        else None
    )
    return config_maps, InferenceSpec(
        preset=preset,
        template=None if args.model else _pod_template(args),
        config=inference_config,
        adapters=[_adapter(a) for a in args.adapters] or None,
    )


def _replicas(
    args: KaitoModelArgs,
    chart: catalog.KaitoChart,
    resource: ResourceSpec,
    annotations: dict[str, str] | None,
    inference: InferenceSpec,
    autoscale: AutoscalePlan | None = None,
) -> tuple[tuple[Workspace, ...], InferenceSet | None]:
    """The serving replicas as the release runs them: one InferenceSet (0.12), or a Workspace per
    replica labelled as one group (one Service selects every replica's pods). An autoscaled
    InferenceSet starts at its minimum and carries the scaler's annotations."""
    name = args.name or ""
    if chart.replicas == "inferenceSet":
        auto = args.node_provisioning == "auto"
        scaler = {**autoscale.annotations, **PATCH_FORCE} if autoscale is not None else None
        inference_set = InferenceSet(
            api_version=chart.inference_set_api_version or "",
            metadata=_meta(name, args.namespace, {}, scaler),
            spec=InferenceSetSpec(
                replicas=autoscale.min_replicas if autoscale is not None else args.replicas,
                label_selector=resource.label_selector,
                template=InferenceSetTemplate(
                    metadata={"annotations": annotations} if annotations else None,
                    resource=InferenceSetResource(instance_type=resource.instance_type) if auto else None,
                    inference=inference,
                ),
            ),
        )
        return (), inference_set
    group = {GROUP_LABEL: name}
    workspaces = tuple(
        Workspace(metadata=_meta(replica, args.namespace, group, annotations), resource=resource, inference=inference)
        for replica in workspace_names(args, chart)
    )
    return workspaces, None


def _gpu_nodes(
    args: KaitoModelArgs, chart: catalog.KaitoChart, preset: catalog.Preset | None, resource: ResourceSpec
) -> GpuNodesPlan | None:
    """What the GPU-node wait checks: KAITO's webhook checks the matched nodes for presets with
    bring-your-own nodes only (a custom image's needs are unknown to it; auto-provisioning makes
    its own nodes). A Hugging Face id outside KAITO's catalog has no size offline: its nodes must
    still exist and be labelled."""
    if resource.label_selector.match_labels is None:
        return None
    selector = node_lookup_labels(args, chart)  # as KAITO lists the nodes (without the labels it drops)
    if not args.model or args.node_provisioning == "auto" or not selector:
        return None
    bypass = policy.annotation_bypassed(args.bypass_checks)  # KAITO then skips the GPU count and memory checks
    demand = (
        GpuDemand(preset.name, preset.gpu_count, preset.model_gib, chart.preset_catalog, bypass)
        if preset is not None
        else GpuDemand(args.model, 1, 0.0, chart.preset_catalog, bypass)
    )
    return GpuNodesPlan(dict(selector), demand, args.gpu_nodes_timeout_minutes)


def served_model_id(args: KaitoModelArgs, chart: catalog.KaitoChart) -> str | None:
    """What a client puts in `model`: KAITO 0.8 serves the preset name; 0.11 a Workspace
    labelled inferenceset.kaito.sh/created-by (every replica here) under that label's value, the
    model's name; 0.12 an InferenceSet's Workspaces under the InferenceSet's name, the same."""
    if not args.model or args.tuning is not None:
        return None
    return args.model if chart.served_model_id == "preset" else args.name


def _meta(name: str, namespace: str, labels: dict[str, str], annotations: dict[str, str] | None) -> ObjectMeta:
    return ObjectMeta(name=name, namespace=namespace, labels={**MANAGED_BY, **labels}, annotations=annotations)


def _pod_template(args: KaitoModelArgs) -> dict[str, Any]:
    """A pod for a custom serving image; KAITO adds node affinity from the labelSelector (its own
    replaces any), GPU tolerations, and fronts it with its Service on port 80 -> 5000. Its
    nodeSelector is kept: `node_selector` keeps a CPU model off GPU nodes."""
    container = {
        "name": args.name,
        "image": args.image,
        "args": args.args if args.args is not None else ["run", f"--address=:{args.port}"],
        "ports": [{"name": "http", "containerPort": args.port, "protocol": "TCP"}],
        "resources": args.resources or DEFAULT_TEMPLATE_RESOURCES,
    }
    spec: dict[str, Any] = {"containers": [container]}
    if args.node_selector:
        spec["nodeSelector"] = dict(args.node_selector)
    return {"spec": spec}


def _adapter(a: AdapterArgs) -> AdapterSpec:
    return AdapterSpec(
        source=DataSource(name=a.name, image=a.image, image_pull_secrets=a.image_pull_secrets),
        strength=None if a.strength is None else str(a.strength),
    )


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False)


def _selectors(args: KaitoModelArgs, chart: catalog.KaitoChart) -> dict[str, Any]:
    """The Service's selector (the serving pod of every replica: pod 0 of each instance) and the
    NetworkPolicy's (every pod). KAITO 0.6's pods carry only their Workspace's name: its Service
    then reaches the first replica (a Deployment of one pod: 0.6 serves on one node unless
    resource.count, which this program leaves unset, asks for more), its policy every replica."""
    name = args.name or ""
    if chart.pod_group_label:
        return {"selector": {GROUP_LABEL: name, LEADER_POD_LABEL: "0"}, "pods": {"matchLabels": {GROUP_LABEL: name}}}
    replicas = workspace_names(args, chart)
    return {
        "selector": {WORKSPACE_LABEL: replicas[0]},
        "pods": {"matchExpressions": [{"key": WORKSPACE_LABEL, "operator": "In", "values": replicas}]},
    }


# Where AKS's managed Prometheus runs the collectors that scrape ServiceMonitors (ama-metrics).
MANAGED_PROMETHEUS_NAMESPACE = "kube-system"


def _service_callers(args: KaitoModelArgs, gateway: GatewayRefArgs | None) -> list[AllowFromArgs]:
    """Who else calls the model's pods when it is part of the service, each let in by its
    NetworkPolicy: a routed model's gateway pods (Istio's, labelled with the Gateway's name,
    through the InferencePool), an autoscaled model's keda-kaito-scaler (it reads the metric from
    each replica's Service) and a scraped model's Prometheus."""
    callers: list[AllowFromArgs] = []
    if args.gateway is not None:
        # (the names may be an InferenceGateway's outputs: the policy takes them as its inputs)
        ref = gateway or args.gateway
        name, namespace = cast(str, ref.name), cast(str, ref.namespace)
        callers.append(AllowFromArgs(namespace=namespace, pod_labels={GATEWAY_NAME_LABEL: name}))
    if args.autoscale is not None:
        scaler = {"app.kubernetes.io/name": catalog.serving_charts().keda_kaito_scaler.chart}
        callers.append(AllowFromArgs(namespace=args.autoscale.scaler_namespace, pod_labels=scaler))
    if args.metrics is not None:
        managed = args.metrics.flavour == "azureManagedPrometheus"
        callers.append(
            AllowFromArgs(namespace=MANAGED_PROMETHEUS_NAMESPACE if managed else args.metrics.prometheus_namespace)
        )
    return callers
