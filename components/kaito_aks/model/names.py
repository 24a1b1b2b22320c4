"""The names a model's Kubernetes objects take (KAITO derives some of its own from them)."""

from __future__ import annotations

from collections.abc import Sequence

from kaito_aks import catalog
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.problems import Problem

# A StatefulSet's pods carry controller-revision-hash=<name>-<hash>: a label value, so the
# name KAITO gives the StatefulSet (the Workspace's) must leave room for the hash.
MAX_WORKSPACE_NAME = 52
INFERENCE_SET_SUFFIX = "-xxxxx"  # generateName: <set>- plus 5 random characters
# Namespaces the cluster or the operator releases own.
RESERVED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "kaito-workspace", "gpu-operator")


def workspace_names(args: KaitoModelArgs, chart: catalog.KaitoChart) -> list[str]:
    """Names of the Workspaces that serve (or tune) the model (for an InferenceSet: the longest
    name it can generate). Replicas are <name>-0, <name>-1, ...; the plain <name> belongs to the
    Service that balances over all of them, so the endpoint never moves when replicas change."""
    name = args.name or ""
    if args.tuning is not None:
        return [name]
    if chart.replicas == "inferenceSet":
        return [name + INFERENCE_SET_SUFFIX]
    return [f"{name}-{i}" for i in range(args.replicas)]


def claimed_names(args: KaitoModelArgs, chart: catalog.KaitoChart) -> set[str]:
    """Every object name in the namespace this model takes: its Service (or InferenceSet), its
    replica Workspaces, and the Services KAITO makes per replica (<ws> and <ws>-headless)."""
    name = args.name or ""
    claimed = {name}
    if args.tuning is None and chart.replicas == "workspacePerReplica":
        names = workspace_names(args, chart)
        claimed |= set(names) | {f"{w}-headless" for w in names}
    return claimed


def name_collisions(models: Sequence[tuple[str, KaitoModelArgs]]) -> list[tuple[int, Problem]]:
    """Two models must not create objects of the same name in a namespace. `models`: (what a
    problem calls the model, its args); out: each model that takes a name an earlier one took,
    by its index, with the problem at its `name`."""
    seen: dict[tuple[str, str], int] = {}
    found: list[tuple[int, Problem]] = []
    for i, (_, args) in enumerate(models):
        chart = catalog.kaito_charts().get(args.kaito_version)
        if chart is None or args.name is None:
            continue  # its own problem
        names = claimed_names(args, chart)
        for name in sorted(names):
            owner = seen.get((args.namespace, name))
            if owner is not None and owner != i:
                found.append(
                    (
                        i,
                        Problem(
                            ("name",),
                            f"{args.namespace}/{name} is also created for {models[owner][0]}; choose names that do not "
                            "collide (replicas are named <name>-0, <name>-1, ...)",
                            "name-collision",
                        ),
                    )
                )
                break
        for name in names:
            seen.setdefault((args.namespace, name), i)
    return found


def hf_token_secret_name(name: str) -> str:
    return f"{name}-hf-token"


def endpoint_of(args: KaitoModelArgs) -> str:
    """The in-cluster OpenAI-compatible chat completions URL of the model's Service."""
    return endpoint_at(args.name or "", args.namespace)


def endpoint_at(name: str, namespace: str) -> str:
    """The chat completions URL of the Service a model named `name` has in `namespace`."""
    return f"http://{name}.{namespace}.svc.cluster.local/v1/chat/completions"
