"""Replicas that follow the load: KEDA, and KAITO's keda-kaito-scaler in KEDA's namespace, paired
with the KAITO release. The scaler reads the scaledobject.kaito.sh/* annotations an autoscaled
model's InferenceSet carries (KaitoModelArgs.autoscale) and makes its KEDA ScaledObject."""

from __future__ import annotations

from typing import Annotated

import pulumi

from kaito_aks import catalog
from kaito_aks.capacity import Capacity, pods_of
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.cluster.access import provider_problems
from kaito_aks.operators.helm import ChartRelease, pinned_release
from kaito_aks.options import child_options, component_type
from kaito_aks.problems import Problem
from kaito_aks.schema import DNS_LABEL, args_class
from kaito_aks.validation import checked_args
from kaito_aks.vocabulary import Installed, KedaSource

TYPE = "kaito-aks:index:KedaAutoscaling"
FORMER_TYPES: tuple[str, ...] = ()  # (new in 0.4.0: no former type to alias)
INSTALL_TIMEOUT_SECONDS = 600


@args_class
class KedaAutoscalingArgs:
    """KEDA and keda-kaito-scaler for the KAITO release the cluster runs."""

    kaito_version: str
    """The KAITO release the cluster runs: picks keda-kaito-scaler (0.12.0: 0.6.2, for InferenceSet v1beta1)."""
    keda: KedaSource = "chart"
    """chart: KEDA from its pinned chart; addon: the AKS KEDA add-on's (AksCluster `keda`), in
    kube-system; existing: a KEDA that runs already (in `namespace`)."""
    scaler: Installed = "install"
    """keda-kaito-scaler: install (its pinned chart, in KEDA's namespace) or existing."""
    namespace: Annotated[str, DNS_LABEL] | None = None
    """KEDA's namespace, where the scaler must run too; default: keda, or kube-system with addon."""


def keda_autoscaling_problems(args: KedaAutoscalingArgs) -> list[Problem]:
    unsupported = catalog.unsupported_kaito_version(args.kaito_version)
    if unsupported is not None:
        return [Problem.at("kaito_version", unsupported, "version")]
    chart = catalog.kaito_charts()[args.kaito_version]
    refusal = catalog.serving_refusal(chart)
    problems = [Problem.at("kaito_version", refusal, "serving-release")] if refusal is not None else []
    pins = catalog.serving_charts().keda
    if args.keda == "addon" and args.namespace not in (None, pins.add_on_namespace):
        problems.append(
            Problem.at(
                "namespace",
                f"the AKS KEDA add-on runs KEDA in {pins.add_on_namespace}, where the scaler must run too: remove it",
                "keda-namespace",
            )
        )
    return problems


def keda_namespace(args: KedaAutoscalingArgs) -> str:
    pins = catalog.serving_charts().keda
    return args.namespace or (pins.add_on_namespace if args.keda == "addon" else pins.namespace or "keda")


def scaler_version(kaito_version: str) -> str | None:
    serving = catalog.kaito_charts()[kaito_version].serving
    return serving.keda_kaito_scaler if serving is not None else None


def scaler_release(args: KedaAutoscalingArgs) -> ChartRelease:
    source = catalog.serving_charts().keda_kaito_scaler
    version = scaler_version(args.kaito_version) or ""
    return ChartRelease(source.repository, source.chart, version, source.release_name, keda_namespace(args), {})


def keda_autoscaling_capacity(args: KedaAutoscalingArgs) -> Capacity:
    """KEDA's three pods when it installs KEDA's chart, and keda-kaito-scaler when it installs it,
    for the capacity budget."""
    data = pod_requests().pods
    pods = pods_of(data.keda.get(catalog.serving_charts().keda.version, [])) if args.keda == "chart" else ()
    scaler = scaler_version(args.kaito_version) if args.kaito_version in catalog.kaito_charts() else None
    if args.scaler == "install" and scaler is not None:
        pods += pods_of(data.keda_kaito_scaler.get(scaler, []))
    return Capacity(pods=pods)


class KedaAutoscaling(pulumi.ComponentResource):
    """KEDA (its chart, the AKS add-on's, or one already there) and keda-kaito-scaler beside it,
    paired with the KAITO release. Deploy it through the cluster's Kubernetes provider."""

    namespace: pulumi.Output[str]
    """KEDA's namespace, where the scaler runs."""
    keda_version: pulumi.Output[str]
    """The KEDA chart installed, or who runs KEDA (the AKS add-on, existing)."""
    scaler_version: pulumi.Output[str]
    """The keda-kaito-scaler chart paired with the KAITO release."""
    capacity: Capacity
    """What it runs on the non-GPU nodes, for the capacity budget (`deploy_models`' `capacity`)."""

    def __init__(self, name: str, args: KedaAutoscalingArgs, opts: pulumi.ResourceOptions | None = None):
        checked = checked_args(
            "KedaAutoscaling", name, KedaAutoscalingArgs, args, keda_autoscaling_problems, also=provider_problems(opts)
        )
        super().__init__(TYPE, name, None, component_type(opts, FORMER_TYPES))
        args = checked
        self.capacity = keda_autoscaling_capacity(args)
        child = child_options(self, opts)
        namespace = keda_namespace(args)
        pins = catalog.serving_charts().keda
        keda: list[pulumi.Resource] = []
        if args.keda == "chart":
            keda.append(
                pinned_release(f"{name}/keda", ChartRelease.pinned(pins, namespace, {}), INSTALL_TIMEOUT_SECONDS, child)
            )
        if args.scaler == "install":
            pinned_release(
                f"{name}/keda-kaito-scaler",
                scaler_release(args),
                INSTALL_TIMEOUT_SECONDS,
                pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=keda)),
            )
        self.namespace = pulumi.Output.from_input(namespace)
        self.keda_version = pulumi.Output.from_input(
            pins.version if args.keda == "chart" else "the AKS add-on" if args.keda == "addon" else "existing"
        )
        self.scaler_version = pulumi.Output.from_input(scaler_version(args.kaito_version) or "")
        self.register_outputs(
            {"namespace": self.namespace, "kedaVersion": self.keda_version, "scalerVersion": self.scaler_version}
        )
