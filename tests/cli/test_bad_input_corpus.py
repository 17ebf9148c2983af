"""A corpus of hand-made bad inputs, each through the real command line.

Every case must end with exit code 2, no traceback, and one sentence holding the words
listed for it (the file and line, or the flag and the allowed range, and the fix). The
inputs cover every path a user can feed: judgment tables (CSV, TSV, JSONL, Parquet,
compressed), Arena-Hard and LLMBar files, certificates, run configs, schematic tables and
the options of every command. CLI users must be told CLI flags, never Python arguments,
and never see a numpy repr.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import io
import json
import lzma
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound.cli import main

pytestmark = pytest.mark.slow  # end to end: every input through the real command line (~14 s on a loaded machine)

# ----------------------------------------------------------------------------------------- inputs


def _pairwise(n_items: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"judge": "j", "model": m, "item_id": f"q{i}", "variant": "original", "rerun": 0, "game": g,
             "score": round(float(rng.uniform(0.05, 0.95)), 3)}
            for m in ("mA", "mB") for i in range(n_items) for g in (1, 2)]
    return pd.DataFrame(rows)


GOOD = _pairwise()
GOOD_CSV = GOOD.to_csv(index=False)
GOOD_JSONL = GOOD.to_json(orient="records", lines=True)
HEADER = "judge,model,item_id,variant,rerun,game,score\n"


def csv_with(row: int, **changes: object) -> str:
    """GOOD as CSV with data row ``row`` (file line row + 2) changed."""
    df = GOOD.copy().astype(object)
    for k, v in changes.items():
        df.loc[row, k] = v
    return df.to_csv(index=False)


def parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def arena(records: list[object]) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


GAME = {"score": "A>B"}
AH = {"question_id": "q1", "model": "m", "judge": "gpt", "games": [GAME, {"score": "B>A"}]}

@functools.lru_cache(maxsize=1)
def _certificate() -> str:
    """A real schema-3 certificate (certify on GOOD with swap neighbours): model mA's, as JSON."""
    from biasbound.data.tables import from_frame
    from biasbound.pipeline import certify

    with tempfile.TemporaryDirectory() as folder:
        certify(from_frame(GOOD, source="good.csv", scale=(0.0, 1.0)), neighbors=["swap"], out=Path(folder),
                progress=False, plots=False, bootstrap_rounds=50)
        certs = json.loads((Path(folder) / "certificates.json").read_text(encoding="utf-8"))
    return json.dumps(next(c for c in certs if c["scope"].get("model") == "mA"))


@dataclass(frozen=True)
class Cert:
    """A certificate file made when the case runs: the real certificate, edited by ``edit`` (a dict -> JSON value)."""

    edit: Callable[[dict], object] = lambda c: c

    def text(self) -> str:
        return json.dumps(self.edit(json.loads(_certificate())))


CERT = Cert()
YAML_OK = "tau: 0.5\n"


@dataclass
class Case:
    id: str
    argv: list[str]
    words: tuple[str, ...]
    files: dict[str, bytes | str | Cert] = field(default_factory=dict)
    usage: bool = False  # a command-line usage error (click's own message) rather than a biasbound sentence


def certify_case(cid: str, name: str, content: bytes | str, words: tuple[str, ...], *extra: str) -> Case:
    return Case(cid, ["certify", "{d}/" + name, "--out", "{d}/out", "--no-plots", *extra], words, {name: content})


CASES: list[Case] = []
add = CASES.append

# -- unreadable files -----------------------------------------------------------------------
add(certify_case("empty-csv", "t.csv", "", ("t.csv", "is empty")))
add(certify_case("blank-csv", "t.csv", "\n\n  \n", ("t.csv", "is empty")))
add(certify_case("header-only-csv", "t.csv", HEADER, ("t.csv", "no judgment rows")))
add(certify_case("empty-jsonl", "t.jsonl", "", ("t.jsonl", "no judgment rows")))
add(certify_case("blank-jsonl", "t.jsonl", "\n\n", ("t.jsonl", "no judgment rows")))
add(certify_case("binary-csv", "t.csv", b"\x00\x01\x02\x03garbage", ("t.csv:1", "is binary", "NUL byte")))
add(certify_case("binary-tsv", "t.tsv", b"a\tb\n\x00\x00", ("t.tsv:2", "is binary")))
add(certify_case("binary-jsonl", "t.jsonl", b'{"a": 1}\n\x00\xff', ("t.jsonl:2", "is binary")))
add(certify_case("random-bytes-csv", "t.csv", bytes(np.random.default_rng(1).integers(0, 256, 400, dtype=np.uint8)),
                 ("t.csv", "binary")))
add(certify_case("latin1-csv", "t.csv", (HEADER + "j,mod\u00e8le,q1,original,0,1,0.5\n").encode("latin-1"),
                 ("t.csv:2", "not UTF-8", "0xe8", "save it as UTF-8")))
add(certify_case("utf16-csv", "t.csv", GOOD_CSV.encode("utf-16"), ("t.csv", "binary")))
add(certify_case("gzip-under-csv", "t.csv", gzip.compress(GOOD_CSV.encode()), ("t.csv", "gzip-compressed",
                                                                                 "rename it to t.csv.gz")))
add(certify_case("gzip-under-jsonl", "t.jsonl", gzip.compress(GOOD_JSONL.encode()), ("gzip-compressed", "t.jsonl.gz")))
add(certify_case("bz2-under-csv", "t.csv", bz2.compress(GOOD_CSV.encode()), ("bzip2-compressed", "t.csv.bz2")))
add(certify_case("xz-under-csv", "t.csv", lzma.compress(GOOD_CSV.encode()), ("xz-compressed", "t.csv.xz")))
add(certify_case("truncated-gz", "t.csv.gz", gzip.compress(GOOD_CSV.encode())[:60], ("t.csv.gz", "not a complete gzip",
                                                                                     "truncated")))
add(certify_case("truncated-jsonl-gz", "t.jsonl.gz", gzip.compress(GOOD_JSONL.encode())[:-9],
                 ("t.jsonl.gz", "not a complete gzip")))
add(certify_case("corrupt-gz", "t.csv.gz", b"\x1f\x8b\x08\x00" + b"\x13" * 50, ("t.csv.gz", "not a complete gzip")))
add(certify_case("not-gzip-gz", "t.csv.gz", GOOD_CSV.encode(), ("t.csv.gz", "not a complete gzip", "corrupt")))
add(certify_case("truncated-bz2", "t.csv.bz2", bz2.compress(GOOD_CSV.encode())[:40], ("t.csv.bz2", "bzip2")))
add(certify_case("truncated-xz", "t.csv.xz", lzma.compress(GOOD_CSV.encode())[:40], ("t.csv.xz", "xz")))
add(certify_case("zip-as-csv", "t.csv", b"PK\x03\x04" + b"\x00" * 30, ("t.csv", "zip file, not text")))
add(certify_case("parquet-as-csv", "t.csv", parquet_bytes(GOOD), ("t.csv", "Parquet file, not text")))
add(certify_case("csv-as-parquet", "t.parquet", GOOD_CSV, ("t.parquet", "is not a Parquet file")))
add(certify_case("truncated-parquet", "t.parquet", parquet_bytes(GOOD)[:200], ("t.parquet", "not a Parquet file")))
add(certify_case("damaged-parquet", "t.parquet", b"PAR1" + b"\x07" * 64 + b"PAR1", ("t.parquet", "cannot be read as Parquet")))
add(certify_case("unknown-suffix", "t.txt", GOOD_CSV, ("t.txt", "unknown table format", ".csv"), "--generators", "swap"))
add(certify_case("zst-suffix", "t.csv.zst", GOOD_CSV, ("t.csv.zst", "unknown table format"), "--generators", "swap"))
add(Case("missing-file", ["certify", "{d}/nope.csv", "--out", "{d}/o"], ("'INPUT' argument of certify", "nope.csv",
                                                                          "does not exist")))
add(Case("empty-folder", ["certify", "{d}/empty", "--out", "{d}/o"], ("empty",), {"empty/.keep": ""}))

# -- CSV structure --------------------------------------------------------------------------
add(certify_case("extra-field", "t.csv", GOOD_CSV.replace("\nj,mA,q3,original,0,1,", "\nj,mA,q3,original,0,1,9,", 1),
                 ("t.csv:8", "has 8 fields but the header has 7")))
add(certify_case("missing-field", "t.csv", HEADER + "j,mA,q1,original,0,1,0.5\nj,mA,q2,original,0\n",
                 ("t.csv:3", "fields but the header has 7")))
add(certify_case("unclosed-quote", "t.csv", HEADER + 'j,mA,q1,original,0,1,0.5\nj,"mA,q2,original,0,1,0.5\n',
                 ("t.csv:3", "quoted field is never closed")))
add(certify_case("duplicate-header", "t.csv", "model,model,item_id,score\na,b,q1,0.5\n", ("t.csv", "repeated column name")))
add(certify_case("empty-header-name", "t.csv", "model,,item_id,score\na,b,q1,0.5\n", ("t.csv", "empty or repeated column")))
add(certify_case("no-item-column", "t.csv", "model,score\nm,0.5\n", ("t.csv:1", "required column 'item_id'", "--columns")))
add(certify_case("no-model-column", "t.csv", "item_id,score\nq,0.5\n", ("t.csv:1", "required column 'model'")))
add(certify_case("no-score-column", "t.csv", "item_id,model\nq,m\n", ("t.csv:1", "required column 'score'")))
add(certify_case("text-score", "t.csv", csv_with(5, score="ten"), ("t.csv:7", "score (column 'score') is not a finite number",
                                                                   "(got 'ten')",
                                                                   "--skip-bad")))
add(certify_case("inf-score", "t.csv", csv_with(2, score="inf"), ("t.csv:4", "not a finite number")))
add(certify_case("huge-score", "t.csv", csv_with(2, score="1e999"), ("t.csv:4", "not a finite number")))
add(certify_case("negative-rerun", "t.csv", csv_with(3, rerun=-1), ("t.csv:5", "rerun must be a non-negative int")))
add(certify_case("fractional-rerun", "t.csv", csv_with(3, rerun=1.5), ("t.csv:5", "rerun must be a non-negative int")))
add(certify_case("text-rerun", "t.csv", csv_with(3, rerun="again"), ("t.csv:5", "rerun must be")))
add(certify_case("game-3", "t.csv", csv_with(4, game=3), ("t.csv:6", "game must be 0, 1 or 2")))
add(certify_case("game-text", "t.csv", csv_with(4, game="two"), ("t.csv:6", "game must be 0, 1 or 2")))
add(certify_case("empty-model", "t.csv", csv_with(6, model=""), ("t.csv:8", "empty model")))
add(certify_case("blank-model", "t.csv", csv_with(6, model="   "), ("t.csv:8", "empty model")))
add(certify_case("empty-item", "t.csv", csv_with(7, item_id=""), ("t.csv:9", "empty item_id")))
add(certify_case("duplicate-judgment", "t.csv", GOOD_CSV + GOOD_CSV.splitlines()[1] + "\n",
                 ("t.csv:122", "duplicated judgment", "also at", "t.csv:2", "--skip-bad")))
add(certify_case("outlier-high", "t.csv", csv_with(10, score=1.2), ("t.csv:12", "score 1.2 is outside the scale [0, 1]",
                                                                    "inferred from the other scores")))
add(certify_case("outlier-low", "t.csv", csv_with(10, score=-0.05), ("t.csv:12", "score -0.05 is outside the scale [0, 1]")))
add(certify_case("outside-given-scale", "t.csv", csv_with(10, score=7), ("t.csv:12", "score 7 is outside the scale [0, 5]"),
                 "--scale", "0,5"))
add(certify_case("constant-scores", "t.csv", HEADER + "".join(f"j,m,q{i},original,0,1,3\n" for i in range(30)),
                 ("every score equals 3", "--scale LO,HI")))
add(certify_case("ambiguous-scale", "t.csv", HEADER + "".join(f"j,m,q{i},original,0,1,{2 + i % 3}\n" for i in range(30)),
                 ("run from 2 to 4", "could be [1, 5]", "--scale LO,HI")))
add(certify_case("no-common-scale", "t.csv", HEADER + "".join(f"j,m,q{i},original,0,1,{-3 + i}\n" for i in range(30)),
                 ("run from -3 to 26", "--scale LO,HI")))
add(certify_case("line-after-blank-lines", "t.csv", HEADER + "j,m,q1,original,0,1,0.5\n\n\n\nj,m,q2,original,0,1,oops\n",
                 ("t.csv:6", "not a finite number")))
add(certify_case("line-after-quoted-newline", "t.csv",
                 'judge,model,item_id,variant,rerun,game,score\nj,"m\nx",q1,original,0,1,0.5\nj,m,q2,original,0,1,bad\n',
                 ("t.csv:4", "not a finite number")))
add(certify_case("tsv-bad-score", "t.tsv", GOOD_CSV.replace(",", "\t").replace("\t0.", "\tx", 1),
                 ("t.tsv:2", "not a finite number")))
add(certify_case("all-missing", "t.csv", HEADER + "".join(f"j,m,q{i},original,0,1,\n" for i in range(5)),
                 ("no finite score",)))

add(certify_case("semicolon-csv", "t.csv", GOOD_CSV.replace(",", ";"), ("t.csv:1", "separated by semicolons")))
add(certify_case("tab-separated-csv", "t.csv", GOOD_CSV.replace(",", "\t"), ("t.csv:1", "separated by tabs",
                                                                           "name it .tsv")))
add(certify_case("comma-separated-tsv", "t.tsv", GOOD_CSV, ("t.tsv:1", "separated by commas", "name it .csv")))
add(Case("same-input-twice", ["certify", "{d}/t.csv", "{d}/t.csv", "--out", "{d}/o"], ("names", "t.csv' twice"),
         {"t.csv": GOOD_CSV}))
add(Case("overlapping-inputs", ["certify", "{d}/a.csv", "{d}/b.csv", "--out", "{d}/o"],
         ("b.csv:2", "duplicated judgment", "also at", "a.csv:2", "--skip-bad"), {"a.csv": GOOD_CSV, "b.csv": GOOD_CSV}))

# -- JSON arrays (.json) ----------------------------------------------------------------------
add(certify_case("json-not-array", "t.json", '{"model": "m"}', ("t.json:1", "one JSON array of records")))
add(certify_case("json-array-of-numbers", "t.json", "[\n1,\n2\n]", ("t.json:2", "must be a JSON object")))
add(certify_case("json-array-unclosed", "t.json", '[\n{"model": "m", "item_id": "q", "score": 0.5}\n',
                 ("t.json", "not closed")))
add(certify_case("json-array-bad-score", "t.json", GOOD.assign(score=GOOD["score"].astype(object))
                 .pipe(lambda d: d.assign(score=["x" if i == 3 else v for i, v in enumerate(d["score"])]))
                 .to_json(orient="records", indent=1), ("t.json", "not a finite number", "(got 'x')")))

# -- JSON lines -----------------------------------------------------------------------------
add(certify_case("jsonl-array-line", "t.jsonl", "[1, 2]\n", ("t.jsonl:1", "must be a JSON object", "JSON array")))
add(certify_case("jsonl-string-line", "t.jsonl", GOOD_JSONL + '"text"\n', ("t.jsonl:121", "JSON string")))
add(certify_case("jsonl-number-line", "t.jsonl", "3\n", ("t.jsonl:1", "JSON number")))
add(certify_case("jsonl-null-line", "t.jsonl", "null\n", ("t.jsonl:1", "JSON null")))
add(certify_case("jsonl-invalid", "t.jsonl", GOOD_JSONL.replace("}\n", "\n", 1), ("t.jsonl:1", "not valid JSON")))
add(certify_case("jsonl-truncated-last", "t.jsonl", GOOD_JSONL[:-20], ("t.jsonl:120", "not valid JSON")))
add(certify_case("jsonl-blank-then-bad", "t.jsonl", '{"model": "m", "item_id": "q", "score": 0.5}\n\n\n{bad\n',
                 ("t.jsonl:4", "not valid JSON")))
add(certify_case("jsonl-deep-nesting", "t.jsonl", "[" * 100000 + "]" * 100000 + "\n", ("t.jsonl:1",)))
add(certify_case("jsonl-dict-score", "t.jsonl", '{"model": "m", "item_id": "q", "score": {"a": 1}}\n',
                 ("t.jsonl:1", "not a finite number")))
add(certify_case("jsonl-list-score", "t.jsonl", '{"model": "m", "item_id": "q", "score": [1]}\n',
                 ("t.jsonl:1", "not a finite number")))
add(certify_case("jsonl-text-score", "t.jsonl", '{"model": "m", "item_id": "q", "score": "high"}\n',
                 ("t.jsonl:1", "not a finite number")))
add(certify_case("jsonl-no-model", "t.jsonl", '{"item_id": "q", "score": 0.5}\n', ("required column 'model'",)))
add(certify_case("jsonl-null-model", "t.jsonl", '{"model": null, "item_id": "q", "score": 0.5}\n'
                 '{"model": "m", "item_id": "q2", "score": 0.7}\n', ("t.jsonl:1", "empty model")))
add(certify_case("jsonl-game-7", "t.jsonl", '{"model": "m", "item_id": "q", "score": 0.5, "game": 7}\n',
                 ("t.jsonl:1", "game must be 0, 1 or 2")))
add(certify_case("jsonl-nan-literal", "t.jsonl", '{"model": "m", "item_id": "q", "score": Infinity}\n',
                 ("t.jsonl:1", "not a finite number")))

# -- Arena-Hard judgment files --------------------------------------------------------------
add(certify_case("ah-games-not-list", "ah.jsonl", arena([{**AH, "games": "A>B"}]),
                 ("ah.jsonl:1", "'games' must be a list", "--skip-bad")))
add(certify_case("ah-three-games", "ah.jsonl", arena([{**AH, "games": [GAME, GAME, GAME]}]),
                 ("ah.jsonl:1", "at most two games")))
add(certify_case("ah-no-question", "ah.jsonl", arena([AH, {"games": [GAME], "model": "m"}]),
                 ("ah.jsonl:2", "lacks 'question_id'")))
add(certify_case("ah-no-model", "ah.jsonl", arena([AH, {"question_id": "q2", "games": [GAME]}]),
                 ("ah.jsonl:2", "'model'")))
add(certify_case("ah-bad-verdict", "ah.jsonl", arena([AH, {**AH, "question_id": "q2", "games": [{"score": "A>>>B"}]}]),
                 ("ah.jsonl:2",)))
add(certify_case("ah-array-line", "ah.jsonl", arena([AH, [1, 2]]), ("ah.jsonl:2",)))
add(certify_case("ah-malformed", "ah.jsonl", arena([AH, '{"question_id": "q2", "games": [']), ("ah.jsonl:2", "JSON")))
add(certify_case("ah-game-not-object", "ah.jsonl", arena([AH, {**AH, "question_id": "q2", "games": ["A>B", GAME]}]),
                 ("ah.jsonl:2",)))
add(certify_case("ah-truncated-gz", "ah.jsonl.gz", gzip.compress(arena([AH] * 50).encode())[:70],
                 ("ah.jsonl.gz", "not a complete gzip")))
add(certify_case("ah-binary-tail", "ah.jsonl", arena([AH]).encode() + b"\x00\x00\x00", ("ah.jsonl:2", "binary")))

# -- LLMBar ---------------------------------------------------------------------------------
LLMBAR_HEAD = "subset,item,gold_label,judge,strategy,winner_orig_order,winner_swapped_order\n"
add(certify_case("llmbar-no-strategy", "l.csv", "subset,item,gold_label,judge,winner_orig_order,winner_swapped_order\n"
                 "N,1,1,gpt,1,2\n", ("l.csv:1", "'strategy' is missing")))
add(certify_case("llmbar-winner-3", "l.csv", LLMBAR_HEAD + "N,1,1,gpt,V,1,2\nN,2,1,gpt,V,3,1\n",
                 ("l.csv:3", "winner_orig_order must be 1 or 2", "(got '3')")))
add(certify_case("llmbar-binary", "l.csv", LLMBAR_HEAD.encode() + b"\x00", ("l.csv:2", "binary")))

# -- certify options ------------------------------------------------------------------------
OPT = ["certify", "{d}/t.csv", "--out", "{d}/o", "--no-plots"]
for cid, extra, words in [
    ("tau-0", ["--tau", "0"], ("'--tau' option of certify", "(0, 1e+06]")),
    ("tau-neg", ["--tau", "-1"], ("'--tau' option of certify", "Got -1")),
    ("tau-nan", ["--tau", "nan"], ("'--tau' option of certify",)),
    ("tau-inf", ["--tau", "inf"], ("'--tau' option of certify",)),
    ("delta-0", ["--delta", "0"], ("'--delta' option of certify", "[1e-12, 1)")),
    ("delta-1", ["--delta", "1"], ("'--delta' option of certify", "[1e-12, 1)")),
    ("delta-tiny", ["--delta", "1e-300"], ("'--delta' option of certify", "[1e-12, 1)", "1e-300")),
    ("neighbors-unknown", ["--generators", "mirror"], ("'--generators' option of certify", "'mirror'")),
    ("neighbors-empty-variant", ["--generators", "variant:"], ("'--generators' option of certify",)),
    ("neighbors-absent-variant", ["--generators", "variant:bold"], ("variant:bold", "not in the judgments")),
    ("neighbors-absent-rerun", ["--generators", "rerun"], ("'rerun'", "no rerun > 0")),
    ("method", ["--method", "exact"], ("'--method' option of certify", "'tight', 'paper'")),
    ("combine", ["--combine", "mean"], ("'--combine' option of certify", "'max', 'rms'")),
    ("alpha-0", ["--alpha", "0"], ("'--alpha' option of certify", "(0, 1]")),
    ("alpha-2", ["--alpha", "2"], ("'--alpha' option of certify", "(0, 1]")),
    ("beta-2", ["--beta", "2"], ("'--beta' option of certify", "(0, 1)")),
    ("beta-text", ["--beta", "abc"], ("'--beta'", "'none'")),
    ("holdout-neg", ["--holdout", "-0.1"], ("'--holdout' option of certify", "[0, 0.9]")),
    ("holdout-big", ["--holdout", "0.95"], ("'--holdout' option of certify", "[0, 0.9]")),
    ("center-2", ["--center", "fixed:2"], ("'--center' option of certify", "[0, 1]")),
    ("center-bogus", ["--center", "median"], ("'--center' option of certify", "'fixed:X'")),
    ("center-ema-text", ["--center", "ema:x"], ("'--center' option of certify",)),
    ("view", ["--view", "items"], ("'--view' option of certify", "'model', 'leaderboard'")),
    ("seed-neg", ["--seed", "-1"], ("'--seed' option of certify", "[0, inf)")),
    ("bootstrap-0", ["--bootstrap-rounds", "0"], ("'--bootstrap-rounds' option of certify", "[1, 100000]")),
    ("jitter-without-rerun", ["--generators", "swap", "--jitter-adjust"], ("'--jitter-adjust' option of certify", "'rerun'")),
    ("scale-one", ["--scale", "1"], ("'--scale'", "'lo,hi'")),
    ("scale-text", ["--scale", "a,b"], ("'--scale'",)),
    ("scale-reversed", ["--scale", "5,1"], ("'--scale'", "lo < hi")),
    ("scale-equal", ["--scale", "1,1"], ("'--scale'", "lo < hi")),
    ("scale-three", ["--scale", "0,1,2"], ("'--scale'",)),
    ("scale-inf", ["--scale", "0,inf"], ("'--scale'",)),
    ("scale-nan", ["--scale", "nan,1"], ("'--scale'",)),
]:
    add(Case(f"certify-{cid}", [*OPT, *extra], words, {"t.csv": GOOD_CSV}))
add(Case("certify-tau-text", [*OPT, "--tau", "big"], ("Invalid value", "--tau"), {"t.csv": GOOD_CSV}, usage=True))
add(Case("certify-unknown-option", [*OPT, "--colour", "red"], ("No such option", "--colour"), {"t.csv": GOOD_CSV},
         usage=True))
add(Case("certify-no-out", ["certify", "{d}/t.csv"], ("Missing option", "--out"), {"t.csv": GOOD_CSV}, usage=True))
add(Case("certify-out-is-file", ["certify", "{d}/t.csv", "--out", "{d}/t.csv"], ("'--out' option of certify",
                                                                                "existing file"), {"t.csv": GOOD_CSV}))
add(Case("certify-out-under-file", ["certify", "{d}/t.csv", "--out", "{d}/t.csv/o"], ("'--out' option of certify",
                                                                                     "is a file, not a folder"),
         {"t.csv": GOOD_CSV}))
add(Case("certify-swap-single", ["certify", "{d}/s.csv", "--out", "{d}/o", "--generators", "swap"], ("'swap'", "no game-2"),
         {"s.csv": "item_id,model,score\n" + "".join(f"q{i},m,{i % 2}\n" for i in range(10))}))
add(Case("certify-neighbour-without-original", ["certify", "{d}/t.csv", "--out", "{d}/o", "--generators", "swap"],
         ("t.csv:3", "has no original judgment", "--skip-bad"),
         {"t.csv": HEADER + "j,m,q1,original,0,1,0.5\nj,m,q2,original,0,2,0.5\nj,m,q1,original,0,2,0.4\n"}))
add(Case("demo-out-is-file", ["demo", "--out", "{d}/f"], ("'--out' option of demo", "existing file"), {"f": "x"}))

# -- audit ------------------------------------------------------------------------------------
AUD = ["audit", "{d}/c.json", "--neighbor-file", "{d}/t.csv"]
for cid, cert, words in [
    ("not-json", "{tau: 1", ("c.json:1", "not a JSON certificate")),
    ("empty", "", ("c.json", "not a JSON certificate")),
    ("binary", b"\x00\x01", ("c.json", "binary")),
    ("two-no-model", Cert(lambda c: [c, {**c, "scope": {**c["scope"], "model": "mB"}}]),
     ("'--model' option of audit", "exactly one certificate", "it holds 2, give --model", "mA (judge j), mB (judge j)")),
    ("other-model", Cert(lambda c: [{**c, "scope": {**c["scope"], "model": "mZ"}}]), ("hold 0 neighbour(s)", "at least 2")),
    ("no-sigma", Cert(lambda c: {k: v for k, v in c.items() if k != "sigma"}), ("not a biasbound certificate",)),
    ("text-tau", Cert(lambda c: {**c, "tau": "half"}), ("c.json", "certificate's 'tau' must be a number > 0", "got 'half'")),
    ("text-sigma", Cert(lambda c: {**c, "sigma": "small"}), ("'sigma'", "number")),
    ("negative-sigma", Cert(lambda c: {**c, "sigma": -1}), ("'sigma'",)),
    ("delta-2", Cert(lambda c: {**c, "delta": 2}), ("'delta'",)),
    ("dim-text", Cert(lambda c: {**c, "dim": "thirty"}), ("'dim'",)),
    ("dim-zero", Cert(lambda c: {**c, "dim": 0}), ("'dim'",)),
    ("alpha-null", Cert(lambda c: {**c, "alpha": None}), ("'alpha'",)),
    ("scope-text", Cert(lambda c: {**c, "scope": "all"}), ("'scope'",)),
    ("number", "3", ("not a biasbound certificate",)),
    ("schema-1", Cert(lambda c: {k: v for k, v in c.items() if k != "schema_version"}),
     ("c.json", "schema version 1 certificate", "re-run certify")),
]:
    add(Case(f"audit-cert-{cid}", AUD, words, {"c.json": cert, "t.csv": GOOD_CSV}))
add(Case("audit-missing-cert", AUD, ("'CERTIFICATE' argument of audit", "not a file"), {"t.csv": GOOD_CSV}))
add(Case("audit-missing-neighbours", AUD, ("'--neighbor-file' option of audit", "does not exist"),
         {"c.json": CERT}))
add(Case("audit-garbage-neighbours", AUD, ("t.csv", "binary"), {"c.json": CERT, "t.csv": b"\x00\x01"}))
add(Case("audit-other-judge", AUD, ("no judgment by the certificate's judge", "'j'"),
         {"c.json": CERT, "t.csv": GOOD_CSV.replace("\nj,", "\nk,")}))
add(Case("audit-confidence", [*AUD, "--confidence", "2"], ("'--confidence' option of audit", "(0, 1)"),
         {"c.json": CERT, "t.csv": GOOD_CSV}))

# -- calibrate ------------------------------------------------------------------------------
CAL = ["calibrate", "--tau", "0.5", "--delta", "0.01", "--dim", "100", "--sensitivity", "0.1"]
for cid, extra, words in [
    ("delta-tiny", ["--delta", "1e-300"], ("'--delta' option of calibrate", "[1e-12, 1)")),
    ("delta-one", ["--delta", "1"], ("'--delta'", "[1e-12, 1)")),
    ("tau-zero", ["--tau", "0"], ("'--tau'", "(0, 1e+06]")),
    ("dim-zero", ["--dim", "0"], ("'--dim'", "[1, inf)")),
    ("sensitivity-neg", ["--sensitivity", "-0.1"], ("'--sensitivity'", "[0, 1e+06]")),
    ("sensitivity-above-range", ["--sensitivity", "1.5", "--score-range", "1"], ("'--sensitivity' option of calibrate",
                                                                           "at most", "= 1")),
    ("sensitivity-above-hamming", ["--sensitivity", "2.5", "--score-range", "1", "--hamming", "4"], ("at most", "= 2")),
    ("range-zero", ["--score-range", "0"], ("'--score-range'",)),
    ("hamming-zero", ["--score-range", "1", "--hamming", "0"], ("'--hamming'",)),
    ("alpha-two", ["--alpha", "2"], ("'--alpha'", "(0, 1]")),
    ("beta-one", ["--sensitivity-ucb", "0.2", "--beta", "1"], ("'--beta'", "(0, 1)")),
    ("method", ["--method", "exact"], ("'--method' option of calibrate", "'tight', 'paper'")),
]:
    argv = list(CAL)
    for flag, value in zip(extra[::2], extra[1::2]):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    add(Case(f"calibrate-{cid}", argv, words))

# -- schematic ------------------------------------------------------------------------------
SCH = ["schematic", "{d}/f.csv", "--factors", "a,b", "--overall", "o"]
ROWS = "".join(f"{i % 5},{(i * 3) % 7},{i % 4}\n" for i in range(40))
for cid, name, content, words in [
    ("text-value", "f.csv", "a,b,o\n1,2,3\n4,5,ten\n" + ROWS, ("f.csv:3", "'ten' of column 'o'", "not a finite number")),
    ("inf-value", "f.csv", "a,b,o\n1,inf,3\n" + ROWS, ("f.csv:2", "'inf' of column 'b'")),
    ("missing-column", "f.csv", "a,x,o\n" + ROWS, ("no row has the column 'b'",)),
    ("empty", "f.csv", "", ("f.csv", "empty")),
    ("binary", "f.csv", b"\x00\x01", ("f.csv", "binary")),
    ("gzip-under-csv", "f.csv", gzip.compress(("a,b,o\n" + ROWS).encode()), ("f.csv", "gzip-compressed")),
    ("too-few-rows", "f.csv", "a,b,o\n1,2,3\n2,3,1\n3,1,2\n", ("'--factors' option of schematic", "at least",
                                                               "usable rows")),
    ("blank-line-number", "f.csv", "a,b,o\n1,2,3\n\n\n4,5,oops\n" + ROWS, ("f.csv:5", "'oops'")),
]:
    add(Case(f"schematic-{cid}", SCH if name == "f.csv" else [*SCH[:1], "{d}/" + name, *SCH[2:]], words,
             {name: content}))
add(Case("schematic-jsonl-bool", ["schematic", "{d}/f.jsonl", "--factors", "a", "--overall", "o"],
         ("f.jsonl:2", "true of column 'o'"), {"f.jsonl": '{"a": 1, "o": 2}\n{"a": 2, "o": true}\n'}))
add(Case("schematic-jsonl-array", ["schematic", "{d}/f.jsonl", "--factors", "a", "--overall", "o"],
         ("f.jsonl:1", "JSON array"), {"f.jsonl": "[1, 2]\n"}))
add(Case("schematic-no-factors", ["schematic", "{d}/f.csv", "--factors", ",", "--overall", "o"],
         ("'--factors'",), {"f.csv": "a,b,o\n" + ROWS}))
add(Case("schematic-repeated-factor", ["schematic", "{d}/f.csv", "--factors", "a,a", "--overall", "o"],
         ("'--factors' option of schematic", "each column once", "'a'"), {"f.csv": "a,b,o\n" + ROWS}))
add(Case("schematic-overall-is-factor", ["schematic", "{d}/f.csv", "--factors", "a,o", "--overall", "o"],
         ("'--overall' option of schematic", "must not be one of the factors"), {"f.csv": "a,b,o\n" + ROWS}))
add(Case("schematic-mode", [*SCH, "--mode", "holdout"], ("'--mode' option of schematic", "'paper', 'cv'"), {"f.csv": "a,b,o\n" + ROWS}))
add(Case("schematic-folds", [*SCH, "--mode", "cv", "--folds", "1"], ("'--folds' option of schematic", "[2, inf)"), {"f.csv": "a,b,o\n" + ROWS}))
add(Case("schematic-suffix", ["schematic", "{d}/f.xlsx", "--factors", "a", "--overall", "o"], (".csv or .jsonl",),
         {"f.xlsx": "a,o\n1,2\n"}))

# -- run configs ----------------------------------------------------------------------------
RUN = ["run", "{d}/r.yaml"]
RUN_BASE = ("data: {table: t.csv}\ntemplate: single\njudge: {name: j, base_url: 'http://127.0.0.1:9/v1', model: m}\n"
            "neighbors: {generators: [rerun]}\n")
for cid, text, words in [
    ("duplicate-key", "tau: 5\ntau: 7\n", ("r.yaml:2", "'tau' appears twice", "first at line 1")),
    ("duplicate-nested-key", "calibration:\n  alpha: 0.5\n  alpha: 0.2\n", ("r.yaml:7", "'alpha' appears twice")),
    ("syntax", "tau: [1,\n", ("r.yaml", "not valid YAML")),
    ("tab-indent", "calibration:\n\talpha: 0.5\n", ("r.yaml", "not valid YAML")),
    ("binary", b"\x00\x01", ("r.yaml", "binary")),
    ("not-utf8", b"tau: \xe9\n", ("r.yaml:1", "not UTF-8")),
    ("top-list", "- 1\n- 2\n", ("r.yaml",)),
    ("tau-negative", "tau: -1\n", ("'tau'", "(0, 1e+06]")),
    ("delta-tiny", "delta: 1.0e-300\n", ("'delta'", "[1e-12, 1)")),
    ("unknown-key", "colour: red\n", ("'colour'", "not allowed")),
    ("seed-negative", "seed: -3\n", ("'seed'",)),
    ("bootstrap-zero", "bootstrap_rounds: 0\n", ("'bootstrap_rounds'",)),
    ("holdout-big", "calibration:\n  holdout: 2\n", ("'calibration.holdout'", "[0, 0.9]")),
    ("alpha-zero", "calibration:\n  alpha: 0\n", ("'calibration.alpha'", "(0, 1]")),
    ("beta-text", "calibration:\n  beta: often\n", ("'calibration.beta'",)),
]:
    body = text if isinstance(text, bytes) or cid in ("duplicate-key", "syntax", "top-list") else RUN_BASE + text
    add(Case(f"run-{cid}", RUN, words, {"r.yaml": body, "t.csv": "question_id,question,model,answer\n"}))
add(Case("run-missing-config", ["run", "{d}/none.yaml"], ("none.yaml", "does not exist")))
add(Case("run-output-is-file", RUN, ("r.yaml", "The key 'output' must be a folder", "not an existing file"),
         {"r.yaml": RUN_BASE + "output: t.csv\n", "t.csv": "item_id,question,model,answer\nq1,Why?,m,So.\n"}))
ANSWERS_HEAD = "item_id,question,model,answer\n"
for cid, name, content, words in [
    ("binary", "t.csv", b"\x00\x01\x02", ("t.csv", "binary")),
    ("truncated-gz", "t.csv.gz", gzip.compress((ANSWERS_HEAD + "q1,Why?,m,Because.\n" * 50).encode())[:40],
     ("t.csv.gz", "not a complete gzip")),
    ("header-only", "t.csv", ANSWERS_HEAD, ("t.csv", "no answer rows")),
    ("wrong-columns", "t.csv", "question_id,question,model,answer\nq1,Why?,m,Because.\n", ("t.csv:1", "lacks the column")),
    ("empty-question-after-quoted-newline", "t.csv", ANSWERS_HEAD + 'q1,"Why\nnot?",m,"Be\ncause."\nq2,,m,x\n',
     ("t.csv:5", "empty question")),  # the first record spans lines 2-4
    ("empty-item", "t.csv", ANSWERS_HEAD + "q1,Why?,m,Because.\n,How?,m,So.\n", ("t.csv:3", "empty item_id")),
    ("unknown-suffix", "t.xlsx", ANSWERS_HEAD, ("t.xlsx", "unknown table format")),
]:
    cfg = RUN_BASE.replace("table: t.csv", f"table: {name}") + "output: out\n"
    add(Case(f"run-answers-{cid}", RUN, words, {"r.yaml": cfg, name: content}))

# -- serve-synthetic-judge ------------------------------------------------------------------
SRV = ["serve-synthetic-judge"]
for cid, extra, words in [
    ("port-negative", ["--port", "-1"], ("'--port' option of serve-synthetic-judge", "[0, 65535]")),
    ("port-huge", ["--port", "70000"], ("'--port'", "[0, 65535]")),
    ("fault-rate", ["--fault-rate", "2"], ("'--fault-rate' option of serve-synthetic-judge", "[0, 1]")),
    ("fault-kinds-empty", ["--fault-kinds", ","], ("'--fault-kinds'",)),
    ("fault-kinds-unknown", ["--fault-kinds", "explode"], ("'--fault-kinds' option", "explode")),
    ("latency-negative", ["--latency-ms", "-5"], ("'--latency-ms' option of serve-synthetic-judge", "[0, inf)")),
    ("host-unknown", ["--host", "no.such.host.invalid", "--port", "0"], ("Cannot listen on no.such.host.invalid",)),
]:
    add(Case(f"serve-{cid}", [*SRV, *extra], words))


# ----------------------------------------------------------------------------------------- the test

def _materialise(case: Case, d: Path) -> list[str]:
    for name, content in case.files.items():
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Cert):
            path.write_text(content.text(), encoding="utf-8")
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return [a.replace("{d}", str(d)) for a in case.argv]


def test_the_corpus_is_large_and_has_unique_ids() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 150


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_sentence_with_exit_code_2(case: Case, tmp_path: Path, capsys) -> None:
    argv = _materialise(case, tmp_path)
    try:
        code = main(argv)
    except BaseException as exc:  # noqa: BLE001 - anything escaping main() is a traceback for the user
        pytest.fail(f"{case.id}: {type(exc).__name__} escaped the command line: {exc}")
    out, err = capsys.readouterr()
    text = " ".join(err.split())
    assert code == 2, f"{case.id}: exit {code}; stderr: {err[-500:]}; stdout: {out[-300:]}"
    assert "Traceback" not in err + out
    for words in case.words:
        assert words.replace("{d}", str(tmp_path)) in text, f"{case.id}: {words!r} not in {text!r}"
    if not case.usage:
        assert text.startswith("error: ") and text.count("error: ") == 1
        # CLI users are told CLI flags and never see Python arguments or numpy reprs
        for python_only in ("skip_bad=True", "columns={", "fmt=", "np.float64(", "np.int64(", "scale=(",
                            "' parameter of", "of load_table", "of from_frame"):
            assert python_only not in text, f"{case.id}: {python_only!r} in {text!r}"
        if case.argv[0] == "audit":  # audit's errors speak of audit, never of certify
            assert "of certify" not in text


def test_a_port_in_use_is_one_sentence(capsys) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve-synthetic-judge", "--port", str(port)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"Cannot listen on 127.0.0.1:{port}" in err and "choose another --port" in err and "Traceback" not in err
