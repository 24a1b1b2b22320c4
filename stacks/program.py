"""The Pulumi program: one validated stack config in, components out, in dependency order.

    cluster -> GPU node pools -> { GPU Operator || KAITO operator } -> model workspaces

No component reads config; each gets typed arguments from the plan (stacks/plan.py) and the
outputs and providers of the ones before it. Every Kubernetes resource uses the cluster's explicit provider.
"""

from __future__ import annotations

import dataclasses
import gc

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.azure.aks_cluster import AksCluster
from kaito_aks.azure.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigCluster
from kaito_aks.cluster.protocol import model_access_args
from kaito_aks.model.component import KaitoModel, KaitoModelArgs
from kaito_aks.operators.gpu_operator import GpuOperator
from kaito_aks.operators.kaito_operator import KaitoOperator
from stacks.config import StackConfig
from stacks.load import StackSecrets, load_stack
from stacks.plan import StackPlan, build_plan

# The Pulumi SDK keeps tens of objects (Outputs, futures, tasks) per resource alive until the
# program ends; at Python's default thresholds every collection rescans them all, which makes
# evaluation superlinear in the number of resources (1000 workspaces: 8.2 s -> 4.5 s measured).
# So collect less often, and once the graph is declared, stop scanning it at all (gc.freeze):
# it lives until the program exits anyway.
GC_THRESHOLDS = (50_000, 20, 100)


def main() -> None:
    """The program's entry point (__main__.py): a process that declares the graph once and exits,
    so it may tune the collector for itself (nothing else, e.g. an Automation API host, should)."""
    gc.set_threshold(*GC_THRESHOLDS)
    build_stack(*load_stack())
    gc.freeze()


def build_stack(cfg: StackConfig, secrets: StackSecrets) -> StackPlan:
    """Declare the stack's resources; no process-wide side effects (usable from any host)."""
    plan = build_plan(cfg)

    cluster: AksCluster | KubeconfigCluster
    if plan.aks_cluster is not None:
        cluster = AksCluster("cluster", plan.aks_cluster)
    else:
        assert plan.kubeconfig_cluster is not None
        cluster = KubeconfigCluster(
            "cluster", dataclasses.replace(plan.kubeconfig_cluster, contents=secrets.kubeconfig)
        )

    pools = []
    if isinstance(cluster, AksCluster):
        pools = [GpuNodePool(p.name, GpuNodePoolArgs(cluster, p.settings)) for p in plan.gpu_pools]
    # In-cluster work starts once the GPU nodes exist.
    on_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=pools)

    gpu_operator = (
        GpuOperator(
            "gpu-operator",
            dataclasses.replace(plan.gpu_operator, pools=pools or plan.gpu_operator.pools),
            opts=on_cluster,
        )
        if plan.gpu_operator
        else None
    )
    kaito = KaitoOperator("kaito", plan.kaito, opts=on_cluster) if plan.kaito_install else None
    namespaces = {
        ns: k8s.core.v1.Namespace(
            f"namespace/{ns}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=pools),
        )
        for ns in plan.namespaces
    }
    access = model_access_args(cluster)
    secret = {"hf_token": secrets.hf_token} if secrets.hf_token is not None else {}
    models = {}
    for args in plan.models:
        namespace = args.get("namespace", "default")
        key = f"{namespace}/{args['name']}"
        # KAITO's webhook fails closed, and in BYO mode it admits a preset only once matching
        # GPU nodes exist and GPU Feature Discovery has labelled them: wait for the pools,
        # both operators (when this stack installs them) and the namespace.
        ready = [*pools, *(r for r in (kaito, gpu_operator, namespaces.get(namespace)) if r is not None)]
        models[key] = KaitoModel(
            key,
            KaitoModelArgs(**args, **secret, **access),  # type: ignore[typeddict-item]
            opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=ready),
        )

    _export(cfg, plan, cluster, models)
    return plan


def _export(
    cfg: StackConfig, plan: StackPlan, cluster: AksCluster | KubeconfigCluster, models: dict[str, KaitoModel]
) -> None:
    if isinstance(cluster, AksCluster):
        pulumi.export("kubeconfig", cluster.kubeconfig)
        pulumi.export("oidcIssuerUrl", cluster.oidc_issuer_url)
    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export(
        "nodePools",
        [
            {
                "name": p.name,
                "vmSize": p.sku.name,
                "gpuModel": p.sku.gpu_model,
                "gpusPerNode": p.sku.gpu_count,
                "gpuMemoryGiBPerNode": p.sku.gpu_mem_gib,
                "nodes": p.settings.initial_nodes
                if p.settings.autoscale_max is None
                else f"{p.settings.autoscale_min}-{p.settings.autoscale_max}",
                "gpuDriver": p.settings.gpu_driver,
                "spot": p.settings.spot,
            }
            for p in plan.gpu_pools
        ],
    )
    pulumi.export(
        "charts",
        {
            "kaito": {
                "version": plan.kaito_chart.version,
                "installed": plan.kaito_install,
                "nodeProvisioning": cfg.kaito.node_provisioning,
            },
            "gpuOperator": {"version": plan.gpu_operator.version} if plan.gpu_operator else None,
        },
    )
    pulumi.export(
        "workspaces",
        {
            key: {
                "model": m.model,
                "source": m.source,
                "endpoint": m.endpoint,
                "replicas": m.replicas,
                "gpuNodes": m.gpu_nodes,
            }
            for key, m in models.items()
        },
    )
