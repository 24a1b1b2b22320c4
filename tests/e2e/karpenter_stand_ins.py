"""The stand-ins for Karpenter mode (KAITO 0.12 with nodeProvisioner karpenter, and self-hosted
Azure Karpenter 1.12): no KAITO controller, no Karpenter, no VM runs here, so these play them, in
their words, each saying it is a stand-in."""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

from harness import CREATED_BY, Cluster, StandIn, StandInKaito012, now_rfc3339

WORKSPACE_FINALIZER = "workspace.finalizer.kaito.sh"  # KAITO 0.12 consts.WorkspaceFinalizer
NODEPOOLS = "/apis/karpenter.sh/v1/nodepools"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
AKSNODECLASSES = "/apis/karpenter.azure.com/v1beta1/aksnodeclasses"
# The node classes KAITO 0.12's chart has it create (values.yaml karpenterProviders.azure), the
# first its default.
KAITO_NODE_CLASSES = (
    ("image-family-ubuntu", {"imageFamily": "Ubuntu2204", "osDiskSizeGB": 300}),
    ("image-family-azure-linux", {"imageFamily": "AzureLinux", "osDiskSizeGB": 300}),
)
NODE_CLASS_ANNOTATION = "kaito.sh/node-class-name"


def kaito_nodepool_name(namespace: str, workspace: str) -> str:
    """nodepool.go NodePoolName: <namespace>-<workspace>, cut to 63 characters with a hash."""
    full = f"{namespace}-{workspace}"
    return full if len(full) <= 63 else f"{full[:53]}-{hashlib.sha256(full.encode()).hexdigest()[:9]}"


def kaito_nodepool(ws: dict[str, Any], node_count: int) -> dict[str, Any]:
    """The NodePool KAITO 0.12 creates for a Workspace in Karpenter mode, as
    pkg/nodeprovision/karpenter/nodepool.go generateNodePool builds it (a name of at most 63
    characters: <namespace>-<workspace>; replicas: the Workspace's TargetNodeCount)."""
    meta = ws["metadata"]
    name, namespace = meta["name"], meta["namespace"]
    parent = (meta.get("labels") or {}).get(CREATED_BY)
    owner = {"karpenter.kaito.sh/workspace-name": name, "karpenter.kaito.sh/workspace-namespace": namespace}
    labels = {"karpenter.kaito.sh/managed-by": "kaito", **owner}
    template = {**owner, **(((ws.get("resource") or {}).get("labelSelector") or {}).get("matchLabels") or {})}
    if parent:
        extra = {"karpenter.kaito.sh/inferenceset": parent, "karpenter.kaito.sh/inferenceset-namespace": namespace}
        template |= extra
        labels |= extra
    node_class = (meta.get("annotations") or {}).get(NODE_CLASS_ANNOTATION) or KAITO_NODE_CLASSES[0][0]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": kaito_nodepool_name(namespace, name), "labels": labels},
        "spec": {
            "replicas": node_count,
            "template": {
                "metadata": {"labels": template},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": node_class},
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [ws["resource"]["instanceType"]]},
                        {"key": "karpenter.azure.com/placement-scope", "operator": "In", "values": ["regional"]},
                    ],
                    "taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
                },
            },
            "disruption": {
                "consolidateAfter": "0s",
                "budgets": [{"nodes": "0" if parent else "1", "reasons": ["Drifted"]}],
            },
        },
    }  # fmt: skip


class StandInKaito012Karpenter(StandInKaito012):
    """Stands in for KAITO 0.12.0 in Karpenter mode (nodeProvisioner: karpenter), in its words
    (v0.12.0 pkg/nodeprovision/karpenter): at start it creates its two AKSNodeClasses
    (karpenter.kaito.sh/managed-by: kaito, the default one karpenter.kaito.sh/default: "true");
    for a Workspace with an instanceType, once the node class it names (kaito.sh/node-class-name,
    else the default) is Ready, it creates the NodePool generateNodePool builds (`kaito_nodepool`,
    TargetNodeCount 1: one node per replica for the presets these tests serve), with its
    finalizer on the Workspace; the node is there once that NodePool's NodeClaims are Ready and a
    Ready node of the instance type carries the Workspace's name (EnsureNodesReady); a deleted
    Workspace's NodePool is deleted before its finalizer goes (workspace_gc_finalizer.go
    DeleteNodes). Everything else as StandInKaito012."""

    def __init__(self, cluster: Cluster, delay: float = 2.0):
        super().__init__(cluster, delay)
        self.nodepools: dict[str, dict[str, Any]] = {}  # name -> the NodePool as created

    def _reconcile_all(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._ensure_node_classes()
            self._finalize_workspaces()
        super()._reconcile_all()

    def _ensure_node_classes(self) -> None:
        have = {o["metadata"]["name"] for o in self.cluster.api("GET", AKSNODECLASSES)["items"]}
        for i, (name, spec) in enumerate(KAITO_NODE_CLASSES):
            if name in have:
                continue
            labels = {
                "karpenter.kaito.sh/managed-by": "kaito",
                **({"karpenter.kaito.sh/default": "true"} if i == 0 else {}),
            }
            body = {"apiVersion": "karpenter.azure.com/v1beta1", "kind": "AKSNodeClass",
                    "metadata": {"name": name, "labels": labels}, "spec": spec}  # fmt: skip
            self.cluster.api("POST", AKSNODECLASSES, body)

    def _finalize_workspaces(self) -> None:
        for ws in self.cluster.api("GET", "/apis/kaito.sh/v1beta1/workspaces")["items"]:
            meta = ws["metadata"]
            if not (ws.get("resource") or {}).get("instanceType"):
                continue
            path = f"/apis/kaito.sh/v1beta1/namespaces/{meta['namespace']}/workspaces/{meta['name']}"
            finalizers = list(meta.get("finalizers") or [])
            if meta.get("deletionTimestamp"):
                with contextlib.suppress(OSError):
                    self.cluster.api("DELETE", f"{NODEPOOLS}/{kaito_nodepool_name(meta['namespace'], meta['name'])}")
                rest = [f for f in finalizers if f != WORKSPACE_FINALIZER]
                self.cluster.api("PATCH", path, {"metadata": {"finalizers": rest or None}})
            elif WORKSPACE_FINALIZER not in finalizers:
                self.cluster.api("PATCH", path, {"metadata": {"finalizers": [*finalizers, WORKSPACE_FINALIZER]}})

    def _node_ready(self, obj: dict[str, Any], waited: float) -> bool:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return False
        pool = kaito_nodepool(obj, 1)
        name = pool["metadata"]["name"]
        node_class = pool["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        if name not in self.nodepools:
            classes = {o["metadata"]["name"]: o for o in self.cluster.api("GET", AKSNODECLASSES)["items"]}
            if not _condition_true(classes.get(node_class), "Ready"):
                return False  # checkNodeClassReady
            self.cluster.api("POST", NODEPOOLS, pool)
            self.nodepools[name] = pool
        claims = self.cluster.api("GET", f"{NODECLAIMS}?labelSelector=karpenter.sh%2Fnodepool%3D{name}")["items"]
        ready_claims = [c for c in claims if _condition_true(c, "Ready") and not c["metadata"].get("deletionTimestamp")]
        nodes = self.cluster.api(
            "GET", f"/api/v1/nodes?labelSelector=karpenter.kaito.sh%2Fworkspace-name%3D{meta['name']}"
        )
        instance = obj["resource"]["instanceType"]
        ready_nodes = [
            n for n in nodes["items"]
            if n["metadata"]["labels"].get("node.kubernetes.io/instance-type") == instance and _condition_true(n, "Ready")
        ]  # fmt: skip
        return len(ready_claims) >= 1 and len(ready_nodes) >= 1


def _condition_true(obj: dict[str, Any] | None, kind: str) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


class StandInKarpenter(StandIn):
    """Stands in for self-hosted Azure Karpenter 1.12 (no Azure, no VM here), in its words
    (sigs.k8s.io/karpenter's static provisioning and lifecycle controllers, the Azure provider's
    nodeclass status controller): it marks each AKSNodeClass Ready (as it does once the images,
    the Kubernetes version and the subnet check out); for each NodePool with `replicas` (static
    capacity) it makes that many NodeClaims (`<nodepool>-<5 characters>`, the template's labels
    plus karpenter.sh/nodepool, its nodeClassRef, requirements and taints, the karpenter.sh/termination
    finalizer), and for each a Node as the kubelet of the VM registers it (the NodeClaim's labels,
    the instance type its requirement names, its taints, Ready), then the NodeClaim's Launched,
    Registered, Initialized and Ready conditions. A NodeClaim whose NodePool is gone is deleted,
    and a deleted one takes its Node (the VM) before its finalizer goes."""

    def __init__(self, cluster: Cluster):
        super().__init__(cluster)
        self.nodes_made: dict[str, str] = {}  # NodeClaim -> Node
        self.terminated: list[str] = []  # NodeClaims whose node it removed, in order

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            with contextlib.suppress(OSError, ValueError):
                self._reconcile()

    def _reconcile(self) -> None:
        for nc in self.cluster.api("GET", AKSNODECLASSES)["items"]:
            if not _condition_true(nc, "Ready"):
                ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": now_rfc3339(),
                         "observedGeneration": nc["metadata"].get("generation", 1)}  # fmt: skip
                self.cluster.api(
                    "PATCH", f"{AKSNODECLASSES}/{nc['metadata']['name']}/status", {"status": {"conditions": [ready]}}
                )
        pools = {p["metadata"]["name"]: p for p in self.cluster.api("GET", NODEPOOLS)["items"]}
        claims = self.cluster.api("GET", NODECLAIMS)["items"]
        for claim in claims:
            meta = claim["metadata"]
            pool = meta.get("labels", {}).get("karpenter.sh/nodepool")
            if meta.get("deletionTimestamp"):
                self._terminate(claim)
            elif pool not in pools or pools[pool]["metadata"].get("deletionTimestamp"):
                self.cluster.api("DELETE", f"{NODECLAIMS}/{meta['name']}")
            elif not _condition_true(claim, "Ready"):
                self._launch(claim)
        for name, pool in pools.items():
            if pool["metadata"].get("deletionTimestamp"):
                continue
            have = [c for c in claims if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == name
                    and not c["metadata"].get("deletionTimestamp")]  # fmt: skip
            for _ in range(int(pool["spec"].get("replicas") or 0) - len(have)):
                self.cluster.api("POST", NODECLAIMS, self._claim(pool))

    @staticmethod
    def _claim(pool: dict[str, Any]) -> dict[str, Any]:
        template = pool["spec"]["template"]
        spec = template["spec"]
        owner = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": pool["metadata"]["name"],
                 "uid": pool["metadata"]["uid"], "blockOwnerDeletion": True}  # fmt: skip
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "generateName": f"{pool['metadata']['name']}-",
                "labels": {**template["metadata"]["labels"], "karpenter.sh/nodepool": pool["metadata"]["name"]},
                "finalizers": ["karpenter.sh/termination"],
                "ownerReferences": [owner],
            },
            "spec": {k: spec[k] for k in ("nodeClassRef", "requirements", "taints") if k in spec},
        }

    def _launch(self, claim: dict[str, Any]) -> None:
        meta, spec = claim["metadata"], claim["spec"]
        node = f"aks-{meta['name']}"
        instance = next(r["values"][0] for r in spec["requirements"] if r["key"] == "node.kubernetes.io/instance-type")
        if meta["name"] not in self.nodes_made:
            labels = {**meta["labels"], "node.kubernetes.io/instance-type": instance, "karpenter.sh/registered": "true"}
            self.cluster.create_gpu_node(node, labels, spec.get("taints") or [])
            self.nodes_made[meta["name"]] = node
        status = {
            "providerID": f"azure:///subscriptions/stand-in/resourceGroups/mc/providers/Microsoft.Compute/virtualMachines/{node}",
            "nodeName": node,
            "conditions": [
                {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": now_rfc3339()}
                for t in ("Launched", "Registered", "Initialized", "Ready")
            ],
        }
        self.cluster.api("PATCH", f"{NODECLAIMS}/{meta['name']}/status", {"status": status})

    def _terminate(self, claim: dict[str, Any]) -> None:
        meta = claim["metadata"]
        node = self.nodes_made.pop(meta["name"], None) or (claim.get("status") or {}).get("nodeName")
        if node:
            with contextlib.suppress(OSError):
                self.cluster.api("DELETE", f"/api/v1/nodes/{node}")
        self.terminated.append(meta["name"])
        rest = [f for f in meta.get("finalizers") or [] if f != "karpenter.sh/termination"]
        self.cluster.api("PATCH", f"{NODECLAIMS}/{meta['name']}", {"metadata": {"finalizers": rest or None}})
