"""What one model is: `KaitoModelArgs`, the only declaration of a model's settings. The
component, the provider schema for other languages and the stack config all read these fields
(and their docs, defaults and bounds) from here."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Annotated, Any, ClassVar, Literal

from kaito_aks import catalog
from kaito_aks.cluster.kubeconfig_text import KubeconfigContents
from kaito_aks.endpoints import AllowFromArgs, LoadBalancerArgs
from kaito_aks.image_reference import image_problem
from kaito_aks.nodes import MAX_POOL_NODES, Labels, NodeGroup
from kaito_aks.schema import DNS_LABEL, SWITCH, Check, Input, Matches, MaxItems, Range, Secret, args_class
from kaito_aks.serving.spec import GatewayRefArgs, ModelAutoscaleArgs, ModelMetricsArgs
from kaito_aks.vocabulary import NodeClass, NodeProvisioner, NodeProvisioning

MAX_ADAPTERS = 10  # KAITO's webhook: at most 10 adapters per workspace
DNS_SUBDOMAIN = Matches(
    r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
    "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
)
# KAITO names an adapter's init container puller-<name> (pkg/workspace/manifests/manifests.go):
# a container name is a DNS-1123 label, so 63 - len("puller-") characters remain.
ADAPTER_NAME = Matches(
    r"[a-z0-9]([-a-z0-9]{0,54}[a-z0-9])?",
    "an adapter name: a DNS-1123 label of at most 56 characters (KAITO names its init container puller-<name>)",
)
# With image pull secrets KAITO also names a volume docker-config-<name>-inference-adapter.
MAX_ADAPTER_NAME_WITH_PULL_SECRETS = 63 - len("docker-config-") - len("-inference-adapter")
# An image reference as KAITO's webhook (adapters, tuning) and the container runtime parse it.
IMAGE = Check(image_problem)
MINUTES = Range(1, 1440, "at most a day")

Compute = Literal["gpu", "cpu"]
"""gpu: a preset or GPU image on GPU nodes; cpu: a custom image on CPU nodes (`node_selector`)."""
Runtime = Literal["vllm", "transformers"]
"""How KAITO serves a preset."""
TuningMethod = Literal["lora", "qlora"]
"""How KAITO fine-tunes a preset."""
SelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


# Keys earlier KAITO (or kaito-aks) shapes had, with the fix to give.
RETIRED = {
    "preferred_nodes": "removed in KAITO 0.8; use `label_selector`",
    "count": "use `replicas` (resource.count is deprecated in KAITO and does not scale vLLM serving)",
    "preset": "use `model`",
    "instance": "use `instance_type`",
}


@args_class
class LabelSelectorRequirementArgs:
    """One matchExpressions entry of a Kubernetes label selector."""

    key: str
    """The label key."""
    operator: SelectorOperator
    """In, NotIn, Exists or DoesNotExist."""
    values: list[str] | None = None
    """The values (In, NotIn); none with Exists and DoesNotExist."""


@args_class
class LabelSelectorArgs:
    """Kubernetes' LabelSelector; KAITO finds bring-your-own GPU nodes by `match_labels`."""

    match_labels: Labels | None = None
    """Labels a node must carry; default: none."""
    match_expressions: list[LabelSelectorRequirementArgs] | None = None
    """Further conditions: In with one value each, as KAITO turns the selector into labels (its
    node lookup ignores them); default: none."""


@args_class
class AdapterArgs:
    """A LoRA adapter served on top of a preset, from a container image."""

    name: Annotated[str, ADAPTER_NAME]
    """Adapter name (it names a container): at most 56 characters, 31 with `image_pull_secrets`."""
    image: Annotated[str, IMAGE]
    """Image holding the adapter under /data."""
    strength: Annotated[float, Range(0, 1)] | None = None
    """Weight of the adapter, 0-1 (transformers runtime only; KAITO's default 1.0)."""
    image_pull_secrets: list[str] | None = None
    """Secrets to pull the image with; default: none (a public image)."""


@args_class
class TuningInputArgs:
    """Tuning data: exactly one of `urls`, `image` or `volume_source` (KAITO's DataSource)."""

    urls: list[str] | None = None
    """URLs of the data files (or give `image` or `volume_source`)."""
    image: Annotated[str, IMAGE] | None = None
    """An image holding the data (or give `urls` or `volume_source`)."""
    volume_source: dict[str, Any] | None = None
    """A Kubernetes volume source holding the data (or give `urls` or `image`)."""
    image_pull_secrets: list[str] | None = None
    """Secrets to pull the image with; default: none (a public image)."""


@args_class
class TuningOutputArgs:
    """Where the tuned adapter goes: an `image` (with `image_push_secret`) or a `volume_source`."""

    image: Annotated[str, IMAGE] | None = None
    """The image to push the adapter to (or give `volume_source`)."""
    image_push_secret: str | None = None
    """A Secret to push the image with (required with `image`)."""
    volume_source: dict[str, Any] | None = None
    """A Kubernetes volume source to write the adapter to (or give `image`)."""


@args_class
class TuningArgs:
    """A fine-tuning job instead of serving (presets that support tuning only)."""

    method: TuningMethod
    """lora or qlora."""
    input: TuningInputArgs
    """The tuning data."""
    output: TuningOutputArgs
    """Where the result goes."""
    config: dict[str, Any] | None = None
    """Tuning parameters, as a ConfigMap's training_config.yaml; default: KAITO's template."""


@args_class
class WeightsStreamingArgs:
    """Where KAITO mirrors a model's weights and who streams them (kaito_aks.model_streaming)."""

    storage_class: Annotated[str, DNS_LABEL] = "blob-fuse"
    """A StorageClass of the Blob CSI driver (blob.csi.azure.com)."""
    service_account: Annotated[str, DNS_LABEL] = "kaito-model-streamer"
    """A ServiceAccount of the model's namespace annotated for workload identity."""


@args_class
class KaitoModelArgs:
    """One model KAITO serves or fine-tunes: a preset (GPU) or a custom serving image (e.g.
    llama.cpp on CPU). Only `kaito_version` and one of `model` / `image` are required."""

    RETIRED_KEYS: ClassVar[dict[str, str]] = RETIRED

    kaito_version: str
    """The KAITO release the cluster runs (0.6.0 the AKS add-on's, 0.8.0, 0.8.1, 0.11.0, 0.12.0):
    decides Workspace-per-replica or InferenceSet, the preset catalog, KAITO's rules and
    arithmetic, the served model id."""
    name: Annotated[str, DNS_LABEL] | None = None
    """Kubernetes name of the Service (the endpoint) and Workspaces; default: the resource name."""
    namespace: Annotated[str, DNS_LABEL] = "default"
    """Namespace of every object; it must exist."""
    model: str | None = None
    """A KAITO preset of `kaito_version` (of KAITO's preset list of that release), or from 0.11 a
    Hugging Face id: one of KAITO's model catalog is sized offline, any other by KAITO at
    admission. Give it or `image`."""
    image: Annotated[str, IMAGE] | None = None
    """A custom serving image (llama.cpp/GGUF, e.g. AIKit) instead of a preset; give it or `model`."""
    compute: Compute = "gpu"
    """gpu or cpu: picks the default `label_selector`; presets need gpu."""
    replicas: Annotated[
        int, Range(1, MAX_POOL_NODES, "a replica needs a node of its own; an AKS pool has at most 1000")
    ] = 1
    """Serving instances behind the one endpoint. Each takes whole nodes of its own (KAITO's pod
    requests every GPU of its node): N replicas need N times one's nodes, at once."""
    label_selector: LabelSelectorArgs | None = None
    """Nodes to run on; default: nvidia.com/gpu.present=true (gpu) or kubernetes.io/os=linux (cpu)."""
    node_selector: Labels | None = None
    """Labels a custom image's nodes must carry as well (its pod's nodeSelector, which KAITO keeps:
    it replaces the pod's affinity with `label_selector`'s and lets it onto GPU nodes); default:
    none. On AKS with bring-your-own nodes, the label kubernetes.azure.com/mode: system keeps a
    CPU model on the system pool, off the GPU pools."""
    runtime: Runtime | None = None
    """vllm or transformers; default: KAITO's (vLLM)."""
    node_provisioning: NodeProvisioning = "byo"
    """byo: your nodes, found by `label_selector`; auto: KAITO creates nodes of `instance_type`."""
    instance_type: str | None = None
    """The Azure VM size KAITO creates nodes of (`node_provisioning` auto, where it is required),
    e.g. Standard_NC24ads_A100_v4; one KAITO's SKU table knows, for a preset. Leave it out with
    bring-your-own nodes."""
    node_provisioner: NodeProvisioner = "gpu-provisioner"
    """With `node_provisioning` auto: what makes KAITO's nodes, as the cluster's KAITO is set up:
    gpu-provisioner or karpenter."""
    node_class: NodeClass | None = None
    """With Karpenter: the OS image of the model's nodes, KAITO's node class ubuntu
    (image-family-ubuntu, Ubuntu 22.04) or azure-linux (image-family-azure-linux); default:
    KAITO's default class (ubuntu)."""
    adapters: Annotated[list[AdapterArgs], MaxItems(MAX_ADAPTERS, "KAITO serves at most 10 per workspace")] = field(
        default_factory=list[AdapterArgs]
    )
    """LoRA adapters on a preset; default: none."""
    config: dict[str, Any] | None = None
    """Runtime parameters, as a ConfigMap's inference_config.yaml (e.g. {"vllm": {"max-model-len":
    8192}}); default: KAITO's own."""
    tuning: TuningArgs | None = None
    """Fine-tune the preset instead of serving it; default: serve it."""
    weights_streaming: WeightsStreamingArgs | None = None
    """KAITO 0.11+ with its ModelMirror and ModelStreaming gates on (`ModelStreaming`): the
    StorageClass and ServiceAccount this model's mirror and pod use, written on the model
    (kaito.sh/model-mirror-storage-class, kaito.sh/streaming-service-account) so they do not hang
    on the chart's defaults. Default: none (the chart's defaults, if any)."""
    hf_token: Secret[Input[str]] | None = None
    """Hugging Face token (kept secret), put in a Secret for presets that download their weights;
    default: none (a gated preset then needs `model_access_secret`)."""
    model_access_secret: Annotated[str, DNS_SUBDOMAIN] | None = None
    """An existing Secret with key HF_TOKEN, instead of `hf_token`; default: none."""
    load_balancer: Annotated[bool | LoadBalancerArgs, SWITCH] = False
    """Also expose the endpoint through a load balancer: true is an internal Azure one (an
    address of the cluster's virtual network, open to private address space); settings choose
    its client ranges or a public one (refused without `source_ranges`, and warned: KAITO's
    servers authenticate no one). Default: in-cluster only (ClusterIP)."""
    allow_from: Annotated[list[AllowFromArgs], MaxItems(50)] = field(default_factory=list[AllowFromArgs])
    """Pods of other namespaces allowed to call the model (e.g. a gateway's); its NetworkPolicy
    admits its own namespace and these only. Default: none."""
    port: Annotated[int, Range(1, 65535)] = 5000
    """Container port of a custom image."""
    args: list[str] | None = None
    """Custom image arguments; default: AIKit's `run --address=:<port>`."""
    resources: dict[str, Any] | None = None
    """Container resources of a custom image; default: 2 CPU, 4-8 GiB."""
    node_groups: list[NodeGroup] | None = None
    """The cluster's GPU pools (e.g. [`GpuNodePool.node_group`, ...]): the model then checks at
    preview that its selector picks one kind of node and that KAITO admits and places it there.
    Default: not known (the GPU-node wait checks at `pulumi up`)."""
    bypass_checks: Annotated[list[str], MaxItems(50)] = field(default_factory=list[str])
    """Codes of the program's refusals this model goes past, for a user who knows better (e.g.
    [replicas-fit]): refusals stricter than KAITO (KAITO admits the model; docs/kaito-rules.md
    lists the codes), and the GPU count and memory checks only KAITO's own bypass annotation
    lets it admit (admission, fit-one-node, instance-type-fit: the program then sets
    kaito.sh/bypass-resource-checks and the GPU-node wait skips them too). Each bypassed
    problem is still said, as a warning. Default: none."""
    kubeconfig: KubeconfigContents | None = None
    """Credentials the waits read the cluster with (kept secret; e.g. an AksCluster's or
    KubeconfigCluster's `kubeconfig` output). Default: those of the cluster's provider the model is
    deployed through, where it carries them (a Python program's AksCluster or KubeconfigCluster
    `provider`); elsewhere give it, or turn the waits off."""
    context: str | None = None
    """Kubeconfig context for the waits; default: the provider's, or the current one."""
    wait_for_gpu_nodes: bool = True
    """Before creating a preset, wait until its nodes are Ready and labelled by GPU Feature
    Discovery, as KAITO's webhook requires (bring-your-own nodes only)."""
    gpu_nodes_timeout_minutes: Annotated[int, MINUTES] = 20
    """How long to wait for those nodes."""
    wait_for_ready: bool = True
    """`pulumi up` waits until KAITO reports the model serving (tuning: the job started)."""
    ready_timeout_minutes: Annotated[int, MINUTES] | None = None
    """How long to wait for that (large downloads take 20+ minutes); default: 30 minutes, 45 with
    `node_provisioning` auto (KAITO's new node takes about 7 minutes to be ready)."""
    gateway: GatewayRefArgs | None = None
    """Serve the model through this Gateway (an InferenceGateway's): an HTTPRoute to the
    InferencePool KAITO makes for its InferenceSet, matched on its model id, and the rule that
    reaches the pool's endpoint picker. KAITO 0.12 with its gateway extension on, a vLLM preset.
    Default: none (reach the model through its Service)."""
    autoscale: ModelAutoscaleArgs | None = None
    """Replicas that follow the load (KAITO 0.12 InferenceSets, through KEDA and
    keda-kaito-scaler), instead of `replicas`: the InferenceSet starts at `min_replicas`, and
    Pulumi leaves its replica count to the autoscaler. Default: a fixed `replicas`."""
    metrics: ModelMetricsArgs | None = None
    """Have Prometheus scrape the model's vLLM metrics (a ServiceMonitor on its Service). Default:
    none."""


HF_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def chart_of(args: KaitoModelArgs) -> catalog.KaitoChart | None:
    return catalog.kaito_charts().get(args.kaito_version)


def is_hugging_face_id(model: str, chart: catalog.KaitoChart) -> bool:
    """Whether the release takes `model` as a Hugging Face id (org/model) rather than a preset."""
    return chart.accepts_hugging_face_ids and HF_MODEL_ID.match(model) is not None


READY_TIMEOUT_MINUTES = {"byo": 30, "auto": 45}


def ready_timeout(args: KaitoModelArgs) -> int:
    """Minutes to wait for the model to serve: the one given, else the mode's default."""
    return args.ready_timeout_minutes or READY_TIMEOUT_MINUTES[args.node_provisioning]


def serving_replicas(args: KaitoModelArgs) -> int:
    """The most replicas the model runs at once: `replicas`, or with `autoscale` its maximum (the
    nodes they need must be there to scale into)."""
    return args.autoscale.max_replicas if args.autoscale is not None else args.replicas


def serves_with_vllm(model: str | None, tuning: object, runtime: Runtime | None) -> bool:
    """A preset KAITO serves with vLLM (not a custom image, a tuning job or the transformers
    runtime): what KAITO's gateway extension routes, and what serves vLLM's metrics. Given the
    model's `model`, `tuning` and `runtime` (a program may ask before it makes the args)."""
    return bool(model) and tuning is None and runtime != "transformers"


def vllm_preset(args: KaitoModelArgs) -> bool:
    """`serves_with_vllm` of a model's args."""
    return serves_with_vllm(args.model, args.tuning, args.runtime)


def is_gpu(args: KaitoModelArgs) -> bool:
    """GPU workloads: compute gpu, or the vLLM runtime."""
    return args.compute == "gpu" or args.runtime == "vllm"
