"""KAITO's Workspace (kaito.sh/v1beta1, api/v1beta1/workspace_types.go), field by field, with the
fields KAITO refuses to change beside it. Shapes only: the webhook's rules about a model's
values live in kaito_aks.model.rules, which runs before any of these is built.

`manifest()` gives the object exactly as the API server receives it. The Workspace has no
`spec`: `resource`, `inference` and `tuning` sit at the top level.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from kaito_aks.kaito.meta import ApiModel, DataDestination, DataSource, LabelSelector, ObjectMeta

WORKSPACE_API_VERSION = "kaito.sh/v1beta1"

# Annotations the KAITO controller reads (api/v1beta1/labels.go).
RUNTIME_ANNOTATION = "kaito.sh/runtime"
# KAITO's own bypass: present (any value), its webhook skips its GPU count (0.8) and total GPU
# memory checks on create (workspace_validation.go 0.8.1:72-77, 454-487; 0.11.0:77-80, 548-561;
# 0.12.0:110-115, 654-669, 767); nothing else.
BYPASS_ANNOTATION = "kaito.sh/bypass-resource-checks"
# In Karpenter mode, the AKSNodeClass of the NodePool KAITO makes for the Workspace (0.11+,
# api/v1beta1/labels.go AnnotationNodeClassName); an InferenceSet passes its template's on.
NODE_CLASS_ANNOTATION = "kaito.sh/node-class-name"
# The key KAITO's preset pods read the Hugging Face token from (secretKeyRef).
HF_TOKEN_KEY = "HF_TOKEN"
# The ConfigMap key KAITO reads runtime parameters from (inference.config).
INFERENCE_CONFIG_KEY = "inference_config.yaml"
# The ConfigMap key KAITO reads tuning parameters from (tuning.config).
TUNING_CONFIG_KEY = "training_config.yaml"


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


# Fields KAITO refuses to change on an existing object: a change must replace it. The webhook
# compares the whole preset (name, accessMode and presetOptions: "field is immutable:
# inference.preset"), so adding or changing modelAccessSecret replaces the Workspace too.
WORKSPACE_IMMUTABLE_PATHS = (
    "resource.count",
    "resource.instanceType",
    "resource.labelSelector",
    "inference.preset",
    "tuning",
)
