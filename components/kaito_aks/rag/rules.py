"""Every rule about one RAG engine, checked before anything is registered: what KAITO's
ragengine admission webhook denies (api/v1alpha1/ragengine_validation.go at 0.8,
api/v1beta1/ragengine_validation.go at 0.11 and 0.12, the same file at both tags; the line of
each rule is beside it), and what
KAITO admits but then mishandles without a word (a size its controller cannot use, a URL its
engine cannot call, a selector label it drops, a crash of the 0.8 webhook). The component and
the provider (any Pulumi language) get these same checks.

What the 0.11+ webhook checks against the cluster (the guardrails ConfigMap exists and holds
guardrails.yaml) stays KAITO's: the component writes the ConfigMap itself when given a
`policy`, and the ragengine chart installs the default one.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

from kaito_aks import catalog, policy
from kaito_aks.capacity import Capacity, pods_of
from kaito_aks.catalog.capacity import pod_requests
from kaito_aks.endpoints import load_balancer_problems, load_balancer_warnings
from kaito_aks.kaito.go_url import parse_request_uri
from kaito_aks.model.names import RESERVED_NAMESPACES
from kaito_aks.problems import Key, PathPart, Problem
from kaito_aks.rag.spec import EFFECTIVE_EMBEDDING_MODEL, EmbeddingArgs, LocalEmbeddingArgs, RagEngineArgs

# KAITO's webhook: an embedding image is a full reference with a tag (ragengine_validation.go).
IMAGE_FORMAT = re.compile(r"(.+/[^:/]+):([^:/]+)")
# The Azure size prefixes the webhook admits beside its GPU table (CLOUD_PROVIDER=azure).
AZURE_PREFIXES = ("Standard_N", "Standard_D")
CHAT_COMPLETIONS = "/chat/completions"


def chart_of(args: RagEngineArgs) -> catalog.RagEngineChart | None:
    return catalog.ragengine_charts().get(args.kaito_version)


def _releases_with(has: Callable[[catalog.RagEngineChart], bool]) -> str:
    """The supported releases whose RAGEngine `has` a feature, as a message names them."""
    names = [v for v, c in catalog.ragengine_charts().items() if has(c)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def effective_embedding(args: RagEngineArgs) -> EmbeddingArgs:
    """The embedding the RAGEngine declares (the default: the model KAITO's engine uses)."""
    return args.embedding or EmbeddingArgs(local=LocalEmbeddingArgs(model_id=EFFECTIVE_EMBEDDING_MODEL))


def rag_engine_findings(args: RagEngineArgs) -> list[Problem]:
    """Everything the rules say of the engine (its args already have the right types): errors and
    warnings alike, each by its code; `kaito_aks.policy` tells them apart."""
    chart = chart_of(args)
    if chart is None:
        unsupported = catalog.unsupported_kaito_version(args.kaito_version)  # the models' words, said once
        supported = ", ".join(catalog.ragengine_charts())
        why = unsupported or (
            f"KAITO {args.kaito_version} has no RAGEngine operator this library installs; use one of: {supported}"
        )
        return [Problem.at("kaito_version", why, "version")]
    return [
        *_namespace(args),
        *_embedding(args, chart),
        *_inference_service(args, chart),
        *_compute(args, chart),
        *_storage(args, chart),
        *_guardrails(args, chart),
        *policy.bypass_problems(args.bypass_checks, [*policy.RAG_RULES, "namespace", "rag-no-pool"]),
        *load_balancer_problems(args.load_balancer),
        *load_balancer_warnings(args.load_balancer),
    ]


def rag_engine_verdict(args: RagEngineArgs) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of the engine, by the policy (its `bypass_checks` turn the refusals they
    name into warnings)."""
    return policy.verdict(rag_engine_findings(args), args.bypass_checks)


def rag_engine_problems(args: RagEngineArgs) -> list[Problem]:
    """Every rule the RAG engine breaks (its args already have the right types)."""
    return rag_engine_verdict(args)[0]


def _namespace(args: RagEngineArgs) -> Iterator[Problem]:
    operator = catalog.ragengine_chart_source().namespace
    if args.namespace in (*RESERVED_NAMESPACES, operator):
        yield Problem.at(
            "namespace",
            f"{args.namespace} belongs to the cluster or an operator release (KAITO admits it): use a namespace of your "
            "own",
            "namespace",
        )


# ---------------------------------------------------------------- embedding


def _embedding(args: RagEngineArgs, chart: catalog.RagEngineChart) -> Iterator[Problem]:
    embedding = effective_embedding(args)
    # 0.8 computes its nested embedding checks and drops the result (ragengine_validation.go
    # L72-77): they are refused here all the same, as 0.11+ refuses them.
    dropped = (
        ""
        if chart.embedding_checked
        else f" (KAITO {chart.version}'s webhook drops this check and its controller reads none of it, so it has no "
        "effect; 0.11+ denies it)"
    )
    local_code, image_code, url_code = (
        ("embedding-local", "embedding-image", "embedding-url")
        if chart.embedding_checked
        else ("embedding-dropped",) * 3
    )
    # ragengine_validation.go 0.8.1 L65-70, 0.11.0/0.12.0 L73-78
    if embedding.local is None and embedding.remote is None:
        yield Problem.at(
            "embedding",
            'give `local` or `remote` (KAITO: "Either remote embedding or local embedding '
            'must be specified, not neither")',
            "embedding",
        )
    if embedding.local is not None and embedding.remote is not None:
        yield Problem.at(
            "embedding",
            'give `local` or `remote`, not both (KAITO: "Either remote embedding or local '
            'embedding must be specified, but not both")',
            "embedding",
        )
    local = embedding.local
    if local is not None:
        # 0.8.1 L107-127, 0.11.0/0.12.0 L202-222
        if not local.image and not local.model_id:
            yield Problem.at(("embedding", "local"), f"give `model_id` or `image`{dropped}", local_code)
        if local.image and local.model_id:
            yield Problem.at(("embedding", "local"), f"give `model_id` or `image`, not both{dropped}", local_code)
        if local.image:
            if not IMAGE_FORMAT.fullmatch(local.image):
                yield Problem.at(
                    ("embedding", "local", "image"),
                    f'{local.image!r} is not a full image reference with a tag (registry/repository:tag; KAITO: "Invalid '
                    f'image format, require full input image URL"){dropped}',
                    image_code,
                )
            else:
                repository = local.image.split("/")[-1].split(":")[0]
                if repository != repository.lower():
                    yield Problem.at(
                        ("embedding", "local", "image"),
                        f"repository name {repository!r} must be lowercase{dropped}",
                        image_code,
                    )
    if embedding.remote is not None:
        # 0.8.1 L129-135, 0.11.0/0.12.0 L224-230
        why = parse_request_uri(embedding.remote.url)
        if why is not None:
            yield Problem.at(
                ("embedding", "remote", "url"),
                f'{embedding.remote.url!r} is not a URL KAITO accepts ("URL input error": {why}){dropped}',
                url_code,
            )


# ---------------------------------------------------------------- the LLM


def _inference_service(args: RagEngineArgs, chart: catalog.RagEngineChart) -> Iterator[Problem]:
    service = args.inference_service
    if service is None:
        if chart.inference_service_required:
            # 0.8.1 L57-60: "InferenceService must be specified", then a nil dereference
            yield Problem.at(
                "inference_service",
                f'required on KAITO {chart.version}: its RAGEngine needs an LLM (KAITO: "InferenceService must be '
                "specified\"); give the chat completions URL of a model, e.g. a KaitoModel's `endpoint`",
                "inference-service",
            )
        return
    if service.access_secret is not None and service.access_token is not None:
        yield Problem.at(("inference_service",), "give `access_secret` or `access_token`, not both", "access")
    if isinstance(service.url, str):
        problem = inference_url_problem(service.url)
        if problem is not None:
            yield problem.under("inference_service")


def inference_url_problem(url: str) -> Problem | None:
    """What is wrong with an LLM URL (at `url`): KAITO's webhook check (0.8.1 L137-141, 0.11.0/0.12.0
    L232-239), then what the engine needs to call it."""
    why = parse_request_uri(url)
    if why is not None:
        return Problem.at("url", f'{url!r} is not a URL KAITO accepts ("URL input error": {why})', "url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return Problem.at(
            "url",
            f"KAITO admits this, but the engine POSTs its requests to {url!r}, which is no http(s) URL with a host: "
            "give one, e.g. a KaitoModel's `endpoint`",
            "url-scheme",
        )
    if CHAT_COMPLETIONS not in parts.path:
        return Problem.at(
            "url",
            f"{url!r} is no chat completions URL: the engine then calls the LLM in completion mode, and answers a "
            f'chat completion passed through with 400 ("Chat completions not supported through endpoint"): give the '
            "LLM's .../v1/chat/completions URL if it has one (a KaitoModel's `endpoint` is one)",
            "url-completions",
        )
    return None


# ---------------------------------------------------------------- the node


def _compute(args: RagEngineArgs, chart: catalog.RagEngineChart) -> Iterator[Problem]:
    compute = args.compute
    if compute is None:
        if chart.compute_required:
            # 0.8.1 L71: validateRAGCreate on a nil spec.compute (0.11.0 L80-82 checks it is there:
            # kaito#1936, first released in 0.11.0)
            yield Problem.at(
                "compute",
                f"required on KAITO {chart.version}: its webhook reads spec.compute without checking it is there (fixed "
                f"in KAITO 0.11), and its controller needs a GPU node of KAITO's table whichever the embedding; give "
                "`instance_type` and `label_selector`",
                "compute",
            )
        return
    problem = _instance_type(compute.instance_type, chart)
    if problem is not None:
        yield problem.under("compute")
    selector = compute.label_selector
    if not selector.match_labels:
        yield Problem.at(
            ("compute", "label_selector"),
            "has no `match_labels`: KAITO finds (or labels the node it provisions) and places the engine by them, so "
            "any node of the size may take it",
            "rag-selector-broad",
        )
    # 0.8.1 L99-102, 0.11.0/0.12.0 L194-197: metav1.LabelSelectorAsMap must convert the selector
    for i, expression in enumerate(selector.match_expressions or []):
        if expression.operator != "In":
            why = f'operator "{expression.operator}" cannot be converted into the old label selector format'
        elif len(expression.values or []) != 1:
            why = 'operator "In" without a single value cannot be converted into the old label selector format'
        else:
            continue
        yield Problem.at(
            ("compute", "label_selector", "match_expressions", i),
            f"KAITO's webhook refuses it ({why}); use `match_labels`",
            "rag-selector",
        )
    # api/v1beta1/labels.go SanitizedMatchLabels (0.11.0 L157-198, 0.12.0 L218-259), called by
    # ragengine_controller.go L461 and manifests.go L43 at both
    for key in selector.match_labels or {}:
        if key in chart.dropped_selector_labels:
            yield Problem(
                ("compute", "label_selector", "match_labels", Key(key)),
                f"KAITO {chart.version} reserves this label for its own nodes and silently drops it from the selector, "
                "so it has no effect; select the node by a label of your own",
                "rag-reserved-label",
            )


def table_size(size: str, chart: catalog.RagEngineChart) -> catalog.GpuSku | None:
    """The entry of KAITO's GPU table its RAGEngine controller finds for `size` (GetGPUConfigBySKU:
    exact on 0.8, case-insensitive from 0.11), or None."""
    table = catalog.gpu_skus(chart.sku_catalog)
    if chart.sku_case_sensitive:
        return table.get(size)
    return next((sku for name, sku in table.items() if name.lower() == size.lower()), None)


def gpu_request(args: RagEngineArgs) -> int:
    """The GPUs KAITO's controller requests for the engine's pod (0: none, 0.5 CPU on 0.11+).
    With a local embedding it asks for every GPU of the compute's instance type, so the engine
    takes a whole GPU node of that size: pkg/ragengine/controllers/preset_rag.go v0.8.1 L159-177
    (any local embedding; compute is required there), v0.11.0/v0.12.0 L223-250 (a local
    embedding and compute with an instance type of the GPU table)."""
    chart = chart_of(args)
    if chart is None or args.compute is None or effective_embedding(args).local is None:
        return 0
    sku = table_size(args.compute.instance_type, chart)
    return sku.gpu_count if sku is not None else 0


def _instance_type(size: str, chart: catalog.RagEngineChart) -> Problem | None:
    """0.8.1 L82-97, 0.11.0/0.12.0 L177-192: a size of KAITO's GPU table, or an Azure N- or
    D-series size (0.8 case-sensitively, 0.11+ not); 0.8's controller then fails on any size
    outside the table."""
    table = catalog.gpu_skus(chart.sku_catalog)
    if chart.sku_case_sensitive:
        in_table, prefixed = size in table, size.startswith(AZURE_PREFIXES)
    else:
        folded = size.lower()
        in_table = folded in {s.lower() for s in table}
        prefixed = folded.startswith(tuple(p.lower() for p in AZURE_PREFIXES))
    if in_table:
        return None
    close = [s for s in catalog.closest_skus(size) if s in table]
    hint = (
        f"; did you mean {close[0]}?" if close else f" (kaito_aks.catalog.gpu_skus({chart.sku_catalog!r}) lists them)"
    )
    if not prefixed:
        return Problem.at(
            "instance_type",
            f'KAITO {chart.version}\'s webhook refuses {size!r} ("Unsupported instance type"): give a GPU size of '
            f"KAITO's table{'' if chart.gpu_table_only else ' or an Azure N- or D-series size'}{hint}",
            "rag-instance-type",
        )
    if chart.gpu_table_only:
        return Problem.at(
            "instance_type",
            f"KAITO admits this ({chart.version}'s webhook takes {size!r}), but its RAGEngine controller fails on "
            f'every size outside KAITO\'s GPU table ("Unsupported SKU"), whichever the embedding: give a GPU size of '
            f"the table{hint}",
            "rag-instance-type-unknown",
        )
    return None


# ---------------------------------------------------------------- storage and guardrails


def _storage(args: RagEngineArgs, chart: catalog.RagEngineChart) -> Iterator[Problem]:
    storage = args.storage
    if storage is None:
        return
    if storage.persistent_volume_claim is None and storage.vector_db is None:
        yield Problem.at(
            "storage",
            "has no effect without `persistent_volume_claim` or `vector_db` (the vectors stay in memory, KAITO's "
            "default): give one, or leave `storage` out",
            "storage",
        )
    if storage.mount_path is not None:
        if storage.persistent_volume_claim is None:
            yield Problem.at(
                ("storage", "mount_path"),
                "mounts `persistent_volume_claim`, so without the claim it has no effect (KAITO mounts an emptyDir, "
                "lost with the pod): give the claim too",
                "storage",
            )
        if not storage.mount_path.startswith("/"):
            yield Problem.at(
                ("storage", "mount_path"),
                f"{storage.mount_path!r} is not an absolute path: KAITO keeps the vectors under <mount_path>/<name>, "
                "which the engine reads from its working directory, so they may not land on the claim; give an "
                "absolute path (default /mnt/data)",
                "storage-mount-path",
            )
    db = storage.vector_db
    if db is None:
        return
    if not chart.vector_db:
        yield Problem.at(
            ("storage", "vector_db"),
            f"KAITO {chart.version}'s RAGEngine has no external vector database (KAITO 0.10+); use KAITO "
            f"{_releases_with(lambda c: c.vector_db)}, or `persistent_volume_claim`",
            "vector-db",
        )
        return
    parts = urlsplit(db.url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parse_request_uri(db.url) is not None:
        yield Problem.at(
            ("storage", "vector_db", "url"),
            f"{db.url!r}: KAITO passes it to the engine unchecked, which connects to the database there and may not "
            "reach it; give an http(s) URL with a host (e.g. http://qdrant.default.svc.cluster.local:6333)",
            "vector-db-url",
        )
    if db.access_secret is not None and db.access_token is not None:
        yield Problem.at(("storage", "vector_db"), "give `access_secret` or `access_token`, not both", "access")


def _guardrails(args: RagEngineArgs, chart: catalog.RagEngineChart) -> Iterator[Problem]:
    guardrails = args.guardrails
    if guardrails is None:
        return
    if not chart.guardrails:
        yield Problem.at(
            "guardrails",
            f"KAITO {chart.version}'s RAGEngine has no guardrails (KAITO 0.11+); use KAITO "
            f"{_releases_with(lambda c: c.guardrails)}",
            "guardrails",
        )
        return
    if guardrails.config_map is not None and guardrails.policy is not None:
        yield Problem.at("guardrails", "give `config_map` or `policy`, not both", "guardrails")
    if args.inference_service is None:
        yield Problem.at(
            "guardrails",
            "guard chat completions, which a retrieve-only engine does not serve, so they have no effect: give "
            "`inference_service`, or leave `guardrails` out",
            "guardrails-unused",
        )


def rag_engine_capacity(args: RagEngineArgs, who: str, at: tuple[PathPart, ...] = ()) -> Capacity:
    """The engine's pod on non-GPU nodes, for the capacity budget: none when it embeds locally on
    a GPU size (it then takes a GPU node: the GPU pools' budget counts it); else the requests
    KAITO's controller gives it (0.11+: 500m and 512Mi; 0.8: none), on the nodes its compute's
    selector picks, with KAITO's GPU tolerations."""
    kinds = pod_requests().pods.rag_engine.get(args.kaito_version)
    if kinds is None or gpu_request(args) > 0:
        return Capacity()
    selector = args.compute.label_selector.match_labels if args.compute is not None else None
    local_on_cpu = args.compute is not None and effective_embedding(args).local is not None
    pods = pods_of(
        [kinds.remote],
        who=f"{who} (a RAG engine)",
        selector=dict(selector or {}),
        tolerates=("sku", "nvidia.com/gpu"),
        at=at,
        model=True,
        bypassed="capacity" in args.bypass_checks,
    )
    if local_on_cpu and kinds.remote.cpu_m:  # 0.11+: a local embedding on a CPU size gets no requests
        pods = tuple(
            dataclasses.replace(p, cpu_m=0, memory_mi=0, source=f"{p.source}: none for a CPU size") for p in pods
        )
    return Capacity(pods=pods)
