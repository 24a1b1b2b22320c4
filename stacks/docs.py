"""The README's config reference, generated from the pydantic models (one source of truth)."""

from __future__ import annotations

import json
import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from kaito_aks.model.component import ModelAdapter, ModelSpec, ModelTuning
from stacks import config

SECRETS = {
    "hfToken": "Hugging Face token for gated presets (llama); `pulumi config set --secret hfToken <token>`",
    "kubeconfig": "kubeconfig contents for a kubeconfig cluster, instead of a file; `pulumi config set --secret kubeconfig < file`",
}
SECTIONS: list[tuple[str, type[BaseModel]]] = [
    ("cluster", config.ClusterSpec),
    ("cluster.kubeconfig", config.KubeconfigCluster),
    ("cluster.aks", config.AksClusterSpec),
    ("cluster.aks.systemPool", config.SystemPool),
    ("cluster.existing", config.ExistingAksSpec),
    ("kaito", config.KaitoSpec),
    ("gpuNodePools[]", config.GpuNodePoolSpec),
    ("gpuNodePools[].autoscale", config.Autoscale),
    ("gpuOperator", config.GpuOperatorSpec),
    ("workspaces[]", ModelSpec),
    ("workspaces[].adapters[]", ModelAdapter),
    ("workspaces[].tuning", ModelTuning),
]


def _type(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type(a) for a in args if a is not type(None))
    if origin is typing.Literal:
        return " \\| ".join(str(a) for a in args)
    if origin is list:
        return f"list of {_type(args[0])}"
    if origin is dict:
        return "map"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "object"
    return getattr(tp, "__name__", str(tp))


def _default(field) -> str:
    if field.default is PydanticUndefined:
        return "**required**"
    value = field.default
    if value is None or value == {} or value == []:
        return ""
    if isinstance(value, BaseModel):
        return ""
    if isinstance(value, (bool, list, dict)):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def _table(model: type[BaseModel]) -> list[str]:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        rows.append(
            f"| `{field.alias or name}` | {_type(field.annotation)} | {_default(field)} | {field.description or ''} |"
        )
    return rows


def config_reference() -> str:
    lines = ["Top-level keys (namespace `kaito-aks:`):", "", *_table(config.StackConfig), ""]
    lines += ["Secrets (set with `--secret`; never stored in plaintext):", "", "| key | meaning |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in SECRETS.items()]
    for path, model in SECTIONS:
        summary = " ".join((model.__doc__ or "").split())
        lines += ["", f"`{path}`" + (f": {summary}" if summary else ""), "", *_table(model)]
    return "\n".join(lines)


README = Path(__file__).resolve().parent.parent / "README.md"


def readme_block(name: str, text: str | None = None, readme: Path = README) -> str:
    """The README text between <!-- name:start --> and <!-- name:end -->; replaced first when
    `text` is given."""
    content = readme.read_text()
    pattern = re.compile(rf"(<!-- {name}:start -->\n)(.*?)(<!-- {name}:end -->)", re.S)
    match = pattern.search(content)
    if match is None:
        raise SystemExit(f"{readme.name} has no <!-- {name}:start --> ... <!-- {name}:end --> block")
    if text is not None:
        content = content[: match.start(2)] + text.rstrip("\n") + "\n" + content[match.end(2) :]
        readme.write_text(content)
        return text
    return match.group(2)
