"""The catalogs against KAITO's and the GPU Operator's own data at each supported release
(tests/upstream/, derived from the upstream files by scripts/upstream_data.py): drift fails."""

from __future__ import annotations

import pytest

import upstream_facts
from kaito_aks import catalog
from upstream_facts import kaito

KAITO_VERSIONS = list(catalog.kaito_charts())
GPU_OPERATOR_VERSIONS = list(catalog.gpu_operator_charts())
GPU_PROVISIONER_VERSIONS = list(catalog.gpu_provisioner_charts())


def test_every_supported_version_has_upstream_data():
    for version in KAITO_VERSIONS:
        provenance = upstream_facts.load("kaito", version, "provenance.yaml")
        assert provenance["tag"] == f"v{version}"
        assert len(provenance["commit"]) == 40
        assert provenance["sources"], version
    for version in GPU_OPERATOR_VERSIONS:
        assert upstream_facts.load("gpu-operator", version, "provenance.yaml")["tag"] == version


def test_upstream_folders_are_all_for_supported_versions():
    """A folder nobody checks against is stale data."""
    wanted = {f"kaito-{v}" for v in KAITO_VERSIONS} | {f"gpu-operator-{v}" for v in GPU_OPERATOR_VERSIONS}
    wanted |= {f"nvidia-device-plugin-v{_bundled_gfd(v)['version']}" for v in KAITO_VERSIONS}
    wanted |= {f"gpu-provisioner-v{v}" for v in GPU_PROVISIONER_VERSIONS}
    present = {p.name for p in upstream_facts.UPSTREAM.iterdir() if p.is_dir()}
    assert present == wanted


def _bundled_gfd(version: str) -> dict:
    """The gpu-feature-discovery chart KAITO bundles (NVIDIA publishes it from the
    nvidia-device-plugin chart source)."""
    deps = upstream_facts.chart("kaito", version)["dependencies"]
    return next(d for d in deps if d["name"] == "gpu-feature-discovery")


@pytest.mark.parametrize("version", KAITO_VERSIONS)
def test_preset_names_and_download_flags_match_supported_models(version):
    chart = catalog.kaito_charts()[version]
    real = kaito(version, "presets")["presets"]
    served = {n for n, m in real.items() if not m["deprecated"]}
    if "preset-definitions" not in {p.stem for p in upstream_facts.folder("kaito", version).iterdir()}:
        # 0.11+: a short preset name serves only through the model catalog (the falcon presets,
        # still listed in supported_models.yaml, have no entry there and are refused)
        served = {n for n in served if "catalog" in real[n]}
        assert set(catalog.removed_presets(chart.preset_catalog)) == {
            n for n, m in real.items() if not m["deprecated"] and "catalog" not in m
        }
    assert set(catalog.presets(chart.preset_catalog)) == served
    assert set(catalog.deprecated_presets()) == {n for n, m in real.items() if m["deprecated"]}
    for name, preset in catalog.presets(chart.preset_catalog).items():
        assert preset.gated == real[name]["downloadAuthRequired"], name
        assert preset.download_at_runtime == real[name]["downloadAtRuntime"], name


@pytest.mark.parametrize("version", [v for v in KAITO_VERSIONS if v.startswith("0.8")])
def test_preset_requirements_match_kaito_0_8_go_definitions(version):
    chart = catalog.kaito_charts()[version]
    real = kaito(version, "preset-definitions")["presets"]
    presets = catalog.presets(chart.preset_catalog)
    for name, p in presets.items():
        d = real[name]
        assert p.gpu_count == d["gpuCount"], name
        assert p.model_gib == pytest.approx(d["modelGiB"]), name
        assert p.distributed == d["distributed"], name
        assert p.bytes_per_token == d["bytesPerToken"], name
        assert p.disallow_lo_ra == d["disallowLoRA"], name
        assert p.disable_tensor_parallelism == d["disableTensorParallelism"], name
        assert p.token_limit == d["tokenLimit"], name
        assert p.supports_tuning == ("tuning" in d), name
        if p.supports_tuning:
            assert p.tuning_gib == pytest.approx(d["tuning"]["modelGiB"]), name
    assert set(presets) <= set(real)


def test_preset_sizes_on_0_12_match_the_model_catalog():
    real = kaito("0.12.0", "presets")["presets"]
    checked = 0
    for name, preset in catalog.presets("0.12").items():
        if "catalog" in real[name]:
            assert preset.model_gib == pytest.approx(real[name]["catalog"]["modelGiB"]), name
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("version", KAITO_VERSIONS)
def test_sku_table_matches_kaitos_azure_sku_handler(version):
    chart = catalog.kaito_charts()[version]
    real = kaito(version, "skus")["skus"]
    ours = catalog.gpu_skus(chart.sku_catalog)
    assert set(ours) == set(real)
    for name, sku in ours.items():
        r = real[name]
        assert (sku.gpu_count, sku.gpu_mem_gib, sku.gpu_model, sku.nvme) == (
            r["gpuCount"],
            r["gpuMemGiB"],
            r["gpuModel"],
            r["nvme"],
        ), name


@pytest.mark.parametrize("version", KAITO_VERSIONS)
def test_kaito_chart_table_matches_the_charts_values(version):
    chart = catalog.kaito_charts()[version]
    values = upstream_facts.chart_values("kaito", version)
    assert chart.feature_gates == values["featureGates"]
    assert chart.known_gates == kaito(version, "feature-gates")["featureGates"]  # what the controller parses
    assert chart.value_keys == list(values)
    assert (chart.node_provisioner is not None) == ("nodeProvisioner" in values)
    if chart.node_provisioner is not None:
        assert chart.node_provisioner.auto == values["nodeProvisioner"]
    if chart.spot_toleration:
        section, key = chart.spot_toleration.split(".")
        assert key in values[section]
    for toggle in chart.subchart_toggles:  # a value or a dependency condition of the bundled chart
        subchart, _, key = toggle.partition(".")
        assert subchart == "gpu-feature-discovery", toggle
        gfd = f"v{_bundled_gfd(version)['version']}"
        conditions = {
            c
            for d in upstream_facts.chart("nvidia-device-plugin", gfd)["dependencies"]
            for c in d["condition"].split(",")
        }
        node = upstream_facts.chart_values("nvidia-device-plugin", gfd)
        for part in key.split(".")[:-1]:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        assert key in conditions or key.split(".")[-1] in node, toggle
    facts = upstream_facts.chart("kaito", version)
    assert facts["version"] == version
    assert (
        _bundled_gfd(version)["condition"] == "featureGates.disableNodeAutoProvisioning"
    )  # why KAITO's GFD exists only in BYO


# ---------------------------------------------------------------- gpu-provisioner


@pytest.mark.parametrize("version", GPU_PROVISIONER_VERSIONS)
def test_gpu_provisioner_chart_facts_match_its_chart(version):
    chart = catalog.gpu_provisioner_charts()[version]
    assert upstream_facts.chart("gpu-provisioner", f"v{version}")["version"] == version
    values = upstream_facts.chart_values("gpu-provisioner", f"v{version}")
    assert chart.value_keys == list(values)
    # the release replaces the chart's env list: it must set every entry the chart lists
    assert chart.controller_env == [e["name"] for e in values["controller"]["env"]]
    account = upstream_facts.load("gpu-provisioner", f"v{version}", "service-account.yaml")
    assert catalog.gpu_provisioner_source().service_account == account["name"]
    assert account["annotationsFromValues"] == {
        "azure.workload.identity/client-id": "workloadIdentity.clientId",
        "azure.workload.identity/tenant-id": "workloadIdentity.tenantId",
    }


def test_gpu_provisioner_pairs_name_supported_releases():
    pairs = catalog.gpu_provisioner_source().for_kaito
    assert {v for v in pairs.values() if v is not None} <= set(GPU_PROVISIONER_VERSIONS)
    minors = {".".join(v.split(".")[:2]) for v in KAITO_VERSIONS}
    assert minors <= set(pairs), "every supported KAITO minor says which gpu-provisioner goes with it"


def test_role_names_are_azure_built_in_role_ids():
    roles = catalog.azure_roles()
    assert roles["Contributor"] == "b24988ac-6180-42a0-ab88-20f7382dd24c"
    assert catalog.gpu_provisioner_source().role in roles


RAGENGINE_VERSIONS = list(catalog.ragengine_charts())


def test_the_ragengine_operator_ships_with_every_supported_kaito_release():
    assert RAGENGINE_VERSIONS == KAITO_VERSIONS
    source = catalog.ragengine_chart_source()
    assert source.repository == catalog.kaito_chart_source().repository  # published side by side
    # both charts create ConfigMap kaito-logging-config: never the same namespace
    assert source.namespace != catalog.kaito_chart_source().namespace


@pytest.mark.parametrize("version", RAGENGINE_VERSIONS)
def test_ragengine_chart_table_matches_the_chart_and_the_crd(version):
    chart = catalog.ragengine_charts()[version]
    facts = upstream_facts.chart("kaito", version, "ragengine")
    assert (facts["name"], facts["version"]) == ("ragengine", version)
    assert chart.value_keys == list(upstream_facts.chart_values("kaito", version, "ragengine"))
    crd = upstream_facts.crd(version, "ragengines.kaito.sh")
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    emitted = versions[chart.api_version.split("/")[1]]
    assert emitted["storage"] is True  # the version KAITO keeps
    assert emitted["served"] is True
    spec = emitted["schema"]["openAPIV3Schema"]["properties"]["spec"]
    storage = spec["properties"]["storage"]["properties"]
    assert chart.inference_service_required == ("inferenceService" in spec["required"])
    assert chart.vector_db == ("vectorDB" in storage)
    assert chart.guardrails == ("guardrails" in spec["properties"])
    assert chart.storage == ("flat" if "persistentVolumeClaim" in storage else "persistentVolume")
    assert set(catalog.gpu_skus(chart.sku_catalog)) == set(kaito(version, "skus")["skus"])


def test_the_kubernetes_fields_kaito_decodes_strictly_are_complete():
    """catalog/kube_fields.yaml (scripts/kube_fields.py) defines every type its fields name."""
    from kaito_aks import kube_json

    scalars = {"string", "bool", "int32", "int64", "quantity", "intOrString", "time", "any"}
    for name, fields in kube_json.types().items():
        for field, kind in fields.items():
            base = kind.removeprefix("[]").removeprefix("map[string]").removeprefix("[]")
            assert base in scalars or base in kube_json.types(), (name, field, kind)
    assert len(kube_json.types()["VolumeSource"]) == 30
    assert set(kube_json.types()["ResourceRequirements"]) == {"limits", "requests", "claims"}
