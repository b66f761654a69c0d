"""Benchmark: what validation and defaulting of the built-in types cost the create path.

    python bench/bench_types.py --out /tmp/types.json      # about 2 minutes
    python bench/bench_types.py --quick

One plat-server (embedded store, as the README runs it) takes creates of four kinds at 32
clients: a ConfigMap (little to check), a Deployment and a StatefulSet with a realistic
two-container pod template (probes, env, resources, volumes) and a bare Pod. While each
series runs, py-spy samples the server process; a sample counts as "validation and
defaulting" when any frame on its stack is in the code that decodes against the schema, drops
unknown fields, defaults or validates (the modules listed in VALIDATION_FILES, and the
strategy hooks default / validate / prepare_for_create). The figure is that share of the
server's busy samples: the throughput the server would gain without validation and
defaulting is at most share / (1 - share).

Each series also reports the server's CPU time per request (user + system CPU of the server
process over the series, divided by the requests it served): the figure to compare between
two versions of the server, steadier than creates/s on a shared machine. ``--updates`` adds,
after each kind's creates, one PUT per created object (a changed label) measured the same way.

Nothing here is asserted. py-spy needs ptrace rights (root here); without them the series run
and the share is reported as unknown.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apiserver.testing.launcher import ApiServerProcess  # noqa: E402
from bench.bench_apiserver import Http, ensure_namespace, run_clients  # noqa: E402

# Frames whose presence marks a sample as validation or defaulting.
VALIDATION_FILES = (
    "apiserver/api/",
    "apiserver/registry/validation.py",
    "apiserver/registry/shape.py",
    "apiserver/registry/strategies/",
    "apiserver/endpoints/fieldvalidation.py",
)
VALIDATION_FUNCS = ("default (", "validate (", "validate_update (", "prepare_for_create (",
                    "drop_unknown_fields (", "apply_field_validation (", "find_duplicates (")

LABELS = {"app": "web", "tier": "front"}


def _container(name: str, image: str) -> dict[str, Any]:
    return {
        "name": name, "image": image,
        "ports": [{"containerPort": 8080, "name": "http"}],
        "env": [{"name": "MODE", "value": "prod"},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                      "limits": {"cpu": "500m", "memory": "256Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
        "livenessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 5},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
    }


def pod_spec() -> dict[str, Any]:
    return {"containers": [_container("app", "registry.example/app:1.4.2"),
                           _container("sidecar", "registry.example/proxy:2.0")],
            "volumes": [{"name": "config", "configMap": {"name": "app-config"}}]}


def template() -> dict[str, Any]:
    return {"metadata": {"labels": dict(LABELS)}, "spec": pod_spec()}


KINDS: dict[str, tuple[str, Callable[[str], dict[str, Any]]]] = {
    "ConfigMap": ("/api/v1/namespaces/bench/configmaps", lambda n: {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "labels": LABELS},
        "data": {f"key{i}": "x" * 40 for i in range(20)}}),
    "Deployment": ("/apis/apps/v1/namespaces/bench/deployments", lambda n: {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": n, "labels": LABELS},
        "spec": {"replicas": 3, "selector": {"matchLabels": dict(LABELS)},
                 "template": template()}}),
    "StatefulSet": ("/apis/apps/v1/namespaces/bench/statefulsets", lambda n: {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": n, "labels": LABELS},
        "spec": {"serviceName": "web", "replicas": 3,
                 "selector": {"matchLabels": dict(LABELS)}, "template": template()}}),
    "Pod": ("/api/v1/namespaces/bench/pods", lambda n: {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "labels": LABELS},
        "spec": pod_spec()}),
}


# Under apiserver/api/ but not validation or defaulting: managed fields (server-side apply).
NOT_VALIDATION_FILES = ("apiserver/api/fieldmanager/",)


def is_validation(frame: str) -> bool:
    if any(f in frame for f in NOT_VALIDATION_FILES):
        return False
    return any(f in frame for f in VALIDATION_FILES) or frame.startswith(VALIDATION_FUNCS)


def classify(folded: Path) -> tuple[int, int]:
    """(samples in validation/defaulting, all samples) of a py-spy raw (folded) file: a
    sample counts when a frame outside the field manager is validation or defaulting."""
    hit = total = 0
    for line in folded.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        for frame in stack.split(";"):
            if any(f in frame for f in NOT_VALIDATION_FILES):
                break  # whatever the field manager calls is its own cost
            if is_validation(frame):
                hit += n
                break
    return hit, total


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def _cpu_now(server: ApiServerProcess) -> float | None:
    if server.proc is None:
        return None
    try:
        return cpu_seconds(server.proc.pid)
    except (OSError, ValueError, IndexError):
        return None


async def _start_spy(server: ApiServerProcess, folded: Path) -> subprocess.Popen[bytes] | None:
    exe = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if exe is None or server.proc is None:
        return None
    spy = await asyncio.to_thread(
        subprocess.Popen,
        [exe, "record", "-p", str(server.proc.pid), "-r", "250", "--format", "raw",
         "-o", str(folded), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    await asyncio.sleep(1.0)
    return spy


async def _stop_spy(spy: subprocess.Popen[bytes], label: str) -> None:
    if spy.poll() is None:
        spy.send_signal(signal.SIGINT)  # py-spy writes its file and exits
    try:
        _, err = await asyncio.to_thread(spy.communicate, None, 30)
    except subprocess.TimeoutExpired:
        spy.kill()
        err = b""
    if spy.returncode:
        print(f"[{label}] py-spy: {err.decode(errors='replace')[:600]}", flush=True)


def _share(folded: Path) -> tuple[int, float | None]:
    if not folded.exists():
        return 0, None
    hit, all_samples = classify(folded)
    return all_samples, (round(hit / all_samples, 3) if all_samples else None)


async def _timed(server: ApiServerProcess, clients: int, total: int,
                 op: Callable[[int], Awaitable[None]]) -> dict[str, Any]:
    """run_clients plus the server's CPU time per successful request (``cpu_ms``)."""
    cpu0 = _cpu_now(server)
    result = await run_clients(clients, total, op)
    cpu1 = _cpu_now(server)
    if cpu0 is not None and cpu1 is not None and result["ops"]:
        result["cpu_ms"] = round((cpu1 - cpu0) * 1000 / result["ops"], 3)
    return result


async def series(server: ApiServerProcess, kind: str, total: int, clients: int,
                 out_dir: Path, updates: bool = False) -> dict[str, Any]:
    path, make = KINDS[kind]
    http = Http([server.url], server.ssl_context(), limit=clients)
    folded = out_dir / f"{kind}.folded"
    try:
        await ensure_namespace(http, "bench")
        # warm up: first requests compile schema walks and fill caches, and every client
        # opens its connection (TLS handshakes are not what the series measures)
        await run_clients(clients, max(50, 2 * clients),
                          lambda i: _drop(_post(http, path, make(f"warm-{kind.lower()}-{i}"))))
        bodies = [make(f"{kind.lower()}-{i}") for i in range(total)]
        created: list[dict[str, Any]] = [{} for _ in range(total)]

        async def post(i: int) -> None:
            created[i] = await _post(http, path, copy.deepcopy(bodies[i]))

        spy = await _start_spy(server, folded)
        try:
            result = await _timed(server, clients, total, post)
        finally:
            if spy is not None:
                await _stop_spy(spy, kind)
        result["kind"] = kind
        result["samples"], result["validation_share"] = _share(folded)
        if updates:
            async def put(i: int) -> None:
                obj = created[i]
                if not obj:
                    return
                obj["metadata"].setdefault("labels", {})["rev"] = "2"
                await http.request("PUT", f"{path}/{obj['metadata']['name']}", body=obj)

            up_folded = out_dir / f"{kind}-update.folded"
            spy = await _start_spy(server, up_folded)
            try:
                up = await _timed(server, clients, total, put)
            finally:
                if spy is not None:
                    await _stop_spy(spy, f"{kind} update")
            result["updates_per_s"] = up["per_s"]
            result["update_failures"] = up["failures"]
            if "cpu_ms" in up:
                result["update_cpu_ms"] = up["cpu_ms"]
    finally:
        await http.close()
    return result


async def _post(http: Http, path: str, body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(await http.request("POST", path, body=body, expect=201))
    return out


async def _drop(aw: Awaitable[Any]) -> None:
    await aw


def report(rows: list[dict[str, Any]]) -> str:
    head = f"{'kind':<12} {'creates/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms':>7} " \
           f"{'validation+defaulting share':>28} {'max gain without':>17}"
    lines = [head, "-" * len(head)]
    for r in rows:
        share = r.get("validation_share")
        gain = f"{share / (1 - share):.0%}" if share is not None and share < 1 else "?"
        lines.append(f"{r['kind']:<12} {r['per_s']:>10} {r['p50_ms']:>8} {r['p99_ms']:>8} "
                     f"{r.get('cpu_ms', '?'):>7} "
                     f"{(f'{share:.1%}' if share is not None else '?'):>28} {gain:>17}")
    if any("updates_per_s" in r for r in rows):
        lines += ["", f"{'kind':<12} {'updates/s':>10} {'CPU ms':>7}"]
        lines += [f"{r['kind']:<12} {r['updates_per_s']:>10} {r.get('update_cpu_ms', '?'):>7}"
                  for r in rows if "updates_per_s" in r]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--profiles", help="keep py-spy's folded stacks (<kind>.folded) here")
    p.add_argument("--updates", action="store_true",
                   help="after each kind's creates, PUT every created object once")
    p.add_argument("--total", type=int, help="requests per series (default 2000, 600 quick)")
    args = p.parse_args(argv)
    total = args.total or (600 if args.quick else 2000)
    rows: list[dict[str, Any]] = []
    if args.profiles:
        Path(args.profiles).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-types-") as tmp:
        base = Path(tmp)
        with ApiServerProcess(base / "api") as server:  # __enter__ starts it
            for kind in args.kinds.split(","):
                r = asyncio.run(series(server, kind, total, args.clients,
                                       Path(args.profiles) if args.profiles else base,
                                       args.updates))
                print(f"[{kind}] {r['per_s']} creates/s, {r.get('cpu_ms')} ms CPU per create, "
                      f"validation+defaulting share {r['validation_share']}, failures "
                      f"{r['failures']}", flush=True)
                if args.updates:
                    print(f"[{kind}] {r['updates_per_s']} updates/s, {r.get('update_cpu_ms')} "
                          f"ms CPU per update, failures {r['update_failures']}", flush=True)
                rows.append(r)
    print()
    print(report(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
