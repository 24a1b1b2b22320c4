"""Every class of bad stack file gets a clean error naming the file (and line) or the config path
and the fix, before anything is registered: never a traceback, never silent acceptance. One test
per class that `validate` and `render` crashed on or let through (issue #19); both read the file
the same way."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from stacks.cli import main
from stacks.errors import StackConfigError
from stacks.evaluate import ProgramMocks, RecordingMonitor, evaluate
from tests.conftest import errors_of

CLUSTER = "  kaito-aks:cluster: {kubeconfig: {context: c}}\n"
AKS = "  kaito-aks:cluster:\n    aks: {resourceGroup: rg, name: kaito, location: eastus2}\n"
PHI = "  kaito-aks:workspaces:\n    - {name: phi, model: phi-4-mini-instruct}\n"
LLAMA_WS = {"name": "llama", "model": "llama-3.1-8b-instruct"}


def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes, command: str = "validate") -> str:
    """What `command` prints for a stack file; it must not raise, and must exit 1."""
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    extra = ["--out", str(tmp_path / "out")] if command == "render" else []
    start = time.monotonic()
    code = main([command, "bad", "--dir", str(tmp_path), *extra])
    took = time.monotonic() - start
    out = capsys.readouterr()
    printed = out.out + out.err
    assert code == 1, printed
    assert "Traceback" not in printed
    assert took < 30, f"{command} took {took:.0f} s"  # a hang guard, not a benchmark
    return printed


@pytest.mark.parametrize("command", ["validate", "render"])
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "config:\n  kaito-aks:workspaces: &r [*r]\n",
            "Pulumi.bad.yaml:2: alias *r refers to the value that contains it",
        ),
        (
            "config:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)),
            "expands to more than 100000 values through its aliases",
        ),
        ("config:\n  kaito-aks:workspaces: " + "[" * 500 + "]" * 500 + "\n", "nests maps and lists more than 40 deep"),
        (
            b"config:\n  kaito-aks:cluster: {kubeconfig: {context: \xff}}\n",
            "Pulumi.bad.yaml:2: byte 0xff is not UTF-8 text",
        ),
        (
            "config:\n  kaito-aks:cluster: {kubeconfig: {context: a\x00b}}\n",
            "Pulumi.bad.yaml:2: character '\\x00' is not allowed in YAML",
        ),
    ],
)
def test_yaml_tricks_get_a_clean_error_with_the_line(tmp_path, capsys, command, text, expected):
    assert expected in check(tmp_path, capsys, text, command)


@pytest.mark.parametrize("command", ["validate", "render"])
def test_a_key_written_twice_is_refused_not_last_one_wins(tmp_path, capsys, command):
    text = "config:\n" + AKS.replace("location: eastus2}", "location: eastus2, protect: true, protect: false}") + PHI
    assert "key 'protect' is written twice in this map" in check(tmp_path, capsys, text, command)


def test_yaml_1_2_reads_yes_as_text_as_pulumi_does(tmp_path, capsys):
    """The Pulumi CLI reads stack files as YAML 1.2: `yes` is text, so it is not a boolean."""
    text = "config:\n" + CLUSTER + "  kaito-aks:createNamespaces: yes\n"
    assert "createNamespaces: must be true or false, not 'yes'" in check(tmp_path, capsys, text)


def test_max_model_len_of_1e309_is_refused_without_overflow():
    errors = errors_of(
        {
            "kaito-aks:cluster": {"kubeconfig": {"context": "c"}},
            "kaito-aks:workspaces": [
                {"name": "phi", "model": "phi-4-mini-instruct", "config": {"vllm": {"max-model-len": float("inf")}}}
            ],
        }
    )
    assert errors == [
        "workspaces[0].config.vllm.max-model-len: must be a whole number of tokens, not inf (KAITO denies it: "
        '"max-model-len must be an integer")'
    ]


def test_render_ignores_a_pulumi_config_it_was_not_given(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PULUMI_CONFIG", "{not json")
    (tmp_path / "Pulumi.good.yaml").write_text("config:\n" + CLUSTER + PHI)
    assert main(["render", "good", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    assert os.environ["PULUMI_CONFIG"] == "{not json"


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("replicas", 10_000_000, "workspaces[0].replicas: must be from 1 to 1000, not 10000000"),
        ("replicas", 1_000_000, "workspaces[0].replicas: must be from 1 to 1000, not 1000000"),
        ("readyTimeoutMinutes", 10**12, "workspaces[0].readyTimeoutMinutes: must be from 1 to 1440"),
        ("image", "not an image!", "workspaces[0].image: 'not an image!' is not an image reference"),
        (
            "labelSelector",
            {"matchLabels": {"bad key!": "x"}},
            "workspaces[0].labelSelector.matchLabels: label key 'bad key!'",
        ),
    ],
)
def test_values_beyond_the_real_limits_are_refused(key, value, expected):
    ws = {"name": "phi", "model": "phi-4-mini-instruct", key: value}
    if key == "image":
        ws.pop("model")
    errors = errors_of({"kaito-aks:cluster": {"kubeconfig": {"context": "c"}}, "kaito-aks:workspaces": [ws]})
    assert any(e.startswith(expected) for e in errors), errors


@pytest.mark.parametrize(
    ("cluster", "pool", "expected"),
    [
        ({"name": "phi.4"}, {}, "cluster.aks.name: 'phi.4' is not an AKS cluster name"),
        ({"name": "phi--"}, {}, "cluster.aks.name: 'phi--' is not an AKS cluster name"),
        ({"resourceGroup": "rg\x07"}, {}, "cluster.aks.resourceGroup: contains control characters"),
        ({"systemPool": {"count": 2**63}}, {}, "cluster.aks.systemPool.count: must be from 1 to 1000"),
        ({}, {"count": 10**9}, "gpuNodePools[0].count: must be from 0 to 1000"),
        ({}, {"osDiskSizeGB": 10**7}, "gpuNodePools[0].osDiskSizeGB: must be from 30 to 2048"),
        ({}, {"labels": {"kubernetes.io/bad key": "x"}}, "gpuNodePools[0].labels: label key 'kubernetes.io/bad key'"),
    ],
)
def test_azure_names_and_counts_are_checked_against_azures_limits(cluster, pool, expected):
    aks = {"resourceGroup": "rg", "name": "kaito", "location": "eastus2", **cluster}
    pools = [{"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", **pool}]
    errors = errors_of({"kaito-aks:cluster": {"aks": aks}, "kaito-aks:gpuNodePools": pools})
    assert any(e.startswith(expected) for e in errors), errors


@pytest.mark.parametrize("command", ["validate", "render"])
@pytest.mark.parametrize("path", ["", "missing", "dir", "/dev/null"])
def test_a_kubeconfig_path_that_is_no_kubeconfig_is_refused(tmp_path, capsys, command, path):
    if path == "dir":
        (tmp_path / "dir").mkdir()
        path = str(tmp_path / "dir")
    elif path == "missing":
        path = str(tmp_path / "missing")
    text = "config:\n" + f"  kaito-aks:cluster: {{kubeconfig: {{path: {json.dumps(path)}}}}}\n" + PHI
    assert "cluster.kubeconfig.path: " in check(tmp_path, capsys, text, command)


@pytest.mark.parametrize("command", ["validate", "render"])
def test_secure_values_on_keys_that_are_not_secrets_are_refused_by_both(tmp_path, capsys, command):
    text = "config:\n" + CLUSTER + "  kaito-aks:workspaces:\n    secure: v1:abc:def\n"
    only = "only hfToken, kubeconfig and the gateway's apiKeys and tls are secrets"
    assert f"is encrypted (set with --secret), but {only}; set it without --secret" in (
        check(tmp_path, capsys, text, command)
    )


@pytest.mark.parametrize("command", ["validate", "render"])
def test_a_token_set_with_path_and_secret_is_refused_at_its_path_with_the_way_that_works(tmp_path, capsys, command):
    """Review 2 G4: `pulumi config set --path --secret 'ragEngines[0].inferenceService.accessToken'`
    writes a nested secure value; the stack holds no token, so it says where the token goes."""
    engine = (
        "  kaito-aks:ragEngines:\n    - name: docs\n      inferenceService:\n"
        "        url: https://api.example.com/v1/chat/completions\n        contextWindowSize: 8000\n"
        "        accessToken:\n          secure: v1:abc:def\n"
    )
    kaito = "  kaito-aks:kaito: {version: 0.12.0}\n"
    out = check(tmp_path, capsys, "config:\n" + CLUSTER + kaito + PHI + engine, command)
    assert (
        "ragEngines[0].inferenceService.accessToken: is encrypted (set with --path --secret), but only hfToken, "
        "kubeconfig and the gateway's apiKeys and tls are secrets (a token: put it in a Kubernetes Secret and name "
        "that Secret in accessSecret)"
    ) in out
    assert "must be text" not in out
    assert "v1:abc" not in out


def test_at_pulumi_up_a_key_made_secret_by_a_nested_token_says_where_the_token_goes():
    """`pulumi up` hands the program the whole key as a secret."""
    engines = [{"name": "docs", "inferenceService": {"url": "https://x/v1/chat/completions", "accessToken": "t"}}]
    with pytest.raises(StackConfigError) as err:
        evaluate(
            {"kaito-aks:cluster": {"kubeconfig": {"context": "c"}}},
            secrets={"kaito-aks:ragEngines": json.dumps(engines)},
        )
    assert err.value.lines[0] == (
        "kaito-aks:ragEngines: is encrypted (set with --secret), but only hfToken, kubeconfig and the gateway's apiKeys "
        "and tls are secrets; set it "
        "without --secret (or remove the token `--path --secret` put inside it: a token goes in a Kubernetes Secret "
        "named in accessSecret)"
    )


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("kaito:workspaces", "workspaces"),
        ("Kaito-aks:workspaces", "workspaces"),
        ("kaitoaks:workspaces", "workspaces"),
        ("kaito_aks:gpuOperator", "gpuOperator"),
        ("Kaito-aks:workspace", "workspaces"),
    ],
)
def test_keys_whose_namespace_is_a_near_miss_of_ours_are_refused(tmp_path, capsys, key, meant):
    """Only warned before (issue 36): the section was dropped, and the stack validated with no
    models, so `pulumi up` on a deployed stack would have deleted every model it held."""
    (tmp_path / "Pulumi.odd.yaml").write_text(
        "config:\n" + CLUSTER + f"  {key}:\n" + PHI.replace("kaito-aks:workspaces:\n", "")
    )
    assert main(["validate", "odd", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert (
        f"  Pulumi.odd.yaml:3: {key}: not read by this program, whose keys are kaito-aks:<key>: the section would be dropped"
        in out
    )
    assert f"did you mean kaito-aks:{meant}?" in out


def test_another_packages_keys_are_left_alone(tmp_path, capsys):
    (tmp_path / "Pulumi.ok.yaml").write_text(
        "config:\n" + CLUSTER + PHI + "  azure-native:location: eastus2\n  aws:region: x\n"
    )
    assert main(["validate", "ok", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "not read by this program" not in out  # (the model's own warnings are said: a kubeconfig cluster's pools)


def test_did_you_mean_comes_from_the_map_in_play_and_never_repeats_the_key():
    errors = errors_of(
        {
            "kaito-aks:cluster": {"aks": {"resourceGroup": "rg", "name": "kaito", "location": "x", "matchLabels": {}}},
        }
    )
    (line,) = [e for e in errors if "matchLabels" in e]
    assert line.startswith("cluster.aks.matchLabels: unknown key;")
    assert "did you mean matchLabels" not in line


LLAMA = "  kaito-aks:workspaces: [{name: llama, model: llama-3.1-8b-instruct}]\n"


@pytest.mark.parametrize("command", ["validate", "render"])
def test_a_misspelt_secret_set_with_secret_is_an_unknown_key_beside_the_other_problems(tmp_path, capsys, command):
    """`pulumi config set --secret hftoken ...`: never advice to store a token in plain text."""
    text = "config:\n" + CLUSTER + LLAMA + "  kaito-aks:hftoken:\n    secure: v1:abc:def\n"
    printed = check(tmp_path, capsys, text, command)
    assert "Pulumi.bad.yaml:4: kaito-aks:hftoken: unknown config key; did you mean kaito-aks:hfToken?" in printed
    assert '"This preset requires authentication and needs a modelAccessSecret"' in printed
    assert "plain text" not in printed
    assert "without --secret" not in printed


def test_a_misspelt_secret_under_pulumi_up_is_an_unknown_key_beside_the_other_problems():
    monitor = RecordingMonitor(ProgramMocks())
    cfg = {"kaito-aks:cluster": {"kubeconfig": {"context": "c"}}, "kaito-aks:workspaces": [LLAMA_WS]}
    with pytest.raises(StackConfigError) as err:
        evaluate(cfg, secrets={"kaito-aks:hftoken": "hf_x"}, monitor=monitor)
    assert monitor.registrations == []
    lines = err.value.lines
    assert "kaito-aks:hftoken: unknown config key; did you mean kaito-aks:hfToken?" in lines
    assert any('"This preset requires authentication' in line for line in lines), lines
    assert not [line for line in lines if "without --secret" in line or "hf_x" in line]


def test_a_stack_key_set_with_secret_is_read_and_said_once(tmp_path, capsys):
    """Under `pulumi up` the value is known: said to be no secret, and checked like any other."""
    cfg = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "c"}},
        "kaito-aks:workspaces": [{"name": "x", "model": "nope"}],
    }
    with pytest.raises(StackConfigError) as err:
        evaluate(cfg, secrets={"kaito-aks:createNamespaces": "true"})
    lines = err.value.lines
    assert lines[0].startswith(
        "kaito-aks:createNamespaces: is encrypted (set with --secret), but only hfToken, kubeconfig and the gateway's"
    )
    assert any(line.startswith("workspaces[0].model:") for line in lines), lines


def test_a_misspelt_secret_key_points_at_the_secret():
    errors = errors_of({"kaito-aks:cluster": {"kubeconfig": {"context": "c"}}, "kaito-aks:hftoken": "x"})
    assert errors == ["kaito-aks:hftoken: unknown config key; did you mean kaito-aks:hfToken?"]


def test_no_message_is_pydantics_stock_wording():
    errors = errors_of(
        {
            "kaito-aks:cluster": {"kubeconfig": {"context": 3}},
            "kaito-aks:kaito": {"version": ["0.8.1"], "featureGates": {"vLLM": "maybe"}},
            "kaito-aks:workspaces": [{"name": 7, "replicas": "two", "compute": "tpu", "adapters": "x"}],
        }
    )
    assert errors
    assert not [e for e in errors if "Input should be" in e or "valid string" in e]


KUBECONFIG_FILE = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.mark.parametrize("command", ["validate", "render"])
def test_a_relative_kubeconfig_path_is_read_from_the_stack_folder_not_the_working_directory(
    tmp_path, capsys, monkeypatch, command
):
    """`pulumi up` runs the program (and the provider reads the path) in the project folder."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "beside.yaml").write_text(KUBECONFIG_FILE)
    (elsewhere / "here.yaml").write_text(KUBECONFIG_FILE)
    monkeypatch.chdir(elsewhere)
    extra = ["--out", str(tmp_path / "out")] if command == "render" else []
    for path, ok in (("./beside.yaml", True), ("here.yaml", False)):
        (project / "Pulumi.s.yaml").write_text(
            f"config:\n  kaito-aks:cluster: {{kubeconfig: {{path: {path}, context: c}}}}\n" + PHI
        )
        code = main([command, "s", "--dir", str(project), *extra])
        printed = "".join(capsys.readouterr())
        assert (code == 0) is ok, printed
        if not ok:
            assert f"cluster.kubeconfig.path: here.yaml does not exist (relative to {project})" in printed
    rendered = tmp_path / "out" / "s" / "providers"
    if command == "render":
        assert "kubeconfig: ./beside.yaml" in "".join(p.read_text() for p in rendered.iterdir())


def test_render_refuses_a_near_miss_of_the_namespace_as_validate_does(tmp_path, capsys):
    (tmp_path / "Pulumi.odd.yaml").write_text("config:\n" + CLUSTER + PHI + "  kaito:workspaces: []\n")
    assert main(["render", "odd", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    printed = "".join(capsys.readouterr())
    assert "  Pulumi.odd.yaml:5: kaito:workspaces: not read by this program" in printed  # its line
    assert printed.count("not read by this program") == 1


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        ({"aks": {"resourceGroup": "rg", "name": 42, "location": "eastus2"}}, "cluster.aks.name: must be text"),
        ({"aks": {"resourceGroup": "rg\x01x", "name": "kaito", "location": "eastus2"}}, "cluster.aks.resourceGroup:"),
        ({"aks": "kaito"}, "cluster.aks: must be a map"),
        ({"existing": {"resourceGroup": ["rg"], "name": "kaito"}}, "cluster.existing.resourceGroup:"),
        ({"aks": {}, "existing": {}}, "cluster: choose exactly one"),
    ],
)
def test_an_unusable_cluster_section_is_the_only_problem_said(cluster, expected):
    """Not also 'node pools are created in AKS; use cluster.aks' to a stack that has cluster.aks,
    nor what the pools would need from a cluster nobody can tell (review B7)."""
    pools = [{"name": "a100", "vmSize": "Standard_NC24ads_A100_v4", "gpuDriver": "operator"}]
    errors = errors_of(
        {
            "kaito-aks:cluster": cluster,
            "kaito-aks:gpuNodePools": pools,
            "kaito-aks:workspaces": [LLAMA_WS],
        },
        hf_token="hf_x",
    )
    assert [e for e in errors if not e.startswith("cluster")] == [], errors
    assert any(e.startswith(expected) for e in errors), errors


@pytest.mark.parametrize("command", ["validate", "render"])
@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            '{name: phi, model: phi-4-mini-instruct, "\\e[31mRED\\e[0m": 1}',
            'workspaces[0]."\\x1b[31mRED\\x1b[0m": unknown',
        ),
        ("{name: " + "n" * 100_000 + ", model: phi-4-mini-instruct}", "(100000 characters) is not a DNS-1123"),
        ("{name: phi, model: " + "m" * 100_000 + "}", "preset 'mmmmm"),
        ("{name: phi, image: " + "i" * 100_000 + "}", "repository name must not be more than 255 characters"),
        ("{name: phi, model: phi-4-mini-instruct, null: x}", 'workspaces[0]."<nil>": a null key (null) reaches'),
    ],
)
def test_what_a_message_shows_of_a_value_is_bounded_and_escaped(tmp_path, capsys, command, entry, expected):
    """(review polish 1-2)"""
    printed = check(tmp_path, capsys, "config:\n" + CLUSTER + f"  kaito-aks:workspaces: [{entry}]\n", command)
    assert expected in printed
    assert "\x1b" not in printed
    assert len(printed) < 1000, printed[:300]
    assert "None" not in printed


def test_a_null_is_called_null(tmp_path, capsys):
    text = (
        "config:\n" + AKS + "  kaito-aks:gpuNodePools: [{name: a100, vmSize: Standard_NC24ads_A100_v4, spot: ~}, ~]\n"
    )
    printed = check(tmp_path, capsys, text)
    assert "gpuNodePools[0].spot: must be true or false, not null" in printed
    assert "gpuNodePools[1]: must be a map of key: value, not null" in printed
    assert "None" not in printed


def test_a_long_list_without_aliases_is_not_said_to_expand_through_aliases(tmp_path, capsys):
    """(review polish 3)"""
    text = "config:\n" + CLUSTER + "  kaito-aks:workspaces: [" + ", ".join(["x"] * 100_001) + "]\n"
    printed = check(tmp_path, capsys, text)
    assert "Pulumi.bad.yaml:3: holds more than 100000 values; a stack file holds a few hundred" in printed
    assert "alias" not in printed
