"""The system pool of a created cluster: inline in the cluster, so later edits are not applied;
they are checked against the live pool at `pulumi up`, and a difference fails the deployment
with the way to make it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kaito_aks import AksCluster, AksClusterArgs
from kaito_aks.azure.system_pool import SystemPoolArgs
from kaito_aks.testing import ProgramMocks, RecordingMonitor, run


def cluster(**pool: Any) -> None:
    AksCluster(
        "c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2", system_pool=SystemPoolArgs(**pool))
    )


def deploy(live: dict[str, Any], **pool: Any) -> None:
    run(lambda: cluster(**pool), monitor=RecordingMonitor(ProgramMocks(agent_pools={"aks/system": live})))


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR and r.name != "asyncio"]


def test_a_system_pool_as_configured_passes(caplog: pytest.LogCaptureFixture):
    run(lambda: cluster(count=3, zones=["1", "2"]))  # the mocks report the pool as the cluster created it
    deploy({"count": 3, "vmSize": "standard_d4s_v5", "availabilityZones": ["2", "1"]}, count=3, zones=["1", "2"])
    assert errors(caplog) == []


def test_a_count_edit_is_refused_with_the_scale_command(caplog: pytest.LogCaptureFixture):
    deploy({"count": 2}, count=5)
    [error] = errors(caplog)
    assert "system_pool (cluster.aks.systemPool).count is 5 but the live system pool has 2 nodes" in error
    assert "az aks nodepool scale -g <group> --cluster-name <cluster> -n system -c 5` then `pulumi refresh`" in error
    assert "or set systemPool.count back to 2" in error
    assert "\n" not in error


def test_an_autoscaled_system_pool_owns_its_count(caplog: pytest.LogCaptureFixture):
    deploy({"count": 7, "enableAutoScaling": True}, count=2)
    assert errors(caplog) == []


def test_a_size_or_zone_edit_is_refused_with_a_second_system_pool_as_the_way(caplog: pytest.LogCaptureFixture):
    deploy({"vmSize": "Standard_D4s_v5", "availabilityZones": None}, vm_size="Standard_D8s_v5", zones=["1"])
    size, zones = errors(caplog)
    assert "system_pool (cluster.aks.systemPool).vmSize is Standard_D8s_v5 but the live system pool is of " in size
    assert "keep systemPool.vmSize at Standard_D4s_v5" in size
    assert "add a CPU pool with mode System (cpuNodePools, CpuNodePool)" in size
    assert "zones is ['1'] but the live system pool's are []" in zones
    assert "keep systemPool.zones at []" in zones


def test_an_existing_cluster_is_not_compared(caplog: pytest.LogCaptureFixture):
    live = ProgramMocks(agent_pools={"aks/system": {"count": 9, "vmSize": "Standard_B2s"}})
    run(
        lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", existing=True)),
        monitor=RecordingMonitor(live),
    )
    assert errors(caplog) == []


def test_a_system_pool_size_that_is_no_azure_vm_size_is_refused_before_anything_is_registered():
    from kaito_aks import InvalidArgsError

    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(lambda: cluster(vm_size="%s%s%s%n"), monitor=monitor)
    assert "system_pool.vm_size: '%s%s%s%n' is not an Azure VM size" in str(err.value)
    assert monitor.registrations == []
