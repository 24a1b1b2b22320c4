"""Recorded answers for the failure library's tests: the shapes the real APIs return, with the
words the real controllers write (each says where they come from). ARM: an AKS agent pool as
GET .../managedClusters/<c>/agentPools/<name>?api-version=2025-09-01 returns it (AgentPool,
properties.provisioningState and properties.status.provisioningError: pulumi-azure-native 3.29.0
containerservice AgentPoolStatusResponse); the error texts are ARM's (codes in
azure-sdk-for-go-extensions pkg/errors/consts.go@v0.6.0). Kubernetes: NodeClaims as Karpenter
core writes their conditions (launch.go, registration.go, initialization.go @v1.12.0; Unknown,
not False, while it retries), Events as client-go records them, pods as the kubelet reports them."""

from __future__ import annotations

import copy
import time
from typing import Any

SUB = "00000000-0000-0000-0000-000000000000"
CLUSTER_PATH = (
    f"/subscriptions/{SUB}/resourceGroups/kaito-auto-rg/providers/Microsoft.ContainerService/managedClusters/kaito-auto"
)
QUOTA_MESSAGE = (
    "Preflight validation check for resource(s) for container service kaito-auto in resource group MC_kaito-auto-rg "
    "failed. Message: Operation could not be completed as it results in exceeding approved standardNCADSA100v4Family "
    "Cores quota. Additional details - Deployment Model: Resource Manager, Location: eastus2, Current Limit: 0, "
    "Current Usage: 0, Additional Required: 24, (Minimum) New Limit Required: 24. Submit a request for Quota "
    "increase at https://aka.ms/ProdportalCRP by specifying parameters listed in the 'Details' section for "
    "deployment to succeed."
)


def stamp(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


def agent_pool(name: str, state: str, code: str = "", message: str = "") -> dict[str, Any]:
    """An agent pool gpu-provisioner made for a NodeClaim, as ARM answers a GET of it."""
    properties: dict[str, Any] = {
        "count": 1,
        "vmSize": "Standard_NC24ads_A100_v4",
        "osDiskSizeGB": 300,
        "maxPods": 250,
        "type": "VirtualMachineScaleSets",
        "mode": "User",
        "provisioningState": state,
        "powerState": {"code": "Running"},
        "orchestratorVersion": "1.33.2",
        "nodeLabels": {"kaito.sh/workspace": "phi-0", "kaito.sh/workspacenamespace": "default"},
        "nodeTaints": ["sku=gpu:NoSchedule"],
    }
    if code:
        properties["status"] = {"provisioningError": {"code": code, "message": message, "details": []}}
    return {
        "id": f"{CLUSTER_PATH}/agentPools/{name}",
        "name": name,
        "type": "Microsoft.ContainerService/managedClusters/agentPools",
        "properties": properties,
    }


def nodeclaim(name: str, labels: dict[str, str], *conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": stamp(600)},
        "spec": {
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_NC24ads_A100_v4"]}
            ]
        },
        "status": {"conditions": list(conditions)},
    }


def cond(kind: str, status: str, reason: str = "", message: str = "", seconds_ago: float = 120) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason or kind,
        "message": message,
        "lastTransitionTime": stamp(seconds_ago),
    }


GPU_PROVISIONER_LABELS = {
    "kaito.sh/workspace": "phi-0",
    "kaito.sh/workspacenamespace": "default",
    "karpenter.sh/nodepool": "kaito",
}
# gpu-provisioner's error when ARM refuses the pool (instance.go:110@v0.4.3) around azcore's
# ResponseError text ("ERROR CODE: ..."), before Karpenter cuts it to 300 characters.
SKU_ERROR = (
    'agentPool.BeginCreateOrUpdate for "ws1a2b3c4" failed: ERROR CODE: SkuNotAvailable The requested VM size for '
    "resource 'Following SKUs have failed for Capacity Restrictions: Standard_NC24ads_A100_v4' is currently not "
    "available in location 'eastus2'."
)
CUT_ERROR = (
    'agentPool.BeginCreateOrUpdate for "ws1a2b3c4" failed: PUT https://management.azure.com/subscriptions/'
    f"{SUB}/resourceGroups/kaito-auto-rg/providers/Microsoft.ContainerService/managedClusters/kaito-auto/agentPools/"
    "ws1a2b3c4\n---------------------------------------------------..."
)
AUTHZ_ERROR = (
    'agentPool.BeginCreateOrUpdate for "ws1a2b3c4" failed: ERROR CODE: AuthorizationFailed The client '
    "'7f5c...' with object id '7f5c...' does not have authorization to perform action "
    "'Microsoft.ContainerService/managedClusters/agentPools/write' over scope '/subscriptions/...'"
)
# karpenter-provider-azure's own words (commonerrorhandlers.go:183@v1.12.0) wrapped by
# cloudprovider.go:179 (CreateInstanceFailed).
KARPENTER_QUOTA = (
    "creating instance failed, subscription level on-demand vCPU quota for Standard_NC24ads_A100_v4 has been "
    "reached (may try provision an alternative instance type)"
)
KARPENTER_LABELS = {
    "karpenter.sh/nodepool": "default-phi-0",
    "karpenter.kaito.sh/workspace-name": "phi-0",
    "karpenter.kaito.sh/workspace-namespace": "default",
}


def event(involved: str, reason: str, message: str) -> dict[str, Any]:
    """A core/v1 Event Karpenter recorded on a NodeClaim (namespace default: it has none)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{involved}.17f0a", "namespace": "default"},
        "involvedObject": {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": involved},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": {"component": "karpenter"},
        "lastTimestamp": stamp(30),
        "count": 3,
    }


def node(
    name: str, labels: dict[str, str], *, gpus: int = 1, ready: bool = True, taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    resources = {"cpu": "24", "memory": "220Gi", "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints if taints is not None else [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [
                cond("Ready", "True" if ready else "Unknown", "KubeletReady" if ready else "NodeStatusUnknown",
                     "kubelet is posting ready status" if ready else "Kubelet stopped posting node status.")
            ],
        },
    }  # fmt: skip


GFD_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-PCIE-80GB",
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.memory": "81920",
}

# The GPU Operator's GFD DaemonSet (gpu-operator assets/gpu-feature-discovery/0500_daemonset.yaml@v25.3.4).
GPU_OPERATOR_GFD = {
    "metadata": {
        "name": "gpu-feature-discovery",
        "namespace": "gpu-operator",
        "labels": {"app": "gpu-feature-discovery"},
    },
    "spec": {
        "template": {
            "spec": {
                "nodeSelector": {"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            }
        }
    },
}


def pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "inference", "image": "mcr.microsoft.com/aks/kaito/kaito-base:0.5.0"}]},
        "status": {"phase": "Pending", **status},
    }


def waiting(container: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "name": container,
        "ready": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": reason, "message": message}},
    }


def crash_looping(container: str, exit_code: int, message: str = "", reason: str = "Error") -> dict[str, Any]:
    terminated = {"exitCode": exit_code, "reason": reason, "startedAt": stamp(90), "finishedAt": stamp(60)}
    if message:
        terminated["message"] = message
    return {
        "name": container,
        "ready": False,
        "restartCount": 4,
        "state": {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 1m20s restarting failed container={container}",
            }
        },
        "lastState": {"terminated": terminated},
    }


def unschedulable(message: str) -> list[dict[str, Any]]:
    return [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]


def copied(obj: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(obj)
