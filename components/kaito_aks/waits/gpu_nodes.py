"""Wait for the GPU nodes KAITO will admit a preset against, before the preset is created.

In bring-your-own-node mode KAITO's admission webhook (api/v1beta1/workspace_validation.go, at
v0.8.1 and v0.12.0) lists the nodes matching a Workspace's `labelSelector.matchLabels` when the
Workspace is created, and denies it when none match, when one lacks GPU Feature Discovery's
`nvidia.com/gpu.product`, `.count` or `.memory` label, when the matched nodes' GPUs differ, or
when their GPU memory as it reads it is too small. Those labels appear only after the GPU driver
is installed and GFD has run: minutes after a pool is created, and nothing Helm waits on. So a
first `pulumi up` would race GPU discovery; `GpuNodesReady` is the step in the graph that waits
for it. It passes when every matched node is Ready, advertises `nvidia.com/gpu` and carries
those labels, and KAITO's own arithmetic (kaito_aks/kaito_sizing.py) admits the preset on the nodes
found; it exports what it found: the hardware KAITO sizes the model against.

Custom-image Workspaces and tuning are not checked by the webhook, so nothing waits for them.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi
from pulumi import dynamic

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.vocabulary import GpuDemand, selector_text
from kaito_aks.waits import args as wait_args
from kaito_aks.waits.answers import conditions_of, field_at, items_of, labels_of, text_at
from kaito_aks.waits.args import check_wait_args
from kaito_aks.waits.base import Check, ClusterWaitProvider, poll, wait_options
from kaito_aks.waits.kube_client import Reader

GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_COUNT = "nvidia.com/gpu.count"
GPU_MEMORY = "nvidia.com/gpu.memory"  # one GPU's memory, MiB
GFD_LABELS = (GPU_PRODUCT, GPU_COUNT, GPU_MEMORY)
GPU_RESOURCE = "nvidia.com/gpu"  # what the NVIDIA device plugin advertises
# What the wait exports: the hardware KAITO sizes against.
OUTPUTS = ("nodes", "gpuProduct", "gpusPerNode", "gpuMemoryMiB", "gpuMemoryMiBPerNode")
DEFAULT_TIMEOUT_MINUTES = 20

GFD_HINT = (
    "is GPU Feature Discovery running on the pool? With the GPU Operator it starts only after the driver is "
    "installed (kubectl -n gpu-operator get pods); with KAITO's bundled discovery (gpu_discovery kaito), its GFD labels "
    "the nodes (kubectl -n kaito-workspace get pods)"
)


def _names(nodes: list[dict[str, Any]]) -> str:
    names = sorted(str(text_at(n, "metadata", "name")) for n in nodes)
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _is_ready(node: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions_of(node))


def _gpus_allocatable(node: dict[str, Any]) -> bool:
    value = field_at(node, "status", "allocatable", GPU_RESOURCE) or field_at(node, "status", "capacity", GPU_RESOURCE)
    return isinstance(value, str | int) and str(value).isdigit() and int(value) > 0


def survey(nodes: list[dict[str, Any]], selector: dict[str, str], demands: GpuDemand | list[GpuDemand] | None) -> Check:
    """Judge the nodes that match `selector` (listed by its matchLabels, as KAITO lists them)
    for every preset that will be admitted on them."""
    if isinstance(demands, GpuDemand):
        demands = [demands]
    from kaito_aks.kaito.sizing import NodeGpus, admission_denial

    sel = selector_text(selector)
    if not nodes:
        return Check(
            False,
            f"no node matches {sel}",
            "does the GPU pool exist, with at least one node (autoscale.min >= 1)? KAITO's webhook denies a preset "
            "Workspace until a matching node exists, and a pool at zero never scales up for a Workspace it denied",
        )
    for label in GFD_LABELS:
        unlabelled = [n for n in nodes if label not in labels_of(n)]
        if unlabelled:
            return Check(False, f"node(s) {_names(unlabelled)} matching {sel} do not carry {label}", GFD_HINT)

    hardware: dict[str, NodeGpus] = {}
    for n in nodes:
        labels, name = labels_of(n), str(text_at(n, "metadata", "name"))
        if not (labels[GPU_COUNT].isdigit() and labels[GPU_MEMORY].isdigit()):
            return Check(
                False,
                f"node {name} has {GPU_COUNT}={labels[GPU_COUNT]!r} and {GPU_MEMORY}={labels[GPU_MEMORY]!r}, which "
                "KAITO cannot read (integers expected)",
                "check the GPU Feature Discovery version on the pool",
                fatal=True,
            )
        hardware[name] = NodeGpus(labels[GPU_PRODUCT], int(labels[GPU_COUNT]), int(labels[GPU_MEMORY]))
    kinds = {(hw.product, hw.count, hw.gib_per_gpu) for hw in hardware.values()}
    if len(kinds) > 1:
        shown = ", ".join(f"{name}: {hw.count} x {hw.product}" for name, hw in sorted(hardware.items())[:6])
        return Check(
            False,
            f"the nodes matching {sel} have different GPUs ({shown}); KAITO denies a Workspace whose nodes differ "
            '("Non-uniform GPU product")',
            'narrow labelSelector to one pool, e.g. {"matchLabels": {"agentpool": "<pool>"}}',
            fatal=True,
        )
    # KAITO admits on labels alone; its pods need a Ready node that advertises GPUs (one node in
    # an upgrade or being removed must not block the rest).
    if not any(_is_ready(n) for n in nodes):
        return Check(False, f"no node matching {sel} is Ready ({_names(nodes)})", "kubectl describe node")
    if not any(_is_ready(n) and _gpus_allocatable(n) for n in nodes):
        return Check(
            False,
            f"no Ready node matching {sel} advertises {GPU_RESOURCE} ({_names(nodes)})",
            "is the NVIDIA device plugin running on them (the GPU Operator's, or KAITO's bundled one with gpu_discovery kaito)?",
        )
    hw = next(iter(hardware.values()))
    for demand in demands or []:
        if demand.bypass_resource_checks:  # KAITO skips its GPU count and memory checks for it (its annotation)
            continue
        denial = admission_denial(demand, hw, len(nodes), demand.release)
        if denial is not None:
            return Check(
                False,
                f"KAITO {demand.release} would deny {demand.name} on the {len(nodes)} node(s) matching {sel} "
                f"({hw.count} x {hw.product}, {hw.memory_mib} MiB each): {denial}",
                "wait for more nodes to join, or use a larger VM size (kaito_aks.kaito.sizing.estimate gives the counts)",
            )
    return Check(
        True,
        found={
            "nodes": sorted(hardware),
            "gpuProduct": hw.product,
            "gpusPerNode": hw.count,
            "gpuMemoryMiB": hw.memory_mib,
            "gpuMemoryMiBPerNode": hw.memory_mib * hw.count,
        },
    )


FORBIDDEN = "KAITO lists nodes at admission and so does this wait: grant `list` on nodes, or turn the wait off (wait_for_gpu_nodes / waitForGpuNodes)"


def wait_for_gpu_nodes(
    client: Reader,
    selector: dict[str, str],
    demand: GpuDemand | list[GpuDemand] | None,
    timeout_seconds: float,
    **clock: Any,
) -> dict[str, Any]:
    """Poll the nodes (listed by matchLabels, as KAITO lists them) until `survey` passes."""
    query = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))

    def look() -> Check:
        return survey(items_of(client.get("/api/v1/nodes", labelSelector=query), "nodes", named=True), selector, demand)

    def explain(said: str) -> str:
        from kaito_aks.diagnose import explain_nodes  # (it reads the waits' own readers)

        return explain_nodes(client, selector).explain(said)

    return poll(look, timeout_seconds, forbidden=FORBIDDEN, explain=explain, **clock)


class GpuNodesProvider(ClusterWaitProvider):
    def id_of(self, props: dict[str, Any]) -> str:
        return "gpu-nodes-" + hashlib.sha256(selector_text(props["selector"]).encode()).hexdigest()[:12]

    compared = ("selector", "demand", "demands", "workspaces")  # a new Workspace re-checks, as KAITO will

    def wait(self, client: Reader, props: dict[str, Any]) -> dict[str, Any]:
        given: list[dict[str, Any]] = props.get("demands") or []
        demands = [GpuDemand.from_props(d) for d in given]
        if props.get("demand"):
            demands.append(GpuDemand.from_props(props["demand"]))
        return wait_for_gpu_nodes(client, props["selector"], demands, float(props["timeoutSeconds"]))


_PROVIDER = GpuNodesProvider()


class GpuNodesReady(dynamic.Resource, module="kaito-aks", name="GpuNodesReady"):
    """Holds what depends on it until KAITO would admit `demand` on the nodes `selector` matches.

    Outputs (as GPU Feature Discovery labelled the nodes): `nodes`, `gpuProduct`, `gpusPerNode`,
    `gpuMemoryMiB` (one GPU) and `gpuMemoryMiBPerNode`."""

    nodes: pulumi.Output[list[str]]
    gpuProduct: pulumi.Output[str]  # noqa: N815 - the output's name in state
    gpusPerNode: pulumi.Output[int]  # noqa: N815
    gpuMemoryMiB: pulumi.Output[int]  # noqa: N815
    gpuMemoryMiBPerNode: pulumi.Output[int]  # noqa: N815

    def __init__(
        self,
        name: str,
        access: ClusterAccess,
        selector: dict[str, str],
        demand: GpuDemand | list[GpuDemand] | None,
        workspaces: list[str],
        timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`selector`: the Workspaces' matchLabels; `demand`: what KAITO asks of the nodes for
        the preset (or each preset, when one wait guards several models on the same nodes);
        `workspaces`: the objects it guards (a new one re-runs the check); `timeout_minutes`:
        how long to wait before failing the update."""
        check_wait_args(
            "GpuNodesReady",
            name,
            access,
            selector=(selector, wait_args.labels),
            demand=(
                demand,
                wait_args.optional(
                    wait_args.either(
                        wait_args.instance(GpuDemand, "a GpuDemand, or a list of them"),
                        wait_args.list_of(GpuDemand, "a GpuDemand"),
                    )
                ),
            ),
            workspaces=(workspaces, wait_args.list_of(str, "a Workspace name")),
            timeout_minutes=(timeout_minutes, wait_args.minutes),
            opts=(opts, wait_args.optional(wait_args.instance(pulumi.ResourceOptions, "pulumi.ResourceOptions"))),
        )
        several = isinstance(demand, list)
        props: dict[str, Any] = {
            "selector": dict(selector),
            "demand": None if several or demand is None else demand.as_props(),  # type: ignore[union-attr]
            **({"demands": [d.as_props() for d in demand]} if isinstance(demand, list) else {}),
            "workspaces": list(workspaces),
            **access.props(),
            "timeoutSeconds": timeout_minutes * 60,
            **dict.fromkeys(OUTPUTS),
        }
        super().__init__(_PROVIDER, name, props, wait_options(access, opts))

    @classmethod
    def type_token(cls) -> str:
        """The type it registers as (the SDK derives a dynamic resource's type itself)."""
        return f"pulumi-python:{cls._resource_type_name}"

    def found(self) -> pulumi.Output[dict[str, Any]]:
        """The outputs as one map (what the stack exports per workspace)."""
        return pulumi.Output.all(**{k: getattr(self, k) for k in OUTPUTS})
