"""Every rule about one model, checked before anything is registered: what KAITO's admission
webhook would deny (api/v1beta1/workspace_validation.go and the inference-config checks, per
release), what KAITO's estimator could not place on the GPU pools the model is given, and what
this component cannot build. The stack config, a Python program and a YAML program calling the
component provider all get these same checks. Here: the model's names and what it serves;
model/config.py: what KAITO reads of its config; model/placement.py: where it runs and fits."""

from __future__ import annotations

from collections.abc import Iterator

from kaito_aks import catalog, policy
from kaito_aks.endpoints import load_balancer_problems, load_balancer_warnings
from kaito_aks.model.config import decoded_problems, max_model_len_problems, runtime_config_problems, tuning_problems
from kaito_aks.model.names import MAX_WORKSPACE_NAME, RESERVED_NAMESPACES, workspace_names
from kaito_aks.model.placement import (
    cpu_on_gpu_pools,
    instance_type_problems,
    may_use_gpu_nodes,
    placement_problems,
    pool_problems,
    unsized,
)
from kaito_aks.model.serving import serving_problems, serving_warnings
from kaito_aks.model.spec import MAX_ADAPTER_NAME_WITH_PULL_SECRETS, KaitoModelArgs, chart_of, is_hugging_face_id
from kaito_aks.nodes import node_groups_problems
from kaito_aks.problems import Problem, shown


def model_findings(args: KaitoModelArgs) -> list[Problem]:
    """Everything the rules say of the model (its args already have the right types): errors and
    warnings alike, each by its code; `kaito_aks.policy` tells them apart."""
    chart = chart_of(args)
    problems: list[Problem] = []
    unsupported = catalog.unsupported_kaito_version(args.kaito_version)
    if unsupported is not None:
        problems.append(Problem.at("kaito_version", unsupported, "version"))
    problems += [
        *_names(args, chart),
        *_source(args, chart),
        *placement_problems(args, chart),
        *tuning_problems(args, chart),
        *load_balancer_problems(args.load_balancer),
        *load_balancer_warnings(args.load_balancer),
        *serving_problems(args),
        *serving_warnings(args),
        *_one_replica_served(args, chart),
        *_streaming(args),
    ]
    problems += node_groups_problems(args.node_groups or [])  # a pool described by hand, as GpuNodePool checks it
    # Sizing means something only on sound args; a missing token changes nothing it reads.
    sizable = all(p.code in SIZING_UNAFFECTED or policy.is_warning(p) for p in problems)
    if chart is not None and args.node_provisioning == "auto" and sizable:
        problems += list(instance_type_problems(args, chart))
    if chart is not None and args.node_groups is not None and sizable:
        problems += list(pool_problems(args, chart, args.node_groups))
    if args.node_groups is not None:
        problems += list(cpu_on_gpu_pools(args, args.node_groups))
    problems += _unchecked(args, chart)
    problems += policy.bypass_problems(args.bypass_checks, policy.MODEL_RULES)
    return problems


# Problems that leave KAITO's sizing of the model unchanged, so it is judged with them.
SIZING_UNAFFECTED = frozenset(
    {"gated", "gated-secret", "download-secret", "access-secret", "name-length", "adapter-name-length", "bypass"}
)


def model_verdict(args: KaitoModelArgs) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of the model, by the policy: its `bypass_checks` turn the refusals they
    name into warnings, and every refusal stricter than KAITO says the way past it."""
    return policy.verdict(model_findings(args), args.bypass_checks)


def model_problems(args: KaitoModelArgs) -> list[Problem]:
    """Every rule the model breaks (its args already have the right types)."""
    return model_verdict(args)[0]


def model_warnings(args: KaitoModelArgs) -> list[Problem]:
    """What about the model refuses nothing: settings with no effect, what may be a mistake,
    and what cannot be checked before KAITO sees it. The components log them (pulumi.log.warn)
    and `validate` prints them."""
    return model_verdict(args)[1]


def needs_hf_token(model: str, kaito_version: str) -> bool:
    """Whether serving `model` on a KAITO release needs a Hugging Face token: a preset KAITO's
    webhook denies without one (supported_models.yaml downloadAuthRequired: llama-3.1-8b-instruct
    and llama-3.3-70b-instruct, lines 25 and 35 at v0.8.1, 42 and 52 at v0.11.0, 49 and 59 at
    v0.12.0), a gated Hugging Face repository (catalog/hugging_face_models.yaml `gated`), or any
    preset that downloads its weights on a release whose webhook asks a secret of every download
    (0.6). A program with one token for many models gives it to these, and to a private
    repository's model: a Workspace's preset is replaced, not patched, so a model given a token it
    does not need is replaced when the token is first added."""
    chart = catalog.kaito_charts().get(kaito_version)
    if chart is None:
        return False
    preset = catalog.find_preset(model, chart.preset_catalog)
    if preset is None:  # (0.11+) a Hugging Face id KAITO sizes itself: gated if its repository is known to be
        return chart.accepts_hugging_face_ids and model.lower() in catalog.gated_models()
    needed = preset.auth_required or preset.gated or chart.secret_for_every_download
    return preset.download_at_runtime and needed


def _unchecked(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """What cannot be checked here: a Hugging Face id KAITO sizes itself, a GPU preset on
    bring-your-own nodes the model was not told of, a CPU model whose pools are not known."""
    model = args.model or ""
    if args.image:
        yield from may_use_gpu_nodes(args)
        return
    if chart is None or not model:
        return
    yield from unsized(args, chart)
    if not is_hugging_face_id(model, chart) or catalog.find_preset(model, chart.preset_catalog) is not None:
        return
    yield Problem.at(
        "model",
        f"{model} is not in KAITO {chart.version}'s model catalog: KAITO sizes it from Hugging Face when the "
        "Workspace is created, so its size, context window, runtimes and architecture are not checked here "
        "(nor whether it fits the GPU nodes); KAITO's admission webhook must reach huggingface.co over HTTPS "
        "from the KAITO controller pod within the API server's 10 s webhook timeout, and a gated or private "
        "repository needs `hf_token` or `model_access_secret`",
        "hugging-face-unchecked",
    )


def _one_replica_served(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """KAITO 0.6's pods carry only their Workspace's name, so one Service cannot select every
    replica's: the model's Service reaches the first."""
    if chart is None or chart.pod_group_label or args.tuning is not None or args.replicas < 2:
        return
    name = args.name or ""
    others = f"{name}-1" if args.replicas == 2 else f"{name}-1 ... {name}-{args.replicas - 1}"
    yield Problem.at(
        "replicas",
        f"KAITO {chart.version}'s pods carry only their Workspace's name (kaito.sh/workspace), so the model's Service "
        f"{name} reaches replica {name}-0 only; the others answer at KAITO's own Services ({others})",
        "first-replica-served",
    )


def _names(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    if args.namespace in RESERVED_NAMESPACES:
        yield Problem.at(
            "namespace",
            f"{args.namespace} belongs to the cluster or an operator release (KAITO admits it): use a namespace of your "
            "own",
            "namespace",
        )
    names = workspace_names(args, chart) if chart is not None and args.name is not None else []
    if not names:
        return
    longest = max(names, key=len)
    if len(longest) > MAX_WORKSPACE_NAME:
        yield Problem.at(
            "name",
            f"KAITO admits this, but Workspace name {longest!r} would be {len(longest)} characters, and the pods of "
            f"its StatefulSet get a controller-revision-hash label of the name and a 10-character hash, which "
            f"Kubernetes refuses past 63 characters (kubernetes/kubernetes#64023), so they are never created: shorten "
            f"the name to at most {MAX_WORKSPACE_NAME}",
            "name-length",
        )


def _source(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    """What it serves: a preset (or Hugging Face id) of the release, or a custom image."""
    if args.model and args.image:
        yield Problem.at((), "give `model` (a KAITO preset) or `image` (a custom serving image), not both", "source")
    elif not args.model and not args.image:
        yield Problem.at((), "give `model` (a KAITO preset) or `image` (a custom serving image)", "source")
    elif args.image:
        yield from _image_only(args)
    else:
        yield from _preset(args, chart)


def _image_only(args: KaitoModelArgs) -> Iterator[Problem]:
    """What applies to presets only, given for a custom image (no effect: a template serves itself);
    and its resources as KAITO decodes them."""
    if args.runtime is not None:
        yield Problem.at(
            "runtime",
            "selects how KAITO serves a preset; a custom image serves itself, so it has no effect",
            "image-only",
        )
    if args.adapters:
        yield Problem.at("adapters", "apply to presets only; with a custom image they have no effect", "image-only")
    if args.config is not None:
        yield Problem.at(
            "config",
            "runtime parameters apply to presets only; with a custom image they have no effect (configure the image)",
            "image-only",
        )
    if args.model_access_secret:
        yield Problem.at(
            "model_access_secret", "applies to presets only; with a custom image it has no effect", "image-only"
        )
    if args.resources is not None:
        yield from decoded_problems(("resources",), args.resources, "ResourceRequirements")


def _preset(args: KaitoModelArgs, chart: catalog.KaitoChart | None) -> Iterator[Problem]:
    model = args.model or ""
    if args.compute == "cpu":
        yield Problem.at(
            "compute",
            f"preset {model!r} needs GPUs; for CPU serving give `image` (a llama.cpp/GGUF image, e.g. "
            "ghcr.io/kaito-project/aikit/llama3.2:1b) instead of `model`, or use compute gpu",
            "cpu-preset",
        )
    yield from runtime_config_problems(args, chart)
    yield from _adapter_names(args)
    if chart is None:
        return
    preset = catalog.find_preset(model, chart.preset_catalog)
    if preset is None:
        yield from _unknown_preset(model, chart)
        return
    yield from _weights_access(args, chart, preset)
    yield from _runtime(args, chart, preset)


def _adapter_names(args: KaitoModelArgs) -> Iterator[Problem]:
    for j, adapter in enumerate(args.adapters):
        if any(a.name == adapter.name for a in args.adapters[:j]):
            yield Problem.at(
                ("adapters", j, "name"),
                f'two adapters are named {adapter.name!r} (KAITO: "Duplicate adapter source name")',
                "adapter-name",
            )
        elif adapter.image_pull_secrets and len(adapter.name) > MAX_ADAPTER_NAME_WITH_PULL_SECRETS:
            yield Problem.at(
                ("adapters", j, "name"),
                f"KAITO admits this, but with `image_pull_secrets` it names a volume "
                f"docker-config-<name>-inference-adapter, over 63 characters for a name of {len(adapter.name)}, and "
                f"Kubernetes refuses the StatefulSet: at most {MAX_ADAPTER_NAME_WITH_PULL_SECRETS} characters",
                "adapter-name-length",
            )


def _unknown_preset(model: str, chart: catalog.KaitoChart) -> Iterator[Problem]:
    """A model the release has no preset for: deprecated, removed, or unknown (a Hugging Face id
    outside KAITO's catalog is not refused: model_warnings says it)."""
    release = chart.preset_catalog
    deprecated = catalog.deprecated_presets(release)
    removed = catalog.removed_presets(release)
    if model in deprecated:
        yield Problem.at(
            "model", f"{model} is deprecated and rejected by KAITO: {deprecated[model]}", "deprecated-preset"
        )
    elif model in removed:
        yield Problem.at(
            "model",
            f'KAITO {chart.version} no longer serves {model} ("Unsupported inference preset name": it has no '
            f"model-catalog entry since {removed[model].removed_in}); keep KAITO 0.8.1 or choose another preset",
            "removed-preset",
        )
    elif not is_hugging_face_id(model, chart):
        close = catalog.closest_presets(model, release)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        yield Problem.at("model", f"unknown KAITO {chart.version} preset {shown(model)}{hint}", "unknown-preset")


def _weights_access(args: KaitoModelArgs, chart: catalog.KaitoChart, preset: catalog.Preset) -> Iterator[Problem]:
    """A token where KAITO downloads the weights and asks for one (or the download needs one); none
    where they ship in an image."""
    model = args.model or ""
    has_token = args.hf_token is not None or bool(args.model_access_secret)
    serving = args.tuning is None
    if preset.auth_required and preset.download_at_runtime and not has_token and serving:
        yield Problem.at(
            "model",
            f'KAITO {chart.version} denies it ("This preset requires authentication and needs a modelAccessSecret"): '
            f"give `hf_token`, or `model_access_secret` (an existing Secret with key HF_TOKEN)",
            "gated-secret",
        )
    elif preset.gated and preset.download_at_runtime and not has_token:
        yield Problem.at(
            "model",
            f"KAITO admits this, but {model} is gated on Hugging Face and KAITO's pod downloads it with the "
            "modelAccessSecret's token only (answered 401 without one): give `hf_token`, or `model_access_secret` (an "
            "existing Secret with key HF_TOKEN)",
            "gated",
        )
    elif chart.secret_for_every_download and preset.download_at_runtime and not has_token:
        yield Problem.at(
            "model",
            f"KAITO {chart.version} downloads {model} from Hugging Face at start-up and admits it only with a "
            "modelAccessSecret: give `hf_token`, or `model_access_secret` (an existing Secret with key HF_TOKEN)",
            "download-secret",
        )
    if args.model_access_secret and not preset.download_at_runtime and not chart.access_secret_on_any_preset:
        if serving:
            yield Problem.at(
                "model_access_secret",
                f"{model} ships its weights in an image; KAITO {chart.version} denies a modelAccessSecret for it "
                '("This preset does not require a modelAccessSecret")',
                "access-secret",
            )
        else:
            yield Problem.at(
                "model_access_secret",
                "has no effect on a tuning job (KAITO checks and passes the secret for serving only): remove it",
                "access-secret-tuning",
            )


def _runtime(args: KaitoModelArgs, chart: catalog.KaitoChart, preset: catalog.Preset) -> Iterator[Problem]:
    """The runtime the release serves the preset with, and what vLLM does not support."""
    model = args.model or ""
    runtime = args.runtime or "vllm"
    if runtime not in preset.runtimes:
        yield Problem.at(
            "runtime",
            f"KAITO {chart.version} cannot serve {model} with {runtime}; use {' or '.join(preset.runtimes)}",
            "runtime",
        )
    if runtime != "vllm":
        return
    if args.adapters and preset.disallow_lo_ra:
        yield Problem.at(
            "adapters",
            f"vLLM does not support LoRA adapters for {model}; set runtime transformers or drop the adapters",
            "lora",
        )
    for j, adapter in enumerate(args.adapters):
        if adapter.strength is not None:
            yield Problem.at(
                ("adapters", j, "strength"),
                "vLLM does not support adapter strength; remove it or set runtime transformers",
                "strength",
            )
    yield from max_model_len_problems(args, preset)


def _streaming(args: KaitoModelArgs) -> Iterator[Problem]:
    """Weights streamed where KAITO streams them: a release with the gates, a preset (KAITO mirrors
    inference presets only), served by vLLM (the transformers runtime silently downloads instead:
    pkg/workspace/inference/modelstreaming/modelstreaming.go@v0.12.0 ModelStreamingEnabled)."""
    if args.weights_streaming is None:
        return
    from kaito_aks.model_streaming import streaming_problem

    why = streaming_problem(args.kaito_version)
    if why is not None:
        yield Problem.at("weights_streaming", why, "model-streaming")
    elif not args.model or args.tuning is not None:
        yield Problem.at(
            "weights_streaming", "KAITO mirrors and streams the weights of an inference preset only", "model-streaming"
        )
    elif args.runtime == "transformers":
        yield Problem.at(
            "weights_streaming",
            "KAITO streams weights to vLLM only: with the transformers runtime it downloads them at start as before",
            "streaming-runtime",
        )
