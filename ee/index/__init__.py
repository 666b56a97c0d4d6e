"""The derived indexes of a workspace (``.ee/index/``, rebuildable at any time).

- :mod:`ee.index.view` — ``open_index`` (what every query calls: freshness check, catch-up), status, rebuild.
- :mod:`ee.index.freshness` — what changed since the manifest, and the incremental update.
- :mod:`ee.index.lexical` (BM25), :mod:`ee.index.embedder` (model2vec vectors), :mod:`ee.index.tokenize`.
- :mod:`ee.index.segment`, :mod:`ee.index.cache`, :mod:`ee.index.derive`, :mod:`ee.index.provenance`.

Nothing is imported here: ``ee.index.tokenize`` (git hooks use it) loads without numpy. Where the index lives
is named in :mod:`ee.store.files` (``INDEX_DIR``, ``MANIFEST``), so a light command can tell whether there is
one without importing this package.
"""
