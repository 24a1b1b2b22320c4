"""Typed KAITO API objects (kaito.sh Workspace v1beta1, InferenceSet), mirroring KAITO's Go
types field by field, with the fields KAITO refuses to change beside each kind. They hold
shapes only: the webhook's rules about a model's values live once, in
kaito_model.model_problems, which runs before any of these is built.

`manifest()` gives the object exactly as the API server receives it. Note the Workspace has no
`spec`: `resource`, `inference` and `tuning` sit at the top level.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from kaito_aks.camel import CamelModel

WORKSPACE_API_VERSION = "kaito.sh/v1beta1"

# Annotations the KAITO controller reads (api/v1beta1/labels.go).
RUNTIME_ANNOTATION = "kaito.sh/runtime"
# The key KAITO's preset pods read the Hugging Face token from (secretKeyRef).
HF_TOKEN_KEY = "HF_TOKEN"
# The ConfigMap key KAITO reads runtime parameters from (inference.config).
INFERENCE_CONFIG_KEY = "inference_config.yaml"
# The ConfigMap key KAITO reads tuning parameters from (tuning.config).
TUNING_CONFIG_KEY = "training_config.yaml"


class ApiModel(CamelModel):
    def to_api(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class ObjectMeta(ApiModel):
    name: str
    namespace: str
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(ApiModel):
    """metav1.LabelSelector. KAITO finds BYO nodes by matchLabels."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> LabelSelector:
        if not self.match_labels and not self.match_expressions:
            raise ValueError("needs matchLabels or matchExpressions (an empty selector matches every node)")
        return self


class ResourceSpec(ApiModel):
    # Deprecated in v1beta1 and immutable; the vLLM path sizes nodes itself.
    count: int | None = None
    # Required with node auto-provisioning; must be empty in BYO mode. Immutable.
    instance_type: str | None = None
    # Required. Selects the nodes the workload may run on. Immutable.
    label_selector: LabelSelector


class PresetOptions(ApiModel):
    # Secret (same namespace) with key HF_TOKEN; required for gated downloadAtRuntime presets,
    # forbidden for presets whose weights ship in an image.
    model_access_secret: str | None = None


class PresetSpec(ApiModel):
    # A registered preset name (KAITO >= 0.9 also accepts a Hugging Face ID). Immutable.
    name: str
    preset_options: PresetOptions | None = None


class DataSource(ApiModel):
    """Where tuning data or an adapter comes from: exactly one of urls, volumeSource, image."""

    name: str | None = None
    urls: list[str] | None = None
    volume_source: dict[str, Any] | None = None
    image: str | None = None
    image_pull_secrets: list[str] | None = None

    def sources(self) -> list[str]:
        return [k for k in ("urls", "volume_source", "image") if getattr(self, k)]


class DataDestination(ApiModel):
    """Where tuning output goes: exactly one of volumeSource, image (image needs imagePushSecret)."""

    volume_source: dict[str, Any] | None = None
    image: str | None = None
    image_push_secret: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> DataDestination:
        chosen = [k for k in ("volume_source", "image") if getattr(self, k)]
        if len(chosen) != 1:
            raise ValueError("needs exactly one of volumeSource or image")
        if self.image and not self.image_push_secret:
            raise ValueError("image output needs imagePushSecret (a Secret to push with)")
        return self


class AdapterSpec(ApiModel):
    # The webhook requires source.name and source.image.
    source: DataSource
    # Parsed as a float in [0, 1]; KAITO defaults it to "1.0".
    strength: str | None = None

    @model_validator(mode="after")
    def _named_image(self) -> AdapterSpec:
        if not self.source.name or not self.source.image:
            raise ValueError("an adapter source needs both name and image")
        return self


class InferenceSpec(ApiModel):
    """Exactly one of preset or template."""

    preset: PresetSpec | None = None
    # A corev1.PodTemplateSpec, for images that are not presets (e.g. llama.cpp on CPU).
    template: dict[str, Any] | None = None
    # ConfigMap (same namespace) holding inference_config.yaml.
    config: str | None = None
    adapters: list[AdapterSpec] | None = None

    @model_validator(mode="after")
    def _preset_xor_template(self) -> InferenceSpec:
        if (self.preset is None) == (self.template is None):
            raise ValueError("inference needs exactly one of preset or template")
        if self.adapters and self.preset is None:
            raise ValueError("adapters apply to presets only")
        return self


class TuningSpec(ApiModel):
    preset: PresetSpec
    method: Literal["lora", "qlora"]
    # ConfigMap with tuning parameters; KAITO defaults to its <method>-params-template.
    config: str | None = None
    input: DataSource
    output: DataDestination


class Workspace(ApiModel):
    """kaito.sh/v1beta1 Workspace: exactly one of inference or tuning."""

    api_version: Literal["kaito.sh/v1beta1"] = WORKSPACE_API_VERSION
    kind: Literal["Workspace"] = "Workspace"
    metadata: ObjectMeta
    resource: ResourceSpec
    inference: InferenceSpec | None = None
    tuning: TuningSpec | None = None

    @model_validator(mode="after")
    def _inference_xor_tuning(self) -> Workspace:
        if (self.inference is None) == (self.tuning is None):
            raise ValueError("a Workspace needs exactly one of inference or tuning")
        return self

    def manifest(self) -> dict[str, Any]:
        return self.to_api()


# Fields KAITO refuses to change on an existing object: a change must replace it.
WORKSPACE_IMMUTABLE_PATHS = (
    "resource.count",
    "resource.instanceType",
    "resource.labelSelector",
    "inference.preset.name",
    "tuning",
)


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
    "spec.template.inference.preset.name",
    # Mutable, but KAITO 0.12's InferenceSet controller does not roll template edits out to the
    # Workspaces it made: replacing the InferenceSet is what makes them reach the pods.
    "spec.template.inference.config",
    "spec.template.inference.adapters",
)
