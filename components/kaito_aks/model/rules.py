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
from kaito_aks.nodes import (
    GPU_PRESENT_LABEL,
    LINUX_LABEL,
    SPOT_TAINT,
    TAINT,
    NodeGroup,
    dropped_by,
    node_groups_problems,
    selects,
    spot_problem,
)
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Problem

AUTO_LABEL = "apps"  # the node label of a model's auto-provisioned nodes, as KAITO's docs name it
HF_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
GIB = 1 << 30


def chart_of(args: KaitoModelArgs) -> catalog.KaitoChart | None:
    return catalog.kaito_charts().get(args.kaito_version)


def model_problems(args: KaitoModelArgs) -> list[Problem]:
    """Every rule the model breaks (its args already have the right types)."""
    chart = chart_of(args)
    problems: list[Problem] = []
    if chart is None:
        supported = ", ".join(catalog.kaito_charts())
        problems.append(
            Problem.at(
                "kaito_version", f"KAITO {args.kaito_version} is not supported; use one of: {supported}", "version"
            )
        )
    problems += [*_names(args, chart), *_source(args, chart), *_placement(args), *_tuning(args, chart)]
    problems += node_groups_problems(args.node_groups or [])  # a pool described by hand, as GpuNodePool checks it
    if chart is not None and args.node_provisioning == "auto" and not problems:
        problems += list(_on_instance_type(args, chart))
    if chart is not None and args.node_groups is not None and not problems:
        problems += list(_on_node_groups(args, chart, args.node_groups))
    return problems


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
    deprecated = catalog.deprecated_presets()
    presets = catalog.presets(chart.preset_catalog)
    removed = catalog.removed_presets(chart.preset_catalog)
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
    elif model not in presets and not (chart.accepts_hugging_face_ids and HF_MODEL_ID.match(model)):
        close = catalog.closest_presets(model, chart.preset_catalog)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        yield Problem.at("model", f"unknown KAITO {chart.version} preset {model!r}{hint}", "unknown-preset")
    preset = presets.get(model)
    if preset is None:
        return
    if preset.gated and args.hf_token is None and not args.model_access_secret:
        yield Problem.at(
            "model",
            f"{model} is gated on Hugging Face: give `hf_token`, or `model_access_secret` (an existing Secret with key HF_TOKEN)",
            "gated",
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
    elif value > preset.token_limit:
        yield Problem.at(
            where, f"{value} exceeds {args.model}'s context window of {preset.token_limit} tokens", "max-model-len"
        )


# ---------------------------------------------------------------- where it runs


def _placement(args: KaitoModelArgs) -> Iterator[Problem]:
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


def match_labels(args: KaitoModelArgs) -> dict[str, str]:
    """The labels the model's Workspaces select nodes by. Default, bring-your-own: GPU-present
    (gpu) or Linux (cpu); auto: apps=<name>, as KAITO's docs write it: KAITO puts the labels on
    the nodes it creates, and a label no other node has keeps it from counting them as its own."""
    if args.label_selector is not None and args.label_selector.match_labels:
        return dict(args.label_selector.match_labels)
    if args.label_selector is not None:
        return {}
    if args.node_provisioning == "auto":
        return {AUTO_LABEL: args.name or ""}
    return dict(GPU_PRESENT_LABEL if is_gpu(args) else LINUX_LABEL)


# ---------------------------------------------------------------- nodes KAITO creates (auto)


def find_instance_type(name: str, chart: catalog.KaitoChart) -> catalog.GpuSku | None:
    """The SKU-table entry KAITO finds for `name`: an exact match before 0.10, case-insensitive since."""
    skus = catalog.gpu_skus(chart.sku_catalog)
    if chart.sku_names_case_sensitive:
        return skus.get(name)
    return next((sku for key, sku in skus.items() if key.lower() == name.lower()), None)


def _on_instance_type(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """KAITO's node auto-provisioning branch of the webhook (instanceType required; a size it
    knows; GPU memory for the transformers runtime), stricter where KAITO admits what then
    fails: it admits any Standard_N*/Standard_D* name, but cannot size a preset on a size outside
    its table. Then KAITO's vLLM estimator on that size, as its controller runs it."""
    preset = catalog.presets(chart.preset_catalog).get(args.model or "")
    transformers = args.runtime == "transformers" or args.tuning is not None
    mml = max_model_len(args)
    if not args.instance_type:
        fit = (
            sizing.smallest_instance_type(
                preset,
                catalog.gpu_skus(chart.sku_catalog),
                chart.preset_catalog,
                transformers=transformers,
                max_model_len=mml,
            )
            if preset is not None
            else None
        )
        hint = f"; {args.model} fits on {fit[0].name} ({_nodes(fit[1])})" if fit else ""
        yield Problem.at(
            "instance_type",
            'required with node auto-provisioning: the Azure VM size KAITO creates nodes of (KAITO: "instanceType is '
            f'required when node auto-provisioning is enabled"){hint}',
            "instance-type",
        )
        return
    name = args.instance_type
    prefix = ("Standard_N", "Standard_D")
    has_prefix = (
        name.startswith(prefix)
        if chart.sku_names_case_sensitive
        else name.lower().startswith(tuple(p.lower() for p in prefix))
    )
    if not args.model:
        if not has_prefix:
            yield Problem.at(
                "instance_type",
                f'KAITO {chart.version} creates nodes only of Azure N-series (GPU) or D-series sizes ("Unsupported '
                f'instance type {name}"); use e.g. Standard_D8s_v5 for a CPU image',
                "instance-type",
            )
        return
    sku = find_instance_type(name, chart)
    if sku is None:
        yield _unknown_instance_type(name, chart)
        return
    if sku.vendor != "nvidia":
        yield Problem.at(
            "instance_type",
            f"{name} has {sku.gpu_model} GPUs; KAITO's preset images run on NVIDIA GPUs only (the AKS add-on docs list "
            "AMD sizes as unsupported)",
            "instance-type-gpu",
        )
        return
    if sku.unusable:
        yield Problem.at("instance_type", f"{name}: {sku.unusable}", "instance-type-gpu")
        return
    if preset is None:
        return
    release = chart.preset_catalog
    if transformers:
        need = preset.tuning_gib if args.tuning is not None and preset.tuning_gib else preset.model_gib
        demand = catalog.Preset.model_validate({**preset.model_dump(by_alias=True), "modelGiB": need})
        denial = sizing.transformers_denial(demand, sku, release)
        if denial is not None:
            fit = sizing.smallest_instance_type(demand, catalog.gpu_skus(chart.sku_catalog), release, transformers=True)
            hint = f"; the smallest that fits: {fit[0].name}" if fit else ""
            what = "a tuning job" if args.tuning is not None else "the transformers runtime"
            yield Problem.at(
                "instance_type",
                f"KAITO {chart.version}'s webhook would deny {what} on one node: {denial}{hint}",
                "instance-type-fit",
            )
        return
    try:
        sizing.nodes_on_instance_type(preset, sku, release, mml)
    except sizing.SizingError as err:
        fit = sizing.smallest_instance_type(
            preset, catalog.gpu_skus(chart.sku_catalog), release, transformers=False, max_model_len=mml
        )
        hint = f"; the smallest that fits: {fit[0].name} ({_nodes(fit[1])})" if fit else ""
        yield Problem.at(
            "instance_type",
            f"KAITO {chart.version}'s vLLM node estimator refuses {args.model} on {name}: {err}{hint}",
            "instance-type-fit",
        )


def _unknown_instance_type(name: str, chart: catalog.KaitoChart) -> Problem:
    spelled = next((k for k in catalog.gpu_skus(chart.sku_catalog) if k.lower() == name.lower()), None)
    if spelled is not None:
        return Problem.at(
            "instance_type",
            f"KAITO {chart.version} matches instance types exactly (case included): write {spelled}",
            "instance-type",
        )
    dropped = dropped_by(chart, name)
    if dropped is not None:
        return Problem.at("instance_type", dropped, "instance-type")
    close = catalog.closest_skus(name)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return Problem.at(
        "instance_type",
        f"KAITO {chart.version}'s SKU table has no {name}, so it cannot size a preset on it (its webhook admits any "
        f"Standard_N*/Standard_D* name, then its node estimator fails); {hint}`models list` shows the sizes it knows",
        "instance-type",
    )


def _nodes(n: int) -> str:
    return "1 node" if n == 1 else f"{n} nodes"


def _kaito_tolerates(taint: str, chart: catalog.KaitoChart) -> bool:
    """Whether KAITO's preset pods may schedule despite `taint`: they tolerate sku=gpu and
    nvidia.com/gpu NoSchedule taints (pkg/workspace/inference tolerations) and, from 0.12 with
    spotInstance, AKS's spot taint; PreferNoSchedule never blocks."""
    m = TAINT.match(taint)
    if m is None:
        return False
    key, value, effect = m["key"], m["value"], m["effect"]
    if taint == SPOT_TAINT:
        return spot_problem(chart) is None
    if effect == "PreferNoSchedule":
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
        spot = spot_problem(chart) if g.spot else None
        if spot is not None:
            yield Problem.at(("node_groups", i, "spot"), spot, "spot")
        for j, taint in enumerate(g.taints):
            if TAINT.match(taint) and taint != SPOT_TAINT and not _kaito_tolerates(taint, chart):
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
    dropped = dropped_by(chart, size)
    if dropped is not None:
        for i, _ in candidates:
            yield Problem.at(("node_groups", i, "vm_size"), dropped, "pool-sku-version")
        return
    if all(g.max_nodes == 0 for g in pools):
        yield Problem.at("model", "every GPU pool it may use has no nodes; give one at least a node", "empty-pools")
        return
    preset = catalog.presets(chart.preset_catalog).get(args.model or "")
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
    preset = presets.get(args.model or "")
    if preset is not None and not preset.supports_tuning:
        tunable = ", ".join(p.name for p in presets.values() if p.supports_tuning)
        yield Problem.at("tuning", f"KAITO cannot fine-tune {args.model}; tunable presets: {tunable}", "tuning-preset")
