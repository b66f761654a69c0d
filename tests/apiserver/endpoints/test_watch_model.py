"""Watches with label selectors, checked against a model while concurrent clients create,
relabel, patch finalizers into and out of, and delete (one at a time and by collection) a
few configmaps in two namespaces: each watch, started from its list's resourceVersion and
replayed (ADDED / MODIFIED set the name's resourceVersion, DELETED removes it), must end
where a list with the same selector ends. An object that stops matching must be DELETED for
that watcher, one that starts matching ADDED, and nothing may be missed or repeated out of
order; no answer may be a 5xx."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

Client = TestClient[Any, Any]

NAMESPACES = ("m1", "m2")
SELECTORS = ("", "l=x", "l!=y", "l in (x,z)", "!l")


async def _list(client: Client, selector: str) -> tuple[dict[tuple[str, str], str], str]:
    r = await client.get("/api/v1/configmaps", params={"labelSelector": selector})
    assert r.status == 200
    body = await r.json()
    items = {(i["metadata"]["namespace"], i["metadata"]["name"]):
             i["metadata"]["resourceVersion"] for i in body["items"]}
    return items, body["metadata"]["resourceVersion"]


async def _model(client: Client, selector: str, state: dict[tuple[str, str], str],
                 seen: dict[str, int], problems: list[str]) -> None:
    items, rv = await _list(client, selector)
    state.update(items)
    resp = await client.get("/api/v1/configmaps", params={
        "watch": "1", "resourceVersion": rv, "labelSelector": selector,
        "allowWatchBookmarks": "true", "timeoutSeconds": "120"})
    last = int(rv)
    async for line in resp.content:
        ev = json.loads(line)
        meta = ev["object"]["metadata"]
        if ev["type"] == "ERROR":
            problems.append(f"{selector!r}: {ev}")
            return
        now = int(meta["resourceVersion"])
        if now < last:
            problems.append(f"{selector!r}: {ev['type']} at {now} after {last}")
        last = now
        seen[selector] = now
        if ev["type"] == "BOOKMARK":
            continue
        key = (meta["namespace"], meta["name"])
        if ev["type"] == "DELETED":
            state.pop(key, None)
        else:
            state[key] = meta["resourceVersion"]


async def _worker(client: Client, rnd: random.Random, ops: int, codes: list[int]) -> None:
    for _ in range(ops):
        ns = rnd.choice(NAMESPACES)
        name = rnd.choice("abcd")
        base = f"/api/v1/namespaces/{ns}/configmaps"
        label = rnd.choice(["x", "y", "z", None])
        op = rnd.random()
        if op < 0.3:
            meta: dict[str, Any] = {"name": name}
            if label:
                meta["labels"] = {"l": label}
            if rnd.random() < 0.3:
                meta["finalizers"] = ["m.io/f"]
            r = await client.post(base, json={"metadata": meta, "data": {"k": "v"}})
        elif op < 0.55:
            r = await client.patch(f"{base}/{name}", data=json.dumps(
                {"metadata": {"labels": {"l": label}}}),
                headers={"Content-Type": "application/merge-patch+json"})
        elif op < 0.7:
            r = await client.patch(f"{base}/{name}", data=json.dumps(
                {"metadata": {"finalizers": None if rnd.random() < 0.7 else ["m.io/f"]}}),
                headers={"Content-Type": "application/merge-patch+json"})
        elif op < 0.9:
            r = await client.delete(f"{base}/{name}")
        else:
            r = await client.delete(base, params={"labelSelector": rnd.choice(["l=x", "l",
                                                                                "!l"])})
        await r.read()
        codes.append(r.status)


@pytest.mark.parametrize("seed", [1, 2])
async def test_selector_watches_replay_to_the_list(real: Client, seed: int) -> None:
    for ns in NAMESPACES:
        r = await real.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
        assert r.status == 201
    states: dict[str, dict[tuple[str, str], str]] = {s: {} for s in SELECTORS}
    seen: dict[str, int] = {}
    problems: list[str] = []
    watches = [asyncio.create_task(_model(real, s, states[s], seen, problems))
               for s in SELECTORS]
    await asyncio.sleep(0.2)
    rnd = random.Random(seed)
    codes: list[int] = []
    await asyncio.gather(*(_worker(real, random.Random(rnd.random()), 60, codes)
                           for _ in range(8)))
    try:
        for selector in SELECTORS:
            want, rv = await _list(real, selector)
            for _ in range(100):  # until the watch has passed the list's revision
                if states[selector] == want or seen.get(selector, 0) >= int(rv):
                    break
                await asyncio.sleep(0.05)
            assert states[selector] == want, selector
    finally:
        for w in watches:
            w.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
    assert not problems, problems[:3]
    assert all(c < 500 for c in codes)
    assert {200, 201, 404} <= set(codes)
