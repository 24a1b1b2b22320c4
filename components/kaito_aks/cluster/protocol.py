"""What the in-cluster components need of a cluster, whichever way it was made (AKS here;
another cloud is one more module that satisfies this protocol)."""

from __future__ import annotations

from typing import Protocol

import pulumi
import pulumi_kubernetes as k8s

from kaito_aks.waits.base import ClusterAccess


class Cluster(Protocol):
    provider: k8s.Provider  # the explicit provider every in-cluster resource uses
    access: ClusterAccess  # the same credentials, for the waits that read the cluster directly

    @property
    def cluster_name(self) -> pulumi.Input[str]: ...


def model_access_args(cluster: Cluster) -> dict[str, object]:
    """The KaitoModel args that let its waits reach `cluster` (kubeconfig, kubeconfig_path, context)."""
    access = cluster.access
    args: dict[str, object] = {}
    if access.kubeconfig is not None:
        args["kubeconfig"] = access.kubeconfig
    if access.path is not None:
        args["kubeconfig_path"] = access.path
    if access.context is not None:
        args["context"] = access.context
    return args
