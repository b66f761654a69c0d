"""``get_list`` of the etcd3 store (upstream ``store.GetList``), SPEC 8.1 cell by cell:

======================  ===================  ======================================
request                 revision read        check
======================  ===================  ======================================
continue token          the token's (or      rv other than "" / "0" -> 400
                        latest for rv -1)
rv unset                latest               -
rv "0", no match        latest               (the cacher answers these from memory)
rv N, no limit          latest               latest >= N, else wait, then 504
rv N, limit, no match   exactly N            N compacted -> 410, N future -> wait/504
Exact N                 exactly N            as above
NotOlderThan N          latest               latest >= N, else wait, then 504
======================  ===================  ======================================

Paging with a selector keeps fetching (doubling the fetch size up to ``MAX_LIMIT``) until the
page is full or the range ends, all at the revision of the first fetch, so a page is never
empty while matching items remain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raftstore.api.pb import rpc_pb2 as pb
from storage.continuetoken import INCONSISTENT_RV, decode_continue, encode_continue
from storage.errors import Code, StorageError
from storage.etcd3.common import (
    CONTINUE_EXPIRED,
    EXPIRED_LIST,
    INCONSISTENT_CONTINUE,
    MAX_LIMIT,
    decode,
    parse_rv,
    prefix_end,
    storage_error,
)
from storage.etcd3.kvclient import COMPACTED, FUTURE, KVError
from storage.interface import RV_MATCH_EXACT, RV_MATCH_NOT_OLDER_THAN, ListResult

if TYPE_CHECKING:
    from storage.etcd3.store import Etcd3Store
    from storage.interface import ListOptions, Object


def expired_error(with_continue: bool, continue_key: str, prefix: str) -> StorageError:
    """410 for a compacted list revision; for a continue token, with the "inconsistent"
    token that resumes at the latest revision (upstream handleCompactedErrorForPaging)."""
    if not with_continue:
        return StorageError(Code.RESOURCE_EXPIRED, EXPIRED_LIST)
    try:
        token = encode_continue(continue_key, prefix, INCONSISTENT_RV)
    except StorageError:
        return StorageError(Code.RESOURCE_EXPIRED, CONTINUE_EXPIRED)
    return StorageError(Code.RESOURCE_EXPIRED, INCONSISTENT_CONTINUE, continue_token=token)


async def get_list(store: Etcd3Store, key: str, opts: ListOptions) -> ListResult:
    recursive = opts.recursive
    prefix = key + "/" if recursive and not key.endswith("/") else key
    start_key = prefix
    limit = max(opts.limit, 0)
    paging = limit > 0
    from_rv = parse_rv(opts.resource_version)
    with_rev = 0
    continue_key = ""
    with_continue = recursive and bool(opts.continue_token)
    if with_continue:
        continue_key, continue_rv = decode_continue(opts.continue_token, prefix)
        if opts.resource_version not in ("", "0"):
            raise StorageError(
                Code.INVALID, "specifying resource version is not allowed when using continue"
            )
        start_key = continue_key
        if continue_rv > 0:
            with_rev = continue_rv
        from_rv = None
    elif from_rv is not None:
        match = opts.resource_version_match
        if match == RV_MATCH_EXACT:
            with_rev = from_rv
        elif match == "":
            if recursive and paging and from_rv > 0:
                with_rev = from_rv
        elif match != RV_MATCH_NOT_OLDER_THAN:
            raise StorageError(Code.INVALID, f"unknown ResourceVersionMatch value: {match}")

    p = prefix.encode()
    range_end = prefix_end(p) if recursive else b""
    fetch_key = start_key.encode()
    fetch_limit = limit
    op = "list" if recursive else "get"
    matches = None if opts.predicate.everything else opts.predicate.matches
    items: list[Object] = []
    last_key = b""
    has_more = False
    while True:
        req = pb.RangeRequest(key=fetch_key, range_end=range_end, limit=fetch_limit,
                              revision=with_rev)
        try:
            resp = await store._range(op, key, req)
        except KVError as exc:
            if exc.kind == COMPACTED:
                raise expired_error(with_continue, continue_key, prefix) from None
            if exc.kind == FUTURE and with_rev:
                await store.wait_for_revision(with_rev)  # 504 unless it arrives in time
                continue
            raise storage_error(exc, key) from None
        if with_rev == 0 and from_rv and resp.header.revision < from_rv:
            await store.wait_for_revision(from_rv)
            continue
        has_more = resp.more
        if not resp.kvs and resp.more:
            raise StorageError(
                Code.INTERNAL,
                "no results were found, but etcd indicated there were more values remaining",
            )
        for kv in resp.kvs:
            if paging and len(items) >= limit:
                has_more = True
                break
            last_key = kv.key
            obj = decode(kv.value, kv.mod_revision, kv.key)
            if matches is None or matches(obj):
                items.append(obj)
        if not has_more or not paging or len(items) >= limit:
            break
        # The selector dropped items: fetch more, larger pages, at the same revision.
        fetch_limit = min(fetch_limit * 2, MAX_LIMIT) if fetch_limit < MAX_LIMIT else fetch_limit
        fetch_key = last_key + b"\x00"
        if with_rev == 0:
            with_rev = int(resp.header.revision)
    if with_rev == 0:
        with_rev = int(resp.header.revision)
    if not has_more:
        return ListResult(items=items, resource_version=with_rev)
    token = encode_continue(last_key.decode() + "\x00", prefix, with_rev)
    # etcd's count includes items the selector drops: only report it without a selector.
    remaining = int(resp.count) - limit if matches is None else None
    return ListResult(
        items=items, resource_version=with_rev, continue_token=token,
        remaining_item_count=remaining if remaining is not None and remaining > 0 else None,
    )
