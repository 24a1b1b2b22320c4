"""The stack's own rules: its own keys, and settings that contradict each other across its
sections (the rules of a model, a pool, an operator and of the models together are the
library's, which stacks/judge.py places at config paths); the codes of these rules (the
library's table knows only its own); and the hints the stack appends to a few of the
components' problems (the config key, the command to run)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kaito_aks import catalog, policy
from kaito_aks.azure.aks_cluster import aks_cluster_warnings
from kaito_aks.azure.aks_security import is_production
from kaito_aks.endpoints import INTERNAL_LB, load_balancer_of
from kaito_aks.model.names import RESERVED_NAMESPACES
from kaito_aks.model.spec import vllm_preset
from kaito_aks.nodes import SYSTEM_POOL
from kaito_aks.operators.gpu_provisioner import GpuProvisionerArgs
from kaito_aks.operators.kaito_operator import effective_gates, gate_at
from kaito_aks.operators.karpenter import KarpenterArgs
from kaito_aks.pod_security import host_path_reason
from kaito_aks.policy import Rule
from kaito_aks.problems import Key, Problem
from stacks import callers, capacity, hf_token, serving, streaming
from stacks.config import ModelConfig, RagEngineConfig, StackConfig
from stacks.decide import Written
from stacks.errors import secret_key

# The stack's own rule codes (the library's table, kaito_aks.policy, knows only the library's):
# what kind of finding each is, and why; docs/kaito-rules.md prints them with the library's.


def _program_rule(about: str, evidence: str = "") -> Rule:
    return Rule("program", about, evidence)


def _warning_rule(about: str, evidence: str = "") -> Rule:
    return Rule("warning", about, evidence)


def _broken_rule(about: str, evidence: str) -> Rule:
    return Rule("cannot-serve", about, evidence)


STACK_RULES: dict[str, Rule] = {
    "create-namespace": _program_rule(
        "a namespace the stack would create that exists already or belongs to an operator",
        "createNamespaces makes a Namespace of each workspace's namespace",
    ),
    "add-on": _program_rule("a setting the AKS add-on does not offer, or a second KAITO beside it"),
    "add-on-ignored": _warning_rule(
        "KAITO chart settings with the add-on", "the add-on's API is one switch: no effect"
    ),
    "add-on-version": _program_rule("a Kubernetes version whose add-on runs a KAITO the library does not know"),
    "auto-kubeconfig": _program_rule("auto-provisioning on a cluster the stack cannot create an identity for"),
    "auto-pools": _warning_rule("GPU pools with auto-provisioning", "KAITO does not use them: no effect"),
    "auto-gpu-operator": _warning_rule(
        "the GPU Operator on nodes KAITO provisions", "those nodes get AKS's driver and KAITO's device plugin"
    ),
    "runtime-gate": _warning_rule(
        "runtime vllm while the vLLM gate is off",
        "KAITO ignores kaito.sh/runtime then (labels.go 0.8.1:54): it serves with transformers",
    ),
    "inferenceset-gate": _warning_rule(
        "the InferenceSet controller on with KAITO 0.8",
        "it adopts Workspaces labelled for an InferenceSet of the same name; the program creates none: may",
    ),
    "install": _warning_rule("chart settings for a KAITO the stack does not install", "no effect"),
    "kubeconfig": _program_rule("a kubeconfig secret on an AKS stack"),
    "kubeconfig-empty": _program_rule("an empty kubeconfig secret"),
    "location": _program_rule("an AKS cluster without a location"),
    "plaintext-secret": _program_rule("a secret in plaintext"),
    "secure-value": _program_rule("a value encrypted that is no secret"),
    "trap": _program_rule("a value the Pulumi CLI reads otherwise than it says"),
    "pools": _program_rule("node pools on a cluster that is no AKS cluster"),
    "provisioner": _program_rule("gpu-provisioner where the stack cannot install it"),
    "provisioner-unused": _warning_rule("gpu-provisioner settings nothing uses", "no effect"),
    "provisioner-missing": _broken_rule(
        "auto-provisioning without gpu-provisioner", "KAITO's NodeClaims stay Pending: no node is ever made"
    ),
    "provisioner-pin": _warning_rule("a gpu-provisioner release KAITO's chart does not pin"),
    "rag-operator": _warning_rule("RAGEngine operator settings nothing uses", "no effect"),
    "rag-workspace": _program_rule("a RAG engine over a workspace the stack does not have"),
    "rag-llm": _program_rule("an engine's LLM given twice, or a window without one"),
    "rag-window": _warning_rule(
        "a context window larger than the model's", "prompts longer than the model takes get 400: may"
    ),
    "cluster": _program_rule("not exactly one kind of cluster"),
    "engine": _program_rule("engine config that is not JSON"),
    "foreign-key": _program_rule(
        "a config key whose namespace is a near-miss of the program's",
        "the program would not read it: the section dropped, a deployed stack's models deleted",
    ),
    "node-subnet": _program_rule(
        "a nodes' subnet with gpu-provisioner",
        'AKS keeps all of a cluster\'s pools in one VNet ("All or none of the agentpools should set vnetsubnetid")',
    ),
    "karpenter-subnet": _warning_rule(
        "Karpenter on a cluster created without a nodes' subnet", "refused at deploy time"
    ),
    "pod-security-unlabelled": _warning_rule(
        "models in a namespace the stack does not create (default)", "it gets no Pod Security labels"
    ),
    "pod-security": _warning_rule("a namespace created privileged for a model that mounts a host path"),
    "load-balancer-cloud": _warning_rule("an internal load balancer by Azure's annotation on another cloud"),
    "byo-callers": _warning_rule(
        "NetworkPolicies on a cluster the stack does not create, without endpoints.allowFrom",
        "callers from other namespaces are cut where the cluster enforces policies",
    ),
    "gateway-gate": _program_rule("a gateway with KAITO's gateway extension turned off"),
    "gateway": _program_rule("a workspace asking for a gateway the stack does not have"),
    "metrics": _program_rule("a workspace asking for metrics the stack does not have"),
    "hf-token-missing": _program_rule("a workspace asking for the stack's hfToken, which is not set"),
    "autoscaling-unused": _program_rule("KEDA configured with no autoscaled workspace"),
    "metrics-unused": _program_rule("metrics configured with no scraped workspace"),
    "keda-addon": _program_rule("the KEDA add-on on a cluster this stack does not create"),
    "metrics-flavour": _program_rule("managed Prometheus where the cluster does not run it"),
    "metrics-dashboard": _program_rule("dashboard settings the flavour does not use"),
    "keda-addon-version": _warning_rule("the KEDA add-on's version", "AKS chooses it for the Kubernetes minor"),
    "gateway-internal": _warning_rule("an internal gateway on a cluster this stack does not know is AKS"),
    "gateway-gate-elsewhere": _warning_rule("a gateway with KAITO installed elsewhere", "its gate cannot be checked"),
    "streaming-elsewhere": _warning_rule(
        "model streaming on a cluster's driver or a KAITO's gates the stack does not manage",
        "cannot be checked here: without the Blob CSI driver KAITO's webhook refuses the streaming Workspaces "
        "(validateStreamingCSIDriver), without the gates KAITO downloads as before",
    ),
    "not-routed": _warning_rule("a model the gateway does not route"),
    "load-balancer-bypass": _warning_rule(
        "a routed model's own load balancer", "it passes by the gateway's authentication"
    ),
}


def errors_of(problems: Iterable[Problem]) -> list[Problem]:
    """The problems that refuse the stack: by the stack's table, then the library's."""
    return [p for p in problems if not _is_warning(p)]


def warnings_of(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if _is_warning(p)]


def _is_warning(problem: Problem) -> bool:
    rule = STACK_RULES.get(problem.code)
    return policy.is_warning(problem) if rule is None else problem.bypassed or not rule.error


def verdict(
    cfg: StackConfig, written: Written, stack: str, found: list[Problem]
) -> tuple[list[Problem], list[Problem], list[Problem]]:
    """The stack's own rules with the components' problems (`found`, at config paths), judged by
    the stack's table and the library's: the errors, the stack's own warnings (what it allows but
    says), and the other warnings."""
    checked, said = serving.problems(cfg, written)
    every = [*found, *check(cfg), *checked, *_written(cfg, written)]
    if not errors_of(every):  # the non-GPU pools' budget (kaito_aks.capacity), of what is well formed
        every += capacity.check(cfg)
    return errors_of(every), [*warnings(cfg, written, stack), *said], warnings_of(every)


def _written(cfg: StackConfig, written: Written) -> list[Problem]:
    """The stack's rules of what its entries write: a token asked for and not set (useHfToken),
    callers a NetworkPolicy would cut on an adopted cluster, streaming where KAITO has none."""
    return [*hf_token.problems(cfg, written), *callers.check(cfg, written), *streaming.problems(cfg, written)]


def check(cfg: StackConfig) -> list[Problem]:
    """The stack's own rules (its keys, settings that contradict each other across its sections),
    each problem at its config path; serving's in stacks/serving.py."""
    return [
        *_cluster(cfg),
        *_kaito(cfg),
        *_nodes(cfg),
        *_karpenter(cfg),
        *_add_on(cfg),
        *_gates(cfg),
        *_rag(cfg),
        *_pools(cfg),
        *_created_namespaces(cfg),
    ]


def _rag(cfg: StackConfig) -> Iterator[Problem]:
    """RAG engines next to the models: their operator, no tokens in the file (their names beside
    the models' are the library's to check: kaito_aks.check_together)."""
    if "ragEngineOperator" in cfg.decided.written and cfg.rag_operator is None:
        yield Problem(
            ("ragEngineOperator",),
            "configures a RAGEngine operator this stack does not install (it installs one when it has ragEngines and "
            "installs KAITO, or with ragEngineOperator.install: true), so it has no effect: remove it",
            "rag-operator",
        )
    if cfg.add_on and ("ragEngines" in cfg.decided.written or cfg.rag_operator is not None):
        no_chart = cfg.kaito.version not in catalog.ragengine_charts()
        yield Problem(
            ("ragEngines",),
            "the AKS add-on runs no RAGEngine operator"
            + (", and KAITO's ragengine chart of its release is not one this program installs" if no_chart else "")
            + "; remove ragEngines, or install KAITO with this stack instead of the add-on",
            "add-on",
        )
    for engine in cfg.rag_engines:
        args, at = engine.args, engine.placed.at
        db = args.storage.vector_db if args.storage is not None else None
        for given, where in ((args.inference_service, ("inference_service",)), (db, ("storage", "vector_db"))):
            if given is not None and given.access_token is not None:
                why = "a token in the stack file is plaintext; put it in a Secret and name it in accessSecret"
                yield Problem((*at, *where, "access_token"), why, "plaintext-secret")


def _nodes(cfg: StackConfig) -> Iterator[Problem]:
    """Who makes the GPU nodes: this stack's pools (byo) or KAITO (auto), never both."""
    auto = cfg.kaito.node_provisioning == "auto"
    if auto and cfg.pools:
        yield Problem(
            ("gpuNodePools",),
            "with kaito.nodeProvisioning auto KAITO creates a node of each workspace's instanceType and never uses "
            "these pools (bring-your-own and auto-provisioning are mutually exclusive), so they only cost: remove them, "
            "or use byo",
            "auto-pools",
        )
    if auto and cfg.gpu_operator is not None and "gpuOperator.enabled" in cfg.decided.written:
        yield Problem(
            ("gpuOperator", "enabled"),
            "the nodes KAITO creates get AKS's GPU driver and KAITO's device plugin; the GPU Operator's own driver "
            "and device plugin may fight them there: remove it unless you need it",
            "auto-gpu-operator",
        )
    provisioner_asked = "gpuProvisioner.install" in cfg.decided.written and cfg.gpu_provisioner is not None
    if cfg.gpu_provisioner is not None and not auto:
        yield Problem(
            ("gpuProvisioner", "install"),
            "gpu-provisioner serves kaito.nodeProvisioning auto; with byo nothing asks it for nodes, so it has no "
            "effect: remove it",
            "provisioner-unused",
        )
    elif provisioner_asked and cfg.kubeconfig_cluster is not None:
        yield Problem(
            ("gpuProvisioner", "install"),
            "gpu-provisioner creates AKS node pools with an Azure identity federated to the cluster's OIDC issuer; "
            "it needs cluster.aks or cluster.existing",
            "provisioner",
        )
    if "gpuProvisioner" in cfg.decided.written and cfg.gpu_provisioner is None:
        yield Problem(
            ("gpuProvisioner",),
            "configures a gpu-provisioner this stack does not install (it installs one with kaito.nodeProvisioning "
            "auto and its own KAITO on AKS, or with gpuProvisioner.install: true), so it has no effect: remove it",
            "provisioner-unused",
        )
    yield from _no_provisioner(cfg)


def _no_provisioner(cfg: StackConfig) -> Iterator[Problem]:
    """KAITO this stack installs in auto mode with gpu-provisioner, and no gpu-provisioner."""
    auto = cfg.kaito.node_provisioning == "auto"
    if not auto or not cfg.kaito_install or cfg.add_on:
        return
    if cfg.kaito.node_provisioner != "gpu-provisioner" or cfg.gpu_provisioner is not None:
        return
    if cfg.kubeconfig_cluster is not None:
        yield Problem(
            ("kaito", "node_provisioning"),
            "auto needs gpu-provisioner, which creates AKS node pools with an Azure identity federated to the "
            "cluster; with cluster.kubeconfig this stack cannot create that identity: use cluster.aks or "
            "cluster.existing, or install KAITO and its provisioner elsewhere and set kaito.install: false",
            "auto-kubeconfig",
        )
    elif cfg.aks_cluster is not None:
        yield Problem(
            ("gpuProvisioner", "install"),
            "KAITO admits the models, but with kaito.nodeProvisioning auto its NodeClaims stay Pending without "
            "gpu-provisioner, so no node is ever made: leave it on (the default), or set kaito.install: false where "
            "KAITO and its provisioner are installed already",
            "provisioner-missing",
        )


KARPENTER_ON_CREATED = (
    "this stack installs Karpenter with a cluster it creates (cluster.aks), which it creates with the subnet of "
    "the nodes Karpenter must be given (cluster.aks.nodeSubnet)"
)


def _karpenter(cfg: StackConfig) -> Iterator[Problem]:
    """Karpenter makes KAITO's nodes in Karpenter mode, on a cluster this stack creates; nothing
    else asks it for nodes, and gpu-provisioner cannot share its cluster's subnet."""
    auto = cfg.kaito.node_provisioning == "auto"
    karpenter_mode = auto and cfg.kaito.node_provisioner == "karpenter"
    created = cfg.aks_cluster is not None and not cfg.aks_cluster.existing
    if "karpenter" in cfg.decided.written and cfg.karpenter is None:
        yield Problem(
            ("karpenter",),
            "configures a Karpenter this stack does not install (it installs one with kaito.nodeProvisioner karpenter "
            "and its own KAITO on a cluster it creates, or with karpenter.install: true); remove it",
            "karpenter",
        )
    if cfg.karpenter is not None and not karpenter_mode:
        yield Problem(
            ("karpenter", "install"),
            "Karpenter makes KAITO's nodes with kaito.nodeProvisioning auto and kaito.nodeProvisioner karpenter; "
            "without them nothing asks it for nodes: remove it",
            "karpenter",
        )
    elif cfg.karpenter is not None and not created:
        yield Problem(
            ("karpenter", "install"),
            f"{KARPENTER_ON_CREATED}; on this cluster set karpenter.install: false where Karpenter runs already, or "
            "use kaito.nodeProvisioner gpu-provisioner",
            "karpenter",
        )
    elif (
        karpenter_mode
        and cfg.kaito_install
        and cfg.karpenter is None
        and "karpenter.install" not in cfg.decided.written
    ):
        yield Problem(
            ("kaito", "node_provisioner"),
            f"{KARPENTER_ON_CREATED}; where Karpenter runs already set karpenter.install: false, or use "
            "gpu-provisioner",
            "karpenter",
        )
    if karpenter_mode and cfg.gpu_provisioner is not None:
        yield Problem(
            ("gpuProvisioner", "install"),
            "KAITO in Karpenter mode (kaito.nodeProvisioner karpenter) asks gpu-provisioner for no node: remove it",
            "provisioner",
        )
    subnet = cfg.aks_cluster.node_subnet if cfg.aks_cluster is not None else None
    if subnet is not None and cfg.gpu_provisioner is not None:
        yield Problem(
            ("cluster", "aks", "node_subnet"),
            "gpu-provisioner creates AKS node pools without a subnet, and AKS keeps all of a cluster's pools in one "
            'VNet ("All or none of the agentpools should set vnetsubnetid"): use Karpenter (kaito.nodeProvisioner '
            "karpenter), or remove nodeSubnet",
            "node-subnet",
        )


def _add_on(cfg: StackConfig) -> Iterator[Problem]:
    """The AKS add-on runs KAITO: nothing of ours may install or configure it."""
    if not cfg.add_on:
        return
    if cfg.aks_cluster is not None and not cfg.aks_cluster.existing and "kaito.version" not in cfg.decided.written:
        problem = catalog.aks_add_on().unknown_on(cfg.aks_cluster.kubernetes_version)
        if problem is not None:
            why = f"{problem}, or set kaito.version to what AKS runs"
            yield Problem(("cluster", "aks", "kubernetes_version"), why, "add-on-version")
    if cfg.kaito_install:
        yield Problem(
            ("kaito", "install"),
            "the AI toolchain operator add-on installs KAITO; a second KAITO release would fight it over the same "
            "CRDs and admission webhooks: remove kaito.install (it defaults to false with the add-on)",
            "add-on",
        )
    if cfg.gpu_provisioner is not None:
        yield Problem(
            ("gpuProvisioner", "install"),
            "the add-on runs its node provisioner in AKS's control plane; remove gpuProvisioner",
            "add-on",
        )
    if cfg.kaito.node_provisioner != "gpu-provisioner":
        yield Problem(
            ("kaito", "node_provisioner"),
            "the add-on's KAITO uses its own provisioner; AKS offers no other",
            "add-on",
        )


def _cluster(cfg: StackConfig) -> Iterator[Problem]:
    if cfg.has_kubeconfig and cfg.aks_cluster is not None:
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
    gates = effective_gates(cfg.kaito, chart)  # (written, over the chart's defaults)
    # 0.8's InferenceSet controller (off by default) lists Workspaces by that label in every
    # namespace; 0.11's (on by default) only in its own namespace, for a set of the same name;
    # 0.6 has none.
    adopts_anywhere = (
        chart.replicas == "workspacePerReplica" and chart.feature_gates.get("enableInferenceSetController") is False
    )
    if adopts_anywhere and gates.get("enableInferenceSetController") is True and cfg.workspaces:
        yield Problem(
            ("kaito", "feature_gates", Key("enableInferenceSetController")),
            f"with KAITO {chart.version} this program serves replicas as Workspaces labelled "
            "inferenceset.kaito.sh/created-by=<name>; the InferenceSet controller adopts and deletes Workspaces with "
            "that label for any InferenceSet of the same name in any namespace, so an InferenceSet of a model's name "
            "may take them over: leave the gate off",
            "inferenceset-gate",
        )
    if not cfg.kaito_install or cfg.add_on:  # the add-on's refusal comes with kaito.install's (review 3)
        for key, given in (("feature_gates", cfg.kaito.feature_gates), ("values", cfg.kaito.values)):
            if given:
                yield Problem(
                    ("kaito", key),
                    "the AKS add-on offers no KAITO feature gates or chart values (its API is one switch), so it has no "
                    "effect: remove it"
                    if cfg.add_on
                    else "configures the chart this stack installs; with kaito.install: false it has no effect: set it "
                    "where KAITO is installed",
                    "add-on-ignored" if cfg.add_on else "install",
                )


def _gates(cfg: StackConfig) -> Iterator[Problem]:
    """Gates that change how KAITO admits the stack's models."""
    chart = catalog.kaito_charts().get(cfg.kaito.version)
    if chart is None:
        return
    if cfg.decided.forced_runtime is not None:
        for w in cfg.workspaces:
            if w.args.runtime == "vllm" and not w.args.image:  # an image's runtime is refused by its own rule
                yield Problem(
                    (*w.placed.at, "runtime"),
                    "KAITO serves every model with transformers while kaito.featureGates.vLLM is false (it ignores "
                    "kaito.sh/runtime), so it has no effect: remove runtime, or turn the gate on",
                    "runtime-gate",
                )
    streaming = effective_gates(cfg.kaito, chart).get("ModelStreaming") is True
    created = cfg.aks_cluster is not None and not cfg.aks_cluster.existing and not cfg.aks_cluster.blob_csi_driver
    if streaming and created and any(vllm_preset(w.args) for w in cfg.workspaces):
        yield Problem(
            ("kaito", *gate_at(cfg.kaito.values, "ModelStreaming")),
            "KAITO's webhook then denies every vLLM preset unless the cluster has the blob.csi.azure.com CSI driver "
            "(validateStreamingCSIDriver), which the cluster this stack creates runs only with kaito.modelStreaming: "
            "set kaito.modelStreaming true (it wires the rest), or turn the gate off",
            "gate",
        )


def _pools(cfg: StackConfig) -> Iterator[Problem]:
    """The pools against their cluster; silent when the cluster section is unusable (its problem
    is said, and what the pools need depends on it)."""
    for key, given in (("gpuNodePools", cfg.pools), ("cpuNodePools", cfg.cpu_pools)):
        if given and cfg.kubeconfig_cluster is not None:
            yield Problem(
                (key,),
                "node pools are created in AKS; use cluster.aks or cluster.existing, or drop them",
                "pools",
            )
    if cfg.aks_cluster is None:
        return
    seen: set[str] = {SYSTEM_POOL}
    for pool in (*cfg.pools, *cfg.cpu_pools):
        name = pool.args.name or ""
        if name in seen:
            yield Problem(
                (*pool.placed.at, "name"),
                f"{name!r} is already a node pool of this cluster; pool names must be unique",
                "pool-name",
            )
        seen.add(name)


def _created_namespaces(cfg: StackConfig) -> Iterator[Problem]:
    """The stack creates the namespace of each workspace and engine (createNamespaces): not one of
    the cluster's or an operator's, which exists already (KAITO is indifferent: the components
    only warn)."""
    if not cfg.create_namespaces:
        return
    operator = catalog.ragengine_chart_source().namespace
    for entry in (*cfg.workspaces, *cfg.rag_engines):
        namespace = entry.args.namespace
        if namespace in RESERVED_NAMESPACES or (namespace == operator and isinstance(entry, RagEngineConfig)):
            yield Problem(
                (*entry.placed.at, "namespace"),
                f"{namespace} exists already or belongs to an operator release, and this stack creates the namespace "
                "of each workspace and engine (createNamespaces): use a namespace of your own, or set "
                "createNamespaces: false",
                "create-namespace",
            )


# ---------------------------------------------------------------- what the stack allows but says


def warnings(cfg: StackConfig, written: Written, stack: str) -> list[Problem]:
    """The stack's own warnings (each model's and engine's are their rules', said by judge), at
    config paths: namespaces without Pod Security labels or made privileged, an internal load
    balancer off Azure, the cluster's lowered defaults, the provisioners' releases."""
    found = _pod_security_warnings(list(cfg.workspaces), cfg.create_namespaces)
    if not cfg.decided.azure:
        found += _internal_elsewhere(list(cfg.workspaces), list(cfg.rag_engines))
    if cfg.aks_cluster is not None:
        production = is_production(stack, cfg.cluster_protect)
        at = ("cluster", written.cluster_kind or "aks")
        found += [p.under(*at) for p in aks_cluster_warnings(cfg.aks_cluster, production)]
    return [
        *found,
        *_provisioner_warnings(cfg.gpu_provisioner, cfg.kaito.version),
        *_karpenter_warnings(written, cfg.karpenter),
    ]


def _pod_security_warnings(workspaces: list[ModelConfig], create_namespaces: bool) -> list[Problem]:
    """A model whose pods mount a host directory makes the namespace the stack creates for it
    privileged (Pod Security's baseline refuses host paths): said at the model, with what that
    opens. In `default` (or a namespace not created here) its pods are admitted by whatever
    labels the namespace has."""
    found: list[Problem] = []
    said: set[str] = set()
    for w in workspaces:
        created = create_namespaces and w.args.namespace != "default"
        if not created and w.args.namespace not in said:
            said.add(w.args.namespace)
            found.append(
                Problem(
                    (*w.placed.at, "namespace"),
                    f"namespace {w.args.namespace} is not one this stack creates, so it gets no Pod Security labels "
                    "from it (its pods are admitted by whatever labels it has); a namespace of the models' own, "
                    "which the stack creates, enforces Pod Security's baseline level",
                    "pod-security-unlabelled",
                )
            )
        why = host_path_reason(w.args)
        if why is None or not created:
            continue
        found.append(
            Problem(
                (*w.placed.at, "model"),
                f"{why}, which Pod Security's baseline level refuses: namespace {w.args.namespace} is created at the "
                "privileged level, so any pod there may run privileged; give such models a namespace of their own",
                "pod-security",
            )
        )
    return found


def _internal_elsewhere(workspaces: list[ModelConfig], rag_engines: list[RagEngineConfig]) -> list[Problem]:
    """An internal load balancer on a cluster this stack does not know is AKS: the annotation
    that makes it internal is Azure's."""
    found: list[Problem] = []
    entries = [(w.args.load_balancer, w.placed.at) for w in workspaces] + [
        (e.args.load_balancer, e.placed.at) for e in rag_engines
    ]
    for value, at in entries:
        lb = load_balancer_of(value)
        if lb is not None and lb.internal and not lb.annotations:
            why = (
                f"internal through Azure's annotation ({INTERNAL_LB}); on another cloud give that cloud's "
                "internal load balancer annotation in `annotations`, or its load balancer may be public"
            )
            found.append(Problem((*at, "load_balancer"), why, "load-balancer-cloud"))
    return found


def _provisioner_warnings(args: GpuProvisionerArgs | None, kaito_version: str) -> tuple[Problem, ...]:
    """A gpu-provisioner release other than the one KAITO's own charts pin for its minor works
    only as far as the two agree on the NodeClaim API: said, not refused."""
    pinned = catalog.gpu_provisioner_for_kaito(kaito_version)
    if args is None or pinned is None or args.version == pinned:
        return ()
    return (
        Problem(
            ("gpuProvisioner", "version"),
            f"KAITO {kaito_version} pins gpu-provisioner {pinned} (its chart's dependency); {args.version} is not "
            "tested with it: leave version out to use the pin",
            "provisioner-pin",
        ),
    )


def _karpenter_warnings(written: Written, karpenter: KarpenterArgs | None) -> tuple[Problem, ...]:
    """Karpenter needs the nodes' subnet, which a cluster gets only when it is created: a stack of
    the first generation of defaults may have created its cluster without one."""
    if karpenter is None or written.generation >= 2 or written.cluster_kind != "aks":
        return ()
    return (
        Problem(
            ("kaito", "node_provisioner"),
            "Karpenter needs the cluster's nodes in a subnet it is given (cluster.aks.nodeSubnet), which AKS sets "
            "only when it creates the cluster: a cluster this stack created earlier keeps AKS's managed VNet, and "
            "`pulumi up` refuses Karpenter there; use it with a new cluster (docs/upgrading.md)",
            "karpenter-subnet",
        ),
    )
