"""Test your Pulumi program that uses kaito-aks without an engine, a cloud account or a cluster.

`run(program)` runs `program` under Pulumi's mock engine with a recording monitor: every
registration is kept exactly as the engine would receive it (type, name, parent, provider,
dependencies, options, inputs, secrets still marked as secrets), and the cloud and cluster
stand-ins answer the invokes the components make (AKS credentials and lookups, the Azure
client config) with plausible values.

    from kaito_aks.testing import run

    def test_phi_serves_two_replicas():
        result = run(my_program)
        workspaces = result.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
        assert len(workspaces) == 2

`ProgramMocks` is a `pulumi.runtime.Mocks`, usable with `pulumi.runtime.set_mocks` on its own.
What pulumi-azure-native has no invoke for (a region's quota, usage and VM sizes, read by
`kaito_aks.azure.quota` from Azure Resource Manager) the mocks answer from recorded ARM answers
in ARM's own shapes (`ProgramMocks(arm={path: answer})`, see `kaito_aks.azure.arm.RecordedArm`);
without them, `run` reads nothing from Azure and the checks say they were not made.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pulumi
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.proto import alias_pb2, resource_pb2
from pulumi.runtime.stack import run_in_stack

# The SDK runs a program synchronously with this (pulumi.runtime.test does too); it has no public equivalent.
from pulumi.runtime.sync_await import _sync_await  # pyright: ignore[reportPrivateUsage]

from kaito_aks.azure.arm import OFFLINE, RecordedArm, reading_with
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.waits.gpu_nodes import OUTPUTS as GPU_NODES_OUTPUTS
from kaito_aks.waits.gpu_nodes import GpuNodesReady

GPU_NODES_TYPE = GpuNodesReady.type_token()
# the SDK names a dynamic resource's type pulumi-python:dynamic/<module>:<name>
BOOTSTRAP_TOKEN_TYPE = "pulumi-python:dynamic/kaito-aks:BootstrapToken"
SSH_KEY_TYPE = "pulumi-python:dynamic/kaito-aks:SshPublicKey"
AFTER_UP = "(known after pulumi up)"
PROJECT = "test"

# Wire markers of the Pulumi property protocol (sdk/go/common/resource/sig).
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


@dataclass(frozen=True)
class Secret:
    """A value the program marked secret (the record keeps it; renderers must not print it)."""

    value: Any

    def __repr__(self) -> str:
        return "Secret(***)"


@dataclass
class Registration:
    """One resource as the engine would receive it."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str
    provider: str  # "<provider urn>::<id>" or "" (ambient default provider)
    dependencies: list[str]
    inputs: dict[str, Any]  # secrets wrapped in Secret
    options: dict[str, Any]
    # input name -> the resources its value came from (an explicit depends_on is in none of them)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict[str, list[str]])

    @property
    def provider_urn(self) -> str:
        return self.provider.rsplit("::", 1)[0] if self.provider else ""


@dataclass
class Evaluation:
    stack: str
    resources: list[Registration]
    outputs: dict[str, Any]  # stack outputs, secrets wrapped in Secret
    component_outputs: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.resources if r.type == type_]

    def by_urn(self, urn: str) -> Registration:
        return next(r for r in self.resources if r.urn == urn)

    def named(self, name: str, type_: str | None = None) -> Registration:
        matches = [r for r in self.resources if r.name == name and (type_ is None or r.type == type_)]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources named {name!r} of type {type_!r}")
        return matches[0]


def reveal(value: Any) -> Any:
    """The same value with secrets unwrapped (for assertions on secret contents)."""
    if isinstance(value, Secret):
        return reveal(value.value)
    if is_dict(value):
        return {k: reveal(v) for k, v in value.items()}
    if is_list(value):
        return [reveal(v) for v in value]
    return value


def _value(v: struct_pb2.Value) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return _struct(v.struct_value)
    if kind == "list_value":
        return [_value(x) for x in v.list_value.values]
    if kind == "number_value":
        n = v.number_value
        return int(n) if n.is_integer() else n
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    return None


def _struct(message: struct_pb2.Struct | None) -> Any:
    """A protobuf Struct from the wire as Python, keeping secrets as Secret."""
    if message is None:
        return {}
    out = {k: _value(v) for k, v in message.fields.items()}
    if out.get(SIG_KEY) == SECRET_SIG:
        return Secret(out.get("value"))
    return out


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, recording each registration whole. Inputs are decoded once and
    echoed back as the resource's state (secrets stay secret), plus the computed outputs the
    mocks add, which keeps evaluation fast for stacks with thousands of resources."""

    def __init__(self, mocks: ProgramMocks):
        super().__init__(mocks)
        self.program_mocks = mocks
        self.registrations: list[Registration] = []
        self.outputs: dict[str, dict[str, Any]] = {}

    def RegisterResource(  # noqa: N802 (gRPC method name)
        self, request: resource_pb2.RegisterResourceRequest
    ) -> resource_pb2.RegisterResourceResponse:
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        inputs = _struct(request.object)
        id_, computed = self.program_mocks.computed(request.type, request.name, reveal(inputs))
        state = struct_pb2.Struct()
        state.CopyFrom(request.object)
        if computed:
            state.update(computed)
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_, {**reveal(inputs), **computed})
        self.registrations.append(
            Registration(
                urn=urn,
                type=request.type,
                name=request.name,
                custom=request.custom,
                parent=request.parent,
                provider=request.provider,
                dependencies=sorted(request.dependencies),
                inputs=inputs,
                options={
                    "protect": request.protect,
                    "deleteBeforeReplace": request.deleteBeforeReplace,
                    "replaceOnChanges": sorted(request.replaceOnChanges),
                    "ignoreChanges": sorted(request.ignoreChanges),
                    "retainOnDelete": request.retainOnDelete,
                    "additionalSecretOutputs": sorted(request.additionalSecretOutputs),
                    "aliases": [json_format.MessageToDict(a) for a in _aliases(request)],
                    "version": request.version,
                },
                property_dependencies={
                    k: sorted(v.urns) for k, v in request.propertyDependencies.items() if len(v.urns)
                },
            )
        )
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=state)

    def RegisterResourceOutputs(self, request: resource_pb2.RegisterResourceOutputsRequest) -> empty_pb2.Empty:  # noqa: N802
        self.outputs[request.urn] = _struct(request.outputs)
        return empty_pb2.Empty()


class _Aliased(Protocol):
    """A RegisterResourceRequest's aliases (its stub takes their type from pulumi.alias_pb2, which does not exist)."""

    @property
    def aliases(self) -> Sequence[alias_pb2.Alias]: ...


class _ResourceArgs(Protocol):
    """pulumi_mocks.MockResourceArgs, its inputs typed (the SDK declares a bare dict)."""

    typ: str
    name: str
    inputs: dict[str, Any]


class _CallArgs(Protocol):
    """pulumi_mocks.MockCallArgs, its args typed (the SDK declares a bare dict)."""

    token: str
    args: dict[str, Any]


def _aliases(request: _Aliased) -> Sequence[alias_pb2.Alias]:
    return request.aliases


class ProgramMocks(pulumi_mocks.Mocks):
    """Cloud and cluster stand-ins: a resource's state is its inputs plus the few computed
    outputs the program reads (Helm release status, Azure names, AKS credentials).
    `existing`: what Azure reports for an existing cluster, by name, over the defaults (e.g.
    {"aks": {"aiToolchainOperatorProfile": {"enabled": True}}}). `agent_pools`: what Azure reports
    for a pool, by "<cluster>/<pool>", over the pool as the program created it (e.g.
    {"aks/system": {"count": 5}}: someone scaled it by hand). `arm`: recorded Azure Resource
    Manager answers by request path, in ARM's shapes (e.g. the region's
    `/subscriptions/<MOCK_SUBSCRIPTION>/providers/Microsoft.Compute/locations/eastus/usages`
    answer, {"value": [...]}); None: Azure is not read at all (offline)."""

    def __init__(
        self,
        existing: Mapping[str, Mapping[str, Any]] | None = None,
        agent_pools: Mapping[str, Mapping[str, Any]] | None = None,
        arm: Mapping[str, Any] | None = None,
    ) -> None:
        self.existing = dict(existing or {})
        self.agent_pools = dict(agent_pools or {})
        self.arm = RecordedArm({k.lower(): v for k, v in arm.items()}) if arm is not None else None
        self.created_pools: dict[str, dict[str, Any]] = {}  # "<cluster>/<pool>" -> as created

    def computed(self, typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if typ == "kubernetes:helm.sh/v3:Release":
            status = {
                "name": inputs.get("name", name),
                "namespace": inputs.get("namespace", "default"),
                "version": inputs.get("version", ""),
                "status": "deployed",
            }
            return f"{name}-id", {"status": status}
        if typ == "azure-native:containerservice:ManagedCluster":
            fqdn = api_server_fqdn(inputs.get("dnsPrefix", name), inputs.get("location") or "eastus")
            issuer = {**inputs.get("oidcIssuerProfile", {}), "issuerURL": f"https://oidc.example/{name}/"}
            cluster = inputs.get("resourceName", name)
            profiles: list[dict[str, Any]] = inputs.get("agentPoolProfiles") or []
            for profile in profiles:
                self.created_pools[f"{cluster}/{profile.get('name')}"] = dict(profile)
            group = f"MC_{inputs.get('resourceGroupName')}_{cluster}_{inputs.get('location') or 'eastus'}"
            return cluster_id(inputs.get("resourceGroupName"), cluster), {
                "fqdn": fqdn,
                "name": cluster,
                "oidcIssuerProfile": issuer,
                "nodeResourceGroup": group,
                "location": inputs.get("location") or "eastus",
                # AKS's patch of the minor asked for, or of its default minor
                "currentKubernetesVersion": f"{inputs.get('kubernetesVersion') or MOCK_KUBERNETES_MINOR}.{MOCK_PATCH}",
                "identity": {**inputs.get("identity", {}), "principalId": AFTER_UP, "tenantId": MOCK_TENANT},
                "identityProfile": kubelet_identity(group),
                "networkProfile": network_profile(inputs.get("networkProfile", {})),
            }
        if typ == "azure-native:managedidentity:UserAssignedIdentity":
            group, identity = inputs.get("resourceGroupName"), inputs.get("resourceName", name)
            # Azure assigns these when it creates the identity
            return (
                f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{group}/providers/"
                f"Microsoft.ManagedIdentity/userAssignedIdentities/{identity}",
                {"name": identity, "clientId": AFTER_UP, "principalId": AFTER_UP, "tenantId": MOCK_TENANT},
            )
        if typ == "azure-native:network:VirtualNetwork":
            group, vnet = inputs.get("resourceGroupName"), inputs.get("virtualNetworkName", name)
            return (
                f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.Network/virtualNetworks/{vnet}",
                {
                    "name": vnet,
                    "resourceGuid": AFTER_UP,
                },
            )
        if typ == "azure-native:network:Subnet":
            group, vnet = inputs.get("resourceGroupName"), inputs.get("virtualNetworkName")
            subnet = inputs.get("subnetName", name)
            return (
                f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.Network/"
                f"virtualNetworks/{vnet}/subnets/{subnet}",
                {"name": subnet},
            )
        if typ == "azure-native:resources:ResourceGroup":
            return f"{name}-id", {"name": inputs.get("resourceGroupName", name)}
        if typ == "azure-native:authorization:RoleDefinition":  # Azure names it by the GUID given
            guid = inputs.get("roleDefinitionId", name)
            return f"{inputs.get('scope')}/providers/Microsoft.Authorization/roleDefinitions/{guid}", {"name": guid}
        if typ == "azure-native:containerservice:AgentPool":
            pool = {k: v for k, v in inputs.items() if k not in ("resourceName", "resourceGroupName", "agentPoolName")}
            self.created_pools[f"{inputs.get('resourceName')}/{inputs.get('agentPoolName', name)}"] = pool
            return f"{name}-id", {"name": inputs.get("agentPoolName", name)}
        if typ == BOOTSTRAP_TOKEN_TYPE:  # made at `pulumi up`
            return f"{name}-id", {
                "token_id": AFTER_UP,
                "token_secret": AFTER_UP,
                "issued": AFTER_UP,
                "expires": AFTER_UP,
            }
        if typ == SSH_KEY_TYPE:
            return f"{name}-id", {"public_key_openssh": AFTER_UP}
        if typ == GPU_NODES_TYPE:  # what the cluster's nodes say, at `pulumi up`
            return f"{name}-id", dict.fromkeys(GPU_NODES_OUTPUTS, AFTER_UP)
        return f"{name}-id", {}

    def new_resource(self, args: _ResourceArgs) -> tuple[str, dict[str, Any]]:
        id_, computed = self.computed(args.typ, args.name, args.inputs)
        return id_, {**args.inputs, **computed}

    # The SDK's Invoke takes a plain dict as well as the (dict, failures) tuple Mocks.call is typed with.
    def call(self, args: _CallArgs) -> dict[str, Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        if args.token in (
            "azure-native:containerservice:listManagedClusterUserCredentials",
            "azure-native:containerservice:listManagedClusterAdminCredentials",
        ):
            kubeconfig = MOCK_KUBECONFIG.format(cluster=args.args.get("resourceName", "aks"))
            return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(kubeconfig.encode()).decode()}]}
        if args.token == "azure-native:authorization:getClientConfig":  # who runs `pulumi up`
            return {
                "clientId": AFTER_UP,
                "objectId": AFTER_UP,
                "subscriptionId": MOCK_SUBSCRIPTION,
                "tenantId": MOCK_TENANT,
            }
        if args.token == "azure-native:authorization:getClientToken":  # a user's (delegated) token
            return {"token": MOCK_USER_TOKEN}
        if args.token == "azure-native:containerservice:getManagedCluster":
            name, group = args.args.get("resourceName", "aks"), args.args.get("resourceGroupName")
            return {
                "name": name,
                "id": cluster_id(group, name),
                "oidcIssuerProfile": {"enabled": True, "issuerURL": f"https://oidc.example/{name}/"},
                "securityProfile": {"workloadIdentity": {"enabled": True}},
                "nodeResourceGroup": f"MC_{group}_{name}_eastus",
                "location": "eastus",
                "currentKubernetesVersion": f"{MOCK_KUBERNETES_MINOR}.{MOCK_PATCH}",
                "fqdn": api_server_fqdn(name, "eastus"),
                "identityProfile": kubelet_identity(f"MC_{group}_{name}_eastus"),
                "networkProfile": network_profile({"networkPlugin": "azure", "networkPluginMode": "overlay"}),
                **self.existing.get(name, {}),
            }
        if args.token == "azure-native:containerservice:getAgentPool":  # as created, unless told otherwise
            key = f"{args.args.get('resourceName')}/{args.args.get('agentPoolName')}"
            return {
                "name": args.args.get("agentPoolName"),
                **self.created_pools.get(key, {}),
                **self.agent_pools.get(key, {}),
            }
        if args.token == "azure-native:network:getVirtualNetwork":
            return {"name": args.args.get("virtualNetworkName"), "resourceGuid": AFTER_UP}
        return {}


MOCK_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"  # stand-ins: Azure's, at `pulumi up`
# An Entra access token's shape (header.claims.signature), its claims a signed-in user's: no key, no signature.
MOCK_USER_TOKEN = ".".join(
    base64.urlsafe_b64encode(part.encode()).decode().rstrip("=")
    for part in ('{"alg":"none"}', '{"idtyp":"user","scp":"user_impersonation"}', "stand-in")
)
MOCK_KUBERNETES_MINOR = "1.34"  # AKS's default minor, as the mocks answer
MOCK_PATCH = "2"
MOCK_TENANT = AFTER_UP


def api_server_fqdn(dns_prefix: str, location: str) -> str:
    """A cluster's API server name as AKS forms it: <DNS prefix>-<8 hex>.hcp.<region>.azmk8s.io."""
    return f"{dns_prefix}-{hashlib.sha256(dns_prefix.encode()).hexdigest()[:8]}.hcp.{location}.azmk8s.io"


def kubelet_identity(node_resource_group: str) -> dict[str, Any]:
    """The identity AKS makes for a cluster's kubelets, in its node resource group."""
    resource_id = (
        f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{node_resource_group}/providers/"
        "Microsoft.ManagedIdentity/userAssignedIdentities/aks-agentpool"
    )
    return {"kubeletidentity": {"clientId": AFTER_UP, "objectId": AFTER_UP, "resourceId": resource_id}}


def network_profile(given: Mapping[str, Any]) -> dict[str, Any]:
    """The network profile AKS reports: what was given, with AKS's data plane when none was."""
    return {"networkDataplane": "azure", **given}


def cluster_id(group: str | None, name: str) -> str:
    """An AKS cluster's resource id, as the mocks report it."""
    return f"/subscriptions/{MOCK_SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.ContainerService/managedClusters/{name}"


MOCK_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: {cluster}
  cluster: {{server: "https://{cluster}.hcp.example.azmk8s.io:443"}}
contexts:
- name: {cluster}
  context: {{cluster: {cluster}, user: clusterUser}}
current-context: {cluster}
users:
- name: clusterUser
  user: {{token: mock-token}}
"""


# Environment the SDKs read behind a program's back (the kubernetes Provider copies KUBECONFIG
# into its inputs when given no kubeconfig; the runtime reads config from PULUMI_CONFIG): hidden
# during a run, so its results depend on what the test gives, not on the machine.
AMBIENT_ENV = ("KUBECONFIG", "PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS")


@contextlib.contextmanager
def _hermetic_env() -> Generator[None, None, None]:
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k in AMBIENT_ENV or k.startswith("PULUMI_K8S_")}
    try:
        yield
    finally:
        os.environ.update(saved)


def _discard(_: object) -> None:
    """A program's return value is not an output (a Pulumi program exports what it means)."""


def run(
    program: Callable[[], object],
    *,
    project: str = PROJECT,
    stack: str = "test",
    config: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    monitor: RecordingMonitor | None = None,
) -> Evaluation:
    """Run `program` (it declares resources, as a Pulumi program does) under the mock engine and
    return what it registered and exported. `config`/`secrets`: config values by full key
    ("kaito-aks:workspaces"), as text. Raises what the program raises; pass your own `monitor`
    to look at what was registered before that."""
    pulumi_settings.reset_options()  # a fresh runtime: no root stack, no pending work
    monitor = monitor or RecordingMonitor(ProgramMocks())
    pulumi_mocks.set_mocks(monitor.mocks, project=project, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({**(config or {}), **(secrets or {})}, list(secrets or {}))
    pulumi_settings.ROOT.set(None)  # set_mocks made a root stack; run_in_stack makes its own
    with _hermetic_env(), reading_with(monitor.program_mocks.arm or OFFLINE):
        _sync_await(run_in_stack(lambda: _discard(program())))
    stack_urn = f"urn:pulumi:{stack}::{project}::pulumi:pulumi:Stack::{project}-{stack}"
    outputs = monitor.outputs.pop(stack_urn, {})
    return Evaluation(stack=stack, resources=monitor.registrations, outputs=outputs, component_outputs=monitor.outputs)
