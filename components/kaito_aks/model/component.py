"""`KaitoModel`: one model KAITO serves or fine-tunes, as a component. Its Workspaces (KAITO 0.6,
0.8, 0.11: one per replica) or InferenceSet (0.12), the ConfigMaps and Hugging Face Secret they read, the
Service that is its endpoint, and the waits that make `pulumi up` end with it serving."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.cluster.access import ClusterAccess
from kaito_aks.cluster.kubernetes_object import KubernetesObject
from kaito_aks.endpoints import declare_network_policy, network_policy, service_manifest
from kaito_aks.kaito.inferenceset import INFERENCE_SET_IMMUTABLE_PATHS
from kaito_aks.kaito.workspace import HF_TOKEN_KEY, WORKSPACE_IMMUTABLE_PATHS
from kaito_aks.model.disruption import disruption_budget
from kaito_aks.model.names import endpoint_of
from kaito_aks.model.plan import ModelPlan, plan_model
from kaito_aks.model.rules import model_verdict
from kaito_aks.model.spec import KaitoModelArgs
from kaito_aks.operators.release import checked_workload
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.serving.metrics import REGISTERED_BY
from kaito_aks.serving.spec import GatewayRefArgs
from kaito_aks.validation import Judged, judged, resource_name_problems, validate
from kaito_aks.waits.crd_served import CrdServed, served_kind
from kaito_aks.waits.gpu_nodes import GpuNodesReady
from kaito_aks.waits.model_ready import ModelReady, Watched, revision_of

TYPE = "kaito-aks:index:KaitoModel"
# The types this component had before: existing stacks alias them (and so keep every child).
FORMER_TYPES = ("kaito-aks:kubernetes:KaitoModel", "kaito-aks:kubernetes:KaitoWorkspace")
SERVICE_PORT = 80
# Serving readiness is KAITO's to report (Workspace conditions); the Service is usable as soon
# as it exists, and model downloads can outlast Pulumi's await timeout.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
AUTOSCALED_PATH = "spec.replicas"  # an autoscaled InferenceSet's: the autoscaler's to set


@dataclass(frozen=True)
class GroupMember(Judged[KaitoModelArgs]):
    """A model `deploy_models` judged and planned, and whose waits are the group's: its args
    taken as they are (never made again), with its plan and the Gateway its route attaches to
    (the group's, when it was given one)."""

    plan: ModelPlan | None = None
    gateway: GatewayRefArgs | None = None


def check_model(args: Any, name: str | None = None) -> tuple[KaitoModelArgs | None, list[Problem]]:
    """A model's args (a KaitoModelArgs, or a mapping of its args) checked: the args with their
    name resolved (default `name`, held to the same rules), and every problem, each with the
    arg's path. Wrap args with no problem in `Judged` to hand them on: KaitoModel and
    deploy_models take those as they are."""
    checked, problems, _ = judge_model(args, name)
    return checked, problems


def judge_model(args: Any, name: str | None = None) -> tuple[KaitoModelArgs | None, list[Problem], list[Problem]]:
    """`check_model`, and the warnings: what the rules say that refuses nothing (a setting with no
    effect, a refusal `bypass_checks` names), from the same one run of the rules."""
    checked, problems = validate(KaitoModelArgs, args)
    if checked is not None and checked.name is None and name is not None:
        problems += resource_name_problems(KaitoModelArgs, "name", name)
        checked = dataclasses.replace(checked, name=name)  # (a name that breaks a rule is said just above)
    errors, warnings = model_verdict(checked) if checked is not None else ([], [])
    return checked, problems + judged(checked, problems, [lambda _: errors]), warnings


class KaitoModel(pulumi.ComponentResource):
    """One model KAITO serves (or fine-tunes): its Workspaces or InferenceSet, ConfigMaps,
    Hugging Face Secret, Service and NetworkPolicy (ingress from its own namespace and
    `allow_from` only; enforced where the cluster has a policy engine), with waits so `pulumi up`
    ends with it serving. Deploy it
    through the cluster's Kubernetes provider (in Python an AksCluster's or KubeconfigCluster's
    `provider`; elsewhere a kubernetes Provider made from their `kubeconfig`) and depend it on
    the KAITO operator (its admission webhook fails closed) and the GPU nodes."""

    endpoint: pulumi.Output[str | None]
    """In-cluster OpenAI-compatible URL (/v1/chat/completions) of the model's Service; none for tuning."""
    model: pulumi.Output[str | None]
    """The model id clients send (0.6, 0.8: the preset; 0.11, 0.12: the model's name); none for an image."""
    source: pulumi.Output[str]
    """The preset, Hugging Face id or image it runs."""
    replicas: pulumi.Output[int]
    """Serving instances."""
    gpu_nodes: pulumi.Output[dict[str, Any] | None]
    """What the GPU-node wait found: nodes, product, GPUs per node, MiB per GPU and node."""
    instance_type: pulumi.Output[str | None]
    """The Azure VM size KAITO creates this model's nodes of (node auto-provisioning); none with
    bring-your-own nodes."""
    route: pulumi.Output[dict[str, Any] | None]
    """Its route through the gateway: the model ids it matches, its HTTPRoute and the
    InferencePool KAITO makes for it; none without `gateway`."""
    autoscaling: pulumi.Output[dict[str, Any] | None]
    """What its autoscaler is told: min and max replicas, the metric and its thresholds; none
    without `autoscale` (`replicas` is then its count)."""

    plan: ModelPlan
    """The objects it creates, as data."""

    def __init__(
        self,
        name: str,
        args: KaitoModelArgs | Judged[KaitoModelArgs],
        opts: pulumi.ResourceOptions | None = None,
        *,
        service_monitor_after: Sequence[pulumi.Resource] | None = None,
    ):
        """`service_monitor_after`: what its ServiceMonitor waits for (deploy_models gives the
        group's shared wait for the ServiceMonitor CRD); default: a wait of its own."""
        member = args if isinstance(args, GroupMember) else None
        args, warnings, access = checked_workload(
            "KaitoModel",
            name,
            args,
            opts,
            judge_model,
            lambda a: member is None and (a.wait_for_ready or a.wait_for_gpu_nodes),
            "the waits read the cluster and have no credentials: deploy through a ClusterProvider (an AksCluster's or "
            "KubeconfigCluster's `provider`), give `kubeconfig` (e.g. their `kubeconfig` output), or turn off "
            "`wait_for_gpu_nodes` and `wait_for_ready`",
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        for warning in warnings:  # what refuses nothing: said, never silent
            pulumi.log.warn(warning.under("args").text(), resource=self)
        self.plan = plan = member.plan if member is not None and member.plan is not None else plan_model(args)
        waits = member is None  # (a group's member: the group waits for it)
        child = child_options(self, opts)
        prerequisites = self._config_and_secret(name, args, plan, child)
        self.gpu_nodes_wait: GpuNodesReady | None = None
        if plan.gpu_nodes is not None and args.wait_for_gpu_nodes and waits:
            assert access is not None
            self.gpu_nodes_wait = GpuNodesReady(
                f"{name}/gpu-nodes",
                access,
                selector=plan.gpu_nodes.selector,
                demand=plan.gpu_nodes.demand,
                workspaces=plan.admitted(),
                timeout_minutes=plan.gpu_nodes.timeout_minutes,
                opts=child,
            )
            prerequisites.append(self.gpu_nodes_wait)
        # KAITO reads the ConfigMaps and Secret when it reconciles, and admits a preset only once
        # the GPU nodes are labelled, so those come first. Names are fixed, so a replacement must
        # delete the old object before creating the new one.
        serving = child_options(self, opts, depends_on=prerequisites, delete_before_replace=True)
        manifests = plan.manifests()
        autoscaled = plan.autoscale is not None
        # (loops, not comprehensions: each registration records the Python stack it was made
        # from, and a comprehension's frame is one more to read for every object)
        self.kaito_objects: list[KubernetesObject] = []
        for m in manifests:
            self.kaito_objects.append(_kaito_object(name, m, serving, autoscaled))
        self.ready: ModelReady | None = None
        if plan.readiness is not None and args.wait_for_ready and waits:
            assert access is not None
            self.ready = ModelReady(
                f"{name}/ready",
                access,
                watched=watched_objects(plan),
                revision=revision_of([*manifests, *(cm.data for cm in plan.config_maps)]),
                timeout_minutes=plan.readiness.timeout_minutes,
                opts=child_options(self, opts, depends_on=self.kaito_objects),
            )
        self.endpoint = self._service(name, args, plan, child)
        gateway = member.gateway if member is not None and member.gateway is not None else args.gateway
        monitor_after = self._monitor_after(name, args, plan, access, service_monitor_after, child)
        self.serving_objects = self._serving(name, gateway, plan, child, monitor_after)
        self.model = pulumi.Output.from_input(plan.served_model)
        self.source = pulumi.Output.from_input(plan.model)
        self.replicas = pulumi.Output.from_input(plan.replicas)
        self.gpu_nodes = self.gpu_nodes_wait.found() if self.gpu_nodes_wait else pulumi.Output.from_input(None)
        self.instance_type = pulumi.Output.from_input(plan.instance_type)
        self.route = pulumi.Output.from_input(route_outputs(plan))
        self.autoscaling = pulumi.Output.from_input(plan.autoscale.describe() if plan.autoscale else None)
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "model": self.model,
                "source": self.source,
                "replicas": self.replicas,
                "gpuNodes": self.gpu_nodes,
                "instanceType": self.instance_type,
                "route": self.route,
                "autoscaling": self.autoscaling,
            }
        )

    def _config_and_secret(
        self, name: str, args: KaitoModelArgs, plan: ModelPlan, child: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """The ConfigMaps the Workspaces read, and the Hugging Face token's Secret."""
        made: list[pulumi.Resource] = []
        for cm in plan.config_maps:
            meta = k8s.meta.v1.ObjectMetaArgs(name=cm.name, namespace=plan.namespace)
            made.append(k8s.core.v1.ConfigMap(f"{name}/{cm.key or cm.name}", metadata=meta, data=cm.data, opts=child))
        if plan.hf_token_secret and args.hf_token is not None:
            made.append(
                k8s.core.v1.Secret(
                    f"{name}/{plan.hf_token_secret}",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=plan.hf_token_secret, namespace=plan.namespace),
                    type="Opaque",
                    string_data={HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
                    opts=child,
                )
            )
        return made

    def _service(
        self, name: str, args: KaitoModelArgs, plan: ModelPlan, child: pulumi.ResourceOptions
    ) -> pulumi.Output[str | None]:
        """The model's endpoint: its Service's in-cluster URL, known once the Service exists."""
        if plan.service is None:
            return pulumi.Output.from_input(None)
        planned = plan.service
        # Plain dicts rather than the typed *Args classes: the same inputs, registered with
        # noticeably less SDK work, which counts for stacks with hundreds of models.
        manifest = service_manifest(
            planned.name,
            plan.namespace,
            planned.selector,
            planned.target_port,
            SERVICE_PORT,
            planned.load_balancer,
            SKIP_AWAIT,
            planned.labels,
        )
        service = k8s.core.v1.Service(
            f"{name}/{planned.name}", metadata=manifest["metadata"], spec=manifest["spec"], opts=child
        )
        # Who may call it: its namespace, the namespaces it names, and its load balancer's clients.
        policy = network_policy(
            planned.name,
            plan.namespace,
            planned.pods,
            list(planned.allow_from),
            planned.load_balancer,
            planned.target_port,
        )
        declare_network_policy(f"{name}/{policy['metadata']['name']}", policy, child)
        # Two or more instances keep serving while AKS drains their nodes one at a time.
        budget = disruption_budget(args, planned.name, plan.namespace, planned.pods)
        if budget is not None:
            k8s.policy.v1.PodDisruptionBudget(
                f"{name}/{planned.name}-disruption-budget", metadata=budget["metadata"], spec=budget["spec"], opts=child
            )
        url = endpoint_of(args)
        return service.metadata.apply(lambda _: url)

    def _monitor_after(
        self,
        name: str,
        args: KaitoModelArgs,
        plan: ModelPlan,
        access: ClusterAccess | None,
        given: Sequence[pulumi.Resource] | None,
        child: pulumi.ResourceOptions,
    ) -> list[pulumi.Resource]:
        """What its ServiceMonitor waits for: the group's wait, else its own wait for the cluster
        to serve the ServiceMonitor kind (none without credentials)."""
        if plan.service_monitor is None or args.metrics is None:
            return []
        if given is not None:
            return list(given)
        if access is None:
            return []
        crd, version = served_kind(plan.service_monitor)
        return [
            CrdServed(
                f"{name}/service-monitor-crd", access, crd, version, REGISTERED_BY[args.metrics.flavour], opts=child
            )
        ]

    def _serving(
        self,
        name: str,
        gateway: GatewayRefArgs | None,
        plan: ModelPlan,
        child: pulumi.ResourceOptions,
        monitor_after: list[pulumi.Resource],
    ) -> list[KubernetesObject]:
        """Its route through the gateway (the HTTPRoute names the Gateway by the outputs it was
        given, so it waits for the Gateway, and the DestinationRule for the route) and its
        ServiceMonitor (once the cluster serves its kind)."""
        made: list[KubernetesObject] = []
        if plan.route is not None and gateway is not None:
            route = KubernetesObject(
                f"{name}/route", plan.route.http_route(gateway.name, gateway.namespace), opts=child
            )
            picker = KubernetesObject(
                f"{name}/endpoint-picker",
                plan.route.destination_rule(),
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[route])),
            )
            made += [route, picker]
        if plan.service_monitor is not None:
            after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=monitor_after))
            made.append(KubernetesObject(f"{name}/service-monitor", plan.service_monitor, opts=after))
        return made


def route_outputs(plan: ModelPlan) -> dict[str, Any] | None:
    """A routed model as the stack's outputs and `status` name it."""
    if plan.route is None:
        return None
    return {
        "models": list(plan.route.model_ids),
        "httpRoute": plan.route.name,
        "inferencePool": plan.route.pool,
        "inferencePoolApiVersion": plan.route.pool_api_version,
        "endpointPicker": plan.route.endpoint_picker,
        "namespace": plan.namespace,
    }


def _kaito_object(
    name: str, manifest: dict[str, Any], serving: pulumi.ResourceOptions, autoscaled: bool = False
) -> KubernetesObject:
    """A Workspace or InferenceSet; what cannot change in place replaces it. An autoscaled
    InferenceSet's replica count is the autoscaler's: Pulumi sets it once (the minimum) and then
    neither diffs nor applies it (pulumi-kubernetes keeps the live value for an ignored field,
    or leaves it out of the apply when another field manager, the HPA, owns it)."""
    immutable = WORKSPACE_IMMUTABLE_PATHS if manifest["kind"] == "Workspace" else INFERENCE_SET_IMMUTABLE_PATHS
    ignored = [AUTOSCALED_PATH] if autoscaled and manifest["kind"] == "InferenceSet" else None
    return KubernetesObject(
        f"{name}/{manifest['metadata']['name']}",
        manifest,
        opts=pulumi.ResourceOptions.merge(
            serving, pulumi.ResourceOptions(replace_on_changes=list(immutable), ignore_changes=ignored)
        ),
    )


def watched_objects(plan: ModelPlan) -> list[Watched]:
    """The KAITO objects whose condition says the model serves."""
    if plan.readiness is None:
        return []
    return [
        Watched(m["kind"], m["apiVersion"], plan.namespace, m["metadata"]["name"], plan.readiness.condition)
        for m in plan.manifests()
    ]
