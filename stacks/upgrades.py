"""What AKS's automatic upgrades do to a stack's models (`validate` and `render` print it): when
the cluster's maintenance window is, and for each model whether it keeps serving while its node
is drained and reimaged (kaito_aks.model.disruption)."""

from __future__ import annotations

from kaito_aks.model.disruption import upgrade_note
from kaito_aks.problems import format_path
from stacks.config import StackConfig


def lines(cfg: StackConfig) -> list[str]:
    aks = cfg.aks_cluster
    if aks is not None and not aks.existing:
        up, w = aks.upgrade, aks.upgrade.window
        when = (
            "none automatic (upgrade.channel none, upgrade.nodeOsChannel None): yours drain a node at a time"
            if up.channel == "none" and up.node_os_channel == "None"
            else f"node images ({up.node_os_channel}) and Kubernetes ({up.channel}) upgrades on {w.day}s from {w.start} "
            f"{w.utc_offset} for {w.duration_hours} h (cluster.aks.upgrade.window), a node drained at a time"
        )
    else:
        when = "the cluster's own upgrades, which this stack does not schedule, drain a node at a time"
    out = [f"upgrades: {when}"]
    out += [
        f"upgrades: {format_path(w.placed.at, 'schema')} ({w.args.namespace}/{w.args.name}) {upgrade_note(w.args)}"
        for w in cfg.workspaces
    ]
    return out
