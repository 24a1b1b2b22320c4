"""The rules a parsed stack config must meet before anything is registered.

Each rule yields Issues (config path + the fix); `check` runs them all so a user sees every
problem at once. Rules read the catalogs; none touches Pulumi.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from stacks import catalog
from stacks.config import StackConfig, WorkspaceConfig
from stacks.errors import Issue
from stacks.names import replica_names

# Taints KAITO's preset pods tolerate (pkg/workspace/inference defaultTolerations), and AKS's
# own spot taint, which spot pools always carry.
KAITO_TOLERATED_TAINTS = ("sku=gpu:NoSchedule", "nvidia.com/gpu")
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
TAINT = re.compile(
    r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$"
)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
HF_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
# A StatefulSet's pods carry controller-revision-hash=<name>-<hash>: a label value, so the
# name KAITO gives the StatefulSet (the Workspace's) must leave room for the hash.
MAX_WORKSPACE_NAME = 52


def check(cfg: StackConfig) -> list[Issue]:
    issues = [
        *kaito_rules(cfg),
        *workspace_rules(cfg),
        *gpu_pool_rules(cfg),
    ]
    return sorted(set(issues), key=lambda i: (_path_key(i.path), i.message))


def _path_key(path: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"[\[\].]+", path) if p]


def chart_for(cfg: StackConfig) -> catalog.KaitoChart | None:
    return catalog.kaito_charts().get(cfg.kaito.version)


# ---------------------------------------------------------------- KAITO operator


def kaito_rules(cfg: StackConfig) -> Iterator[Issue]:
    chart = chart_for(cfg)
    if chart is None:
        supported = ", ".join(catalog.kaito_charts())
        yield Issue("kaito.version", f"KAITO {cfg.kaito.version} is not supported; use one of: {supported}")
        return
    yield from _gate_rules("kaito.featureGates", cfg.kaito.feature_gates, chart)
    for key in cfg.kaito.values:
        if key not in chart.value_keys:
            yield Issue(f"kaito.values.{key}", f"not a value of the KAITO {chart.version} workspace chart")
    gates_in_values = cfg.kaito.values.get("featureGates")
    if isinstance(gates_in_values, dict):
        yield from _gate_rules("kaito.values.featureGates", gates_in_values, chart)
    if not cfg.kaito.install and (cfg.kaito.feature_gates or cfg.kaito.values):
        yield Issue(
            "kaito.install",
            "featureGates and values configure the chart we install; with install: false set them "
            "where KAITO is installed",
        )


def _gate_rules(path: str, gates: dict, chart: catalog.KaitoChart) -> Iterator[Issue]:
    for gate in gates:
        if gate not in chart.feature_gates:
            known = ", ".join(chart.feature_gates)
            yield Issue(
                f"{path}.{gate}",
                f"unknown feature gate for KAITO {chart.version} (the controller would crash); known: {known}",
            )
        elif gate == "disableNodeAutoProvisioning":
            yield Issue(f"{path}.{gate}", "set by kaito.nodeProvisioning (byo | auto); remove it")
    if chart.replicas == "inferenceSet" and gates.get("enableInferenceSetController") is False:
        yield Issue(
            f"{path}.enableInferenceSetController",
            f"KAITO {chart.version} serves replicas through InferenceSets; keep this gate on",
        )


# ---------------------------------------------------------------- workspaces


def workspace_rules(cfg: StackConfig) -> Iterator[Issue]:
    chart = chart_for(cfg)
    seen: dict[tuple[str, str], str] = {}
    for i, ws in enumerate(cfg.workspaces):
        path = f"workspaces[{i}]"
        yield from _names(path, ws, chart, seen)
        yield from _source(path, ws, cfg, chart)
        yield from _placement(path, ws, cfg, chart)
        yield from _serving_options(path, ws)
        yield from _tuning(path, ws, chart)


def _dns_label(path: str, value: str, what: str) -> Iterator[Issue]:
    if len(value) > 63 or not DNS_LABEL.match(value):
        yield Issue(
            path,
            f"{what} {value!r} is not a DNS-1123 label: use lowercase letters, digits and '-', "
            "start and end with a letter or digit, at most 63 characters",
        )


def _names(path: str, ws: WorkspaceConfig, chart, seen: dict) -> Iterator[Issue]:
    bad = [*_dns_label(f"{path}.name", ws.name, "name"), *_dns_label(f"{path}.namespace", ws.namespace, "namespace")]
    yield from bad
    if chart is None or bad:
        return
    workspaces = [ws.name] if ws.tuning else replica_names(ws.name, ws.replicas, chart)
    longest = max(workspaces, key=len)
    if len(longest) > MAX_WORKSPACE_NAME:
        yield Issue(
            f"{path}.name",
            f"Workspace name {longest!r} would be {len(longest)} characters; KAITO's StatefulSet "
            f"pods need at most {MAX_WORKSPACE_NAME} (their controller-revision-hash label adds a "
            "hash); shorten the name",
        )
    # Objects named after this entry: its Service (or InferenceSet), its replica Workspaces,
    # and the Services KAITO makes per replica (<ws> and <ws>-headless).
    claimed = {ws.name}
    if not ws.tuning and chart.replicas == "workspacePerReplica":
        claimed |= set(workspaces) | {f"{w}-headless" for w in workspaces}
    for name in sorted(claimed):
        owner = seen.get((ws.namespace, name))
        if owner is not None and owner != path:
            yield Issue(
                f"{path}.name",
                f"{ws.namespace}/{name} is also created for {owner}; choose names that do not "
                "collide (replicas are named <name>-0, <name>-1, ...)",
            )
            break
    for name in claimed:
        seen.setdefault((ws.namespace, name), path)


def _source(path: str, ws: WorkspaceConfig, cfg: StackConfig, chart) -> Iterator[Issue]:
    if ws.model and ws.image:
        yield Issue(path, "set model (a KAITO preset) or image (a custom serving image), not both")
        return
    if not ws.model and not ws.image:
        yield Issue(path, "set model (a KAITO preset, see `python -m stacks models list`) or image")
        return
    if ws.image:
        if ws.runtime is not None:
            yield Issue(f"{path}.runtime", "runtime selects how KAITO serves a preset; a custom image serves itself")
        if ws.adapters:
            yield Issue(f"{path}.adapters", "adapters apply to presets only")
        if ws.config is not None:
            yield Issue(f"{path}.config", "runtime parameters apply to presets only; configure your image directly")
        if ws.model_access_secret:
            yield Issue(f"{path}.modelAccessSecret", "applies to presets only")
        return
    if chart is None:
        return
    if ws.compute == "cpu":
        yield Issue(
            f"{path}.compute",
            f"preset {ws.model!r} needs GPUs; for CPU serving set image to a llama.cpp/GGUF image "
            "(e.g. ghcr.io/kaito-project/aikit/llama3.2:1b) instead of model, or use compute: gpu",
        )
    deprecated = catalog.deprecated_presets()
    presets = catalog.presets(chart.preset_catalog)
    if ws.model in deprecated:
        yield Issue(f"{path}.model", f"{ws.model} is deprecated and rejected by KAITO: {deprecated[ws.model]}")
    elif ws.model not in presets and not (chart.accepts_hugging_face_ids and HF_MODEL_ID.match(ws.model or "")):
        close = catalog.closest_presets(ws.model or "", chart.preset_catalog)
        hint = f"; did you mean {', '.join(close)}?" if close else "; see `python -m stacks models list`"
        yield Issue(f"{path}.model", f"unknown KAITO {chart.version} preset {ws.model!r}{hint}")
    preset = presets.get(ws.model or "")
    if preset is None:
        return
    if preset.gated and not cfg.hf_token and not ws.model_access_secret:
        yield Issue(
            f"{path}.model",
            f"{ws.model} is gated on Hugging Face: run `pulumi config set --secret hfToken <token>` "
            "or set modelAccessSecret to an existing Secret with key HF_TOKEN",
        )
    if ws.model_access_secret and not preset.download_at_runtime:
        yield Issue(
            f"{path}.modelAccessSecret",
            f"{ws.model} ships its weights in an image; KAITO rejects a modelAccessSecret for it",
        )


def _placement(path: str, ws: WorkspaceConfig, cfg: StackConfig, chart) -> Iterator[Issue]:
    auto = cfg.kaito.node_provisioning == "auto"
    if ws.instance_type and not auto:
        yield Issue(
            f"{path}.instanceType",
            "only with kaito.nodeProvisioning: auto; in byo mode KAITO rejects instanceType "
            "(select your nodes with labelSelector)",
        )
    if auto and not ws.instance_type and ws.model:
        yield Issue(
            f"{path}.instanceType", "required with kaito.nodeProvisioning: auto (the GPU VM size KAITO creates)"
        )
    if auto and ws.instance_type and chart is not None and ws.model:
        yield from _instance_fits(path, ws, chart)
    selector = ws.label_selector
    if selector is not None and ws.model and not auto and not selector.match_labels:
        yield Issue(
            f"{path}.labelSelector",
            "KAITO finds bring-your-own GPU nodes by matchLabels; add matchLabels "
            '(e.g. {"nvidia.com/gpu.present": "true"})',
        )


def _instance_fits(path: str, ws: WorkspaceConfig, chart) -> Iterator[Issue]:
    preset = catalog.presets(chart.preset_catalog).get(ws.model or "")
    sku = catalog.gpu_skus(chart.sku_catalog).get(ws.instance_type or "")
    if preset is None:
        return
    if sku is None:
        known = ", ".join(catalog.gpu_skus(chart.sku_catalog))
        yield Issue(
            f"{path}.instanceType",
            f"{ws.instance_type} is not a GPU SKU KAITO {chart.version} knows; use one of: {known}",
        )
        return
    if catalog.nodes_needed(preset, sku) is None:
        yield Issue(
            f"{path}.instanceType",
            f"{ws.instance_type} ({sku.gpu_count} GPU, {sku.gpu_mem_gib} GiB) cannot hold {ws.model} "
            f"({preset.gpu_count} GPU, {preset.model_gib} GiB{'' if preset.distributed else ', one node'}); "
            f"see `python -m stacks models estimate {ws.model}`",
        )


def _serving_options(path: str, ws: WorkspaceConfig) -> Iterator[Issue]:
    if len(ws.adapters) > 10:
        yield Issue(f"{path}.adapters", "KAITO serves at most 10 adapters per workspace")
    for j, adapter in enumerate(ws.adapters):
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", adapter.name):
            yield Issue(f"{path}.adapters[{j}].name", "must be a DNS-1123 subdomain (it names a container)")


def _tuning(path: str, ws: WorkspaceConfig, chart) -> Iterator[Issue]:
    if ws.tuning is None:
        return
    if ws.image:
        yield Issue(f"{path}.tuning", "tuning fine-tunes a preset; set model, not image")
        return
    if ws.replicas != 1:
        yield Issue(f"{path}.replicas", "a tuning job runs once; replicas must be 1")
    if ws.adapters or ws.config is not None:
        yield Issue(f"{path}.tuning", "a workspace either serves (adapters, config) or tunes; split it in two")
    if ws.compute == "cpu":
        return  # reported as a preset on CPU
    sources = ws.tuning.input.sources()
    if len(sources) != 1:
        yield Issue(f"{path}.tuning.input", "needs exactly one of urls, volumeSource or image")
    if chart is None:
        return
    preset = catalog.presets(chart.preset_catalog).get(ws.model or "")
    if preset is not None and not preset.supports_tuning:
        tunable = ", ".join(p.name for p in catalog.presets(chart.preset_catalog).values() if p.supports_tuning)
        yield Issue(f"{path}.tuning", f"KAITO cannot fine-tune {ws.model}; tunable presets: {tunable}")


# ---------------------------------------------------------------- GPU node pools (AKS)


def gpu_pool_rules(cfg: StackConfig) -> Iterator[Issue]:
    return iter(())
