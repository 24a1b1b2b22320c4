"""Reading a stack's config: from the Pulumi engine (or a stack file) to a checked StackConfig, the
components' args. The file is read against its schema in one call (stacks/config.py), the stack's
defaults decided (stacks/defaults.py), the components' args made, each knowing where it was
written, and every rule checked (the components' own, then the stack's) before the program
registers a single resource; `validate`, `render` and `pulumi up` read the same way."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pulumi

from kaito_aks import catalog, policy
from kaito_aks.azure.aks_cluster import AksClusterArgs, aks_cluster_problems, aks_cluster_warnings
from kaito_aks.azure.aks_security import is_production
from kaito_aks.azure.cpu_node_pool import CpuNodePoolArgs, cpu_node_pool_problems
from kaito_aks.azure.gpu_node_pool import GpuNodePoolArgs, gpu_node_pool_problems, node_group
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigClusterArgs, kubeconfig_cluster_problems
from kaito_aks.cluster.kubeconfig_text import EMPTY as EMPTY_CONTENTS
from kaito_aks.endpoints import INTERNAL_LB, load_balancer_of
from kaito_aks.model.component import judge_model
from kaito_aks.model.config import max_model_len
from kaito_aks.model.names import endpoint_of
from kaito_aks.model.placement import cpu_on_gpu_pools, cpu_on_no_pool
from kaito_aks.model.rules import SIZING_UNAFFECTED
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.nodes import with_driver
from kaito_aks.operators.gpu_operator import GpuOperatorArgs, gpu_operator_problems
from kaito_aks.operators.gpu_provisioner import GpuProvisionerArgs, gpu_provisioner_problems
from kaito_aks.operators.kaito_operator import KaitoOperatorArgs, kaito_operator_problems
from kaito_aks.operators.karpenter import KarpenterArgs, KarpenterNetworkArgs, KubeletIdentityArgs, karpenter_problems
from kaito_aks.operators.ragengine_operator import RagEngineOperatorArgs, ragengine_operator_problems
from kaito_aks.pod_security import host_path_reason
from kaito_aks.problems import Key, PathPart, Problem, camel, did_you_mean
from kaito_aks.rag.component import judge_rag_engine
from kaito_aks.rag.spec import InferenceServiceArgs, RagEngineArgs
from kaito_aks.serving.spec import ModelMetricsArgs
from kaito_aks.validation import collect, unusable
from stacks import budget, defaults, rules, serving
from stacks.config import (
    FROM_CLUSTER,
    FROM_CLUSTER_ID,
    NESTED_SECRETS,
    PROJECT,
    SECRET_KEYS,
    STACK_FILE,
    TOP_KEYS,
    CpuPoolConfig,
    ModelConfig,
    Placed,
    PoolConfig,
    RagEngineConfig,
    StackConfig,
)
from stacks.defaults import Written
from stacks.errors import StackConfigError, secret_key
from stacks.nested_secrets import SECRET_PRESENT, nested_secret, plaintext_nested_secrets
from stacks.pulumi_yaml import decode
from stacks.stackfile import StackFile, StackFileError, read_stack_file, yaml_path

EMPTY_KUBECONFIG = (
    f"{EMPTY_CONTENTS}: `pulumi config set --secret kubeconfig < kubeconfig.yaml`, or `pulumi config rm kubeconfig` "
    "to use cluster.kubeconfig.path"
)
# The config values that may be secrets, as a problem names them.
SECRETS_TEXT = ", ".join(SECRET_KEYS) + " and the gateway's apiKeys and tls"


@dataclasses.dataclass(frozen=True)
class StackSecrets:
    hf_token: pulumi.Output[str] | None = None
    kubeconfig: pulumi.Output[str] | None = None


@dataclasses.dataclass(frozen=True)
class Secrets:
    """The stack's secret keys: which are set, and their values where they are known."""

    present: Collection[str] = ()
    values: StackSecrets = StackSecrets()

    def value(self, key: str) -> Any:
        given = self.values.hf_token if key == "hfToken" else self.values.kubeconfig
        return given if given is not None else (SECRET_PRESENT if key in self.present else None)


ACCESS_SECRET_HINT = " (a token: put it in a Kubernetes Secret and name that Secret in accessSecret)"


def stack_config(
    raw: Mapping[str, Any],
    *,
    secrets: Collection[str] = (),
    plaintext_secrets: Collection[str] = (),
    encrypted: Collection[str] = (),
    secret_values: StackSecrets = StackSecrets(),
    azure_location: str | None = None,
    base_dir: Path | None = None,
    stack: str = "",
) -> StackConfig:
    """Check raw config values (keyed by their name in the kaito-aks namespace, already
        decoded) and map them onto the components' args. `secrets` names the secret keys that are
        set; `plaintext_secrets` those set without --secret; `encrypted` the other keys set with
        --secret (their values in `raw` when known). `base_dir`: where a relative kubeconfig path is
        read from (default: the working directory, where `pulumi up` runs the program); `stack`: the
    stack's name (a stack named prod gets production's warnings). Raises
        StackConfigError listing every problem, each at its config path."""
    problems = key_problems(raw, encrypted, plaintext_secrets)
    raw = _without_nested_secrets(raw, problems)
    if "cluster" not in raw:
        if "cluster" not in encrypted:  # (an encrypted one cannot be read here; what is wrong with it is said)
            why = "required: set kubeconfig (an existing cluster), aks (create one) or existing (adopt one)"
            problems.append(Problem((Key(f"{PROJECT}:cluster"),), why, "required"))
        raise StackConfigError(problems)
    written, shape = read_file(raw)
    cfg, tied = assemble(written, Secrets(secrets, secret_values), azure_location, stack)
    found, cfg = judge(cfg, written, base_dir, tied)
    problems += shape + beside_shape(found, shape)
    if problems:
        raise StackConfigError(_once(problems))
    return cfg


def _once(problems: list[Problem]) -> list[Problem]:
    """Each problem once: two components may say the same thing at one path (a release the
    operator and the models both find unsupported)."""
    seen: set[tuple[object, ...]] = set()
    out: list[Problem] = []
    for p in problems:
        key = (p.path, p.code, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def key_problems(
    raw: Mapping[str, Any], encrypted: Collection[str], plaintext_secrets: Collection[str]
) -> list[Problem]:
    """The config keys themselves: unknown ones (a misspelt secret like any other, never a hint
    to store it in plain text), ones set with --secret that are no secrets, secrets in plaintext."""
    problems: list[Problem] = []
    for key in dict.fromkeys([*raw, *encrypted]):
        if key in SECRET_KEYS:
            continue
        at = (Key(f"{PROJECT}:{key}"),)
        if key not in TOP_KEYS:
            close = did_you_mean(key, [*TOP_KEYS, *SECRET_KEYS])
            hint = f"did you mean {PROJECT}:{close[0]}?" if close else f"known keys: {', '.join(sorted(TOP_KEYS))}"
            problems.append(Problem(at, f"unknown config key; {hint}", "unknown"))
        elif key in encrypted and key not in NESTED_SECRETS:
            token = (
                " (or remove the token `--path --secret` put inside it: a token goes in a Kubernetes Secret named "
                "in accessSecret)"
            )
            problems.append(
                Problem(
                    at,
                    f"is encrypted (set with --secret), but only {SECRETS_TEXT} are secrets; set it "
                    "without --secret" + (token if key == "ragEngines" else ""),
                    "secure-value",
                )
            )
    for key in plaintext_secrets:
        problems.append(
            Problem(
                (secret_key(key),),
                f"must be a secret: run `pulumi config set --secret {key} ...` (plaintext ends up in the stack file)",
                "plaintext-secret",
            )
        )
    return problems


def _without_nested_secrets(raw: Mapping[str, Any], problems: list[Problem]) -> Mapping[str, Any]:
    """`raw` without the values `pulumi config set --path --secret` wrote inside a key (a map of
    one `secure:`), each refused at its path: Pulumi makes the whole key secret for one of them,
    and the stack keeps secrets only in its own secret keys (a RAG engine's token: accessSecret)."""

    def strip(value: Any, path: tuple[PathPart, ...]) -> Any:
        if isinstance(value, Mapping):
            kept: dict[Any, Any] = {}
            for k, v in value.items():
                if isinstance(v, Mapping) and set(v) == {"secure"} and nested_secret((*path, Key(str(k)))):
                    kept[k] = SECRET_PRESENT  # (its value is known to the engine only)
                    continue
                if isinstance(v, Mapping) and set(v) == {"secure"}:
                    problems.append(
                        Problem(
                            (*path, Key(str(k))),
                            f"is encrypted (set with --path --secret), but only {SECRETS_TEXT} are "
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


# ---------------------------------------------------------------- the file, read in one call


def read_file(raw: Mapping[str, Any]) -> tuple[Written, list[Problem]]:
    """The file's kaito-aks keys read against its schema: what each section writes (an unusable
    key, or entry, left out) and every problem at its config path."""
    values, found = collect(STACK_FILE.validate_python(dict(raw), by_alias=True, by_name=False, context={}))
    problems = [Problem((camel(str(p.path[0])), *p.path[1:]), p.message, p.code) for p in found]  # (config keys)
    cluster = values.get("cluster")
    kinds = list(cluster) if isinstance(cluster, dict) else []
    if isinstance(cluster, dict) and len(kinds) != 1:
        problems.append(
            Problem(
                ("cluster",),
                "choose exactly one of kubeconfig (an existing cluster through a kubeconfig), aks (create an AKS "
                f"cluster) or existing (adopt an AKS cluster); got {', '.join(kinds) or 'none'}",
                "cluster",
            )
        )
    kind = kinds[0] if len(kinds) == 1 else None
    return (
        Written(
            cluster_kind=kind,
            cluster=cast(dict[str, Any], cluster)[kind] if kind is not None else None,
            kaito=values.get("kaito") or {},
            gpu_operator=values.get("gpu_operator") or {},
            gpu_provisioner=values.get("gpu_provisioner") or {},
            karpenter=values.get("karpenter") or {},
            rag_engine_operator=values.get("rag_engine_operator") or {},
            pools=tuple(values.get("gpu_node_pools") or ()),
            cpu_pools=tuple(values.get("cpu_node_pools") or ()),
            workspaces=tuple(values.get("workspaces") or ()),
            rag_engines=tuple(values.get("rag_engines") or ()),
            create_namespaces=values.get("create_namespaces", True) is not False,
            endpoints=values.get("endpoints") or {},
            generation=values.get("defaults") or 1,
            gateway=_section(values.get("gateway")),
            autoscaling=_section(values.get("autoscaling")),
            metrics=_section(values.get("metrics")),
        ),
        problems,
    )


def _section(value: Any) -> dict[str, Any] | None:
    """A section as written (`gateway:` with nothing under it: its defaults), or None: not written."""
    if value is None:
        return None
    return dict(value) if isinstance(value, Mapping) else {}


def beside_shape(found: list[Problem], shape: list[Problem]) -> list[Problem]:
    """The rules' problems, less those at (or inside) a key whose shape is refused already, and
    those about a whole entry the rules judged without one of its keys (its value was unusable)."""
    spoken = [p.path for p in shape if p.path]
    blind = {p.path[:2] for p in shape if unusable([p]) and len(p.path) > 2 and isinstance(p.path[1], int)}
    return [p for p in found if not any(p.path[: len(s)] == s for s in spoken) and p.path not in blind]


# ---------------------------------------------------------------- the components' args


def assemble(
    written: Written, secrets: Secrets, azure_location: str | None, stack: str = ""
) -> tuple[StackConfig, list[Problem]]:
    """The components' args from what the file writes and what the stack decides, each placed
    where it was written; the problems of tying a RAG engine to a workspace."""
    kubeconfig_cluster, aks_cluster = _cluster(written, secrets, azure_location)
    if aks_cluster is not None and defaults.keda_add_on(written):
        aks_cluster = dataclasses.replace(aks_cluster, keda=True)
    pools = _pools(written)
    add_on = defaults.runs_add_on(aks_cluster)
    provisioning = defaults.node_provisioning(written.kaito, add_on)
    kaito_install = defaults.kaito_installed(written.kaito, add_on)
    gpu_operator_on = defaults.gpu_operator_on(written, provisioning == "auto")
    groups = [node_group(p.args, p.args.name or "") for p in pools]
    if gpu_operator_on:  # the stack's GPU Operator installs the driver the pools leave to it
        groups = [with_driver(g) for g in groups]
    version = defaults.kaito_version(written.kaito, aks_cluster)
    gates = written.kaito.get("feature_gates", {})
    if written.gateway is not None and kaito_install:
        gates = defaults.with_gateway_gate(written.kaito, catalog.kaito_charts().get(version))
    kaito = KaitoOperatorArgs(
        version=version,
        node_provisioning=provisioning,
        node_provisioner=defaults.node_provisioner(written, version, provisioning, add_on),
        feature_gates=gates,
        values=written.kaito.get("values", {}),
        gpu_discovery=defaults.gpu_discovery(written.kaito, gpu_operator_on),
        node_groups=groups,
        cluster_name=aks_cluster.name if aks_cluster is not None else None,
    )
    cpu_pools = _cpu_pools(written)
    knows_pools = defaults.pools_known(written, provisioning, len(pools) + len(cpu_pools))
    metrics = serving.metrics_args(written, aks_cluster)
    workspaces = _models(written, kaito, secrets, groups if knows_pools else None, metrics)
    served = serving.serving_args(written, kaito, [w.args for w in workspaces])
    workspaces = [dataclasses.replace(w, args=serving.with_scaler(w.args, served.autoscaling)) for w in workspaces]
    rag_engines, tied = _rag_engines(written, [w.args for w in workspaces], kaito.version)
    provisioner = _gpu_provisioner(written, kaito, kaito_install)
    karpenter = _karpenter(written, kaito, kaito_install)
    if aks_cluster is not None and written.cluster_kind == "aks":
        subnet = defaults.node_subnet(written.cluster or {}, karpenter is not None)
        aks_cluster = dataclasses.replace(aks_cluster, node_subnet=subnet)
    # (each model's and engine's own warnings are their rules', said by judge)
    warnings = _pod_security_warnings(workspaces, written.create_namespaces)
    if not written.is_azure:
        warnings += _internal_elsewhere(workspaces, rag_engines)
    protect = written.cluster_kind == "aks" and (written.cluster or {}).get("protect", False)
    if aks_cluster is not None:
        production = is_production(stack, protect)
        at = ("cluster", written.cluster_kind or "aks")
        warnings += [p.under(*at) for p in aks_cluster_warnings(aks_cluster, production)]
    cfg = StackConfig(
        kubeconfig_cluster=kubeconfig_cluster,
        aks_cluster=aks_cluster,
        cluster_protect=protect,
        kaito=kaito,
        kaito_install=kaito_install,
        gpu_discovery_given=written.kaito.get("gpu_discovery") is not None,
        workspaces=tuple(workspaces),
        pools=tuple(pools),
        cpu_pools=tuple(cpu_pools),
        gpu_operator=_gpu_operator(written, groups) if gpu_operator_on else None,
        gpu_provisioner=provisioner,
        karpenter=karpenter,
        generation=written.generation,
        given=_written_settings(written),
        rag_engines=tuple(rag_engines),
        rag_operator=RagEngineOperatorArgs(version=kaito.version, values=written.rag_engine_operator.get("values", {}))
        if defaults.rag_operator_on(written, kaito_install)
        else None,
        create_namespaces=written.create_namespaces,
        has_hf_token="hfToken" in secrets.present,
        has_kubeconfig="kubeconfig" in secrets.present,
        azure_location=azure_location,
        pools_known=knows_pools,
        warnings=(
            *warnings,
            *_provisioner_warnings(provisioner, kaito.version),
            *_karpenter_warnings(written, karpenter),
        ),
        gateway=served.gateway,
        autoscaling=served.autoscaling,
        metrics=served.metrics,
        dashboard=served.dashboard,
    )
    cfg = dataclasses.replace(cfg, warnings=(*cfg.warnings, *serving.warnings(cfg, written)))
    return cfg, tied


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
                w.placed.where(
                    Problem.at(
                        "namespace",
                        f"namespace {w.args.namespace} is not one this stack creates, so it gets no Pod Security labels "
                        "from it (its pods are admitted by whatever labels it has); a namespace of the models' own, "
                        "which the stack creates, enforces Pod Security's baseline level",
                        "pod-security-unlabelled",
                    )
                )
            )
        why = host_path_reason(w.args)
        if why is None or not created:
            continue
        found.append(
            w.placed.where(
                Problem.at(
                    "model",
                    f"{why}, which Pod Security's baseline level refuses: namespace {w.args.namespace} is created at the "
                    "privileged level, so any pod there may run privileged; give such models a namespace of their own",
                    "pod-security",
                )
            )
        )
    return found


def _internal_elsewhere(workspaces: list[ModelConfig], rag_engines: list[RagEngineConfig]) -> list[Problem]:
    """An internal load balancer on a cluster this stack does not know is AKS: the annotation
    that makes it internal is Azure's."""
    found: list[Problem] = []
    entries = [(w.args.load_balancer, w.placed) for w in workspaces] + [
        (e.args.load_balancer, e.placed) for e in rag_engines
    ]
    for value, placed in entries:
        lb = load_balancer_of(value)
        if lb is not None and lb.internal and not lb.annotations:
            why = (
                f"internal through Azure's annotation ({INTERNAL_LB}); on another cloud give that cloud's "
                "internal load balancer annotation in `annotations`, or its load balancer may be public"
            )
            found.append(placed.where(Problem.at("load_balancer", why, "load-balancer-cloud")))
    return found


def _cluster(
    written: Written, secrets: Secrets, azure_location: str | None
) -> tuple[KubeconfigClusterArgs | None, AksClusterArgs | None]:
    section = written.cluster
    if section is None:  # unusable: its problems are said, and nothing that depends on it
        return None, None
    if written.cluster_kind == "kubeconfig":
        return KubeconfigClusterArgs(**section, kubeconfig=secrets.value("kubeconfig")), None
    if written.cluster_kind == "existing":
        return None, AksClusterArgs(**section, existing=True)
    if written.cluster_kind == "aks":
        values = {k: v for k, v in section.items() if k != "protect"}
        location = defaults.cluster_location(section, azure_location)
        return None, AksClusterArgs(**values | {"location": location, "tags": defaults.cluster_tags(section)})
    return None, None


def _pools(written: Written) -> list[PoolConfig]:
    return [
        PoolConfig(
            GpuNodePoolArgs(
                **{k: v for k, v in entry.items() if k != "protect"},
                cluster_name=FROM_CLUSTER,
                resource_group_name=FROM_CLUSTER,
            ),
            entry.get("protect", False),
            Placed(("gpuNodePools", i)),
        )
        for i, entry in enumerate(written.pools)
        if entry is not None
    ]


def _cpu_pools(written: Written) -> list[CpuPoolConfig]:
    return [
        CpuPoolConfig(
            CpuNodePoolArgs(
                **{k: v for k, v in entry.items() if k != "protect"},
                cluster_name=FROM_CLUSTER,
                resource_group_name=FROM_CLUSTER,
            ),
            entry.get("protect", False),
            Placed(("cpuNodePools", i)),
        )
        for i, entry in enumerate(written.cpu_pools)
        if entry is not None
    ]


def _gpu_operator(written: Written, groups: list[Any]) -> GpuOperatorArgs:
    return GpuOperatorArgs(
        version=defaults.gpu_operator_version(written.gpu_operator),
        node_groups=groups if written.is_azure else [],
        values=written.gpu_operator.get("values", {}),
    )


def _gpu_provisioner(written: Written, kaito: KaitoOperatorArgs, kaito_install: bool) -> GpuProvisionerArgs | None:
    if not defaults.gpu_provisioner_on(written, kaito, kaito_install):
        return None
    chosen = written.gpu_provisioner
    return GpuProvisionerArgs(
        # the cluster's outputs, filled in by the program; stand-ins the rules accept
        cluster_id=FROM_CLUSTER_ID,
        location=FROM_CLUSTER,
        node_resource_group=FROM_CLUSTER,
        oidc_issuer_url=FROM_CLUSTER,
        version=defaults.gpu_provisioner_version(chosen, kaito.version),
        identity_name=chosen.get("identity_name"),
        values=chosen.get("values", {}),
    )


def _karpenter(written: Written, kaito: KaitoOperatorArgs, kaito_install: bool) -> KarpenterArgs | None:
    if not defaults.karpenter_on(written, kaito, kaito_install):
        return None
    chosen = written.karpenter
    return KarpenterArgs(
        # the cluster's outputs, filled in by the program; stand-ins the rules accept
        cluster_id=FROM_CLUSTER_ID,
        location=FROM_CLUSTER,
        node_resource_group=FROM_CLUSTER,
        oidc_issuer_url=FROM_CLUSTER,
        api_server_endpoint=FROM_CLUSTER,
        kubelet_identity=KubeletIdentityArgs(client_id=FROM_CLUSTER, resource_id=FROM_CLUSTER),
        network=KarpenterNetworkArgs(
            subnet_id=FROM_CLUSTER,
            vnet_guid=FROM_CLUSTER,
            plugin=FROM_CLUSTER,
            plugin_mode=FROM_CLUSTER,
            policy=FROM_CLUSTER,
            dataplane=FROM_CLUSTER,
        ),
        version=defaults.karpenter_version(chosen, kaito.version),
        identity_name=chosen.get("identity_name"),
        bootstrap_token_rotation=chosen.get("bootstrap_token_rotation", 0),
        values=chosen.get("values", {}),
    )


def _written_settings(written: Written) -> frozenset[str]:
    """The settings the file writes whose default depends on others (the rules tell a written
    one from a decided one)."""
    present = {
        "kaito.install": written.kaito.get("install") is not None,
        "kaito.nodeProvisioning": written.kaito.get("node_provisioning") is not None,
        "kaito.version": written.kaito.get("version") is not None,
        "gpuOperator.enabled": written.gpu_operator.get("enabled") is not None,
        "gpuProvisioner.install": written.gpu_provisioner.get("install") is not None,
        "gpuProvisioner": any(k != "install" for k in written.gpu_provisioner),
        "karpenter.install": written.karpenter.get("install") is not None,
        "karpenter": any(k != "install" for k in written.karpenter),
        "kaito.nodeProvisioner": written.kaito.get("node_provisioner") is not None,
        "cluster.aks.nodeSubnet": written.cluster_kind == "aks"
        and (written.cluster or {}).get("node_subnet") is not None,
        "ragEngineOperator.install": written.rag_engine_operator.get("install") is not None,
        "ragEngineOperator": any(k != "install" for k in written.rag_engine_operator),
    }
    return frozenset(k for k, v in present.items() if v)


def _models(
    written: Written,
    kaito: KaitoOperatorArgs,
    secrets: Secrets,
    node_groups: list[Any] | None,
    metrics: ModelMetricsArgs | None = None,
) -> list[ModelConfig]:
    """Each usable workspace entry as a model's args: the entry's keys over the stack-wide ones
    (kaito.*, the secret hfToken, the pools of a cluster it creates, its route and ServiceMonitor),
    each placed where written."""
    stack_wide = defaults.stack_wide_model_args(kaito, written.kaito)
    paths = defaults.stack_wide_paths(kaito)
    hf_token = secrets.value("hfToken")
    models: list[ModelConfig] = []
    for i, entry in enumerate(written.workspaces):
        if entry is None:
            continue
        given = {k: v for k, v in entry.items() if v is not None and k not in serving.OWN_KEYS}
        given["allow_from"] = defaults.allowed_callers(written.endpoints, given)
        args = KaitoModelArgs(
            **defaults.model_defaults(stack_wide, given) | given,
            hf_token=hf_token,
            node_groups=list(node_groups) if node_groups is not None else None,
        )
        args = serving.model_serving(entry, args, written, metrics)
        home = defaults.cpu_model_node_selector(args, written)
        if home is not None:
            args = dataclasses.replace(args, node_selector=home)
        filled = {k: p for k, p in paths.items() if k not in given}
        models.append(ModelConfig(args, Placed(("workspaces", i), filled)))
    return models


def _rag_engines(
    written: Written, models: list[KaitoModelArgs], version: str
) -> tuple[list[RagEngineConfig], list[Problem]]:
    """Each usable ragEngines entry as RagEngine args; an engine over a workspace answers with that
    model's endpoint, within its context window."""
    by_key = {(m.namespace, m.name): m for m in models}
    engines: list[RagEngineConfig] = []
    problems: list[Problem] = []
    for i, entry in enumerate(written.rag_engines):
        if entry is None:
            continue
        placed = Placed(("ragEngines", i), {"kaito_version": ("kaito", "version")})
        given = {k: v for k, v in entry.items() if v is not None and k not in ("workspace", "context_window_size")}
        given["allow_from"] = defaults.allowed_callers(written.endpoints, given)
        workspace: str | None = entry.get("workspace")
        service, found = _llm_of(entry, given, workspace, by_key, version)
        problems += [placed.where(p) for p in found]
        if service is not None:
            given["inference_service"] = service
        engines.append(RagEngineConfig(RagEngineArgs(kaito_version=version, **given), workspace, placed))
    return engines, problems


def _llm_of(
    entry: Mapping[str, Any],
    given: Mapping[str, Any],
    workspace: str | None,
    models: Mapping[tuple[str, str | None], KaitoModelArgs],
    version: str,
) -> tuple[InferenceServiceArgs | None, list[Problem]]:
    """The LLM an engine over a workspace answers with (the model's endpoint and context window),
    or what keeps it from one."""
    window_given: int | None = entry.get("context_window_size")
    if workspace is None:
        if window_given is None:
            return None, []
        why = "only with workspace; give inferenceService.contextWindowSize for another LLM"
        return None, [Problem.at("context_window_size", why, "rag-llm")]
    namespace = given.get("namespace", "default")
    model = models.get((namespace, workspace))
    if "inference_service" in given:
        why = "give workspace (a model of this stack) or inferenceService, not both"
        return None, [Problem.at("workspace", why, "rag-llm")]
    if model is None:
        elsewhere = "".join(
            f"; {workspace} is in namespace {ns}: set namespace: {ns} (an engine calls a model of its own namespace)"
            for ns, n in models
            if n == workspace
        )[:300]
        why = f"no workspaces[] entry named {workspace!r} in namespace {namespace}{elsewhere}"
        return None, [Problem.at("workspace", why, "rag-workspace")]
    if model.tuning is not None:
        return None, [Problem.at("workspace", f"{workspace} is a tuning job; it serves nothing", "rag-workspace")]
    window, problems = _context_window(model, workspace, window_given, version)
    return (InferenceServiceArgs(url=endpoint_of(model), context_window_size=window) if window else None), problems


def _context_window(
    model: KaitoModelArgs, workspace: str, given: int | None, version: str
) -> tuple[int | None, list[Problem]]:
    """An engine's context window over a workspace: given, else the model's max-model-len; never
    beyond what the model takes (without max-model-len, its window in KAITO's catalog)."""
    limit = max_model_len(model)
    window = given or limit
    chart = catalog.kaito_charts().get(version)
    preset = catalog.find_preset(model.model, chart.preset_catalog) if chart and model.model else None
    bound = limit or (preset.token_limit if preset is not None else None)
    problems: list[Problem] = []
    if window is not None and bound is not None and window > bound:
        said = (
            f"config.vllm.max-model-len of {limit}"
            if limit
            else f"context window ({model.model}: {bound} tokens in KAITO {version}'s catalog)"
        )
        why = f"{window} exceeds {workspace}'s {said}: the engine would build prompts the model rejects; use at most "
        problems.append(
            Problem.at("context_window_size", f"{why}{bound}" + (" (or leave it out)" if limit else ""), "rag-window")
        )
    if window is None:
        why = (
            f"required: {workspace} is a custom image; give its context window here"
            if model.image
            else f"required: {workspace} sets no config.vllm.max-model-len, so KAITO sizes its context window from the "
            "GPU at start-up; give the window here (or set max-model-len on the workspace)"
        )
        problems.append(Problem.at("context_window_size", why, "required"))
    return window, problems


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


# ---------------------------------------------------------------- every rule, at config paths


def judge(
    cfg: StackConfig, written: Written, base_dir: Path | None, tied: list[Problem]
) -> tuple[list[Problem], StackConfig]:
    """The components' own rules, each problem where its arg was written, then what only a whole
    stack can get wrong (stacks/rules.py: `tied`, those of tying RAG engines to workspaces, with
    them) and the pools' budget (stacks/budget.py): the errors, and the config with every warning
    (`warnings`, at config paths; each workspace's and engine's own, for its component to log)."""
    found = tied + _cluster_problems(cfg, written, base_dir)
    found += [p for pool in cfg.pools for p in map(pool.placed.where, gpu_node_pool_problems(pool.args))]
    found += [p for pool in cfg.cpu_pools for p in map(pool.placed.where, cpu_node_pool_problems(pool.args))]
    found += _operator_problems(cfg)
    workspaces, model_found, model_warned = _model_problems(cfg, written)
    found += model_found
    engines, engine_found, engine_warned = _engine_problems(cfg, tied)
    found += engine_found
    found += rules.check(cfg)
    found += serving.check(cfg, written) + list(serving.own_key_problems(cfg, written))
    sound = [w for w in workspaces if w.sizable]
    found += budget.check(cfg, [w.config for w in sound])
    found = [p for p in found if p.code != "pool-nodes"]  # a pool's counts are its own rules' (count, autoscale)
    if cfg.add_on:  # the add-on's refusal of a key says it all (not also what its release's rules imply)
        refused = [p.path for p in found if p.code == "add-on"]
        found = [p for p in found if p.code == "add-on" or not any(p.path[: len(r)] == r for r in refused)]
    warnings = [*cfg.warnings, *model_warned, *engine_warned, *policy.warnings_of(found)]
    cfg = dataclasses.replace(
        cfg,
        workspaces=tuple(w.config for w in workspaces),
        rag_engines=engines,
        warnings=tuple(_once(warnings)),
    )
    return policy.errors_of(found), cfg


def _add_on_release(cfg: StackConfig, problem: Problem) -> bool:
    return cfg.add_on and problem.path[:2] == ("kaito", "version")


def _cluster_problems(cfg: StackConfig, written: Written, base_dir: Path | None) -> list[Problem]:
    if cfg.kubeconfig_cluster is not None:
        found = kubeconfig_cluster_problems(cfg.kubeconfig_cluster, base=base_dir)
        return [rules.stack_wording(p.under("cluster", "kubeconfig")) for p in found]
    if cfg.aks_cluster is not None:
        return [p.under("cluster", written.cluster_kind or "aks") for p in aks_cluster_problems(cfg.aks_cluster)]
    return []


def at_pools(problem: Problem, pools: Sequence[PoolConfig]) -> Problem | None:
    """A component's problem at `node_groups[i]...`, at the stack's gpuNodePools entry it describes."""
    path = problem.path
    if len(path) >= 2 and path[0] == "node_groups" and isinstance(path[1], int) and path[1] < len(pools):
        rest = path[2:]
        if rest and rest[0] in ("min_nodes", "max_nodes"):
            rest = ()  # (count or autoscale)
        return dataclasses.replace(problem, path=(*pools[path[1]].placed.at, *rest))
    if path == ("node_groups",):
        return dataclasses.replace(problem, path=("gpuNodePools",))
    return None


# What the stack's own rules (driver, discovery) or its models' (spot) say of the pools in its terms
STACK_SAYS = frozenset({"discovery-driver", "discovery", "gpu-driver", "spot-pool"})


def _operator_problems(cfg: StackConfig) -> list[Problem]:
    found: list[Problem] = []
    # who installs the pools' driver, and who discovers their GPUs: the stack's own rules say it in its terms
    operator = [p for p in kaito_operator_problems(cfg.kaito) if p.code not in STACK_SAYS]
    if cfg.add_on:  # refused at kaito.install, which says why: not the add-on's release again
        operator = [p for p in operator if p.path != ("version",)]
    if not cfg.kaito_install:  # only the release matters (the one rule, for Workspaces): installed elsewhere
        unsupported = catalog.unsupported_kaito_version(cfg.kaito.version)
        operator = [Problem.at("version", unsupported, "version")] if unsupported else []
    found += [at_pools(p, cfg.pools) or p.under("kaito") for p in operator]
    if cfg.gpu_operator is not None:
        found += [at_pools(p, cfg.pools) or p.under("gpuOperator") for p in gpu_operator_problems(cfg.gpu_operator)]
    if cfg.gpu_provisioner is not None:
        found += [p.under("gpuProvisioner") for p in gpu_provisioner_problems(cfg.gpu_provisioner)]
    if cfg.karpenter is not None:
        found += [p.under("karpenter") for p in karpenter_problems(cfg.karpenter)]
    if cfg.rag_operator is not None:
        rag = ragengine_operator_problems(cfg.rag_operator)
        found += [p.under("ragEngineOperator") for p in rag if p.path != ("version",)]
    return found


@dataclasses.dataclass(frozen=True)
class _Judged:
    config: ModelConfig
    sizable: bool  # its problems (if any) leave KAITO's sizing of it unchanged: it counts in the pools' budget


def _model_problems(cfg: StackConfig, written: Written) -> tuple[list[_Judged], list[Problem], list[Problem]]:
    """Each model's own rules (and, on a cluster it adopts, no CPU model on the pools the stack
    adds), at config paths in the stack's words: the models with their warnings, the errors, and
    the warnings at config paths."""
    groups = cfg.kaito.node_groups
    found: list[Problem] = []
    warned: list[Problem] = []
    judged_models: list[_Judged] = []
    for w in cfg.workspaces:
        _, own, warnings = judge_model(w.args)
        own = [p for p in own if p.code != "gpu-driver"]  # (the stack's `driver` rule says it, per pool)
        if written.cluster_kind == "existing" and w.args.node_groups is None:
            errors, more = policy.verdict(list(cpu_on_gpu_pools(w.args, groups)), w.args.bypass_checks)
            own, warnings = own + errors, warnings + more
        if cfg.pools_known:  # every node of the cluster is in a pool the stack knows
            errors, more = policy.verdict(list(cpu_on_no_pool(w.args, cfg.cpu_nodes, groups)), w.args.bypass_checks)
            own, warnings = own + errors, warnings + more
        if cfg.create_namespaces:
            own, warnings = rules.created_namespace(own, warnings, w.args.namespace)
        sizable = all(p.code in SIZING_UNAFFECTED for p in own)
        judged_models.append(_Judged(dataclasses.replace(w, warnings=tuple(warnings)), sizable))
        found += [rules.stack_wording(at_pools(p, cfg.pools) or w.placed.where(p), w.args) for p in own]
        warned += [rules.stack_wording(_at_workspace(p, w, cfg), w.args) for p in warnings]
    return judged_models, found, warned


def _at_workspace(problem: Problem, w: ModelConfig, cfg: StackConfig) -> Problem:
    """A model's warning at its config path: the pools' entries, or the workspace's (one that the
    pools are not known is about the workspace as a whole)."""
    if problem.code == "unsized":
        return w.placed.where(dataclasses.replace(problem, path=()))
    return at_pools(problem, cfg.pools) or w.placed.where(problem)


def _engine_problems(
    cfg: StackConfig, tied: list[Problem]
) -> tuple[tuple[RagEngineConfig, ...], list[Problem], list[Problem]]:
    """Each RAG engine's own rules at config paths (with the add-on, ragEngines are refused as a
    whole); an engine whose workspace could not be tied is not also told it lacks an LLM."""
    untied = {p.path[:2] for p in tied if p.code in ("rag-workspace", "rag-llm")}
    found: list[Problem] = []
    warned: list[Problem] = []
    engines: list[RagEngineConfig] = []
    for engine in cfg.rag_engines:
        _, own, warnings = judge_rag_engine(engine.args)
        if cfg.create_namespaces:
            own, warnings = rules.created_namespace(own, warnings, engine.args.namespace)
        if engine.placed.at[:2] in untied:
            own = [p for p in own if p.code != "inference-service"]
        found += [p for p in map(engine.placed.where, own) if not _add_on_release(cfg, p)]
        warned += [engine.placed.where(p) for p in warnings]
        engines.append(dataclasses.replace(engine, warnings=tuple(warnings)))
    return tuple(engines), found, warned


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
    problems += plaintext_nested_secrets(raw)
    try:
        cfg = stack_config(
            {k: v for k, v in raw.items() if k not in SECRET_KEYS},
            secrets=present,
            plaintext_secrets=plaintext,
            encrypted=[k for k in encrypted if k not in SECRET_KEYS],
            azure_location=f.config.get("azure-native:location"),
            base_dir=f.path.parent if f.path is not None else None,
            stack=f.name,
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
    problems += plaintext_nested_secrets(raw, encrypted)  # the engine's values: marked secret, or plain
    if source is not None:  # one key Pulumi marks secret may hold another in plain text beside it
        problems += plaintext_nested_secrets(
            {k.removeprefix(prefix): v for k, v in source.config.items() if k.startswith(prefix)}
        )
    cfg: StackConfig | None = None
    try:
        cfg = stack_config(
            {k: v for k, v in raw.items() if k not in SECRET_KEYS},
            secrets=present,
            plaintext_secrets=plaintext,
            encrypted=encrypted,
            secret_values=secrets,
            azure_location=engine.get("azure-native:location"),
            stack=pulumi.get_stack(),
        )
    except StackConfigError as err:
        problems += err.problems
    problems += empty
    if problems or cfg is None:
        raise StackConfigError(beside_traps(problems), source)
    return cfg, secrets
