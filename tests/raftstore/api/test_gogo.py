"""raftstore.api.gogo: request bytes checked as etcd's generated Unmarshal checks them. The
expected words are etcd 3.4's answers to these bytes (seen in
``test_differential_fuzz.py::test_malformed_requests_answered_as_etcd``)."""

from __future__ import annotations

import pytest

from raftstore.api import gogo
from raftstore.api.pb import rpc_pb2 as pb

PUT = pb.PutRequest.DESCRIPTOR
TXN = pb.TxnRequest.DESCRIPTOR


@pytest.mark.parametrize(("data", "error"), [
    (b"\x08\x01", "proto: wrong wireType = 0 for field Key"),  # key as a varint
    (b"\x0f", "proto: wrong wireType = 7 for field Key"),
    (b"\x0c", "proto: PutRequest: wiretype end group for non-group"),
    (b"\x00", "proto: PutRequest: illegal tag 0 (wire type 0)"),
    (b"\x0a\x05ab", "unexpected EOF"),  # a length past the end
    (b"\x18" + b"\xff" * 10 + b"\x01", "proto: integer overflow"),  # an 11-byte varint
    (b"\x0a" + b"\xff" * 8 + b"\x7f", "proto: negative length found during unmarshaling"),
    (b"\x9f\x06", "proto: illegal wireType 7"),  # field 99, undeclared, skipped: no such type
    (b"\x9c\x06", "proto: PutRequest: wiretype end group for non-group"),  # any field
    (b"\x9b\x06\x08\x01", "unexpected EOF"),  # a group never ended
    (b"\x1a\x01", "proto: wrong wireType = 2 for field Lease"),
])
def test_etcd_errors(data: bytes, error: str) -> None:
    assert gogo.check(PUT, data) == (error, b"")


def test_nested_messages_are_checked_with_their_own_names() -> None:
    # TxnRequest.success[0] = RequestOp{request_put: PutRequest{<end group>}}
    put = b"\x0c"
    op = b"\x12" + bytes([len(put)]) + put
    data = b"\x12" + bytes([len(op)]) + op
    assert gogo.check(TXN, data) == ("proto: PutRequest: wiretype end group for non-group", b"")


def test_undeclared_fields_are_skipped_and_dropped() -> None:
    key = b"\x0a\x01k"
    # field 2**29 (beyond what Python's parser takes), a group, field 99 as fixed64
    junk = b"\x80\x80\x80\x80\x10\x01" + b"\x9b\x06\x08\x01\x9c\x06" + b"\x99\x06" + bytes(8)
    error, declared = gogo.check(PUT, junk + key)
    assert error is None
    assert pb.PutRequest.FromString(declared) == pb.PutRequest(key=b"k")
    with pytest.raises(Exception):  # noqa: B017, PT011 - what Python refuses, etcd reads
        pb.PutRequest.FromString(junk + key)


def test_valid_requests_pass_unchanged() -> None:
    txn = pb.TxnRequest(
        compare=[pb.Compare(key=b"a", target=pb.Compare.VALUE, value=b"v")],
        success=[pb.RequestOp(request_put=pb.PutRequest(key=b"a", value=b"w", lease=7))],
        failure=[pb.RequestOp(request_range=pb.RangeRequest(key=b"a", limit=-1))])
    data = txn.SerializeToString()
    error, declared = gogo.check(TXN, data)
    assert error is None
    assert pb.TxnRequest.FromString(declared) == txn
