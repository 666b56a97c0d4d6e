"""Renderers: data → text. They never read files or call git."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see ee/__init__.py)
if TYPE_CHECKING:
    from typing import Any

# json's C encoder itself: the json package (decoder, scanner) costs a fresh process ~1.5 ms more.
# Without the accelerator (another Python), json.dumps does it all.
_c_encode_basestring: Any
_c_make_encoder: Any
try:
    from _json import encode_basestring as _c_encode_basestring
    from _json import make_encoder as _c_make_encoder
except ImportError:  # pragma: no cover
    _c_encode_basestring = _c_make_encoder = None


RESPONSE_SCHEMA = "ee.response.v1"
ERROR_SCHEMA = "ee.error.v1"


def envelope(data: Any, degraded: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"schema": RESPONSE_SCHEMA, "success": True, "data": data, "degraded": degraded or []}


def error_envelope(error: dict[str, Any]) -> dict[str, Any]:
    return {"schema": ERROR_SCHEMA, "success": False, "error": error}


def dumps(value: Any, indent: int | None = 2) -> str:
    """Deterministic JSON: key order as built, UTF-8 kept, no trailing spaces.

    Byte for byte ``json.dumps(value, ensure_ascii=False, indent=indent, default=...)``. The standard
    library encodes with ``indent`` in pure Python (its C encoder has no indentation), which took ~25 ms
    for a 100-hit search; :func:`_pretty` writes the same bytes in under half the time of that.
    """
    if indent is not None and indent > 0:
        try:
            return _pretty(value, " " * indent)
        except _Unusual:
            pass
    import json

    return json.dumps(value, ensure_ascii=False, indent=indent, default=_default)


class _Unusual(Exception):
    """A value :func:`_pretty` leaves to the standard encoder (a dict key that is not a string)."""


_SCALARS = frozenset({str, int, float, bool, type(None)})
Shape = tuple[list[str], list[str]]


def _pretty(value: Any, step: str) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=len(step))`` in two passes. A walk writes the text
    *between* the scalars (brackets, newlines, indentation, keys) and collects the scalars themselves;
    one call of the C encoder then writes every scalar, NUL-separated (an encoded string never holds a
    raw control character), and the two lists are interleaved. A container of scalars (tags, factors,
    provenance: most of a search's containers) costs the walk a handful of C calls, and the keys and
    separators of a dict are made once per key sequence and depth (the hundred hits share theirs)."""
    make: Any = _c_make_encoder
    c_enc: Any = _c_encode_basestring
    if make is None or c_enc is None:
        raise _Unusual
    scalars = _SCALARS
    all_scalars = scalars.issuperset
    lits: list[str] = []  # lits[i]: the text before vals[i]
    vals: list[Any] = []
    lit_append, val_append, lit_extend, val_extend = lits.append, vals.append, lits.extend, vals.extend
    shapes: dict[tuple[str, tuple[Any, ...]], Shape] = {}

    def shape_of(inner: str, keys: tuple[Any, ...]) -> Shape:
        """The text before each value of a dict with these keys at this depth (and all but the first)."""
        if not all(type(key) is str for key in keys):
            raise _Unusual
        every = [",\n" + inner + c_enc(key) + ": " for key in keys]
        every[0] = "{\n" + every[0][2:]
        shape = shapes[(inner, keys)] = (every, every[1:])
        return shape

    def walk(o: Any, indent: str, pending: str) -> str:
        """Write ``o`` after the text ``pending``; return the text that follows its last scalar."""
        t = type(o)
        if t is dict or (t is not list and t is not tuple and isinstance(o, dict)):
            if not o:
                return pending + "{}"
            if t is not dict:
                o = dict(o.items())
            inner = indent + step
            keys = tuple(o)
            every, rest = shapes.get((inner, keys)) or shape_of(inner, keys)
            values = o.values()
            if all_scalars(map(type, values)):
                lit_append(pending + every[0])
                lit_extend(rest)
                val_extend(values)
                return "\n" + indent + "}"
            for lit, item in zip(every, values, strict=True):
                if pending:
                    lit, pending = pending + lit, ""
                if type(item) in scalars:
                    lit_append(lit)
                    val_append(item)
                else:
                    pending = walk(item, inner, lit)
            return pending + "\n" + indent + "}"
        if t is list or t is tuple or isinstance(o, list | tuple):
            if not o:
                return pending + "[]"
            inner = indent + step
            sep = ",\n" + inner
            lit = pending + "[\n" + inner
            if all_scalars(map(type, o)):
                lit_append(lit)
                lit_extend([sep] * (len(o) - 1))
                val_extend(o)
                return "\n" + indent + "]"
            for item in o:
                if type(item) in scalars:
                    lit_append(lit)
                    val_append(item)
                    lit = sep
                else:
                    lit = walk(item, inner, lit) + sep
            return lit[: -len(sep)] + "\n" + indent + "]"
        if isinstance(o, str | int | float) or o is None:  # (subclasses: written as the C encoder does)
            lit_append(pending)
            val_append(o)
            return ""
        return walk(_default(o), indent, pending)

    tail = walk(value, "", "")
    if not vals:
        return tail
    try:
        # (markers, default, encoder, indent, key separator, item separator, sort_keys, skipkeys,
        # allow_nan): the arguments json.dumps passes it, but for the item separator.
        encode = make(None, _default, c_enc, None, ": ", "\0", False, False, True)
    except TypeError:  # another Python's signature
        raise _Unusual from None
    encoded = "".join(encode(vals, 0))[1:-1].split("\0")
    out = [tail] * (2 * len(vals) + 1)
    out[0:-1:2] = lits
    out[1:-1:2] = encoded
    return "".join(out)


def _default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot render {type(value).__name__} as JSON")
