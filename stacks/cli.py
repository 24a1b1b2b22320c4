"""`python -m stacks`: render, validate and ask the model catalog without cloud or cluster; status
reads a deployed stack's cluster.

python -m stacks render <stack>... [--out DIR] [--against REF]   desired state as reviewable files
python -m stacks validate <stack>... [--against REF] [--online]  the config checks alone, every error at once
python -m stacks status <stack>... [--watch] [--json]   what the deployed models are doing (reads the cluster)
python -m stacks models list [--version V] [--json]
python -m stacks models estimate <model> [--version V | --stack S] [--pool VMSIZE] [--region R] [--online] [--json]
python -m stacks dashboard                       the Grafana dashboard of the models' metrics (JSON)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kaito_aks import catalog, policy
from kaito_aks.kaito import sizing as kaito_sizing
from stacks.config import StackConfig
from stacks.cost import DEFAULT_REGION, StackCost
from stacks.decide import DEFAULT_KAITO_VERSION
from stacks.stackfile import ROOT, StackFile, StackFileError, read_stack_file, stack_names

ONLINE_HELP = (
    "read Azure: today's prices from the Azure Retail Prices API (public, no credentials; cached with their date "
    "in ~/.cache/kaito-aks/prices)"
)
ORDER = (
    "cheapest first where priced (all the nodes of one instance, pay-as-you-go), then the unpriced by fewest nodes, "
    "then fewest GPUs"
)
AGAINST_HELP = (
    "a git ref (e.g. origin/main): announce every GPU or CPU pool the change since then replaces, with the models "
    "it takes down"
)


def command_line() -> argparse.ArgumentParser:
    """The command line `python -m stacks` takes (the docs' commands are parsed with it in the tests)."""
    assert __doc__ is not None
    parser = argparse.ArgumentParser(prog="python -m stacks", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    render = sub.add_parser("render", help="write a stack's desired state as files (no credentials)")
    render.add_argument("stacks", nargs="*", help="stack names (default: every Pulumi.<stack>.yaml)")
    render.add_argument("--out", type=Path, default=ROOT / "render", help="output directory (default: render/)")
    render.add_argument("--dir", type=Path, default=ROOT, help="where the Pulumi.<stack>.yaml files are")
    render.add_argument("--against", metavar="REF", help=AGAINST_HELP)

    validate = sub.add_parser("validate", help="check stack configs; list every error with its path")
    validate.add_argument("stacks", nargs="*", help="stack names (default: all)")
    validate.add_argument("--dir", type=Path, default=ROOT, help="where the Pulumi.<stack>.yaml files are")
    validate.add_argument("--against", metavar="REF", help=AGAINST_HELP)
    validate.add_argument(
        "--online",
        action="store_true",
        help=ONLINE_HELP + "; and with the Azure CLI's login (az login) the subscription's vCPU quota and the VM sizes "
        "of the stack's region, as `pulumi preview` checks them",
    )

    status = sub.add_parser(
        "status",
        help="what a deployed stack's models are doing, read from its cluster with the stack's credentials",
        description="One line per model and per replica: KAITO's conditions (reasons, ages), pods ready, the nodes "
        "and GPUs they run on, NodeClaims of auto-provisioned nodes, the endpoint and the model id a client sends. "
        "Reads the stack's outputs with the Pulumi CLI (run it where `pulumi up` runs). Exit code: 0 every model "
        "serves, 1 one does not, 2 the status cannot be read.",
    )
    status.add_argument("stacks", nargs="*", help="stack names (default: the selected stack, `pulumi stack select`)")
    status.add_argument("--watch", action="store_true", help="follow until every model serves or one fails")
    status.add_argument("--json", action="store_true", help="JSON for scripts (with --watch: a line per change)")
    status.add_argument(
        "--interval", type=_positive, default=5.0, help="seconds between reads with --watch (default: 5)"
    )
    status.add_argument("--timeout", type=_positive, default=30.0, help="minutes --watch follows at most (default: 30)")
    status.add_argument("--dir", type=Path, default=ROOT, help="the Pulumi project (where its stack files are)")

    docs = sub.add_parser("docs", help="print the config reference (docs/configuration.md, generated from the schema)")
    docs.add_argument(
        "--write", action="store_true", help="write docs/configuration.md and the docs' example blocks (make docs)"
    )

    sub.add_parser(
        "dashboard",
        help="print the Grafana dashboard of the models' vLLM metrics (JSON), e.g. to import into Azure Managed Grafana",
        description="The dashboard a stack with kaito-aks:metrics delivers as a ConfigMap to kube-prometheus-stack's "
        "Grafana: requests running and waiting, time to first token, tokens per second, KV cache use, replicas and "
        "the autoscaler. Import it with `az grafana dashboard import -g <group> -n <grafana> --definition <file>`.",
    )
    models = sub.add_parser("models", help="the models KAITO serves: presets, and from 0.11 its Hugging Face catalog")
    msub = models.add_subparsers(dest="models_command", required=True)
    for name, help_text in (
        ("list", "every model a KAITO version serves, what it needs, its licence and gating"),
        ("estimate", f"every GPU size that holds the model, with KAITO's node count and the price; order: {ORDER}"),
    ):
        p = msub.add_parser(name, help=help_text, description=help_text)
        if name == "estimate":
            p.add_argument("preset", metavar="model", help="a preset name or (0.11+) a catalog Hugging Face id")
            p.add_argument("--pool", metavar="VMSIZE", help="how many nodes of this VM size one instance needs")
            p.add_argument("--region", help=f"the prices' region (default: --stack's region, else {DEFAULT_REGION})")
            p.add_argument(
                "--stack",
                help="the KAITO version and region of this stack (its Pulumi.<stack>.yaml) instead of --version",
            )
            p.add_argument("--online", action="store_true", help=ONLINE_HELP)
            p.add_argument("--dir", type=Path, default=ROOT, help="where the Pulumi.<stack>.yaml files are")
        stack = ", or --stack's" if name == "estimate" else ""
        p.add_argument(
            "--version",
            choices=list(catalog.kaito_charts()),
            help=f"KAITO version (default: the newest this program installs, {newest_kaito()}{stack})",
        )
        p.add_argument("--json", action="store_true", help="JSON instead of a table")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = command_line().parse_args(argv)
    if args.command == "render":
        return _render(args.stacks or stack_names(args.dir), args.out, args.dir, args.against)
    if args.command == "validate":
        return _validate(args.stacks or stack_names(args.dir), args.dir, args.against, online=args.online)
    if args.command == "status":
        from stacks.status import UNREADABLE, StatusError, run, selected_stack

        try:
            stacks = args.stacks or [selected_stack(args.dir)]
            return run(
                stacks,
                args.dir,
                watch=args.watch,
                json_out=args.json,
                interval=args.interval,
                timeout_minutes=args.timeout,
                out=lambda line: print(line, flush=args.watch),  # each change as it comes, into a pipe too
                err=lambda line: print(line, file=sys.stderr),
            )
        except StatusError as err:
            print(err, file=sys.stderr)
            return UNREADABLE
        except KeyboardInterrupt:  # --watch stopped by hand
            return 130
    if args.command == "dashboard":
        from kaito_aks.serving.dashboard import dashboard_json

        sys.stdout.write(dashboard_json())
        return 0
    if args.command == "docs":
        from stacks.docs import config_reference, write

        if args.write:
            write()
        print(config_reference())
        return 0
    if args.models_command == "list":
        return _models_list(args.version or newest_kaito(), args.json, _version_note(args.version, None))
    found = stack_kaito_version(args.stack, args.dir) if args.stack and not args.version else None
    version = args.version or found or newest_kaito()
    if args.stack and not args.version and found is None:
        return 2
    region = args.region or (stack_region_of(args.stack, args.dir) if args.stack else None) or DEFAULT_REGION
    return _models_estimate(
        args.preset,
        version,
        args.json,
        args.pool,
        region,
        online=args.online,
        version_note=_version_note(args.version, args.stack),
    )


def _version_note(given: str | None, stack: str | None) -> str:
    """Why this KAITO release: asked for, the stack's, or the CLI's default (and a new stack's)."""
    if given:
        return "asked for"
    if stack:
        return f"stack {stack}'s"
    return f"the newest this program installs; a stack without kaito.version runs {DEFAULT_KAITO_VERSION}"


def stack_region_of(stack: str, root: Path) -> str | None:
    """The region a stack's VMs run in (quota.stack_region), or None when its file cannot be
    read or has problems."""
    from stacks.errors import StackConfigError
    from stacks.load import parse_stack_file
    from stacks.quota import stack_region

    try:
        return stack_region(parse_stack_file(read_stack_file(stack, root)))
    except (OSError, StackFileError, StackConfigError):
        return None


def newest_kaito() -> str:
    """The newest KAITO release this program installs: what `models estimate` sizes for by default."""
    return max(catalog.installable_kaito_versions(), key=lambda v: tuple(int(x) for x in v.split(".")))


def stack_kaito_version(stack: str, root: Path) -> str | None:
    """The KAITO release a stack runs (kaito.version, else its default: the add-on's or the
    program's), or None when its file cannot be read (said on stderr)."""
    from stacks.errors import StackConfigError
    from stacks.load import parse_stack_file

    try:
        f = read_stack_file(stack, root)
    except (OSError, StackFileError) as err:
        print(f"{stack}: {err}", file=sys.stderr)
        return None
    try:
        return parse_stack_file(f).kaito.version
    except StackConfigError:  # a stack with problems still names its release
        section = f.config.get("kaito-aks:kaito")
        given = section.get("version") if isinstance(section, dict) else None
        return given if isinstance(given, str) and given in catalog.kaito_charts() else DEFAULT_KAITO_VERSION


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be more than 0")
    return value


def _render(stacks: list[str], out: Path, root: Path, against: str | None = None) -> int:
    """Every stack is rendered, or says why not; the exit code says whether any failed."""
    from stacks.errors import StackConfigError, located
    from stacks.load import parse_stack_file
    from stacks.render import RenderTargetError, render_stack

    failed = 0
    for stack in stacks:
        target = out / stack
        try:
            f = read_stack_file(stack, root)
            written, warnings = render_stack(stack, target, root, f)
            for warning in warnings:
                print(f"{stack}: warning: {located(warning, f)}", file=sys.stderr)
        except StackConfigError as err:
            failed += 1
            print(f"{stack}: not rendered, {len(err.problems)} problem(s):", file=sys.stderr)
            for line in err.lines:
                print(f"  {line}", file=sys.stderr)
            continue
        except (StackFileError, FileNotFoundError, RenderTargetError) as err:
            failed += 1
            print(f"{stack}: not rendered: {err}", file=sys.stderr)
            continue
        print(f"{stack}: {len(written)} files in {target}")
        if not _pool_report(stack, f, parse_stack_file(f), against):
            return 2
    return 1 if failed else 0


def _pool_report(stack: str, f: StackFile, cfg: StackConfig, against: str | None) -> bool:
    """Print the models on each pool, the non-GPU pools' capacity budget and what upgrades do to
    the models, and with `against` the pools replaced since then; False:
    `against` cannot be read (said on stderr)."""
    from stacks import capacity, upgrades
    from stacks.pool_changes import AgainstError, report

    try:
        for line in [*report(f, cfg, against), *capacity.lines(cfg), *upgrades.lines(cfg)]:
            print(f"{stack}: {line}")
    except AgainstError as err:
        print(f"{stack}: {err}", file=sys.stderr)
        return False
    return True


def _validate(stacks: list[str], root: Path, against: str | None = None, *, online: bool = False) -> int:
    """Every stack's config checks (with `online`, its prices and Azure capacity too); the exit
    code says whether any stack failed."""
    from stacks.cost import stack_cost
    from stacks.decide import generation_note
    from stacks.errors import StackConfigError, located
    from stacks.hf_token import note as hf_token_note
    from stacks.load import parse_stack_file
    from stacks.streaming import streaming_note

    failed = 0
    for stack in stacks:
        try:
            f = read_stack_file(stack, root)
            cfg = parse_stack_file(f)
        except (FileNotFoundError, StackFileError) as err:
            print(f"{stack}: {err}")
            failed += 1
            continue
        except StackConfigError as err:
            failed += 1
            print(f"{stack}: {len(err.problems)} problem(s)")
            for line in err.lines:
                print(f"  {line}")
            continue
        for warning in cfg.warnings:
            print(f"{stack}: warning: {located(warning, f)}")
        for note in (generation_note(cfg.decided, cfg.generation), hf_token_note(cfg), streaming_note(cfg)):
            if note is not None:
                print(f"{stack}: {note}")
        cost = stack_cost(cfg, online=online)
        nodes = "" if cfg.kaito.node_provisioning == "byo" else f"; {_kaito_nodes(cfg)}"
        if online and not _online_checks(stack, f, cfg, cost):
            failed += 1
            continue
        print(
            f"{stack}: ok ({len(cfg.models)} workspaces, {len(cfg.pools)} GPU pools"
            + (f", {len(cfg.cpu_pools)} CPU pools" if cfg.cpu_pools else "")
            + f", KAITO {cfg.kaito.version}{nodes}; {cost.summary()})"
        )
        if not _pool_report(stack, f, cfg, against):
            return 2
    return 1 if failed else 0


def _online_checks(stack: str, f: StackFile, cfg: StackConfig, cost: StackCost) -> bool:
    """What `--online` reads: the prices (said), the subscription's quota and the region's sizes
    (False: a problem, said with the file's lines)."""
    from kaito_aks.azure.arm import az_cli_reader
    from stacks.errors import located
    from stacks.quota import NotChecked, check_quota

    if cost.book is not None and cost.book.note:
        print(f"{stack}: prices {cost.book.note}")
    subscription = f.config.get("azure-native:subscriptionId")
    environment = f.config.get("azure-native:environment")
    verdict = check_quota(
        cfg,
        lambda: az_cli_reader(
            subscription if isinstance(subscription, str) else None,
            environment if isinstance(environment, str) else None,
        ),
    )
    if isinstance(verdict, NotChecked):
        print(f"{stack}: {verdict.text()}")
        return True
    for warning in policy.warnings_of(verdict.problems):
        print(f"{stack}: warning: {located(warning, f)}")
    refused = policy.errors_of(verdict.problems)
    if refused:
        print(f"{stack}: {len(refused)} problem(s)")
        for problem in refused:
            print(f"  {located(problem, f)}")
        return False
    print(f"{stack}: {verdict.summary()}")
    return True


def _kaito_nodes(cfg: StackConfig) -> str:
    """The nodes KAITO will create in auto mode, by instance type (serving: replicas x the
    estimator's nodes per replica on that size)."""
    from stacks.quota import kaito_nodes_per_replica

    counts: dict[str, int] = {}
    for i, m in enumerate(cfg.models):
        counts[m.instance_type or "?"] = (
            counts.get(m.instance_type or "?", 0) + kaito_nodes_per_replica(cfg, i) * m.replicas
        )
    listed = ", ".join(f"{n} x {size}" for size, n in sorted(counts.items()))
    return f"KAITO creates the GPU nodes: {listed or 'none'}"


def _model_rows(version: str) -> list[dict]:
    """What a release serves: its presets, or (0.11+) every model of its Hugging Face model
    catalog, with the legacy preset name KAITO maps to it."""
    release = catalog.kaito_charts()[version].preset_catalog
    aliases = catalog.legacy_names(release)
    models = catalog.catalog_models(release) or catalog.presets(release)
    return [
        {
            "model": p.name,
            "preset": aliases.get(p.name.lower()) if aliases else p.name,
            "huggingFace": p.hugging_face_id,
            "license": p.license,
            "family": p.family,
            "gpuMemoryGiB": p.model_gib,
            "diskGiB": p.disk_gib,
            "gpus": p.gpu_count,
            "multiNode": p.distributed,
            "runtimes": p.runtimes,
            "tuning": ["lora", "qlora"] if p.supports_tuning else [],
            "tuningGpuMemoryGiB": p.tuning_gib,
            "gated": p.gated,
            "maxContext": p.token_limit,
            "kvCacheBytesPerToken": p.bytes_per_token or None,
        }
        for p in sorted(models.values(), key=lambda p: p.name.lower())
    ]


_COLUMNS = (
    "GPU memory: what the admission webhook requires; min GPUs: the fewest GPUs KAITO "
    "asks one instance for (GPUCountRequirement), not what a large model takes: `models estimate <model>` gives "
    "the nodes and GPUs of each size"
)


def _models_list(version: str, as_json: bool, version_note: str = "asked for") -> int:
    rows = _model_rows(version)
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    release = catalog.kaito_charts()[version].preset_catalog
    if catalog.catalog_code(release) is not None:
        print(
            f"KAITO {version} ({version_note}): the {len(rows)} models of its Hugging Face model catalog. Write the "
            "id (any letter case) or its legacy preset name as `model`; any other Hugging Face id is sized by KAITO "
            f"from Hugging Face at admission. {_COLUMNS}"
        )
    else:
        print(f"KAITO {version} ({version_note}) presets. {_COLUMNS}")
    width = max(len("MODEL"), *(len(r["model"]) for r in rows))
    alias = max(len("PRESET"), *(len(r["preset"] or "-") for r in rows))
    preset_head = f" {'PRESET':{alias}}" if catalog.catalog_code(release) else ""
    print(
        f"{'MODEL':{width}}{preset_head} {'GPU MEM':>8} {'MIN GPUS':>8} {'MULTI-NODE':10} {'RUNTIMES':19} "
        f"{'TUNING':11} {'LICENSE':12} GATED"
    )
    for r in rows:
        tuning = "lora,qlora" if r["tuning"] else "-"
        preset = f" {r['preset'] or '-':{alias}}" if preset_head else ""
        print(
            f"{r['model']:{width}}{preset} {r['gpuMemoryGiB']:>6.2f}Gi {r['gpus']:>8} "
            f"{'yes' if r['multiNode'] else 'no':10} {','.join(r['runtimes']):19} {tuning:11} "
            f"{r['license'] or '-':12} {'yes' if r['gated'] else 'no'}"
        )
    return 0


def _models_estimate(
    name: str,
    version: str,
    as_json: bool,
    pool: str | None,
    region: str,
    *,
    online: bool = False,
    version_note: str = "asked for",
) -> int:
    from kaito_aks.catalog.retail_prices import HOURS_PER_MONTH, HOW_TO_PRICE, price_book
    from kaito_aks.model.spec import HF_MODEL_ID

    chart = catalog.kaito_charts()[version]
    preset = catalog.find_preset(name, chart.preset_catalog)
    if preset is None and not chart.accepts_hugging_face_ids and HF_MODEL_ID.match(name):
        print(
            f"{name} is a Hugging Face id, which KAITO takes from 0.11; KAITO {version} serves presets only: try "
            f"--version {newest_kaito()}",
            file=sys.stderr,
        )
        return 2
    if preset is None and chart.accepts_hugging_face_ids and HF_MODEL_ID.match(name):
        print(
            f"{name} is not in KAITO {version}'s model catalog: KAITO sizes it from Hugging Face when the "
            "Workspace is created, so there is nothing to estimate offline",
            file=sys.stderr,
        )
        return 2
    if preset is None:
        close = catalog.closest_presets(name, chart.preset_catalog)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        print(f"unknown KAITO {version} preset {name!r}{hint}", file=sys.stderr)
        return 2
    if pool is not None:
        return _estimate_pool(preset, chart, pool, as_json)
    options = kaito_sizing.estimate(preset, chart.preset_catalog)
    book = price_book(region, [s.name for s, _ in options], online=online)
    rows = []
    for s, nodes in options:
        price = book.get(s.name)
        spot = price.spot_usd_per_hour if price is not None else None
        rows.append(
            {
                "nodes": nodes,
                "sku": s.name,
                "gpuModel": s.gpu_model,
                "gpusPerNode": s.gpu_count,
                "gpus": nodes * s.gpu_count,
                "gpuMemoryGiBPerNode": s.gpu_mem_gib,
                "gpuMemoryGiBPerGpu": s.gpu_mem_gib_per_gpu,
                "localNvme": s.nvme,
                "usdPerHour": round(nodes * price.usd_per_hour, 4) if price else None,
                "usdPerMonth": round(nodes * price.usd_per_hour * HOURS_PER_MONTH, 2) if price else None,
                "spotUsdPerHour": round(nodes * spot, 4) if spot is not None else None,
                "priceSource": f"{price.source}, {region}, read {price.read_on}" if price else None,
            }
        )
    # ORDER: cheapest priced first; the unpriced after, by fewest nodes, then fewest GPUs in all
    rows.sort(key=lambda r: (r["usdPerHour"] is None, r["usdPerHour"] or 0, r["nodes"], r["gpus"], r["sku"]))
    unusable = {n: s.unusable for n, s in catalog.gpu_skus(chart.sku_catalog).items() if s.unusable}
    if as_json:
        print(
            json.dumps(
                {
                    "preset": name,
                    "model": preset.name,
                    "license": preset.license,
                    "gpuMemoryGiB": preset.model_gib,
                    "gpusPerNode": preset.gpu_count,
                    "multiNode": preset.distributed,
                    "gated": preset.gated,
                    "kaitoVersion": version,
                    "region": region,
                    "order": ORDER,
                    "prices": {"sources": book.sources(), "unpriced": book.unpriced, "note": book.note},
                    "options": rows,
                    "unusable": unusable,
                },
                indent=2,
            )
        )
        return 0
    spread = "on one node or spread over several" if preset.distributed else "on one node"
    gated = "gated: set the hfToken secret" if preset.gated else "not gated"
    license = f", licence {preset.license}" if preset.license else ""
    print(
        f"{preset.name}: {preset.model_gib} GiB of GPU memory, {spread}, {gated}{license} "
        f"(KAITO {version}: {version_note})"
    )
    if not rows:
        print("  no usable KAITO-known Azure SKU fits")
        return 1
    print(f"  {'NODES':>5}  {'GPUS':>4}  {'GPU MEM/NODE':>12}  {'PER GPU':>8}  {'$/HOUR':>8}  {'$/MONTH':>9}  SKU")
    for r in rows:
        hourly = f"{r['usdPerHour']:.2f}" if r["usdPerHour"] is not None else "unpriced"
        monthly = f"{r['usdPerMonth']:,.0f}" if r["usdPerMonth"] is not None else "-"
        print(
            f"  {r['nodes']:>5}  {r['gpus']:>4}  {r['gpuMemoryGiBPerNode']:>10}Gi  {r['gpuMemoryGiBPerGpu']:>6.0f}Gi  "
            f"{hourly:>8}  {monthly:>9}  {r['sku']} ({r['gpusPerNode']}x {r['gpuModel'].removeprefix('NVIDIA ')})"
        )
    print(f"  order: {ORDER}")
    sources = book.sources()
    if sources:
        print(f"  prices in {region}, pay-as-you-go Linux, {HOURS_PER_MONTH}-hour month: {'; '.join(sources)}")
    if book.unpriced:
        print(f"  unpriced in {region}: {', '.join(book.unpriced)}: {HOW_TO_PRICE}")
    if book.note:
        print(f"  prices {book.note}")
    by_reason: dict[str, list[str]] = {}
    for size, why in unusable.items():
        by_reason.setdefault(why, []).append(size)
    for why, sizes in sorted(by_reason.items(), key=lambda item: sorted(item[1])):
        print(f"  not suggested: {', '.join(sorted(sizes))} ({why})")
    return 0


def _estimate_pool(preset: catalog.Preset, chart: catalog.KaitoChart, pool: str, as_json: bool) -> int:
    """How many nodes of one VM size an instance of the preset needs, or why it cannot run there."""
    sku = catalog.gpu_skus(chart.sku_catalog).get(pool)
    problem = None
    if sku is None:
        close = catalog.closest_skus(pool)
        problem = f"{pool} is not a GPU VM size KAITO {chart.version} accepts" + (
            f"; did you mean {', '.join(close)}?" if close else ""
        )
    elif sku.unusable:
        problem = f"{pool}: {sku.unusable}"
    nodes = None if problem or sku is None else kaito_sizing.nodes_for(preset, sku, chart.preset_catalog)
    if problem is None and nodes is None and sku is not None:
        problem = f"{preset.name} does not fit on {pool} ({sku.gpu_mem_gib} GiB GPU memory per node)"
    if as_json:
        print(json.dumps({"preset": preset.name, "pool": pool, "nodes": nodes, "problem": problem}, indent=2))
    elif problem:
        print(problem, file=sys.stderr)
    else:
        print(f"{preset.name} on {pool}: {nodes} node(s) per instance")
    return 1 if problem else 0
