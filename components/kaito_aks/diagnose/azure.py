"""The Azure side of the chain: what Azure answered when asked for a model's node, wherever it
shows. gpu-provisioner makes an AKS agent pool per NodeClaim (its `provisioningState` and
`status.provisioningError` in ARM); Karpenter makes VMs; either writes Azure's error into the
NodeClaim's Launched condition (or, when Karpenter gives up on a size, into an
InsufficientCapacityError event before deleting the NodeClaim); from 0.12 KAITO copies it into the
Workspace's NodeClaimReady. The same words are judged the same way in each place: by Azure's error
code, else by the phrases Azure and the provisioners use."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from kaito_aks.diagnose.chain import Finding
from kaito_aks.diagnose.registry import detector
from kaito_aks.waits.answers import field_at, text_at

# An ARM error code as it appears in an error's text: azcore's ResponseError ("ERROR CODE:
# QuotaExceeded"), ARM's JSON ("code": "QuotaExceeded"), the older SDKs (Code="QuotaExceeded").
_CODE = re.compile(r"""(?:ERROR CODE:\s*|"code"\s*:\s*"|Code=")([A-Za-z][A-Za-z0-9_]+)""")
_FAMILY = re.compile(r"\b(standard\w*Family|Total Regional|LowPriority)\b", re.IGNORECASE)
_LOCATION = re.compile(r"Location:\s*([a-z0-9]+)")


def error_code(code: str, message: str) -> str:
    """The ARM error code: the one given, else the first the message quotes ('' when none)."""
    if code:
        return code
    hit = _CODE.search(message)
    return hit.group(1) if hit else ""


def _said(code: str, message: str) -> str:
    return f"{code}: {message}" if code and code not in message else message


@detector("azure-quota", "azure")
def azure_quota(code: str, message: str) -> Finding | None:
    """The subscription's vCPU quota is used up: for the VM family, the region, or spot. ARM
    answers OperationNotAllowed with "... Family Cores quota", "exceeding approved Total Regional
    Cores quota" or "LowPriorityCores", or (AKS, creating an agent pool) QuotaExceeded with the
    same words (azure-sdk-for-go-extensions pkg/errors/consts.go:6,16-19@v0.6.0, the phrases
    karpenter-provider-azure matches: pkg/providers/instance/offerings/resperrorhandlers.go:46-79@v1.12.0);
    Karpenter's own words for it say "vCPU quota"
    (pkg/providers/instance/offerings/commonerrorhandlers.go:155,183,298@v1.12.0)."""
    code = error_code(code, message)
    terms = ("Family Cores quota", "Total Regional Cores quota", "LowPriorityCores", "vCPU quota", "Quota increase")
    if code != "QuotaExceeded" and not any(t.lower() in message.lower() for t in terms):
        return None
    family = _FAMILY.search(message)
    where = _LOCATION.search(message)
    of = f" for {family.group(1)}" if family else ""
    region = f" in {where.group(1)}" if where else " in the cluster's region"
    return Finding(
        "azure-quota",
        _said(code, message),
        f"the subscription has no vCPU quota left{of}{region}: Azure refuses to create the node",
        f"request more quota{of}{region} (Azure portal > Quotas > Compute, or `az quota update`), or use a VM size "
        "of a family with quota (instanceType), or another region",
    )


@detector("azure-sku-unavailable", "azure")
def azure_sku_unavailable(code: str, message: str) -> Finding | None:
    """The VM size is not offered to the subscription in the region or zone (or, for spot, has no
    capacity): ARM's SkuNotAvailable (azure-sdk-for-go-extensions pkg/errors/consts.go:12@v0.6.0),
    Karpenter's "the requested SKU is unavailable"
    (pkg/providers/instance/offerings/commonerrorhandlers.go:206-210@v1.12.0)."""
    code = error_code(code, message)
    if code != "SkuNotAvailable" and "requested SKU is unavailable" not in message:
        return None
    return Finding(
        "azure-sku-unavailable",
        _said(code, message),
        "this VM size is not offered to the subscription in the region or zone (or spot capacity for it is gone)",
        "check `az vm list-skus --location <region> --size <size> --output table` (Restrictions); use another size "
        "(instanceType) or region, or ask Azure support to enable the size",
    )


@detector("azure-capacity", "azure")
def azure_capacity(code: str, message: str) -> Finding | None:
    """Azure has no capacity for the size now: AllocationFailed, ZonalAllocationFailed,
    OverconstrainedAllocationRequest, OverconstrainedZonalAllocationRequest
    (azure-sdk-for-go-extensions pkg/errors/consts.go:7-10@v0.6.0; karpenter-provider-azure
    pkg/providers/instance/offerings/commonerrorhandlers.go:213-285@v1.12.0), or AKS's
    AKSCapacityError / AksCapacityHeavyUsage; Karpenter, out of sizes to try: "all requested
    instance types were unavailable during launch" (pkg/cloudprovider/cloudprovider.go:165@v1.12.0)."""
    code = error_code(code, message)
    codes = {
        "AllocationFailed",
        "ZonalAllocationFailed",
        "OverconstrainedAllocationRequest",
        "OverconstrainedZonalAllocationRequest",
        "AKSCapacityError",
        "AksCapacityHeavyUsage",
    }
    if code not in codes and "instance types were unavailable" not in message:
        return None
    return Finding(
        "azure-capacity",
        _said(code, message),
        "Azure has no free capacity for this VM size in the region or zone right now",
        "retry later (delete the Workspace's NodeClaim, or let the provisioner retry), or use another size or region",
    )


@detector("azure-authorization", "azure")
def azure_authorization(code: str, message: str) -> Finding | None:
    """The identity that makes the nodes may not: ARM's AuthorizationFailed / LinkedAuthorizationFailed
    ("The client '<id>' ... does not have authorization to perform action '<action>' over scope
    '<scope>'"); gpu-provisioner needs the agent pool actions of its role
    (catalog/gpu_provisioner_charts.yaml; pkg/providers/instance/azure_client.go:42-47@v0.4.3)."""
    code = error_code(code, message)
    if (
        code not in ("AuthorizationFailed", "LinkedAuthorizationFailed")
        and "does not have authorization" not in message
    ):
        return None
    action = re.search(r"perform action '([^']+)'", message)
    what = f" ({action.group(1)})" if action else ""
    return Finding(
        "azure-authorization",
        _said(code, message),
        f"the identity that makes the nodes lacks an Azure permission{what}",
        "check the role assignments of gpu-provisioner's or Karpenter's identity (the stack makes them: run `pulumi up`; "
        "with identities of your own, grant the action on the scope the error names); role assignments take minutes to apply",
    )


@detector("azure-subnet-full", "azure")
def azure_subnet_full(code: str, message: str) -> Finding | None:
    """The node subnet has no address left: ARM's InsufficientSubnetSize
    (azure-sdk-for-go-extensions pkg/errors/consts.go:13@v0.6.0), or SubnetIsFull."""
    code = error_code(code, message)
    if code not in ("InsufficientSubnetSize", "SubnetIsFull"):
        return None
    return Finding(
        "azure-subnet-full",
        _said(code, message),
        "the nodes' subnet has no free addresses for another node (with Azure CNI each node reserves its pods' IPs too)",
        "use a larger subnet (cluster.aks.nodeSubnet) or fewer pods per node",
    )


AZURE_ERRORS = (azure_quota, azure_sku_unavailable, azure_capacity, azure_authorization, azure_subnet_full)


def azure_error(code: str, message: str, where: str = "") -> Finding | None:
    """What Azure's error means, by the first detector that knows it (None: none does), about
    `where` (the agent pool or NodeClaim it was read on)."""
    for judge in AZURE_ERRORS:
        hit = judge(code, message)
        if hit is not None:
            return replace(hit, where=where) if where else hit
    return None


PROVISIONING = ("Creating", "Scaling", "Updating", "Upgrading")


@detector("agent-pool-failed", "azure")
def agent_pool_failed(pool: dict[str, Any]) -> Finding | None:
    """gpu-provisioner's agent pool (named after the NodeClaim:
    pkg/providers/instance/instance.go:79@v0.4.3) in a failed state: ARM's
    `properties.provisioningState` Failed with `properties.status.provisioningError` {code,
    message} (AgentPoolStatus, ARM 2025-09-01; pulumi-azure-native 3.29.0
    containerservice/outputs.py:659-695); still Creating or Scaling is progress."""
    state = text_at(pool, "properties", "provisioningState") or ""
    name = text_at(pool, "name") or ""
    error = field_at(pool, "properties", "status", "provisioningError")
    code, message = text_at(error, "code") or "", text_at(error, "message") or ""
    if state in PROVISIONING:
        return Finding(
            "agent-pool-failed",
            f"provisioningState {state}",
            "AKS is still making the node pool",
            "wait; GPU pools take minutes",
            broken=False,
            where=f"agent pool {name}",
        )
    if state != "Failed":
        return None
    classified = azure_error(code, message, f"agent pool {name}")
    if classified is not None:
        return classified
    return Finding(
        "agent-pool-failed",
        "provisioningState Failed" + (f": {_said(code, message)}" if code or message else ""),
        "AKS could not make the node pool gpu-provisioner asked for",
        f"read the error (`az aks nodepool show --cluster-name <cluster> -g <group> -n {name}`); delete the "
        "Workspace's NodeClaim for gpu-provisioner to try again",
        where=f"agent pool {name}",
    )


# ---------------------------------------------------------------- NodeClaims (karpenter.sh/v1)

REGISTRATION_TIMEOUT_SECONDS = 15 * 60  # then Karpenter deletes the NodeClaim (liveness.go:52@v1.12.0)
INITIALIZATION_PATIENCE_SECONDS = 10 * 60


@detector("nodeclaim-launch-failed", "nodeclaims")
def nodeclaim_launch_failed(name: str, reason: str, message: str) -> Finding | None:
    """A NodeClaim whose Launched condition is not True with an error: Karpenter core sets it
    Unknown with reason LaunchFailed and the provider's error, or a provider's own reason
    (CreateInstanceFailed) (pkg/controllers/nodeclaim/lifecycle/launch.go:106-112@v1.12.0, the
    same at v1.7.0 that gpu-provisioner builds on); gpu-provisioner's error says
    `agentPool.BeginCreateOrUpdate for "<name>" failed: <ARM's answer>`
    (pkg/providers/instance/instance.go:110@v0.4.3). Azure's words are judged by the azure-*
    detectors first."""
    if not message or reason == "AwaitingReconciliation":
        return None
    classified = azure_error("", message, f"NodeClaim {name}")
    if classified is not None:
        return classified
    return Finding(
        "nodeclaim-launch-failed",
        f"Launched: {reason}: {message}" if reason else message,
        "the node provisioner could not create the node",
        f"read the error: `kubectl describe nodeclaim {name}`; Karpenter cuts it at 300 characters, the whole of it is "
        f"in the provisioner's log (`kubectl -n gpu-provisioner logs deploy/gpu-provisioner | grep {name}`, or "
        "Karpenter's)",
        where=f"NodeClaim {name}",
    )


@detector("nodeclaim-not-registered", "nodeclaims")
def nodeclaim_not_registered(name: str, reason: str, message: str, age_seconds: float | None) -> Finding:
    """The VM exists but its node never joined the cluster: Registered Unknown NodeNotFound "Node
    not registered with cluster" (pkg/controllers/nodeclaim/lifecycle/registration.go:65@v1.12.0);
    Karpenter deletes it after 15 minutes (liveness.go:52@v1.12.0) and tries again."""
    late = age_seconds is not None and age_seconds >= REGISTRATION_TIMEOUT_SECONDS
    return Finding(
        "nodeclaim-not-registered",
        f"Registered: {reason}: {message}" if reason else (message or "not registered"),
        "the VM was made but its kubelet never joined the cluster",
        "check the node's bootstrap: its subnet reaches the API server, the bootstrap token is valid (Karpenter), the "
        "VM's boot diagnostics in the node resource group",
        broken=late,
        where=f"NodeClaim {name}",
    )


@detector("nodeclaim-not-initialized", "nodeclaims")
def nodeclaim_not_initialized(name: str, reason: str, message: str, age_seconds: float | None) -> Finding:
    """The node joined but is not initialized: Initialized Unknown NodeNotReady, StartupTaintsExist
    or ResourceNotRegistered ('Resource "nvidia.com/gpu" was requested but not registered': no
    device plugin advertises the GPUs) (pkg/controllers/nodeclaim/lifecycle/initialization.go:57-73@v1.12.0)."""
    late = age_seconds is not None and age_seconds >= INITIALIZATION_PATIENCE_SECONDS
    gpu = reason == "ResourceNotRegistered" and "nvidia.com/gpu" in message
    return Finding(
        "nodeclaim-not-initialized",
        f"Initialized: {reason}: {message}" if reason else (message or "not initialized"),
        "the node joined but does not advertise its GPUs: no NVIDIA device plugin (or driver) runs on it"
        if gpu
        else "the node joined but is not ready for pods yet",
        "check the NVIDIA device plugin and driver on the node (the GPU Operator's pods, or KAITO's device plugin)"
        if gpu
        else f"kubectl describe node (the node of NodeClaim {name})",
        broken=late,
        where=f"NodeClaim {name}",
    )


@detector("karpenter-insufficient-capacity", "nodeclaims")
def karpenter_insufficient_capacity(event: dict[str, Any]) -> Finding | None:
    """Karpenter gave up on every size and offering it may try, and deleted the NodeClaim: a
    Warning event InsufficientCapacityError "NodeClaim <name> event: <error>" on it
    (pkg/controllers/nodeclaim/lifecycle/launch.go:82-93@v1.12.0, events.go:30-37@v1.12.0,
    pkg/events/reason.go:49@v1.12.0), in namespace default (a NodeClaim has none)."""
    if text_at(event, "reason") != "InsufficientCapacityError":
        return None
    message = text_at(event, "message") or ""
    name = text_at(event, "involvedObject", "name") or ""
    classified = azure_error("", message, f"NodeClaim {name}")
    if classified is not None:
        return classified
    return Finding(
        "karpenter-insufficient-capacity",
        message,
        "Karpenter found no size and zone it may use with capacity, and deleted the NodeClaim (it will try again)",
        "allow more sizes or zones, or check quota and capacity for the instance type in the region",
        where=f"NodeClaim {name}",
    )


def nodeclaim_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest first, as the API server keeps them (up to an hour)."""
    return sorted(events, key=lambda e: str(text_at(e, "lastTimestamp") or text_at(e, "eventTime") or ""), reverse=True)
