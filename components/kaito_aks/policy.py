"""The admission policy, as data: for every rule code the library and the stacks emit, what kind of
finding it is, the evidence for it at KAITO's tags, and whether a model (or RAG engine) may pass it
with `bypass_checks`. One table, read by every component, by the stacks and by the audit table in
docs/kaito-rules.md (`make docs` writes it from here).

The policy (issue 28):

- an error where KAITO's admission denies the object (`denied`: its words), where the deployment
  provably cannot serve (`cannot-serve`: the evidence, file:line at the tag; KAITO admits these,
  so their message says "KAITO admits this, but ..."), where the program's own judgement refuses
  what KAITO admits (`stricter`: said the same way), where the program cannot build what is asked
  (`program`), or where a value is malformed (`invalid`);
- a warning for everything that has no effect or only may be a mistake (`warning`);
- every refusal stricter than KAITO (`cannot-serve`, `stricter`) has a way past it: the model's
  `bypass_checks: [code]`. Where KAITO itself denies, only its own bypass annotation
  (kaito.sh/bypass-resource-checks, which skips its GPU count and memory checks) lets it admit:
  those codes are bypassed by setting it on the Workspace (or the InferenceSet's template), and the
  GPU-node wait then skips the same checks. A bypassed finding is still said, as a warning.

Short names in the evidence (paths at KAITO v0.8.1 `d56734a0b873`, v0.11.0 `7545aa214f72`,
v0.12.0 `0894eb2b567d`): WV api/v1beta1/workspace_validation.go; ICV
api/v1beta1/inference_config_validation.go; IA presets/workspace/inference/vllm/inference_api.py
(the script in the preset image); IF pkg/model/interface.go; PI
pkg/workspace/inference/preset_inferences.go; WC pkg/workspace/controllers/workspace_controller.go;
EST the vLLM node estimator (pkg/workspace/estimator); RV the RAGEngine webhook
(api/v1alpha1/ragengine_validation.go at 0.8.1, api/v1beta1/ at 0.11/0.12); PT
pkg/workspace/tuning/preset_tuning.go.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from kaito_aks.kaito.workspace import BYPASS_ANNOTATION
from kaito_aks.problems import Problem, did_you_mean

Kind = Literal["denied", "cannot-serve", "stricter", "exposed", "program", "invalid", "warning"]
Bypass = Literal["kaito-annotation", "program"]

KINDS: dict[Kind, str] = {
    "denied": "KAITO's admission denies it (its words)",
    "cannot-serve": "KAITO admits it, but it provably cannot serve (the evidence)",
    "stricter": "KAITO admits it and it may serve, but the program refuses it (its reason)",
    "exposed": "it would expose an unauthenticated endpoint to the internet: the config's explicit setting is the way past",
    "program": "the program cannot build it",
    "invalid": "a malformed value",
    "warning": "no effect, or only may be a mistake: said, never refused",
}
ERROR_KINDS: frozenset[Kind] = frozenset({"denied", "cannot-serve", "stricter", "exposed", "program", "invalid"})


@dataclass(frozen=True)
class Rule:
    """One rule code: its kind, what it is about, its evidence, and its way past."""

    kind: Kind
    about: str
    evidence: str
    bypass: Bypass | None = None

    @property
    def error(self) -> bool:
        return self.kind in ERROR_KINDS


def _denied(about: str, evidence: str, bypass: Bypass | None = None) -> Rule:
    return Rule("denied", about, evidence, bypass)


def _unservable(about: str, evidence: str) -> Rule:
    """A model's or RAG engine's: its `bypass_checks` pass it."""
    return Rule("cannot-serve", about, evidence, "program")


def _broken(about: str, evidence: str) -> Rule:
    """An operator's, a pool's or a stack's: no model's to pass (fix the setting)."""
    return Rule("cannot-serve", about, evidence)


def _program(about: str, evidence: str = "") -> Rule:
    return Rule("program", about, evidence)


def _warning(about: str, evidence: str = "") -> Rule:
    return Rule("warning", about, evidence)


_INVALID = Rule("invalid", "a malformed value", "")


# ---------------------------------------------------------------- the table

MODEL_RULES: dict[str, Rule] = {
    "version": _program("a KAITO release the catalog has no chart or rules of", "catalog/kaito_charts.yaml"),
    "public-endpoint": Rule(
        "exposed",
        "a public load balancer with no source ranges",
        "KAITO's inference servers authenticate no one; source_ranges (or an internal load balancer) says who may call",
    ),
    "public-endpoint-open": _warning("a public load balancer (with source ranges)", "plain HTTP, no authentication"),
    "node-class": _warning(
        "a node class where KAITO makes no Karpenter NodePool",
        "kaito.sh/node-class-name is read in Karpenter mode only (0.11+): no effect",
    ),
    "first-replica-served": _warning(
        "replicas on KAITO 0.6, whose pods carry only their Workspace's name",
        "manifests.go v0.6.0:109-146, 201-245: the model's Service reaches its first replica",
    ),
    "namespace": _warning(
        "a namespace of the cluster or an operator release",
        "KAITO has no namespace rule; the objects would sit beside the cluster's or an operator's own",
    ),
    "name-length": _unservable(
        "a Workspace name longer than 52 characters",
        "the StatefulSet's pods carry controller-revision-hash=<name>-<10 characters>, over Kubernetes' 63 "
        "(kubernetes/kubernetes#64023): the pods are never created",
    ),
    "source": _denied(
        "neither or both of a preset and an image",
        '"Preset or Template must be specified" WV 0.8.1:547, 0.11.0:624, 0.12.0:828; "Preset and Template cannot '
        'be set at the same time" WV 0.8.1:552, 0.11.0:629, 0.12.0:833',
    ),
    "image-only": _warning(
        "preset settings given with a custom image", "KAITO builds a template's pod as written: no effect"
    ),
    "cpu-preset": _denied(
        "a preset on CPU nodes",
        '"Failed to get GPU config from nvidia labels" WV 0.8.1:394, 0.11.0:476, 0.12.0:576 (CPU nodes carry no GFD '
        "labels)",
    ),
    "adapter-name": _denied(
        "two adapters of one name", '"Duplicate adapter source name found" WV 0.8.1:635, 0.11.0:716, 0.12.0:920'
    ),
    "adapter-name-length": _unservable(
        "an adapter name over 31 characters with image pull secrets",
        "KAITO names a volume docker-config-<name>-inference-adapter (pkg/workspace/manifests/manifests.go "
        "0.8.1:284-288, 0.12.0:254-258), over 63 characters: Kubernetes refuses the StatefulSet",
    ),
    "deprecated-preset": _denied(
        "a deprecated preset", '"Model %s is deprecated and no longer supported" WV 0.8.1:348, 0.11.0:407, 0.12.0:495'
    ),
    "removed-preset": _denied(
        "a preset the release no longer serves",
        '"Unsupported inference preset name" WV 0.8.1:559, 0.11.0:636, 0.12.0:840',
    ),
    "unknown-preset": _denied(
        "a preset the release does not know", '"Unsupported inference preset name" WV 0.8.1:559, 0.11.0:636, 0.12.0:840'
    ),
    "gated-secret": _denied(
        "a preset KAITO's catalog marks downloadAuthRequired, without a token",
        '"This preset requires authentication and needs a modelAccessSecret" WV 0.8.1:584-585 '
        "(supported_models.yaml downloadAuthRequired: llama-3.1-8b-instruct, llama-3.3-70b-instruct)",
    ),
    "gated": _unservable(
        "a gated Hugging Face repository without a token",
        "KAITO admits it (from 0.11 its catalog models never set DownloadAuthRequired), but the pod gets HF_TOKEN only "
        "from the modelAccessSecret (PI SetModelDownloadInfo, 0.8.1:405-420): the gated download answers 401",
    ),
    "download-secret": _denied(
        "a download without a secret on 0.6", "KAITO 0.6 admits a runtime download only with a modelAccessSecret"
    ),
    "access-secret": _denied(
        "a modelAccessSecret on a preset whose weights ship in an image",
        '"This preset does not require a modelAccessSecret" WV 0.8.1:587-588 (inference only)',
    ),
    "access-secret-tuning": _warning(
        "a modelAccessSecret on a tuning job",
        "TuningSpec.validateCreate has no secret check (WV 0.8.1:176) and the tuning Job never reads it (PT): no "
        "effect",
    ),
    "runtime": _denied(
        "a runtime the preset lacks",
        '"Runtime validation: ..." WV 0.8.1:580, 0.11.0:661, 0.12.0:865 (IF 0.11.0:615, 0.12.0:705)',
    ),
    "lora": _denied("LoRA adapters on a preset vLLM cannot serve them with", "IF 0.8.1:343-350 through WV 0.8.1:580"),
    "strength": _denied("adapter strength with vLLM", "IF 0.8.1:343-350 through WV 0.8.1:580"),
    "config-runtime": _warning(
        "inference_config.yaml with the transformers runtime",
        "ICV checks it for vLLM only (0.8.1:43-46, 0.11.0:42-45) and only the vLLM command gets the file "
        "(IF 0.8.1:294-296, 0.11.0:423, 0.12.0:482-484): no effect",
    ),
    "config-section": _warning(
        "a section of inference_config.yaml KAITO does not read",
        "ICV decodes only `vllm` (yaml.v2, not strict, 0.8.1:36-39); IA reads vllm, max_probe_steps and "
        "kv_cache_cpu_memory_utilization (0.8.1:136-145, 0.12.0:175-184): no effect",
    ),
    "config-value": _unservable(
        "kv_cache_cpu_memory_utilization that is not a number",
        "IA compares it with 0 (0.8.1:193-196, 0.11.0:461-464, 0.12.0:514-517): TypeError, the server never starts",
    ),
    "config-bool": _warning(
        "kv_cache_cpu_memory_utilization given as true or false", "Python reads it as 1 or 0 (IA): may be a mistake"
    ),
    "config-vllm-null": _unservable(
        "`vllm: null`",
        "yaml.v2 admits it as a nil map; IA's config_data.get('vllm', {}) is None (0.8.1:140, 0.11.0:171, 0.12.0:179) "
        "and .items() raises (0.8.1:109, 0.11.0:135, 0.12.0:143): the server never starts",
    ),
    "config-vllm": _denied(
        "`vllm` that is not a map of single values",
        '"Failed to parse inference_config.yaml: ... cannot unmarshal" ICV 0.8.1:86-89, 0.11.0/0.12.0:79-82',
    ),
    "config-null": _warning(
        "a vLLM argument given as null (other than max-model-len)",
        'IA passes "--<name> None" (0.8.1:109-111); vLLM reads it as unset for optional arguments and refuses it '
        "for the rest: may fail",
    ),
    "max-model-len-null": _unservable(
        "max-model-len given as null",
        'ICV reads it as empty and admits (0.8.1:96, 0.11.0:89); IA appends "--max-model-len None" (0.8.1:109-111, '
        "0.11.0:135-137, 0.12.0:143-145) and vLLM's parser refuses it (vllm 0.12.0 human_readable_int; 0.22.1, "
        "0.25.1 human_readable_int_or_auto): the server exits at start",
    ),
    "max-model-len-spelling": _warning(
        "max_model_len instead of max-model-len",
        "ICV and the node estimator read only max-model-len (pkg/utils/config_parser.go); vLLM takes both: KAITO "
        "sizes for 2048 tokens",
    ),
    "max-model-len-text": _warning(
        "max-model-len written as text",
        "ICV admits it (Atoi of the text, 0.8.1:103); pkg/utils/config_parser.go:40-45 reads only a plain number and "
        "sizes for 2048 tokens",
    ),
    "max-model-len-low": _warning(
        "max-model-len below 1", "ICV checks only the upper bound; vLLM 0.22+ reads -1 as auto"
    ),
    "max-model-len": _denied(
        "max-model-len not a 64-bit integer, or above the context window",
        '"max-model-len must be an integer" ICV 0.8.1:105, 0.11.0/0.12.0:101; "max-model-len %d exceeds model\'s '
        'maximum supported context window" ICV 0.8.1:107-111, 0.11.0/0.12.0:103-107; 0.6: required on several small GPUs',
    ),
    "node-provisioning": _program("a node-provisioning mode the release (the AKS add-on) does not offer"),
    "byo-instance-type": _denied(
        "an instance type with bring-your-own nodes",
        '"instanceType must be empty when node auto-provisioning is disabled" WV 0.8.1:123, 0.11.0:152, 0.12.0:177',
    ),
    "auto-node-groups": _warning("pools described with node auto-provisioning", "KAITO does not use them: no effect"),
    "node-selector": _warning(
        "a nodeSelector KAITO drops or that may keep a pod off its node",
        "KAITO builds a preset's pod itself; with auto-provisioning a template's nodeSelector may not match the "
        "node it makes",
    ),
    "node-selector-auto": _unservable(
        "a nodeSelector no node KAITO makes can carry",
        "the node KAITO provisions carries only the selector's labels and AKS's (pkg/utils/nodeclaim): the pod stays "
        "Pending",
    ),
    "selector": _denied(
        "a preset that selects every node",
        "KAITO lists bring-your-own nodes by matchLabels (WV 0.8.1:376); the CPU system pool's nodes lack GFD labels: "
        '"Failed to get GPU config from nvidia labels" WV 0.8.1:394, 0.11.0:476, 0.12.0:576',
    ),
    "selector-broad": _warning(
        "a selector without matchLabels", "KAITO admits it and places the pod on any node that matches"
    ),
    "selector-expression": _denied(
        "a matchExpressions entry KAITO cannot turn into labels",
        "metav1.LabelSelectorAsMap WV 0.8.1:361-363, 0.11.0:420, 0.12.0:508",
    ),
    "reserved-label": _denied(
        "a selector of only reserved labels",
        '"matchLabels must contain at least one non-reserved label" WV 0.11.0:442, 0.12.0:530',
    ),
    "reserved-label-ignored": _warning(
        "a reserved label beside others", "KAITO drops it from the selector (labels.go 0.11.0:157, 0.12.0:218)"
    ),
    "cpu-on-gpu": Rule(
        "stricter",
        "a CPU model whose pods may land on GPU nodes",
        "KAITO replaces a template pod's affinity with the selector's labels and tolerates GPU taints "
        "(GenerateManifestWithPodTemplate, 0.8.1 and 0.12.0); the pod requests no GPU, so it may take a node a GPU "
        "preset needs",
        "program",
    ),
    "cpu-may-use-gpu": _warning("a CPU model on labels every node carries, pools not known"),
    "cpu-no-pool": _unservable(
        "a CPU model whose labels no node of the cluster carries (every pool known)",
        "KAITO puts the selector's labels and nodeSelector on the template pod (GenerateManifestWithPodTemplate, "
        "0.8.1 and 0.12.0) and only its GPU and spot tolerations; the scheduler finds no node with those labels "
        "whose taints it tolerates, so the pod stays Pending",
    ),
    "spot-pool": _warning(
        "a spot pool given to KAITO before 0.11",
        "KAITO's preset tolerations (PI 0.8.1:74-86) lack AKS's spot taint: no preset runs there (a model "
        "that selects the pool is refused, `spot`)",
    ),
    "no-pools": _denied(
        "a GPU preset with no GPU pool", '"No nodes found matching the specified label selector" WV 0.8.1:386'
    ),
    "no-pool-matches": _denied(
        "a selector that matches no GPU pool",
        '"No nodes found matching the specified label selector" WV 0.8.1:386, 0.11.0:468, 0.12.0:568',
    ),
    "empty-pools": _denied(
        "GPU pools of no nodes",
        '"No nodes found matching the specified label selector" WV 0.8.1:386, 0.11.0:468, 0.12.0:568',
    ),
    "pool-from-zero": _denied(
        "GPU pools that scale from zero",
        '"No nodes found matching the specified label selector" WV 0.8.1:386, 0.11.0:468, 0.12.0:568 (at creation)',
    ),
    "spot": _unservable(
        "a spot pool before KAITO 0.11",
        "KAITO's preset tolerations (PI 0.8.1:74-86) lack AKS's spot taint: the pods stay Pending",
    ),
    "pool-taint": _unservable(
        "a pool taint KAITO's pods do not tolerate",
        "KAITO's preset tolerations (PI 0.8.1:74-86): the pods stay Pending",
    ),
    "mixed-pools": _denied(
        "pools of different GPUs under one selector",
        '"Non-uniform GPU product/count/memory" WV 0.8.1:402-412, 0.11.0:485-493, 0.12.0:585-593',
    ),
    "mixed-pool-sizes": _warning(
        "pools of different sizes with the same GPUs", "KAITO compares GPU product, count and memory only"
    ),
    "pool-sku-version": _warning(
        "a GPU KAITO 0.12 no longer lists",
        'bring-your-own admission reads node labels only; pkg/sku/azure_sku_handler.go:19 (0.12.0): "KAITO only '
        'supports GPUs with CUDA compute capability >= 8.0"',
    ),
    "admission": _denied(
        "too few GPUs or too little GPU memory on the nodes that exist",
        '"Insufficient number of GPUs" WV 0.8.1:454-469; "Insufficient total GPU memory" WV 0.8.1:472-487, '
        "0.11.0:548-561, 0.12.0:654-669",
        "kaito-annotation",
    ),
    "fit-one-node": _denied(
        "a preset that cannot span nodes and fits no one node",
        '"Insufficient total GPU memory" WV 0.8.1:472-487, 0.11.0:548-561, 0.12.0:654-669; past it, EST: "models '
        'with disabled support distributed inference cannot be distributed across more than 1 GPU node" '
        "(0.8.1:152-154, 0.12.0:190-192)",
        "kaito-annotation",
    ),
    "transformers-multinode": _denied(
        "a distributed preset over one node with the transformers runtime",
        '"Multi-node distributed inference is not supported with Huggingface Transformers runtime" WV 0.8.1:490-497, '
        "0.11.0:571, 0.12.0:678",
    ),
    "fit-one-node-transformers": _unservable(
        "a model larger than one node with the transformers runtime",
        "the transformers runtime runs on resource.count (1) node, with no estimator (WC 0.8.1:612-626, "
        "0.11.0:1125-1139, 0.12.0:1506-1520): the weights do not fit its GPUs",
    ),
    "estimator": _unservable(
        "a model KAITO's vLLM node estimator refuses on the pool",
        "UpdateWorkspaceTargetNodeCount returns the estimator's error and never sets targetNodeCount (WC "
        "0.8.1:613-617, 0.11.0:1126-1130, 0.12.0:1507-1511)",
    ),
    "replicas-fit": _unservable(
        "more nodes than the pools give",
        "KAITO admits the object; its controller waits for the vLLM estimate's nodes per replica (WC 0.8.1:612-626) "
        "and the pools cannot give them",
    ),
    "tuning-fit": _unservable("a tuning job larger than the pools", "the tuning Job's pod never schedules"),
    "tuning": _denied(
        "tuning a custom image, or tuning and serving at once",
        '"Either Inference or Tuning must be specified, but not both" WV 0.8.1:115, 0.11.0:144, 0.12.0:169; '
        "tuning needs a preset",
    ),
    "tuning-replicas": _program("a tuning job with several replicas", "a tuning job is one Workspace, run once"),
    "tuning-byo": _unservable(
        "tuning on bring-your-own nodes",
        'PT:148 (all three tags) GetGPUConfigBySKU("") fails ("Unsupported SKU \'\'"): the Job is never created',
    ),
    "tuning-input": _denied(
        "tuning input of not one source", '"Exactly one of URLs, Volume, or Image" WV 0.8.1:266, 0.12.0:377'
    ),
    "tuning-output": _denied(
        "tuning output of not one destination, or an image without a push secret", "WV 0.8.1:294, 0.12.0:437"
    ),
    "tuning-url": _denied("a tuning URL KAITO 0.12 refuses", "WV 0.12.0:357 (383-413)"),
    "tuning-config": _denied("a training_config.yaml KAITO refuses", "tuning_config_validation.go 0.8.1:139-260"),
    "tuning-preset": _denied(
        "a preset the release cannot fine-tune",
        "WV 0.8.1:215, 0.11.0:273, 0.12.0:321 (0.11+: mistral-7b's tuning panics the controller, vllm_model.go "
        "0.11.0:247, 0.12.0:260)",
    ),
    "volume-source": _unservable(
        "a volume source of not one type", "Kubernetes refuses the tuning Job (a volume source names exactly one type)"
    ),
    "strict-decoding": _denied(
        "a field KAITO decodes strictly, unknown", '"json: unknown field" pkg/workspace/webhooks/webhooks.go 0.8.1:52'
    ),
    "instance-type": _denied(
        "no instance type with auto-provisioning, or one outside the N and D series",
        '"instanceType is required when node auto-provisioning is enabled" WV 0.8.1:128, 0.11.0:157, 0.12.0:182; '
        '"Unsupported instance type" WV 0.8.1:437, 0.11.0:519, 0.12.0:626',
    ),
    "instance-type-default": _program(
        "no instance type on a release whose CRD defaults one",
        "the model is sized, planned and waited for by the size it names",
    ),
    "instance-type-unknown": _unservable(
        "an instance type KAITO's SKU table does not have (or spells otherwise)",
        "the estimator's GetGPUConfigBySKU fails (EST 0.8.1:73-76, 0.12.0:125-128); from 0.10 the provisioned node's "
        "instance-type label never matches another spelling",
    ),
    "instance-type-gpu": _unservable(
        "an AMD or retired GPU size", "KAITO's preset images are CUDA builds; Azure no longer provisions retired sizes"
    ),
    "instance-type-fit": _denied(
        "the transformers runtime on a size too small",
        '"Insufficient number of GPUs" / "Insufficient total GPU memory" WV 0.8.1:443-488 (runtime != vLLM with '
        "auto-provisioning), 0.11.0:548-561, 0.12.0:654-669",
        "kaito-annotation",
    ),
    "instance-type-fit-tuning": _warning(
        "a tuning job on a size smaller than its preset asks",
        "validateCreateWithTuning checks only count <= 1 (WV 0.8.1) and PT checks no memory: KAITO admits it",
    ),
    "instance-type-estimator": _unservable(
        "a size KAITO's vLLM node estimator refuses",
        "UpdateWorkspaceTargetNodeCount returns the estimator's error (WC 0.8.1:613-617, 0.12.0:1507-1511)",
    ),
    "hugging-face-unchecked": _warning("a Hugging Face id outside KAITO's catalog", "KAITO sizes it at admission"),
    "unsized": _warning(
        "a GPU preset on bring-your-own nodes the model does not know",
        "without `node_groups` its admission, node estimate and pool budget cannot be checked before deploy",
    ),
    "gpu-driver": _unservable(
        "a pool that leaves its driver to a GPU Operator nothing says is installed",
        'with no driver GPU Feature Discovery never labels the nodes: "Failed to get GPU config from nvidia labels" '
        "WV 0.8.1:394, 0.11.0:476, 0.12.0:576 at admission; ways past: a GpuOperator's node_groups, or "
        "driver_installed",
    ),
    "operator-version": _program(
        "a model checked against another KAITO release than the KaitoOperator it depends on installs",
        "each release has its own rules and arithmetic",
    ),
    "name-collision": _program("two objects of one name in a namespace", "the second would replace the first"),
    "kaito-versions": _program("models of one cluster checked against several KAITO releases"),
    "no-credentials": _program("waits without credentials to read the cluster"),
    "pool-budget": _unservable(
        "models and engines that do not fit their shared pools",
        "each preset pod requests every GPU of its node (PI 0.8.1:326-333, nvidia.com/gpu = GPUCount): the rest stay "
        "Pending",
    ),
    "capacity": _unservable(
        "models and engines whose pods, with what else runs there, do not fit the non-GPU pools they may run on",
        "their requests (an endpoint picker's 1 CPU and 2 GiB: pkg/workspace/manifests/manifests.go 0.12.0:436-447) "
        "beyond the nodes' allocatable (AKS's node-resource-reservations): the rest stay Pending",
    ),
    "rag-no-pool": _unservable(
        "a RAG engine whose size no pool it selects has",
        "the controller then creates a NodeClaim (ragengine_controller.go 0.8.1:439-482, 0.12.0:458-493), which "
        "nothing provisions with bring-your-own nodes",
    ),
    "bypass": _program("an unknown or unbypassable code in `bypass_checks`"),
    "bypass-nothing": _warning("a warning's code in `bypass_checks`", "a warning refuses nothing: no effect"),
}

RAG_RULES: dict[str, Rule] = {
    "embedding": _denied(
        "neither or both of a local and a remote embedding",
        '"Either remote embedding or local embedding must be specified" RV 0.8.1:65-70, 0.11.0/0.12.0:73-78',
    ),
    "embedding-local": _denied("a local embedding of neither or both model and image", "RV 0.11.0/0.12.0:202-222"),
    "embedding-image": _denied(
        "an embedding image that is no full reference", '"Invalid image format" RV 0.11.0/0.12.0:202-222'
    ),
    "embedding-url": _denied("a remote embedding URL KAITO refuses", '"URL input error" RV 0.11.0/0.12.0:224-230'),
    "embedding-dropped": _warning(
        "an embedding 0.8.1 computes and drops the checks of",
        "RV 0.8.1:72-77 drops the result; its controller reads only Local.ModelID (manifests.go 0.8.1:161-182): no "
        "effect on 0.8.1, 0.11+ denies it",
    ),
    "inference-service": _denied("no LLM on 0.8.1", '"InferenceService must be specified" RV 0.8.1:57-58'),
    "access": _program("both a secret and a token"),
    "url": _denied("an LLM URL KAITO refuses", '"URL input error" RV 0.8.1:137-141, 0.12.0:237'),
    "url-scheme": _unservable(
        "an LLM URL that is not http(s) with a host",
        "the engine POSTs to it (presets/ragengine/inference/inference.py): no request can succeed",
    ),
    "url-completions": _warning(
        "an LLM URL without /chat/completions",
        "the engine then runs completion mode (inference.py 0.8.1:466, 0.12.0:542); only the chat pass-through "
        "answers 400 (0.8.1:281-286)",
    ),
    "compute": _denied(
        "no compute on 0.8.1", "RV 0.8.1:71 dereferences a nil spec.compute (fixed in 0.11, kaito#1936)"
    ),
    "rag-instance-type": _denied("a size outside the N and D series", '"Unsupported instance type" RV 0.12.0:190'),
    "rag-instance-type-unknown": _unservable(
        "a size outside KAITO's GPU table on 0.8", '"Unsupported SKU" in the 0.8 RAGEngine controller'
    ),
    "rag-selector": _denied(
        "a compute selector KAITO cannot turn into labels",
        "metav1.LabelSelectorAsMap RV 0.8.1:99-102, 0.11.0/0.12.0:194-197",
    ),
    "rag-selector-broad": _warning("a compute selector without matchLabels", "KAITO places the engine by them"),
    "rag-reserved-label": _warning(
        "a reserved label in the compute selector", "SanitizedMatchLabels drops it (labels.go 0.11.0:157, 0.12.0:218)"
    ),
    "storage": _warning("storage settings with no effect", "KAITO mounts an emptyDir without a claim"),
    "storage-mount-path": _warning(
        "a relative mount path",
        "KAITO keeps the vectors under <mountPath>/<name> (pkg/ragengine/manifests/manifests.go 0.12.0:241-246), a "
        "relative path from the engine's working directory: they may not land on the claim",
    ),
    "vector-db": _program("an external vector database on a release whose CRD has none", "RAGEngine CRD, 0.10+"),
    "vector-db-url": _warning(
        "a vector-database URL that is not http(s) with a host",
        "KAITO passes it as VECTOR_DB_URL unchecked (manifests.go 0.12.0:219-223): the engine may not reach it",
    ),
    "guardrails": _program("guardrails on a release without them, or given twice"),
    "guardrails-unused": _warning("guardrails without an LLM", "a retrieve-only engine serves no chat: no effect"),
}

COMPONENT_RULES: dict[str, Rule] = {
    # the operators, pools and clusters
    "chart-value": _warning("a chart value the chart does not read", "Helm passes unknown values on: no effect"),
    "gate": _broken(
        "a feature gate the controller refuses",
        "the controller exits on an unknown gate and on ModelStreaming without ModelMirror (cmd/workspace/main.go "
        "0.11.0:163, 0.12.0:166)",
    ),
    "gates": _INVALID,
    "model-streaming": _program(
        "model streaming where KAITO has none",
        "gates ModelMirror and ModelStreaming from 0.11.0 (pkg/featuregates/featuregates.go@v0.11.0); inference presets "
        "only; Azure only (api/v1beta1/workspace_validation.go@v0.12.0 validateStreamingCSIDriver)",
    ),
    "streaming-runtime": _warning(
        "model streaming with the transformers runtime",
        "KAITO streams to vLLM only and downloads as before (modelstreaming.go@v0.12.0 ModelStreamingEnabled)",
    ),
    "quota-short": _broken(
        "a VM family (or the region's total or Spot vCPUs) whose quota cannot hold what the deployment needs",
        "Azure refuses the VMs past the quota (QuotaExceeded); read at preview, Microsoft.Compute usages 2024-07-01",
    ),
    "quota-surge": _warning(
        "a VM family whose quota holds what the deployment runs but not an upgrade's surge nodes",
        "AKS adds maxSurge nodes to a pool while it upgrades it; past the quota the upgrade fails",
    ),
    "vm-size-unavailable": _broken(
        "a VM size the region does not offer the subscription",
        "Azure refuses it (SkuNotAvailable); read at preview, Microsoft.Compute resource SKUs 2021-07-01",
    ),
    "managed-value": _program("a value the component sets itself"),
    "karpenter": _program("a node provisioner the component does not install"),
    "mixed-drivers": _program(
        "pools of different drivers under one GPU Operator", "its driver settings are cluster-wide"
    ),
    "replicas": _program("two RAGEngine controllers", "the chart starts it without leader election"),
    "cloud": _program("a cloud the library does not size for"),
    "cluster-id": _INVALID,
    "cluster-name": _INVALID,
    "existing-cluster": _program("settings of a cluster the component only reads"),
    "tag": _INVALID,
    "role": _INVALID,
    "scope": _INVALID,
    "kubeconfig-twice": _program("a kubeconfig given twice"),
    "kubeconfig-file": _program("a kubeconfig file that cannot be read"),
    "kubeconfig-context": _program("a context the kubeconfig does not have"),
    "no-provider": _program("a component outside a cluster's provider"),
    "pool-count": _INVALID,
    "pool-autoscale": _INVALID,
    "pool-sku": _program("a size that is no NVIDIA GPU KAITO knows"),
    "cpu-pool-gpu-size": _program("a GPU VM size for a CPU pool (GpuNodePool makes GPU pools)"),
    "pool-spot-taint": _INVALID,
    "pool-label": _INVALID,
    "pool-nodes": _INVALID,
    "capacity-pools": _broken(
        "operators and add-ons whose pods do not fit the non-GPU pools they may run on",
        "their charts' requests beyond the nodes' allocatable (AKS's node-resource-reservations): the rest stay "
        "Pending, and an atomic Helm release whose pods cannot schedule rolls back",
    ),
    "capacity-high": _warning(
        "non-GPU pools whose pods request more than the high-water mark of their allocatable",
        "AKS's own pods whose requests are not published, rolling updates and packing need room",
    ),
    "capacity-size": _warning("a pool of a VM size the capacity budget does not know", "not measured"),
    "bootstrap-token-forever": _warning(
        "a kubelet bootstrap token that never expires",
        "whoever holds it can join a node under any name until it is rotated",
    ),
    "static-capacity": _broken(
        "Karpenter's staticCapacity gate turned off",
        "KAITO 0.12's Karpenter mode makes NodePools with replicas, which Karpenter serves only with the gate on",
    ),
    # an AKS cluster's security (docs/security.md): what cannot work is refused, each lowered default said
    "subnet-id": _INVALID,
    "subnet-range": _INVALID,
    "cluster-access": _program("a cluster no one could sign in to, or an admin listed twice"),
    "upgrade-channel": _program("a pinned Kubernetes version an upgrade channel would move on from"),
    "api-server": _program("a private API server with authorized ranges", "AKS takes one or the other"),
    "api-server-private": _warning("a private API server", "set at creation: turning it on replaces the cluster"),
    "api-server-ranges": _warning("authorized ranges that let in much of the internet"),
    "api-server-unroutable": _broken(
        "authorized ranges no caller's address is in (documentation, loopback, link-local, multicast, reserved)",
        "`pulumi up` creates the cluster, then its provider, access wait and releases never reach the API server; "
        "the cluster's `bypass_checks` keeps an example's placeholder (said)",
    ),
    "api-server-public": _warning("a production cluster's API server open to the internet"),
    "tier": _warning("a production cluster on the Free tier", "no uptime SLA"),
    "defender": _warning("a production cluster without Defender"),
    "local-accounts": _warning("local accounts on", "a certificate that bypasses Entra ID and Azure RBAC"),
    "azure-rbac": _warning("Kubernetes RBAC without Azure RBAC"),
    "network-policy": _warning("no network policy engine", "every NetworkPolicy is ignored"),
    "upgrade": _warning("no automatic Kubernetes or node image upgrades"),
    "image-cleaner": _warning("Image Cleaner off"),
    "azure-policy": _warning("the Azure Policy add-on off"),
    "broad-role": _warning("an identity given Contributor, Owner or User Access Administrator"),
    "discovery": _warning(
        "KAITO's GPU discovery beside the GPU Operator", "two device plugins and GFDs may fight over GPUs and labels"
    ),
    "pool-name": _program("two pools of one name"),
}

SERVING_RULES: dict[str, Rule] = {
    # a model's gateway, autoscale and metrics (KAITO 0.12), the gateway, KEDA and the stack's sections
    "serving-release": _program("a gateway or autoscaling on a KAITO release this program does not serve through"),
    "serving-tuning": _program("a gateway, autoscale or metrics on a tuning job", "a tuning job serves nothing"),
    "not-routable": _program(
        "a route to a model KAITO makes no InferencePool for",
        "kaito@v0.12.0:pkg/inferenceset/inferenceset_controller.go:557-561 (vLLM presets only)",
    ),
    "route-name": _program(
        "a routed model's name past KAITO's predictable pool name",
        "Flux shortens a release name over 53 characters to a hash (fluxcd/helm-controller ShortenName)",
    ),
    "served-model-name": _program("a served model name the route would never match"),
    "route-ids": _program("a model id two routes of one gateway would share"),
    "autoscale-replicas": _program("both replicas and autoscale"),
    "autoscale-range": _broken(
        "min_replicas above max_replicas", "keda-kaito-scaler skips the model (InvalidReplicaRange)"
    ),
    "autoscale-thresholds": _broken("down_threshold above up_threshold", "keda-kaito-scaler skips the model"),
    "autoscale-metric": _program("a metric of a kind kaito-aks does not know, without metric_type"),
    "autoscale-window": _program("a cache window for a gauge", "keda-kaito-scaler takes one for histograms only"),
    "autoscale-quota": _broken(
        "gpu-provisioner's nodes beyond AKS's node pools",
        "gpu-provisioner makes an AKS node pool per node, and AKS allows 100 per cluster",
    ),
    "autoscale-image": _warning("autoscaling a custom image", "keda-kaito-scaler scrapes vLLM's metric from it"),
    "gateway-extension-flux": _warning(
        "KAITO's gateway extension", "it runs Flux bound to cluster-admin (kaito#2252) and pulls from public registries"
    ),
    "gateway-auth": Rule(
        "exposed",
        "a gateway without authentication, unless allow_unauthenticated (warned)",
        "KAITO's inference servers authenticate no one: the gateway is the one check",
    ),
    "gateway-exposure": Rule(
        "exposed",
        "a public gateway without source ranges or TLS",
        "keys and tokens would cross the internet in clear text, to anyone who reaches it",
    ),
    "gateway-routes": _program("a gateway routing to no namespace"),
    "gateway-unauthenticated": _warning("a gateway without authentication, asked for"),
    "gateway-public": _warning("a public gateway"),
    "gateway-existing-istio": _warning("an Istio already running", "its settings are not checked here"),
    "gateway-existing-router": _warning(
        "a body-based router already running",
        "its EnvoyFilter, not this component, decides whether it reads bodies before authentication",
    ),
    "keda-namespace": _program("a namespace for the scaler other than the KEDA add-on's"),
}

INVALID_CODES = (
    "type",
    "range",
    "constraint",
    "required",
    "unknown",
    "retired",
    "number-as-text",
    "control_characters",
    "finite_number",
    "too-deep",
)

RULES: dict[str, Rule] = {
    **dict.fromkeys(INVALID_CODES, _INVALID),
    **COMPONENT_RULES,
    **MODEL_RULES,
    **RAG_RULES,
    **SERVING_RULES,
}


def rule(code: str) -> Rule:
    """The rule of a code; a code the table does not name (a pydantic error type) is a malformed value."""
    return RULES.get(code) or RULES["type"]


def is_warning(problem: Problem) -> bool:
    """Whether a finding refuses nothing: a warning's code, or a refusal bypassed."""
    return problem.bypassed or not rule(problem.code).error


def warnings_of(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if is_warning(p)]


def errors_of(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if not is_warning(p)]


# ---------------------------------------------------------------- the way past


def way_past(code: str) -> str:
    """What a refusal says of the way past it (empty: none)."""
    bypass = rule(code).bypass
    if bypass == "program":
        return f" (to deploy it anyway: `bypass_checks`: [{code}])"
    if bypass == "kaito-annotation":
        return (
            f" (to have KAITO admit it anyway: `bypass_checks`: [{code}], which sets KAITO's {BYPASS_ANNOTATION} "
            "annotation)"
        )
    return ""


def verdict(
    problems: Sequence[Problem], bypass_checks: Iterable[str] | None = ()
) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of a component's findings by the table: a warning stays one; an error
    whose code `bypass_checks` names (and may be bypassed) becomes a warning that says so; every
    other error says its way past, where it has one. `bypass_checks` None: a component that has
    none (an operator, a pool), whose errors have no way past."""
    bypassed = set(bypass_checks or ())
    offers = bypass_checks is not None
    errors: list[Problem] = []
    warnings: list[Problem] = []
    for p in problems:
        r = rule(p.code)
        if p.bypassed or not r.error:
            warnings.append(p)
        elif r.bypass is not None and p.code in bypassed:
            note = (
                f"; {BYPASS_ANNOTATION} is set, so KAITO skips its GPU count and memory checks"
                if r.bypass == "kaito-annotation"
                else ""
            )
            warnings.append(replace(p, message=f"bypassed ({p.code}): {p.message}{note}", bypassed=True))
        else:
            errors.append(replace(p, message=p.message + way_past(p.code)) if r.bypass and offers else p)
    return errors, warnings


def annotation_bypassed(bypass_checks: Iterable[str]) -> bool:
    """Whether the model asks for KAITO's own bypass annotation (a code only it lets KAITO admit)."""
    return any(rule(code).bypass == "kaito-annotation" for code in bypass_checks if code in RULES)


def bypass_problems(bypass_checks: Sequence[str], known: Iterable[str]) -> list[Problem]:
    """What is wrong with a `bypass_checks` list: a code the table does not know (did you mean?),
    one KAITO denies without a bypass of its own, one the program cannot build, or a warning's
    (nothing to bypass). `known`: the codes of the component's own rules."""
    bypassable = sorted(c for c in known if RULES[c].bypass is not None)
    problems: list[Problem] = []
    for i, code in enumerate(bypass_checks):
        at = ("bypass_checks", i)
        r = RULES.get(code)
        if r is None:
            close = did_you_mean(code, bypassable)
            hint = f"did you mean {close[0]}?" if close else f"codes that may be bypassed: {', '.join(bypassable)}"
            problems.append(Problem(at, f"no rule is named {code!r}; {hint}", "bypass"))
        elif r.kind == "warning":
            problems.append(Problem(at, f"{code} is a warning, which refuses nothing: remove it", "bypass-nothing"))
        elif r.bypass is None and r.kind == "denied":
            problems.append(
                Problem(at, f"KAITO's webhook denies this ({r.evidence}); it cannot be bypassed: remove it", "bypass")
            )
        elif r.bypass is None:
            problems.append(Problem(at, f"{code}: {KINDS[r.kind]}, which cannot be bypassed: remove it", "bypass"))
    return problems
