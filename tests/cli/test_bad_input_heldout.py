"""A second, independent corpus of unusual and malformed inputs, each through the real command line.

Built the way a user who never read the loaders would feed them: files saved by Excel or an old Mac,
UTF-16 and BOMs, percent strings, 400-digit integers, 1–10 tables with one stray value, names holding
quotes, newlines and rich markup, folders of tables, options no input reads, and malformed variants
of the real AlpacaEval, MT-Bench (FastChat) and inspect_ai files the readers were written for.

Every bad input must end with exit code 2, no traceback, one sentence with the listed words (the
file and line, or the option and its allowed range) and no Python argument or numpy repr; every
unusual-but-valid input must certify (exit 0) with the listed words in its output.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA

from biasbound.cli import main

pytestmark = pytest.mark.slow  # end to end: every input through the real command line (~35 s on a loaded machine)

AE_PATH = SHARED_DATA / "alpaca_eval/results/alpaca-7b/weighted_alpaca_eval_gpt4_turbo/annotations.json"
AE = AE_PATH.read_text(encoding="utf-8")
AE_REC = json.loads(AE)
MTS = (SHARED_DATA / "mt_bench/phi-3/model_judgment/gpt-4_single.jsonl").read_text(encoding="utf-8").splitlines()
MTP = (SHARED_DATA / "mt_bench/phi-3/model_judgment/gpt-4_pair.jsonl").read_text(encoding="utf-8").splitlines()
FAST = ("--no-plots", "--no-progress", "--bootstrap-rounds", "20")


def _pairwise() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"judge": "j", "model": m, "item_id": f"q{i}", "variant": "original", "rerun": 0, "game": g,
                          "score": round(float(rng.uniform(0.05, 0.95)), 3)}
                         for m in ("mA", "mB") for i in range(30) for g in (1, 2)])


GOOD = _pairwise()
GOOD_CSV = GOOD.to_csv(index=False)
GOOD_JSONL = GOOD.to_json(orient="records", lines=True)
H = "judge,model,item_id,variant,rerun,game,score\n"


def swaprows(scores: list[object]) -> str:
    """One model, item q<i> judged in both orders with score scores[i] (data line 2 + 2i and 3 + 2i)."""
    return H + "".join(f"j,m,q{i},original,0,{g},{s}\n" for i, s in enumerate(scores) for g in (1, 2))


def jsonl(scores: list[object], key: str = "score", ids: Callable[[int], object] = lambda i: f"q{i}") -> str:
    return "".join(json.dumps({"model": "m", "item_id": ids(i), "game": g, key: s}) + "\n"
                   for i, s in enumerate(scores) for g in (1, 2))


def named(model: str, item: str = "q") -> pd.DataFrame:
    df = GOOD.copy()
    df["model"] = df["model"].map({"mA": model, "mB": "mB"})
    df["item_id"] = item + df["item_id"]
    return df


def ae(mod: Callable[[list[dict]], object]) -> str:
    recs = copy.deepcopy(AE_REC)
    mod(recs)
    return json.dumps(recs, indent=2)  # one key per line: a record's line is where its '{' is


def ae_set(i: int, key: str, value: object) -> Callable[[list[dict]], None]:
    def f(recs: list[dict]) -> None:
        if value is KeyError:
            recs[i].pop(key)
        else:
            recs[i][key] = value
    return f


def mt(lines: list[str], i: int, mod: Callable[[dict], object]) -> str:
    recs = [json.loads(line) for line in lines]
    mod(recs[i])
    return "\n".join(json.dumps(r) for r in recs) + "\n"


def pop(k: str) -> Callable[[dict], object]:
    return lambda r: r.pop(k)


def put(k: str, v: object) -> Callable[[dict], None]:
    return lambda r: r.__setitem__(k, v)


@dataclass
class Case:
    id: str
    argv: list[str]
    words: tuple[str, ...]
    files: dict[str, object] = field(default_factory=dict)
    code: int = 2
    usage: bool = False  # click's own usage message rather than a biasbound sentence


CASES: list[Case] = []


def bad(cid: str, name: str, content: object, words: tuple[str, ...], *extra: str) -> None:
    CASES.append(Case(cid, ["certify", "{d}/" + name, "--out", "{d}/out", *FAST, *extra], words, {name: content}))


def good(cid: str, name: str, content: object, words: tuple[str, ...], *extra: str) -> None:
    CASES.append(Case(cid, ["certify", "{d}/" + name, "--out", "{d}/out", *FAST, *extra], words, {name: content}, code=0))


# -- encodings, line ends, spreadsheet habits -----------------------------------------------
good("bom-csv", "t.csv", "\ufeff" + GOOD_CSV, ("120 judgments", "0 missing"))
good("crlf-csv", "t.csv", GOOD_CSV.replace("\n", "\r\n"), ("120 judgments",))
good("cr-only-csv", "t.csv", GOOD_CSV.replace("\n", "\r"), ("120 judgments", "0 missing"))
good("bom-jsonl", "t.jsonl", "\ufeff" + GOOD_JSONL, ("120 judgments",))
good("bom-json-array", "t.json", "\ufeff" + GOOD.to_json(orient="records"), ("120 judgments",))
good("quoted-header", "t.csv", '"judge","model","item_id","variant","rerun","game","score"\n' + GOOD_CSV.split("\n", 1)[1],
     ("120 judgments",))
good("no-final-newline", "t.csv", GOOD_CSV.rstrip("\n"), ("120 judgments",))
good("extra-columns", "t.csv", GOOD.assign(note="x", extra=1).to_csv(index=False), ("120 judgments",))
good("padded-scores", "t.csv", swaprows([" 0.1 ", " 0.5", "0.9 "]), ("6 judgments",))
bad("utf16le-nobom-csv", "t.csv", GOOD_CSV.encode("utf-16-le"), ("t.csv:1", "is binary", "NUL byte"))
bad("utf16-jsonl", "t.jsonl", GOOD_JSONL.encode("utf-16"), ("t.jsonl:1", "is binary"))
bad("utf16-alpaca", "annotations.json", AE.encode("utf-16"), ("annotations.json:1", "is binary"))
bad("latin1-jsonl", "t.jsonl", '{"model": "mod\u00e8le", "item_id": "q", "score": 0.5}\n'.encode("latin-1"),
    ("t.jsonl:1", "not UTF-8", "0xe8", "save it as UTF-8"))
bad("cp1252-quote-csv", "t.csv", (H + "j,m\u2019s,q1,original,0,1,0.5\n").encode("cp1252"), ("t.csv:2", "not UTF-8", "0x92"))
bad("nul-in-middle-csv", "t.csv", GOOD_CSV[:500] + "\x00" + GOOD_CSV[500:], ("t.csv:18", "is binary"))
bad("cr-in-header", "t.csv", "judge,model\r,item_id,score\nj,m,q,0.5\n", ("t.csv:1", "carriage return"))
bad("trailing-space-header", "t.csv", GOOD_CSV.replace("score\n", "score \n", 1), ("t.csv:1", "required column 'score'",
                                                                                 "'score '", "--columns"))
bad("capitalised-header", "t.csv", GOOD_CSV.replace("score\n", "Score\n", 1), ("t.csv:1", "required column 'score'", "'Score'"))
bad("excel-sep-line", "t.csv", "sep=,\n" + GOOD_CSV, ("t.csv:2", "7 fields but the header has 2"))
bad("excel-formula", "t.csv", GOOD_CSV.replace(",0.", ",=0.", 1), ("t.csv:2", "not a finite number", "'=0.623'", "--skip-bad"))
bad("decimal-comma", "t.csv", H + "".join(f'j,m,q{i},original,0,1,"0,{i}"\n' for i in range(1, 9)),
    ("t.csv:2", "not a finite number", "'0,1'"))
bad("thousands-separator", "t.csv", H + "".join(f'j,m,q{i},original,0,1,"1,00{i}"\n' for i in range(1, 9)),
    ("t.csv:2", "'1,001'"))
bad("percent-scores", "t.csv", H + "".join(f"j,m,q{i},original,0,1,{10 * i}%\n" for i in range(1, 9)), ("t.csv:2", "'10%'"))
bad("one-percent-score", "t.csv", swaprows([0.1, 0.2, "50%", 0.7, 0.9]), ("t.csv:6", "'50%'", "not a finite number"))
bad("hex-score", "t.csv", swaprows([0.1, "0x1", 0.5, 0.9]), ("t.csv:4", "'0x1'"))
bad("dash-score", "t.csv", swaprows([0.1, "-", 0.5, 0.9]), ("t.csv:4", "(got '-')"))
bad("neg-inf-score", "t.csv", swaprows([0.1, "-inf", 0.5, 0.9]), ("t.csv:4", "not a finite number"))
bad("infinity-word", "t.csv", swaprows([0.1, "Infinity", 0.5, 0.9]), ("t.csv:4", "not a finite number"))
bad("one-true-among-numbers", "t.csv", swaprows([0.1, "True", 0.5, 0.9]), ("t.csv:4", "'True'"))
bad("text-among-numbers", "t.csv", swaprows([0.1, 0.5, "good", 0.9]), ("t.csv:6", "'good'"))

# -- scores: scale edges, stray values, huge and tiny numbers ---------------------------------
good("nan-text-is-missing", "t.csv", swaprows([0.1, "NaN", 0.5, 0.9, 0.3]), ("10 judgments", "2 missing"))
good("na-text-is-missing", "t.csv", swaprows([0.1, "NA", 0.5, 0.9, 0.3]), ("10 judgments", "2 missing"))
good("underflow-score", "t.csv", swaprows([0.1, "1e-400", 0.5, 0.9, 0.3]), ("0 missing", "[0, 1]"))
good("scale-edges-given", "t.csv", swaprows([1, 10, 5, 10, 1]), ("score scale [1, 10] mapped to [0, 1] (given)",),
     "--scale", "1,10")
good("scale-with-spaces", "t.csv", swaprows([1, 10, 5]), ("score scale [1, 10]",), "--scale", " 1 , 10 ")
good("1to10-full", "t.csv", swaprows(list(range(1, 11))), ("score scale [1, 10] mapped to [0, 1] (inferred",))
good("1to10-edges-only", "t.csv", swaprows([1, 10, 1, 10, 10, 1]), ("score scale [1, 10]",))
good("0to100", "t.csv", swaprows([0, 25, 50, 75, 100, 33, 12]), ("score scale [0, 100]",))
good("binary-0-1", "t.csv", swaprows([0, 1, 1, 0, 1]), ("score scale [0, 1]",))
good("all-zero", "t.csv", swaprows([0] * 5), ("score scale [0, 1]",))
# a judge that always said 10 could be on [1, 10] (10 = 1), [0, 10] (1) or [0, 100] (0.1): asked, never guessed
bad("all-ten", "t.csv", swaprows([10] * 4), ("Cannot infer the score scale", "--scale LO,HI"))
bad("max-float", "t.csv", swaprows([0.1, "1.7e308", 0.5, 0.9]), ("Cannot infer the score scale", "1.7e+308", "--scale LO,HI"))
bad("just-above-one", "t.csv", swaprows([0.1, 1.0000001, 0.5, 0.9, 0.3]), ("run from 0.1 to 1.0000001", "--scale LO,HI"))
bad("symmetric-scale", "t.csv", swaprows([-1, -0.5, 0, 0.5, 1, 0.2]), ("run from -1 to 1", "--scale LO,HI"))
bad("all-negative", "t.csv", swaprows([-3, -2, -5, -4, -1]), ("run from -5 to -1",))
# twenty judgments on a 1–10 scale and one 0: [0, 10] would re-read the other nineteen, [1, 10] would call the 0 bad
bad("1to10-with-one-0", "t.csv", H + "".join(f"j,m,q{i},original,0,{g},{s}\n" for i, (g, s) in
                                           enumerate([(1, 0)] + [(1 + k % 2, 1 + k % 10) for k in range(19)])),
    ("only because of 1 score(s) below 1 (of 20)", "--scale 0,10 keeps them", "--scale 1,10 reports them as bad rows"))
bad("1to10-with-11", "t.csv", swaprows([1, 3, 5, 7, 9, 10, 11, 4, 6, 8]), ("run from 1 to 11", "--scale LO,HI"))
bad("1to10-with-10.5", "t.csv", swaprows([1, 3, 5, 7, 9, 10, 10.5, 4, 6, 8]), ("run from 1 to 10.5",))
bad("1to5-with-0", "t.csv", swaprows([1, 2, 3, 4, 5, 0, 2, 3]), ("run from 0 to 5", "could be [0, 10] or [0, 100]"))
bad("0to100-with-101", "t.csv", swaprows([0, 25, 50, 75, 100, 101, 33]), ("run from 0 to 101",))
bad("preferences-with-0", "t.csv", swaprows([1, 1.5, 2, 1.2, 0, 1.8]), ("run from 0 to 2",))
bad("preferences-1-2", "t.csv", swaprows([1, 1.5, 2, 1.2, 1.8]), ("run from 1 to 2", "could be [1, 5]"))
bad("all-one", "t.csv", swaprows([1] * 4), ("every score equals 1", "--scale LO,HI"))
bad("one-item-one-score", "t.csv", swaprows([0.3]), ("every score equals 0.3",))
bad("one-row", "t.csv", H + "j,m,q1,original,0,1,0.3\n", ("every score equals 0.3",))
bad("below-given-scale", "t.csv", swaprows([0.1, 0.5, 0.9]), ("t.csv:2", "score 0.1 is outside the scale [0.2, 0.8]"),
    "--scale", "0.2,0.8")
bad("jsonl-400-digit-int", "t.jsonl", jsonl([0.2, 10**400, 0.7, 0.5]),
    ("t.jsonl:3", "not a finite number", "(401 characters)"))
bad("jsonl-400-digit-rerun", "t.jsonl", "".join(json.dumps({"model": "m", "item_id": f"q{i}", "score": 0.5,
                                                            "rerun": 10**400 if i == 2 else 0}) + "\n" for i in range(4)),
    ("t.jsonl:3", "rerun must be a non-negative int"))
bad("jsonl-bool-scores", "t.jsonl", jsonl([True, False, True, 0.5]), ("t.jsonl:1", "is a boolean (true/false), not a score",
                                                                      "(got True)", "numbers (e.g. 1 and 0)"))
bad("jsonl-one-bool-among-numbers", "t.jsonl", jsonl([0.2, 0.4, False, 0.5]), ("t.jsonl:5", "(got False)"))
good("jsonl-empty-string-is-missing", "t.jsonl", jsonl([0.2, "", 0.7, 0.5]), ("8 judgments", "2 missing"))
good("jsonl-null-is-missing", "t.jsonl", jsonl([0.2, None, 0.7, 0.5]), ("2 missing",))
good("jsonl-int-ids", "t.jsonl", jsonl([0.1, 0.2, 0.3, 0.4], ids=lambda i: i), ("4 items",))
good("jsonl-float-ids", "t.jsonl", jsonl([0.1, 0.2, 0.3, 0.4], ids=lambda i: i + 0.5), ("4 items",))
bad("all-missing-jsonl", "t.jsonl", "".join(json.dumps({"model": "m", "item_id": f"q{i}", "score": None}) + "\n"
                                            for i in range(5)), ("no finite score", "--scale LO,HI"))
bad("only-neighbour-judgments", "t.csv", H + "".join(f"j,m,q{i},original,0,2,0.{i}\n" for i in range(1, 7)),
    ("no non-missing original score for judge 'j'", "give the original judgments too"))
bad("game-0-and-2", "t.csv", H + "".join(f"j,m,q{i},original,0,{g},0.{i}\n" for i in range(1, 7) for g in (0, 2)),
    ("t.csv:3", "swap neighbour", "no original judgment", "--skip-bad"))

# -- options -------------------------------------------------------------------------------
for cid, extra, words in [
    ("scale-infinite-width", ["--scale", "-1e308,1e308"], ("'--scale' option of certify", "'-1e308,1e308'")),
    ("scale-brackets", ["--scale", "[1,10]"], ("'--scale' option of certify", "'[1,10]'")),
    ("scale-dash", ["--scale", "1-10"], ("'--scale' option", "'1-10'")),
    ("columns-twice", ["--columns", "score=score,score=game"], ("'--columns' option of certify", "maps 'score' twice")),
    ("columns-unknown-name", ["--columns", "colour=model"], ("'--columns' option", "'colour=model'")),
    ("columns-no-equals", ["--columns", "score"], ("'--columns' option", "NAME=COLUMN")),
    ("columns-empty-column", ["--columns", "score="], ("'--columns' option", "'score='")),
    ("columns-absent-column", ["--columns", "score=rating"], ("t.csv:1", "required column 'rating' (for 'score')")),
    ("columns-two-names-one-column", ["--columns", "item_id=model,judge=model"], ("t.csv:4", "duplicated judgment")),
    ("tau-huge", ["--tau", "1e300"], ("'--tau' option of certify", "(0, 1e+06]")),
    ("bootstrap-huge", ["--bootstrap-rounds", str(10**12)], ("'--bootstrap-rounds' option of certify", "[1, 100000]")),
    ("center-fixed-above", ["--center", "fixed:2"], ("'--center' option", "[0, 1]", "'fixed:2'")),
    ("center-fixed-nan", ["--center", "fixed:nan"], ("'--center' option", "'fixed:nan'")),
    ("center-ema-above", ["--center", "ema:2"], ("'--center' option", "'ema:2'")),
    ("neighbors-variant-empty", ["--generators", "variant:"], ("'--generators' option", "'variant:'")),
    ("neighbors-absent-rerun", ["--generators", "swap, rerun"], ("'--generators' option", "'rerun'", "no rerun > 0")),
    ("mt-bench-ties", ["--mt-bench-ties", "zero"], ("'--mt-bench-ties' option of certify", "'zero'")),
    ("beta-zero", ["--beta", "0"], ("'--beta' option of certify", "(0, 1)")),
    ("holdout-above", ["--holdout", "0.95"], ("'--holdout' option", "[0, 0.9]")),
    ("combine-capitalised", ["--combine", "RMS"], ("'--combine' option", "'max', 'rms'")),
    ("method-capitalised", ["--method", "Tight"], ("'--method' option", "'tight', 'paper'")),
    ("score-map-on-table", ["--score-map", "C=1,I=0"], ("'--score-map' option of certify", "inspect_ai logs only",
                                                        "read as long tables")),
]:
    bad(f"option-{cid}", "t.csv", GOOD_CSV, words, *extra)
for cid, extra in [("tau-comma", ["--tau", "0,5"]), ("delta-percent", ["--delta", "1%"]), ("seed-float", ["--seed", "1.5"])]:
    CASES.append(Case(f"option-{cid}", ["certify", "{d}/t.csv", "--out", "{d}/out", *extra], (extra[0],),
                      {"t.csv": GOOD_CSV}, usage=True))
bad("tau-tiny", "t.csv", GOOD_CSV, ("cannot be certified", "raise tau or delta"), "--tau", "1e-300")
good("holdout-zero", "t.csv", GOOD_CSV, ("Outputs written",), "--holdout", "0")

# -- names: unicode, quotes, newlines, path separators, markup --------------------------------
ODD_NAMES = ["模型-甲", "🦙 llama", 'a,"b"', "line1\nline2", "../../etc/passwd", "C:\\models\\x", "m" * 300,
             "<script>x</script>", "007", "\u202egnp.exe"]
# one table, every odd name a model: all read, none merged, none lost (12 models; 2 × 30 items each)
good("model-odd-names", "t.csv", pd.concat([GOOD[GOOD["model"] == "mA"].assign(model=m) for m in ODD_NAMES] + [GOOD]).to_csv(index=False),
     ("720 judgments", "12 model(s)", "30 items", "0 missing"))
good("model-rich-markup", "t.csv", named("[bold red]x[/]").to_csv(index=False), ("[bold red]x[/]",))
good("ids-with-comma-quote-newline", "t.csv", named("mA", item='q,"1"\n').to_csv(index=False), ("30 items",))
good("nul-escape-in-jsonl-name", "t.jsonl", named("a\u0000b").to_json(orient="records", lines=True), ("120 judgments",))

# -- files and folders -----------------------------------------------------------------------
CASES += [
    Case("folder-named-like-a-table", ["certify", "{d}/t.csv", "--out", "{d}/out"],
         ("t.csv: a folder is read as", "holds tables (a.csv)", "name the table files themselves"), {"t.csv/a.csv": GOOD_CSV}),
    Case("folder-of-tables", ["certify", "{d}/in", "--out", "{d}/out"], ("in: a folder is read as", "t.csv"),
         {"in/t.csv": GOOD_CSV, "in/notes.txt": "hello"}),
    Case("folder-of-parquet", ["certify", "{d}/in", "--out", "{d}/out"], ("holds tables (t.parquet)",),
         {"in/t.parquet": lambda p: GOOD.to_parquet(p, index=False)}),
    Case("folder-hidden-table-only", ["certify", "{d}/in", "--out", "{d}/out"], ("in:", "holds no .jsonl"),
         {"in/.t.csv": GOOD_CSV}),
    Case("dangling-symlink", ["certify", "{d}/link.csv", "--out", "{d}/out"], ("'INPUT' argument of certify", "does not exist"),
         {"link.csv": lambda p: p.symlink_to(p.parent / "gone.csv")}),
    Case("symlink-loop", ["certify", "{d}/a.csv", "--out", "{d}/out"], ("'INPUT' argument of certify", "a.csv"),
         {"a.csv": lambda p: p.symlink_to(p.parent / "b.csv"), "b.csv": lambda p: p.symlink_to(p.parent / "a.csv")}),
    Case("dev-null", ["certify", "/dev/null", "--out", "{d}/out"], ("/dev/null", "is a device, not a regular file")),
    Case("out-is-the-input", ["certify", "{d}/t.csv", "--out", "{d}/t.csv"], ("'--out' option of certify", "existing file"),
         {"t.csv": GOOD_CSV}),
    Case("out-under-dev-null", ["certify", "{d}/t.csv", "--out", "/dev/null/x"], ("'--out' option", "'/dev/null' is a file"),
         {"t.csv": GOOD_CSV}),
    Case("symlink-to-table", ["certify", "{d}/link.csv", "--out", "{d}/out", *FAST], ("120 judgments",),
         {"real.csv": GOOD_CSV, "link.csv": lambda p: p.symlink_to(p.parent / "real.csv")}, code=0),
]
if Path("/proc").is_dir() and not os.access("/proc", os.W_OK):
    CASES.append(Case("out-on-read-only-fs", ["certify", "{d}/t.csv", "--out", "/proc/biasbound-out"],
                      ("'--out' option of certify", "/proc/biasbound-out", "no folder can be written"), {"t.csv": GOOD_CSV}))

# -- AlpacaEval annotations -------------------------------------------------------------------
# record 3 starts on line 234 of the indent-2 dump
for cid, mod, words in [
    ("missing-preference", ae_set(3, "preference", KeyError), ("annotations.json:234", "lacks 'preference'", "--skip-bad")),
    ("missing-generator_2", ae_set(3, "generator_2", KeyError), ("annotations.json:234", "lacks 'generator_2'")),
    ("null-generator_2", ae_set(3, "generator_2", None), ("annotations.json:234", "'generator_2' must be non-empty")),
    ("nested-generator_2", ae_set(3, "generator_2", {"name": "x"}), ("annotations.json:234", "non-empty strings")),
    ("missing-instruction", ae_set(3, "instruction", KeyError), ("annotations.json:234", "lacks 'instruction'")),
    ("preference-3", ae_set(3, "preference", 3), ("annotations.json:234", "preference 3 is not an AlpacaEval preference")),
    ("preference-negative", ae_set(3, "preference", -1), ("annotations.json:234", "preference -1")),
    ("preference-string", ae_set(3, "preference", "2"), ("annotations.json:234", "preference '2'")),
    ("preference-letter", ae_set(3, "preference", "m"), ("annotations.json:234", "preference 'm'")),
    ("preference-half", ae_set(3, "preference", 0.5), ("annotations.json:234", "preference 0.5")),
    ("preference-bool", ae_set(3, "preference", True), ("annotations.json:234", "preference True")),
    ("duplicate-record", lambda r: r.append(copy.deepcopy(r[0])), ("annotations.json:", "duplicated judgment", "also at",
                                                                    "annotations.json:2")),
]:
    bad(f"alpaca-{cid}", "annotations.json", ae(mod), words)
for cid, body, words in [
    ("not-a-list", json.dumps({"annotations": AE_REC}), ("annotations.json:1", "one JSON array of records")),
    ("empty-list", "[]", ("annotations.json", "holds no judgment rows")),
    ("list-of-strings", json.dumps(["a", "b"]), ("annotations.json:1", "must be a JSON object")),
    ("null-element", json.dumps(AE_REC[:5] + [None] + AE_REC[5:], indent=2).replace("\n  null", "\n  null"),
     ("a record must be a JSON object", "--skip-bad")),
    ("truncated", AE[: len(AE) // 2], ("annotations.json:634", "not valid JSON")),
    ("infinite-preference", AE.replace('"preference": ' + json.dumps(AE_REC[2]["preference"]), '"preference": Infinity', 1),
     ("preference inf",)),
]:
    bad(f"alpaca-{cid}", "annotations.json", body, words)
bad("alpaca-scale-option", "annotations.json", AE, ("'--scale' option of certify", "read as AlpacaEval annotations", "drop it"),
    "--scale", "0,10")
bad("alpaca-columns-option", "annotations.json", AE, ("'--columns' option of certify", "long tables and battle tables only"),
    "--columns", "item_id=instruction")
bad("alpaca-swap", "annotations.json", AE, ("'--generators' option of certify", "'swap'", "no game-2"), "--generators", "swap")
bad("alpaca-as-jsonl", "annotations.jsonl", "".join(json.dumps(r) + "\n" for r in AE_REC),
    ("annotations.jsonl", "required column 'item_id'", "--columns"))
bad("alpaca-no-neighbours", "annotations.json.gz", gzip.compress(AE.encode()),
    ("'--generators auto' option of certify", "found no neighbours"))

# -- MT-Bench / FastChat judgments ------------------------------------------------------------
for cid, lines, i, mod, words in [
    ("pair-missing-g2", MTP, 4, pop("g2_winner"), ("gpt-4_pair.jsonl:5", "'g2_winner' must be one of", "--skip-bad")),
    ("pair-missing-g1", MTP, 4, pop("g1_winner"), ("gpt-4_pair.jsonl:5", "neither a FastChat single judgment")),
    ("pair-unknown-winner", MTP, 4, put("g1_winner", "model_3"), ("gpt-4_pair.jsonl:5", "got 'model_3'")),
    ("pair-winner-letter", MTP, 4, put("g2_winner", "A"), ("gpt-4_pair.jsonl:5", "got 'A'")),
    ("pair-winner-null", MTP, 4, put("g2_winner", None), ("gpt-4_pair.jsonl:5", "got None")),
    ("pair-winner-int", MTP, 4, put("g2_winner", 1), ("gpt-4_pair.jsonl:5", "got 1")),
    ("single-score-11", MTS, 2, put("score", 11), ("gpt-4_single.jsonl:3", "'score' 11 is outside the 0-10 scale", "--skip-bad")),
    # a 0 is kept (FastChat keeps it: the judge is then read on 0-10); a negative rating other than -1 is not
    ("single-score-negative", MTS, 2, put("score", -2), ("gpt-4_single.jsonl:3", "'score' -2 is outside")),
    ("single-score-string", MTS, 2, put("score", "8"), ("gpt-4_single.jsonl:3", "'score' must be a number", "got '8'")),
    ("single-score-null", MTS, 2, put("score", None), ("gpt-4_single.jsonl:3", "got None")),
    ("single-score-nan", MTS, 2, put("score", float("nan")), ("gpt-4_single.jsonl:3", "got nan")),
    ("single-missing-score", MTS, 2, pop("score"), ("gpt-4_single.jsonl:3", "neither a FastChat single judgment")),
    ("single-turn-0", MTS, 2, put("turn", 0), ("gpt-4_single.jsonl:3", "'turn' must be a positive integer, got 0")),
    ("single-turn-string", MTS, 2, put("turn", "2"), ("gpt-4_single.jsonl:3", "got '2'")),
    ("single-no-turn", MTS, 2, pop("turn"), ("gpt-4_single.jsonl:3", "neither")),
    ("single-no-question", MTS, 2, pop("question_id"), ("gpt-4_single.jsonl:3", "'question_id' must be")),
    ("single-no-model", MTS, 2, pop("model"), ("gpt-4_single.jsonl:3", "neither")),
    ("single-judge-string", MTS, 2, put("judge", "gpt-4"), ("gpt-4_single.jsonl:3", "neither")),
    ("single-judge-short", MTS, 2, put("judge", ["gpt-4"]), ("gpt-4_single.jsonl:3",
                                                             "'judge' must be a list [judge model, prompt name]")),
]:
    bad(f"mt-{cid}", "gpt-4_pair.jsonl" if lines is MTP else "gpt-4_single.jsonl", mt(lines, i, mod), words)
bad("mt-single-bad-json", "gpt-4_single.jsonl", "\n".join(MTS[:3] + ["{oops"] + MTS[3:]) + "\n",
    ("gpt-4_single.jsonl:4", "not valid JSON"))
bad("mt-single-truncated", "gpt-4_single.jsonl", "\n".join(MTS)[:-40], ("gpt-4_single.jsonl:24", "not valid JSON"))
bad("mt-single-crlf-no-neighbours", "gpt-4_single.jsonl", "\r\n".join(MTS) + "\r\n", ("found no neighbours",))
bad("mt-single-bom-no-neighbours", "gpt-4_single.jsonl", "\ufeff" + "\n".join(MTS) + "\n", ("found no neighbours",))
bad("mt-columns-option", "gpt-4_pair.jsonl", "\n".join(MTP) + "\n", ("'--columns' option", "read as MT-Bench judgments"),
    "--columns", "score=g1_winner")
good("mt-pair-ties-half", "gpt-4_pair.jsonl", "\n".join(MTP) + "\n", ("tie -> 0.5", "3 × pairwise verdict 'error'"),
     "--mt-bench-ties", "half")
good("mt-pair-tie-note-speaks-cli", "gpt-4_pair.jsonl", "\n".join(MTP) + "\n", ("pass --mt-bench-ties half to score it 0.5",))

# -- inspect_ai logs (a real log written by inspect_ai's mock model, then edited) ---------------
INSPECT_EDITS: list[tuple[str, Callable[[dict], object], tuple[str, ...], int]] = [
    ("no-scores", lambda d: [s.pop("scores") for s in d["samples"]], ("log.json", "holds no scored sample"), 2),
    ("empty-scores", lambda d: [s.__setitem__("scores", {}) for s in d["samples"]], ("holds no scored sample",), 2),
    ("no-samples", lambda d: d.pop("samples"), ("holds no scored sample",), 2),
    ("zero-samples", lambda d: d.__setitem__("samples", []), ("holds no scored sample",), 2),
    ("letter-X", lambda d: _score(d, 2, "X"), ("sample 'q2' (epoch 1)", "score value 'X' is not a letter grade",
                                                "--score-map VALUE=SCORE"), 2),
    ("word-yes", lambda d: _score(d, 2, "yes"), ("score value 'yes'",), 2),
    ("lowercase-c", lambda d: _score(d, 2, "c"), ("score value 'c'",), 2),
    ("null-value", lambda d: _score(d, 2, None), ("log.json", "inspect_ai cannot read this log"), 2),
    ("id-null", lambda d: d["samples"][1].__setitem__("id", None), ("inspect_ai cannot read this log",), 2),
    ("duplicate-id", lambda d: d["samples"][1].__setitem__("id", d["samples"][0]["id"]),
     ("log.json:2", "duplicated judgment", "also at", "log.json:1"), 2),
    ("epoch-0", lambda d: d["samples"][1].__setitem__("epoch", 0), ("rerun neighbour", "no original judgment"), 2),
    ("errored-sample", lambda d: d["samples"][1].__setitem__("error", {"message": "boom", "traceback": "t",
                                                                      "traceback_ansi": "t"}), ("8 judgments",), 0),
    ("numeric-value", lambda d: _score(d, 2, 1), ("8 judgments",), 0),
]


def _score(d: dict, i: int, value: object) -> None:
    d["samples"][i]["scores"]["model_graded_qa"]["value"] = value


for cid, mod, words, code in INSPECT_EDITS:
    CASES.append(Case(f"inspect-{cid}", ["certify", "{d}/log.json", "--out", "{d}/out", *FAST], words,
                      {"log.json": ("inspect", mod)}, code=code))
for cid, name, body, words in [
    ("version-only", "log.json", '{"version": 2, "eval": 3}', ("log.json", "inspect_ai cannot read this log")),
    ("not-a-log", "log.json", json.dumps({"version": "1.0", "eval": {"task": "x"}, "samples": []}),
     ("inspect_ai cannot read this log",)),
    ("eval-garbage", "log.eval", b"PK\x03\x04garbage", ("log.eval", "inspect_ai cannot read this log")),
    ("eval-text", "log.eval", "hello", ("log.eval", "cannot read")),
    ("eval-empty", "log.eval", b"", ("log.eval", "cannot read")),
]:
    bad(f"inspect-{cid}", name, body, words)
for cid, extra, words in [
    ("score-map-text", ["--score-map", "C=yes"], ("'--score-map' option of certify", "'C=yes'")),
    ("score-map-above-one", ["--score-map", "C=2,P=0.5,I=0"], ("'--score-map' option", "'C=2'")),
    ("score-map-no-equals", ["--score-map", "C"], ("'--score-map' option", "VALUE=SCORE")),
    ("score-map-nan", ["--score-map", "C=nan,P=0.5,I=0"], ("'--score-map' option", "'C=nan'")),
    ("score-map-twice", ["--score-map", "C=1,C=0,P=0.5,I=0"], ("'--score-map' option", "'C=0'")),
    ("score-map-missing-letter", ["--score-map", "C=1,I=0"], ("sample 'q2' (epoch 1)", "'P' is not in --score-map")),
    ("columns-option", ["--columns", "score=value"], ("'--columns' option", "read as inspect_ai logs")),
]:
    CASES.append(Case(f"inspect-{cid}", ["certify", "{d}/log.json", "--out", "{d}/out", *FAST, *extra], words,
                      {"log.json": ("inspect", lambda d: None)}))

# -- calibrate and schematic -----------------------------------------------------------------
CAL = ["calibrate", "--tau", "0.5", "--delta", "0.01", "--dim", "30"]
for cid, extra, words in [
    ("sensitivity-nan", ["--sensitivity", "nan"], ("'--sensitivity' option of calibrate", "[0, 1e+06]", "Got nan")),
    ("sensitivity-inf", ["--sensitivity", "inf"], ("'--sensitivity' option of calibrate", "Got inf")),
    ("sensitivity-huge", ["--sensitivity", "1e300"], ("'--sensitivity' option of calibrate", "[0, 1e+06]")),
    ("sigma-nan", ["--sensitivity", "0.3", "--sigma", "nan"], ("'--sigma' option of calibrate",)),
    ("tau-split-above", ["--sensitivity", "0.3", "--tau-split", "2"], ("'--tau-split' option of calibrate", "(0, 1)")),
    ("frontier-huge", ["--sensitivity", "0.3", "--frontier", "100000000"], ("'--frontier' option of calibrate",
                                                                           "[0, 1000]")),
    ("range-negative", ["--score-range", "-1", "--hamming", "1"], ("'--score-range' option of calibrate",)),
    ("ucb-without-beta", ["--sensitivity-ucb", "0.3"], ("'--beta' option of calibrate", "--sensitivity-ucb")),
    ("nothing-known", [], ("--sensitivity, --sensitivity-ucb or --score-range",)),
]:
    CASES.append(Case(f"calibrate-{cid}", CAL + extra, words))
CASES.append(Case("calibrate-tau-huge", ["calibrate", "--tau", "1e300", "--delta", "0.01", "--dim", "30", "--sensitivity", "0.3"],
                  ("'--tau' option of calibrate", "(0, 1e+06]")))
_rng = np.random.default_rng(1)
SCH_ROWS = [tuple(round(float(x), 3) for x in _rng.uniform(size=3)) for _ in range(30)]
SCH_CSV = "a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in SCH_ROWS)
for cid, body, extra, words in [
    ("factor-absent", SCH_CSV, ["--factors", "a,c"], ("s.csv", "no row has the column 'c'")),
    ("two-rows", "a,b,y\n" + "".join(SCH_CSV.splitlines(True)[1:3]), [], ("'--factors' option of schematic", "at least 7")),
    ("folds-too-many", SCH_CSV, ["--mode", "cv", "--folds", "31"], ("31-fold", "Got 30 usable rows")),
    ("factor-twice", SCH_CSV, ["--factors", "a,a"], ("'--factors' option of schematic", "each column once", "'a'")),
    ("overall-among-factors", SCH_CSV, ["--overall", "a"], ("'--overall' option of schematic", "must not be one of the factors")),
]:
    CASES.append(Case(f"schematic-{cid}", ["schematic", "{d}/s.csv", "--factors", "a,b", "--overall", "y", *extra], words,
                      {"s.csv": body}))
for cid, body in [("crlf", SCH_CSV.replace("\n", "\r\n")), ("bom", "\ufeff" + SCH_CSV), ("cr-only", SCH_CSV.replace("\n", "\r"))]:
    CASES.append(Case(f"schematic-{cid}", ["schematic", "{d}/s.csv", "--factors", "a,b", "--overall", "y"], ("R²",),
                      {"s.csv": body}, code=0))


# -- LLMBar judgments (rows of the real file, one value edited) ---------------------------------
LLMBAR = gzip.decompress((SHARED_DATA / "llmbar/judgments.csv.gz").read_bytes()).decode("utf-8").splitlines()[:200]


def llmbar(col: str, value: str, row: int = 5) -> str:
    names = LLMBAR[0].split(",")
    rows = [r.split(",") for r in LLMBAR[1:]]
    rows[row][names.index(col)] = value
    return "\n".join([LLMBAR[0], *(",".join(r) for r in rows)]) + "\n"


for cid, col, value, _view, words in [
    ("winner-0", "winner_orig_order", "0", "output_1", ("j.csv:7", "winner_orig_order must be 1 or 2 (got '0')", "--skip-bad")),
    ("winner-letter", "winner_swapped_order", "A", "output_1", ("j.csv:7", "winner_swapped_order must be 1 or 2 (got 'A')")),
    ("winner-2.5", "winner_orig_order", "2.5", "output_1", ("j.csv:7", "(got '2.5')")),
    ("item-empty-subset", "subset", "", "output_1", ("j.csv:7",)),
    ("judge-empty", "judge", "", "output_1", ("j.csv:7", "empty judge")),
]:
    bad(f"llmbar-{cid}", "j.csv", llmbar(col, value), words)
bad("llmbar-columns-option", "j.csv", llmbar("item", "0", 0), ("'--columns' option", "read as LLMBar judgments"),
    "--columns", "score=winner_orig_order")
good("llmbar-gold-3-unused-by-output_1", "j.csv", llmbar("gold_label", "3"), ("398 judgments",))
good("llmbar-winner-empty-is-missing", "j.csv", llmbar("winner_orig_order", ""), ("398 judgments", "missing"))


# -- run configs (YAML) ------------------------------------------------------------------------
def run_yaml(judge_extra: str = "", **parts: str) -> str:
    body = {"data": "data: {table: t.csv}\n", "template": "template: single\n",
            "judge": f"judge: {{name: j, base_url: 'http://127.0.0.1:9/v1', model: m{judge_extra}}}\n",
            "neighbors": "neighbors: {generators: [rerun]}\n", "output": "output: out\n"}
    body.update(parts)
    return "".join(v for v in body.values() if v)


ANSWERS = "item_id,question,model,answer\nq1,What?,m,ans\n"
for cid, text, words in [
    ("tau-text", run_yaml(tau="tau: 'half'\n"), ("r.yaml", "'tau' must be a number in (0, 1e+06]", "'half'")),
    ("tau-list", run_yaml(tau="tau: [0.5]\n"), ("'tau' must be a number",)),
    ("tau-yes", run_yaml(tau="tau: yes\n"), ("'tau' must be a number", "Got True")),
    ("tau-nan", run_yaml(tau="tau: .nan\n"), ("'tau' must be a number", "Got nan")),
    ("tau-exponent-without-dot", run_yaml(tau="tau: 1e300\n"), ("'tau' must be a number in (0, 1e+06]", "Got 1e+300")),
    ("seed-float", run_yaml(tau="seed: 1.5\n"), ("'seed' must be an int in [0, inf)", "1.5")),
    ("calibration-list", run_yaml(tau="calibration: [1, 2]\n"), ("'calibration' must be a mapping",)),
    ("neighbors-text", run_yaml(neighbors="neighbors: rerun\n"), ("'neighbors' must be a mapping",)),
    ("neighbors-unknown", run_yaml(neighbors="neighbors: {generators: [flip]}\n"), ("'neighbors.generators'", "'flip'")),
    ("api-key-as-env-name", run_yaml(", api_key_env: sk-abc123"), ("'judge.api_key_env'", "<hidden>")),
    ("base-url-text", run_yaml().replace("http://127.0.0.1:9/v1", "not a url"), ("'judge.base_url'", "http(s) URL")),
    ("base-url-ftp", run_yaml().replace("http://127.0.0.1:9/v1", "ftp://x/v1"), ("'judge.base_url'", "'ftp://x/v1'")),
    ("judge-list", run_yaml(judge="judge: [1, 2]\n"), ("'judge' must be a mapping",)),
    ("judge-absent", run_yaml(judge=""), ("'judge.base_url'", "required")),
    ("table-absent", run_yaml(data="data: {table: nope.csv}\n"), ("'data.table' must be an existing file", "nope.csv")),
    ("table-is-folder", run_yaml(data="data: {table: .}\n"), ("'data.table' must be an existing file",)),
    ("template-unknown", run_yaml(template="template: triple\n"), ("'template' must be one of", "'triple'")),
    ("concurrency-0", run_yaml(", concurrency: 0"), ("'judge.concurrency' must be an int >= 1",)),
    ("concurrency-text", run_yaml(", concurrency: many"), ("'judge.concurrency'", "'many'")),
    ("rpm-negative", run_yaml(", rpm: -1"), ("'judge.rpm'",)),
    ("output-is-a-file", run_yaml(output="output: t.csv\n"), ("r.yaml", "'output' must be a folder", "not an existing file")),
    ("output-null", run_yaml(output="output: null\n"), ("'output' must be a non-empty string",)),
    ("n-items-0", run_yaml(data="data: {table: t.csv, n_items: 0}\n"), ("'data.n_items' must be an int >= 2",)),
    ("data-unknown-key", run_yaml(data="data: {table: t.csv, colour: red}\n"), ("'data.colour' is not allowed",)),
    ("anchor-holder-key", "defaults: &d 0.5\n" + run_yaml(tau="tau: *d\n"), ("'defaults' is not allowed",)),
    ("merge-key-read", "b: &b {tau: 0.5}\n<<: *b\n" + run_yaml(), ("'b' is not allowed",)),  # '<<' is no syntax error
]:
    CASES.append(Case(f"run-{cid}", ["run", "{d}/r.yaml", "--no-progress"], words, {"r.yaml": text, "t.csv": ANSWERS}))
CASES.append(Case("run-no-answers", ["run", "{d}/r.yaml", "--no-progress"], ("t.csv", "holds no answer rows"),
                  {"r.yaml": run_yaml(), "t.csv": "item_id,question,model,answer\n"}))

# -- audit: edited certificates and neighbour files that do not match --------------------------
AUDIT = ["audit", "{d}/cert.json", "--neighbor-file", "{d}/n.csv", "--no-progress"]
for cid, edit, words in [
    ("schema-99", lambda c: c.__setitem__("schema_version", 99), ("cert.json", "'schema_version' is 99", "audits version 3")),
    ("schema-text", lambda c: c.__setitem__("schema_version", "two"), ("'schema_version' is 'two'",)),
    ("view-bogus", lambda c: c.__setitem__("view", "sideways"), ("cert.json", "'view' must be 'model' or 'leaderboard'")),
    ("tau-nan", lambda c: c.__setitem__("tau", float("nan")), ("cert.json", "'tau' must be a number > 0", "got nan")),
    ("no-tau", lambda c: c.pop("tau"), ("cert.json", "not a biasbound certificate")),
    ("sigma-negative", lambda c: c.__setitem__("sigma", -1), ("'sigma' must be a number >= 0",)),
    ("dim-0", lambda c: c.__setitem__("dim", 0), ("'dim' must be an int >= 1",)),
    ("alpha-2", lambda c: c.__setitem__("alpha", 2), ("'alpha' must be a number in (0, 1]",)),
    ("delta-null", lambda c: c.__setitem__("delta", None), ("'delta' must be a number in (0, 1)", "got None")),
    ("array-of-numbers", lambda c: [1, 2], ("cert.json", "not a list of biasbound certificates")),
]:
    CASES.append(Case(f"audit-{cid}", AUDIT, words, {"cert.json": ("certificate", edit), "n.csv": GOOD_CSV}))
for cid, argv, files, words in [
    ("model-not-certified", AUDIT + ["--model", "nobody"], {"n.csv": GOOD_CSV},
     ("'--model' option of audit names 'nobody'", "certifies 'mA', 'mB'")),
    ("list-without-model", ["audit", "{d}/certs.json", "--neighbor-file", "{d}/n.csv"], {"n.csv": GOOD_CSV},
     ("certs.json", "it holds 2, give --model (and --judge)", "mA (judge j)")),
    ("list-other-model", ["audit", "{d}/certs.json", "--neighbor-file", "{d}/n.csv", "--model", "nobody"], {"n.csv": GOOD_CSV},
     ("--model 'nobody' matches 0", "mB (judge j)")),
    ("neighbours-on-another-scale", AUDIT, {"n.csv": swaprows(list(range(1, 11)))},
     ("n.csv:4", "score 2 is outside the scale [0, 1]")),
    ("neighbours-without-swap", AUDIT, {"n.csv": GOOD[GOOD["game"] == 1].to_csv(index=False)},
     ("'--neighbor-file' files of audit hold no neighbours", "(swap)")),
    ("neighbours-file-is-the-certificate", ["audit", "{d}/cert.json", "--neighbor-file", "{d}/cert.json"], {},
     ("cert.json:1", "one JSON array of records")),
    ("certificate-is-a-table", ["audit", "{d}/n.csv", "--neighbor-file", "{d}/n.csv"], {"n.csv": GOOD_CSV},
     ("n.csv:1", "not a JSON certificate")),
]:
    files = {"cert.json": ("certificate", lambda c: c), "certs.json": ("certificates", lambda c: c), **files}
    CASES.append(Case(f"audit-{cid}", argv, words, files))


# -- compare as pasted from a README, and judges that do not meet ------------------------------------------------
NOJUDGE = GOOD.drop(columns="judge")
for cid, argv, files, words, code in [
    # `--fail-if flip_rate>0.1` unquoted: the shell passes 'flip_rate' and writes stdout to a file named 0.1
    ("compare-fail-if-unquoted", ["compare", "{d}/a.csv", "{d}/a.csv", "--fail-if", "flip_rate"], {"a.csv": GOOD_CSV},
     ("'flip_rate' with no operator", "the shell read the unquoted '>'", "--fail-if 'flip_rate>0.1'"), 2),
    ("compare-fail-if-unquoted-generator", ["compare", "{d}/a.csv", "{d}/a.csv", "--fail-if", "flip_rate:swap"],
     {"a.csv": GOOD_CSV}, ("'flip_rate:swap' with no operator", "quote the condition"), 2),
    ("compare-no-judge-in-common", ["compare", "{d}/a.csv", "{d}/b.csv"],
     {"a.csv": GOOD_CSV, "b.csv": GOOD.assign(judge="k").to_csv(index=False)},
     ("OLD and NEW share no judge (OLD: j; NEW: k)", "--match j=k"), 2),
    ("compare-file-named-judges", ["compare", "{d}/2026-01.csv", "{d}/2026-02.csv"],
     {"2026-01.csv": NOJUDGE.to_csv(index=False), "2026-02.csv": NOJUDGE.to_csv(index=False)},
     ("share no judge", "OLD's judge '2026-01' is named after its file", "NEW's judge '2026-02'", "add one"), 2),
    ("compare-match-pairs-judges", ["compare", "{d}/a.csv", "{d}/b.csv", "--match", "j=k"],
     {"a.csv": GOOD_CSV, "b.csv": GOOD.assign(judge="k").to_csv(index=False)},
     ("Judge card — j: OLD → NEW", "every condition passes"), 0),
    ("compare-match-unknown-judge", ["compare", "{d}/a.csv", "{d}/b.csv", "--match", "j=nobody"],
     {"a.csv": GOOD_CSV, "b.csv": GOOD.assign(judge="k").to_csv(index=False)},
     ("'--match' option of compare", "one of NEW (k)", "'j=nobody'"), 2),
    ("compare-empty-old-folder", ["compare", "{d}/old", "{d}/a.csv"], {"a.csv": GOOD_CSV, "old": lambda p: p.mkdir()},
     ("'OLD' argument of compare names the folder", "which is empty", "certify output folder"), 2),
]:
    CASES.append(Case(cid, argv, words, files, code=code))


# -- declared assumptions and parameters checked against the data -------------------------------------------------
DET = H + "".join(f"j,m{m},q{i},original,0,{g},0.{(i + m) % 8 + 1}\n" for m in range(3) for i in range(10) for g in (1, 2))
bad("deterministic-judge-two-answers", "t.csv", DET + "j,m0,q0,original,1,2,0.9\n",
    ("declared deterministic (--deterministic-judge)", "1 question(s) hold two different answers",
     "model m0, item q0, original, game 2: 0.1 at", "t.csv:3 and 0.9 at", "t.csv:62", "certify without the declaration"),
    "--deterministic-judge")
good("deterministic-judge-same-answers", "t.csv", DET + "j,m0,q0,original,1,2,0.1\n", ("61 judgments",),
     "--deterministic-judge")
bad("scale-absurdly-wide", "t.csv", swaprows([1, 2, 3, 4, 5, 6, 7]), ("'--scale' option of certify gives [0, 1e+308]",
    "scores run from 1 to 7", "--scale 1,7"), "--scale", "0,1e308")
good("scale-wide-but-used", "t.csv", swaprows([1, 2, 3, 4, 5, 6, 7]), ("score scale [0, 100]",), "--scale", "0,100")


for cid, argv, words in [
    ("plan-alpha-and-within", ["plan", "--demo", "--alpha", "0.3", "--within", "0.1"],
     ("'--within' option of plan", "'--alpha' sets the target itself (0.3)", "give one of the two")),
]:
    CASES.append(Case(cid, argv, words))
# a grid beyond the items is said (the m planned stops at the items), never planned quietly
CASES.append(Case("plan-grid-beyond-the-items", ["plan", "--demo", "--grid", "10,1000000000"],
                  ("--grid asks for m = 1000000000, above the 500 neighbours per model", "planned up to m = 500"), code=0))



def _nfc_nfd() -> str:
    """mA named 'modèle' in NFC on half its items and in NFD (e + combining grave) on the other half."""
    import unicodedata

    df = GOOD.copy()
    a = df["model"] == "mA"
    half = df["item_id"].str[1:].astype(int) < 15
    df.loc[a & half, "model"] = unicodedata.normalize("NFC", "mod\u00e8le")
    df.loc[a & ~half, "model"] = unicodedata.normalize("NFD", "mod\u00e8le")
    return df.to_csv(index=False)


good("model-name-nfc-and-nfd", "t.csv", _nfc_nfd(), ("2 model(s)", "written in another Unicode form were normalised to NFC",
                                                    "1 judge, model or item name(s)"))


# models (and judges, items) named like a missing value are names: only an empty cell is empty
good("models-named-none-and-na", "t.csv", GOOD.assign(model=GOOD["model"].map({"mA": "None", "mB": "NA"}),
                                                       judge="null").to_csv(index=False), ("2 model(s)", "0 missing"))
bad("model-cell-empty", "t.csv", H + "j,,q1,original,0,1,0.5\n", ("t.csv:2", "empty model"))


# an expensive maximum is refused with its cost, before any of it is spent
CASES.append(Case("calibrate-frontier-10000", ["calibrate", "--sensitivity", "0.306", "--dim", "500", "--tau", "0.5",
                                               "--delta", "0.01", "--frontier", "10000"],
                  ("'--frontier' option of calibrate must be an int in [0, 1000]", "about 130 s", "Got 10000 instead")))


# -- battle tables as people export them --------------------------------------------------------------------------
def _battles() -> pd.DataFrame:
    """Three models against a baseline, ten questions, both orders; winner as a position."""
    rng = np.random.default_rng(5)
    rows = []
    for q in range(10):
        for m in ("m1", "m2", "m3"):
            for a, b in ((m, "base"), ("base", m)):
                rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b,
                             "winner": str(rng.choice(["model_a", "model_b", "tie"]))})
    return pd.DataFrame(rows)


BATTLES = _battles()
BATTLE_NAMES = BATTLES.assign(winner=np.where(BATTLES["winner"] == "model_a", BATTLES["model_a"].str.upper(),
                                              np.where(BATTLES["winner"] == "model_b", BATTLES["model_b"], "tie")))
BATTLE_CODES = BATTLES.assign(winner=BATTLES["winner"].map({"model_a": 1, "model_b": 2, "tie": 0}))


def _parquet(df: pd.DataFrame) -> Callable[[Path], None]:
    return lambda path: df.to_parquet(path)


good("battles-winner-names", "b.csv", BATTLE_NAMES.to_csv(index=False),
     ("battles: 60 judgments", "winner read as the winning model's name on", "case-insensitively"))
bad("battles-winner-numbers", "b.csv", BATTLE_CODES.to_csv(index=False),
    ("b.csv:2", "the winner column holds numbers (0, 1, 2)", "--winner-map 0=model_a,1=model_b,2=tie"))
good("battles-winner-numbers-mapped", "b.csv", BATTLE_CODES.to_csv(index=False), ("battles: 60 judgments", "0 missing",
     "winner read through the stated map 1=a, 2=b, 0=tie"), "--winner-map", "1=model_a,2=model_b,0=tie")
bad("battles-winner-map-malformed", "b.csv", BATTLE_CODES.to_csv(index=False),
    ("'--winner-map' option of certify", "Got '1=left'"), "--winner-map", "1=left")
bad("battles-winner-neither-side", "b.csv", BATTLES.assign(winner=["m2"] + BATTLES["winner"].tolist()[1:]).to_csv(index=False),
    ("b.csv:2", "winner m2 is neither side of this battle (model_a m1, model_b base)", "--skip-bad"))
bad("battles-winner-all-empty", "b.csv", BATTLES.assign(winner="").to_csv(index=False),
    ("b.csv:1", "the winner column is empty on every row",))
good("battles-turns-are-items", "b.csv", pd.concat([BATTLES.assign(turn=1), BATTLES.assign(turn=2)]).to_csv(index=False),
     ("battles: 120 judgments", "20 items", "column 'turn' is part of the item"))
good("battles-parquet", "b.parquet", _parquet(BATTLES), ("b.parquet — battles: 60 judgments",))
bad("battles-parquet-no-winner", "b.parquet", _parquet(BATTLES.rename(columns={"winner": "preferred"})),
    ("b.parquet:1", "this one has no winner", "--columns winner=COLUMN"))
good("battles-parquet-mapped", "b.parquet", _parquet(BATTLES.rename(columns={"winner": "preferred", "question_id": "prompt"})),
     ("battles: 60 judgments",), "--columns", "winner=preferred,question_id=prompt")
good("battles-no-judge-column-said", "b.csv", BATTLES.to_csv(index=False),
     ("the table has no judge: their judge is named after the file ('b')",))


good("table-without-judge-said", "2026-02.csv", GOOD.drop(columns="judge").to_csv(index=False),
     ("no judge column: its judge is named after the file ('2026-02')", "--columns judge=COLUMN"))


# ----------------------------------------------------------------------------------------- the test

@pytest.fixture(scope="module")
def inspect_log(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A real inspect_ai .json log (mock model, model-graded C/P/I, two epochs), its bulky transcripts removed."""
    from inspect_helpers import run_eval
    from inspect_helpers import graded_task as _graded_task

    path = run_eval(_graded_task("CIPCCPIC", epochs=2), [str(2 * i) for i in range(4)] * 2,
                    tmp_path_factory.mktemp("inspect"), log_format="json")
    log = json.loads(path.read_text(encoding="utf-8"))
    for s in log["samples"]:
        for k in ("events", "attachments", "events_data", "messages"):
            s.pop(k, None)
    return log


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The outputs of one certify run on the good pairwise table (certificate.json, certificates.json)."""
    d = tmp_path_factory.mktemp("certified")
    (d / "g.csv").write_text(GOOD_CSV, encoding="utf-8")
    assert main(["certify", str(d / "g.csv"), "--out", str(d / "out"), *FAST]) == 0
    return d / "out"


def _materialise(case: Case, d: Path, request: pytest.FixtureRequest) -> list[str]:
    for name, content in case.files.items():
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, tuple) and content[0] in ("certificate", "certificates"):
            src = request.getfixturevalue("certified") / f"{content[0]}.json"
            cert = json.loads(src.read_text(encoding="utf-8"))
            replaced = content[1](cert)  # edits in place, or returns a whole new body (a list)
            path.write_text(json.dumps(replaced if isinstance(replaced, list) else cert), encoding="utf-8")
        elif isinstance(content, tuple) and content[0] == "inspect":
            log = copy.deepcopy(request.getfixturevalue("inspect_log"))
            content[1](log)
            path.write_text(json.dumps(log), encoding="utf-8")
        elif callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(str(content), encoding="utf-8")
    return [a.replace("{d}", str(d)) for a in case.argv]


def test_the_corpus_is_large_and_has_unique_ids() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 190  # (model-odd-names alone feeds ten odd names)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_unusual_input(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest) -> None:
    argv = _materialise(case, tmp_path, request)
    try:
        code = main(argv)
    except BaseException as exc:  # noqa: BLE001 - anything escaping main() is a traceback for the user
        pytest.fail(f"{case.id}: {type(exc).__name__} escaped the command line: {exc}")
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    assert "Warning:" not in err, f"{case.id}: a Python warning reached the user: {err[-400:]}"
    assert code == case.code, f"{case.id}: exit {code}; stderr: {err[-600:]}; stdout: {out[-300:]}"
    text = " ".join(err.split()) if case.code == 2 else " ".join((out + err).split())
    for words in case.words:
        assert words in text, f"{case.id}: {words!r} not in {text[-1500:]!r}"
    if case.code == 2 and not case.usage:
        assert text.startswith("error: ") and text.count("error: ") == 1, text
        for python_only in ("skip_bad=True", "ties='half'", "columns={", "fmt=", "np.float64(", "np.int64(", "scale=(",
                            "' parameter of", "of load_table", "of from_frame", "of load_inputs", ".partial"):
            assert python_only not in text, f"{case.id}: {python_only!r} in {text!r}"


def test_noise_so_small_that_its_variance_underflows_is_no_noise() -> None:
    """2σ² underflows to 0 for σ = 1e-200: the exact exceedance and the Monte Carlo check are the σ = 0
    indicator ||Δ_eff|| > τ (known exactly), not a division by zero."""
    from biasbound.audit import audit, exceedance_probabilities

    sq = np.array([0.0, 0.04, 0.25])  # ||Δ_eff|| = 0, 0.2, 0.5 against τ = 0.3
    np.testing.assert_array_equal(exceedance_probabilities(sq, tau=0.3, sigma=1e-200, dim=5), [0.0, 0.0, 1.0])
    res = audit(tau=0.3, delta=0.01, sigma=1e-200, alpha=1.0, distances=[0.0, 0.2, 0.2, 0.1], dim=5, rng=0, n_mc=200)
    assert res.exact_probability == 0.0


def test_a_constant_leaderboard_has_no_rank_correlation_and_no_warning() -> None:
    import warnings

    from biasbound.leaderboard import retention

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's ConstantInputWarning would reach the terminal
        r = retention([0.4, 0.6, 0.5], [0.5, 0.5, 0.5], alpha=1e-9, sigma_model=0.0)
    assert np.isnan(r["spearman"]) and np.isnan(r["kendall_tau_b"])
    r = retention([0.4, 0.6, 0.5], [0.45, 0.55, 0.5], alpha=0.5, sigma_model=0.0)
    assert r["spearman"] == pytest.approx(1.0) and r["kendall_tau_b"] == pytest.approx(1.0)


def test_error_sentences_are_never_read_as_markup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad value that looks like rich markup is shown as typed."""
    (tmp_path / "t.csv").write_text(swaprows([0.1, "[bold]x[/bold]", 0.5]), encoding="utf-8")
    assert main(["certify", str(tmp_path / "t.csv"), "--out", str(tmp_path / "o")]) == 2
    assert "(got '[bold]x[/bold]')" in " ".join(capsys.readouterr().err.split())


def test_missing_counts_in_the_terminal_equal_a_count_from_the_raw_files(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The MT-Bench pairwise fixture: ties and errors (missing by default) counted from the raw lines."""
    path = SHARED_DATA / "mt_bench/phi-3/model_judgment/gpt-4_pair.jsonl"
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    missing = sum(r[k] in ("tie", "error") for r in recs for k in ("g1_winner", "g2_winner"))
    errors = sum(r[k] == "error" for r in recs for k in ("g1_winner", "g2_winner"))
    assert main(["certify", str(path), "--out", str(tmp_path / "o"), *FAST]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{2 * len(recs)} judgments" in out and f"{missing} missing" in out
    assert f"{errors} × pairwise verdict 'error': missing" in out


def test_a_fastchat_folder_reads_every_judgment_file_and_counts_missing_as_the_raw_files_do() -> None:
    """A copy named gpt-4_single-origin.jsonl is a judgment file too: nothing in the folder is skipped unseen."""
    from biasbound.data.mt_bench import load_mt_bench

    rows = missing = 0
    for f in sorted((SHARED_DATA / "mt_bench").rglob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if "score" in r:
                rows, missing = rows + 1, missing + (r["score"] == -1)
            else:
                rows += 2
                missing += sum(r[k] in ("tie", "error") for k in ("g1_winner", "g2_winner"))
    js = load_mt_bench(SHARED_DATA / "mt_bench")
    assert (len(js.frame), int(js.frame["score"].isna().sum())) == (rows, missing) == (108, 8)


def test_verify_with_other_judgments_does_not_end_with_every_certificate_verifying(certified: Path, tmp_path: Path,
                                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The certificates verify on their own; re-certified from other judgments they differ: the last line says both."""
    other = GOOD.copy()
    other["score"] = (1.0 - other["score"]).round(3)
    (tmp_path / "other.csv").write_text(other.to_csv(index=False), encoding="utf-8")
    capsys.readouterr()
    code = main(["verify", str(certified), "--judgments", str(tmp_path / "other.csv")])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert any(line.startswith("DIFFERS") for line in out)
    assert "certificates verify on their own, but " in out[-1], out[-1]
    assert "differ: these are not the judgments the outputs were certified from." in out[-1]
