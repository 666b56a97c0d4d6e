from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ee.query.fusion as fusion_module
from ee.query.fusion import RRF_K, WEIGHT_SEMANTIC, FusedScore, fuse, fuse_arrays, minmax, rrf


def test_minmax() -> None:
    assert minmax({}) == {}
    assert minmax({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert minmax({"a": 7.0}) == {"a": 1.0}
    assert minmax({"a": 0.3, "b": 0.3}) == {"a": 1.0, "b": 1.0}


def test_fuse_hand_worked() -> None:
    # lexical: a 10, b 6, c 2  -> norm a 1, b 0.5, c 0
    # semantic: b 0.9, c 0.5, d 0.1 -> norm b 1, c 0.5, d 0
    # w = 0.25: a 0.75*1 = 0.75; b 0.75*0.5 + 0.25*1 = 0.625; c 0.25*0.5 = 0.125; d 0
    out = fuse({"a": 10.0, "b": 6.0, "c": 2.0}, {"b": 0.9, "c": 0.5, "d": 0.1}, weight_semantic=0.25)
    assert list(out) == ["a", "b", "c", "d"]
    assert out["a"] == FusedScore(
        lexical=10.0, semantic=None, lexical_norm=1.0, semantic_norm=0.0, fused=0.75
    )
    assert out["b"].fused == pytest.approx(0.625)
    assert out["b"].lexical == 6.0
    assert out["b"].semantic == 0.9
    assert out["b"].lexical_norm == pytest.approx(0.5)
    assert out["b"].semantic_norm == pytest.approx(1.0)
    assert out["c"].fused == pytest.approx(0.125)
    assert out["d"] == FusedScore(lexical=None, semantic=0.1, lexical_norm=0.0, semantic_norm=0.0, fused=0.0)


def test_fuse_weight_changes_order() -> None:
    lex = {"a": 10.0, "b": 6.0, "c": 2.0}
    sem = {"a": 0.1, "b": 0.9, "c": 0.5}
    assert list(fuse(lex, sem, weight_semantic=0.0)) == ["a", "b", "c"]
    assert list(fuse(lex, sem, weight_semantic=1.0)) == ["b", "c", "a"]
    # w 0.6: a 0.4, b 0.4*0.5 + 0.6 = 0.8, c 0.6*0.5 = 0.3
    out = fuse(lex, sem, weight_semantic=0.6)
    assert list(out) == ["b", "a", "c"]
    assert out["b"].fused == pytest.approx(0.8)
    assert out["a"].fused == pytest.approx(0.4)


def test_fuse_default_weight() -> None:
    out = fuse({"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0})
    assert out["a"].fused == pytest.approx(1 - WEIGHT_SEMANTIC)
    assert out["b"].fused == pytest.approx(WEIGHT_SEMANTIC)


def test_fuse_ties_break_by_id() -> None:
    out = fuse({"b": 1.0, "a": 1.0, "c": 1.0}, {})
    assert list(out) == ["a", "b", "c"]
    assert all(s.fused == pytest.approx(1 - WEIGHT_SEMANTIC) for s in out.values())
    # Equal fused scores from different components still order by id.
    out = fuse({"z": 1.0, "y": 0.0}, {"z": 0.0, "y": 1.0}, weight_semantic=0.5)
    assert list(out) == ["y", "z"]
    assert out["y"].fused == out["z"].fused == 0.5


def test_fuse_one_arm_empty() -> None:
    assert fuse({}, {}) == {}
    lex_only = fuse({"a": 3.0, "b": 1.0}, {})
    assert list(lex_only) == ["a", "b"]
    assert lex_only["a"].semantic is None
    assert lex_only["a"].semantic_norm == 0.0
    assert lex_only["a"].fused == pytest.approx(1 - WEIGHT_SEMANTIC)
    sem_only = fuse({}, {"x": 0.2, "y": 0.8})
    assert list(sem_only) == ["y", "x"]
    assert sem_only["y"].lexical is None
    assert sem_only["y"].fused == pytest.approx(WEIGHT_SEMANTIC)


def test_an_arm_that_matched_nothing_is_never_a_perfect_match() -> None:
    # Every candidate has lexical score 0 (only the semantic arm found them): lexical_norm is 0, not 1.
    out = fuse({"a": 0.0, "b": 0.0}, {"a": 0.2, "b": 0.6})
    assert out["a"].lexical_norm == 0.0
    assert out["b"].lexical_norm == 0.0
    assert minmax({"a": 0.0}) == {"a": 0.0}
    assert minmax({"a": -1.0, "b": -1.0}) == {"a": 0.0, "b": 0.0}
    import numpy as np

    lex_norm, _sem_norm, fused = fuse_arrays(np.zeros(2), np.array([0.2, 0.6]), str)
    assert lex_norm.tolist() == [0.0, 0.0]
    assert fused.tolist() == [out["a"].fused, out["b"].fused]


def test_fuse_negative_cosines() -> None:
    out = fuse({}, {"a": -0.5, "b": 0.5}, weight_semantic=1.0)
    assert out["a"].semantic_norm == 0.0
    assert out["b"].semantic_norm == 1.0


def test_fuse_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="weight_semantic"):
        fuse({"a": 1.0}, {}, weight_semantic=1.5)
    with pytest.raises(ValueError, match="not finite"):
        fuse({"a": math.nan}, {})
    with pytest.raises(ValueError, match="not finite"):
        fuse({}, {"a": math.inf})


def test_fused_score_is_frozen() -> None:
    s = fuse({"a": 1.0}, {})["a"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.fused = 2.0  # type: ignore[misc]


def test_rrf_hand_worked() -> None:
    # lexical ranks: a 1, b 2; semantic ranks: b 1, c 2. k = 60, w = 0.5:
    # a = 0.5/61; b = 0.5/62 + 0.5/61; c = 0.5/62
    out = rrf({"a": 5.0, "b": 3.0}, {"b": 0.9, "c": 0.4})
    assert list(out) == ["b", "a", "c"]
    assert out["a"].fused == pytest.approx(0.5 / 61)
    assert out["b"].fused == pytest.approx(0.5 / 62 + 0.5 / 61)
    assert out["c"].fused == pytest.approx(0.5 / 62)
    assert out["b"].lexical_norm == pytest.approx(1 / 62)
    assert out["b"].semantic_norm == pytest.approx(1 / 61)
    assert out["a"].semantic is None
    assert out["a"].semantic_norm == 0.0
    assert RRF_K == 60


def test_rrf_weight_and_k() -> None:
    out = rrf({"a": 2.0, "b": 1.0}, {"b": 1.0, "a": 0.0}, weight_semantic=0.2, k=0)
    # a: 0.8/1 + 0.2/2 = 0.9; b: 0.8/2 + 0.2/1 = 0.6
    assert list(out) == ["a", "b"]
    assert out["a"].fused == pytest.approx(0.9)
    assert out["b"].fused == pytest.approx(0.6)
    with pytest.raises(ValueError):
        rrf({}, {}, k=-1)


def test_rrf_ties_by_id() -> None:
    # Equal raw scores rank by id inside an arm, and equal fused scores order by id.
    out = rrf({"b": 1.0, "a": 1.0}, {})
    assert list(out) == ["a", "b"]
    assert out["a"].lexical_norm == pytest.approx(1 / 61)
    assert out["b"].lexical_norm == pytest.approx(1 / 62)
    out = rrf({"x": 1.0}, {"y": 1.0})
    assert list(out) == ["x", "y"]
    assert out["x"].fused == out["y"].fused


def test_deterministic_across_processes() -> None:
    code = (
        "from ee.query.fusion import fuse, rrf\n"
        "lex = {f'm{i}': float(i % 7) for i in range(50)}\n"
        "sem = {f'm{i}': (i % 5) / 5 for i in range(25, 80)}\n"
        "print(list(fuse(lex, sem).items())); print(list(rrf(lex, sem).items()))\n"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": ":".join(sys.path)},
        ).stdout
        for seed in ("0", "1", "2")
    }
    assert len(outs) == 1


def test_import_is_pure_python() -> None:
    # Load the module file on its own (the ee.query package may import more): no numpy.
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('fusion', sys.argv[1])\n"
        "mod = importlib.util.module_from_spec(spec); sys.modules['fusion'] = mod\n"
        "spec.loader.exec_module(mod)\n"
        "mod.fuse({'a': 1.0}, {'a': 0.5}); print('numpy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(fusion_module.__file__))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "False"


_SCORES = st.floats(min_value=-1.0, max_value=50.0, allow_nan=False, width=32).map(float)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_SCORES, _SCORES), max_size=40),
    st.sampled_from(["both", "lexical", "semantic"]),
    st.sampled_from([WEIGHT_SEMANTIC, 0.0, 0.25, 1.0]),
)
def test_fuse_arrays_computes_what_fuse_computes(
    pairs: list[tuple[float, float]], arms: str, weight: float
) -> None:
    """Ranking fuses its candidates as arrays: every component must be the very float ``fuse`` gives
    (ties, equal scores, zeros and one-arm queries included), or ranks and JSON would drift."""
    import numpy as np

    from ee.query.fusion import fuse_arrays

    keys = [f"m{i:03d}" for i in range(len(pairs))]
    lexical = [a for a, _b in pairs] if arms != "semantic" else None
    semantic = [b for _a, b in pairs] if arms != "lexical" else None
    expected = fuse(
        dict(zip(keys, lexical or [], strict=False)),
        dict(zip(keys, semantic or [], strict=False)),
        weight_semantic=weight,
    )
    ln, sn, fused = fuse_arrays(
        None if lexical is None else np.array(lexical, dtype=np.float64),
        None if semantic is None else np.array(semantic, dtype=np.float64),
        keys.__getitem__,
        weight_semantic=weight,
    )
    columns = zip(keys, ln.tolist(), sn.tolist(), fused.tolist(), strict=True)
    got = {key: (a, b, c) for key, a, b, c in columns}
    assert got == {key: (f.lexical_norm, f.semantic_norm, f.fused) for key, f in expected.items()}


def test_fuse_arrays_rejects_what_fuse_rejects() -> None:
    import numpy as np

    from ee.query.fusion import fuse_arrays

    names = ["a", "b", "c"]
    cases = (([1.0, math.nan, 2.0], [0.1, 0.2, 0.3]), ([1.0, 2.0, 3.0], [0.1, math.inf, 0.3]))
    for lexical, semantic in cases:
        with pytest.raises(ValueError) as from_dicts:
            fuse(dict(zip(names, lexical, strict=True)), dict(zip(names, semantic, strict=True)))
        with pytest.raises(ValueError) as from_arrays:
            fuse_arrays(np.array(lexical), np.array(semantic), names.__getitem__)
        assert str(from_arrays.value) == str(from_dicts.value)
