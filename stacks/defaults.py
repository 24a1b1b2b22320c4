"""What the stack decides where its file says nothing: each decision a short pure function, named
for it. They read what the file wrote (`Written`: each section's keys as written, by arg name) and
what the stack knows already; stacks/load.py builds the components' args from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksClusterArgs, NodeSubnetArgs
from kaito_aks.cluster.node_bootstrap import DEFAULT_LIFETIME_DAYS
from kaito_aks.model.placement import off_gpu_by_default
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import AKS_SYSTEM_POOL_LABELS, CpuNodes, agentpool_selector
from kaito_aks.operators.gpu_operator import DEFAULT_VERSION as GPU_OPERATOR_VERSION
from kaito_aks.operators.gpu_provisioner import DEFAULT_VERSION as GPU_PROVISIONER_VERSION
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs, forced_runtime
from kaito_aks.operators.karpenter import DEFAULT_VERSION as KARPENTER_VERSION
from kaito_aks.problems import Key, PathPart
from kaito_aks.vocabulary import Exposure, GpuDiscovery, MetricsFlavour, NodeProvisioner, NodeProvisioning
from stacks.config import DEFAULT_KAITO_VERSION, Generation, StackConfig
from stacks.errors import secret_key

Section = Mapping[str, Any]  # a section's keys as written, by arg name


@dataclass(frozen=True)
class Written:
    """What a stack file writes, as its schema read it: each section's keys as written (by arg
    name; an unusable key left out), and each list's entries (None: an entry with a required key
    missing or unusable, or no map at all)."""

    cluster_kind: str | None = None  # kubeconfig, aks or existing; None: not exactly one written
    cluster: Section | None = None  # None: the cluster section is unusable
    kaito: Section = field(default_factory=dict[str, Any])
    gpu_operator: Section = field(default_factory=dict[str, Any])
    gpu_provisioner: Section = field(default_factory=dict[str, Any])
    karpenter: Section = field(default_factory=dict[str, Any])
    rag_engine_operator: Section = field(default_factory=dict[str, Any])
    pools: tuple[Section | None, ...] = ()
    cpu_pools: tuple[Section | None, ...] = ()
    workspaces: tuple[Section | None, ...] = ()
    rag_engines: tuple[Section | None, ...] = ()
    create_namespaces: bool = True
    endpoints: Section = field(default_factory=dict[str, Any])
    generation: Generation = 1  # kaito-aks:defaults; 1 where the file does not say
    gateway: Section | None = None  # None: not written (no gateway)
    autoscaling: Section | None = None
    metrics: Section | None = None

    @property
    def is_azure(self) -> bool:
        return self.cluster_kind in ("aks", "existing")


# ---------------------------------------------------------------- the cluster


def cluster_location(aks: Section, azure_location: str | None) -> str | None:
    """A created cluster's region: cluster.aks.location, else the azure-native provider's."""
    return aks.get("location") or azure_location


def cluster_tags(aks: Section) -> dict[str, str]:
    """A created cluster's tags say who manages it; the file's own tags come on top."""
    return {"managed-by": "pulumi", "app": "kaito-aks", **aks.get("tags", {})}


def runs_add_on(cluster: AksClusterArgs | None) -> bool:
    """AKS runs KAITO (the AI toolchain operator add-on): the KAITO defaults follow it."""
    return cluster is not None and cluster.ai_toolchain_operator


# ---------------------------------------------------------------- KAITO


def node_provisioning(kaito: Section, add_on: bool) -> NodeProvisioning:
    """byo, or auto with the add-on (it provisions its own nodes and offers no byo)."""
    return kaito.get("node_provisioning") or ("auto" if add_on else "byo")


def kaito_installed(kaito: Section, add_on: bool) -> bool:
    """The stack installs KAITO, unless the add-on runs it."""
    install = kaito.get("install")
    return (not add_on) if install is None else install


def kaito_version(kaito: Section, cluster: AksClusterArgs | None) -> str:
    """kaito.version, else the release the add-on runs on the cluster's Kubernetes minor, else the
    program's default."""
    if kaito.get("version"):
        return kaito["version"]
    return add_on_kaito_version(cluster) if runs_add_on(cluster) else DEFAULT_KAITO_VERSION


def add_on_kaito_version(cluster: AksClusterArgs | None) -> str:
    """The KAITO release the AKS add-on runs on the cluster's Kubernetes minor (an adopted
    cluster's is known only at deploy time: the newest statement). A release this program does
    not support is refused at cluster.aks.kubernetesVersion (stacks/rules.py); the newest
    statement's rules judge the rest meanwhile."""
    table = catalog.aks_add_on()
    release = table.kaito_on(cluster.kubernetes_version if cluster is not None else None)
    return release if release is not None and release in catalog.kaito_charts() else table.kaito_version


def node_provisioner(written: Written, version: str, provisioning: NodeProvisioning, add_on: bool) -> NodeProvisioner:
    """kaito.nodeProvisioner, else KAITO's recommendation where a stack made with generation-2
    defaults can follow it: Karpenter for KAITO 0.12 in auto mode on a cluster the stack creates
    with KAITO it installs (KAITO 0.12's docs call gpu-provisioner deprecated). Everything else,
    and every stack file without `defaults: 2`, keeps gpu-provisioner: no stack changes its
    provisioner because this program was upgraded."""
    given = written.kaito.get("node_provisioner")
    if given is not None:
        return given
    minor = ".".join(version.split(".")[:2])
    recommended = (
        written.generation >= 2
        and minor == "0.12"
        and provisioning == "auto"
        and written.cluster_kind == "aks"
        and kaito_installed(written.kaito, add_on)
        and not add_on
    )
    return "karpenter" if recommended else "gpu-provisioner"


def gpu_discovery(kaito: Section, gpu_operator_on: bool) -> GpuDiscovery:
    """Who labels the GPU nodes: the GPU Operator when this stack installs it, else KAITO's own."""
    return kaito.get("gpu_discovery") or ("external" if gpu_operator_on else "kaito")


# ---------------------------------------------------------------- the operators


def gpu_operator_on(written: Written, auto: bool) -> bool:
    """The GPU Operator drives this stack's GPU pools: on for AKS stacks with pools (KAITO's
    auto-provisioned nodes get AKS's driver instead)."""
    enabled = written.gpu_operator.get("enabled")
    return enabled if enabled is not None else (written.is_azure and bool(written.pools) and not auto)


def gpu_provisioner_on(written: Written, kaito: KaitoOperatorArgs, kaito_install: bool) -> bool:
    """gpu-provisioner serves auto-provisioning of a KAITO this stack installs on AKS."""
    install = written.gpu_provisioner.get("install")
    if install is not None:
        return install
    auto = kaito.node_provisioning == "auto"
    return auto and kaito_install and written.is_azure and kaito.node_provisioner == "gpu-provisioner"


def karpenter_on(written: Written, kaito: KaitoOperatorArgs, kaito_install: bool) -> bool:
    """Karpenter makes the nodes of a KAITO this stack installs in Karpenter mode, on a cluster
    the stack creates (which it creates with the nodes' subnet Karpenter must be given)."""
    install = written.karpenter.get("install")
    if install is not None:
        return install
    karpenter = kaito.node_provisioning == "auto" and kaito.node_provisioner == "karpenter"
    return karpenter and kaito_install and written.cluster_kind == "aks"


def karpenter_version(karpenter: Section, kaito_version: str) -> str:
    """The Karpenter release KAITO pins for its release."""
    return karpenter.get("version") or catalog.karpenter_for_kaito(kaito_version) or KARPENTER_VERSION


def bootstrap_token_lifetime(karpenter: Section, generation: int) -> int | None:
    """karpenter.bootstrapTokenLifetimeDays, else 30 days for a stack of generation 3 (a token
    `pulumi up` renews before it lapses) and, for older stacks, the token that never expires they
    were deployed with: giving it a lifetime replaces it once, so it is warned, not changed."""
    if "bootstrap_token_lifetime_days" in karpenter:
        return karpenter["bootstrap_token_lifetime_days"]
    return DEFAULT_LIFETIME_DAYS if generation >= 3 else None


def node_subnet(aks: Section, karpenter: bool) -> NodeSubnetArgs | None:
    """cluster.aks.nodeSubnet, else one made with the cluster where Karpenter needs it."""
    given: NodeSubnetArgs | None = aks.get("node_subnet")
    if given is not None:
        return given
    return NodeSubnetArgs() if karpenter else None


def gpu_provisioner_version(provisioner: Section, kaito_version: str) -> str:
    """The chart KAITO's own install pairs with its release."""
    return provisioner.get("version") or catalog.gpu_provisioner_for_kaito(kaito_version) or GPU_PROVISIONER_VERSION


def gpu_operator_version(operator: Section) -> str:
    return operator.get("version", GPU_OPERATOR_VERSION)


def rag_operator_on(written: Written, kaito_install: bool) -> bool:
    """The RAGEngine operator comes with ragEngines where the stack installs KAITO."""
    install = written.rag_engine_operator.get("install")
    return (bool(written.rag_engines) and kaito_install) if install is None else install


# ---------------------------------------------------------------- the models


def pools_known(written: Written, provisioning: NodeProvisioning, usable_pools: int) -> bool:
    """The stack knows every pool of a cluster it creates (bring-your-own nodes, every GPU and
    CPU pool entry usable): each model checks where it lands, and the pools' budget is counted."""
    entries = len(written.pools) + len(written.cpu_pools)
    return written.cluster_kind == "aks" and provisioning == "byo" and usable_pools == entries


def stack_wide_model_args(kaito: KaitoOperatorArgs, kaito_section: Section) -> dict[str, Any]:
    """What every model gets from the kaito section (its release, node provisioning, waits), and,
    with the vLLM gate off, the runtime KAITO serves every preset with."""
    waits = ("wait_for_ready", "ready_timeout_minutes", "wait_for_gpu_nodes", "gpu_nodes_timeout_minutes")
    given = {k: kaito_section[k] for k in waits if k in kaito_section}
    forced = forced_runtime(kaito)
    runtime = {"runtime": forced} if forced is not None else {}
    return {
        "kaito_version": kaito.version,
        "node_provisioning": kaito.node_provisioning,
        "node_provisioner": kaito.node_provisioner,
        **given,
        **runtime,
    }


def model_defaults(stack_wide: Mapping[str, Any], entry: Section) -> dict[str, Any]:
    """The stack-wide args a workspace entry takes: all but the forced runtime for a custom image
    (the gate picks how KAITO serves a preset; an image serves itself)."""
    return {k: v for k, v in stack_wide.items() if not (k == "runtime" and entry.get("image"))}


def stack_wide_paths(kaito: KaitoOperatorArgs) -> dict[str, tuple[PathPart, ...]]:
    """Where each stack-wide model arg is written: a model's problem about it is said there."""
    paths: dict[str, tuple[PathPart, ...]] = {
        "kaito_version": ("kaito", "version"),
        "node_provisioning": ("kaito", "node_provisioning"),
        "node_provisioner": ("kaito", "node_provisioner"),
        "wait_for_ready": ("kaito", "wait_for_ready"),
        "ready_timeout_minutes": ("kaito", "ready_timeout_minutes"),
        "wait_for_gpu_nodes": ("kaito", "wait_for_gpu_nodes"),
        "gpu_nodes_timeout_minutes": ("kaito", "gpu_nodes_timeout_minutes"),
        "hf_token": (secret_key("hfToken"),),
    }
    if forced_runtime(kaito) is not None:
        gates = kaito.values.get("featureGates")
        in_values = isinstance(gates, Mapping) and "vLLM" in gates
        paths["runtime"] = (
            "kaito",
            *(("values", Key("featureGates")) if in_values else ("feature_gates",)),
            Key("vLLM"),
        )
    return paths


def allowed_callers(endpoints: Section, entry: Section) -> list[Any]:
    """Who may call a workspace or RAG engine from another namespace: the stack's endpoints.allowFrom,
    then the entry's own."""
    return [*(endpoints.get("allow_from") or []), *(entry.get("allow_from") or [])]


def cpu_model_node_selector(args: KaitoModelArgs, written: Written) -> dict[str, str] | None:
    """On AKS a CPU model that says nothing of where it runs goes to the first CPU pool of mode
    User that a pod tolerating nothing may use (cpuNodePools), else stays on the system pool
    (never on a GPU node): its node_selector, or None to leave it as written."""
    if not written.is_azure or not off_gpu_by_default(args):
        return None
    home = first_cpu_pool(written)
    return agentpool_selector(home) if home is not None else dict(AKS_SYSTEM_POOL_LABELS)


def first_cpu_pool(written: Written) -> str | None:
    """The name of the first usable cpuNodePools entry of mode User without a NoSchedule or
    NoExecute taint, or None."""
    for entry in written.cpu_pools:
        if entry is None or not entry.get("name"):
            continue
        pool = CpuNodes(entry["name"], "", entry.get("mode", "User"), taints=tuple(entry.get("taints") or ()))
        if pool.mode == "User" and pool.untainted:
            return pool.name
    return None


# ---------------------------------------------------------------- serving: gateway, autoscaling, metrics


def gateway_exposure(gateway: Section, cluster_kind: str | None) -> Exposure:
    """An Azure internal load balancer on AKS; a ClusterIP Service elsewhere (the internal load
    balancer's annotation is Azure's)."""
    return gateway.get("exposure") or ("internal" if cluster_kind in ("aks", "existing") else "cluster")


def served_by_vllm(args: KaitoModelArgs) -> bool:
    """A preset that serves with vLLM: what KAITO routes through its gateway extension, and what
    serves vLLM's metrics."""
    return bool(args.model) and args.tuning is None and args.runtime != "transformers"


def routed(entry_gateway: bool | None, args: KaitoModelArgs, has_gateway: bool) -> bool:
    """A workspace goes through the gateway when it says so, else when it is a vLLM preset."""
    return entry_gateway if entry_gateway is not None else has_gateway and served_by_vllm(args)


def scraped(entry_metrics: bool | None, args: KaitoModelArgs, has_metrics: bool) -> bool:
    """A workspace's metrics are scraped when it says so, else when it is a vLLM preset."""
    return entry_metrics if entry_metrics is not None else has_metrics and served_by_vllm(args)


def metrics_flavour(metrics: Section, cluster: AksClusterArgs | None) -> MetricsFlavour:
    """AKS's managed Prometheus on a cluster this stack creates with it, else a prometheus-operator."""
    if metrics.get("flavour"):
        return metrics["flavour"]
    managed = cluster is not None and not cluster.existing and cluster.managed_prometheus
    return "azureManagedPrometheus" if managed else "prometheusOperator"


KUBE_PROMETHEUS_STACK = {"release": "kube-prometheus-stack"}


def metrics_labels(metrics: Section, flavour: MetricsFlavour) -> dict[str, str] | None:
    """kube-prometheus-stack selects the ServiceMonitors labelled release: <its release name>
    (serviceMonitorSelectorNilUsesHelmValues, values.yaml:4476 at 88.5.3): its default name."""
    if "labels" in metrics:
        return metrics["labels"]
    return dict(KUBE_PROMETHEUS_STACK) if flavour == "prometheusOperator" else None


def dashboard_namespace(metrics: Section) -> str:
    return metrics.get("dashboard_namespace") or "monitoring"


def with_gateway_gate(kaito: Section, chart: catalog.KaitoChart | None) -> dict[str, bool]:
    """The feature gates KAITO runs with when the stack has a gateway: its gateway extension on
    (where the release has one this program serves through), unless written."""
    gates = dict(kaito.get("feature_gates", {}))
    if chart is not None and chart.serving is not None:
        gates.setdefault(chart.serving.gate, True)
    return gates


def keda_add_on(written: Written) -> bool:
    """The AKS KEDA add-on is turned on for a cluster this stack creates when autoscaling asks for it."""
    return written.cluster_kind == "aks" and (written.autoscaling or {}).get("keda") == "addon"


# ---------------------------------------------------------------- the generation of the defaults


def generation_note(cfg: StackConfig) -> str | None:
    """What the stack's generation of defaults (kaito-aks:defaults) decides for it, where that
    differs between generations (None: nothing): today, KAITO 0.12's auto-mode provisioner on a
    cluster the stack creates, when kaito.nodeProvisioner does not say it."""
    created = cfg.aks_cluster is not None and not cfg.aks_cluster.existing
    decides = (
        ".".join(cfg.kaito.version.split(".")[:2]) == "0.12"
        and cfg.kaito.node_provisioning == "auto"
        and created
        and cfg.kaito_install
        and not cfg.add_on
        and "kaito.nodeProvisioner" not in cfg.given
    )
    if not decides:
        return None
    if cfg.generation == 1:
        return (
            "defaults generation 1 (the file has no kaito-aks:defaults): KAITO 0.12's nodes come from gpu-provisioner, "
            "as they always have for this stack; a new stack writes `kaito-aks:defaults: 3` and gets Karpenter, "
            "KAITO's recommendation (docs/upgrading.md)"
        )
    return f"defaults generation {cfg.generation}: KAITO 0.12's nodes come from Karpenter (kaito.nodeProvisioner karpenter)"
