"""The README's config reference, generated from the config sections and the components' args
(one source of truth)."""

from __future__ import annotations

import re
from pathlib import Path

from kaito_aks.problems import camel, rename
from kaito_aks.schema import Field, constraint_text, default_text, describe, fields
from stacks import config

SECTIONS: list[config.Section] = [
    config.KUBECONFIG,
    config.AKS,
    config.EXISTING,
    config.KAITO,
    config.POOL,
    config.GPU_OPERATOR,
    config.GPU_PROVISIONER,
    config.WORKSPACE,
    config.RAG_ENGINE_OPERATOR,
    config.RAG_ENGINE,
]


def _row(key: str, f: Field, required: bool) -> str:
    kind = describe(f.type).replace("|", "\\|")
    limits = constraint_text(f)
    default = "**required**" if required else (f"`{default_text(f)}`" if default_text(f) else "")
    text = " ".join(rename(f.doc, "schema").split())
    if limits:
        text += f" ({limits})"
    return f"| `{key}` | {kind} | {default} | {text} |"


def _section_table(section: config.Section) -> list[str]:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    required = {(p.cls, f.name) for p, f in section.required()}
    for key, (part, f) in section.keys().items():
        rows.append(_row(key, f, (part.cls, f.name) in required))
    return rows


def _class_table(cls: type) -> list[str]:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for f in fields(cls).values():
        row = _row(camel(f.name), f, f.required)
        if f.secret:  # the stack keeps secrets only in its secret keys (stacks/load.py)
            row = row.removesuffix(" |") + " Not in a stack file (plaintext or `--path --secret`): use accessSecret. |"
        rows.append(row)
    return rows


def _summary(cls: type) -> str:
    doc = (cls.__doc__ or "").split("\n\nArgs:")[0]
    return " ".join(doc.split())


def config_reference() -> str:
    lines = ["Top-level keys (namespace `kaito-aks:`):", "", "| key | type | default | meaning |", "|---|---|---|---|"]
    lines += [
        "| `cluster` | object | **required** | where KAITO runs: kubeconfig, aks or existing |",
        "| `kaito` | object |  | the KAITO operator, and how `pulumi up` waits for the models |",
        "| `workspaces` | list of object |  | the models to serve or tune |",
        "| `gpuNodePools` | list of object |  | AKS GPU node pools (aks/existing clusters) |",
        "| `gpuOperator` | object |  | the NVIDIA GPU Operator |",
    ]
    lines += _section_table(config.TOP)[2:]
    lines += ["", "Secrets (set with `--secret`; never stored in plaintext):", "", "| key | meaning |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in config.SECRET_DOCS.items()]
    lines += ["", "`cluster`: exactly one of kubeconfig (any cluster), aks (create one), existing (adopt one)."]
    for section in SECTIONS:
        lines += ["", f"`{section.path}`: {section.doc}", "", *_section_table(section)]
    for path, cls in config.NESTED:
        lines += ["", f"`{path}`: {_summary(cls)}", "", *_class_table(cls)]
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
