"""The catalog and validation commands, answered for every preset."""

from __future__ import annotations

import json

import pytest
import yaml

from kaito_aks import catalog
from kaito_aks.kaito import sizing as kaito_sizing
from stacks.cli import ORDER, main
from stacks.docs import EXAMPLE_BLOCKS
from tests.conftest import ROOT as ROOT_DIR
from upstream_facts import kaito

VERSIONS = list(catalog.kaito_charts())


def cli_json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def reference_models(version: str) -> dict[str, dict]:
    return kaito(version, "presets")["presets"]


@pytest.mark.parametrize("version", VERSIONS)
def test_models_list_names_every_served_preset_with_its_gating(capsys, version):
    rows = cli_json(capsys, "models", "list", "--version", version)
    chart = catalog.kaito_charts()[version]
    real = {n: m for n, m in reference_models(version).items() if not m.get("deprecated")}
    presets = catalog.presets(chart.preset_catalog)
    assert {r["preset"] for r in rows} - {None} == set(real) - set(catalog.removed_presets(chart.preset_catalog))
    for row in rows:
        name = row["preset"]
        assert row["gpuMemoryGiB"] > 0
        if name is not None:
            if real[name].get("downloadAuthRequired"):
                assert row["gated"], name
            assert row["runtimes"] == presets[name].runtimes
            assert row["gated"] == presets[name].gated


@pytest.mark.parametrize("version", VERSIONS)
def test_models_list_shows_the_whole_hugging_face_catalog_with_licence_and_gating(capsys, version):
    rows = {r["model"]: r for r in cli_json(capsys, "models", "list", "--version", version)}
    release = catalog.kaito_charts()[version].preset_catalog
    real = kaito(version, "model-catalog")["models"] if catalog.catalog_code(release) else {}
    if not real:
        assert all(r["model"] == r["preset"] for r in rows.values())  # presets only
        return
    assert set(rows) == set(real)
    for model_id, row in rows.items():
        assert row["license"] == real[model_id]["license"]
        assert row["gated"] == (model_id.lower() in catalog.gated_models())
    assert rows["meta-llama/Llama-3.1-8B-Instruct"]["preset"] == "llama-3.1-8b-instruct"


def test_models_list_table(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "phi-4-mini-instruct" in out
    assert "llama-3.1-8b-instruct" in out
    assert main(["models", "list", "--version", "0.12.0"]) == 0
    out = capsys.readouterr().out
    assert "the 60 models of its Hugging Face model catalog" in out
    assert "deepseek-ai/DeepSeek-V3.2" in out
    # the GPU count is KAITO's least per instance, said so: a 642 GiB model's "1" is no GPU count to buy
    header = next(x for x in out.splitlines() if x.startswith("MODEL "))
    assert " MIN GPUS " in header
    assert " GPUS " not in header.replace("MIN GPUS", "")
    assert "min GPUs: the fewest GPUs KAITO asks one instance for" in out
    line = next(x for x in out.splitlines() if x.startswith("meta-llama/Llama-3.1-8B-Instruct "))
    assert line.split()[1:2] == ["llama-3.1-8b-instruct"]
    assert line.split()[-2:] == ["llama3.1", "yes"]  # licence, gated


def test_models_estimate_takes_catalog_ids_and_says_when_it_cannot(capsys):
    answer = cli_json(capsys, "models", "estimate", "deepseek-ai/deepseek-v3.2", "--version", "0.12.0")
    assert answer["model"] == "deepseek-ai/DeepSeek-V3.2"
    assert answer["license"] == "mit"
    by_sku = {o["sku"]: o["nodes"] for o in answer["options"]}
    assert by_sku["Standard_ND96isr_H200_v5"] == 1  # 1128 GiB >= 642.14 GiB: one node
    assert by_sku["Standard_ND96isr_H100_v5"] == 2  # 640 GiB < 642.14 GiB: two
    assert main(["models", "estimate", "foo/NotAModel", "--version", "0.12.0"]) == 2
    assert "sizes it from Hugging Face" in capsys.readouterr().err
    assert main(["models", "estimate", "deepseek-ai/DeepSeek-V3.2", "--version", "0.8.1"]) == 2
    assert "a Hugging Face id, which KAITO takes from 0.11; KAITO 0.8.1 serves presets only" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("version", "preset"),
    [
        (v, p)
        for v, chart in catalog.kaito_charts().items()
        for p in sorted({*catalog.presets(chart.preset_catalog), *catalog.catalog_models(chart.preset_catalog)})
    ],
)
def test_models_estimate_gives_every_fitting_sku_with_kaitos_node_count(capsys, version, preset):
    chart = catalog.kaito_charts()[version]
    p = catalog.find_preset(preset, chart.preset_catalog)
    assert p is not None
    skus = catalog.gpu_skus(chart.sku_catalog)
    answer = cli_json(capsys, "models", "estimate", preset, "--version", version)
    assert answer["gpuMemoryGiB"] == p.model_gib
    assert answer["options"], f"{preset}: no SKU fits"
    assert answer["gated"] == p.gated
    for option in answer["options"]:
        n, mem = option["nodes"], option["gpuMemoryGiBPerNode"]
        s = skus[option["sku"]]
        assert n == 1 or p.distributed
        assert s.vendor == "nvidia"
        assert not s.unusable
        assert s.gpu_mem_gib == mem
        assert option["gpuMemoryGiBPerGpu"] == mem / s.gpu_count
        assert s.gpu_count >= p.gpu_count
        assert kaito_sizing.nodes_for(p, s, chart.preset_catalog) == n  # KAITO's own count for this size
    # every usable size that holds it (within 16 nodes) is listed, the 8-GPU ones too (issue 28)
    fits = {
        name
        for name, s in skus.items()
        if s.vendor == "nvidia"
        and not s.unusable
        and (n := kaito_sizing.nodes_for(p, s, chart.preset_catalog)) is not None
        and n <= 16
    }
    assert {o["sku"] for o in answer["options"]} == fits
    # unpriced: ranked by fewest nodes, then fewest GPUs in all (issue 36: 3 A100s before 9 A10s)
    order = [(o["nodes"], o["gpus"]) for o in answer["options"]]
    assert order == sorted(order)
    assert all(o["gpus"] == o["nodes"] * o["gpusPerNode"] for o in answer["options"])


def test_models_estimate_lists_every_size_that_fits(capsys):
    """Issue 28: llama-3.3-70b-instruct's 8-GPU and 4-GPU sizes were dropped for having more memory
    per node than NC80adis_H100; and the default release was 0.8.1, where Hugging Face ids are unknown."""
    assert main(["models", "estimate", "llama-3.3-70b-instruct"]) == 0
    out = capsys.readouterr().out
    # the newest release this program installs, and that a stack without kaito.version runs another (issue 36)
    assert out.splitlines()[0].endswith(
        "(KAITO 0.12.0: the newest this program installs; a stack without kaito.version runs 0.8.1)"
    )
    # a 70B needs more than one GPU: the header says its memory, each row its GPUs (issue 36: "1 GPU(s) per node")
    assert "GPU(s) per node" not in out
    assert "131.42 GiB of GPU memory" in out
    lines = out.splitlines()
    a100x3 = next(i for i, line in enumerate(lines) if "Standard_NC24ads_A100_v4" in line)
    a10x9 = next(i for i, line in enumerate(lines) if "Standard_NV36ads_A10_v5" in line)
    assert a100x3 < a10x9, "3 A100 nodes come before 9 A10 nodes"
    assert f"  order: {ORDER}" in out
    for size in ("Standard_ND96asr_A100_v4", "Standard_NC96ads_A100_v4", "Standard_ND96isr_H200_v5"):
        assert f"  {size} (" in out, out
    assert main(["models", "estimate", "meta-llama/Llama-3.3-70B-Instruct", "--version", "0.8.1"]) == 2
    assert "Hugging Face id, which KAITO takes from 0.11" in capsys.readouterr().err
    assert main(["models", "estimate", "meta-llama/Llama-3.3-70B-Instruct"]) == 0
    # a stack's own release, with --stack
    capsys.readouterr()
    assert main(["models", "estimate", "llama-3.3-70b-instruct", "--stack", "dev"]) == 0  # dev runs 0.8.1
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("(KAITO 0.8.1: stack dev's)")
    assert "unpriced in eastus2: " in out  # the stack's region, not eastus (issue 36)


def test_estimate_never_suggests_an_unusable_size_and_says_why(capsys):
    answer = cli_json(capsys, "models", "estimate", "phi-4-mini-instruct", "--version", "0.8.1")
    suggested = {o["sku"] for o in answer["options"]}
    m60 = {n for n, s in catalog.gpu_skus("0.8").items() if s.gpu_model == "NVIDIA M60"}
    retired = {"Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3"}  # Azure retired NCv3 in 2025
    assert m60
    assert not ((m60 | retired) & suggested)
    assert set(answer["unusable"]) == m60 | retired
    assert "compute capability 5.2" in answer["unusable"]["Standard_NV12s_v3"]
    assert "Azure retired it on 2025-09-30" in answer["unusable"]["Standard_NC6s_v3"]
    assert main(["models", "estimate", "phi-4-mini-instruct", "--version", "0.8.1"]) == 0
    out = capsys.readouterr().out
    assert "not suggested: Standard_NV12" in out
    assert "PER GPU" in out
    assert "not gated" in out


def test_estimate_with_a_pool_gives_the_node_count_or_a_did_you_mean(capsys):
    answer = cli_json(capsys, "models", "estimate", "phi-4-mini-instruct", "--pool", "Standard_NV36ads_A10_v5")
    assert answer["nodes"] == 1
    assert answer["problem"] is None
    assert main(["models", "estimate", "phi-4-mini-instruct", "--pool", "Standard_NV36ads_A10"]) == 1
    assert "did you mean Standard_NV36ads_A10_v5" in capsys.readouterr().err
    assert main(["models", "estimate", "phi-4-mini-instruct", "--pool", "Standard_NV12s_v3", "--version", "0.8.1"]) == 1
    assert "compute capability 5.2" in capsys.readouterr().err


def test_prices_order_the_suggestions_and_cost_the_stack(monkeypatch, capsys):
    """With the committed catalog's prices in place the cheapest fitting choice comes first and
    each stack's pools are costed with the source named; a size it does not price is unpriced,
    and then the stack has no total (never 0)."""
    from stacks import cost

    table = {
        "Standard_NV36ads_A10_v5": {"usdPerHour": 3.0, "effectiveDate": "2026-01-01", "source": "test table"},
        "Standard_NC8as_T4_v3": {"usdPerHour": 0.9, "effectiveDate": "2026-01-01", "source": "test table"},
        "Standard_NC4as_T4_v3": {"usdPerHour": 0.6, "effectiveDate": "2026-01-01", "source": "test table"},
    }
    monkeypatch.setattr(
        catalog, "prices", lambda region: {k: catalog.Price.model_validate(v) for k, v in table.items()}
    )
    answer = cli_json(capsys, "models", "estimate", "phi-4-mini-instruct", "--version", "0.8.1")
    priced = [o for o in answer["options"] if o["usdPerHour"] is not None]
    assert [o["sku"] for o in priced] == ["Standard_NC4as_T4_v3", "Standard_NC8as_T4_v3", "Standard_NV36ads_A10_v5"]
    assert answer["options"][: len(priced)] == priced  # priced first, cheapest first
    assert priced[0]["priceSource"].startswith(
        "the committed catalog (components/kaito_aks/catalog/azure_prices.yaml), eastus, read 2026-01-01"
    )
    assert priced[0]["usdPerMonth"] == 438.0
    from stacks.load import parse_stack_file
    from stacks.stackfile import ROOT, read_stack_file

    dev = cost.stack_cost(parse_stack_file(read_stack_file("dev", ROOT)))
    assert dev.unpriced == ["Standard_D4s_v5"]  # the system and CPU pools' size: the table does not know it
    assert dev.total() is None
    assert dev.as_dict()["usdPerHour"] is None
    gpu = next(line for line in dev.as_dict()["lines"] if line["what"] == "GPU pool gpu")
    assert gpu["usdPerHour"] == {"min": 6.0, "max": 6.0}  # two A10 nodes: phi's and the RAG engine's
    assert dev.summary().startswith("cost unknown in eastus2: Standard_D4s_v5 unpriced (price it with")
    table["Standard_D4s_v5"] = {"usdPerHour": 0.192, "effectiveDate": "2026-01-01", "source": "test table"}
    dev = cost.stack_cost(parse_stack_file(read_stack_file("dev", ROOT)))
    assert dev.total() == pytest.approx((6.0 + 3 * 0.192, 6.0 + 3 * 0.192))
    assert dev.summary().startswith("VMs $6.58/h, $4,800/month in eastus2 (the committed catalog")


def test_the_price_importer_keeps_linux_on_demand_meters(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("imp", ROOT_DIR / "scripts" / "import_azure_prices.py")
    imp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(imp)
    base = {
        "serviceName": "Virtual Machines",
        "type": "Consumption",
        "currencyCode": "USD",
        "unitOfMeasure": "1 Hour",
        "armSkuName": "Standard_NV36ads_A10_v5",
        "armRegionName": "eastus",
        "productName": "Virtual Machines NVadsA10 v5 Series",
        "skuName": "NV36ads A10 v5",
        "meterName": "NV36ads A10 v5",
        "effectiveStartDate": "2025-01-01T00:00:00Z",
        "retailPrice": 3.2,
    }
    page = {
        "Items": [
            base,
            {**base, "productName": base["productName"] + " Windows", "retailPrice": 9.0},
            {**base, "skuName": "NV36ads A10 v5 Spot", "retailPrice": 0.5},
            {**base, "armSkuName": "Standard_D4s_v5", "retailPrice": 0.2},
            {**base, "effectiveStartDate": "2024-01-01T00:00:00Z", "retailPrice": 2.9},
        ]
    }
    found = imp.import_prices([page], {"Standard_NV36ads_A10_v5"}, None)
    assert found == {
        "eastus": {"Standard_NV36ads_A10_v5": {"usdPerHour": 3.2, "effectiveDate": "2025-01-01", "source": imp.SOURCE}}
    }
    (tmp_path / "page.json").write_text(json.dumps(page))
    out = tmp_path / "prices.yaml"
    out.write_text("# header\nprices: {}\n")
    assert imp.main([str(tmp_path / "page.json"), "--out", str(out)]) == 0
    assert yaml.safe_load(out.read_text())["prices"]["eastus"]["Standard_NV36ads_A10_v5"]["usdPerHour"] == 3.2
    assert out.read_text().startswith("# header")


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


def test_the_api_reference_is_generated_from_the_committed_schema():
    from stacks.docs import API, api_page

    assert API.read_text() == api_page(), "run `make docs`"


def test_the_configuration_reference_is_generated_from_the_schema():
    from stacks.docs import CONFIGURATION, configuration_page

    assert CONFIGURATION.read_text() == configuration_page(), "run `make docs`"


def test_the_audit_table_is_written_from_the_policy():
    """docs/kaito-rules.md shows kaito_aks/policy.py's table: every code, its kind, evidence and way past."""
    from stacks.docs import KAITO_RULES, POLICY_BLOCK, marked_block, policy_table

    assert marked_block(KAITO_RULES, POLICY_BLOCK) == policy_table(), "docs/kaito-rules.md: run `make docs`"


@pytest.mark.parametrize("block", list(EXAMPLE_BLOCKS))
def test_the_docs_examples_are_the_example_files_ci_runs(block):
    from stacks.docs import example_block, marked_block

    page = EXAMPLE_BLOCKS[block][2]
    assert marked_block(page, block) == example_block(block), f"{page.name}: run `make docs`"


def test_docs_write_regenerates_the_reference_and_the_example_blocks(tmp_path, monkeypatch):
    from stacks import docs

    page = tmp_path / "library.md"
    page.write_text("before\n<!-- example-yaml:start -->\nstale\n<!-- example-yaml:end -->\nafter\n")
    monkeypatch.setattr(docs, "CONFIGURATION", tmp_path / "configuration.md")
    example = docs.EXAMPLE_BLOCKS["example-yaml"]
    monkeypatch.setattr(docs, "EXAMPLE_BLOCKS", {"example-yaml": (example[0], example[1], page)})
    assert main(["docs", "--write"]) == 0
    assert (tmp_path / "configuration.md").read_text() == docs.configuration_page()
    assert page.read_text() == (
        "before\n<!-- example-yaml:start -->\n"
        + docs.example_block("example-yaml")
        + "<!-- example-yaml:end -->\nafter\n"
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
        ('config:\n  kaito-aks:note: "a\x07b"\n', "Pulumi.bad.yaml:2: character '\\x07' is not allowed in YAML"),
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


def test_render_says_each_warning_once_with_its_file_and_line(tmp_path, capsys):
    """Review 3: render printed the components' warnings bare, in the library's names."""
    text = (
        "config:\n"
        + CLUSTER
        + "  kaito-aks:kaito: {version: 0.12.0}\n  kaito-aks:workspaces:\n    - {name: mine, model: my-org/my-finetune}\n"
    )
    _stack(tmp_path, "warned", text)
    assert main(["render", "warned", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "my-org/my-finetune is not in KAITO 0.12.0's model catalog" in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("warned: warning: Pulumi.warned.yaml:5: workspaces[0].model: ")
    assert "hfToken or modelAccessSecret" in lines[0]  # the stack's names, not the library's
