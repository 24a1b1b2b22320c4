"""The front door reads Pulumi.<stack>.yaml as the Pulumi CLI does (review B1): every scalar form,
tag, merge key and bare key gives the program's value that `pulumi config` yields, pinned by
the CLI's own answer for tests/data/cli_forms.yaml (the e2e suite asks the real CLI again).
Forms that read otherwise than they say are refused by validate, render and `pulumi up` alike,
with the line and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stacks.cli import main
from stacks.stackfile import parse_stack_file, read_stack_file
from tests.conftest import ROOT, errors_of

FORMS = ROOT / "tests" / "data" / "cli_forms.yaml"
RECORDED = ROOT / "tests" / "data" / "cli_forms.json"

AKS = "  kaito-aks:cluster:\n    aks: {resourceGroup: rg, name: kaito, location: eastus2}\n"
KUBECONFIG = "  kaito-aks:cluster: {kubeconfig: {context: c}}\n"
PHI = "  kaito-aks:workspaces:\n    - {name: phi, model: phi-4-mini-instruct}\n"


def pool(extra: str) -> str:
    return "  kaito-aks:gpuNodePools:\n    - name: a100\n      vmSize: Standard_NC24ads_A100_v4\n" + extra


def test_every_form_reads_as_the_pulumi_cli_hands_it_to_the_program():
    """Types included: 1. is the whole number 1, a uint64 inside a list a float, keys Go's text."""
    from stacks.pulumi_yaml import decode

    f = parse_stack_file(FORMS.read_bytes(), FORMS, "forms")
    handed = {
        k: decode(v) if k.startswith("kaito-aks:") else v for k, v in json.loads(RECORDED.read_text())["values"].items()
    }
    assert sorted(f.config) == sorted(handed)
    for key, value in handed.items():
        assert json.dumps(f.config[key]) == json.dumps(value), key


def test_the_traps_are_the_forms_that_read_otherwise_than_they_say():
    """Leading-zero octals, timestamps (as values, keys or tagged), null keys: nothing else."""
    f = parse_stack_file(FORMS.read_bytes(), FORMS, "forms")
    assert {t.path for t in f.traps if t.path[0] != "kaito-aks:fuzz-forms"} == {  # (those: tests/test_fuzz.py)
        *(("kaito-aks:ints", i) for i in range(4)),  # 010, 017, -017, 0_10; not 007, 00 or 08
        *(("kaito-aks:times", i) for i in range(8)),
        # a key by the name the program receives (the message says what is written)
        ("kaito-aks:keys", "8"),
        ("kaito-aks:keys", "2001-12-14 00:00:00 +0000 UTC"),
        ("kaito-aks:keys", "<nil>"),
        ("kaito-aks:tags", 4),  # !!int 010
        ("kaito-aks:tags", 5),  # !!timestamp
        ("kaito-aks:top-octal",),
        ("kaito-aks:top-date",),
    }
    said = {t.path: t.message for t in f.traps}
    assert said[("kaito-aks:ints", 0)] == (
        '010 is octal (8) to the Pulumi CLI; write 8 or 10 (or, for text, quote it: "010")'
    )
    assert said[("kaito-aks:ints", 2)] == (
        '-017 is octal (-15) to the Pulumi CLI; write -15 or -17 (or, for text, quote it: "-017")'
    )
    assert said[("kaito-aks:times", 3)] == (
        '2001-12-15T02:59:43.1Z is a time to the Pulumi CLI, which hands the program "2001-12-15 02:59:43.1 +0000 '
        'UTC"; quote it: "2001-12-15T02:59:43.1Z"'
    )


def test_a_time_with_an_offset_reads_as_go_prints_it():
    """(Not in the recorded file: Go names a zero offset after the deploying machine's zone.)
    `pulumi config` 3.259.0 printed this one as below."""
    from stacks.pulumi_yaml import go_timestamp

    assert go_timestamp("2001-12-14t21:59:43.10-05:00") == "2001-12-14 21:59:43.1 -0500 -0500"


def answers(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str) -> dict:
    """What validate, render and `pulumi up` print for a stack file. `pulumi up`: the program
    under the config the CLI hands it (read the CLI's way, pinned above), run in the project
    folder, where it finds its stack file."""
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    printed: dict[str, object] = {}
    for command in ("validate", "render"):
        extra = ["--out", str(tmp_path / "out")] if command == "render" else []
        code = main([command, "s", "--dir", str(tmp_path), *extra])
        out = capsys.readouterr()
        printed[command] = (code, out.out + out.err)
    f = read_stack_file("s", tmp_path)
    monkeypatch.chdir(tmp_path)
    printed["up"] = errors_of(f.config, stack="s")
    return printed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "config:\n" + AKS + pool("      count: 010\n"),
            "Pulumi.s.yaml:7: gpuNodePools[0].count: 010 is octal (8) to the Pulumi CLI; write 8 or 10",
        ),
        (
            "config:\n" + AKS + pool("      labels: {release: 2024-06-01}\n"),
            "Pulumi.s.yaml:7: gpuNodePools[0].labels.release: 2024-06-01 is a date to the Pulumi CLI, which hands "
            'the program "2024-06-01 00:00:00 +0000 UTC"; quote it: "2024-06-01"',
        ),
        (
            "config:\n" + KUBECONFIG + "  kaito-aks:workspaces:\n    - {name: phi, model: phi-4-mini-instruct, "
            "replicas: 0_12}\n",
            "Pulumi.s.yaml:4: workspaces[0].replicas: 0_12 is octal (10) to the Pulumi CLI; write 10 or 12",
        ),
        (
            "config:\n" + KUBECONFIG + PHI + "  kaito-aks:createNamespaces: !secret true\n",
            "Pulumi.s.yaml:5: createNamespaces: !secret is a YAML tag unknown to the Pulumi CLI, which ignores it",
        ),
        (
            "config:\n" + KUBECONFIG + "  kaito-aks:workspaces:\n    - {name: phi, model: phi-4-mini-instruct, "
            "config: {vllm: {max-model-len: .inf}}}\n",
            "Pulumi.s.yaml:4: workspaces[0].config.vllm.max-model-len: .inf is infinity to the Pulumi CLI, which cannot",
        ),
        (
            "config:\n" + KUBECONFIG + PHI + "  cluster: {kubeconfig: {context: d}}\n",
            "Pulumi.s.yaml:5: cluster: cluster and kaito-aks:cluster (line 2) are the same key to the Pulumi CLI, "
            "which keeps only the last; keep one",
        ),
    ],
)
def test_a_trap_is_refused_by_validate_render_and_pulumi_up_alike(tmp_path, capsys, monkeypatch, text, expected):
    printed = answers(tmp_path, capsys, monkeypatch, text)
    for command in ("validate", "render"):
        code, out = printed[command]  # type: ignore[misc]
        assert code == 1, (command, out)
        assert expected in out, (command, out)
    assert any(line.startswith(expected) for line in printed["up"]), printed["up"]  # type: ignore[union-attr]


def test_a_trap_is_the_only_problem_said_of_its_value(tmp_path, capsys, monkeypatch):
    """Under the CLI the date label is Go's text of a time, no label value: that is not said too."""
    text = "config:\n" + AKS + pool("      labels: {release: 2024-06-01}\n")
    printed = answers(tmp_path, capsys, monkeypatch, text)
    assert len(printed["up"]) == 1, printed["up"]  # type: ignore[arg-type]
    assert printed["validate"][1].count("\n  ") == 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "path", "value"),
    [
        # a workspace merged from another (`<<`), the key written beside the merge winning
        (
            "config:\n" + KUBECONFIG + "  kaito-aks:workspaces:\n    - &phi {name: phi, model: phi-4-mini-instruct}\n"
            "    - {<<: *phi, name: phi-b}\n",
            ("kaito-aks:workspaces", 1),
            {"model": "phi-4-mini-instruct", "name": "phi-b"},
        ),
        # keys without the namespace are the project's
        (
            "config:\n  cluster: {kubeconfig: {context: c}}\n  workspaces: [{name: phi, model: phi-4-mini-instruct}]\n",
            ("kaito-aks:cluster",),
            {"kubeconfig": {"context": "c"}},
        ),
        # underscores, binary, signed hex and whole floats are numbers
        (
            "config:\n" + KUBECONFIG + "  kaito-aks:workspaces:\n    - {name: phi, model: phi-4-mini-instruct, "
            "replicas: 1_0, readyTimeoutMinutes: 0x1E, port: 8_080.}\n",
            ("kaito-aks:workspaces", 0),
            {"model": "phi-4-mini-instruct", "name": "phi", "port": 8080, "readyTimeoutMinutes": 30, "replicas": 10},
        ),
        # text the CLI decodes as JSON at the top (what `pulumi config set createNamespaces false` writes)
        (
            "config:\n" + KUBECONFIG + PHI + '  kaito-aks:createNamespaces: "false"\n',
            ("kaito-aks:createNamespaces",),
            False,
        ),
    ],
)
def test_what_the_cli_accepts_validate_and_render_accept_with_the_same_values(
    tmp_path, capsys, monkeypatch, text, path, value
):
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    f = read_stack_file("s", tmp_path)
    got = f.config[path[0]]
    for part in path[1:]:
        got = got[part]
    assert got == value
    assert main(["validate", "s", "--dir", str(tmp_path)]) == 0, capsys.readouterr().out
    assert main(["render", "s", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 0, capsys.readouterr().err


def test_the_replicas_the_cli_hands_over_are_the_replicas_rendered(tmp_path, capsys):
    text = "config:\n" + KUBECONFIG + "  workspaces: [{name: phi, model: phi-4-mini-instruct, replicas: 0b11}]\n"
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    assert main(["render", "s", "--dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    rendered = (tmp_path / "out" / "s" / "kubernetes" / "default").glob("Workspace-phi-*.yaml")
    assert len(list(rendered)) == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("config:\n  kaito-aks:x: {<<: {a: 1}, <<: {b: 2}}\n", "Pulumi.s.yaml:2: key '<<' is written twice"),
        ("config:\n  kaito-aks:x: {<<: 5}\n", "Pulumi.s.yaml:2: not valid YAML"),
    ],
)
def test_merges_the_cli_refuses_are_refused(tmp_path, capsys, text, expected):
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    assert main(["validate", "s", "--dir", str(tmp_path)]) == 1
    assert expected in capsys.readouterr().out


def test_a_number_too_long_for_go_is_text_with_a_line_not_pythons_digit_limit(tmp_path, capsys):
    text = (
        "config:\n"
        + KUBECONFIG
        + f"  workspaces: [{{name: phi, model: phi-4-mini-instruct, replicas: {'1' * 4401}}}]\n"
    )
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    assert main(["validate", "s", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "Pulumi.s.yaml:3: workspaces[0].replicas: must be a whole number, not '1111" in out
    assert "4300" not in out
    assert "sys.set_int_max_str_digits" not in out
    assert len(out) < 500
