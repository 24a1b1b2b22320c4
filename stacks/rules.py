"""What only a whole stack can get wrong (the rules of a model, a pool or an operator are the
components' own, and stacks/load.py places them at config paths): names two entries would
share, settings that contradict each other across sections, and this program's own wording
for a few of the components' problems (the config key, the CLI command to run)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from kaito_aks import catalog
from kaito_aks.model.names import claimed_names
from kaito_aks.model.rules import match_labels
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import selects
from kaito_aks.problems import Key, Problem
from stacks.config import StackConfig
from stacks.errors import secret_key

# The stack's own wording for a few of the components' problems, by code: what to run or set
# in this program's terms. (The component's message already names the arg and the fix.)
ESTIMATE = "see `python -m stacks models estimate {model}{pool} --version {version}`"
HINTS = {
    "unknown-preset": "`python -m stacks models list --version {version}` lists them",
    "admission": ESTIMATE,
    "fit-one-node": ESTIMATE,
    "estimator": ESTIMATE,
    "tuning-fit": ESTIMATE,
    "replicas-fit": ESTIMATE,
}
INSTEAD = {
    "gated": "{model} is gated on Hugging Face: run `pulumi config set --secret hfToken <token>`, or set "
    "modelAccessSecret to an existing Secret with key HF_TOKEN",
    "no-pools": "{name} needs GPU nodes but the stack has no gpuNodePools; add one (" + ESTIMATE + ")",
    "kubeconfig-twice": "the secret kaito-aks:kubeconfig already gives the kubeconfig; remove one of them",
}


def stack_wording(problem: Problem, args: KaitoModelArgs | None = None) -> Problem:
    """A component's problem in this program's terms: its hint (the config key, the CLI) added;
    `args`: the model's, for a model's problem."""
    facts = {"model": "", "version": "", "name": "", "pool": ""}
    if args is not None:
        sizes = {g.vm_size for g in args.node_groups or [] if selects(match_labels(args), g)}
        pool = f" --pool {sizes.pop()}" if len(sizes) == 1 else ""
        facts = {"model": args.model or "", "version": args.kaito_version, "name": args.name or "", "pool": pool}
    if problem.code in INSTEAD:
        return dataclasses.replace(problem, message=INSTEAD[problem.code].format(**facts))
    hint = HINTS.get(problem.code)
    if hint is None:
        return problem
    return dataclasses.replace(problem, message=f"{problem.message}; {hint.format(**facts)}")


def check(cfg: StackConfig, model_index: list[int], pool_index: list[int]) -> list[Problem]:
    """The stack-wide rules. `model_index`/`pool_index`: each model's and pool's config index."""
    return [*_cluster(cfg), *_kaito(cfg), *_names(cfg, model_index), *_pools(cfg, pool_index)]


def _cluster(cfg: StackConfig) -> Iterator[Problem]:
    if cfg.has_kubeconfig and cfg.kubeconfig_cluster is None:
        yield Problem(
            (secret_key("kubeconfig"),),
            "only used with cluster.kubeconfig; AKS stacks get theirs from Azure; remove it",
            "kubeconfig",
        )
    if cfg.aks_cluster is not None and not cfg.aks_cluster.existing and cfg.aks_cluster.location is None:
        yield Problem(
            ("cluster", "aks", "location"),
            "set it, or run `pulumi config set azure-native:location <region>`",
            "location",
        )


def _kaito(cfg: StackConfig) -> Iterator[Problem]:
    chart = catalog.kaito_charts().get(cfg.kaito.version)
    if chart is None:
        return
    if cfg.gpu_discovery_given and cfg.kaito.gpu_discovery == "kaito" and cfg.gpu_operator is not None:
        yield Problem(
            ("kaito", "gpu_discovery"),
            "this stack installs the GPU Operator, which runs the device plugin, NFD and GFD; a second set from KAITO "
            "fights it over GPUs and node labels: use external (the default) or disable gpuOperator",
            "discovery",
        )
    if cfg.kaito.node_provisioning == "auto":
        yield Problem(
            ("kaito", "node_provisioning"),
            "auto is not available yet: KAITO creates nodes only through gpu-provisioner (its own Helm chart and an "
            "Azure workload identity with Contributor on the cluster) or, from 0.12, Karpenter, and this program "
            "installs neither, so Workspaces would wait forever for nodes; use byo with gpuNodePools (the default)",
            "auto",
        )
    value_gates = cfg.kaito.values.get("featureGates")
    gates = {**cfg.kaito.feature_gates, **(value_gates if isinstance(value_gates, dict) else {})}
    # 0.8's InferenceSet controller (off by default) lists Workspaces by that label in every
    # namespace; 0.11's (on by default) only in its own namespace, for a set of the same name;
    # 0.6 has none.
    adopts_anywhere = (
        chart.replicas == "workspacePerReplica" and chart.feature_gates.get("enableInferenceSetController") is False
    )
    if adopts_anywhere and gates.get("enableInferenceSetController") is True and cfg.models:
        yield Problem(
            ("kaito", "feature_gates", Key("enableInferenceSetController")),
            f"with KAITO {chart.version} this program serves replicas as Workspaces labelled "
            "inferenceset.kaito.sh/created-by=<name>; the InferenceSet controller adopts and deletes Workspaces with "
            "that label for any InferenceSet of the same name in any namespace: leave the gate off",
            "inferenceset-gate",
        )
    if not cfg.kaito_install and (cfg.kaito.feature_gates or cfg.kaito.values):
        yield Problem(
            ("kaito", "install"),
            "featureGates and values configure the chart we install; with install: false set them where KAITO is installed",
            "install",
        )


def _names(cfg: StackConfig, model_index: list[int]) -> Iterator[Problem]:
    """Two entries must not create objects of the same name in a namespace."""
    chart = catalog.kaito_charts().get(cfg.kaito.version)
    if chart is None:
        return
    seen: dict[tuple[str, str], int] = {}
    for i, args in zip(model_index, cfg.models, strict=True):
        names = claimed_names(args, chart)
        for name in sorted(names):
            owner = seen.get((args.namespace, name))
            if owner is not None and owner != i:
                yield Problem(
                    ("workspaces", i, "name"),
                    f"{args.namespace}/{name} is also created for workspaces[{owner}]; choose names that do not collide "
                    "(replicas are named <name>-0, <name>-1, ...)",
                    "name-collision",
                )
                break
        for name in names:
            seen.setdefault((args.namespace, name), i)


def _pools(cfg: StackConfig, pool_index: list[int]) -> Iterator[Problem]:
    if cfg.pools and not cfg.is_azure:
        yield Problem(
            ("gpuNodePools",),
            "node pools are created in AKS; use cluster.aks or cluster.existing, or drop them",
            "pools",
        )
        return
    chart = catalog.kaito_charts().get(cfg.kaito.version)
    seen: set[str] = set()
    for i, pool in zip(pool_index, cfg.pools, strict=True):
        name = pool.args.name or ""
        if name in seen or name == "system":
            yield Problem(
                ("gpuNodePools", i, "name"),
                f"{name!r} is already a node pool of this cluster; pool names must be unique",
                "pool-name",
            )
        seen.add(name)
        if pool.args.gpu_driver == "operator" and cfg.gpu_operator is None:
            yield Problem(
                ("gpuNodePools", i, "gpu_driver"),
                "operator means AKS skips the driver and the GPU Operator installs it, but gpuOperator is disabled; "
                "enable it or use gpuDriver: aks",
                "driver",
            )
        dropped = catalog.dropped_sku(pool.args.vm_size, chart.sku_catalog, chart.version) if chart else None
        sku = catalog.all_gpu_skus().get(pool.args.vm_size)
        if dropped is not None and sku is not None and sku.vendor == "nvidia" and not sku.unusable:
            yield Problem(("gpuNodePools", i, "vm_size"), dropped, "pool-sku-version")
