"""Components built directly with their own args, as a user's program or test would (issue #10):
Pulumi details that callers rely on."""

from __future__ import annotations

import gc

import pulumi

from kaito_aks.aks_cluster import AksCluster, AksClusterArgs
from kaito_aks.gpu_node_pool import GpuNodePool, GpuNodePoolArgs, GpuPoolSettings
from stacks.evaluate import evaluate
from tests.conftest import config

CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"


def test_a_protected_component_protects_its_children():
    def program() -> None:
        protected = pulumi.ResourceOptions(protect=True)
        cluster = AksCluster(
            "cluster", AksClusterArgs(resource_group="rg", name="aks", location="eastus2"), opts=protected
        )
        GpuNodePool("gpu", GpuNodePoolArgs(cluster, GpuPoolSettings(vm_size="Standard_NC24ads_A100_v4")), opts=protected)

    ev = evaluate({}, program=program)
    assert ev.named("cluster", CLUSTER).options["protect"] is True  # args.protect=False must not win
    assert ev.named("gpu", POOL).options["protect"] is True


def test_the_cluster_leaves_separately_managed_pools_alone():
    ev = evaluate({}, program=lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks")))
    assert ev.named("c", CLUSTER).options["ignoreChanges"] == ["agentPoolProfiles"]


def test_building_the_stack_leaves_the_garbage_collector_alone():
    """An Automation API host calls build_stack in its own long-lived process."""
    from stacks.load import load_stack
    from stacks.program import build_stack

    thresholds = gc.get_threshold()
    seen = []

    def program() -> None:
        build_stack(*load_stack())
        seen.append((gc.get_threshold(), gc.get_freeze_count()))

    evaluate(config([{"name": "phi", "model": "phi-4-mini-instruct"}]), program=program)
    assert seen == [(thresholds, 0)]
