"""A member's snapshot file (``snapshot.msgpack``): a full frame, then delta frames.

pysyncobj knows one snapshot file (``fullDumpFile``): it sends a follower that fell behind the
compacted log that file as it is, and loads it at start-up. Rewriting the whole state into it
at every log compaction costs a large store dearly (100 MB rewritten every 10-20 s under
load, docs/benchmarks.md), so a member appends the changes since its last frame as a delta
frame instead, and rewrites the file with one full frame only when a delta cannot follow
(a compaction since, see ``KVStore.restore``) or when the deltas have grown as large as the
full frame (replication.py ``_write_snapshot``). Loading replays the frames in order.

Layout of a frame (integers big-endian):

    u32    n, the length of the head
    n      head: msgpack map {entries: [last, prev], cluster: [...], crc32: true, frame: true,
           and for a delta repeated: the bytes it repeats of earlier frames}
    u64    m, the length of the body
    m      body: the state machine's snapshot (first frame) or delta (later ones)
    8      trailer: b"CRC1", u32 CRC-32 of the head's length, the head and the body

The CRC leaves out the body's length: a full frame is streamed to disk and its length filled
in afterwards. A length that is wrong puts the trailer elsewhere, which its check catches.

A file written before deltas existed is one frame whose head has no ``frame`` key: its body
runs to the trailer at the end of the file (or to the end, without ``crc32``). Nothing is
appended to such a file; the next snapshot rewrites it.

A frame that cannot be read (cut short by a crash while it was appended, or damaged) ends
what ``parse`` returns: the caller decides whether what precedes it is enough
(replication.py ``_load_snapshot``: only if the journal reaches back to it).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any, Final

import msgpack

HEAD_LEN: Final = struct.Struct(">I")
BODY_LEN: Final = struct.Struct(">Q")
TRAILER: Final = struct.Struct(">4sI")
MAGIC: Final = b"CRC1"


def encode_head(entries: list[list[Any]], cluster: list[str], repeated: int = 0) -> bytes:
    """A frame's head. ``repeated`` (deltas): how many of the frame's bytes repeat what the
    frames before it hold (replication.py decides from their sum when to write a full frame
    again)."""
    head: dict[str, Any] = {"entries": entries, "cluster": cluster, "crc32": True,
                            "frame": True}
    if repeated:
        head["repeated"] = repeated
    return bytes(msgpack.packb(head, use_bin_type=True))


def encode_frame(head: bytes, body: bytes) -> bytes:
    """A whole frame, for a body already in memory."""
    return b"".join(frame_parts(head, [body]))


def frame_parts(head: bytes, body: list[bytes]) -> list[bytes]:
    """A whole frame as a list of parts, for a body held as parts (a delta, packed in
    batches): joining them would copy it all once more."""
    start = HEAD_LEN.pack(len(head)) + head
    crc = zlib.crc32(start)
    for part in body:
        crc = zlib.crc32(part, crc)
    size = sum(len(part) for part in body)
    return [start, BODY_LEN.pack(size), *body, TRAILER.pack(MAGIC, crc)]


@dataclass(frozen=True, slots=True)
class Frame:
    head: dict[str, Any]
    body: bytes
    end: int  # the file offset just after this frame


@dataclass(frozen=True, slots=True)
class Parsed:
    frames: list[Frame]  # never empty
    end: int  # the offset after the last frame read: anything after it was not read
    chained: bool  # frames may be appended (a file of this format)
    size: int  # the file's

    @property
    def torn(self) -> bool:
        """Whether bytes after the last frame were left unread."""
        return self.end < self.size


def parse(data: bytes) -> Parsed:
    """The frames of a snapshot file, up to the first that cannot be read. Raises ValueError
    when not even the first can."""
    frames: list[Frame] = []
    size = len(data)
    pos = 0
    while pos < size:
        frame = _frame_at(data, pos)
        if frame is None:
            break
        if frame.head.get("frame") is None:
            if pos == 0:
                return Parsed([_whole_file(data, frame.head)], size, False, size)
            break  # a later frame of the old layout cannot be: damage
        frames.append(frame)
        pos = frame.end
    if not frames:
        raise ValueError("checksum mismatch (damaged or cut short)")
    return Parsed(frames, pos, True, size)


def _frame_at(data: bytes, pos: int) -> Frame | None:
    """The frame at ``pos``; for a head of the old layout, a Frame with only the head."""
    size = len(data)
    if pos + HEAD_LEN.size > size:
        return None
    (n,) = HEAD_LEN.unpack_from(data, pos)
    head_end = pos + HEAD_LEN.size + n
    if head_end > size:
        return None
    try:
        head = msgpack.unpackb(data[pos + HEAD_LEN.size : head_end], raw=False)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        return None
    if not isinstance(head, dict) or not isinstance(head.get("entries"), list):
        return None
    if head.get("frame") is None:
        return Frame(head, b"", head_end)
    if head_end + BODY_LEN.size > size:
        return None
    (m,) = BODY_LEN.unpack_from(data, head_end)
    body_start = head_end + BODY_LEN.size
    body_end = body_start + m
    if body_end + TRAILER.size > size:
        return None
    magic, crc = TRAILER.unpack_from(data, body_end)
    body = data[body_start:body_end]
    if magic != MAGIC or zlib.crc32(body, zlib.crc32(data[pos:head_end])) != crc:
        return None
    return Frame(head, body, body_end + TRAILER.size)


def _whole_file(data: bytes, head: dict[str, Any]) -> Frame:
    """The one frame of a file in the layout before deltas."""
    (n,) = HEAD_LEN.unpack_from(data, 0)
    start = HEAD_LEN.size + n
    end = len(data)
    if head.get("crc32"):
        end -= TRAILER.size
        magic, crc = TRAILER.unpack_from(data, max(end, 0))
        if end < start or magic != MAGIC or zlib.crc32(data[:end]) != crc:
            raise ValueError("checksum mismatch (damaged or cut short)")
    return Frame(head, data[start:end], len(data))
