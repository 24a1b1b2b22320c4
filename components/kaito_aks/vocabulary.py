"""The words every layer of kaito-aks shares: how an arg's name is written in camelCase, the modes
the args choose between, and what a model asks of its GPU nodes. Any module may import this one; it imports only the standard
library, so a spec, a rule, a plan and a wait speak the same terms without importing each other."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# The labels on every Kubernetes object kaito-aks writes itself (KAITO's objects and what it makes
# from them carry their own).
MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "kaito-aks"}
# The one Workspace label KAITO copies onto its pods (from 0.8; the InferenceSet controller sets
# it to the set's name; on 0.8 and 0.11 this program sets it on each replica Workspace).
CREATED_BY_LABEL = "inferenceset.kaito.sh/created-by"
WORKSPACE_LABEL = "kaito.sh/workspace"  # on a Workspace's pods and NodeClaims (api/v1beta1/labels.go)
GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"  # on the pods Istio runs for a Gateway
# Words written in capitals in camelCase names, as Azure and the config files have them.
_UPPER_WORDS = {"gb": "GB"}


def camel(name: str) -> str:
    """snake_case -> camelCase (os_disk_size_gb -> osDiskSizeGB); other text is unchanged. The one
    rule for the provider schema, stack files, KAITO's and the catalogs' YAML alike."""
    if not _SNAKE.fullmatch(name):
        return name
    first, *rest = name.split("_")
    return first + "".join(_UPPER_WORDS.get(p, p[:1].upper() + p[1:]) for p in rest)


NodeProvisioning = Literal["byo", "auto"]
"""byo: your GPU nodes, found by label selector (auto-provisioning off); auto: KAITO creates a
node of each Workspace's instance type."""
NodeProvisioner = Literal["gpu-provisioner", "karpenter"]
"""What makes KAITO's nodes in auto mode: gpu-provisioner (an AKS agent pool per NodeClaim) or
self-hosted Karpenter (KAITO 0.11+: a NodePool per Workspace, VMs from KAITO's node classes)."""
NodeClass = Literal["ubuntu", "azure-linux"]
"""In Karpenter mode, the node class (OS image) of a model's nodes: KAITO's Ubuntu or Azure
Linux AKSNodeClass."""
GpuDiscovery = Literal["kaito", "external"]
"""kaito: KAITO's bundled device plugin, NFD and GFD label the GPU nodes; external: another
install (the NVIDIA GPU Operator) runs them and KAITO's copies are switched off."""
GpuDriver = Literal["operator", "aks"]
"""operator: AKS skips the driver (gpuProfile.driver None) and the NVIDIA GPU Operator installs
it; aks: AKS installs the driver and container toolkit."""
Installed = Literal["install", "existing"]
"""install: this program installs the piece from its pinned chart or release; existing: the
cluster has it already (a platform team's, an AKS add-on's), and nothing is installed."""
Exposure = Literal["internal", "public", "cluster"]
"""Where a gateway is reached from: internal (an Azure internal load balancer: the VNet), public
(an Azure public load balancer, from the source ranges given), cluster (a ClusterIP Service:
inside the cluster, or through `kubectl port-forward`)."""
MetricsFlavour = Literal["azureManagedPrometheus", "prometheusOperator"]
"""Which Prometheus scrapes the models: AKS's managed Prometheus (azmonitoring.coreos.com
ServiceMonitors) or a prometheus-operator such as kube-prometheus-stack (monitoring.coreos.com)."""
KedaSource = Literal["chart", "addon", "existing"]
"""Where KEDA comes from: its pinned chart, the AKS KEDA add-on (a cluster this program creates),
or already there."""
MetricType = Literal["gauge", "histogram"]
"""How keda-kaito-scaler reads a metric: a gauge averaged per replica, a histogram averaged over
a window."""


@dataclass(frozen=True)
class GpuDemand:
    """What KAITO's webhook asks of the nodes for one preset (the fields it reads): what a model's
    plan hands the GPU-node wait, which judges the nodes against it."""

    name: str  # the preset
    gpu_count: int  # GPUs it needs (KAITO 0.8 checks nodes x GPUs against this)
    model_gib: float  # the size of its weights (0: not known offline, a Hugging Face id KAITO sizes)
    release: str  # "0.8", "0.11" or "0.12": KAITO's arithmetic differs
    bypass_resource_checks: bool = False  # kaito.sh/bypass-resource-checks is set: KAITO skips count and memory

    @property
    def per_gpu_gib(self) -> float:
        return 0.0  # a requirement of 0.6 only, which provisions its own nodes (no wait)

    def as_props(self) -> dict[str, Any]:
        props: dict[str, Any] = {
            "preset": self.name,
            "gpuCount": self.gpu_count,
            "modelGiB": self.model_gib,
            "release": self.release,
        }
        if self.bypass_resource_checks:  # only when set: stacks deployed before see no diff
            props["bypassResourceChecks"] = True
        return props

    @classmethod
    def from_props(cls, props: dict[str, Any]) -> GpuDemand:
        return cls(
            props["preset"],
            int(props["gpuCount"]),
            float(props["modelGiB"]),
            props["release"],
            bool(props.get("bypassResourceChecks", False)),
        )


def selector_text(selector: dict[str, str]) -> str:
    """A node selector as one stable text ({agentpool=a100, sku=gpu}): the key models that share
    their nodes share their waits under."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(selector.items())) + "}"
