"""Open the derived index of a workspace (catching up first), its status, a rebuild.

``open_index`` is what every query calls. It checks freshness cheaply (stat the files, read HEAD's ref
file; no git process, no file read, no model load when nothing changed) and, when the store moved,
updates the saved index incrementally under the index lock before answering. No stale or ghost result.
"""

from __future__ import annotations

import marshal
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import ModelError
from ee.index.freshness import (
    CACHE_PATH,
    INDEX_DIR,
    Progress,
    SyncReport,
    body_limit,
    index_lock,
    is_fresh,
    read_manifest,
    scan,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from ee.index.embedder import ModelProfile
    from ee.index.segment import Generation
    from ee.index.transformer import VectorReport
    from ee.workspace import Workspace


@dataclass(slots=True)
class IndexView:
    """A generation ready for queries, with what a response must say about it."""

    gen: Generation
    manifest: dict[str, Any]
    state: dict[str, Any]
    model_folder: Path | None
    degraded: list[dict[str, Any]] = field(default_factory=list)
    report: SyncReport | None = None
    commit: str | None = None  # set for an asOf view
    root: Path | None = None
    git: Any = None
    _embedder: Any = None
    model_key: str = ""
    # The transformer arm (ee.index.transformer): its model folder and key when the workspace uses it,
    # and the generation's complete matrix once every memory has its vector (None: the static arm answers).
    transformer_folder: Path | None = None
    transformer_key: str = ""
    transformer_vectors: np.ndarray | None = None

    def read_blob(self, blob: str) -> bytes:
        """The bytes of one stored version (for raw text an output policy may show)."""
        data: bytes = self.git.read_blobs([blob])[blob]
        return data

    @property
    def semantic_ready(self) -> bool:
        if self.transformer_vectors is not None:
            return True
        return self.gen.vectors is not None and self.model_folder is not None

    @property
    def arm(self) -> str:
        """Which semantic model answers this view's queries: ``transformer`` once the generation's
        transformer vectors are complete, else ``static`` (the model2vec model: instant, always there)."""
        return "transformer" if self.transformer_vectors is not None else "static"

    def embedder(self) -> Any:
        """The static model (what the index embeds memories with, and session evidence too)."""
        if self._embedder is None and self.model_folder is not None:
            self._embedder = _cached_embedder(self.model_folder, self.model_key)
        return self._embedder

    def arm_encoder(self) -> Any:
        """The model of the arm that answers queries (only that one is loaded)."""
        if self.transformer_vectors is not None and self.transformer_folder is not None:
            from ee.index.transformer import load_transformer

            return load_transformer(self.transformer_folder)
        return self.embedder()

    def model_profile(self) -> ModelProfile:
        """What relevance needs to know about the static model, saved in the workspace's derived cache."""
        from ee.index.embedder import model_profile

        folder = self.root / Path(CACHE_PATH).parent if self.root is not None else None
        return model_profile(self.embedder(), folder)

    def arm_profile(self) -> ModelProfile:
        """The same for the model of the arm that answers queries."""
        from ee.index.embedder import model_profile

        folder = self.root / Path(CACHE_PATH).parent if self.root is not None else None
        return model_profile(self.arm_encoder(), folder)

    def query_vector(self, text: str) -> np.ndarray | None:
        if not self.semantic_ready:
            return None
        return self.arm_encoder().encode([text])[0]

    def use_transformer(self, matrix: np.ndarray | None) -> None:
        """Answer with the transformer arm from now on (a long-lived process that completed the vectors
        of the generation it holds: ``ee.index.transformer.embed_pending``)."""
        if matrix is not None and matrix.shape[0] == self.gen.size:
            self.transformer_vectors = matrix

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        """Every memory's cosine with the query ``vector`` (float32, rows in generation order).

        Each row's value depends on that row alone. BLAS's matrix-vector product rounds the rows of a
        final partial block differently, so a memory scored a last digit apart in an index grown by
        updates and in one rebuilt from the files (its row elsewhere): not the same JSON, and a near tie
        could change order. ``einsum`` sums every row the same way, at the same speed."""
        import numpy as np

        matrix = self.transformer_vectors if self.transformer_vectors is not None else self.gen.vectors
        assert matrix is not None
        return np.einsum("ij,j->i", matrix, vector.astype(np.float32, copy=False))


@dataclass(slots=True)
class Hold:
    """The view a long-lived process (the per-user server) keeps for one workspace between requests, set
    on its ``Workspace`` as ``index_hold``; :func:`open_index` stays the one way in and decides with it.

    ``changes()`` counts the relevant changes below ``memories/`` the process has been told of so far (the
    watcher's count, :class:`ee.serve.watch.Dirty`). ``proven`` is set for one request once the watcher's
    barrier has shown that every change made before the request was counted (the proof is in
    :mod:`ee.serve.watch`). The view is kept with the count read *before* the stat pass it came from, and
    the cheap parts of its freshness key: the manifest file's stamp (another process updated or rebuilt
    the index), HEAD, the model, the size limit.

    A proven request whose count and key are unchanged gets the kept view without the stat pass; any other
    request stats the store as every process does, and still gets the kept view (no reload of the
    generation, no transformer matrix read) when the index it finds is the one kept."""

    changes: Callable[[], int]
    proven: bool = False
    view: IndexView | None = None
    key: tuple[Any, ...] = ()
    counted: int = -1

    def keep(self, view: IndexView, key: tuple[Any, ...], counted: int) -> IndexView:
        # (without the update's report, nor the note that it repaired the index: a later request that finds
        # it did not update anything, and an in-process command then says nothing of either)
        once = [d for d in view.degraded if d["code"] != "index_repaired"]
        self.view, self.key, self.counted = replace(view, report=None, degraded=once), key, counted
        return view

    def held(self, key: tuple[Any, ...], ws: Workspace) -> IndexView | None:
        """The kept view when it is the index of ``key`` (its transformer arm looked at again while its
        vectors are incomplete, as a fresh view would be), else None."""
        view = self.view
        if view is None or key[0] is None or key != self.key:
            return None
        if view.transformer_key and view.transformer_vectors is None and view.gen.size:
            _transformer_arm(view, ws)
        return view


def _manifest_stamp(root: Path) -> tuple[int, ...] | None:
    """The manifest file's stamp (a new one whenever a process updated or rebuilt the index)."""
    try:
        st = os.stat(root / INDEX_DIR / "manifest.json")
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def model_folder(ws: Workspace) -> tuple[Path | None, str, dict[str, Any] | None]:
    """(folder, cheap key, degradation) of the configured model, without loading it."""
    from ee.index.embedder import DEFAULT_MODEL_DIR

    from_env = os.environ.get("EE_MODEL") or ""
    configured = from_env or ws.config.get("model.path") or ""
    folder = Path(configured).expanduser() if configured else DEFAULT_MODEL_DIR
    if configured and not folder.is_absolute():
        folder = ws.root / folder
    if configured and not from_env and folder.resolve().is_relative_to(ws.root.resolve()):
        # .ee/config.toml may come with a clone: a model folder it names inside the repository is the
        # repository's, and ee never loads what a repository ships. $EE_MODEL (the user's own) may.
        return None, "", _model_in_repository(folder)
    weights = folder / "model.safetensors"
    try:
        st = weights.stat()
    except OSError:
        why = "the model folder is missing or incomplete"
        return None, "", _model_degraded(folder, why, bool(configured))
    return folder, f"{folder.resolve()}:{st.st_size}:{st.st_mtime_ns}", None


def _model_degraded(folder: Path, why: str, configured: bool) -> dict[str, Any]:
    repair = (
        "unset EE_MODEL  # or point it at a model2vec folder"
        if configured
        else "pip install --force-reinstall eidetic-engine  # restores the shipped model"
    )
    return {
        "code": "semantic_unavailable",
        "severity": "warning",
        "message": f"{why} ({folder}); searching lexically only",
        "repair": repair,
    }


def _model_in_repository(folder: Path) -> dict[str, Any]:
    return {
        "code": "semantic_unavailable",
        "severity": "warning",
        "message": f"model.path in .ee/config.toml names a folder inside the repository ({folder}): ee "
        "never loads a model a repository ships; searching lexically only",
        "repair": "export EE_MODEL=/path/to/a/model2vec/folder  # a model you trust, or unset model.path",
    }


def _model_unloadable(folder: Path) -> dict[str, Any]:
    return {
        "code": "semantic_unavailable",
        "severity": "warning",
        "message": f"the embedding model in {folder} could not be loaded; searching lexically only",
        "repair": "unset EE_MODEL  # or fix model.path; then: ee index rebuild",
    }


def open_index(ws: Workspace, *, catch_up: bool = True, progress: Progress | None = None) -> IndexView:
    """The index for the working tree, brought up to date first."""
    from ee.index.segment import no_gc

    # Tens of thousands of small acyclic objects (stamps, records) are made here: with the collector on,
    # a process already holding a generation (ee watch, its server) spent more time in full collections
    # than in the update itself.
    with no_gc():
        return _open_index(ws, catch_up, progress)


def _open_index(ws: Workspace, catch_up: bool, progress: Progress | None) -> IndexView:
    from ee.index.generations import open_generation
    from ee.index.update import Updater

    root = ws.root
    folder, model_key, model_problem = model_folder(ws)
    degraded = [model_problem] if model_problem else []
    limit = body_limit(root)
    hold = ws.index_hold if catch_up and progress is None else None
    counted = hold.changes() if hold is not None else -1  # (read before the stat pass: see Hold)
    if hold is not None and hold.proven and counted == hold.counted:
        kept = hold.held((_manifest_stamp(root), ws.git.head_ref(), model_key, limit), ws)
        if kept is not None:
            return kept
    for _attempt in range(3):
        stamp, manifest = _read_manifest(root)
        scanned_at = time.time_ns()
        found = scan(root)
        head = ws.git.head_ref()
        if catch_up and not is_fresh(manifest, head, found, model_key or None, limit):
            with index_lock(root):
                seen = (manifest or {}).get("generation")
                stamp, manifest = _read_manifest(root)
                if (manifest or {}).get("generation") != seen:  # updated by another process meanwhile
                    scanned_at = time.time_ns()
                    found = scan(root)
                    head = ws.git.head_ref()
                if not is_fresh(manifest, head, found, model_key or None, limit):
                    embedder, problem = embedder_or_problem(folder, model_key)
                    if problem:
                        degraded.append(problem)
                        folder = None
                    updater = Updater(root, ws.git, embedder, model_key or None, progress, limit)
                    gen, manifest, report = updater.run(manifest, head, found, scanned_at=scanned_at)
                    state = manifest.pop("state")
                    if report.reason and report.reason != "full build":
                        degraded.append(
                            {
                                "code": "index_repaired",
                                "severity": "info",
                                "message": report.reason,
                                "repair": "ee index rebuild",
                            }
                        )
                    done = report if report.changed else None  # only stamps moved: nothing to report
                    view = _view(gen, manifest, state, folder, degraded, done, ws, model_key)
                    if hold is not None:
                        hold.keep(view, (_manifest_stamp(root), head, model_key, limit), counted)
                    return view
        if manifest is None or manifest.get("corrupt"):
            from ee.errors import IndexError_

            raise IndexError_("the index is missing", "run: ee index rebuild")
        key = (stamp, head, model_key, limit)
        if hold is not None and (kept := hold.held(key, ws)) is not None:
            hold.counted = counted
            return kept
        try:
            gen_folder = root / INDEX_DIR / manifest["generation"]
            gen, state = open_generation(gen_folder)
        except (OSError, ValueError, EOFError, KeyError, TypeError):
            if not catch_up:
                from ee.errors import IndexError_

                raise IndexError_("the index is damaged", "run: ee index rebuild") from None
            time.sleep(0.02)  # a writer pruned it a moment ago, or it is damaged: look again
            if read_manifest(root) == manifest:  # still the one that failed: damaged, rebuild it
                _mark_corrupt(root)
            continue
        view = _view(gen, manifest, state, folder, degraded, None, ws, model_key)
        return hold.keep(view, key, counted) if hold is not None else view
    from ee.errors import IndexError_

    raise IndexError_("the index could not be opened", "run: ee index rebuild")


def _read_manifest(root: Path) -> tuple[tuple[int, ...] | None, dict[str, Any] | None]:
    """The manifest and the stamp of the file it was read from (None when a writer replaced it meanwhile:
    no kept view is then taken for it)."""
    stamp = _manifest_stamp(root)
    manifest = read_manifest(root)
    return (stamp if _manifest_stamp(root) == stamp else None), manifest


def _view(
    gen: Any,
    manifest: dict[str, Any],
    state: dict[str, Any],
    folder: Path | None,
    degraded: list[dict[str, Any]],
    report: SyncReport | None,
    ws: Any,
    model_key: str,
) -> IndexView:
    if gen.vectors is None and folder is not None and gen.size:
        if not any(d["code"] == "semantic_unavailable" for d in degraded):
            # The model is there but did not load when this generation was built (reported then, and
            # on every query after, until the model changes and the index is rebuilt).
            degraded.append(_model_unloadable(folder))
        folder = None
    degraded += problem_notes(state)
    view = IndexView(
        gen, manifest, state, folder, degraded, report, root=ws.root, git=ws.git, model_key=model_key
    )
    _transformer_arm(view, ws)
    return view


def _transformer_arm(view: IndexView, ws: Any) -> None:
    """Set the view's transformer arm: the configured model, and its saved matrix for this generation
    when it is complete (or can be assembled from vectors already cached: no model is loaded here)."""
    from ee.index.transformer import DEFAULT_TRANSFORMER_DIR, assemble_from_cache, load_matrix

    key = transformer_in_use(ws, view.gen.size)[1]
    if key is None:
        return
    view.transformer_folder, view.transformer_key = DEFAULT_TRANSFORMER_DIR, key
    if not view.gen.size:
        return
    folder = ws.root / INDEX_DIR / view.manifest["generation"]
    matrix = load_matrix(folder, DEFAULT_TRANSFORMER_DIR, key, view.gen.size)
    if matrix is None:
        matrix = assemble_from_cache(ws.root, folder, DEFAULT_TRANSFORMER_DIR, key, view.gen.size)
    view.transformer_vectors = matrix


def transformer_in_use(ws: Workspace, size: int) -> tuple[str, str | None]:
    """Whether a store of ``size`` memories uses the transformer arm: ("on", the model's key), or why
    not: ("off", None) for ``[model] transformer = false``, ("above_max_memories", None) for a store
    larger than ``[model] transformer_max_memories``, ("unavailable", None) when the model is not there.
    The one place that rule is decided (queries, ``ee index rebuild`` and ``ee index status``)."""
    from ee.index.transformer import DEFAULT_TRANSFORMER_DIR, transformer_key

    if not ws.config.get("model.transformer"):
        return "off", None
    if size > ws.config.get("model.transformer_max_memories"):
        return "above_max_memories", None
    key = transformer_key(DEFAULT_TRANSFORMER_DIR)
    return ("on", key) if key else ("unavailable", None)


def vector_report(
    ws: Workspace, gen_folder: Path | None, size: int, before: int | None = None, seconds: float = 0.0
) -> VectorReport:
    """Where the transformer vectors of a saved generation stand (:class:`VectorReport`). ``before``:
    the vectors it had before an embedding run of ``seconds`` (``ee index rebuild``); None for a
    report that embeds nothing (``ee index status``)."""
    from ee.index.transformer import DEFAULT_TRANSFORMER_DIR, VectorReport, vectors_done

    limit = ws.config.get("model.transformer_max_memories")
    use, key = transformer_in_use(ws, size)
    if key is None:
        return VectorReport(use, size, max_memories=limit)
    if not size or gen_folder is None:
        return VectorReport("empty", size, max_memories=limit)
    done = vectors_done(ws.root, gen_folder, DEFAULT_TRANSFORMER_DIR, key, size)
    reused = done if before is None else min(before, done)
    return VectorReport(
        "complete" if done == size else "pending",
        size,
        done=done,
        computed=done - reused,
        reused=reused,
        seconds=seconds,
        max_memories=limit,
    )


def problem_notes(state: dict[str, Any]) -> list[dict[str, Any]]:
    """What a response says of the files a view left out: each error of its state, as a warning naming
    ``file:line`` (the HEAD index and an asOf view alike)."""
    notes = []
    for problem in state.get("problems", []):
        if problem.get("severity") == "error":
            where = problem["path"] + (f":{problem['line']}" if problem.get("line") else "")
            notes.append(
                {
                    "code": problem.get("code", "memory_invalid"),
                    "severity": "warning",
                    "message": f"{where}: {problem['message']} (not indexed)",
                    "repair": problem.get("repair") or "ee doctor",
                }
            )
    return notes


_EMBEDDERS: dict[str, Any] = {}  # model key → loaded embedder: a long-lived process (ee watch) loads it once


def _cached_embedder(folder: Path, model_key: str) -> Any:
    """The embedder of ``folder``, loaded once per process while its weights file is unchanged."""
    embedder = _EMBEDDERS.get(model_key) if model_key else None
    if embedder is None:
        from ee.index.embedder import load_embedder

        embedder = load_embedder(folder)
        if model_key:
            _EMBEDDERS.clear()  # one model at a time: a changed key means the old one is gone
            _EMBEDDERS[model_key] = embedder
    return embedder


def embedder_or_problem(folder: Path | None, model_key: str) -> tuple[Any, dict[str, Any] | None]:
    """The embedder of ``folder`` (loaded once per process), or None and the degradation that says why."""
    if folder is None:
        return None, None
    try:
        embedder = _cached_embedder(folder, model_key)
    except ModelError as exc:
        return None, {
            "code": "semantic_unavailable",
            "severity": "warning",
            "message": exc.message + "; searching lexically only",
            "repair": exc.hint,
        }
    return _KeyedEmbedder(embedder, model_key), None


class _KeyedEmbedder:
    """The embedder under the cheap key the manifest compares (the real id is in ``real_id``)."""

    def __init__(self, embedder: Any, key: str) -> None:
        self.inner = embedder
        self.model_id = key
        self.real_id = embedder.model_id
        self.dim = embedder.dim

    def encode(self, texts: list[str]) -> Any:
        return self.inner.encode(texts)

    def encode_documents(self, texts: list[str]) -> Any:
        return self.inner.encode_documents(texts)


def _mark_corrupt(root: Path) -> None:
    path = root / INDEX_DIR / "manifest.json"
    if path.exists():
        from ee.store.files import atomic_write

        atomic_write(path, b"{}")  # (replaced, not written into: it may be a FIFO)


def rebuild(ws: Workspace, progress: Progress | None = None) -> tuple[SyncReport, list[dict[str, Any]]]:
    """Delete the saved index and build it again from the files (the derived cache is kept).

    ``progress(phase, done, total)`` is called while memories are parsed and embedded."""
    import shutil

    with index_lock(ws.root):
        folder = ws.root / INDEX_DIR
        for path in folder.glob("gen-*"):
            shutil.rmtree(path, ignore_errors=True)
        (folder / "manifest.json").unlink(missing_ok=True)
    view = open_index(ws, progress=progress)
    assert view.report is not None
    gen_folder = ws.root / INDEX_DIR / view.manifest["generation"] if view.manifest else None
    before, started = None, time.monotonic()
    if view.transformer_key and gen_folder is not None:
        from ee.index.transformer import embed_pending, vectors_done

        assert view.transformer_folder is not None
        before = vectors_done(
            ws.root, gen_folder, view.transformer_folder, view.transformer_key, view.gen.size
        )
        embed_pending(view, None, progress)  # (the transformer arm's vectors: ~150 memories/s)
    view.report.transformer = vector_report(
        ws, gen_folder, view.gen.size, before if before is not None else 0, time.monotonic() - started
    )
    return view.report, view.degraded


def status(ws: Workspace) -> dict[str, Any]:
    """ready / stale / missing / corrupt, with counts, model and generation (never updates anything).

    Every key is present in every state (None when unknown). ``stale`` is harmless (the next query
    catches up); ``missing`` and ``corrupt`` are repaired by the next query too, or by ``ee index rebuild``.
    """
    from ee.policy.secrets import mask_output

    root = ws.root
    manifest = read_manifest(root)
    folder, model_key, model_problem = model_folder(ws)
    found = scan(root)
    out: dict[str, Any] = {
        "root": str(root),
        "state": "missing",
        "files": len(found),
        "memories": None,
        "generation": None,
        "built": None,
        "model": folder.name if folder else None,
        "semantic": False,
        "semantic_arm": None,
        "transformer": None,
        "problems": [],
        "degraded": [model_problem] if model_problem else [],
        "repair": "ee index rebuild",
    }
    if manifest is None:
        return out
    if manifest.get("corrupt"):
        return out | {"state": "corrupt"}
    gen_folder = root / INDEX_DIR / manifest["generation"]
    try:
        semantic, problems = _check_generation(gen_folder)
    except (OSError, ValueError, EOFError, KeyError, TypeError):
        return out | {"state": "corrupt", "generation": manifest["generation"]}
    fresh = is_fresh(manifest, ws.git.head_ref(), found, model_key or None, body_limit(root), trust_racy=True)
    if folder is not None and not semantic and manifest["count"] and not model_problem:
        out["degraded"].append(_model_unloadable(folder))
    return out | {
        "semantic_arm": _arm_of(ws, gen_folder, manifest["count"]) if semantic else None,
        "transformer": vector_report(ws, gen_folder, manifest["count"]).to_dict(),
        "state": "ready" if fresh else "stale",
        "memories": manifest["count"],
        "generation": manifest["generation"],
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(manifest["built"])),
        "semantic": semantic,
        "problems": mask_output(problems),  # (they quote file names)
        "repair": "" if fresh else "ee index rebuild  # or let the next query catch up",
    }


def _arm_of(ws: Workspace, gen_folder: Path, size: int) -> str:
    """Which semantic arm answers a query on this generation (its transformer matrix saved, or not)."""
    from ee.index.transformer import DEFAULT_TRANSFORMER_DIR, load_matrix

    key = transformer_in_use(ws, size)[1]
    if key is None:
        return "static"
    matrix = load_matrix(gen_folder, DEFAULT_TRANSFORMER_DIR, key, size)
    return "transformer" if matrix is not None else "static"


def _check_generation(folder: Path) -> tuple[bool, list[dict[str, Any]]]:
    """Open every file of a saved generation (raising when one is damaged): (has vectors, problems)."""
    import numpy as np

    from ee.index.generations import load_state
    from ee.index.segment import Generation

    gen = Generation.load(folder)
    for name in ("tf.npy", "lengths.npy"):
        np.load(folder / name, mmap_mode="r")
    if not isinstance(marshal.loads((folder / "columns.marshal").read_bytes()), dict):  # noqa: S302 - ours
        raise ValueError("generation columns damaged")
    problems: list[dict[str, Any]] = load_state(folder).get("problems", [])
    return gen.vectors is not None, problems
