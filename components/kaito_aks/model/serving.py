"""A model's rules as part of one service: served through the gateway (`gateway`), scaled by the
load (`autoscale`), scraped by Prometheus (`metrics`). KAITO wires the gateway extension and
keda-kaito-scaler per InferenceSet only, for a vLLM preset; the scaler ignores, without a word,
an InferenceSet whose annotations it cannot use (keda-kaito-scaler@v0.6.2:pkg/controllers/
autoprovision/auto_provision_controller.go:357-423, pkg/scaledobject/provisioner.go:249-340):
so everything it checks is checked here first."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kaito_aks import catalog
from kaito_aks.kaito import sizing
from kaito_aks.model.config import max_model_len
from kaito_aks.model.spec import KaitoModelArgs, chart_of, serving_replicas
from kaito_aks.problems import Key, Problem
from kaito_aks.serving.route import RoutePlan, route_plan
from kaito_aks.serving.scaler import AutoscalePlan, autoscale_plan
from kaito_aks.serving.spec import ModelAutoscaleArgs
from kaito_aks.vocabulary import MetricType

# AKS: at most 100 node pools per cluster (learn.microsoft.com/azure/aks/quotas-skus-regions),
# the system pool one of them; gpu-provisioner makes one pool of one node per NodeClaim
# (Azure/gpu-provisioner@v0.4.3:pkg/providers/instance/instance.go:79-81, 365).
AKS_MAX_NODE_POOLS = 100
AUTO_PROVISIONED_NODES = AKS_MAX_NODE_POOLS - 1
SERVED_MODEL_NAME_KEYS = ("served-model-name", "served_model_name")


def serving_problems(args: KaitoModelArgs) -> list[Problem]:
    """Every rule the model's gateway, autoscale and metrics break (its args have the right types)."""
    chart = chart_of(args)
    if chart is None:
        return []  # (the release's own problem is said)
    problems: list[Problem] = []
    for key in ("gateway", "autoscale"):
        if getattr(args, key) is None:
            continue
        refusal = catalog.serving_refusal(chart)
        if refusal is not None:
            problems.append(Problem.at(key, refusal, "serving-release"))
        elif args.tuning is not None:
            problems.append(Problem.at(key, "a tuning job serves nothing; remove it", "serving-tuning"))
    if args.metrics is not None and args.tuning is not None:
        problems.append(Problem.at("metrics", "a tuning job serves nothing to scrape; remove it", "serving-tuning"))
    if problems or chart.serving is None:
        return problems
    if args.gateway is not None:
        problems += list(_routable(args, chart))
    if args.autoscale is not None:
        problems += list(_autoscale(args, args.autoscale, chart))
    return problems


def serving_warnings(args: KaitoModelArgs) -> list[Problem]:
    """What the scaler cannot be checked for here: a custom image's metrics."""
    if args.autoscale is None or not args.image:
        return []
    return [
        Problem.at(
            ("autoscale", "metric"),
            f"keda-kaito-scaler scrapes {args.autoscale.metric} from /metrics of each replica's Service (port 80): "
            "a custom image must serve it there, or the InferenceSet never scales",
            "autoscale-image",
        )
    ]


def _routable(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """What KAITO makes an InferencePool for, and names predictably."""
    assert chart.serving is not None
    if args.image or args.runtime == "transformers":
        what = "a custom image" if args.image else "the transformers runtime"
        yield Problem.at(
            "gateway",
            f"KAITO makes an InferencePool only for a preset served with vLLM, not {what} "
            "(kaito@v0.12.0:pkg/inferenceset/inferenceset_controller.go:557-561); reach the model through its Service "
            "(kubectl port-forward), or remove `gateway`",
            "not-routable",
        )
        return
    name = args.name or ""
    if len(name) > chart.serving.max_routed_name:
        yield Problem.at(
            "name",
            f"{len(name)} characters; a routed model's name is at most {chart.serving.max_routed_name}: KAITO's Flux "
            f"release (and InferencePool) is named {name}{chart.serving.pool_suffix}, and Flux shortens a release name "
            "over 53 characters to a hash (fluxcd/helm-controller ShortenName), so its pool could not be routed to; "
            "shorten the name",
            "route-name",
        )
    vllm = (args.config or {}).get("vllm")
    for key in SERVED_MODEL_NAME_KEYS:
        if isinstance(vllm, dict) and key in vllm:
            yield Problem.at(
                ("config", "vllm", Key(key)),
                f"the gateway routes by the model id KAITO {chart.version} serves it under, its name ({name}); "
                "another served name would never match its route: remove it",
                "served-model-name",
            )
    for j, adapter in enumerate(args.adapters):
        if adapter.name == name:
            yield Problem.at(
                ("adapters", j, "name"),
                f"the model itself is served as {name}; an adapter of the same id makes its route ambiguous: rename it",
                "route-ids",
            )


def metric_type_of(autoscale: ModelAutoscaleArgs) -> MetricType | None:
    """The metric's kind: as given, else as kaito-aks knows it (None: not known)."""
    return autoscale.metric_type or catalog.vllm_metrics().get(autoscale.metric)


def _autoscale(args: KaitoModelArgs, autoscale: ModelAutoscaleArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """What keda-kaito-scaler would skip without a word, and what cannot scale as asked."""
    if args.replicas != 1:
        yield Problem.at(
            "replicas",
            "give `replicas` or `autoscale`, not both: an autoscaled model starts at `autoscale.min_replicas`",
            "autoscale-replicas",
        )
    if autoscale.min_replicas > autoscale.max_replicas:
        yield Problem.at(
            ("autoscale", "min_replicas"),
            f"{autoscale.min_replicas} is above `max_replicas` ({autoscale.max_replicas}); keda-kaito-scaler would skip the "
            "model (InvalidReplicaRange)",
            "autoscale-range",
        )
    kind = metric_type_of(autoscale)
    if kind is None:
        known = ", ".join(catalog.vllm_metrics())
        yield Problem.at(
            ("autoscale", "metric_type"),
            f"required for {autoscale.metric}, a metric kaito-aks does not know the kind of (gauge or histogram; it "
            f"knows {known})",
            "autoscale-metric",
        )
    elif kind == "gauge" and autoscale.metric_cache_window_seconds is not None:
        yield Problem.at(
            ("autoscale", "metric_cache_window_seconds"),
            f"{autoscale.metric} is a gauge; keda-kaito-scaler takes a cache window for histograms only: remove it",
            "autoscale-window",
        )
    if autoscale.down_threshold > autoscale.up_threshold:
        yield Problem.at(
            ("autoscale", "down_threshold"),
            f"{autoscale.down_threshold:g} is above `up_threshold` ({autoscale.up_threshold:g}); keda-kaito-scaler would "
            "skip the model",
            "autoscale-thresholds",
        )
    yield from _auto_provisioned_fit(args, chart)


def nodes_per_replica(args: KaitoModelArgs, chart: catalog.KaitoChart) -> int | None:
    """The nodes gpu-provisioner makes for one replica of an auto-provisioned preset (its vLLM
    estimate on `instance_type`), each an AKS node pool; None when not known offline, or with
    Karpenter."""
    if args.node_provisioning != "auto" or not args.model or not args.instance_type:
        return None
    if args.node_provisioner == "karpenter":  # Karpenter makes VMs, not one AKS node pool per node
        return None
    preset = catalog.find_preset(args.model, chart.preset_catalog)
    sku = catalog.gpu_skus(chart.sku_catalog).get(args.instance_type)
    if preset is None or sku is None:
        return None
    try:
        return sizing.nodes_on_instance_type(preset, sku, chart.preset_catalog, max_model_len(args))
    except sizing.SizingError:
        return None  # (refused by the instance type's own rule)


def _auto_provisioned_fit(args: KaitoModelArgs, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """With auto-provisioning, KAITO's nodes for every replica up to the maximum must fit the
    pools AKS lets gpu-provisioner make (bring-your-own pools: the pools' own fit and budget)."""
    per_replica = nodes_per_replica(args, chart)
    most = serving_replicas(args)
    if per_replica is not None and per_replica * most > AUTO_PROVISIONED_NODES:
        yield Problem.at(
            ("autoscale", "max_replicas"),
            f"{most} replicas x {per_replica} node(s) of {args.instance_type} need {per_replica * most} nodes; "
            f"gpu-provisioner makes an AKS node pool for each, and AKS allows {AKS_MAX_NODE_POOLS} pools per cluster "
            f"(the system pool one of them): at most {AUTO_PROVISIONED_NODES // per_replica} replicas",
            "autoscale-quota",
        )


def auto_provisioned_budget(models: Sequence[tuple[str, KaitoModelArgs]]) -> list[Problem]:
    """Across the models of one cluster: KAITO's auto-provisioned nodes at their most, one AKS
    node pool each, within AKS's pools per cluster (the system pool and `other_pools` besides)."""
    counted: list[tuple[str, int]] = []
    for who, args in models:
        chart = chart_of(args)
        per_replica = nodes_per_replica(args, chart) if chart is not None else None
        if per_replica is not None:
            counted.append((who, per_replica * serving_replicas(args)))
    total = sum(n for _, n in counted)
    if total <= AUTO_PROVISIONED_NODES or len(counted) < 2:
        return []  # (one model alone: its own rule)
    shares = "; ".join(f"{who} {n}" for who, n in counted)
    return [
        Problem.at(
            (),
            f"KAITO's auto-provisioned nodes at their most number {total} ({shares}); gpu-provisioner makes an AKS node "
            f"pool for each and AKS allows {AKS_MAX_NODE_POOLS} per cluster, the system pool among them: lower "
            "`autoscale.max_replicas`",
            "autoscale-quota",
        )
    ]


def model_ids(args: KaitoModelArgs, chart: catalog.KaitoChart) -> tuple[str, ...]:
    """The `model` values clients send it: its served id (0.12: its name), then each adapter's
    (vLLM serves an adapter under its name too)."""
    name = args.name or ""
    served = name if chart.served_model_id == "inferenceSet" else args.model or name
    return (served, *(a.name for a in args.adapters))


def routed_plan(args: KaitoModelArgs, chart: catalog.KaitoChart) -> RoutePlan | None:
    if args.gateway is None or chart.serving is None:
        return None
    return route_plan(args.name or "", args.namespace, model_ids(args, chart), chart.serving)


def scaled_plan(args: KaitoModelArgs) -> AutoscalePlan | None:
    if args.autoscale is None:
        return None
    kind = metric_type_of(args.autoscale)
    assert kind is not None  # (refused otherwise)
    return autoscale_plan(args.autoscale, kind)


def route_collisions(models: Sequence[tuple[str, KaitoModelArgs]]) -> list[tuple[int, Problem]]:
    """Models routed through a gateway must not share a model id (the header would match two
    routes): (index, problem) of each later one."""
    seen: dict[str, str] = {}
    found: list[tuple[int, Problem]] = []
    for i, (who, args) in enumerate(models):
        chart = chart_of(args)
        if args.gateway is None or chart is None or chart.serving is None:
            continue
        for model in model_ids(args, chart):
            if model in seen and seen[model] != who:
                found.append(
                    (
                        i,
                        Problem.at(
                            "gateway",
                            f"model id {model!r} is routed for {seen[model]} already (a gateway routes one model id to "
                            "one model): rename one of them",
                            "route-ids",
                        ),
                    )
                )
            seen.setdefault(model, who)
    return found
