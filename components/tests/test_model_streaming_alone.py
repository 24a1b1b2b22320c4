"""ModelStreaming alone, as a user of the library builds it: with the Azure side of the access
(the federated credentials and the blob role) from an AksCluster's identity, or, where that side
is managed elsewhere, the Kubernetes objects alone; every missing input named before anything is
registered."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from kaito_aks import AksClusterRefArgs, ModelStreaming, ModelStreamingArgs
from kaito_aks.azure.aks_cluster import AksCluster, AksClusterArgs
from kaito_aks.problems import InvalidArgsError
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, run

IDENTITY = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/MC_rg_aks_eastus2/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/aks-agentpool"
)
CLIENT_ID = "11111111-1111-1111-1111-111111111111"


def on_cluster() -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(
        provider=k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(MOCK_KUBECONFIG.format(cluster="dev")))
    )


def test_with_the_azure_side_it_federates_each_namespace_and_grants_blob_reads() -> None:
    args = ModelStreamingArgs(
        namespaces=["llm", "chat"],
        kubelet_identity_client_id=CLIENT_ID,
        kubelet_identity_resource_id=IDENTITY,
        kubelet_identity_object_id="22222222-2222-2222-2222-222222222222",
        oidc_issuer_url="https://eastus2.oic.prod-aks.azure.com/t/i/",
        node_resource_group_id="/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/MC_rg_aks_eastus2",
    )
    ev = run(lambda: ModelStreaming("streaming", args, opts=on_cluster()))
    credentials = ev.of_type("azure-native:managedidentity:FederatedIdentityCredential")
    assert sorted(c.inputs["subject"] for c in credentials) == [
        "system:serviceaccount:chat:kaito-model-streamer",
        "system:serviceaccount:llm:kaito-model-streamer",
    ]
    assert {(c.inputs["resourceName"], c.inputs["resourceGroupName"]) for c in credentials} == {
        ("aks-agentpool", "MC_rg_aks_eastus2")
    }
    (reader,) = ev.of_type("azure-native:authorization:RoleAssignment")
    assert reader.inputs["scope"].endswith("/resourceGroups/MC_rg_aks_eastus2")
    assert len(ev.of_type("kubernetes:core/v1:ServiceAccount")) == 2


def test_the_cluster_as_one_argument_gives_its_identity_issuer_and_node_group() -> None:
    """`cluster`: an AksCluster's outputs in one reference, as the pools and Karpenter take it;
    none of the five inputs is given."""

    def program() -> None:
        aks = AksCluster("c", AksClusterArgs(resource_group="rg", name="aks", location="eastus2"))
        args = ModelStreamingArgs(namespaces=["llm"], cluster=AksClusterRefArgs.of(aks))
        ModelStreaming("streaming", args, opts=pulumi.ResourceOptions(providers=[aks.provider]))

    ev = run(program)
    (credential,) = ev.of_type("azure-native:managedidentity:FederatedIdentityCredential")
    assert credential.inputs["issuer"] == "https://oidc.example/c/"  # the cluster's OIDC issuer
    assert (credential.inputs["resourceName"], credential.inputs["resourceGroupName"]) == (
        "aks-agentpool",
        "MC_rg_aks_eastus2",
    )
    reader = ev.named("streaming-blob-reader", "azure-native:authorization:RoleAssignment")
    assert (
        reader.inputs["scope"] == "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/MC_rg_aks_eastus2"
    )


def test_without_the_cluster_or_its_client_id_it_is_refused() -> None:
    with pytest.raises(
        InvalidArgsError,
        match=r"args.kubelet_identity_client_id: required: give cluster \(AksClusterRefArgs.of\(cluster\)\)",
    ):
        run(lambda: ModelStreaming("streaming", ModelStreamingArgs(namespaces=["llm"], azure_access=False)))


def test_without_the_azure_side_it_makes_the_kubernetes_objects_alone() -> None:
    """For a cluster whose identity's federation and roles are made elsewhere (KAITO's guide,
    Steps 3 and 4): the client id is all it needs, and nothing of Azure is registered."""
    args = ModelStreamingArgs(namespaces=["llm"], kubelet_identity_client_id=CLIENT_ID, azure_access=False)
    ev = run(lambda: ModelStreaming("streaming", args, opts=on_cluster()))
    assert [r.type for r in ev.resources if r.type.startswith("azure-native:")] == []
    (sc,) = ev.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
    assert (sc.inputs["metadata"]["name"], sc.inputs["provisioner"]) == ("blob-fuse", "blob.csi.azure.com")
    (sa,) = ev.of_type("kubernetes:core/v1:ServiceAccount")
    assert sa.inputs["metadata"]["annotations"] == {"azure.workload.identity/client-id": CLIENT_ID}


def test_the_azure_side_without_its_inputs_is_refused_naming_each() -> None:
    monitor = RecordingMonitor(ProgramMocks())
    args = ModelStreamingArgs(namespaces=["llm"], kubelet_identity_client_id=CLIENT_ID)
    with pytest.raises(InvalidArgsError) as err:
        run(lambda: ModelStreaming("streaming", args, opts=on_cluster()), monitor=monitor)
    message = str(err.value)
    for name in (
        "kubelet_identity_resource_id",
        "kubelet_identity_object_id",
        "oidc_issuer_url",
        "node_resource_group_id",
    ):
        assert f"args.{name}: needed to make the federated credentials and the blob role (azure_access)" in message
    assert [r for r in monitor.registrations if not r.type.startswith("pulumi:providers:")] == [], "registered"
