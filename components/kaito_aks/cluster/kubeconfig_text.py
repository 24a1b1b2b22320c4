"""Kubeconfig contents, checked where they are known. Empty contents are the dangerous case:
the Kubernetes provider (and the waits) treat `kubeconfig: ""` as not given and read
$KUBECONFIG or ~/.kube/config, which may be another cluster. So an empty value is refused
wherever contents are taken, and contents known at preview must list a cluster."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

import yaml
from pulumi_azure_native import containerservice

from kaito_aks.parsed import is_dict
from kaito_aks.schema import Check, Input, Secret

T = TypeVar("T")
EMPTY = (
    "is empty, and the Kubernetes provider would then read $KUBECONFIG or ~/.kube/config (perhaps another "
    "cluster): give the kubeconfig's contents"
)


def kubeconfig_text_problem(text: str) -> str | None:
    """Why `text` is not a kubeconfig's contents (empty, not YAML, no clusters), or None. Never
    quotes the text: it holds credentials."""
    if not text.strip():
        return EMPTY
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return "is not a kubeconfig (not YAML)"
    if not is_dict(data) or not data.get("clusters"):
        return "is not a kubeconfig (it lists no clusters)"
    return None


def _contents_problem(value: object) -> str | None:
    return kubeconfig_text_problem(value) if isinstance(value, str) else None


KubeconfigContents = Annotated[Secret[Input[str]], Check(_contents_problem, shows_value=False)]
"""Kubeconfig contents, kept secret: when known at preview, checked (never empty, a cluster listed)."""


def require_contents(contents: T) -> T:
    """Contents that arrive at deploy time (an Output): never empty, so nothing falls back to
    the ambient kubeconfig. (Pulumi YAML hands a YAML-looking secret over already parsed, as a
    map: the waits read that too.)"""
    value: object = contents
    if (isinstance(value, str) and not value.strip()) or (is_dict(value) and not value) or value is None:
        raise ValueError(f"the kubeconfig contents {EMPTY}")
    return contents


def user_kubeconfig(name: str, kubeconfigs: Sequence[containerservice.outputs.CredentialResultResponse] | None) -> str:
    """The user kubeconfig Azure lists for the cluster. None there (Pulumi's plain test mocks
    answer every call with {}) is an error that says what to answer, not a TypeError."""
    if not kubeconfigs:
        raise ValueError(
            f"AksCluster {name!r}: Azure listed no user kubeconfig for the cluster; under test mocks, answer "
            "azure-native:containerservice:listManagedClusterUserCredentials with "
            "{'kubeconfigs': [{'name': 'clusterUser', 'value': <base64 kubeconfig>}]}, as "
            "kaito_aks.testing.ProgramMocks does"
        )
    return base64.b64decode(kubeconfigs[0].value).decode()
