"""What the AKS node pools this library creates (GpuNodePool, CpuNodePool) share: the pool name
and size rules, autoscale bounds, the labels AKS keeps for itself, and which args set a property
AKS takes only when it creates a pool (so a change replaces the pool)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Protocol, TypeVar

from kaito_aks.nodes import AGENTPOOL_LABELS, MAX_POOL_NODES
from kaito_aks.problems import Key, Problem, did_you_mean
from kaito_aks.schema import Matches, Range, args_class
from kaito_aks.validation import resource_name_problems

POOL_NAME = Matches(
    r"[a-z][a-z0-9]{0,11}", "an AKS node pool name: 1-12 lowercase letters and digits, starting with a letter"
)
NODES = Range(0, MAX_POOL_NODES, "AKS: at most 1000 nodes per pool")
# An Azure VM size's name, as Azure's naming convention writes it (learn.microsoft.com,
# virtual-machines/vm-naming-conventions: [Family][Sub-family][# of vCPUs][-constrained vCPUs]
# [additive features][_accelerator][_version], after the tier): Standard_D4s_v5,
# Standard_E64-16ds_v4, Standard_NC24ads_A100_v4, Basic_A0. The GPU pools check theirs against the
# GPU SKU catalog; a CPU or system pool's size no catalog here lists, so at least its form, before
# AKS refuses it at `pulumi up`.
VM_SIZE = Matches(
    r"(?i:(Standard|Basic)_[A-Z]{1,4}[0-9]{1,3}(-[0-9]{1,3})?[a-z]{0,8}(_[A-Za-z0-9]{1,10}){0,3})",
    "an Azure VM size (e.g. Standard_D4s_v5: Standard_<family><vCPUs><features>[_<accelerator>][_v<version>]; "
    "`az vm list-skus --location <region> --resource-type virtualMachines --output table` lists a region's)",
)

# The AgentPool property each pool arg sets, for the properties AKS takes only when it creates a
# pool (the pools' `replace_on_changes` name them): what a change of that arg replaces.
CREATE_ONLY_ARGS: Mapping[str, str] = {
    "vmSize": "vm_size",
    "availabilityZones": "zones",
    "osDiskSizeGB": "os_disk_size_gb",
    "vnetSubnetID": "vnet_subnet_id",
    "gpuProfile": "gpu_driver",
    "scaleSetPriority": "spot",
    "nodeTaints": "taints",
}


@args_class
class AutoscaleArgs:
    """Cluster-autoscaler bounds of a node pool."""

    min: Annotated[int, NODES]
    """Fewest nodes (a bring-your-own preset needs at least one to be admitted by KAITO)."""
    max: Annotated[int, Range(1, MAX_POOL_NODES, "AKS: at most 1000 nodes per pool")]
    """Most nodes."""


class Sized(Protocol):
    """A pool's args as far as its node count goes."""

    @property
    def count(self) -> int | None: ...
    @property
    def autoscale(self) -> AutoscaleArgs | None: ...


def initial_nodes(args: Sized) -> int:
    """Nodes the pool starts with: autoscale.min, else count (default 1)."""
    if args.autoscale is not None:
        return args.autoscale.min
    return 1 if args.count is None else args.count


def most_nodes(args: Sized) -> int:
    """The most nodes the pool may have."""
    return args.autoscale.max if args.autoscale is not None else initial_nodes(args)


def size_problems(args: Sized) -> list[Problem]:
    """`count` or `autoscale`, and autoscale's bounds in order."""
    problems: list[Problem] = []
    if args.count is not None and args.autoscale is not None:
        problems.append(Problem.at("autoscale", "give `count` or `autoscale`, not both", "pool-count"))
    if args.autoscale is not None and args.autoscale.min > args.autoscale.max:
        problems.append(
            Problem.at(
                "autoscale", f"min ({args.autoscale.min}) is greater than max ({args.autoscale.max})", "pool-autoscale"
            )
        )
    return problems


def label_problems(labels: Mapping[str, str]) -> list[Problem]:
    """Labels AKS sets on a pool's nodes itself, which a pool may not set."""
    problems: list[Problem] = []
    for key in labels:
        if key in AGENTPOOL_LABELS or key.startswith("kubernetes.azure.com/"):
            close = did_you_mean(key, ["agentpool"])
            problems.append(
                Problem(
                    ("labels", Key(key)),
                    "AKS sets this label itself; choose a label of your own" + (f" (not {close[0]})" if close else ""),
                    "pool-label",
                )
            )
    return problems


A = TypeVar("A")


def default_name(cls: type[A], resource_name: str) -> Callable[[A], list[Problem]]:
    """The rule that the pool name, when not given, is the resource name, held to AKS's rules."""

    def rule(args: A) -> list[Problem]:
        return [] if getattr(args, "name", None) is not None else resource_name_problems(cls, "name", resource_name)

    return rule


def create_only_args(replaced_on: Sequence[str]) -> list[str]:
    """The args of a pool whose change replaces it, from the properties it replaces on."""
    return [CREATE_ONLY_ARGS[p] for p in replaced_on if p in CREATE_ONLY_ARGS]
