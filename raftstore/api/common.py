"""What every servicer shares: response headers, proposing, read barriers, and the one place
where errors become gRPC statuses (with the per-RPC metrics)."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from raftstore import metrics
from raftstore.api.requireleader import Held, LeaderMonitor, wants_leader
from raftstore.consensus import ConsensusError
from raftstore.errors import (
    MAX_REQUEST_BYTES,
    NO_LEADER,
    REQUEST_TOO_LARGE,
    ErrorSpec,
    EtcdError,
    to_etcd_error,
)

if TYPE_CHECKING:
    from raftstore.api.pb import rpc_pb2 as pb
    from raftstore.applier import EtcdStateMachine
    from raftstore.consensus import Consensus

log = logging.getLogger(__name__)

S = TypeVar("S")
Req = TypeVar("Req")
Resp = TypeVar("Resp")


class Api:
    """The state machine and consensus of this member, as the servicers use them."""

    def __init__(self, state: EtcdStateMachine, consensus: Consensus,
                 leaders: LeaderMonitor | None = None) -> None:
        self.state = state
        self.consensus = consensus
        # Requests that require a leader (requireleader.py). Without a running monitor, new
        # ones are still refused while there is no leader; open streams are never ended.
        self.leaders = leaders if leaders is not None else LeaderMonitor(consensus, 1.0)

    def fill(self, header: pb.ResponseHeader, revision: int | None = None) -> None:
        """cluster_id, member_id and raft_term (the state machine set the revision)."""
        c = self.consensus
        header.cluster_id = c.cluster_id
        header.member_id = c.member_id
        header.raft_term = c.term()
        if revision is not None:
            header.revision = revision

    async def propose(self, command: bytes) -> Any:
        """Replicate ``command`` and return the state machine's response; raises EtcdError."""
        if len(command) > MAX_REQUEST_BYTES:
            raise EtcdError(REQUEST_TOO_LARGE)
        try:
            result = await self.consensus.propose(command)
        except ConsensusError as exc:
            metrics.PROPOSALS_FAILED.inc()
            raise _mapped(exc) from None
        if isinstance(result, BaseException):
            raise _mapped(result)
        return result

    async def read_barrier(self) -> None:
        try:
            await self.consensus.read_barrier()
        except ConsensusError as exc:
            raise _mapped(exc) from None


def _mapped(exc: BaseException) -> EtcdError:
    err = to_etcd_error(exc)
    if err is None:
        raise exc
    return err


def _status(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    if isinstance(exc, DecodeError):
        # A stream's request that is not a valid message: grpc-go's answer (unary calls get
        # theirs in server.py, before the handler runs).
        return grpc.StatusCode.INTERNAL, f"grpc: failed to unmarshal the received message {exc}"
    err = to_etcd_error(exc)
    if err is not None:
        return err.code, err.message
    log.exception("unexpected error in RPC handler", exc_info=exc)
    return grpc.StatusCode.UNKNOWN, f"raftstore: {exc}"


_HANDLED: dict[tuple[str, str, grpc.StatusCode], Any] = {}


def _record(service: str, method: str, code: grpc.StatusCode) -> None:
    # prometheus_client's ``labels()`` takes a lock and builds a key on every call; the
    # children are cached here (a handful of methods and codes).
    key = (service, method, code)
    child = _HANDLED.get(key)
    if child is None:
        child = _HANDLED[key] = metrics.GRPC_HANDLED.labels(service, method, code.name)
    child.inc()


def unary(
    service: str,
) -> Callable[
    [Callable[[S, Req, grpc.aio.ServicerContext], Awaitable[Resp]]],
    Callable[[S, Req, grpc.aio.ServicerContext], Awaitable[Resp]],
]:
    """Wrap a unary handler: map our errors to etcd's statuses, count and time the RPC."""

    def deco(
        fn: Callable[[S, Req, grpc.aio.ServicerContext], Awaitable[Resp]],
    ) -> Callable[[S, Req, grpc.aio.ServicerContext], Awaitable[Resp]]:
        method = fn.__name__
        label = f"etcdserverpb.{service}"
        latency = metrics.GRPC_LATENCY.labels(label, method)

        @functools.wraps(fn)
        async def wrapper(self: S, request: Req, context: grpc.aio.ServicerContext) -> Resp:
            start = time.perf_counter()
            code: grpc.StatusCode | None = grpc.StatusCode.OK
            try:
                if wants_leader(context) and not _api(self).leaders.has_leader():
                    raise EtcdError(NO_LEADER)
                return await fn(self, request, context)
            except grpc.aio.AbortError:
                code = _context_code(context)
                raise
            except Exception as exc:  # noqa: BLE001 - translated right here
                # Counted before the status leaves: a client that sees the error may read the
                # metrics before this coroutine resumes after ``abort``.
                status, message = _status(exc)
                _record(label, method, status)
                latency.observe(time.perf_counter() - start)
                code = None
                await context.abort(status, message)
                raise  # unreachable: abort raises
            except BaseException:
                code = grpc.StatusCode.CANCELLED
                raise
            finally:
                if code is not None:
                    _record(label, method, code)
                    latency.observe(time.perf_counter() - start)

        return wrapper

    return deco


def streaming(
    service: str,
) -> Callable[
    [Callable[[S, Any, grpc.aio.ServicerContext], AsyncIterator[Resp]]],
    Callable[[S, Any, grpc.aio.ServicerContext], AsyncIterator[Resp]],
]:
    """As ``unary`` for handlers that are async generators (server or bidi streams)."""

    def deco(
        fn: Callable[[S, Any, grpc.aio.ServicerContext], AsyncIterator[Resp]],
    ) -> Callable[[S, Any, grpc.aio.ServicerContext], AsyncIterator[Resp]]:
        method = fn.__name__

        @functools.wraps(fn)
        async def wrapper(
            self: S, request: Any, context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Resp]:
            code: grpc.StatusCode | None = grpc.StatusCode.OK
            held: Held | None = None
            leaders = _api(self).leaders
            try:
                if wants_leader(context):
                    if not leaders.has_leader():
                        raise EtcdError(NO_LEADER)
                    held = leaders.hold()
                async for resp in fn(self, request, context):
                    yield resp
            except grpc.aio.AbortError:
                code = _context_code(context)
                raise
            except Exception as exc:  # noqa: BLE001
                status, message = _status(exc)
                _record(f"etcdserverpb.{service}", method, status)  # before it leaves, as above
                code = None
                await context.abort(status, message)
            except asyncio.CancelledError:
                if held is None or not held.lost:
                    code = grpc.StatusCode.CANCELLED
                    raise
                # ended by the leader monitor, not by the client
                _record(f"etcdserverpb.{service}", method, NO_LEADER.code)
                code = None
                await context.abort(NO_LEADER.code, NO_LEADER.message)
            except BaseException:
                code = grpc.StatusCode.CANCELLED
                raise
            finally:
                if held is not None:
                    leaders.release(held)
                if code is not None:
                    _record(f"etcdserverpb.{service}", method, code)

        return wrapper

    return deco


def _api(service: object) -> Api:
    api = getattr(service, "api", None)
    assert isinstance(api, Api), f"{type(service).__name__} has no Api"
    return api


def _context_code(context: grpc.aio.ServicerContext) -> grpc.StatusCode:
    try:
        code = context.code()
    except Exception:  # noqa: BLE001 - older grpc without ServicerContext.code()
        return grpc.StatusCode.UNKNOWN
    if isinstance(code, grpc.StatusCode):
        return code
    return grpc.StatusCode.UNKNOWN


async def unimplemented(context: grpc.aio.ServicerContext, method: str) -> Any:
    """For RPCs declared in etcd's proto that raftstore does not serve. Raised rather than
    aborted here, so that the wrapper counts it before the status leaves."""
    raise EtcdError(
        ErrorSpec(grpc.StatusCode.UNIMPLEMENTED, f"raftstore: {method} is not implemented")
    )
