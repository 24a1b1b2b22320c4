"""The catalog and validation commands, answered for every preset."""

from __future__ import annotations

import json

import pytest
import yaml

from stacks import catalog
from stacks.cli import main
from tests.upstream_facts import kaito

VERSIONS = list(catalog.kaito_charts())


def cli_json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def reference_models(version: str) -> dict[str, dict]:
    return kaito(version, "presets")["presets"]


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


def _stack(tmp_path, name: str, text: str) -> None:
    (tmp_path / f"Pulumi.{name}.yaml").write_text(text)


CLUSTER = "  kaito-aks:cluster: {kubeconfig: {context: c}}\n"
GOOD = "config:\n" + CLUSTER + "  kaito-aks:workspaces:\n    - {name: phi, model: phi-4-mini-instruct}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("config:\n  kaito-aks:workspaces: [\n", "Pulumi.bad.yaml:3"),
        ("- just\n- a list\n", "Pulumi.bad.yaml:1: a stack file is a map with a `config:` key, not a list"),
        ("config:\n  - kaito-aks:workspaces\n", "Pulumi.bad.yaml:2: `config:` must be a map"),
        (
            "config:\n" + CLUSTER + "  kaito-aks:kaito:\n    version: 0.12\n",
            'Pulumi.bad.yaml:4: kaito.version: YAML reads 0.12 as the number 0.12; quote it: "0.12"',
        ),
    ],
)
@pytest.mark.parametrize("command", ["validate", "render"])
def test_a_broken_stack_file_is_located_and_does_not_stop_the_others(tmp_path, capsys, text, expected, command):
    _stack(tmp_path, "bad", text)
    _stack(tmp_path, "good", GOOD)
    extra = ["--out", str(tmp_path / "out")] if command == "render" else []
    assert main([command, "--dir", str(tmp_path), *extra]) == 1
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert expected in output
    assert "Traceback" not in output
    assert "good" in output
    if command == "render":
        assert (tmp_path / "out" / "good" / "order.yaml").is_file()
    else:
        assert "good: ok" in output


def test_one_entry_with_several_mistakes_reports_them_all(tmp_path, capsys):
    _stack(
        tmp_path,
        "bad",
        "config:\n" + CLUSTER + "  kaito-aks:workspaces:\n"
        "    - name: Bad_Name\n      model: phi-4-mini-instruc\n      replicas: many\n      bogus: 1\n",
    )
    assert main(["validate", "bad", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "Pulumi.bad.yaml:5: workspaces[0].model" in out
    assert "Pulumi.bad.yaml:6: workspaces[0].replicas" in out
    assert "Pulumi.bad.yaml:7: workspaces[0].bogus: unknown key" in out
    assert "Pulumi.bad.yaml:4: workspaces[0].name" in out


def test_render_never_deletes_a_folder_it_did_not_write(tmp_path, capsys):
    _stack(tmp_path, "good", GOOD)
    mine = tmp_path / "out" / "good"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("keep me")
    assert main(["render", "good", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert (mine / "notes.txt").read_text() == "keep me"
    assert "not written by" in capsys.readouterr().err
    (mine / "notes.txt").unlink()  # an empty folder may be used
    assert main(["render", "good", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    assert main(["render", "good", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 0  # and re-rendered
