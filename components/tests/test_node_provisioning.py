"""Every way KAITO gets its nodes, as the library builds it: gpu-provisioner with its workload
identity (every wire: issuer, subject, audience, role and scope, chart values), KAITO's release
switched to it, the AKS add-on, and models whose nodes KAITO creates (instanceType, KAITO's
auto-provisioning rules and sizing per release)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

import upstream_facts
from kaito_aks import (
    AksCluster,
    AksClusterArgs,
    AksClusterRefArgs,
    GpuProvisioner,
    GpuProvisionerArgs,
    InvalidArgsError,
    KaitoModel,
    KaitoModelArgs,
    KaitoOperator,
    KaitoOperatorArgs,
    RoleGrantArgs,
    WorkloadIdentity,
    WorkloadIdentityArgs,
    catalog,
)
from kaito_aks.azure.workload_identity import workload_identity_warnings
from kaito_aks.operators.gpu_provisioner import agent_pool_role_guid
from kaito_aks.testing import (
    MOCK_KUBECONFIG,
    MOCK_SUBSCRIPTION,
    MOCK_TENANT,
    ProgramMocks,
    RecordingMonitor,
    Secret,
    cluster_id,
    run,
)
from kaito_aks.waits.kube_client import KubeApiError
from kaito_aks.waits.nodeclaims_gone import wait_until_gone
from test_components import kubeconfig_cluster, refused

RELEASE = "kubernetes:helm.sh/v3:Release"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
CREDENTIAL = "azure-native:managedidentity:FederatedIdentityCredential"
ROLE = "azure-native:authorization:RoleAssignment"
DEFINITION = "azure-native:authorization:RoleDefinition"
CLUSTER = "azure-native:containerservice:ManagedCluster"
WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
A100 = "Standard_NC24ads_A100_v4"
KUBECONFIG = MOCK_KUBECONFIG.format(cluster="dev")  # a kubeconfig with a cluster (and context) dev


def aks_with_provisioner(version: str = "0.4.3") -> None:
    cluster = AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2"))
    GpuProvisioner(
        "gpu-provisioner",
        GpuProvisionerArgs(
            cluster_id=cluster.cluster_id,
            location=cluster.location,
            node_resource_group=cluster.node_resource_group,
            oidc_issuer_url=cluster.oidc_issuer_url,
            version=version,
        ),
        opts=pulumi.ResourceOptions(providers=[cluster.provider]),
    )


def env_of(release: Any) -> dict[str, str]:
    return {e["name"]: e["value"] for e in release.inputs["values"]["controller"]["env"]}


# ---------------------------------------------------------------- gpu-provisioner and its identity


def test_the_identity_trusts_exactly_the_charts_service_account_through_the_clusters_issuer():
    ev = run(aks_with_provisioner)
    credential = ev.named("gpu-provisioner-identity-federation", CREDENTIAL)
    account = upstream_facts.load("gpu-provisioner", "v0.4.3", "service-account.yaml")["name"]
    # the chart's template fixes the service account's name; the release namespace is ours
    assert credential.inputs["subject"] == f"system:serviceaccount:gpu-provisioner:{account}"
    assert credential.inputs["issuer"] == "https://oidc.example/c/"  # the cluster's OIDC issuer (an output)
    assert credential.inputs["audiences"] == ["api://AzureADTokenExchange"]
    identity = ev.named("gpu-provisioner-identity", IDENTITY)
    # named after the cluster: programs whose clusters share a resource group do not collide (review 3)
    assert credential.inputs["resourceName"] == identity.inputs["resourceName"] == "aks-gpu-provisioner"
    assert identity.inputs["resourceGroupName"] == credential.inputs["resourceGroupName"] == "rg"
    assert identity.inputs["location"] == "eastus2"


def test_the_identity_holds_only_the_agent_pool_actions_on_the_cluster_alone():
    ev = run(aks_with_provisioner)
    role = ev.named("gpu-provisioner-identity-agent-pools", ROLE)
    assert role.inputs["scope"] == cluster_id("rg", "aks")  # not the resource group, not the subscription
    definition = ev.named("gpu-provisioner-agent-pools", DEFINITION)
    guid = definition.inputs["roleDefinitionId"]
    assert role.inputs["roleDefinitionId"] == (
        f"/subscriptions/{MOCK_SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{guid}"
    )
    assert definition.urn in role.dependencies  # assigned once it exists
    # exactly what its code calls (one Azure client, four methods), at every pinned release
    assert definition.inputs["permissions"] == [
        {
            "actions": [
                "Microsoft.ContainerService/managedClusters/agentPools/delete",
                "Microsoft.ContainerService/managedClusters/agentPools/read",
                "Microsoft.ContainerService/managedClusters/agentPools/write",
            ]
        }
    ]
    group = f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/rg"
    assert definition.inputs["scope"] == group
    assert definition.inputs["assignableScopes"] == [group]
    assert definition.inputs["roleType"] == "CustomRole"
    # one GUID and one tenant-unique name per cluster, the same on every run
    assert guid == agent_pool_role_guid(cluster_id("rg", "aks")) != agent_pool_role_guid(cluster_id("rg", "other"))
    assert definition.inputs["roleName"] == f"kaito-aks gpu-provisioner aks {guid[:8]}"
    assert role.inputs["principalType"] == "ServicePrincipal"
    identity = ev.component_outputs[ev.named("gpu-provisioner-identity", "kaito-aks:index:WorkloadIdentity").urn]
    assert role.inputs["principalId"] == identity["principalId"]
    broad = set(catalog.too_broad_roles().values())
    assert not any(r.inputs["roleDefinitionId"].rsplit("/", 1)[1] in broad for r in ev.of_type(ROLE))


@pytest.mark.parametrize("version", ["v0.3.8", "v0.4.2", "v0.4.3"])
def test_the_role_covers_every_azure_call_of_the_pinned_release_and_no_more(version: str):
    calls = upstream_facts.load("gpu-provisioner", version, "azure-calls.yaml")
    assert list(calls["clients"]) == ["armcontainerservice.NewAgentPoolsClient"]  # its only Azure client
    assert set(calls["agentPoolsApi"]) == set(catalog.gpu_provisioner_source().agent_pool_actions)


def test_the_chart_is_pinned_and_its_values_come_from_the_cluster_and_the_identity():
    ev = run(aks_with_provisioner)
    release = ev.named("gpu-provisioner", RELEASE)
    assert release.inputs["chart"] == "gpu-provisioner"
    assert release.inputs["version"] == "0.4.3"
    assert release.inputs["repositoryOpts"]["repo"] == "https://azure.github.io/gpu-provisioner/charts"
    assert release.inputs["namespace"] == "gpu-provisioner"
    assert env_of(release) == {
        "ARM_SUBSCRIPTION_ID": MOCK_SUBSCRIPTION,
        "LOCATION": "eastus2",
        "AZURE_CLUSTER_NAME": "aks",
        "AZURE_NODE_RESOURCE_GROUP": "MC_rg_aks_eastus2",
        "ARM_RESOURCE_GROUP": "rg",
        "LEADER_ELECT": "false",
        "E2E_TEST_MODE": "false",
    }
    identity = ev.component_outputs[ev.named("gpu-provisioner-identity", "kaito-aks:index:WorkloadIdentity").urn]
    assert release.inputs["values"]["workloadIdentity"] == {"clientId": identity["clientId"], "tenantId": MOCK_TENANT}
    # the release starts its controller only once the identity can sign in
    for made in (ev.of_type(CREDENTIAL)[0], ev.named("gpu-provisioner-identity-agent-pools", ROLE)):
        assert made.urn in release.dependencies


@pytest.mark.parametrize("version", ["0.3.8", "0.4.2", "0.4.3"])
def test_every_value_the_release_sets_is_one_the_chart_has(version: str):
    ev = run(lambda: aks_with_provisioner(version))
    values = ev.named("gpu-provisioner", RELEASE).inputs["values"]
    chart = upstream_facts.chart_values("gpu-provisioner", f"v{version}")

    def paths(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        return [
            p
            for k, v in tree.items()
            for p in (paths(v, (*prefix, k)) if isinstance(v, dict) and v else [(*prefix, k)])
        ]

    for path in paths(values):
        node: Any = chart
        for key in path:
            assert isinstance(node, dict), path
            assert key in node, f"{'.'.join(path)} is not a value of gpu-provisioner {version}"
            node = node[key]
    # Helm replaces lists: the env list keeps every entry of the chart's own
    chart_env = {e["name"] for e in chart["controller"]["env"]}
    assert chart_env <= set(env_of(ev.named("gpu-provisioner", RELEASE)))


def test_gpu_provisioner_refuses_what_would_unhook_it_from_the_cluster():
    def program() -> None:
        GpuProvisioner(
            "gp",
            GpuProvisionerArgs(
                cluster_id="/subscriptions/1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm",
                location="eastus",
                node_resource_group="MC_rg",
                oidc_issuer_url="https://oidc/",
                version="0.4.4",
                values={"workloadIdentity": {"clientId": "x"}, "controler": {}},
            ),
        )

    message = refused(program)
    assert "args.cluster_id: must be an AKS cluster's resource id" in message
    assert "args.version: gpu-provisioner 0.4.4 is not supported; use one of: 0.3.8, 0.4.2, 0.4.3" in message
    assert "args.values.controler: not a value of the gpu-provisioner 0.4.4 chart" not in message  # no chart to say
    message = refused(
        lambda: GpuProvisioner(
            "gp",
            GpuProvisionerArgs(
                cluster_id=cluster_id("rg", "aks"),
                location="eastus",
                node_resource_group="MC_rg",
                oidc_issuer_url="https://oidc/",
                values={"workloadIdentity": {"clientId": "x"}, "controller": {"env": []}, "controler": {}},
            ),
        )
    )
    # a value the chart does not read has no effect: a warning (logged when the rest passes), not a refusal
    assert "args.values.controler" not in message
    assert "args.values.workloadIdentity: set from the component's workload identity; remove it" in message
    assert "args.values.controller.env: set from the cluster" in message


def test_a_workload_identity_alone_takes_any_role_by_name_or_guid_and_refuses_others():
    scope = cluster_id("rg", "aks")

    def program() -> None:
        WorkloadIdentity(
            "karpenter",
            WorkloadIdentityArgs(
                resource_group_name="rg",
                issuer_url="https://oidc/",
                namespace="karpenter",
                service_account="karpenter-sa",
                roles=[
                    RoleGrantArgs(role="Network Contributor", scope=scope),
                    RoleGrantArgs(role="9980E02C-C2BE-4D73-94E8-173B1DC7CF3C", scope=scope),
                ],
            ),
        )

    ev = run(program)
    assert (
        ev.named("karpenter-federation", CREDENTIAL).inputs["subject"] == "system:serviceaccount:karpenter:karpenter-sa"
    )
    assert sorted(r.inputs["roleDefinitionId"].rsplit("/", 1)[1] for r in ev.of_type(ROLE)) == [
        "4d97b98b-1d4f-4787-a291-c67834d212e7",
        "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",
    ]
    message = refused(
        lambda: WorkloadIdentity(
            "x",
            WorkloadIdentityArgs(
                resource_group_name="rg",
                issuer_url="https://oidc/",
                namespace="ns",
                service_account="Bad_Name",
                roles=[
                    RoleGrantArgs(role="Proprietor", scope="rg"),
                    RoleGrantArgs(scope="/subscriptions/s"),
                    RoleGrantArgs(role_definition_id="/subscriptions/s/providers/x", scope="/subscriptions/s"),
                ],
            ),
        )
    )
    assert "args.service_account: 'Bad_Name' is not a DNS-1123 label" in message
    assert "args.roles[0].role: 'Proprietor' is neither a built-in role this library knows" in message
    assert "args.roles[0].scope: must be an Azure resource id under a subscription" in message
    assert "args.roles[1]: give role (a built-in role's name or a GUID) or role_definition_id, one of them" in message
    assert "args.roles[2].name: required with role_definition_id" in message


@pytest.mark.parametrize(
    "role", ["Owner", "Contributor", "User Access Administrator", "8E3AF657-A8FF-443C-A75C-2FE8C4BCB635"]
)
def test_a_workload_identity_with_a_role_that_writes_everything_is_warned(role: str):
    args = WorkloadIdentityArgs(
        resource_group_name="rg",
        issuer_url="https://oidc/",
        namespace="ns",
        service_account="sa",
        roles=[RoleGrantArgs(role=role, scope="/subscriptions/s/resourceGroups/rg")],
    )
    [warning] = workload_identity_warnings(args)
    assert warning.path == ("roles", 0, "role")
    assert "every resource in its scope: grant a role with only the actions the workload calls" in warning.message
    narrow = WorkloadIdentityArgs(
        resource_group_name="rg",
        issuer_url="https://oidc/",
        namespace="ns",
        service_account="sa",
        roles=[RoleGrantArgs(role="Network Contributor", scope="/subscriptions/s/resourceGroups/rg")],
    )
    assert workload_identity_warnings(narrow) == []


# ---------------------------------------------------------------- KAITO switched to it


def test_kaito_in_auto_mode_uses_the_provisioner_per_release():
    def program() -> None:
        cluster = kubeconfig_cluster()
        on = pulumi.ResourceOptions(provider=cluster.provider)
        KaitoOperator("k08", KaitoOperatorArgs(version="0.8.1", node_provisioning="auto"), opts=on)
        KaitoOperator("k12", KaitoOperatorArgs(version="0.12.0", node_provisioning="auto"), opts=on)

    ev = run(program)
    v08 = ev.named("k08", RELEASE).inputs["values"]
    assert v08["featureGates"]["disableNodeAutoProvisioning"] is False  # 0.8: the gate alone selects the mode
    assert "nodeProvisioner" not in v08
    v12 = ev.named("k12", RELEASE).inputs["values"]
    assert v12["nodeProvisioner"] == "azure-gpu-provisioner"  # 0.11+: the controller's mode
    assert v12["featureGates"]["disableNodeAutoProvisioning"] is False
    # KAITO installs its GPU discovery only in BYO mode; nothing to tolerate here
    assert "gpu-feature-discovery" not in v08
    assert "gpu-feature-discovery" not in v12


def test_karpenter_mode_is_kaitos_from_0_11_and_refused_before():
    ev = run(
        lambda: KaitoOperator(
            "k",
            KaitoOperatorArgs(version="0.12.0", node_provisioning="auto", node_provisioner="karpenter"),
            opts=pulumi.ResourceOptions(provider=kubeconfig_cluster().provider),
        )
    )
    assert ev.named("k", RELEASE).inputs["values"]["nodeProvisioner"] == "karpenter"
    byo = run(
        lambda: KaitoOperator(
            "k",
            KaitoOperatorArgs(version="0.11.0", node_provisioner="karpenter"),
            opts=pulumi.ResourceOptions(provider=kubeconfig_cluster().provider),
        )
    )
    assert byo.named("k", RELEASE).inputs["values"]["nodeProvisioner"] == "byo"  # byo: no provisioner at all
    message = refused(
        lambda: KaitoOperator(
            "k", KaitoOperatorArgs(version="0.8.1", node_provisioning="auto", node_provisioner="karpenter")
        )
    )
    assert "args.node_provisioner: KAITO 0.8.1 has no Karpenter mode (it came in 0.11)" in message


# ---------------------------------------------------------------- the AKS add-on


def test_the_add_on_is_the_clusters_profile():
    ev = run(
        lambda: AksCluster(
            "c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2", ai_toolchain_operator=True)
        )
    )
    cluster = ev.named("c", CLUSTER)
    assert cluster.inputs["aiToolchainOperatorProfile"] == {"enabled": True}
    assert cluster.inputs["oidcIssuerProfile"] == {"enabled": True}  # what the add-on needs besides
    plain = run(lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2")))
    assert "aiToolchainOperatorProfile" not in plain.named("c", CLUSTER).inputs


def test_an_existing_cluster_said_to_run_the_add_on_is_checked(caplog: pytest.LogCaptureFixture):
    def program() -> None:
        AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", existing=True, ai_toolchain_operator=True))

    add_on = ProgramMocks(existing={"aks": {"aiToolchainOperatorProfile": {"enabled": True}}})
    ev = run(program, monitor=RecordingMonitor(add_on))
    assert ev.component_outputs[ev.named("c", "kaito-aks:index:AksCluster").urn]["aiToolchainOperator"] is True
    assert "does not have the AI toolchain operator add-on" not in caplog.text
    run(program)  # the mocks' existing cluster has no add-on
    assert "does not have the AI toolchain operator add-on" in caplog.text
    caplog.clear()
    unsaid = RecordingMonitor(ProgramMocks(existing={"aks": {"aiToolchainOperatorProfile": {"enabled": True}}}))
    run(lambda: AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", existing=True)), monitor=unsaid)
    assert "the existing cluster runs the AI toolchain operator add-on (AKS's own KAITO)" in caplog.text
    assert any(r.levelname == "ERROR" for r in caplog.records)  # an error: the update fails


# ---------------------------------------------------------------- models KAITO creates nodes for


def auto_model(version: str = "0.8.1", **kw: Any) -> None:
    KaitoModel(
        "phi",
        KaitoModelArgs(kaito_version=version, node_provisioning="auto", kubeconfig=KUBECONFIG, **kw),
        # an explicit provider that gives the waits no credentials: they take `kubeconfig`
        opts=pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(KUBECONFIG))),
    )


def test_an_auto_model_asks_kaito_for_its_instance_type_and_waits_longer_for_no_gpu_labels():
    ev = run(lambda: auto_model(model="phi-4-mini-instruct", instance_type=A100))
    [ws] = ev.of_type(WORKSPACE)
    assert ws.inputs["resource"] == {"instanceType": A100, "labelSelector": {"matchLabels": {"apps": "phi"}}}
    assert ev.of_type("pulumi-python:dynamic/kaito-aks:GpuNodesReady") == []  # KAITO brings the node itself
    ready = ev.named("phi/ready", "pulumi-python:dynamic/kaito-aks:ModelReady")
    assert ready.inputs["timeoutSeconds"] == 45 * 60
    outputs = ev.component_outputs[ev.named("phi", "kaito-aks:index:KaitoModel").urn]
    assert outputs["instanceType"] == A100


def test_on_0_12_the_inference_set_template_carries_the_instance_type():
    ev = run(lambda: auto_model("0.12.0", model="phi-4-mini-instruct", instance_type=A100, replicas=2))
    [inference_set] = ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert inference_set.inputs["spec"]["template"]["resource"] == {"instanceType": A100}
    assert inference_set.inputs["spec"]["replicas"] == 2


@pytest.mark.parametrize(
    ("version", "kw", "expected"),
    [
        (
            "0.8.1",
            {"model": "phi-4-mini-instruct"},
            "args.instance_type: required with node auto-provisioning: the Azure VM size KAITO creates nodes of (KAITO "
            'denies it without: "instanceType is required when node auto-provisioning is enabled"); '
            "phi-4-mini-instruct fits on Standard_NC4as_T4_v3 (1 node)",  # Azure retired the V100 NCv3 sizes
        ),
        (
            "0.12.0",
            {"model": "phi-4-mini-instruct"},
            "phi-4-mini-instruct fits on Standard_NV36ads_A10_v5 (1 node)",  # T4 is gone in 0.12
        ),
        (
            "0.8.1",
            {"model": "phi-4-mini-instruct", "instance_type": "Standard_NC24ads_A100_V4"},
            "args.instance_type: KAITO admits this (its webhook takes any Standard_N* name), but KAITO 0.8.1 looks sizes "
            "up exactly (case included), so it cannot size a preset on this one: write Standard_NC24ads_A100_v4 (to "
            "deploy it anyway: bypass_checks: [instance-type-unknown])",
        ),
        (
            "0.12.0",
            {"model": "phi-4-mini-instruct", "instance_type": "standard_nc24ads_a100_v4"},
            "args.instance_type: KAITO admits this (0.12.0's webhook ignores case), but it finds the node it provisioned "
            "by Azure's spelling of the size (the node's instance-type label), so this one would never become ready: write "
            "Standard_NC24ads_A100_v4",
        ),
        (
            "0.12.0",
            {"model": "phi-4-mini-instruct", "instance_type": "Standard_NC4as_T4_v3"},
            "args.instance_type: KAITO admits this, but KAITO 0.12.0 no longer supports NVIDIA T4 (Standard_NC4as_T4_v3)",
        ),
        (
            "0.8.1",
            {"model": "phi-4-mini-instruct", "instance_type": "Standard_NC24ads_A100"},
            "args.instance_type: KAITO admits this, but its SKU table (0.8.1) has no Standard_NC24ads_A100, so it cannot "
            "size a preset on it (its webhook admits any Standard_N*/Standard_D* name, then its node estimator fails); did you mean "
            "Standard_NC24ads_A100_v4",
        ),
        (
            "0.12.0",
            {"model": "phi-4-mini-instruct", "instance_type": "Standard_NG32ads_V620_v1"},
            "args.instance_type: KAITO admits this, but Standard_NG32ads_V620_v1 has AMD Radeon PRO V620 GPUs and "
            "KAITO's preset images run on NVIDIA GPUs only",
        ),
        (
            "0.8.1",
            {"model": "phi-4-mini-instruct", "instance_type": "Standard_NV12s_v3"},
            "args.instance_type: KAITO admits this, but Standard_NV12s_v3: NVIDIA M60 is CUDA compute capability 5.2",
        ),
        (
            "0.8.1",
            {"model": "phi-4-mini-instruct", "instance_type": "Standard_NC6s_v3"},
            "args.instance_type: KAITO admits this, but Standard_NC6s_v3: Azure retired it on 2025-09-30",
        ),
        (
            "0.8.1",
            {"model": "falcon-40b-instruct", "instance_type": "Standard_NV36ads_A10_v5"},
            "args.instance_type: KAITO admits this, but its controller's vLLM node estimator fails for falcon-40b-instruct "
            "on Standard_NV36ads_A10_v5, so no node is ever created: falcon-40b-instruct does not support multi-node "
            "inference in this release",
        ),
        (
            "0.8.1",
            {
                "model": "phi-3-medium-4k-instruct",
                "instance_type": "Standard_NV36ads_A10_v5",
                "runtime": "transformers",
            },
            "args.instance_type: KAITO 0.8.1's webhook would deny the transformers runtime on one node: Insufficient "
            "total GPU memory: Instance type Standard_NV36ads_A10_v5 has a total of 24Gi, but preset "
            "phi-3-medium-4k-instruct requires at least 26.0Gi; the smallest that fits: Standard_NV72ads_A10_v5",
        ),
        (
            "0.8.1",
            {"model": "falcon-40b", "instance_type": "Standard_NC24ads_A100_v4", "runtime": "transformers"},
            "Insufficient number of GPUs: Instance type Standard_NC24ads_A100_v4 provides 1, but preset falcon-40b "
            "requires at least 2",  # 0.8 counts GPUs too
        ),
        (
            "0.12.0",
            {"image": "ghcr.io/kaito-project/aikit/llama3.2:1b", "compute": "cpu", "instance_type": "Basic_A2"},
            "args.instance_type: KAITO 0.12.0 denies it: it creates nodes only of its GPU table or Azure N-series (GPU) "
            'and D-series sizes ("Unsupported instance type Basic_A2")',
        ),
    ],
)
def test_auto_models_meet_kaitos_auto_provisioning_rules(version: str, kw: dict[str, Any], expected: str):
    assert expected in refused(lambda: auto_model(version, **kw))


@pytest.mark.parametrize(
    ("version", "kw"),
    [
        (
            "0.8.1",
            {"model": "llama-3.3-70b-instruct", "instance_type": A100, "hf_token": "t"},
        ),  # two nodes: KAITO spans them
        (
            "0.8.1",
            {"image": "ghcr.io/kaito-project/aikit/llama3.2:1b", "compute": "cpu", "instance_type": "Standard_D8s_v5"},
        ),
    ],
)
def test_auto_models_kaito_admits_and_places_are_accepted(version: str, kw: dict[str, Any]):
    ev = run(lambda: auto_model(version, **kw))
    assert ev.of_type(WORKSPACE) or ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")


# ---------------------------------------------------------------- destroy: KAITO's NodeClaims first


def test_gpu_provisioner_stays_until_kaitos_nodeclaims_are_gone():
    """KAITO's finalizer only asks for the NodeClaims' deletion; gpu-provisioner deletes their
    agent pools. A wait between the Workspaces and the release holds its removal until then."""
    ev = run(aks_with_provisioner)
    gone = ev.named("gpu-provisioner/nodeclaims-gone", "pulumi-python:dynamic/kaito-aks:NodeClaimsGone")
    release = ev.named("gpu-provisioner", RELEASE)
    assert release.urn in gone.dependencies  # deleted before the release
    assert isinstance(gone.inputs["kubeconfig"], Secret)  # the delete reads the cluster; kept secret
    assert "kubeconfig" in gone.options["additionalSecretOutputs"]


def test_the_drain_wait_needs_credentials_or_is_turned_off():
    def program(wait: bool) -> None:
        provider = k8s.Provider("plain", kubeconfig="apiVersion: v1\nkind: Config\n")
        GpuProvisioner(
            "gp",
            GpuProvisionerArgs(
                cluster_id=cluster_id("rg", "aks"),
                location="eastus",
                node_resource_group="MC_rg",
                oidc_issuer_url="https://oidc/",
                wait_for_nodeclaims_on_delete=wait,
            ),
            opts=pulumi.ResourceOptions(provider=provider),
        )

    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(lambda: program(True), monitor=monitor)
    assert "args.kubeconfig: the wait that keeps gpu-provisioner until KAITO's NodeClaims are gone" in str(err.value)
    ev = run(lambda: program(False))
    assert ev.of_type("pulumi-python:dynamic/kaito-aks:NodeClaimsGone") == []


class NodeClaims:
    def __init__(self, *answers: object):
        self.answers = list(answers)
        self.now = 0.0
        self.queries: list[dict[str, str]] = []

    def get(self, path: str, **query: str) -> dict[str, Any]:
        assert path == "/apis/karpenter.sh/v1/nodeclaims"
        self.queries.append(query)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    def sleep(self, s: float) -> None:
        self.now += s

    def clock(self) -> float:
        return self.now


def claims(*names: str) -> dict[str, Any]:
    return {"items": [{"metadata": {"name": n, "labels": {"karpenter.sh/nodepool": "kaito"}}} for n in names]}


def test_the_drain_wait_ends_when_kaitos_nodeclaims_are_gone():
    cluster = NodeClaims(claims("ws1a2b3c4d5"), claims("ws1a2b3c4d5"), claims())
    wait_until_gone(cluster, 600, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert 0 < cluster.now < 600
    assert cluster.queries[0] == {"labelSelector": "karpenter.sh/nodepool=kaito"}  # KAITO's NodeClaims only
    no_crd = NodeClaims(KubeApiError(404, "the server could not find the requested resource"))
    wait_until_gone(no_crd, 600, sleep=no_crd.sleep, clock=no_crd.clock)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "answer",
    [{"items": 5}, {"items": [5]}, {"items": [{"metadata": []}]}, {"items": [{"metadata": {"name": None}}]}],
    ids=["items not a list", "items not objects", "metadata a list", "no name"],
)
def test_a_malformed_nodeclaim_list_is_waited_out_and_said_in_one_line(answer: dict[str, Any]):
    """Before: a KeyError or TypeError out of the provider (or a list read as empty: gpu-provisioner removed
    while NodeClaims may remain)."""
    cluster = NodeClaims(answer)
    with pytest.raises(RuntimeError) as err:
        wait_until_gone(cluster, 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert str(err.value).startswith("no usable answer from the API server (the API server's list of NodeClaims ")
    assert " after 1m: " in str(err.value)


def test_nodeclaims_that_stay_fail_the_destroy_naming_them():
    cluster = NodeClaims(claims("ws1a2b3c4d5", "ws9f8e7d6c5"))
    with pytest.raises(RuntimeError) as err:
        wait_until_gone(cluster, 60, sleep=cluster.sleep, clock=cluster.clock)  # type: ignore[arg-type]
    assert str(err.value).startswith(
        "KAITO's NodeClaims ws1a2b3c4d5, ws9f8e7d6c5 still exist, so gpu-provisioner is not removed yet (their AKS "
        "agent pools would stay) after 1m"
    )


def test_a_cluster_without_workload_identity_is_named_at_deploy_time(caplog: pytest.LogCaptureFixture):
    off = ProgramMocks(existing={"prod": {"securityProfile": {"workloadIdentity": {"enabled": False}}}})

    def program() -> None:
        cluster = AksCluster("c", AksClusterArgs(resource_group="rg", name="prod", existing=True))
        GpuProvisioner(
            "gpu-provisioner",
            GpuProvisionerArgs(
                cluster_id=cluster.cluster_id,
                location=cluster.location,
                node_resource_group=cluster.node_resource_group,
                oidc_issuer_url=cluster.oidc_issuer_url,
            ),
            opts=pulumi.ResourceOptions(providers=[cluster.provider]),
        )

    run(program, monitor=RecordingMonitor(off))
    assert "the cluster has workload identity off, so gpu-provisioner cannot sign in" in caplog.text
    caplog.clear()
    run(program)
    assert "workload identity off" not in caplog.text


def test_a_deprecated_field_given_beside_the_cluster_goes_over_the_clusters_output():
    """As Karpenter reads its cluster: a flat field given with `cluster` is used, not dropped."""

    def program() -> None:
        cluster = AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2"))
        GpuProvisioner(
            "gpu-provisioner",
            GpuProvisionerArgs(cluster=AksClusterRefArgs.of(cluster), location="westus3", version="0.4.3"),
            opts=pulumi.ResourceOptions(providers=[cluster.provider]),
        )

    ev = run(program)
    env = env_of(ev.named("gpu-provisioner", RELEASE))
    assert env["LOCATION"] == "westus3"  # the given field
    assert env["AZURE_NODE_RESOURCE_GROUP"] == "MC_rg_aks_eastus2"  # the rest from the cluster
