#!/usr/bin/env python3
"""Benchmark: evaluate the real program for synthetic stacks of 10, 50, 200 and 1000 workspaces
(Pulumi mocks, as the tests and `render` run it) and time the test suite.

Each size runs in a fresh process, so its peak memory is its own. Prints a markdown table;
`--write` also writes it into docs/development.md between the benchmark markers.

    python scripts/benchmark.py [--sizes 10 50 200 1000] [--repeat 3] [--write] [--no-tests]
    python scripts/benchmark.py --kaito 0.12.0 --no-tests      # KAITO 0.12's InferenceSets
    python scripts/benchmark.py --serving --no-tests           # the same with a gateway, autoscaling, metrics
    python scripts/benchmark.py --floor --sizes 1000 --no-tests  # against the SDK floor, paired in one run
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GPU_PRESETS = ["phi-4-mini-instruct", "phi-3.5-mini-instruct", "qwen2.5-coder-7b-instruct", "mistral-7b-instruct"]


# --serving: the stack's gateway with an API key (a secret, as Pulumi hands it over), every GPU
# preset autoscaled and every model's metrics scraped (KAITO 0.12: what serves through them)
SERVING_KEY = "bench-0123456789abcdef0123456789abcdef"


def synthetic_config(n: int, kaito: str | None = None, serving: bool = False) -> dict:
    """n workspaces on a kubeconfig cluster: two GPU presets (some with replicas and runtime
    config) for every CPU image, spread over four namespaces; `kaito`: the release; `serving`:
    with a gateway, autoscaling (in place of replicas) and metrics."""
    workspaces = []
    for i in range(n):
        ws: dict = {"name": f"model-{i}", "namespace": f"team-{i % 4}"}
        if i % 3 == 2:
            ws |= {"compute": "cpu", "image": "ghcr.io/kaito-project/aikit/llama3.2:1b"}
        else:
            ws |= {"model": GPU_PRESETS[i % len(GPU_PRESETS)], "replicas": 1 + i % 2}
            if i % 5 == 0:
                ws["config"] = {"vllm": {"max-model-len": 4096}}
            if serving:
                ws.pop("replicas")
                ws["autoscale"] = {"minReplicas": 1, "maxReplicas": 2 + i % 2}
        workspaces.append(ws)
    cfg: dict = {"kaito-aks:cluster": {"kubeconfig": {"context": "bench"}}, "kaito-aks:workspaces": workspaces}
    if kaito:
        cfg["kaito-aks:kaito"] = {"version": kaito}
    if serving:
        cfg["kaito-aks:metrics"] = {}
    return cfg


def bench_secrets(kaito: str | None, serving: bool) -> dict[str, str] | None:
    """From 0.11 KAITO downloads mistral's gated weights at start-up: a token; the gateway's key."""
    secrets = {"kaito-aks:hfToken": "hf_bench_not_a_token"} if kaito else {}
    if serving:
        secrets["kaito-aks:gateway"] = json.dumps({"apiKeys": {"ci": SERVING_KEY}})
    return secrets or None


def floor_program(count: int):
    """The SDK floor: a bare program of `count` ConfigMaps (plain inputs, no component, Python's
    default collector), what registering that many resources costs a program under the same mocks
    (issue 33's measure: the program per model against it)."""

    def program() -> None:
        import pulumi_kubernetes as k8s

        for i in range(count):
            k8s.core.v1.ConfigMap(
                f"floor-{i}", metadata={"name": f"floor-{i}", "namespace": "default"}, data={"k": "v"}
            )

    return program


def measure_one(n: int, repeat: int, kaito: str | None = None, serving: bool = False, floor: bool = False) -> dict:
    """In this process: import, then evaluate the n-workspace stack `repeat` times (`floor`: each
    run paired with the SDK floor of as many resources, run right after it)."""
    t0 = time.perf_counter()
    from stacks.evaluate import evaluate
    from stacks.program import main

    imported = time.perf_counter() - t0
    cfg = synthetic_config(n, kaito, serving)
    times, cpu, floor_cpu, resources = [], [], [], 0

    def timed(program) -> tuple[float, float, int]:
        gc.collect()  # start each run clean, so the peak is one evaluation's
        thresholds = gc.get_threshold()
        start, start_cpu = time.perf_counter(), time.process_time()
        ev = evaluate(
            cfg, stack=f"bench-{n}", program=program, secrets=bench_secrets(kaito, serving)
        )  # (its GC tuning)
        took, took_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        return took, took_cpu, len(ev.resources)

    for _ in range(repeat):
        seconds, seconds_cpu, resources = timed(main)
        times.append(seconds)
        cpu.append(seconds_cpu)  # (on a busy machine, steadier than the wall clock)
        if floor:
            floor_cpu.append(timed(floor_program(resources - 1))[1])  # (less the default provider it registers)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {
        "workspaces": n,
        "resources": resources,
        "seconds": min(times),
        "cpuSeconds": min(cpu),
        "msPerResource": min(cpu) / resources * 1000,
        "import": imported,
        "peakMiB": peak_kib / 1024,
    }
    if floor:
        out |= {"floorCpuSeconds": min(floor_cpu), "floorRatio": min(cpu) / min(floor_cpu)}
    return out


def run_size(n: int, repeat: int, kaito: str | None = None, serving: bool = False, floor: bool = False) -> dict:
    extra = [
        *(["--kaito", kaito] if kaito else []),
        *(["--serving"] if serving else []),
        *(["--floor"] if floor else []),
    ]
    out = subprocess.run(
        [sys.executable, __file__, "--one", str(n), "--repeat", str(repeat), *extra],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout)


def time_tests() -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT, check=True, capture_output=True
    )
    return time.perf_counter() - start


def table(rows: list[dict], tests: float | None) -> str:
    lines = [
        "| workspaces | resources registered | evaluation (s) | per workspace (ms) | marginal per extra workspace (ms) | peak memory (MiB) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    prev = None
    for r in rows:
        marginal = (
            ""
            if prev is None
            else f"{(r['seconds'] - prev['seconds']) / (r['workspaces'] - prev['workspaces']) * 1000:.2f}"
        )
        lines.append(
            f"| {r['workspaces']} | {r['resources']} | {r['seconds']:.2f} | {r['seconds'] / r['workspaces'] * 1000:.2f} | "
            f"{marginal} | {r['peakMiB']:.0f} |"
        )
        prev = r
    cpu = f"{os.cpu_count()} cores, Python {platform.python_version()}"
    lines.append("")
    lines.append(
        f"Best of the runs per size, each size in a fresh process; imports ({rows[0]['import']:.2f} s) not included; {cpu}."
    )
    if tests is not None:
        lines.append(f"Whole test suite (`pytest -q`): {tests:.1f} s.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200, 1000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--write", action="store_true", help="write the table into docs/development.md")
    parser.add_argument("--no-tests", action="store_true", help="skip timing the test suite")
    parser.add_argument("--kaito", help="the KAITO release of the stacks (default: the stack's default)")
    parser.add_argument(
        "--serving", action="store_true", help="with a gateway, autoscaling and metrics (implies --kaito 0.12.0)"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="pair each run with the SDK floor (as many bare ConfigMaps) and print the CPU ratio per size",
    )
    args = parser.parse_args()
    kaito = args.kaito or ("0.12.0" if args.serving else None)
    if args.one:
        print(json.dumps(measure_one(args.one, args.repeat, kaito, args.serving, args.floor)))
        return
    rows = [run_size(n, args.repeat, kaito, args.serving, args.floor) for n in args.sizes]
    tests = None if args.no_tests else time_tests()
    text = table(rows, tests)
    print(text)
    for r in rows if args.floor else ():
        print(
            f"{r['workspaces']} workspaces: {r['cpuSeconds']:.2f} s of CPU ({r['msPerResource']:.2f} ms per resource) "
            f"against the SDK floor's {r['floorCpuSeconds']:.2f} s: {r['floorRatio']:.2f}x"
        )
    if args.write:
        from stacks.docs import ROOT, marked_block

        marked_block(ROOT / "docs" / "development.md", "benchmark", text)


if __name__ == "__main__":
    main()
