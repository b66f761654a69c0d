from __future__ import annotations

import base64

import orjson
import pytest

from storage.continuetoken import INCONSISTENT_RV, decode_continue, encode_continue, next_page
from storage.errors import Code, StorageError

PREFIX = "/registry/configmaps/"


def _raw(obj: object) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(obj)).rstrip(b"=").decode()


def test_round_trip() -> None:
    token = encode_continue(PREFIX + "ns1/b\x00", PREFIX, 42)
    assert "=" not in token
    assert orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) == {
        "v": "meta.plat.io/v1",
        "rv": 42,
        "start": "ns1/b\x00",
    }
    assert decode_continue(token, PREFIX) == (PREFIX + "ns1/b\x00", 42)


def test_inconsistent_rv_round_trips() -> None:
    token = encode_continue(PREFIX + "a", PREFIX, INCONSISTENT_RV)
    assert decode_continue(token, PREFIX) == (PREFIX + "a", -1)


def test_encode_rejects_key_outside_prefix() -> None:
    with pytest.raises(StorageError) as e:
        encode_continue("/registry/secrets/a", PREFIX, 1)
    assert e.value.code is Code.INTERNAL


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("!!!", "invalid continue token: continue key is not valid: illegal base64 data at input byte 0"),
        (_raw({"v": "meta.plat.io/v1", "rv": 0, "start": "a"}),
         "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion "
         "(version meta.plat.io/v1)"),
        (_raw({"v": "meta.plat.io/v1", "rv": 3, "start": ""}),
         "invalid continue token: continue key is not valid: encoded start key empty "
         "(version meta.plat.io/v1)"),
        (_raw({"v": "meta.k8s.io/v2", "rv": 3, "start": "a"}),
         "invalid continue token: continue key is not valid: server does not recognize this "
         "encoded version meta.k8s.io/v2"),
        (_raw({"v": "meta.plat.io/v1", "rv": 3, "start": "../secrets/x"}),
         "invalid continue token: continue key is not valid: ../secrets/x"),
        (_raw({"v": "meta.plat.io/v1", "rv": 3, "start": "//x"}),
         "invalid continue token: continue key is not valid: //x"),
        (_raw([1, 2]), "invalid continue token: continue key is not valid: json: cannot "
         "unmarshal array into Go value of type storage.continueToken"),
        # not JSON: Go's scanner's words (Python's parser text leaked before)
        ("garbage", "invalid continue token: continue key is not valid: invalid character "
         "'\\u0081' looking for beginning of value"),
        (base64.urlsafe_b64encode(b'{"v":').decode().rstrip("="),
         "invalid continue token: continue key is not valid: unexpected end of JSON input"),
    ],
)
def test_decode_errors(token: str, message: str) -> None:
    with pytest.raises(StorageError) as e:
        decode_continue(token, PREFIX)
    assert e.value.code is Code.INVALID
    assert e.value.message == message


def test_decode_garbage_json() -> None:
    token = base64.urlsafe_b64encode(b"{nope").rstrip(b"=").decode()
    with pytest.raises(StorageError) as e:
        decode_continue(token, PREFIX)
    assert e.value.code is Code.INVALID
    assert e.value.message.startswith("invalid continue token: continue key is not valid: ")


def test_padded_token_rejected() -> None:
    token = encode_continue(PREFIX + "ab", PREFIX, 7)
    padded = token + "=" * (-len(token) % 4 or 4)
    with pytest.raises(StorageError) as e:
        decode_continue(padded, PREFIX)
    assert e.value.code is Code.INVALID


def test_next_page() -> None:
    assert next_page(PREFIX + "a", PREFIX, 5, more=False, remaining=3) == ("", None)
    token, remaining = next_page(PREFIX + "a", PREFIX, 5, more=True, remaining=3)
    assert decode_continue(token, PREFIX) == (PREFIX + "a\x00", 5)
    assert remaining == 3
    assert next_page(PREFIX + "a", PREFIX, 5, more=True, remaining=None)[1] is None


def test_decode_rv_out_of_int64() -> None:
    with pytest.raises(StorageError) as e:
        decode_continue(_raw({"v": "meta.plat.io/v1", "rv": 2**63, "start": "a"}), PREFIX)
    assert e.value.code is Code.INVALID
