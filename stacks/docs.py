"""The README's config reference, generated from the config sections and the components' args
(one source of truth)."""

from __future__ import annotations

import re
from pathlib import Path

from kaito_aks.azure.aks_cluster import SystemPoolArgs
from kaito_aks.azure.gpu_node_pool import AutoscaleArgs
from kaito_aks.model.spec import AdapterArgs, TuningArgs
from kaito_aks.problems import camel, rename
from kaito_aks.rag.spec import EmbeddingArgs, GuardrailsArgs, InferenceServiceArgs, RagComputeArgs, StorageArgs
from kaito_aks.schema import Field, constraint_text, default_text, describe, fields, summary
from stacks import config

# The nested arg classes the reference documents under their section.
NESTED: list[tuple[str, type]] = [
    ("cluster.aks.systemPool", SystemPoolArgs),
    ("gpuNodePools[].autoscale", AutoscaleArgs),
    ("workspaces[].adapters[]", AdapterArgs),
    ("workspaces[].tuning", TuningArgs),
    ("ragEngines[].inferenceService", InferenceServiceArgs),
    ("ragEngines[].compute", RagComputeArgs),
    ("ragEngines[].storage", StorageArgs),
    ("ragEngines[].guardrails", GuardrailsArgs),
    ("ragEngines[].embedding", EmbeddingArgs),
]


def _row(key: str, f: Field) -> str:
    kind = describe(f.type).replace("|", "\\|")
    limits = constraint_text(f)
    default = "**required**" if f.required else (f"`{default_text(f)}`" if default_text(f) else "")
    text = " ".join(rename(f.doc, "schema").split())
    if limits:
        text += f" ({limits})"
    return f"| `{key}` | {kind} | {default} | {text} |"


def _table(every: dict[str, Field]) -> list[str]:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, f in every.items():
        row = _row(camel(name), f)
        if f.secret:  # the stack keeps secrets only in its secret keys (stacks/load.py)
            row = row.removesuffix(" |") + " Not in a stack file (plaintext or `--path --secret`): use accessSecret. |"
        rows.append(row)
    return rows


def config_reference() -> str:
    lines = ["Top-level keys (namespace `kaito-aks:`):", "", "| key | type | default | meaning |", "|---|---|---|---|"]
    lines += [
        "| `cluster` | object | **required** | where KAITO runs: kubeconfig, aks or existing |",
        "| `kaito` | object |  | the KAITO operator, and how `pulumi up` waits for the models |",
        "| `workspaces` | list of object |  | the models to serve or tune |",
        "| `gpuNodePools` | list of object |  | AKS GPU node pools (aks/existing clusters) |",
        "| `gpuOperator` | object |  | the NVIDIA GPU Operator |",
    ]
    lines += _table(config.TOP.fields())[2:]
    lines += ["", "Secrets (set with `--secret`; never stored in plaintext):", "", "| key | meaning |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in config.SECRET_DOCS.items()]
    lines += ["", "`cluster`: exactly one of kubeconfig (any cluster), aks (create one), existing (adopt one)."]
    for section in config.SECTIONS:
        lines += ["", f"`{section.path}`: {section.doc}", "", *_table(section.fields())]
    for path, cls in NESTED:
        lines += ["", f"`{path}`: {' '.join(summary(cls).split())}", "", *_table(fields(cls))]
    return "\n".join(lines)


README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLES = README.parent / "components" / "examples"
# README block -> (example file, code fence language): the README shows them as they are, and CI runs them.
EXAMPLE_BLOCKS = {
    "example-python": (EXAMPLES / "python" / "__main__.py", "python"),
    "example-python-auto": (EXAMPLES / "python" / "auto_provisioning.py", "python"),
    "example-python-rag": (EXAMPLES / "python" / "rag_engine.py", "python"),
    "example-python-add-on": (EXAMPLES / "python" / "add_on.py", "python"),
    "example-python-test": (EXAMPLES / "python" / "test_program.py", "python"),
    "example-yaml": (EXAMPLES / "yaml" / "Pulumi.yaml", "yaml"),
}


def example_block(name: str) -> str:
    path, language = EXAMPLE_BLOCKS[name]
    return f"```{language}\n{path.read_text().rstrip()}\n```\n"


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
