"""A program written outside this repository gets every check the stack gets: the library alone
refuses what the stack's config would be refused for, before anything registers (review 1:
B3, B4, B5, G1, G2, G4, G7)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from kaito_aks import (
    InvalidArgsError,
    KaitoModel,
    KaitoModelArgs,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    LabelSelectorArgs,
    NodeGroup,
    RagEngine,
    RagEngineArgs,
)
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, reveal, run

A100 = "Standard_NC24ads_A100_v4"
T4 = "Standard_NC4as_T4_v3"
KUBECONFIG = MOCK_KUBECONFIG.format(cluster="dev")
WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
PHI = "phi-4-mini-instruct"


def refused(program: Any) -> str:
    """The InvalidArgsError a program raises; nothing registered but the program's own cluster."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)
    own = ("pulumi:providers:kubernetes", "kaito-aks:index:KubeconfigCluster")
    assert [r.type for r in monitor.registrations if r.type not in own] == []
    return str(err.value)


def cluster() -> KubeconfigCluster:
    return KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=KUBECONFIG))


def through(c: KubeconfigCluster) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(providers=[c.provider])


def pool(name: str, vm_size: str = A100, **kw: Any) -> NodeGroup:
    return NodeGroup(name=name, vm_size=vm_size, labels={"agentpool": name, "nvidia.com/gpu.present": "true"}, **kw)


def on_pool(name: str, **kw: Any) -> KaitoModelArgs:
    return KaitoModelArgs(
        kaito_version=kw.pop("kaito_version", "0.8.1"),
        model=PHI,
        label_selector=LabelSelectorArgs(match_labels={"agentpool": name}),
        **kw,
    )


# ---------------------------------------------------------------- B3: empty kubeconfig contents


@pytest.mark.parametrize("contents", ["", "   \n"])
def test_empty_kubeconfig_contents_are_refused_never_the_ambient_kubeconfig(contents: str):
    message = refused(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=contents)))
    assert "args.kubeconfig: is empty, and the Kubernetes provider would then read $KUBECONFIG" in message
    message = refused(
        lambda: KaitoModel(
            "m", KaitoModelArgs(kaito_version="0.8.1", model=PHI, kubeconfig=contents), opts=through_plain()
        )
    )
    assert "args.kubeconfig: is empty" in message
    message = refused(
        lambda: RagEngine("r", RagEngineArgs(kaito_version="0.12.0", kubeconfig=contents), opts=through_plain())
    )
    assert "args.kubeconfig: is empty" in message


def test_kubeconfig_contents_known_at_preview_must_list_a_cluster():
    message = refused(
        lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig="apiVersion: v1\nkind: Config\n"))
    )
    assert "args.kubeconfig: is not a kubeconfig (it lists no clusters)" in message
    message = refused(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig="token: [s3cret")))
    assert "args.kubeconfig: is not a kubeconfig (not YAML)" in message
    assert "s3cret" not in message  # never quoted: it holds credentials


def test_kubeconfig_contents_known_only_at_deploy_time_fail_the_provider_when_empty():
    with pytest.raises(Exception, match="the kubeconfig contents is empty"):
        run(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=pulumi.Output.from_input(""))))
    ev = run(lambda: KubeconfigCluster("c", KubeconfigClusterArgs(kubeconfig=pulumi.Output.from_input(KUBECONFIG))))
    assert reveal(ev.named("c", "pulumi:providers:kubernetes").inputs["kubeconfig"]) == KUBECONFIG


def through_plain() -> pulumi.ResourceOptions:
    """An explicit provider that gives the waits no credentials."""
    return pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(KUBECONFIG)))
