"""What the injection guard reads: the visible text, and the other ways the same text can be read.

An attack hides from a pattern by spelling: invisible characters, look-alike letters from other scripts
(Cyrillic "о", Greek "ο"), letters spread out ("i.g.n.o.r.e", "i g n o r e"), digits for letters ("1gn0re"),
words run together as a slug ("ignore-all-previous-instructions", as a path or a tag carries them),
or an encoding an agent decodes without thinking (base64, percent escapes, HTML entities), or text a
Markdown view never shows (an HTML comment). :func:`views` gives every such reading of a text; the guard
scans each one. A reading is only made when the text holds what it undoes, so ordinary text costs one scan.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_ZERO_WIDTH = frozenset("\u200b\u180e\ufeff")
_JOINERS = frozenset("\u200c\u200d\u2060")  # (the word joiner keeps "reply-\u2060>atom" on one line)
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

# Letters of other scripts that look like Latin ones (the Unicode "confusables" most used in attacks).
_CONFUSABLE = str.maketrans(
    "аеорсухіјѕԁһԛԝгпткмвАВЕКМНОРСТХІЈЅ"  # Cyrillic
    "αβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"  # Greek
    "ɡɑıɩʏօսհ"  # Latin and Armenian variants
    "ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘǫʀꜱᴛᴜᴠᴡʏᴢ",  # small capitals
    "aeopcyxijsdhqwrntkmbABEKMHOPCTXIJSabeikvoptuxABEZHIKMNOPTYXgaiiyouhabcdefghijklmnopqrstuvwyz",
)
_FOLDABLE = "[\u00c0-\u024f\u0250-\u02af\u0370-\u03ff\u0400-\u04ff\u0530-\u058f\u1d00-\u1d7f\ua730-\ua7ff]"
_LEET = str.maketrans("013457@$", "oieastas")
# words run together as a slug ("ignore-all-previous-instructions", "ignore_all_previous"): a path, a tag
# or an id carries a sentence this way
# (possessive: a shorter run ends before a letter, "-" or "_", which the look-ahead refuses anyway)
_SLUG = r"(?<![\w-])[A-Za-z]++(?:[-_][A-Za-z]++){2,}+(?![\w-])"
_SPELLED = r"(?<!\w)\w([.\-_*·• ])\w(?:\1\w)+(?!\w)"  # i.g.n.o.r.e, i g n o r e, i-g-n-o-r-e
# a word where a letter and a digit-for-a-letter touch ("1gn0re", "pr3v10us"; not "sha256" or "v2")
_LEET_PAIR = r"[A-Za-z][013457@$]|[013457@$][A-Za-z]"  # what a leet word cannot be without
_LEET_WORD = rf"\b[\w@$]*?(?:{_LEET_PAIR})[\w@$]*"
_INVISIBLE = "[\u200b-\u200d\u2060\u180e\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]"
_BASE64 = r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])"
_PERCENT = r"%[0-9A-Fa-f]{2}"
_ENTITY = r"&(?:#\d{1,7}|#x[0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,30});"
_COMMENT = r"<!--(.*?)-->"
_HEX = r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}[ :]?){12,}(?![0-9A-Za-z])"
_BASE32 = r"(?<![A-Za-z0-9])[A-Z2-7]{16,}={0,6}(?![A-Za-z0-9=])"
_HYPHEN_BREAK = r"(?<=[^\W\d_])-[ \t]*\r?\n[ \t]*(?=[^\W\d_])"  # "pre-\nvious": a word hyphenated at a break
# The words an attack is made of: a break is read as inside a word only when joining its two sides makes one
# of them (wrapped prose breaks between words, and joining those too would scan most texts twice)
_KEYWORDS = (
    "ignore", "disregard", "forget", "previous", "prior", "instruction", "prompt", "system", "directive",
    "override", "bypass", "reveal", "secret", "token", "password", "credential", "upload", "send", "curl",
    "wget", "exec", "eval", "dangerously", "permission", "sandbox", "approval", "assistant", "developer",
)  # fmt: skip
# What :func:`_unmarked` takes out (format characters, combining marks, symbols): a text without any is
# left as it is, without looking at each character
_MARKS = (
    "[\u00ad\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u20d0-\u20ff\u2190-\u21ff\u2300-\u23ff\u2460-\u27bf\u2900-\u297f\u2b00-\u2bff\ufe00-\ufe0f\ufe20-\ufe2f"
    "\ufeff\U0001f000-\U0001faff]"
)
# Common English words: a text that holds more of them read backwards, or in rot13, than as written is
# written backwards or in rot13 (a cheap test, made before any reading is scanned)
_COMMON = frozenset(
    [
        "the",
        "and",
        "all",
        "to",
        "of",
        "you",
        "your",
        "this",
        "that",
        "is",
        "are",
        "be",
        "with",
        "for",
        "from",
        "on",
        "in",
        "it",
        "now",
        "any",
        "every",
        "previous",
        "instructions",
        "ignore",
        "send",
        "run",
        "print",
        "system",
        "prompt",
        "please",
        "must",
    ]
)
# ... looked for only when the text holds two of their commonest words so spelled (a few substring counts)
_BACKWARDS_MARKS = (" eht ", " dna ", " lla ", " uoy ", " ruoy ", " fo ", " ot ", " si ", " siht ")
_ROT13_MARKS = (" gur ", " naq ", " nyy ", " lbh ", " lbhe ", " bs ", " vf ", " guvf ", " vtaber ")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ROT13 = str.maketrans(_LETTERS, "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")


@functools.cache
def _re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Compiled on first use so importing the guard stays cheap."""
    return re.compile(pattern, flags)


def hidden(text: str) -> tuple[str, dict[str, float]]:
    """Strip invisible characters; return the visible text (plus decoded tag-character ASCII) and what hid.

    Zero-width spaces and a byte-order mark inside a line are hidden text (0.55), except a zero-width space
    as a line-break hint (:func:`_break_hint`); so are zero-width (non-)joiners and word
    joiners between ASCII letters (they are legitimate inside emoji, in Persian or Indic scripts, and to
    keep "->" on one line; a byte-order mark starts a file, or a file pasted in).
    Bidi overrides can reorder what a reviewer sees (0.6, "Trojan Source"). Unicode tag characters (U+E0000
    to U+E007F) spell invisible ASCII (0.8, "ASCII smuggling"): they are decoded and scanned as text.
    """
    if text.isascii() or not _re(_INVISIBLE).search(text):
        return text, {}
    visible: list[str] = []
    smuggled: list[str] = []
    found: dict[str, float] = {}
    for index, char in enumerate(text):
        code = ord(char)
        if 0xE0000 <= code <= 0xE007F:
            found["tag"] = 0.8
            if 0xE0020 <= code <= 0xE007E:
                smuggled.append(chr(code - 0xE0000))
        elif char in _BIDI:
            found["bidi"] = 0.6
        elif char == "\ufeff" and (index == 0 or text[index - 1] == "\n"):
            pass  # a byte-order mark that starts a line is only an encoding marker
        elif char in _ZERO_WIDTH or (char in _JOINERS and _between_ascii_letters(text, index)):
            if not _break_hint(text, index):
                found["zero_width"] = 0.55
        else:
            visible.append(char)
    clean = "".join(visible) + ("\n" + "".join(smuggled) if smuggled else "")
    return clean, found


def _break_hint(text: str, index: int) -> bool:
    """Is the zero-width space ``text[index]`` a line-break hint, as HTML documentation puts one inside a
    rule (``----\u200b----``) or after the punctuation of a long name or address (``role_\u200bname``,
    ``2001:db8:\u200b1``)? Not one inside a word, nor one of a run of them."""
    before = text[index - 1] if index else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if before == after and before in "-=_~*.#+":
        return True
    return before in "_:/.,=-" and after.isascii() and after.isalnum()


def _between_ascii_letters(text: str, index: int) -> bool:
    before = text[index - 1] if index else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    return before.isascii() and before.isalpha() and after.isascii() and after.isalpha()


def views(visible: str) -> tuple[str, list[str], list[str]]:
    """``(text, respelled, hidden)`` for the visible text of :func:`hidden`.

    ``text`` is the NFKC form (full-width letters, ligatures and the like become plain ones). ``respelled``
    holds the readings that undo look-alike letters, spread-out letters, digits for letters and words
    run together as a slug (each only when it changes something). ``hidden`` holds what an encoding or a
    comment keeps from a reader: base64 runs that decode to text, the text with percent escapes or HTML
    entities decoded, and each HTML comment's content.
    """
    text = unicodedata.normalize("NFKC", visible)
    respelled: list[str] = []  # (only the lines a reading changes: the others were scanned as they are)
    folded = text
    if not text.isascii() and _re(_FOLDABLE).search(text):  # look-alikes folded, accents dropped ("ïgnöre")
        folded = text.translate(_CONFUSABLE)
        folded = unicodedata.normalize("NFC", _drop_latin_accents(unicodedata.normalize("NFD", folded)))
    if folded != text:
        respelled.append(_changed_lines(text, folded))
    unmarked = _unmarked(folded)
    if unmarked != folded:
        respelled.append(_changed_lines(folded, unmarked))
    rejoined = _rejoined(unmarked) if "\n" in unmarked else unmarked
    if rejoined != unmarked:  # "previ\nous" (a reading of its own: "all\nprevious" stays two words)
        respelled.append(rejoined)
    joined = _re(_SPELLED).sub(lambda m: m.group(0).replace(m.group(1), ""), unmarked)
    if _re(_LEET_PAIR).search(joined):  # (a search for the pair is far cheaper than the lazy word pattern)
        joined = _re(_LEET_WORD).sub(lambda m: m.group(0).translate(_LEET), joined)
    joined = _re(_SLUG).sub(lambda m: re.sub(r"[-_]", " ", m.group(0)), joined)
    if joined != unmarked:
        respelled.append(_changed_lines(unmarked, joined))
    return text, respelled, _decoded(text)


def _unmarked(text: str) -> str:
    """``text`` with what spells a word apart without changing it taken out: format characters (a soft
    hyphen, U+00AD) and combining marks (U+0336 strokes, stacked accents) dropped, each emoji or other
    symbol read as a space ("ignore👉all"; "I🔥g🔥n…" is then spelled out, which :data:`_SPELLED` joins),
    and a word hyphenated at a line break joined ("pre-\nvious")."""
    if "\n" in text and "-" in text and _re(r"-[ \t]*\r?\n").search(text):  # (a literal-led search first)
        text = _re(_HYPHEN_BREAK).sub("", text)
    if text.isascii() or not _re(_MARKS).search(text):
        return text
    out: list[str] = []
    for char in text:  # (NFKC composed what it could: a mark left alone is one no letter takes)
        category = unicodedata.category(char)
        if category in ("Mn", "Me", "Cf"):
            continue
        out.append(" " if category == "So" else char)
    return unicodedata.normalize("NFC", "".join(out))


def _rejoined(text: str) -> str:
    """``text`` with each line break that splits one of :data:`_KEYWORDS` ("instruc\\ntions") taken out."""
    low = text.lower()
    joined = low.replace("\r", "").replace(
        "\n", ""
    )  # (a few counts in C decide whether any break splits one)
    if not any(joined.count(k) > low.count(k) for k in _KEYWORDS):
        return text

    def join(m: re.Match[str]) -> str:
        left, right = m.group(1).lower(), m.group(2).lower()
        word = left + right
        broken = any(k in word and k not in left and k not in right for k in _KEYWORDS)
        return m.group(1) + m.group(2) if broken else m.group(0)

    return _re(r"(?<![^\W\d_])([^\W\d_]+)\r?\n([^\W\d_]+)").sub(join, text)


def _changed_lines(before: str, after: str) -> str:
    """The lines of ``after`` that differ from ``before`` (both have the same lines: no reading adds one)."""
    old, new = before.split("\n"), after.split("\n")
    if len(old) != len(new):
        return after
    return "\n".join(line for line, was in zip(new, old, strict=True) if line != was)


def _drop_latin_accents(decomposed: str) -> str:
    """Combining marks on Latin letters go; on other scripts (Japanese dakuten, Devanagari) they stay."""
    out: list[str] = []
    for char in decomposed:
        if unicodedata.combining(char) and out and out[-1] < "\u0250":
            continue
        out.append(char)
    return "".join(out)


def _decoded(text: str) -> list[str]:
    out: list[str] = []
    for match in _re(_BASE64).finditer(text):
        decoded = _base64_text(match.group(0))
        if decoded:
            out.append(decoded)
    if len(_re(_PERCENT).findall(text)) >= 3:
        from urllib.parse import unquote

        out.append(unquote(text))
    if _re(_ENTITY).search(text):
        import html

        out.append(html.unescape(text))
    out.extend(m.group(1) for m in _re(_COMMENT, re.DOTALL).finditer(text))
    for match in _re(_HEX).finditer(text):
        decoded = _as_text(_hex_bytes(match.group(0)))
        if decoded:
            out.append(decoded)
    for match in _re(_BASE32).finditer(text):
        decoded = _base32_text(match.group(0))
        if decoded:
            out.append(decoded)
    out.extend(_backwards_or_rot13(text))
    return [unicodedata.normalize("NFKC", piece) for piece in out]


def _common_words(text: str) -> int:
    return sum(1 for word in _re(r"[a-z]+").findall(text.lower()) if word in _COMMON)


def _backwards_or_rot13(text: str) -> list[str]:
    """The text read backwards, or in rot13, when that reads as English more than the text does."""
    padded = " " + text.lower() + " "
    candidates = [
        reading()
        for marks, reading in (
            (_BACKWARDS_MARKS, lambda: text[::-1]),
            (_ROT13_MARKS, lambda: text.translate(_ROT13)),
        )
        if sum(padded.count(mark) for mark in marks) >= 2
    ]
    if not candidates:
        return []
    plain = _common_words(text)
    return [reading for reading in candidates if _common_words(reading) >= max(3, plain + 2)]


def _hex_bytes(run: str) -> bytes | None:
    try:
        return bytes.fromhex(run.replace(" ", "").replace(":", ""))
    except ValueError:
        return None


def _base32_text(run: str) -> str | None:
    import base64
    import binascii

    try:
        return _as_text(base64.b32decode(run + "=" * (-len(run) % 8)))
    except (binascii.Error, ValueError):
        return None


def _as_text(data: bytes | None) -> str | None:
    """Decoded bytes as text when they are text: UTF-8, printable, with a space (not a key or a digest)."""
    if not data:
        return None
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(c.isprintable() or c in "\n\t" for c in decoded)
    return decoded if printable >= 0.95 * len(decoded) and " " in decoded else None


def _base64_text(run: str) -> str | None:
    """The text a base64 run (standard or URL-safe) decodes to, or None for binary or no base64."""
    import base64
    import binascii

    padded = run + "=" * (-len(run) % 4)
    try:
        data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\n\t" for c in decoded)
    return decoded if decoded and printable >= 0.95 * len(decoded) and " " in decoded else None
