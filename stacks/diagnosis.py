"""`status` explains: for each model that does not serve (or is routed, or autoscaled), the
failure library's walk of its chain (kaito_aks.diagnose), with what the stack knows of it: its
route and gateway, its autoscaler, its nodes of your own and presets (for a Workspace KAITO's
webhook refused), and, on an AKS stack whose KAITO makes nodes with gpu-provisioner, the agent
pools in Azure (read with the Azure CLI's login through kaito_aks.azure.arm, only when a
NodeClaim has not launched)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kaito_aks import catalog
from kaito_aks.azure.arm import AgentPoolReader, LiveArm, NotCheckedError, az_cli_reader
from kaito_aks.diagnose import Diagnosis, OneLook, Route, Subject, diagnose
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.vocabulary import GpuDemand
from kaito_aks.waits.model_ready import Watched
from kaito_aks.waits.status import ModelStatus
from stacks.stackfile import StackFile


@dataclass
class AzureSide:
    """An AKS stack whose KAITO makes its nodes with gpu-provisioner: where its agent pools are.
    The reader is made once, when a NodeClaim first needs it (`az account get-access-token`), or
    why there is none (no `az`, not logged in): the Azure side is then not read."""

    resource_group: str
    cluster: str
    subscription: str | None = None
    environment: str | None = None  # azure-native's cloud
    made: list[AgentPoolReader | str] = field(default_factory=list[AgentPoolReader | str])

    def reader(self, deadline: float | None) -> AgentPoolReader | str:
        if not self.made:
            try:  # no budget of its own: each reading has its deadline (a --watch reads for minutes)
                arm, sub = az_cli_reader(self.subscription, self.environment, budget=math.inf, deadline=deadline)
                self.made.append(AgentPoolReader(arm, sub, self.resource_group, self.cluster))
            except NotCheckedError as why:
                self.made.append(str(why))
        made = self.made[0]
        if isinstance(made, AgentPoolReader) and isinstance(made.arm, LiveArm):
            made.arm.deadline = deadline  # each reading's own
        return made


def azure_side(f: StackFile, outputs: dict[str, Any]) -> AzureSide | None:
    """The stack's AKS cluster (cluster.aks or cluster.existing: resourceGroup, name) when its
    charts output says gpu-provisioner runs; None otherwise (Karpenter makes VMs, BYO makes none)."""
    charts = outputs.get("charts")
    if not is_dict(charts) or not charts.get("gpuProvisioner"):
        return None
    given = f.config.get("kaito-aks:cluster")
    aks = next((given.get(k) for k in ("aks", "existing") if is_dict(given) and is_dict(given.get(k))), None)
    if not is_dict(aks):
        return None
    group, name = aks.get("resourceGroup"), aks.get("name")
    if not isinstance(group, str) or not isinstance(name, str):
        return None
    subscription, cloud = f.config.get("azure-native:subscriptionId"), f.config.get("azure-native:environment")
    return AzureSide(
        group, name, subscription if isinstance(subscription, str) else None, cloud if isinstance(cloud, str) else None
    )


def picker_label(kaito_version: str | None) -> str:
    """The label key of the endpoint picker's pods on the stack's KAITO release (not known, or one
    this program does not route on: the newest that it does), from catalog/kaito_charts.yaml."""
    charts = catalog.kaito_charts()
    chart = charts.get(kaito_version or "")
    if chart is None or chart.serving is None:
        chart = max((c for c in charts.values() if c.serving is not None), key=lambda c: c.minor)
    assert chart.serving is not None
    return chart.serving.endpoint_picker.pod_label


def subject_of(
    key: str,
    entry: dict[str, Any],
    watched: tuple[Watched, ...],
    gateway: dict[str, Any] | None,
    kaito_version: str | None,
    *,
    serving: bool,
    selector: dict[str, str] | None = None,
    demands: tuple[GpuDemand, ...] = (),
) -> Subject:
    """A model as `diagnose` reads it, from its outputs (and the stack file's plan)."""
    route = entry.get("route")
    reach: Route | None = None
    if is_dict(route):
        gw = (str(gateway["namespace"]), str(gateway["name"])) if gateway and gateway.get("name") else None
        auth = gateway.get("authentication") if gateway else None
        keys = auth.get("apiKeys") if is_dict(auth) else None
        authenticated = is_dict(auth) and ((is_list(keys) and bool(keys)) or bool(auth.get("entra")))
        reach = Route(dict(route), picker_label(kaito_version), gw, gw if authenticated else None)
    scaled = key.partition("/")[2] if is_dict(entry.get("autoscaling")) else None
    return Subject(key, watched, reach, scaled, selector, demands, serving=serving, kaito_version=kaito_version)


def explain(
    look: OneLook,
    subject: Subject,
    azure: AzureSide | None,
    deadline: float | None,
    clock: Callable[[], float] = time.time,
) -> Diagnosis | None:
    """The model's chain, when there is something to look at: it does not serve, or it is
    routed or autoscaled (links KAITO does not report on). A NodeClaim that has not launched
    brings the Azure side in (read once per run)."""
    if subject.serving and subject.route is None and subject.scaled is None:
        return None
    found = diagnose(look, subject, clock=clock)
    claims = found.link("nodeclaims")
    if azure is not None and claims is not None and claims.state in ("broken", "waiting"):
        found = diagnose(look, subject, arm=azure.reader(deadline), clock=clock)
    return found


def needs_telling(d: Diagnosis | None, status: ModelStatus) -> bool:
    """Whether to print the chain: the model does not serve, or a link of it is broken."""
    return d is not None and d.first is not None and (status.state != "serving" or d.broken)


def lines(d: Diagnosis) -> list[str]:
    return ["    " + line for line in d.lines()]
