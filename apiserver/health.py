"""``/livez``, ``/readyz`` and ``/healthz`` (SPEC 4.7; upstream ``healthz`` package).

Checks: ``ping`` and ``log`` (always ok while the loop answers), ``etcd`` (the store answers a
current-revision read within a short timeout), and for readyz also ``etcd-readiness`` (the
same), ``informer-sync`` (every watch cache is ready) and ``shutdown`` (fails once shutdown
began, so load balancers drain this replica before it stops).

Output as upstream: ``ok``, or with ``?verbose`` one ``[+]<check> ok`` line per check and
``<name> check passed``; ``?exclude=<check>`` (repeatable) prints ``[+]<check> excluded: ok``;
any failure answers 500 with every line, failures as ``[-]<check> failed: reason withheld``
(the reason goes to the log only: the endpoint is public) and ``<name> check failed``.
``/<name>/<check>`` runs one check: ``ok``, or 500 ``internal server error: <reason>``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

import structlog
from aiohttp import web

if TYPE_CHECKING:
    from storage.interface import Interface

log = structlog.get_logger("apiserver.health")

ETCD_TIMEOUT: Final = 2.0
_HEADERS: Final = {"X-Content-Type-Options": "nosniff"}


class Syncable(Protocol):
    """What informer-sync needs of a watch cache."""

    @property
    def ready(self) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    name: str
    run: Callable[[], Awaitable[None]]  # raises on failure; the message is for logs


class HealthState:
    """The mutable inputs of the checks: the store, the caches, and whether shutdown began."""

    def __init__(self, storage: Interface | None, caches: Sequence[Syncable] = (),
                 *, etcd_timeout: float = ETCD_TIMEOUT) -> None:
        self.storage = storage
        self.caches = tuple(caches)
        self.etcd_timeout = etcd_timeout
        self.shutting_down = False

    async def ping(self) -> None:
        return None

    async def etcd(self) -> None:
        if self.storage is None:
            raise RuntimeError("no storage configured")
        try:
            await asyncio.wait_for(self.storage.current_revision(), self.etcd_timeout)
        except TimeoutError:
            raise RuntimeError("etcd did not answer in time") from None

    async def informer_sync(self) -> None:
        waiting = sum(1 for c in self.caches if not c.ready)
        if waiting:
            raise RuntimeError(f"{waiting} informers not started yet")

    async def shutdown(self) -> None:
        if self.shutting_down:
            raise RuntimeError("process is shutting down")


def checks_for(state: HealthState) -> dict[str, tuple[Check, ...]]:
    ping = Check(name="ping", run=state.ping)
    log_check = Check(name="log", run=state.ping)
    etcd = Check(name="etcd", run=state.etcd)
    return {
        "livez": (ping, log_check, etcd),
        "healthz": (ping, log_check, etcd),
        "readyz": (ping, log_check, etcd, Check(name="etcd-readiness", run=state.etcd),
                   Check(name="informer-sync", run=state.informer_sync),
                   Check(name="shutdown", run=state.shutdown)),
    }


async def _run(check: Check) -> str | None:
    """None when the check passes, else its failure reason."""
    try:
        await check.run()
    except asyncio.CancelledError:
        raise
    except Exception as e:  # a check's failure is data here, whatever its type
        return str(e) or type(e).__name__
    return None


def _text(body: str, status: int = 200) -> web.Response:
    return web.Response(text=body, status=status, headers=_HEADERS, charset="utf-8")


def root_handler(name: str, checks: tuple[Check, ...]
                 ) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        excluded = list(dict.fromkeys(request.query.getall("exclude", [])))
        active = [c for c in checks if c.name not in excluded]
        results = await asyncio.gather(*(_run(c) for c in active))
        failures = dict(zip((c.name for c in active), results, strict=True))
        lines: list[str] = []
        failed: list[str] = []
        for c in checks:
            if c.name in excluded:
                lines.append(f"[+]{c.name} excluded: ok\n")
            elif failures[c.name] is None:
                lines.append(f"[+]{c.name} ok\n")
            else:
                lines.append(f"[-]{c.name} failed: reason withheld\n")
                failed.append(c.name)
        unknown = sorted({e for e in excluded} - {c.name for c in checks})
        if unknown:
            quoted = ",".join(f'"{u}"' for u in unknown)
            lines.append(f"warn: some health checks cannot be excluded: no matches for "
                         f"{quoted}\n")
        if failed:
            log.info(f"{name} check failed", failed=failed,
                     reasons={n: failures[n] for n in failed})
            return _text("".join(lines) + f"{name} check failed\n", 500)
        if "verbose" not in request.query:
            return _text("ok")
        return _text("".join(lines) + f"{name} check passed\n")

    return handle


def single_handler(checks: tuple[Check, ...]
                   ) -> Callable[[web.Request], Awaitable[web.Response]]:
    by_name = {c.name: c for c in checks}

    async def handle(request: web.Request) -> web.Response:
        name = request.match_info.get("check") or request.path.rpartition("/")[2]
        check = by_name.get(name)
        if check is None:
            raise web.HTTPNotFound()
        reason = await _run(check)
        if reason is not None:
            return _text(f"internal server error: {reason}\n", 500)
        return _text("ok")

    return handle


def install(app: web.Application, state: HealthState) -> None:
    for name, checks in checks_for(state).items():
        app.router.add_get(f"/{name}", root_handler(name, checks))
        single = single_handler(checks)
        for c in checks:  # listed by the index at / as upstream lists them
            app.router.add_get(f"/{name}/{c.name}", single)
        app.router.add_get(f"/{name}/{{check}}", single)
