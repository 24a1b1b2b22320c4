"""Many models that share their waits, so a first `pulumi up` of N models takes about as long as
the slowest one, not N / parallelism times it.

Each wait is a step the engine runs while it blocks: the engine runs at most `--parallel`
steps at once (4 x the CPUs by default) and Pulumi's Python dynamic-provider process serves 4
requests at a time, so N models with a wait each queue. Here the models' nodes are waited for
once per node selector (every model on those nodes is checked by KAITO's arithmetic), and
their readiness once per node selector too (a pool whose nodes never come holds back only its
own models), each model within its own timeout. The waits grow with the pools, not the models."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pulumi

from kaito_aks import policy
from kaito_aks.capacity import Capacity
from kaito_aks.capacity.budget import budget_lines, capacity_budget
from kaito_aks.cluster.access import ClusterAccess, access_for
from kaito_aks.model.capacity import model_capacity
from kaito_aks.model.component import GroupMember, KaitoModel, judge_model, watched_objects
from kaito_aks.model.plan import ModelPlan, plan_model
from kaito_aks.model.spec import KaitoModelArgs, ready_timeout
from kaito_aks.operators.release import operator_problems
from kaito_aks.problems import Problem, raise_if, shown
from kaito_aks.serving.metrics import REGISTERED_BY
from kaito_aks.serving.spec import GatewayRefArgs
from kaito_aks.together import Together, check_together
from kaito_aks.validation import Judged
from kaito_aks.vocabulary import selector_text
from kaito_aks.waits.crd_served import CrdServed, served_kind
from kaito_aks.waits.gpu_nodes import GpuNodesReady
from kaito_aks.waits.model_ready import ModelReady, revision_of

Named = tuple[str, KaitoModelArgs]  # (resource name, args)


@dataclass
class ModelGroup:
    """What `deploy_models` created: the models by name, and the waits they share."""

    models: dict[str, KaitoModel]
    gpu_nodes: dict[str, GpuNodesReady]  # by node selector ({agentpool=a100})
    ready: dict[str, ModelReady]  # by node selector ("": models waited for without their nodes)
    plans: dict[str, ModelPlan]

    def gpu_nodes_of(self, name: str) -> pulumi.Output[dict[str, Any] | None]:
        """What the GPU-node wait of a model's nodes found (None: no wait for it)."""
        plan = self.plans[name]
        wait = self.gpu_nodes.get(selector_text(plan.gpu_nodes.selector)) if plan.gpu_nodes else None
        return wait.found() if wait is not None else pulumi.Output.from_input(None)

    def waits_of(self, name: str) -> list[pulumi.Resource]:
        """The waits a model's readiness is decided by (its GPU-node wait and its ready wait)."""
        plan = self.plans[name]
        key = selector_text(plan.gpu_nodes.selector) if plan.gpu_nodes else ""
        waits: list[pulumi.Resource] = []
        if plan.gpu_nodes is not None and key in self.gpu_nodes:
            waits.append(self.gpu_nodes[key])
        if key in self.ready:
            waits.append(self.ready[key])
        return waits


def deploy_models(
    name: str,
    models: Sequence[tuple[str, KaitoModelArgs | Judged[KaitoModelArgs]]],
    opts: pulumi.ResourceOptions | None = None,
    access: ClusterAccess | None = None,
    capacity: Sequence[object] | None = None,
    gateway: GatewayRefArgs | None = None,
) -> ModelGroup:
    """KaitoModel for each (resource name, args), with one GPU-node wait and one readiness wait
    per node selector (each model's wait_for_* args decide whether it is waited for, and its
    timeouts stay its own). `opts` apply to every model (the cluster's provider, what
    they depend on); the waits use `access`, else the ClusterProvider's credentials in `opts`.
    Models whose objects would share a name in a namespace are refused with the rest, and so are
    models given `node_groups` that do not fit their pools together (`pool_budget`). Args in
    `Judged` (a program that checked them already, e.g. with `check_model`) are not judged again.
    `gateway`: the Gateway the routed models' routes attach to, e.g. an InferenceGateway's
    outputs (the routes then wait for it); default: each model's own `gateway`.

    The waits are top-level resources, parented to `opts.parent` if any: they belong to no one
    model, and parenting them to a component now would change their URNs in every stack
    deployed so far (they would be replaced).

    `capacity`: the program's components that make non-GPU pools or run pods there (AksCluster,
    CpuNodePool, KaitoOperator, GpuOperator, InferenceGateway, KedaAutoscaling, Karpenter,
    GpuProvisioner, RagEngineOperator: their `capacity`; or `Capacity` values): with the models'
    own pods (each routed model's endpoint picker, each CPU model) they must fit the pools'
    nodes (kaito_aks.capacity), as the stack checks them; the budget is logged."""
    checked, warnings = _checked(name, models, access, opts, capacity)
    needs_access = any(a.wait_for_gpu_nodes or a.wait_for_ready for _, a in checked)
    reach = access or (access_for(checked[0][1].kubeconfig, checked[0][1].context, opts) if checked else None)
    plans = {n: plan_model(a, gateway) for n, a in checked}
    gpu_waits = _gpu_node_waits(name, checked, plans, reach if needs_access else None, opts)
    monitor_waits = _service_monitor_waits(name, checked, plans, reach, opts)
    created: dict[str, KaitoModel] = {}
    for n, a in checked:
        plan = plans[n]
        wait = gpu_waits.get(selector_text(plan.gpu_nodes.selector)) if plan.gpu_nodes else None
        # judged and planned just now, and its waits are the group's
        own = GroupMember(a, tuple(warnings[n]), plan, gateway if a.gateway is not None else None)
        model_opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[wait] if wait else []))
        monitor = monitor_waits.get(served_kind(plan.service_monitor)) if plan.service_monitor else None
        created[n] = KaitoModel(n, own, opts=model_opts, service_monitor_after=[monitor] if monitor else [])
    ready = _ready_waits(name, checked, plans, created, reach, opts)
    return ModelGroup(created, gpu_waits, ready, plans)


def _checked(
    name: str,
    models: Sequence[tuple[str, KaitoModelArgs | Judged[KaitoModelArgs]]],
    access: ClusterAccess | None,
    opts: pulumi.ResourceOptions | None,
    capacity: Sequence[object] | None = None,
) -> tuple[list[Named], dict[str, list[Problem]]]:
    """Each model's args, judged (unless they were), and then the rules of the models together
    (`check_together`: names, routes, CPU models on another's GPU nodes, auto-provisioned nodes
    at their most, one KAITO release, the pools' budget), the non-GPU pools' budget with
    `capacity`, the operators' release in `opts` and credentials for the waits. Raises
    InvalidArgsError with every problem at once; else the models and each one's warnings."""
    problems = _call_problems(name, models, access, opts) + _capacity_problems(capacity)
    if not isinstance(models, list | tuple):
        raise_if("deploy_models", str(name), problems)  # a program's mistake, said by name, not a TypeError
    checked: list[Named] = []
    own: list[list[Problem]] = []
    warnings: dict[str, list[Problem]] = {}
    for resource_name, args in [m for m in models if _named(m)]:
        if isinstance(args, Judged):
            model, found, said = args.args, [], list(args.warnings)
        else:
            model, found, said = judge_model(args, resource_name)
        if model is None:
            problems += [p.under(resource_name) for p in found]
            continue
        checked.append((resource_name, model))
        own.append(found)
        warnings[resource_name] = said
    together = check_together(checked, own=own)
    for i, (n, _) in enumerate(checked):
        problems += [p.under(n) for p in together.own(i, own[i])]
    refused, group = _together(together, checked, warnings)
    problems += refused
    if checked:
        problems += operator_problems(checked[0][1].kaito_version, opts, at="opts")
    room = _capacity(name, checked, capacity)
    problems += policy.errors_of(room)
    needs_access = any(a.wait_for_gpu_nodes or a.wait_for_ready for _, a in checked)
    reach = access or (access_for(checked[0][1].kubeconfig, checked[0][1].context, opts) if checked else None)
    if needs_access and reach is None:
        why = "the waits read the cluster: give `access`, or a ClusterProvider in opts"
        problems.append(Problem.at("access", why, "no-credentials"))
    raise_if("deploy_models", str(name), problems)
    for warning in [*group, *policy.warnings_of(room)]:  # what refuses nothing (bypassed), said by the group
        pulumi.log.warn(f"deploy_models {name!r}: {warning.under('args').text()}")
    return checked, warnings


def _together(
    together: Together, checked: list[Named], warnings: dict[str, list[Problem]]
) -> tuple[list[Problem], list[Problem]]:
    """What the models together refuse, each model's at its resource name; and what they refuse
    nothing of (bypassed): a model's is its own to say (added to `warnings`, at its args' path),
    the rest the group's."""
    refused: list[Problem] = []
    group: list[Problem] = []
    for problem in together.problems:
        at, rest = problem.path[:2], problem.path[2:]
        if at[:1] == ("models",) and len(at) == 2 and isinstance(at[1], int):
            n = checked[at[1]][0]
            if policy.is_warning(problem):
                warnings[n].append(dataclasses.replace(problem, path=rest))
            else:
                refused.append(dataclasses.replace(problem, path=(n, *rest)))
        else:
            (group if policy.is_warning(problem) else refused).append(problem)
    return refused, group


def _parts(capacity: Sequence[object]) -> list[Capacity]:
    """Each item's Capacity (a component's `capacity`, or a Capacity), said at ("capacity", i)."""
    out: list[Capacity] = []
    for i, item in enumerate(capacity):
        found = item if isinstance(item, Capacity) else getattr(item, "capacity", None)
        if isinstance(found, Capacity):
            out.append(found.at("capacity", i))
    return out


def _capacity_problems(capacity: object) -> list[Problem]:
    """`capacity` must be a list of components that carry a `capacity` (or Capacity values)."""
    if capacity is None:
        return []
    if not isinstance(capacity, list | tuple):
        return [Problem.at("capacity", f"must be a list of components or Capacity, not {shown(capacity)}", "type")]
    return [
        Problem.at(
            ("capacity", i), f"must be a component with a `capacity` (e.g. AksCluster), not {shown(item)}", "type"
        )
        for i, item in enumerate(cast(Sequence[object], capacity))
        if not isinstance(item, Capacity) and not isinstance(getattr(item, "capacity", None), Capacity)
    ]


def _capacity(name: str, checked: list[Named], capacity: Sequence[object] | None) -> list[Problem]:
    """The non-GPU pools' budget of the models and the components given (none without `capacity`)."""
    if capacity is None or not isinstance(capacity, list | tuple):
        return []
    parts = _parts(capacity)
    if not any(p.pools for p in parts):
        return [Problem.at("capacity", "names no pool: give the AksCluster (its system pool) or a CpuNodePool", "type")]
    parts += [model_capacity(a, n, (n,)) for n, a in checked]
    budget = capacity_budget(parts)
    for line in budget_lines(budget):
        pulumi.log.info(f"deploy_models {name!r}: {line}")
    return budget.problems


def _call_problems(name: object, models: object, access: object, opts: object) -> list[Problem]:
    """The call's own shape: a name, (resource name, args) pairs, `access` a ClusterAccess, `opts`
    ResourceOptions (a program's mistake, said by name, not a TypeError)."""
    problems: list[Problem] = []
    if not isinstance(name, str) or not name:
        problems.append(Problem.at("name", f"must be the group's name (text), not {shown(name)}", "type"))
    if not isinstance(models, list | tuple):
        problems.append(
            Problem.at("models", f"must be a list of (resource name, KaitoModelArgs), not {shown(models)}", "type")
        )
        return problems
    problems += [
        Problem.at(("models", i), f"must be (resource name, KaitoModelArgs), not {shown(m)}", "type")
        for i, m in enumerate(cast(Sequence[object], models))
        if not _named(m)
    ]
    names = [cast(tuple[str, object], m)[0] for m in cast(Sequence[object], models) if _named(m)]
    problems += [
        Problem.at(
            ("models", i), f"{n!r} is given twice; each model needs a resource name of its own", "name-collision"
        )
        for i, n in enumerate(names)
        if n in names[:i]
    ]
    if access is not None and not isinstance(access, ClusterAccess):
        problems.append(Problem.at("access", f"must be a ClusterAccess, not {shown(access)}", "type"))
    if opts is not None and not isinstance(opts, pulumi.ResourceOptions):
        problems.append(Problem.at("opts", f"must be pulumi.ResourceOptions, not {shown(opts)}", "type"))
    return problems


def _gpu_node_waits(
    name: str,
    checked: list[Named],
    plans: dict[str, ModelPlan],
    reach: ClusterAccess | None,
    opts: pulumi.ResourceOptions | None,
) -> dict[str, GpuNodesReady]:
    """One GPU-node wait per node selector, for every model waited for on those nodes."""
    groups: dict[str, list[tuple[str, KaitoModelArgs, ModelPlan]]] = {}
    for n, a in checked:
        plan = plans[n]
        if plan.gpu_nodes is not None and a.wait_for_gpu_nodes:
            groups.setdefault(selector_text(plan.gpu_nodes.selector), []).append((n, a, plan))
    waits: dict[str, GpuNodesReady] = {}
    for text, members in sorted(groups.items()):
        assert reach is not None
        first = members[0][2].gpu_nodes
        assert first is not None
        waits[text] = GpuNodesReady(
            f"{name}/gpu-nodes/{text}",
            reach,
            selector=first.selector,
            demand=[p.gpu_nodes.demand for _, _, p in members if p.gpu_nodes],
            workspaces=sorted(n for _, _, p in members for n in p.admitted()),
            timeout_minutes=max(a.gpu_nodes_timeout_minutes for _, a, _ in members),
            opts=opts_without_provider(opts),
        )
    return waits


def _service_monitor_waits(
    name: str,
    checked: list[Named],
    plans: dict[str, ModelPlan],
    reach: ClusterAccess | None,
    opts: pulumi.ResourceOptions | None,
) -> dict[tuple[str, str], CrdServed]:
    """One wait per ServiceMonitor kind the models' monitors need (none without credentials)."""
    kinds: dict[tuple[str, str], str] = {}
    for n, a in checked:
        monitor = plans[n].service_monitor
        if monitor is not None and a.metrics is not None:
            kinds.setdefault(served_kind(monitor), REGISTERED_BY[a.metrics.flavour])
    if reach is None:
        return {}
    return {
        kind: CrdServed(
            f"{name}/service-monitors/{kind[0]}", reach, *kind, registered_by=by, opts=opts_without_provider(opts)
        )
        for kind, by in sorted(kinds.items())
    }


def _ready_waits(
    name: str,
    checked: list[Named],
    plans: dict[str, ModelPlan],
    created: dict[str, KaitoModel],
    reach: ClusterAccess | None,
    opts: pulumi.ResourceOptions | None,
) -> dict[str, ModelReady]:
    """Readiness is waited for per node group as well: a pool whose nodes never come blocks only
    its own models, and the others are still reported serving (or failing, with KAITO's reason)."""
    by_group: dict[str, list[str]] = {}
    for n, a in checked:
        if a.wait_for_ready:
            plan = plans[n]
            key = selector_text(plan.gpu_nodes.selector) if plan.gpu_nodes and a.wait_for_gpu_nodes else ""
            by_group.setdefault(key, []).append(n)
    args_of = dict(checked)
    ready: dict[str, ModelReady] = {}
    for key, members in sorted(by_group.items()):
        assert reach is not None
        watched = [
            dataclasses.replace(w, timeout_seconds=ready_timeout(args_of[n]) * 60.0)
            for n in members
            for w in watched_objects(plans[n])
        ]
        manifests = [m for n in members for m in plans[n].manifests()]
        config = [cm.data for n in members for cm in plans[n].config_maps]
        ready[key] = ModelReady(
            f"{name}/ready/{key}" if key else f"{name}/ready",
            reach,
            watched=watched,
            revision=revision_of([*manifests, *config]),
            timeout_minutes=max(ready_timeout(args_of[n]) for n in members),
            opts=pulumi.ResourceOptions.merge(
                opts_without_provider(opts), pulumi.ResourceOptions(depends_on=[created[n] for n in members])
            ),
        )
    return ready


def _named(item: object) -> bool:
    """Whether a program gave (resource name, args), whatever its type hints said."""
    if not isinstance(item, tuple) or len(cast(tuple[object, ...], item)) != 2:
        return False
    name, args = cast(tuple[object, object], item)
    return isinstance(name, str) and bool(name) and isinstance(args, KaitoModelArgs | Judged | Mapping)


def opts_without_provider(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """The models' options for a wait: the same dependencies, no Kubernetes provider (a wait is a
    Pulumi dynamic resource)."""
    if opts is None:
        return pulumi.ResourceOptions()
    return pulumi.ResourceOptions(depends_on=opts.depends_on, parent=opts.parent, protect=opts.protect)
