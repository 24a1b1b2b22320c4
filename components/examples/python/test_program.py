"""The first program (__main__.py beside this file) under Pulumi's mocks, as a test of your own
program would run it: `pip install kaito-aks pytest`, then `pytest` in this folder. No cloud
account, no cluster, nothing else needed."""

import runpy
from pathlib import Path

from kaito_aks.testing import run


def test_phi_serves_two_replicas_on_the_a100_pool() -> None:
    result = run(lambda: runpy.run_path(str(Path(__file__).with_name("__main__.py"))))
    workspaces = {
        w.inputs["metadata"]["name"]: w.inputs for w in result.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    }
    assert sorted(workspaces) == ["phi-0", "phi-1", "tiny-0"]
    assert all(
        workspaces[n]["resource"]["labelSelector"] == {"matchLabels": {"agentpool": "a100"}} for n in ("phi-0", "phi-1")
    )
    assert result.outputs["endpoint"] == "http://phi.default.svc.cluster.local/v1/chat/completions"
    # the CPU model's pod keeps to its CPU pool, whatever tolerations KAITO adds
    assert workspaces["tiny-0"]["inference"]["template"]["spec"]["nodeSelector"] == {
        "kubernetes.azure.com/agentpool": "cpu"
    }
    assert result.named("cpu", "azure-native:containerservice:AgentPool").inputs["vmSize"] == "Standard_D8s_v5"
