"""One model KAITO serves or fine-tunes, as a component (`KaitoModel`): its Workspaces (KAITO
0.8: one per replica) or InferenceSet (0.12), the ConfigMaps and Hugging Face Secret they read,
the Service that is its endpoint, and the waits that make `pulumi up` end with it serving.

Every rule about one model lives here (`model_problems`), so the stack config, a user's Python
program and a YAML program calling the component provider all get the same checks.
"""

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Required, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pydantic import Field, ValidationError

from kaito_aks import catalog
from kaito_aks.camel import CamelModel
from kaito_aks.cluster.kubernetes_object import KubernetesObject
from kaito_aks.kaito.workspace import (
    HF_TOKEN_KEY,
    INFERENCE_CONFIG_KEY,
    INFERENCE_SET_IMMUTABLE_PATHS,
    RUNTIME_ANNOTATION,
    TUNING_CONFIG_KEY,
    WORKSPACE_IMMUTABLE_PATHS,
    AdapterSpec,
    DataDestination,
    DataSource,
    InferenceSet,
    InferenceSetResource,
    InferenceSetSpec,
    InferenceSetTemplate,
    InferenceSpec,
    LabelSelector,
    ObjectMeta,
    PresetOptions,
    PresetSpec,
    ResourceSpec,
    TuningSpec,
    Workspace,
)
from kaito_aks.options import child_options
from kaito_aks.scheduling import GPU_PRESENT_LABEL, LINUX_LABEL
from kaito_aks.waits.base import ClusterAccess
from kaito_aks.waits.gpu_nodes import GpuDemand, GpuNodesReady
from kaito_aks.waits.model_ready import ModelReady, Watched, revision_of

TYPE = "kaito-aks:kubernetes:KaitoModel"
# The type this component had before it was named for what it is; existing stacks alias it.
FORMER_TYPE = "kaito-aks:kubernetes:KaitoWorkspace"

SERVICE_PORT = 80
PRESET_PORT = 5000  # KAITO's preset servers listen here
MAX_ADAPTERS = 10  # KAITO's webhook: at most 10 adapters per workspace
# A StatefulSet's pods carry controller-revision-hash=<name>-<hash>: a label value, so the
# name KAITO gives the StatefulSet (the Workspace's) must leave room for the hash.
MAX_WORKSPACE_NAME = 52
MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "kaito-aks"}
# Resources of a custom (CPU) serving container when none are given.
DEFAULT_TEMPLATE_RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}
# The one Workspace label KAITO copies onto its pods (and StatefulSet selector). The
# InferenceSet controller sets it to the set's name; on 0.8 we set it on each replica Workspace
# ourselves, so one Service can select the serving pods of every replica.
GROUP_LABEL = "inferenceset.kaito.sh/created-by"
# Only pod 0 of a (possibly multi-node) instance serves the API.
LEADER_POD_LABEL = "apps.kubernetes.io/pod-index"
INFERENCE_SET_SUFFIX = "-xxxxx"  # generateName: <set>- plus 5 random characters
# Serving readiness is KAITO's to report (Workspace conditions); the Service is usable as soon
# as it exists, and model downloads can outlast Pulumi's await timeout.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
HF_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


# ---------------------------------------------------------------- what one model is


class ModelAdapter(CamelModel):
    """A LoRA adapter served on top of a preset, from a container image."""

    name: str = Field(description="adapter name (a DNS subdomain)")
    image: str = Field(description="image holding the adapter under /data")
    strength: float | None = Field(None, ge=0, le=1, description="weight of the adapter, 0-1 (KAITO default 1.0)")
    image_pull_secrets: list[str] | None = Field(None, description="Secrets to pull the image with")


class ModelTuning(CamelModel):
    """A fine-tuning job instead of serving (presets that support tuning only)."""

    method: Literal["lora", "qlora"] = Field(description="lora or qlora")
    input: DataSource = Field(description="exactly one of urls, image, volumeSource (KAITO DataSource)")
    output: DataDestination = Field(description="exactly one of image (+ imagePushSecret), volumeSource")
    config: dict[str, Any] | None = Field(None, description="tuning parameters, as a ConfigMap's training_config.yaml")


class ModelSpec(CamelModel):
    """One model deployment: a preset (GPU) or a custom image (e.g. llama.cpp on CPU)."""

    name: str = Field(description="DNS-1123 name; also the Service (endpoint) name")
    namespace: str = Field("default", description="created unless `default` (see createNamespaces)")
    model: str | None = Field(None, description="a KAITO preset (`python -m stacks models list`)")
    image: str | None = Field(
        None, description="a custom serving image (llama.cpp/GGUF, e.g. AIKit) instead of a preset"
    )
    compute: Literal["gpu", "cpu"] = Field("gpu", description="picks the default labelSelector; presets need gpu")
    replicas: int = Field(1, ge=1, description="serving instances behind the one endpoint")
    label_selector: LabelSelector | None = Field(
        None,
        description='nodes to run on; default: `nvidia.com/gpu.present: "true"` (gpu) or `kubernetes.io/os: linux` (cpu)',
    )
    runtime: Literal["vllm", "transformers"] | None = Field(None, description="preset runtime; default: KAITO's (vLLM)")
    instance_type: str | None = Field(
        None, description="GPU VM size KAITO provisions; only with kaito.nodeProvisioning: auto"
    )
    adapters: list[ModelAdapter] = Field([], description="LoRA adapters on a preset (at most 10)")
    config: dict[str, Any] | None = Field(
        None, description="runtime parameters, as a ConfigMap's inference_config.yaml"
    )
    tuning: ModelTuning | None = Field(None, description="fine-tune the preset instead of serving it")
    model_access_secret: str | None = Field(
        None, description="an existing Secret with key HF_TOKEN, instead of hfToken"
    )
    ready_timeout_minutes: int | None = Field(
        None, ge=1, description="wait this long for this model to serve (default: kaito.readyTimeoutMinutes)"
    )
    load_balancer: bool = Field(False, description="expose the endpoint through a LoadBalancer Service")
    port: int = Field(5000, ge=1, le=65535, description="container port of a custom image")
    args: list[str] | None = Field(None, description="custom image arguments; default: AIKit's `run --address=:<port>`")
    resources: dict[str, Any] | None = Field(
        None, description="container resources of a custom image; default 2 CPU, 4-8 GiB"
    )

    @property
    def is_gpu(self) -> bool:
        """GPU workloads: compute gpu, or the vLLM runtime."""
        return self.compute == "gpu" or self.runtime == "vllm"

    @property
    def key(self) -> str:
        """Stable Pulumi name: unique per stack, independent of list order."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class ModelEnvironment:
    """What a model's rules and plan depend on besides the model: facts about the cluster and
    the stack, passed in explicitly."""

    # The KAITO release the cluster runs; None when it is unknown (then only the rules that do
    # not depend on a release are checked, and nothing can be planned).
    chart: catalog.KaitoChart | None
    node_provisioning: Literal["byo", "auto"] = "byo"
    has_hf_token: bool = False  # a Hugging Face token is given (for gated presets)


@dataclass(frozen=True)
class ModelWaits:
    """How `pulumi up` waits for the cluster around this model."""

    gpu_nodes: bool = True  # before a preset: until its GPU nodes are labelled (BYO)
    gpu_nodes_timeout_minutes: int = 20
    ready: bool = True  # after: until KAITO reports it serving (or the tuning job started)
    ready_timeout_minutes: int = 30


# ---------------------------------------------------------------- the rules of one model


class Problem(NamedTuple):
    """A rule a model breaks: `path` is relative to the model ("" for the model as a whole,
    e.g. `adapters[0].strength`), in the camelCase of the config and the provider schema."""

    path: str
    message: str


# Namespaces the cluster or the operator releases own.
RESERVED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "kaito-workspace", "gpu-operator")


def model_problems(spec: ModelSpec, env: ModelEnvironment) -> list[Problem]:
    """Every rule KAITO (and this component) would enforce on one model, checked before
    anything is registered."""
    return [*_names(spec, env.chart), *_source(spec, env), *_placement(spec, env), *_options(spec), *_tuning(spec, env)]


def _dns_label(path: str, value: str, what: str) -> Iterator[Problem]:
    if len(value) > 63 or not DNS_LABEL.match(value):
        yield Problem(
            path,
            f"{what} {value!r} is not a DNS-1123 label: use lowercase letters, digits and '-', "
            "start and end with a letter or digit, at most 63 characters",
        )


def _names(spec: ModelSpec, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    bad = [*_dns_label("name", spec.name, "name"), *_dns_label("namespace", spec.namespace, "namespace")]
    if spec.namespace in RESERVED_NAMESPACES:
        bad.append(
            Problem(
                "namespace",
                f"{spec.namespace} belongs to the cluster or an operator release; use a namespace of your own",
            )
        )
    yield from bad
    if bad or chart is None:
        return
    longest = max(workspace_names(spec, chart), key=len)
    if len(longest) > MAX_WORKSPACE_NAME:
        yield Problem(
            "name",
            f"Workspace name {longest!r} would be {len(longest)} characters; KAITO's StatefulSet "
            f"pods need at most {MAX_WORKSPACE_NAME} (their controller-revision-hash label adds a "
            "hash); shorten the name",
        )


def _source(spec: ModelSpec, env: ModelEnvironment) -> Iterator[Problem]:
    chart = env.chart
    if spec.model and spec.image:
        yield Problem("", "set model (a KAITO preset) or image (a custom serving image), not both")
        return
    if not spec.model and not spec.image:
        yield Problem("", "set model (a KAITO preset, see `python -m stacks models list`) or image")
        return
    if spec.image:
        if spec.runtime is not None:
            yield Problem("runtime", "runtime selects how KAITO serves a preset; a custom image serves itself")
        if spec.adapters:
            yield Problem("adapters", "adapters apply to presets only")
        if spec.config is not None:
            yield Problem("config", "runtime parameters apply to presets only; configure your image directly")
        if spec.model_access_secret:
            yield Problem("modelAccessSecret", "applies to presets only")
        return
    if spec.compute == "cpu":
        yield Problem(
            "compute",
            f"preset {spec.model!r} needs GPUs; for CPU serving set image to a llama.cpp/GGUF image "
            "(e.g. ghcr.io/kaito-project/aikit/llama3.2:1b) instead of model, or use compute: gpu",
        )
    if chart is None:
        return
    deprecated = catalog.deprecated_presets()
    presets = catalog.presets(chart.preset_catalog)
    removed = catalog.removed_presets(chart.preset_catalog)
    if spec.model in deprecated:
        yield Problem("model", f"{spec.model} is deprecated and rejected by KAITO: {deprecated[spec.model]}")
    elif spec.model in removed:
        yield Problem(
            "model",
            f'KAITO {chart.version} no longer serves {spec.model} ("Unsupported inference preset name": it has no '
            f"model-catalog entry since {removed[spec.model].removed_in}); keep KAITO 0.8.1 or choose another preset",
        )
    elif spec.model not in presets and not (chart.accepts_hugging_face_ids and HF_MODEL_ID.match(spec.model or "")):
        close = catalog.closest_presets(spec.model or "", chart.preset_catalog)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `python -m stacks models list`"
        yield Problem("model", f"unknown KAITO {chart.version} preset {spec.model!r}{hint}")
    preset = presets.get(spec.model or "")
    if preset is None:
        return
    if preset.gated and not env.has_hf_token and not spec.model_access_secret:
        yield Problem(
            "model",
            f"{spec.model} is gated on Hugging Face: run `pulumi config set --secret hfToken <token>` "
            "or set modelAccessSecret to an existing Secret with key HF_TOKEN",
        )
    if spec.model_access_secret and not preset.download_at_runtime and not chart.access_secret_on_any_preset:
        yield Problem(
            "modelAccessSecret",
            f"{spec.model} ships its weights in an image; KAITO {chart.version} rejects a modelAccessSecret for it",
        )
    runtime = spec.runtime or "vllm"
    if runtime not in preset.runtimes:
        yield Problem(
            "runtime",
            f"KAITO {chart.version} cannot serve {spec.model} with {runtime}; use {' or '.join(preset.runtimes)}",
        )
    if runtime == "vllm":
        if spec.adapters and preset.disallow_lo_ra:
            yield Problem(
                "adapters",
                f"vLLM does not support LoRA adapters for {spec.model}; set runtime: transformers or drop the adapters",
            )
        for j, adapter in enumerate(spec.adapters):
            if adapter.strength is not None:
                yield Problem(
                    f"adapters[{j}].strength",
                    "vLLM does not support adapter strength; remove it or set runtime: transformers",
                )
        yield from _max_model_len(spec, preset)


def _max_model_len(spec: ModelSpec, preset: catalog.Preset) -> Iterator[Problem]:
    """KAITO's inference-config check (vLLM): max-model-len is an integer within the context window."""
    raw = max_model_len_value(spec)
    if raw is None:
        return
    where = "config.vllm.max-model-len"
    value = _integer(raw)
    if value is None:
        yield Problem(where, f"must be a whole number of tokens, not {raw!r} (KAITO parses it as an integer)")
    elif value > preset.token_limit:
        yield Problem(where, f"{value} exceeds {spec.model}'s context window of {preset.token_limit} tokens")


def max_model_len_value(spec: ModelSpec) -> object | None:
    vllm = (spec.config or {}).get("vllm")
    if not isinstance(vllm, dict):
        return None
    raw = vllm.get("max-model-len")
    return None if raw is None or str(raw).strip() == "" else raw


def max_model_len(spec: ModelSpec) -> int | None:
    """The max-model-len KAITO's estimator reads from the model's config (None: its default)."""
    raw = max_model_len_value(spec)
    return None if raw is None else _integer(raw)


def _integer(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _placement(spec: ModelSpec, env: ModelEnvironment) -> Iterator[Problem]:
    if spec.instance_type and env.node_provisioning == "byo":
        yield Problem(
            "instanceType",
            "KAITO rejects instanceType with bring-your-own nodes (the only mode available); select your nodes "
            "with labelSelector",
        )
    selector = spec.label_selector
    if selector is not None and spec.model and not selector.match_labels:
        yield Problem(
            "labelSelector",
            "KAITO finds bring-your-own GPU nodes by matchLabels; add matchLabels "
            '(e.g. {"nvidia.com/gpu.present": "true"})',
        )


def _options(spec: ModelSpec) -> Iterator[Problem]:
    if len(spec.adapters) > MAX_ADAPTERS:
        yield Problem("adapters", f"KAITO serves at most {MAX_ADAPTERS} adapters per workspace")
    for j, adapter in enumerate(spec.adapters):
        if not DNS_SUBDOMAIN.fullmatch(adapter.name):
            yield Problem(f"adapters[{j}].name", "must be a DNS-1123 subdomain (it names a container)")


def _tuning(spec: ModelSpec, env: ModelEnvironment) -> Iterator[Problem]:
    if spec.tuning is None:
        return
    if spec.image:
        yield Problem("tuning", "tuning fine-tunes a preset; set model, not image")
        return
    if spec.replicas != 1:
        yield Problem("replicas", "a tuning job runs once; replicas must be 1")
    if spec.adapters or spec.config is not None:
        yield Problem("tuning", "a workspace either serves (adapters, config) or tunes; split it in two")
    if spec.compute == "cpu":
        return  # reported as a preset on CPU
    if len(spec.tuning.input.sources()) != 1:
        yield Problem("tuning.input", "needs exactly one of urls, volumeSource or image")
    if env.chart is None:
        return
    presets = catalog.presets(env.chart.preset_catalog)
    preset = presets.get(spec.model or "")
    if preset is not None and not preset.supports_tuning:
        tunable = ", ".join(p.name for p in presets.values() if p.supports_tuning)
        yield Problem("tuning", f"KAITO cannot fine-tune {spec.model}; tunable presets: {tunable}")


# ---------------------------------------------------------------- names


def workspace_names(spec: ModelSpec, chart: catalog.KaitoChart) -> list[str]:
    """Names of the Workspaces that serve (or tune) the model (for an InferenceSet: the longest
    name it can generate). Replicas are <name>-0, <name>-1, ...; the plain <name> belongs to the
    Service that balances over all of them, so the endpoint never moves when replicas change."""
    if spec.tuning is not None:
        return [spec.name]
    if chart.replicas == "inferenceSet":
        return [spec.name + INFERENCE_SET_SUFFIX]
    return [f"{spec.name}-{i}" for i in range(spec.replicas)]


def claimed_names(spec: ModelSpec, chart: catalog.KaitoChart) -> set[str]:
    """Every object name in the namespace this model takes: its Service (or InferenceSet), its
    replica Workspaces, and the Services KAITO makes per replica (<ws> and <ws>-headless)."""
    claimed = {spec.name}
    if spec.tuning is None and chart.replicas == "workspacePerReplica":
        names = workspace_names(spec, chart)
        claimed |= set(names) | {f"{w}-headless" for w in names}
    return claimed


def hf_token_secret_name(name: str) -> str:
    return f"{name}-hf-token"


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:8]


def default_label_selector(is_gpu: bool) -> LabelSelector:
    """GPU workloads land on nodes labelled GPU-present; CPU workloads on any Linux node."""
    return LabelSelector(match_labels=dict(GPU_PRESENT_LABEL if is_gpu else LINUX_LABEL))


# ---------------------------------------------------------------- the plan: KAITO objects


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
    load_balancer: bool


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
    """One model as the Kubernetes objects that serve or tune it: pure data, so `validate`,
    `render` and tests can look at it without Pulumi."""

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
    # name; 0.12 serves an InferenceSet's Workspaces under the InferenceSet's name. None for a
    # custom image (ask it: GET /v1/models) and for tuning.
    served_model: str | None = None
    gpu_nodes: GpuNodesPlan | None = None  # wait for these before creating the preset
    readiness: ReadinessPlan | None = None  # wait for this after creating it

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def manifests(self) -> list[dict[str, Any]]:
        """The KAITO objects as the API server receives them."""
        return [ws.manifest() for ws in self.workspaces] + (
            [self.inference_set.manifest()] if self.inference_set else []
        )


def plan_model(spec: ModelSpec, env: ModelEnvironment, waits: ModelWaits = ModelWaits()) -> ModelPlan:
    """The objects that serve (or tune) a model that passed `model_problems`."""
    chart = env.chart
    if chart is None:
        raise ValueError(f"{spec.key}: no KAITO release to plan for")
    preset = catalog.presets(chart.preset_catalog).get(spec.model or "")
    auto = env.node_provisioning == "auto"
    resource = ResourceSpec(
        instance_type=spec.instance_type if auto else None,
        label_selector=spec.label_selector or default_label_selector(spec.is_gpu),
    )
    annotations = {RUNTIME_ANNOTATION: spec.runtime} if spec.runtime else None
    config_maps: list[ConfigMapPlan] = []

    if spec.tuning is not None:
        tuning_config = None
        if spec.tuning.config is not None:
            text = _yaml(spec.tuning.config)
            tuning_config = f"{spec.name}-tuning-config-{content_hash(text)}"
            config_maps.append(
                ConfigMapPlan(tuning_config, {TUNING_CONFIG_KEY: text}, key=f"{spec.name}-tuning-config")
            )
        workspace = Workspace(
            metadata=_meta(spec.name, spec.namespace, {}, annotations),
            resource=resource,
            tuning=TuningSpec(
                preset=PresetSpec(name=spec.model or ""),
                method=spec.tuning.method,
                config=tuning_config,
                input=spec.tuning.input,
                output=spec.tuning.output,
            ),
        )
        return ModelPlan(
            name=spec.name,
            namespace=spec.namespace,
            model=spec.model or "",
            replicas=1,
            workspaces=(workspace,),
            inference_set=None,
            config_maps=tuple(config_maps),
            hf_token_secret=None,
            service=None,
            readiness=_readiness(spec, waits, "JobStarted"),
        )

    # Attach the Hugging Face token to presets that download weights at start-up: required for
    # gated ones, and avoids anonymous rate limits for the rest. Presets baked into images
    # must not carry one (the webhook rejects it).
    downloads = preset.download_at_runtime if preset else bool(spec.model)
    hf_secret = (
        hf_token_secret_name(spec.name) if (downloads and env.has_hf_token and not spec.model_access_secret) else None
    )
    access_secret = spec.model_access_secret or hf_secret

    inference_config = None
    if spec.config is not None:
        # Named after its content: KAITO does not watch ConfigMaps, but a new name changes the
        # Workspace's inference.config, which KAITO rolls out to the serving pods.
        text = _yaml(spec.config)
        inference_config = f"{spec.name}-inference-config-{content_hash(text)}"
        config_maps.append(
            ConfigMapPlan(inference_config, {INFERENCE_CONFIG_KEY: text}, key=f"{spec.name}-inference-config")
        )

    inference = InferenceSpec(
        preset=PresetSpec(
            name=spec.model,
            preset_options=PresetOptions(model_access_secret=access_secret) if access_secret else None,
        )
        if spec.model
        else None,
        template=None if spec.model else _pod_template(spec),
        config=inference_config,
        adapters=[_adapter(a) for a in spec.adapters] or None,
    )

    workspaces: tuple[Workspace, ...] = ()
    inference_set = None
    if chart.replicas == "inferenceSet":
        inference_set = InferenceSet(
            api_version=chart.inference_set_api_version or "",
            metadata=_meta(spec.name, spec.namespace, {}, None),
            spec=InferenceSetSpec(
                replicas=spec.replicas,
                label_selector=resource.label_selector,
                template=InferenceSetTemplate(
                    metadata={"annotations": annotations} if annotations else None,
                    resource=InferenceSetResource(instance_type=resource.instance_type) if auto else None,
                    inference=inference,
                ),
            ),
        )
    else:
        group = {GROUP_LABEL: spec.name}
        workspaces = tuple(
            Workspace(
                metadata=_meta(replica, spec.namespace, group, annotations), resource=resource, inference=inference
            )
            for replica in workspace_names(spec, chart)
        )

    return ModelPlan(
        name=spec.name,
        namespace=spec.namespace,
        model=spec.model or spec.image or "",
        replicas=spec.replicas,
        workspaces=workspaces,
        inference_set=inference_set,
        config_maps=tuple(config_maps),
        hf_token_secret=hf_secret,
        service=ServicePlan(
            name=spec.name,
            selector={GROUP_LABEL: spec.name, LEADER_POD_LABEL: "0"},
            target_port=PRESET_PORT if spec.model else spec.port,
            load_balancer=spec.load_balancer,
        ),
        served_model=served_model_id(spec, chart),
        gpu_nodes=_gpu_nodes(env, waits, preset, resource),
        readiness=_readiness(spec, waits, "InferenceSetReady" if inference_set else "InferenceReady"),
    )


def _gpu_nodes(
    env: ModelEnvironment, waits: ModelWaits, preset: catalog.Preset | None, resource: ResourceSpec
) -> GpuNodesPlan | None:
    """KAITO's webhook checks the matched nodes for presets in BYO mode only (a custom image's
    needs are unknown to it; NAP creates its own nodes)."""
    selector = resource.label_selector.match_labels if resource.label_selector else None
    if not (waits.gpu_nodes and env.node_provisioning == "byo" and preset and selector):
        return None
    demand = GpuDemand(preset.name, preset.gpu_count, preset.model_gib, env.chart.preset_catalog)
    return GpuNodesPlan(dict(selector), demand, waits.gpu_nodes_timeout_minutes)


def served_model_id(spec: ModelSpec, chart: catalog.KaitoChart) -> str | None:
    """What a client puts in `model` (KAITO 0.8: the preset; 0.12: the InferenceSet's name)."""
    if not spec.model or spec.tuning is not None:
        return None
    return spec.name if chart.served_model_id == "inferenceSet" else spec.model


def _readiness(spec: ModelSpec, waits: ModelWaits, condition: str) -> ReadinessPlan | None:
    """`pulumi up` ends with the model serving (or the tuning job started), not merely created."""
    if not waits.ready:
        return None
    return ReadinessPlan(condition, spec.ready_timeout_minutes or waits.ready_timeout_minutes)


def _meta(name: str, namespace: str, labels: dict[str, str], annotations: dict[str, str] | None) -> ObjectMeta:
    return ObjectMeta(name=name, namespace=namespace, labels={**MANAGED_BY, **labels}, annotations=annotations)


def _pod_template(spec: ModelSpec) -> dict[str, Any]:
    """A pod for a custom serving image; KAITO adds node affinity from the labelSelector and
    fronts it with its Service on port 80 -> 5000."""
    container = {
        "name": spec.name,
        "image": spec.image,
        "args": spec.args if spec.args is not None else ["run", f"--address=:{spec.port}"],
        "ports": [{"name": "http", "containerPort": spec.port, "protocol": "TCP"}],
        "resources": spec.resources or DEFAULT_TEMPLATE_RESOURCES,
    }
    return {"spec": {"containers": [container]}}


def _adapter(a: ModelAdapter) -> AdapterSpec:
    return AdapterSpec(
        source=DataSource(name=a.name, image=a.image, image_pull_secrets=a.image_pull_secrets),
        strength=None if a.strength is None else str(a.strength),
    )


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False)


# ---------------------------------------------------------------- the component


class LabelSelectorRequirementArgs(TypedDict, total=False):
    key: Required[str]
    operator: Required[str]
    """In, NotIn, Exists or DoesNotExist."""
    values: list[str]


class LabelSelectorArgs(TypedDict, total=False):
    """Kubernetes' LabelSelector. KAITO finds bring-your-own GPU nodes by match_labels."""

    match_labels: dict[str, str]
    match_expressions: list[LabelSelectorRequirementArgs]


class AdapterArgs(TypedDict, total=False):
    name: Required[str]
    """Adapter name (a DNS subdomain)."""
    image: Required[str]
    """Image holding the adapter under /data."""
    strength: float
    """Weight of the adapter, 0-1 (transformers runtime only; KAITO's default 1.0)."""
    image_pull_secrets: list[str]
    """Secrets to pull the image with."""


class TuningArgs(TypedDict, total=False):
    method: Required[str]
    """lora or qlora."""
    input: Required[dict[str, Any]]
    """KAITO DataSource, in KAITO's field names: exactly one of urls, image, volumeSource."""
    output: Required[dict[str, Any]]
    """KAITO DataDestination: image (with imagePushSecret) or volumeSource."""
    config: dict[str, Any]
    """Tuning parameters (a ConfigMap's training_config.yaml); default: KAITO's template."""


class KaitoModelArgs(TypedDict, total=False):
    """Arguments of `KaitoModel`. Only `kaito_version` and one of `model`/`image` are required."""

    kaito_version: Required[str]
    """The KAITO release the cluster runs (0.8.0, 0.8.1, 0.12.0): decides Workspace-per-replica
    or InferenceSet, the preset catalog and the served model id."""
    name: str
    """Kubernetes name (a DNS-1123 label) of the Service and Workspaces; default: the resource name."""
    namespace: str
    """Namespace of every object; default `default`. It must exist."""
    model: str
    """A KAITO preset (or, on 0.12, a Hugging Face id)."""
    image: str
    """A custom serving image (e.g. llama.cpp/GGUF) instead of a preset."""
    compute: str
    """gpu (default) or cpu: picks the default label selector; presets need gpu."""
    replicas: int
    """Serving instances behind the one endpoint; default 1."""
    label_selector: LabelSelectorArgs
    """Nodes to run on; default nvidia.com/gpu.present=true (gpu) or kubernetes.io/os=linux (cpu)."""
    runtime: str
    """vllm or transformers; default KAITO's (vLLM)."""
    node_provisioning: str
    """byo (default: your nodes, found by label selector) or auto (KAITO creates instance_type nodes)."""
    instance_type: str
    """GPU VM size KAITO provisions; only with node_provisioning auto."""
    adapters: list[AdapterArgs]
    """LoRA adapters on a preset (at most 10)."""
    config: dict[str, Any]
    """Runtime parameters, as a ConfigMap's inference_config.yaml."""
    tuning: TuningArgs
    """Fine-tune the preset instead of serving it."""
    hf_token: pulumi.Input[str]
    """Hugging Face token (kept secret), put in a Secret for presets that download weights."""
    model_access_secret: str
    """An existing Secret with key HF_TOKEN, instead of hf_token."""
    load_balancer: bool
    """Expose the endpoint through a LoadBalancer Service; default false (ClusterIP)."""
    port: int
    """Container port of a custom image; default 5000."""
    args: list[str]
    """Custom image arguments; default AIKit's `run --address=:<port>`."""
    resources: dict[str, Any]
    """Container resources of a custom image; default 2 CPU, 4-8 GiB."""
    kubeconfig: pulumi.Input[str]
    """Kubeconfig contents (kept secret) the waits read the cluster with; default: kubeconfig_path."""
    kubeconfig_path: str
    """Kubeconfig file for the waits; default $KUBECONFIG, then ~/.kube/config."""
    context: str
    """Kubeconfig context for the waits; default the current one."""
    wait_for_gpu_nodes: bool
    """Before creating a preset, wait until its nodes are Ready and labelled by GPU Feature
    Discovery, as KAITO's webhook requires (BYO only); default true."""
    gpu_nodes_timeout_minutes: int
    """How long to wait for those nodes; default 20."""
    wait_for_ready: bool
    """`pulumi up` waits until KAITO reports the model serving (tuning: the job started); default true."""
    ready_timeout_minutes: int
    """How long to wait for that; default 30 (large downloads take 20+ minutes)."""


# Args that are not part of the model's spec: where it runs, its secrets, how to wait.
_DEPLOYMENT_ARGS = tuple(k for k in KaitoModelArgs.__annotations__ if k not in ModelSpec.model_fields)


_WAIT_DEFAULTS = ModelWaits()


@dataclass(frozen=True)
class ModelInputs:
    """A KaitoModel's args, checked: the model, where it runs, how to wait, its secrets."""

    spec: ModelSpec
    env: ModelEnvironment
    waits: ModelWaits
    hf_token: pulumi.Input[str] | None
    access: ClusterAccess


def model_inputs(resource_name: str, args: KaitoModelArgs) -> ModelInputs:
    """Check a KaitoModel's args, every problem at once: ValueError naming each arg."""
    problems: list[Problem] = []
    version = args.get("kaito_version")
    chart = catalog.kaito_charts().get(str(version))
    if chart is None:
        problems.append(
            Problem(
                "kaitoVersion", f"KAITO {version} is not supported; use one of: {', '.join(catalog.kaito_charts())}"
            )
        )
    provisioning = args.get("node_provisioning", "byo")
    if provisioning not in ("byo", "auto"):
        problems.append(Problem("nodeProvisioning", f"must be byo or auto, not {provisioning!r}"))
    fields = {k: v for k, v in args.items() if k not in _DEPLOYMENT_ARGS}
    fields.setdefault("name", resource_name)
    spec = env = None
    try:
        spec = ModelSpec.model_validate(fields)
    except ValidationError as e:
        problems += [Problem(_loc(err["loc"]), err["msg"]) for err in e.errors()]
    if spec is not None:
        env = ModelEnvironment(chart, provisioning, has_hf_token=args.get("hf_token") is not None)
        problems += model_problems(spec, env)
    if problems or spec is None or env is None:
        raise ValueError(
            f"KaitoModel {resource_name}: "
            + "; ".join(f"args.{p.path}: {p.message}" if p.path else f"args: {p.message}" for p in problems)
        )
    return ModelInputs(
        spec=spec,
        env=env,
        waits=ModelWaits(
            gpu_nodes=args.get("wait_for_gpu_nodes", _WAIT_DEFAULTS.gpu_nodes),
            gpu_nodes_timeout_minutes=args.get("gpu_nodes_timeout_minutes", _WAIT_DEFAULTS.gpu_nodes_timeout_minutes),
            ready=args.get("wait_for_ready", _WAIT_DEFAULTS.ready),
            ready_timeout_minutes=args.get("ready_timeout_minutes", _WAIT_DEFAULTS.ready_timeout_minutes),
        ),
        hf_token=args.get("hf_token"),
        access=ClusterAccess(args.get("kubeconfig"), args.get("kubeconfig_path"), args.get("context")),
    )


def _loc(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a camelCase arg path (adapters[0].strength)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), str(part))
            out += f".{text}" if out else text
    return out


class KaitoModel(pulumi.ComponentResource):
    """One model KAITO serves (or fine-tunes): its Workspaces or InferenceSet, ConfigMaps,
    Hugging Face Secret and Service, with waits so `pulumi up` ends with it serving. Depend it
    on the KAITO operator (its admission webhook fails closed) and on the GPU nodes and GPU
    discovery; pass the cluster's Kubernetes provider in opts."""

    endpoint: pulumi.Output[str | None]
    """In-cluster OpenAI-compatible URL (/v1/chat/completions) of the model's Service; none for tuning."""
    model: pulumi.Output[str | None]
    """The model id clients send (0.8: the preset; 0.12: the InferenceSet's name)."""
    source: pulumi.Output[str]
    """The preset, Hugging Face id or image it runs."""
    replicas: pulumi.Output[int]
    """Serving instances."""
    gpu_nodes: pulumi.Output[dict[str, Any] | None]
    """What the GPU-node wait found: nodes, product, GPUs per node, MiB per GPU and node."""

    def __init__(self, name: str, args: KaitoModelArgs, opts: pulumi.ResourceOptions | None = None):
        inputs = model_inputs(name, args)
        # Named KaitoWorkspace before 0.1.0: an alias keeps existing stacks' URNs (and children's).
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=FORMER_TYPE)]))
        super().__init__(TYPE, name, None, opts)
        self.plan = plan = plan_model(inputs.spec, inputs.env, inputs.waits)
        child = child_options(self, opts)
        prerequisites: list[pulumi.Resource] = []

        for cm in plan.config_maps:
            prerequisites.append(
                k8s.core.v1.ConfigMap(
                    f"{name}/{cm.key or cm.name}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=cm.name, namespace=plan.namespace),
                    data=cm.data,
                    opts=child,
                )
            )
        if plan.hf_token_secret:
            prerequisites.append(
                k8s.core.v1.Secret(
                    f"{name}/{plan.hf_token_secret}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=plan.hf_token_secret, namespace=plan.namespace),
                    type="Opaque",
                    string_data={HF_TOKEN_KEY: pulumi.Output.secret(inputs.hf_token)},
                    opts=child,
                )
            )
        self.gpu_nodes_wait: GpuNodesReady | None = None
        if plan.gpu_nodes is not None:
            self.gpu_nodes_wait = GpuNodesReady(
                f"{name}/gpu-nodes",
                inputs.access,
                selector=plan.gpu_nodes.selector,
                demand=plan.gpu_nodes.demand,
                workspaces=[m["metadata"]["name"] for m in plan.manifests()],
                timeout_minutes=plan.gpu_nodes.timeout_minutes,
                opts=child,
            )
            prerequisites.append(self.gpu_nodes_wait)

        # KAITO reads the ConfigMaps and Secret when it reconciles, and admits a preset only once
        # the GPU nodes are labelled, so those come first. Names are fixed, so a replacement must
        # delete the old object before creating the new one.
        serving = child_options(self, opts, depends_on=prerequisites, delete_before_replace=True)
        manifests = plan.manifests()
        self.kaito_objects = [
            KubernetesObject(
                f"{name}/{m['metadata']['name']}",
                m,
                opts=pulumi.ResourceOptions.merge(
                    serving,
                    pulumi.ResourceOptions(
                        replace_on_changes=list(
                            WORKSPACE_IMMUTABLE_PATHS if m["kind"] == "Workspace" else INFERENCE_SET_IMMUTABLE_PATHS
                        )
                    ),
                ),
            )
            for m in manifests
        ]
        self.ready: ModelReady | None = None
        if plan.readiness is not None:
            self.ready = ModelReady(
                f"{name}/ready",
                inputs.access,
                watched=[
                    Watched(m["kind"], m["apiVersion"], plan.namespace, m["metadata"]["name"], plan.readiness.condition)
                    for m in manifests
                ],
                revision=revision_of([*manifests, *(cm.data for cm in plan.config_maps)]),
                timeout_minutes=plan.readiness.timeout_minutes,
                opts=child_options(self, opts, depends_on=self.kaito_objects),
            )

        endpoint: pulumi.Output[str | None] = pulumi.Output.from_input(None)
        if plan.service is not None:
            # Plain dicts rather than the typed *Args classes: the same inputs, registered with
            # noticeably less SDK work, which counts for stacks with hundreds of models.
            service = k8s.core.v1.Service(
                f"{name}/{plan.service.name}",
                metadata={"name": plan.service.name, "namespace": plan.namespace, "annotations": SKIP_AWAIT},
                spec={
                    "type": "LoadBalancer" if plan.service.load_balancer else "ClusterIP",
                    "selector": plan.service.selector,
                    "ports": [
                        {
                            "name": "http",
                            "port": SERVICE_PORT,
                            "targetPort": plan.service.target_port,
                            "protocol": "TCP",
                        }
                    ],
                },
                opts=child,
            )
            endpoint = service.metadata.apply(
                lambda m: f"http://{m['name']}.{m['namespace']}.svc.cluster.local/v1/chat/completions"
            )

        self.endpoint = endpoint
        self.model = pulumi.Output.from_input(plan.served_model)
        self.source = pulumi.Output.from_input(plan.model)
        self.replicas = pulumi.Output.from_input(plan.replicas)
        self.gpu_nodes = self.gpu_nodes_wait.found() if self.gpu_nodes_wait else pulumi.Output.from_input(None)
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "model": self.model,
                "source": self.source,
                "replicas": self.replicas,
                "gpuNodes": self.gpu_nodes,
            }
        )
