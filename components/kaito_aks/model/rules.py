"""Every rule about one model, checked before anything is registered: what KAITO's admission
webhook would deny (api/v1beta1/workspace_validation.go and the inference-config checks, per
release), what KAITO's estimator could not place on the GPU pools the model is given, and what
this component cannot build. The stack config, a Python program and a YAML program calling the
component provider all get these same checks."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from kaito_aks import catalog, kube_json
from kaito_aks.kaito import sizing
from kaito_aks.kaito.meta import RESERVED_SELECTOR_LABELS
from kaito_aks.kaito.tuning import data_url_error, training_config_problems
from kaito_aks.model.names import MAX_WORKSPACE_NAME, RESERVED_NAMESPACES, workspace_names
from kaito_aks.model.spec import MAX_ADAPTER_NAME_WITH_PULL_SECRETS, KaitoModelArgs, LabelSelectorArgs, is_gpu
from kaito_aks.nodes import (
    AKS_SYSTEM_POOL_LABELS,
    GPU_PRESENT_LABEL,
    LINUX_LABEL,
    SPOT_TAINT,
    TAINT,
    NodeGroup,
    aks_user_node_labels,
    may_carry,
    may_select,
    node_groups_problems,
    selects,
    spot_problem,
)
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import Key, PathPart, Problem, did_you_mean, shown
from kaito_aks.vocabulary import selector_text

AUTO_LABEL = "apps"  # the node label of a model's auto-provisioned nodes, as KAITO's docs name it
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
    problems += node_groups_problems(args.node_groups or [])  # a pool described by hand, as GpuNodePool checks it
    # Sizing means something only on sound args; a missing token changes nothing it reads.
    sizable = all(p.code in SIZING_UNAFFECTED for p in problems)
    if chart is not None and args.node_provisioning == "auto" and sizable:
        problems += list(_on_instance_type(args, chart))
    if chart is not None and args.node_groups is not None and sizable:
        problems += list(_on_node_groups(args, chart, args.node_groups))
    if args.node_groups is not None:
        problems += list(cpu_on_gpu_pools(args, args.node_groups))
    return problems


# Problems that leave KAITO's sizing of the model unchanged, so it is judged with them.
SIZING_UNAFFECTED = frozenset({"gated", "download-secret", "access-secret"})


def model_warnings(args: KaitoModelArgs) -> list[Problem]:
    """What about the model cannot be checked before KAITO sees it: not errors (the model may
    well deploy), said so nothing is accepted silently. The components log them (pulumi.log.warn)
    and `validate` prints them."""
    chart = chart_of(args)
    model = args.model or ""
    if args.image:
        return list(_may_use_gpu_nodes(args))
    if chart is None or not model or not is_hugging_face_id(model, chart):
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
        if args.resources is not None:
            yield from _decoded(("resources",), args.resources, "ResourceRequirements")
        return
    model = args.model or ""
    if args.compute == "cpu":
        yield Problem.at(
            "compute",
            f"preset {model!r} needs GPUs; for CPU serving give `image` (a llama.cpp/GGUF image, e.g. "
            "ghcr.io/kaito-project/aikit/llama3.2:1b) instead of `model`, or use compute gpu",
            "cpu-preset",
        )
    yield from _runtime_config(args, chart)
    for j, adapter in enumerate(args.adapters):
        if any(a.name == adapter.name for a in args.adapters[:j]):
            yield Problem.at(
                ("adapters", j, "name"),
                f'two adapters are named {adapter.name!r} (KAITO: "Duplicate adapter source name")',
                "adapter-name",
            )
        elif adapter.image_pull_secrets and len(adapter.name) > MAX_ADAPTER_NAME_WITH_PULL_SECRETS:
            yield Problem.at(
                ("adapters", j, "name"),
                f"{len(adapter.name)} characters; with `image_pull_secrets` KAITO names a volume "
                f"docker-config-<name>-inference-adapter, so at most {MAX_ADAPTER_NAME_WITH_PULL_SECRETS}",
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
            yield Problem.at("model", f"unknown KAITO {chart.version} preset {shown(model)}{hint}", "unknown-preset")
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


# What KAITO's vLLM runtime reads from inference_config.yaml (KaitoConfig in
# presets/workspace/inference/vllm/inference_api.py; 0.6 reads no kv_cache_cpu_memory_utilization).
# The webhook decodes only `vllm`, into map[string]string (inference_config_validation.go, yaml.v2).
CONFIG_SECTIONS = ("vllm", "kv_cache_cpu_memory_utilization", "max_probe_steps")
CONFIG_SECTIONS_0_6 = ("vllm", "max_probe_steps")
MAX_MODEL_LEN = "max-model-len"
_YAML_TAGS = ((bool, "!!bool"), (int, "!!int"), (float, "!!float"), (str, "!!str"), (list, "!!seq"), (dict, "!!map"))


def _tag(value: object) -> str:
    """The YAML tag yaml.v2 names in its decoding errors."""
    return next((tag for kind, tag in _YAML_TAGS if isinstance(value, kind)), "!!null")


def _atoi(text: str) -> int | None:
    """Go's strconv.Atoi of the trimmed text: an optional sign and decimal digits, within int64."""
    text = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def _runtime_config(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """`config` as KAITO reads inference_config.yaml: only for vLLM; `vllm` a map of single values
    (each becomes `--<name> <value>`); max-model-len a plain number, as the node estimator scans
    the file's text for it (pkg/utils/config_parser.go)."""
    config = args.config
    if config is None:
        return
    if (args.runtime or "vllm") != "vllm":
        yield Problem.at(
            "config",
            "KAITO passes inference_config.yaml to vLLM only; with runtime transformers it has no effect: remove it, "
            "or use runtime vllm",
            "config-runtime",
        )
        return
    sections = CONFIG_SECTIONS_0_6 if chart is not None and chart.minor < (0, 8) else CONFIG_SECTIONS
    for key, value in config.items():
        if key not in sections:
            close = did_you_mean(key, sections)
            hint = f"; did you mean {close[0]}?" if close else ""
            yield Problem.at(
                ("config", Key(key)),
                f"KAITO reads only {', '.join(sections)} from inference_config.yaml{hint}",
                "config",
            )
        elif key == "kv_cache_cpu_memory_utilization" and value is not None and _tag(value) not in ("!!int", "!!float"):
            yield Problem.at(
                ("config", Key(key)),
                f"must be a number, not {value!r} (KAITO's vLLM runtime compares it with 0)",
                "config",
            )
    vllm = config.get("vllm", {})
    if vllm is None:
        yield Problem.at(
            ("config", "vllm"), "is null, which KAITO's vLLM runtime cannot read; give a map or leave it out", "config"
        )
        return
    if not is_dict(vllm):
        yield Problem.at(
            ("config", "vllm"),
            f"must be a map of vLLM arguments (KAITO: cannot unmarshal {_tag(vllm)} into map[string]string)",
            "config",
        )
        return
    for name, value in vllm.items():
        where = ("config", "vllm", Key(str(name)))
        if is_dict(value) or is_list(value):
            yield Problem.at(where, f"must be one value (KAITO: cannot unmarshal {_tag(value)} into string)", "config")
        elif value is None:
            yield Problem.at(
                where, "is null: KAITO's vLLM runtime would pass the text None; give a value or remove it", "config"
            )
        elif name == "max_model_len":
            yield Problem.at(
                where,
                f"write {MAX_MODEL_LEN}: KAITO's webhook and node estimator read only that spelling (vLLM takes both)",
                "max-model-len",
            )
        elif name == MAX_MODEL_LEN:
            yield from _max_model_len_syntax(value)


def _max_model_len_syntax(raw: object) -> Iterator[Problem]:
    where = ("config", "vllm", Key(MAX_MODEL_LEN))
    if isinstance(raw, str) and _atoi(raw) is not None:
        yield Problem.at(
            where,
            f"write the number {_atoi(raw)}, not the text {raw!r}: KAITO's node estimator (0.8+) reads only an "
            "unquoted number (it would size for 2048 tokens)",
            "max-model-len",
        )
    elif isinstance(raw, bool) or not isinstance(raw, int):
        yield Problem.at(
            where, f"must be a whole number of tokens, not {raw!r} (KAITO parses it as an integer)", "max-model-len"
        )
    elif raw < 1:
        yield Problem.at(where, f"must be at least 1 token, not {raw}", "max-model-len")
    elif raw >= 1 << 63:
        yield Problem.at(where, f"{raw} is out of range for KAITO (a 64-bit integer)", "max-model-len")


def max_model_len_value(args: KaitoModelArgs) -> object | None:
    """The max-model-len the config gives, whatever its type (None: none, or blank)."""
    vllm = (args.config or {}).get("vllm")
    raw = vllm.get(MAX_MODEL_LEN) if is_dict(vllm) else None
    return None if raw is None or str(raw).strip() == "" else raw


def max_model_len(args: KaitoModelArgs) -> int | None:
    """The max-model-len KAITO's node estimator reads from the model's config (None: its default,
    2048): a plain positive number under `vllm`, as `_runtime_config` requires."""
    vllm = (args.config or {}).get("vllm")
    raw = vllm.get(MAX_MODEL_LEN) if is_dict(vllm) else None
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw < 1 << 63 else None


def _max_model_len(args: KaitoModelArgs, preset: catalog.Preset) -> Iterator[Problem]:
    """KAITO's inference-config check (vLLM): max-model-len within the preset's context window."""
    value = max_model_len(args)
    if value is not None and preset.token_limit is not None and value > preset.token_limit:
        yield Problem.at(
            ("config", "vllm", Key(MAX_MODEL_LEN)),
            f"{value} exceeds {args.model}'s context window of {preset.token_limit} tokens",
            "max-model-len",
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
    if args.instance_type and args.node_provisioning == "byo":
        yield Problem.at(
            "instance_type",
            "KAITO rejects an instance type with bring-your-own nodes; select your nodes with `label_selector`, or use "
            "`node_provisioning` auto",
            "byo-instance-type",
        )
    if args.node_groups and args.node_provisioning == "auto":
        yield Problem.at(
            "node_groups",
            "describe bring-your-own nodes, which KAITO does not use with `node_provisioning` auto (it creates nodes "
            "of `instance_type`): remove them",
            "auto-node-groups",
        )
    if args.node_selector is not None and args.model:
        yield Problem.at(
            "node_selector",
            "KAITO builds a preset's pod itself and keeps nothing of it but `label_selector`: place the preset with "
            "`label_selector`",
            "node-selector",
        )
    elif args.node_selector is not None and args.node_provisioning == "auto":
        yield Problem.at(
            "node_selector",
            "with `node_provisioning` auto KAITO creates the model's node, labelled with `label_selector`'s labels, and "
            "places the pod there by them; a nodeSelector would keep it off that node: remove it",
            "node-selector",
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
    if selector is not None:
        yield from _selector(selector, chart)


def _selector(selector: LabelSelectorArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """KAITO turns the selector into a map (metav1.LabelSelectorAsMap, on create and on every
    update): only In with one value converts; and from 0.11 it drops the labels it reserves for
    its own nodes, denying a selector left with none."""
    for i, e in enumerate(selector.match_expressions or []):
        if e.operator != "In":
            why = f'operator "{e.operator}" cannot be converted into the old label selector format'
        elif len(e.values or []) != 1:
            why = 'operator "In" without a single value cannot be converted into the old label selector format'
        else:
            continue
        yield Problem.at(
            ("label_selector", "match_expressions", i),
            f"KAITO denies it ({why}): use In with one value, or `match_labels`",
            "selector-expression",
        )
    labels = selector.match_labels or {}
    reserved = [k for k in labels if k in RESERVED_SELECTOR_LABELS]
    if chart is None or chart.minor < (0, 11) or not reserved:
        return
    alone = len(reserved) == len(labels)
    for key in reserved:
        yield Problem.at(
            ("label_selector", "match_labels", Key(key)),
            f"KAITO {chart.version} reserves this label for the nodes it manages and ignores it in a selector"
            + (
                ' (and denies a selector left empty: "matchLabels must contain at least one non-reserved label")'
                if alone
                else ""
            )
            + "; select by another label",
            "reserved-label",
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
    """The SKU-table entry for `name`, spelled exactly as Azure names the size. KAITO's webhook
    ignores case from 0.10, but its gpu-provisioner path then compares the node's
    node.kubernetes.io/instance-type label (Azure's spelling) with the Workspace's exactly
    (gpu_provisioner.go at 0.12), so any other spelling never becomes ready."""
    return catalog.gpu_skus(chart.sku_catalog).get(name)


def _on_instance_type(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """KAITO's node auto-provisioning branch of the webhook (instanceType required; a size it
    knows; GPU memory for the transformers runtime), stricter where KAITO admits what then
    fails: it admits any Standard_N*/Standard_D* name, but cannot size a preset on a size outside
    its table. Then KAITO's vLLM estimator on that size, as its controller runs it. 0.6 (the AKS
    add-on's) has no estimator: its webhook sizes every runtime on one node of the table."""
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    release = chart.preset_catalog
    # the webhook's SKU-table check decides (the transformers runtime, tuning; everything on 0.6)
    admission = args.runtime == "transformers" or args.tuning is not None or release in sizing.NO_ESTIMATOR
    mml = max_model_len(args)
    if not args.instance_type:
        fit = (
            sizing.smallest_instance_type(
                preset,
                catalog.gpu_skus(chart.sku_catalog),
                release,
                transformers=admission,
                max_model_len=mml,
            )
            if preset is not None
            else None
        )
        hint = f"; {args.model} fits on {fit[0].name} ({_nodes(fit[1])})" if fit else ""
        required = (
            f"KAITO {chart.version} would provision its Workspace CRD's default, {chart.default_instance_type}"
            if chart.default_instance_type
            else 'KAITO: "instanceType is required when node auto-provisioning is enabled"'
        )
        yield Problem.at(
            "instance_type",
            f"required with node auto-provisioning: the Azure VM size KAITO creates nodes of ({required}){hint}",
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
    if release in sizing.NO_ESTIMATOR:
        yield from _max_model_len_required(args, chart, sku)
    if preset is None:
        return
    if admission:
        need = preset.tuning_gib if args.tuning is not None and preset.tuning_gib else preset.model_gib
        demand = catalog.Preset.model_validate({**preset.model_dump(by_alias=True), "modelGiB": need})
        denial = sizing.instance_type_denial(demand, sku, release)
        if denial is not None:
            fit = sizing.smallest_instance_type(demand, catalog.gpu_skus(chart.sku_catalog), release, transformers=True)
            hint = f"; the smallest that fits: {fit[0].name}" if fit else ""
            what = (
                "a tuning job"
                if args.tuning is not None
                else "the transformers runtime"
                if args.runtime == "transformers"
                else args.model
            )
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
    every = catalog.all_gpu_skus()
    spelled = next((k for k in catalog.gpu_skus(chart.sku_catalog) if k.lower() == name.lower()), None)
    if spelled is not None:
        why = (
            f"KAITO {chart.version} matches instance types exactly (case included)"
            if chart.sku_names_case_sensitive
            else f"KAITO {chart.version}'s webhook ignores case, but it finds the node it provisioned by Azure's "
            "spelling of the size (the node's instance-type label), so this one would never become ready"
        )
        return Problem.at("instance_type", f"{why}: write {spelled}", "instance-type")
    dropped = catalog.dropped_sku(name, chart.sku_catalog, chart.version)
    if dropped is not None and name in every:
        return Problem.at("instance_type", dropped, "instance-type")
    close = catalog.closest_skus(name)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    then = "without sizing it" if chart.preset_catalog in sizing.NO_ESTIMATOR else "then its node estimator fails"
    return Problem.at(
        "instance_type",
        f"KAITO {chart.version}'s SKU table has no {name}, so it cannot size a preset on it (its webhook admits any "
        f"Standard_N*/Standard_D* name, {then}); {hint}`models list` shows the sizes it knows",
        "instance-type",
    )


def _max_model_len_required(args: KaitoModelArgs, chart: catalog.KaitoChart, sku: catalog.GpuSku) -> Iterator[Problem]:
    """KAITO 0.6's inference-config check: vLLM on a size of several GPUs with less than 20 GiB
    each (its SKU table) needs an explicit max-model-len."""
    per_gpu = sku.gpu_mem_gib // sku.gpu_count
    several_small_gpus = sku.gpu_count > 1 and per_gpu < MAX_MODEL_LEN_REQUIRED_BELOW_GIB
    if args.model and (args.runtime or "vllm") == "vllm" and several_small_gpus and max_model_len_value(args) is None:
        yield Problem.at(
            ("config", "vllm", "max-model-len"),
            f"KAITO {chart.version} requires it on a multi-GPU size with less than "
            f"{MAX_MODEL_LEN_REQUIRED_BELOW_GIB} GiB per GPU ({sku.name}); set it (e.g. 4096)",
            "max-model-len",
        )


def _nodes(n: int) -> str:
    return "1 node" if n == 1 else f"{n} nodes"


# ---------------------------------------------------------------- CPU models off GPU nodes

# What KAITO does to a custom image's pod (pkg/workspace/manifests GenerateManifestWithPodTemplate
# and the tolerations of pkg/workspace/inference, v0.8.1 and v0.12.0): it replaces the pod's
# affinity with `In` terms of label_selector's matchLabels and adds tolerations of the
# nvidia.com/gpu and sku=gpu taints, so only a nodeSelector of the pod's own keeps it off GPU nodes.
KAITO_TEMPLATE_PLACEMENT = (
    "KAITO lets a custom image's pods onto GPU nodes (it adds tolerations of their nvidia.com/gpu and sku=gpu taints "
    "and replaces the pod's affinity with `label_selector`'s labels)"
)
CPU_NODES_FIX = (
    "give `node_selector` labels only CPU nodes carry (on AKS "
    + ", ".join(f"{k}: {v}" for k, v in AKS_SYSTEM_POOL_LABELS.items())
    + ", the system pool), or a `label_selector` that picks CPU nodes by a label GPU nodes do not carry"
)


def cpu_node_labels(args: KaitoModelArgs) -> dict[str, str]:
    """Every label a node must carry to run the model's pods (bring-your-own nodes): the
    selector's matchLabels, which KAITO turns into the pod's affinity, and `node_selector`."""
    return {**match_labels(args), **(args.node_selector or {})}


def off_gpu_by_default(args: KaitoModelArgs) -> bool:
    """Whether the model is a CPU model on bring-your-own nodes that says nothing of where it
    runs: on AKS it then takes AKS_SYSTEM_POOL_LABELS as `node_selector` (the stack does so)."""
    return (
        not is_gpu(args)
        and bool(args.image)
        and args.node_provisioning == "byo"
        and args.label_selector is None
        and args.node_selector is None
    )


def cpu_on_gpu_pools(args: KaitoModelArgs, groups: list[NodeGroup]) -> Iterator[Problem]:
    """A CPU model must not be able to land on the GPU pools: it would take a node a GPU model
    needs (its pod does not request GPUs, so a GPU preset's pod then stays Pending). `groups`:
    the cluster's GPU pools (`node_groups`), or those a program knows of (the ones it adds to a
    cluster it adopts)."""
    if is_gpu(args) or not args.image or args.node_provisioning != "byo":
        return
    wanted = cpu_node_labels(args)
    onto = [g.name for g in groups if may_select(wanted, g)]
    if onto:
        at = "label_selector" if args.label_selector is not None else "node_selector" if args.node_selector else ()
        yield Problem.at(
            at,
            f"a CPU model, and its pods may land on GPU pool {', '.join(onto)} ({selector_text(wanted)} does not exclude "
            f"their nodes): {KAITO_TEMPLATE_PLACEMENT}; {CPU_NODES_FIX}",
            "cpu-on-gpu",
        )


# What KAITO (before 0.12, gpu-provisioner) puts on a NodeClaim besides the Workspace's matchLabels
# (pkg/utils/nodeclaim/nodeclaim.go: consts.LabelNodePool = consts.KaitoNodePoolName).
NODECLAIM_LABELS = {"karpenter.sh/nodepool": "kaito"}


def provisioned_node_labels(args: KaitoModelArgs) -> dict[str, str]:
    """Labels a node KAITO makes for the model carries: the Workspace's matchLabels, KAITO's own
    NodeClaim labels, and those AKS gives a node of a user pool of its instance type."""
    return {**aks_user_node_labels(args.instance_type or ""), **NODECLAIM_LABELS, **match_labels(args)}


def cpu_on_provisioned_gpu_nodes(models: Sequence[tuple[str, KaitoModelArgs]]) -> list[tuple[int, Problem]]:
    """Across models, with auto-provisioning before KAITO 0.12: KAITO places a custom image's pod
    by its own matchLabels alone, tolerating GPU taints, and only 0.12 pins the pod to its
    Workspace's nodes (ApplyProvisionerNodeSelector). So a CPU model whose labels a GPU node KAITO
    makes for another model may carry (two models of one name in two namespaces: apps=<name>; a
    label every node has) may land on that node. `models`: (what a problem calls the model, its
    args); out: (index, problem)."""
    found: list[tuple[int, Problem]] = []
    for i, (_, cpu) in enumerate(models):
        chart = chart_of(cpu)
        if chart is None or chart.minor >= (0, 12) or cpu.node_provisioning != "auto" or is_gpu(cpu) or not cpu.image:
            continue
        mine = cpu_node_labels(cpu)
        onto = [
            who
            for j, (who, other) in enumerate(models)
            if j != i
            and other.node_provisioning == "auto"
            and is_gpu(other)
            and may_carry(mine, provisioned_node_labels(other))
        ]
        if onto:
            found.append(
                (
                    i,
                    Problem.at(
                        "label_selector" if cpu.label_selector is not None else "name",
                        f"KAITO {chart.version} places this CPU model's pods by {selector_text(mine)} alone, tolerating "
                        f"GPU taints, and the GPU nodes it makes for {', '.join(onto)} may carry those labels: give it a "
                        f'`label_selector` of its own (e.g. {{"apps": "{cpu.namespace}-{cpu.name}"}}), or use KAITO '
                        "0.12, which keeps a pod on its own Workspace's nodes",
                        "cpu-on-gpu",
                    ),
                )
            )
    return found


def _may_use_gpu_nodes(args: KaitoModelArgs) -> Iterator[Problem]:
    """Where the GPU pools are not known: a CPU model whose nodes are picked by labels every node
    carries (kubernetes.io/os, the default) may land on any GPU node."""
    if is_gpu(args) or args.node_provisioning != "byo" or args.node_groups is not None:
        return
    wanted = cpu_node_labels(args)
    if all(key in GENERIC_NODE_LABELS for key in wanted):
        yield Problem.at(
            (),
            f"a CPU model on nodes labelled {selector_text(wanted)}, which GPU nodes are too: {KAITO_TEMPLATE_PLACEMENT}, so "
            f"it may take a GPU node; {CPU_NODES_FIX}",
            "cpu-may-use-gpu",
        )


# Labels every Linux node carries, whatever it is.
GENERIC_NODE_LABELS = ("kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch")


def _kaito_tolerates(taint: str, chart: catalog.KaitoChart) -> bool:
    """Whether KAITO's preset pods may schedule despite `taint`: they tolerate sku=gpu and
    nvidia.com/gpu NoSchedule taints (pkg/workspace/inference tolerations) and, from 0.11 with
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
        if args.tuning:  # where KAITO can tune on these nodes at all (else `_tuning` says why not)
            problem = None if chart.tuning_needs_instance_type else _tuning_fit(args, preset, pools)
        else:
            problem = _serving_fit(args, preset, pools, chart)
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
        # the larger count: once admitted, the estimator's nodes must be there too
        try:
            per_instance = sizing.nodes_per_instance(preset, hw, release, max_model_len(args))
        except sizing.SizingError:
            per_instance = 0
        serve = per_instance * args.replicas
        needs = (
            f"it needs {serve} nodes in all (KAITO's vLLM estimate: {args.replicas} replica(s) x {per_instance}), "
            f"{admit} of them there by then"
            if serve > admit
            else f"it needs {admit} to exist"
        )
        return Problem.at(
            "model",
            f"KAITO {chart.version}'s admission webhook would deny it: {denial}; {exist} node(s) of {size} exist when "
            f"the Workspace is created{scaled}; {needs}, or a larger size",
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
    if chart is not None and chart.tuning_needs_instance_type and args.node_provisioning == "byo":
        yield Problem.at(
            "tuning",
            f"KAITO {chart.version} sizes a tuning job from the workspace's instanceType, which bring-your-own nodes "
            'leave empty, so it never starts the job (pkg/workspace/tuning/preset_tuning.go:148, "Unsupported SKU '
            "''\"); tune with `node_provisioning` auto and an `instance_type`",
            "tuning-byo",
        )
    source = args.tuning.input
    if len([s for s in (source.urls, source.image, source.volume_source) if s]) != 1:
        yield Problem.at(("tuning", "input"), "needs exactly one of `urls`, `image` or `volume_source`", "tuning-input")
    for side, volume in (("input", source.volume_source), ("output", args.tuning.output.volume_source)):
        if volume is not None:
            yield from _volume(("tuning", side, "volume_source"), volume)
    if chart is not None and chart.minor >= (0, 12):
        for i, url in enumerate(source.urls or []):
            error = data_url_error(url)
            if error is not None:
                yield Problem.at(
                    ("tuning", "input", "urls", i), f"KAITO {chart.version} denies it: {error}", "tuning-url"
                )
    if args.tuning.config is not None:
        for problem in training_config_problems(args.tuning.config, args.tuning.method):
            yield problem.under("tuning", "config")
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
        yield Problem.at(
            "tuning",
            f"KAITO {chart.version} cannot fine-tune {args.model}; tunable presets: {tunable}",
            "tuning-preset",
        )


# ---------------------------------------------------------------- Kubernetes values KAITO decodes


def _decoded(where: tuple[PathPart, ...], value: Any, kind: str) -> Iterator[Problem]:
    """A Kubernetes value inside a schemaless Workspace field, as KAITO's webhook decodes it."""
    for inner, message in kube_json.problems(value, kind):
        yield Problem.at((*where, *inner), message, "strict-decoding")


def _volume(where: tuple[PathPart, ...], volume: dict[str, Any]) -> Iterator[Problem]:
    found = list(_decoded(where, volume, "VolumeSource"))
    yield from found
    chosen = [k for k, v in volume.items() if v is not None]
    if not found and len(chosen) != 1:
        yield Problem.at(
            where,
            f"gives {len(chosen)} volume types ({', '.join(chosen) or 'none'}); Kubernetes takes exactly one (e.g. "
            "persistentVolumeClaim: {claimName: data}), or refuses KAITO's tuning Job",
            "volume-source",
        )
