"""KAITO 0.11+'s ModelMirror (kaito.sh/v1alpha1, cluster-scoped): which one holds a model's
weights, found by the name KAITO gives it, and what its mirror controller reports of it. One
reader for everything that shows a mirror: `python -m stacks status` (its mirror line) and the
failure library's weights link (kaito_aks.diagnose), which read the same object through the same
look. Standard library and the catalog only: the waits' process loads it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from kaito_aks import catalog
from kaito_aks.parsed import is_dict
from kaito_aks.waits.answers import conditions_of, field_at, segment
from kaito_aks.waits.kube_client import KubeApiError, Reader

MODEL_MIRRORS = "/apis/kaito.sh/v1alpha1/modelmirrors"
GATE = "ModelMirror"  # pkg/featuregates/featuregates.go@v0.11.0


def mirrored_model_id(model: str, kaito_version: str | None = None) -> str:
    """The Hugging Face id KAITO mirrors for a Workspace's preset name: a legacy preset name's
    catalog id (KAITO's map, lower case), else the name as written
    (pkg/utils/plugin/plugin.go:129-135@v0.12.0 ResolveHFModelID, called by
    pkg/workspace/inference/modelstreaming/modelstreaming.go:97-104@v0.12.0). The release's map;
    not known: the newest mirroring release's."""
    charts = catalog.kaito_charts()
    chart = charts.get(kaito_version or "")
    if chart is None:
        chart = max((c for c in charts.values() if GATE in c.known_gates), key=lambda c: c.minor, default=None)
    code = catalog.catalog_code(chart.preset_catalog) if chart is not None else None
    aliases = code.legacy_aliases if code is not None else {}
    return aliases.get(model.lower(), model)


def model_mirror_name(model_id: str) -> str:
    """The ModelMirror KAITO makes for a Hugging Face model id: the first 6 hex characters of its
    SHA-256 (pkg/workspace/inference/modelstreaming/modelstreaming.go:86-95@v0.12.0
    ModelMirrorCRName; the workspace controller gets and creates it by that name alone:
    pkg/workspace/controllers/workspace_controller.go:170-171,778-781@v0.12.0)."""
    return hashlib.sha256(model_id.encode()).hexdigest()[:6]


def mirror_of(preset: str, kaito_version: str | None = None) -> str:
    """The name of the ModelMirror that holds a preset's weights."""
    return model_mirror_name(mirrored_model_id(preset, kaito_version))


# Its Ready condition's reasons for a download that failed (pkg/modelmirror/consts/consts.go:31-40@v0.12.0)
FAILED_REASONS = frozenset(
    {"DownloadFailed", "DownloadOOMKilled", "DownloadEvicted", "PVCCreateFailed", "JobCreateFailed", "InvalidSpec"}
)


@dataclass(frozen=True)
class MirrorStatus:
    """A ModelMirror as KAITO's mirror controller reports it: status.phase Pending|Ready,
    status.failureMessage, its Ready condition's reason, and status.download
    {speedBytesPerSecond, remainingSeconds (-1: not known)}
    (api/v1alpha1/modelmirror_types.go:113-144@v0.12.0)."""

    name: str
    found: bool
    phase: str = ""
    speed_bytes_per_second: int | None = None
    remaining_seconds: int | None = None  # -1: not known
    failure: str = ""
    reason: str = ""  # its Ready condition's
    unread: str = ""  # why it could not be read (the credentials may not)

    def progress(self) -> str:
        """The download's progress, in the one wording every reader shows: "downloading at
        52.4 MB/s, about 1m35s left" ('' when KAITO reports none)."""
        said: list[str] = []
        if self.speed_bytes_per_second is not None and self.speed_bytes_per_second > 0:
            said.append(f"downloading at {self.speed_bytes_per_second / 1e6:.1f} MB/s")
        if self.remaining_seconds is not None and self.remaining_seconds >= 0:
            minutes, seconds = divmod(self.remaining_seconds, 60)
            said.append(f"about {minutes}m{seconds:02d}s left")
        elif self.remaining_seconds == -1:
            said.append("time left not known")
        return ", ".join(said)

    def text(self) -> str:
        if self.unread:
            return f"ModelMirror {self.name}: not read ({self.unread})"
        if not self.found:
            return f"ModelMirror {self.name}: not made yet (KAITO makes it when it reconciles the Workspace)"
        if self.phase == "Ready":
            return f"ModelMirror {self.name}: Ready, the weights are mirrored"
        said = [f"ModelMirror {self.name}: {self.phase or 'Pending'}", self.progress(), self.failure]
        return ", ".join(s for s in said if s)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "found": self.found,
            "phase": self.phase,
            "speedBytesPerSecond": self.speed_bytes_per_second,
            "remainingSeconds": self.remaining_seconds,
            "failureMessage": self.failure,
            **({"unread": self.unread} if self.unread else {}),
        }


def read_mirror(reader: Reader, name: str) -> MirrorStatus:
    """The ModelMirror `name` as its status says: not found when KAITO has not made it (or its CRD
    is not installed), unread when the credentials may not read it; any other failure to read
    is the reader's KubeApiError."""
    try:
        obj = reader.get(f"{MODEL_MIRRORS}/{segment(name)}")
    except KubeApiError as err:
        if err.status == 404:
            return MirrorStatus(name, False)
        if err.status == 403:
            return MirrorStatus(name, False, unread=f"modelmirrors.kaito.sh: {err}")
        raise
    status = field_at(obj, "status")
    status = status if is_dict(status) else {}
    download = status.get("download")
    download = download if is_dict(download) else {}
    speed, left = download.get("speedBytesPerSecond"), download.get("remainingSeconds")
    ready = next((c for c in conditions_of(obj) if c.get("type") == "Ready"), None) or {}
    return MirrorStatus(
        name,
        True,
        str(status.get("phase") or ""),
        speed if isinstance(speed, int) else None,
        left if isinstance(left, int) else None,
        str(status.get("failureMessage") or ""),
        str(ready.get("reason") or ""),
    )
