"""The rules a parsed stack config must meet before anything is registered.

Each rule yields Issues (config path + the fix); `check` runs them all so a user sees every
problem at once. Rules read the catalogs; none touches Pulumi.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from kaito_aks import catalog, kaito_sizing
from kaito_aks.gpu_node_pool import SPOT_TAINT
from kaito_aks.kaito_api import MAX_ADAPTERS
from stacks.config import StackConfig, WorkspaceConfig
from stacks.errors import Issue
from stacks.names import GPU_PRESENT_LABEL, default_label_selector, replica_names

TAINT = re.compile(
    r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$"
)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
HF_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
# Namespaces the cluster or the operator releases own (this program would try to create them).
RESERVED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "kaito-workspace", "gpu-operator")
# A StatefulSet's pods carry controller-revision-hash=<name>-<hash>: a label value, so the
# name KAITO gives the StatefulSet (the Workspace's) must leave room for the hash.
MAX_WORKSPACE_NAME = 52


def check(cfg: StackConfig) -> list[Issue]:
    issues = [
        *cluster_rules(cfg),
        *kaito_rules(cfg),
        *workspace_rules(cfg),
        *gpu_pool_rules(cfg),
    ]
    return sorted(set(issues), key=lambda i: (path_key(i.path), i.message))


def path_key(path: str) -> list[tuple[int, int | str]]:
    """Sort key: config paths in document order (workspaces[2] before workspaces[10])."""
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[\[\].:]+", path) if p]


def chart_for(cfg: StackConfig) -> catalog.KaitoChart | None:
    return catalog.kaito_charts().get(cfg.kaito.version)


# ---------------------------------------------------------------- cluster


def cluster_rules(cfg: StackConfig) -> Iterator[Issue]:
    access = cfg.cluster.kubeconfig
    if cfg.kubeconfig and access is None:
        yield Issue(
            "kaito-aks:kubeconfig", "only used with cluster.kubeconfig; AKS stacks get theirs from Azure; remove it"
        )
    if cfg.kubeconfig and access is not None and access.path:
        yield Issue(
            "cluster.kubeconfig.path",
            "the secret kaito-aks:kubeconfig already gives the kubeconfig; remove one of them",
        )


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
    if "featureGates" in cfg.kaito.values:
        gates = cfg.kaito.values["featureGates"]
        if not isinstance(gates, dict):
            yield Issue("kaito.values.featureGates", "must be a map of gate: true|false (better: kaito.featureGates)")
        else:
            yield from _gate_rules("kaito.values.featureGates", gates, chart)
    if "nodeProvisioner" in cfg.kaito.values and chart.node_provisioner is not None:
        yield Issue("kaito.values.nodeProvisioner", "set by kaito.nodeProvisioning (byo | auto); remove it")
    if cfg.kaito.gpu_discovery == "kaito" and cfg.gpu_operator_enabled:
        yield Issue(
            "kaito.gpuDiscovery",
            "this stack installs the GPU Operator, which runs the device plugin, NFD and GFD; a second set from "
            "KAITO fights it over GPUs and node labels: use external (the default) or disable gpuOperator",
        )
    if cfg.kaito.node_provisioning == "auto":
        yield Issue(
            "kaito.nodeProvisioning",
            "auto is not available yet: KAITO creates nodes only through gpu-provisioner (its own Helm chart "
            "and an Azure workload identity with Contributor on the cluster) or, from 0.12, Karpenter, and "
            "this program installs neither, so Workspaces would wait forever for nodes; use byo with "
            "gpuNodePools (the default)",
        )
    value_gates = cfg.kaito.values.get("featureGates")
    gates = {**cfg.kaito.feature_gates, **(value_gates if isinstance(value_gates, dict) else {})}
    if chart.replicas == "workspacePerReplica" and gates.get("enableInferenceSetController") is True and cfg.workspaces:
        yield Issue(
            "kaito.featureGates.enableInferenceSetController",
            f"with KAITO {chart.version} this program serves replicas as Workspaces labelled "
            "inferenceset.kaito.sh/created-by=<name>; the InferenceSet controller adopts and deletes Workspaces "
            "with that label for any InferenceSet of the same name in any namespace: leave the gate off",
        )
    if not cfg.kaito.install and (cfg.kaito.feature_gates or cfg.kaito.values):
        yield Issue(
            "kaito.install",
            "featureGates and values configure the chart we install; with install: false set them "
            "where KAITO is installed",
        )


def _gate_rules(path: str, gates: dict, chart: catalog.KaitoChart) -> Iterator[Issue]:
    for gate, value in gates.items():
        if gate in chart.known_gates and not isinstance(value, bool):
            yield Issue(f"{path}.{gate}", f"must be true or false, not {value!r} (the chart formats gates with %t)")
        if gate not in chart.known_gates:
            known = ", ".join(chart.known_gates)
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
    if ws.namespace in RESERVED_NAMESPACES:
        bad.append(
            Issue(
                f"{path}.namespace",
                f"{ws.namespace} belongs to the cluster or an operator release; use a namespace of your own",
            )
        )
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
    removed = catalog.removed_presets(chart.preset_catalog)
    if ws.model in deprecated:
        yield Issue(f"{path}.model", f"{ws.model} is deprecated and rejected by KAITO: {deprecated[ws.model]}")
    elif ws.model in removed:
        yield Issue(
            f"{path}.model",
            f'KAITO {chart.version} no longer serves {ws.model} ("Unsupported inference preset name": it has no '
            f"model-catalog entry since {removed[ws.model].removed_in}); keep KAITO 0.8.1 or choose another preset",
        )
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
    if ws.model_access_secret and not preset.download_at_runtime and not chart.access_secret_on_any_preset:
        yield Issue(
            f"{path}.modelAccessSecret",
            f"{ws.model} ships its weights in an image; KAITO {chart.version} rejects a modelAccessSecret for it",
        )
    runtime = ws.runtime or "vllm"
    if runtime not in preset.runtimes:
        yield Issue(
            f"{path}.runtime",
            f"KAITO {chart.version} cannot serve {ws.model} with {runtime}; use {' or '.join(preset.runtimes)}",
        )
    if runtime == "vllm":
        if ws.adapters and preset.disallow_lo_ra:
            yield Issue(
                f"{path}.adapters",
                f"vLLM does not support LoRA adapters for {ws.model}; set runtime: transformers or drop the adapters",
            )
        for j, adapter in enumerate(ws.adapters):
            if adapter.strength is not None:
                yield Issue(
                    f"{path}.adapters[{j}].strength",
                    "vLLM does not support adapter strength; remove it or set runtime: transformers",
                )
        yield from _max_model_len(path, ws, preset)


def _max_model_len(path: str, ws: WorkspaceConfig, preset: catalog.Preset) -> Iterator[Issue]:
    """KAITO's inference-config check (vLLM): max-model-len is an integer within the context window."""
    raw = max_model_len_value(ws)
    if raw is None:
        return
    where = f"{path}.config.vllm.max-model-len"
    value = _integer(raw)
    if value is None:
        yield Issue(where, f"must be a whole number of tokens, not {raw!r} (KAITO parses it as an integer)")
    elif value > preset.token_limit:
        yield Issue(where, f"{value} exceeds {ws.model}'s context window of {preset.token_limit} tokens")


def max_model_len_value(ws: WorkspaceConfig) -> object | None:
    vllm = (ws.config or {}).get("vllm")
    if not isinstance(vllm, dict):
        return None
    raw = vllm.get("max-model-len")
    return None if raw is None or str(raw).strip() == "" else raw


def max_model_len(ws: WorkspaceConfig) -> int | None:
    """The max-model-len KAITO's estimator reads from the workspace's config (None: its default)."""
    raw = max_model_len_value(ws)
    return None if raw is None else _integer(raw)


def _integer(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _placement(path: str, ws: WorkspaceConfig, cfg: StackConfig, chart) -> Iterator[Issue]:
    if ws.instance_type:
        yield Issue(
            f"{path}.instanceType",
            "KAITO rejects instanceType with bring-your-own nodes (the only mode available); select your nodes "
            "with labelSelector",
        )
    selector = ws.label_selector
    if selector is not None and ws.model and not selector.match_labels:
        yield Issue(
            f"{path}.labelSelector",
            "KAITO finds bring-your-own GPU nodes by matchLabels; add matchLabels "
            '(e.g. {"nvidia.com/gpu.present": "true"})',
        )


def _serving_options(path: str, ws: WorkspaceConfig) -> Iterator[Issue]:
    if len(ws.adapters) > MAX_ADAPTERS:
        yield Issue(f"{path}.adapters", f"KAITO serves at most {MAX_ADAPTERS} adapters per workspace")
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
    chart = chart_for(cfg)
    pools = cfg.gpu_node_pools
    if pools and not cfg.cluster.is_azure:
        yield Issue("gpuNodePools", "node pools are created in AKS; use cluster.aks or cluster.existing, or drop them")
        return
    if cfg.cluster.aks is not None and cfg.cluster.aks.location is None and cfg.azure_location is None:
        yield Issue("cluster.aks.location", "set it, or run `pulumi config set azure-native:location <region>`")
    yield from _gpu_operator_rules(cfg)
    seen: set[str] = set()
    for i, pool in enumerate(pools):
        path = f"gpuNodePools[{i}]"
        if pool.name in seen or pool.name == "system":
            yield Issue(
                f"{path}.name", f"{pool.name!r} is already a node pool of this cluster; pool names must be unique"
            )
        seen.add(pool.name)
        yield from _pool_sku(path, pool, chart)
        yield from _pool_size(path, pool)
        yield from _pool_taints(path, pool, cfg, chart)
        yield from _pool_driver(path, pool, cfg)
    if chart is not None:
        yield from _placement_on_pools(cfg, chart)


def _gpu_operator_rules(cfg: StackConfig) -> Iterator[Issue]:
    spec = cfg.gpu_operator
    if spec is None:
        return
    chart = catalog.gpu_operator_charts().get(spec.version)
    if chart is None:
        supported = ", ".join(catalog.gpu_operator_charts())
        yield Issue("gpuOperator.version", f"GPU Operator {spec.version} is not supported; use one of: {supported}")
        return
    for key in spec.values:
        if key not in chart.value_keys:
            yield Issue(f"gpuOperator.values.{key}", f"not a value of the gpu-operator {spec.version} chart")


def _pool_sku(path: str, pool, chart) -> Iterator[Issue]:
    sku = catalog.all_gpu_skus().get(pool.vm_size)
    if sku is None:
        close = catalog.closest_skus(pool.vm_size)
        hint = f"did you mean {', '.join(close)}?" if close else "use one of: " + ", ".join(catalog.all_gpu_skus())
        yield Issue(f"{path}.vmSize", f"{pool.vm_size} is not a GPU VM size kaito-aks knows; {hint}")
    elif sku.unusable:
        yield Issue(f"{path}.vmSize", f"{pool.vm_size}: {sku.unusable}; see `python -m stacks models estimate`")
    elif sku.vendor != "nvidia":
        yield Issue(
            f"{path}.vmSize",
            f"{pool.vm_size} has {sku.gpu_model} GPUs; the GPU Operator and KAITO presets need NVIDIA GPUs",
        )
    elif chart is not None and pool.vm_size not in catalog.gpu_skus(chart.sku_catalog):
        yield Issue(
            f"{path}.vmSize",
            f"KAITO {chart.version} no longer supports {sku.gpu_model} ({pool.vm_size}): it needs CUDA compute "
            "capability 8.0 or newer (A10, A100, H100, H200)",
        )


def _pool_size(path: str, pool) -> Iterator[Issue]:
    if pool.count is not None and pool.autoscale is not None:
        yield Issue(path, "set count or autoscale, not both")
    if pool.autoscale is not None and pool.autoscale.min > pool.autoscale.max:
        yield Issue(f"{path}.autoscale", f"min ({pool.autoscale.min}) is greater than max ({pool.autoscale.max})")


def _pool_taints(path: str, pool, cfg: StackConfig, chart) -> Iterator[Issue]:
    serves_presets = any(ws.model for ws in cfg.workspaces if _may_land_on(ws, pool))
    for j, taint in enumerate(pool.taints):
        if not TAINT.match(taint):
            yield Issue(f"{path}.taints[{j}]", f"{taint!r} is not a taint: write key=value:Effect or key:Effect")
            continue
        if taint == SPOT_TAINT and not pool.spot:
            yield Issue(
                f"{path}.taints[{j}]", "AKS sets the spot taint on spot pools; set spot: true instead of the taint"
            )
            continue
        if serves_presets and not _kaito_tolerates(taint):
            yield Issue(
                f"{path}.taints[{j}]",
                f"KAITO's preset pods tolerate only sku=gpu:NoSchedule, nvidia.com/gpu and the AKS spot taint; "
                f"{taint!r} would keep them off this pool",
            )
    if pool.spot and chart is not None and chart.spot_toleration is None:
        yield Issue(
            f"{path}.spot",
            f"KAITO {chart.version}'s pods do not tolerate the AKS spot taint; use KAITO 0.12.0 (spotInstance) or a regular pool",
        )


def _kaito_tolerates(taint: str) -> bool:
    """Whether KAITO's preset pods may schedule despite `taint`: they tolerate sku=gpu and
    nvidia.com/gpu NoSchedule taints (pkg/workspace/inference tolerations) and, from 0.12 with
    spotInstance, AKS's spot taint (checked by the spot rule); PreferNoSchedule never blocks."""
    m = TAINT.match(taint)
    if m is None:
        return False
    key, value, effect = m["key"], m["value"], m["effect"]
    if effect == "PreferNoSchedule" or taint == SPOT_TAINT:
        return True
    return effect == "NoSchedule" and ((key == "sku" and value == "gpu") or key == "nvidia.com/gpu")


def _pool_driver(path: str, pool, cfg: StackConfig) -> Iterator[Issue]:
    if pool.gpu_driver == "operator" and not cfg.gpu_operator_enabled:
        yield Issue(
            f"{path}.gpuDriver",
            "operator means AKS skips the driver and the GPU Operator installs it, but gpuOperator is disabled; "
            "enable it or use gpuDriver: aks",
        )
    drivers = {p.gpu_driver for p in cfg.gpu_node_pools}
    if cfg.gpu_operator_enabled and len(drivers) > 1 and pool is cfg.gpu_node_pools[0]:
        yield Issue(
            "gpuNodePools",
            "with the GPU Operator every GPU pool needs the same gpuDriver (the operator's driver settings are cluster-wide)",
        )


def pool_node_labels(pool) -> dict[str, str]:
    """Labels the pool's nodes will carry: the GPU-present label we set, the configured ones, AKS's."""
    labels = {**GPU_PRESENT_LABEL, **pool.labels, "agentpool": pool.name, "kubernetes.azure.com/agentpool": pool.name}
    if pool.spot:
        labels["kubernetes.azure.com/scalesetpriority"] = "spot"
    return labels


def _may_land_on(ws: WorkspaceConfig, pool) -> bool:
    """KAITO lists BYO nodes by the selector's matchLabels (matchExpressions are ignored there)."""
    if not ws.is_gpu or ws.image:
        return False
    selector = ws.label_selector or default_label_selector(ws.is_gpu)
    labels = pool_node_labels(pool)
    return all(labels.get(k) == v for k, v in (selector.match_labels or {}).items())


def _tuning_fit(path: str, ws: WorkspaceConfig, preset: catalog.Preset, pools: list, skus: dict) -> Issue | None:
    """A tuning job must fit some pool: its GPU memory on one node, or over the pool's nodes for
    presets that may span nodes."""
    need = preset.tuning_gib or preset.model_gib

    def fits(pool) -> bool:
        sku = skus[pool.vm_size]
        nodes = max(1, math.ceil(need / sku.gpu_mem_gib))
        return sku.gpu_count >= preset.gpu_count and nodes <= pool.max_nodes and (nodes == 1 or preset.distributed)

    if any(fits(p) for p in pools):
        return None
    best = max(skus[p.vm_size].gpu_mem_gib for p in pools)
    spread = "several nodes allowed" if preset.distributed else "one node"
    return Issue(
        f"{path}.model",
        f"{ws.model} needs {need:g} GiB of GPU memory ({preset.gpu_count} GPU per node, {spread}); the largest pool "
        f"node has {best} GiB; add a larger pool (see `python -m stacks models estimate {ws.model}`)",
    )


def _serving_fit(
    path: str, ws: WorkspaceConfig, preset: catalog.Preset, pools: list, skus: dict, chart
) -> Issue | None:
    """KAITO's own arithmetic (kaito_aks/kaito_sizing.py) on the nodes the pools give: admission
    against the nodes that exist when the Workspace is created (fixed count, or autoscale.min),
    then the vLLM estimator's nodes per instance x replicas against the pools' maximum."""
    release, size = chart.preset_catalog, pools[0].vm_size
    hw = kaito_sizing.NodeGpus.of_sku(skus[size])
    exist, most = sum(p.min_nodes for p in pools), sum(p.max_nodes for p in pools)
    if exist == 0:
        return None  # pools that scale from zero: explained below
    estimate = f"see `python -m stacks models estimate {ws.model} --pool {size} --version {chart.version}`"
    denial = kaito_sizing.admission_denial(preset, hw, exist, release)
    if denial is not None:
        admit = kaito_sizing.nodes_to_admit(preset, hw, release)
        if admit > 1 and not preset.distributed:
            return Issue(
                f"{path}.model",
                f"{ws.model} needs {preset.model_gib} GiB of GPU memory on one node (KAITO {chart.version} cannot "
                f"spread it over nodes) and a {size} node counts {hw.kaito_node_memory(release) // (1 << 30)} GiB; "
                "choose a larger size: " + estimate.removeprefix("see "),
            )
        scaled = " (an autoscaled pool has only autoscale.min nodes then)" if any(p.autoscale for p in pools) else ""
        return Issue(
            f"{path}.model",
            f"KAITO {chart.version}'s admission webhook would deny it: {denial}; {exist} node(s) of {size} exist when "
            f"the Workspace is created{scaled}; it needs {admit} to exist (count or autoscale.min) or a larger size; "
            + estimate,
        )
    if ws.runtime == "transformers" and preset.model_gib * (1 << 30) > hw.kaito_node_memory(release):
        return Issue(
            f"{path}.runtime",
            f"{ws.model} needs more GPU memory than one {size} node, and KAITO serves multi-node only with vLLM "
            '("Multi-node distributed inference is not supported with Huggingface Transformers runtime"): '
            "use runtime: vllm or a larger size",
        )
    try:
        per_instance = kaito_sizing.nodes_per_instance(preset, hw, release, max_model_len(ws))
    except kaito_sizing.SizingError as err:
        return Issue(
            f"{path}.model", f"KAITO {chart.version}'s vLLM node estimator refuses it on {size}: {err}; {estimate}"
        )
    if per_instance * ws.replicas > most:
        return Issue(
            f"{path}.replicas",
            f"{ws.replicas} replica(s) x {per_instance} node(s) of {size} each (KAITO's vLLM estimate) need "
            f"{per_instance * ws.replicas} nodes; the pools it may use have at most {most}, so the rest would stay "
            "Pending: lower replicas or raise the pool's count / autoscale.max",
        )
    return None


def _placement_on_pools(cfg: StackConfig, chart) -> Iterator[Issue]:
    """Where GPU workspaces will run when this stack owns the cluster (BYO nodes on AKS)."""
    if cfg.cluster.aks is None or cfg.kaito.node_provisioning != "byo" or "gpuNodePools" in cfg.incomplete:
        return  # (with malformed pools, reported already, where models land is unknown)
    presets = catalog.presets(chart.preset_catalog)
    skus = catalog.all_gpu_skus()
    for i, ws in enumerate(cfg.workspaces):
        if not ws.is_gpu or ws.image:
            continue
        path = f"workspaces[{i}]"
        if not cfg.gpu_node_pools:
            yield Issue(
                path,
                f"{ws.name} needs GPU nodes but the stack has no gpuNodePools; add one (see "
                f"`python -m stacks models estimate {ws.model}`)",
            )
            continue
        candidates = [p for p in cfg.gpu_node_pools if _may_land_on(ws, p)]
        if not candidates:
            yield Issue(
                f"{path}.labelSelector", "matches no GPU node pool of this stack (compare with the pools' labels)"
            )
            continue
        if len({p.vm_size for p in candidates}) > 1:
            names = ", ".join(p.name for p in candidates)
            yield Issue(
                f"{path}.labelSelector",
                f"matches pools of different GPU sizes ({names}); KAITO requires the nodes a Workspace selects to be "
                f'alike: select one pool, e.g. {{"matchLabels": {{"agentpool": "{candidates[0].name}"}}}}',
            )
            continue
        if all(p.max_nodes == 0 for p in candidates):
            yield Issue(f"{path}.model", "every GPU pool it may use has count: 0; give one at least a node")
            continue
        preset = presets.get(ws.model or "")
        sized = [p for p in candidates if p.vm_size in skus and p.max_nodes > 0]
        if preset is not None and sized:
            problem = (
                _tuning_fit(path, ws, preset, sized, skus)
                if ws.tuning
                else _serving_fit(path, ws, preset, sized, skus, chart)
            )
            if problem is not None:
                yield problem
                continue
        if all(p.min_nodes == 0 for p in candidates):
            yield Issue(
                f"{path}.model",
                "KAITO admits a BYO preset only when matching GPU nodes exist; every pool it may use scales from 0 "
                "(set autoscale.min >= 1 or a count)",
            )
