"""The Pulumi program: one validated stack config in, components out, in dependency order.

cluster access -> KAITO operator -> model workspaces. No component reads config; each gets
typed arguments from the plan and the outputs/providers of the ones before it.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.kaito_operator import KaitoOperator
from components.kaito_workspace import KaitoWorkspace, KaitoWorkspaceArgs
from components.kubeconfig_cluster import KubeconfigCluster, KubeconfigClusterArgs
from stacks.config import StackConfig
from stacks.load import StackSecrets
from stacks.plan import StackPlan, build_plan


def build_stack(cfg: StackConfig, secrets: StackSecrets) -> StackPlan:
    plan = build_plan(cfg)
    access = cfg.cluster.kubeconfig
    assert access is not None  # AKS clusters come with the next components
    cluster = KubeconfigCluster(
        "cluster",
        KubeconfigClusterArgs(path=access.path, context=access.context, contents=secrets.kubeconfig),
    )
    on_cluster = pulumi.ResourceOptions(providers=[cluster.provider])

    kaito = KaitoOperator("kaito", plan.kaito.operator, opts=on_cluster) if plan.kaito.install else None
    namespaces = {
        ns: k8s.core.v1.Namespace(
            f"namespace/{ns}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns),
            opts=pulumi.ResourceOptions(provider=cluster.provider),
        )
        for ns in plan.namespaces
    }
    models = {}
    for m in plan.models:
        # The KAITO webhook fails closed: no Workspace before the operator serves.
        ready = [r for r in (kaito, namespaces.get(m.namespace)) if r is not None]
        models[m.key] = KaitoWorkspace(
            m.key, KaitoWorkspaceArgs(plan=m, hf_token=secrets.hf_token, wait_for=ready), opts=on_cluster
        )

    pulumi.export(
        "kaito",
        {
            "version": plan.kaito.chart.version,
            "installed": plan.kaito.install,
            "nodeProvisioning": cfg.kaito.node_provisioning,
        },
    )
    pulumi.export(
        "workspaces",
        {key: {"model": ws.model, "endpoint": ws.endpoint, "replicas": ws.replicas} for key, ws in models.items()},
    )
    return plan
