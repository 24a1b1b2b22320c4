"""What KAITO's kinds share: the pydantic base that writes KAITO's JSON, object metadata, label
selectors, and the data sources and destinations of adapters and tuning (api/v1beta1/
workspace_types.go and params, in KAITO's own field names)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from kaito_aks.camel import CamelModel


class ApiModel(CamelModel):
    def to_api(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class ObjectMeta(ApiModel):
    name: str
    namespace: str
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


# Label keys KAITO (0.11+) puts on the nodes and node pools it manages, and so ignores in a
# user's selector (api/v1beta1/labels.go reservedSelectorLabelKeys; pkg/utils/consts).
RESERVED_SELECTOR_LABELS = (
    "kaito.sh/workspace",
    "kaito.sh/ragengine",
    "kaito.sh/workspacenamespace",
    "kaito.sh/ragenginenamespace",
    "karpenter.kaito.sh/workspace-name",
    "karpenter.kaito.sh/workspace-namespace",
    "karpenter.kaito.sh/inferenceset",
    "karpenter.kaito.sh/inferenceset-namespace",
)


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(ApiModel):
    """metav1.LabelSelector. KAITO finds BYO nodes by matchLabels; an empty one matches every node
    (admitted, and warned about by the rules, which refuse it where KAITO denies it: a preset on
    bring-your-own nodes)."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


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
