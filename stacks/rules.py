"""The rules a parsed stack config must meet before anything is registered.

Each rule yields Issues (config path + the fix); `check` runs them all so a user sees every
problem at once. The rules of one model, one pool and each operator are the components' own
(`model_problems`, `gpu_pool_problems`, ...), placed here at their config path; what is left is
what only a whole stack can get wrong (names that collide, models that fit no pool).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from kaito_aks import catalog
from kaito_aks.azure.gpu_node_pool import TAINT, gpu_pool_problems
from kaito_aks.kaito import sizing as kaito_sizing
from kaito_aks.model.component import ModelSpec, claimed_names, default_label_selector, max_model_len, model_problems
from kaito_aks.operators.gpu_operator import gpu_operator_problems
from kaito_aks.operators.kaito_operator import kaito_operator_problems
from kaito_aks.scheduling import SPOT_TAINT
from stacks.config import GpuNodePoolSpec, StackConfig
from stacks.errors import Issue
from stacks.plan import gpu_operator_args, gpu_pool_settings, kaito_operator_args, model_environment


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
    for path, message in kaito_operator_problems(kaito_operator_args(cfg)):
        if path == "spotNodes":  # said at each spot pool
            for i, pool in enumerate(cfg.gpu_node_pools):
                if pool.spot:
                    yield Issue(f"gpuNodePools[{i}].spot", message)
            continue
        yield Issue(f"kaito.{path}", message.replace("set by nodeProvisioning", "set by kaito.nodeProvisioning"))
    chart = chart_for(cfg)
    if chart is None:
        return
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


# ---------------------------------------------------------------- workspaces


def workspace_rules(cfg: StackConfig) -> Iterator[Issue]:
    """Each entry by KaitoModel's own rules, then the names entries would share."""
    chart = chart_for(cfg)
    env = model_environment(cfg)
    seen: dict[tuple[str, str], str] = {}
    for i, ws in enumerate(cfg.workspaces):
        path = f"workspaces[{i}]"
        problems = model_problems(ws, env)
        for p in problems:
            yield Issue(f"{path}.{p.path}" if p.path else path, p.message)
        if chart is None or any(p.path in ("name", "namespace") for p in problems):
            continue
        for name in sorted(claimed_names(ws, chart)):
            owner = seen.get((ws.namespace, name))
            if owner is not None and owner != path:
                yield Issue(
                    f"{path}.name",
                    f"{ws.namespace}/{name} is also created for {owner}; choose names that do not "
                    "collide (replicas are named <name>-0, <name>-1, ...)",
                )
                break
        for name in claimed_names(ws, chart):
            seen.setdefault((ws.namespace, name), path)


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
        for where, message in gpu_pool_problems(pool.name, gpu_pool_settings(pool)):
            yield Issue(f"{path}.{where}" if where else path, message)
        yield from _pool_sku(path, pool, chart)
        yield from _pool_taints(path, pool, cfg, chart)
        yield from _pool_driver(path, pool, cfg)
    if chart is not None:
        yield from _placement_on_pools(cfg, chart)


def _gpu_operator_rules(cfg: StackConfig) -> Iterator[Issue]:
    if cfg.gpu_operator is None and not cfg.gpu_operator_enabled:
        return
    args = gpu_operator_args(cfg)
    pools = args.pools if cfg.gpu_operator_enabled else ()
    for where, message in gpu_operator_problems(args.version, args.values, pools):
        yield Issue("gpuNodePools" if where == "pools" else f"gpuOperator.{where}", message)


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


def _pool_taints(path: str, pool, cfg: StackConfig, chart) -> Iterator[Issue]:
    serves_presets = any(ws.model for ws in cfg.workspaces if _may_land_on(ws, pool))
    for j, taint in enumerate(pool.taints):
        if not TAINT.match(taint) or (taint == SPOT_TAINT and not pool.spot):
            continue  # the pool's own rules said so
        if serves_presets and not _kaito_tolerates(taint):
            yield Issue(
                f"{path}.taints[{j}]",
                f"KAITO's preset pods tolerate only sku=gpu:NoSchedule, nvidia.com/gpu and the AKS spot taint; "
                f"{taint!r} would keep them off this pool",
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


def _may_land_on(ws: ModelSpec, pool: GpuNodePoolSpec) -> bool:
    """KAITO lists BYO nodes by the selector's matchLabels (matchExpressions are ignored there)."""
    if not ws.is_gpu or ws.image:
        return False
    selector = ws.label_selector or default_label_selector(ws.is_gpu)
    labels = gpu_pool_settings(pool).node_labels(pool.name)
    return all(labels.get(k) == v for k, v in (selector.match_labels or {}).items())


def _tuning_fit(path: str, ws: ModelSpec, preset: catalog.Preset, pools: list, skus: dict) -> Issue | None:
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


def _serving_fit(path: str, ws: ModelSpec, preset: catalog.Preset, pools: list, skus: dict, chart) -> Issue | None:
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
