"""Learning from sessions: agent transcripts → private evidence beside the memories → candidates.

The design, in the order the data flows:

* **Readers** (one module per format: :mod:`ee.sessions.claude_code`, :mod:`ee.sessions.codex`,
  :mod:`ee.sessions.messages`) turn the lines of a transcript into typed :class:`ee.sessions.turns.Turn`
  values with their provenance (transcript path and file name, session id, turn index, time, cwd, branch,
  sidechain flag). A tool call keeps what matters (the command, whether it failed, the error's first lines,
  the files it touched); bulky output is cut, and the cut is stated. :mod:`ee.sessions.read` detects the
  format of each file (``--format`` forces one) and reads only the complete lines past what an earlier
  import took (a partial last line waits for the next import); it refuses a file above
  :data:`ee.sessions.read.MAX_BYTES`, and names ``file:line`` for a malformed line before the last one,
  importing nothing from that file.
* **Evidence** (:mod:`ee.sessions.store`): each exchange (a user turn and the replies that follow it) is one
  piece of evidence, secret-masked (:mod:`ee.policy.secrets`) and screened for instruction-like text
  (:mod:`ee.policy.injection`) before it is written to ``.ee/sessions/evidence.sqlite3``. That database is
  primary local data: git-ignored, never pushed, and never deleted by ``ee index rebuild``, pruning or
  ``ee doctor --fix``; only ``ee sessions forget`` and the retention setting remove evidence. Per transcript
  it records how many bytes were imported and a hash of them, so a grown file adds only its new turns and
  the same file twice changes nothing.
* **Index** (:mod:`ee.sessions.index`): BM25 over ee's tokens (:mod:`ee.index.lexical`) and the static
  model2vec vectors (float16) of every piece of evidence, under ``.ee/sessions/index/``: derived from the
  database, rebuilt when its generation moved, so evidence is searchable when ``ee import session`` returns.
  Evidence gets the static arm only (the transformer arm is for memories).
* **Retrieval** (:mod:`ee.sessions.search`): ``ee search`` and ``ee context`` rank evidence with the same
  calibrated relevance as memories (:mod:`ee.query.relevance`) and merge it into one list; evidence has the
  trust class ``cass_evidence`` (below every memory a person wrote) and its own pack section. When two
  pieces of evidence from different sessions say nearly the same thing, the newer one ranks first and the
  older is marked ``superseded_by_time`` (still listed, for "why did we change?").
* **Candidates** (:mod:`ee.sessions.candidates`): decisions, stated preferences and conventions, error →
  fix pairs and commands that worked, found by fixed patterns, each with its evidence, proposed to the
  review queue (``ee curate``); nothing becomes a memory until a person accepts it.
"""
