"""The peer-message framing replication.py gives pysyncobj: a zlib stream of stored blocks,
built by hand, that any zlib reads."""

from __future__ import annotations

import os
import zlib

import pytest

from raftstore.replication import _stored_zlib


@pytest.mark.parametrize("size", [0, 1, 200, 65534, 65535, 65536, 3 * 65535, 300_001])
def test_stored_zlib_round_trips(size: int) -> None:
    data = os.urandom(size)
    framed = _stored_zlib(data)
    assert zlib.decompress(framed) == data
    # Stored blocks: five bytes of framing per 64 KiB, two of header, four of checksum.
    assert len(framed) == size + 6 + 5 * max(1, -(-size // 65535))


@pytest.mark.parametrize("size", [0, 7, 1000, 16384])
def test_stored_zlib_matches_zlib_level_0(size: int) -> None:
    data = os.urandom(size)
    assert _stored_zlib(data) == zlib.compress(data, 0)


def test_corrupt_frame_is_refused() -> None:
    framed = bytearray(_stored_zlib(b"append entries"))
    framed[9] ^= 0xFF
    with pytest.raises(zlib.error):
        zlib.decompress(bytes(framed))


def test_peer_messages_pickle_bytes_as_bytes() -> None:
    """Peer messages go out as pickle protocol 5 (bytes as they are, not protocol 2's
    latin-1 round trip), and pysyncobj's reader reads both protocols."""
    import pickle
    import pickletools

    import pysyncobj.pickle as pso_pickle
    import pysyncobj.tcp_connection as tcp

    command = os.urandom(1300)
    message = {"type": "append_entries", "term": 3, "entries": [(command, 7, 3)]}
    wire = tcp.pickle.dumps(message)
    assert wire[:2] == b"\x80\x05"
    ops = {op.name for op, _, _ in pickletools.genops(wire)}
    assert "SHORT_BINBYTES" in ops or "BINBYTES" in ops
    assert "GLOBAL" not in ops and "STACK_GLOBAL" not in ops  # no codecs.encode call
    assert tcp.pickle.loads(wire) == message
    assert pso_pickle.loads(pickle.dumps(message, 2)) == message  # an older member's message
