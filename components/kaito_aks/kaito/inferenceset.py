"""KAITO's InferenceSet (kaito.sh, 0.12: v1beta1; api/<version>/inferenceset_types.go): N
identical inference Workspaces behind one object, which (unlike Workspace) uses `spec`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kaito_aks.kaito.meta import ApiModel, LabelSelector, ObjectMeta
from kaito_aks.kaito.workspace import InferenceSpec


class InferenceSetResource(ApiModel):
    # Optional in BYO mode (KAITO >= 0.12).
    instance_type: str | None = None


class InferenceSetTemplate(ApiModel):
    metadata: dict[str, Any] | None = None
    resource: InferenceSetResource | None = None
    inference: InferenceSpec


class InferenceSetSpec(ApiModel):
    # Workspaces the set keeps running (scale subresource).
    replicas: int = Field(ge=0)
    # Copied into every created Workspace's resource.labelSelector.
    label_selector: LabelSelector
    template: InferenceSetTemplate


class InferenceSet(ApiModel):
    """kaito.sh InferenceSet: N identical inference Workspaces (uses `spec`, unlike Workspace)."""

    api_version: str
    kind: Literal["InferenceSet"] = "InferenceSet"
    metadata: ObjectMeta
    spec: InferenceSetSpec

    def manifest(self) -> dict[str, Any]:
        return self.to_api()


INFERENCE_SET_IMMUTABLE_PATHS = (
    "spec.labelSelector",
    "spec.template.resource.instanceType",
    # Mutable, but KAITO 0.12's InferenceSet controller does not roll template edits out to the
    # Workspaces it made (and a Workspace's preset, presetOptions included, is immutable):
    # replacing the InferenceSet is what makes them reach the pods.
    "spec.template.inference.preset",
    "spec.template.inference.config",
    "spec.template.inference.adapters",
)
