"""Callers a model's NetworkPolicy would cut on a cluster the stack does not create (issue 37).

Every workspace and RAG engine gets a NetworkPolicy admitting its own namespace, the serving
pieces it uses, its load balancer's clients and `allowFrom`. On an AKS cluster the stack creates
that is the whole story from the start; on a cluster it adopts (cluster.kubeconfig,
cluster.existing) pods of other namespaces may call the models already (an ingress controller,
other apps, monitoring), and where the cluster's network plugin enforces policies the first
`up` that creates the policies cuts them. So until the stack file says who calls (the stack's
`endpoints.allowFrom`, or the entry's own `allowFrom`; `[]`: nobody else), `validate` and `pulumi
up` announce it with the `allowFrom` to keep them."""

from __future__ import annotations

from kaito_aks.problems import Problem, format_path
from stacks.config import Placed, StackConfig
from stacks.decide import Written


def check(cfg: StackConfig, written: Written) -> list[Problem]:
    if cfg.aks_cluster is not None and not cfg.aks_cluster.existing:
        return []  # (a cluster this stack creates: its policies came with it)
    if "allow_from" in written.endpoints:
        return []
    entries = [
        *_silent([(w.placed, f"{w.args.namespace}/{w.args.name}") for w in cfg.workspaces]),
        *_silent([(e.placed, f"{e.args.namespace}/{e.args.name}") for e in cfg.rag_engines]),
    ]
    if not entries:
        return []
    return [
        Problem(
            ("endpoints", "allow_from"),
            f"on a cluster this stack does not create, the NetworkPolicies of {', '.join(entries)} admit only their "
            "own namespace, the serving pieces they use and their load balancers' clients: where the cluster's "
            "network plugin enforces policies, callers from other namespaces (an ingress controller, other apps, "
            "monitoring) are cut when `pulumi up` creates them. Keep them with endpoints.allowFrom (e.g. "
            "[{namespace: ingress-nginx}], podLabels to admit only some of their pods) or an entry's own allowFrom; "
            "write endpoints.allowFrom: [] when nothing else calls them",
            "byo-callers",
        )
    ]


def _silent(entries: list[tuple[Placed, str]]) -> list[str]:
    """The entries whose section does not say who calls them, as "<path> (<namespace>/<name>)"."""
    return [f"{format_path(p.at, 'schema')} ({name})" for p, name in entries if "allow_from" not in p.written]
