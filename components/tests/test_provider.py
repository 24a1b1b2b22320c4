"""The component provider: every component for every Pulumi language, with the schema read from
the same Args the Python components take, and the same type tokens."""

from __future__ import annotations

import json
import re

import pulumi
import pulumi_kubernetes as k8s
import pytest
from google.protobuf import struct_pb2
from pulumi.errors import InputPropertiesError
from pulumi.runtime import rpc

from kaito_aks import (
    AksCluster,
    CpuNodePool,
    GpuNodePool,
    GpuOperator,
    GpuProvisioner,
    KaitoModel,
    KaitoOperator,
    Karpenter,
    KarpenterCrds,
    KubeconfigCluster,
    NodeBootstrapToken,
    RagEngine,
    RagEngineOperator,
    WorkloadIdentity,
)
from kaito_aks.model_streaming import ModelStreaming
from kaito_aks.nodes import NodeGroup
from kaito_aks.provider import SCHEMA_FILE, KaitoAksProvider, components, schema, schema_text, to_wire
from kaito_aks.schema import fields, walk_types
from kaito_aks.serving.dashboard import VllmDashboard
from kaito_aks.serving.gateway import InferenceGateway
from kaito_aks.serving.keda import KedaAutoscaling
from kaito_aks.testing import MOCK_KUBECONFIG, Secret, run

KUBECONFIG = MOCK_KUBECONFIG.format(cluster="dev")

COMPONENTS = {
    "AksCluster": AksCluster,
    "GpuNodePool": GpuNodePool,
    "CpuNodePool": CpuNodePool,
    "WorkloadIdentity": WorkloadIdentity,
    "GpuProvisioner": GpuProvisioner,
    "Karpenter": Karpenter,
    "KarpenterCrds": KarpenterCrds,
    "NodeBootstrapToken": NodeBootstrapToken,
    "KubeconfigCluster": KubeconfigCluster,
    "GpuOperator": GpuOperator,
    "KaitoOperator": KaitoOperator,
    "KaitoModel": KaitoModel,
    "ModelStreaming": ModelStreaming,
    "RagEngineOperator": RagEngineOperator,
    "RagEngine": RagEngine,
    "InferenceGateway": InferenceGateway,
    "KedaAutoscaling": KedaAutoscaling,
    "VllmDashboard": VllmDashboard,
}


def test_every_component_is_in_the_schema_under_the_token_python_registers():
    resources = schema()["resources"]
    assert set(resources) == {f"kaito-aks:index:{n}" for n in COMPONENTS}
    for name, cls in COMPONENTS.items():
        module = __import__(cls.__module__, fromlist=["TYPE"])
        token = f"kaito-aks:index:{name}"
        assert token == module.TYPE  # one URN per component, whatever the language
        assert resources[module.TYPE]["isComponent"] is True


def test_inputs_are_typed_documented_in_the_schemas_names_and_plain_unless_they_may_be_outputs():
    model = schema()["resources"]["kaito-aks:index:KaitoModel"]
    inputs = model["inputProperties"]
    assert model["requiredInputs"] == ["kaitoVersion"]
    assert inputs["replicas"] == {
        "type": "integer",
        "plain": True,
        "description": "Serving instances behind the one endpoint. Each takes whole nodes of its own (KAITO's pod\n"
        "requests every GPU of its node): N replicas need N times one's nodes, at once. (1-1000; default: 1)",
        "default": 1,
    }
    assert inputs["hfToken"]["secret"] is True
    assert "plain" not in inputs["hfToken"]  # may come from another resource
    assert inputs["compute"]["$ref"] == "#/types/kaito-aks:index:Compute"
    # arg names inside descriptions are the schema's, never Python's
    assert "nodeProvisioning" in inputs["instanceType"]["description"]
    every = schema()
    described = [s["description"] for r in every["resources"].values() for s in r["inputProperties"].values()]
    described += [s["description"] for t in every["types"].values() for s in (t.get("properties") or {}).values()]
    python_names = {
        f.name
        for _, args in components().values()
        for cls in walk_types(args)
        for f in fields(cls).values()
        if "_" in f.name
    }
    assert not [(n, d) for d in described for n in python_names if n in d]
    pool = schema()["resources"]["kaito-aks:index:GpuNodePool"]["inputProperties"]
    assert "plain" not in pool["clusterName"]  # e.g. AksCluster's output


def test_descriptions_name_args_and_outputs_as_the_schema_does_never_in_python():
    """Another language's user reads nodeSubnetId, not node_subnet_id (AksCluster.vnetGuid said
    the Python names)."""
    spec = schema()
    names: set[str] = set()
    texts: list[tuple[str, str]] = []

    def collect(node: object, at: str) -> None:
        if isinstance(node, dict):
            for key in ("properties", "inputProperties"):
                for name in node.get(key, {}) if isinstance(node.get(key), dict) else {}:
                    names.add(re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower())
            for key, value in node.items():
                if key == "description" and isinstance(value, str):
                    texts.append((at, value))
                else:
                    collect(value, f"{at}/{key}")
        elif isinstance(node, list):
            for item in node:
                collect(item, at)

    collect(spec, "")
    python = {n for n in names if "_" in n}
    assert {"node_subnet_id", "token_id", "model_access_secret"} <= python
    leaks = [
        (at, word)
        for at, text in texts
        for word in re.findall(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", text)
        if word in python
    ]
    assert leaks == []


def test_modes_are_enums():
    types = schema()["types"]
    assert types["kaito-aks:index:NodeProvisioning"]["enum"] == [
        {"name": "Byo", "value": "byo"},
        {"name": "Auto", "value": "auto"},
    ]
    assert {e["value"] for e in types["kaito-aks:index:TuningMethod"]["enum"]} == {"lora", "qlora"}
    assert {e["value"] for e in types["kaito-aks:index:GpuDriver"]["enum"]} == {"operator", "aks"}


def test_outputs_are_declared():
    resources = schema()["resources"]
    assert set(resources["kaito-aks:index:AksCluster"]["properties"]) == {
        "clusterName",
        "resourceGroupName",
        "nodeResourceGroup",
        "kubeconfig",
        "oidcIssuerUrl",
        "clusterId",
        "location",
        "aiToolchainOperator",
        "kubernetesVersion",
        "apiServerEndpoint",
        "kubeletIdentityClientId",
        "kubeletIdentityResourceId",
        "kubeletIdentityObjectId",
        "networkPlugin",
        "networkPluginMode",
        "networkPolicy",
        "networkDataplane",
        "nodeSubnetId",
        "vnetGuid",
    }
    assert resources["kaito-aks:index:AksCluster"]["properties"]["kubeconfig"]["secret"] is True
    assert set(resources["kaito-aks:index:Karpenter"]["properties"]) == {
        "namespace",
        "chartVersion",
        "clientId",
        "principalId",
        "identityName",
        "sshPublicKey",
        "bootstrapTokenId",
        "bootstrapTokenExpires",
    }
    assert set(resources["kaito-aks:index:KarpenterCrds"]["properties"]) == {"chartVersion", "crds", "adopted"}
    assert set(resources["kaito-aks:index:NodeBootstrapToken"]["properties"]) == {"tokenId", "token", "expires"}
    assert resources["kaito-aks:index:NodeBootstrapToken"]["properties"]["token"]["secret"] is True
    assert set(resources["kaito-aks:index:KaitoModel"]["properties"]) == {
        "endpoint",
        "model",
        "source",
        "replicas",
        "gpuNodes",
        "instanceType",
        "route",
        "autoscaling",
    }
    assert set(resources["kaito-aks:index:GpuNodePool"]["properties"]) == {"name", "vmSize", "nodeGroup"}
    assert set(resources["kaito-aks:index:KubeconfigCluster"]["properties"]) == {"clusterName", "kubeconfig", "context"}
    assert set(resources["kaito-aks:index:GpuProvisioner"]["properties"]) == {
        "namespace",
        "chartVersion",
        "clientId",
        "principalId",
        "identityName",
    }
    assert set(resources["kaito-aks:index:WorkloadIdentity"]["properties"]) == {
        "clientId",
        "principalId",
        "tenantId",
        "identityId",
        "identityName",
        "subject",
    }
    assert set(resources["kaito-aks:index:RagEngine"]["properties"]) == {
        "endpoint",
        "chatEndpoint",
        "retrieveEndpoint",
        "apiVersion",
    }
    assert set(resources["kaito-aks:index:RagEngineOperator"]["properties"]) == {"namespace", "chartVersion"}


def test_a_rag_engines_inputs_are_typed_and_the_llm_url_may_be_another_resources_output():
    every = schema()
    rag = every["resources"]["kaito-aks:index:RagEngine"]
    assert rag["requiredInputs"] == ["kaitoVersion"]
    assert rag["inputProperties"]["inferenceService"]["$ref"] == "#/types/kaito-aks:index:InferenceService"
    service = every["types"]["kaito-aks:index:InferenceService"]
    assert service["required"] == ["url", "contextWindowSize"]
    assert "plain" not in service["properties"]["url"]  # e.g. a KaitoModel's endpoint
    assert service["properties"]["accessToken"]["secret"] is True
    assert every["types"]["kaito-aks:index:VectorDbEngine"]["enum"] == [{"name": "Qdrant", "value": "qdrant"}]
    # the node selector is the model's own type, named once
    assert rag["inputProperties"]["compute"]["$ref"] == "#/types/kaito-aks:index:RagCompute"
    compute = every["types"]["kaito-aks:index:RagCompute"]["properties"]
    assert compute["labelSelector"]["$ref"] == "#/types/kaito-aks:index:LabelSelector"


def on_cluster() -> pulumi.ResourceOptions:
    """The options the engine hands construct: the program's providers by package (here one
    that carries no credentials for the waits)."""
    return pulumi.ResourceOptions(providers={"kubernetes": k8s.Provider("k8s", kubeconfig=pulumi.Output.secret("x"))})


def construct(token: str, inputs: dict[str, object]) -> None:
    provider = KaitoAksProvider()
    run(lambda: provider.construct("m", token, inputs, on_cluster()))


def test_construct_refuses_unknown_keys_instead_of_dropping_them():
    with pytest.raises(InputPropertiesError) as err:
        construct(
            "kaito-aks:index:KaitoModel", {"kaitoVersion": "0.8.1", "model": "phi-4-mini-instruct", "replica": 2.0}
        )
    assert {"property_path": "replica", "reason": "unknown key; did you mean replicas?"} in (err.value.errors or [])


def test_construct_reports_the_components_rules_in_the_schemas_names():
    with pytest.raises(InputPropertiesError) as err:
        construct(
            "kaito-aks:index:KaitoModel",
            {
                "kaitoVersion": "0.8.1",
                "model": "phi-4-mini-instruct",
                "instanceType": "Standard_NC24ads_A100_v4",
                "waitForGpuNodes": False,
                "waitForReady": False,
            },
        )
    (problem,) = err.value.errors or []
    assert problem["property_path"] == "instanceType"
    assert "use nodeProvisioning auto" in problem["reason"]


def test_construct_builds_the_component_from_wire_values():
    """Numbers arrive as floats, nested types as maps in the schema's names."""
    provider = KaitoAksProvider()
    states = []

    def program() -> None:
        inputs = {
            "kaitoVersion": "0.8.1",
            "model": "phi-4-mini-instruct",
            "replicas": 2.0,
            "labelSelector": {"matchLabels": {"agentpool": "a100"}},
            "waitForGpuNodes": False,
            "waitForReady": False,
        }
        states.append(provider.construct("phi", "kaito-aks:index:KaitoModel", inputs, on_cluster()).state)

    ev = run(program)
    workspaces = ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace")
    assert len(workspaces) == 2
    assert workspaces[0].inputs["resource"]["labelSelector"] == {"matchLabels": {"agentpool": "a100"}}
    assert set(states[0]) == {
        "endpoint",
        "model",
        "source",
        "replicas",
        "gpuNodes",
        "instanceType",
        "route",
        "autoscaling",
    }
    assert set(states[0]) == {
        "endpoint",
        "model",
        "source",
        "replicas",
        "gpuNodes",
        "instanceType",
        "route",
        "autoscaling",
    }


def test_construct_builds_a_rag_engine_from_wire_values():
    provider = KaitoAksProvider()
    inputs = {
        "kaitoVersion": "0.8.1",
        "compute": {"instanceType": "Standard_NV36ads_A10_v5", "labelSelector": {"matchLabels": {"apps": "rag"}}},
        "inferenceService": {
            "url": "http://phi.default.svc.cluster.local/v1/chat/completions",
            "contextWindowSize": 4096.0,
        },
        "waitForReady": False,
    }
    ev = run(lambda: provider.construct("rag", "kaito-aks:index:RagEngine", inputs, on_cluster()))
    (engine,) = ev.of_type("kubernetes:kaito.sh/v1alpha1:RAGEngine")
    assert engine.inputs["spec"]["inferenceService"]["contextWindowSize"] == 4096
    with pytest.raises(InputPropertiesError) as err:
        construct("kaito-aks:index:RagEngine", {**inputs, "compute": None})
    (problem,) = err.value.errors or []
    assert problem["property_path"] == "compute"
    assert problem["reason"].startswith("required on KAITO 0.8.1: its webhook reads spec.compute")


def test_whole_numbers_in_free_form_maps_arrive_as_the_integers_written():
    """A YAML or TypeScript program's `config: {vllm: {max-model-len: 8192}}` crosses the wire as
    8192.0; written so into inference_config.yaml, KAITO's webhook denies it (strconv.Atoi)."""
    provider = KaitoAksProvider()

    def program() -> None:
        inputs = {
            "kaitoVersion": "0.8.1",
            "model": "phi-4-mini-instruct",
            "config": {"vllm": {"max-model-len": 8192.0, "gpu-memory-utilization": 0.9}},
            "waitForGpuNodes": False,
            "waitForReady": False,
        }
        provider.construct("phi", "kaito-aks:index:KaitoModel", inputs, on_cluster())

    (cm,) = run(program).of_type("kubernetes:core/v1:ConfigMap")
    assert cm.inputs["data"]["inference_config.yaml"] == "vllm:\n  gpu-memory-utilization: 0.9\n  max-model-len: 8192\n"


# ---------------------------------------------------------------- usable from other languages (review 1, G3)


def test_enum_names_keep_the_case_of_their_words():
    types = schema()["types"]
    (operator,) = [
        t
        for t in types.values()
        if [e["value"] for e in t.get("enum", [])] == ["In", "NotIn", "Exists", "DoesNotExist"]
    ]
    assert [e["name"] for e in operator["enum"]] == ["In", "NotIn", "Exists", "DoesNotExist"]
    provisioner = types["kaito-aks:index:NodeProvisioner"]["enum"]
    assert [e["name"] for e in provisioner] == ["GpuProvisioner", "Karpenter"]


def test_descriptions_name_only_properties_the_schema_has():
    every = schema()
    props: dict[str, set[str]] = {}
    for token, r in every["resources"].items():
        props[token.split(":")[-1]] = set(r["inputProperties"]) | set(r["properties"])
    for token, t in every["types"].items():
        props[token.split(":")[-1]] = set(t.get("properties", {}))
    missing = {
        (owner, attr)
        for owner, attr in re.findall(r"\b([A-Z][A-Za-z]+)\.([A-Za-z_]+)", json.dumps(every))
        if owner in props and attr not in props[owner]
    }
    assert missing == set()


def output_value(value: object, *dependencies: str) -> pulumi.Output[object]:
    """A value from another resource as the engine hands it to construct (an output value)."""
    wire = struct_pb2.Struct()
    wire.update({"value": value, "dependencies": list(dependencies)})
    return rpc.deserialize_output_value(wire)


def test_a_yaml_program_passes_a_pool_and_a_cluster_on_through_outputs():
    provider = KaitoAksProvider()
    states: dict[str, dict[str, object]] = {}

    def program() -> None:
        cluster = provider.construct(
            "cluster", "kaito-aks:index:KubeconfigCluster", {"kubeconfig": KUBECONFIG, "context": "dev"}, None
        )
        states["cluster"] = cluster.state
        pool = provider.construct(
            "a100",
            "kaito-aks:index:GpuNodePool",
            {"clusterName": "aks", "resourceGroupName": "rg", "vmSize": "Standard_NC24ads_A100_v4", "gpuDriver": "aks"},
            None,
        )
        states["pool"] = pool.state
        model = {
            "kaitoVersion": "0.8.1",
            "model": "phi-4-mini-instruct",
            "labelSelector": {"matchLabels": {"agentpool": "a100"}},
            "nodeGroups": [output_value(to_wire(pool.state["nodeGroup"]), "urn:pulumi:test::test::x$y::a100")],
            "waitForGpuNodes": False,
            "waitForReady": False,
        }
        provider.construct("phi", "kaito-aks:index:KaitoModel", model, on_cluster())

    ev = run(program)
    assert isinstance(
        ev.component_outputs[ev.named("cluster", "kaito-aks:index:KubeconfigCluster").urn]["kubeconfig"], Secret
    )
    assert states["cluster"]["context"] is not None
    group = to_wire(states["pool"]["nodeGroup"])
    assert group["vmSize"] == "Standard_NC24ads_A100_v4"
    assert group["labels"]["agentpool"] == "a100"
    assert set(group) == {f.schema_name for f in fields(NodeGroup).values()}
    assert len(ev.of_type("kubernetes:kaito.sh/v1beta1:Workspace")) == 1
    # and the pool's checks reach the model: a selector that matches none of them is refused
    with pytest.raises(InputPropertiesError) as err:
        run(
            lambda: provider.construct(
                "phi",
                "kaito-aks:index:KaitoModel",
                {
                    "kaitoVersion": "0.8.1",
                    "model": "phi-4-mini-instruct",
                    "labelSelector": {"matchLabels": {"agentpool": "h100"}},
                    "nodeGroups": [output_value(group)],
                    "waitForGpuNodes": False,
                    "waitForReady": False,
                },
                on_cluster(),
            )
        )
    assert [e["property_path"] for e in err.value.errors or []] == ["labelSelector"]


def test_the_committed_schema_is_what_the_components_declare():
    """components/schema.json is the API every Pulumi language sees, committed so that a change to
    it (a renamed input, a new type) shows in review: it must be what the args declare now."""
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "components/schema.json is not what the components' args declare: run `make docs` and review its diff "
        "(every Pulumi language's API)"
    )
