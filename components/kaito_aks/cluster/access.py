"""How components reach a cluster: the explicit Kubernetes provider every in-cluster resource uses,
and the same credentials for the waits, which read the cluster themselves (GPU nodes labelled,
a model serving). One channel: a `ClusterProvider` carries both, so a component given that
provider needs no second copy of the credentials."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.cluster.kubeconfig_text import require_contents
from kaito_aks.problems import Problem


@dataclass(frozen=True)
class ClusterAccess:
    """The cluster's kubeconfig, as the Kubernetes provider reads it: contents (a secret Output),
    else a file, else $KUBECONFIG / ~/.kube/config; and the context."""

    kubeconfig: pulumi.Input[str] | None = None
    path: str | None = None
    context: str | None = None
    after: tuple[pulumi.Resource, ...] = ()
    """What must exist before these credentials work (an AksCluster's wait for its admins' Azure
    role assignments to take effect): every wait reading the cluster with them depends on it."""

    def contents(self) -> pulumi.Output[str] | None:
        """The contents as a secret, refused at deploy time if they arrive empty (an Output known
        only then): empty contents would mean $KUBECONFIG or ~/.kube/config."""
        if self.kubeconfig is None:
            return None
        return pulumi.Output.secret(self.kubeconfig).apply(require_contents)

    def props(self) -> dict[str, Any]:
        """What a wait sends its provider: the contents only as a secret."""
        return {
            "kubeconfig": self.contents(),
            "kubeconfigPath": self.path,
            "context": self.context,
        }


class ClusterProvider(k8s.Provider):
    """A Kubernetes provider that remembers how it reaches its cluster (`access`), so the waits
    of a component deployed through it use the very same credentials."""

    access: ClusterAccess

    def __init__(self, name: str, access: ClusterAccess, opts: pulumi.ResourceOptions | None = None):
        kubeconfig = access.contents() if access.kubeconfig is not None else access.path
        # pulumi_kubernetes leaves the __props__ parameter of Provider.__init__ untyped.
        super().__init__(name, kubeconfig=kubeconfig, context=access.context, opts=opts)  # pyright: ignore[reportUnknownMemberType]
        self.access = access


class KubernetesCluster(Protocol):
    """What the in-cluster components need of a cluster, whichever way it was made (AksCluster,
    KubeconfigCluster; another cloud is one more component with these two attributes)."""

    provider: ClusterProvider
    """The explicit provider every in-cluster resource uses (pass it in `opts`)."""

    @property
    def cluster_name(self) -> pulumi.Output[str]: ...


KUBERNETES = "kubernetes"
NO_PROVIDER = (
    "no Kubernetes provider: deploy through AksCluster.provider / KubeconfigCluster.provider or pass a kubernetes "
    "Provider in opts (e.g. ResourceOptions(providers=[cluster.provider])); Pulumi's default provider would use "
    "$KUBECONFIG or ~/.kube/config, which may be another cluster"
)


def kubernetes_provider(opts: pulumi.ResourceOptions | None) -> pulumi.ProviderResource | None:
    """The Kubernetes provider a component's children use: `opts.provider`, one in
    `opts.providers`, or one the parent passes down (None: Pulumi's default provider)."""
    if opts is None:
        return None
    if isinstance(opts.provider, pulumi.ProviderResource) and opts.provider.package == KUBERNETES:
        return opts.provider
    providers: Any = opts.providers
    found: Any = None
    if isinstance(providers, Mapping):
        found = cast(Mapping[str, Any], providers).get(KUBERNETES)
    elif isinstance(providers, Sequence):
        found = next((p for p in cast(Sequence[Any], providers) if getattr(p, "package", None) == KUBERNETES), None)
    if isinstance(found, pulumi.ProviderResource):
        return found
    if isinstance(opts.parent, pulumi.Resource):
        return opts.parent.get_provider(f"{KUBERNETES}:core/v1:Service")
    return None


def provider_problems(opts: pulumi.ResourceOptions | None) -> list[Problem]:
    """An in-cluster component needs an explicit Kubernetes provider: never the ambient kubeconfig."""
    return [] if kubernetes_provider(opts) is not None else [Problem(("opts",), NO_PROVIDER, "no-provider")]


def access_of(opts: pulumi.ResourceOptions | None) -> ClusterAccess | None:
    """The credentials of the Kubernetes provider in `opts` (or inherited from the parent) when
    it is a ClusterProvider."""
    provider = kubernetes_provider(opts)
    return provider.access if isinstance(provider, ClusterProvider) else None


def access_for(
    kubeconfig: pulumi.Input[str] | None, context: str | None, opts: pulumi.ResourceOptions | None
) -> ClusterAccess | None:
    """The credentials a component's waits read the cluster with: its own `kubeconfig` (and
    `context`), else its ClusterProvider's (with `context`, when given, over the provider's)."""
    if kubeconfig is not None:
        return ClusterAccess(kubeconfig=kubeconfig, context=context)
    found = access_of(opts)
    if found is not None and context is not None:
        return replace(found, context=context)
    return found
