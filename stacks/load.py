"""Reading a stack's config: from the Pulumi engine (or a stack file) to a checked StackConfig, the
components' args. Everything is checked here, with the components' own rules, before the
program registers a single resource; `validate`, `render` and `pulumi up` read the same way."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import pulumi

from kaito_aks import catalog
from kaito_aks.azure.aks_cluster import AksClusterArgs, aks_cluster_problems
from kaito_aks.azure.gpu_node_pool import GpuNodePoolArgs, gpu_node_pool_problems, node_group
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigClusterArgs, kubeconfig_cluster_problems
from kaito_aks.cluster.kubeconfig_text import EMPTY as EMPTY_CONTENTS
from kaito_aks.model.component import check_model
from kaito_aks.model.names import endpoint_of
from kaito_aks.model.rules import cpu_on_gpu_pools, max_model_len, model_warnings, off_gpu_by_default
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import AKS_SYSTEM_POOL_LABELS
from kaito_aks.operators.gpu_operator import DEFAULT_VERSION as GPU_OPERATOR_VERSION
from kaito_aks.operators.gpu_operator import GpuOperatorArgs, gpu_operator_problems
from kaito_aks.operators.gpu_provisioner import DEFAULT_VERSION as GPU_PROVISIONER_VERSION
from kaito_aks.operators.gpu_provisioner import GpuProvisionerArgs, gpu_provisioner_problems
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs, forced_runtime, kaito_operator_problems
from kaito_aks.operators.ragengine_operator import RagEngineOperatorArgs, ragengine_operator_problems
from kaito_aks.problems import Key, PathPart, Problem, did_you_mean, shown
from kaito_aks.rag.component import check_rag_engine
from kaito_aks.rag.spec import InferenceServiceArgs, RagEngineArgs
from stacks import budget, rules
from stacks.config import (
    CLUSTER_CHOICES,
    DEFAULT_KAITO_VERSION,
    FROM_CLUSTER,
    FROM_CLUSTER_ID,
    GPU_OPERATOR,
    GPU_PROVISIONER,
    KAITO,
    POOL,
    PROJECT,
    RAG_ENGINE,
    RAG_ENGINE_OPERATOR,
    SECRET_KEYS,
    TOP,
    TOP_KEYS,
    WORKSPACE,
    PoolConfig,
    RagEngineConfig,
    Section,
    StackConfig,
    StackDiscovery,
    StackGpuOperator,
    StackGpuProvisioner,
    StackKaito,
    StackNamespaces,
    StackProtect,
    StackRagEngine,
    StackRagEngineOperator,
    model_defaults,
    read_section,
)
from stacks.errors import StackConfigError, secret_key
from stacks.pulumi_yaml import decode
from stacks.stackfile import StackFile, StackFileError, read_stack_file, yaml_path

EMPTY_KUBECONFIG = (
    f"{EMPTY_CONTENTS}: `pulumi config set --secret kubeconfig < kubeconfig.yaml`, or `pulumi config rm kubeconfig` "
    "to use cluster.kubeconfig.path"
)
# Stands in for a secret where only its presence is known (validate, render).
SECRET_PRESENT = "[secret]"


@dataclasses.dataclass(frozen=True)
class StackSecrets:
    hf_token: pulumi.Output[str] | None = None
    kubeconfig: pulumi.Output[str] | None = None


ACCESS_SECRET_HINT = " (a token: put it in a Kubernetes Secret and name that Secret in accessSecret)"


def _without_nested_secrets(raw: Mapping[str, Any], problems: list[Problem]) -> Mapping[str, Any]:
    """`raw` without the values `pulumi config set --path --secret` wrote inside a key (a map of
    one `secure:`), each refused at its path: Pulumi makes the whole key secret for one of them,
    and the stack keeps secrets only in its own secret keys (a RAG engine's token: accessSecret)."""

    def strip(value: Any, path: tuple[PathPart, ...]) -> Any:
        if isinstance(value, Mapping):
            kept: dict[Any, Any] = {}
            for k, v in value.items():
                if isinstance(v, Mapping) and set(v) == {"secure"}:
                    problems.append(
                        Problem(
                            (*path, Key(str(k))),
                            f"is encrypted (set with --path --secret), but only {' and '.join(SECRET_KEYS)} are "
                            "secrets" + (ACCESS_SECRET_HINT if k == "accessToken" else "; set it without --secret"),
                            "secure-value",
                        )
                    )
                    continue
                kept[k] = strip(v, (*path, Key(str(k))))
            return kept
        if isinstance(value, list):
            return [strip(v, (*path, i)) for i, v in enumerate(value)]
        return value

    return {k: strip(v, (Key(k),)) for k, v in raw.items()}


def parse_stack_config(
    raw: Mapping[str, Any],
    *,
    secrets: Collection[str] = (),
    plaintext_secrets: Collection[str] = (),
    encrypted: Collection[str] = (),
    secret_values: StackSecrets = StackSecrets(),
    azure_location: str | None = None,
    base_dir: Path | None = None,
) -> StackConfig:
    """Check raw config values (keyed by their name in the kaito-aks namespace, already
    decoded) and map them onto the components' args. `secrets` names the secret keys that are
    set; `plaintext_secrets` those set without --secret; `encrypted` the other keys set with
    --secret (their values in `raw` when known). `base_dir`: where a relative kubeconfig path is
    read from (default: the working directory, where `pulumi up` runs the program). Raises
    StackConfigError listing every problem, each at its config path."""
    problems: list[Problem] = []
    for key in dict.fromkeys([*raw, *encrypted]):
        if key in SECRET_KEYS:
            continue
        if key in TOP_KEYS:
            if key in encrypted:
                problems.append(
                    Problem(
                        (Key(f"{PROJECT}:{key}"),),
                        f"is encrypted (set with --secret), but only {' and '.join(SECRET_KEYS)} are secrets; set it "
                        "without --secret"
                        + (
                            " (or remove the token `--path --secret` put inside it: a token goes in a Kubernetes "
                            "Secret named in accessSecret)"
                            if key == "ragEngines"
                            else ""
                        ),
                        "secure-value",
                    )
                )
            continue
        # A misspelt secret is a misspelt key like any other, never a hint to store it in plain text.
        close = did_you_mean(key, [*TOP_KEYS, *SECRET_KEYS])
        hint = f"did you mean {PROJECT}:{close[0]}?" if close else f"known keys: {', '.join(sorted(TOP_KEYS))}"
        problems.append(Problem((Key(f"{PROJECT}:{key}"),), f"unknown config key; {hint}", "unknown"))
    raw = _without_nested_secrets(raw, problems)
    for key in plaintext_secrets:
        problems.append(
            Problem(
                (secret_key(key),),
                f"must be a secret: run `pulumi config set --secret {key} ...` (plaintext ends up in the stack file)",
                "plaintext-secret",
            )
        )
    if "cluster" not in raw:
        if "cluster" in encrypted:  # its value cannot be read here; what is wrong with it is said
            raise StackConfigError(problems)
        problems.append(
            Problem(
                (Key(f"{PROJECT}:cluster"),),
                "required: set kubeconfig (an existing cluster), aks (create one) or existing (adopt one)",
                "required",
            )
        )
        raise StackConfigError(problems)

    # ---- sections, each key checked against the args it maps onto
    top = read_section(TOP, {k: v for k, v in raw.items() if k == "createNamespaces"}, (), problems) or _empty(TOP)
    cluster_kind, cluster = _cluster(raw["cluster"], problems)
    kaito = read_section(KAITO, raw.get("kaito", {}), ("kaito",), problems) or _empty(KAITO)
    gpu_operator = read_section(GPU_OPERATOR, raw.get("gpuOperator", {}), ("gpuOperator",), problems) or _empty(
        GPU_OPERATOR
    )
    provisioner = read_section(GPU_PROVISIONER, raw.get("gpuProvisioner", {}), ("gpuProvisioner",), problems) or _empty(
        GPU_PROVISIONER
    )
    pool_values = _entries(POOL, raw.get("gpuNodePools", []), "gpuNodePools", problems)
    ws_values = _entries(WORKSPACE, raw.get("workspaces", []), "workspaces", problems)
    rag_values = _entries(RAG_ENGINE, raw.get("ragEngines", []), "ragEngines", problems)
    rag_operator = read_section(
        RAG_ENGINE_OPERATOR, raw.get("ragEngineOperator", {}), ("ragEngineOperator",), problems
    ) or _empty(RAG_ENGINE_OPERATOR)
    # A key with a wrong shape is reported once, here; the rules do not speak about it (nor, when
    # its value was unusable, about its entry as a whole, which they judged without it).
    shaped = [p.path for p in problems]
    blind = {p.path[:2] for p in problems if p.code != "constraint" and len(p.path) > 2 and isinstance(p.path[1], int)}

    # ---- the components' args
    kubeconfig_cluster = aks_cluster = None
    cluster_protect = False
    if cluster_kind == "kubeconfig" and cluster is not None:
        contents: Any = (
            secret_values.kubeconfig
            if secret_values.kubeconfig is not None
            else (SECRET_PRESENT if "kubeconfig" in secrets else None)
        )
        kubeconfig_cluster = KubeconfigClusterArgs(**cluster[KubeconfigClusterArgs], kubeconfig=contents)
    elif cluster_kind in ("aks", "existing") and cluster is not None:
        values = dict(cluster[AksClusterArgs])
        if cluster_kind == "aks":
            values["location"] = values.get("location") or azure_location
            values["tags"] = {"managed-by": "pulumi", "app": "kaito-aks", **values.get("tags", {})}
            cluster_protect = cluster[StackProtect].get("protect", False)
        aks_cluster = AksClusterArgs(**values, existing=cluster_kind == "existing")

    pools: list[PoolConfig] = []
    pool_index: list[int] = []  # config index of each pool read
    for i, entry in enumerate(pool_values):
        if entry is not None:
            args = GpuNodePoolArgs(
                **entry[GpuNodePoolArgs], cluster_name=FROM_CLUSTER, resource_group_name=FROM_CLUSTER
            )
            pools.append(PoolConfig(args, entry[StackProtect].get("protect", False)))
            pool_index.append(i)
    groups = [node_group(p.args, p.args.name or "") for p in pools]

    operator = kaito[KaitoOperatorArgs]
    discovery = kaito[StackDiscovery].get("gpu_discovery")
    stack_gpu = gpu_operator[StackGpuOperator]
    is_azure = cluster_kind in ("aks", "existing")
    # The AKS add-on runs KAITO (its release, auto-provisioning): the defaults follow it.
    add_on = aks_cluster is not None and aks_cluster.ai_toolchain_operator
    node_provisioning = operator.get("node_provisioning") or ("auto" if add_on else "byo")
    kaito_install = kaito[StackKaito].get("install")
    kaito_install = (not add_on) if kaito_install is None else kaito_install
    auto = node_provisioning == "auto"
    gpu_enabled = (
        stack_gpu["enabled"] if stack_gpu.get("enabled") is not None else (is_azure and bool(pool_values) and not auto)
    )
    kaito_args = KaitoOperatorArgs(
        version=operator.get("version") or (_add_on_kaito_version(aks_cluster) if add_on else DEFAULT_KAITO_VERSION),
        node_provisioning=node_provisioning,
        node_provisioner=operator.get("node_provisioner", "gpu-provisioner"),
        feature_gates=operator.get("feature_gates", {}),
        values=operator.get("values", {}),
        gpu_discovery=discovery if discovery is not None else ("external" if gpu_enabled else "kaito"),
        node_groups=groups,
        cluster_name=aks_cluster.name if aks_cluster is not None else None,
    )
    gpu_operator_args = (
        GpuOperatorArgs(
            version=gpu_operator[GpuOperatorArgs].get("version", GPU_OPERATOR_VERSION),
            node_groups=groups if is_azure else [],
            values=gpu_operator[GpuOperatorArgs].get("values", {}),
        )
        if gpu_enabled
        else None
    )
    install_provisioner = provisioner[StackGpuProvisioner].get("install")
    if install_provisioner is None:
        install_provisioner = auto and kaito_install and is_azure and kaito_args.node_provisioner == "gpu-provisioner"
    gpu_provisioner_args = None
    if install_provisioner:
        chosen = provisioner[GpuProvisionerArgs]
        version = (
            chosen.get("version") or catalog.gpu_provisioner_for_kaito(kaito_args.version) or GPU_PROVISIONER_VERSION
        )
        gpu_provisioner_args = GpuProvisionerArgs(
            # the cluster's outputs, filled in by the program; stand-ins the rules accept
            cluster_id=FROM_CLUSTER_ID,
            location=FROM_CLUSTER,
            node_resource_group=FROM_CLUSTER,
            oidc_issuer_url=FROM_CLUSTER,
            version=version,
            identity_name=chosen.get("identity_name"),
            values=chosen.get("values", {}),
        )
    written = frozenset(
        path
        for path, present in {
            "kaito.install": kaito[StackKaito].get("install") is not None,
            "kaito.nodeProvisioning": operator.get("node_provisioning") is not None,
            "kaito.version": operator.get("version") is not None,
            "gpuOperator.enabled": stack_gpu.get("enabled") is not None,
            "gpuProvisioner.install": provisioner[StackGpuProvisioner].get("install") is not None,
            "gpuProvisioner": bool(provisioner[GpuProvisionerArgs]),
        }.items()
        if present
    )
    stack_defaults = model_defaults(kaito, kaito_args)
    stack_wide = dict(STACK_WIDE)
    forced = forced_runtime(kaito_args)
    if forced is not None:  # the vLLM gate is off: KAITO serves every model so, whatever it asks
        stack_defaults["runtime"] = forced
        value_gates = operator.get("values", {}).get("featureGates")
        in_values = isinstance(value_gates, Mapping) and "vLLM" in value_gates
        stack_wide["runtime"] = (
            "kaito",
            *(("values", Key("featureGates")) if in_values else ("feature_gates",)),
            Key("vLLM"),
        )
    hf_token: Any = (
        secret_values.hf_token
        if secret_values.hf_token is not None
        else (SECRET_PRESENT if "hfToken" in secrets else None)
    )
    # The stack knows every GPU pool of a cluster it creates: each model checks where it lands.
    knows_pools = (
        cluster_kind == "aks" and stack_defaults["node_provisioning"] == "byo" and len(pools) == len(pool_values)
    )
    models: list[KaitoModelArgs] = []
    model_index: list[int] = []
    for i, entry in enumerate(ws_values):
        if entry is not None:
            given = {k: v for k, v in entry[KaitoModelArgs].items() if v is not None}
            defaults = stack_defaults
            if given.get("image") and forced is not None:  # the gate picks a preset's runtime; an image serves itself
                defaults = {k: v for k, v in stack_defaults.items() if k != "runtime"}
            args = KaitoModelArgs(
                **{**defaults, **given}, hf_token=hf_token, node_groups=list(groups) if knows_pools else None
            )
            if is_azure and off_gpu_by_default(args):  # a CPU model stays on the system pool
                args = dataclasses.replace(args, node_selector=dict(AKS_SYSTEM_POOL_LABELS))
            models.append(args)
            model_index.append(i)
    warnings = tuple(
        _model_problem_at(w, i, pool_index, ws_values[i])
        for i, args in zip(model_index, models, strict=True)
        for w in model_warnings(args)
    ) + _provisioner_warnings(gpu_provisioner_args, kaito_args.version)

    rag_engines, rag_index, rag_problems = _rag_engines(rag_values, models, kaito_args.version)
    install_rag = rag_operator[StackRagEngineOperator].get("install")
    if install_rag is None:
        install_rag = bool(rag_values) and kaito_install
    rag_operator_args = (
        RagEngineOperatorArgs(version=kaito_args.version, values=rag_operator[RagEngineOperatorArgs].get("values", {}))
        if install_rag
        else None
    )
    if rag_operator[StackRagEngineOperator].get("install") is not None:
        written |= {"ragEngineOperator.install"}
    if rag_operator[RagEngineOperatorArgs]:
        written |= {"ragEngineOperator"}

    cfg = StackConfig(
        kubeconfig_cluster=kubeconfig_cluster,
        aks_cluster=aks_cluster,
        cluster_protect=cluster_protect,
        kaito=kaito_args,
        kaito_install=kaito_install,
        gpu_discovery_given=discovery is not None,
        models=tuple(models),
        pools=tuple(pools),
        gpu_operator=gpu_operator_args,
        gpu_operator_written="gpuOperator" in raw,
        gpu_provisioner=gpu_provisioner_args,
        given=written,
        rag_engines=tuple(rag_engines),
        rag_operator=rag_operator_args,
        create_namespaces=top[StackNamespaces].get("create_namespaces", True),
        has_hf_token="hfToken" in secrets,
        has_kubeconfig="kubeconfig" in secrets,
        azure_location=azure_location,
        pools_known=knows_pools,
        warnings=warnings,
    )

    # ---- the components' own rules, at config paths; then what only a whole stack can get wrong
    found: list[Problem] = []
    if kubeconfig_cluster is not None:
        found += [
            rules.stack_wording(p.under("cluster", "kubeconfig"))
            for p in kubeconfig_cluster_problems(kubeconfig_cluster, base=base_dir)
        ]
    if aks_cluster is not None:
        found += [p.under("cluster", cluster_kind or "aks") for p in aks_cluster_problems(aks_cluster)]
    for i, pool in zip(pool_index, pools, strict=True):
        found += [p.under("gpuNodePools", i) for p in gpu_node_pool_problems(pool.args)]
    operator_problems = kaito_operator_problems(kaito_args)
    if add_on:  # refused at kaito.install, which says why: not the add-on's release again
        operator_problems = [p for p in operator_problems if p.path != ("version",)]
    if not kaito_install:  # only the release matters (the one rule, for Workspaces): installed elsewhere
        unsupported = catalog.unsupported_kaito_version(kaito_args.version)
        operator_problems = [Problem.at("version", unsupported, "version")] if unsupported else []
    found += [_at_pools(p, pool_index) or p.under("kaito") for p in operator_problems]
    if gpu_operator_args is not None:
        found += [_at_pools(p, pool_index) or p.under("gpuOperator") for p in gpu_operator_problems(gpu_operator_args)]
    if gpu_provisioner_args is not None:
        found += [p.under("gpuProvisioner") for p in gpu_provisioner_problems(gpu_provisioner_args)]
    sound_models: list[int] = []  # positions in `models` whose own rules passed
    for n, (i, args) in enumerate(zip(model_index, models, strict=True)):
        given = ws_values[i]
        model_found = check_model(args)[1]
        if cluster_kind == "existing" and args.node_groups is None:  # the pools it adds: no CPU model on them
            model_found += list(cpu_on_gpu_pools(args, groups))
        if not model_found:
            sound_models.append(n)
        for p in model_found:
            found.append(rules.stack_wording(_model_problem_at(p, i, pool_index, given, stack_wide), args))
    if rag_operator_args is not None:
        operator_found = ragengine_operator_problems(rag_operator_args)
        found += [p.under("ragEngineOperator") for p in operator_found if p.path != ("version",)]
    # with the add-on, ragEngines are refused as a whole: not each for the add-on's release too
    found += [p for p in rag_problems if not (add_on and p.path[:2] == ("kaito", "version"))]
    found += rules.check(cfg, model_index, pool_index, rag_index)
    found += budget.check(cfg, model_index, pool_index, rag_index, sound_models)
    # A pool's node counts are its count or autoscale, which the pool's own rules check.
    found = [p for p in found if p.code != "pool-nodes"]
    if add_on:  # the add-on's refusal of a key says it all (not also what its release's rules imply)
        refused = [p.path for p in found if p.code == "add-on"]
        found = [p for p in found if p.code == "add-on" or not any(p.path[: len(r)] == r for r in refused)]
    problems += [p for p in found if not _spoken_for(p.path, shaped) and p.path not in blind]
    if problems:
        raise StackConfigError(problems)
    return cfg


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


def _add_on_kaito_version(cluster: AksClusterArgs | None) -> str:
    """The KAITO release the AKS add-on runs on the cluster's Kubernetes minor (an adopted
    cluster's is known only at deploy time: the newest statement). A release this program does
    not support is refused at cluster.aks.kubernetesVersion (stacks/rules.py); the newest
    statement's rules judge the rest meanwhile."""
    table = catalog.aks_add_on()
    release = table.kaito_on(cluster.kubernetes_version if cluster is not None else None)
    return release if release is not None and release in catalog.kaito_charts() else table.kaito_version


def _rag_engines(
    entries: list[dict[type, dict[str, Any]] | None], models: list[KaitoModelArgs], version: str
) -> tuple[list[RagEngineConfig], list[int], list[Problem]]:
    """Each ragEngines entry as RagEngine args, checked by the component's own rules at its
    config path; an engine over a workspace answers with that model's endpoint."""
    engines: list[RagEngineConfig] = []
    index: list[int] = []
    problems: list[Problem] = []
    by_key = {(m.namespace, m.name): m for m in models}
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        given = {k: v for k, v in entry[RagEngineArgs].items() if v is not None}
        tie = entry[StackRagEngine]
        workspace = tie.get("workspace")
        at = ("ragEngines", i)
        if workspace is not None:
            model = by_key.get((given.get("namespace", "default"), workspace))
            if "inference_service" in given:
                problems.append(
                    Problem(
                        (*at, "workspace"),
                        "give workspace (a model of this stack) or inferenceService, not both",
                        "rag-llm",
                    )
                )
            elif model is None:
                problems.append(
                    Problem(
                        (*at, "workspace"),
                        f"no workspaces[] entry named {workspace!r} in namespace {given.get('namespace', 'default')}"
                        + "".join(
                            f"; {workspace} is in namespace {ns}: set namespace: {ns} (an engine calls a model of "
                            "its own namespace)"
                            for ns, n in by_key
                            if n == workspace
                        )[:300],
                        "rag-workspace",
                    )
                )
            elif model.tuning is not None:
                problems.append(
                    Problem((*at, "workspace"), f"{workspace} is a tuning job; it serves nothing", "rag-workspace")
                )
            else:
                limit = max_model_len(model)
                window = tie.get("context_window_size") or limit
                # without max-model-len the model's own window bounds it (KAITO's catalog)
                chart = catalog.kaito_charts().get(version)
                preset = catalog.find_preset(model.model, chart.preset_catalog) if chart and model.model else None
                bound = limit or (preset.token_limit if preset is not None else None)
                if window is not None and bound is not None and window > bound:
                    said = (
                        f"config.vllm.max-model-len of {limit}"
                        if limit
                        else f"context window ({model.model}: {bound} tokens in KAITO {version}'s catalog)"
                    )
                    problems.append(
                        Problem(
                            (*at, "context_window_size"),
                            f"{window} exceeds {workspace}'s {said}: the engine would build prompts the model rejects; "
                            f"use at most {bound}" + (" (or leave it out)" if limit else ""),
                            "rag-window",
                        )
                    )
                if window is None:
                    problems.append(
                        Problem(
                            (*at, "context_window_size"),
                            f"required: {workspace} is a custom image; give its context window here"
                            if model.image
                            else f"required: {workspace} sets no config.vllm.max-model-len, so KAITO sizes its context "
                            "window from the GPU at start-up; give the window here (or set max-model-len on the "
                            "workspace)",
                            "required",
                        )
                    )
                else:
                    url = endpoint_of(model)
                    given["inference_service"] = InferenceServiceArgs(url=url, context_window_size=window)
        elif tie.get("context_window_size") is not None:
            problems.append(
                Problem(
                    (*at, "context_window_size"),
                    "only with workspace; give inferenceService.contextWindowSize for another LLM",
                    "rag-llm",
                )
            )
        args = RagEngineArgs(kaito_version=version, **given)
        checked, found = check_rag_engine(args)
        problems += [_rag_problem_at(p, i) for p in found]
        if checked is not None:
            engines.append(RagEngineConfig(checked, workspace))
            index.append(i)
    return engines, index, problems


def _rag_problem_at(problem: Problem, index: int) -> Problem:
    if problem.path[:1] == ("kaito_version",):
        return dataclasses.replace(problem, path=("kaito", "version", *problem.path[1:]))
    return problem.under("ragEngines", index)


def _spoken_for(path: tuple[PathPart, ...], shaped: list[tuple[PathPart, ...]]) -> bool:
    """A rule's problem at (or inside) a key already reported."""
    return any(path[: len(s)] == s for s in shaped if s)


def _empty(section: Section) -> dict[type, dict[str, Any]]:
    return {p.cls: {} for p in section.parts}


def _cluster(data: Any, out: list[Problem]) -> tuple[str | None, dict[type, dict[str, Any]] | None]:
    if not isinstance(data, Mapping):
        out.append(Problem(("cluster",), "must be a map with one of kubeconfig, aks or existing", "type"))
        return None, None
    for key in data:
        if key not in CLUSTER_CHOICES:
            close = did_you_mean(str(key), list(CLUSTER_CHOICES))
            hint = f"did you mean {close[0]}?" if close else "use kubeconfig, aks or existing"
            out.append(Problem(("cluster", Key(str(key))), f"unknown key; {hint}", "unknown"))
    chosen = [k for k in CLUSTER_CHOICES if k in data]
    if len(chosen) != 1:
        out.append(
            Problem(
                ("cluster",),
                "choose exactly one of kubeconfig (an existing cluster through a kubeconfig), aks (create an AKS "
                f"cluster) or existing (adopt an AKS cluster); got {', '.join(chosen) or 'none'}",
                "cluster",
            )
        )
        return None, None
    kind = chosen[0]
    body = data[kind] if data[kind] is not None else {}
    return kind, read_section(CLUSTER_CHOICES[kind], body, ("cluster", kind), out)


def _entries(section: Section, data: Any, key: str, out: list[Problem]) -> list[dict[type, dict[str, Any]] | None]:
    """Each entry of a config list, read on its own (None: not usable)."""
    if not isinstance(data, list):
        out.append(
            Problem(
                (key,),
                f"must be a list of entries (`- name: ...`), not {shown(data)}",
                "type",
            )
        )
        return []
    return [read_section(section, entry, (key, i), out) for i, entry in enumerate(data)]


def _at_pools(problem: Problem, pool_index: list[int]) -> Problem | None:
    """A component's problem at `node_groups[i]...`, at the stack's gpuNodePools entry."""
    path = problem.path
    if len(path) >= 2 and path[0] == "node_groups" and isinstance(path[1], int) and path[1] < len(pool_index):
        rest = path[2:]
        if rest and rest[0] in ("min_nodes", "max_nodes"):
            rest = ()  # (count or autoscale)
        return dataclasses.replace(problem, path=("gpuNodePools", pool_index[path[1]], *rest))
    if path == ("node_groups",):
        return dataclasses.replace(problem, path=("gpuNodePools",))
    return None


# Model args the stack sets for every model from one place.
STACK_WIDE: dict[str, tuple[PathPart, ...]] = {
    "kaito_version": ("kaito", "version"),
    "node_provisioning": ("kaito", "node_provisioning"),
    "wait_for_ready": ("kaito", "wait_for_ready"),
    "wait_for_gpu_nodes": ("kaito", "wait_for_gpu_nodes"),
    "gpu_nodes_timeout_minutes": ("kaito", "gpu_nodes_timeout_minutes"),
    "hf_token": (secret_key("hfToken"),),
}


def _model_problem_at(
    problem: Problem,
    index: int,
    pool_index: list[int],
    given: dict[type, dict[str, Any]] | None,
    stack_wide: Mapping[str, tuple[PathPart, ...]] = STACK_WIDE,
) -> Problem:
    """A model's problem at its config path: the workspace entry, or the stack-wide key or pool
    the arg came from (`stack_wide`: the args the stack set, by where they were set)."""
    at_pool = _at_pools(problem, pool_index)
    if at_pool is not None:
        return at_pool
    head = problem.path[0] if problem.path else None
    own = given[KaitoModelArgs] if given is not None else {}
    if isinstance(head, str) and head in stack_wide and head not in own:
        return dataclasses.replace(problem, path=(*stack_wide[head], *problem.path[1:]))
    own_timeout = given is not None and given[KaitoModelArgs].get("ready_timeout_minutes") is not None
    if head == "ready_timeout_minutes" and not own_timeout:
        return dataclasses.replace(problem, path=("kaito", *problem.path))
    return problem.under("workspaces", index)


def parse_stack_file(f: StackFile) -> StackConfig:
    """A Pulumi.<stack>.yaml's config, checked as `pulumi up` would check it (secure values count
    as set secrets; their contents are never needed), a relative path from the file's folder."""
    prefix = f"{PROJECT}:"
    raw = {k.removeprefix(prefix): v for k, v in f.config.items() if k.startswith(prefix)}
    encrypted = [k.removeprefix(prefix) for k in f.secrets if k.startswith(prefix)]
    problems = stack_file_problems(f)
    problems += [
        Problem(
            (Key(k),),
            "is not a value `pulumi config set --secret` wrote (secure: v1:...); set it again",
            "secure-value",
        )
        for k in f.unreadable
        if k.startswith(prefix) and k.removeprefix(prefix) in SECRET_KEYS
    ]
    present = [k for k in SECRET_KEYS if k in encrypted or k in raw]
    plaintext = [k for k in SECRET_KEYS if k in raw]
    try:
        cfg = parse_stack_config(
            {k: v for k, v in raw.items() if k not in SECRET_KEYS},
            secrets=present,
            plaintext_secrets=plaintext,
            encrypted=[k for k in encrypted if k not in SECRET_KEYS],
            azure_location=f.config.get("azure-native:location"),
            base_dir=f.path.parent if f.path is not None else None,
        )
    except StackConfigError as err:
        raise StackConfigError(beside_traps([*problems, *err.problems]), f) from None
    if problems:
        raise StackConfigError(problems, f)
    return cfg


def stack_file_problems(f: StackFile | None) -> list[Problem]:
    """The values of a stack file the Pulumi CLI reads otherwise than they say (010 is octal 8, a
    date becomes Go's text of a time), at their config paths: refused by validate, render and
    `pulumi up` alike (stacks/pulumi_yaml.py says which and why)."""
    if f is None:
        return []
    prefix = f"{PROJECT}:"
    problems = []
    for trap in f.traps:
        top = str(trap.path[0])
        head: PathPart = top.removeprefix(prefix) if top.removeprefix(prefix) in TOP_KEYS else Key(top)
        rest = tuple(p if isinstance(p, int) else Key(p) for p in trap.path[1:])
        problems.append(Problem((head, *rest), trap.message, "trap"))
    return problems


def beside_traps(problems: list[Problem]) -> list[Problem]:
    """The problems, less those at a trapped value, inside it, or at the map or list holding it:
    the trap's fix changes what they judged."""
    spots = [yaml_path(p.path) for p in problems if p.code == "trap"]

    def touches(path: tuple[str | int, ...]) -> bool:
        return any(path[: len(s)] == s or (s[: len(path)] == path and len(path) >= len(s) - 1) for s in spots)

    return [p for p in problems if p.code == "trap" or not touches(yaml_path(p.path))]


def foreign_keys(keys: Collection[str]) -> list[Problem]:
    """Warnings for config keys outside the kaito-aks namespace that look like typos of it
    (`kaito:workspaces`, `Kaito-aks:gpuOperator`): another package's keys are left alone."""
    warnings: list[Problem] = []
    for key in keys:
        namespace, _, name = key.partition(":")
        if not name or namespace == PROJECT:
            continue
        looks_ours = did_you_mean(namespace, [PROJECT], cutoff=0.6) or namespace.lower().replace("_", "-") == PROJECT
        if looks_ours and (name in TOP_KEYS or name in SECRET_KEYS or did_you_mean(name, [*TOP_KEYS, *SECRET_KEYS])):
            warnings.append(
                Problem(
                    (Key(key),),
                    f"not read by this program (its keys are {PROJECT}:<key>); did you mean {PROJECT}:{name}?",
                    "foreign-key",
                )
            )
    return warnings


def _engine_config() -> dict[str, Any]:
    """Every config value the engine passed to this program, by full key (project:name)."""
    from pulumi.runtime import config as runtime_config

    try:
        values = dict(runtime_config.get_config_env())
    except ValueError as err:
        raise StackConfigError(
            [Problem((Key("PULUMI_CONFIG"),), f"the engine's config is not JSON ({err})", "engine")]
        ) from None
    values.update(runtime_config.CONFIG.get())
    return values


def _own_stack_file() -> StackFile | None:
    """This stack's Pulumi.<stack>.yaml in the working directory, to point errors at lines
    (None when it cannot be read: the errors are then reported without lines)."""
    try:
        return read_stack_file(pulumi.get_stack(), Path(os.getcwd()))
    except (OSError, StackFileError):
        return None


def load_stack(source: StackFile | None = None, *, warn: bool = True) -> tuple[StackConfig, StackSecrets]:
    """The current stack's config and secrets, checked (for __main__.py). `source`: the stack
    file the engine's config came from (default: Pulumi.<stack>.yaml in the working directory,
    if any), for its traps and lines; `warn`: report keys outside the namespace that look like
    ours (render prints them itself)."""
    from pulumi.runtime.config import is_config_secret

    prefix = f"{PROJECT}:"
    engine = _engine_config()
    if warn:
        for warning in foreign_keys(engine):
            pulumi.warn(warning.text("schema"))
    raw = {k.removeprefix(prefix): decode(v) for k, v in engine.items() if k.startswith(prefix)}
    present = [k for k in SECRET_KEYS if raw.get(k) not in (None, "")]
    plaintext = [k for k in present if not is_config_secret(prefix + k)]
    encrypted = [k for k in raw if k not in SECRET_KEYS and is_config_secret(prefix + k)]
    # set but empty: the provider would read $KUBECONFIG or ~/.kube/config instead
    contents = raw.get("kubeconfig")
    empty = (
        [Problem((secret_key("kubeconfig"),), EMPTY_KUBECONFIG, "kubeconfig-empty")]
        if isinstance(contents, str) and not contents.strip()
        else []
    )
    config = pulumi.Config(PROJECT)
    secrets = StackSecrets(
        hf_token=config.get_secret("hfToken") if "hfToken" in present else None,
        kubeconfig=config.get_secret("kubeconfig") if "kubeconfig" in present else None,
    )
    source = source if source is not None else _own_stack_file()
    problems = stack_file_problems(source)
    cfg: StackConfig | None = None
    try:
        cfg = parse_stack_config(
            {k: v for k, v in raw.items() if k not in SECRET_KEYS},
            secrets=present,
            plaintext_secrets=plaintext,
            encrypted=encrypted,
            secret_values=secrets,
            azure_location=engine.get("azure-native:location"),
        )
    except StackConfigError as err:
        problems += err.problems
    problems += empty
    if problems or cfg is None:
        raise StackConfigError(beside_traps(problems), source)
    return cfg, secrets
