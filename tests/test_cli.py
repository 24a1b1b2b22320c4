"""The catalog and validation commands, answered for every preset."""

from __future__ import annotations

import json

import pytest
import yaml

from stacks import catalog
from stacks.cli import main
from tests.conftest import reference

VERSIONS = list(catalog.kaito_charts())


def cli_json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def reference_models(version: str) -> dict[str, dict]:
    ref = "0.8.1" if version.startswith("0.8") else version
    data = yaml.safe_load(reference(f"kaito/v{ref}/presets/workspace/models/supported_models.yaml").read_text())
    return {m["name"]: m for m in data["models"] if m["name"] != "base"}


@pytest.mark.parametrize("version", VERSIONS)
def test_models_list_names_every_served_preset_with_its_gating(capsys, version):
    rows = {r["preset"]: r for r in cli_json(capsys, "models", "list", "--version", version)}
    real = {n: m for n, m in reference_models(version).items() if not m.get("deprecated")}
    assert set(rows) == set(real)
    for name, row in rows.items():
        assert row["gated"] == bool(real[name].get("downloadAuthRequired")), name
        assert row["gpuMemoryGiB"] > 0


def test_models_list_table(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "phi-4-mini-instruct" in out
    assert "llama-3.1-8b-instruct" in out


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("preset", sorted(catalog.presets()))
def test_models_estimate_gives_the_smallest_fitting_skus_per_node_count(capsys, version, preset):
    chart = catalog.kaito_charts()[version]
    p = catalog.presets(chart.preset_catalog)[preset]
    skus = catalog.gpu_skus(chart.sku_catalog)
    answer = cli_json(capsys, "models", "estimate", preset, "--version", version)
    assert answer["gpuMemoryGiB"] == p.model_gib
    assert answer["options"], f"{preset}: no SKU fits"
    for option in answer["options"]:
        n, mem = option["nodes"], option["gpuMemoryGiBPerNode"]
        assert n == 1 or p.distributed
        for sku in option["skus"]:
            s = skus[sku["name"]]
            assert s.vendor == "nvidia"
            assert s.gpu_mem_gib == mem
            assert s.gpu_count >= p.gpu_count
            assert n * mem >= p.model_gib > (n - 1) * mem  # fits, and needs all n nodes
        # nothing with less memory per node fits in exactly n nodes
        smaller = [
            s for s in skus.values() if s.vendor == "nvidia" and s.gpu_mem_gib < mem and s.gpu_count >= p.gpu_count
        ]
        assert not [s for s in smaller if catalog.nodes_needed(p, s) == n]


def test_models_estimate_unknown_preset_suggests(capsys):
    assert main(["models", "estimate", "phi4"]) == 2
    assert "did you mean" in capsys.readouterr().err


def test_validate_accepts_every_stack(capsys):
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    assert "dev: ok" in out
    assert "prod: ok" in out


def test_validate_lists_every_error_with_its_path(tmp_path, capsys):
    (tmp_path / "Pulumi.bad.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "kaito-aks:cluster": {"kubeconfig": {}},
                    "kaito-aks:hfToken": "plaintext",
                    "kaito-aks:workspaces": [
                        {"name": "a", "model": "phi-2"},
                        {"name": "b", "model": "phi-4-mini-instruct", "preferredNodes": ["n1"]},
                    ],
                }
            }
        )
    )
    assert main(["validate", "bad", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "bad: 3 problem(s)" in out
    assert "workspaces[0].model: phi-2 is deprecated" in out
    assert "kaito-aks:hfToken: must be a secret" in out
    assert "workspaces[1].preferredNodes: removed in KAITO 0.8; use labelSelector" in out


def test_readme_config_reference_is_generated_from_the_schema():
    from stacks.docs import config_reference, readme_block

    assert readme_block("config-reference").strip() == config_reference().strip(), (
        "run `python -m stacks docs --readme`"
    )


def test_readme_test_command_is_what_ci_runs():
    from tests.conftest import ROOT

    assert "make test" in (ROOT / "README.md").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()
