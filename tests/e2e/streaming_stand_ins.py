"""The stand-in for KAITO 0.12.0 with its ModelMirror and ModelStreaming gates on: no KAITO
controller, Blob CSI driver, download Job or GPU runs here, so this plays them, in KAITO's words
(v0.12.0 source), saying it is a stand-in."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import urllib.error
from typing import Any

from harness import Cluster, StandInKaito012, now_rfc3339

from kaito_aks import catalog

MIRRORS = "/apis/kaito.sh/v1alpha1/modelmirrors"
# pkg/modelmirror/consts/consts.go@v0.12.0
MIRROR_FINALIZER = "kaito.sh/model-mirror-cleanup"
PVC_FINALIZER = "kaito.sh/model-mirror-protection"
STREAMING_ANNOTATION = "kaito.sh/model-streaming"
STORAGE_CLASS_ANNOTATION = "kaito.sh/model-mirror-storage-class"
SERVICE_ACCOUNT_ANNOTATION = "kaito.sh/streaming-service-account"
CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"  # azure/auth.go ValidateStreamingServiceAccount
BLOB_CSI_DRIVER = "blob.csi.azure.com"  # consts.CSIDriverNameForCloud("azure")
RUNTIME_ANNOTATION = "kaito.sh/runtime"
# What the stand-in reports as the download's average speed (bytes/s): nothing is downloaded here.
STAND_IN_SPEED = 200 * 2**20


def mirror_name(model_id: str) -> str:
    """modelstreaming.ModelMirrorCRName: the first 6 hex characters of the id's SHA-256."""
    return hashlib.sha256(model_id.encode()).hexdigest()[:6]


def hf_model_id(preset: str) -> str:
    """plugin.ResolveHFModelID: a legacy preset name's catalog id (looked up in lower case), else
    the name as written."""
    code = catalog.catalog_code("0.12")
    return (code.legacy_aliases if code is not None else {}).get(preset.lower(), preset)


class StreamingRefusalError(Exception):
    """What ensureModelMirror returns as a streamingValidationError: its reason and its text."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _go_quote(text: str) -> str:
    return json.dumps(text)  # Go's %q, for the ASCII names here


class StandInKaito012Streaming(StandInKaito012):
    """Stands in for KAITO 0.12.0 installed with featureGates ModelMirror and ModelStreaming on and
    the chart's defaultModelMirrorStorageClass / defaultStreamingServiceAccount
    (`storage_class`, `service_account`), in its words (v0.12.0):

    - the workspace controller (pkg/workspace/controllers/workspace_controller.go
      ensureModelMirror, waitForModelMirror, syncWorkspaceStatus), for a Workspace with a preset
      that streams (modelstreaming.ModelStreamingEnabled: the vLLM runtime, no
      kaito.sh/model-streaming: disabled): resolves the Hugging Face id (plugin.ResolveHFModelID)
      and the mirror's name (its SHA-256's first 6 hex characters); unless that ModelMirror
      exists (same id, else a name collision), checks the StorageClass (annotation, else the
      default; it must exist with provisioner blob.csi.azure.com) and the ServiceAccount (annotation,
      else the default; it must exist in the Workspace's namespace with azure.workload.identity/
      client-id), then creates the cluster-scoped ModelMirror: mode Managed, source huggingface
      with the id (and the model access Secret), storage of the model's DiskStorageRequirement
      (the catalog's model size + 80 GiB, generator.go) in that StorageClass, jobNamespace the
      Workspace's, serviceAccountName. Until the mirror is Ready the Workspace is held:
      ModelMirrorReady False (ModelMirrorPending, "Model download in progress"), ResourceReady False
      ModelMirrorNotReady; a refused check holds it with ResourceReady "Model download has not
      started (last reconcile error: ...)" and InferenceReady False with the check's reason. Once
      Ready: ModelMirrorReady True, then the inference as StandInKaito012;
    - the ModelMirror controller (pkg/modelmirror/controllers/modelmirror_controller.go): its
      finalizer, the PVC named after it in jobNamespace (ReadWriteMany, the size and class,
      KAITO's PVC finalizer), StorageReady True PVCBound once bound; while downloading,
      status.download (speedBytesPerSecond, remainingSeconds; phase not yet set), as the
      sampler reports it; after `download_seconds` (or, for names in `downloading`, once the test
      takes them out) phase Ready, modelPath /models/<id>, download 0/0, Ready True
      DownloadSucceeded. No download Job or pod is made (no Job controller, kubelet or network
      here); the stand-in's numbers are its own (STAND_IN_SPEED);
    - the Blob CSI driver: the PVC bound (status.phase Bound), as the driver binds it once it has
      made the container."""

    def __init__(
        self,
        cluster: Cluster,
        delay: float = 2.0,
        storage_class: str = "blob-fuse",
        service_account: str = "kaito-model-streamer",
        download_seconds: float = 2.0,
    ):
        super().__init__(cluster, delay)
        self.storage_class, self.service_account = storage_class, service_account
        self.download_seconds = download_seconds
        self.downloading: set[str] = set()  # mirrors whose download goes on until the test takes them out
        self.started: dict[str, float] = {}  # mirror -> when its download started
        self.mirror_ready_at: dict[str, float] = {}
        self.created: dict[str, dict[str, Any]] = {}  # mirror -> the ModelMirror as the stand-in created it

    def _reconcile_all(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._reconcile_mirrors()
        super()._reconcile_all()

    # ------------------------------------------------------------------ the workspace controller

    def _weights(self, plural: str, obj: dict[str, Any], generation: int) -> tuple[bool, list[dict[str, Any]]]:
        if plural != "workspaces" or not self._streams(obj):
            return False, []
        c = self._condition
        try:
            mirror = self._ensure_mirror(obj)
        except StreamingRefusalError as err:
            waiting = f"(last reconcile error: {err})"
            return True, [
                c("ResourceReady", "False", "ModelMirrorNotReady", f"Model download has not started {waiting}", generation),
                c("InferenceReady", "False", err.reason, str(err), generation),
                c("WorkspaceSucceeded", "False", "workspacePending", f"workspace is waiting for inference workload readiness {waiting}", generation),
            ]  # fmt: skip
        status = mirror.get("status") or {}
        if status.get("phase") == "Ready":
            return False, [c("ModelMirrorReady", "True", "ModelMirrorReady", "Model download complete", generation)]
        said = status.get("failureMessage") or "Model download in progress"
        ready = next((x for x in status.get("conditions") or [] if x["type"] == "Ready"), None)
        reason = (
            ready["reason"] if ready and ready["status"] != "True" and ready.get("reason") else "ModelMirrorPending"
        )
        return True, [
            c("ModelMirrorReady", "False", reason, said, generation),
            c("ResourceReady", "False", "ModelMirrorNotReady", said, generation),
            c("InferenceReady", "False", "WorkspaceInferenceStatusPending", "Inference workload is not ready", generation),
            c("WorkspaceSucceeded", "False", "workspacePending", "workspace is waiting for inference workload readiness", generation),
        ]  # fmt: skip

    @staticmethod
    def _streams(ws: dict[str, Any]) -> bool:
        annotations = ws["metadata"].get("annotations") or {}
        preset = ((ws.get("inference") or {}).get("preset") or {}).get("name")
        return (
            bool(preset)
            and annotations.get(STREAMING_ANNOTATION) != "disabled"
            and (annotations.get(RUNTIME_ANNOTATION) != "transformers")
        )

    def _get(self, path: str) -> dict[str, Any] | None:
        try:
            return dict(self.cluster.api("GET", path))
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise

    def _ensure_mirror(self, ws: dict[str, Any]) -> dict[str, Any]:
        meta, preset = ws["metadata"], ws["inference"]["preset"]
        annotations, ns = meta.get("annotations") or {}, meta["namespace"]
        model_id = hf_model_id(preset["name"])
        name = mirror_name(model_id)
        existing = self._get(f"{MIRRORS}/{name}")
        if existing is not None:
            had = ((existing.get("spec") or {}).get("source") or {}).get("modelID")
            if had is not None and had != model_id:
                raise StreamingRefusalError(
                    "ModelMirrorCreateFailed",
                    f"ModelMirror CR name collision: {name} maps to both {_go_quote(had)} and {_go_quote(model_id)}",
                )
            return existing
        storage_class = annotations.get(STORAGE_CLASS_ANNOTATION) or self.storage_class
        found = self._get(f"/apis/storage.k8s.io/v1/storageclasses/{storage_class}")
        if found is None:
            raise StreamingRefusalError(
                "ModelStreamingStorageClassNotFound",
                f'StorageClass {_go_quote(storage_class)} not found: storageclasses.storage.k8s.io "{storage_class}" '
                "not found",
            )
        if found.get("provisioner") != BLOB_CSI_DRIVER:
            raise StreamingRefusalError(
                "ModelStreamingInvalidStorageClass",
                f"StorageClass {_go_quote(storage_class)} uses provisioner {_go_quote(found.get('provisioner', ''))}, "
                f"but model streaming requires {_go_quote(BLOB_CSI_DRIVER)}; create a StorageClass with the correct "
                "provisioner",
            )
        account = annotations.get(SERVICE_ACCOUNT_ANNOTATION) or self.service_account
        sa = self._get(f"/api/v1/namespaces/{ns}/serviceaccounts/{account}")
        if sa is None:
            raise StreamingRefusalError(
                "ModelStreamingServiceAccountInvalid",
                f'ServiceAccount {_go_quote(account)} not found in namespace {_go_quote(ns)}: serviceaccounts "{account}" '
                "not found",
            )
        if not (sa["metadata"].get("annotations") or {}).get(CLIENT_ID_ANNOTATION):
            raise StreamingRefusalError(
                "ModelStreamingServiceAccountInvalid",
                f"ServiceAccount {_go_quote(account)} is missing annotation {CLIENT_ID_ANNOTATION}; workload identity "
                "must be configured for model streaming",
            )
        model = catalog.find_preset(preset["name"], "0.12")
        if model is None:
            raise StreamingRefusalError(
                "ModelMirrorCreateFailed", f"failed to resolve model for streaming: {preset['name']} (stand-in)"
            )
        secret = (preset.get("presetOptions") or {}).get("modelAccessSecret")
        source: dict[str, Any] = {"registry": "huggingface", "modelID": model_id}
        if secret:
            source["accessSecret"] = {"name": secret, "namespace": ns}
        body = {
            "apiVersion": "kaito.sh/v1alpha1",
            "kind": "ModelMirror",
            "metadata": {"name": name},
            "spec": {
                "mode": "Managed",
                "source": source,
                "storage": {"size": f"{model.disk_gib}Gi", "storageClassName": storage_class},
                "jobNamespace": ns,
                "serviceAccountName": account,
            },
        }
        self.created[name] = self.cluster.api("POST", MIRRORS, body)
        return self.created[name]

    # ------------------------------------------------------------------ the ModelMirror controller

    def _reconcile_mirrors(self) -> None:
        for mirror in self.cluster.api("GET", MIRRORS)["items"]:
            with contextlib.suppress(OSError, ValueError, KeyError):
                self._reconcile_mirror(mirror)

    def _mirror_status(self, name: str, status: dict[str, Any]) -> None:
        self.cluster.api("PATCH", f"{MIRRORS}/{name}/status", {"status": status})

    def _reconcile_mirror(self, mirror: dict[str, Any]) -> None:
        meta, spec, status = mirror["metadata"], mirror.get("spec") or {}, mirror.get("status") or {}
        name, finalizers = meta["name"], list(meta.get("finalizers") or [])
        pvc_path = f"/api/v1/namespaces/{spec.get('jobNamespace')}/persistentvolumeclaims/{name}"
        if meta.get("deletionTimestamp"):  # handleDeletion: the PVC, then the finalizer
            with contextlib.suppress(OSError):
                self.cluster.api("PATCH", pvc_path, {"metadata": {"finalizers": None}})
                self.cluster.api("DELETE", pvc_path)
            rest = [f for f in finalizers if f != MIRROR_FINALIZER]
            self.cluster.api("PATCH", f"{MIRRORS}/{name}", {"metadata": {"finalizers": rest or None}})
            return
        if status.get("phase") == "Ready":
            return
        if MIRROR_FINALIZER not in finalizers:
            self.cluster.api(
                "PATCH", f"{MIRRORS}/{name}", {"metadata": {"finalizers": [*finalizers, MIRROR_FINALIZER]}}
            )
            return
        pvc = self._get(pvc_path)
        if pvc is None:  # ensurePVC
            self.cluster.api(
                "POST",
                f"/api/v1/namespaces/{spec['jobNamespace']}/persistentvolumeclaims",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": name, "finalizers": [PVC_FINALIZER]},
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "storageClassName": spec["storage"].get("storageClassName"),
                        "resources": {"requests": {"storage": spec["storage"]["size"]}},
                    },
                },
            )
            return
        if (pvc.get("status") or {}).get("phase") != "Bound":  # the Blob CSI driver binds it
            bound = {
                "phase": "Bound",
                "accessModes": ["ReadWriteMany"],
                "capacity": {"storage": spec["storage"]["size"]},
            }
            self.cluster.api("PATCH", f"{pvc_path}/status", {"status": bound})
            return
        storage_ready = self._mirror_condition("StorageReady", "True", "PVCBound", "PVC is bound")
        started = self.started.setdefault(name, time.time())
        elapsed = time.time() - started
        if name in self.downloading or elapsed < self.download_seconds:  # updateDownloadProgress
            total = float(spec["storage"]["size"].removesuffix("Gi")) * 2**30
            left = max(1, int((total - STAND_IN_SPEED * elapsed) / STAND_IN_SPEED))
            download = {"speedBytesPerSecond": STAND_IN_SPEED, "remainingSeconds": left}
            if status.get("download") != download or not status.get("conditions"):
                self._mirror_status(name, {"download": download, "conditions": [storage_ready]})
            return
        self._mirror_status(  # handleJobSuccess
            name,
            {
                "phase": "Ready",
                "modelPath": "/models/" + spec["source"]["modelID"],
                "lastDownloadTime": now_rfc3339(),
                "download": {"speedBytesPerSecond": 0, "remainingSeconds": 0},
                "conditions": [
                    self._mirror_condition("Ready", "True", "DownloadSucceeded", "Model download completed"),
                    storage_ready,
                ],
            },
        )
        self.mirror_ready_at[name] = time.time()

    def _mirror_condition(self, kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        """A ModelMirror condition as its controller's setCondition writes it: no observedGeneration."""
        condition = self._condition(kind, status, reason, message, 0)
        del condition["observedGeneration"]
        return condition
