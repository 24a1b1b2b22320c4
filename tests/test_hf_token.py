"""The stack's Hugging Face token goes where it is needed: adding or rotating it replaces no model
that does not need it (from generation 3 of the defaults), and stacks of older generations keep
what they run. KAITO's Workspace keeps the preset, and its modelAccessSecret, in
inference.preset, which is replaced, not patched (docs/kaito-rules.md)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import yaml

from kaito_aks import needs_hf_token
from stacks.cli import main
from stacks.render import render_files
from tests.conftest import errors_of, run, warnings_of

SECRET = "kubernetes:core/v1:Secret"
V12 = {"version": "0.12.0", "nodeProvisioning": "auto", "install": False}  # KAITO installed elsewhere
A100 = "Standard_NC24ads_A100_v4"
PHI = {"name": "phi", "namespace": "llm", "model": "phi-4-mini-instruct", "instanceType": A100}
QWEN = {"name": "qwen", "namespace": "llm", "model": "qwen2.5-coder-7b-instruct", "instanceType": A100}
LLAMA = {"name": "llama", "namespace": "llm", "model": "llama-3.1-8b-instruct", "instanceType": A100}


def stack(*workspaces: dict, generation: int | None = 3) -> dict:
    cfg = {
        "kaito-aks:cluster": {"kubeconfig": {"context": "test"}},
        "kaito-aks:kaito": V12,
        "kaito-aks:workspaces": list(workspaces),
    }
    return cfg if generation is None else {**cfg, "kaito-aks:defaults": generation}


def rendered(cfg: dict, token: str | None) -> dict[str, str]:
    return render_files(run(cfg, hf_token=token, stack="t"))


def test_which_models_need_a_token_is_kaitos_and_hugging_faces_word():
    # supported_models.yaml downloadAuthRequired at v0.8.1, v0.11.0, v0.12.0; Gemma's licence on
    # Hugging Face; every download on 0.6, whose webhook asks a secret of each
    for version in ("0.8.1", "0.11.0", "0.12.0"):
        assert needs_hf_token("llama-3.1-8b-instruct", version)
        assert needs_hf_token("llama-3.3-70b-instruct", version)
        assert not needs_hf_token("phi-4-mini-instruct", version)
        assert not needs_hf_token("qwen2.5-coder-7b-instruct", version)
    assert needs_hf_token("google/gemma-3-4b-it", "0.12.0")
    assert not needs_hf_token("google/gemma-3-4b-it", "0.8.1")  # 0.8 takes no Hugging Face ids
    assert not needs_hf_token("Qwen/Qwen3.5-2B", "0.12.0")
    assert not needs_hf_token("someone/private-model", "0.12.0")  # unknown: its entry asks (useHfToken)
    assert needs_hf_token("llama-3.1-8b-instruct", "0.6.0")


def test_adding_the_token_and_a_gated_model_replaces_nothing_that_does_not_need_it():
    """A running generation-3 stack (phi, qwen) adds a gated llama and the token it needs: every
    object of the stack is as it was, byte for byte; only llama's are new, its Secret among them."""
    before = rendered(stack(PHI, QWEN), None)
    assert rendered(stack(PHI, QWEN), "hf_first") == before  # the token alone changes nothing at all
    after = rendered(stack(PHI, QWEN, LLAMA), "hf_first")
    objects = [k for k in before if k.startswith(("kubernetes/", "helm/", "azure/"))]
    assert objects
    assert [k for k in objects if before[k] != after.get(k)] == []
    new = {k for k in after if k not in before}
    assert "kubernetes/llm/Secret-llama-hf-token.yaml" in new
    assert all("llama" in k for k in new), sorted(new)
    for name in ("phi", "qwen"):
        assert "modelAccessSecret" not in after[f"kubernetes/llm/InferenceSet-{name}.yaml"]
    assert "modelAccessSecret: llama-hf-token" in after["kubernetes/llm/InferenceSet-llama.yaml"]


def test_rotating_the_token_changes_its_secret_only():
    cfg = stack(PHI, LLAMA)
    first, second = run(cfg, hf_token="hf_first", stack="t"), run(cfg, hf_token="hf_second", stack="t")
    for kind in ("kaito.sh/v1beta1:InferenceSet", "kubernetes:core/v1:Service"):
        assert [r.inputs for r in first.of_type(kind)] == [r.inputs for r in second.of_type(kind)]
    [secret] = first.of_type(SECRET)
    assert secret.name == "llm/llama/llama-hf-token"
    assert second.named(secret.name, SECRET).inputs["stringData"] != secret.inputs["stringData"]


def test_a_model_asks_for_the_token_by_name_or_keeps_out():
    private = {"name": "mine", "namespace": "llm", "model": "someone/private-model", "instanceType": A100}
    ev = run(stack({**PHI, "useHfToken": True}, {**private, "useHfToken": True}, QWEN), hf_token="hf_x")
    assert sorted(s.name for s in ev.of_type(SECRET)) == ["llm/mine/mine-hf-token", "llm/phi/phi-hf-token"]
    # an older stack's model kept out of the token it would otherwise get
    ev = run(stack({**PHI, "useHfToken": False}, QWEN, generation=None), hf_token="hf_x")
    assert [s.name for s in ev.of_type(SECRET)] == ["llm/qwen/qwen-hf-token"]


def test_asking_for_a_token_the_stack_has_not_is_refused_and_a_gated_model_kept_out_is_too():
    assert errors_of(stack({**PHI, "useHfToken": True})) == [
        "workspaces[0].useHfToken: the stack has no hfToken: run `pulumi config set --secret hfToken <token>`, or "
        "remove useHfToken"
    ]
    [refused] = errors_of(stack({**LLAMA, "useHfToken": False}), hf_token="hf_x")
    assert refused.startswith(
        "workspaces[0].model: KAITO admits this, but llama-3.1-8b-instruct is gated on Hugging Face"
    )


def test_stacks_of_older_generations_keep_giving_the_token_to_every_download():
    """What generation 1 and 2 stacks with a token run today (KAITO 0.12 downloads every preset):
    each model has its Secret, and `validate` says which carry one they do not need."""
    for generation in (None, 2):
        ev = run(stack(PHI, LLAMA, generation=generation), hf_token="hf_x")
        assert sorted(s.name for s in ev.of_type(SECRET)) == ["llm/llama/llama-hf-token", "llm/phi/phi-hf-token"]
    assert warnings_of(stack(PHI, generation=None), hf_token="hf_x", unsized=False) == []


def test_validate_tells_an_older_stack_with_a_token_which_models_carry_it_without_needing_it(tmp_path: Path):
    cfg = stack(PHI, QWEN, LLAMA, generation=None)
    text = yaml.safe_dump({"config": {**cfg, "kaito-aks:hfToken": {"secure": "v1:AAAA"}}})
    (tmp_path / "Pulumi.old.yaml").write_text(text)
    (tmp_path / "Pulumi.new.yaml").write_text(
        text.replace("kaito-aks:cluster", "kaito-aks:defaults: 3\n  kaito-aks:cluster")
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["validate", "old", "new", "--dir", str(tmp_path)]) == 0
    said = out.getvalue()
    assert (
        "old: defaults generation 1: hfToken goes to every model whose weights are downloaded at start-up, also to "
        "phi, qwen, which need none; setting it first on a running stack replaces those models. `useHfToken: false` "
        "on them keeps them out; a new stack writes `kaito-aks:defaults: 3`, which gives it only to the models that "
        "need it (docs/upgrading.md)"
    ) in said
    assert "new: defaults generation" not in said
