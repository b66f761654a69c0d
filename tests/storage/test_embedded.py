"""The embedded backend's persistence: restart, snapshots, journal replay, torn tails, the
data directory lock."""

from __future__ import annotations

import asyncio
import os
import struct
from pathlib import Path

import msgpack
import pytest

from raftstore.journal import DurableJournal
from storage.embedded import open_embedded
from storage.errors import Code, StorageError
from storage.interface import GetOptions, ListOptions, Object


def cm(name: str, **data: str) -> Object:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": data}


async def test_restart_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    d = str(tmp_path / "data")
    store = await open_embedded(d)
    created = await asyncio.gather(
        *(store.create(f"/registry/configmaps/ns/c{i}", cm(f"c{i}", i=str(i))) for i in range(20))
    )
    gone = await store.delete("/registry/configmaps/ns/c0")
    rev = await store.current_revision()
    await store.close()

    store = await open_embedded(d)
    try:
        assert await store.current_revision() == rev
        res = await store.get_list("/registry/configmaps/ns", ListOptions())
        assert sorted(o["metadata"]["name"] for o in res.items) == sorted(
            f"c{i}" for i in range(1, 20)
        )
        assert res.items[0] == created[1]
        # History survives too: a watch from before the delete replays it.
        w = await store.watch("/registry/configmaps/ns",
                              ListOptions(resource_version=str(rev - 1)))
        ev = await asyncio.wait_for(w.__aiter__().__anext__(), 10)
        assert (ev.type, ev.object["metadata"]["resourceVersion"]) == ("DELETED", str(rev))
        assert ev.object == gone
        w.stop()
        again = await store.create("/registry/configmaps/ns/c0", cm("c0"))
        assert int(again["metadata"]["resourceVersion"]) == rev + 1
    finally:
        await store.close()


async def test_snapshot_truncates_journal_and_restores(tmp_path: Path) -> None:
    d = str(tmp_path / "data")
    store = await open_embedded(d, snapshot_entries=10)
    for i in range(35):
        await store.create(f"/registry/configmaps/ns/s{i:02d}", cm(f"s{i:02d}"))
    await store.compact(await store.current_revision() - 5)
    rev = await store.current_revision()
    await store.close()
    assert os.path.exists(os.path.join(d, "snapshot"))
    # The journal's file may still hold entries the last snapshot covers (a dead prefix,
    # see DurableJournal.deleteEntriesTo), but not all of them are live.
    journal = DurableJournal(os.path.join(d, "journal"), fsync=False)
    try:
        assert len(journal) > 0
    finally:
        journal._destroy()

    store = await open_embedded(d, snapshot_entries=10)
    try:
        # reopened, it holds only what the last snapshot does not cover
        assert 0 < len(store.client.commands._journal) < 35  # type: ignore[attr-defined]
        assert await store.current_revision() == rev
        assert await store.count("/registry/configmaps/ns") == 35
        assert await store.compacted_revision() == rev - 5
        with pytest.raises(StorageError) as e:
            await store.get_list("/registry/configmaps/ns",
                                 ListOptions(resource_version="2", resource_version_match="Exact"))
        assert e.value.code is Code.RESOURCE_EXPIRED
    finally:
        await store.close()


async def test_torn_journal_tail_is_cut(tmp_path: Path) -> None:
    d = str(tmp_path / "data")
    store = await open_embedded(d)
    await store.create("/registry/configmaps/ns/a", cm("a"))
    await store.create("/registry/configmaps/ns/b", cm("b"))
    await store.close()
    with open(os.path.join(d, "journal"), "ab") as f:
        f.write(b"\x10\x00\x00\x00garbage")  # a crash in the middle of an append
    store = await open_embedded(d)
    try:
        res = await store.get_list("/registry/configmaps/ns", ListOptions())
        assert [o["metadata"]["name"] for o in res.items] == ["a", "b"]
        await store.create("/registry/configmaps/ns/c", cm("c"))
        assert await store.get("/registry/configmaps/ns/c", GetOptions()) is not None
    finally:
        await store.close()


async def test_damage_inside_the_synced_journal_is_refused(tmp_path: Path) -> None:
    """A flipped bit in an acknowledged entry read as a torn tail: the store started without
    that write and every write after it. The journal's synced mark (written once a second
    while writes arrive, and at close) tells damage from a torn write."""
    from raftstore.journal import JournalError

    d = str(tmp_path / "data")
    store = await open_embedded(d)
    for i in range(5):
        await store.create(f"/registry/configmaps/ns/c{i}", cm(f"c{i}"))
    await store.close()
    path = os.path.join(d, "journal")
    with open(path, "r+b") as f:
        data = f.read()
        (length,) = struct.unpack_from("<I", data, 0)
        second = 24 + length  # the second record: the first write after the first
        f.seek(second + 30)
        f.write(bytes([data[second + 30] ^ 0x01]))
    with pytest.raises(JournalError, match="damaged"):
        await open_embedded(d)
    # the refusal changed nothing on disk and released the data directory
    with open(path, "rb") as f:
        assert len(f.read()) == len(data)
    with pytest.raises(JournalError, match="damaged"):
        await open_embedded(d)  # not "in use"


async def test_running_store_marks_its_journal_synced(tmp_path: Path) -> None:
    d = str(tmp_path / "data")
    store = await open_embedded(d)
    try:
        await store.create("/registry/configmaps/ns/a", cm("a"))
        await asyncio.sleep(1.05)
        await store.create("/registry/configmaps/ns/b", cm("b"))  # a second on: marks
        meta = os.path.join(d, "journal.meta")
        for _ in range(500):
            if os.path.exists(meta):
                with open(meta, "rb") as f:
                    if msgpack.unpackb(f.read()).get("synced", 0) >= 2:
                        break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the journal's synced mark was never written")
    finally:
        await store.close()


async def test_data_dir_in_use(tmp_path: Path) -> None:
    d = str(tmp_path / "data")
    store = await open_embedded(d)
    try:
        with pytest.raises(RuntimeError, match="in use"):
            await open_embedded(d)
    finally:
        await store.close()


async def test_concurrent_writes_share_syncs(tmp_path: Path) -> None:
    from raftstore import metrics

    store = await open_embedded(str(tmp_path / "data"))
    try:
        before = metrics.JOURNAL_SYNCS._value.get()
        await asyncio.gather(
            *(store.create(f"/registry/configmaps/ns/g{i}", cm(f"g{i}")) for i in range(50))
        )
        syncs = metrics.JOURNAL_SYNCS._value.get() - before
        assert 1 <= syncs < 50  # group commit: one fdatasync covers many writes
    finally:
        await store.close()


async def test_revisions_beyond_int64(tmp_path: Path) -> None:
    store = await open_embedded(str(tmp_path / "data"), too_large_wait=0.05)
    try:
        with pytest.raises(StorageError) as e:
            await store.get_list("/registry/configmaps",
                                 ListOptions(resource_version=str(2**63), limit=1))
        assert e.value.code is Code.INVALID
        assert e.value.message.endswith("value out of range")
        with pytest.raises(StorageError) as e:
            await store.watch("/registry/configmaps", ListOptions(resource_version=str(2**63 - 1)))
        assert e.value.code is Code.TOO_LARGE_RESOURCE_VERSION
    finally:
        await store.close()


_WRITER = """
import asyncio, sys
from storage.embedded import open_embedded

async def main():
    store = await open_embedded(sys.argv[1], snapshot_entries=40)
    i = 0
    while True:
        batch = [store.create(f"/registry/configmaps/ns/k{i + j:05d}", {"metadata": {}})
                 for j in range(8)]
        await asyncio.gather(*batch)
        print(i + 7, flush=True)  # every key up to here is acknowledged
        i += 8

asyncio.run(main())
"""


def test_process_kill_loses_no_acknowledged_write(tmp_path: Path) -> None:
    import subprocess
    import sys

    from raftstore.launcher import REPO_ROOT

    d = str(tmp_path / "data")
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, d], stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    acked = -1
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            acked = int(line)
            if acked >= 400:  # past several snapshots and journal cuts
                break
    finally:
        proc.kill()
        proc.wait()
    assert acked >= 400

    async def check() -> None:
        store = await open_embedded(d)
        try:
            for i in range(acked + 1):
                got = await store.get(f"/registry/configmaps/ns/k{i:05d}", GetOptions())
                assert got is not None
        finally:
            await store.close()

    asyncio.run(check())


async def _store_with_a_snapshot(d: str) -> int:
    """An embedded store that has written a snapshot; its journal index."""
    store = await open_embedded(d, snapshot_entries=20)
    for i in range(200):
        await store.create(f"/registry/configmaps/ns/s{i}", cm(f"s{i}"))
    for _ in range(200):
        if os.path.exists(os.path.join(d, "snapshot")):
            break
        await asyncio.sleep(0.02)
    await store.close()
    assert os.path.exists(os.path.join(d, "snapshot"))
    return 200


async def test_damaged_snapshot_is_refused(tmp_path: Path) -> None:
    """The embedded snapshot had no checksum: a flipped bit was served as data."""
    from raftstore.journal import JournalError

    d = str(tmp_path / "data")
    await _store_with_a_snapshot(d)
    snap = os.path.join(d, "snapshot")
    with open(snap, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(size // 2)
        byte = f.read(1)
        f.seek(size // 2)
        f.write(bytes([byte[0] ^ 0x04]))
    with pytest.raises(JournalError, match="checksum mismatch"):
        await open_embedded(d)
    with open(snap, "wb") as f:
        f.write(b"PLAT")
    with pytest.raises(JournalError, match="cut short"):
        await open_embedded(d)


async def test_missing_snapshot_behind_a_compacted_journal_is_refused(tmp_path: Path) -> None:
    """Without its snapshot, the store replayed the journal's remaining entries over an
    empty state and started with most objects gone (resourceVersions reused)."""
    from raftstore.journal import JournalError

    d = str(tmp_path / "data")
    await _store_with_a_snapshot(d)
    j = DurableJournal(os.path.join(d, "journal"))
    keep = [e for e in j if e[1] > 100]  # as a rewrite after the snapshot leaves it
    j._rewrite(keep)
    j._destroy()
    os.remove(os.path.join(d, "snapshot"))
    with pytest.raises(JournalError, match="snapshot is missing but the journal goes on"):
        await open_embedded(d)


async def test_synced_mark_follows_the_last_write(tmp_path: Path) -> None:
    """The mark was written only when a write came a second after the last mark: after a
    burst it stayed behind for good, and damage past it was cut as a torn tail."""
    d = str(tmp_path / "data")
    store = await open_embedded(d)
    try:
        for i in range(5):
            await store.create(f"/registry/configmaps/ns/m{i}", cm(f"m{i}"))
        meta = os.path.join(d, "journal.meta")
        for _ in range(300):  # no more writes: the mark still catches up within ~1 s
            if os.path.exists(meta):
                with open(meta, "rb") as f:
                    if msgpack.unpackb(f.read()).get("synced", 0) >= 5:
                        break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the synced mark stayed behind the last write")
    finally:
        await store.close()
