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
