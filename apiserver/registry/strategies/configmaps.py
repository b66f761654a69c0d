"""ConfigMap (core v1; upstream ``pkg/registry/core/configmap/strategy.go``)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from apiserver import status
from apiserver.api.decode import base64_error_offset
from apiserver.registry import validation as v
from apiserver.registry.strategy import Object, Strategy, as_dict

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

MAX_SIZE = 1024 * 1024  # upstream corev1.MaxSecretSize, shared by ConfigMaps


def decode_base64_map(data: object, kind: str) -> int:
    """Total decoded size of a map of base64 strings; a value Go would not decode is the
    400 its JSON decoder gives (``Secret in version "v1" cannot be handled as a Secret:
    illegal base64 data at input byte 4``)."""
    size = 0
    if not isinstance(data, dict):
        return 0
    for val in data.values():
        if not isinstance(val, str):
            continue
        off = base64_error_offset(val)
        if off is not None:
            raise status.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: '
                                     f"illegal base64 data at input byte {off}")
        clean = val.replace("\r", "").replace("\n", "")
        size += len(base64.b64decode(clean)) if clean else 0
    return size


def canonical_base64_map(obj: dict[str, Any], field: str, kind: str) -> None:
    """Check ``obj[field]`` as ``decode_base64_map`` does, then write each value as the bytes
    it stands for encode. Upstream keeps bytes, so line breaks in the base64 (Go's decoder
    skips them) or stray bits in its last character are gone when the object is read back;
    kept, they also broke the object's protobuf encoding. A new map replaces the old one
    (which may be shared with the stored object) only when something changed."""
    data = obj.get(field)
    decode_base64_map(data, kind)
    if not isinstance(data, dict):
        return
    fixed: dict[str, Any] | None = None
    for key, val in data.items():
        if isinstance(val, str) and val:
            encoded = base64.b64encode(
                base64.b64decode(val.replace("\r", "").replace("\n", ""))).decode()
            if encoded != val:
                if fixed is None:
                    fixed = dict(data)
                fixed[key] = encoded
    if fixed is not None:
        obj[field] = fixed


def validate_data_map(data: object, field: str, *, binary: bool) -> tuple[list[Cause], int]:
    """Keys are config keys; values strings (base64 for binary maps, already checked by
    ``decode_base64_map``). Returns (causes, size)."""
    causes: list[Cause] = []
    size = 0
    if data is None:
        return causes, 0
    if not isinstance(data, dict):
        return [v.type_invalid(field, data, "a map")], 0
    for key, val in data.items():
        for e in v.config_map_key_errors(str(key)):
            causes.append(v.invalid(f"{field}[{key}]", key, e))
        if not isinstance(val, str):
            causes.append(v.type_invalid(f"{field}[{key}]", val, "a string"))
            continue
        if not binary:
            size += len(val)
    return causes, size


def immutable_causes(new: Object, old: Object, fields: tuple[str, ...]) -> list[Cause]:
    """Upstream: once ``immutable`` is true, data and the flag itself stay as they are."""
    causes: list[Cause] = []
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            causes.append(v.forbidden("immutable", "field is immutable when `immutable` is set"))
        for f in fields:
            if (new.get(f) or {}) != (old.get(f) or {}):
                causes.append(v.forbidden(f, "field is immutable when `immutable` is set"))
    return causes


class ConfigMapStrategy(Strategy):
    kind = "ConfigMap"
    resource = "configmaps"
    singular = "configmap"
    short_names = ("cm",)
    allow_create_on_update = False
    typed_fields = {"data": "map[string]string", "binaryData": "map[string][]uint8",
                    "immutable": "bool"}
    omit_empty = ("data", "binaryData")

    def default(self, obj: Object) -> None:
        canonical_base64_map(obj, "binaryData", self.kind)

    def validate(self, obj: Object) -> list[Cause]:
        causes, size = validate_data_map(obj.get("data"), "data", binary=False)
        bcauses, _ = validate_data_map(obj.get("binaryData"), "binaryData", binary=True)
        bsize = decode_base64_map(obj.get("binaryData"), self.kind)
        causes += bcauses
        data = as_dict(obj.get("data"))
        for key in as_dict(obj.get("binaryData")):
            if key in data:
                causes.append(v.invalid("binaryData", key, "duplicate of key present in data"))
        if size + bsize > MAX_SIZE:
            causes.append(v.too_long("", MAX_SIZE))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return immutable_causes(new, old, ("data", "binaryData")) + self.validate(new)

