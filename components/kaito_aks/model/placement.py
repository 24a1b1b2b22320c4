"""Where a model runs, and whether it fits there: its node selector as KAITO reads it, the nodes
KAITO creates for it (auto-provisioning), the GPU pools it is given (bring-your-own: KAITO's
admission and estimator on them, the pools' taints), and CPU models kept off GPU nodes."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from kaito_aks import catalog
from kaito_aks.kaito import sizing
from kaito_aks.kaito.meta import RESERVED_SELECTOR_LABELS
from kaito_aks.model.config import max_model_len, max_model_len_value
from kaito_aks.model.spec import KaitoModelArgs, LabelSelectorArgs, chart_of, is_gpu, serving_replicas
from kaito_aks.nodes import (
    AKS_SYSTEM_POOL_LABELS,
    GPU_PRESENT_LABEL,
    LINUX_LABEL,
    SPOT_TAINT,
    TAINT,
    CpuNodes,
    NodeGroup,
    agentpool_selector,
    aks_user_node_labels,
    may_carry,
    may_select,
    no_driver,
    selects,
    spot_problem,
)
from kaito_aks.problems import Key, Problem
from kaito_aks.vocabulary import selector_text

AUTO_LABEL = "apps"  # the node label of a model's auto-provisioned nodes, as KAITO's docs name it


GIB = 1 << 30


# KAITO 0.6's inference-config check: vLLM on several GPUs of less memory needs max-model-len.
MAX_MODEL_LEN_REQUIRED_BELOW_GIB = 20


def placement_problems(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    if chart is not None and args.node_provisioning not in chart.node_provisioning_modes:
        yield Problem.at(
            "node_provisioning",
            f"KAITO {chart.version} ({chart.installed_by or 'this release'}) always creates the nodes of its "
            f"Workspaces; set it to {' or '.join(chart.node_provisioning_modes)}, with `instance_type`",
            "node-provisioning",
        )
    yield from _node_class(args, chart)
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
    yield from _node_selector(args)
    selector = args.label_selector
    broad = selector is not None and not selector.match_labels
    if broad and args.model and not args.image and args.node_provisioning == "byo":
        yield Problem.at(
            "label_selector",
            "KAITO lists bring-your-own nodes by matchLabels, so with none it counts every node, the CPU nodes among "
            'them, which carry no GPU labels: it denies the preset ("Failed to get GPU config from nvidia labels"); add '
            '`match_labels` (e.g. {"nvidia.com/gpu.present": "true"})',
            "selector",
        )
    elif broad and selector is not None and not selector.match_expressions:
        yield Problem.at(
            "label_selector",
            "matches every node (KAITO admits it): give `match_labels` to pick nodes",
            "selector-broad",
        )
    if selector is not None:
        yield from _selector(selector, chart)


def _node_selector(args: KaitoModelArgs) -> Iterator[Problem]:
    """A pod nodeSelector: nothing for a preset (KAITO builds its pod); with auto-provisioning it
    must be labels the node KAITO makes can carry."""
    if args.node_selector is None:
        return
    if args.model:
        yield Problem.at(
            "node_selector",
            "KAITO builds a preset's pod itself and keeps nothing of it but `label_selector`, so it has no effect: "
            "place the preset with `label_selector`",
            "node-selector",
        )
    elif args.node_provisioning == "auto" and not may_carry(args.node_selector, provisioned_node_labels(args)):
        yield Problem.at(
            "node_selector",
            f"KAITO admits this, but with `node_provisioning` auto it creates the model's node with only "
            f"`label_selector`'s labels and AKS's, which cannot match {selector_text(args.node_selector)}, so the pod "
            "stays Pending: remove it",
            "node-selector-auto",
        )
    elif args.node_provisioning == "auto":
        yield Problem.at(
            "node_selector",
            "with `node_provisioning` auto KAITO creates the model's node with `label_selector`'s labels; this "
            "nodeSelector may keep the pod off it: leave it out unless the node surely carries it",
            "node-selector",
        )


def _node_class(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """Karpenter mode exists from 0.11 (the chart's nodeProvisioner karpenter); a node class is
    KAITO's choice of image for the NodePool it makes, so it means something only there."""
    karpenter = args.node_provisioner == "karpenter"
    if karpenter and chart is not None and chart.node_provisioner is None:
        yield Problem.at(
            "node_provisioner",
            f"KAITO {chart.version} has no Karpenter mode (it came in 0.11); use gpu-provisioner",
            "karpenter",
        )
    if args.node_class is None:
        return
    if chart is not None and args.node_class not in chart.node_classes:
        why = f"KAITO {chart.version} has no node classes (they came with its Karpenter mode, in 0.11): remove it"
    elif args.node_provisioning == "byo":
        why = "with bring-your-own nodes KAITO makes no node, so a node class does nothing: remove it"
    elif not karpenter:
        why = (
            "gpu-provisioner makes AKS agent pools of AKS's own node image; KAITO's node classes are for Karpenter "
            "(`node_provisioner` karpenter): remove it, or use Karpenter"
        )
    else:
        return
    yield Problem.at("node_class", why, "node-class")


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
            f"KAITO {chart.version} reserves this label for the nodes it manages and "
            + (
                'denies a selector left without another ("matchLabels must contain at least one non-reserved label")'
                if alone
                else "drops it from a selector, so it has no effect"
            )
            + "; select by another label",
            "reserved-label" if alone else "reserved-label-ignored",
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


def node_lookup_labels(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> dict[str, str]:
    """The labels KAITO lists a model's bring-your-own nodes by: its matchLabels, less those it
    reserves for its own nodes from 0.11 (SanitizedMatchLabels, labels.go 0.11.0:157,
    0.12.0:218), which it drops."""
    labels = match_labels(args)
    if chart is not None and chart.minor >= (0, 11):
        return {k: v for k, v in labels.items() if k not in RESERVED_SELECTOR_LABELS}
    return labels


def find_instance_type(name: str, chart: catalog.KaitoChart) -> catalog.GpuSku | None:
    """The SKU-table entry for `name`, spelled exactly as Azure names the size. KAITO's webhook
    ignores case from 0.10, but its gpu-provisioner path then compares the node's
    node.kubernetes.io/instance-type label (Azure's spelling) with the Workspace's exactly
    (gpu_provisioner.go at 0.12), so any other spelling never becomes ready."""
    return catalog.gpu_skus(chart.sku_catalog).get(name)


def instance_type_problems(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
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
        if chart.default_instance_type:
            yield Problem.at(
                "instance_type",
                "required with node auto-provisioning: the Azure VM size KAITO creates nodes of (KAITO "
                f"{chart.version} would provision its Workspace CRD's default, {chart.default_instance_type}){hint}",
                "instance-type-default",
            )
        else:
            yield Problem.at(
                "instance_type",
                "required with node auto-provisioning: the Azure VM size KAITO creates nodes of (KAITO denies it "
                f'without: "instanceType is required when node auto-provisioning is enabled"){hint}',
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
    sku = find_instance_type(name, chart)
    if not has_prefix and sku is None:
        yield Problem.at(
            "instance_type",
            f"KAITO {chart.version} denies it: it creates nodes only of its GPU table or Azure N-series (GPU) and "
            f'D-series sizes ("Unsupported instance type {name}")'
            + ("; use e.g. Standard_D8s_v5 for a CPU image" if not args.model else ""),
            "instance-type",
        )
        return
    if not args.model:
        return
    if sku is None:
        yield _unknown_instance_type(name, chart)
        return
    if sku.vendor != "nvidia":
        yield Problem.at(
            "instance_type",
            f"KAITO admits this, but {name} has {sku.gpu_model} GPUs and KAITO's preset images run on NVIDIA GPUs only "
            "(the AKS add-on docs list AMD sizes as unsupported)",
            "instance-type-gpu",
        )
        return
    if sku.unusable:
        yield Problem.at("instance_type", f"KAITO admits this, but {name}: {sku.unusable}", "instance-type-gpu")
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
            if args.tuning is not None:
                yield Problem.at(
                    "instance_type",
                    f"KAITO {chart.version} admits a tuning job on any size (its webhook checks no GPU memory for "
                    f"tuning), but {args.model}'s tuning asks {need:g} GiB of GPU memory and {denial}; the job may "
                    f"run out of memory{hint}",
                    "instance-type-fit-tuning",
                )
            else:
                what = "the transformers runtime" if args.runtime == "transformers" else args.model
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
            f"KAITO admits this, but its controller's vLLM node estimator fails for {args.model} on {name}, so no "
            f"node is ever created: {err}{hint}",
            "instance-type-estimator",
        )


def _unknown_instance_type(name: str, chart: catalog.KaitoChart) -> Problem:
    every = catalog.all_gpu_skus()
    spelled = next((k for k in catalog.gpu_skus(chart.sku_catalog) if k.lower() == name.lower()), None)
    if spelled is not None:
        why = (
            f"KAITO admits this (its webhook takes any Standard_N* name), but KAITO {chart.version} looks sizes up "
            "exactly (case included), so it cannot size a preset on this one"
            if chart.sku_names_case_sensitive
            else f"KAITO admits this ({chart.version}'s webhook ignores case), but it finds the node it provisioned by "
            "Azure's spelling of the size (the node's instance-type label), so this one would never become ready"
        )
        return Problem.at("instance_type", f"{why}: write {spelled}", "instance-type-unknown")
    dropped = catalog.dropped_sku(name, chart.sku_catalog, chart.version)
    if dropped is not None and name in every:
        return Problem.at("instance_type", f"KAITO admits this, but {dropped}", "instance-type-unknown")
    close = catalog.closest_skus(name)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    then = "without sizing it" if chart.preset_catalog in sizing.NO_ESTIMATOR else "then its node estimator fails"
    return Problem.at(
        "instance_type",
        f"KAITO admits this, but its SKU table ({chart.version}) has no {name}, so it cannot size a preset on it (its "
        f"webhook admits any Standard_N*/Standard_D* name, {then}); {hint}`models list` shows the sizes it knows",
        "instance-type-unknown",
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
            f"KAITO admits this, but it is a CPU model whose pods may land on GPU pool {', '.join(onto)} "
            f"({selector_text(wanted)} does not exclude their nodes) and take a node a GPU preset needs: "
            f"{KAITO_TEMPLATE_PLACEMENT}; {CPU_NODES_FIX}",
            "cpu-on-gpu",
        )


def cpu_on_no_pool(
    args: KaitoModelArgs, cpu_pools: Sequence[CpuNodes], groups: Sequence[NodeGroup]
) -> Iterator[Problem]:
    """Where every pool of the cluster is known (`cpu_pools`: its system pool and CPU pools;
    `groups`: its GPU pools): a CPU model whose labels no node of them may carry, or only nodes
    whose taints its pod does not tolerate (KAITO gives it only its GPU and spot tolerations),
    cannot run: its pod stays Pending. A selector that reaches a GPU pool is `cpu_on_gpu_pools`'s
    to judge."""
    if is_gpu(args) or not args.image or args.node_provisioning != "byo":
        return
    wanted = cpu_node_labels(args)
    labelled = [p for p in cpu_pools if may_carry(wanted, p.node_labels)]
    chart = chart_of(args)
    if any(_tolerates_pool(p, chart) for p in labelled) or any(may_select(wanted, g) for g in groups):
        return
    at = "label_selector" if args.label_selector is not None else "node_selector" if args.node_selector else ()
    pools = "; ".join(f"{p.name}: {selector_text(agentpool_selector(p.name))}" for p in cpu_pools)
    if labelled:
        taints = ", ".join(f"{p.name} ({', '.join(p.taints)})" for p in labelled)
        why = f"the pools that carry {selector_text(wanted)} are tainted, and its pod tolerates no taint of theirs: {taints}"
    else:
        why = f"no node of the cluster carries {selector_text(wanted)}"
    yield Problem.at(
        at,
        f"KAITO admits this, but {why}, so the model's pod stays Pending: select one of the cluster's CPU pools "
        f"({pools}), or give an untainted CPU pool those labels",
        "cpu-no-pool",
    )


def _tolerates_pool(pool: CpuNodes, chart: catalog.KaitoChart | None) -> bool:
    """Whether a custom image's pod (KAITO's tolerations only) may run on the pool's nodes."""
    return chart is None or all(_kaito_tolerates(t, chart) for t in pool.taints)


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
                        f"KAITO admits this, but KAITO {chart.version} places this CPU model's pods by {selector_text(mine)} "
                        "alone, tolerating "
                        f"GPU taints, and the GPU nodes it makes for {', '.join(onto)} may carry those labels: give it a "
                        f'`label_selector` of its own (e.g. {{"apps": "{cpu.namespace}-{cpu.name}"}}), or use KAITO '
                        "0.12, which keeps a pod on its own Workspace's nodes",
                        "cpu-on-gpu",
                    ),
                )
            )
    return found


def may_use_gpu_nodes(args: KaitoModelArgs) -> Iterator[Problem]:
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


def pool_problems(args: KaitoModelArgs, chart: catalog.KaitoChart, groups: list[NodeGroup]) -> Iterator[Problem]:
    """Where a GPU preset lands among the cluster's GPU pools (bring-your-own nodes), and
    whether KAITO admits and places it there, by KAITO's own arithmetic."""
    if not is_gpu(args) or args.image or args.node_provisioning != "byo":
        return
    if not groups:
        yield Problem.at((), f"{args.name} needs GPU nodes but `node_groups` has none; add a GPU pool", "no-pools")
        return
    wanted = node_lookup_labels(args, chart)
    candidates = [(i, g) for i, g in enumerate(groups) if selects(wanted, g)]
    if not candidates:
        yield Problem.at(
            "label_selector", "matches no GPU node pool (compare with the pools' labels)", "no-pool-matches"
        )
        return
    yield from _tolerated(candidates, chart)
    yield from (p for i, g in candidates if (p := no_driver(g, i)) is not None)
    skus = catalog.all_gpu_skus()
    if len({_gpus(skus.get(g.vm_size)) for _, g in candidates}) > 1:
        names = ", ".join(g.name for _, g in candidates)
        yield Problem.at(
            "label_selector",
            f'matches pools of different GPUs ({names}); KAITO denies a Workspace whose nodes differ ("Non-uniform GPU '
            f'product/count/memory"): select one pool, e.g. {{"agentpool": "{candidates[0][1].name}"}}',
            "mixed-pools",
        )
        return
    if len({g.vm_size for _, g in candidates}) > 1:
        names = ", ".join(g.name for _, g in candidates)
        yield Problem.at(
            "label_selector",
            f"matches pools of different sizes ({names}) with the same GPUs: KAITO admits them (it compares the GPUs "
            "only), but their CPUs and memory differ",
            "mixed-pool-sizes",
        )
    dropped = catalog.dropped_sku(candidates[0][1].vm_size, chart.sku_catalog, chart.version)
    if dropped is not None:
        for i, _ in candidates:
            yield Problem.at(("node_groups", i, "vm_size"), dropped, "pool-sku-version")
    yield from _admitted_on([g for _, g in candidates], args, chart)


def _gpus(sku: catalog.GpuSku | None) -> tuple[str, int, int] | None:
    """What KAITO's webhook compares of two nodes: GPU product, count and memory per GPU."""
    if sku is None:
        return None
    hw = sizing.NodeGpus.of_sku(sku)
    return (hw.product, hw.count, hw.gib_per_gpu)


def unsized(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """A GPU preset on bring-your-own nodes without `node_groups`: KAITO sizes it on the nodes it
    finds, and nothing here can check that before deploy."""
    if not is_gpu(args) or args.image or args.node_provisioning != "byo" or args.node_groups is not None:
        return
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    example = ""
    if preset is not None:
        transformers = args.runtime == "transformers" or chart.preset_catalog in sizing.NO_ESTIMATOR
        fit = sizing.smallest_instance_type(
            preset, catalog.gpu_skus(chart.sku_catalog), chart.preset_catalog, transformers=transformers
        )
        example = f" (it fits e.g. {_nodes(fit[1])} of {fit[0].name})" if fit is not None else ""
    yield Problem.at(
        "node_groups",
        f"not given: KAITO sizes {args.model} against the GPU nodes it finds{example}, so its admission (GPU memory of "
        "the nodes that exist), its node estimate and the pools' budget are not checked before deploy; give "
        "`node_groups` (the GPU pools it may use) to check them at preview",
        "unsized",
    )


def _tolerated(candidates: list[tuple[int, NodeGroup]], chart: catalog.KaitoChart) -> Iterator[Problem]:
    """The pools' spot nodes and taints, as KAITO's preset pods tolerate them."""
    for i, g in candidates:
        spot = spot_problem(chart) if g.spot else None
        if spot is not None:
            yield Problem.at(("node_groups", i, "spot"), f"KAITO admits this, but {spot}", "spot")
        for j, taint in enumerate(g.taints):
            if TAINT.match(taint) and taint != SPOT_TAINT and not _kaito_tolerates(taint, chart):
                yield Problem.at(
                    ("node_groups", i, "taints", j),
                    "KAITO admits this, but its preset pods tolerate only sku=gpu:NoSchedule, nvidia.com/gpu and the AKS "
                    f"spot taint: {taint!r} keeps them off this pool, so they stay Pending",
                    "pool-taint",
                )


def _admitted_on(pools: list[NodeGroup], args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """Alike pools a preset selects: nodes to serve (or tune) on, by KAITO's arithmetic, and
    nodes that exist when the Workspace is created (KAITO's webhook lists them)."""
    if all(g.max_nodes == 0 for g in pools):
        yield Problem.at("model", "every GPU pool it may use has no nodes; give one at least a node", "empty-pools")
        return
    sku = catalog.all_gpu_skus().get(pools[0].vm_size)
    preset = catalog.find_preset(args.model or "", chart.preset_catalog)
    if preset is not None and sku is not None and sku.vendor == "nvidia" and not sku.unusable:
        if args.tuning:  # where KAITO can tune on these nodes at all (else `tuning_problems` says why not)
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
        f"KAITO admits this, but {args.model}'s tuning needs {need:g} GiB of GPU memory ({preset.gpu_count} GPU per "
        f"node, {spread}) and the largest pool node has {best} GiB, so the job's pod never schedules: add a larger pool",
        "tuning-fit",
    )


def _serving_fit(
    args: KaitoModelArgs, preset: catalog.Preset, pools: list[NodeGroup], chart: catalog.KaitoChart
) -> Problem | None:
    """KAITO's own arithmetic (kaito_aks/kaito/sizing.py) on the nodes the pools give: admission
    against the nodes that exist when the Workspace is created (min_nodes), then the nodes per
    instance x replicas against the pools' maximum. vLLM: the node estimator's count; the
    transformers runtime: `resource.count`, 1, with no estimator (WC 0.8.1:612-626,
    0.11.0:1125-1139, 0.12.0:1506-1520)."""
    release, size = chart.preset_catalog, pools[0].vm_size
    sku = catalog.all_gpu_skus()[size]
    hw = sizing.NodeGpus.of_sku(sku)
    exist, most = sum(p.min_nodes for p in pools), sum(p.max_nodes for p in pools)
    if exist == 0:
        return None  # pools that scale from zero: said by the caller
    transformers = args.runtime == "transformers"
    denial = sizing.admission_denial(preset, hw, exist, release)
    if denial is not None:
        return _admission_problem(args, preset, pools, chart, denial)
    if transformers:
        one_node = preset.model_gib * GIB > hw.kaito_node_memory(release)
        if one_node and preset.distributed:
            return Problem.at(
                "runtime",
                f'KAITO {chart.version} denies it ("Multi-node distributed inference is not supported with Huggingface '
                f'Transformers runtime"): {args.model} needs more GPU memory than one {size} node as KAITO counts it: '
                "use runtime vllm or a larger size",
                "transformers-multinode",
            )
        if preset.model_gib > sku.gpu_mem_gib:
            return Problem.at(
                "runtime",
                f"KAITO admits this, but its transformers runtime runs an instance on resource.count (1) node, and "
                f"{args.model} needs {preset.model_gib:g} GiB of GPU memory where a {size} node has {sku.gpu_mem_gib}: "
                "use runtime vllm or a larger size",
                "fit-one-node-transformers",
            )
        return _replicas_fit(args, 1, "a replica takes 1 node with the transformers runtime", size, most)
    try:
        per_instance = sizing.nodes_per_instance(preset, hw, release, max_model_len(args))
    except sizing.SizingError as err:
        return Problem.at(
            "model",
            f"KAITO admits this, but its controller's vLLM node estimator fails for it on {size}, so no pod is ever "
            f"created: {err}",
            "estimator",
        )
    return _replicas_fit(args, per_instance, f"its vLLM node estimate for {args.model} on {size}", size, most)


def _admission_problem(
    args: KaitoModelArgs, preset: catalog.Preset, pools: list[NodeGroup], chart: catalog.KaitoChart, denial: str
) -> Problem:
    """KAITO's webhook denies the preset on the nodes that exist: too little GPU memory (or, on 0.8,
    too few GPUs), with the counts that would pass."""
    release, size = chart.preset_catalog, pools[0].vm_size
    hw = sizing.NodeGpus.of_sku(catalog.all_gpu_skus()[size])
    exist = sum(p.min_nodes for p in pools)
    admit = sizing.nodes_to_admit(preset, hw, release)
    if admit > 1 and not preset.distributed:
        return Problem.at(
            "model",
            f"{args.model} needs {preset.model_gib} GiB of GPU memory on one node (KAITO {chart.version} cannot "
            f"spread it over nodes) and a {size} node counts {hw.kaito_node_memory(release) // GIB} GiB: KAITO's "
            f"webhook denies it ({denial}); choose a larger size",
            "fit-one-node",
        )
    scaled = " (an autoscaled pool has only its minimum then)" if any(p.min_nodes != p.max_nodes for p in pools) else ""
    # the larger count: once admitted, the estimator's nodes must be there too
    try:
        per_instance = (
            1 if args.runtime == "transformers" else sizing.nodes_per_instance(preset, hw, release, max_model_len(args))
        )
    except sizing.SizingError:
        per_instance = 0
    serve = per_instance * serving_replicas(args)
    how = "the transformers runtime's resource.count" if args.runtime == "transformers" else "KAITO's vLLM estimate"
    needs = (
        f"it needs {serve} nodes in all ({how}: {_replicas(args)} x {per_instance}), {admit} of them there by then"
        if serve > admit
        else f"it needs {admit} to exist"
    )
    return Problem.at(
        "model",
        f"KAITO {chart.version}'s admission webhook would deny it: {denial}; {exist} node(s) of {size} exist when "
        f"the Workspace is created{scaled}; {needs}, or a larger size",
        "admission",
    )


def _replicas_fit(args: KaitoModelArgs, per_instance: int, why: str, size: str, most: int) -> Problem | None:
    """The nodes the model's replicas take at once, against what its pools may have."""
    replicas = serving_replicas(args)
    need = per_instance * replicas
    if need <= most:
        return None
    scaled = args.autoscale is not None
    fix = f"give the pool {_nodes(need - most)} more, or a larger size"
    if replicas > 1:
        fix += ", or lower `autoscale.max_replicas`" if scaled else ", or lower replicas"
    return Problem.at(
        ("autoscale", "max_replicas") if scaled else "replicas",
        f"KAITO admits the object, and its controller will wait for {need} node(s) ({_replicas(args)} x "
        f"{per_instance}, {why}) that the pools it may use cannot give (at most {most}), so the rest stay Pending: "
        f"{fix}",
        "replicas-fit",
    )


def _replicas(args: KaitoModelArgs) -> str:
    """How many replicas the model runs at most, in words."""
    if args.autoscale is not None:
        return f"up to {args.autoscale.max_replicas} replicas (`autoscale.max_replicas`)"
    return f"{args.replicas} replica(s)"
