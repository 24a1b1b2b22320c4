"""The stack file's `gateway`, `autoscaling` and `metrics`, and each workspace's part in them: API
keys only as secrets, what a release cannot route or scale refused with the reason, the defaults
the stack decides, and what the program registers and exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.cli import main
from stacks.errors import StackConfigError
from stacks.evaluate import ProgramMocks, RecordingMonitor, Secret, evaluate, reveal
from stacks.load import parse_stack_file
from stacks.stackfile import read_stack_file
from tests.conftest import BYO_CLUSTER, config

KEY = "e2e-stack-key-0123456789abcdef0123456789"
PHI = {"name": "phi", "namespace": "llm", "model": "phi-4-mini-instruct"}
CODER = {"name": "coder", "namespace": "llm", "model": "qwen2.5-coder-7b-instruct"}
CPU = {"name": "tiny", "compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
KAITO = {"version": "0.12.0"}
AKS = {"aks": {"resourceGroup": "rg", "name": "serve", "location": "eastus2"}}
POOL = [{"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "autoscale": {"min": 2, "max": 6}}]


def served(workspaces: list[dict[str, Any]], gateway: dict[str, Any] | None = None, **keys: Any):
    """A stack with a gateway whose API keys Pulumi hands the program decrypted (a secret key)."""
    cfg = config(workspaces, kaito=keys.pop("kaito", KAITO), **keys)
    gateway = {"apiKeys": {"ci": KEY}} if gateway is None else gateway
    return evaluate(cfg, secrets={"kaito-aks:gateway": json.dumps(gateway)})


def refused(workspaces: list[dict[str, Any]], gateway: dict[str, Any] | None = None, **keys: Any) -> list[str]:
    monitor = RecordingMonitor(ProgramMocks())
    cfg = config(workspaces, kaito=keys.pop("kaito", KAITO), **keys)
    secrets = {"kaito-aks:gateway": json.dumps(gateway)} if gateway is not None else {}
    with pytest.raises(StackConfigError) as err:
        evaluate(cfg, secrets=secrets, monitor=monitor)
    assert monitor.registrations == [], "resources were registered before the config error"
    return err.value.lines


# ---------------------------------------------------------------- API keys: secrets end to end


def test_an_api_key_in_plain_text_is_refused_under_pulumi_up_and_in_the_stack_file(tmp_path: Path, capsys):
    plain = {**config([PHI], kaito=KAITO), "kaito-aks:gateway": {"apiKeys": {"ci": KEY}}}
    with pytest.raises(StackConfigError) as err:
        evaluate(plain)
    (line,) = err.value.lines
    assert line.startswith("gateway.apiKeys.ci: must be a secret: run `pulumi config set --path --secret 'kaito-aks:")
    assert KEY not in line
    text = "config:\n  kaito-aks:cluster: {kubeconfig: {context: c}}\n  kaito-aks:kaito: {version: 0.12.0}\n"
    text += "  kaito-aks:workspaces: [{name: phi, model: phi-4-mini-instruct}]\n"
    (tmp_path / "Pulumi.plain.yaml").write_text(text + f"  kaito-aks:gateway: {{apiKeys: {{ci: {KEY}}}}}\n")
    assert main(["validate", "plain", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "Pulumi.plain.yaml:5: gateway.apiKeys.ci: must be a secret" in out.out + out.err
    assert KEY not in out.out + out.err


def test_a_key_set_with_path_and_secret_validates_and_renders_redacted(tmp_path: Path, capsys):
    text = "config:\n  kaito-aks:cluster: {kubeconfig: {context: c}}\n  kaito-aks:kaito: {version: 0.12.0}\n"
    text += "  kaito-aks:workspaces: [{name: phi, model: phi-4-mini-instruct}]\n"
    text += "  kaito-aks:gateway:\n    apiKeys:\n      ci:\n        secure: v1:abc:def\n"
    (tmp_path / "Pulumi.ok.yaml").write_text(text)
    cfg = parse_stack_file(read_stack_file("ok", tmp_path))
    assert cfg.gateway is not None
    assert cfg.gateway.api_keys == {"ci": "[secret]"}  # known to the engine alone
    assert main(["render", "ok", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    secret = yaml.safe_load((tmp_path / "out/ok/kubernetes/kaito-gateway/Secret-kaito-gateway-key-ci.yaml").read_text())
    assert secret["stringData"] == {"api_key": "[secret]"}


def test_under_pulumi_up_each_key_becomes_a_secret_kubernetes_secret_and_never_an_output():
    ev = served([PHI])
    (key,) = [r for r in ev.of_type("kubernetes:core/v1:Secret") if r.name == "gateway/key-ci"]
    assert isinstance(key.inputs["stringData"], Secret)
    assert reveal(key.inputs["stringData"]) == {"api_key": KEY}
    assert KEY not in json.dumps(reveal(ev.outputs))
    assert ev.outputs["gateway"]["authentication"]["apiKeys"] == ["ci"]


# ---------------------------------------------------------------- what a release cannot do


@pytest.mark.parametrize("version", ["0.8.1", "0.11.0"])
def test_a_gateway_and_autoscaling_on_a_release_without_inferencesets_here_are_refused_with_the_reason(version):
    lines = refused(
        [{**PHI, "autoscale": {"maxReplicas": 3}}],
        gateway={"apiKeys": {"ci": KEY}},
        kaito={"version": version},
    )
    (gateway,) = [line for line in lines if line.startswith("gateway:")]
    assert "Stricter than KAITO" in gateway
    assert gateway.endswith("use KAITO 0.12.0")
    assert any(line.startswith("workspaces[0].autoscale:") and "use KAITO 0.12.0" in line for line in lines), lines


def test_a_gateway_on_the_aks_add_ons_kaito_is_refused_with_the_reason():
    lines = refused(
        [{**PHI, "instanceType": "Standard_NC24ads_A100_v4"}],
        gateway={"apiKeys": {"ci": KEY}},
        cluster={"aks": {**AKS["aks"], "aiToolchainOperator": True}},
        kaito={},
    )
    assert any(line.startswith("gateway: KAITO 0.6.0 is what the AKS add-on runs") for line in lines), lines


def test_a_gateway_without_authentication_is_refused_unless_asked_for_and_then_warned():
    lines = refused([PHI], gateway={})
    assert lines == [
        "gateway.apiKeys: a gateway without authentication serves every model to anyone who reaches it: give apiKeys "
        "or entra (or allowUnauthenticated, which is warned)"
    ]
    ev = evaluate({**config([PHI], kaito=KAITO), "kaito-aks:gateway": {"allowUnauthenticated": True}})
    assert ev.of_type("kubernetes:authorino.kuadrant.io/v1beta3:AuthConfig") == []


def test_public_needs_source_ranges_and_tls_and_an_internal_gateway_is_the_default_on_aks():
    lines = refused([PHI], gateway={"apiKeys": {"ci": KEY}, "exposure": "public"})
    assert [line.split(":")[0] for line in lines] == ["gateway.sourceRanges", "gateway.tls"]
    ev = served([PHI], cluster=AKS, gpuNodePools=POOL)
    (gw,) = ev.of_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")
    assert (
        gw.inputs["spec"]["infrastructure"]["annotations"]["service.beta.kubernetes.io/azure-load-balancer-internal"]
        == "true"
    )
    ev = served([PHI])  # a kubeconfig cluster: a ClusterIP Service
    (gw,) = ev.of_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")
    assert "annotations" not in gw.inputs["spec"]["infrastructure"]


# ---------------------------------------------------------------- which workspaces are routed, scaled, scraped


def test_vllm_presets_are_routed_and_a_custom_image_is_not_and_said_so():
    ev = served([PHI, CODER, CPU])
    routes = {r.inputs["metadata"]["name"] for r in ev.of_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")}
    assert routes == {"phi", "coder"}
    (gw,) = ev.of_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")
    allowed = gw.inputs["spec"]["listeners"][0]["allowedRoutes"]["namespaces"]["selector"]["matchExpressions"][0]
    assert allowed["values"] == ["llm"]
    assert ev.outputs["gateway"]["models"]["llm/phi"]["models"] == ["phi"]
    release = next(r for r in ev.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "workspace")
    assert release.inputs["values"]["featureGates"]["gatewayAPIInferenceExtension"] is True
    assert release.inputs["values"]["flux2"] == {"policies": {"create": False}}
    lines = refused([{**CPU, "gateway": True}], gateway={"apiKeys": {"ci": KEY}})
    assert any(
        line.startswith("workspaces[0].gateway: KAITO makes an InferencePool only for a preset") for line in lines
    )


def test_a_gateway_false_workspace_stays_off_it_and_gateway_true_needs_a_gateway():
    ev = served([PHI, {**CODER, "gateway": False}])
    assert {r.inputs["metadata"]["name"] for r in ev.of_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")} == {
        "phi"
    }
    lines = refused([{**PHI, "gateway": True}])
    assert lines == ["workspaces[0].gateway: the stack has no gateway: add one (kaito-aks:gateway)"]


def test_the_gateway_gate_turned_off_by_hand_is_refused():
    lines = refused(
        [PHI],
        gateway={"apiKeys": {"ci": KEY}},
        kaito={**KAITO, "featureGates": {"gatewayAPIInferenceExtension": False}},
    )
    assert lines[0].startswith("kaito.featureGates.gatewayAPIInferenceExtension: KAITO makes the InferencePools")


def test_two_models_of_one_id_in_two_namespaces_cannot_share_the_gateway():
    lines = refused([PHI, {**PHI, "namespace": "other"}], gateway={"apiKeys": {"ci": KEY}})
    assert any("model id 'phi' is routed for workspaces[0] already" in line for line in lines), lines


def test_an_autoscaled_model_installs_keda_and_its_scaler_and_starts_at_its_minimum():
    ev = served([{**PHI, "autoscale": {"minReplicas": 2, "maxReplicas": 4}}], cluster=AKS, gpuNodePools=POOL)
    charts = {r.inputs["chart"]: r.inputs["version"] for r in ev.of_type("kubernetes:helm.sh/v3:Release")}
    assert (charts["keda"], charts["keda-kaito-scaler"]) == ("2.20.2", "0.6.2")
    (iset,) = ev.of_type("kubernetes:kaito.sh/v1beta1:InferenceSet")
    assert iset.inputs["spec"]["replicas"] == 2
    assert iset.options["ignoreChanges"] == ["spec.replicas"]
    assert ev.outputs["workspaces"]["llm/phi"]["autoscaling"]["maxReplicas"] == 4
    assert ev.outputs["autoscaling"] == {"namespace": "keda", "keda": "2.20.2", "kedaKaitoScaler": "0.6.2"}


def test_autoscaling_alone_and_the_keda_add_on_of_a_cluster_not_created_here_are_refused():
    lines = refused([PHI], autoscaling={})
    assert lines == [
        "autoscaling: configures KEDA for autoscaled workspaces, and no workspace has autoscale: remove it, or give one "
        "autoscale"
    ]
    lines = refused([{**PHI, "autoscale": {"maxReplicas": 2}}], autoscaling={"keda": "addon"})
    assert lines[0].startswith("autoscaling.keda: addon turns on the AKS KEDA add-on of a cluster this stack creates")


def test_the_keda_add_on_is_turned_on_on_the_cluster_and_the_scaler_goes_beside_it():
    ev = evaluate(
        config(
            [{**PHI, "autoscale": {"maxReplicas": 2}}],
            kaito=KAITO,
            cluster=AKS,
            gpuNodePools=POOL,
            autoscaling={"keda": "addon"},
        )
    )
    (cluster,) = ev.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["workloadAutoScalerProfile"] == {"keda": {"enabled": True}}
    (scaler,) = [r for r in ev.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "keda-kaito-scaler"]
    assert (scaler.inputs["chart"], scaler.inputs["namespace"]) == ("keda-kaito-scaler", "kube-system")


def test_max_replicas_beyond_the_pools_is_refused_with_the_pools_budget():
    big = [{**PHI, "autoscale": {"maxReplicas": 4}}, {**CODER, "autoscale": {"maxReplicas": 3}}]
    lines = refused(big, cluster=AKS, gpuNodePools=POOL)
    prefix = "gpuNodePools[0]: KAITO admits each of these, but pool a100 has at most 6 nodes"
    assert any(line.startswith(prefix) and "or lower autoscale.maxReplicas" in line for line in lines), lines
    assert "workspaces[0] (phi) takes 4 (4 replica(s) (autoscale.maxReplicas) x 1 node" in " ".join(lines), lines


def test_auto_provisioned_models_must_fit_the_node_pools_aks_allows_together():
    auto = {"install": False, "nodeProvisioning": "auto", "version": "0.12.0"}
    models = [
        {**PHI, "instanceType": "Standard_NC24ads_A100_v4", "autoscale": {"maxReplicas": 60}},
        {**CODER, "instanceType": "Standard_NC24ads_A100_v4", "autoscale": {"maxReplicas": 60}},
    ]
    lines = refused(models, kaito=auto)
    assert any(line.startswith("workspaces: KAITO's auto-provisioned nodes at their most number 120") for line in lines)


def test_metrics_scrape_every_vllm_preset_in_the_clusters_flavour_with_the_release_label():
    ev = evaluate(config([PHI, CPU], kaito=KAITO, metrics={}))
    (monitor,) = ev.of_type("kubernetes:monitoring.coreos.com/v1:ServiceMonitor")
    assert monitor.inputs["metadata"]["labels"] == {"release": "kube-prometheus-stack"}
    services = {r.inputs["metadata"]["name"]: r for r in ev.of_type("kubernetes:core/v1:Service")}
    assert services["phi"].inputs["metadata"]["labels"] == {"kaito-aks.io/model": "phi"}
    assert "labels" not in services["tiny"].inputs["metadata"]
    (board,) = ev.of_type("kubernetes:core/v1:ConfigMap")
    assert board.inputs["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert board.inputs["metadata"]["namespace"] == "monitoring"
    managed = evaluate(
        config(
            [PHI],
            kaito=KAITO,
            metrics={},
            cluster={"aks": {**AKS["aks"], "managedPrometheus": True}},
            gpuNodePools=POOL,
        )
    )
    (monitor,) = managed.of_type("kubernetes:azmonitoring.coreos.com/v1:ServiceMonitor")
    assert "labels" not in monitor.inputs["metadata"]
    assert managed.of_type("kubernetes:core/v1:ConfigMap") == []  # (Azure Managed Grafana imports the JSON)
    assert managed.outputs["metrics"] == {"flavour": "azureManagedPrometheus", "dashboard": None}


def test_managed_prometheus_metrics_need_it_on_the_created_cluster():
    lines = refused([PHI], metrics={"flavour": "azureManagedPrometheus"}, cluster=AKS, gpuNodePools=POOL)
    assert lines == [
        "metrics.flavour: AKS's managed Prometheus reads azmonitoring.coreos.com ServiceMonitors only where it runs: "
        "set cluster.aks.managedPrometheus: true, or use prometheusOperator"
    ]


def test_stacks_without_a_gateway_autoscaling_or_metrics_register_nothing_of_them():
    ev = evaluate(config([PHI], kaito=KAITO, cluster=BYO_CLUSTER))
    kinds = {r.type for r in ev.resources}
    assert not {k for k in kinds if "gateway" in k or "istio" in k or "keda" in k or "monitoring" in k}
    assert set(ev.outputs) >= {"workspaces"}
    assert not {"gateway", "gatewayUrl", "autoscaling", "metrics"} & set(ev.outputs)
    assert "route" not in ev.outputs["workspaces"]["llm/phi"]


def test_the_repositorys_serving_stack_routes_two_models_autoscaled_and_scraped():
    from stacks.stackfile import ROOT

    cfg = parse_stack_file(read_stack_file("serving", ROOT))
    assert cfg.gateway is not None
    assert cfg.gateway.api_keys == {"ci": "[secret]"}
    assert [m.gateway is not None for m in cfg.models] == [True, True]
    assert [m.autoscale is not None for m in cfg.models] == [True, True]
    assert cfg.metrics is not None
    assert cfg.metrics.flavour == "azureManagedPrometheus"
    assert cfg.autoscaling is not None
    assert cfg.autoscaling.keda == "chart"


def test_the_gateways_pods_the_scaler_and_managed_prometheus_may_reach_a_served_model():
    """Each served model's NetworkPolicy admits the pieces of the service that call it: the
    gateway's pods (the model's own `gateway`), keda-kaito-scaler (autoscaled) and AKS's managed
    Prometheus collectors in kube-system (scraped); nothing else from other namespaces."""
    cluster = {"aks": {**AKS["aks"], "managedPrometheus": True}}
    routed = [{**PHI, "autoscale": {"maxReplicas": 2}}]
    ev = served(routed, cluster=cluster, gpuNodePools=POOL, metrics={}, autoscaling={"keda": "chart"})
    policies = ev.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
    assert policies
    for policy in policies:
        peers = policy.inputs["spec"]["ingress"][0]["from"]
        by_namespace = {p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]: p for p in peers[1:]}
        assert peers[0] == {"podSelector": {}}
        assert sorted(by_namespace) == ["kaito-gateway", "keda", "kube-system"]
        gateway_pods = {"gateway.networking.k8s.io/gateway-name": "kaito-gateway"}
        assert by_namespace["kaito-gateway"]["podSelector"] == {"matchLabels": gateway_pods}
        assert by_namespace["keda"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "keda-kaito-scaler"}}
        assert "podSelector" not in by_namespace["kube-system"]
