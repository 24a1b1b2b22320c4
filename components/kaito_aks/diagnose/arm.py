"""Reading the Azure side where the caller has Azure credentials: gpu-provisioner's AKS agent
pools from Azure Resource Manager, with the Azure CLI's login (`az account get-access-token`),
through the same client as the cluster's (no redirect followed, one deadline, a bounded answer,
one-line errors). The token stays in memory; nothing prints it."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
from collections.abc import Callable
from typing import Any

from kaito_aks.parsed import is_dict
from kaito_aks.problems import bounded
from kaito_aks.waits.kube_client import KubeApiError, KubeClient, Reader

ARM = "https://management.azure.com"
RESOURCE = "https://management.azure.com/"  # the token's audience
# The ARM API of the agent pools' shape the library reads (status.provisioningError): the
# version pulumi-azure-native 3.29.0's containerservice module is generated from.
API_VERSION = "2025-09-01"
AZ_TIMEOUT_SECONDS = 30


class AgentPoolReader:
    """GETs of one AKS cluster's agent pools (gpu-provisioner names each after its NodeClaim)."""

    def __init__(self, client: Reader, subscription: str, resource_group: str, cluster: str):
        self.client = client
        q = urllib.parse.quote
        self.base = (
            f"/subscriptions/{q(subscription, safe='')}/resourceGroups/{q(resource_group, safe='')}"
            f"/providers/Microsoft.ContainerService/managedClusters/{q(cluster, safe='')}/agentPools"
        )

    def agent_pool(self, name: str) -> dict[str, Any] | None:
        """The agent pool's ARM resource; None when there is none of that name."""
        try:
            return self.client.get(f"{self.base}/{urllib.parse.quote(name, safe='')}", **{"api-version": API_VERSION})
        except KubeApiError as err:
            if err.status == 404:
                return None
            raise


def azure_cli_reader(
    resource_group: str,
    cluster: str,
    subscription: str | None = None,
    *,
    deadline: float | None = None,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> AgentPoolReader | str:
    """A reader of the cluster's agent pools with the Azure CLI's login, or why there is none (no
    `az`, not logged in): the Azure side is then not read."""
    az = shutil.which("az")
    if az is None:
        return "the Azure CLI (az) is not on PATH"
    cmd = [az, "account", "get-access-token", "--resource", RESOURCE, "--output", "json"]
    if subscription:
        cmd += ["--subscription", subscription]
    try:
        done = run(cmd, capture_output=True, text=True, timeout=AZ_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"`az account get-access-token` did not finish ({type(err).__name__})"
    if done.returncode != 0:
        said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        return f"`az account get-access-token` failed: {bounded((said or ['no message'])[-1])} (az login)"
    try:
        answer: object = json.loads(done.stdout)
    except ValueError:
        return "`az account get-access-token` did not print JSON"
    token = answer.get("accessToken") if is_dict(answer) else None
    found = answer.get("subscription") if is_dict(answer) else None
    if not isinstance(token, str) or not token:
        return "`az account get-access-token` gave no token"
    sub = subscription or (found if isinstance(found, str) else "")
    if not sub:
        return "no Azure subscription is known (az account set --subscription)"
    client = KubeClient.from_kubeconfig(
        {
            "clusters": [{"name": "arm", "cluster": {"server": ARM}}],
            "users": [{"name": "az", "user": {"token": token}}],
            "contexts": [{"name": "arm", "context": {"cluster": "arm", "user": "az"}}],
            "current-context": "arm",
        }
    )
    client.deadline = deadline
    return AgentPoolReader(client, sub, resource_group, cluster)
