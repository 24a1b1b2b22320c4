"""No existing stack sees its cluster, node pools or resource group replaced by this program, and
no resource of any type that the previous release deployed is replaced or deleted.

The baseline is what the example AKS stacks deployed before issue 29 (tests/data/deployed: the
Azure renders and stack files of commit 8eca9d3, with provenance). Today's program renders each
stack from today's stack file and from the stack file of then; the test then does what the
engine and pulumi-azure-native would do with the two: apply the new ignoreChanges (the old value
kept, or the path dropped), diff the inputs leaf by leaf, and call a change a replacement when it
touches a property pulumi-azure-native replaces on (tests/data/azure_native_force_new.yaml, both
generations of its rules, any change at, above or under one) or one of the program's own
replaceOnChanges paths; a resource that is gone under its old name and parent is a replacement
too. The negative controls show the simulation catches each kind.

The second baseline is the previous release, every stack and every type (tests/data/released:
the renders and stack files of the commit before this change, copied by
scripts/released_renders.py; refresh it with that script at each release): Azure resources as
above, Kubernetes objects by pulumi-kubernetes' replace rules (tests/data/kubernetes_force_new.yaml)
and their replaceOnChanges, Helm releases, waits and manifests by identity (file, type, parent),
and any change of a Kubernetes provider's configuration."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.errors import StackConfigError
from stacks.evaluate import evaluate
from stacks.render import render_files
from stacks.stackfile import read_stack_file
from tests.conftest import ROOT

DEPLOYED = ROOT / "tests" / "data" / "deployed"
FORCE_NEW = yaml.safe_load((ROOT / "tests" / "data" / "azure_native_force_new.yaml").read_text())["types"]
PROVENANCE = yaml.safe_load((DEPLOYED / "provenance.yaml").read_text())
STACKS = sorted(PROVENANCE["stacks"])
GUARDED = (
    "azure-native:containerservice:ManagedCluster",
    "azure-native:containerservice:AgentPool",
    "azure-native:resources:ResourceGroup",
)
Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Resource:
    """One Azure resource of a render: where it sits (its file names type and name; its parent
    component), its inputs and options."""

    file: str
    type: str
    component: str | None
    inputs: dict[str, Any]
    options: dict[str, Any]


def deployed(stack: str) -> dict[str, Resource]:
    """The baseline: what the stack deployed then."""
    found = {}
    for rel, entry in PROVENANCE["stacks"][stack].items():
        if not rel.startswith("azure/"):
            continue
        body = yaml.safe_load((DEPLOYED / stack / rel).read_text())
        found[rel] = Resource(rel, body["type"], entry["component"], body["properties"], entry["options"])
    return found


def rendered(stack: str, root: Path = ROOT) -> dict[str, Resource]:
    """Today's program's Azure resources for a stack file (today's, or `root`'s)."""
    f = read_stack_file(stack, root)
    files = {k: yaml.safe_load(v) for k, v in render_files(evaluate(f.config, stack=stack, secrets=f.secrets)).items()}
    order = files["order.yaml"]["resources"]
    return {
        rel: Resource(rel, body["type"], order[rel]["component"], body["properties"], order[rel]["options"])
        for rel, body in files.items()
        if rel.startswith("azure/")
    }


# ---------------------------------------------------------------- the engine's and the provider's rules


def _split(path: str) -> Path_:
    """networkProfile.networkPolicy -> ("networkProfile", "networkPolicy")."""
    return tuple(path.split("."))


def ignore_changes(old: dict[str, Any], new: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """The engine's ignoreChanges: each path takes its old value, or is dropped when the old
    inputs lack it (pulumi's processIgnoreChanges)."""
    out = copy.deepcopy(new)
    for path in paths:
        keys = _split(path)
        source: Any = old
        for k in keys:
            source = source.get(k) if isinstance(source, dict) else None
        target: Any = out
        for k in keys[:-1]:
            if not isinstance(target, dict):
                break
            target = target.setdefault(k, {}) if source is not None else target.get(k)
        if not isinstance(target, dict):
            continue
        if source is None:
            target.pop(keys[-1], None)
        else:
            target[keys[-1]] = copy.deepcopy(source)
    return out


def diff(old: Any, new: Any, at: Path_ = ()) -> list[tuple[Path_, str]]:
    """(path, ADD | DELETE | UPDATE) of every difference, as the provider's objectDiff finds
    them: objects key by key, arrays element by element, anything else whole."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[Path_, str]] = []
        for k in sorted(set(old) | set(new)):
            if k not in new:
                out.append(((*at, k), "DELETE"))
            elif k not in old:
                out.append(((*at, k), "ADD"))
            else:
                out += diff(old[k], new[k], (*at, k))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = [((*at, i), "ADD") for i in range(len(old), len(new))]
        out += [((*at, i), "DELETE") for i in range(len(new), len(old))]
        for i in range(min(len(old), len(new))):
            out += diff(old[i], new[i], (*at, i))
        return out
    return [] if old == new else [(at, "UPDATE")]


def _key(path: Path_) -> Path_:
    """A diff path as the provider's replace keys write it (array indexes as [])."""
    out: list[str | int] = []
    for part in path:
        if isinstance(part, int):
            out[-1] = f"{out[-1]}[]"
        else:
            out.append(part)
    return tuple(out)


def _touches(path: Path_, key: Path_) -> bool:
    """A change at `path` touches `key` at, above or under it (stricter than the provider, which
    replaces on an ADD or DELETE above a key only when that parent is a key itself)."""
    n = min(len(path), len(key))
    return path[:n] == key[:n]


def _under(path: Path_, key: Path_) -> bool:
    """A change at `path` is at or under `key`: the engine's replaceOnChanges rule
    (applyReplaceOnChanges: PropertyPath.Contains of the diff's path)."""
    return path[: len(key)] == key


def replacements(old: Resource, new: Resource) -> list[str]:
    """Why the engine would replace `old` by `new` (empty: an update, or nothing)."""
    rules = FORCE_NEW[new.type]
    inputs = ignore_changes(old.inputs, new.inputs, new.options.get("ignoreChanges", []))
    provider = [_split(k.replace("[]", "[]")) for k in rules["forceNew"]] + [(p,) for p in rules["pathParameters"]]
    ours = [_split(p) for p in new.options.get("replaceOnChanges", [])]
    why = []
    for path, kind in diff(old.inputs, inputs):
        key = _key(path)
        hit = next((k for k in provider if _touches(key, k)), None)
        if hit is not None:
            why.append(f"{kind} {'.'.join(map(str, path))}: pulumi-azure-native replaces on {'.'.join(hit)}")
        hit = next((k for k in ours if _under(path, k)), None)
        if hit is not None:
            why.append(f"{kind} {'.'.join(map(str, path))}: the program's replaceOnChanges {'.'.join(hit)}")
    return why


def replaced(before: dict[str, Resource], after: dict[str, Resource]) -> dict[str, list[str]]:
    """Every guarded resource of `before` the update would replace, with why."""
    found: dict[str, list[str]] = {}
    for rel, old in before.items():
        if old.type not in GUARDED:
            continue
        new = after.get(rel)
        if new is None or new.component != old.component:
            where = "gone" if new is None else f"now under {new.component}, was {old.component} (no alias)"
            found[rel] = [f"{where}: a delete and a create"]
            continue
        why = replacements(old, new)
        if why:
            found[rel] = why
    return found


# ---------------------------------------------------------------- the existing stacks


@pytest.fixture(scope="module", params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return request.param


def test_the_baseline_is_the_committed_render_of_then():
    assert PROVENANCE["commit"].startswith("8eca9d3")
    assert STACKS == ["addon", "auto", "dev", "hf", "prod"]
    import hashlib

    for stack, files in PROVENANCE["stacks"].items():
        for rel, entry in files.items():
            assert hashlib.sha256((DEPLOYED / stack / rel).read_bytes()).hexdigest() == entry["sha256"], (stack, rel)
        assert {r.type for r in deployed(stack).values()} >= {GUARDED[0], GUARDED[2]}


def test_no_existing_stack_sees_its_cluster_pools_or_group_replaced(stack: str):
    """Today's program with today's stack file: the secure defaults are updates in place."""
    before, after = deployed(stack), rendered(stack)
    assert replaced(before, after) == {}
    # and the cluster does change: the defaults that apply in place are in the update
    changes = {".".join(map(str, p)) for p, _ in diff(before["azure/containerservice_ManagedCluster-cluster.yaml"].inputs, after["azure/containerservice_ManagedCluster-cluster.yaml"].inputs)}  # fmt: skip
    assert {"aadProfile", "disableLocalAccounts", "autoUpgradeProfile"} <= changes


def test_an_unchanged_stack_file_of_then_keeps_working_without_a_replacement(stack: str):
    """Today's program with the stack file as it was (an existing stack nobody edited)."""
    assert replaced(deployed(stack), rendered(stack, DEPLOYED / stack)) == {}


def test_the_policy_engine_of_an_existing_cluster_is_left_as_it_was():
    before, after = deployed("dev"), rendered("dev")
    cluster = "azure/containerservice_ManagedCluster-cluster.yaml"
    sent = ignore_changes(before[cluster].inputs, after[cluster].inputs, after[cluster].options["ignoreChanges"])
    assert "networkPolicy" not in sent["networkProfile"]
    assert sent["networkProfile"] == before[cluster].inputs["networkProfile"]
    assert after[cluster].inputs["networkProfile"]["networkPolicy"] == "cilium"  # what a new cluster gets


# ---------------------------------------------------------------- the negative controls


CLUSTER = "azure/containerservice_ManagedCluster-cluster.yaml"


def with_cluster(resources: dict[str, Resource], **changes: Any) -> dict[str, Resource]:
    old = resources[CLUSTER]
    out = dict(resources)
    out[CLUSTER] = Resource(
        old.file, old.type, old.component, changes.get("inputs", old.inputs), changes.get("options", old.options)
    )
    return out


def test_the_simulation_catches_a_policy_engine_added_without_ignore_changes():
    before, after = deployed("prod"), rendered("prod")
    options = {**after[CLUSTER].options, "ignoreChanges": ["agentPoolProfiles"]}
    found = replaced(before, with_cluster(after, options=options))
    assert found[CLUSTER] == [
        "ADD networkProfile.networkDataplane: pulumi-azure-native replaces on networkProfile",
        "ADD networkProfile.networkPolicy: pulumi-azure-native replaces on networkProfile",
    ]


def rendered_with(stack: str, **aks: Any) -> dict[str, Resource]:
    """Today's program for a stack file whose cluster.aks section says `aks` on top."""
    f = read_stack_file(stack)
    config = copy.deepcopy(f.config)
    config["kaito-aks:cluster"]["aks"].update(aks)
    files = {k: yaml.safe_load(v) for k, v in render_files(evaluate(config, stack=stack, secrets=f.secrets)).items()}
    order = files["order.yaml"]["resources"]
    return {
        rel: Resource(rel, body["type"], order[rel]["component"], body["properties"], order[rel]["options"])
        for rel, body in files.items()
        if rel.startswith("azure/")
    }


def test_the_simulation_catches_a_private_api_server_turned_on_for_an_existing_cluster():
    for stack in ("dev", "prod"):  # without an access profile before, and with authorized ranges in the config
        found = replaced(deployed(stack), rendered_with(stack, apiServer={"private": True}))
        assert found == {
            CLUSTER: ["ADD apiServerAccessProfile: the program's replaceOnChanges apiServerAccessProfile"]
        }, stack


def test_the_simulation_catches_a_create_only_change_and_a_move():
    before, after = deployed("prod"), rendered("prod")
    pool = "azure/containerservice_AgentPool-a100.yaml"
    bigger = dict(after)
    bigger[pool] = Resource(pool, after[pool].type, after[pool].component, {**after[pool].inputs, "vmSize": "Standard_NC48ads_A100_v4"}, after[pool].options)  # fmt: skip
    assert replaced(before, bigger)[pool] == [
        "UPDATE vmSize: pulumi-azure-native replaces on vmSize",
        "UPDATE vmSize: the program's replaceOnChanges vmSize",
    ]
    zoned = rendered_with("dev")
    assert replaced(deployed("dev"), zoned) == {}
    moved = dict(after)
    moved[CLUSTER] = Resource(CLUSTER, after[CLUSTER].type, "kaito-aks:index:Elsewhere::cluster", after[CLUSTER].inputs, after[CLUSTER].options)  # fmt: skip
    assert "a delete and a create" in replaced(before, moved)[CLUSTER][0]
    gone = {k: v for k, v in after.items() if k != "azure/resources_ResourceGroup-cluster-rg.yaml"}
    assert replaced(before, gone) == {"azure/resources_ResourceGroup-cluster-rg.yaml": ["gone: a delete and a create"]}


# ---------------------------------------------------------------- the previous release: every stack, every type

RELEASED = ROOT / "tests" / "data" / "released"
RELEASED_PROVENANCE = yaml.safe_load((RELEASED / "provenance.yaml").read_text())
RELEASED_STACKS = sorted(RELEASED_PROVENANCE["stacks"])
KUBE_FORCE_NEW = yaml.safe_load((ROOT / "tests" / "data" / "kubernetes_force_new.yaml").read_text())
KINDS = ("azure/", "kubernetes/", "helm/", "providers/", "waits/", "manifests/")


def _kube_type(body: dict[str, Any]) -> str:
    """The Pulumi type token of a Kubernetes object as its render writes it (apiVersion, kind)."""
    group_version = str(body["apiVersion"])
    return f"kubernetes:{group_version if '/' in group_version else 'core/' + group_version}:{body['kind']}"


def _resources(files: dict[str, Any]) -> dict[str, Resource]:
    """Every registered resource of a render (a file per resource), with its parent and options."""
    order = files["order.yaml"]["resources"]
    out: dict[str, Resource] = {}
    for rel, body in files.items():
        if not rel.startswith(KINDS):
            continue
        if rel.startswith("kubernetes/"):
            kind, inputs = _kube_type(body), {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
        elif rel.startswith("helm/"):
            kind, inputs = "kubernetes:helm.sh/v3:Release", body
        else:
            kind, inputs = body["type"], body["properties"]
        out[rel] = Resource(rel, kind, order[rel]["component"], inputs, order[rel]["options"])
    return out


def released(stack: str) -> dict[str, Resource]:
    """What the previous release deployed for the stack: its committed renders."""
    files = {
        rel: yaml.safe_load((RELEASED / stack / rel).read_text())
        for rel in RELEASED_PROVENANCE["stacks"][stack]
        if rel == "order.yaml" or rel.startswith(KINDS)
    }
    return _resources(files)


def rendered_all(stack: str, root: Path = ROOT) -> dict[str, Resource]:
    """Today's program's resources of every type for a stack file (today's, or `root`'s)."""
    f = read_stack_file(stack, root)
    ev = evaluate(f.config, stack=stack, secrets=f.secrets)
    return _resources({k: yaml.safe_load(v) for k, v in render_files(ev).items()})


def replaced_any(before: dict[str, Resource], after: dict[str, Resource]) -> dict[str, list[str]]:
    """Every resource of `before`, of whatever type, that the update would delete or replace."""
    found: dict[str, list[str]] = {}
    for rel, old in before.items():
        new = after.get(rel)
        if new is None or new.component != old.component or new.type != old.type:
            where = (
                "gone" if new is None else f"now {new.type} under {new.component}, was {old.type} under {old.component}"
            )
            found[rel] = [f"{where}: a delete and a create"]
            continue
        why = _why_replaced(old, new)
        if why:
            found[rel] = why
    return found


def _why_replaced(old: Resource, new: Resource) -> list[str]:
    if old.type.startswith("azure-native:"):
        assert old.type in FORCE_NEW, f"{old.type}: no replacement rules in tests/data/azure_native_force_new.yaml"
        return replacements(old, new)
    inputs = ignore_changes(old.inputs, new.inputs, new.options.get("ignoreChanges", []))
    changes = diff(old.inputs, inputs)
    if old.type == "pulumi:providers:kubernetes":
        return [f"{kind} {'.'.join(map(str, p))}: a provider's new configuration" for p, kind in changes]
    ours = [_split(p) for p in new.options.get("replaceOnChanges", [])]
    theirs = []
    if old.file.startswith("kubernetes/"):
        theirs = [_split(p) for p in [*KUBE_FORCE_NEW["metadata"], *KUBE_FORCE_NEW["kinds"].get(old.type, [])]]
    why = []
    for path, kind in changes:
        hit = next((k for k in theirs if _touches(path, k)), None)
        if hit is not None:
            why.append(f"{kind} {'.'.join(map(str, path))}: pulumi-kubernetes replaces on {'.'.join(hit)}")
        hit = next((k for k in ours if _under(path, k)), None)
        if hit is not None:
            why.append(f"{kind} {'.'.join(map(str, path))}: the program's replaceOnChanges {'.'.join(hit)}")
    return why


# Stack files of then that no `pulumi up` could finish, refused today for that reason: prod's only
# authorized range was the documentation placeholder 203.0.113.0/24 (issue 37).
NEVER_DEPLOYED = {"prod": "203.0.113.0/24 is a documentation range"}


@pytest.fixture(scope="module", params=RELEASED_STACKS)
def released_stack(request: pytest.FixtureRequest) -> str:
    return request.param


def test_the_previous_release_is_every_stacks_committed_render_of_then():
    import hashlib

    assert RELEASED_STACKS == ["addon", "auto", "byo", "dev", "e2e", "hf", "karpenter", "prod", "serving"]
    for stack, files in RELEASED_PROVENANCE["stacks"].items():
        for rel, entry in files.items():
            assert hashlib.sha256((RELEASED / stack / rel).read_bytes()).hexdigest() == entry["sha256"], (stack, rel)
    kinds = {r.file.split("/")[0] for stack in RELEASED_STACKS for r in released(stack).values()}
    assert kinds == {k.rstrip("/") for k in KINDS}


def test_no_resource_of_the_previous_release_is_replaced_or_deleted(released_stack: str):
    """Today's program with today's stack file and with the stack file as the release had it:
    every Azure resource, Kubernetes object, Helm release, provider and wait of then is still
    there, under the same parent, and none is replaced."""
    before = released(released_stack)
    assert replaced_any(before, rendered_all(released_stack)) == {}
    if released_stack in NEVER_DEPLOYED:
        with pytest.raises(StackConfigError) as err:
            rendered_all(released_stack, RELEASED / released_stack)
        assert NEVER_DEPLOYED[released_stack] in str(err.value)
        return
    assert replaced_any(before, rendered_all(released_stack, RELEASED / released_stack)) == {}


def test_the_simulation_catches_every_kind_of_replacement_of_any_type():
    before = released("serving")
    after = dict(before)
    secret = "kubernetes/kaito-gateway/Secret-kaito-gateway-key-ci.yaml"
    after[secret] = Resource(secret, before[secret].type, before[secret].component, {**before[secret].inputs, "type": "kubernetes.io/tls"}, before[secret].options)  # fmt: skip
    service = "kubernetes/llm/Service-phi-4-mini.yaml"
    moved = {**before[service].inputs, "metadata": {**before[service].inputs["metadata"], "namespace": "other"}}
    after[service] = Resource(service, before[service].type, before[service].component, moved, before[service].options)
    provider = "providers/kubernetes-cluster.yaml"
    after[provider] = Resource(
        provider, before[provider].type, before[provider].component, {"context": "elsewhere"}, {}
    )
    del after["helm/keda-keda.yaml"]
    found = replaced_any(before, after)
    assert found[secret] == ["UPDATE type: pulumi-kubernetes replaces on type"]
    assert found[service] == ["UPDATE metadata.namespace: pulumi-kubernetes replaces on metadata.namespace"]
    assert found[provider] == [
        "ADD context: a provider's new configuration",
        "DELETE kubeconfig: a provider's new configuration",
    ]
    assert found["helm/keda-keda.yaml"] == ["gone: a delete and a create"]
    assert set(found) == {secret, service, provider, "helm/keda-keda.yaml"}


def test_a_tier_and_key_vault_add_on_the_stack_file_does_not_set_are_left_alone():
    """Not written for a stack that does not set them, and ignored: the release that wrote them
    (Free, the add-on off) sees no diff; one that never wrote them sends none."""
    cluster = "azure/containerservice_ManagedCluster-cluster.yaml"
    for before, after in ((released("serving")[cluster], rendered_all("serving")[cluster]), (deployed("dev")[CLUSTER], rendered("dev")[CLUSTER])):  # fmt: skip
        sent = ignore_changes(before.inputs, after.inputs, after.options["ignoreChanges"])
        assert sent.get("sku") == before.inputs.get("sku")
        keyvault = "azureKeyvaultSecretsProvider"
        assert sent["addonProfiles"].get(keyvault) == before.inputs.get("addonProfiles", {}).get(keyvault)
    assert "sku" not in deployed("dev")[CLUSTER].inputs  # (8eca9d3 never wrote it)
    assert released("prod")[cluster].inputs["sku"] == rendered_all("prod")[cluster].inputs["sku"]  # set: written
