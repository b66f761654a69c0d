"""The real etcdctl (3.4) against the real grpc server: what users type, what etcd prints."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from tests.raftstore.api.conftest import ETCDCTL, Server

pytestmark = pytest.mark.skipif(not os.path.exists(ETCDCTL), reason="etcdctl not installed")


async def test_put_get_range_delete(server: Server) -> None:
    ctl = server.etcdctl
    assert (await ctl("put", "foo", "bar"))[1] == "OK\n"
    await ctl("put", "foo2", "baz")
    await ctl("put", "fop", "x")
    assert (await ctl("get", "foo"))[1] == "foo\nbar\n"
    assert (await ctl("get", "--prefix", "foo"))[1] == "foo\nbar\nfoo2\nbaz\n"
    assert (await ctl("get", "foo", "fop"))[1] == "foo\nbar\nfoo2\nbaz\n"  # [foo, fop)
    assert (await ctl("get", "--prefix", "fo", "--limit=1"))[1] == "foo\nbar\n"
    out = (await ctl("get", "--prefix", "fo", "--sort-by=MODIFY", "--order=DESCEND",
                     "--keys-only"))[1]
    assert out.split() == ["fop", "foo2", "foo"]
    data = json.loads((await ctl("get", "--prefix", "fo", "--limit=2", "-w", "json"))[1])
    assert data["more"] is True and data["count"] == 3 and data["header"]["revision"] == 4
    assert (await ctl("del", "--prefix", "foo"))[1] == "2\n"
    assert (await ctl("del", "--prev-kv", "fop"))[1] == "1\nfop\nx\n"
    assert (await ctl("get", "", "--prefix"))[1] == ""


async def test_txn_from_stdin(server: Server) -> None:
    ctl = server.etcdctl
    await ctl("put", "k", "v1")
    script = b'value("k") = "v1"\n\nput k v2\nget k\n\nput k failed\n\n'
    out = (await ctl("txn", stdin=script))[1]
    assert out == "SUCCESS\n\nOK\n\nk\nv2\n"
    out = (await ctl("txn", stdin=script))[1]
    assert out == "FAILURE\n\nOK\n"
    assert (await ctl("get", "k"))[1] == "k\nfailed\n"
    script = b'mod("k") > "0"\nversion("k") = "3"\n\nget k\n\n\n'
    assert (await ctl("txn", stdin=script))[1] == "SUCCESS\n\nk\nfailed\n"


async def test_watch_with_rev_and_prev_kv(server: Server) -> None:
    ctl = server.etcdctl
    await ctl("put", "w", "1")  # 2
    await ctl("put", "w", "2")  # 3
    proc = await asyncio.create_subprocess_exec(
        ETCDCTL, f"--endpoints={server.endpoint}", "watch", "--rev=2", "--prev-kv", "w",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "ETCDCTL_API": "3"},
    )
    try:
        await asyncio.sleep(0.5)
        await ctl("put", "w", "3")
        await ctl("del", "w")
        assert proc.stdout is not None
        lines: list[str] = []
        while len(lines) < 14:
            line = await asyncio.wait_for(proc.stdout.readline(), 10)
            lines.append(line.decode().rstrip("\n"))
    finally:
        proc.terminate()
        await proc.wait()
    # PUT at 2 has no previous value; later events print the previous key-value first.
    assert lines == ["PUT", "w", "1", "PUT", "w", "1", "w", "2", "PUT", "w", "2", "w", "3",
                     "DELETE"]


async def test_watch_compacted(server: Server) -> None:
    ctl = server.etcdctl
    for i in range(3):
        await ctl("put", "c", str(i))
    assert (await ctl("compaction", "4"))[1] == "compacted revision 4\n"
    rc, out, err = await asyncio.wait_for(
        ctl("watch", "--rev=2", "c", check=False), 15)
    assert rc != 0
    assert "etcdserver: mvcc: required revision has been compacted" in out + err


async def test_lease_commands(server: Server) -> None:
    ctl = server.etcdctl
    out = (await ctl("lease", "grant", "100"))[1]
    lease = out.split()[1]
    assert out == f"lease {lease} granted with TTL(100s)\n"
    await ctl("put", "lk", "v", f"--lease={lease}")
    out = (await ctl("lease", "timetolive", lease, "--keys"))[1]
    assert out.startswith(f"lease {lease} granted with TTL(100s), remaining(")
    assert out.endswith("attached keys([lk])\n")
    assert lease in (await ctl("lease", "list"))[1]
    assert (await ctl("lease", "keep-alive", "--once", lease))[1] == (
        f"lease {lease} keepalived with TTL(100)\n")
    assert (await ctl("lease", "revoke", lease))[1] == f"lease {lease} revoked\n"
    assert (await ctl("get", "lk"))[1] == ""
    assert (await ctl("lease", "timetolive", lease))[1] == f"lease {lease} already expired\n"


async def test_error_messages(server: Server) -> None:
    ctl = server.etcdctl

    async def err(*args: str, stdin: bytes | None = None) -> str:
        rc, _, e = await ctl(*args, stdin=stdin, check=False)
        assert rc != 0
        return e.strip().splitlines()[-1]

    assert await err("put", "", "v") == "Error: etcdserver: key is not provided"
    for i in range(3):
        await ctl("put", "r", str(i))  # 2..4
    await ctl("compaction", "3")
    assert await err("get", "r", "--rev=2") == (
        "Error: etcdserver: mvcc: required revision has been compacted")
    assert await err("compaction", "3") == (
        "Error: etcdserver: mvcc: required revision has been compacted")
    assert await err("get", "r", "--rev=99") == (
        "Error: etcdserver: mvcc: required revision is a future revision")
    assert await err("put", "x", "y", "--lease=1234") == (
        "Error: etcdserver: requested lease not found")
    assert await err("lease", "revoke", "1234") == (
        "Error: failed to revoke lease (etcdserver: requested lease not found)")
    assert await err("lease", "grant", "99999999999") == (
        "Error: failed to grant lease (etcdserver: too large lease TTL)")
    assert await err("put", "nokey", "--ignore-value") == "Error: etcdserver: key not found"
    # 2 MiB: refused by gRPC's receive limit (1.5 MiB + 512 KiB), exactly as etcd.
    assert await err("put", "big", stdin=b"a" * 2 * 1024 * 1024) == (
        "Error: rpc error: code = ResourceExhausted desc = trying to send message larger "
        "than max (2097162 vs. 2097152)")
    assert await err("put", "big", stdin=b"a" * 1_600_000) == (
        "Error: etcdserver: request is too large")


async def test_status_and_member_list(server: Server) -> None:
    ctl = server.etcdctl
    st = json.loads((await ctl("endpoint", "status", "-w", "json"))[1])[0]["Status"]
    assert st["version"] == "3.4.0+raftstore" and st["leader"] == server.consensus.member_id
    ml = json.loads((await ctl("member", "list", "-w", "json"))[1])
    assert ml["members"][0]["ID"] == server.consensus.member_id
    assert "is healthy" in (await ctl("endpoint", "health"))[2]
    assert (await ctl("endpoint", "hashkv"))[1].startswith(f"{server.endpoint}, ")


async def test_defrag_succeeds(server: Server) -> None:
    """Nothing to defragment in memory, but ``etcdctl defrag`` (routine maintenance in
    operators' scripts) must succeed as against etcd; it answered UNIMPLEMENTED."""
    code, out, err = await server.etcdctl("defrag")
    assert code == 0, err
    assert out.strip() == f"Finished defragmenting etcd member[{server.endpoint}]"
