"""The catalogs against the real KAITO data in ../shared/reference: drift fails loudly."""

from __future__ import annotations

import re

import pytest
import yaml

from stacks import catalog
from tests.conftest import reference


def supported_models(version: str) -> dict[str, dict]:
    data = yaml.safe_load(reference(f"kaito/v{version}/presets/workspace/models/supported_models.yaml").read_text())
    return {m["name"]: m for m in data["models"] if m["name"] != "base"}


def facts_table(section_title: str) -> list[list[str]]:
    """Rows of the markdown table under a heading of KAITO_API_FACTS.md."""
    text = reference("KAITO_API_FACTS.md").read_text()
    section = text[text.index(section_title) :]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if (
            line.startswith("| ")
            and not line.startswith("|---")
            and not line.startswith("| #")
            and not line.startswith("| SKU")
        ):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


@pytest.mark.parametrize(("version", "cat"), [("0.8.1", "0.8"), ("0.12.0", "0.12")])
def test_preset_names_and_download_flags_match_supported_models(version, cat):
    real = supported_models(version)
    served = {n for n, m in real.items() if not m.get("deprecated")}
    assert set(catalog.presets(cat)) == served
    assert set(catalog.deprecated_presets()) == {n for n, m in real.items() if m.get("deprecated")}
    for name, preset in catalog.presets(cat).items():
        assert preset.gated == bool(real[name].get("downloadAuthRequired")), name
        assert preset.download_at_runtime == bool(real[name].get("downloadAtRuntime")), name


def test_preset_requirements_match_kaito_0_8_model_definitions():
    rows = facts_table("### Preset table (v0.8.1)")
    checked = 0
    for row in rows:
        name, gpus, size, distributed, tuning, tuning_size = row[1], row[3], row[4], row[7], row[8], row[9]
        if name == "phi-2":
            continue
        p = catalog.presets("0.8")[name]
        assert p.gpu_count == int(gpus), name
        assert p.model_gib == pytest.approx(float(size.removesuffix("Gi"))), name
        assert p.distributed == (distributed == "true"), name
        assert p.supports_tuning == (tuning == "true"), name
        if p.supports_tuning:
            assert p.tuning_gib == pytest.approx(float(tuning_size.removesuffix("Gi"))), name
        checked += 1
    assert checked == len(catalog.presets("0.8"))


def test_preset_sizes_on_0_12_match_the_model_catalog():
    sizes = {
        m["name"].lower(): float(m["modelFileSize"].removesuffix("Gi"))
        for m in yaml.safe_load(reference("kaito/v0.12.0/presets/workspace/models/model_catalog.yaml").read_text())[
            "models"
        ]
    }
    real = supported_models("0.12.0")
    checked = 0
    for name, preset in catalog.presets("0.12").items():
        hf_id = re.match(r"https://huggingface.co/([^/]+/[^/]+)/", real[name]["version"]).group(1).lower()
        if hf_id in sizes:
            assert preset.model_gib == pytest.approx(sizes[hf_id]), name
            checked += 1
    assert checked >= 20


def test_sku_table_matches_kaitos_azure_sku_handler():
    rows = facts_table("| SKU | GPUCount |")
    rows = [r for r in rows if r[0].startswith("Standard_")]
    assert {r[0] for r in rows} == set(catalog.all_gpu_skus())
    for sku_name, count, mem, model, nvme, still in rows:
        sku = catalog.all_gpu_skus()[sku_name]
        assert (sku.gpu_count, sku.gpu_mem_gib, sku.gpu_model, sku.nvme) == (
            int(count),
            int(mem),
            model,
            nvme == "true",
        ), sku_name
        assert (sku_name in catalog.gpu_skus("0.12")) == (still == "yes"), sku_name


@pytest.mark.parametrize("version", ["0.8.1", "0.12.0"])
def test_kaito_chart_table_matches_the_charts_values(version):
    chart = catalog.kaito_charts()[version]
    values = yaml.safe_load(reference(f"kaito/v{version}/charts/kaito/workspace/values.yaml").read_text())
    assert chart.feature_gates == values["featureGates"]
    assert chart.value_keys == list(values)
    assert (chart.node_provisioner is not None) == ("nodeProvisioner" in values)
    if chart.node_provisioner is not None:
        assert chart.node_provisioner.auto == values["nodeProvisioner"]
    if chart.spot_toleration:
        section, key = chart.spot_toleration.split(".")
        assert key in values[section]
    for toggle in chart.subchart_toggles:  # the map they live in must exist in this chart
        node = values
        for part in toggle.split(".")[:-1]:
            node = node[part]
        assert isinstance(node, dict), toggle
    chart_yaml = yaml.safe_load(reference(f"kaito/v{version}/charts/kaito/workspace/Chart.yaml").read_text())
    assert chart_yaml["version"] == version
    gfd = next(d for d in chart_yaml["dependencies"] if d["name"] == "gpu-feature-discovery")
    assert gfd["condition"] == "featureGates.disableNodeAutoProvisioning"  # why KAITO's GFD exists only in BYO
