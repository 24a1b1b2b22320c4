"""Every rule of a stack, at its config path: each component's own rules and the library's rules
of the models and engines together (kaito_aks.check_together), each problem said where its arg
was written, then the stack's own (stacks/rules.py: its keys, its hints). Nothing here restates a
library rule or leaves one of its problems out."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from kaito_aks import catalog, policy
from kaito_aks.azure.aks_cluster import aks_cluster_problems
from kaito_aks.azure.cpu_node_pool import cpu_node_pool_problems
from kaito_aks.azure.gpu_node_pool import gpu_node_pool_problems
from kaito_aks.cluster.kubeconfig_cluster import kubeconfig_cluster_problems
from kaito_aks.model.component import judge_model
from kaito_aks.model.placement import cpu_on_gpu_pools, cpu_on_no_pool, match_labels
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import selects
from kaito_aks.operators.gpu_operator import gpu_operator_problems
from kaito_aks.operators.gpu_provisioner import gpu_provisioner_problems
from kaito_aks.operators.kaito_operator import kaito_operator_problems
from kaito_aks.operators.karpenter import karpenter_problems
from kaito_aks.operators.ragengine_operator import ragengine_operator_problems
from kaito_aks.problems import PathPart, Problem, format_path
from kaito_aks.rag.component import judge_rag_engine
from kaito_aks.serving.gateway import inference_gateway_problems
from kaito_aks.serving.keda import keda_autoscaling_problems
from kaito_aks.together import check_together
from stacks import rules
from stacks.config import Placed, StackConfig
from stacks.decide import Written

# The stack's hints on a few of the components' problems, by code, appended to the component's
# message (which names its arg and the fix in a component's terms): the command to run, the key
# of the stack file that fills the arg.
ESTIMATE = "see `python -m stacks models estimate {model}{pool} --version {version}`"
HF_TOKEN = "in this stack: run `pulumi config set --secret hfToken <token>` (or set modelAccessSecret)"
HINTS = {
    "unknown-preset": "`python -m stacks models list --version {version}` lists them",
    "admission": ESTIMATE,
    "fit-one-node": ESTIMATE,
    "estimator": ESTIMATE,
    "tuning-fit": ESTIMATE,
    "replicas-fit": ESTIMATE,
    "gated": HF_TOKEN,
    "gated-secret": HF_TOKEN,
    "no-pools": "in this stack: add a gpuNodePools entry (" + ESTIMATE + ")",
    "kubeconfig-twice": "the secret kaito-aks:kubeconfig gives the contents already: remove one of them",
    "unsized": "a cluster.kubeconfig stack does not know the cluster's GPU pools, so `pulumi up`'s GPU-node wait "
    "checks them (" + ESTIMATE + ")",
    "gpu-driver": "in this stack: enable gpuOperator (gpuOperator.enabled)",
    "discovery": "in this stack: remove kaito.gpuDiscovery (external is its default with gpuOperator)",
    "node-provisioning": "in this stack: remove kaito.nodeProvisioning (auto is the add-on's), or drop the cluster's "
    "aiToolchainOperator",
    "gateway-routes": "the stack's gateway routes no workspace (it routes vLLM presets; each other workspace says "
    "gateway: false or is no vLLM preset): add one, or remove gateway",
}


def hinted(problem: Problem, args: KaitoModelArgs | None = None) -> Problem:
    """A component's problem with the stack's hint appended (before its way past, if it says
    one); `args`: the model's, for a model's problem."""
    hint = HINTS.get(problem.code)
    if hint is None:
        return problem
    facts = {"model": "", "version": "", "name": "", "pool": ""}
    if args is not None:
        sizes = {g.vm_size for g in args.node_groups or [] if selects(match_labels(args), g)}
        pool = f" --pool {sizes.pop()}" if len(sizes) == 1 else ""
        facts = {"model": args.model or "", "version": args.kaito_version, "name": args.name or "", "pool": pool}
    past = policy.way_past(problem.code)
    if past and problem.message.endswith(past):  # the hint goes before the way past
        return dataclasses.replace(problem, message=f"{problem.message[: -len(past)]}; {hint.format(**facts)}{past}")
    return dataclasses.replace(problem, message=f"{problem.message}; {hint.format(**facts)}")


def once(problems: list[Problem]) -> list[Problem]:
    """Each problem once: two components may say the same thing at one path (a release the
    operator and the models both find unsupported, a pool without a driver), one of them with
    its way past (a model's): the first said stands."""
    seen: set[tuple[object, ...]] = set()
    out: list[Problem] = []
    for p in problems:
        key = (p.path, p.code, p.message.removesuffix(policy.way_past(p.code)))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def judge(
    cfg: StackConfig, written: Written, base_dir: Path | None, tied: list[Problem], stack: str = ""
) -> tuple[list[Problem], StackConfig]:
    """Every rule, each problem at its config path: the errors, and the config with every warning
    (`warnings`, at config paths; each workspace's and engine's own too, for its component to
    log). `tied`: the builder's problems of tying RAG engines to workspaces."""
    found = [*tied, *_cluster(cfg, written, base_dir), *_pools(cfg), *_operators(cfg), *_serving(cfg, written)]
    models = [_model(cfg, written, w.args) for w in cfg.workspaces]
    engines = [judge_rag_engine(e.args)[1:] for e in cfg.rag_engines]
    together = check_together(
        [(format_path(w.placed.at, "schema"), w.args) for w in cfg.workspaces],
        [(format_path(e.placed.at, "schema"), e.args) for e in cfg.rag_engines],
        cfg.kaito.node_groups if cfg.pools_known else None,
        [(p.name, p.vm_size) for p in cfg.cpu_nodes],
        own=[errors for errors, _ in models],
        grow="count, or autoscale.max",
    )
    warned: list[Problem] = []
    for i, (w, (errors, warnings)) in enumerate(zip(cfg.workspaces, models, strict=True)):
        found += [where(p, w.placed, cfg, w.args) for p in together.own(i, errors)]
        warned += [where(p, w.placed, cfg, w.args) for p in warnings]
    for e, (errors, warnings) in zip(cfg.rag_engines, engines, strict=True):
        found += [where(p, e.placed, cfg) for p in errors]
        warned += [where(p, e.placed, cfg) for p in warnings]
    found += [_together_at(p, cfg) for p in together.problems]
    errors, own, warnings = rules.verdict(cfg, written, stack, found)
    cfg = dataclasses.replace(
        cfg,
        workspaces=tuple(
            dataclasses.replace(w, warnings=tuple(m[1])) for w, m in zip(cfg.workspaces, models, strict=True)
        ),
        rag_engines=tuple(
            dataclasses.replace(e, warnings=tuple(m[1])) for e, m in zip(cfg.rag_engines, engines, strict=True)
        ),
        warnings=tuple(once([*own, *warned, *warnings])),
    )
    return once(errors), cfg


# ---------------------------------------------------------------- where a component's problem was written


def where(problem: Problem, placed: Placed, cfg: StackConfig, model: KaitoModelArgs | None = None) -> Problem:
    """A component's problem where its arg was written, with the stack's hint (stacks/rules.py;
    `model`: the args of the model it is about): a GPU pool it describes (`node_groups[i]`) at
    that gpuNodePools entry, an arg the stack filled in at the setting it came from (a model's
    KAITO release at kaito.version), any other under the entry's path."""
    path = problem.path
    if len(path) >= 2 and path[0] == "node_groups" and isinstance(path[1], int) and path[1] < len(cfg.pools):
        rest = path[2:]
        if rest and rest[0] in ("min_nodes", "max_nodes"):
            rest = ()  # (a pool's count or autoscale)
        return hinted(dataclasses.replace(problem, path=(*cfg.pools[path[1]].placed.at, *rest)), model)
    head = path[0] if path else None
    if isinstance(head, str) and head in placed.filled:
        return hinted(dataclasses.replace(problem, path=(*placed.filled[head], *path[1:])), model)
    return hinted(problem.under(*placed.at), model)


def _together_at(problem: Problem, cfg: StackConfig) -> Problem:
    """A problem of the models and engines together at its entry: workspaces[i], ragEngines[i],
    gpuNodePools[j], or the workspaces as a whole."""
    (head, *at), rest = problem.path[:2], problem.path[2:]
    if at and isinstance(at[0], int):
        entries: dict[PathPart, Any] = {"models": cfg.workspaces, "engines": cfg.rag_engines, "node_groups": cfg.pools}
        return dataclasses.replace(problem, path=(*entries[head][at[0]].placed.at, *rest))
    return dataclasses.replace(problem, path=("workspaces", *problem.path[1:]))


# ---------------------------------------------------------------- each component's own rules


def _cluster(cfg: StackConfig, written: Written, base_dir: Path | None) -> list[Problem]:
    if cfg.kubeconfig_cluster is not None:
        found = kubeconfig_cluster_problems(cfg.kubeconfig_cluster, base=base_dir)
        return [hinted(p.under("cluster", "kubeconfig")) for p in found]
    if cfg.aks_cluster is not None:
        return [p.under("cluster", written.cluster_kind or "aks") for p in aks_cluster_problems(cfg.aks_cluster)]
    return []


def _pools(cfg: StackConfig) -> list[Problem]:
    found = [where(p, pool.placed, cfg) for pool in cfg.pools for p in gpu_node_pool_problems(pool.args)]
    return found + [where(p, pool.placed, cfg) for pool in cfg.cpu_pools for p in cpu_node_pool_problems(pool.args)]


def _operators(cfg: StackConfig) -> list[Problem]:
    """The operators the stack installs, each by its own rules; where KAITO is installed elsewhere,
    only its release (the one thing the models need of it). With the AKS add-on the stack installs
    none of KAITO's (the add-on's refusal of each says why: stacks/rules.py)."""
    found: list[Problem] = []
    pools = {"node_groups": ("gpuNodePools",)}  # (the operators' node groups are the stack's GPU pools)
    if cfg.kaito_install and not cfg.add_on:
        found += [where(p, Placed(("kaito",), pools), cfg) for p in kaito_operator_problems(cfg.kaito)]
    elif (unsupported := catalog.unsupported_kaito_version(cfg.kaito.version)) is not None:
        found.append(Problem(("kaito", "version"), unsupported, "version"))
    if cfg.gpu_operator is not None:
        found += [where(p, Placed(("gpuOperator",), pools), cfg) for p in gpu_operator_problems(cfg.gpu_operator)]
    if cfg.gpu_provisioner is not None and not cfg.add_on:
        found += [p.under("gpuProvisioner") for p in gpu_provisioner_problems(cfg.gpu_provisioner)]
    if cfg.karpenter is not None:
        found += [p.under("karpenter") for p in karpenter_problems(cfg.karpenter)]
    if cfg.rag_operator is not None and not cfg.add_on:
        placed = Placed(("ragEngineOperator",), {"version": ("kaito", "version")})
        found += [where(p, placed, cfg) for p in ragengine_operator_problems(cfg.rag_operator)]
    return found


def _serving(cfg: StackConfig, written: Written) -> list[Problem]:
    """The gateway's and KEDA's own rules: the namespaces the gateway routes are its routed
    workspaces' (filled in by the stack, said at gateway); KEDA's release is said where KEDA is
    asked for."""
    found: list[Problem] = []
    if cfg.gateway is not None:
        placed = Placed(("gateway",), {"model_namespaces": ("gateway",)})
        found += [where(p, placed, cfg) for p in inference_gateway_problems(cfg.gateway)]
    if cfg.autoscaling is not None:
        # KEDA's release is the one the section, or else the first autoscaled workspace, installs it for
        scaled = next((w.placed.at for w in cfg.workspaces if w.args.autoscale is not None), ("kaito",))
        release = ("autoscaling",) if written.autoscaling is not None else (*scaled, "autoscale")
        placed = Placed(("autoscaling",), {"kaito_version": release})
        found += [where(p, placed, cfg) for p in keda_autoscaling_problems(cfg.autoscaling)]
    return found


def _model(cfg: StackConfig, written: Written, model: KaitoModelArgs) -> tuple[list[Problem], list[Problem]]:
    """A model's own rules (and, on a cluster it adopts, no CPU model on the pools the stack adds;
    where every pool is known, no CPU model without one): its errors and warnings, relative to its
    args."""
    _, errors, warnings = judge_model(model)
    groups = cfg.kaito.node_groups
    if written.cluster_kind == "existing" and model.node_groups is None:
        more, said = policy.verdict(list(cpu_on_gpu_pools(model, groups)), model.bypass_checks)
        errors, warnings = errors + more, warnings + said
    if cfg.pools_known:  # every node of the cluster is in a pool the stack knows
        more, said = policy.verdict(list(cpu_on_no_pool(model, cfg.cpu_nodes, groups)), model.bypass_checks)
        errors, warnings = errors + more, warnings + said
    return errors, warnings
