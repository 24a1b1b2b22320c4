"""Which models get the stack's Hugging Face token (`kaito-aks:hfToken`), and what a stack is told
about it.

A model given the token gets a Secret `<name>-hf-token` as its preset's modelAccessSecret (the
library does that for a model whose weights are downloaded at start-up). KAITO's Workspace keeps
the preset in `inference.preset`, which is replaced, not patched: giving a running model a token
replaces it. So from generation 3 of the defaults (`kaito-aks:defaults: 3`) the token goes only
to the models that need one (kaito_aks.needs_hf_token) and to those whose entry asks for it
(`useHfToken: true`), and adding or rotating it touches no other model. Stacks of generations 1
and 2 keep what they run: the token goes to every model, as it always has; `useHfToken: false`
keeps a model of theirs out. (stacks/decide.py decides it: gets_hf_token.)
"""

from __future__ import annotations

from collections.abc import Iterator

from kaito_aks.model.plan import plan_model
from kaito_aks.model.rules import needs_hf_token
from kaito_aks.problems import Problem
from stacks.config import StackConfig
from stacks.decide import NEWEST_GENERATION, TOKEN_GENERATION, Written


def problems(cfg: StackConfig, written: Written) -> Iterator[Problem]:
    """A workspace that asks for a token the stack does not have."""
    if cfg.has_hf_token:
        return
    for w in cfg.workspaces:
        if w.placed.written.get("use_hf_token") is True:
            yield Problem(
                (*w.placed.at, "use_hf_token"),
                "the stack has no hfToken: run `pulumi config set --secret hfToken <token>`, or remove useHfToken",
                "hf-token-missing",
            )


def note(cfg: StackConfig) -> str | None:
    """What a stack of an older generation with a token is told: the models that carry it without
    needing it (None: none)."""
    if not cfg.has_hf_token or cfg.generation >= TOKEN_GENERATION:
        return None
    extra = [
        m.name or ""
        for m in cfg.models
        if plan_model(m).hf_token_secret is not None and not needs_hf_token(m.model or "", m.kaito_version)
    ]
    if not extra:
        return None
    return (
        f"defaults generation {cfg.generation}: hfToken goes to every model whose weights are downloaded at start-up, "
        f"also to {', '.join(extra)}, which need none; setting it first on a running stack replaces those models. "
        f"`useHfToken: false` on them keeps them out; a new stack writes `kaito-aks:defaults: {NEWEST_GENERATION}`, "
        "which gives it only to the models that need it (docs/upgrading.md)"
    )
