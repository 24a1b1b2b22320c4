"""Strict checks against the real upstream schemas, as the API server and Helm apply them.

- `crd_validator`: a CRD's openAPIV3Schema as a JSON Schema in which, like kubectl's strict
  field validation, an unknown field is an error (unless the schema preserves unknown fields).
- `unknown_value_paths`: the value paths we set that a chart's values.yaml does not have.
"""

from __future__ import annotations

from typing import Any

import jsonschema

# The metadata fields a create may carry (metav1.ObjectMeta, writable part).
OBJECT_META = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "maxLength": 253},
        "namespace": {"type": "string", "maxLength": 63},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
    },
}


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-") and k not in ("default",)}
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return {k: v for k, v in out.items() if k not in ("properties", "additionalProperties")}
    if "properties" in schema:
        out["properties"] = {k: _strict(v) for k, v in schema["properties"].items()}
        out.setdefault("additionalProperties", False)
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = _strict(schema["additionalProperties"])
    if "items" in schema:
        out["items"] = _strict(schema["items"])
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return out


def crd_validator(crd: dict[str, Any], version: str):
    """`crd`: a CRD manifest (tests/upstream_facts.crd)."""
    served = {v["name"]: v for v in crd["spec"]["versions"]}
    schema = _strict(served[version]["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = OBJECT_META
    for field in (
        "apiVersion",
        "kind",
    ):  # the API server takes them whether the schema lists them or not (Istio's do not)
        schema["properties"].setdefault(field, {"type": "string"})
    schema["properties"].pop("status", None)
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    validator = jsonschema.Draft7Validator(schema)

    def errors(obj: dict[str, Any]) -> list[str]:
        found = [
            f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in validator.iter_errors(obj)
        ]
        if obj.get("apiVersion") != f"{group}/{version}":
            found.append(f"apiVersion: {obj.get('apiVersion')!r} is not {group}/{version}")
        if obj.get("kind") != kind:
            found.append(f"kind: {obj.get('kind')!r} is not {kind}")
        return found

    return errors


def unknown_value_paths(values: Any, chart_values: Any, allowed: tuple[str, ...] = (), prefix: str = "") -> list[str]:
    """Leaf paths of `values` that the chart's values.yaml does not define. A map the chart
    leaves empty ({}) takes any keys (nodeSelector, podAnnotations); lists are leaves.
    `allowed`: extra paths known to exist in a bundled subchart's own values."""
    if not isinstance(values, dict):
        return []
    unknown = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if path in allowed:
            continue
        if not isinstance(chart_values, dict) or key not in chart_values:
            if isinstance(value, dict) and any(a.startswith(path + ".") for a in allowed):
                unknown += unknown_value_paths(value, None, allowed, path + ".")
            else:
                unknown.append(path)
            continue
        known = chart_values[key]
        if isinstance(known, dict) and not known:
            continue
        unknown += unknown_value_paths(value, known, allowed, path + ".")
    return unknown
