"""What KAITO's ModelMirror and ModelStreaming need on an AKS cluster besides their feature gates
(KAITO 0.11+; website/docs/model-mirror-streaming.md@v0.12.0, "Environment Setup"): with the gates
on, KAITO mirrors each vLLM preset's Hugging Face weights once into a blobfuse volume while the
GPU node is made (a cluster-scoped ModelMirror, named by the first 6 hex characters of the
model id's SHA-256) and the inference pod streams them (`--load-format=runai_streamer`).

- the StorageClass KAITO's mirror volumes use (`blob.csi.azure.com`, BlobFuse2, block cache),
  as KAITO's guide writes it; the cluster needs the Blob CSI driver (`AksClusterArgs.blob_csi_driver`);
- in each namespace of a streaming model, the ServiceAccount the download Job and the inference
  pod run as, annotated with the kubelet identity's client id, and the federated credential that
  lets its tokens sign in as that identity (KAITO checks both before it mirrors:
  pkg/workspace/inference/modelstreaming/azure/wiblob.go@v0.12.0 ValidateAuth);
- Storage Blob Data Reader for the kubelet identity on the node resource group, where the CSI
  driver creates the storage account.

Point KAITO at them with the chart values `defaultModelMirrorStorageClass` and
`defaultStreamingServiceAccount` (`chart_values`), or each model's annotations
(`model_annotations`). Where the identity's federation and roles are managed elsewhere,
`azure_access=False` makes the Kubernetes objects alone (the kubelet identity's client id is all
it needs). Which ModelMirror holds a model's weights, and what it reports:
kaito_aks.kaito.modelmirror."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Annotated, NamedTuple, cast

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, managedidentity

from kaito_aks import catalog
from kaito_aks.azure.cluster_ref import AksClusterRefArgs
from kaito_aks.azure.workload_identity import TOKEN_AUDIENCE, role_definition_id, subject_of
from kaito_aks.kaito.modelmirror import GATE as MIRROR_GATE
from kaito_aks.kaito.modelmirror import mirrored_model_id as mirrored_model_id
from kaito_aks.kaito.modelmirror import model_mirror_name as model_mirror_name
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import DNS_LABEL, Input, MaxItems, args_class
from kaito_aks.validation import checked_args

TYPE = "kaito-aks:index:ModelStreaming"
FORMER_TYPES: tuple[str, ...] = ()
GATES = (MIRROR_GATE, "ModelStreaming")  # pkg/featuregates/featuregates.go@v0.11.0 (both off by default)
FIRST_RELEASE = (0, 11)
CSI_DRIVER = "blob.csi.azure.com"
STORAGE_CLASS = "blob-fuse"  # KAITO's guide's names
SERVICE_ACCOUNT = "kaito-model-streamer"
READER_ROLE = "Storage Blob Data Reader"
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
# per-Workspace annotations (pkg/modelmirror/consts/consts.go@v0.12.0)
STREAMING_ANNOTATION = "kaito.sh/model-streaming"  # "disabled": opt out; immutable once created
STORAGE_CLASS_ANNOTATION = "kaito.sh/model-mirror-storage-class"
SERVICE_ACCOUNT_ANNOTATION = "kaito.sh/streaming-service-account"
# The StorageClass of KAITO's guide (website/docs/model-mirror-streaming.md@v0.12.0, Step 2)
MOUNT_OPTIONS = [
    "-o allow_other",
    "-o attr_timeout=120",
    "-o entry_timeout=120",
    "-o negative_timeout=120",
    "--cancel-list-on-mount-seconds=10",
    "--use-attr-cache=true",
    "--block-cache",
    "--block-cache-block-size=16",
    "--block-cache-pool-size=8192",
    "--block-cache-prefetch=11",
]
_IDENTITY_ID = re.compile(
    r"/subscriptions/[^/]+/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.ManagedIdentity/"
    r"userAssignedIdentities/(?P<name>[^/]+)",
    re.IGNORECASE,
)


def streaming_problem(version: str) -> str | None:
    """Why a KAITO release cannot mirror and stream weights, or None."""
    chart = catalog.kaito_charts().get(version)
    if chart is None or chart.minor < FIRST_RELEASE or not all(g in chart.known_gates for g in GATES):
        return (
            f"KAITO {version} has no ModelMirror or ModelStreaming (the gates came in 0.11.0: "
            "pkg/featuregates/featuregates.go@v0.11.0); use 0.11.0 or 0.12.0, or leave model streaming off"
        )
    return None


def chart_values(storage_class: str = STORAGE_CLASS, service_account: str = SERVICE_ACCOUNT) -> dict[str, object]:
    """The KAITO chart values that turn streaming on for every vLLM preset (charts/kaito/workspace/
    values.yaml@v0.11.0+: featureGates, defaultModelMirrorStorageClass, defaultStreamingServiceAccount)."""
    return {
        "featureGates": dict.fromkeys(GATES, True),
        "defaultModelMirrorStorageClass": storage_class,
        "defaultStreamingServiceAccount": service_account,
    }


def model_annotations(storage_class: str = STORAGE_CLASS, service_account: str = SERVICE_ACCOUNT) -> dict[str, str]:
    """A streaming model's annotations naming its StorageClass and ServiceAccount, so that it does
    not depend on the defaults of a KAITO installed elsewhere."""
    return {STORAGE_CLASS_ANNOTATION: storage_class, SERVICE_ACCOUNT_ANNOTATION: service_account}


@args_class
class ModelStreamingArgs:
    """The StorageClass, the per-namespace ServiceAccounts and federated credentials, and the
    blob read role that KAITO's model mirroring and streaming need on AKS."""

    namespaces: Annotated[list[Annotated[str, DNS_LABEL]], MaxItems(500)]
    """The namespaces of the models that stream (each gets the ServiceAccount, and with
    `azure_access` a federated credential)."""
    kubelet_identity_client_id: Input[str] | None = None
    """The client id of the kubelet identity (`AksCluster.kubelet_identity_client_id`), the identity
    the pods sign in as: the ServiceAccounts' azure.workload.identity/client-id annotation. Needed
    without `cluster`."""
    kubelet_identity_resource_id: Input[str] | None = None
    """Its resource id (`AksCluster.kubelet_identity_resource_id`), for the federated credentials.
    Needed with `azure_access`."""
    kubelet_identity_object_id: Input[str] | None = None
    """Its object id (`AksCluster.kubelet_identity_object_id`), for the role assignment. Needed
    with `azure_access`."""
    oidc_issuer_url: Input[str] | None = None
    """The cluster's OIDC issuer (`AksCluster.oidc_issuer_url`). Needed with `azure_access`."""
    node_resource_group_id: Input[str] | None = None
    """The resource id of the cluster's node resource group, where the Blob CSI driver creates the
    storage account (/subscriptions/<id>/resourceGroups/ and the AksCluster's node resource group).
    Needed with `azure_access`."""
    cluster: AksClusterRefArgs | None = None
    """The AKS cluster (`AksClusterRefArgs.of(cluster)`), instead of the five inputs above: its
    kubelet identity, OIDC issuer and node resource group."""
    azure_access: bool = True
    """Also make the Azure side of the access: a federated identity credential on the kubelet
    identity per namespace, and Storage Blob Data Reader on the node resource group (the four
    inputs above). False: those are made elsewhere (KAITO's guide, Steps 3 and 4: `az identity
    federated-credential create`, `az role assignment create`) and only the StorageClass and the
    ServiceAccounts are made here; without them KAITO's download Job and the pods cannot read the
    blobs."""
    kaito_version: str = "0.12.0"
    """The KAITO release that mirrors and streams (0.11.0 or 0.12.0)."""
    storage_class: Annotated[str, DNS_LABEL] = STORAGE_CLASS
    """The StorageClass to create (KAITO's guide calls it blob-fuse)."""
    service_account: Annotated[str, DNS_LABEL] = SERVICE_ACCOUNT
    """The ServiceAccount to create in each namespace (KAITO's guide calls it kaito-model-streamer)."""
    labels: dict[str, str] = field(default_factory=dict[str, str])
    """Labels on the Kubernetes objects."""


AZURE_ACCESS_INPUTS = (
    "kubelet_identity_resource_id",
    "kubelet_identity_object_id",
    "oidc_issuer_url",
    "node_resource_group_id",
)


def model_streaming_problems(args: ModelStreamingArgs) -> list[Problem]:
    problems: list[Problem] = []
    why = streaming_problem(args.kaito_version)
    if why is not None:
        problems.append(Problem.at("kaito_version", why, "model-streaming"))
    if args.cluster is None and args.kubelet_identity_client_id is None:
        why = "required: give `cluster` (AksClusterRefArgs.of(cluster)), or the kubelet identity's client id"
        problems.append(Problem.at("kubelet_identity_client_id", why, "required"))
    if args.azure_access and args.cluster is None:
        for field_name in AZURE_ACCESS_INPUTS:
            if getattr(args, field_name) is None:
                problems.append(
                    Problem.at(
                        field_name,
                        "needed to make the federated credentials and the blob role (azure_access): give `cluster` "
                        "(AksClusterRefArgs.of(cluster)) or this; or set azure_access false where they are made "
                        "elsewhere",
                        "required",
                    )
                )
    seen: set[str] = set()
    for i, ns in enumerate(args.namespaces):
        if ns in seen:
            problems.append(Problem.at(("namespaces", i), f"{ns} is listed twice", "model-streaming"))
        seen.add(ns)
    return problems


class _Access(NamedTuple):
    """What the pieces read of the cluster: its `cluster`, or the five inputs."""

    client_id: Input[str]
    resource_id: Input[str]
    object_id: Input[str]
    issuer: Input[str]
    node_resource_group_id: Input[str]

    @classmethod
    def of(cls, args: ModelStreamingArgs) -> _Access:
        c = args.cluster
        if c is None:
            given = (
                args.kubelet_identity_client_id,
                args.kubelet_identity_resource_id,
                args.kubelet_identity_object_id,
                args.oidc_issuer_url,
                args.node_resource_group_id,
            )
            return cls(*(cast(Input[str], v) for v in given))
        # (AKS makes the node resource group in the cluster's subscription)
        group = pulumi.Output.all(c.cluster_id, c.node_resource_group).apply(
            lambda a: f"{a[0].split('/resourceGroups/')[0]}/resourceGroups/{a[1]}"
        )
        return cls(
            cast(Input[str], c.kubelet_identity_client_id),
            cast(Input[str], c.kubelet_identity_resource_id),
            cast(Input[str], c.kubelet_identity_object_id),
            c.oidc_issuer_url,
            group,
        )


def _identity_part(resource_id: str, part: str) -> str:
    match = _IDENTITY_ID.fullmatch(resource_id)
    if match is None:  # known only at `up` under the mocks, or not a user-assigned identity
        return resource_id if part == "name" else ""
    return match[part]


class ModelStreaming(pulumi.ComponentResource):
    """The Azure and Kubernetes pieces of KAITO's ModelMirror and ModelStreaming (see the module).
    Deploy the models after it: KAITO checks the ServiceAccount when it first mirrors a model."""

    storage_class: pulumi.Output[str]
    """The StorageClass's name."""
    service_account: pulumi.Output[str]
    """The ServiceAccount's name (in every namespace)."""

    def __init__(self, name: str, args: ModelStreamingArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args("ModelStreaming", name, ModelStreamingArgs, args, model_streaming_problems)
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        child = child_options(self, opts)
        labels = {"app.kubernetes.io/managed-by": "pulumi", **checked.labels}
        access = _Access.of(checked)
        self.storage = k8s.storage.v1.StorageClass(
            f"{name}/storageclass",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=checked.storage_class, labels=labels),
            provisioner=CSI_DRIVER,
            allow_volume_expansion=True,
            parameters={"protocol": "fuse2", "skuName": "Premium_LRS"},
            reclaim_policy="Retain",
            mount_options=MOUNT_OPTIONS,
            opts=child,
        )
        self.service_accounts: list[k8s.core.v1.ServiceAccount] = []
        for ns in checked.namespaces:
            self.service_accounts.append(
                k8s.core.v1.ServiceAccount(
                    f"{name}/{ns}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=checked.service_account,
                        namespace=ns,
                        labels=labels,
                        annotations={CLIENT_ID_ANNOTATION: access.client_id},
                    ),
                    opts=child,
                )
            )
        self.credentials: list[managedidentity.FederatedIdentityCredential] = []
        self.reader: authorization.RoleAssignment | None = None
        if checked.azure_access:
            self._azure_access(name, checked, access, child)
        self.storage_class = pulumi.Output.from_input(checked.storage_class)
        self.service_account = pulumi.Output.from_input(checked.service_account)
        self.register_outputs({"storageClass": self.storage_class, "serviceAccount": self.service_account})

    def _azure_access(
        self, name: str, args: ModelStreamingArgs, access: _Access, child: pulumi.ResourceOptions
    ) -> None:
        """Each namespace's federated credential on the kubelet identity, and its blob read role."""
        identity_id = pulumi.Output.from_input(access.resource_id)
        group = identity_id.apply(lambda i: _identity_part(i, "group"))
        identity = identity_id.apply(lambda i: _identity_part(i, "name"))
        for ns in args.namespaces:
            self.credentials.append(
                managedidentity.FederatedIdentityCredential(
                    f"{name}-{ns}-federation",
                    federated_identity_credential_resource_name=f"streaming-{ns}-{args.service_account}",
                    resource_name_=identity,
                    resource_group_name=group,
                    issuer=access.issuer,
                    subject=subject_of(ns, args.service_account),
                    audiences=[TOKEN_AUDIENCE],
                    opts=child,
                )
            )
        scope = pulumi.Output.from_input(access.node_resource_group_id)
        self.reader = authorization.RoleAssignment(
            f"{name}-blob-reader",
            principal_id=access.object_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            role_definition_id=scope.apply(lambda s: role_definition_id(s, READER_ROLE)),
            scope=scope,
            opts=child,
        )
