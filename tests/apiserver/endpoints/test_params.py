"""Query parameters: SPEC 4.2 and every invalid cell of SPEC 8.1, with upstream messages."""

from __future__ import annotations

import pytest

from tests.apiserver.endpoints.conftest import CM, create_cm

LIST_INVALID = [
    ("resourceVersionMatch=Exact", 422,
     'ListOptions.meta.plat.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ("resourceVersionMatch=NotOlderThan", 422,
     'ListOptions.meta.plat.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ("resourceVersion=0&resourceVersionMatch=Exact", 422,
     'ListOptions.meta.plat.io "" is invalid: resourceVersionMatch: Forbidden: '
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ("resourceVersion=5&resourceVersionMatch=Exact&limit=1&continue=abc", 422,
     'ListOptions.meta.plat.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden when continue is provided"),
    ("resourceVersion=5&resourceVersionMatch=Bogus", 422,
     'ListOptions.meta.plat.io "" is invalid: resourceVersionMatch: Unsupported value: '
     '"Bogus": supported values: "Exact", "NotOlderThan", ""'),
    ("limit=2&continue=abc&resourceVersion=7", 400,
     "specifying resource version is not allowed when using continue"),
    ("sendInitialEvents=true&resourceVersion=0&resourceVersionMatch=NotOlderThan", 422,
     'ListOptions.meta.plat.io "" is invalid: sendInitialEvents: Forbidden: '
     "sendInitialEvents is forbidden for list"),
    ("limit=abc", 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
]


@pytest.mark.parametrize(("query", "code", "message"), LIST_INVALID)
async def test_list_invalid_cells(client, stores, query, code, message) -> None:
    r = await client.get(f"{CM}?{query}")
    body = await r.json()
    assert r.status == code, body
    assert body["message"] == message
    assert body["reason"] == ("Invalid" if code == 422 else "BadRequest")
    if code == 422:
        assert body["details"]["kind"] == "ListOptions"
        assert body["details"]["group"] == "meta.plat.io"
        assert body["details"]["causes"][0]["field"] in ("resourceVersionMatch",
                                                         "sendInitialEvents")
    assert stores[("", "v1", "configmaps")].calls == []  # never reached the store


async def test_list_valid_cells_reach_store(client, stores) -> None:
    store = stores[("", "v1", "configmaps")]
    for q in ("", "resourceVersion=0", "resourceVersion=5", "limit=2",
              "limit=2&continue=tok", "limit=2&continue=tok&resourceVersion=0",
              "resourceVersion=5&resourceVersionMatch=Exact",
              "resourceVersion=0&resourceVersionMatch=NotOlderThan",
              "resourceVersion=5&resourceVersionMatch=NotOlderThan&limit=3"):
        r = await client.get(f"{CM}?{q}")
        assert r.status == 200, (q, await r.text())
    opts = store.calls[-1][1]
    assert (opts.resource_version, opts.resource_version_match, opts.limit) == (
        "5", "NotOlderThan", 3)


async def test_list_options_passed(client, stores) -> None:
    r = await client.get(f"{CM}?labelSelector=a%3Db&fieldSelector=metadata.name%3Dx"
                         "&limit=-4&timeoutSeconds=9")
    assert r.status == 200
    opts = stores[("", "v1", "configmaps")].calls[-1][1]
    assert opts.label_selector == "a=b" and opts.field_selector == "metadata.name=x"
    assert opts.limit == 0 and not opts.watch


WATCH_INVALID = [
    ("sendInitialEvents=true", 'ListOptions.meta.plat.io "" is invalid: resourceVersionMatch: '
     "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
    ("resourceVersionMatch=NotOlderThan&resourceVersion=0",
     'ListOptions.meta.plat.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"),
    ("sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=3",
     'ListOptions.meta.plat.io "" is invalid: [resourceVersionMatch: Forbidden: '
     "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, "
     'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]'),
]


@pytest.mark.parametrize(("query", "message"), WATCH_INVALID)
async def test_watch_invalid(client, query, message) -> None:
    r = await client.get(f"{CM}?watch=1&{query}")
    assert r.status == 422
    assert (await r.json())["message"] == message


async def test_dry_run(client, stores) -> None:
    store = stores[("", "v1", "configmaps")]
    r = await client.post(f"{CM}?dryRun=All", json={"metadata": {"name": "d"}})
    assert r.status == 201
    assert store.calls[-1][1].dry_run is True
    assert ("ns1", "d") not in store.objects
    r = await client.post(f"{CM}?dryRun=Maybe", json={"metadata": {"name": "d"}})
    body = await r.json()
    assert r.status == 422
    assert body["message"] == ('CreateOptions.meta.plat.io "" is invalid: dryRun: Unsupported '
                               'value: []string{"Maybe"}: supported values: "All"')
    r = await client.post(f"{CM}?dryRun=All&dryRun=x", json={"metadata": {"name": "d"}})
    assert r.status == 422


async def test_field_validation_value(client) -> None:
    r = await client.post(f"{CM}?fieldValidation=Loose", json={"metadata": {"name": "d"}})
    body = await r.json()
    assert r.status == 422
    assert body["message"] == ('CreateOptions.meta.plat.io "" is invalid: fieldValidation: '
                               'Unsupported value: "Loose": supported values: "", "Ignore", '
                               '"Strict", "Warn"')


async def test_field_manager_defaults_from_user_agent(client, stores) -> None:
    await client.post(CM, json={"metadata": {"name": "m"}},
                      headers={"User-Agent": "kubectl/v1.33.0 (linux/amd64)"})
    assert stores[("", "v1", "configmaps")].calls[-1][1].field_manager == "kubectl"
    await client.post(f"{CM}?fieldManager=mine", json={"metadata": {"name": "m2"}})
    assert stores[("", "v1", "configmaps")].calls[-1][1].field_manager == "mine"
    r = await client.post(f"{CM}?fieldManager={'x' * 129}", json={"metadata": {"name": "m3"}})
    assert r.status == 422


async def test_named_watch_field_selector(client, stores) -> None:
    await create_cm(client, "a")
    r = await client.get(f"{CM}/a?watch=1&timeoutSeconds=1")
    assert r.status == 200
    await r.read()
    assert stores[("", "v1", "configmaps")].calls[-1][1].field_selector == "metadata.name=a"
    r = await client.get(f"{CM}/a?watch=1&fieldSelector=metadata.name%3Db")
    assert r.status == 400
    assert (await r.json())["message"] == ("fieldSelector metadata.name doesn't match "
                                           "requested name")
