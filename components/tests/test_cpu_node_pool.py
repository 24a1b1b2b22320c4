"""CpuNodePool: an AKS pool of a CPU size for CPU models and RAG engines (or a second system
pool), its create-only settings changed by replacement."""

from __future__ import annotations

from typing import Any

import pytest

from kaito_aks import AutoscaleArgs, CpuNodePool, CpuNodePoolArgs, InvalidArgsError
from kaito_aks.azure.cpu_node_pool import CREATE_ONLY_PROPERTIES
from kaito_aks.azure.node_pool import create_only_args
from kaito_aks.nodes import CpuNodes
from kaito_aks.testing import ProgramMocks, RecordingMonitor, run

POOL = "azure-native:containerservice:AgentPool"


def args(**kw: Any) -> CpuNodePoolArgs:
    return CpuNodePoolArgs(**{"cluster_name": "aks", "resource_group_name": "rg", "vm_size": "Standard_D8s_v5", **kw})


def test_a_user_pool_of_a_cpu_size_with_its_labels_taints_and_zones():
    seen: list[CpuNodes] = []

    def program() -> None:
        pool = CpuNodePool(
            "cpu",
            args(labels={"team": "rag"}, taints=["dedicated=rag:NoSchedule"], zones=["1", "2"], os_sku="AzureLinux"),
        )
        seen.append(pool.cpu_nodes)

    ev = run(program)
    agent_pool = ev.named("cpu", POOL)
    inputs = agent_pool.inputs
    assert inputs["agentPoolName"] == "cpu"
    assert inputs["resourceName"] == "aks"
    assert (inputs["mode"], inputs["vmSize"], inputs["osSKU"], inputs["count"]) == (
        "User",
        "Standard_D8s_v5",
        "AzureLinux",
        1,
    )
    assert inputs["nodeLabels"] == {"team": "rag"}
    assert inputs["nodeTaints"] == ["dedicated=rag:NoSchedule"]
    assert inputs["availabilityZones"] == ["1", "2"]
    assert "gpuProfile" not in inputs
    assert agent_pool.options["replaceOnChanges"] == sorted(
        ["vmSize", "availabilityZones", "osDiskSizeGB", "vnetSubnetID"]
    )
    assert agent_pool.options["deleteBeforeReplace"] is True
    assert agent_pool.options["ignoreChanges"] == []
    outputs = ev.component_outputs[ev.named("cpu", "kaito-aks:index:CpuNodePool").urn]
    assert outputs == {"name": "cpu", "vmSize": "Standard_D8s_v5"}
    [nodes] = seen
    assert nodes.node_labels["kubernetes.azure.com/agentpool"] == "cpu"
    assert nodes.node_labels["kubernetes.azure.com/mode"] == "user"
    assert nodes.node_labels["team"] == "rag"
    assert not nodes.untainted


def test_a_second_system_pool_and_an_autoscaled_one():
    ev = run(lambda: CpuNodePool("sys2", args(mode="System", autoscale=AutoscaleArgs(min=2, max=5))))
    pool = ev.named("sys2", POOL)
    assert pool.inputs["mode"] == "System"
    assert (pool.inputs["enableAutoScaling"], pool.inputs["minCount"], pool.inputs["maxCount"]) == (True, 2, 5)
    assert pool.options["ignoreChanges"] == ["count"]  # the autoscaler owns it


def refused(a: CpuNodePoolArgs, name: str = "cpu") -> str:
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(lambda: CpuNodePool(name, a), monitor=monitor)
    assert monitor.registrations == []
    return str(err.value)


def test_a_gpu_size_a_system_name_and_aks_labels_are_refused_before_anything_is_registered():
    text = refused(args(vm_size="Standard_NC24ads_A100_v4", labels={"agentpool": "x"}), name="system")
    assert "vm_size: Standard_NC24ads_A100_v4 is a GPU VM size" in text
    assert "make GPU pools with GpuNodePool (gpuNodePools)" in text
    assert "name: is the name of the cluster's own system pool" in text
    assert "AKS sets this label itself" in text
    assert "give count or autoscale, not both" in refused(args(count=2, autoscale=AutoscaleArgs(min=1, max=2)))
    assert "vm_size: '; rm -rf / #' is not an Azure VM size (e.g. Standard_D4s_v5" in refused(
        args(vm_size="; rm -rf / #")
    )


def test_the_args_a_change_of_which_replaces_the_pool_come_from_its_replace_on_changes():
    assert create_only_args(CREATE_ONLY_PROPERTIES) == ["vm_size", "zones", "os_disk_size_gb", "vnet_subnet_id"]
