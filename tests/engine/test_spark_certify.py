"""certify on Spark (``certify --engine spark``, :func:`biasbound.engine.load_spark`) writes the embedded route's files.

PySpark in local mode, one session for the module. The certificate's clock is frozen, so every output file is
compared byte for byte (the outputs marker by its file list and digests: the rest of it holds inode numbers); the
frame the Spark reader builds (Categorical ids from integer codes) equals the loader's as text. Compared on the
demo's judgments (76 models x 500 questions x 2 games, one missing game) through the command line (verify
--judgments re-certifies on the embedded route and compares), on a generated 10^6-row table (200 models x 2,500
items x 2 games, Parquet) and on a CSV table with two judges, reruns, a variant and human labels through the Python
API. Bad input is one sentence. No statistical test (false-failure rate 0). Wall time of the module on the 2-core
machine: 58-94 s at load average 4-10 (the first Spark call in a fresh JVM costs 10-30 s of it).
"""

from __future__ import annotations

import datetime as real_dt
import json
import shutil
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound._exceptions import DataFormatError, InputError

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning")
pyspark = pytest.importorskip("pyspark", reason="pyspark is in the test extra: pip install -e '.[test]'")
if shutil.which("java") is None:  # .ci/run installs a Java runtime; without one Spark cannot start
    pytest.fail("the Spark certify test needs a Java runtime (17+) on PATH", pytrace=False)




@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    class Frozen(real_dt.datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
            return real_dt.datetime(2026, 1, 2, tzinfo=real_dt.timezone.utc)

    monkeypatch.setattr("biasbound.certificate._dt", types.SimpleNamespace(datetime=Frozen, timezone=real_dt.timezone))


def _files(out: Path) -> dict[str, bytes]:
    got = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    marker = json.loads(got.pop(".biasbound-outputs.json"))  # its digests; the rest holds inode numbers
    got["marker"] = json.dumps({k: marker[k] for k in ("files", "sha256")}, sort_keys=True).encode()
    return got


def _same_files(a: Path, b: Path) -> None:
    fa, fb = _files(a), _files(b)
    assert sorted(fa) == sorted(fb) and "certificates.json" in fa and "summary.json" in fa
    assert [name for name in fa if fa[name] != fb[name]] == []
    assert not any(b"spark" in data.lower() for data in fb.values())  # the engine is recorded nowhere


@pytest.mark.slow
def test_certify_engine_spark_writes_the_embedded_files_on_the_demo(spark, tmp_path, monkeypatch, capsys) -> None:
    """``certify --engine spark`` (the module's session: getOrCreate); ``verify --judgments`` re-reads the judgments
    on the embedded route and reproduces the Spark route's files, each compared apart from ``created``."""
    from biasbound.cli import main
    from biasbound.data.embedded import load_demo

    path = tmp_path / "demo.parquet"
    load_demo().frame[["judge", "model", "item_id", "variant", "rerun", "game", "score"]].to_parquet(path, index=False)
    monkeypatch.chdir(tmp_path)
    assert main(["certify", "demo.parquet", "--out", "spark", "--engine", "spark", "--no-plots", "--bootstrap-rounds",
                 "50", "--no-progress"]) == 0
    files = _files(tmp_path / "spark")
    assert "certificate.json" in files and not any(b"spark" in data.lower() for data in files.values())
    reproduce = json.loads(files["certificate.json"])["scope"]["reproduce"]
    assert "engine" not in json.dumps(reproduce)  # the engine is no setting of the certificate
    # verify re-reads the judgments on the embedded route, certifies again and compares every output file
    assert main(["verify", "spark", "--judgments", "demo.parquet"]) == 0
    assert "reproduced 7 output file(s) from the judgments given (apart from 'created')" in capsys.readouterr().out


@pytest.mark.slow
def test_spark_certifies_a_million_rows_as_the_embedded_route(spark, tmp_path, frozen_clock) -> None:
    """200 models x 2,500 items x 2 games (10^6 rows, scores 1-10, some missing) from Parquet."""
    from biasbound.data.loading import load_inputs
    from biasbound.engine import load_spark
    from biasbound.pipeline import certify

    models, items = 200, 2_500
    rng = np.random.default_rng(11)
    n = 2 * models * items
    score = rng.integers(1, 11, n).astype(float)
    score[rng.random(n) < 1e-4] = np.nan
    raw = pd.DataFrame({"judge": "j", "model": np.repeat([f"model-{k}" for k in range(models)], 2 * items),
                        "item_id": np.tile(np.repeat([f"q{i}" for i in range(items)], 2), models),
                        "game": np.tile([1, 2], models * items), "score": score})
    path = tmp_path / "t.parquet"
    raw.to_parquet(path, index=False)
    coded, loaded = load_spark(path, session=spark), load_inputs([path])
    assert coded.report == loaded.report and coded.options == loaded.options
    assert coded.report["t.parquet"]["scale"] == [1.0, 10.0] and coded.report["t.parquet"]["missing"] > 0
    assert coded.frame["model"].cat.codes.dtype.itemsize <= 2  # codes, never a text per row
    pd.testing.assert_frame_equal(coded.frame, loaded.frame)  # the same coded frame, dtypes included
    settings = {"neighbors": "swap", "plots": False, "progress": False, "bootstrap_rounds": 20}
    certify(loaded, out=tmp_path / "embedded", **settings)
    del loaded
    certify(coded, out=tmp_path / "spark", **settings)
    _same_files(tmp_path / "embedded", tmp_path / "spark")


@pytest.mark.slow
def test_spark_certifies_a_csv_table_with_reruns_a_variant_and_human_labels(spark, tmp_path, frozen_clock) -> None:
    """Two judges, 12 models x 40 items, both games, a rerun, a variant, a human column, 5% missing scores, rows
    shuffled, from CSV (no row numbers on a cluster: the rows keep the file's order); the same table as a temporary
    view of the session's catalog, read by its name, gives the same frame."""
    from biasbound.data.loading import load_inputs
    from biasbound.engine import load_spark
    from biasbound.pipeline import certify

    rng = np.random.default_rng(3)
    rows = [(j, f"m{m}", f"q{i}", v, r, g) for j in ("a", "b") for m in range(12) for i in range(40)
            for v, r, g in (("original", 0, 1), ("original", 0, 2), ("original", 1, 1), ("original", 1, 2), ("v", 0, 1))]
    raw = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game"]).sample(frac=1,
                                                                                                    random_state=1)
    raw["score"] = rng.integers(1, 11, len(raw)).astype(float)
    raw.loc[rng.random(len(raw)) < 0.05, "score"] = np.nan
    raw["human"] = rng.integers(1, 11, len(raw)).astype(float)
    path = tmp_path / "t.csv"
    raw.to_csv(path, index=False)
    coded, loaded = load_spark(path, session=spark), load_inputs([path])
    assert coded.report == loaded.report and coded.options == loaded.options
    text = coded.frame
    assert (text["line"] == 0).all()  # not known on a cluster
    pd.testing.assert_frame_equal(text.drop(columns="line"), loaded.frame.drop(columns="line"))
    settings = {"neighbors": "swap,rerun,variant:v", "plots": False, "progress": False, "bootstrap_rounds": 20}
    certify(loaded, out=tmp_path / "embedded", **settings)
    certify(coded, out=tmp_path / "spark", **settings)
    _same_files(tmp_path / "embedded", tmp_path / "spark")
    spark.createDataFrame(raw).createOrReplaceTempView("bb_judgments")
    named = (load_spark("bb_judgments", session=spark, scale=(1, 10)).frame)
    pd.testing.assert_frame_equal(named.drop(columns=["source", "line"]), text.drop(columns=["source", "line"]))


@pytest.mark.slow
def test_spark_refuses_a_repeated_key_and_a_bad_row_in_one_sentence(spark, tmp_path) -> None:
    from biasbound.engine import load_spark

    raw = pd.DataFrame({"judge": "j", "model": ["m1", "m1", "m2", "m2"], "item_id": ["q1", "q2", "q1", "q2"],
                        "game": 1, "score": [1.0, 5.0, 3.0, 2.0]})
    dup = tmp_path / "dup.parquet"
    pd.concat([raw, raw.iloc[[2]]], ignore_index=True).to_parquet(dup, index=False)
    with pytest.raises(DataFormatError) as exc:
        load_spark(dup, session=spark, scale=(1, 5))
    assert str(exc.value) == ("dup.parquet: the judgment (judge='j', model='m2', item_id='q1', variant='original', "
                              "rerun=0, game=1) occurs 2 times; give each judgment once.")
    spaced = tmp_path / "spaced.csv"  # ' m2' is m2 (the loader strips model and item names): the key repeats
    raw.assign(model=["m1", "m1", " m2", "m2"], item_id=["q1", "q2", "q1", "q1"]).to_csv(spaced, index=False)
    with pytest.raises(DataFormatError, match=r"^spaced\.csv: the judgment \(judge='j', model='m2', item_id='q1', "
                                              r"variant='original', rerun=0, game=1\) occurs 2 times"):
        load_spark(spaced, session=spark, scale=(1, 5))
    bad = tmp_path / "bad.csv"
    raw.assign(score=["1", "5", "three", "2"]).to_csv(bad, index=False)
    with pytest.raises(DataFormatError, match=r"^bad\.csv: score \(column 'score'\) is not a finite number; fix the row"):
        load_spark(bad, session=spark, scale=(1, 5))
    out = tmp_path / "out.parquet"
    raw.assign(score=[1.0, 5.0, 6.0, 2.0]).to_parquet(out, index=False)  # row 3 off the given scale
    with pytest.raises(DataFormatError, match=r"^out\.parquet:3: score 6 is outside the scale \[1, 5\]; fix the row"):
        load_spark(out, session=spark, scale=(1, 5))


def test_spark_refuses_the_options_it_does_not_take(tmp_path, monkeypatch, capsys) -> None:
    """Refused before any Spark session starts: one sentence naming the option, exit code 2."""
    from biasbound.cli import main
    from biasbound.engine import load_spark

    path = tmp_path / "t.csv"
    path.write_text("judge,model,item_id,score\nj,m,q,1\n")
    with pytest.raises(InputError, match=r"^The 'columns' parameter of load_spark is not supported on the Spark engine"):
        load_spark(path, columns={"score": "rating"})
    monkeypatch.chdir(tmp_path)
    for flag in (["--skip-bad"], ["--columns", "score=rating"], ["--score-map", "C=1"]):
        assert main(["certify", "t.csv", "--out", "o", "--engine", "spark", *flag]) == 2
        err = capsys.readouterr().err
        assert f"The '{flag[0]}' option of certify is not supported on the Spark engine" in err
        assert "Traceback" not in err and not (tmp_path / "o").exists()
