"""Which KAITO release a model or RAG engine is checked against, and which the operators it
depends on install: one cluster runs one KAITO, so the two must be the same (each release has
its own admission rules, presets and arithmetic)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import pulumi

from kaito_aks.cluster.access import ClusterAccess, access_for, provider_problems
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.problems import Problem, raise_if
from kaito_aks.rag.spec import RagEngineArgs
from kaito_aks.validation import Judged

RELEASE_ATTRIBUTE = "installs_kaito"
"""The attribute a KaitoOperator or RagEngineOperator carries: (its resource name, the KAITO
release it installs)."""


def _given(opts: pulumi.ResourceOptions | None) -> Iterator[Any]:
    """The resources `opts` names: its parent and what it depends on (those known now)."""
    if opts is None:
        return
    if opts.parent is not None:
        yield opts.parent
    depends_on: Any = opts.depends_on
    if depends_on is None:
        return
    yield from cast(list[Any], depends_on) if isinstance(depends_on, list | tuple) else [depends_on]


def operator_problems(
    kaito_version: str, opts: pulumi.ResourceOptions | None, at: str = "kaito_version"
) -> list[Problem]:
    """A model (or engine) checked against `kaito_version` that depends on (or is parented to) an
    operator of another release."""
    problems: list[Problem] = []
    for resource in _given(opts):
        release = getattr(resource, RELEASE_ATTRIBUTE, None)
        if not isinstance(release, tuple):
            continue
        name, version = cast(tuple[str, str], release)
        if version != kaito_version:
            problems.append(
                Problem.at(
                    at,
                    f"{type(resource).__name__} {name!r} (in its options) installs KAITO {version}, but this is checked by "
                    f"KAITO {kaito_version}'s rules: one cluster runs one KAITO, so give {version}",
                    "operator-version",
                )
            )
    return problems


W = TypeVar("W", KaitoModelArgs, RagEngineArgs)


def checked_workload(
    kind: str,
    name: str,
    args: W | Judged[W],
    opts: pulumi.ResourceOptions | None,
    judge: Callable[[W, str], tuple[W | None, list[Problem], list[Problem]]],
    waits: Callable[[W], bool],
    no_credentials: str,
) -> tuple[W, list[Problem], ClusterAccess | None]:
    """A model's or RAG engine's args judged (unless they were), their warnings and the
    credentials its waits (`waits`: whether it has any) read the cluster with; raises
    InvalidArgsError with every problem, its options' among them."""
    if isinstance(args, Judged):
        checked, problems, warnings = args.args, [], list(args.warnings)
    else:
        checked, problems, warnings = judge(args, name)
    problems += provider_problems(opts)  # before the waits' credentials: the provider gives both
    if checked is not None:
        problems += operator_problems(checked.kaito_version, opts)
    access = None
    if checked is not None and not problems:
        access = access_for(checked.kubeconfig, checked.context, opts)
        if access is None and waits(checked):
            problems.append(Problem.at("kubeconfig", no_credentials, "no-credentials"))
    raise_if(kind, name, problems)
    assert checked is not None
    return checked, warnings, access
