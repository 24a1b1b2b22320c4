"""How components reach a cluster: the explicit Kubernetes provider every in-cluster resource uses,
and the same credentials for the waits, which read the cluster themselves (GPU nodes labelled,
a model serving). One channel: a `ClusterProvider` carries both, so a component given that
provider needs no second copy of the credentials."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.cluster.kubeconfig_text import require_contents


@dataclass(frozen=True)
class ClusterAccess:
    """The cluster's kubeconfig, as the Kubernetes provider reads it: contents (a secret Output),
    else a file, else $KUBECONFIG / ~/.kube/config; and the context."""

    kubeconfig: pulumi.Input[str] | None = None
    path: str | None = None
    context: str | None = None

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


def access_of(opts: pulumi.ResourceOptions | None) -> ClusterAccess | None:
    """The credentials of the Kubernetes provider in `opts` when it is a ClusterProvider."""
    if opts is None:
        return None
    candidates: list[Any] = [opts.provider]
    providers = opts.providers
    if isinstance(providers, Mapping):
        candidates.append(providers.get("kubernetes"))
    elif isinstance(providers, list):
        candidates += providers
    for p in candidates:
        if isinstance(p, ClusterProvider):
            return p.access
    return None
