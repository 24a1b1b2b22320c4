"""The stack's three ways to GPU nodes: bring-your-own pools (elsewhere), KAITO's
auto-provisioning through gpu-provisioner, and the AKS add-on. What the program emits for
each, in order, and every setting that contradicts its mode refused with the fix."""

from __future__ import annotations

import pytest

from stacks.config import StackConfig
from stacks.evaluate import ProgramMocks, RecordingMonitor, Secret
from stacks.load import stack_config
from tests.conftest import config, errors_of, run, warnings_of
from tests.test_aks import AKS, aks

RELEASE = "kubernetes:helm.sh/v3:Release"
WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"
CLUSTER = "azure-native:containerservice:ManagedCluster"
A100 = "Standard_NC24ads_A100_v4"
PHI_AUTO = {"name": "phi", "model": "phi-4-mini-instruct", "instanceType": A100}
KAITO_READY = "pulumi-python:dynamic/kaito-aks:KaitoReady"


def auto(workspaces: list[dict] | None = None, **keys: object) -> dict[str, object]:
    keys.setdefault("kaito", {"version": "0.12.0", "nodeProvisioning": "auto"})
    return aks(pools=[], workspaces=[PHI_AUTO] if workspaces is None else workspaces, **keys)


def add_on(workspaces: list[dict] | None = None, kubernetes: str | None = "1.34", **keys: object) -> dict[str, object]:
    cluster = {"aks": {**AKS["aks"], "aiToolchainOperator": True, "kubernetesVersion": kubernetes}}
    if kubernetes is None:
        del cluster["aks"]["kubernetesVersion"]
    elif kubernetes.count(".") == 2:  # a patch pinned: the patch channel would move it on
        cluster["aks"]["upgrade"] = {"channel": "none"}
    return aks(pools=[], workspaces=[PHI_AUTO] if workspaces is None else workspaces, cluster=cluster, **keys)


# ---------------------------------------------------------------- auto with gpu-provisioner


def test_an_auto_stack_installs_gpu_provisioner_before_any_workspace():
    ev = run(auto())
    provisioner = ev.named("gpu-provisioner", RELEASE)
    assert provisioner.inputs["version"] == "0.4.3"  # what goes with KAITO 0.12
    env = {e["name"]: e["value"] for e in provisioner.inputs["values"]["controller"]["env"]}
    assert env["AZURE_CLUSTER_NAME"] == "kaito-test"
    assert env["ARM_RESOURCE_GROUP"] == "rg"
    assert env["LOCATION"] == "eastus2"
    kaito = ev.named("kaito", RELEASE)
    assert kaito.inputs["values"]["nodeProvisioner"] == "azure-gpu-provisioner"
    [inference_set] = ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert inference_set.inputs["spec"]["template"]["resource"] == {"instanceType": A100}
    assert provisioner.urn in inference_set.dependencies  # nothing asks for a node before something makes it
    assert kaito.urn in inference_set.dependencies
    assert ev.of_type("pulumi-python:dynamic/kaito-aks:GpuNodesReady") == []
    assert ev.of_type("azure-native:containerservice:AgentPool") == []
    assert "gpu-operator" not in {r.name for r in ev.of_type(RELEASE)}


def test_an_auto_stack_exports_the_identity_the_provisioner_and_each_models_instance_type():
    ev = run(auto())
    outputs = ev.outputs
    assert outputs["workspaces"]["default/phi"]["instanceType"] == A100
    assert outputs["gpuProvisioner"]["namespace"] == "gpu-provisioner"
    assert outputs["gpuProvisioner"]["identityName"] == "kaito-test-gpu-provisioner"  # one per cluster (review 2 P10)
    assert outputs["gpuProvisioner"]["clientId"]
    assert outputs["charts"]["gpuProvisioner"] == {"version": "0.4.3"}
    assert outputs["charts"]["kaito"]["nodeProvisioning"] == "auto"


@pytest.mark.parametrize(("kaito", "chart"), [("0.8.1", "0.3.8"), ("0.12.0", "0.4.3")])
def test_the_provisioner_follows_kaitos_own_pin_unless_set(kaito: str, chart: str):
    ev = run(auto(kaito={"version": kaito, "nodeProvisioning": "auto"}))
    assert ev.named("gpu-provisioner", RELEASE).inputs["version"] == chart
    ev = run(auto(kaito={"version": kaito, "nodeProvisioning": "auto"}, gpuProvisioner={"version": "0.4.2"}))
    assert ev.named("gpu-provisioner", RELEASE).inputs["version"] == "0.4.2"


def parsed(cfg: dict[str, object]) -> StackConfig:
    raw = {k.removeprefix("kaito-aks:"): v for k, v in cfg.items() if k.startswith("kaito-aks:")}
    return stack_config(raw, azure_location="eastus2")


def test_a_provisioner_other_than_kaitos_pin_is_said_not_refused():
    """Review 2 P5: KAITO's chart pins gpu-provisioner per minor; another release is the user's call."""
    cfg = parsed(auto(kaito={"version": "0.8.1", "nodeProvisioning": "auto"}, gpuProvisioner={"version": "0.4.3"}))
    assert [w.text("schema") for w in cfg.warnings if w.code != "pod-security-unlabelled"] == [
        "gpuProvisioner.version: KAITO 0.8.1 pins gpu-provisioner 0.3.8 (its chart's dependency); 0.4.3 is not "
        "tested with it: leave version out to use the pin"
    ]
    plain = parsed(auto(kaito={"version": "0.8.1", "nodeProvisioning": "auto"}))
    assert [w.code for w in plain.warnings] == ["pod-security-unlabelled"]  # (its models are in default)


def test_every_provisioner_problem_is_named_at_once():
    """Review 2 P6: an unknown version does not hide the values it manages."""
    errors = errors_of(auto(gpuProvisioner={"version": "9.9.9", "values": {"workloadIdentity": {"clientId": "x"}}}))
    assert sorted(e.split(":")[0] for e in errors) == [
        "gpuProvisioner.values.workloadIdentity",
        "gpuProvisioner.version",
    ], errors


def test_auto_on_an_existing_cluster_federates_with_its_issuer():
    ev = run(auto(cluster={"existing": {"resourceGroup": "rg", "name": "prod"}}))
    credential = ev.named(
        "gpu-provisioner-identity-federation", "azure-native:managedidentity:FederatedIdentityCredential"
    )
    assert credential.inputs["issuer"] == "https://oidc.example/prod/"


def test_auto_with_kaito_installed_elsewhere_creates_only_workspaces_on_any_cluster():
    ev = run(config([PHI_AUTO], kaito={"version": "0.12.0", "nodeProvisioning": "auto", "install": False}))
    assert ev.of_type(RELEASE) == []
    assert len(ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")) == 1


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (
            auto([{"name": "phi", "model": "phi-4-mini-instruct"}]),
            "workspaces[0].instanceType: required with node auto-provisioning",
        ),
        (
            config([PHI_AUTO], kaito={"nodeProvisioning": "auto"}),
            "kaito.nodeProvisioning: auto needs gpu-provisioner, which creates AKS node pools with an Azure identity",
        ),
        (
            auto(gpuProvisioner={"install": False}),
            "gpuProvisioner.install: KAITO admits the models, but with kaito.nodeProvisioning auto its NodeClaims stay "
            "Pending without gpu-provisioner",
        ),
        (
            auto(
                kaito={"version": "0.12.0", "nodeProvisioning": "auto", "nodeProvisioner": "karpenter"},
                gpuProvisioner={"install": True},
            ),
            "gpuProvisioner.install: KAITO in Karpenter mode (kaito.nodeProvisioner karpenter) asks gpu-provisioner "
            "for no node: remove it",
        ),
        (
            auto(gpuProvisioner={"values": {"workloadIdentity": {}}}),
            "gpuProvisioner.values.workloadIdentity: set from the component's workload identity; remove it",
        ),
        (
            auto([{**PHI_AUTO, "instanceType": "Standard_NC4as_T4_v3"}]),
            "workspaces[0].instanceType: KAITO admits this, but KAITO 0.12.0 no longer supports NVIDIA T4",
        ),
    ],
)
def test_what_contradicts_auto_mode_is_refused_with_the_fix(cfg: dict[str, object], expected: str):
    errors = errors_of(cfg)
    assert any(e.startswith(expected) for e in errors), errors


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (
            aks(pools=None, workspaces=[PHI_AUTO], kaito={"nodeProvisioning": "auto"}),
            "gpuNodePools: with kaito.nodeProvisioning auto KAITO creates a node of each workspace's instanceType and "
            "never uses these pools",
        ),
        (
            auto(gpuOperator={"enabled": True}),
            "gpuOperator.enabled: the nodes KAITO creates get AKS's GPU driver and KAITO's device plugin",
        ),
        (
            aks(gpuProvisioner={"install": True}),
            "gpuProvisioner.install: gpu-provisioner serves kaito.nodeProvisioning auto; with byo nothing asks it",
        ),
        (
            aks(gpuProvisioner={"version": "0.4.3"}),
            "gpuProvisioner: configures a gpu-provisioner this stack does not install",
        ),
    ],
)
def test_what_has_no_effect_in_auto_mode_is_warned_about(cfg: dict[str, object], expected: str):
    """Issue 28: settings that change nothing (pools KAITO never uses, a provisioner nothing asks)
    or only may be a mistake (a second driver installer) are said, not refused."""
    said = warnings_of(cfg)
    assert any(w.startswith(expected) for w in said), said


# ---------------------------------------------------------------- the AKS add-on


def test_the_add_on_stack_enables_the_profile_and_installs_no_kaito():
    ev = run(add_on())
    cluster = ev.named("cluster", CLUSTER)
    assert cluster.inputs["aiToolchainOperatorProfile"] == {"enabled": True}
    assert cluster.inputs["oidcIssuerProfile"] == {"enabled": True}
    assert ev.of_type(RELEASE) == []  # no KAITO, no gpu-provisioner: AKS runs both
    [ws] = ev.of_type(WORKSPACE)  # the add-on's KAITO (0.6) serves a replica per Workspace
    assert ws.inputs["resource"]["instanceType"] == A100
    assert ev.outputs["charts"]["kaito"] == {
        "version": "0.6.0",
        "installed": False,
        "byAksAddOn": True,
        "nodeProvisioning": "auto",
    }


def test_on_the_add_on_the_models_wait_until_aks_kaito_serves_its_crd_and_webhook():
    """Review 2, B8: AKS rolls KAITO out after the cluster exists; a Workspace created before its
    CRD and fail-closed webhook serve fails ("no matches for kind", "connection refused")."""
    ev = run(add_on())
    [wait] = ev.of_type(KAITO_READY)
    assert wait.inputs["kinds"] == [{"plural": "workspaces", "version": "v1beta1"}]  # what 0.6.0's Workspaces are
    assert wait.inputs["requireWebhook"] is True  # the add-on certainly runs one: none yet is not ready
    assert isinstance(wait.inputs["kubeconfig"], Secret)  # the cluster's own credentials, kept secret
    assert wait.inputs["timeoutSeconds"] == 900
    [ws] = ev.of_type(WORKSPACE)
    [service] = [r for r in ev.of_type("kubernetes:core/v1:Service") if r.name.endswith("phi")]
    assert wait.urn in ws.dependencies
    assert wait.urn in service.dependencies


def test_with_kaito_installed_elsewhere_the_models_wait_for_its_crds_and_any_webhook_it_runs():
    ev = run(config([PHI_AUTO], kaito={"version": "0.12.0", "nodeProvisioning": "auto", "install": False}))
    [wait] = ev.of_type(KAITO_READY)
    # the InferenceSet, and the Workspaces KAITO makes of it (its webhook admits those too)
    assert wait.inputs["kinds"] == [
        {"plural": "inferencesets", "version": "v1beta1"},
        {"plural": "workspaces", "version": "v1beta1"},
    ]
    assert wait.inputs["requireWebhook"] is False  # a KAITO run elsewhere may have none
    assert wait.inputs["context"] == "test"  # the kubeconfig cluster's own context
    [inference_set] = ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert wait.urn in inference_set.dependencies


def test_engines_whose_chart_the_stack_installs_wait_for_that_release_not_for_kaito_ready():
    """Review 3: the ragengine chart's release brings the CRD; kaito/ready raced it."""
    phi = {"name": "phi", "model": "phi-4-mini-instruct", "config": {"vllm": {"max-model-len": 4096}}}
    engines = [{"name": "docs", "workspace": "phi"}]
    kaito = {"version": "0.12.0", "install": False}
    ev = run(config([phi], kaito=kaito, ragEngines=engines, ragEngineOperator={"install": True}))
    [wait] = ev.of_type(KAITO_READY)
    assert {k["plural"] for k in wait.inputs["kinds"]} == {"workspaces", "inferencesets"}
    ev = run(config([phi], kaito=kaito, ragEngines=engines))
    [wait] = ev.of_type(KAITO_READY)
    assert "ragengines" in {k["plural"] for k in wait.inputs["kinds"]}


def test_a_stack_that_installs_kaito_has_no_such_wait():
    assert run(auto()).of_type(KAITO_READY) == []
    assert run(config([{"name": "phi", "model": "phi-4-mini-instruct"}])).of_type(KAITO_READY) == []


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({"kaito": {"install": True}}, "kaito.install: the AI toolchain operator add-on installs KAITO"),
        (
            {"kaito": {"nodeProvisioning": "byo"}},
            "kaito.nodeProvisioning: KAITO 0.6.0 (the AKS add-on) always creates the nodes",
        ),
        ({"gpuProvisioner": {"install": True}}, "gpuProvisioner.install: the add-on runs its node provisioner in AKS"),
    ],
)
def test_what_the_add_on_cannot_take_is_refused(keys: dict[str, object], expected: str):
    errors = errors_of(add_on(**keys))
    assert any(e.startswith(expected) for e in errors), errors


@pytest.mark.parametrize("keys", [{"featureGates": {"vLLM": False}}, {"values": {"logging": {"level": "debug"}}}])
def test_chart_settings_the_add_on_ignores_are_warned_about(keys: dict[str, object]):
    """The add-on's API is one switch: gates and chart values have no effect there (issue 28)."""
    said = warnings_of(add_on(kaito=keys))
    assert any("the AKS add-on offers no KAITO feature gates or chart values" in w for w in said), said


@pytest.mark.parametrize(
    ("kubernetes", "release"), [("1.34", "0.6.0"), ("1.34.2", "0.6.0"), ("1.35", "0.6.0"), (None, "0.6.0")]
)
def test_the_add_on_runs_the_kaito_of_the_clusters_kubernetes_minor(kubernetes: str | None, release: str):
    """Microsoft's component table: 1.34 runs 0.6.0; no minor, or a newer one: the newest statement."""
    ev = run(add_on(kubernetes=kubernetes))
    assert ev.outputs["charts"]["kaito"]["version"] == release


def test_an_add_on_release_this_program_does_not_know_is_refused_at_the_kubernetes_version():
    assert errors_of(add_on(kubernetes="1.33")) == [
        "cluster.aks.kubernetesVersion: with aiToolchainOperator AKS runs KAITO 0.4.5 on Kubernetes 1.33 (Microsoft's "
        "AKS component table), a release this program does not know the rules of; use 1.34 or newer, or set "
        "kaito.version to what AKS runs"
    ]
    assert errors_of(add_on(kubernetes="1.32.7")) == [
        "cluster.aks.kubernetesVersion: Microsoft's AKS component table names no AI toolchain operator release for "
        "Kubernetes 1.32 (1.33: 0.4.5, 1.34: 0.6.0); use 1.34 or newer, or set kaito.version to what AKS runs"
    ]
    # kaito.version stays the override: the user says what AKS runs
    ev = run(add_on(kubernetes="1.33", kaito={"version": "0.6.0"}))
    assert ev.outputs["charts"]["kaito"]["version"] == "0.6.0"


@pytest.mark.parametrize("version", ["v1.34", "1.x", "1.34.x"])
def test_a_version_that_is_none_gets_the_clusters_message_not_a_traceback(version: str):
    """Review 3: the add-on's release table read it before the version rule had."""
    errors = errors_of(add_on(kubernetes=version))
    assert [e.split(":")[0] for e in errors] == ["cluster.aks.kubernetesVersion"], errors
    assert "is not a Kubernetes version" in errors[0]


def test_an_adopted_add_on_cluster_is_taken_to_run_the_newest_statement_unless_told():
    """Its Kubernetes minor is not known at preview."""
    existing = {"existing": {"resourceGroup": "rg", "name": "theirs", "aiToolchainOperator": True}}
    ev = run(aks(pools=[], workspaces=[PHI_AUTO], cluster=existing))
    assert ev.outputs["charts"]["kaito"]["version"] == "0.6.0"
    phi = {**PHI_AUTO, "instanceType": "Standard_NV36ads_A10_v5"}
    ev = run(aks(pools=[], workspaces=[phi], cluster=existing, kaito={"version": "0.12.0"}))
    assert ev.outputs["charts"]["kaito"]["version"] == "0.12.0"


def test_at_deploy_time_an_add_on_cluster_is_held_to_the_release_its_minor_runs():
    """An adopted cluster's Kubernetes version (or AKS's default) is known once Azure answers:
    `kaito/ready`, which every KAITO object waits for, fails at once when that minor runs another
    release than the one the workspaces were checked by (review 3: not only a log line)."""
    existing = {"existing": {"resourceGroup": "rg", "name": "theirs", "aiToolchainOperator": True}}
    add_on = {"aiToolchainOperatorProfile": {"enabled": True}, "currentKubernetesVersion": "1.33.5"}
    ev = run(
        aks(pools=[], workspaces=[PHI_AUTO], cluster=existing),
        monitor=RecordingMonitor(ProgramMocks({"theirs": add_on})),
    )
    [wait] = ev.of_type(KAITO_READY)
    assert (wait.inputs["addOnRelease"], wait.inputs["kubernetesVersion"]) == ("0.6.0", "1.33.5")
    [ws] = ev.of_type(WORKSPACE)
    assert wait.urn in ws.dependencies
    phi = {**PHI_AUTO, "instanceType": "Standard_NC24ads_A100_v4"}
    told = run(aks(pools=[], workspaces=[phi], cluster=existing, kaito={"version": "0.12.0"}))
    [wait] = told.of_type(KAITO_READY)  # the user says what AKS runs: their word
    assert "addOnRelease" not in wait.inputs or wait.inputs["addOnRelease"] is None


def test_the_add_on_refuses_rag_engines_for_the_reason_that_holds():
    """Review 4: with kaito.version 0.12.0 the ragengine chart exists; the add-on has no operator."""
    phi = {**PHI_AUTO, "instanceType": "Standard_NC24ads_A100_v4", "config": {"vllm": {"max-model-len": 4096}}}
    engines = [{"name": "rag", "workspace": "phi"}]
    errors = errors_of(add_on(workspaces=[phi], kaito={"version": "0.12.0"}, ragEngines=engines))
    assert (
        "ragEngines: the AKS add-on runs no RAGEngine operator; remove ragEngines, or install KAITO with this stack "
        "instead of the add-on"
    ) in errors, errors


def test_the_add_on_refusals_are_not_repeated_by_the_rules_they_imply():
    """Review 2 P1: the add-on's release is no version to refuse again (the operator's, each RAG
    engine's), and a key the add-on refuses gets no second message."""
    errors = errors_of(
        add_on(
            kaito={"install": True, "featureGates": {"vLLM": False}},
            gpuProvisioner={"install": True},
            ragEngines=[{"name": "rag", "workspace": "phi"}],
        )
    )
    assert [e.split(": ")[0] for e in errors] == [
        "gpuProvisioner.install",
        "kaito.install",  # (kaito.featureGates: a warning, in the same run, issue 28)
        "ragEngines",
    ], errors
    errors = errors_of(add_on(kaito={"nodeProvisioning": "byo"}))
    assert [e for e in errors if e.startswith("kaito.nodeProvisioning")] == [
        "kaito.nodeProvisioning: KAITO 0.6.0 (the AKS add-on) always creates the nodes of its Workspaces; set it to "
        "auto, with instanceType; in this stack: remove kaito.nodeProvisioning (auto is the add-on's), or drop the "
        "cluster's aiToolchainOperator"
    ]


def test_in_auto_mode_a_rag_engine_follows_gpu_provisioner_whatever_its_llm():
    """Review 2 P9: KAITO makes the engine's node too, so on destroy the engine must go (and its
    NodeClaim with it) before gpu-provisioner, also when its LLM is no model of this stack."""
    engine = {
        "name": "docs",
        "inferenceService": {"url": "https://llm.example.com/v1/chat/completions", "contextWindowSize": 8000},
        "compute": {"instanceType": "Standard_NV36ads_A10_v5", "labelSelector": {"matchLabels": {"apps": "docs"}}},
    }
    ev = run(auto(kaito={"version": "0.12.0", "nodeProvisioning": "auto"}, ragEngines=[engine]))
    [rag] = ev.of_type("kubernetes:kaito.sh/v1beta1:RAGEngine")
    gone = ev.named("gpu-provisioner/nodeclaims-gone", "pulumi-python:dynamic/kaito-aks:NodeClaimsGone")
    assert {ev.named("gpu-provisioner", RELEASE).urn, gone.urn} <= set(rag.dependencies)
