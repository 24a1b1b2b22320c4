"""Why isn't it serving: the failure library. A model serves through a chain of links, from the
Azure node pool to the gateway (`chain.CHAIN`); `diagnose` reads one model's chain from the
cluster and names the first broken link, what it means and the fix, with every link's state.
Each broken link is found by a small named detector (`DETECTORS`) that cites the upstream field
or message it reads; `python -m stacks status` and the waits share them."""

from __future__ import annotations

from kaito_aks.diagnose import azure, cluster, serving, workload
from kaito_aks.diagnose.chain import CHAIN, Diagnosis, Finding, Link, redacted
from kaito_aks.diagnose.registry import DETECTORS, Detector
from kaito_aks.diagnose.walk import AgentPools, LogReader, OneLook, Route, Subject, diagnose, explain_nodes

__all__ = [
    "CHAIN",
    "DETECTORS",
    "AgentPools",
    "Detector",
    "Diagnosis",
    "Finding",
    "Link",
    "LogReader",
    "OneLook",
    "Route",
    "Subject",
    "azure",
    "cluster",
    "diagnose",
    "explain_nodes",
    "redacted",
    "serving",
    "workload",
]
