"""Tests for biasbound.schematic and the factor-table loader, including the real judgment-to-noise data."""

from __future__ import annotations

import itertools
import json
import re
import math
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA  # tests/data: vendored real data
from biasbound import DataFormatError, InputError
from biasbound.data.factors import load_factor_table
from biasbound.schematic import SchematicResult, n_parameters, schematic_adherence

DATA = SHARED_DATA / "judgment-to-noise" / "outputs"
FACTORS = ["helpfulness", "relevance", "accuracy", "depth", "creativity", "detail"]
DOTTED = [f"grade.{f}" for f in FACTORS]


# ----------------------------------------------------------------------------- naive references


def design(x: np.ndarray, poly: bool) -> np.ndarray:
    """Intercept, linear terms and (poly) all squares and pairwise products, built by hand."""
    cols = [np.ones(len(x))] + [x[:, j] for j in range(x.shape[1])]
    if poly:
        cols += [x[:, i] * x[:, j] for i, j in itertools.combinations_with_replacement(range(x.shape[1]), 2)]
    return np.column_stack(cols)


def r2_in_sample(x: np.ndarray, y: np.ndarray, poly: bool) -> float:
    a = design(x, poly)
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ coef
    return 1 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())


def r2_leave_one_out(x: np.ndarray, y: np.ndarray, poly: bool) -> float:
    pred = np.empty_like(y)
    for i in range(len(y)):
        mask = np.arange(len(y)) != i
        a = design(x[mask], poly)
        coef, *_ = np.linalg.lstsq(a, y[mask], rcond=None)
        pred[i] = (design(x[i : i + 1], poly) @ coef)[0]
    return 1 - float(((y - pred) ** 2).sum()) / float(((y - y.mean()) ** 2).sum())


# ----------------------------------------------------------------------------- paper mode


def test_paper_mode_matches_lstsq_reference() -> None:
    gen = np.random.default_rng(0)
    x = gen.integers(1, 11, size=(80, 3)).astype(float)
    y = 0.5 * x[:, 0] + 0.02 * x[:, 1] * x[:, 2] + gen.normal(0, 0.8, size=80)
    res = schematic_adherence(x, y)
    assert isinstance(res, SchematicResult)
    assert res.r2_linear == pytest.approx(r2_in_sample(x, y, False), abs=1e-10)
    assert res.r2_poly == pytest.approx(r2_in_sample(x, y, True), abs=1e-10)
    assert res.r2 == max(res.r2_linear, res.r2_poly)
    assert res.s_sch == pytest.approx(math.sqrt(1 - res.r2))
    assert (res.n_used, res.n_dropped, res.n_factors, res.mode, res.folds, res.seed) == (80, 0, 3, "paper", None, None)
    assert res.to_dict()["r2"] == res.r2


def test_polynomial_model_catches_an_interaction() -> None:
    """y = x1·x2 exactly: the quadratic fit is perfect, the linear one explains almost nothing.

    R²_poly = 1 and S_sch = 0 hold for every draw (y lies in the quadratic model's span).
    R²_linear < 0.3 depends on the draw: the linear part of x1·x2 is zero in the population,
    and in 100,000 simulated data sets of 200 rows (uniform x) the largest in-sample R²_linear
    was 0.21, so the false-failure rate is < 3e-5 (95% upper bound on 0 events). (With 60 rows,
    as this test had before, the rate was 0.47%.) Seed fixed.
    """
    gen = np.random.default_rng(1)
    x = gen.uniform(-1, 1, size=(200, 2))
    y = x[:, 0] * x[:, 1]
    res = schematic_adherence(x, y)
    assert res.r2_poly == pytest.approx(1.0, abs=1e-9)
    assert res.r2_linear < 0.3
    assert res.s_sch == pytest.approx(0.0, abs=1e-4)


def test_missing_rows_are_dropped_and_counted_not_filled() -> None:
    gen = np.random.default_rng(2)
    x = gen.normal(size=(50, 2))
    y = x @ [1.0, -0.5] + gen.normal(0, 0.5, size=50)
    x_nan, y_nan = x.copy(), y.copy()
    x_nan[3, 1] = np.nan
    y_nan[10] = np.nan
    x_nan[10, 0] = np.nan  # same row twice: counted once
    res = schematic_adherence(x_nan, y_nan)
    keep = np.ones(50, bool)
    keep[[3, 10]] = False
    ref = schematic_adherence(x[keep], y[keep])
    assert (res.n_used, res.n_dropped) == (48, 2)
    assert res.r2_linear == ref.r2_linear and res.r2_poly == ref.r2_poly


def test_too_few_rows_for_the_paper_polynomial() -> None:
    gen = np.random.default_rng(3)
    x = gen.normal(size=(28, 6))  # quadratic model: 28 parameters, needs 29 rows
    y = gen.normal(size=28)
    assert n_parameters(6, "poly") == 28 and n_parameters(6, "linear") == 7
    with pytest.raises(InputError, match=r"at least 29 usable rows.*28 parameters.*Got 28"):
        schematic_adherence(x, y)


def test_constant_overall_means_the_judge_ignores_its_factors() -> None:
    res = schematic_adherence(np.arange(40.0).reshape(20, 2), np.full(20, 7.0))
    assert (res.r2, res.s_sch, res.n_used) == (0.0, 1.0, 20)
    assert "ignores its factors" in res.note


def test_strongly_negative_cv_r2_is_flagged() -> None:
    gen = np.random.default_rng(5)
    x, y = gen.normal(size=(10, 2)), gen.normal(size=10)  # noise: out-of-sample R² far below 0
    res = schematic_adherence(x, y, mode="cv", folds=5, rng=0)
    assert res.r2 < -0.5 and "not informative" in res.note


def test_shape_and_mode_errors() -> None:
    with pytest.raises(InputError, match="one value per row"):
        schematic_adherence(np.zeros((5, 2)), np.zeros(4))
    with pytest.raises(InputError, match="'mode'"):
        schematic_adherence(np.zeros((5, 2)), np.zeros(5), mode="holdout")
    with pytest.raises(InputError, match="infinite"):
        schematic_adherence(np.array([[1.0], [np.inf]]), np.array([1.0, 2.0]))


# ----------------------------------------------------------------------------- cv mode


def test_cv_leave_one_out_matches_reference() -> None:
    gen = np.random.default_rng(4)
    x = gen.normal(size=(30, 2))
    y = x @ [1.0, 2.0] + 0.3 * x[:, 0] ** 2 + gen.normal(0, 0.5, size=30)
    res = schematic_adherence(x, y, mode="cv", folds=30, rng=0)  # folds = n is leave-one-out
    assert res.r2_linear == pytest.approx(r2_leave_one_out(x, y, False), abs=1e-9)
    assert res.r2_poly == pytest.approx(r2_leave_one_out(x, y, True), abs=1e-9)
    assert (res.mode, res.folds, res.seed) == ("cv", 30, 0)


def test_cv_is_seeded_and_honest_on_noise() -> None:
    """Overall scores unrelated to six factors: in-sample R² is optimistic, cross-validated R² is not.

    Paper mode, 40 rows: with y ~ N(0, I) independent of a full-rank design, the in-sample R² of
    the 28-parameter quadratic model is exactly Beta(27/2, (40 - 28)/2), so ``r2_poly <= 0.3``
    has probability 1.7e-4 (scipy.stats.beta.cdf). CV mode, 200 rows, 5 folds: in 20,000
    simulated data sets (own lstsq K-fold) the largest max(R²_linear, R²_poly) was 0.075, so
    ``cv.r2 >= 0.1`` has probability < 1.5e-4 (95% upper bound on 0 events). (The earlier design,
    both checks on one 60-row set, had false-failure rates of 3.8% and 0.56%.) Whole test
    < 3.5e-4; seeds fixed.
    """
    gen = np.random.default_rng(5)
    x = gen.normal(size=(40, 6))
    y = gen.normal(size=40)  # overall unrelated to the factors
    paper = schematic_adherence(x, y)
    assert paper.r2_poly == pytest.approx(r2_in_sample(x, y, True), abs=1e-9)
    assert paper.r2_poly > 0.3  # 28 parameters on 40 rows: in-sample R² is optimistic
    x = gen.normal(size=(200, 6))
    y = gen.normal(size=200)
    cv = schematic_adherence(x, y, mode="cv", folds=5, rng=11)
    again = schematic_adherence(x, y, mode="cv", folds=5, rng=11)
    assert cv == again and cv.seed == 11
    assert cv.r2 < 0.1
    assert cv.s_sch == pytest.approx(math.sqrt(1 - min(1.0, max(0.0, cv.r2))))


def test_cv_too_few_rows() -> None:
    with pytest.raises(InputError, match="every training split"):
        schematic_adherence(np.random.default_rng(0).normal(size=(8, 6)), np.arange(8.0), mode="cv", folds=4)
    with pytest.raises(InputError, match="'folds'"):
        schematic_adherence(np.zeros((10, 1)), np.arange(10.0), mode="cv", folds=1)


# ----------------------------------------------------------------------------- loader


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_loader_jsonl_dotted_paths_and_missing(tmp_path: Path) -> None:
    rows = [
        {"condition": "a", "grade": {"f1": 1, "f2": 2, "score": 3}},
        {"condition": "a", "grade": {"f1": 4, "f2": "5", "score": 6}},
        {"condition": "a", "grade": {"f1": 7, "score": 8}},  # f2 missing
        {"condition": "a", "grade": {"f1": "N/A", "f2": 1, "score": 2}},  # unparseable
        {"condition": "b", "grade": {"f1": 9, "f2": 9, "score": None}},  # filtered out anyway
    ]
    p = write_jsonl(tmp_path / "t.jsonl", rows)
    x, y, dropped = load_factor_table(p, factors=["grade.f1", "grade.f2"], overall="grade.score", filters={"condition": "a"})
    np.testing.assert_array_equal(x, [[1, 2], [4, 5]])
    np.testing.assert_array_equal(y, [3, 6])
    assert dropped == 2
    x, y, dropped = load_factor_table(p, factors=["grade.f1", "grade.f2"], overall="grade.score")
    assert (len(y), dropped) == (2, 3)


def test_loader_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    p = write_jsonl(tmp_path / "bad.jsonl", [{"a": 1, "b": 2}, "", '{"a": 3, "b":'])
    with pytest.raises(DataFormatError, match="not valid JSON") as info:
        load_factor_table(p, factors=["a"], overall="b")
    assert info.value.line == 3 and info.value.path == str(p)
    p2 = write_jsonl(tmp_path / "list.jsonl", [[1, 2]])
    with pytest.raises(DataFormatError, match="JSON object"):
        load_factor_table(p2, factors=["a"], overall="b")


def test_loader_csv_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("f1,f2,overall\n1,2,3\n4,,6\n7,8,9\n")
    x, y, dropped = load_factor_table(p, factors=["f1", "f2"], overall="overall")
    np.testing.assert_array_equal(x, [[1, 2], [7, 8]])
    assert dropped == 1
    with pytest.raises(DataFormatError, match="no row has the column 'f3'"):
        load_factor_table(p, factors=["f3"], overall="overall")
    with pytest.raises(DataFormatError, match="does not exist"):
        load_factor_table(tmp_path / "nope.csv", factors=["f1"], overall="overall")
    (tmp_path / "t.xlsx").write_text("x")
    with pytest.raises(DataFormatError, match=r"\.csv or \.jsonl"):
        load_factor_table(tmp_path / "t.xlsx", factors=["f1"], overall="overall")
    with pytest.raises(InputError, match="'factors'"):
        load_factor_table(p, factors=[], overall="overall")


# ----------------------------------------------------------------------------- real data


def read_real(judge: str, condition: str) -> tuple[np.ndarray, np.ndarray]:
    """Read a judgment-to-noise file with json only (independent of the loader)."""
    rows = [json.loads(line) for line in (DATA / f"{judge}_{condition}.jsonl").read_text().splitlines() if line.strip()]
    x = np.array([[float(r["grade"][f]) for f in FACTORS] for r in rows])
    y = np.array([float(r["grade"]["score"]) for r in rows])
    return x, y


@pytest.mark.parametrize("judge", ["gpt-4o-mini", "gpt-5-mini"])
def test_real_data_adversarial_rubrics_lower_schematic_adherence(judge: str) -> None:
    """Injected off-rubric caps (nationality, taboo) must lower R² below the baseline (paper mode)."""
    r2 = {}
    for condition in ("baseline", "nationality", "taboo"):
        x, y, dropped = load_factor_table(DATA / f"{judge}_{condition}.jsonl", factors=DOTTED, overall="grade.score")
        x_ref, y_ref = read_real(judge, condition)
        np.testing.assert_array_equal(x, x_ref)
        res = schematic_adherence(x, y)
        assert (res.n_used, dropped) == (60, 0)
        assert res.r2_linear == pytest.approx(r2_in_sample(x_ref, y_ref, False), abs=1e-9)
        assert res.r2_poly == pytest.approx(r2_in_sample(x_ref, y_ref, True), abs=1e-9)
        r2[condition] = res.r2
    assert r2["nationality"] < r2["baseline"]
    assert r2["taboo"] < r2["baseline"]


@pytest.mark.parametrize(("value", "shown"), [('"ten"', "'ten'"), ('"inf"', "'inf'"), ("true", "true"), ("[1]", "[1]")])
def test_loader_refuses_a_value_that_is_not_a_number(tmp_path: Path, value: str, shown: str) -> None:
    """Never silently missing: "ten", inf, a boolean or a list is bad input naming file, line and column."""
    p = write_jsonl(tmp_path / "t.jsonl", [{"f": 1, "o": 2}, "", '{"f": 2, "o": ' + value + '}'])
    with pytest.raises(DataFormatError, match=f"value {re.escape(shown)} of column 'o' is not a finite number") as info:
        load_factor_table(p, factors=["f"], overall="o")
    assert (info.value.path, info.value.line) == (str(p), 3)


def test_loader_csv_line_after_blank_lines_and_quoted_newline(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text('f,o,note\n1,2,"two\nlines"\n\n\n3,ten,x\n')
    with pytest.raises(DataFormatError, match="'ten' of column 'o'") as info:
        load_factor_table(p, factors=["f"], overall="o")
    assert info.value.line == 6
