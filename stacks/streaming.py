"""KAITO's ModelMirror and ModelStreaming for a stack (kaito.modelStreaming): the stack decides
whether it is on (stacks/decide.py: written, else on only for new stacks, `defaults: 3`, with
KAITO 0.12 installed on a cluster the stack creates) and the builder wires it (stacks/build.py:
the cluster's Blob CSI driver, KAITO's gates and defaults, each vLLM preset's annotations, and
the StorageClass, ServiceAccounts, federated credentials and blob role of
kaito_aks.model_streaming). Here: where KAITO refuses what the stack asks, what the stack cannot
manage for it, and what validate says of the generation's choice."""

from __future__ import annotations

from collections.abc import Iterator

from kaito_aks.model.spec import vllm_preset
from kaito_aks.model_streaming import GATES, streaming_problem
from kaito_aks.problems import Problem
from stacks.config import StackConfig
from stacks.decide import Written, streaming_gates_off

AT = ("kaito", "model_streaming")


def problems(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    """Streaming asked where KAITO has none (refused), and what the stack cannot manage where it
    is wired (warned: an existing cluster's Blob CSI driver, the gates of KAITO installed elsewhere)."""
    decided = cfg.decided
    if not decided.model_streaming:
        return
    if not decided.streaming:
        yield from _refused(cfg, written)
        return
    if cfg.aks_cluster is not None and cfg.aks_cluster.existing:
        yield Problem(
            AT,
            "the cluster must run the Azure Blob CSI driver (az aks update --enable-blob-driver): this stack "
            "does not manage an existing cluster's settings",
            "streaming-elsewhere",
        )
    if not cfg.kaito_install:
        yield Problem(
            AT,
            f"KAITO is installed elsewhere (kaito.install: false): it must run with its {' and '.join(GATES)} "
            "feature gates on, or it downloads the weights as before and the objects made for streaming go unused",
            "streaming-elsewhere",
        )


def _refused(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    """Why streaming asked is not wired: KAITO's release, the add-on, a cluster off Azure, or (only
    against kaito.modelStreaming: true) a gate written off, which wins over the generation's default."""
    why = streaming_problem(cfg.kaito.version)
    if why is not None:
        yield Problem(AT, why, "model-streaming")
    elif cfg.add_on:
        yield Problem(AT, "the AKS add-on offers no feature gates: KAITO it runs cannot stream", "model-streaming")
    elif cfg.aks_cluster is None:
        yield Problem(
            AT,
            "KAITO streams from Azure Blob storage on AKS only (its webhook refuses a streaming Workspace elsewhere: "
            "api/v1beta1/workspace_validation.go@v0.12.0), and the federated credential and blob role need the "
            "cluster's kubelet identity: use cluster.aks or cluster.existing",
            "model-streaming",
        )
    elif written.kaito.get("model_streaming"):
        off = streaming_gates_off(written, cfg.kaito_install)
        said = f"kaito.featureGates turns {' and '.join(off)} off, which model streaming needs: remove one of the two"
        yield Problem(AT, said, "model-streaming")


def streaming_note(cfg: StackConfig) -> str | None:
    """What the stack's generation of defaults decides about its weights, where it decides it
    (`validate` says it; None: kaito.modelStreaming is written, or nothing would stream)."""
    if not cfg.decided.generation_streams or not any(vllm_preset(w.args) and not w.args.image for w in cfg.workspaces):
        return None
    if cfg.generation >= 3:
        return f"defaults generation {cfg.generation}: KAITO mirrors and streams the vLLM presets' weights (kaito.modelStreaming)"
    return (
        f"defaults generation {cfg.generation}: the models download their weights when they start, as they always "
        "have for this stack; generation 3 (a new stack) mirrors and streams them (kaito.modelStreaming, "
        "docs/upgrading.md)"
    )
