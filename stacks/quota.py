"""The VMs a stack runs at most, by size: what its quota is checked against before anything is
created (`pulumi preview`/`up`, `validate --online`) and what it costs (cost.py).

- the system pool and every CPU pool of a cluster the stack creates, at their most nodes, plus
  the surge nodes an AKS upgrade adds (max_surge, AKS's default 10%, at least one);
- every GPU pool at its maximum, plus its surge (Spot pools count against Spot vCPUs);
- with auto-provisioning, each model's instance type: KAITO's node estimate per replica times
  its most replicas (autoscale's maximum), and each RAG engine's compute node."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import pulumi

from kaito_aks import catalog, policy
from kaito_aks.azure.arm import ArmError, ArmReader, NotCheckedError, arm_reader
from kaito_aks.azure.gpu_node_pool import GpuNodePoolArgs
from kaito_aks.azure.node_pool import initial_nodes, most_nodes
from kaito_aks.azure.quota import CapacityVerdict, VmDemand, capacity_verdict, surge_nodes
from kaito_aks.kaito import sizing as kaito_sizing
from kaito_aks.model.config import max_model_len
from kaito_aks.model.placement import find_instance_type
from kaito_aks.model.spec import serving_replicas
from kaito_aks.problems import PathPart
from stacks.config import StackConfig
from stacks.errors import StackConfigError, located


def stack_region(cfg: StackConfig) -> str | None:
    """Where the stack's VMs run: cluster.aks.location, else azure-native:location."""
    aks = cfg.aks_cluster
    location = aks.location if aks is not None and not aks.existing else None
    return (location if isinstance(location, str) else None) or cfg.azure_location


def kaito_nodes_per_replica(cfg: StackConfig, index: int) -> int:
    """The nodes KAITO makes for one replica of workspaces[index] in auto mode (its estimator's
    answer for the instance type; 1 where it does not size: tuning, transformers, unknown)."""
    m = cfg.workspaces[index].args
    chart = catalog.kaito_charts()[cfg.kaito.version]
    preset = catalog.find_preset(m.model or "", chart.preset_catalog)
    sku = find_instance_type(m.instance_type or "", chart)
    if preset is None or sku is None or m.tuning is not None or m.runtime == "transformers":
        return 1
    with contextlib.suppress(kaito_sizing.SizingError):  # refused by the rules already
        return kaito_sizing.nodes_on_instance_type(preset, sku, chart.preset_catalog, max_model_len(m))
    return 1


@dataclass(frozen=True)
class VmLine:
    """Something of the stack that runs VMs of one size: its fewest and most nodes, the extra
    nodes an AKS upgrade adds to it (a pool's surge), whether they are Spot, and its config path."""

    what: str
    vm_size: str
    min_nodes: int
    max_nodes: int
    surge: int = 0
    spot: bool = False
    path: tuple[PathPart, ...] = ()


def vm_lines(cfg: StackConfig) -> list[VmLine]:
    """Every VM size the stack runs: what its quota is checked against (vm_demands) and what it
    costs (stacks/cost.py)."""
    out: list[VmLine] = []
    aks = cfg.aks_cluster
    if aks is not None and not aks.existing:
        system = aks.system_pool
        surge = surge_nodes(system.max_surge, system.count)
        at = ("cluster", "aks", "system_pool", "vm_size")
        out.append(VmLine("the system pool", system.vm_size, system.count, system.count, surge, path=at))
    for kind, p in [*(("CPU", p) for p in cfg.cpu_pools), *(("GPU", p) for p in cfg.pools)]:
        most = most_nodes(p.args)
        surge = surge_nodes(p.args.max_surge, most)
        spot = isinstance(p.args, GpuNodePoolArgs) and p.args.spot
        at = (*p.placed.at, "vm_size")
        out.append(VmLine(f"{kind} pool {p.args.name}", p.args.vm_size, initial_nodes(p.args), most, surge, spot, at))
    if cfg.kaito.node_provisioning == "auto":  # KAITO (the add-on too) makes these VMs in the subscription
        for i, w in enumerate(cfg.workspaces):
            m = w.args
            if m.instance_type:
                per = kaito_nodes_per_replica(cfg, i)
                what = f"model {m.namespace}/{m.name} (KAITO's nodes)"
                at = (*w.placed.at, "instance_type")
                out.append(VmLine(what, m.instance_type, per * m.replicas, per * serving_replicas(m), path=at))
        for e in cfg.rag_engines:
            size = e.args.compute.instance_type if e.args.compute is not None else None
            if size:
                what = f"RAG engine {e.args.namespace}/{e.args.name} (KAITO's node)"
                out.append(VmLine(what, size, 1, 1, path=(*e.placed.at, "compute", "instance_type")))
    return out


def vm_demands(cfg: StackConfig) -> list[VmDemand]:
    """Every VM size the stack runs, at its most at once (an upgrade's surge nodes included)."""
    return [VmDemand(v.what, v.vm_size, v.max_nodes, v.spot, v.path, v.surge) for v in vm_lines(cfg)]


def _cluster_key(cfg: StackConfig) -> tuple[str, str] | None:
    aks = cfg.aks_cluster
    return (aks.resource_group, aks.name) if aks is not None else None


@dataclass(frozen=True)
class NotChecked:
    """Why the capacity was not checked: nothing to read it with (offline, no login, not Azure),
    or (`failed`) Azure was asked and did not answer, said as a warning with what to do."""

    why: str
    failed: bool = False

    def text(self) -> str:
        return f"quota not checked: {self.why}"


READ_RIGHTS = (
    "the deployment goes on unchecked; reading needs Microsoft.Compute/locations/usages/read, "
    "Microsoft.Compute/skus/read and Microsoft.Resources/subscriptions/locations/read (the Reader role "
    "on the subscription has them)"
)


def check_quota(
    cfg: StackConfig, reader: Callable[[], tuple[ArmReader, str]] = arm_reader
) -> CapacityVerdict | NotChecked:
    """The stack's capacity read from Azure (quota, sizes), or why it was not checked. `reader`:
    how Azure is read (in the Pulumi program: azure-native's login; `validate --online`: the
    Azure CLI's)."""
    region = stack_region(cfg)
    if cfg.aks_cluster is None:
        return NotChecked("the cluster is not on Azure as far as this stack knows (a kubeconfig)")
    if region is None:
        return NotChecked("no region (cluster.aks.location or azure-native:location)")
    demands = vm_demands(cfg)
    try:
        arm, subscription = reader()
        return capacity_verdict(demands, region, arm, subscription, cluster=_cluster_key(cfg))
    except NotCheckedError as why:
        return NotChecked(str(why))
    except ArmError as err:
        return NotChecked(f"Azure answered {err}: {READ_RIGHTS}", failed=True)


def refuse_short_quota(cfg: StackConfig) -> None:
    """In the Pulumi program, before any resource is registered: stop with every capacity
    problem (a family short of quota, a size the region lacks), or say what was checked (a
    warning where Azure did not answer)."""
    verdict = check_quota(cfg)
    if isinstance(verdict, NotChecked):
        (pulumi.log.warn if verdict.failed else pulumi.log.info)(verdict.text())
        return
    for warning in policy.warnings_of(verdict.problems):
        pulumi.log.warn(located(warning, None))
    refused = policy.errors_of(verdict.problems)
    if refused:
        raise StackConfigError(refused)
    pulumi.log.info(verdict.summary())
