"""What KAITO reads from a model's config: the runtime parameters of inference_config.yaml (what
its webhook decodes, what vLLM and its node estimator read of max-model-len), a tuning job's data
and training_config.yaml, and the Kubernetes values it decodes strictly (volumes, resources)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from kaito_aks import catalog, kube_json
from kaito_aks.kaito.tuning import data_url_error, training_config_problems
from kaito_aks.model.spec import KaitoModelArgs, TuningArgs, is_hugging_face_id
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import Key, PathPart, Problem, did_you_mean, shown

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


# The vLLM each release's preset image ships (its requirements.txt), whose parser reads the
# arguments inference_api.py builds from the config.
VLLM_IN_IMAGE = {"0.8": "0.12.0", "0.11": "0.22.1", "0.12": "0.25.1"}


def runtime_config_problems(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """`config` as KAITO reads inference_config.yaml: only for vLLM (with transformers it has no
    effect); `vllm` a map of single values (each becomes `--<name> <value>`); max-model-len a
    plain number, as the node estimator scans the file's text for it (pkg/utils/config_parser.go).
    Sections KAITO does not read are warned about, not refused: they do nothing."""
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
                f"KAITO reads only {', '.join(sections)} from inference_config.yaml, so this has no effect{hint}",
                "config-section",
            )
        elif key == "kv_cache_cpu_memory_utilization" and isinstance(value, bool):
            yield Problem.at(
                ("config", Key(key)),
                f"is {_tag(value)[2:]} {value!r}, which KAITO's vLLM runtime reads as the number {int(value)}: give a "
                "number",
                "config-bool",
            )
        elif key == "kv_cache_cpu_memory_utilization" and value is not None and _tag(value) not in ("!!int", "!!float"):
            yield Problem.at(
                ("config", Key(key)),
                f"KAITO admits this, but its vLLM runtime compares it with 0 (inference_api.py), which fails for "
                f"{shown(value)} and the server never starts: give a number",
                "config-value",
            )
    vllm = config.get("vllm", {})
    if vllm is None:
        yield Problem.at(
            ("config", "vllm"),
            "KAITO admits this, but its vLLM runtime reads `vllm: null` as None and fails on it (inference_api.py), so "
            "the server never starts: give a map or leave it out",
            "config-vllm-null",
        )
        return
    if not is_dict(vllm):
        yield Problem.at(
            ("config", "vllm"),
            f"must be a map of vLLM arguments (KAITO: cannot unmarshal {_tag(vllm)} into map[string]string)",
            "config-vllm",
        )
        return
    for name, value in vllm.items():
        yield from _vllm_argument(str(name), value, chart)


def _vllm_argument(name: str, value: object, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """One `vllm` entry: KAITO passes it as `--<name> <str(value)>` to vLLM's parser."""
    where = ("config", "vllm", Key(name))
    if is_dict(value) or is_list(value):
        yield Problem.at(where, f"must be one value (KAITO: cannot unmarshal {_tag(value)} into string)", "config-vllm")
    elif value is None and name == MAX_MODEL_LEN:
        vllm = VLLM_IN_IMAGE.get(chart.preset_catalog) if chart is not None else None
        yield Problem.at(
            where,
            'KAITO admits this (its webhook reads null as empty), but its vLLM image passes "--max-model-len None" '
            f"(inference_api.py), which vLLM{f' {vllm}' if vllm else ''} cannot parse, so the server exits at start: "
            "give a number, or leave it out",
            "max-model-len-null",
        )
    elif value is None:
        yield Problem.at(
            where,
            'is null: KAITO\'s vLLM runtime passes the text "None", which vLLM reads as unset only for arguments that '
            "may be None: give a value or remove it",
            "config-null",
        )
    elif name == "max_model_len":
        yield Problem.at(
            where,
            f"write {MAX_MODEL_LEN}: KAITO's webhook and node estimator read only that spelling (vLLM takes both), so "
            "KAITO sizes the model for 2048 tokens",
            "max-model-len-spelling",
        )
    elif name == MAX_MODEL_LEN:
        yield from _max_model_len_syntax(value, chart)


def _max_model_len_syntax(raw: object, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    where = ("config", "vllm", Key(MAX_MODEL_LEN))
    if isinstance(raw, str) and _atoi(raw) is not None:
        yield Problem.at(
            where,
            f"write the number {_atoi(raw)}, not the text {raw!r}: KAITO admits the text, but its node estimator (0.8+) "
            "reads only an unquoted number and sizes the model for 2048 tokens",
            "max-model-len-text",
        )
    elif isinstance(raw, bool) or not isinstance(raw, int):
        yield Problem.at(
            where,
            f'must be a whole number of tokens, not {shown(raw)} (KAITO denies it: "max-model-len must be an integer")',
            "max-model-len",
        )
    elif raw >= 1 << 63:
        yield Problem.at(
            where,
            f'{raw} is out of range for KAITO, a 64-bit integer (it denies it: "max-model-len must be an integer")',
            "max-model-len",
        )
    elif raw < 1 and not (raw == -1 and chart is not None and chart.minor >= (0, 11)):
        yield Problem.at(
            where,
            f"is {raw}: KAITO admits it, but vLLM serves no context of fewer than 1 token"
            + (" (from KAITO 0.11 its vLLM reads -1 as the model's own window)" if raw == -1 else ""),
            "max-model-len-low",
        )


def max_model_len_value(args: KaitoModelArgs) -> object | None:
    """The max-model-len the config gives, whatever its type (None: none, or blank)."""
    vllm = (args.config or {}).get("vllm")
    raw = vllm.get(MAX_MODEL_LEN) if is_dict(vllm) else None
    return None if raw is None or str(raw).strip() == "" else raw


def max_model_len(args: KaitoModelArgs) -> int | None:
    """The max-model-len KAITO's node estimator reads from the model's config (None: its default,
    2048): a plain positive number under `vllm`, as `runtime_config_problems` requires."""
    vllm = (args.config or {}).get("vllm")
    raw = vllm.get(MAX_MODEL_LEN) if is_dict(vllm) else None
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw < 1 << 63 else None


def max_model_len_problems(args: KaitoModelArgs, preset: catalog.Preset) -> Iterator[Problem]:
    """KAITO's inference-config check (vLLM): max-model-len within the preset's context window."""
    value = max_model_len(args)
    if value is not None and preset.token_limit is not None and value > preset.token_limit:
        yield Problem.at(
            ("config", "vllm", Key(MAX_MODEL_LEN)),
            f"{value} exceeds {args.model}'s context window of {preset.token_limit} tokens",
            "max-model-len",
        )


def tuning_problems(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """A tuning job: a preset the release can fine-tune, run once, on a node KAITO sizes it for,
    with its data and its output as KAITO's webhook admits them."""
    if args.tuning is None:
        return
    if args.image:
        yield Problem.at("tuning", "fine-tunes a preset; give `model`, not `image`", "tuning")
        return
    if args.replicas != 1:
        yield Problem.at("replicas", "a tuning job runs once; replicas must be 1", "tuning-replicas")
    if args.adapters or args.config is not None:
        yield Problem.at("tuning", "a model either serves (`adapters`, `config`) or tunes; split it in two", "tuning")
    if args.compute == "cpu":
        return  # reported as a preset on CPU
    if chart is not None and chart.tuning_needs_instance_type and args.node_provisioning == "byo":
        yield Problem.at(
            "tuning",
            f"KAITO admits this, but KAITO {chart.version} sizes a tuning job from the workspace's instanceType, which "
            'bring-your-own nodes leave empty, so it never starts the job (pkg/workspace/tuning/preset_tuning.go:148, "Unsupported SKU '
            "''\"); tune with `node_provisioning` auto and an `instance_type`",
            "tuning-byo",
        )
    yield from _tuning_data(args.tuning, chart)
    if chart is not None:
        yield from _tunable(args, chart)


def _tuning_data(tuning: TuningArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """Its input (one source; URLs as 0.12 admits them), its training_config.yaml, its output."""
    source = tuning.input
    if len([s for s in (source.urls, source.image, source.volume_source) if s]) != 1:
        yield Problem.at(("tuning", "input"), "needs exactly one of `urls`, `image` or `volume_source`", "tuning-input")
    for side, volume in (("input", source.volume_source), ("output", tuning.output.volume_source)):
        if volume is not None:
            yield from _volume(("tuning", side, "volume_source"), volume)
    if chart is not None and chart.minor >= (0, 12):
        for i, url in enumerate(source.urls or []):
            error = data_url_error(url)
            if error is not None:
                yield Problem.at(
                    ("tuning", "input", "urls", i), f"KAITO {chart.version} denies it: {error}", "tuning-url"
                )
    if tuning.config is not None:
        for problem in training_config_problems(tuning.config, tuning.method):
            yield problem.under("tuning", "config")
    out = tuning.output
    if len([d for d in (out.image, out.volume_source) if d]) != 1:
        yield Problem.at(("tuning", "output"), "needs exactly one of `image` or `volume_source`", "tuning-output")
    elif out.image and not out.image_push_secret:
        yield Problem.at(
            ("tuning", "output", "image_push_secret"),
            "required with image: a Secret to push the adapter with",
            "tuning-output",
        )


def _tunable(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    unknown_id = preset is None and is_hugging_face_id(args.model or "", chart)
    if unknown_id or (preset is not None and not preset.supports_tuning):
        tunable = ", ".join(p.name for p in catalog.presets(chart.preset_catalog).values() if p.supports_tuning)
        yield Problem.at(
            "tuning",
            f"KAITO {chart.version} cannot fine-tune {args.model}; tunable presets: {tunable}",
            "tuning-preset",
        )


def decoded_problems(where: tuple[PathPart, ...], value: Any, kind: str) -> Iterator[Problem]:
    """A Kubernetes value inside a schemaless Workspace field, as KAITO's webhook decodes it."""
    for inner, message in kube_json.problems(value, kind):
        yield Problem.at((*where, *inner), message, "strict-decoding")


def _volume(where: tuple[PathPart, ...], volume: dict[str, Any]) -> Iterator[Problem]:
    found = list(decoded_problems(where, volume, "VolumeSource"))
    yield from found
    chosen = [k for k, v in volume.items() if v is not None]
    if not found and len(chosen) != 1:
        yield Problem.at(
            where,
            f"KAITO admits this, but it gives {len(chosen)} volume types ({', '.join(chosen) or 'none'}) and Kubernetes "
            "refuses KAITO's tuning Job unless it names exactly one (e.g. persistentVolumeClaim: {claimName: data})",
            "volume-source",
        )
