"""Every rule about one model, checked before anything is registered: what KAITO's admission
webhook would deny (api/v1beta1/workspace_validation.go and the inference-config checks, per
release), what KAITO's estimator could not place on the GPU pools the model is given, and what
this component cannot build. The stack config, a Python program and a YAML program calling the
component provider all get these same checks."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from kaito_aks import catalog
from kaito_aks.kaito import sizing
from kaito_aks.model.names import MAX_WORKSPACE_NAME, RESERVED_NAMESPACES, workspace_names
from kaito_aks.model.spec import KaitoModelArgs, is_gpu
from kaito_aks.nodes import GPU_PRESENT_LABEL, LINUX_LABEL, SPOT_TAINT, TAINT, NodeGroup, selects
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Problem

HF_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
GIB = 1 << 30
# KAITO 0.6's inference-config check: vLLM on several GPUs of less memory needs max-model-len.
MAX_MODEL_LEN_REQUIRED_BELOW_GIB = 20


def chart_of(args: KaitoModelArgs) -> catalog.KaitoChart | None:
    return catalog.kaito_charts().get(args.kaito_version)


def model_problems(args: KaitoModelArgs) -> list[Problem]:
    """Every rule the model breaks (its args already have the right types)."""
    chart = chart_of(args)
    problems: list[Problem] = []
    unsupported = catalog.unsupported_kaito_version(args.kaito_version)
    if unsupported is not None:
        problems.append(Problem.at("kaito_version", unsupported, "version"))
    problems += [
        *_names(args, chart),
        *_source(args, chart),
        *_placement(args, chart),
        *_tuning(args, chart),
    ]
    if chart is not None and args.node_groups is not None and not problems:
        problems += list(_on_node_groups(args, chart, args.node_groups))
    return problems


def model_warnings(args: KaitoModelArgs) -> list[Problem]:
    """What about the model cannot be checked before KAITO sees it: not errors (the model may
    well deploy), said so nothing is accepted silently. The components log them (pulumi.log.warn)
    and `validate` prints them."""
    chart = chart_of(args)
    model = args.model or ""
    if chart is None or args.image or not model or not is_hugging_face_id(model, chart):
        return []
    if catalog.find_preset(model, chart.preset_catalog) is not None:
        return []
    return [
        Problem.at(
            "model",
            f"{model} is not in KAITO {chart.version}'s model catalog: KAITO sizes it from Hugging Face when the "
            "Workspace is created, so its size, context window, runtimes and architecture are not checked here "
            "(nor whether it fits the GPU nodes); KAITO's admission webhook must reach huggingface.co over HTTPS "
            "from the KAITO controller pod within the API server's 10 s webhook timeout, and a gated or private "
            "repository needs `hf_token` or `model_access_secret`",
            "hugging-face-unchecked",
        )
    ]


def is_hugging_face_id(model: str, chart: catalog.KaitoChart) -> bool:
    """Whether the release takes `model` as a Hugging Face id (org/model) rather than a preset."""
    return chart.accepts_hugging_face_ids and HF_MODEL_ID.match(model) is not None


# ---------------------------------------------------------------- names


def _names(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    if args.namespace in RESERVED_NAMESPACES:
        yield Problem.at(
            "namespace",
            f"{args.namespace} belongs to the cluster or an operator release; use a namespace of your own",
            "namespace",
        )
    names = workspace_names(args, chart) if chart is not None and args.name is not None else []
    if not names:
        return
    longest = max(names, key=len)
    if len(longest) > MAX_WORKSPACE_NAME:
        yield Problem.at(
            "name",
            f"Workspace name {longest!r} would be {len(longest)} characters; KAITO's StatefulSet pods need at most "
            f"{MAX_WORKSPACE_NAME} (their controller-revision-hash label adds a hash); shorten the name",
            "name-length",
        )


# ---------------------------------------------------------------- what it serves


def _source(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    if args.model and args.image:
        yield Problem.at((), "give `model` (a KAITO preset) or `image` (a custom serving image), not both", "source")
        return
    if not args.model and not args.image:
        yield Problem.at((), "give `model` (a KAITO preset) or `image` (a custom serving image)", "source")
        return
    if args.image:
        if args.runtime is not None:
            yield Problem.at("runtime", "selects how KAITO serves a preset; a custom image serves itself", "image-only")
        if args.adapters:
            yield Problem.at("adapters", "apply to presets only", "image-only")
        if args.config is not None:
            yield Problem.at(
                "config", "runtime parameters apply to presets only; configure your image directly", "image-only"
            )
        if args.model_access_secret:
            yield Problem.at("model_access_secret", "applies to presets only", "image-only")
        return
    model = args.model or ""
    if args.compute == "cpu":
        yield Problem.at(
            "compute",
            f"preset {model!r} needs GPUs; for CPU serving give `image` (a llama.cpp/GGUF image, e.g. "
            "ghcr.io/kaito-project/aikit/llama3.2:1b) instead of `model`, or use compute gpu",
            "cpu-preset",
        )
    for j, adapter in enumerate(args.adapters):
        if any(a.name == adapter.name for a in args.adapters[:j]):
            yield Problem.at(
                ("adapters", j, "name"),
                f'two adapters are named {adapter.name!r} (KAITO: "Duplicate adapter source name")',
                "adapter-name",
            )
    if chart is None:
        return
    release = chart.preset_catalog
    preset = catalog.find_preset(model, release)
    if preset is None:
        deprecated = catalog.deprecated_presets(release)
        removed = catalog.removed_presets(release)
        if model in deprecated:
            yield Problem.at(
                "model", f"{model} is deprecated and rejected by KAITO: {deprecated[model]}", "deprecated-preset"
            )
        elif model in removed:
            yield Problem.at(
                "model",
                f'KAITO {chart.version} no longer serves {model} ("Unsupported inference preset name": it has no '
                f"model-catalog entry since {removed[model].removed_in}); keep KAITO 0.8.1 or choose another preset",
                "removed-preset",
            )
        elif not is_hugging_face_id(model, chart):  # an id outside the catalog: model_warnings
            close = catalog.closest_presets(model, release)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            yield Problem.at("model", f"unknown KAITO {chart.version} preset {model!r}{hint}", "unknown-preset")
        return
    has_token = args.hf_token is not None or bool(args.model_access_secret)
    if preset.gated and preset.download_at_runtime and not has_token:
        yield Problem.at(
            "model",
            f"{model} is gated on Hugging Face: give `hf_token`, or `model_access_secret` (an existing Secret with key HF_TOKEN)",
            "gated",
        )
    elif chart.secret_for_every_download and preset.download_at_runtime and not has_token:
        yield Problem.at(
            "model",
            f"KAITO {chart.version} downloads {model} from Hugging Face at start-up and admits it only with a "
            "modelAccessSecret: give `hf_token`, or `model_access_secret` (an existing Secret with key HF_TOKEN)",
            "download-secret",
        )
    if args.model_access_secret and not preset.download_at_runtime and not chart.access_secret_on_any_preset:
        yield Problem.at(
            "model_access_secret",
            f"{model} ships its weights in an image; KAITO {chart.version} rejects a modelAccessSecret for it",
            "access-secret",
        )
    runtime = args.runtime or "vllm"
    if runtime not in preset.runtimes:
        yield Problem.at(
            "runtime",
            f"KAITO {chart.version} cannot serve {model} with {runtime}; use {' or '.join(preset.runtimes)}",
            "runtime",
        )
    if runtime == "vllm":
        if args.adapters and preset.disallow_lo_ra:
            yield Problem.at(
                "adapters",
                f"vLLM does not support LoRA adapters for {model}; set runtime transformers or drop the adapters",
                "lora",
            )
        for j, adapter in enumerate(args.adapters):
            if adapter.strength is not None:
                yield Problem.at(
                    ("adapters", j, "strength"),
                    "vLLM does not support adapter strength; remove it or set runtime transformers",
                    "strength",
                )
        yield from _max_model_len(args, preset)


def max_model_len_value(args: KaitoModelArgs) -> object | None:
    vllm = (args.config or {}).get("vllm")
    if not is_dict(vllm):
        return None
    raw = vllm.get("max-model-len")
    return None if raw is None or str(raw).strip() == "" else raw


def max_model_len(args: KaitoModelArgs) -> int | None:
    """The max-model-len KAITO's estimator reads from the model's config (None: its default)."""
    raw = max_model_len_value(args)
    return None if raw is None else _integer(raw)


def _integer(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    return int(text) if text.lstrip("-").isdigit() and len(text) < 20 else None


def _max_model_len(args: KaitoModelArgs, preset: catalog.Preset) -> Iterator[Problem]:
    """KAITO's inference-config check (vLLM): max-model-len is an integer within the context window."""
    raw = max_model_len_value(args)
    if raw is None:
        return
    where = ("config", "vllm", "max-model-len")
    value = _integer(raw)
    if value is None:
        yield Problem.at(
            where, f"must be a whole number of tokens, not {raw!r} (KAITO parses it as an integer)", "max-model-len"
        )
    elif value < 1:
        yield Problem.at(where, f"must be at least 1 token, not {value}", "max-model-len")
    elif preset.token_limit is not None and value > preset.token_limit:
        yield Problem.at(
            where, f"{value} exceeds {args.model}'s context window of {preset.token_limit} tokens", "max-model-len"
        )


# ---------------------------------------------------------------- where it runs


def _placement(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    if chart is not None and args.node_provisioning not in chart.node_provisioning_modes:
        yield Problem.at(
            "node_provisioning",
            f"KAITO {chart.version} ({chart.installed_by or 'this release'}) always creates the nodes of its "
            f"Workspaces; set it to {' or '.join(chart.node_provisioning_modes)}, with `instance_type`",
            "node-provisioning",
        )
    elif chart is not None and args.node_provisioning == "auto" and chart.default_instance_type and not args.image:
        yield from _provisioned_fit(args, chart)
    if args.instance_type and args.node_provisioning == "byo":
        yield Problem.at(
            "instance_type",
            "KAITO rejects an instance type with bring-your-own nodes; select your nodes with `label_selector`, or use "
            "`node_provisioning` auto",
            "byo-instance-type",
        )
    selector = args.label_selector
    if selector is not None and not selector.match_labels and not selector.match_expressions:
        yield Problem.at("label_selector", "matches every node; give `match_labels`", "selector")
    elif selector is not None and args.model and not selector.match_labels:
        yield Problem.at(
            "label_selector",
            'KAITO finds bring-your-own GPU nodes by matchLabels; add `match_labels` (e.g. {"nvidia.com/gpu.present": "true"})',
            "selector",
        )


def _provisioned_fit(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """A release that sizes a preset against the instance type it provisions (0.6, for every
    runtime): the size must be in its SKU table, and one node of it (resource.count, which this
    component never sets, defaults to 1) must have the GPUs and memory the preset requires."""
    if not args.instance_type:
        yield Problem.at(
            "instance_type",
            f"KAITO {chart.version} provisions a node of this size for each Workspace and would pick its default, "
            f"{chart.default_instance_type}; name the GPU size",
            "instance-type",
        )
        return
    skus = catalog.gpu_skus(chart.sku_catalog)
    sku = skus.get(args.instance_type)
    if sku is None or sku.vendor != "nvidia" or sku.unusable:
        close = [s for s in catalog.closest_skus(args.instance_type) if s in skus]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        why = sku.unusable if sku is not None and sku.unusable else None
        yield Problem.at(
            "instance_type",
            why
            or f"{args.instance_type} is not an NVIDIA GPU size of KAITO {chart.version}'s SKU table, which it sizes "
            f"presets by{hint}",
            "instance-type",
        )
        return
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    if preset is None or args.tuning is not None:
        return
    hw = sizing.NodeGpus.of_sku(sku)
    denial = sizing.admission_denial(preset, hw, 1, chart.preset_catalog)
    if denial is not None:
        fits = [
            n
            for _, found in sizing.estimate(preset, chart.preset_catalog, max_nodes=1)
            for n in (s.name for s in found)
        ]
        hint = f"; {', '.join(fits)} would do" if fits else ""
        yield Problem.at(
            "instance_type",
            f"KAITO {chart.version}'s admission webhook would deny {args.model} on one {args.instance_type} node: "
            f"{denial}{hint}",
            "admission",
        )
    several_small_gpus = sku.gpu_count > 1 and hw.gib_per_gpu < MAX_MODEL_LEN_REQUIRED_BELOW_GIB
    if (args.runtime or "vllm") == "vllm" and several_small_gpus and max_model_len_value(args) is None:
        yield Problem.at(
            ("config", "vllm", "max-model-len"),
            f"KAITO {chart.version} requires it on a multi-GPU size with less than "
            f"{MAX_MODEL_LEN_REQUIRED_BELOW_GIB} GiB per GPU ({args.instance_type}); set it (e.g. 4096)",
            "max-model-len",
        )


def match_labels(args: KaitoModelArgs) -> dict[str, str]:
    """The labels the model's Workspaces select nodes by (the default per compute)."""
    if args.label_selector is not None and args.label_selector.match_labels:
        return dict(args.label_selector.match_labels)
    if args.label_selector is not None:
        return {}
    return dict(GPU_PRESENT_LABEL if is_gpu(args) else LINUX_LABEL)


def _kaito_tolerates(taint: str) -> bool:
    """Whether KAITO's preset pods may schedule despite `taint`: they tolerate sku=gpu and
    nvidia.com/gpu NoSchedule taints (pkg/workspace/inference tolerations) and, from 0.11 with
    spotInstance, AKS's spot taint; PreferNoSchedule never blocks."""
    m = TAINT.match(taint)
    if m is None:
        return False
    key, value, effect = m["key"], m["value"], m["effect"]
    if effect == "PreferNoSchedule" or taint == SPOT_TAINT:
        return True
    return effect == "NoSchedule" and ((key == "sku" and value == "gpu") or key == "nvidia.com/gpu")


def _on_node_groups(args: KaitoModelArgs, chart: catalog.KaitoChart, groups: list[NodeGroup]) -> Iterator[Problem]:
    """Where a GPU preset lands among the cluster's GPU pools (bring-your-own nodes), and
    whether KAITO admits and places it there, by KAITO's own arithmetic."""
    if not is_gpu(args) or args.image or args.node_provisioning != "byo":
        return
    if not groups:
        yield Problem.at((), f"{args.name} needs GPU nodes but `node_groups` has none; add a GPU pool", "no-pools")
        return
    wanted = match_labels(args)
    candidates = [(i, g) for i, g in enumerate(groups) if selects(wanted, g)]
    if not candidates:
        yield Problem.at(
            "label_selector", "matches no GPU node pool (compare with the pools' labels)", "no-pool-matches"
        )
        return
    for i, g in candidates:
        for j, taint in enumerate(g.taints):
            if TAINT.match(taint) and not _kaito_tolerates(taint):
                yield Problem.at(
                    ("node_groups", i, "taints", j),
                    "KAITO's preset pods tolerate only sku=gpu:NoSchedule, nvidia.com/gpu and the AKS spot taint; "
                    f"{taint!r} would keep them off this pool",
                    "pool-taint",
                )
    if len({g.vm_size for _, g in candidates}) > 1:
        names = ", ".join(g.name for _, g in candidates)
        yield Problem.at(
            "label_selector",
            f"matches pools of different GPU sizes ({names}); KAITO requires the nodes a Workspace selects to be alike: "
            f'select one pool, e.g. {{"agentpool": "{candidates[0][1].name}"}}',
            "mixed-pools",
        )
        return
    pools = [g for _, g in candidates]
    size = pools[0].vm_size
    sku = catalog.all_gpu_skus().get(size)
    dropped = catalog.dropped_sku(size, chart.sku_catalog, chart.version)
    if dropped is not None:
        for i, _ in candidates:
            yield Problem.at(("node_groups", i, "vm_size"), dropped, "pool-sku-version")
        return
    if all(g.max_nodes == 0 for g in pools):
        yield Problem.at("model", "every GPU pool it may use has no nodes; give one at least a node", "empty-pools")
        return
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    if preset is not None and sku is not None and sku.vendor == "nvidia" and not sku.unusable:
        problem = _tuning_fit(args, preset, pools) if args.tuning else _serving_fit(args, preset, pools, chart)
        if problem is not None:
            yield problem
            return
    if all(g.min_nodes == 0 for g in pools):
        yield Problem.at(
            "model",
            "KAITO admits a bring-your-own preset only when matching GPU nodes exist; every pool it may use scales from 0 "
            "(give one a minimum of at least one node)",
            "pool-from-zero",
        )


def _tuning_fit(args: KaitoModelArgs, preset: catalog.Preset, pools: list[NodeGroup]) -> Problem | None:
    """A tuning job must fit a pool: its GPU memory on one node, or over the pool's nodes for
    presets that may span nodes."""
    need = preset.tuning_gib or preset.model_gib
    skus = catalog.all_gpu_skus()

    def fits(pool: NodeGroup) -> bool:
        sku = skus[pool.vm_size]
        nodes = max(1, math.ceil(need / sku.gpu_mem_gib))
        return sku.gpu_count >= preset.gpu_count and nodes <= pool.max_nodes and (nodes == 1 or preset.distributed)

    if any(fits(p) for p in pools):
        return None
    best = max(skus[p.vm_size].gpu_mem_gib for p in pools)
    spread = "several nodes allowed" if preset.distributed else "one node"
    return Problem.at(
        "model",
        f"{args.model} needs {need:g} GiB of GPU memory ({preset.gpu_count} GPU per node, {spread}); the largest pool "
        f"node has {best} GiB; add a larger pool",
        "tuning-fit",
    )


def _serving_fit(
    args: KaitoModelArgs, preset: catalog.Preset, pools: list[NodeGroup], chart: catalog.KaitoChart
) -> Problem | None:
    """KAITO's own arithmetic (kaito_aks/kaito/sizing.py) on the nodes the pools give: admission
    against the nodes that exist when the Workspace is created (min_nodes), then the vLLM
    estimator's nodes per instance x replicas against the pools' maximum."""
    release, size = chart.preset_catalog, pools[0].vm_size
    hw = sizing.NodeGpus.of_sku(catalog.all_gpu_skus()[size])
    exist, most = sum(p.min_nodes for p in pools), sum(p.max_nodes for p in pools)
    if exist == 0:
        return None  # pools that scale from zero: said by the caller
    denial = sizing.admission_denial(preset, hw, exist, release)
    if denial is not None:
        admit = sizing.nodes_to_admit(preset, hw, release)
        if admit > 1 and not preset.distributed:
            return Problem.at(
                "model",
                f"{args.model} needs {preset.model_gib} GiB of GPU memory on one node (KAITO {chart.version} cannot "
                f"spread it over nodes) and a {size} node counts {hw.kaito_node_memory(release) // GIB} GiB; "
                "choose a larger size",
                "fit-one-node",
            )
        scaled = (
            " (an autoscaled pool has only its minimum then)" if any(p.min_nodes != p.max_nodes for p in pools) else ""
        )
        return Problem.at(
            "model",
            f"KAITO {chart.version}'s admission webhook would deny it: {denial}; {exist} node(s) of {size} exist when "
            f"the Workspace is created{scaled}; it needs {admit} to exist, or a larger size",
            "admission",
        )
    if args.runtime == "transformers" and preset.model_gib * GIB > hw.kaito_node_memory(release):
        return Problem.at(
            "runtime",
            f"{args.model} needs more GPU memory than one {size} node, and KAITO serves multi-node only with vLLM "
            '("Multi-node distributed inference is not supported with Huggingface Transformers runtime"): '
            "use runtime vllm or a larger size",
            "transformers-multinode",
        )
    try:
        per_instance = sizing.nodes_per_instance(preset, hw, release, max_model_len(args))
    except sizing.SizingError as err:
        return Problem.at(
            "model", f"KAITO {chart.version}'s vLLM node estimator refuses it on {size}: {err}", "estimator"
        )
    if per_instance * args.replicas > most:
        return Problem.at(
            "replicas",
            f"{args.replicas} replica(s) x {per_instance} node(s) of {size} each (KAITO's vLLM estimate) need "
            f"{per_instance * args.replicas} nodes; the pools it may use have at most {most}, so the rest would stay "
            "Pending: lower replicas or give the pool more nodes",
            "replicas-fit",
        )
    return None


# ---------------------------------------------------------------- tuning


def _tuning(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    if args.tuning is None:
        return
    if args.image:
        yield Problem.at("tuning", "fine-tunes a preset; give `model`, not `image`", "tuning")
        return
    if args.replicas != 1:
        yield Problem.at("replicas", "a tuning job runs once; replicas must be 1", "tuning")
    if args.adapters or args.config is not None:
        yield Problem.at("tuning", "a model either serves (`adapters`, `config`) or tunes; split it in two", "tuning")
    if args.compute == "cpu":
        return  # reported as a preset on CPU
    source = args.tuning.input
    if len([s for s in (source.urls, source.image, source.volume_source) if s]) != 1:
        yield Problem.at(("tuning", "input"), "needs exactly one of `urls`, `image` or `volume_source`", "tuning-input")
    out = args.tuning.output
    if len([d for d in (out.image, out.volume_source) if d]) != 1:
        yield Problem.at(("tuning", "output"), "needs exactly one of `image` or `volume_source`", "tuning-output")
    elif out.image and not out.image_push_secret:
        yield Problem.at(
            ("tuning", "output", "image_push_secret"),
            "required with image: a Secret to push the adapter with",
            "tuning-output",
        )
    if chart is None:
        return
    presets = catalog.presets(chart.preset_catalog)
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    unknown_id = preset is None and is_hugging_face_id(args.model or "", chart)
    if unknown_id or (preset is not None and not preset.supports_tuning):
        tunable = ", ".join(p.name for p in presets.values() if p.supports_tuning)
        yield Problem.at("tuning", f"KAITO cannot fine-tune {args.model}; tunable presets: {tunable}", "tuning-preset")
