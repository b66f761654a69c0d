"""Secret (core v1; upstream ``pkg/registry/core/secret/strategy.go`` and
``ValidateSecret``)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from typing import TYPE_CHECKING, Any, Final

from apiserver import selectors
from apiserver.registry import validation as v
from apiserver.registry.strategies.configmaps import (
    MAX_SIZE,
    canonical_base64_map,
    decode_base64_map,
    immutable_causes,
    validate_data_map,
)
from apiserver.registry.strategy import Object, Strategy, as_dict, dict_at

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

SA_TOKEN_TYPE: Final = "platform.io/service-account-token"
SA_NAME_KEY: Final = "platform.io/service-account.name"
DOCKER_KEYS: Final = {"platform.io/dockercfg": ".dockercfg",
                      "platform.io/dockerconfigjson": ".dockerconfigjson"}
BASIC_AUTH_TYPE: Final = "platform.io/basic-auth"
SSH_AUTH_TYPE: Final = "platform.io/ssh-auth"
TLS_TYPE: Final = "platform.io/tls"
BOOTSTRAP_TOKEN_TYPE: Final = "bootstrap.platform.io/token"
BOOTSTRAP_PREFIX: Final = "bootstrap-token-"
REDACTED: Final = "<secret contents redacted>"
TOKEN_ID_RE: Final = re.compile(r"^[a-z0-9]{6}$")
TOKEN_SECRET_RE: Final = re.compile(r"^[a-z0-9]{16}$")
# upstream bootstrapapi.BootstrapGroupPattern
GROUP_PATTERN: Final = r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z"
_GROUP_RE: Final = re.compile(r"^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$")


def _decoded(value: Any) -> bytes:
    if not isinstance(value, str):
        return b""
    clean = value.replace("\r", "").replace("\n", "")
    try:
        return base64.b64decode(clean)
    except (binascii.Error, ValueError):
        return b""


def go_json_error(raw: bytes) -> str:
    """The error Go's json.Unmarshal into a map gives for ``raw`` ("" when it decodes to an
    object), in Go's words for the common cases."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return "unexpected end of JSON input"
    try:
        val = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()):
            return "unexpected end of JSON input"
        ch = text[e.pos]
        where = "looking for beginning of value" if e.pos == len(text) - len(text.lstrip()) \
            else "after top-level value" if e.msg == "Extra data" \
            else "looking for beginning of object key string"
        return f"invalid character {_go_char(ch)} {where}"
    if not isinstance(val, dict):
        kinds = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}
        kind = "null" if val is None else kinds.get(type(val), "value")
        if val is None:
            return ""
        return (f"json: cannot unmarshal {kind} into Go value of type "
                "map[string]interface {}")
    return ""


def _go_char(ch: str) -> str:
    return "'\\''" if ch == "'" else f"'{ch}'"


_RFC3339_RE: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def _rfc3339(text: str) -> bool:
    if not _RFC3339_RE.match(text):
        return False
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def validate_bootstrap_token(obj: Object, data: dict[str, Any]) -> list[Cause]:
    """Bootstrap token Secrets (SPEC 5.3): the name carries the token id; token-id and
    token-secret are required in their formats; extra groups start with
    ``system:bootstrappers:``; expiration is RFC 3339."""
    causes: list[Cause] = []
    name = str(as_dict(obj.get("metadata")).get("name") or "")
    token_id = _decoded(data.get("token-id")).decode("utf-8", "replace")
    if "token-id" not in data:
        causes.append(v.required("data[token-id]"))
    elif not TOKEN_ID_RE.match(token_id):
        causes.append(v.invalid("data[token-id]", REDACTED,
                                "must match the regular expression '[a-z0-9]{6}'"))
    if name and (
            not name.startswith(BOOTSTRAP_PREFIX)
            or (TOKEN_ID_RE.match(token_id) and name != BOOTSTRAP_PREFIX + token_id)):
        causes.append(v.invalid("metadata.name", name,
                                'must be "bootstrap-token-<token-id>" for a Secret of type '
                                f'"{BOOTSTRAP_TOKEN_TYPE}"'))
    if "token-secret" not in data:
        causes.append(v.required("data[token-secret]"))
    elif not TOKEN_SECRET_RE.match(_decoded(data["token-secret"]).decode("utf-8", "replace")):
        causes.append(v.invalid("data[token-secret]", REDACTED,
                                "must match the regular expression '[a-z0-9]{16}'"))
    if "auth-extra-groups" in data:
        raw = _decoded(data["auth-extra-groups"]).decode("utf-8", "replace")
        for group in raw.split(","):
            g = group.strip()
            if not _GROUP_RE.match(g):
                causes.append(v.invalid("data[auth-extra-groups]", g,
                                        f"bootstrap group {v.go_quote(g)} is invalid (must "
                                        f"match {GROUP_PATTERN})"))
    if "expiration" in data:
        exp = _decoded(data["expiration"]).decode("utf-8", "replace")
        if not _rfc3339(exp):
            causes.append(v.invalid("data[expiration]", exp,
                                    "must be a timestamp in RFC 3339 format"))
    return causes


class SecretStrategy(Strategy):
    kind = "Secret"
    resource = "secrets"
    singular = "secret"
    field_getters = {"type": selectors.path_getter("type")}
    typed_fields = {"data": "map[string][]uint8", "stringData": "map[string]string",
                    "type": "string", "immutable": "bool"}
    omit_empty = ("data",)

    def field_label_error(self, label: str) -> str:
        return selectors.core_unsupported(label)

    def default(self, obj: Object) -> None:
        if not obj.get("type"):
            obj["type"] = "Opaque"
        # stringData is write-only: merged into data (base64), overriding keys of data
        canonical_base64_map(obj, "data", self.kind)
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = dict_at(obj, "data")
            for k, val in string_data.items():
                data[k] = base64.b64encode(str(val).encode()).decode()

    def validate(self, obj: Object) -> list[Cause]:
        causes, _ = validate_data_map(obj.get("data"), "data", binary=True)
        size = decode_base64_map(obj.get("data"), self.kind)
        if size > MAX_SIZE:
            causes.append(v.too_long("data", MAX_SIZE))
        stype = str(obj.get("type") or "Opaque")
        data = as_dict(obj.get("data"))
        if stype == SA_TOKEN_TYPE:
            ann = as_dict(obj.get("metadata", {}).get("annotations"))
            if not ann.get(SA_NAME_KEY):
                causes.append(v.required(f"metadata.annotations[{SA_NAME_KEY}]"))
        elif stype in DOCKER_KEYS:
            key = DOCKER_KEYS[stype]
            if key not in data:
                causes.append(v.required(f"data[{key}]"))
            else:
                err = go_json_error(_decoded(data[key]))
                if err:
                    causes.append(v.invalid(f"data[{key}]", REDACTED, err))
        elif stype == BASIC_AUTH_TYPE:
            if "username" not in data and "password" not in data:
                causes.append(v.required("data[username]"))
                causes.append(v.required("data[password]"))
        elif stype == SSH_AUTH_TYPE:
            if not _decoded(data.get("ssh-privatekey")):
                causes.append(v.required("data[ssh-privatekey]"))
        elif stype == TLS_TYPE:
            for key in ("tls.crt", "tls.key"):
                if key not in data:
                    causes.append(v.required(f"data[{key}]"))
        elif stype == BOOTSTRAP_TOKEN_TYPE:
            causes += validate_bootstrap_token(obj, data)
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes: list[Cause] = []
        if (new.get("type") or "Opaque") != (old.get("type") or "Opaque"):
            causes.append(v.immutable("type", new.get("type") or ""))
        return causes + immutable_causes(new, old, ("data",)) + self.validate(new)
