"""The example program under Pulumi's mocks, as a test of your own program would run it."""

import runpy
from pathlib import Path

from kaito_aks.testing import run


def test_phi_serves_two_replicas_on_the_a100_pool() -> None:
    result = run(lambda: runpy.run_path(str(Path(__file__).with_name("__main__.py"))))
    workspaces = result.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    assert sorted(w.inputs["metadata"]["name"] for w in workspaces) == ["phi-0", "phi-1"]
    assert all(w.inputs["resource"]["labelSelector"] == {"matchLabels": {"agentpool": "a100"}} for w in workspaces)
    assert result.outputs["endpoint"] == "http://phi.default.svc.cluster.local/v1/chat/completions"
