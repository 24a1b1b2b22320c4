"""cpuNodePools: CPU models and RAG engines on AKS pools of their own instead of the system pool;
the CPU placement rules see them (issue 27)."""

from __future__ import annotations

from kaito_aks.nodes import AKS_SYSTEM_POOL_LABELS
from tests.conftest import BYO_CLUSTER, errors_of, run, warnings_of
from tests.test_aks import AKS, aks
from tests.test_cpu_models_off_gpu import CPU, PHI, cpu_workspaces, places

AGENT_POOL = "azure-native:containerservice:AgentPool"
CPU_POOL = {"name": "cpu", "vmSize": "Standard_D8s_v5", "count": 2}
A10 = "Standard_NV36ads_A10_v5"
AKS_ARGS = AKS["aks"]


def selector(ev) -> dict[str, str]:
    (ws,) = cpu_workspaces(ev)
    return ws["inference"]["template"]["spec"].get("nodeSelector")


def test_a_cpu_pool_is_an_agent_pool_of_the_cluster_and_takes_the_cpu_model():
    ev = run(aks(workspaces=[PHI, CPU], cpuNodePools=[CPU_POOL]))
    pool = ev.named("cpu", AGENT_POOL)
    assert (pool.inputs["mode"], pool.inputs["vmSize"], pool.inputs["count"]) == ("User", "Standard_D8s_v5", 2)
    assert pool.inputs["resourceName"] == "kaito-test"
    assert selector(ev) == {"kubernetes.azure.com/agentpool": "cpu"}
    assert places(ev) == {"tiny-0": {"cpu"}}  # not the system pool, not the GPU pool
    # the model waits for its pool
    model = ev.named("default/tiny", "kaito-aks:index:KaitoModel")
    assert pool.urn in model.dependencies


def test_the_first_untainted_user_pool_takes_cpu_models_and_a_system_or_tainted_one_none():
    pools = [
        {**CPU_POOL, "name": "sys2", "mode": "System"},
        {**CPU_POOL, "name": "rag", "taints": ["dedicated=rag:NoSchedule"]},
        {**CPU_POOL, "name": "cpu2"},
    ]
    assert selector(run(aks(workspaces=[PHI, CPU], cpuNodePools=pools))) == {"kubernetes.azure.com/agentpool": "cpu2"}
    only_system = run(aks(workspaces=[PHI, CPU], cpuNodePools=pools[:2]))
    assert selector(only_system) == AKS_SYSTEM_POOL_LABELS
    assert places(only_system) == {"tiny-0": {"system", "sys2"}}


def test_a_stack_without_cpu_pools_keeps_its_cpu_model_on_the_system_pool():
    assert selector(run(aks(workspaces=[PHI, CPU]))) == AKS_SYSTEM_POOL_LABELS


def test_a_cpu_model_whose_selector_no_pool_matches_is_refused_with_the_pools_it_could_select():
    lost = {**CPU, "nodeSelector": {"workload": "cpu"}}
    [error] = errors_of(aks(workspaces=[PHI, lost], cpuNodePools=[CPU_POOL]))
    assert error == (
        "workspaces[1].nodeSelector: KAITO admits this, but no node of the cluster carries {kubernetes.io/os=linux, "
        "workload=cpu}, so the model's pod stays Pending: select one of the cluster's CPU pools (system: "
        "{kubernetes.azure.com/agentpool=system}; cpu: {kubernetes.azure.com/agentpool=cpu}), or give an untainted CPU pool "
        "those labels (to deploy it anyway: bypassChecks: [cpu-no-pool])"
    )
    labelled = {**CPU_POOL, "labels": {"workload": "cpu"}}
    run(aks(workspaces=[PHI, lost], cpuNodePools=[labelled]))
    bypassed = {**lost, "bypassChecks": ["cpu-no-pool"]}
    assert any("bypassed (cpu-no-pool)" in w for w in warnings_of(aks(workspaces=[PHI, bypassed])))


def test_a_cpu_model_sent_to_a_tainted_pool_its_pod_does_not_tolerate_is_refused():
    tainted = {**CPU_POOL, "name": "rag", "taints": ["dedicated=rag:NoSchedule"]}
    there = {**CPU, "nodeSelector": {"kubernetes.azure.com/agentpool": "rag"}}
    [error] = errors_of(aks(workspaces=[PHI, there], cpuNodePools=[tainted]))
    assert error.startswith(
        "workspaces[1].nodeSelector: KAITO admits this, but the pools that carry {kubernetes.azure.com/agentpool=rag, "
        "kubernetes.io/os=linux} are tainted, and its pod tolerates no taint of theirs: rag (dedicated=rag:NoSchedule), "
        "so the model's pod stays Pending"
    )
    soft = {**tainted, "taints": ["dedicated=rag:PreferNoSchedule"]}
    assert places(run(aks(workspaces=[PHI, there], cpuNodePools=[soft]))) == {"tiny-0": {"rag"}}


def test_a_cpu_model_on_an_adopted_cluster_is_not_refused_for_labels_the_stack_cannot_see():
    existing = {"existing": {"resourceGroup": "rg", "name": "theirs"}}
    run(aks(cluster=existing, pools=[], workspaces=[{**CPU, "nodeSelector": {"workload": "cpu"}}]))


def test_a_rag_engine_of_a_cpu_size_may_run_on_a_cpu_pool_of_that_size():
    on_cpu = {"instanceType": "Standard_D8s_v5", "labelSelector": {"matchLabels": {"agentpool": "cpu"}}}
    engine = {"name": "docs", "workspace": "phi", "contextWindowSize": 4096, "compute": on_cpu}
    stack = {"workspaces": [PHI], "ragEngines": [engine], "kaito": {"version": "0.12.0"}}
    [error] = errors_of(aks(**stack))
    assert "and no pool carries those labels" in error
    run(aks(**stack, cpuNodePools=[CPU_POOL]))
    small = {**CPU_POOL, "vmSize": "Standard_D4s_v5"}
    [error] = errors_of(aks(**stack, cpuNodePools=[small]))
    assert "and the CPU pool cpu with those labels is of Standard_D4s_v5;" in error


def test_cpu_pools_need_an_aks_cluster_names_of_their_own_and_a_cpu_size():
    [error] = errors_of({"kaito-aks:cluster": BYO_CLUSTER, "kaito-aks:cpuNodePools": [CPU_POOL]})
    assert error == ("cpuNodePools: node pools are created in AKS; use cluster.aks or cluster.existing, or drop them")
    twice = [{"name": "gpu", "vmSize": A10, "count": 1}]
    errors = errors_of(aks(pools=twice, cpuNodePools=[{**CPU_POOL, "name": "gpu"}, {**CPU_POOL, "name": "system"}]))
    assert "cpuNodePools[0].name: 'gpu' is already a node pool of this cluster; pool names must be unique" in errors
    assert "cpuNodePools[1].name: 'system' is already a node pool of this cluster; pool names must be unique" in errors
    [error] = errors_of(aks(cpuNodePools=[{**CPU_POOL, "vmSize": A10}]))
    assert error.startswith(f"cpuNodePools[0].vmSize: {A10} is a GPU VM size;")


def test_a_system_or_cpu_pool_size_that_is_no_azure_vm_size_is_refused_with_the_fix():
    """As the GPU pools' sizes are (against the GPU SKU catalog): before, '%s%s%s%n' and
    '; rm -rf / #' passed validate and rendered, and AKS refused them only at `pulumi up`."""
    fix = (
        "is not an Azure VM size (e.g. Standard_D4s_v5: Standard_<family><vCPUs><features>[_<accelerator>]"
        "[_v<version>]; `az vm list-skus --location <region> --resource-type virtualMachines --output table` lists "
        "a region's)"
    )
    for size in ("%s%s%s%n", "; rm -rf / #", "D4s_v5", "Standard_D4s_v5 "):
        cluster = {"aks": {**AKS_ARGS, "systemPool": {"vmSize": size}}}
        errors = errors_of(aks(cluster=cluster, cpuNodePools=[{**CPU_POOL, "vmSize": size}]))
        assert errors == [f"cluster.aks.systemPool.vmSize: {size!r} {fix}", f"cpuNodePools[0].vmSize: {size!r} {fix}"]
    for size in ("Standard_D4s_v5", "standard_d4s_v5", "Standard_E64-16ds_v4", "Basic_A0", "Standard_D2_v2_Promo"):
        cluster = {"aks": {**AKS_ARGS, "systemPool": {"vmSize": size}}}
        run(aks(cluster=cluster, cpuNodePools=[{**CPU_POOL, "vmSize": size}]))
