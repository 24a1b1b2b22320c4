"""An existing Kubernetes cluster reached through a kubeconfig (the bring-your-own-cluster path)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.options import child_options
from kaito_aks.waits.base import ClusterAccess


@dataclass(frozen=True)
class KubeconfigClusterArgs:
    path: str | None = None  # kubeconfig file; None: the provider's default ($KUBECONFIG, ~/.kube/config)
    context: str | None = None  # None: the kubeconfig's current context
    contents: pulumi.Output[str] | None = None  # secret kubeconfig contents, instead of a path


class KubeconfigCluster(pulumi.ComponentResource):
    """Any existing cluster: the explicit Kubernetes provider every Kubernetes resource of the
    stack uses, and `access` for the waits. Satisfies `kaito_aks.cluster.Cluster`."""

    provider: k8s.Provider

    def __init__(self, name: str, args: KubeconfigClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("kaito-aks:kubernetes:KubeconfigCluster", name, None, opts)
        kubeconfig = pulumi.Output.secret(args.contents) if args.contents is not None else args.path
        self.provider = k8s.Provider(
            name,
            kubeconfig=kubeconfig,
            context=args.context,
            opts=child_options(self, opts),
        )
        self.access = ClusterAccess(kubeconfig=args.contents, path=args.path, context=args.context)
        self.cluster_name = args.context or "kubeconfig"
        self.register_outputs({"context": args.context})
