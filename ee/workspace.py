"""The public façade: one workspace (a ``memories/`` folder in a git work tree) and what can be done to it.

The CLI parses, calls one method here, and renders. Store, git, index, query and pack code sit below.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.config import Config, load_config
from ee.discovery import find_root
from ee.errors import (
    ConfigError,
    ConflictError,
    PolicyError,
    StorageError,
    UsageError,
)
from ee.git.repo import Git, format_message
from ee.model import Link, Memory
from ee.policy.trust import (
    HIDING_LINKS,
    Actor,
    NeedsPerson,
    Proposal,
    require_may_act_on,
    weaker,
)
from ee.store import frontmatter
from ee.store.fields import (
    build_fields,
    check_text,
    check_window,
    clean_tags,
    guard_memory,
    normalise_time,
    parse_link,
)
from ee.store.files import MEMORIES, Store, atomic_write, check_id, workspace_lock
from ee.store.ids import new_id, now_text
from ee.values import LINK_TYPES

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ee.index.freshness import SyncReport as IndexReport
    from ee.index.view import Hold
    from ee.model import Problem, Progress
    from ee.ops.sync import SyncReport
    from ee.ops.transfer import ImportReport
    from ee.query.document import Query
    from ee.query.standing import Standing
    from ee.results import Degradation
    from ee.results.health import DoctorReport, IndexStatus, InitReport
    from ee.results.hooks import HookCheck
    from ee.results.memory import MemoryHistory, MemoryList, MemoryView
    from ee.results.outcome import OutcomeReport
    from ee.results.pack import Pack
    from ee.results.search import SearchResult
    from ee.results.sessions import Session, SessionEvidence, SessionForgotten, SessionImport
    from ee.results.why import Explanation


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.recovered_import: dict[str, Any] | None = None  # set by lock(): what it finished or undid
        # The index view a long-lived process keeps between requests (the server's watcher sets it):
        # ee.index.view.Hold, read by open_index.
        self.index_hold: Hold | None = None

    @cached_property
    def git(self) -> Git:
        """The repository ee's files are committed in: the code's, or with a memory branch its worktree
        ``memories/`` (:mod:`ee.git.memory_branch`), which every ee writer then commits to."""
        from ee.git import memory_branch

        folder = memory_branch.worktree(self.root)
        if folder is not None:
            return Git(self.root, folder)
        try:
            branch = self.config.get("store.branch")
        except ConfigError:  # (a broken config is reported where it is used, e.g. by ee doctor)
            branch = ""
        if branch:  # a fresh clone: memories/ is not checked out yet (the code branch ignores it)
            raise ConfigError(
                f"this workspace keeps its memories on the branch {branch!r}, not checked out at memories/",
                f"run: ee init (it adds memories/ as a worktree of {branch})",
            )
        return Git(self.root)

    def branch_notes(self) -> list[Degradation]:
        """After a write (``degraded`` entries): where it went, when that is not where a reader may look.
        With memories on the code branch, a write on a branch other than the default stays on that
        branch until it merges."""
        from ee.git import memory_branch

        if memory_branch.worktree(self.root) is not None:
            return []
        branch, default = memory_branch.code_branches(self.git, str(self.config.get("sync.remote")))
        if branch is None or branch == default or (default is None and branch in ("main", "master")):
            return []
        return [
            {
                "code": "written_on_branch",
                "severity": "info",
                "message": f"committed on the code branch {branch!r}"
                + (f", not {default!r}" if default else "")
                + ": memories and their feedback follow the code branch, and reach the others when it merges",
                "repair": "to keep memories apart from code checkouts: ee init --branch ee/memories "
                "(README: Teams)",
            }
        ]

    @classmethod
    def discover(cls, explicit: str | os.PathLike[str] | None = None) -> Workspace:
        return cls(find_root(explicit))

    @cached_property
    def config(self) -> Config:
        return load_config(self.root)

    @cached_property
    def store(self) -> Store:
        return Store(self.root, int(self.config.get("store.max_body_bytes")))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The workspace lock, which every writer holds. Taken, it first finishes or undoes an import a
        killed process left (:func:`ee.ops.recovery.recover_import`): no writer ever commits that import's
        files as its own, nor counts them as taken. What it did is kept in ``recovered_import``."""
        from ee.ops.recovery import JOURNAL, damaged_journal, has_journal, recover_import

        with workspace_lock(self.root, float(self.config.get("lock.timeout"))):
            self.recovered_import = None
            if has_journal(self.root):
                damage = damaged_journal(self.root)
                if damage is not None:
                    raise StorageError(
                        f"{damage}: an interrupted import's files may be in {MEMORIES}/, uncommitted, "
                        "and ee cannot tell them from yours",
                        f"look at `git status {MEMORIES}`, remove what the import left, then: rm {JOURNAL}",
                    )
                self.recovered_import = recover_import(self, "ee, before its next write")
            yield

    # ------------------------------------------------------------------------------------ init

    @classmethod
    def init(
        cls, path: str | os.PathLike[str] = ".", branch: str | None = None
    ) -> tuple[Workspace, InitReport]:
        """Create or adopt a git repository and make it an ee workspace. Idempotent.

        The commit holds ee's files and, of a ``.gitignore`` / ``.gitattributes`` the user already has,
        only ee's lines: their uncommitted edits to those files stay uncommitted (staged or not).
        ``branch`` (or ``[store] branch`` of the config, in a fresh clone) keeps ``memories/`` as a worktree
        of that branch (:mod:`ee.git.memory_branch`).
        """
        from ee.ops.init import init, workspace_folder
        from ee.results.health import InitReport

        ws = cls(workspace_folder(path))
        return ws, InitReport.from_json(init(ws, branch))

    # ------------------------------------------------------------------------------------ writes

    def remember(
        self,
        text: str,
        *,
        level: str = "semantic",
        kind: str = "fact",
        tags: Sequence[str] = (),
        confidence: float | None = None,
        source: Sequence[str] = (),
        valid_from: str | None = None,
        valid_to: str | None = None,
        links: Sequence[str] = (),
        paths: Sequence[str] = (),
        actor: Actor | None = None,
        redact: bool = False,
    ) -> Memory:
        """Write one new memory file and commit it."""
        actor = actor or Actor.from_env()
        body = check_text(text)
        fields = build_fields(
            memory_id=new_id(),
            level=level,
            kind=kind,
            tags=tags,
            trust=actor.trust,
            confidence=confidence,
            source=source,
            valid_from=valid_from,
            valid_to=valid_to,
            links=list(dict.fromkeys(parse_link(item) for item in links)),  # a link given twice is one
            paths=paths,
        )
        fields, body, _extra = guard_memory(fields, body, redact=redact)
        for link in fields["links"]:  # (after the secret guard: an error never echoes a secret)
            target = self.get(link.to)  # each target exists, as `ee memory link` requires
            if link.type in HIDING_LINKS:  # an agent's new memory may not retire a person's
                proposed: dict[str, Any] = {"text": body, "link": f"{link.type}:{link.to}"}
                proposed |= {"kind": kind, "level": level, "tags": list(fields["tags"])}
                self.may_change(actor, target, "supersede", proposed)
        rel = self.store.new_path(fields["id"], body)
        cites = self._cites(fields["paths"])
        content = frontmatter.render_new(fields, body, cites)
        memory = frontmatter.new_memory(fields, body, rel)
        if cites:  # (new_memory knows no extra key: read back what was rendered)
            memory = frontmatter.parse(content, rel)[0]
        with self.lock():
            self.store.write(rel, content)
            try:
                self.git.commit_paths(
                    [rel],
                    format_message(
                        f"ee: remember {memory.title}",
                        {"Ee-Op": "remember", "Ee-Memory": memory.id, "Ee-Actor": actor.label},
                    ),
                )
            except BaseException:
                self.store.delete(rel)  # a failed remember leaves nothing behind
                raise
        return memory

    def _cites(self, paths: Sequence[str]) -> dict[str, Any]:
        """The ``cites:`` key for a new memory's ``paths``: the hash of each cited file or line range as it
        is now (:mod:`ee.curate.citations`), so a pack can tell when the code it cites changed."""
        if not paths:
            return {}
        from ee.curate.citations import hashes_for

        hashes = hashes_for(self.root, list(paths))
        return {frontmatter.CITES_KEY: hashes} if hashes else {}

    def get(self, memory_id: str) -> Memory:
        return self.store.find(memory_id)

    def list(
        self,
        *,
        level: str | None = None,
        kind: str | None = None,
        tag: Sequence[str] = (),
        limit: int | None = None,
    ) -> tuple[list[Memory], list[Any]]:
        snap = self.store.snapshot()
        out = [
            m
            for m in snap.sorted()
            if (level is None or m.level == level)
            and (kind is None or m.kind == kind)
            and all(t in m.tags for t in tag)
        ]
        from ee.policy.secrets import mask_memory

        return [mask_memory(m) for m in (out[:limit] if limit else out)], snap.problems

    def granted_trust(self, memories: Sequence[Memory], protecting: bool = False) -> dict[str, str]:
        """The trust class ee grants each of ``memories``, by id: its ``trust:`` key capped by who wrote the
        file since a person last reviewed it (:func:`ee.query.standing.resolve_trust`, as search and packs
        decide it). What the file claims is only a claim.

        ``protecting``: the trust that guards the memory against a change (:meth:`may_change`). An
        uncommitted version is read as at most ``agent_assertion`` (no commit says who wrote it), but that
        cap must not strip a person's memory of its protection: any edit of the file, even ee's own in the
        instant before its commit, would let an agent demote, hide or re-tag it. The history decides alone.
        """
        facts = self.standing_facts(memories, protecting)
        return {memory_id: fact[0] for memory_id, fact in facts.items()}

    def standing_facts(
        self, memories: Sequence[Memory], protecting: bool = False
    ) -> dict[str, tuple[str, str, bool]]:
        """(the trust class ee grants, the agent that wrote it since a person's review or "", whether the
        injection guard quarantines it) of each of ``memories``, by id, as search and packs decide them
        (``protecting``: as :meth:`granted_trust` says)."""
        from ee.index.provenance import writer_of
        from ee.index.view import open_index
        from ee.policy.trust import is_human
        from ee.query.standing import resolve_trust

        view = open_index(self)
        out: dict[str, tuple[str, str, bool]] = {}
        for m in memories:
            writer = writer_of(view.state, m.path, m.id)
            pos = view.gen.position(m.id)
            record = view.gen.records[pos] if pos is not None else {}
            committed = protecting or (bool(record["committed"]) if pos is not None else True)
            cls = resolve_trust({"trust": m.trust, "committed": committed}, writer)
            flagged = bool(record.get("injection", {}).get("flagged"))
            out[m.id] = (cls, writer, flagged and not is_human(cls))
        return out

    def may_change(
        self, actor: Actor, target: Memory, op: str, arguments: dict[str, Any], acting: str | None = None
    ) -> None:
        """Refuse (:class:`ee.policy.trust.NeedsPerson`, exit 6) a change ``actor`` may not make to
        ``target`` (:func:`ee.policy.trust.may_act_on`): its trust, or ``acting`` (the trust of the memory
        whose link would hide the target, when weaker), against the trust ee grants the target."""
        trust = weaker(actor.trust, acting) if acting else actor.trust
        if trust == "human_explicit":  # nothing ranks above a person's own word: no index to open
            return
        granted = self.granted_trust([target], protecting=True)[target.id]
        try:
            require_may_act_on(trust, granted, Proposal(op, target.id, actor.label, arguments))
        except NeedsPerson as exc:  # kept for a person to decide, where the queue can carry it out
            from ee.curate.state import propose_refusal

            candidate = propose_refusal(self, target, exc.proposal)
            if candidate is not None:
                exc.details["candidate"] = candidate.id
                exc.hint += f"; it waits in the review queue: ee curate show {candidate.id}"
            raise

    def edit_tags(
        self, memory_id: str, add: Iterable[str] = (), remove: Iterable[str] = (), actor: Actor | None = None
    ) -> Memory:
        add_list, remove_set = clean_tags(add), set(clean_tags(remove))
        both = [t for t in add_list if t in remove_set]
        if both:
            raise UsageError(f"tag {both[0]!r} is both added and removed", "give it to --add or to --remove")

        def change(memory: Memory) -> dict[str, Any]:
            tags = [t for t in memory.tags if t not in remove_set]
            tags += [t for t in add_list if t not in tags]
            return {"tags": tags}

        return self._edit(
            memory_id, "tags", change, actor, arguments={"add": add_list, "remove": sorted(remove_set)}
        )

    def link(self, memory_id: str, target: str, link_type: str, actor: Actor | None = None) -> Memory:
        if link_type not in LINK_TYPES:
            raise UsageError(f"unknown link type {link_type!r}", f"use one of: {', '.join(LINK_TYPES)}")
        check_id(target)
        if target == memory_id:
            raise UsageError("a memory cannot link to itself", "name another memory's id")
        hidden = self.get(target)  # the target must exist
        arguments = {"link": f"{link_type}:{target}"}
        if link_type in HIDING_LINKS:  # the link hides its target: the source's trust must reach it too
            actor = actor or Actor.from_env()
            source = self.get(memory_id)
            acting = self.granted_trust([source])[source.id]
            self.may_change(actor, hidden, "supersede", {"source": memory_id, **arguments}, acting)

        def change(memory: Memory) -> dict[str, Any]:
            new = Link(type=link_type, to=target)
            return {"links": list(memory.links) + ([] if new in memory.links else [new])}

        return self._edit(memory_id, "link", change, actor, arguments=arguments)

    def expire(self, memory_id: str, when: str | None = None, actor: Actor | None = None) -> Memory:
        stamp = normalise_time(when, "--at") if when else now_text()

        def change(memory: Memory) -> dict[str, Any]:
            end_name = "--at" if when else "the expiry (now)"
            check_window(memory.valid_from, stamp, f"{memory.id}'s valid_from", end_name)
            return {"valid_to": stamp}

        at = stamp if when else None  # (a proposal to expire "now" is the same proposal whenever it is made)
        return self._edit(memory_id, "expire", change, actor, arguments={"at": at})

    def forget(self, memory_id: str, actor: Actor | None = None) -> Memory:
        """Delete the memory's file in a commit; history keeps every version."""
        actor = actor or Actor.from_env()
        self.may_change(actor, self.get(memory_id), "forget", {})
        with self.lock():
            memory = self.get(memory_id)
            self._refuse_dirty(memory.path)
            original = self.store.read_bytes(memory.path)
            self.store.delete(memory.path)
            try:
                self.git.commit_paths(
                    [memory.path],
                    format_message(
                        f"ee: forget {memory.title}",
                        {"Ee-Op": "forget", "Ee-Memory": memory.id, "Ee-Actor": actor.label},
                    ),
                )
            except BaseException:
                atomic_write(self.root / memory.path, original)  # a failed forget leaves the file as it was
                raise
        from ee.policy.secrets import mask_memory

        return mask_memory(memory)  # (as output shows it)

    # ---- the reads and the feedback every front end calls (CLI, MCP, hooks). search, context and why
    # return typed results (ee.results), their ``degraded`` list inside: a front end builds the JSON
    # answer with their ``to_json()``.

    def search(
        self,
        query: Query | str,
        min_relevance: float | None = None,
        views: dict[str | None, Any] | None = None,
    ) -> SearchResult:
        """Hits for an ee.query.v1 document (or plain text), each explained (``ee search``).
        ``min_relevance`` overrides the relevance floor of ``[query] min_relevance``; ``views`` keeps the
        index views a batch of queries opened, so freshness is checked once per batch."""
        from ee.query import search
        from ee.results.search import SearchResult
        from ee.sessions.packing import search_with_evidence

        query = as_query(query)
        views = {} if views is None else views
        data = search(self, query, min_relevance, views)
        view = views[query.get("asOf")][0]
        return SearchResult.from_json(
            with_notes(search_with_evidence(self, query, data, view, min_relevance), query)
        )

    def context(
        self,
        query: Query | str,
        quotas: dict[str, Any] | None = None,
        min_relevance: float | None = None,
    ) -> Pack:
        """The token-budgeted context pack for a task (``ee context``); ``quotas`` for the custom profile.
        Session evidence has its own section (ee.sessions.packing). What it included is recorded for the
        review queue's ``unused`` rule (:mod:`ee.curate.usage`), and a memory it marked stale is proposed
        for review (:func:`ee.curate.citations.propose_stale`)."""
        from ee.curate.usage import record_retrieval
        from ee.results.pack import Pack
        from ee.sessions.packing import context_with_evidence

        document = as_query(query)
        pack = Pack.from_json(
            with_notes(context_with_evidence(self, document, quotas, min_relevance), document)
        )
        if not document.get("asOf"):
            shown = [item for item in pack.items if item.type in (None, "memory")]
            record_retrieval(self.root, [item.id for item in shown], now_text()[:10])
            stale = [item.id for item in shown if any(m.startswith("stale:") for m in item.marks)]
            if stale:
                from ee.curate.citations import propose_stale

                propose_stale(self, stale)
        return pack

    # ---- session evidence (ee.sessions): private local data under .ee/sessions/, never committed

    def import_sessions(self, paths: Sequence[Path], fmt: str | None = None) -> SessionImport:
        """Import agent transcripts as evidence, incrementally (``ee import session``). The candidates they
        hold (ee.sessions.candidates) go to the review queue through ee.hooks.sessions.propose_candidates,
        which the command and the hook call: the queue sits above the façade."""
        from ee.results.sessions import SessionImport
        from ee.sessions.ops import import_sessions

        return SessionImport.from_json(import_sessions(self, list(paths), fmt))

    def sessions(self) -> tuple[Session, ...]:
        """The imported sessions, oldest first (``ee sessions list``)."""
        from ee.results.sessions import Session
        from ee.sessions.ops import list_sessions

        return tuple(Session.from_json(row) for row in list_sessions(self))

    def last_session_import(self) -> str | None:
        """When ``ee import session`` (or an agent hook) last imported a transcript; None before the first."""
        from ee.sessions.ops import last_import

        return last_import(self)

    def session(self, ident: str) -> SessionEvidence:
        """One session's evidence, or one piece by its id (``ee sessions show``)."""
        from ee.results.sessions import SessionEvidence
        from ee.sessions.ops import show_session

        return SessionEvidence.from_json(show_session(self, ident))

    def forget_session(self, ident: str) -> SessionForgotten:
        """Purge a session's evidence (or one piece) with its index entries and vectors."""
        from ee.results.sessions import SessionForgotten
        from ee.sessions.ops import forget_session

        return SessionForgotten.from_json(forget_session(self, ident))

    def why(
        self,
        memory_id: str,
        query_text: str | None = None,
        *,
        as_of: str | None = None,
        profile: str | None = None,
    ) -> Explanation:
        """Why a memory stands where it does; with ``query_text`` its rank and the pack decision of
        ``profile`` (default balanced; a profile without a query has nothing to decide) (``ee why``)."""
        from ee.ops.why import why
        from ee.results.why import Explanation

        if profile and not query_text:
            raise UsageError("a profile says which pack the query is checked against", "give a query too")
        return Explanation.from_json(
            why(self, memory_id, query_text, as_of=as_of, profile=profile or "balanced")
        )

    def outcome(
        self, memory_id: str, signal: str, reason: str | None = None, actor: Actor | None = None
    ) -> OutcomeReport:
        """Record that a memory helped or hurt: one feedback event, one commit (``ee outcome``)."""
        from ee.ops.feedback import record_outcome
        from ee.results.outcome import OutcomeReport

        return OutcomeReport.from_json(record_outcome(self, memory_id, signal, reason, actor))

    def memory_show(self, memory_id: str, as_of: str | None = None) -> MemoryView:
        """One memory as ``ee memory show`` reports it (served warm): secrets masked, ``trust`` the class
        ee grants (now), or as it was at a time or commit (``as_of``)."""
        from ee.policy.secrets import mask_memory
        from ee.results.memory import MemoryView

        if as_of:
            from ee.query.asof import memory_as_of

            memory, commit = memory_as_of(self, memory_id, as_of)
            return MemoryView.from_json(mask_memory(memory).to_dict() | {"as_of": commit.to_dict()})
        memory = mask_memory(self.get(memory_id))
        standing = self.standings([memory]).get(memory.id)
        if standing is None:  # (not in the index: it cannot be searched either)
            return MemoryView.from_json(with_granted(memory, self.granted_trust([memory])[memory.id]))
        return MemoryView.from_json(with_standing(memory, standing))

    def standings(self, memories: Sequence[Memory]) -> dict[str, Standing]:
        """Each memory's standing as search weighs it now, by id: the trust class ee grants, the prior and
        effective confidence, the creation time (the file's, else its first commit's). A memory the index
        does not hold (its file does not load) is left out."""
        from ee.index.provenance import writer_of
        from ee.index.view import open_index
        from ee.query.standing import standing_of
        from ee.store.ids import utcnow

        view = open_index(self)
        now = utcnow()
        events, provenance = view.state.get("events", {}), view.state.get("provenance", {})
        out: dict[str, Standing] = {}
        for memory in memories:
            pos = view.gen.position(memory.id)
            if pos is None:
                continue
            record = view.gen.records[pos]
            writer = writer_of(view.state, record["path"], memory.id)
            out[memory.id] = standing_of(
                record, events.get(memory.id, []), provenance.get(record["path"]), writer, now, now
            )
        return out

    def memory_list(
        self,
        *,
        level: str | None = None,
        kind: str | None = None,
        tags: Sequence[str] = (),
        limit: int | None = None,
        agent: str | None = None,
        trust: str | None = None,
        since: str | None = None,
        quarantined: bool = False,
    ) -> MemoryList:
        """``ee memory list`` (served warm): the memories (sorted by id, masked), each with the trust
        ee grants, who wrote it since a person last reviewed it (``writer``: ``agent:<name>`` or
        ``human``), whether the injection guard quarantines it, its effective confidence and whether a merge
        left it in conflict; and ``degraded``, the files that failed to load. Filters: ``agent`` (that
        agent wrote it), ``trust`` (the class ee grants), ``since`` (created at or after), ``quarantined``."""
        from ee.git.merge import is_conflicted
        from ee.ops.feedback import effective_confidences

        start = normalise_time(since, "--since") if since else None
        from ee.results.memory import MemoryList

        memories, problems = self.list(level=level, kind=kind, tag=tags)
        facts = self.standing_facts(memories)
        memories = [
            m
            for m in memories
            if (agent is None or facts[m.id][1] == f"agent:{agent}")
            and (trust is None or facts[m.id][0] == trust)
            and (start is None or (m.created or "") >= start)
            and (not quarantined or facts[m.id][2])
        ][:limit]
        standings = self.standings(memories)  # the values search weighs, as ee memory show gives them
        rest = [m for m in memories if m.id not in standings]
        effective = effective_confidences(self, rest) if rest else {}

        def shown(m: Memory) -> dict[str, Any]:
            if m.id in standings:
                return with_standing(m, standings[m.id])
            return with_granted(m, facts[m.id][0]) | {"effective_confidence": effective[m.id]}

        degraded = [
            {
                "code": p.code,
                "severity": p.severity,
                "message": f"{p.path}{f':{p.line}' if p.line else ''}: {p.message}",
                "repair": p.repair,
            }
            for p in problems
            if p.severity == "error"
        ]
        return MemoryList.from_json(
            {
                "count": len(memories),
                "memories": [
                    shown(m)
                    | {
                        "title": m.title,
                        "writer": facts[m.id][1] or "human",
                        "quarantined": facts[m.id][2],
                        "conflict": is_conflicted(m),
                    }
                    for m in memories
                ],
                "degraded": degraded,
            }
        )

    def memory_history(self, memory_id: str) -> MemoryHistory:
        """Every version of a memory through git history (``ee memory history``; served warm)."""
        from ee.ops.history import history
        from ee.results.memory import MemoryHistory

        versions = history(self, memory_id)
        return MemoryHistory.from_json({"id": memory_id, "versions": [v.to_dict() for v in versions]})

    def hook_check(self, name: str, paths: Sequence[str], added: str) -> HookCheck:
        """A git hook's check of its staged change, which the hook read with git (``paths`` staged,
        ``added`` the lines it adds; served warm): for ``pre-commit`` the risky memories about it
        (:func:`ee.ops.risks.warnings`), for ``prepare-commit-msg`` the memories its message names
        (:func:`ee.ops.risks.message_memories`, a lexical search of the files' names here).

        The hook table is checked against this workspace's index view (in the server, the view it keeps,
        proven by its watcher without a stat pass: :mod:`ee.serve.watch`), not against the manifest: the
        manifest lags the files until the watcher's next update, and a memory written just before the
        commit was missed. A table that must be rebuilt is rebuilt from an index opened afresh, after the
        stat its label records (:func:`ee.ops.risks.refresh_table`)."""
        from ee.index.view import open_index
        from ee.ops import risks
        from ee.policy.secrets import redact
        from ee.results.hooks import HookCheck

        view = open_index(self)
        generation = view.manifest.get("generation")

        def reopen() -> Any:
            return open_index(type(self)(self.root))

        if name == "pre-commit":
            blocked, said = risks.warnings(
                self.root, paths, added, lambda: bool(self.config.get("hooks.block")), reopen, generation
            )
            return HookCheck.from_json(
                {"blocked": blocked, "said": [redact(line) for line in said], "memories": []}
            )

        def search(text: str) -> list[tuple[str, str]]:
            return risks.named(self.search(risks.message_query(text), None, {None: (view, None)}))

        found = risks.message_memories(self.root, paths, added, search, reopen, generation, lambda: view)
        return HookCheck.from_json({"blocked": False, "said": [], "memories": [list(pair) for pair in found]})

    def change_task(self, paths: Sequence[str], added: str = "") -> str:
        """The task ``ee context --for-staged`` and ``--for-paths`` pack for, of a change of ``paths`` (as
        the repository names them) adding the lines ``added``: the words that name the memories about it,
        by the rule the commit template follows (:func:`ee.ops.risks.change_words`); "" when nothing in
        the store is about it."""
        from ee.index.view import open_index
        from ee.ops import risks

        view = open_index(self)

        def reopen() -> Any:
            return open_index(type(self)(self.root))

        table = risks.current_table(self.root, reopen, view.manifest.get("generation"))
        return " ".join(risks.change_words(table, paths, added, view.gen.lexical))

    # ------------------------------------------------------------------------------------ the index

    def index_status(self) -> IndexStatus:
        """ready / stale / missing / corrupt, with counts, model and generation (``ee index status``;
        changes nothing)."""
        from ee.index.view import status
        from ee.results.health import IndexStatus

        return IndexStatus.from_json(status(self))

    def rebuild_index(self, progress: Progress | None = None) -> tuple[IndexReport, Sequence[Degradation]]:
        """The index built again from the memory files (``ee index rebuild``; the derived cache is reused)."""
        from ee.index.view import rebuild

        return rebuild(self, progress=progress)

    # ------------------------------------------------------------------- bulk, team and health (ee/ops)

    def import_jsonl(
        self,
        lines: Iterable[str],
        *,
        skip_invalid: bool = False,
        redact: bool = False,
        actor: Actor | None = None,
        source_name: str = "<stdin>",
        progress: Progress | None = None,
    ) -> ImportReport:
        """Memories from JSON Lines, one commit for the whole import (``ee import jsonl``)."""
        from ee.ops.transfer import import_jsonl

        return import_jsonl(
            self,
            lines,
            skip_invalid=skip_invalid,
            redact=redact,
            actor=actor,
            source_name=source_name,
            progress=progress,
        )

    def export_records(self) -> tuple[Sequence[dict[str, Any]], Sequence[Problem]]:
        """Every readable memory as a JSON-ready record, sorted by id, secrets masked (``ee export jsonl``),
        and the problems of the files that could not be read."""
        from ee.ops.transfer import export_records
        from ee.policy.secrets import mask_memory

        snap = self.store.snapshot()
        memories = [mask_memory(m) for m in snap.memories.values()]  # a secret typed in by hand stays here
        return list(export_records(memories)), list(snap.problems)

    def sync(
        self,
        remote: str | None = None,
        strategy: str | None = None,
        push: bool = True,
        actor: Actor | None = None,
    ) -> SyncReport:
        """Commit ee's pending changes, pull (rebase or merge), push (``ee sync``)."""
        from ee.ops.sync import sync

        return sync(self, remote, strategy, push=push, actor=actor)

    def resolve(
        self, memory_id: str, pick: str | None = None, text: str | None = None, actor: Actor | None = None
    ) -> tuple[Memory, str]:
        """Resolve a memory a merge left conflicted (``ee memory resolve``): the memory and the commit."""
        from ee.ops.resolve import resolve_memory

        return resolve_memory(self, memory_id, pick, text, actor)

    def doctor(self, full: bool = False, fix: bool = False) -> DoctorReport:
        """Every check of the workspace, ``fix`` repairs first (``ee doctor``)."""
        from ee.ops.doctor import doctor
        from ee.results.health import DoctorReport

        return DoctorReport.from_json(doctor(self, full=full, fix=fix))

    def review_trust(self, memory_id: str, cls: str, actor: Actor | None = None) -> Memory:
        """A person's explicit review of a memory: its trust class becomes ``cls``.

        The only action that raises a memory an agent wrote above ``agent_assertion`` (and lifts its
        quarantine, for a human class): one commit with ``Ee-Op: trust`` and ``Ee-Trust: <cls>``, which
        is what ``ee.index.provenance`` counts as the review. The file's ``trust`` key is set and
        ``trust_reviewed`` stamped (so the commit always changes the file). Refused for an agent.
        """
        from ee.policy.trust import rank

        actor = actor or Actor.from_env()
        if actor.agent:
            raise PolicyError(
                f"an agent ({actor.agent}) cannot set a memory's trust: only a person's review raises it",
                "ask a person to review the memory and run `ee memory trust ID --class CLASS` "
                "with EE_AGENT unset",
                {"agent": actor.agent, "memory": memory_id},
            )
        rank(cls)  # an unknown class is a usage error naming the allowed ones
        stamp = now_text()
        return self._edit(
            memory_id,
            "trust",
            lambda m: {"trust": cls, frontmatter.REVIEW_KEY: stamp},
            actor,
            {"Ee-Trust": cls},
        )

    def _edit(
        self,
        memory_id: str,
        op: str,
        change: Any,
        actor: Actor | None,
        trailers: dict[str, str] | None = None,
        arguments: dict[str, Any] | None = None,
    ) -> Memory:
        """Round-trip edit of one memory's frontmatter, in one commit; refused when ``actor`` may not
        change the memory (:meth:`may_change`; ``arguments`` describe the change it proposes). Returns
        the memory as output shows it (:func:`ee.policy.secrets.mask_memory`: a secret typed in by hand,
        in its text or file name, masked)."""
        from ee.policy.secrets import mask_memory

        actor = actor or Actor.from_env()
        self.may_change(actor, self.get(memory_id), op, arguments or {})
        with self.lock():
            memory = self.get(memory_id)
            self._refuse_dirty(memory.path)
            data = self.store.read_bytes(memory.path)
            text = frontmatter.decode(data, memory.path)
            if data.startswith(b"\xef\xbb\xbf"):
                text = "\ufeff" + text  # update() keeps a byte-order mark the editor wrote
            changes = change(memory)
            from ee.policy.secrets import guard

            guard(dict(changes), what=f"the new {op} of {memory.id}", repair="remove the secret")
            new_text = frontmatter.update(text, changes, memory.path)
            if new_text == text:
                return mask_memory(memory)
            updated, _ = frontmatter.parse(new_text, memory.path)
            self.store.write(memory.path, new_text)
            try:
                self.git.commit_paths(
                    [memory.path],
                    format_message(
                        f"ee: {op} {memory.title}",
                        {"Ee-Op": op, "Ee-Memory": memory.id, "Ee-Actor": actor.label, **(trailers or {})},
                    ),
                )
            except BaseException:
                atomic_write(self.root / memory.path, data)  # a failed edit leaves the file as it was
                raise
        return mask_memory(updated)

    def _refuse_dirty(self, rel: str) -> None:
        """Never rewrite a file with uncommitted hand edits (staged or not), nor one git does not track.

        Its state would be swept into ee's commit, or the user's staged version replaced.
        """
        out = self.git.run("status", "--porcelain=v1", "-z", "--ignored", "--", self.git.repo_path(rel))
        if out.strip("\0"):
            raise ConflictError(
                f"{rel} has changes that are not committed",
                f"commit them first (git add {rel} && git commit -m 'edit memory'), or undo them "
                f"(git checkout HEAD -- {rel}), then run the command again",
            )


def as_query(query: Query | str) -> Query:
    """An ee.query.v1 document as it is, plain text as the document ``ee search TEXT`` makes."""
    if isinstance(query, str):
        from ee.query.document import from_arguments

        return from_arguments(query)
    return query


def with_notes(data: dict[str, Any], query: Query) -> dict[str, Any]:
    """An answer's data with what reading its query changed (a text shortened) first in ``degraded``."""
    if query.notes:
        data["degraded"] = [*query.notes, *data.get("degraded", [])]
    return data


def with_standing(memory: Memory, standing: Standing) -> dict[str, Any]:
    """``memory.to_dict()`` with the values search uses: ``trust`` granted, ``confidence`` the prior (the
    file's, else its trust class's), ``effective_confidence`` (feedback applied), ``created`` (the file's,
    else its first commit's); ``derived`` names the ones ee derived rather than read from the file."""
    from ee.store.ids import format_time, parse_time

    derived = []
    if memory.trust != standing.trust:
        derived.append("trust")
    if memory.confidence is None:
        derived.append("confidence")
    created = memory.created
    if not created and standing.created:
        derived.append("created")
        created = format_time(parse_time(standing.created))  # (git's date, as ee writes times)
    return with_granted(memory, standing.trust) | {
        "confidence": round(standing.prior, 4),
        "effective_confidence": round(standing.effective, 4),
        "created": created,
        "derived": derived,
    }


def with_granted(memory: Memory, granted: str) -> dict[str, Any]:
    """``memory.to_dict()`` with ``trust`` the class ee grants it, and ``trust_claimed`` the file's own
    ``trust:`` when that says more (or other) than ee grants."""
    claimed = {"trust_claimed": memory.trust} if memory.trust and memory.trust != granted else {}
    return memory.to_dict() | {"trust": granted} | claimed
