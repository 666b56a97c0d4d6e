"""One scenario check: a search or a context pack run through the library calls the CLI makes
(``ee.query.search``, ``ee.pack.build_pack``), then each expectation compared with what came back.

A failed expectation says what was expected and what was seen: the memory's rank (search) or its place in
the pack (section and authority, or the reason it was omitted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ee.errors import EeError
from ee.eval.scenarios.names import map_query_names

if TYPE_CHECKING:
    from ee.query.document import Query
    from ee.workspace import Workspace

TOP_SHOWN = 5


@dataclass(slots=True)
class Outcome:
    """The failed expectations of one check and what it observed (ranks or pack placement)."""

    failures: list[dict[str, Any]] = field(default_factory=list)
    observed: dict[str, Any] = field(default_factory=dict)

    def fail(self, expectation: str, message: str, memory: str | None = None, actual: Any = None) -> None:
        entry: dict[str, Any] = {"expectation": expectation, "message": message}
        if memory is not None:
            entry["memory"] = memory
        if actual is not None:
            entry["actual"] = actual
        self.failures.append(entry)


def is_pack(check: dict[str, Any]) -> bool:
    return "context" in check or bool(check.get("pack"))


def run_check(ws: Workspace, ids: dict[str, str], check: dict[str, Any]) -> dict[str, Any]:
    """The check's report: id, kind, status (pass / fail / xfail / xpass), failures, observed."""
    names = {real: name for name, real in ids.items()}
    outcome = Outcome()
    try:
        query = make_query(check, ids)
        if is_pack(check):
            from ee.pack import build_pack

            judge_pack(check, build_pack(ws, query), names, outcome)
        else:
            from ee.query import search

            # A check of named memories' flags needs them listed, relevant to its words or not: the
            # relevance floor is off for it (expect_top and the pack checks keep the floor).
            flags_only = (
                not check.get("expect_top")
                and not check.get("expect_order")
                and (check.get("expect_flags") or check.get("expect_not_flagged"))
            )
            judge_search(check, search(ws, query, 0.0 if flags_only else None), names, outcome)
    except EeError as exc:
        outcome.fail(
            "runs",
            f"the {'pack' if is_pack(check) else 'search'} failed: {exc.message}",
            actual={"code": exc.code, "exit_code": int(exc.exit_code)},
        )
    failed = bool(outcome.failures)
    xfail = " ".join(str(check.get("xfail", "")).split())
    status = ("xfail" if failed else "xpass") if xfail else ("fail" if failed else "pass")
    report: dict[str, Any] = {
        "id": check["id"],
        "kind": "pack" if is_pack(check) else "search",
        "status": status,
        "failures": outcome.failures,
        "observed": outcome.observed,
    }
    if xfail:
        report["xfail"] = xfail
    return report


def make_query(check: dict[str, Any], ids: dict[str, str]) -> Query:
    """The ee.query.v1 document of the check, as ``ee search`` / ``ee context`` / ``ee pack`` build it."""
    from ee.query.document import from_arguments, validate

    options = {"mode": check.get("mode", "hybrid"), "as_of": check.get("as_of")}
    if "search" in check:
        return from_arguments(check["search"], **options)
    if "context" in check:
        return from_arguments(
            check["context"], profile=check.get("profile"), max_tokens=check.get("max_tokens"), **options
        )
    doc = map_query_names(check["query"], ids)
    if "mode" in check:
        doc.setdefault("query", {})["mode"] = check["mode"]
    if "as_of" in check:
        doc["asOf"] = check["as_of"]
    if "profile" in check:
        doc.setdefault("output", {})["profile"] = check["profile"]
    if "max_tokens" in check:
        doc.setdefault("budget", {})["maxTokens"] = check["max_tokens"]
    return validate(doc, f"check {check['id']}")


# ------------------------------------------------------------------------------------------ search


def judge_search(check: dict[str, Any], data: dict[str, Any], names: dict[str, str], out: Outcome) -> None:
    hits = {names.get(h["id"], h["id"]): h for h in data["hits"]}
    order = list(hits)
    out.observed = {
        "ranks": {n: hits[n]["rank"] if n in hits else None for n in sorted(names.values())},
        "top": order[:TOP_SHOWN],
        "total": data["total"],
    }
    expected = check.get("expect_top", [])
    k = int(check.get("k", len(expected) or 1))
    for name in expected:
        rank = hits[name]["rank"] if name in hits else None
        if rank is None or rank > k:
            where = f"at rank {rank}" if rank else "not in the results"
            out.fail(
                "expect_top",
                f"{name} is {where} (want within the top {k}; the top: {order[:k]})",
                name,
                {"rank": rank, "top": order[: max(k, TOP_SHOWN)]},
            )
    for name in check.get("expect_absent", []):
        if name in hits:
            out.fail(
                "expect_absent",
                f"{name} is in the results at rank {hits[name]['rank']}",
                name,
                {"rank": hits[name]["rank"], "flags": hits[name]["flags"]},
            )
    judge_common(check, hits, data, out, "in the results")


def _order(wanted: list[str], hits: dict[str, Any], out: Outcome) -> None:
    ranks = {name: hits[name]["rank"] if name in hits else None for name in wanted}
    missing = [n for n, r in ranks.items() if r is None]
    present = [r for r in ranks.values() if r is not None]
    if missing or present != sorted(present):
        detail = ", ".join(f"{n} #{r}" if r else f"{n} absent" for n, r in ranks.items())
        out.fail("expect_order", f"want {' before '.join(wanted)}; got {detail}", actual=ranks)


def judge_common(
    check: dict[str, Any], found: dict[str, Any], data: dict[str, Any], out: Outcome, place: str
) -> None:
    """Order, flags, bodies and leaked text: the same for search hits and pack items."""
    _order(check.get("expect_order", []), found, out)
    for name, flags in check.get("expect_flags", {}).items():
        have = found[name]["flags"] if name in found else None
        if have is None or not set(flags) <= set(have):
            seen = f"has flags {have}" if have is not None else f"is not {place}"
            out.fail("expect_flags", f"{name} should carry {flags} but {seen}", name, {"flags": have})
    for name, flags in check.get("expect_not_flagged", {}).items():
        have = found[name]["flags"] if name in found else None
        if have is None or set(flags) & set(have):
            seen = f"has flags {have}" if have is not None else f"is not {place}"
            out.fail(
                "expect_not_flagged", f"{name} should not carry {flags} but {seen}", name, {"flags": have}
            )
    for name, spec in check.get("expect_body", {}).items():
        if name not in found:
            out.fail("expect_body", f"{name} is not {place}", name)
            continue
        body = found[name].get("body", "")
        lacking = [t for t in spec.get("contains", []) if t not in body]
        extra = [t for t in spec.get("excludes", []) if t in body]
        if lacking or extra:
            parts = ([f"lacks {lacking}"] if lacking else []) + ([f"holds {extra}"] if extra else [])
            out.fail("expect_body", f"{name}'s body {' and '.join(parts)}", name, {"body": body[:400]})
    text = json.dumps(data, ensure_ascii=False)
    for needle in check.get("expect_text_absent", []):
        if needle in text:
            out.fail("expect_text_absent", f"{needle!r} appears in the output")


# ------------------------------------------------------------------------------------------ packs


def judge_pack(check: dict[str, Any], data: dict[str, Any], names: dict[str, str], out: Outcome) -> None:
    items = {names.get(i["id"], i["id"]): i for s in data["sections"] for i in s["items"]}
    omitted = {names.get(o["id"], o["id"]): o["reason"] for o in data["omitted"]}
    budget = data["budget"]
    out.observed = {
        "placement": {n: _place(n, items, omitted) for n in sorted(names.values())},
        "used_tokens": budget["used_tokens"],
        "max_tokens": budget["max_tokens"],
    }
    include = check.get("must_include", [])
    wanted = include if isinstance(include, dict) else dict.fromkeys(include)
    for name, section in wanted.items():
        item = items.get(name)
        if item is None or (section and item["section"] != section):
            want = f"in section {section}" if section else "in the pack"
            out.fail(
                "must_include",
                f"{name} should be {want} but is {_place(name, items, omitted)}",
                name,
                out.observed["placement"][name],
            )
    for name in check.get("must_exclude", []):
        if name in items:
            out.fail(
                "must_exclude",
                f"{name} should not be in the pack but is {_place(name, items, omitted)}",
                name,
                out.observed["placement"][name],
            )
    for key, authoritative in (("must_be_advisory", False), ("must_be_authoritative", True)):
        for name in check.get(key, []):
            if name not in items or items[name]["authoritative"] is not authoritative:
                out.fail(
                    key,
                    f"{name} should be {'authoritative' if authoritative else 'advisory'} but is "
                    f"{_place(name, items, omitted)}",
                    name,
                    out.observed["placement"][name],
                )
    for name, reason in check.get("expect_omitted", {}).items():
        if omitted.get(name) != reason:
            out.fail(
                "expect_omitted",
                f"{name} should be omitted as {reason} but is {_place(name, items, omitted)}",
                name,
                out.observed["placement"][name],
            )
    if check.get("authoritative_only"):
        advisory = [n for n, i in items.items() if not i["authoritative"]]
        if advisory:
            out.fail("authoritative_only", f"advisory items in the pack: {advisory}", actual=advisory)
    judge_common(check, items, data, out, "in the pack")
    invariants(items, budget, out)


def _place(name: str, items: dict[str, Any], omitted: dict[str, str]) -> str:
    if name in items:
        item = items[name]
        block = "authoritative" if item["authoritative"] else "advisory"
        return f"in {item['section']} ({block}, rank {item['rank']})"
    if name in omitted:
        return f"omitted ({omitted[name]})"
    return "not a candidate"


def invariants(items: dict[str, Any], budget: dict[str, Any], out: Outcome) -> None:
    """What every pack must respect, whatever the scenario asks: the budget, quarantine, authority."""
    if budget["used_tokens"] > budget["max_tokens"]:
        out.fail(
            "max_tokens",
            f"the pack uses {budget['used_tokens']} tokens, over its budget of {budget['max_tokens']}",
            actual=budget,
        )
    for name, item in items.items():
        if "quarantined" in item.get("flags", []):
            out.fail("no_quarantined", f"{name} is quarantined yet in the pack ({item['section']})", name)
        if item["authoritative"] and item.get("posture") != "authoritative":
            out.fail(
                "authority",
                f"{name} is in the authoritative block with posture {item.get('posture')}",
                name,
                {"trust": item.get("trust"), "posture": item.get("posture")},
            )
