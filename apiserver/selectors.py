"""Label and field selectors (upstream ``apimachinery/pkg/labels/selector.go`` and
``apimachinery/pkg/fields/selector.go``): parsed once into a callable, matched many times.

Errors are ``SelectorError`` with upstream's wording; callers answer 400 BadRequest with its
message (``apiserver.status.bad_request(str(err))``).

Label grammar (upstream's)::

    <selector>    ::= <requirement> | <requirement> "," <selector>
    <requirement> ::= [!] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=") VALUE
                      | (">" | "<") INTEGER ]

Field grammar: comma separated terms ``label=value``, ``label==value``, ``label!=value``; the
value may escape ``\\``, ``,`` and ``=`` with a backslash.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from apiserver.registry import validation as v

Object = dict[str, Any]
Matcher = Callable[[Object], bool]
FieldGetter = Callable[[Object], str]


class SelectorError(ValueError):
    """A selector that does not parse or names an unsupported field."""


# ---------------------------------------------------------------------------------------------
# label selectors

_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
_TOKENS: Final = {")", ",", "!", "==", "=", ">", "in", "<", "!=", "notin", "("}
_BINARY_OPS: Final = "in, notin, =, ==, !=, gt, lt"

_ID = "id"  # identifier token
_EOS = "eos"  # end of string
_ERR = "err"


def _lex(s: str) -> list[tuple[str, str]]:
    """Tokens as (kind, literal): kind is _ID, _EOS, _ERR or the literal of an operator."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _WHITESPACE:
            i += 1
        if i >= n:
            out.append((_EOS, ""))
            return out
        ch = s[i]
        if ch in _SPECIAL:
            buf = ""
            last = ""
            j = i
            while j < n and s[j] in _SPECIAL:
                buf += s[j]
                if buf in _TOKENS:
                    last = buf
                    j += 1
                elif last:
                    break
                else:
                    j += 1
            if not last:
                out.append((_ERR, f"error expected: keyword found '{buf}'"))
                i = j
                continue
            i += len(last)
            out.append((last, last))
        else:
            j = i
            while j < n and s[j] not in _SPECIAL and s[j] not in _WHITESPACE:
                j += 1
            word = s[i:j]
            i = j
            out.append((word, word) if word in ("in", "notin") else (_ID, word))


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "in" "notin" "=" "==" "!=" "exists" "!" "gt" "lt"
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op in ("in", "=", "=="):
            return self.key in labels and labels[self.key] in self.values
        if op in ("notin", "!="):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        val = labels.get(self.key)
        if val is None:
            return False
        try:
            have, want = int(val), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == "gt" else have < want

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return "!" + self.key
        vals = ",".join(sorted(self.values))
        if self.op in ("in", "notin"):
            return f"{self.key} {self.op} ({vals})"
        sym = {"gt": ">", "lt": "<"}.get(self.op, self.op)
        return f"{self.key}{sym}{vals}"


class _LabelParser:
    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        self.pos = 0

    def _peek(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        if values and tok in ("in", "notin"):
            tok = _ID
        return tok, lit

    def _next(self, values: bool = True) -> tuple[str, str]:
        tok = self._peek(values)
        self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self._peek()
            if tok in (_ID, "!"):
                try:
                    reqs.append(self._requirement())
                except SelectorError as e:
                    raise SelectorError(f"unable to parse requirement: {e}") from None
                t, lit2 = self._next()
                if t == _EOS:
                    return reqs
                if t == ",":
                    t2, l2 = self._peek()
                    if t2 not in (_ID, "!"):
                        raise SelectorError(f"found '{l2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit2}', expected: ',' or 'end of string'")
            if tok == _EOS:
                return reqs
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        op = ""
        tok, key = self._next()
        if tok == "!":
            op = "!"
            tok, key = self._next()
        if tok != _ID:
            raise SelectorError(f"found '{key}', expected: identifier")
        errs = v.qualified_name_errors(key)
        if errs:
            raise SelectorError(f"<nil>: Invalid value: {v.go_quote(key)}: " + "; ".join(errs))
        if self._peek()[0] in (_EOS, ","):
            return Requirement(key, op or "exists", ())
        if op == "!":
            # "!key" followed by anything but ',' / end: upstream's parseOperator path
            pass
        otok, olit = self._next(values=False)
        if otok not in ("in", "notin", "=", "==", "!=", ">", "<"):
            raise SelectorError(f"found '{olit}', expected: {_BINARY_OPS}")
        op = {">": "gt", "<": "lt"}.get(otok, otok)
        if op in ("in", "notin"):
            values = self._values()
        else:
            values = self._exact_value()
        for i, val in enumerate(values):
            verrs = v.label_value_errors(val)
            if verrs:
                raise SelectorError(f"values[{i}][{key}]: Invalid value: {v.go_quote(val)}: "
                                    + "; ".join(verrs))
        if op in ("gt", "lt"):
            try:
                int(values[0])
            except ValueError:
                raise SelectorError(
                    f"values[0]: Invalid value: {v.go_quote(values[0])}: for 'Gt', 'Lt' "
                    "operators, the value must be an integer") from None
        return Requirement(key, op, values)

    def _values(self) -> tuple[str, ...]:
        tok, lit = self._next()
        if tok != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._peek()
        if tok == ")":
            self._next()
            return ("",)
        if tok not in (_ID, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        found: set[str] = set()
        while True:
            tok, lit = self._next()
            if tok == _ID:
                found.add(lit)
                t2, l2 = self._peek()
                if t2 == ",":
                    continue
                if t2 == ")":
                    break
                raise SelectorError(f"found '{l2}', expected: ',' or ')'")
            if tok == ",":
                if not found:
                    found.add("")
                t2, _ = self._peek()
                if t2 == ")":
                    found.add("")
                    break
                if t2 == ",":
                    found.add("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")
        self._next()  # the ")"
        return tuple(sorted(found))

    def _exact_value(self) -> tuple[str, ...]:
        tok, lit = self._peek()
        if tok in (_EOS, ","):
            return ("",)
        tok, lit = self._next()
        if tok == _ID:
            return (lit,)
        raise SelectorError(f"found '{lit}', expected: identifier")


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        lbl = labels or {}
        return all(r.matches(lbl) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def parse_label_selector(s: str) -> LabelSelector:
    """Parse upstream's label selector syntax. Raises SelectorError."""
    reqs = _LabelParser(s).parse()
    reqs.sort(key=lambda r: r.key)
    return LabelSelector(tuple(reqs))


def label_selector_from_object(sel: Mapping[str, Any] | None) -> LabelSelector | None:
    """A metav1.LabelSelector (matchLabels / matchExpressions) as a LabelSelector; None for a
    missing selector. Operators: In, NotIn, Exists, DoesNotExist."""
    if sel is None:
        return None
    if not isinstance(sel, Mapping):
        raise SelectorError("a label selector must be an object")
    reqs: list[Requirement] = []
    labels = sel.get("matchLabels") or {}
    exprs = sel.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(exprs, list):
        raise SelectorError("matchLabels must be a map and matchExpressions a list")
    for k, val in labels.items():
        reqs.append(Requirement(str(k), "=", (str(val),)))
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in exprs:
        if not isinstance(expr, Mapping) or not isinstance(expr.get("values") or [], list):
            raise SelectorError("a selector requirement must be an object with a list of "
                                "values")
        op = ops.get(str(expr.get("operator", "")))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector "
                                "operator")
        reqs.append(Requirement(str(expr.get("key", "")), op,
                                tuple(sorted(str(x) for x in expr.get("values") or []))))
    reqs.sort(key=lambda r: r.key)
    return LabelSelector(tuple(reqs))


# ---------------------------------------------------------------------------------------------
# field selectors


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str


def _split_terms(s: str) -> list[str]:
    terms: list[str] = []
    start = 0
    i = 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == ",":
            terms.append(s[start:i])
            start = i + 1
        i += 1
    terms.append(s[start:])
    return terms


def _unescape(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                raise SelectorError(
                    f"invalid field selector: invalid escape sequence: {value[i:i + 2]}")
            out.append(value[i + 1])
            i += 2
            continue
        if ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped {ch!s} in value "
                                f"{value!r}".replace("'", '"'))
        out.append(ch)
        i += 1
    return "".join(out)


def parse_field_requirements(s: str) -> list[FieldRequirement]:
    """Upstream fields.ParseSelector: ``a=b,c!=d``. Raises SelectorError."""
    reqs: list[FieldRequirement] = []
    if s.strip() == "":
        return reqs
    for term in _split_terms(s):
        if term == "":
            continue
        for sym, op in (("!=", "!="), ("==", "="), ("=", "=")):
            idx = _index_unescaped(term, sym)
            if idx >= 0:
                lhs, rhs = term[:idx], term[idx + len(sym):]
                reqs.append(FieldRequirement(lhs, op, _unescape(rhs)))
                break
        else:
            raise SelectorError(f"invalid selector: '{s}'; can't understand '{term}'")
    return reqs


def _index_unescaped(term: str, sym: str) -> int:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        if term.startswith(sym, i):
            return i
        i += 1
    return -1


def _meta(name: str) -> FieldGetter:
    def get(obj: Object) -> str:
        return str((obj.get("metadata") or {}).get(name) or "")
    return get


def path_getter(path: str, missing: str = "") -> FieldGetter:
    """A getter for a dotted path (``involvedObject.kind``); missing -> ``missing`` (a Go
    field's zero value as upstream formats it: "" for strings, "false" for a bool)."""
    parts = path.split(".")

    def get(obj: Object) -> str:
        cur: Any = obj
        for p in parts:
            if not isinstance(cur, dict):
                return missing
            cur = cur.get(p)
        if cur is None:
            return missing
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)
    return get


COMMON_FIELDS: Final[dict[str, FieldGetter]] = {
    "metadata.name": _meta("name"),
    "metadata.namespace": _meta("namespace"),
}


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...]
    getters: tuple[FieldGetter, ...]

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Object) -> bool:
        for req, get in zip(self.requirements, self.getters, strict=True):
            have = get(obj)
            if (have == req.value) != (req.op == "="):
                return False
        return True

    def requires_exact(self, field: str) -> str | None:
        for r in self.requirements:
            if r.field == field and r.op == "=":
                return r.value
        return None


def default_unsupported(label: str) -> str:
    """Upstream DefaultMetaV1FieldSelectorConversion's message (kinds without their own
    field label conversion)."""
    return (f'"{label}" is not a known field selector: only "metadata.name", '
            '"metadata.namespace"')


def core_unsupported(label: str) -> str:
    """The message of kinds that register their own field label conversion."""
    return f"field label not supported: {label}"


def parse_field_selector(s: str, fields: Mapping[str, FieldGetter],
                         unsupported: Callable[[str], str] = core_unsupported,
                         common: Mapping[str, FieldGetter] = COMMON_FIELDS,
                         ) -> FieldSelector:
    """Parse and bind to the kind's supported fields (``fields``: label -> getter, plus
    ``common``: metadata.name / metadata.namespace by default). Raises SelectorError with
    ``unsupported(label)`` for another field."""
    reqs = parse_field_requirements(s)
    getters: list[FieldGetter] = []
    for r in reqs:
        get = fields.get(r.field) or common.get(r.field)
        if get is None:
            raise SelectorError(unsupported(r.field))
        getters.append(get)
    return FieldSelector(tuple(reqs), tuple(getters))


def compile_matcher(label_selector: str, field_selector: str,
                    fields: Mapping[str, FieldGetter],
                    unsupported: Callable[[str], str] = core_unsupported,
                    common: Mapping[str, FieldGetter] = COMMON_FIELDS) -> Matcher | None:
    """One callable for both selectors; None when neither restricts anything."""
    ls = parse_label_selector(label_selector) if label_selector else None
    fs = (parse_field_selector(field_selector, fields, unsupported, common)
          if field_selector else None)
    if ls is not None and ls.empty:
        ls = None
    if fs is not None and fs.empty:
        fs = None
    if ls is None and fs is None:
        return None

    def match(obj: Object) -> bool:
        if ls is not None and not ls.matches((obj.get("metadata") or {}).get("labels")):
            return False
        return fs is None or fs.matches(obj)
    return match
