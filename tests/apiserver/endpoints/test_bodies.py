"""Request bodies of create and update: size, media type, decoding, apiVersion/kind,
namespace and name rules, field validation (SPEC 4.8.5)."""

from __future__ import annotations

import orjson

from tests.apiserver.endpoints.conftest import CM, create_cm


async def test_too_large(client, stores) -> None:
    big = orjson.dumps({"metadata": {"name": "big"}, "data": {"x": "y" * (3 * 1024 * 1024)}})
    r = await client.post(CM, data=big, headers={"Content-Type": "application/json"})
    body = await r.json()
    assert r.status == 413
    assert body["reason"] == "RequestEntityTooLarge"
    assert body["message"] == "Request entity too large: limit is 3145728"

    async def chunks():  # no Content-Length: the limit holds while reading
        for _ in range(4):
            yield b" " * (1024 * 1024)

    r = await client.post(CM, data=chunks(), headers={"Content-Type": "application/json"})
    assert r.status == 413
    assert stores[("", "v1", "configmaps")].calls == []


async def test_unsupported_media_types(client) -> None:
    for ctype in ("application/cbor", "text/plain", "application/xml"):
        r = await client.post(CM, data=b"{}", headers={"Content-Type": ctype})
        assert r.status == 415, ctype
        body = await r.json()
        assert body["reason"] == "UnsupportedMediaType"
        assert body["message"] == ("the body of the request was in an unknown format - accepted "
                                   "media types include: application/json, application/yaml")


async def test_undecodable(client) -> None:
    r = await client.post(CM, data=b"{nope", headers={"Content-Type": "application/json"})
    body = await r.json()
    assert r.status == 400 and body["reason"] == "BadRequest"
    assert body["message"].startswith("the object provided is unrecognized (must be of type "
                                      "ConfigMap): couldn't get version/kind; json parse error: ")
    assert body["message"].endswith("({nope)")
    r = await client.post(CM, data=b"[1]", headers={"Content-Type": "application/json"})
    assert r.status == 400
    assert "json: cannot unmarshal array into Go value of type struct" in (await r.json())["message"]
    r = await client.post(CM, data=b"a: [", headers={"Content-Type": "application/yaml"})
    assert r.status == 400
    r = await client.post(CM, data=b"\xff\xfe", headers={"Content-Type": "application/json"})
    body = await r.json()
    assert r.status == 400 and body["message"].endswith("(fffe)")
    r = await client.post(CM, json={"kind": 5})
    assert r.status == 400
    assert ("json: cannot unmarshal number into Go struct field .kind of type string"
            in (await r.json())["message"])
    r = await client.post(CM, json={"apiVersion": {"a": 1}})
    assert r.status == 400
    assert ("json: cannot unmarshal object into Go struct field .apiVersion of type string"
            in (await r.json())["message"])


async def test_type_meta_must_match(client) -> None:
    r = await client.post(CM, json={"apiVersion": "apps/v1", "kind": "ConfigMap",
                                    "metadata": {"name": "a"}})
    assert r.status == 400
    assert (await r.json())["message"] == ("the API version in the data (apps/v1) does not "
                                           "match the expected API version (v1)")
    r = await client.post(CM, json={"apiVersion": "v1", "kind": "Secret",
                                    "metadata": {"name": "a"}})
    assert r.status == 400
    assert (await r.json())["message"].startswith(
        'Secret in version "v1" cannot be handled as a ConfigMap')
    r = await client.post(CM, json={"metadata": {"name": "a"}})  # defaulted from the endpoint
    body = await r.json()
    assert r.status == 201 and body["kind"] == "ConfigMap" and body["apiVersion"] == "v1"


async def test_metadata_must_be_an_object(client) -> None:
    # encoding/json names the JSON kind it could not put into ObjectMeta
    for meta, kind in (("x", "string"), ([1], "array"), (1.5, "number"), (True, "bool")):
        r = await client.post(CM, json={"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": meta})
        out = await r.json()
        assert (r.status, out["reason"]) == (400, "BadRequest")
        assert out["message"] == (
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
            f"unmarshal {kind} into Go struct field ConfigMap.metadata of type v1.ObjectMeta")


async def test_namespace_rules(client) -> None:
    r = await client.post(CM, json={"metadata": {"name": "a", "namespace": "other"}})
    assert r.status == 400
    assert (await r.json())["message"] == ("the namespace of the provided object does not match "
                                           "the namespace sent on the request")
    r = await client.post("/api/v1/namespaces", json={"metadata": {"name": "n",
                                                                  "namespace": "x"}})
    assert r.status == 201 and "namespace" not in (await r.json())["metadata"]


async def test_update_name_and_conflict(client) -> None:
    cm = await create_cm(client, "a")
    r = await client.put(f"{CM}/a", json={"metadata": {"name": "b"}})
    assert r.status == 400
    assert (await r.json())["message"] == ("the name of the object (b) does not match the name "
                                           "on the URL (a)")
    r = await client.put(f"{CM}/a", json={"metadata": {"name": "a", "namespace": "ns2"}})
    assert r.status == 400
    assert (await r.json())["message"] == ("the namespace of the object (ns2) does not match "
                                           "the namespace on the request (ns1)")
    stale = dict(cm, metadata=dict(cm["metadata"], resourceVersion="1"))
    r = await client.put(f"{CM}/a", json=stale)
    body = await r.json()
    assert r.status == 409 and body["reason"] == "Conflict"
    r = await client.put(f"{CM}/a?dryRun=All", json=cm)
    assert r.status == 200


async def test_field_validation_warn_default(client, stores) -> None:
    body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w","foo":1,'
            b'"name":"w"},"bogus":true,"data":{"a":"b","a":"c"}}')
    r = await client.post(CM, data=body, headers={"Content-Type": "application/json"})
    assert r.status == 201, await r.text()
    assert r.headers.getall("Warning") == [  # document order, as upstream's decoder meets them
        '299 - "unknown field \\"metadata.foo\\""',
        '299 - "duplicate field \\"metadata.name\\""',
        '299 - "unknown field \\"bogus\\""',
        '299 - "duplicate field \\"data.a\\""',
    ]
    out = await r.json()
    assert "bogus" not in out and "foo" not in out["metadata"]
    assert out["data"] == {"a": "c"}  # the last duplicate wins
    stored = stores[("", "v1", "configmaps")].objects[("ns1", "w")]
    assert "bogus" not in stored


async def test_field_validation_strict(client, stores) -> None:
    body = b'{"metadata":{"name":"s","foo":1},"data":{"a":"b","a":"c"}}'
    r = await client.post(f"{CM}?fieldValidation=Strict", data=body,
                          headers={"Content-Type": "application/json"})
    out = await r.json()
    assert r.status == 400 and out["reason"] == "BadRequest"
    assert out["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                              'strict decoding error: unknown field "metadata.foo", duplicate '
                              'field "data.a"')
    assert stores[("", "v1", "configmaps")].calls == []
    r = await client.post(f"{CM}?fieldValidation=Strict",
                          json={"metadata": {"name": "ok"}, "data": {"a": "b"}})
    assert r.status == 201


async def test_field_validation_ignore(client) -> None:
    body = b'{"metadata":{"name":"i","foo":1},"data":{"a":"b","a":"c"}}'
    r = await client.post(f"{CM}?fieldValidation=Ignore", data=body,
                          headers={"Content-Type": "application/json"})
    assert r.status == 201
    assert "Warning" not in r.headers
    assert "foo" not in (await r.json())["metadata"]


async def test_field_validation_yaml_duplicates(client) -> None:
    body = b"metadata:\n  name: y\ndata:\n  a: b\n  a: c\n"
    r = await client.post(f"{CM}?fieldValidation=Strict", data=body,
                          headers={"Content-Type": "application/yaml"})
    assert r.status == 400
    # upstream's strict YAML reader reports repeats by line
    assert (await r.json())["message"].endswith(
        'strict decoding error: yaml: unmarshal errors:\n  line 5: key "a" already set in map')


async def test_hostile_bodies_are_400(client) -> None:
    deep = b'{"metadata":{"name":"d"},"data":' + b"[" * 5000 + b"]" * 5000 + b"}"
    for directive in ("Warn", "Ignore"):
        r = await client.post(f"{CM}?fieldValidation={directive}", data=deep,
                              headers={"Content-Type": "application/json"})
        assert r.status == 400, directive
    nested = b'{"metadata":{"name":"d"},"x":' + b"[" * 300 + b"]" * 300 + b"}"
    r = await client.post(CM, data=nested, headers={"Content-Type": "application/json"})
    assert r.status == 400 and "exceeded max depth" in (await r.json())["message"]
    laughs = b"a: &a [x,x,x,x,x,x,x,x,x]\n" + b"".join(
        b"%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n" % ((98 + i, 98 + i) + (97 + i,) * 9)
        for i in range(8))
    r = await client.post(CM, data=laughs, headers={"Content-Type": "application/yaml"})
    assert r.status == 400 and "excessive aliasing" in (await r.json())["message"]
    r = await client.post(CM, data=b"a: " + b"[" * 5000, headers={"Content-Type": "application/yaml"})
    assert r.status == 400
    await create_cm(client, "p")
    r = await client.patch(f"{CM}/p", data=b'{"data":' + b'{"a":' * 300 + b"1" + b"}" * 301,
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 400


async def test_field_validation_nested_from_schema(client, stores) -> None:
    sts = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
        "spec": {
            "replicas": 1, "serviceName": "s", "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}, "bogusMeta": 1},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {
                        "limits": {"cpu": "1"}}, "ports": [{"containerPort": 80, "nope": 1}],
                        "env": [{"name": "E", "valueFrom": {"fieldRef": {
                            "fieldPath": "metadata.name"}}}], "imagePullPolicy": "Always",
                        "colour": "red"}],
                    # configMap comes from the inline VolumeSource
                    "volumes": [{"name": "v", "configMap": {"name": "cm", "extra": True}}],
                },
            },
            "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                      "metadata": {"name": "d"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                "resources": {"requests": {"storage": "1Gi"}}}}],
            "unknownSpecField": 1,
        },
    }
    r = await client.post("/apis/apps/v1/namespaces/ns1/statefulsets?fieldValidation=Strict",
                          json=sts)
    out = await r.json()
    assert r.status == 400
    assert out["message"] == (
        'StatefulSet in version "v1" cannot be handled as a StatefulSet: strict decoding '
        'error: unknown field "spec.template.metadata.bogusMeta", unknown field '
        '"spec.template.spec.containers[0].ports[0].nope", unknown field '
        '"spec.template.spec.containers[0].colour", unknown field '
        '"spec.template.spec.volumes[0].configMap.extra", unknown field '
        '"spec.unknownSpecField"')
    r = await client.post("/apis/apps/v1/namespaces/ns1/statefulsets", json=sts)
    assert r.status == 201
    assert len(r.headers.getall("Warning")) == 5
    stored = stores[("apps", "v1", "statefulsets")].objects[("ns1", "s")]
    container = stored["spec"]["template"]["spec"]["containers"][0]
    assert "colour" not in container and container["resources"] == {"limits": {"cpu": "1"}}
    assert stored["spec"]["template"]["spec"]["volumes"][0]["configMap"] == {"name": "cm"}


async def test_lone_surrogates_become_replacement_characters(client) -> None:
    body = b'{"metadata":{"name":"u"},"data":{"k":"a\\ud800b","p":"\\ud83d\\ude00"}}'
    r = await client.post(CM, data=body, headers={"Content-Type": "application/json"})
    assert r.status == 201, await r.text()
    assert (await r.json())["data"] == {"k": "a\ufffdb", "p": "\U0001F600"}
    # YAML has no surrogate escapes: a clean 400
    r = await client.post(CM, data=b'metadata: {name: v}\ndata: {k: "a\\ud800b"}\n',
                          headers={"Content-Type": "application/yaml"})
    assert r.status == 400


async def test_json_is_read_as_go_reads_it_in_every_validation_mode(client) -> None:
    """NaN, Infinity and numbers beyond float64 are refused (Python's json module takes them:
    a body with ``"extra": NaN`` was created in Warn mode); invalid UTF-8 inside a string
    becomes U+FFFD.
    The same in every fieldValidation mode, whichever parser reads the body."""
    for mode in ("Ignore", "Warn", "Strict"):
        for literal, detail in (
            (b"NaN", "invalid character 'N' looking for beginning of value"),
            (b"Infinity", "invalid character 'I' looking for beginning of value"),
            (b"-Infinity", "invalid character 'I' in numeric literal"),
            (b"1e400", "json: cannot unmarshal number 1e400 into Go value of type float64"),
        ):
            body = b'{"metadata":{"name":"n"},"data":{"k":"v"},"extra":' + literal + b"}"
            r = await client.post(f"{CM}?fieldValidation={mode}", data=body,
                                  headers={"Content-Type": "application/json"})
            status = await r.json()
            assert r.status == 400, (mode, literal, status)
            assert status["reason"] == "BadRequest"
            assert ("couldn't get version/kind; json parse error: " + detail
                    in status["message"]), (mode, status["message"])
        name = f"utf8-{mode.lower()}"
        body = b'{"metadata":{"name":"' + name.encode() + b'"},"data":{"k":"a\xffb"}}'
        r = await client.post(f"{CM}?fieldValidation={mode}", data=body,
                              headers={"Content-Type": "application/json"})
        assert r.status == 201, await r.text()
        assert (await r.json())["data"] == {"k": "a\ufffdb"}


async def test_merge_patch_is_read_as_go_reads_it(client) -> None:
    await create_cm(client, "mp")
    merge = {"Content-Type": "application/merge-patch+json"}
    r = await client.patch(f"{CM}/mp", data=b'{"data":{"k":NaN}}', headers=merge)
    assert r.status == 400
    assert (await r.json())["message"] == (
        "error decoding patch: invalid character 'N' looking for beginning of value")
    r = await client.patch(f"{CM}/mp", data=b'{"data":{"k":"a\\ud800b"}}', headers=merge)
    assert r.status == 200, await r.text()
    assert (await r.json())["data"]["k"] == "a\ufffdb"


async def test_numbers_beyond_int64_are_float64_not_a_500(client) -> None:
    """Upstream decodes a whole number beyond int64 as a float64; kept as a Python int it
    could not be encoded again (strategic merge patch and apply answered 500)."""
    await create_cm(client, "big")
    for number in (b"18446744073709551616", b"-9223372036854775809"):
        r = await client.patch(f"{CM}/big", data=b'{"foo":' + number + b"}",
                               headers={"Content-Type": "application/strategic-merge-patch+json"})
        assert r.status == 200, await r.text()
        r = await client.patch(f"{CM}/big?fieldManager=m", data=(
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\nfoo: " + number + b"\n"),
            headers={"Content-Type": "application/apply-patch+yaml"})
        assert r.status == 400, await r.text()  # apply is strict about unknown fields
        assert "field not declared in schema" in (await r.json())["message"]
        r = await client.patch(f"{CM}/big?fieldManager=m", data=(
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, generation: " + number
            + b"}\n"), headers={"Content-Type": "application/apply-patch+yaml"})
        assert r.status in (200, 400, 422), await r.text()
    for body, ctype in ((b"metadata: {name: huge}\nfoo: 1" + b"0" * 5000 + b"\n", "yaml"),
                        (b'{"metadata":{"name":"huge"},"foo":1' + b"0" * 5000 + b"}", "json")):
        r = await client.post(CM, data=body, headers={"Content-Type": f"application/{ctype}"})
        assert r.status == 400, (ctype, await r.text())


async def test_exa_quantities_are_quantities(real) -> None:
    """A memory limit of "1E" (10**18) is valid upstream; it answered 500."""
    pod = {"metadata": {"name": "exa"}, "spec": {"containers": [{
        "name": "c", "image": "nginx", "resources": {"limits": {"memory": "1E"}}}]}}
    r = await real.post("/api/v1/namespaces/default/pods", json=pod)
    assert r.status == 201, await r.text()
    assert (await r.json())["spec"]["containers"][0]["resources"]["limits"] == {"memory": "1E"}


async def test_json_syntax_errors_in_gos_words(client) -> None:
    """Bodies and patches that are not JSON: Go's scanner's message, as upstream's decoders
    quote it (Python's read "Expecting value: line 1 column 9 (char 8)")."""
    r = await client.post(CM, data=b'{"metadata":{"name":"n"},}',
                          headers={"Content-Type": "application/json"})
    assert r.status == 400
    assert ("json parse error: invalid character '}' looking for beginning of object key "
            "string") in (await r.json())["message"]
    await client.post(CM, data=b'{"metadata":{"name":"p"}}',
                      headers={"Content-Type": "application/json"})
    r = await client.patch(f"{CM}/p", data=b'{"data": }',
                           headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 400
    assert (await r.json())["message"] == (
        "error decoding patch: invalid character '}' looking for beginning of value")
    from storage.gojson import syntax_error
    assert syntax_error(b'[1 2]') == "invalid character '2' after array element"
    assert syntax_error(b'{"a":1') == "unexpected end of JSON input"
    assert syntax_error(b'"\\u12g4"') == "invalid character 'g' in \\u hexadecimal character escape"
    assert syntax_error(b'{"a":1}') is None


async def test_deeply_nested_yaml_is_400(client) -> None:
    """libyaml's composer recursed once per level with no limit of its own: tens of
    thousands of levels overflowed the stack and killed the server (a segfault)."""
    for deep in (b"[" * 100_000, b"- " * 100_000 + b"x", b"metadata: {name: d}\ndata: " + b"{a: " * 60_000):
        r = await client.post(CM, data=deep, headers={"Content-Type": "application/yaml"})
        assert r.status == 400
        assert "exceeded max depth" in (await r.json())["message"]
        r = await client.patch(f"{CM}/d?fieldManager=m", data=deep,
                               headers={"Content-Type": "application/apply-patch+yaml"})
        assert r.status == 400
        assert "exceeded max depth" in (await r.json())["message"]
    # PyYAML 6.0.4's libyaml stops at 1,000 levels with its own scanner error; the client
    # still reads upstream's message, not libyaml's.
    flow = b"metadata: {name: d}\ndata: {a: " + b"[" * 1200 + b"]" * 1200 + b"}"
    block = b"metadata: {name: d}\ndata:\n" + b"".join(
        b"  " * i + b"k:\n" for i in range(1, 1200)) + b"  " * 1200 + b"v: x\n"
    for deep in (flow, block):
        r = await client.post(CM, data=deep, headers={"Content-Type": "application/yaml"})
        body = await r.json()
        assert r.status == 400, body
        assert "exceeded max depth" in body["message"] and "nesting" not in body["message"]
    # Many lines nesting nothing are read as before.
    flat = b"metadata:\n  name: flat\ndata:\n" + b"".join(b"  k%d: v\n" % i for i in range(6000))
    r = await client.post(CM, data=flat, headers={"Content-Type": "application/yaml"})
    assert r.status == 201


async def test_yaml_map_keys_become_their_json_text(client) -> None:
    # sigs.k8s.io/yaml turns each key into JSON text on its own; a Python dict made 1 and
    # true one key (1 == True), and the second value replaced the first
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keys}\n"
            b"data: {1: one, true: yes-key, null: nil, 2.5: f, 0x10: hex}\n")
    r = await client.post(CM, data=body, headers={"Content-Type": "application/yaml"})
    assert r.status == 201, await r.text()
    assert (await r.json())["data"] == {"1": "one", "true": "yes-key", "null": "nil",
                                        "2.5": "f", "16": "hex"}
