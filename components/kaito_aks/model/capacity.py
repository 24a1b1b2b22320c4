"""What a model puts on the cluster's non-GPU nodes, for the capacity budget: its endpoint picker
when the gateway routes it (KAITO 0.12 makes one per InferenceSet, with no tolerations or node
selector), and a CPU model's own pods (its `resources`, or the program's default, per replica,
on the nodes its selectors pick)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaito_aks.capacity import Capacity, PodSet, pods_of
from kaito_aks.catalog import kaito_charts
from kaito_aks.catalog.capacity import cpu_millicores, memory_mib, pod_requests
from kaito_aks.model.placement import cpu_node_labels
from kaito_aks.model.plan import DEFAULT_TEMPLATE_RESOURCES
from kaito_aks.model.spec import KaitoModelArgs, is_gpu, serving_replicas
from kaito_aks.parsed import is_dict
from kaito_aks.problems import PathPart

# The taint keys KAITO's pods tolerate (pkg/workspace/inference tolerations: sku=gpu, nvidia.com/gpu;
# from 0.11 with spotInstance AKS's spot taint): a custom image's pod may go where they are.
KAITO_TOLERATED = ("sku", "nvidia.com/gpu")
SPOT_KEY = "kubernetes.azure.com/scalesetpriority"


def model_capacity(args: KaitoModelArgs, who: str, at: tuple[PathPart, ...] = ()) -> Capacity:
    """The model's pods on non-GPU nodes (`who`: how the budget names the model; `at`: where a
    problem about it is said)."""
    bypassed = "capacity" in args.bypass_checks
    pods: tuple[PodSet, ...] = ()
    chart = kaito_charts().get(args.kaito_version)
    routed = args.gateway is not None and chart is not None and chart.serving is not None and not args.image
    if routed:
        kinds = pod_requests().pods.endpoint_picker.get(args.kaito_version, [])
        pods += pods_of(kinds, who=f"endpoint picker of {who}", at=at, model=True, bypassed=bypassed)
    if not is_gpu(args) and args.image:
        requests = _requests(args.resources)
        tolerated = (*KAITO_TOLERATED, *((SPOT_KEY,) if chart is not None and chart.spot_toleration else ()))
        pods += (
            PodSet(
                who=f"{who} (a CPU model)",
                cpu_m=requests[0],
                memory_mi=requests[1],
                replicas=serving_replicas(args),
                selector=cpu_node_labels(args),
                tolerates=tolerated,
                source="its resources" if args.resources else "the program's default for a custom image's container",
                at=at,
                model=True,
                bypassed=bypassed,
            ),
        )
    return Capacity(pods=pods)


def _requests(resources: Mapping[str, Any] | None) -> tuple[int, int]:
    """(millicores, MiB) the container requests: `resources.requests`, each defaulting to its
    limit as Kubernetes does, else the program's default."""
    given: Mapping[str, Any] = resources if resources is not None else DEFAULT_TEMPLATE_RESOURCES
    requests: Any = given.get("requests")
    limits: Any = given.get("limits")
    out: list[int] = []
    for key, parse in (("cpu", cpu_millicores), ("memory", memory_mib)):
        raw = requests.get(key) if is_dict(requests) else None
        if raw is None and is_dict(limits):
            raw = limits.get(key)
        out.append((parse(raw) or 0) if isinstance(raw, str | int | float) else 0)
    return out[0], out[1]
