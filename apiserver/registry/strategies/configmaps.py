"""ConfigMap (core v1; upstream ``pkg/registry/core/configmap/strategy.go``)."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from apiserver.registry import validation as v
from apiserver.registry.strategy import Object, Strategy, as_dict

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

MAX_SIZE = 1024 * 1024  # upstream corev1.MaxSecretSize, shared by ConfigMaps


def validate_data_map(data: object, field: str, *, binary: bool) -> tuple[list[Cause], int]:
    """Keys are config keys; values strings (base64 for binary maps). Returns (causes, size)."""
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
        if binary:
            try:
                size += len(base64.b64decode(val, validate=True))
            except (binascii.Error, ValueError):
                causes.append(v.invalid(f"{field}[{key}]", "<value omitted>",
                                        "must be base64 encoded"))
        else:
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

    def validate(self, obj: Object) -> list[Cause]:
        causes, size = validate_data_map(obj.get("data"), "data", binary=False)
        bcauses, bsize = validate_data_map(obj.get("binaryData"), "binaryData", binary=True)
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

