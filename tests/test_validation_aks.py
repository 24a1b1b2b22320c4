"""One test per AKS config rule: each fails before anything is registered, naming path and fix."""

from __future__ import annotations

import pytest

from tests.conftest import errors_of, run, warnings_of
from tests.test_aks import A10, AKS, PHI, aks


def one_error(cfg) -> str:
    errors = errors_of(cfg)
    assert len(errors) == 1, errors
    return errors[0]


def test_gpu_pool_needs_a_gpu_vm_size():
    err = one_error(aks(pools=[{**A10, "vmSize": "Standard_D8s_v5"}]))
    assert err.startswith("gpuNodePools[0].vmSize: Standard_D8s_v5 is not a GPU VM size KAITO knows; use one of:")
    assert "Standard_NC6s_v3" not in err  # review 4: never a size Azure retired, which is refused in turn
    err = one_error(aks(pools=[{**A10, "vmSize": "Standard_NC6s_v2"}]))
    assert "Standard_NC6s_v3" not in err, err
    err = one_error(aks(pools=[{**A10, "vmSize": "Standard_NC6"}]))  # nor an AMD size (the stranger's check)
    assert "V620" not in err, err
    assert "NV32as_v4" not in err, err


def test_gpu_pool_needs_nvidia_gpus():
    err = one_error(aks(pools=[{**A10, "vmSize": "Standard_NG32ads_V620_v1"}]))
    assert err == (
        "gpuNodePools[0].vmSize: Standard_NG32ads_V620_v1 has AMD Radeon PRO V620 GPUs; "
        "the GPU Operator and KAITO presets need NVIDIA GPUs"
    )


def test_kaito_0_12_warns_of_pre_ampere_gpus():
    """KAITO 0.12 admits bring-your-own nodes by their GPU labels alone; its SKU table dropped
    them (pkg/sku/azure_sku_handler.go:19, a comment): said, not refused (issue 28)."""
    said = warnings_of(aks(pools=[{**A10, "vmSize": "Standard_NC4as_T4_v3"}], kaito={"version": "0.12.0"}))
    assert any(
        w.startswith("gpuNodePools[0].vmSize: KAITO 0.12.0 no longer supports NVIDIA T4 (Standard_NC4as_T4_v3)")
        for w in said
    ), said


def test_gpu_workspace_on_a_new_cluster_needs_a_gpu_pool():
    err = one_error(aks(pools=[]))
    assert err.startswith(
        "workspaces[0]: phi needs GPU nodes but nodeGroups has none; add a GPU pool; in this stack: add a gpuNodePools "
        "entry"
    )


def test_cpu_workspace_needs_no_gpu_pool():
    ev = run(
        aks(
            pools=[],
            workspaces=[{"name": "tiny", "compute": "cpu", "image": "r/aikit:1"}],
            gpuOperator={"enabled": False},
        )
    )
    assert ev.of_type("azure-native:containerservice:AgentPool") == []
    (ws,) = ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    assert ws.inputs["resource"]["labelSelector"] == {"matchLabels": {"kubernetes.io/os": "linux"}}


def test_model_larger_than_one_node_of_every_pool():
    err = one_error(aks(workspaces=[{**PHI, "model": "phi-4"}]))
    assert err == (
        "workspaces[0].model: phi-4 needs 27.31 GiB of GPU memory on one node (KAITO 0.8.1 cannot spread it over "
        "nodes) and a Standard_NV36ads_A10_v5 node counts 24 GiB: KAITO's webhook denies it (Insufficient total GPU "
        "memory: 1 node(s) x 24 GiB = 24 GiB, but preset phi-4 requires at least 27.31 GiB); choose a larger size; see "
        "`python -m stacks models estimate phi-4 --pool Standard_NV36ads_A10_v5 --version 0.8.1` (to have KAITO admit "
        "it anyway: bypassChecks: [fit-one-node], which sets KAITO's kaito.sh/bypass-resource-checks annotation)"
    )


LLAMA_70B = [{**PHI, "model": "llama-3.3-70b-instruct", "modelAccessSecret": "hf"}]
A100 = {**A10, "vmSize": "Standard_NC24ads_A100_v4"}


def test_kaito_spreads_llama_70b_over_three_a100_nodes_not_two():
    """Admission passes with two 80 GiB nodes, but KAITO's vLLM estimator targets three: the
    third pod would stay Pending (the memory-only arithmetic accepted this)."""
    err = one_error(aks(workspaces=LLAMA_70B, pools=[{**A100, "count": 2}]))
    assert err.startswith(
        "workspaces[0].replicas: KAITO admits the object, and its controller will wait for 3 node(s) (1 replica(s) x "
        "3, its vLLM node estimate for llama-3.3-70b-instruct on Standard_NC24ads_A100_v4) that the pools it may use "
        "cannot give (at most 2), so the rest stay Pending: give the pool 1 node more, or a larger size"
    )
    run(aks(workspaces=LLAMA_70B, pools=[{**A100, "count": 3}]))


def test_admission_counts_only_the_nodes_an_autoscaled_pool_has_at_its_minimum():
    err = one_error(aks(workspaces=LLAMA_70B, pools=[{**A100, "count": None, "autoscale": {"min": 1, "max": 4}}]))
    assert err.startswith(
        "workspaces[0].model: KAITO 0.8.1's admission webhook would deny it: Insufficient total GPU memory: "
        "1 node(s) x 80 GiB = 80 GiB, but preset llama-3.3-70b-instruct requires at least 131.42 GiB; 1 node(s) of "
        "Standard_NC24ads_A100_v4 exist when the Workspace is created (an autoscaled pool has only its minimum "
        "then); it needs 3 nodes in all (KAITO's vLLM estimate: 1 replica(s) x 3), 2 of them there by then, or a "
        "larger size"
    )
    run(aks(workspaces=LLAMA_70B, pools=[{**A100, "count": None, "autoscale": {"min": 2, "max": 4}}]))


def test_an_admission_denial_names_the_nodes_that_serve_it_when_they_are_more():
    """Review 2 P4: DeepSeek-V3.2 is admitted on 27 A10 nodes, but KAITO's estimator spreads it
    over 39: a pool of 27 would only move the error."""
    deepseek = [{"name": "ds", "model": "deepseek-ai/DeepSeek-V3.2"}]
    v12 = {"version": "0.12.0"}
    err = one_error(aks(workspaces=deepseek, kaito=v12))
    assert "1 node(s) of Standard_NV36ads_A10_v5 exist when the Workspace is created; it needs 39 nodes in all " in err
    assert "(KAITO's vLLM estimate: 1 replica(s) x 39), 27 of them there by then, or a larger size" in err
    run(aks(workspaces=deepseek, kaito=v12, pools=[{**A10, "count": 39}]))


def test_kaito_0_8_counts_one_gpu_of_a_two_gpu_node_at_admission():
    """0.8.1's webhook multiplies the per-GPU label by the node count, not by GPUs per node."""
    two_gpus = {**A10, "vmSize": "Standard_NC48ads_A100_v4"}
    err = one_error(aks(workspaces=LLAMA_70B, pools=[two_gpus]))
    assert "1 node(s) x 80 GiB = 80 GiB, but preset llama-3.3-70b-instruct requires at least 131.42 GiB" in err
    # 0.12 counts both GPUs at admission; its estimator then wants 2 such nodes per instance
    v12 = {"version": "0.12.0"}
    err = one_error(aks(workspaces=LLAMA_70B, pools=[two_gpus], kaito=v12))
    assert err.startswith("workspaces[0].replicas: KAITO admits the object, and its controller will wait for 2 node(s)")
    run(aks(workspaces=LLAMA_70B, pools=[{**two_gpus, "count": 2}], kaito=v12))


def test_replicas_times_nodes_per_replica_must_fit_the_pool():
    err = one_error(aks(workspaces=[{**PHI, "replicas": 4}]))
    assert err.startswith(
        "workspaces[0].replicas: KAITO admits the object, and its controller will wait for 4 node(s) (4 replica(s) x "
        "1, its vLLM node estimate for phi-4-mini-instruct on Standard_NV36ads_A10_v5) that the pools it may use "
        "cannot give (at most 1), so the rest stay Pending: give the pool 3 nodes more, or a larger size, or lower "
        "replicas"
    )
    run(aks(workspaces=[{**PHI, "replicas": 4}], pools=[{**A10, "count": None, "autoscale": {"min": 1, "max": 4}}]))


def test_taints_kaito_cannot_tolerate_on_a_pool_that_serves_presets():
    err = one_error(aks(pools=[{**A10, "taints": ["sku=gpu:NoSchedule", "team=ml:NoSchedule"]}]))
    assert err.startswith(
        "gpuNodePools[0].taints[1]: KAITO admits this, but its preset pods tolerate only sku=gpu:NoSchedule, "
        "nvidia.com/gpu and the AKS spot taint"
    )


def test_taints_must_be_taints():
    err = one_error(aks(pools=[{**A10, "taints": ["sku=gpu"]}]))
    assert (
        err
        == "gpuNodePools[0].taints[0]: 'sku=gpu' is not a taint: write key=value:Effect or key:Effect (NoSchedule, PreferNoSchedule, NoExecute)"
    )


def test_autoscale_min_above_max():
    err = one_error(aks(pools=[{**A10, "count": None, "autoscale": {"min": 3, "max": 2}}]))
    assert err == "gpuNodePools[0].autoscale: min (3) is greater than max (2)"


def test_count_or_autoscale_not_both():
    err = one_error(aks(pools=[{**A10, "autoscale": {"min": 1, "max": 2}}]))
    assert err == "gpuNodePools[0].autoscale: give count or autoscale, not both"


def test_kubernetes_version_format():
    err = one_error(aks(cluster={"aks": {**AKS["aks"], "kubernetesVersion": "v1.33"}}))
    assert err.startswith("cluster.aks.kubernetesVersion: 'v1.33' is not a Kubernetes version")


def test_spot_pools_need_a_kaito_that_tolerates_spot():
    err = one_error(aks(pools=[{**A10, "spot": True}]))
    assert err.startswith(
        "gpuNodePools[0].spot: KAITO admits this, but KAITO 0.8.1's pods do not tolerate the AKS spot"
    )


def test_operator_driver_needs_the_gpu_operator():
    err = one_error(aks(gpuOperator={"enabled": False}))
    assert err.startswith(
        "gpuNodePools[0]: KAITO admits this, but pool gpu leaves its GPU driver to the NVIDIA GPU Operator (gpuDriver "
        "operator), and nothing says one is installed: without a driver GPU Feature Discovery never labels the nodes"
    )
    assert err.endswith("or give the pool gpuDriver aks; in this stack: enable gpuOperator (gpuOperator.enabled)")


def test_one_driver_mode_per_cluster_with_the_gpu_operator():
    pools = [A10, {**A10, "name": "gpu2", "gpuDriver": "aks", "labels": {"x": "y"}}]
    errors = errors_of(aks(pools=pools, workspaces=[{**PHI, "labelSelector": {"matchLabels": {"agentpool": "gpu"}}}]))
    assert errors == [
        "gpuNodePools: every GPU pool needs the same gpuDriver under the GPU Operator (its driver settings are cluster-wide)"
    ]


def test_node_pools_need_an_aks_cluster():
    err = one_error(aks(cluster={"kubeconfig": {"context": "x"}}))
    assert err.startswith("gpuNodePools: node pools are created in AKS; use cluster.aks or cluster.existing")


def test_workspace_selecting_pools_of_different_sizes():
    pools = [A10, {**A10, "name": "a100", "vmSize": "Standard_NC24ads_A100_v4"}]
    err = one_error(aks(pools=pools))
    assert err.startswith(
        "workspaces[0].labelSelector: matches pools of different GPUs (gpu, a100); KAITO denies a Workspace whose nodes "
        'differ ("Non-uniform GPU product/count/memory")'
    )


def test_selecting_one_pool_by_agentpool_label():
    from tests.conftest import run

    pools = [A10, {**A10, "name": "a100", "vmSize": "Standard_NC24ads_A100_v4"}]
    ws = [{**PHI, "model": "phi-4", "labelSelector": {"matchLabels": {"agentpool": "a100"}}}]
    ev = run(aks(pools=pools, workspaces=ws))
    (workspace,) = ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    assert workspace.inputs["resource"]["labelSelector"] == {"matchLabels": {"agentpool": "a100"}}


def test_selector_that_matches_no_pool():
    err = one_error(aks(workspaces=[{**PHI, "labelSelector": {"matchLabels": {"agentpool": "nope"}}}]))
    assert err.startswith("workspaces[0].labelSelector: matches no GPU node pool")


def test_byo_presets_need_a_node_at_creation():
    err = one_error(aks(pools=[{**A10, "count": None, "autoscale": {"min": 0, "max": 2}}]))
    assert err.startswith(
        "workspaces[0].model: KAITO admits a bring-your-own preset only when matching GPU nodes exist"
    )


def test_gpu_operator_version_outside_the_table():
    err = one_error(aks(gpuOperator={"version": "v24.9.0"}))
    assert err == "gpuOperator.version: GPU Operator v24.9.0 is not supported; use one of: v25.3.4, v26.7.0"


def test_gpu_operator_values_the_chart_does_not_read_are_warned_about():
    said = warnings_of(aks(gpuOperator={"values": {"drivers": {"enabled": False}}}))
    assert said == ["gpuOperator.values.drivers: not a value of the gpu-operator v25.3.4 chart"]


def test_cluster_location_is_required():
    cfg = aks()
    del cfg["azure-native:location"]
    err = one_error(cfg)
    assert err == "cluster.aks.location: set it, or run `pulumi config set azure-native:location <region>`"


def test_kaito_tolerated_taint_forms():
    from tests.conftest import run

    ok = [
        "sku=gpu:NoSchedule",
        "nvidia.com/gpu:NoSchedule",
        "nvidia.com/gpu=present:NoSchedule",
        "team=ml:PreferNoSchedule",
    ]
    run(aks(pools=[{**A10, "taints": ok}]))
    err = one_error(aks(pools=[{**A10, "taints": ["sku=gpu:NoExecute"]}]))
    assert err.startswith("gpuNodePools[0].taints[0]: KAITO admits this, but its preset pods tolerate only")


def test_spot_taint_belongs_to_spot_pools():
    err = one_error(aks(pools=[{**A10, "taints": ["kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]}]))
    assert err == "gpuNodePools[0].taints[0]: AKS sets the spot taint on spot pools; set spot instead of the taint"


def test_pool_without_nodes():
    err = one_error(aks(pools=[{**A10, "count": 0}]))
    assert err == "workspaces[0].model: every GPU pool it may use has no nodes; give one at least a node"


def test_a_malformed_pool_does_not_make_up_placement_errors():
    errors = errors_of(aks(pools=[{**A10, "vmSize": 7}]))
    assert len(errors) == 1
    assert errors[0].startswith("gpuNodePools[0].vmSize: must be text; YAML reads this as the number 7")


def test_kaito_gpu_discovery_next_to_the_gpu_operator():
    """Two device plugins and GFDs may fight; nothing shows the deployment breaks: a warning (the lead's call)."""
    said = warnings_of(aks(kaito={"gpuDiscovery": "kaito"}))
    assert [w for w in said if w.startswith("gpuNodePools[0]: pool gpu gets its driver from the GPU Operator")], said


def test_gpu_operator_stays_off_on_kubeconfig_clusters_unless_enabled():
    from tests.conftest import config, run

    ev = run(config([PHI], gpuOperator={"version": "v26.7.0"}))
    assert [r.name for r in ev.of_type("kubernetes:helm.sh/v3:Release")] == ["kaito"]
    ev = run(config([PHI], gpuOperator={"enabled": True, "version": "v26.7.0"}))
    assert sorted(r.name for r in ev.of_type("kubernetes:helm.sh/v3:Release")) == ["gpu-operator", "kaito"]


def test_preinstalled_kaito_workspaces_still_wait_for_the_gpu_pool():
    from tests.conftest import run

    ev = run(aks(pools=[{**A10, "gpuDriver": "aks"}], gpuOperator={"enabled": False}, kaito={"install": False}))
    pool = ev.named("gpu", "azure-native:containerservice:AgentPool")
    (ws,) = ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    assert pool.urn in ws.dependencies


def test_gpu_pools_carry_the_gpu_present_label_the_default_selector_needs():
    from tests.conftest import run

    labels = (
        run(aks(pools=[{**A10, "labels": {"workload": "llm"}}]))
        .named("gpu", "azure-native:containerservice:AgentPool")
        .inputs["nodeLabels"]
    )
    assert labels == {"nvidia.com/gpu.present": "true", "workload": "llm"}


def test_a_vm_size_typo_gets_a_did_you_mean():
    err = one_error(aks(pools=[{**A10, "vmSize": "Standard_NV36ads_A10"}]))
    assert err.startswith("gpuNodePools[0].vmSize: Standard_NV36ads_A10 is not a GPU VM size KAITO knows; did you mean")
    assert "Standard_NV36ads_A10_v5" in err


def test_an_unusable_gpu_size_is_refused_with_the_reason():
    errors = errors_of(aks(pools=[{**A10, "vmSize": "Standard_NV12s_v3"}]))
    assert errors[0] == (
        "gpuNodePools[0].vmSize: Standard_NV12s_v3: NVIDIA M60 is CUDA compute capability 5.2; KAITO's vLLM "
        "images need 7.0 or newer"
    )


@pytest.mark.parametrize("version", ["0.8.1", "0.11.0", "0.12.0"])
def test_tuning_on_the_stacks_own_pools_is_refused_whatever_they_are(version: str):
    """Review 4: KAITO 0.8.1 to 0.12.0 size the tuning Job from resource.instanceType
    (pkg/workspace/tuning/preset_tuning.go:148), which bring-your-own nodes leave empty: the Job
    is never created, on an A10 or an A100 pool alike."""
    from tests.test_validation import TUNING

    byo = {k: v for k, v in TUNING.items() if k != "instanceType"}
    for vm_size in ("Standard_NV36ads_A10_v5", "Standard_NC24ads_A100_v4"):
        err = one_error(aks(workspaces=[byo], pools=[{**A10, "vmSize": vm_size}], kaito={"version": version}))
        assert err == (
            f"workspaces[0].tuning: KAITO admits this, but KAITO {version} sizes a tuning job from the workspace's "
            "instanceType, which bring-your-own nodes leave empty, so it never starts the job "
            "(pkg/workspace/tuning/preset_tuning.go:148, \"Unsupported SKU ''\"); tune with nodeProvisioning auto and "
            "an instanceType (to deploy it anyway: bypassChecks: [tuning-byo])"
        )


def test_model_streaming_on_a_cluster_without_the_blob_csi_driver():
    """With ModelStreaming on, KAITO's webhook requires the blob.csi.azure.com CSIDriver for every
    vLLM preset (workspace_validation.go 0.11.0/0.12.0 validateStreamingCSIDriver); AKS enables it
    only on request, and the clusters this program creates do so only with kaito.modelStreaming."""
    gates = {"version": "0.12.0", "featureGates": {"ModelStreaming": True, "ModelMirror": True}}
    assert one_error(aks(kaito=gates)) == (
        "kaito.featureGates.ModelStreaming: KAITO's webhook then denies every vLLM preset unless the cluster has the "
        "blob.csi.azure.com CSI driver (validateStreamingCSIDriver), which the cluster this stack creates runs only "
        "with kaito.modelStreaming: set kaito.modelStreaming true (it wires the rest), or turn the gate off"
    )
    run(aks(kaito=gates, cluster={"existing": {"resourceGroup": "rg", "name": "platform"}}))
