"""One model served (or tuned) by KAITO: its Workspaces or InferenceSet, the ConfigMaps and
Hugging Face Secret they read, and the Service that is the model's endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.cluster_wait import ClusterAccess
from kaito_aks.gpu_nodes import GpuDemand, GpuNodesReady
from kaito_aks.kaito_api import (
    HF_TOKEN_KEY,
    INFERENCE_SET_IMMUTABLE_PATHS,
    WORKSPACE_IMMUTABLE_PATHS,
    InferenceSet,
    Workspace,
)
from kaito_aks.kubernetes_object import KubernetesObject
from kaito_aks.model_ready import ModelReady, Watched, revision_of
from kaito_aks.options import child_options

SERVICE_PORT = 80

# Serving readiness is KAITO's to report (Workspace conditions); the Service is usable as soon
# as it exists, and model downloads can outlast Pulumi's await timeout.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}


@dataclass(frozen=True)
class ConfigMapPlan:
    name: str  # content-addressed: a new name is what rolls the serving pods
    data: dict[str, str]
    key: str = ""  # stable Pulumi name, so an edit previews as a replacement of the same ConfigMap


@dataclass(frozen=True)
class ServicePlan:
    """One Service over every replica's serving pod: the model's stable endpoint."""

    name: str
    selector: dict[str, str]
    target_port: int
    load_balancer: bool


@dataclass(frozen=True)
class GpuNodesPlan:
    """The GPU nodes KAITO's webhook must find before it admits the preset (BYO mode)."""

    selector: dict[str, str]  # the Workspaces' matchLabels
    demand: GpuDemand
    timeout_minutes: int


@dataclass(frozen=True)
class ReadinessPlan:
    """What says the model serves (a KAITO status condition) and how long to wait for it."""

    condition: str  # InferenceReady, InferenceSetReady, JobStarted
    timeout_minutes: int


@dataclass(frozen=True)
class ModelPlan:
    """One workspace entry of the config, as the KAITO objects that serve or tune it."""

    name: str
    namespace: str
    model: str  # preset name, Hugging Face ID, or custom image
    replicas: int
    workspaces: tuple[Workspace, ...]
    inference_set: InferenceSet | None
    config_maps: tuple[ConfigMapPlan, ...]
    hf_token_secret: str | None  # Secret to create from kaito-aks:hfToken
    service: ServicePlan | None
    # The model id clients send (OpenAI `model`): KAITO 0.8 serves a preset under its preset
    # name; 0.12 serves an InferenceSet's Workspaces under the InferenceSet's name. None for a
    # custom image (ask it: GET /v1/models) and for tuning.
    served_model: str | None = None
    gpu_nodes: GpuNodesPlan | None = None  # wait for these before creating the preset
    readiness: ReadinessPlan | None = None  # wait for this after creating it

    @property
    def key(self) -> str:
        """Stable Pulumi name: unique per stack, independent of list order."""
        return f"{self.namespace}/{self.name}"

    @property
    def endpoint(self) -> str | None:
        """The in-cluster OpenAI-compatible URL (KAITO serves /v1/chat/completions)."""
        if self.service is None:
            return None
        return f"http://{self.name}.{self.namespace}.svc.cluster.local/v1/chat/completions"


@dataclass(frozen=True)
class KaitoWorkspaceArgs:
    plan: ModelPlan
    hf_token: pulumi.Output[str] | None = None  # secret; required when plan.hf_token_secret is set
    access: ClusterAccess | None = None  # the cluster's credentials; required by the waits (gpu_nodes, readiness)


class KaitoWorkspace(pulumi.ComponentResource):
    """Outputs: `endpoint` (in-cluster OpenAI-compatible URL), `model`, `replicas`, and
    `gpu_nodes` (the GPU nodes found, when it waited for them). Depend it on the KAITO operator
    (its admission webhook fails closed) and on whatever installs GPU discovery."""

    def __init__(self, name: str, args: KaitoWorkspaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:kubernetes:KaitoWorkspace", name, None, opts)
        plan = args.plan
        child = child_options(self, opts)
        inputs: list[pulumi.Resource] = []

        for cm in plan.config_maps:
            inputs.append(
                k8s.core.v1.ConfigMap(
                    f"{name}/{cm.key or cm.name}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=cm.name, namespace=plan.namespace),
                    data=cm.data,
                    opts=child,
                )
            )
        if plan.hf_token_secret:
            if args.hf_token is None:
                raise ValueError(f"{plan.key}: the plan needs a Hugging Face token but none was given")
            inputs.append(
                k8s.core.v1.Secret(
                    f"{name}/{plan.hf_token_secret}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=plan.hf_token_secret, namespace=plan.namespace),
                    type="Opaque",
                    string_data={HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
                    opts=child,
                )
            )

        if (plan.gpu_nodes or plan.readiness) and args.access is None:
            raise ValueError(f"{plan.key}: the waits (gpu_nodes, readiness) need the cluster's access (args.access)")
        self.gpu_nodes: GpuNodesReady | None = None
        if plan.gpu_nodes is not None:
            assert args.access is not None
            self.gpu_nodes = GpuNodesReady(
                f"{name}/gpu-nodes",
                args.access,
                selector=plan.gpu_nodes.selector,
                demand=plan.gpu_nodes.demand,
                workspaces=[ws.metadata.name for ws in plan.workspaces]
                + ([plan.inference_set.metadata.name] if plan.inference_set else []),
                timeout_minutes=plan.gpu_nodes.timeout_minutes,
                opts=child,
            )
            inputs.append(self.gpu_nodes)

        # KAITO reads the ConfigMaps and Secret when it reconciles, and admits a preset only once
        # the GPU nodes are labelled, so those come first. Names are fixed, so a replacement must
        # delete the old object before creating the new one.
        serving = child_options(self, opts, depends_on=inputs, delete_before_replace=True)
        workspace_manifests = [ws.manifest() for ws in plan.workspaces]
        set_manifest = plan.inference_set.manifest() if plan.inference_set else None
        self.workspaces = [
            KubernetesObject(
                f"{name}/{m['metadata']['name']}",
                m,
                opts=pulumi.ResourceOptions.merge(
                    serving, pulumi.ResourceOptions(replace_on_changes=list(WORKSPACE_IMMUTABLE_PATHS))
                ),
            )
            for m in workspace_manifests
        ]
        self.inference_set = (
            KubernetesObject(
                f"{name}/{set_manifest['metadata']['name']}",
                set_manifest,
                opts=pulumi.ResourceOptions.merge(
                    serving, pulumi.ResourceOptions(replace_on_changes=list(INFERENCE_SET_IMMUTABLE_PATHS))
                ),
            )
            if set_manifest
            else None
        )
        self.ready: ModelReady | None = None
        if plan.readiness is not None:
            assert args.access is not None
            manifests = [*workspace_manifests, *filter(None, [set_manifest])]
            self.ready = ModelReady(
                f"{name}/ready",
                args.access,
                watched=[
                    Watched(m["kind"], m["apiVersion"], plan.namespace, m["metadata"]["name"], plan.readiness.condition)
                    for m in manifests
                ],
                revision=revision_of([*manifests, *(cm.data for cm in plan.config_maps)]),
                timeout_minutes=plan.readiness.timeout_minutes,
                opts=child_options(self, opts, depends_on=[*self.workspaces, *filter(None, [self.inference_set])]),
            )

        if plan.service is not None:
            # Plain dicts rather than the typed *Args classes: the same inputs, registered with
            # noticeably less SDK work, which counts for stacks with hundreds of models.
            k8s.core.v1.Service(
                f"{name}/{plan.service.name}",
                metadata={"name": plan.service.name, "namespace": plan.namespace, "annotations": SKIP_AWAIT},
                spec={
                    "type": "LoadBalancer" if plan.service.load_balancer else "ClusterIP",
                    "selector": plan.service.selector,
                    "ports": [
                        {
                            "name": "http",
                            "port": SERVICE_PORT,
                            "targetPort": plan.service.target_port,
                            "protocol": "TCP",
                        }
                    ],
                },
                opts=child,
            )

        # Known before anything is created, so plain values (no Outputs to resolve).
        self.endpoint = plan.endpoint
        self.model = plan.served_model
        self.source = plan.model
        self.replicas = plan.replicas
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "model": self.model,
                "source": self.source,
                "replicas": self.replicas,
                "gpuNodes": self.gpu_nodes_found(),
            }
        )

    def gpu_nodes_found(self) -> pulumi.Output[dict[str, Any]] | None:
        """What the GPU-node wait found (nodes, product, GPUs and memory), or None without one."""
        return self.gpu_nodes.found() if self.gpu_nodes is not None else None
