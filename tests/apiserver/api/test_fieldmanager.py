"""FieldManager: managedFields on updates and applies, conflicts in upstream's wording,
co-ownership, force, relinquished fields, sub-resources, the client-side apply upgrade."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from apiserver.api.fieldmanager import (
    LAST_APPLIED,
    FieldManager,
    manager_from_user_agent,
    manager_or_user_agent,
)
from apiserver.status import APIError

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = datetime(2026, 1, 2, 3, 9, 0, tzinfo=UTC)

FM = FieldManager.for_kind("apps", "v1", "Deployment", reset_fields=("status",))
FM_STATUS = FieldManager.for_kind("apps", "v1", "Deployment", subresource="status",
                                  reset_fields=("spec", "metadata"))


def deployment(replicas: int | None = 2, image: str = "nginx:1.14.2",
               labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "labels": labels if labels is not None else
                     {"app": "nginx"}},
        "spec": {"selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [
                                  {"name": "nginx", "image": image,
                                   "ports": [{"containerPort": 80}]}]}},
                 **spec}}
    if replicas is not None:
        d["spec"]["replicas"] = replicas
    return d


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """What the server would store: with uid, resourceVersion, defaults."""
    out = copy.deepcopy(obj)
    out["metadata"].update(uid="u1", resourceVersion="5", namespace="default",
                           creationTimestamp="2026-01-02T03:04:05Z", generation=1)
    for c in out["spec"]["template"]["spec"]["containers"]:
        for p in c.get("ports", []):
            p.setdefault("protocol", "TCP")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
    return out


def entries(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e.get("manager", ""), e["operation"], json.dumps(e["fieldsV1"],
                                                              separators=(",", ":")))
            for e in obj["metadata"].get("managedFields", [])]


def entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    return next(e for e in obj["metadata"]["managedFields"] if e.get("manager") == manager)


APPLIED = (
    '{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},'
    '"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{'
    '"k:{\\"name\\":\\"nginx\\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{'
    '"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{}}}}}}}}}')

# `kubectl create` of the same Deployment (an Update from the zero object): the labels maps,
# ports list and the items are members ("."), the always-written structs are not
CREATED = (
    '{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},'
    '"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},'
    '"f:spec":{"f:containers":{"k:{\\"name\\":\\"nginx\\"}":{".":{},"f:image":{},"f:name":{},'
    '"f:ports":{".":{},"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},'
    '"f:containerPort":{},"f:protocol":{}}},"f:terminationMessagePath":{}}}}}}}')


def test_apply_creates_with_upstreams_record() -> None:
    r = FM.apply(None, deployment(), "kubectl", now=T0)
    assert r.changed
    assert r.object["metadata"]["managedFields"] == [{
        "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
        "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
        "fieldsV1": json.loads(APPLIED)}]
    assert r.object["spec"]["replicas"] == 2


def test_update_create_records_everything_set() -> None:
    obj = FM.update(None, stored(deployment()), "kubectl-create", now=T0)
    assert entries(obj) == [("kubectl-create", "Update", CREATED)]
    assert entry(obj, "kubectl-create")["apiVersion"] == "apps/v1"


def test_reapply_unchanged_is_a_no_op() -> None:
    live = stored(FM.apply(None, deployment(), "kubectl", now=T0).object)
    r = FM.apply(live, deployment(), "kubectl", now=T1)
    assert not r.changed
    assert r.object["metadata"]["managedFields"] == live["metadata"]["managedFields"]
    assert r.object == live


def test_conflict_with_an_updater_in_upstream_wording() -> None:
    live = FM.update(None, stored(deployment()), "kubectl-client-side-apply", now=T0)
    with pytest.raises(APIError) as e:
        FM.apply(live, deployment(replicas=3), "other", now=T1)
    assert e.value.code == 409 and e.value.reason == "Conflict"
    assert e.value.message == ('Apply failed with 1 conflict: conflict with '
                               '"kubectl-client-side-apply" using apps/v1: .spec.replicas')
    assert e.value.details == {"causes": [{
        "reason": "FieldManagerConflict",
        "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
        "field": ".spec.replicas"}]}


def test_conflicts_listed_by_manager() -> None:
    live = stored(FM.apply(None, deployment(), "alpha", now=T0).object)
    live = FM.apply(live, deployment(), "beta", now=T0).object
    with pytest.raises(APIError) as e:
        FM.apply(live, deployment(replicas=5, image="nginx:2"), "gamma", now=T1)
    assert e.value.message == (
        'Apply failed with 4 conflicts: conflicts with "alpha":\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="nginx"].image\n'
        'conflicts with "beta":\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="nginx"].image')
    assert len(e.value.details["causes"]) == 4


def test_same_value_is_co_owned_then_force_moves_ownership() -> None:
    live = stored(FM.apply(None, deployment(), "alpha", now=T0).object)
    r = FM.apply(live, deployment(replicas=2), "beta", now=T1)
    assert not r.changed or r.object["spec"] == live["spec"]
    both = r.object
    assert '"f:replicas"' in entries(both)[0][2] and '"f:replicas"' in entries(both)[1][2]
    forced = FM.apply(both, deployment(replicas=7), "beta", force=True, now=T1).object
    assert forced["spec"]["replicas"] == 7
    assert '"f:replicas"' not in json.dumps(entry(forced, "alpha")["fieldsV1"])
    assert '"f:replicas"' in json.dumps(entry(forced, "beta")["fieldsV1"])
    assert entry(forced, "beta")["time"] == "2026-01-02T03:09:00Z"


def test_relinquished_field_is_removed_unless_owned_by_another() -> None:
    live = stored(FM.apply(None, deployment(labels={"app": "nginx", "tier": "web"}),
                           "kubectl", now=T0).object)
    r = FM.apply(live, deployment(labels={"app": "nginx"}), "kubectl", now=T1)
    assert r.changed and r.object["metadata"]["labels"] == {"app": "nginx"}
    # replicas dropped from the configuration: nobody owns it any more, so it goes
    r = FM.apply(live, deployment(replicas=None, labels={"app": "nginx", "tier": "web"}),
                 "kubectl", now=T1)
    assert "replicas" not in r.object["spec"]
    # someone else also owns the label: it stays, now theirs alone
    shared = FM.apply(live, deployment(labels={"app": "nginx", "tier": "web"}), "other",
                      now=T0).object
    r = FM.apply(shared, deployment(labels={"app": "nginx"}), "kubectl", now=T1)
    assert r.object["metadata"]["labels"] == {"app": "nginx", "tier": "web"}
    assert "f:tier" not in json.dumps(entry(r.object, "kubectl")["fieldsV1"])


def test_relinquished_container_removed_with_its_fields() -> None:
    two = deployment()
    two["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    live = stored(FM.apply(None, two, "kubectl", now=T0).object)
    r = FM.apply(live, deployment(), "kubectl", now=T1)
    names = [c["name"] for c in r.object["spec"]["template"]["spec"]["containers"]]
    assert names == ["nginx"]


def test_update_takes_ownership_and_never_conflicts() -> None:
    live = stored(FM.apply(None, deployment(), "kubectl", now=T0).object)
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 9
    obj = FM.update(live, new, "kubectl-edit", now=T1)
    assert entries(obj)[1] == ("kubectl-edit", "Update", '{"f:spec":{"f:replicas":{}}}')
    assert '"f:replicas"' not in entries(obj)[0][2]
    # a no-op update records nothing and leaves times alone
    again = FM.update(obj, copy.deepcopy(obj), "kubectl-edit", now=T0)
    assert again["metadata"]["managedFields"] == obj["metadata"]["managedFields"]
    # a removed field leaves every owner
    gone = copy.deepcopy(obj)
    del gone["spec"]["replicas"]
    obj = FM.update(obj, gone, "kubectl-edit", now=T1)
    assert [m for m, _, _ in entries(obj)] == ["kubectl"]


def test_update_entries_per_manager_and_version_and_sorted() -> None:
    live = FM.update(None, stored(deployment()), "b-creator", now=T1)
    new = copy.deepcopy(live)
    new["metadata"]["labels"]["x"] = "1"
    obj = FM.update(live, new, "a-labeler", now=T0)
    # Update entries sorted by time, then manager
    assert [m for m, _, _ in entries(obj)] == ["a-labeler", "b-creator"]
    obj = FM.apply(obj, deployment(), "z-applier", now=T1).object
    assert [(m, op) for m, op, _ in entries(obj)] == [
        ("z-applier", "Apply"), ("a-labeler", "Update"), ("b-creator", "Update")]


def test_status_subresource_owns_status_only() -> None:
    live = stored(FM.apply(None, deployment(), "kubectl", now=T0).object)
    new = copy.deepcopy(live)
    new["status"] = {"replicas": 2, "readyReplicas": 1}
    new["spec"]["replicas"] = 4  # not through /status: the endpoint resets it
    obj = FM_STATUS.update(live, new, "kube-controller-manager", now=T1)
    e = entry(obj, "kube-controller-manager")
    assert e["subresource"] == "status" and e["operation"] == "Update"
    assert e["fieldsV1"] == {"f:status": {"f:readyReplicas": {}, "f:replicas": {}}}
    assert list(e) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1",
                       "subresource"]
    # managedFields sent to a sub-resource are ignored
    sneaky = copy.deepcopy(obj)
    sneaky["metadata"]["managedFields"] = []
    assert FM_STATUS.update(obj, sneaky, "x", now=T1)["metadata"]["managedFields"] == \
        obj["metadata"]["managedFields"]


def test_apply_on_main_resource_does_not_own_status() -> None:
    cfg = deployment()
    cfg["status"] = {"replicas": 3}
    r = FM.apply(None, cfg, "kubectl", now=T0)
    assert "f:status" not in json.dumps(r.object["metadata"]["managedFields"])


def test_reset_and_explicit_managed_fields_on_update() -> None:
    live = stored(FM.apply(None, deployment(), "kubectl", now=T0).object)
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = []
    assert "managedFields" not in FM.update(live, new, "x", now=T1)["metadata"]
    new["metadata"]["managedFields"] = [{}]
    assert "managedFields" not in FM.update(live, new, "x", now=T1)["metadata"]
    # managedFields a client sets replace the stored ones
    new["metadata"]["managedFields"] = [{
        "manager": "mine", "operation": "Update", "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}]
    assert [m for m, _, _ in entries(FM.update(live, new, "x", now=T1))] == ["mine"]


def test_bad_configurations() -> None:
    with pytest.raises(APIError) as e:
        FM.apply(None, {**deployment(), "kind": "StatefulSet"}, "k")
    assert (e.value.code, e.value.message) == (400,
                                               "invalid object type: apps/v1, Kind=StatefulSet")
    cfg = deployment()
    cfg["metadata"]["managedFields"] = []
    with pytest.raises(APIError) as e:
        FM.apply(None, cfg, "k")
    assert (e.value.code, e.value.message) == (400, "metadata.managedFields must be nil")
    # what upstream's typed objects cannot hold is a 500 without reason there
    cfg = deployment()
    del cfg["spec"]["template"]["spec"]["containers"][0]["name"]
    with pytest.raises(APIError) as e:
        FM.apply(None, cfg, "k")
    assert e.value.code == 500 and "reason" not in e.value.body()
    assert e.value.message == (
        "failed to create typed patch object (/nginx; apps/v1, Kind=Deployment): "
        ".spec.template.spec.containers: element 0: associative list with keys has an "
        'element that omits key field "name" (and doesn\'t have default value)')
    unknown = deployment()
    unknown["metadata"]["namespace"] = "default"
    unknown["spec"]["template"]["spec"]["topologyKeys"] = ["x"]
    with pytest.raises(APIError) as e:
        FM.apply(None, unknown, "k")
    assert e.value.message == (
        "failed to create typed patch object (default/nginx; apps/v1, Kind=Deployment): "
        ".spec.template.spec.topologyKeys: field not declared in schema")
    # free-form parts and maps take any key
    free = deployment()
    free["metadata"]["annotations"] = {"any.thing/at-all": "x"}
    FM.apply(None, free, "k")
    # an update of such an object is still accepted, without managedFields
    assert "managedFields" not in FM.update(None, cfg, "k")["metadata"]


def test_too_many_update_managers_go_to_ancient_changes() -> None:
    obj = FM.update(None, stored(deployment()), "m00",
                    now=datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC))
    for i in range(1, 12):
        new = copy.deepcopy(obj)
        new["metadata"]["labels"][f"l{i}"] = "x"
        obj = FM.update(obj, new, f"m{i:02}", now=datetime(2026, 1, 1, 0, i, 0, tzinfo=UTC))
    managers = [m for m, _, _ in entries(obj)]
    assert len(managers) == 10
    assert "ancient-changes" in managers and "m00" not in managers and "m11" in managers


CSA_ANNOTATION = json.dumps(deployment(), sort_keys=True, separators=(",", ":")) + "\n"


def csa_live() -> dict[str, Any]:
    """An object `kubectl apply` (client-side) created: the annotation and an Update entry
    of kubectl-client-side-apply owning everything."""
    obj = stored(deployment())
    obj["metadata"]["annotations"] = {LAST_APPLIED: CSA_ANNOTATION}
    return FM.update(None, obj, "kubectl-client-side-apply", now=T0)


def test_client_side_apply_upgrade() -> None:
    live = csa_live()
    # kubectl's server-side apply takes over what its client-side apply last applied
    r = FM.apply(live, deployment(replicas=3), "kubectl", now=T1)
    assert r.object["spec"]["replicas"] == 3
    assert '"f:replicas"' not in json.dumps(entry(r.object, "kubectl-client-side-apply"))
    # and keeps the annotation in step
    assert json.loads(r.object["metadata"]["annotations"][LAST_APPLIED])["spec"][
        "replicas"] == 3
    # another manager name gets the conflict
    with pytest.raises(APIError) as e:
        FM.apply(live, deployment(replicas=3), "other", now=T1)
    assert e.value.code == 409


def test_client_side_apply_upgrade_only_for_fields_still_as_annotated() -> None:
    live = csa_live()
    edited = copy.deepcopy(live)
    edited["spec"]["replicas"] = 4  # changed since the last client-side apply
    live = FM.update(live, edited, "kubectl-client-side-apply", now=T1)
    with pytest.raises(APIError) as e:
        FM.apply(live, deployment(replicas=3), "kubectl", now=T1)
    assert e.value.message.endswith(": .spec.replicas")


@pytest.mark.parametrize(("agent", "want"), [
    ("kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9", "kubectl"),
    ("kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/abc/system:serviceaccount",
     "kube-controller-manager"),
    ("Go-http-client/1.1", "Go-http-client"),
    ("my\x00agent", "myagent"),
    ("a" * 200, "a" * 128),
    ("", ""),
])
def test_manager_from_user_agent(agent: str, want: str) -> None:
    assert manager_from_user_agent(agent) == want
    assert manager_or_user_agent("explicit", agent) == "explicit"
    assert manager_or_user_agent(None, agent) == want


def test_first_apply_to_an_unowned_object_conflicts_with_before_first_apply() -> None:
    live = stored(deployment())  # written before fields were tracked: no managedFields
    with pytest.raises(APIError) as e:
        FM.apply(live, deployment(replicas=4), "ci", now=T1)
    assert e.value.message == ('Apply failed with 1 conflict: conflict with '
                               '"before-first-apply" using apps/v1: .spec.replicas')
    r = FM.apply(live, deployment(), "ci", now=T1)  # same values: shared, no conflict
    assert [(m, op) for m, op, _ in entries(r.object)] == [("ci", "Apply"),
                                                          ("before-first-apply", "Update")]
    assert entry(r.object, "before-first-apply")["fieldsV1"] == json.loads(CREATED)


def test_shared_decoding_notices_replaced_entries() -> None:
    from apiserver.api.fieldmanager import managedfields as mf

    live = FM.update(None, stored(deployment()), "creator", now=T0)
    entries_ = live["metadata"]["managedFields"]
    first = mf.decode_shared(entries_)
    assert mf.decode_shared(entries_) is first
    entries_[0] = {**entries_[0], "fieldsV1": {"f:spec": {"f:paused": {}}}}
    again = mf.decode_shared(entries_)
    assert again is not first
    assert [p for vs in again.fields.values() for p in vs.set] == [("f:spec", "f:paused")]


def test_option_and_managed_fields_causes() -> None:
    from apiserver.api.fieldmanager.options import (
        managed_fields_causes,
        patch_options_causes,
    )

    assert patch_options_causes("", apply=True, force=None) == [{
        "reason": "FieldValueRequired", "field": "fieldManager",
        "message": "Required value: is required for apply patch"}]
    assert patch_options_causes("k", apply=False, force=True) == [{
        "reason": "FieldValueForbidden", "field": "force",
        "message": "Forbidden: may not be specified for non-apply patch"}]
    assert patch_options_causes("kubectl", apply=True, force=False) == []
    long_bad = patch_options_causes("a" * 129 + "\x07", apply=True, force=None)
    assert [c["reason"] for c in long_bad] == ["FieldValueTooLong", "FieldValueInvalid"]
    assert long_bad[1]["message"].endswith(": invalid character U+0007 (at position 129)")
    causes = managed_fields_causes([{"manager": "m", "operation": "Patch",
                                     "fieldsType": "FieldsV2"}])
    assert [(c["field"], c["message"].split(": ", 2)[-1]) for c in causes] == [
        ("metadata.managedFields[0].operation", "must be `Apply` or `Update`"),
        ("metadata.managedFields[0].fieldsType", "must be `FieldsV1`")]


def test_apply_to_an_untypable_stored_object() -> None:
    # a create keeps ``secrets: [{}]`` (a keyed list item without its key) without
    # managedFields; upstream's first apply then fails in skipNonAppliedManager, a 500
    fm = FieldManager.for_kind("", "v1", "ServiceAccount")
    live = {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "a", "namespace": "ns"}, "secrets": [{}]}
    created = fm.update(None, live, "kubectl-create")
    assert "managedFields" not in created["metadata"]
    cfg = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a"},
           "secrets": [{"name": "s"}]}
    with pytest.raises(APIError) as e:
        fm.apply(live, cfg, "m")
    assert e.value.code == 500 and "reason" not in e.value.body()
    assert e.value.message == (
        "failed to create manager for existing fields: failed to create typed new object "
        "(ns/a; /v1, Kind=ServiceAccount): .secrets: element 0: associative list with keys "
        'has an element that omits key field "name" (and doesn\'t have default value)')
