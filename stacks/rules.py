"""What only a whole stack can get wrong (the rules of a model, a pool or an operator are the
components' own, and stacks/load.py places them at config paths): names two entries would
share, settings that contradict each other across sections, and this program's own wording
for a few of the components' problems (the config key, the CLI command to run)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from kaito_aks import catalog, policy
from kaito_aks.model.names import claimed_names, name_collisions
from kaito_aks.model.placement import cpu_on_provisioned_gpu_nodes, match_labels
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import SYSTEM_POOL, dropped_by, selects, vm_size_problem
from kaito_aks.operators.kaito_operator import effective_gates, forced_runtime
from kaito_aks.problems import Key, Problem, format_path
from stacks.config import StackConfig
from stacks.errors import secret_key

# The stack's own wording for a few of the components' problems, by code: what to run or set
# in this program's terms. (The component's message already names the arg and the fix.)
ESTIMATE = "see `python -m stacks models estimate {model}{pool} --version {version}`"
HINTS = {
    "unknown-preset": "`python -m stacks models list --version {version}` lists them",
    "admission": ESTIMATE,
    "fit-one-node": ESTIMATE,
    "estimator": ESTIMATE,
    "tuning-fit": ESTIMATE,
    "replicas-fit": ESTIMATE,
}
INSTEAD = {
    "gated": "KAITO admits this, but {model} is gated on Hugging Face and KAITO's pod downloads it with the "
    "modelAccessSecret's token only (answered 401 without one): run `pulumi config set --secret hfToken <token>`, or "
    "set modelAccessSecret to an existing Secret with key HF_TOKEN",
    "gated-secret": 'KAITO {version} denies it ("This preset requires authentication and needs a modelAccessSecret"): '
    "run `pulumi config set --secret hfToken <token>`, or set modelAccessSecret to an existing Secret with key HF_TOKEN",
    "no-pools": "{name} needs GPU nodes but the stack has no gpuNodePools; add one (" + ESTIMATE + ")",
    "kubeconfig-twice": "the secret kaito-aks:kubeconfig already gives the kubeconfig; remove one of them",
    "unsized": "KAITO sizes {model} against the GPU nodes it finds, and this stack does not know the cluster's GPU "
    "pools (cluster.kubeconfig): KAITO's admission, its node estimate and the pools' budget are checked only by "
    "`pulumi up`'s GPU-node wait, not before deploy (" + ESTIMATE + ")",
}


def stack_wording(problem: Problem, args: KaitoModelArgs | None = None) -> Problem:
    """A component's problem in this program's terms: its hint (the config key, the CLI) added;
    `args`: the model's, for a model's problem."""
    facts = {"model": "", "version": "", "name": "", "pool": ""}
    if args is not None:
        sizes = {g.vm_size for g in args.node_groups or [] if selects(match_labels(args), g)}
        pool = f" --pool {sizes.pop()}" if len(sizes) == 1 else ""
        facts = {"model": args.model or "", "version": args.kaito_version, "name": args.name or "", "pool": pool}
    if problem.code in INSTEAD:
        past = policy.way_past(problem.code) if problem.message.endswith(policy.way_past(problem.code)) else ""
        return dataclasses.replace(problem, message=INSTEAD[problem.code].format(**facts) + past)
    hint = HINTS.get(problem.code)
    if hint is None:
        return problem
    past = policy.way_past(problem.code)
    if past and problem.message.endswith(past):  # the hint goes before the way past
        return dataclasses.replace(problem, message=f"{problem.message[: -len(past)]}; {hint.format(**facts)}{past}")
    return dataclasses.replace(problem, message=f"{problem.message}; {hint.format(**facts)}")


def check(cfg: StackConfig) -> list[Problem]:
    """The stack-wide rules, each problem at its config path."""
    return [
        *_cluster(cfg),
        *_kaito(cfg),
        *_nodes(cfg),
        *_karpenter(cfg),
        *_add_on(cfg),
        *_gates(cfg),
        *_names(cfg),
        *_rag(cfg),
        *_pools(cfg),
    ]


def _rag(cfg: StackConfig) -> Iterator[Problem]:
    """RAG engines next to the models: their own names, their operator, no tokens in the file."""
    if "ragEngineOperator" in cfg.given and cfg.rag_operator is None:
        yield Problem(
            ("ragEngineOperator",),
            "configures a RAGEngine operator this stack does not install (it installs one when it has ragEngines and "
            "installs KAITO, or with ragEngineOperator.install: true), so it has no effect: remove it",
            "rag-operator",
        )
    if cfg.add_on and (cfg.rag_engines or cfg.rag_operator is not None):
        no_chart = cfg.kaito.version not in catalog.ragengine_charts()
        yield Problem(
            ("ragEngines",),
            "the AKS add-on runs no RAGEngine operator"
            + (", and KAITO's ragengine chart of its release is not one this program installs" if no_chart else "")
            + "; remove ragEngines, or install KAITO with this stack instead of the add-on",
            "add-on",
        )
    chart = catalog.kaito_charts().get(cfg.kaito.version)
    taken: dict[tuple[str, str], str] = {}
    if chart is not None:
        for w in cfg.workspaces:
            for name in claimed_names(w.args, chart):
                taken.setdefault((w.args.namespace, name), format_path(w.placed.at, "schema"))
    for engine in cfg.rag_engines:
        args = engine.args
        at = engine.placed.at
        owner = taken.get((args.namespace, args.name or ""))
        if owner is not None:
            yield Problem(
                (*at, "name"),
                f"{args.namespace}/{args.name} is also a name {owner} creates; KAITO names the engine's Service after "
                "it, so choose another",
                "name-collision",
            )
        taken.setdefault((args.namespace, args.name or ""), format_path(at, "schema"))
        if args.load_balancer:
            lb = f"{args.name}-lb"
            owner = taken.get((args.namespace, lb))
            if owner is not None:
                yield Problem(
                    (*at, "load_balancer"),
                    f"{args.namespace}/{lb} is also a name {owner} creates; the engine's load balancer is a Service "
                    "named <name>-lb, so rename one of them",
                    "name-collision",
                )
            taken.setdefault((args.namespace, lb), format_path(at, "schema"))
        service = args.inference_service
        if service is not None and service.access_token is not None:
            yield Problem(
                (*at, "inference_service", "access_token"),
                "a token in the stack file is plaintext; put it in a Secret and name it in accessSecret",
                "plaintext-secret",
            )
        db = args.storage.vector_db if args.storage is not None else None
        if db is not None and db.access_token is not None:
            yield Problem(
                (*at, "storage", "vector_db", "access_token"),
                "a token in the stack file is plaintext; put it in a Secret and name it in accessSecret",
                "plaintext-secret",
            )


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
    if auto and cfg.gpu_operator is not None and "gpuOperator.enabled" in cfg.given:
        yield Problem(
            ("gpuOperator", "enabled"),
            "the nodes KAITO creates get AKS's GPU driver and KAITO's device plugin; the GPU Operator's own driver "
            "and device plugin may fight them there: remove it unless you need it",
            "auto-gpu-operator",
        )
    provisioner_asked = "gpuProvisioner.install" in cfg.given and cfg.gpu_provisioner is not None
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
    if "gpuProvisioner" in cfg.given and cfg.gpu_provisioner is None:
        yield Problem(
            ("gpuProvisioner",),
            "configures a gpu-provisioner this stack does not install (it installs one with kaito.nodeProvisioning "
            "auto and its own KAITO on AKS, or with gpuProvisioner.install: true), so it has no effect: remove it",
            "provisioner-unused",
        )
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
    elif cfg.is_azure:
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
    if "karpenter" in cfg.given and cfg.karpenter is None:
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
    elif karpenter_mode and cfg.kaito_install and cfg.karpenter is None and "karpenter.install" not in cfg.given:
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
    at = ("cluster", "existing" if cfg.aks_cluster is not None and cfg.aks_cluster.existing else "aks")
    if cfg.aks_cluster is not None and not cfg.aks_cluster.existing and "kaito.version" not in cfg.given:
        problem = _add_on_release_problem(cfg.aks_cluster.kubernetes_version)
        if problem is not None:
            yield Problem(("cluster", "aks", "kubernetes_version"), problem, "add-on-version")
    if cfg.kaito_install:
        yield Problem(
            ("kaito", "install"),
            "the AI toolchain operator add-on installs KAITO; a second KAITO release would fight it over the same "
            "CRDs and admission webhooks: remove kaito.install (it defaults to false with the add-on)",
            "add-on",
        )
    if cfg.kaito.node_provisioning == "byo":
        yield Problem(
            ("kaito", "node_provisioning"),
            "the add-on's KAITO provisions its own nodes (its node provisioner runs in AKS's control plane) and offers "
            f"no bring-your-own mode; remove it (auto is the default), or drop {'.'.join(at)}.aiToolchainOperator",
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


def _add_on_release_problem(kubernetes_version: str | None) -> str | None:
    """Why the add-on's KAITO on a created cluster of `kubernetes_version` is no release this
    program knows the rules of, or None (Microsoft's component table, catalog/aks_add_on.yaml)."""
    table = catalog.aks_add_on()
    release = table.kaito_on(kubernetes_version)
    charts = catalog.kaito_charts()
    if release in charts:
        return None
    minor = ".".join((kubernetes_version or "").split(".")[:2])
    usable = sorted((m for m, v in table.by_kubernetes_minor.items() if v in charts), key=catalog.kubernetes_minor)
    fix = f"use {usable[0]} or newer, or set kaito.version to what AKS runs"
    listed = ", ".join(f"{m}: {v}" for m, v in table.by_kubernetes_minor.items())
    if release is None:
        return f"Microsoft's AKS component table names no AI toolchain operator release for Kubernetes {minor} ({listed}); {fix}"
    return (
        f"with aiToolchainOperator AKS runs KAITO {release} on Kubernetes {minor} (Microsoft's AKS component table), "
        f"a release this program does not know the rules of; {fix}"
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
    if cfg.gpu_discovery_given and cfg.kaito.gpu_discovery == "kaito" and cfg.gpu_operator is not None:
        yield Problem(
            ("kaito", "gpu_discovery"),
            "this stack installs the GPU Operator, which runs the device plugin, NFD and GFD; a second set from KAITO "
            "may fight it over GPUs and node labels: use external (the default) or disable gpuOperator",
            "discovery",
        )
    value_gates = cfg.kaito.values.get("featureGates")
    gates = {**cfg.kaito.feature_gates, **(value_gates if isinstance(value_gates, dict) else {})}
    # 0.8's InferenceSet controller (off by default) lists Workspaces by that label in every
    # namespace; 0.11's (on by default) only in its own namespace, for a set of the same name;
    # 0.6 has none.
    adopts_anywhere = (
        chart.replicas == "workspacePerReplica" and chart.feature_gates.get("enableInferenceSetController") is False
    )
    if adopts_anywhere and gates.get("enableInferenceSetController") is True and cfg.models:
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
    if forced_runtime(cfg.kaito) is not None:
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
    if streaming and created and any(m.model and m.tuning is None and m.runtime != "transformers" for m in cfg.models):
        written = cfg.kaito.values.get("featureGates")
        in_values = isinstance(written, dict) and "ModelStreaming" in written
        yield Problem(
            ("kaito", *(("values", Key("featureGates")) if in_values else ("feature_gates",)), Key("ModelStreaming")),
            "KAITO's webhook then denies every vLLM preset unless the cluster has the blob.csi.azure.com CSI driver "
            "(validateStreamingCSIDriver), which the cluster this stack creates runs only with kaito.modelStreaming: "
            "set kaito.modelStreaming true (it wires the rest), or turn the gate off",
            "gate",
        )


def _names(cfg: StackConfig) -> Iterator[Problem]:
    """Two entries must not create objects of the same name in a namespace, nor (auto before
    KAITO 0.12) a CPU model select another's GPU nodes (the library's rules, which
    `deploy_models` applies too)."""
    labelled = [(format_path(w.placed.at, "schema"), w.args) for w in cfg.workspaces]
    for j, problem in [*name_collisions(labelled), *cpu_on_provisioned_gpu_nodes(labelled)]:
        # judged with the bypass_checks of the model it is about (a bypassed one: a warning)
        errors, warnings = policy.verdict([problem], cfg.workspaces[j].args.bypass_checks)
        for said in [*errors, *warnings]:
            yield said.under(*cfg.workspaces[j].placed.at)


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
    if not cfg.is_azure:
        return
    chart = catalog.kaito_charts().get(cfg.kaito.version)
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
    for pool in cfg.pools:
        at = pool.placed.at
        if pool.args.gpu_driver == "operator" and cfg.gpu_operator is None and cfg.kaito.node_provisioning == "byo":
            yield Problem(
                (*at, "gpu_driver"),
                "KAITO admits the models, but operator means AKS skips the driver and the GPU Operator installs it, and "
                "gpuOperator is disabled: with no driver GPU Feature Discovery never labels the nodes, so KAITO denies "
                'every preset on them ("Failed to get GPU config from nvidia labels"); enable it or use gpuDriver: aks',
                "driver",
            )
        dropped = dropped_by(chart, pool.args.vm_size) if chart is not None else None
        if dropped is not None and vm_size_problem(pool.args.vm_size) is None:
            yield Problem((*at, "vm_size"), dropped, "pool-sku-version")


def created_namespace(
    errors: list[Problem], warnings: list[Problem], namespace: str
) -> tuple[list[Problem], list[Problem]]:
    """The stack creates the namespace of each workspace and engine (createNamespaces): one of
    the cluster's or an operator's exists already, so KAITO's indifference (a warning) becomes
    the stack's refusal."""
    owned = [p for p in warnings if p.code == "namespace"]
    refused = [
        dataclasses.replace(
            p,
            message=f"{namespace} exists already or belongs to an operator release, and this stack creates the "
            "namespace of each workspace and engine (createNamespaces): use a namespace of your own, or set "
            "createNamespaces: false",
            code="create-namespace",
        )
        for p in owned
    ]
    return errors + refused, [p for p in warnings if p.code != "namespace"]
