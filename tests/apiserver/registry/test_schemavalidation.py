"""apiserver.registry.schemavalidation: what upstream v1.33 accepts stays accepted (the
review of the first version found three rules stricter than upstream's)."""

from __future__ import annotations

from apiserver.registry import schemavalidation as sv


def test_quota_scopes_check_standard_names_only() -> None:
    ok = {"spec": {"hard": {"pods": "10", "requests.nvidia.com/gpu": "1"},
                   "scopes": ["BestEffort"]}}
    assert sv.validate_resource_quota(ok) == []
    bad = {"spec": {"hard": {"pods": "10", "cpu": "1"}, "scopes": ["BestEffort"]}}
    assert [c["message"] for c in sv.validate_resource_quota(bad)] == [
        'Invalid value: []core.ResourceQuotaScope{"BestEffort"}: unsupported scope applied '
        "to resource"]
    assert sv.validate_resource_quota({"spec": {"hard": {"cpu": "1"},
                                                "scopes": ["NotBestEffort"]}}) == []


def test_storage_class_provisioner_is_checked_lower_cased() -> None:
    assert sv.validate_storage_class({"provisioner": "Example.com/nfs"}) == []
    assert sv.validate_storage_class({"provisioner": "bad name"}) != []


def test_endpoint_slice_addresses_as_go_parses_them() -> None:
    ok = {"addressType": "IPv4", "ports": [{"port": 0}],
          "endpoints": [{"addresses": ["010.0.0.1", "::ffff:10.0.0.1"]}]}
    assert sv.validate_endpoint_slice(ok) == []
    mapped = {"addressType": "IPv6", "endpoints": [{"addresses": ["::ffff:10.0.0.1"]}]}
    assert [c["field"] for c in sv.validate_endpoint_slice(mapped)] == [
        "endpoints[0].addresses[0]"]


def test_system_priority_classes_pass() -> None:
    for name, value in sv.SYSTEM_PRIORITY_CLASSES.items():
        assert sv.validate_priority_class({"metadata": {"name": name}, "value": value}) == []
