"""The pydantic base of every typed model here (config, catalogs, KAITO API objects)."""

from pydantic import BaseModel, ConfigDict

from kaito_aks.vocabulary import camel


class CamelModel(BaseModel):
    """camelCase in YAML and Kubernetes JSON, snake_case in Python, unknown keys rejected."""

    model_config = ConfigDict(alias_generator=camel, populate_by_name=True, extra="forbid", frozen=True)
