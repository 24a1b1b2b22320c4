"""The pydantic base every config and catalog model shares: camelCase in YAML, snake_case in
Python, unknown keys rejected."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)
