"""What the stack decides where its file says nothing, decided once: `decide(written)` makes a
frozen record of every decision, before any args are built. Each field's docstring is the
default the configuration reference prints for the key it decides (stacks/config.py names
them); the builder (stacks/build.py) and the rules (stacks/judge.py) only read the record."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import NodeSubnetArgs
from kaito_aks.cluster.node_bootstrap import DEFAULT_LIFETIME_DAYS
from kaito_aks.model.rules import needs_hf_token
from kaito_aks.model.spec import KaitoModelArgs, serves_with_vllm
from kaito_aks.model_streaming import GATES as STREAMING_GATES
from kaito_aks.model_streaming import streaming_problem
from kaito_aks.nodes import AKS_SYSTEM_POOL_LABELS, CpuNodes, agentpool_selector
from kaito_aks.operators.gpu_provisioner import DEFAULT_VERSION as GPU_PROVISIONER_VERSION
from kaito_aks.operators.kaito_operator import runtime_forced_by
from kaito_aks.operators.karpenter import DEFAULT_VERSION as KARPENTER_VERSION
from kaito_aks.schema import fields as args_fields
from kaito_aks.vocabulary import Exposure, GpuDiscovery, MetricsFlavour, NodeProvisioner, NodeProvisioning

DEFAULT_KAITO_VERSION = "0.8.1"
# The generations of the program's defaults (`kaito-aks:defaults`): a stack file without the key
# keeps the defaults it was written against (1); new stacks write the newest. docs/upgrading.md
# lists what each generation changes.
Generation = Literal[1, 2, 3]
NEWEST_GENERATION = 3
TOKEN_GENERATION = 3  # the first generation that gives hfToken only where needed (stacks/hf_token.py)
KUBE_PROMETHEUS_STACK = {"release": "kube-prometheus-stack"}

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


@dataclass(frozen=True)
class Decisions:
    """Every default the stack decides, once. A field's docstring is its key's default in the
    configuration reference (docs/configuration.md)."""

    written: frozenset[str]
    """(The settings the file writes whose default depends on others, e.g. kaito.install: the
    rules tell a written one from a decided one.)"""
    azure: bool
    """(An AKS cluster: cluster.aks or cluster.existing.)"""
    add_on: bool
    """(AKS runs KAITO: the AI toolchain operator add-on.)"""
    cluster_location: str | None
    """`azure-native:location`."""
    node_subnet: NodeSubnetArgs | None
    """made with the cluster when Karpenter is installed (Karpenter must be given the nodes'
    subnet), else AKS's managed VNet. Set at creation only: a cluster created without it keeps
    AKS's VNet (refused at deploy time, not applied)."""
    keda_add_on: bool
    """(The AKS KEDA add-on is turned on for a cluster this stack creates when autoscaling.keda
    asks for it.)"""
    kaito_version: str
    """0.8.1, or with the AKS add-on the release it runs on the cluster's Kubernetes minor
    (catalog/aks_add_on.yaml: 0.6.0 on 1.34, on a newer minor, or when the minor is not known)."""
    node_provisioning: NodeProvisioning
    """byo, or auto with the AKS add-on."""
    kaito_install: bool
    """true, false with the AKS add-on."""
    node_provisioner: NodeProvisioner
    """karpenter for KAITO 0.12 on cluster.aks in a stack of `defaults: 2` or newer (KAITO's own
    recommendation), gpu-provisioner otherwise (every stack without the defaults key keeps it)."""
    generation_decides: bool
    """(The stack's generation of defaults decided kaito.nodeProvisioner: KAITO 0.12 in auto
    mode on a cluster this stack creates, with the KAITO it installs.)"""
    gpu_operator: bool
    """on for AKS stacks with GPU pools, off for kubeconfig stacks (and with
    kaito.nodeProvisioning auto: KAITO's nodes get AKS's driver)."""
    gpu_discovery: GpuDiscovery
    """external when this stack installs the GPU Operator, else kaito."""
    feature_gates: Mapping[str, bool]
    """(kaito.featureGates, with KAITO's gateway extension gate on when the stack has a gateway
    and installs KAITO, and the streaming gates with model streaming.)"""
    model_streaming: bool
    """on for KAITO 0.12 installed on cluster.aks in a stack of `defaults: 3`, off otherwise (no
    existing stack changes)."""
    generation_streams: bool
    """(The stack's generation of defaults decides kaito.modelStreaming: not written, KAITO 0.12
    installed on a cluster this stack creates, not the add-on.)"""
    streaming: bool
    """(Model streaming wired: asked, where KAITO can stream (0.11+, AKS, not the add-on) and the
    file turns none of its gates off; stacks/streaming.py says why not.)"""
    forced_runtime: Literal["transformers"] | None
    """(With kaito.featureGates.vLLM false KAITO serves every preset with transformers.)"""
    gpu_provisioner: bool
    """on with kaito.nodeProvisioning auto when this stack installs KAITO on an AKS cluster
    (cluster.aks or cluster.existing)."""
    gpu_provisioner_version: str
    """the one KAITO's own install pairs with kaito.version (0.8: 0.3.8, 0.11: 0.4.2, 0.12: 0.4.3)."""
    karpenter: bool
    """on with kaito.nodeProvisioner karpenter when this stack installs KAITO on a cluster it
    creates (cluster.aks). false: Karpenter runs there already."""
    karpenter_version: str
    """the one KAITO pins for kaito.version (0.11, 0.12: 1.12.0)."""
    bootstrap_token_lifetime: int | None
    """30 in a stack of `defaults: 3`; older stacks keep the token they were deployed with, which
    never expires (warned: giving a lifetime replaces it once)."""
    rag_operator: bool
    """on when the stack has ragEngines and installs KAITO (kaito.install)."""
    pools_known: bool
    """(Every GPU and CPU pool the models and engines may land on is one the stack knows: a
    cluster it creates, bring-your-own nodes, every pool entry usable.)"""
    routed: tuple[bool, ...]
    """true for a vLLM preset when the stack has a gateway."""
    scraped: tuple[bool, ...]
    """true for a vLLM preset when the stack has metrics."""
    hf_token: tuple[bool, ...]
    """from `kaito-aks:defaults: 3`, only the models that need one (a gated repository, a preset
    KAITO's webhook denies without one; `models list` says which), so adding or rotating the token
    replaces no other model; before generation 3, every model whose weights are downloaded at
    start-up."""
    streamed: tuple[bool, ...]
    """(With model streaming, the workspaces KAITO streams the weights of: vLLM presets.)"""
    cpu_home: tuple[Mapping[str, str] | None, ...]
    """on AKS for a CPU model without labelSelector: the first cpuNodePools entry of mode User
    without a NoSchedule or NoExecute taint (its agentpool), else kubernetes.azure.com/mode:
    system, the system pool, so it never takes a GPU node."""
    gateway_exposure: Exposure
    """internal on AKS (cluster.aks, cluster.existing), cluster with cluster.kubeconfig."""
    metrics_flavour: MetricsFlavour
    """azureManagedPrometheus with cluster.aks.managedPrometheus, else prometheusOperator."""
    metrics_labels: Mapping[str, str] | None
    """with prometheusOperator: release: kube-prometheus-stack (kube-prometheus-stack selects only
    ServiceMonitors labelled with its Helm release's name; say yours), none with
    azureManagedPrometheus."""
    dashboard: bool
    """(The Grafana dashboard ConfigMap: with metrics, prometheusOperator and dashboard not false.)"""
    dashboard_namespace: str
    """monitoring."""


# A field on one line and the docstring under it. (A dataclass keeps no field docstrings; read
# from this module's text, not with `ast` or `inspect.getsource`: kaito_aks/provider.py says why.)
_FIELD_DOC = re.compile(r'^    (\w+): [^\n]*\n    """(.*?)"""', re.S | re.M)


def decision_docs() -> dict[str, str]:
    """Each decision's docstring, by field, on one line: what the configuration reference
    prints as the default of the key it decides."""
    text = Path(__file__).read_text()
    start = text.index("\nclass Decisions:")
    body = text[start : text.index("\n\n\n", start)]
    docs = {name: " ".join(doc.split()) for name, doc in _FIELD_DOC.findall(body)}
    assert set(docs) == {f.name for f in fields(Decisions)}, "every decision has its docstring"
    return docs


def decide(written: Written, azure_location: str | None = None) -> Decisions:
    """Every decision of the stack, from what its file writes (and the azure-native provider's
    location): computed here once, in order (each step reads those before it), read everywhere
    else."""
    made = _cluster(written, azure_location)
    made |= _kaito(written, made)
    made |= _streaming(written, made)
    made |= _operators(written, made)
    made |= _models(written, made)
    made |= _serving(written, made)
    return Decisions(written=_written_settings(written), **made)


def _cluster(written: Written, azure_location: str | None) -> dict[str, Any]:
    cluster = written.cluster or {}
    azure = written.cluster_kind in ("aks", "existing")
    return {
        "azure": azure,
        "add_on": azure and bool(cluster.get("ai_toolchain_operator")),
        "cluster_location": cluster.get("location") or azure_location,
        "keda_add_on": written.cluster_kind == "aks" and (written.autoscaling or {}).get("keda") == "addon",
    }


def _kaito(written: Written, made: dict[str, Any]) -> dict[str, Any]:
    """KAITO's release, node provisioning and provisioner, whether the stack installs it, its gates."""
    kaito, add_on = written.kaito, made["add_on"]
    provisioning: NodeProvisioning = kaito.get("node_provisioning") or ("auto" if add_on else "byo")
    install = kaito.get("install")
    kaito_install = (not add_on) if install is None else bool(install)
    # (the add-on's release on a minor this program knows no rules of is refused: stacks/rules.py)
    cluster = written.cluster or {}
    add_on_release = catalog.aks_add_on().judged_by(cluster.get("kubernetes_version")) if add_on else None
    version = kaito.get("version") or add_on_release or DEFAULT_KAITO_VERSION
    created = written.cluster_kind == "aks"
    recommended = provisioning == "auto" and _generation_decides(version, created, kaito_install, add_on)
    generation_decides = recommended and "node_provisioner" not in kaito
    return {
        "kaito_version": version,
        "node_provisioning": provisioning,
        "kaito_install": kaito_install,
        "node_provisioner": kaito.get("node_provisioner")
        or ("karpenter" if generation_decides and written.generation >= 2 else "gpu-provisioner"),
        "generation_decides": generation_decides,
    }


def _streaming(written: Written, made: dict[str, Any]) -> dict[str, Any]:
    """Model streaming (asked, wired, whether the generation decides it) and the gates KAITO gets."""
    version, install, add_on = made["kaito_version"], made["kaito_install"], made["add_on"]
    given = written.kaito.get("model_streaming")  # (written wins; else generation 3 streams where it decides)
    by_generation = given is None and _generation_decides(version, written.cluster_kind == "aks", install, add_on)
    asked = bool(given) if given is not None else by_generation and written.generation >= 3
    streaming = asked and _may_stream(written, version, install, add_on)
    gates = _feature_gates(written, version, install, streaming)
    return {
        "model_streaming": asked,
        "generation_streams": by_generation,
        "streaming": streaming,
        "feature_gates": gates,
        "forced_runtime": runtime_forced_by(version, gates, written.kaito.get("values", {})),
    }


def _generation_decides(version: str, created: bool, kaito_install: bool, add_on: bool) -> bool:
    """Whether the generation of the defaults decides for a stack (its provisioner in auto mode,
    model streaming): one that installs KAITO 0.12 on a cluster it creates (not the add-on)."""
    return _minor(version) == "0.12" and created and kaito_install and not add_on


def _may_stream(written: Written, version: str, kaito_install: bool, add_on: bool) -> bool:
    """Where KAITO can stream what the stack asks: a release with the gates, AKS without the
    add-on, none of the gates written off (stacks/streaming.py says why not)."""
    azure = written.cluster_kind in ("aks", "existing") and written.cluster is not None
    off = streaming_gates_off(written, kaito_install)
    return streaming_problem(version) is None and azure and not add_on and not off


def streaming_gates_off(written: Written, kaito_install: bool) -> list[str]:
    """The streaming gates the stack file turns off (kaito.featureGates, kaito.values.featureGates)
    for a KAITO it installs."""
    if not kaito_install:
        return []
    extra = written.kaito.get("values", {}).get("featureGates")
    gates = {**written.kaito.get("feature_gates", {}), **(extra if isinstance(extra, dict) else {})}
    return [g for g in STREAMING_GATES if gates.get(g) is False]


def _operators(written: Written, made: dict[str, Any]) -> dict[str, Any]:
    """Which operators the stack installs (the GPU Operator, gpu-provisioner, Karpenter, the
    RAGEngine operator), their releases, and the nodes' subnet Karpenter needs."""
    auto, install, version = made["node_provisioning"] == "auto", made["kaito_install"], made["kaito_version"]
    # (a switch written wins: _given)
    created = written.cluster_kind == "aks"
    gpu_operator = _given(written.gpu_operator, "enabled", made["azure"] and bool(written.pools) and not auto)
    provisioner = made["node_provisioner"]
    karpenter = _given(written.karpenter, "install", auto and provisioner == "karpenter" and install and created)
    default_provisioner = auto and install and made["azure"] and provisioner == "gpu-provisioner"
    subnet = (written.cluster or {}).get("node_subnet")
    return {
        "gpu_operator": gpu_operator,
        "gpu_discovery": written.kaito.get("gpu_discovery") or ("external" if gpu_operator else "kaito"),
        "gpu_provisioner": _given(written.gpu_provisioner, "install", default_provisioner),
        "karpenter": karpenter,
        **_provisioner_releases(written, version),
        "node_subnet": subnet or (NodeSubnetArgs() if karpenter and created else None),
        "rag_operator": _given(written.rag_engine_operator, "install", bool(written.rag_engines) and install),
    }


def _provisioner_releases(written: Written, version: str) -> dict[str, str]:
    """The gpu-provisioner and Karpenter releases KAITO's own install pairs with its release."""
    return {
        "gpu_provisioner_version": written.gpu_provisioner.get("version")
        or catalog.gpu_provisioner_for_kaito(version)
        or GPU_PROVISIONER_VERSION,
        "karpenter_version": written.karpenter.get("version")
        or catalog.karpenter_for_kaito(version)
        or KARPENTER_VERSION,
        # (written, even null: a token that never expires; else the generation's)
        "bootstrap_token_lifetime": written.karpenter.get(
            "bootstrap_token_lifetime_days", DEFAULT_LIFETIME_DAYS if written.generation >= 3 else None
        ),
    }


def _given(section: Section, key: str, default: bool) -> bool:
    """A switch as written, else its default."""
    value = section.get(key)
    return default if value is None else bool(value)


def _models(written: Written, made: dict[str, Any]) -> dict[str, Any]:
    """Each workspace's part: routed, scraped, where a CPU model runs; whether every pool is known."""
    entries = [e for e in written.workspaces if e is not None]
    forced, version, provisioning = made["forced_runtime"], made["kaito_version"], made["node_provisioning"]
    known = written.cluster_kind == "aks" and provisioning == "byo"
    return {
        "pools_known": known and None not in (*written.pools, *written.cpu_pools),
        "routed": tuple(_by_default(e, "gateway", written.gateway is not None, forced, version) for e in entries),
        "scraped": tuple(_by_default(e, "metrics", written.metrics is not None, forced, version) for e in entries),
        "hf_token": tuple(gets_hf_token(e, version, written.generation) for e in entries),
        "streamed": tuple(
            made["streaming"]
            and not e.get("image")
            and serves_with_vllm(e.get("model"), e.get("tuning"), _runtime(e, forced))
            for e in entries
        ),
        "cpu_home": tuple(_cpu_home(e, written, provisioning) for e in entries),
    }


def gets_hf_token(entry: Section, kaito_version: str, generation: Generation) -> bool:
    """Whether a workspace entry is given the stack's hfToken: its own useHfToken where written;
    else, from generation 3, only a model that needs one; before it, every model."""
    asked = entry.get("use_hf_token")
    if asked is not None:
        return bool(asked)
    if generation < TOKEN_GENERATION:
        return True
    return not entry.get("image") and needs_hf_token(str(entry.get("model") or ""), kaito_version)


def _serving(written: Written, made: dict[str, Any]) -> dict[str, Any]:
    """The gateway's exposure, the metrics' flavour and labels, the dashboard."""
    flavour = _metrics_flavour(written)
    metrics = written.metrics
    return {
        "gateway_exposure": (written.gateway or {}).get("exposure") or ("internal" if made["azure"] else "cluster"),
        "metrics_flavour": flavour,
        "metrics_labels": _metrics_labels(written, flavour),
        "dashboard": metrics is not None and bool(metrics.get("dashboard", True)) and flavour == "prometheusOperator",
        "dashboard_namespace": (metrics or {}).get("dashboard_namespace") or "monitoring",
    }


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _feature_gates(written: Written, version: str, kaito_install: bool, streaming: bool) -> dict[str, bool]:
    """The feature gates the stack gives KAITO: as written, with a gateway KAITO's gateway
    extension on (where the release has one this program serves through), and with model
    streaming its gates on, unless written."""
    gates = dict(written.kaito.get("feature_gates", {}))
    if streaming and kaito_install:
        gates = {**dict.fromkeys(STREAMING_GATES, True), **gates}
    chart = catalog.kaito_charts().get(version)
    if written.gateway is not None and kaito_install and chart is not None and chart.serving is not None:
        gates.setdefault(chart.serving.gate, True)
    return gates


def _model_value(entry: Section, name: str) -> Any:
    """A workspace's arg as its args will have it: written, else the arg's default."""
    return entry[name] if name in entry else args_fields(KaitoModelArgs)[name].default_value()


def _runtime(entry: Section, forced: str | None) -> Any:
    """The runtime KAITO serves the entry with (with the vLLM gate off: transformers; an image
    serves itself)."""
    return entry.get("runtime") or (forced if not entry.get("image") else None)


def _by_default(entry: Section, key: str, section: bool, forced: str | None, version: str) -> bool:
    """Whether a workspace is routed (scraped): where the stack has a gateway (metrics), when the
    entry says so, else when it is a vLLM preset; a route only where the release serves through
    a gateway (else the gateway's refusal says why)."""
    if key == "gateway":
        chart = catalog.kaito_charts().get(version)
        section = section and chart is not None and chart.serving is not None
    if not section:
        return False
    if entry.get(key) is not None:
        return bool(entry[key])
    return serves_with_vllm(entry.get("model"), entry.get("tuning"), _runtime(entry, forced))


def _cpu_home(entry: Section, written: Written, provisioning: NodeProvisioning) -> Mapping[str, str] | None:
    """On AKS a CPU model that says nothing of where it runs goes to the first CPU pool of mode
    User that a pod tolerating nothing may use (cpuNodePools), else stays on the system pool
    (never on a GPU node); None: as written."""
    runtime = entry.get("runtime")
    off_gpu = (
        _model_value(entry, "compute") != "gpu"
        and runtime != "vllm"
        and bool(entry.get("image"))
        and entry.get("node_provisioning", provisioning) == "byo"
        and entry.get("label_selector") is None
        and entry.get("node_selector") is None
    )
    if written.cluster_kind not in ("aks", "existing") or not off_gpu:
        return None
    for pool in written.cpu_pools:
        if pool is None or not pool.get("name"):
            continue
        nodes = CpuNodes(pool["name"], "", pool.get("mode", "User"), taints=tuple(pool.get("taints") or ()))
        if nodes.mode == "User" and nodes.untainted:
            return agentpool_selector(nodes.name)
    return dict(AKS_SYSTEM_POOL_LABELS)


def _metrics_flavour(written: Written) -> MetricsFlavour:
    """AKS's managed Prometheus on a cluster this stack creates with it, else a prometheus-operator."""
    given = (written.metrics or {}).get("flavour")
    if given:
        return given
    managed = written.cluster_kind == "aks" and bool((written.cluster or {}).get("managed_prometheus"))
    return "azureManagedPrometheus" if managed else "prometheusOperator"


def _metrics_labels(written: Written, flavour: MetricsFlavour) -> Mapping[str, str] | None:
    """kube-prometheus-stack selects the ServiceMonitors labelled release: <its release name>
    (serviceMonitorSelectorNilUsesHelmValues, values.yaml:4476 at 88.5.3): its default name."""
    metrics = written.metrics or {}
    if "labels" in metrics:
        return metrics["labels"]
    return dict(KUBE_PROMETHEUS_STACK) if flavour == "prometheusOperator" else None


def _written_settings(written: Written) -> frozenset[str]:
    """The settings the file writes whose default depends on others (the rules tell a written
    one from a decided one)."""
    present = {
        "kaito.install": written.kaito.get("install") is not None,
        "kaito.nodeProvisioning": written.kaito.get("node_provisioning") is not None,
        "kaito.version": written.kaito.get("version") is not None,
        "kaito.gpuDiscovery": written.kaito.get("gpu_discovery") is not None,
        "gpuOperator.enabled": written.gpu_operator.get("enabled") is not None,
        "gpuProvisioner.install": written.gpu_provisioner.get("install") is not None,
        "gpuProvisioner": any(k != "install" for k in written.gpu_provisioner),
        "karpenter.install": written.karpenter.get("install") is not None,
        "karpenter": any(k != "install" for k in written.karpenter),
        "kaito.nodeProvisioner": written.kaito.get("node_provisioner") is not None,
        "kaito.modelStreaming": written.kaito.get("model_streaming") is not None,
        "cluster.aks.nodeSubnet": written.cluster_kind == "aks"
        and (written.cluster or {}).get("node_subnet") is not None,
        "ragEngineOperator.install": written.rag_engine_operator.get("install") is not None,
        "ragEngineOperator": any(k != "install" for k in written.rag_engine_operator),
        "ragEngines": bool(written.rag_engines),
    }
    return frozenset(k for k, v in present.items() if v)


def generation_note(decided: Decisions, generation: Generation) -> str | None:
    """What the stack's generation of defaults (kaito-aks:defaults) decides for it, where that
    differs between generations (None: nothing): today, KAITO 0.12's auto-mode provisioner on a
    cluster the stack creates, when kaito.nodeProvisioner does not say it."""
    if not decided.generation_decides:
        return None
    if generation == 1:
        return (
            "defaults generation 1 (the file has no kaito-aks:defaults): KAITO 0.12's nodes come from gpu-provisioner, "
            f"as they always have for this stack; a new stack writes `kaito-aks:defaults: {NEWEST_GENERATION}` and gets "
            "Karpenter, KAITO's recommendation (docs/upgrading.md)"
        )
    return f"defaults generation {generation}: KAITO 0.12's nodes come from Karpenter (kaito.nodeProvisioner karpenter)"
