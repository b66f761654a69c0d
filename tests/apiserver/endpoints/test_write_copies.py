"""Creates and updates without defensive copies (treecopy.give / generic_update.reads_only)
must still leave the watch cache's objects alone: what a reader got before a write is what
it still has after it, and a retried update starts from the request's body again."""

from __future__ import annotations

import copy
from typing import Any

import orjson

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


async def test_put_leaves_the_cached_object_alone(real: Any) -> None:
    r = await real.post(DEPLOY, json=deployment("d"))
    assert r.status == 201, await r.text()
    created = await r.json()
    # the watch cache's object (resourceVersion=0 reads from it)
    r = await real.get(f"{DEPLOY}/d?resourceVersion=0")
    before = await r.json()
    body = copy.deepcopy(created)
    body["metadata"]["labels"]["rev"] = "2"
    body["spec"]["template"]["spec"]["containers"][0]["image"] = "j"
    r = await real.put(f"{DEPLOY}/d", json=body)
    assert r.status == 200, await r.text()
    updated = await r.json()
    assert updated["metadata"]["labels"]["rev"] == "2"
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    # an older version read again from the store's history is unchanged
    r = await real.get(f"{DEPLOY}/d?resourceVersion={created['metadata']['resourceVersion']}"
                       "&resourceVersionMatch=NotOlderThan")
    assert r.status == 200
    assert before["spec"]["template"]["spec"]["containers"][0]["image"] == "i"
    assert "rev" not in before["metadata"]["labels"]
    # the watch cache's events still carry each version as it was written
    rv = int(created["metadata"]["resourceVersion"])
    r = await real.get(f"{DEPLOY}?watch=1&resourceVersion={rv - 1}&timeoutSeconds=1"
                       "&fieldSelector=metadata.name%3Dd")
    events = [orjson.loads(line) for line in (await r.read()).splitlines() if line.strip()]
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]
    assert events[0]["object"] == created
    assert events[1]["object"] == updated
    # a stale PUT is still a conflict (the transform's first call used the body itself)
    r = await real.put(f"{DEPLOY}/d", json=body)
    assert r.status == 409, await r.text()
    # managedFields record the writer of each write
    managers = {(m["manager"], m["operation"]) for m in updated["metadata"]["managedFields"]}
    assert managers and all(op == "Update" for _, op in managers)


async def test_create_response_is_what_is_stored(real: Any) -> None:
    r = await real.post(DEPLOY, json=deployment("e"))
    assert r.status == 201, await r.text()
    created = await r.json()
    r = await real.get(f"{DEPLOY}/e")
    assert await r.json() == created
