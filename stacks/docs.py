"""docs/configuration.md, the config reference, generated from the config sections and the
components' args (one source of truth); and the example blocks the docs show as CI runs them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kaito_aks.azure.aks_security import (
    AdminArgs,
    ApiServerArgs,
    DefenderArgs,
    EntraArgs,
    MaintenanceWindowArgs,
    UpgradeArgs,
)
from kaito_aks.azure.gpu_node_pool import AutoscaleArgs
from kaito_aks.azure.system_pool import SystemPoolArgs
from kaito_aks.endpoints import AllowFromArgs, LoadBalancerArgs
from kaito_aks.model.spec import AdapterArgs, TuningArgs
from kaito_aks.problems import camel, rename
from kaito_aks.provider import SCHEMA_FILE, schema_text
from kaito_aks.rag.spec import EmbeddingArgs, GuardrailsArgs, InferenceServiceArgs, RagComputeArgs, StorageArgs
from kaito_aks.schema import Field, constraint_text, default_text, describe, fields, summary
from kaito_aks.serving.gateway import GatewayEntraArgs, GatewayTlsArgs
from kaito_aks.serving.spec import ModelAutoscaleArgs
from stacks import config

# The nested arg classes the reference documents under their section.
NESTED: list[tuple[str, type]] = [
    ("cluster.aks.systemPool", SystemPoolArgs),
    ("gpuNodePools[].autoscale, cpuNodePools[].autoscale", AutoscaleArgs),
    ("workspaces[].adapters[]", AdapterArgs),
    ("workspaces[].tuning", TuningArgs),
    ("ragEngines[].inferenceService", InferenceServiceArgs),
    ("ragEngines[].compute", RagComputeArgs),
    ("ragEngines[].storage", StorageArgs),
    ("ragEngines[].guardrails", GuardrailsArgs),
    ("ragEngines[].embedding", EmbeddingArgs),
    ("cluster.aks.entra", EntraArgs),
    ("cluster.aks.entra.admins[]", AdminArgs),
    ("cluster.aks.apiServer", ApiServerArgs),
    ("cluster.aks.upgrade", UpgradeArgs),
    ("cluster.aks.upgrade.window", MaintenanceWindowArgs),
    ("cluster.aks.defender", DefenderArgs),
    ("workspaces[].loadBalancer, ragEngines[].loadBalancer", LoadBalancerArgs),
    ("workspaces[].allowFrom[], ragEngines[].allowFrom[], endpoints.allowFrom[]", AllowFromArgs),
    ("workspaces[].autoscale", ModelAutoscaleArgs),
    ("gateway.tls", GatewayTlsArgs),
    ("gateway.entra", GatewayEntraArgs),
]


def _row(key: str, f: Field) -> str:
    kind = describe(f.type).replace("|", "\\|")
    limits = constraint_text(f)
    default = "**required**" if f.required else (f"`{default_text(f)}`" if default_text(f) else "")
    text = " ".join(rename(f.doc, "schema").split())
    if limits:
        text += f" ({limits})"
    return f"| `{key}` | {kind} | {default} | {text} |"


def _table(every: dict[str, Field], path: str = "") -> list[str]:
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, f in every.items():
        row = _row(camel(name), f)
        if f.secret and path.split(".")[0] in config.NESTED_SECRETS:  # a key that holds secrets (stacks/load.py)
            row = (
                row.removesuffix(" |")
                + f" A secret: `pulumi config set --path --secret 'kaito-aks:{path}.{camel(name)}'`. |"
            )
        elif f.secret:  # the stack keeps secrets only in its secret keys (stacks/load.py)
            row = row.removesuffix(" |") + " Not in a stack file (plaintext or `--path --secret`): use accessSecret. |"
        rows.append(row)
    return rows


def anchors(path: str) -> str:
    """The anchors a section of the reference is linked by, one per config path it documents:
    `workspaces[].autoscale` -> workspaces-autoscale (docs link to configuration.md#<anchor>)."""
    ids = [p.strip().replace("[]", "").replace(".", "-").lower() for p in path.split(",")]
    return "".join(f'<a id="{i}"></a>' for i in ids)


def config_reference() -> str:
    lines = [
        anchors("top") + "Top-level keys (namespace `kaito-aks:`):",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    lines += [
        "| `cluster` | object | **required** | where KAITO runs: kubeconfig, aks or existing |",
        "| `kaito` | object |  | the KAITO operator, and how `pulumi up` waits for the models |",
        "| `workspaces` | list of object |  | the models to serve or tune |",
        "| `gpuNodePools` | list of object |  | AKS GPU node pools (aks/existing clusters) |",
        "| `cpuNodePools` | list of object |  | AKS CPU node pools for CPU models and RAG engines (aks/existing "
        "clusters) |",
        "| `gpuOperator` | object |  | the NVIDIA GPU Operator |",
    ]
    lines += _table(config.TOP.fields())[2:]
    lines += [
        "",
        anchors("secrets") + "Secrets (set with `--secret`; never stored in plaintext):",
        "",
        "| key | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{k}` | {v} |" for k, v in config.SECRET_DOCS.items()]
    lines += ["", "Secrets inside a key (set with `--path --secret`; Pulumi then keeps the whole key encrypted):", ""]
    lines += ["| config path | meaning |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in config.NESTED_SECRET_DOCS.items()]
    lines += [
        "",
        anchors("cluster")
        + "`cluster`: exactly one of kubeconfig (any cluster), aks (create one), existing (adopt one).",
    ]
    for section in config.SECTIONS:
        lines += ["", f"{anchors(section.path)}`{section.path}`: {section.doc}", "", *_table(section.fields())]
    for path, cls in NESTED:
        doc = " ".join(rename(summary(cls), "schema").split())
        lines += ["", f"{anchors(path)}`{path}`: {doc}", "", *_table(fields(cls), path)]
    return "\n".join(lines)


ROOT = Path(__file__).resolve().parent.parent
CONFIGURATION = ROOT / "docs" / "configuration.md"
CONFIGURATION_HEADER = """# Configuration reference

<!-- Generated by `make docs` (`python -m stacks docs --write`) from the config sections (stacks/config.py)
and the components' args; edit those, not this page. A test keeps it in step. -->

Every key of a stack file, `Pulumi.<stack>.yaml`. Whole stack files, explained:
[Stack files by example](stacks.md).

"""
EXAMPLES = ROOT / "components" / "examples"
LIBRARY = ROOT / "docs" / "library.md"
PACKAGE_README = ROOT / "components" / "README.md"
# block -> (example file, code fence language, the page that shows it): the pages show them as
# they are, and CI runs them.
EXAMPLE_BLOCKS = {
    "example-python": (EXAMPLES / "python" / "__main__.py", "python", PACKAGE_README),
    "example-python-auto": (EXAMPLES / "python" / "auto_provisioning.py", "python", LIBRARY),
    "example-python-rag": (EXAMPLES / "python" / "rag_engine.py", "python", LIBRARY),
    "example-python-add-on": (EXAMPLES / "python" / "add_on.py", "python", LIBRARY),
    "example-python-karpenter": (EXAMPLES / "python" / "karpenter.py", "python", LIBRARY),
    "example-python-test": (EXAMPLES / "python" / "test_program.py", "python", LIBRARY),
    "example-yaml": (EXAMPLES / "yaml" / "Pulumi.yaml", "yaml", LIBRARY),
}


KAITO_RULES = ROOT / "docs" / "kaito-rules.md"
POLICY_BLOCK = "policy"
_KIND_WORDS = {
    "denied": "KAITO denies",
    "cannot-serve": "cannot serve",
    "stricter": "stricter",
    "exposed": "not exposed",
    "program": "not built",
    "invalid": "malformed",
    "warning": "warning",
}
_BYPASS_WORDS = {"program": "`bypassChecks`", "kaito-annotation": "`bypassChecks`: KAITO's annotation"}


def policy_table() -> str:
    """The audit table of every rule code, from kaito_aks.policy (the one place the policy is)."""
    from kaito_aks import policy
    from stacks.rules import STACK_RULES

    sections = (
        ("A model (`workspaces[]`, `KaitoModel`)", policy.MODEL_RULES),
        ("A RAG engine (`ragEngines[]`, `RagEngine`)", policy.RAG_RULES),
        ("The operators, pools and clusters", policy.COMPONENT_RULES),
        ("Serving: the gateway, autoscaling and metrics", policy.SERVING_RULES),
        ("The stack as a whole (stacks/rules.py: its own keys)", STACK_RULES),
    )
    lines: list[str] = []
    for title, rules in sections:
        lines += [
            "",
            f"**{title}**",
            "",
            "| code | kind | way past | about | evidence (file:line at the tags) |",
            "|---|---|---|---|---|",
        ]
        for code, rule in sorted(rules.items(), key=lambda item: (list(_KIND_WORDS).index(item[1].kind), item[0])):
            past = _BYPASS_WORDS.get(rule.bypass or "", "")
            evidence = rule.evidence.replace("|", "\\|")
            lines.append(f"| `{code}` | {_KIND_WORDS[rule.kind]} | {past} | {rule.about} | {evidence} |")
    lines += [
        "",
        "Malformed values (a wrong type, out of range, unknown key): "
        + ", ".join(f"`{c}`" for c in policy.INVALID_CODES)
        + ".",
    ]
    return "\n".join(lines).lstrip("\n") + "\n"


def configuration_page() -> str:
    return CONFIGURATION_HEADER + config_reference() + "\n"


def example_block(name: str) -> str:
    path, language, _ = EXAMPLE_BLOCKS[name]
    return f"```{language}\n{path.read_text().rstrip()}\n```\n"


def marked_block(page: Path, name: str, text: str | None = None) -> str:
    """The page's text between <!-- name:start --> and <!-- name:end -->; replaced first when
    `text` is given."""
    content = page.read_text()
    pattern = re.compile(rf"(<!-- {name}:start -->\n)(.*?)(<!-- {name}:end -->)", re.S)
    match = pattern.search(content)
    if match is None:
        raise SystemExit(f"{page.name} has no <!-- {name}:start --> ... <!-- {name}:end --> block")
    if text is not None:
        content = content[: match.start(2)] + text.rstrip("\n") + "\n" + content[match.end(2) :]
        page.write_text(content)
        return text
    return match.group(2)


# ---------------------------------------------------------------- the API reference, from components/schema.json

API = ROOT / "docs" / "api.md"
API_HEADER = """# API reference

<!-- Generated by `make docs` (`python -m stacks docs --write`) from components/schema.json, the
provider schema the components' args make; edit the args, not this page. A test keeps it in step. -->

Every component of the `kaito-aks` package, as every Pulumi language sees it: its inputs, its
outputs and the types they use, in the schema's names (camelCase). Python programs take the same
args in snake_case (`help(KaitoModelArgs)`); [the library](library.md) shows how to use them.
An input marked *output ok* may come from another resource; every other must be known at preview.

"""
_SCALARS = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}


def api_page(given: Mapping[str, Any] | None = None) -> str:
    """docs/api.md from the package schema (default: the committed components/schema.json)."""
    schema: Mapping[str, Any] = given if given is not None else json.loads(SCHEMA_FILE.read_text())
    types: Mapping[str, Any] = schema["types"]
    lines = [API_HEADER.rstrip("\n"), "", "## Components", ""]
    lines += [f"- [{_name(token)}](#{_name(token).lower()})" for token in schema["resources"]]
    for token, resource in schema["resources"].items():
        lines += ["", f"### {_name(token)}", "", f"`{token}`", "", _text(resource.get("description", "")), ""]
        required = set(resource.get("requiredInputs", []))
        lines += ["Inputs:", "", *_properties(resource["inputProperties"], required, inputs=True), ""]
        lines += ["Outputs:", "", *_properties(resource.get("properties", {}), set(), inputs=False)]
    lines += ["", "## Types"]
    for token, spec in types.items():
        lines += ["", f"### {_name(token)}", "", f"`{token}`", "", _text(spec.get("description") or "")]
        if "enum" in spec:
            lines += ["", "One of: " + ", ".join(f"`{e['value']}`" for e in spec["enum"]) + "."]
        else:
            lines += ["", *_properties(spec.get("properties", {}), set(spec.get("required", [])), inputs=True)]
    return "\n".join(lines) + "\n"


def _name(token: str) -> str:
    return token.rsplit(":", 1)[-1]


def _text(description: str) -> str:
    return " ".join(description.split()).replace("|", "\\|")


def _properties(props: Mapping[str, Any], required: set[str], inputs: bool) -> list[str]:
    rows = ["| name | type | | description |", "|---|---|---|---|"]
    for name, spec in props.items():
        facts = ["**required**" if name in required else ""]
        facts += ["secret" if spec.get("secret") else "", "output ok" if inputs and not spec.get("plain") else ""]
        rows.append(f"| `{name}` | {_type(spec)} | {', '.join(f for f in facts if f)} | {_text(spec['description'])} |")
    return rows


def _type(spec: Mapping[str, Any]) -> str:
    if "$ref" in spec:
        ref = spec["$ref"]
        return "any" if ref == "pulumi.json#/Any" else f"[{_name(ref)}](#{_name(ref).lower()})"
    if spec.get("type") == "array":
        return f"list of {_type(spec['items'])}"
    if spec.get("type") == "object":
        return f"map of {_type(spec['additionalProperties'])}" if "additionalProperties" in spec else "map"
    return _SCALARS.get(spec.get("type", ""), "any")


def write() -> None:
    """Regenerate components/schema.json, docs/api.md from it, docs/configuration.md, the
    example blocks of the pages that show them and the policy table of docs/kaito-rules.md."""
    SCHEMA_FILE.write_text(schema_text())
    API.write_text(api_page())
    CONFIGURATION.write_text(configuration_page())
    for name, (_, _, page) in EXAMPLE_BLOCKS.items():
        marked_block(page, name, example_block(name))
    marked_block(KAITO_RULES, POLICY_BLOCK, policy_table())
