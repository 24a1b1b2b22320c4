"""KAITO's RAGEngine operator and a RAGEngine, built as a user would (`from kaito_aks import
...`, `kaito_aks.testing.run`): the chart values against the ragengine chart's values.yaml, the
RAGEngine against KAITO's CRD at each release, each rule of KAITO's ragengine webhook (and what
KAITO silently mishandles) refused by arg before anything registers, the wiring to a model's
endpoint, the readiness wait and the secrets."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

import upstream_facts
from kaito_aks import (
    EmbeddingArgs,
    GuardrailsArgs,
    InferenceServiceArgs,
    InvalidArgsError,
    KaitoModel,
    KaitoModelArgs,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    LabelSelectorArgs,
    LabelSelectorRequirementArgs,
    LocalEmbeddingArgs,
    RagComputeArgs,
    RagEngine,
    RagEngineArgs,
    RagEngineOperator,
    RagEngineOperatorArgs,
    RemoteEmbeddingArgs,
    StorageArgs,
    VectorDbArgs,
)
from kaito_aks.kaito.go_url import parse_request_uri
from kaito_aks.testing import MOCK_KUBECONFIG, ProgramMocks, RecordingMonitor, Secret, reveal, run
from kaito_aks.waits.model_ready import Watched, judge
from kube_schema import crd_validator, unknown_value_paths

RELEASE = "kubernetes:helm.sh/v3:Release"
READY = "pulumi-python:dynamic/kaito-aks:ModelReady"
VERSIONS = ("0.8.0", "0.8.1", "0.11.0", "0.12.0")
API = {
    "0.8.0": "kaito.sh/v1alpha1",
    "0.8.1": "kaito.sh/v1alpha1",
    "0.11.0": "kaito.sh/v1beta1",
    "0.12.0": "kaito.sh/v1beta1",
}
LLM = "http://phi.default.svc.cluster.local/v1/chat/completions"
A10 = "Standard_NV36ads_A10_v5"
ON_A10 = RagComputeArgs(instance_type=A10, label_selector=LabelSelectorArgs(match_labels={"apps": "rag"}))
KUBECONFIG = MOCK_KUBECONFIG.format(cluster="dev")  # a kubeconfig with a cluster (and context) dev


def refused(program: Any) -> str:
    """The InvalidArgsError a program raises, after checking nothing was registered."""
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(program, monitor=monitor)
    # nothing of the component: only the providers the program made first
    assert [r for r in monitor.registrations if not r.type.startswith("pulumi:providers:")] == [], "registered"
    return str(err.value)


def cluster() -> KubeconfigCluster:
    return KubeconfigCluster("cluster", KubeconfigClusterArgs(kubeconfig=KUBECONFIG, context="dev"))


def on_cluster() -> pulumi.ResourceOptions:
    """Through an explicit Kubernetes provider, one that carries no credentials for the waits."""
    return pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(KUBECONFIG)))


def through(c: KubeconfigCluster, *depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(provider=c.provider, depends_on=list(depends_on))


def minimal(version: str, **kw: Any) -> RagEngineArgs:
    """The least a RAG engine needs on `version` (0.8: a GPU node and an LLM), no waits."""
    base: dict[str, Any] = {"kaito_version": version, "wait_for_ready": False}
    if version.startswith("0.8"):
        base |= {"compute": ON_A10, "inference_service": InferenceServiceArgs(url=LLM, context_window_size=4096)}
    return RagEngineArgs(**(base | kw))


def engine_of(ev: Any, version: str, name: str = "rag") -> dict[str, Any]:
    return reveal(ev.named(f"{name}/{name}", f"kubernetes:{API[version]}:RAGEngine").inputs)


# Go 1.26's url.ParseRequestURI on each (its verdict, recorded with the Go toolchain KAITO 0.12
# is built with): the webhook's "URL input error" passes or fails the same text.
GO_PARSE_REQUEST_URI = [
    ("http://phi.default.svc.cluster.local/v1/chat/completions", True),
    ("https://api.openai.com/v1/embeddings", True),
    ("/v1/chat/completions", True),
    ("localhost:5000/v1/chat/completions", True),  # scheme "localhost", opaque
    ("mailto:x", True),
    ("*", True),
    ("http://u:p@host/x", True),
    ("http://[::1]:8080/x", True),
    ("http://[fe80::1%25en0]/", True),
    ("http://h%C3%A9.example/", True),
    ("http://x/a b", True),
    ("http://x?q=1", True),
    ("http://x#frag", False),  # invalid character "#" in host name
    ("", False),  # empty url
    ("v1/chat/completions", False),  # invalid URI for request
    ("phi.default.svc", False),  # invalid URI for request
    ("http://x:80a/", False),  # invalid port ":80a" after host
    ("http://x:8080:90/", False),  # invalid port ":8080:90" after host
    ("http://[::1/x", False),  # missing ']' in host
    ("http://[127.0.0.1]/", False),  # invalid IP-literal
    ("http://a[b]/", False),  # invalid IP-literal
    ("http://h%41/", False),  # invalid URL escape "%41"
    ("http://h/%zz", False),  # invalid URL escape "%zz"
    ("https://a b/x", False),  # invalid character " " in host name
    ("http://{x}/", False),  # invalid character "{" in host name
    ("http://x\\y/", False),  # invalid character "\\" in host name
    ("1http://x", False),  # invalid URI for request
    (":foo", False),  # missing protocol scheme
    ("http://x/\x01", False),  # net/url: invalid control character in URL
    ("http://u p@host/", False),  # net/url: invalid userinfo
    ("http://\u00fc@host/", False),  # net/url: invalid userinfo
    ("http://[]/", False),  # invalid host: ParseAddr(""): unable to parse IP
]


@pytest.mark.parametrize(("url", "go_accepts"), GO_PARSE_REQUEST_URI)
def test_urls_pass_or_fail_as_go_parses_them_in_kaitos_webhook(url: str, go_accepts: bool):
    assert (parse_request_uri(url) is None) is go_accepts, parse_request_uri(url)


# ---------------------------------------------------------------- the operator


@pytest.mark.parametrize("version", VERSIONS)
def test_the_operator_is_the_pinned_ragengine_chart_in_a_namespace_of_its_own(version: str):
    values = {"logging": {"level": "info"}, "nodeSelector": {"agentpool": "system"}}
    ev = run(
        lambda: RagEngineOperator("rag-op", RagEngineOperatorArgs(version=version, values=values), opts=on_cluster())
    )
    release = ev.named("rag-op", RELEASE).inputs
    assert (release["chart"], release["version"], release["name"]) == ("ragengine", version, "kaito-ragengine")
    assert release["repositoryOpts"] == {"repo": "https://kaito-project.github.io/kaito/charts/kaito"}
    # the workspace chart makes ConfigMap kaito-logging-config in kaito-workspace: not there
    assert release["namespace"] == "kaito-ragengine"
    assert release["createNamespace"] is True
    assert release["atomic"] is True  # ready only once the fail-closed webhook serves
    chart_values = upstream_facts.chart_values("kaito", version, "ragengine")
    assert unknown_value_paths(release["values"], chart_values) == []
    assert release["values"] == values


def test_the_operator_refuses_values_the_chart_mishandles_and_warns_of_those_it_lacks(
    caplog: pytest.LogCaptureFixture,
):
    message = refused(
        lambda: RagEngineOperator(
            "rag-op",
            RagEngineOperatorArgs(
                version="0.12.0", values={"clusterName": "aks", "replicaCount": 2, "cloudProviderName": "aws"}
            ),
        )
    )
    assert "clusterName" not in message  # Helm passes a value the chart does not read: no effect, a warning
    run(
        lambda: RagEngineOperator(
            "rag-op", RagEngineOperatorArgs(version="0.12.0", values={"clusterName": "aks"}), opts=on_cluster()
        )
    )
    assert "args.values.clusterName: not a value of the KAITO 0.12.0 ragengine chart" in caplog.text
    assert "args.values.replicaCount: must be 1, not 2: the chart starts the RAGEngine controller without leader" in (
        message
    )
    assert "args.values.cloudProviderName: must be azure, not 'aws'" in message
    message = refused(lambda: RagEngineOperator("rag-op", RagEngineOperatorArgs(version="0.9.4")))
    assert (
        "args.version: KAITO 0.9.4 is not supported; use one of: 0.6.0 (the AKS add-on's), 0.8.0, 0.8.1, 0.11.0, 0.12.0"
        in message
    )


# ---------------------------------------------------------------- the RAGEngine in KAITO's shape


def everything(version: str) -> RagEngineArgs:
    """Every setting the version has."""
    selector = LabelSelectorArgs(
        match_labels={"apps": "rag"},
        match_expressions=[LabelSelectorRequirementArgs(key="zone", operator="In", values=["1"])],
    )
    storage: dict[str, Any] = {"persistent_volume_claim": "rag-vectors", "mount_path": "/mnt/vectors"}
    extra: dict[str, Any] = {}
    if not version.startswith("0.8"):
        storage["vector_db"] = VectorDbArgs(url="http://qdrant.default.svc.cluster.local:6333", access_secret="qd")
        extra["guardrails"] = GuardrailsArgs(config_map="my-policy")
    return RagEngineArgs(
        kaito_version=version,
        name="docs",
        namespace="rag",
        embedding=EmbeddingArgs(
            local=LocalEmbeddingArgs(
                image="myacr.azurecr.io/embed/bge:1", image_pull_secret="acr", model_access_secret="hf"
            )
        ),
        inference_service=InferenceServiceArgs(url=LLM, context_window_size=16384, access_secret="llm"),
        compute=RagComputeArgs(instance_type="Standard_NC24ads_A100_v4", label_selector=selector),
        storage=StorageArgs(**storage),
        load_balancer=True,
        wait_for_ready=False,
        **extra,
    )


def remote_and_retrieve_only(version: str) -> RagEngineArgs:
    if version.startswith("0.8"):
        return minimal(
            version, embedding=EmbeddingArgs(remote=RemoteEmbeddingArgs(url="https://api.openai.com/v1/embeddings"))
        )
    return RagEngineArgs(  # no LLM, no node: KAITO 0.11+'s retrieve-only engine on CPU
        kaito_version=version,
        embedding=EmbeddingArgs(
            remote=RemoteEmbeddingArgs(url="https://api.openai.com/v1/embeddings", access_secret="openai")
        ),
        wait_for_ready=False,
    )


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("shape", [minimal, everything, remote_and_retrieve_only])
def test_the_ragengine_is_valid_against_kaitos_crd(version: str, shape: Any):
    args = shape(version)
    name = args.name or "rag"
    ev = run(lambda: RagEngine(name, args, opts=on_cluster()))
    (engine,) = ev.of_type(f"kubernetes:{API[version]}:RAGEngine")
    manifest = reveal(engine.inputs)
    validate = crd_validator(upstream_facts.crd(version, "ragengines.kaito.sh"), API[version].split("/")[1])
    assert validate(manifest) == []
    assert manifest["metadata"]["name"] == name


def test_each_version_gets_kaitos_shape_of_storage_and_never_kaitos_public_load_balancer():
    ev = run(lambda: RagEngine("docs", everything("0.8.1"), opts=on_cluster()))
    old = engine_of(ev, "0.8.1", "docs")
    assert old["spec"]["storage"] == {"persistentVolumeClaim": "rag-vectors", "mountPath": "/mnt/vectors"}
    # KAITO's kaito.sh/enablelb makes a public Service it never updates: the engine's own instead
    assert "annotations" not in old["metadata"]
    lb = reveal(ev.named("docs/docs-lb", "kubernetes:core/v1:Service").inputs)
    assert lb["metadata"]["annotations"]["service.beta.kubernetes.io/azure-load-balancer-internal"] == "true"
    assert lb["spec"]["type"] == "LoadBalancer"
    assert lb["spec"]["externalTrafficPolicy"] == "Local"
    assert lb["spec"]["selector"] == {"kaito.sh/ragengine": "docs"}
    assert lb["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": 5000, "protocol": "TCP"}]
    policy = reveal(ev.named("docs/docs-ingress", "kubernetes:networking.k8s.io/v1:NetworkPolicy").inputs)
    assert policy["spec"]["podSelector"] == {"matchLabels": {"kaito.sh/ragengine": "docs"}}
    assert policy["spec"]["ingress"][1] == {
        "from": [{"ipBlock": {"cidr": c}} for c in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")],
        "ports": [{"port": 5000, "protocol": "TCP"}],
    }
    new = engine_of(run(lambda: RagEngine("docs", everything("0.12.0"), opts=on_cluster())), "0.12.0", "docs")
    assert new["spec"]["storage"] == {
        "persistentVolume": {"persistentVolumeClaim": "rag-vectors", "mountPath": "/mnt/vectors"},
        "vectorDB": {"engine": "qdrant", "url": "http://qdrant.default.svc.cluster.local:6333", "accessSecret": "qd"},
    }
    assert new["spec"]["guardrails"] == {"enabled": True, "configMapRef": {"name": "my-policy"}}
    assert new["spec"]["embedding"] == {
        "local": {"image": "myacr.azurecr.io/embed/bge:1", "imagePullSecret": "acr", "modelAccessSecret": "hf"}
    }


def test_what_cannot_change_in_place_replaces_the_ragengine_deleting_it_first():
    ev = run(lambda: RagEngine("rag", minimal("0.12.0"), opts=on_cluster()))
    engine = ev.named("rag/rag", "kubernetes:kaito.sh/v1beta1:RAGEngine")
    assert engine.options["replaceOnChanges"] == [
        "spec.compute",
        "spec.guardrails",
        "spec.storage.persistentVolume",
    ]
    assert engine.options["deleteBeforeReplace"] is True
    # an engine deployed on KAITO 0.8 (v1alpha1) is the same object once KAITO serves v1beta1
    assert engine.options["aliases"] == [{"spec": {"type": "kubernetes:kaito.sh/v1alpha1:RAGEngine", "parentUrn": ""}}]
    old = run(lambda: RagEngine("rag", minimal("0.8.1"), opts=on_cluster())).named(
        "rag/rag", "kubernetes:kaito.sh/v1alpha1:RAGEngine"
    )
    assert old.options["replaceOnChanges"] == ["spec.compute", "spec.storage"]


def test_the_default_embedding_is_the_model_kaitos_engine_really_uses():
    engine = engine_of(run(lambda: RagEngine("rag", minimal("0.12.0"), opts=on_cluster())), "0.12.0")
    assert engine["spec"]["embedding"] == {"local": {"modelID": "BAAI/bge-small-en-v1.5"}}


def test_an_embedding_kaito_ignores_is_emitted_as_asked_and_warned_about(monkeypatch: pytest.MonkeyPatch):
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **kw: warnings.append(message))
    run(lambda: RagEngine("rag", remote_and_retrieve_only("0.12.0"), opts=on_cluster()))
    assert warnings == [
        "KAITO 0.12.0 does not pass `embedding` to the engine (kaito-project/kaito#2365): it embeds with "
        "BAAI/bge-small-en-v1.5, not the remote service https://api.openai.com/v1/embeddings"
    ]
    warnings.clear()
    run(lambda: RagEngine("rag", minimal("0.12.0"), opts=on_cluster()))
    assert warnings == []


# ---------------------------------------------------------------- wiring, wait, outputs, secrets


def test_a_rag_engine_over_a_model_of_the_same_program_waits_for_it_and_reports_its_urls():
    outputs: dict[str, Any] = {}

    def program() -> None:
        c = cluster()
        operator = RagEngineOperator("rag-op", RagEngineOperatorArgs(version="0.12.0"), opts=through(c))
        model = KaitoModel("phi", KaitoModelArgs(kaito_version="0.12.0", model="phi-4-mini-instruct"), opts=through(c))
        rag = RagEngine(
            "rag",
            RagEngineArgs(
                kaito_version="0.12.0",
                inference_service=InferenceServiceArgs(url=model.endpoint, context_window_size=131072),
            ),
            opts=through(c, operator),
        )
        outputs["rag"] = rag

    ev = run(program)
    engine = ev.named("rag/rag", "kubernetes:kaito.sh/v1beta1:RAGEngine")
    assert engine.inputs["spec"]["inferenceService"]["url"] == LLM  # the model's endpoint
    service = ev.named("phi/phi", "kubernetes:core/v1:Service")
    assert service.urn in engine.dependencies  # created after the model's Service
    assert ev.named("rag-op", RELEASE).urn in engine.dependencies  # and after the operator's webhook serves
    assert engine.provider_urn == ev.named("cluster", "pulumi:providers:kubernetes").urn
    wait = ev.named("rag/ready", READY)
    assert engine.urn in wait.dependencies
    assert wait.inputs["watched"] == [
        {
            "kind": "RAGEngine",
            "apiVersion": "kaito.sh/v1beta1",
            "namespace": "default",
            "name": "rag",
            "condition": "RAGEngineSucceeded",
        }
    ]
    assert wait.inputs["context"] == "dev"  # the provider's credentials
    state = ev.component_outputs[ev.named("rag", "kaito-aks:index:RagEngine").urn]
    assert state == {
        "endpoint": "http://rag.default.svc.cluster.local",
        "chatEndpoint": "http://rag.default.svc.cluster.local/v1/chat/completions",
        "retrieveEndpoint": "http://rag.default.svc.cluster.local/retrieve",
        "apiVersion": "kaito.sh/v1beta1",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_the_wait_reads_the_ragengine_where_the_api_server_serves_it(version: str):
    watched = Watched.from_props(
        run(lambda: RagEngine("rag", minimal(version, wait_for_ready=True, kubeconfig=KUBECONFIG), opts=on_cluster()))
        .named("rag/ready", READY)
        .inputs["watched"][0]
    )
    # the CRD's plural, under the version the component emits
    crd = upstream_facts.crd(version, "ragengines.kaito.sh")
    assert crd["spec"]["names"]["plural"] == "ragengines"
    assert watched.path == f"/apis/{API[version]}/namespaces/default/ragengines/rag"
    pending = judge({"metadata": {"name": "rag", "generation": 1}, "status": {"conditions": []}}, watched)
    assert pending.waiting_for == "RAGEngine default/rag reports no RAGEngineSucceeded condition"
    assert "KAITO RAGEngine controller running? (kubectl -n kaito-ragengine get pods" in pending.hint
    failed = {
        "type": "RAGEngineSucceeded",
        "status": "False",
        "reason": "ragengineFailed",
        "message": "Unsupported SKU",
        "observedGeneration": 1,
    }
    check = judge({"metadata": {"generation": 1}, "status": {"conditions": [failed]}}, watched)
    assert check.waiting_for.endswith("RAGEngineSucceeded=False (ragengineFailed: Unsupported SKU)")


def test_an_edit_of_the_llm_url_runs_the_wait_again():
    def revision(url: str) -> str:
        args = minimal("0.12.0", wait_for_ready=True, kubeconfig=KUBECONFIG)
        service = InferenceServiceArgs(url=pulumi.Output.from_input(url), context_window_size=4096)
        args = RagEngineArgs(**{**args.__dict__, "inference_service": service})
        return run(lambda: RagEngine("rag", args, opts=on_cluster())).named("rag/ready", READY).inputs["revision"]

    assert revision(LLM) != revision("http://phi-4.default.svc.cluster.local/v1/chat/completions")
    assert revision(LLM) == revision(LLM)


def test_tokens_are_kept_secret_and_put_in_the_secrets_kaitos_engine_reads():
    def program() -> None:
        RagEngine(
            "rag",
            RagEngineArgs(
                kaito_version="0.12.0",
                inference_service=InferenceServiceArgs(url=LLM, context_window_size=4096, access_token="llm-t0ken"),
                storage=StorageArgs(vector_db=VectorDbArgs(url="http://qdrant:6333", access_token="qdr-t0ken")),
                kubeconfig=KUBECONFIG,
            ),
            opts=on_cluster(),
        )

    ev = run(program)
    llm = ev.named("rag/rag-llm-access", "kubernetes:core/v1:Secret")
    assert isinstance(llm.inputs["stringData"], Secret)
    assert reveal(llm.inputs["stringData"]) == {"LLM_ACCESS_SECRET": "llm-t0ken"}
    db = ev.named("rag/rag-vector-db-access", "kubernetes:core/v1:Secret")
    assert reveal(db.inputs["stringData"]) == {"VECTOR_DB_ACCESS_SECRET": "qdr-t0ken"}
    engine = ev.named("rag/rag", "kubernetes:kaito.sh/v1beta1:RAGEngine")
    assert engine.inputs["spec"]["inferenceService"]["accessSecret"] == "rag-llm-access"
    assert engine.inputs["spec"]["storage"]["vectorDB"]["accessSecret"] == "rag-vector-db-access"
    assert {llm.urn, db.urn} <= set(engine.dependencies)  # the pod reads them (secretKeyRef)
    assert isinstance(ev.named("rag/ready", READY).inputs["kubeconfig"], Secret)
    plain = repr([{k: v for k, v in r.inputs.items()} for r in ev.resources])
    assert "t0ken" not in plain
    assert "kind: Config" not in plain


def test_a_guardrails_policy_goes_into_a_configmap_made_before_the_ragengine():
    policy = {"blockMessage": "withheld", "rules": [{"name": "keys", "type": "regex", "action": "redact"}]}
    ev = run(
        lambda: RagEngine(
            "rag",
            RagEngineArgs(
                kaito_version="0.12.0",
                inference_service=InferenceServiceArgs(url=LLM, context_window_size=4096),
                guardrails=GuardrailsArgs(policy=policy),
                wait_for_ready=False,
            ),
            opts=on_cluster(),
        )
    )
    cm = ev.named("rag/rag-guardrails-policy", "kubernetes:core/v1:ConfigMap")
    assert list(cm.inputs["data"]) == ["guardrails.yaml"]  # the key KAITO's webhook and engine read
    engine = ev.named("rag/rag", "kubernetes:kaito.sh/v1beta1:RAGEngine")
    assert engine.inputs["spec"]["guardrails"] == {"enabled": True, "configMapRef": {"name": "rag-guardrails-policy"}}
    assert cm.urn in engine.dependencies  # the webhook looks for it at admission


def test_the_default_guardrails_policy_is_the_charts():
    engine = engine_of(
        run(
            lambda: RagEngine(
                "rag",
                minimal(
                    "0.12.0",
                    inference_service=InferenceServiceArgs(url=LLM, context_window_size=4096),
                    guardrails=GuardrailsArgs(),
                ),
                opts=on_cluster(),
            )
        ),
        "0.12.0",
    )
    assert engine["spec"]["guardrails"] == {"enabled": True}  # KAITO copies ragengine-guardrails-policy-template


def test_a_rag_engine_with_no_credentials_is_refused_unless_it_does_not_wait():
    monitor = RecordingMonitor(ProgramMocks())
    with pytest.raises(InvalidArgsError) as err:
        run(lambda: RagEngine("rag", RagEngineArgs(kaito_version="0.12.0"), opts=on_cluster()), monitor=monitor)
    assert "args.kubeconfig: the readiness wait reads the cluster and has no credentials" in str(err.value)
    assert [r.type for r in monitor.registrations] == ["pulumi:providers:kubernetes"]  # only the plain provider
    ev = run(lambda: RagEngine("rag", minimal("0.12.0"), opts=on_cluster()))
    assert ev.of_type(READY) == []
    outputs = ev.component_outputs[ev.named("rag", "kaito-aks:index:RagEngine").urn]
    assert outputs["endpoint"] == "http://rag.default.svc.cluster.local"
    assert outputs.get("chatEndpoint") is None  # retrieve-only


# ---------------------------------------------------------------- KAITO's ragengine webhook, and what it mishandles

# (KAITO version, args over `minimal`, what is said) for each rule, with its source line.
WARNED = "warning: "  # a case KAITO admits and that has no effect or only may be a mistake: said, not refused
REFUSED: list[tuple[str, dict[str, Any], str]] = [
    # 0.8.1 ragengine_validation.go L57-60: "InferenceService must be specified", then a nil dereference
    ("0.8.1", {"inference_service": None}, "args.inference_service: required on KAITO 0.8.1"),
    # 0.8.1 L71: validateRAGCreate on a nil compute crashes the webhook
    ("0.8.1", {"compute": None}, "args.compute: required on KAITO 0.8.1: its webhook reads spec.compute"),
    ("0.8.0", {"compute": None}, "args.compute: required on KAITO 0.8.0"),
    # 0.8.1 L65-70, 0.12.0 L73-78
    ("0.12.0", {"embedding": EmbeddingArgs()}, 'args.embedding: give local or remote (KAITO: "Either remote'),
    (
        "0.12.0",
        {
            "embedding": EmbeddingArgs(
                local=LocalEmbeddingArgs(model_id="BAAI/bge-small-en-v1.5"),
                remote=RemoteEmbeddingArgs(url="https://api.openai.com/v1/embeddings"),
            )
        },
        "args.embedding: give local or remote, not both",
    ),
    # 0.12.0 L202-208 (0.8.1 L107-113, result dropped)
    (
        "0.12.0",
        {"embedding": EmbeddingArgs(local=LocalEmbeddingArgs())},
        "args.embedding.local: give model_id or image",
    ),
    (
        "0.8.1",
        {"embedding": EmbeddingArgs(local=LocalEmbeddingArgs(model_id="m/x", image="r.io/a/b:1"))},
        WARNED + "args.embedding.local: give model_id or image, not both (KAITO 0.8.1's webhook drops this check",
    ),
    # 0.12.0 L209-213: "Invalid image format, require full input image URL"
    (
        "0.12.0",
        {"embedding": EmbeddingArgs(local=LocalEmbeddingArgs(image="bge:latest"))},
        "args.embedding.local.image: 'bge:latest' is not a full image reference with a tag",
    ),
    (
        "0.12.0",
        {"embedding": EmbeddingArgs(local=LocalEmbeddingArgs(image="myacr.azurecr.io/bge"))},
        "args.embedding.local.image: 'myacr.azurecr.io/bge' is not a full image reference with a tag",
    ),
    # 0.12.0 L214-219, pkg/utils/common.go ExtractAndValidateRepoName
    (
        "0.12.0",
        {"embedding": EmbeddingArgs(local=LocalEmbeddingArgs(image="myacr.azurecr.io/BGE:1"))},
        "args.embedding.local.image: repository name 'BGE' must be lowercase",
    ),
    # 0.12.0 L224-230 (0.8.1 L129-135, dropped)
    (
        "0.12.0",
        {"embedding": EmbeddingArgs(remote=RemoteEmbeddingArgs(url="api.openai.com/v1/embeddings"))},
        "args.embedding.remote.url: 'api.openai.com/v1/embeddings' is not a URL KAITO accepts (\"URL input error\": "
        "invalid URI for request)",
    ),
    # 0.8.1 L137-141, 0.12.0 L232-239
    (
        "0.12.0",
        {"inference_service": InferenceServiceArgs(url="phi.default.svc/v1/chat/completions", context_window_size=1)},
        "args.inference_service.url: 'phi.default.svc/v1/chat/completions' is not a URL KAITO accepts",
    ),
    # 0.8.1 L143-145, 0.12.0 L241-243: "ContextWindowSize must be a positive integer"
    (
        "0.8.1",
        {"inference_service": InferenceServiceArgs(url=LLM, context_window_size=0)},
        "args.inference_service.context_window_size: must be at least 1, not 0 (KAITO's webhook: ContextWindowSize "
        "must be a positive integer)",
    ),
    # what the engine then mishandles: inference.py chat_completions_passthrough "/chat/completions" check
    (
        "0.12.0",
        {
            "inference_service": InferenceServiceArgs(
                url="http://phi.default.svc.cluster.local/v1/completions", context_window_size=4096
            )
        },
        WARNED + "args.inference_service.url: 'http://phi.default.svc.cluster.local/v1/completions' is no chat "
        "completions URL",
    ),
    (
        "0.12.0",
        {"inference_service": InferenceServiceArgs(url="/v1/chat/completions", context_window_size=4096)},
        "args.inference_service.url: KAITO admits this, but the engine POSTs its requests to '/v1/chat/completions', "
        "which is no http(s) URL with a host: give one, e.g. a KaitoModel's endpoint (to deploy it anyway: "
        "bypass_checks: [url-scheme])",
    ),
    # 0.8.1 L82-97: a size outside the table, N/D prefix case-sensitive
    (
        "0.8.1",
        {"compute": RagComputeArgs(instance_type="standard_nc24ads_a100_v4", label_selector=ON_A10.label_selector)},
        "args.compute.instance_type: KAITO 0.8.1's webhook refuses 'standard_nc24ads_a100_v4' (\"Unsupported instance "
        "type\"): give a GPU size of KAITO's table; did you mean Standard_NC24ads_A100_v4?",
    ),
    # 0.8.1 ragengine_controller.go L392: GetGPUConfigBySKU fails the reconcile ("Unsupported SKU")
    (
        "0.8.1",
        {"compute": RagComputeArgs(instance_type="Standard_D8s_v5", label_selector=ON_A10.label_selector)},
        "args.compute.instance_type: KAITO admits this (0.8.1's webhook takes 'Standard_D8s_v5'), but its RAGEngine "
        "controller fails on every size outside KAITO's GPU table",
    ),
    # 0.12.0 L177-192, case-insensitive prefixes; an empty instance type fails too
    (
        "0.12.0",
        {"compute": RagComputeArgs(instance_type="Standard_E8s_v5", label_selector=ON_A10.label_selector)},
        "args.compute.instance_type: KAITO 0.12.0's webhook refuses 'Standard_E8s_v5' (\"Unsupported instance type\"): "
        "give a GPU size of KAITO's table or an Azure N- or D-series size",
    ),
    (
        "0.12.0",
        {"compute": RagComputeArgs(instance_type="", label_selector=ON_A10.label_selector)},
        "args.compute.instance_type: KAITO 0.12.0's webhook refuses ''",
    ),
    # 0.12 no longer has the V100 sizes (CUDA compute capability below 8.0)
    (
        "0.12.0",
        {"compute": RagComputeArgs(instance_type="Standard_NC6s_v3", label_selector=ON_A10.label_selector)},
        "",  # admitted: an N-series size (the engine then gets no GPU request)
    ),
    # 0.8.1 L99-102, 0.12.0 L194-197: metav1.LabelSelectorAsMap
    (
        "0.12.0",
        {
            "compute": RagComputeArgs(
                instance_type=A10,
                label_selector=LabelSelectorArgs(
                    match_labels={"apps": "rag"},
                    match_expressions=[
                        LabelSelectorRequirementArgs(key="zone", operator="In", values=["1", "2"]),
                        LabelSelectorRequirementArgs(key="spot", operator="DoesNotExist"),
                    ],
                ),
            )
        },
        'args.compute.label_selector.match_expressions[0]: KAITO\'s webhook refuses it (operator "In" without a '
        "single value",
    ),
    # placement is by matchLabels only (0.8.1 manifests.go L33-40; 0.12.0 L41-66)
    (
        "0.12.0",
        {"compute": RagComputeArgs(instance_type=A10, label_selector=LabelSelectorArgs())},
        WARNED + "args.compute.label_selector: has no match_labels",
    ),
    # 0.12.0 api/v1beta1/labels.go SanitizedMatchLabels drops KAITO's own labels without a word
    (
        "0.12.0",
        {
            "compute": RagComputeArgs(
                instance_type=A10, label_selector=LabelSelectorArgs(match_labels={"kaito.sh/workspace": "phi"})
            )
        },
        WARNED + 'args.compute.label_selector.match_labels."kaito.sh/workspace": KAITO 0.12.0 reserves this label',
    ),
    (
        "0.8.1",
        {"storage": StorageArgs(vector_db=VectorDbArgs(url="http://q:6333"))},
        "args.storage.vector_db: KAITO 0.8.1's RAGEngine has no external vector database (KAITO 0.10+); use KAITO "
        "0.11.0 or 0.12.0, or persistent_volume_claim",
    ),
    ("0.12.0", {"storage": StorageArgs()}, WARNED + "args.storage: has no effect without persistent_volume_claim"),
    (
        "0.12.0",
        {"storage": StorageArgs(persistent_volume_claim="pvc", mount_path="data")},
        WARNED + "args.storage.mount_path: 'data' is not an absolute path",
    ),
    (
        "0.12.0",
        {"storage": StorageArgs(vector_db=VectorDbArgs(url="qdrant:6333"))},
        WARNED + "args.storage.vector_db.url: 'qdrant:6333': KAITO passes it to the engine unchecked",
    ),
    (
        "0.8.1",
        {"guardrails": GuardrailsArgs()},
        "args.guardrails: KAITO 0.8.1's RAGEngine has no guardrails (KAITO 0.11+); use KAITO 0.11.0 or 0.12.0",
    ),
    (
        "0.12.0",
        {"guardrails": GuardrailsArgs()},
        WARNED + "args.guardrails: guard chat completions, which a retrieve-only",
    ),
    (
        "0.12.0",
        {
            "inference_service": InferenceServiceArgs(
                url=LLM, context_window_size=1, access_secret="s", access_token="t"
            )
        },
        "args.inference_service: give access_secret or access_token, not both",
    ),
    # KAITO 0.11.0 (7545aa214f72) admits and denies as 0.12.0: api/v1beta1/ragengine_validation.go
    # is the same file at both tags. L80-82: compute checked only when given (kaito#1936), L65-67:
    # no LLM needed, so an engine with neither is admitted (retrieve-only, on CPU)
    ("0.11.0", {}, ""),
    # L84-89: the embedding checks 0.8 drops are enforced, and said without the 0.8 caveat
    (
        "0.11.0",
        {"embedding": EmbeddingArgs(local=LocalEmbeddingArgs(model_id="m/x", image="r.io/a/b:1"))},
        "args.embedding.local: give model_id or image, not both\n",
    ),
    # L186-191: EqualFold lookup in the 0.11 table, case-insensitive N/D prefixes (pkg/sku
    # cloud_sku_handler.go L84, L95-97); the controller skips the GPU of a size outside the table
    # (ragengine_controller.go L408-414) instead of failing as 0.8's does
    (
        "0.11.0",
        {"compute": RagComputeArgs(instance_type="standard_nc24ads_a100_v4", label_selector=ON_A10.label_selector)},
        "",
    ),
    (
        "0.11.0",
        {"compute": RagComputeArgs(instance_type="standard_d8s_v5", label_selector=ON_A10.label_selector)},
        "",
    ),
    (
        "0.11.0",
        {"compute": RagComputeArgs(instance_type="Standard_NC4as_T4_v3", label_selector=ON_A10.label_selector)},
        "",  # T4: in 0.11's table (pkg/sku/azure_sku_handler.go L20), dropped in 0.12
    ),
    (
        "0.11.0",
        {"compute": RagComputeArgs(instance_type="Standard_E8s_v5", label_selector=ON_A10.label_selector)},
        "args.compute.instance_type: KAITO 0.11.0's webhook refuses 'Standard_E8s_v5' (\"Unsupported instance type\"): "
        "give a GPU size of KAITO's table or an Azure N- or D-series size",
    ),
    # L194-197: metav1.LabelSelectorAsMap
    (
        "0.11.0",
        {
            "compute": RagComputeArgs(
                instance_type=A10,
                label_selector=LabelSelectorArgs(
                    match_labels={"apps": "rag"},
                    match_expressions=[LabelSelectorRequirementArgs(key="spot", operator="Exists")],
                ),
            )
        },
        'args.compute.label_selector.match_expressions[0]: KAITO\'s webhook refuses it (operator "Exists" cannot',
    ),
    # api/v1beta1/labels.go L157-169 (consts.go L195-198): SanitizedMatchLabels (L183-198) drops them
    (
        "0.11.0",
        {
            "compute": RagComputeArgs(
                instance_type=A10,
                label_selector=LabelSelectorArgs(match_labels={"karpenter.kaito.sh/workspace-name": "phi"}),
            )
        },
        WARNED + 'args.compute.label_selector.match_labels."karpenter.kaito.sh/workspace-name": KAITO 0.11.0 reserves '
        "this",
    ),
    # L232-243 on the LLM, L224-230 on a remote embedding: net/url's ParseRequestURI, a window > 0
    (
        "0.11.0",
        {"inference_service": InferenceServiceArgs(url="phi.default.svc/v1/chat/completions", context_window_size=1)},
        "args.inference_service.url: 'phi.default.svc/v1/chat/completions' is not a URL KAITO accepts",
    ),
    (
        "0.11.0",
        {"embedding": EmbeddingArgs(remote=RemoteEmbeddingArgs(url="api.openai.com/v1/embeddings"))},
        "args.embedding.remote.url: 'api.openai.com/v1/embeddings' is not a URL KAITO accepts",
    ),
    # the 0.11 CRD has spec.storage.vectorDB and spec.guardrails (both checked by `everything`)
    (
        "0.11.0",
        {"guardrails": GuardrailsArgs()},
        WARNED + "args.guardrails: guard chat completions, which a retrieve-only",
    ),
    ("0.12.0", {"name": "1rag"}, "args.name: '1rag' is not a DNS-1035 label"),
    (
        "0.12.0",
        {"namespace": "kaito-ragengine"},
        WARNED + "args.namespace: kaito-ragengine belongs to the cluster or an operator",
    ),
    (
        "0.9.4",
        {},
        "args.kaito_version: KAITO 0.9.4 is not supported; use one of: 0.6.0 (the AKS add-on's), 0.8.0, 0.8.1, "
        "0.11.0, 0.12.0",  # the models' words: a stack says it once
    ),
    ("0.6.0", {}, "args.kaito_version: KAITO 0.6.0 has no RAGEngine operator this library installs"),
]


@pytest.mark.parametrize(("version", "change", "said"), REFUSED)
def test_what_kaito_would_deny_or_mishandle_is_refused_before_anything_registers(
    version: str, change: dict[str, Any], said: str, caplog: pytest.LogCaptureFixture
):
    args = minimal(version, **change) if version in VERSIONS else RagEngineArgs(kaito_version=version)
    if said.startswith(WARNED):  # admitted, and said
        assert run(lambda: RagEngine("rag", args, opts=on_cluster())).of_type(f"kubernetes:{API[version]}:RAGEngine")
        assert said.removeprefix(WARNED) in caplog.text
        return
    if not said:
        assert run(lambda: RagEngine("rag", args, opts=on_cluster())).of_type(f"kubernetes:{API[version]}:RAGEngine")
        return
    message = refused(lambda: RagEngine("rag", args))
    assert said in message, message


def test_every_problem_is_named_at_once_and_a_mapping_of_args_is_checked_the_same_way():
    message = refused(
        lambda: RagEngine(
            "rag",
            {  # type: ignore[arg-type]
                "kaito_version": "0.8.1",
                "inferenceService": {"url": LLM},
                "load_balancer": "yes",
                "wait_for_ready": False,
            },
        )
    )
    assert "args.inferenceService: unknown key; did you mean inference_service?" in message
    assert "args.load_balancer: must be true, false or a map of its settings" in message


def test_a_bad_llm_url_known_only_at_deploy_time_fails_the_ragengine_with_the_same_words(
    caplog: pytest.LogCaptureFixture,
):
    def program(given: str = "phi.default.svc.cluster.local/v1/chat/completions") -> None:
        url = pulumi.Output.from_input(given)
        RagEngine(
            "rag",
            RagEngineArgs(
                kaito_version="0.12.0",
                inference_service=InferenceServiceArgs(url=url, context_window_size=4096),
                wait_for_ready=False,
            ),
            opts=on_cluster(),
        )

    with pytest.raises(Exception, match=r"args\.inference_service\.url: .* is not a URL KAITO accepts"):
        run(program)
    # a URL KAITO admits that may be a mistake is said the same way, and deployed
    run(lambda: program("http://phi.default.svc.cluster.local/v1/completions"))
    assert "args.inference_service.url: 'http://phi.default.svc.cluster.local/v1/completions' is no chat" in caplog.text


def test_a_tuning_jobs_endpoint_is_no_llm():
    """KaitoModel.endpoint is None for a tuning job; the type lets `url=model.endpoint` check."""

    def program() -> None:
        endpoint: pulumi.Output[str | None] = pulumi.Output.from_input(None)
        RagEngine(
            "rag",
            RagEngineArgs(
                kaito_version="0.12.0",
                inference_service=InferenceServiceArgs(url=endpoint, context_window_size=4096),
                wait_for_ready=False,
            ),
            opts=on_cluster(),
        )

    with pytest.raises(Exception, match=r"args\.inference_service\.url: is None: a tuning job serves nothing"):
        run(program)


REMOTE = EmbeddingArgs(remote=RemoteEmbeddingArgs(url="https://api.openai.com/v1/embeddings"))
ON_D4 = RagComputeArgs(instance_type="Standard_D4s_v5", label_selector=LabelSelectorArgs(match_labels={"a": "b"}))
ON_A100X2 = RagComputeArgs(
    instance_type="Standard_NC48ads_A100_v4", label_selector=LabelSelectorArgs(match_labels={"a": "b"})
)


@pytest.mark.parametrize(
    ("version", "kw", "gpus"),
    [
        # v0.8.1 preset_rag.go L159-177: every GPU of the instance type with a local embedding
        ("0.8.1", {}, 1),
        ("0.8.1", {"compute": ON_A100X2}, 2),
        ("0.8.1", {"embedding": REMOTE}, 0),
        # v0.11.0/v0.12.0 L223-250: only with compute of a size of the GPU table
        ("0.11.0", {"compute": ON_A10}, 1),
        ("0.12.0", {"compute": ON_A100X2}, 2),
        ("0.12.0", {"compute": RagComputeArgs(instance_type=A10.lower(), label_selector=ON_A10.label_selector)}, 1),
        ("0.12.0", {"compute": ON_D4}, 0),
        ("0.12.0", {}, 0),
        ("0.12.0", {"compute": ON_A10, "embedding": REMOTE}, 0),
    ],
)
def test_an_engine_takes_every_gpu_of_its_instance_type_where_kaito_requests_them(
    version: str, kw: dict[str, Any], gpus: int
):
    from kaito_aks.rag.rules import gpu_request

    assert gpu_request(minimal(version, **kw)) == gpus
