"""The one validation engine (kaito_aks.schema, kaito_aks.validation): pydantic reads the args,
one adapter says what it found, and args judged once are taken as they are."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from kaito_aks import InvalidArgsError, KaitoModel, KaitoModelArgs, LabelSelectorArgs, deploy_models
from kaito_aks.camel import CamelModel
from kaito_aks.model import component
from kaito_aks.model.component import check_model
from kaito_aks.problems import camel
from kaito_aks.testing import ProgramMocks, RecordingMonitor, run
from kaito_aks.validation import Judged, check_instance, validate
from test_components import kubeconfig_cluster

QUIET = {"wait_for_gpu_nodes": False, "wait_for_ready": False}


def model(**kw: object) -> KaitoModelArgs:
    return KaitoModelArgs(**{"kaito_version": "0.8.1", "model": "phi-4-mini-instruct", **QUIET, **kw})  # type: ignore[arg-type]


def test_args_made_with_problems_keep_them_and_what_is_usable():
    """Making args never raises: the component they are given to says every problem at once."""
    args = model(replicas=0, name="Bad_Name", label_selector=LabelSelectorArgs(match_labels={"a": 1}))  # type: ignore[dict-item]
    assert [p.text() for p in check_instance(args)] == [
        "name: 'Bad_Name' is not a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a "
        "letter or digit, at most 63 characters",
        "replicas: must be from 1 to 1000, not 0 (a replica needs a node of its own; an AKS pool has at most 1000)",
        "label_selector.match_labels.a: must be text, not 1",
    ]
    assert args.replicas == 1  # out of bounds: left at its default for the rules
    assert args.name == "Bad_Name"  # breaks a naming rule only: the rules still judge the rest
    assert args.label_selector is None
    assert check_instance(model()) == []


def test_a_mapping_is_read_in_the_schemas_names_with_the_same_rules():
    args, problems = validate(KaitoModelArgs, {"kaitoVersion": "0.8.1", "replica": 2, "preferredNodes": []}, "schema")
    assert args is not None
    assert args.kaito_version == "0.8.1"
    assert [p.text("schema") for p in problems] == [
        "replica: unknown key; did you mean replicas?",
        "preferredNodes: removed in KAITO 0.8; use labelSelector",
    ]


def test_one_camel_case_rule_for_args_and_typed_yaml():
    class Disk(CamelModel):
        os_disk_size_gb: int

    assert Disk.model_validate({"osDiskSizeGB": 30}).os_disk_size_gb == 30
    assert camel("os_disk_size_gb") == "osDiskSizeGB"


def test_judged_args_are_not_judged_again(monkeypatch: pytest.MonkeyPatch):
    calls: list[str | None] = []
    rules = component.model_verdict

    def counted(args: KaitoModelArgs) -> tuple[list[Any], list[Any]]:
        calls.append(args.name)
        return rules(args)

    monkeypatch.setattr(component, "model_verdict", counted)
    checked, problems = check_model(model(), "phi")
    assert problems == []
    assert checked is not None
    assert calls == ["phi"]

    def program() -> None:
        on_cluster = pulumi.ResourceOptions(providers=[kubeconfig_cluster().provider])
        KaitoModel("phi", Judged(checked), opts=on_cluster)
        deploy_models("models", [("phi-2", Judged(checked))], opts=on_cluster)

    run(program)
    assert calls == ["phi"]
    with pytest.raises(InvalidArgsError):
        run(lambda: KaitoModel("phi", model(replicas=0)), monitor=RecordingMonitor(ProgramMocks()))
    assert calls == ["phi", "phi"]
