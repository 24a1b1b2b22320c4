"""The kaito-aks component provider: every component, for TypeScript, Go, C#, Java and YAML
programs, with the schema read from the same Args dataclasses the Python components take.

    python -m kaito_aks.provider   (what components/PulumiPlugin.yaml runs)

Type tokens are the ones the Python components register (`kaito-aks:index:KaitoModel`), so a
component has the same URN whichever language declared it. Literal modes are enums, inputs
that may come from another resource accept outputs, everything else must be known at preview
(plain), and a key the schema does not know is refused, never dropped.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import sys
import types as python_types
import typing
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, cast, get_args, get_origin

import pulumi
from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails
from pulumi.provider import ConstructResult, Provider
from pulumi.provider.server import main as serve

from kaito_aks import __version__
from kaito_aks.parsed import is_dict, is_list
from kaito_aks.problems import InvalidArgsError, Problem, bounded, camel, format_path, rename
from kaito_aks.schema import (
    LATER,
    Field,
    constraint_text,
    default_text,
    fields,
    is_args_class,
    metadata,
    optional_of,
    plain,
    plain_of,
    summary,
    unannotated,
    walk_types,
)
from kaito_aks.validation import validate

PACKAGE = "kaito-aks"
SECRET_OUTPUTS = ("kubeconfig", "token")  # the components' outputs that are Pulumi secrets


def components() -> dict[str, tuple[type[pulumi.ComponentResource], type]]:
    """Type token -> (component class, args class)."""
    from kaito_aks.azure.aks_cluster import TYPE as AKS
    from kaito_aks.azure.aks_cluster import AksCluster, AksClusterArgs
    from kaito_aks.azure.cpu_node_pool import TYPE as CPU_POOL
    from kaito_aks.azure.cpu_node_pool import CpuNodePool, CpuNodePoolArgs
    from kaito_aks.azure.gpu_node_pool import TYPE as POOL
    from kaito_aks.azure.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
    from kaito_aks.azure.workload_identity import TYPE as IDENTITY
    from kaito_aks.azure.workload_identity import WorkloadIdentity, WorkloadIdentityArgs
    from kaito_aks.cluster.kubeconfig_cluster import TYPE as KUBECONFIG
    from kaito_aks.cluster.kubeconfig_cluster import KubeconfigCluster, KubeconfigClusterArgs
    from kaito_aks.cluster.node_bootstrap import TYPE as BOOTSTRAP
    from kaito_aks.cluster.node_bootstrap import NodeBootstrapToken, NodeBootstrapTokenArgs
    from kaito_aks.model.component import TYPE as MODEL
    from kaito_aks.model.component import KaitoModel
    from kaito_aks.model.spec import KaitoModelArgs
    from kaito_aks.model_streaming import TYPE as STREAMING
    from kaito_aks.model_streaming import ModelStreaming, ModelStreamingArgs
    from kaito_aks.operators.gpu_operator import TYPE as GPU_OPERATOR
    from kaito_aks.operators.gpu_operator import GpuOperator, GpuOperatorArgs
    from kaito_aks.operators.gpu_provisioner import TYPE as GPU_PROVISIONER
    from kaito_aks.operators.gpu_provisioner import GpuProvisioner, GpuProvisionerArgs
    from kaito_aks.operators.kaito_operator import TYPE as KAITO
    from kaito_aks.operators.kaito_operator import KaitoOperator, KaitoOperatorArgs
    from kaito_aks.operators.karpenter import TYPE as KARPENTER
    from kaito_aks.operators.karpenter import Karpenter, KarpenterArgs
    from kaito_aks.operators.karpenter_crds import TYPE as KARPENTER_CRDS
    from kaito_aks.operators.karpenter_crds import KarpenterCrds, KarpenterCrdsArgs
    from kaito_aks.operators.ragengine_operator import TYPE as RAG_OPERATOR
    from kaito_aks.operators.ragengine_operator import RagEngineOperator, RagEngineOperatorArgs
    from kaito_aks.rag.component import TYPE as RAG
    from kaito_aks.rag.component import RagEngine
    from kaito_aks.rag.spec import RagEngineArgs
    from kaito_aks.serving.dashboard import TYPE as DASHBOARD
    from kaito_aks.serving.dashboard import VllmDashboard, VllmDashboardArgs
    from kaito_aks.serving.gateway import TYPE as GATEWAY
    from kaito_aks.serving.gateway import InferenceGateway, InferenceGatewayArgs
    from kaito_aks.serving.keda import TYPE as KEDA
    from kaito_aks.serving.keda import KedaAutoscaling, KedaAutoscalingArgs

    return {
        AKS: (AksCluster, AksClusterArgs),
        POOL: (GpuNodePool, GpuNodePoolArgs),
        CPU_POOL: (CpuNodePool, CpuNodePoolArgs),
        IDENTITY: (WorkloadIdentity, WorkloadIdentityArgs),
        GPU_PROVISIONER: (GpuProvisioner, GpuProvisionerArgs),
        KARPENTER: (Karpenter, KarpenterArgs),
        KARPENTER_CRDS: (KarpenterCrds, KarpenterCrdsArgs),
        BOOTSTRAP: (NodeBootstrapToken, NodeBootstrapTokenArgs),
        KUBECONFIG: (KubeconfigCluster, KubeconfigClusterArgs),
        GPU_OPERATOR: (GpuOperator, GpuOperatorArgs),
        KAITO: (KaitoOperator, KaitoOperatorArgs),
        MODEL: (KaitoModel, KaitoModelArgs),
        STREAMING: (ModelStreaming, ModelStreamingArgs),
        RAG_OPERATOR: (RagEngineOperator, RagEngineOperatorArgs),
        RAG: (RagEngine, RagEngineArgs),
        GATEWAY: (InferenceGateway, InferenceGatewayArgs),
        KEDA: (KedaAutoscaling, KedaAutoscalingArgs),
        DASHBOARD: (VllmDashboard, VllmDashboardArgs),
    }


# ---------------------------------------------------------------- the schema


class _Types:
    """The object and enum types the components' args use, named once each."""

    def __init__(self) -> None:
        self.types: dict[str, dict[str, Any]] = {}
        self._enums: dict[tuple[Any, ...], str] = {}
        self._objects: dict[str, type] = {}  # token -> the args class it was made from

    def token(self, name: str) -> str:
        return f"{PACKAGE}:index:{name}"

    def enum(self, f: Field, values: tuple[Any, ...]) -> str:
        if values in self._enums:
            return self._enums[values]
        # The alias the owner's module gives the Literal (TuningMethod), else the field's name.
        module = vars(sys.modules[f.owner.__module__])
        aliases = [
            n
            for n, v in module.items()
            if n[:1].isupper() and get_origin(v) is typing.Literal and get_args(v) == values
        ]
        name = aliases[0] if aliases else "".join(p[:1].upper() + p[1:] for p in f.name.split("_"))
        if self.token(name) in self.types:
            name = f.owner.__name__.removesuffix("Args") + name
        token = self.token(name)
        self._enums[values] = token
        self.types[token] = {
            "type": "string" if all(isinstance(v, str) for v in values) else "integer",
            "description": rename(f.doc.split("\n")[0], "schema") if f.doc else None,
            "enum": [{"name": enum_name(v), "value": v} for v in values],
        }
        return token

    def object(self, cls: type) -> str:
        token = self.token(cls.__name__.removesuffix("Args"))
        if token in self.types and self._objects.get(token) is not cls:
            # two types under one name: a property would silently refer to the other one
            raise TypeError(f"{cls.__name__}: the schema type {token} is taken; rename the class")
        if token not in self.types:
            self._objects[token] = cls
            self.types[token] = {}  # recursion guard
            props, required = properties(cls, self)
            self.types[token] = {
                "type": "object",
                "description": rename(summary(cls), "schema"),
                "properties": props,
                **({"required": required} if required else {}),
            }
        return token


def enum_name(value: object) -> str:
    """The name generated SDKs give an enum value: its words, each capitalized, the rest of each
    word kept as written (NotIn, not Notin; gpu-provisioner: GpuProvisioner)."""
    return "".join(w[:1].upper() + w[1:] for w in str(value).replace("-", "_").split("_"))


def property_spec(tp: Any, f: Field, types: _Types, plain: bool) -> dict[str, Any]:
    """The schema of one property of type `tp`: `plain` (must be known at preview) unless an
    Input."""
    if LATER in metadata(tp):
        return property_spec(plain_of(unannotated(tp)), f, types, plain=False)
    tp = unannotated(tp)
    inner = optional_of(tp)
    if inner is not None:
        return property_spec(inner, f, types, plain)
    spec: dict[str, Any]
    origin = get_origin(tp)
    if origin in (typing.Union, python_types.UnionType):  # e.g. a switch or its settings: bool | SomeArgs
        spec = {"oneOf": [property_spec(a, f, types, plain=False) for a in get_args(tp)]}
    elif origin is typing.Literal:
        spec = {"$ref": f"#/types/{types.enum(f, get_args(tp))}"}
    elif tp is str:
        spec = {"type": "string"}
    elif tp is int:
        spec = {"type": "integer"}
    elif tp is float:
        spec = {"type": "number"}
    elif tp is bool:
        spec = {"type": "boolean"}
    elif tp is Any:
        spec = {"$ref": "pulumi.json#/Any"}
    elif origin in (list, typing.Sequence):
        spec = {"type": "array", "items": property_spec(get_args(tp)[0], f, types, plain)}
    elif origin in (dict, Mapping):
        spec = {"type": "object", "additionalProperties": property_spec(get_args(tp)[1], f, types, plain)}
    elif is_args_class(tp):
        spec = {"$ref": f"#/types/{types.object(tp)}"}
    else:
        raise TypeError(f"{f.owner.__name__}.{f.name}: no schema for {tp!r}")
    if plain:
        spec["plain"] = True
    return spec


def _description(f: Field) -> str:
    text = rename(f.doc, "schema")
    limits = constraint_text(f)
    default = default_text(f)
    extra = "; ".join(x for x in (limits, f"default: {default}" if default else "") if x)
    return f"{text} ({extra})" if extra else text


def properties(cls: type, types: _Types) -> tuple[dict[str, Any], list[str]]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in fields(cls).values():
        spec = property_spec(f.type, f, types, plain=True)
        spec["description"] = _description(f)
        if f.secret:
            spec["secret"] = True
        default = f.default_value()
        if isinstance(default, str | int | float | bool):
            spec["default"] = default
        props[f.schema_name] = spec
        if f.required:
            required.append(f.schema_name)
    return props, required


def outputs(component: type) -> dict[str, Field]:
    """The component's declared outputs: its class annotations of type pulumi.Output[...], and
    its plain attributes of a type other components take as input, or a list of one
    (GpuNodePool.node_group, a NodeGroup; GpuOperator.node_groups), so a program in another
    language can pass them on."""
    module = sys.modules[component.__module__]
    hints = inspect.get_annotations(component, globals=vars(module), locals={"Output": pulumi.Output}, eval_str=True)
    docs = _output_docs(component)
    out: dict[str, Field] = {}
    for name, tp in hints.items():
        if name.startswith("_"):
            continue
        if get_origin(tp) is pulumi.Output:
            out[name] = Field(name=name, type=get_args(tp)[0], doc=docs.get(name, ""), owner=component)
        elif tp in input_types() or (get_origin(tp) is list and get_args(tp)[0] in input_types()):
            out[name] = Field(name=name, type=tp, doc=docs.get(name, ""), owner=component)
    return out


@cache
def input_types() -> frozenset[type]:
    """Every args class some component takes (nested ones included)."""
    return frozenset(t for _, args in components().values() for t in walk_types(args))


def to_wire(value: Any) -> Any:
    """An output as other languages read it: args instances as maps in the schema's names."""
    cls = cast(type, type(cast(object, value)))
    if is_args_class(cls):
        return {f.schema_name: to_wire(getattr(value, f.name)) for f in fields(cls).values()}
    if is_list(value):
        return [to_wire(v) for v in value]
    if is_dict(value):
        return {k: to_wire(v) for k, v in value.items()}
    return value


def known_now(value: Any, found: list[pulumi.Resource]) -> Any:
    """A value from another resource that is already known, as plain data (the engine hands
    construct such values as resolved Outputs; a plain input such as nodeGroups must be known
    at preview); the resources it came from are added to `found`. Anything else is left as
    is, and refused by the plain input's check."""
    if isinstance(value, pulumi.Output):
        output = cast(Any, value)
        data: Any = getattr(output, "_data", None)  # the SDK's resolved value, read without awaiting
        if not (isinstance(data, asyncio.Future) and data.done() and not data.cancelled() and not data.exception()):
            return output
        resolved: Any = cast(Any, data).result()
        if not getattr(resolved, "is_known", False) or getattr(resolved, "is_secret", True):
            return output
        found += list(getattr(resolved, "resources", ()) or ())
        return known_now(getattr(resolved, "value", None), found)
    if is_list(value):
        return [known_now(v, found) for v in value]
    if is_dict(value):
        return {k: known_now(v, found) for k, v in value.items()}
    return value


# A class-level annotation on one line and the docstring under it (the outputs' style).
_OUTPUT_DOC = re.compile(r'^    (\w+): [^\n]*\n    """(.*?)"""', re.S | re.M)


def _output_docs(component: type) -> dict[str, str]:
    """The docstring under each output annotation of a component class, read from its module's
    text. Not with `ast`, nor `inspect.getsource` (which parses the module to find a class):
    CPython 3.11.7's AST constructor can fail with "recursion depth mismatch" once a
    RecursionError was caught in the process (e.g. JSON nested too deep)."""
    path = inspect.getsourcefile(component)
    text = Path(path).read_text() if path else ""
    start = re.search(rf"^class {component.__name__}\b.*$", text, re.M)
    if start is None:
        return {}
    end = re.search(r"^\S", text[start.end() :], re.M)  # the next top-level statement
    body = text[start.end() : start.end() + end.start()] if end else text[start.end() :]
    return {name: inspect.cleandoc(doc) for name, doc in _OUTPUT_DOC.findall(body)}


def schema() -> dict[str, Any]:
    """The package schema (what `pulumi package get-schema` shows)."""
    types = _Types()
    resources: dict[str, Any] = {}
    for token, (component, args_cls) in components().items():
        inputs, required_inputs = properties(args_cls, types)
        outs: dict[str, Any] = {}
        required_outputs: list[str] = []
        for f in outputs(component).values():
            spec = property_spec(f.type, f, types, plain=False)
            spec.pop("plain", None)
            spec["description"] = rename(f.doc, "schema")
            if f.name in SECRET_OUTPUTS:
                spec["secret"] = True
            outs[camel(f.name)] = spec
            if optional_of(unannotated(f.type)) is None:
                required_outputs.append(camel(f.name))
        resources[token] = {
            "isComponent": True,
            "description": rename(inspect.getdoc(component) or "", "schema"),
            "inputProperties": inputs,
            "requiredInputs": required_inputs,
            "properties": outs,
            "required": required_outputs,
        }
    for cls in {t for _, a in components().values() for t in walk_types(a)}:
        if cls not in {a for _, a in components().values()}:
            types.object(cls)
    return {
        "name": PACKAGE,
        "displayName": "KAITO on AKS",
        "version": __version__,
        "description": "Pulumi components that serve open LLMs on Kubernetes with KAITO: AKS cluster and GPU "
        "pools, NVIDIA GPU Operator, KAITO operators, models, RAG engines",
        "keywords": ["kaito", "aks", "llm", "kubernetes", "category/infrastructure", "kind/component"],
        "repository": "https://github.com/kaito-aks/kaito-aks",
        "resources": dict(sorted(resources.items())),
        "types": dict(sorted(types.types.items())),
        "language": {"python": {"requires": {"kaito-aks": f">={__version__}"}}},
    }


SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema.json"
"""components/schema.json: the schema, committed, so a change to the API every language sees shows
in review (a test keeps it equal to `schema()`; `make docs` writes it)."""


def schema_text() -> str:
    """The package schema as components/schema.json holds it."""
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- construct


def from_wire(tp: Any, value: Any) -> Any:
    """Numbers cross the wire as floats: whole ones become ints where the schema says integer,
    and in free-form data (`_whole`)."""
    tp = plain(tp)
    origin = get_origin(tp)
    if tp is Any:
        return _whole(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if origin in (list, typing.Sequence) and is_list(value):
        return [from_wire(get_args(tp)[0], v) for v in value]
    if origin in (dict, Mapping) and is_dict(value):
        return {k: from_wire(get_args(tp)[1], v) for k, v in value.items()}
    if is_args_class(tp) and is_dict(value):
        by_name = {f.schema_name: f for f in fields(tp).values()}
        return {k: (from_wire(by_name[k].type, v) if k in by_name else v) for k, v in value.items()}
    return value


def _whole(value: Any) -> Any:
    """Free-form data (runtime and tuning parameters, resources, volumes) as it was written: the
    wire turns 8192 into 8192.0, which KAITO's strconv.Atoi of max-model-len denies and vLLM's
    integer arguments refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if is_dict(value):
        return {k: _whole(v) for k, v in value.items()}
    if is_list(value):
        return [_whole(v) for v in value]
    return value


def _input_errors(component: str, name: str, problems: list[Problem]) -> InputPropertiesError:
    """The problems as the engine shows bad inputs: each at its property, in the schema's names."""
    details: list[InputPropertyErrorDetails] = [
        {"property_path": format_path(p.path, "schema"), "reason": bounded(rename(p.message, "schema"))}
        for p in problems
    ]
    listing = "\n".join(f"  - {p.text('schema')}" for p in problems)
    return InputPropertiesError(f"{component} {name}: {len(problems)} problem(s) with its inputs:\n{listing}", details)


class KaitoAksProvider(Provider):
    def __init__(self) -> None:
        super().__init__(__version__, json.dumps(schema()))
        self._components = components()

    def construct(
        self, name: str, resource_type: str, inputs: Mapping[str, Any], options: pulumi.ResourceOptions | None = None
    ) -> ConstructResult:
        if resource_type not in self._components:
            raise ValueError(f"{PACKAGE} has no component {resource_type}; it has: {', '.join(self._components)}")
        component, args_cls = self._components[resource_type]
        given = dict(inputs)
        sources: list[pulumi.Resource] = []
        for f in fields(args_cls).values():
            if f.schema_name in given and not f.accepts_outputs:
                given[f.schema_name] = known_now(given[f.schema_name], sources)
        if sources:  # e.g. nodeGroups from GpuNodePool.nodeGroup: created after those
            options = pulumi.ResourceOptions.merge(options, pulumi.ResourceOptions(depends_on=sources))
        args, problems = validate(cast(type[Any], args_cls), from_wire(args_cls, given), naming="schema")
        if problems:
            raise _input_errors(component.__name__, name, problems)
        try:
            instance = component(name, args, options)  # type: ignore[call-arg]
        except InvalidArgsError as err:
            raise _input_errors(component.__name__, name, err.problems) from None
        state = {camel(n): to_wire(getattr(instance, n)) for n in outputs(component)}
        return ConstructResult(urn=instance.urn, state=state)


def main() -> None:
    serve(KaitoAksProvider(), sys.argv[1:])


if __name__ == "__main__":
    main()
