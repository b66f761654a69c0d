"""The first syntax error of a JSON text in the words of Go's ``encoding/json`` scanner
(``invalid character 'x' looking for beginning of value``, ``unexpected end of JSON input``),
which upstream's decoders put in their messages. Python's json module reports the same
errors as ``Expecting value: line 1 column 9 (char 8)``.

Only the error is computed here (after Python's parser refused the text): a scan of the text
as Go's state machine does it, byte by byte.
"""

from __future__ import annotations

from typing import Final

_WS: Final = frozenset(b" \t\r\n")
_ESCAPES: Final = frozenset(b'"\\/bfnrtu')
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
END: Final = "unexpected end of JSON input"


class _Stop(Exception):
    pass


def quote_char(c: int) -> str:
    """Go's quoteChar: ``'x'``, with ``'\\''``, ``'"'`` and strconv.Quote's escapes."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    ch = chr(c)
    if ch.isprintable():
        return f"'{ch}'"
    escapes = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t",
               0x0B: "\\v"}
    if c in escapes:
        return f"'{escapes[c]}'"
    return f"'\\x{c:02x}'" if c < 0x20 or c == 0x7F else f"'\\u{c:04x}'"


class _Scanner:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.i = 0

    def fail(self, context: str) -> _Stop:
        if self.i >= len(self.data):
            return _Stop(END)
        return _Stop(f"invalid character {quote_char(self.data[self.i])} {context}")

    def peek(self) -> int:
        if self.i >= len(self.data):
            raise _Stop(END)
        return self.data[self.i]

    def skip_ws(self) -> None:
        while self.i < len(self.data) and self.data[self.i] in _WS:
            self.i += 1

    def value(self) -> None:
        self.skip_ws()
        c = self.peek()
        if c == 0x7B:  # {
            self.i += 1
            self.object()
        elif c == 0x5B:  # [
            self.i += 1
            self.array()
        elif c == 0x22:
            self.i += 1
            self.string()
        elif c == 0x2D or 0x30 <= c <= 0x39:
            self.number()
        elif c in b"tfn":
            self.literal({0x74: b"true", 0x66: b"false", 0x6E: b"null"}[c])
        else:
            raise self.fail("looking for beginning of value")

    def object(self) -> None:
        self.skip_ws()
        if self.peek() == 0x7D:
            self.i += 1
            return
        while True:
            self.skip_ws()
            if self.peek() != 0x22:
                raise self.fail("looking for beginning of object key string")
            self.i += 1
            self.string()
            self.skip_ws()
            if self.peek() != 0x3A:
                raise self.fail("after object key")
            self.i += 1
            self.value()
            self.skip_ws()
            c = self.peek()
            self.i += 1
            if c == 0x7D:
                return
            if c != 0x2C:
                self.i -= 1
                raise self.fail("after object key:value pair")

    def array(self) -> None:
        self.skip_ws()
        if self.peek() == 0x5D:
            self.i += 1
            return
        while True:
            self.value()
            self.skip_ws()
            c = self.peek()
            self.i += 1
            if c == 0x5D:
                return
            if c != 0x2C:
                self.i -= 1
                raise self.fail("after array element")

    def string(self) -> None:
        while True:
            c = self.peek()
            if c == 0x22:
                self.i += 1
                return
            if c < 0x20:
                raise self.fail("in string literal")
            self.i += 1
            if c == 0x5C:
                e = self.peek()
                if e not in _ESCAPES:
                    raise self.fail("in string escape code")
                self.i += 1
                if e == 0x75:
                    for _ in range(4):
                        if self.peek() not in _HEX:
                            raise self.fail("in \\u hexadecimal character escape")
                        self.i += 1

    def digits(self) -> None:
        while self.i < len(self.data) and 0x30 <= self.data[self.i] <= 0x39:
            self.i += 1

    def number(self) -> None:
        if self.peek() == 0x2D:
            self.i += 1
            if not 0x30 <= self.peek() <= 0x39:
                raise self.fail("in numeric literal")
        if self.peek() == 0x30:
            self.i += 1
        else:
            self.digits()
        if self.i < len(self.data) and self.data[self.i] == 0x2E:
            self.i += 1
            if not 0x30 <= self.peek() <= 0x39:
                raise self.fail("after decimal point in numeric literal")
            self.digits()
        if self.i < len(self.data) and self.data[self.i] in b"eE":
            self.i += 1
            if self.peek() in b"+-":
                self.i += 1
            if not 0x30 <= self.peek() <= 0x39:
                raise self.fail("in exponent of numeric literal")
            self.digits()

    def literal(self, word: bytes) -> None:
        self.i += 1
        for expect in word[1:]:
            if self.peek() != expect:
                raise self.fail(f"in literal {word.decode()} (expecting '{chr(expect)}')")
            self.i += 1


def syntax_error(data: bytes) -> str | None:
    """Go's message for the first syntax error of ``data``, or None when it is valid
    JSON syntax (the error was something else: a value Go refuses, too deep, ...)."""
    sc = _Scanner(data)
    try:
        sc.value()
        sc.skip_ws()
        if sc.i < len(data):
            raise sc.fail("after top-level value")
    except _Stop as e:
        return str(e)
    except RecursionError:
        return None
    return None
