"""KAITO's ModelMirror and ModelStreaming for a stack (kaito.modelStreaming): whether it is on
(written, else the defaults generation: on only for new stacks, `defaults: 3`, with KAITO 0.12
installed on a cluster the stack creates), where KAITO refuses it, and what it changes: the
cluster's Blob CSI driver, KAITO's gates and defaults, each vLLM preset's annotations, and the
StorageClass, ServiceAccounts, federated credentials and blob role (kaito_aks.model_streaming)."""

from __future__ import annotations

import dataclasses

from kaito_aks.model.spec import WeightsStreamingArgs
from kaito_aks.model_streaming import GATES, ModelStreamingArgs, chart_values, streaming_problem
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Problem
from stacks.config import FROM_CLUSTER, StackConfig
from stacks.defaults import Written, kaito_installed, served_by_vllm

AT = ("kaito", "model_streaming")


def generation_may_stream(version: str, created_aks: bool, installed: bool, add_on: bool) -> bool:
    """Whether the generation of the defaults decides streaming for a stack: one that installs
    KAITO 0.12 on a cluster it creates (not the add-on)."""
    return ".".join(version.split(".")[:2]) == "0.12" and created_aks and installed and not add_on


def streaming_on(written: Written, version: str, add_on: bool) -> bool:
    """kaito.modelStreaming, else on for such a stack of generation 3 (generation_may_stream):
    every other stack keeps downloading as it did."""
    given = written.kaito.get("model_streaming")
    if given is not None:
        return bool(given)
    installed = kaito_installed(written.kaito, add_on)
    return written.generation >= 3 and generation_may_stream(version, written.cluster_kind == "aks", installed, add_on)


def _streamed(cfg: StackConfig) -> list[int]:
    """The workspaces KAITO streams the weights of: vLLM presets."""
    return [i for i, w in enumerate(cfg.workspaces) if served_by_vllm(w.args) and not w.args.image]


def streaming_note(cfg: StackConfig) -> str | None:
    """What the stack's generation of defaults decides about its weights, where it decides it
    (`validate` says it; None: kaito.modelStreaming is written, or nothing would stream)."""
    created = cfg.aks_cluster is not None and not cfg.aks_cluster.existing
    if (
        "kaito.modelStreaming" in cfg.given
        or not generation_may_stream(cfg.kaito.version, created, cfg.kaito_install, cfg.add_on)
        or not _streamed(cfg)
    ):
        return None
    if cfg.generation >= 3:
        return f"defaults generation {cfg.generation}: KAITO mirrors and streams the vLLM presets' weights (kaito.modelStreaming)"
    return (
        f"defaults generation {cfg.generation}: the models download their weights when they start, as they always "
        "have for this stack; generation 3 (a new stack) mirrors and streams them (kaito.modelStreaming, "
        "docs/upgrading.md)"
    )


def _gates_written_off(cfg: StackConfig) -> list[str]:
    """The streaming gates the stack file turns off (kaito.featureGates, kaito.values.featureGates)."""
    extra = cfg.kaito.values.get("featureGates")
    written = {**cfg.kaito.feature_gates, **(extra if is_dict(extra) else {})}
    return [g for g in GATES if written.get(g) is False] if cfg.kaito_install else []


def with_streaming(cfg: StackConfig, written: Written) -> tuple[StackConfig, list[Problem]]:
    """The stack with model streaming wired in where it is on, and the problems of asking for it
    where KAITO has none."""
    if not streaming_on(written, cfg.kaito.version, cfg.add_on):
        return cfg, []
    why = streaming_problem(cfg.kaito.version)
    if why is not None:
        return cfg, [Problem(AT, why, "model-streaming")]
    if cfg.add_on:
        return cfg, [
            Problem(AT, "the AKS add-on offers no feature gates: KAITO it runs cannot stream", "model-streaming")
        ]
    if cfg.aks_cluster is None:
        return cfg, [
            Problem(
                AT,
                "KAITO streams from Azure Blob storage on AKS only (its webhook refuses a streaming Workspace elsewhere: "
                "api/v1beta1/workspace_validation.go@v0.12.0), and the federated credential and blob role need the "
                "cluster's kubelet identity: use cluster.aks or cluster.existing",
                "model-streaming",
            )
        ]
    off = _gates_written_off(cfg)
    if off:  # a gate written off wins over the generation's default; against kaito.modelStreaming: true, refused
        said = f"kaito.featureGates turns {' and '.join(off)} off, which model streaming needs: remove one of the two"
        return cfg, [Problem(AT, said, "model-streaming")] if written.kaito.get("model_streaming") else []
    streamed = _streamed(cfg)
    workspaces = tuple(
        dataclasses.replace(w, args=dataclasses.replace(w.args, weights_streaming=WeightsStreamingArgs()))
        if i in streamed
        else w
        for i, w in enumerate(cfg.workspaces)
    )
    aks = cfg.aks_cluster
    warnings: list[Problem] = []
    if aks.existing:
        warnings.append(
            Problem(
                AT,
                "the cluster must run the Azure Blob CSI driver (az aks update --enable-blob-driver): this stack "
                "does not manage an existing cluster's settings",
                "streaming-elsewhere",
            )
        )
    else:
        aks = dataclasses.replace(aks, blob_csi_driver=True)
    kaito = cfg.kaito
    if cfg.kaito_install:
        values = chart_values()
        gates = {**dict.fromkeys(GATES, True), **kaito.feature_gates}
        extra = {k: v for k, v in values.items() if k != "featureGates" and k not in kaito.values}
        kaito = dataclasses.replace(kaito, feature_gates=gates, values={**kaito.values, **extra})
    else:
        warnings.append(
            Problem(
                AT,
                f"KAITO is installed elsewhere (kaito.install: false): it must run with its {' and '.join(GATES)} "
                "feature gates on, or it downloads the weights as before and the objects made for streaming go unused",
                "streaming-elsewhere",
            )
        )
    namespaces = sorted({workspaces[i].args.namespace for i in streamed})
    streaming = ModelStreamingArgs(
        namespaces=namespaces,
        kubelet_identity_resource_id=FROM_CLUSTER,
        kubelet_identity_client_id=FROM_CLUSTER,
        kubelet_identity_object_id=FROM_CLUSTER,
        oidc_issuer_url=FROM_CLUSTER,
        node_resource_group_id=FROM_CLUSTER,
        kaito_version=cfg.kaito.version,
    )
    cfg = dataclasses.replace(
        cfg,
        aks_cluster=aks,
        kaito=kaito,
        workspaces=workspaces,
        model_streaming=streaming if namespaces else None,
        warnings=(*cfg.warnings, *warnings),
    )
    return cfg, []
