from __future__ import annotations

import pytest

from apiserver.selectors import (
    SelectorError,
    compile_matcher,
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
)


def match(sel: str, labels: dict[str, str]) -> bool:
    return parse_label_selector(sel).matches(labels)


def test_equality_and_sets() -> None:
    assert match("a=b", {"a": "b"})
    assert match("a==b", {"a": "b"})
    assert not match("a=b", {"a": "c"})
    assert match("a!=b", {})
    assert match("a!=b", {"a": "c"})
    assert not match("a!=b", {"a": "b"})
    assert match("a in (x, y)", {"a": "y"})
    assert not match("a in (x,y)", {})
    assert match("a notin (x,y)", {})
    assert not match("a notin (x,y)", {"a": "x"})
    assert match("a", {"a": ""})
    assert not match("a", {})
    assert match("!a", {})
    assert not match("!a", {"a": "1"})
    assert match("a=b,c", {"a": "b", "c": "1"})
    assert not match("a=b,c", {"a": "b"})
    assert match("x>5", {"x": "6"}) and not match("x<5", {"x": "6"})
    assert match("example.com/app=web", {"example.com/app": "web"})
    assert match("a=", {"a": ""})
    assert match("a in ()", {"a": ""})


def test_string_form_is_sorted() -> None:
    assert str(parse_label_selector("z=1, a in (c,b)")) == "a in (b,c),z=1"


@pytest.mark.parametrize("sel,msg", [
    ("a in", "unable to parse requirement: found '' expected: '('"),
    ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a=b,", "found '', expected: identifier after ','"),
    ("=b", "found '=', expected: !, identifier, or 'end of string'"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
])
def test_parse_errors(sel: str, msg: str) -> None:
    with pytest.raises(SelectorError) as e:
        parse_label_selector(sel)
    assert str(e.value) == msg


def test_key_and_value_validation() -> None:
    with pytest.raises(SelectorError) as e:
        parse_label_selector("-a=b")
    assert str(e.value).startswith('unable to parse requirement: <nil>: Invalid value: "-a": '
                                   "name part must consist of alphanumeric characters")
    with pytest.raises(SelectorError) as e:
        parse_label_selector("a=" + "v" * 64)
    assert str(e.value) == ('unable to parse requirement: values[0][a]: Invalid value: "'
                            + "v" * 64 + '": must be no more than 63 characters')
    with pytest.raises(SelectorError) as e:
        parse_label_selector("a/b/c=d")
    assert "a qualified name must consist of" in str(e.value)
    with pytest.raises(SelectorError):
        parse_label_selector("x>a")


def test_field_selectors() -> None:
    fs = parse_field_selector("metadata.name=x,metadata.namespace!=y", {})
    assert fs.matches({"metadata": {"name": "x", "namespace": "z"}})
    assert not fs.matches({"metadata": {"name": "x", "namespace": "y"}})
    assert parse_field_selector("metadata.name==a\\,b", {}).matches({"metadata": {"name": "a,b"}})
    with pytest.raises(SelectorError) as e:
        parse_field_selector("spec.x=1", {})
    assert str(e.value) == "field label not supported: spec.x"
    with pytest.raises(SelectorError) as e:
        parse_field_selector("metadata.name", {})
    assert str(e.value) == "invalid selector: 'metadata.name'; can't understand 'metadata.name'"


def test_compile_and_object_selector() -> None:
    assert compile_matcher("", "", {}) is None
    m = compile_matcher("app=web", "metadata.name=a", {})
    assert m is not None
    assert m({"metadata": {"name": "a", "labels": {"app": "web"}}})
    assert not m({"metadata": {"name": "b", "labels": {"app": "web"}}})
    sel = label_selector_from_object({"matchLabels": {"app": "w"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["b", "a"]}]})
    assert sel is not None
    assert str(sel) == "app=w,tier in (a,b)"
