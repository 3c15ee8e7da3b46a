"""The text format's parser: `parse(text)` reads what `str(module)` prints.

Errors are `ParseError` with the line and column and the offending line quoted. The text
may come from anyone (a file, a trace), so what it can make the parser do is bounded: brackets
nest at most `MAX_NESTING` deep, an integer literal has at most `MAX_INT_DIGITS`
digits, dims stay within 64 bits and symbolic dims within the caps of
`compiler.ir.symbolic`; beyond a limit the error is a `ParseLimitError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import LimitError, PasslensError
from compiler.ir.nodes import (
    Block,
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    IRError,
    Loop,
    Module,
    Tuple,
    TupleGetItem,
    Var,
)
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import ANY, Dim, SymExpr, floordiv, mod, sym
from compiler.ir.types import DType, TensorType, TupleType, Type
from compiler.ir.verify import verify as _verify


class ParseError(PasslensError, ValueError):
    """The text is not valid IR; `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int, source_line: str = ""):
        self.message, self.line, self.column = message, line, column
        text = f"line {line}, column {column}: {message}"
        if source_line:
            quoted, caret = _excerpt(source_line, column)
            text += f"\n  {quoted}\n  {' ' * (caret - 1)}^"
        super().__init__(text)


_QUOTE_WIDTH = 160


def _excerpt(line: str, column: int) -> tuple[str, int]:
    """At most `_QUOTE_WIDTH` characters of `line` around `column` (`...` marks a
    cut) and the column in that excerpt: an error quotes a long line, not all of it."""
    if len(line) <= _QUOTE_WIDTH:
        return line, column
    start = max(0, min(column - 1 - _QUOTE_WIDTH // 2, len(line) - _QUOTE_WIDTH))
    quoted = line[start : start + _QUOTE_WIDTH]
    if start + _QUOTE_WIDTH < len(line):
        quoted += "..."
    if start:
        return "..." + quoted, column - start + 3
    return quoted, column


class ParseLimitError(ParseError, LimitError):
    """The text exceeds one of the parser's limits (nesting, literal length, dim size)."""


MAX_NESTING = 64
"""How deep brackets, parentheses and If branches may nest. The parser descends recursively,
and so do the printer and the verifier on what it builds: a fixed limit, far below Python's
recursion limit, keeps deep nesting a ParseError whatever the caller's stack depth."""

MAX_INT_DIGITS = 4300
"""The longest integer literal (Python's own default limit for converting text to int)."""

MAX_DIM_BITS = 64
"""Dims and integer attributes, literal or computed (``+ - * // %``), and the coefficients of
symbolic ones must fit in this many bits (plus a sign): a kernel holds them as i64, and a
product of huge ones could not even be printed (Python's int-to-text limit)."""


@dataclass
class Token:
    kind: str  # local, weight, global, ident, int, float, string, punct, eof
    value: Any
    line: int
    col: int


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r]+|\#[^\n]*)
  | (?P<nl>\n)
  | (?P<local>%[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<weight>\$(?:"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.]*))
  | (?P<global>@[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
  | (?P<int>\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>->|//|[()\[\]{},:=*+\-%?.])
    """,
    re.VERBOSE,
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _position(text: str, pos: int) -> tuple[int, int, str]:
    """The line, column and text of the line at offset `pos`."""
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line_text = text[line_start : len(text) if line_end < 0 else line_end]
    return text.count("\n", 0, pos) + 1, pos - line_start + 1, line_text


def _decode_quoted(raw: str, what: str, line: int, col: int, source: str) -> str:
    """A quoted name or string (JSON escapes); it must be valid Unicode, so a lone surrogate
    (`"\\ud800"`) is refused here rather than failing when the name is written out."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        raise ParseError(f"bad {what}", line, col, source) from None
    bad = _SURROGATE.search(value)
    if bad:
        raise ParseError(
            f"bad {what}: {bad.group()!r} is a lone surrogate, not a Unicode character",
            line,
            col,
            source,
        )
    return value


def tokenize(text: str) -> list[Token]:
    """Split text into tokens; an unexpected character is a ParseError."""
    bad = _SURROGATE.search(text)
    if bad:
        line, col, source = _position(text, bad.start())
        raise ParseError(
            f"{bad.group()!r} is a lone surrogate, not a Unicode character", line, col, source
        )
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    lines = text.split("\n")
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        col = pos - line_start + 1
        if not m:
            raise ParseError(f"unexpected character {text[pos]!r}", line, col, lines[line - 1])
        kind = m.lastgroup
        raw = m.group()
        if kind == "nl":
            line += 1
            line_start = m.end()
        elif kind != "ws":
            value: Any = raw
            if kind == "local":
                value = raw[1:]
            elif kind == "global":
                value = raw[1:]
            elif kind == "weight":
                value = raw[1:]
                if value.startswith('"'):
                    value = _decode_quoted(value, "quoted weight name", line, col, lines[line - 1])
            elif kind == "int":
                if len(raw) > MAX_INT_DIGITS:
                    raise ParseLimitError(
                        f"integer literal of {len(raw)} digits (limit {MAX_INT_DIGITS})",
                        line,
                        col,
                        lines[line - 1],
                    )
                value = int(raw)
            elif kind == "float":
                value = float(raw)
            elif kind == "string":
                value = _decode_quoted(raw, "string literal", line, col, lines[line - 1])
            tokens.append(Token(kind, value, line, col))
        pos = m.end()
    tokens.append(Token("eof", None, line, pos - line_start + 1))
    return tokens


_DTYPES = {d.short: d for d in DType}
_FLOAT_WORDS = {"nan": float("nan"), "inf": float("inf")}


class Parser:
    """Recursive-descent parser over the token list."""

    def __init__(self, text: str, params: Mapping[str, np.ndarray] | None = None):
        self.text = text
        self.lines = text.split("\n")
        self.tokens = tokenize(text)
        self.pos = 0
        self.params = dict(params or {})
        self.weight_types: dict[str, tuple[Type, Token]] = {}
        self.weights: dict[str, Constant] = {}
        self.missing_weights: list[str] = []
        self.scopes: list[dict[str, Expr]] = []
        self.bindings_stack: list[list[Expr]] = []
        self.depth = 0

    def guarded(self, parse_fn):
        """Run `parse_fn`. Nesting is bounded by `MAX_NESTING`; a caller already deep
        in Python's stack can still run out of it, which is a ParseError too."""
        try:
            return parse_fn()
        except RecursionError:
            raise self.error("brackets nested too deeply") from None

    @contextmanager
    def nested(self) -> Iterator[None]:
        """One more level of brackets (or of If branches) around what is parsed inside."""
        if self.depth >= MAX_NESTING:
            raise self.limit_error(f"brackets nested too deeply (limit {MAX_NESTING} levels)")
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    # ----- token helpers ----------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, offset: int = 1) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def error(self, message: str, tok: Token | None = None, cls: type = ParseError) -> ParseError:
        tok = tok or self.tok
        src = self.lines[tok.line - 1] if 0 < tok.line <= len(self.lines) else ""
        return cls(message, tok.line, tok.col, src)

    def limit_error(self, message: str, tok: Token | None = None) -> ParseLimitError:
        return self.error(message, tok, ParseLimitError)

    def _describe(self, tok: Token) -> str:
        if tok.kind == "eof":
            return "end of text"
        prefix = {"local": "%", "weight": "$", "global": "@"}.get(tok.kind, "")
        return repr(f"{prefix}{tok.value}")

    def next(self) -> Token:
        tok = self.tok
        self.pos += 1
        return tok

    def at(self, kind: str, value: Any = None) -> bool:
        t = self.tok
        return t.kind == kind and (value is None or t.value == value)

    def accept(self, kind: str, value: Any = None) -> Token | None:
        if self.at(kind, value):
            return self.next()
        return None

    def expect(self, kind: str, value: Any = None, what: str = "") -> Token:
        if self.at(kind, value):
            return self.next()
        want = what or (repr(value) if value is not None else kind)
        raise self.error(f"expected {want}, found {self._describe(self.tok)}")

    def punct(self, value: str) -> Token:
        return self.expect("punct", value)

    def keyword(self, word: str) -> Token:
        return self.expect("ident", word, repr(word))

    # ----- types ------------------------------------------------------------------------
    def parse_type(self) -> Type:
        if self.accept("punct", "("):
            fields: list[Type] = []
            with self.nested():
                while not self.at("punct", ")"):
                    fields.append(self.parse_type())
                    if not self.accept("punct", ","):
                        break
            self.punct(")")
            return TupleType(fields)
        tok = self.expect("ident", what="a type such as f32[2, 3]")
        if tok.value not in _DTYPES:
            raise self.error(f"unknown dtype {tok.value!r}", tok)
        dtype = _DTYPES[tok.value]
        self.punct("[")
        if self.accept("punct", "*"):
            self.punct("]")
            return TensorType(None, dtype)
        dims: list[Dim] = []
        while not self.at("punct", "]"):
            dims.append(self.parse_dim_expr())
            if not self.accept("punct", ","):
                break
        self.punct("]")
        return TensorType(dims, dtype)

    def parse_dim_expr(self) -> Dim:
        """dim := term (('+'|'-') term)*"""
        start = self.tok
        value = self.parse_dim_expr_signed()
        if isinstance(value, int) and value < 0:
            raise self.error(f"a dimension cannot be negative ({value})", start)
        return value

    def parse_dim_term(self) -> Dim:
        value = self.parse_dim_factor()
        while self.at("punct", "*") or self.at("punct", "//") or self.at("punct", "%"):
            tok = self.next()
            value = self.dim_op(tok, value, self.parse_dim_factor())
        return value

    def parse_dim_factor(self) -> Dim:
        tok = self.tok
        if tok.kind == "int":
            self.next()
            return self.checked_dim(tok, tok.value)
        if tok.kind == "ident" and tok.value not in _DTYPES and tok.value not in _RESERVED:
            self.next()
            return sym(tok.value)
        if self.accept("punct", "?"):
            return ANY
        if self.accept("punct", "("):
            with self.nested():
                v = self.parse_dim_expr_signed()
            self.punct(")")
            return v
        if self.accept("punct", "-"):
            with self.nested():
                return self.dim_op(tok, 0, self.parse_dim_factor())
        raise self.error(f"expected a dimension, found {self._describe(tok)}")

    def parse_dim_expr_signed(self) -> Dim:
        value = self.parse_dim_term()
        while self.at("punct", "+") or self.at("punct", "-"):
            tok = self.next()
            value = self.dim_op(tok, value, self.parse_dim_term())
        return value

    def dim_op(self, tok: Token, a: Dim, b: Dim) -> Dim:
        """`a <tok> b` for dims; an error (a symbolic dim over its caps too) points at
        `tok`."""
        try:
            value = _dim_binop(tok.value, a, b)
        except (TypeError, ZeroDivisionError) as e:
            raise self.error(str(e), tok) from None
        except LimitError as e:
            raise self.limit_error(str(e), tok) from None
        return self.checked_dim(tok, value)

    def checked_dim(self, tok: Token, value: Dim) -> Dim:
        """`value`, unless it (or a coefficient of it) exceeds `MAX_DIM_BITS`."""
        if isinstance(value, SymExpr):
            bits = max(abs(c).bit_length() for _, c in value._terms)
        else:
            bits = abs(value).bit_length() if isinstance(value, int) else 0
        if bits > MAX_DIM_BITS:
            raise self.limit_error(
                f"a dimension or its coefficient has {bits} bits (limit {MAX_DIM_BITS})", tok
            )
        return value

    # ----- values and attributes --------------------------------------------------------
    def parse_number(self) -> Any:
        neg = bool(self.accept("punct", "-"))
        tok = self.tok
        if tok.kind in ("int", "float"):
            self.next()
            return -tok.value if neg else tok.value
        if tok.kind == "ident" and tok.value in _FLOAT_WORDS:
            self.next()
            v = _FLOAT_WORDS[tok.value]
            return -v if neg else v
        if not neg and tok.kind == "ident" and tok.value in ("true", "false"):
            self.next()
            return tok.value == "true"
        raise self.error(f"expected a number, found {self._describe(tok)}")

    def parse_values(self) -> Any:
        """A number or nested lists of numbers."""
        if self.accept("punct", "["):
            items = []
            with self.nested():
                while not self.at("punct", "]"):
                    items.append(self.parse_values())
                    if not self.accept("punct", ","):
                        break
            self.punct("]")
            return items
        return self.parse_number()

    def make_array(self, ty: Type, values: Any, tok: Token) -> np.ndarray:
        if not isinstance(ty, TensorType) or not ty.is_static:
            raise self.error(f"a constant needs a static tensor type, got {ty}", tok)
        try:
            arr = np.array(values, dtype=np.float64 if ty.dtype.is_float else None)
            arr = arr.astype(ty.dtype.numpy)
        except (TypeError, ValueError, OverflowError) as e:
            raise self.error(f"bad constant values: {e}", tok) from None
        if arr.shape != ty.shape:
            if arr.size == 0 and ty.numel == 0:
                return arr.reshape(ty.shape)
            raise self.error(
                f"constant values have shape {list(arr.shape)} but the type is {ty}", tok
            )
        return arr

    def parse_attr_value(self) -> Any:
        tok = self.tok
        if tok.kind == "string":
            self.next()
            return tok.value
        if tok.kind == "ident":
            if tok.value == "none":
                self.next()
                return None
            if tok.value in ("true", "false"):
                self.next()
                return tok.value == "true"
            if tok.value in _DTYPES:
                self.next()
                return _DTYPES[tok.value]
            if tok.value in _FLOAT_WORDS:
                return self.parse_number()
        if self.accept("punct", "["):
            items = []
            with self.nested():
                while not self.at("punct", "]"):
                    items.append(self.parse_attr_value())
                    if not self.accept("punct", ","):
                        break
            self.punct("]")
            return tuple(items)
        if tok.kind == "float" or (
            tok.kind == "punct"
            and tok.value == "-"
            and (self.peek().kind == "float" or self.peek().value in _FLOAT_WORDS)
        ):
            return float(self.parse_number())
        # an integer or a symbolic expression (``-1``, ``n``, ``-2*n + 3``)
        if tok.kind in ("int", "ident") or (tok.kind == "punct" and tok.value in ("(", "?", "-")):
            return self.parse_dim_expr_signed()
        raise self.error(f"expected an attribute value, found {self._describe(tok)}")

    def parse_loc(self) -> Provenance | None:
        if not (
            self.at("ident", "loc") and self.peek().kind == "punct" and self.peek().value == "("
        ):
            return None
        start = self.next()
        self.punct("(")
        items: dict[str, str] = {}
        while not self.at("punct", ")"):
            key = self.expect("ident", what="a provenance key")
            self.punct("=")
            items[key.value] = self.expect("string", what="a quoted string").value
            if not self.accept("punct", ","):
                break
        self.punct(")")
        try:
            return Provenance.from_items(items)
        except KeyError as e:
            raise self.error(str(e.args[0]), start) from None

    # ----- references -------------------------------------------------------------------
    def lookup(self, tok: Token) -> Expr:
        for scope in reversed(self.scopes):
            if tok.value in scope:
                return scope[tok.value]
        raise self.error(f"%{tok.value} is not defined", tok)

    def weight(self, tok: Token) -> Constant:
        name = tok.value
        if name in self.weights:
            return self.weights[name]
        if name not in self.weight_types:
            raise self.error(f"weight ${name} is not declared in the weights block", tok)
        raise self.error(f"weight ${name} has no value", tok)

    def parse_ref(self) -> Expr:
        tok = self.tok
        if tok.kind == "local":
            self.next()
            return self.lookup(tok)
        if tok.kind == "weight":
            self.next()
            return self.weight(tok)
        if tok.kind == "ident" and tok.value == "const":
            self.next()
            self.punct("(")
            ty = self.parse_type()
            self.punct(",")
            vtok = self.tok
            values = self.parse_values()
            self.punct(")")
            return Constant(self.make_array(ty, values, vtok))
        raise self.error(
            f"expected a value (%name, $weight or const(...)), found {self._describe(tok)}"
        )

    # ----- bindings ---------------------------------------------------------------------
    def define(self, tok: Token, node: Expr) -> None:
        scope = self.scopes[-1]
        for s in self.scopes:
            if tok.value in s:
                raise self.error(f"%{tok.value} is defined twice", tok)
        scope[tok.value] = node

    def parse_binding(self) -> None:
        name_tok = self.expect("local", what="a binding (%name: type = ...)")
        self.punct(":")
        ty = self.parse_type()
        eq = self.punct("=")
        rhs_tok = self.tok
        node = self.parse_rhs(name_tok, ty, eq)
        if node.ty != ty and not isinstance(node, (Call, If, FuncCall)):
            raise self.error(f"annotated type {ty} but the value has type {node.ty}", rhs_tok)
        self.define(name_tok, node)
        self.bindings_stack[-1].append(node)

    def parse_rhs(self, name_tok: Token, ty: Type, eq: Token) -> Expr:
        name = name_tok.value
        tok = self.tok
        if tok.kind == "ident" and tok.value == "if":
            return self.parse_if(name, ty)
        if tok.kind == "ident" and tok.value == "call":
            self.next()
            func = self.expect("global", what="@function").value
            args = self.parse_arg_list(allow_attrs=False)[0]
            prov = self.parse_loc()
            return FuncCall(func, args, ty, prov=prov, name=name)
        if tok.kind == "ident" and tok.value == "loop":
            self.next()
            func = self.expect("global", what="@function").value
            args, attrs = self.parse_arg_list(allow_attrs=True)
            carried = attrs.pop("carried", None)
            if attrs or not isinstance(carried, int) or isinstance(carried, bool):
                raise self.error("loop @f(...) takes one attribute, carried=N (an int)", tok)
            prov = self.parse_loc()
            try:
                return Loop(func, args, ty, carried, prov=prov, name=name)
            except (IRError, TypeError) as e:
                raise self.error(str(e), tok) from None
        if self.accept("punct", "("):
            fields = []
            while not self.at("punct", ")"):
                fields.append(self.parse_ref())
                if not self.accept("punct", ","):
                    break
            self.punct(")")
            return Tuple(fields, prov=self.parse_loc(), name=name)
        if tok.kind in ("local", "weight"):
            value = self.parse_ref()
            lb = self.punct("[")
            idx = self.expect("int", what="a tuple index")
            self.punct("]")
            try:
                return TupleGetItem(value, idx.value, prov=self.parse_loc(), name=name)
            except IRError as e:
                raise self.error(str(e), lb) from None
        if tok.kind == "ident" and self.peek().kind == "punct" and self.peek().value == "(":
            op = self.next().value
            args, attrs = self.parse_arg_list(allow_attrs=True)
            prov = self.parse_loc()
            try:
                return Call(op, args, attrs, ty=ty, prov=prov, name=name)
            except (IRError, TypeError) as e:
                raise self.error(str(e), tok) from None
        raise self.error(
            "expected an op call, call @f(...), loop @f(...), a tuple, x[i] or if, "
            f"found {self._describe(tok)}"
        )

    def parse_arg_list(self, allow_attrs: bool) -> tuple[list[Expr], dict]:
        self.punct("(")
        args: list[Expr] = []
        attrs: dict[str, Any] = {}
        while not self.at("punct", ")"):
            if (
                allow_attrs
                and self.tok.kind == "ident"
                and self.peek().kind == "punct"
                and self.peek().value == "="
            ):
                key = self.next()
                self.punct("=")
                if key.value in attrs:
                    raise self.error(f"attribute {key.value} given twice", key)
                attrs[key.value] = self.parse_attr_value()
            else:
                if attrs:
                    raise self.error("positional arguments must come before attributes")
                args.append(self.parse_ref())
            if not self.accept("punct", ","):
                break
        self.punct(")")
        return args, attrs

    def parse_block(self) -> Block:
        self.punct("{")
        self.scopes.append({})
        self.bindings_stack.append([])
        with self.nested():
            while not self.at("ident", "yield"):
                if self.at("eof") or self.at("punct", "}"):
                    raise self.error("expected 'yield' to end the branch")
                self.parse_binding()
        self.next()
        result = self.parse_ref()
        self.punct("}")
        self.scopes.pop()
        return Block(self.bindings_stack.pop(), result)

    def parse_if(self, name: str, ty: Type) -> If:
        tok = self.keyword("if")
        cond = self.parse_ref()
        then_branch = self.parse_block()
        self.keyword("else")
        else_branch = self.parse_block()
        prov = self.parse_loc()
        try:
            return If(cond, then_branch, else_branch, ty=ty, prov=prov, name=name)
        except IRError as e:
            raise self.error(str(e), tok) from None

    # ----- functions and module -----------------------------------------------------------
    def parse_function(self) -> tuple[str, Function]:
        self.keyword("def")
        name = self.expect("global", what="@name").value
        self.scopes = [{}]
        self.bindings_stack = [[]]
        self.punct("(")
        params: list[Var] = []
        while not self.at("punct", ")"):
            ptok = self.expect("local", what="a parameter %name")
            self.punct(":")
            pty = self.parse_type()
            var = Var(ptok.value, pty, prov=self.parse_loc())
            self.define(ptok, var)
            params.append(var)
            if not self.accept("punct", ","):
                break
        self.punct(")")
        self.punct("->")
        ret_tok = self.tok
        ret_ty = self.parse_type()
        attrs: dict[str, Any] = {}
        if self.accept("ident", "attrs"):
            self.punct("{")
            while not self.at("punct", "}"):
                key = self.expect("ident", what="an attribute name")
                self.punct("=")
                attrs[key.value] = self.parse_attr_value()
                if not self.accept("punct", ","):
                    break
            self.punct("}")
        self.punct("{")
        while not self.at("ident", "return"):
            if self.at("eof") or self.at("punct", "}"):
                raise self.error(f"expected 'return' to end @{name}")
            self.parse_binding()
        self.next()
        output = self.parse_ref()
        self.punct("}")
        if output.ty != ret_ty:
            raise self.error(
                f"@{name} is declared to return {ret_ty} but returns {output.ty}", ret_tok
            )
        return name, Function(params, self.bindings_stack[0], output, attrs)

    def parse_weights(self) -> None:
        self.keyword("weights")
        self.punct("{")
        while not self.at("punct", "}"):
            tok = self.expect("weight", what="a weight $name")
            if tok.value in self.weight_types:
                raise self.error(f"weight ${tok.value} is declared twice", tok)
            self.punct(":")
            ty = self.parse_type()
            data = None
            if self.accept("punct", "="):
                vtok = self.tok
                data = self.make_array(ty, self.parse_values(), vtok)
            prov = self.parse_loc()
            self.weight_types[tok.value] = (ty, tok)
            if data is None and tok.value in self.params:
                data = np.asarray(self.params[tok.value])
                if (
                    not isinstance(ty, TensorType)
                    or data.shape != ty.shape
                    or (DType.of(data.dtype) is not ty.dtype)
                ):
                    raise self.error(
                        f"params[{tok.value!r}] is a {data.dtype} array of shape "
                        f"{list(data.shape)}, but the weight is declared {ty}",
                        tok,
                    )
            if data is None:
                self.missing_weights.append(tok.value)
                continue
            self.weights[tok.value] = Constant(data, name=tok.value, prov=prov)
        self.punct("}")
        if self.missing_weights:
            names = ", ".join("$" + n for n in self.missing_weights)
            tok = self.weight_types[self.missing_weights[0]][1]
            raise self.error(
                f"no values for weight(s) {names}: write '= [...]' after the type or pass "
                "params={name: array} to parse()",
                tok,
            )

    def parse_module(self) -> Module:
        if self.at("ident", "weights"):
            self.parse_weights()
        functions: dict[str, Function] = {}
        while not self.at("eof"):
            tok = self.tok
            name, fn = self.parse_function()
            if name in functions:
                raise self.error(f"function @{name} is defined twice", tok)
            functions[name] = fn
        if not functions:
            raise self.error("the text defines no function (expected 'def @main(...)')")
        return Module(functions)


_RESERVED = {"none", "true", "false", "nan", "inf", "loc", "const", "if", "else", "call"}


def _dim_binop(op: str, a: Dim, b: Dim) -> Dim:
    if a is ANY or b is ANY:
        return ANY
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "//":
        return floordiv(a, b)
    if op == "%":
        return mod(a, b)
    raise AssertionError(op)


def parse(text: str, params: Mapping[str, np.ndarray] | None = None, verify: bool = True) -> Module:
    """Parse a module from the text format. `params` gives values of weights the text
    declares without values. With `verify` (the default) the verifier checks the result."""
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the module text as a str, got {type(text).__name__}")
    parser = Parser(text, params)
    module = parser.guarded(parser.parse_module)
    if verify:
        _verify(module)
    return module


def parse_type(text: str) -> Type:
    """Parse a type such as `f32[n, 128]` or `(f32[2], i64[])`."""
    p = Parser(text)
    ty = p.guarded(p.parse_type)
    p.expect("eof", what="end of the type")
    return ty


def parse_dim(text: str) -> Dim:
    """Parse a dim: `128`, `n`, `2*n + 1`, `(n + 1) // 2`, `?`."""
    p = Parser(text)
    d = p.guarded(p.parse_dim_expr)
    p.expect("eof", what="end of the dimension")
    return d


__all__ = [
    "parse",
    "parse_type",
    "parse_dim",
    "ParseError",
    "ParseLimitError",
    "tokenize",
    "SymExpr",
]
