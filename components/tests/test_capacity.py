"""The non-GPU pools' capacity budget (kaito_aks.capacity): its data against each chart's values at
the pinned version (components/tests/upstream), AKS's node reservations, where each pod may run,
and what the budget refuses and warns of, in the library (deploy_models) as in the stack."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from kaito_aks import KaitoModelArgs, deploy_models
from kaito_aks.azure.aks_cluster import AksCluster, AksClusterArgs
from kaito_aks.azure.cpu_node_pool import CpuNodePoolArgs, cpu_pool_capacity
from kaito_aks.azure.system_pool import SystemPoolArgs, cluster_capacity
from kaito_aks.capacity import Capacity, CapacityPool, PodSet
from kaito_aks.capacity.budget import budget_lines, capacity_budget
from kaito_aks.capacity.nodes import allocatable, reserved_cpu
from kaito_aks.catalog.capacity import PodKind, cpu_millicores, memory_mib, pod_requests
from kaito_aks.cluster.kubeconfig_cluster import KubeconfigCluster, KubeconfigClusterArgs
from kaito_aks.nodes import system_pool_nodes
from kaito_aks.operators.karpenter import karpenter_capacity
from kaito_aks.problems import InvalidArgsError
from kaito_aks.serving.gateway import InferenceGateway, InferenceGatewayArgs, inference_gateway_capacity
from kaito_aks.serving.spec import GatewayRefArgs
from kaito_aks.testing import MOCK_KUBECONFIG, run
from upstream_facts import UPSTREAM

D4 = "Standard_D4s_v5"
KEY = "k" * 40


def _kinds() -> list[PodKind]:
    """Every pod kind of the catalog."""
    pods = pod_requests().pods
    out: list[PodKind] = [*pods.aks, *pods.aks_managed_prometheus]
    for kaito in pods.kaito.values():
        out += [*kaito.controller, *kaito.flux, *kaito.local_csi_driver, *kaito.gpu_feature_discovery]
    out += [engine.remote for engine in pods.rag_engine.values()]
    for table in (
        pods.ragengine_operator,
        pods.gpu_operator,
        pods.gpu_provisioner,
        pods.karpenter,
        pods.istio,
        pods.gateway_pods,
        pods.body_based_routing,
        pods.authorino,
        pods.authorino_instance,
        pods.keda,
        pods.keda_kaito_scaler,
        pods.endpoint_picker,
    ):
        for kinds in table.values():
            out += kinds
    return out


def _default(data: str, path: str) -> Any:
    values = yaml.safe_load((UPSTREAM / data / "chart-values.yaml").read_text())["values"]
    found = [v.get("default") for v in values if ".".join(v["path"]) == path]
    assert found, f"{data}: no value {path}"
    return found[0]


@pytest.mark.parametrize("kind", [k for k in _kinds() if k.upstream is not None], ids=lambda k: k.name)
def test_each_pods_requests_are_its_charts_at_the_pinned_version(kind: PodKind):
    up = kind.upstream
    assert up is not None
    for field, parse, mine in (("cpu", cpu_millicores, kind.cpu_m), ("memory", memory_mib, kind.memory_mi)):
        paths = getattr(up, field)
        if paths is None:
            continue
        paths = [paths] if isinstance(paths, str) else paths
        assert sum(parse(_default(up.data, p)) or 0 for p in paths) == mine, (kind.name, field)
    if up.replicas is not None:
        assert _default(up.data, up.replicas) == kind.replicas
    if up.none is not None:
        assert _default(up.data, up.none) == {}
        assert (kind.cpu_m, kind.memory_mi) == (0, 0)


def test_every_pod_kind_names_where_its_numbers_come_from():
    assert all(k.source for k in _kinds())
    # the chart defaults the issue names: istiod 500m / 2 GiB, the endpoint picker 1 CPU / 2 GiB
    pods = pod_requests().pods
    (istiod,) = pods.istio["1.29.6"]
    (picker,) = pods.endpoint_picker["0.12.0"]
    assert (istiod.cpu_m, istiod.memory_mi) == (500, 2048)
    assert (picker.cpu_m, picker.memory_mi, picker.tolerates) == (1000, 2048, [])
    assert "manifests.go:436-447@v0.12.0" in picker.source
    # KAITO overrides routerlib's own default (8 CPU, 8 GiB) with 1 CPU and 2 GiB
    assert _default("llm-d-router-v0.9.0", "epp.resources.requests.cpu") == "8"


def test_aks_keeps_of_a_node_by_its_documented_rule():
    """learn.microsoft.com/azure/aks/node-resource-reservations: CPU by cores; memory from 1.29 the
    lesser of 20 MB x max pods + 50 MB and 25%, and 100 MiB to eviction; before, regressive tiers
    and 750 MiB."""
    d4 = allocatable(D4, "1.33")
    assert d4 is not None
    assert (d4.cpu_m, d4.reserved_memory_mi, d4.pod_memory_mi) == (4000 - 140, 4096, 16384 - 4096 - 100)
    d8 = allocatable("Standard_D8s_v5", "1.33")
    assert d8 is not None
    # 20 MB x 250 pods (Azure CNI overlay's default) + 50 MB = 5050 MB, below 25% of 32 GiB
    assert (d8.cpu_m, d8.reserved_memory_mi) == (8000 - 180, int(5050 * 10**6 / 2**20))
    old = allocatable(D4, "1.28")
    assert old is not None
    assert old.reserved_memory_mi == int(4096 * 0.25 + 4096 * 0.20 + 8192 * 0.10)
    assert old.eviction_mi == 750
    assert allocatable(D4, None) == d4  # AKS's default minor: the newest rule
    assert allocatable("Standard_Q2_nope") is None
    # between two rows of the CPU table, the smaller reservation (allocatable never understated)
    assert (reserved_cpu(12), reserved_cpu(16), reserved_cpu(96)) == (180, 260, 740)
    assert allocatable("standard_d4S_V5", "1.33") == allocatable(D4, "1.33")  # Azure's sizes ignore case


def _system(count: int = 2, size: str = D4) -> Capacity:
    return cluster_capacity(SystemPoolArgs(vm_size=size, count=count), "1.33", managed_prometheus=False)


def _pickers(n: int, **kw: Any) -> Capacity:
    return Capacity(
        pods=tuple(PodSet(f"endpoint picker of m{i}", 1000, 2048, at=(f"m{i}",), model=True, **kw) for i in range(n))
    )


def test_pods_fit_warn_above_the_high_water_mark_and_are_refused_beyond_the_nodes_with_the_fix():
    ok = capacity_budget([_system(), _pickers(5)])
    assert ok.problems == []
    high = capacity_budget([_system(), _pickers(6)])
    assert [p.code for p in high.problems] == ["capacity-high"]
    assert "above the 80% high-water mark" in high.problems[0].message
    over = capacity_budget([_system(), _pickers(8)])
    (refused,) = over.problems
    assert (refused.code, refused.path) == ("capacity", ("system_pool",))
    assert "8 x endpoint picker: 1 CPU, 2 GiB each" in refused.message
    assert "give system 1 more node (count 2 -> 3; 3 to stay" not in refused.message
    assert "give system 1 more node (count 2 -> 3" in refused.message
    assert "nodes of Standard_D8s_v5" in refused.message
    assert refused.message.endswith("(to deploy it anyway: `bypass_checks`: [capacity])")
    # a model that knows better leaves the budget, and is said
    bypassed = capacity_budget([_system(), _pickers(7), _pickers(1, bypassed=True)])
    assert [p.code for p in bypassed.problems] == ["capacity-high", "capacity"]
    assert all(p.bypassed or p.code == "capacity-high" for p in bypassed.problems)


def test_operators_alone_over_the_pool_are_refused_without_a_way_past():
    alone, over = capacity_budget([_system(1), Capacity(pods=(PodSet("istiod", 4000, 2048),))]).problems
    assert [alone.code, over.code] == ["capacity-pools", "capacity-pools"]
    assert "istiod requests 4 CPU and 2 GiB on one node, and a node of system (Standard_D4s_v5) leaves 3.78 CPU" in (
        alone.message
    )
    assert "bypass_checks" not in over.message


def test_pods_go_only_where_their_selector_and_tolerations_let_them():
    tainted = CpuNodePoolArgs(cluster_name="c", resource_group_name="g", vm_size=D4, count=3, taints=["a=b:NoSchedule"])
    cpu = cpu_pool_capacity(tainted, "cpu", "1.33")
    budget = capacity_budget([_system(1), cpu, _pickers(4)])
    # the pickers tolerate nothing: the tainted pool is no room for them
    assert [p.code for p in budget.problems] == ["capacity"]
    open_pool = cpu_pool_capacity(
        CpuNodePoolArgs(cluster_name="c", resource_group_name="g", vm_size=D4, autoscale={"min": 1, "max": 3}), "cpu"
    )
    budget = capacity_budget([_system(1), open_pool, _pickers(4)])
    assert budget.problems == []
    line = budget_lines(budget)[0]
    assert line.startswith("capacity system (systemPool, 1 x Standard_D4s_v5) and cpu (1-3 x Standard_D4s_v5)")
    assert "at the autoscalers' minimum 7.56 CPU and 23.6 GiB" in budget_lines(budget)[1]
    pinned = Capacity(pods=(PodSet("tiny", 2000, 4096, selector={"kubernetes.azure.com/agentpool": "cpu"}),))
    shares = capacity_budget([_system(1), open_pool, pinned]).shares
    assert [[p.name for p in s.pools] for s in shares] == [["cpu"], ["system", "cpu"]]  # (AKS's coredns: either)


def test_daemonsets_take_their_share_of_every_node_they_run_on():
    ds = Capacity(pods=(PodSet("agent", 1000, 1024, per_node=True, tolerates=("*",)),))
    bare = Capacity((CapacityPool("p", D4, 2, 2, {}, (), "1.33"),))
    assert capacity_budget([bare, ds]).shares == []  # (a DaemonSet alone confines nothing)
    shares = capacity_budget([bare, ds, _pickers(1)]).shares
    node = allocatable(D4, "1.33")
    assert node is not None
    assert shares[0].most.cpu == 2 * (node.cpu_m - 1000)


def test_karpenter_needs_a_node_per_replica():
    from kaito_aks.operators.karpenter import KarpenterArgs, KarpenterNetworkArgs, KubeletIdentityArgs

    args = KarpenterArgs(
        cluster_id="/subscriptions/s/resourceGroups/g/providers/Microsoft.ContainerService/managedClusters/c",
        location="eastus2",
        node_resource_group="mc",
        oidc_issuer_url="https://issuer",
        api_server_endpoint="https://api:443",
        kubelet_identity=KubeletIdentityArgs(client_id="c", resource_id="r"),
        network=KarpenterNetworkArgs(
            subnet_id="s", plugin="azure", plugin_mode="overlay", policy="", dataplane="cilium"
        ),
        values={"controller": {"resources": {"requests": {"cpu": "500m"}}}},
    )
    capacity = karpenter_capacity(args)
    assert [(p.cpu_m, p.memory_mi, p.replicas, p.spread) for p in capacity.pods] == [(500, 1024, 2, True)]
    # without values of its own: the requests the release sets (1 CPU / 1 GiB), not the chart's {}
    plain = karpenter_capacity(dataclasses.replace(args, values={}))
    assert [(p.cpu_m, p.memory_mi) for p in plain.pods] == [(1000, 1024)]
    (refused,) = capacity_budget([_system(1), capacity]).problems
    assert "runs 2 replicas, never two on one node, and its pools have at most 1 node" in refused.message


def test_a_size_the_catalog_does_not_know_is_said_not_measured():
    odd = cluster_capacity(SystemPoolArgs(vm_size="Standard_X9_v9", count=2), "1.33", managed_prometheus=False)
    budget = capacity_budget([odd, _pickers(50)])
    assert [p.code for p in budget.problems] == ["capacity-size"]
    assert (
        budget_lines(budget)[-1]
        == "capacity system (Standard_X9_v9): not measured (a VM size the catalog does not know)"
    )


def test_the_gateway_counts_what_it_installs_and_gives_its_namespace_default_requests():
    pods = {p.who: (p.cpu_m, p.memory_mi) for p in inference_gateway_capacity(gateway()).pods}
    assert pods == {
        "Envoy (gateway kaito-gateway)": (100, 128),
        "istiod (Istio 1.29.6)": (500, 2048),
        "body-based-router (gateway kaito-gateway)": (100, 128),
        "authorino (gateway kaito-gateway)": (100, 128),
        "authorino-operator": (200, 200),
    }
    existing = inference_gateway_capacity(
        gateway(istio="existing", authorino="existing", body_based_routing="existing")
    )
    assert [p.who for p in existing.pods] == ["Envoy (gateway kaito-gateway)", "authorino (gateway kaito-gateway)"]

    def program() -> None:
        cluster = KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=MOCK_KUBECONFIG.format(cluster="dev")))
        InferenceGateway("gw", gateway(), opts=cluster_opts(cluster))

    ev = run(program)
    (limits,) = ev.of_type("kubernetes:core/v1:LimitRange")
    assert limits.inputs["spec"] == {
        "limits": [{"type": "Container", "defaultRequest": {"cpu": "100m", "memory": "128Mi"}}]
    }
    # the body-based router (its chart sets no requests) is installed after it
    (bbr,) = [r for r in ev.of_type("kubernetes:helm.sh/v3:Release") if r.name == "gw/body-based-router"]
    assert limits.urn in bbr.dependencies


def gateway(**kw: Any) -> InferenceGatewayArgs:
    return InferenceGatewayArgs(model_namespaces=["llm"], api_keys={"ci": KEY}, **kw)


def cluster_opts(cluster: KubeconfigCluster) -> Any:
    import pulumi

    return pulumi.ResourceOptions(provider=cluster.provider)


def _routed(n: int) -> list[tuple[str, KaitoModelArgs]]:
    return [
        (
            f"m{i}",
            KaitoModelArgs(
                kaito_version="0.12.0",
                name=f"m{i}",
                model="phi-4-mini-instruct",
                gateway=GatewayRefArgs(name="g", namespace="n"),
                wait_for_gpu_nodes=False,
                wait_for_ready=False,
            ),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize(("models", "refused"), [(2, False), (4, False), (8, True)])
def test_deploy_models_counts_its_routed_models_with_the_programs_components_as_the_stack_does(
    models: int, refused: bool
):
    def program() -> None:
        import pulumi

        cluster = AksCluster(
            "c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2", kubernetes_version="1.33")
        )
        gw = InferenceGateway("gw", gateway(), opts=pulumi.ResourceOptions(provider=cluster.provider))
        deploy_models(
            "models",
            _routed(models),
            opts=pulumi.ResourceOptions(provider=cluster.provider),
            capacity=[cluster, gw],
        )

    if not refused:
        run(program)
        return
    with pytest.raises(InvalidArgsError) as err:
        run(program)
    assert "capacity[0].system_pool: system (capacity[0].systemPool, 2 x Standard_D4s_v5) cannot hold" in str(err.value)
    assert "8 x endpoint picker: 1 CPU, 2 GiB each" in str(err.value)


def test_deploy_models_capacity_must_name_components_or_a_pool():
    def not_components() -> None:
        deploy_models("models", _routed(1), capacity=["system"])

    with pytest.raises(InvalidArgsError) as err:
        run(not_components)
    assert "capacity[0]: must be a component with a capacity (e.g. AksCluster), not 'system'" in str(err.value)

    def no_pool() -> None:
        deploy_models("models", _routed(1), capacity=[Capacity()])

    with pytest.raises(InvalidArgsError) as err:
        run(no_pool)
    assert "capacity: names no pool" in str(err.value)


def test_the_system_pools_labels_are_akss():
    (pool,) = _system().pools
    assert isinstance(pool, CapacityPool)
    assert pool.labels == system_pool_nodes(D4).node_labels


@pytest.mark.parametrize(
    ("quantity", "millicores", "mib"),
    [
        ("100m", 100, 1),
        ("0.1", 100, 1),
        (".5", 500, 1),
        ("500000u", 500, 1),
        ("1e3", 1_000_000, 1),
        ("64Mi", None, 64),
        ("1000M", None, 954),
        ("128974848000m", 128_974_848_000, 123),
    ],
)
def test_the_budget_reads_every_quantity_a_kubernetes_field_accepts(quantity: str, millicores: int | None, mib: int):
    """One grammar (kube_json.QUANTITY, resource.ParseQuantity's): a request the stack file's
    checks accept as a quantity is counted, never read as none."""
    from kaito_aks.kube_json import QUANTITY

    assert QUANTITY.fullmatch(quantity)
    assert memory_mib(quantity) == mib
    if millicores is not None:
        assert cpu_millicores(quantity) == millicores
    assert cpu_millicores("-1") is None
    assert memory_mib("1X") is None
