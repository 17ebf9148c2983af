"""The entry point :func:`certify`: validate, certify each judge, build the leaderboards, write outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dataclasses
import inspect

import pandas as pd

from biasbound._exceptions import BiasboundError, InfeasibleCertificateError, InputError
from biasbound._integrity import judgments_digest, reading_options
from biasbound._validation import spawn_seeds as _spawn_seeds
from biasbound.data.coded import judge_groups
from biasbound.pipeline._coverage import CertificateExtras, prepare, score_scales
from biasbound.pipeline._judge import _certify_judge, _codes
from biasbound.pipeline._staging import check_out, staged_output
from biasbound.pipeline._leaderboard import _panel
from biasbound.pipeline._outputs import _write_core, _write_plots_and_report
from biasbound.pipeline._results import CertifyResult, JudgeCertification, jsonable
from biasbound.parameters import validate_params
from biasbound.pipeline._settings import (
    RANGE_GENERATOR,
    _as_frame,
    _Settings,
    _check_frame,
    check_settings,
    cross_check,
    holds_neighbors,
)

__all__ = ["certify"]

#: certify's arguments its settings check reads (check_settings's parameters, declared there once)
_CHECKED = tuple(inspect.signature(check_settings).parameters)
#: certify's arguments left out of the recorded call (scope.reproduce): the data, where and how to write, and the
#: arguments recorded in their own form below it
_NOT_REPRODUCED = ("judgments", "out", "progress", "sign_key", "schedule", "judge_prompt", "families", "human_labels",
                   "human_level")

#: certify's settings the anchored release shares with the judge's (tau and a fixed centre are mapped to its scale)
_ANCHORED_KEYS = ("tau", "delta", "neighbors", "method", "combine", "beta", "holdout", "seed", "center",
                  "bootstrap_rounds", "confidence", "n_mc", "hamming", "deterministic_judge")



def labels_record(human_labels: str | Path) -> dict[str, Any]:
    """How a certificate records ``human_labels``: a labels file by its content (name, SHA-256, size, never the path
    as typed: ``verify --judgments`` finds it among the files it is given), a column of the judgments by its name."""
    from biasbound.data._inputs import content_record

    path = Path(human_labels)
    if path.is_file():
        return content_record(path, path.name, "labels")
    return {"column": str(human_labels)}

@validate_params
def certify(
    judgments: Any,
    *,
    tau: float = 0.5,
    delta: float = 0.01,
    neighbors: str | Sequence[str] = ("swap",),
    method: str = "tight",
    combine: str = "max",
    alpha: float | None = None,
    beta: float | None = 0.05,
    holdout: float = 0.3,
    seed: int | None = 0,
    view: str = "model",
    center: str = "fixed:0.5",
    jitter_adjust: bool = False,
    bootstrap_rounds: int = 1000,
    out: str | Path | None = None,
    progress: bool = True,
    confidence: float = 0.99,
    n_mc: int = 20000,
    plots: bool = True,
    baseline: str | None = None,
    skip_bad: bool = False,
    hamming: int | str = 1,
    sampled: dict[str, dict[str, Any]] | None = None,
    sigma: float | None = None,
    range_bound: bool = False,
    deterministic_judge: bool = False,
    sign_key: str | Path | None = None,
    schedule: dict[str, Any] | None = None,
    human_labels: Any = None,
    judge_prompt: dict[str, Any] | None = None,
    human_level: float = 0.95,
    families: Mapping[str, str] | None = None,
) -> CertifyResult:
    """Certify every judge in a judgment set: (τ, δ)-average bias-bounded scores and their audit.

    Parameters
    ----------
    judgments : JudgmentSet or pandas.DataFrame
        Judgments in the contract schema (docs/DESIGN.md "Judgment tables").
    tau : float
        The A-BB tolerance τ (Def. 3.5), in (0, 1e+06].
    delta : float
        The failure probability δ (Def. 3.5), in [1e-12, 1).
    neighbors : str or sequence of str
        Observed generators: ``swap``, ``rerun``, ``variant:NAME`` (comma-separated string allowed).
    method : {"tight", "paper"}
        Calibration method of :func:`biasbound.calibrate`.
    combine : {"max", "rms"}
        Combination over generators (paper, "Combination Logic"); components floored at 1e-3.
    alpha : float, optional
        Shrinkage (Lipschitz constant) in (0, 1]; chosen by the calibrator when None.
    beta : float or None
        Confidence level of the sensitivity upper bound (β/K per generator); None uses the
        point estimate Δ* as the paper does.
    holdout : float
        Share in [0, 0.9] of each model's neighbours held out of calibration for the audit
        (and, for ``center="holdout"``, of each model's items used for the centre).
    seed : int or None
        Master seed; per-model mechanism seeds are spawned from it (SeedSequence) and recorded.
    view : {"model", "leaderboard"}
        ``model``: f(D) = a model's per-item scores, one certificate per model.
        ``leaderboard``: f(D) = the vector of model mean scores, one certificate per judge.
    center : str
        ``fixed:X`` (default ``fixed:0.5``), ``ema:X``, ``holdout`` or ``batch``.
    jitter_adjust : bool
        Report the jitter-free sensitivity of the other generators as a diagnostic (needs a
        ``rerun`` generator and another one); it is never used to calibrate: rerun is a
        generator of the certificate, which is about the released (jittery) scores.
    bootstrap_rounds : int
        Rounds of the item bootstrap for the leaderboard CIs (≥ 1000 recommended).
    out : path, optional
        Output folder; nothing is written when None.
    progress : bool
        Show a progress bar on stderr.
    confidence : float
        Confidence level of the audits.
    n_mc : int
        Monte Carlo draws of the pooled audit (per-model audits use at most 5000).
    plots : bool
        Write the plots and report.html (when ``out`` is given).
    skip_bad : bool
        Leave out (and count, in the coverage) neighbour rows whose item has no original
        judgment; when False such a row is an error naming its file and line. A model with
        no original judgment at all is never certified and is reported, whatever this says.
    hamming : int or "all"
        Neighbour size: ``k`` items perturbed at once (drawn uniformly without replacement), or
        ``"all"`` (every item of the batch: for swaps, the position bias of the whole leaderboard).
        ``method="paper"`` needs 1.
    sampled : dict, optional
        ``{generator: {"seed": int}}`` for generators whose neighbours are a uniform draw of items
        without replacement made by that recorded seed (``biasbound run``); their knowledge is a
        finite-population sample (confidence 1 − β, hold-out audit). Other generators use every
        observed neighbour; unobserved items count at the range bound.
    range_bound : bool
        When the judgments hold no neighbour of the requested generators (e.g. single-answer grades
        without reruns), certify on the score range alone: any change of one item's score (k items,
        or all, with ``hamming``) is a neighbour, known only through the almost-sure bound of the
        [0, 1] range (``AlmostSure``). Such a certificate holds for any judge on that range
        (``range_implied``) and says nothing about this judge in particular. Tight method only.
    sigma : float, optional
        Noise scale; ``0`` (deterministic) allowed by the tight route where the bound is exact;
        chosen on the frontier when None.
    deterministic_judge : bool
        Declare the judge deterministic: each recorded neighbour verdict is taken as the judge's only answer
        to that neighbour, so a census gives the exact probability (``FullPopulation``). Recorded in the
        certificate (``scope.deterministic_judge``) and stated in its sentence as an assumption; refused when
        two recorded answers to one neighbour (or a rerun and its original) disagree. Default False: every
        recorded neighbour verdict is one draw of a random judge and the certificate covers the judge's own
        randomness (``RandomJudge`` knowledge, confidence 1 − β; needs ``beta``).
    schedule : dict, optional
        How the neighbours were collected when that shapes the confidence: ``biasbound run``'s sequential
        schedule (looks declared in advance, β per look, stop rule, looks taken, calls spent). Recorded as
        ``scope.sequential`` of every certificate (so the digest covers it); not used in the arithmetic
        (``beta`` is already the per-look share). See docs/proofs/sequential.md.
    judge_prompt : dict, optional
        The judge's prompt and parser that made the judgments (``biasbound run``: preset name, templates, few-shot
        messages, parser and their ``sha256``; :meth:`biasbound.judge.custom.JudgePrompt.scope`). Recorded as
        ``scope.judge_prompt`` of every certificate (so the digest covers it) and in ``scope.reproduce``; not used
        in the arithmetic.
    families : mapping, optional
        ``{judge or model name: family}`` for the judge card's self-preference figure
        (:mod:`biasbound.self_preference`), for names that do not say their family; recorded in
        ``scope.reproduce``.
    baseline : str, optional
        The model pairwise verdicts compare against (Arena-Hard's baseline); marked in
        ``leaderboard.csv`` (``is_baseline``) and named in the report; its own win rate
        (``win_rate_pct``, ``arena_hard_score``) is 50 and Bradley-Terry 1000, as Arena-Hard pins it.
        The certified scores do not depend on it.
    human_labels : path, str, DataFrame or None
        Human labels (:mod:`biasbound.human`): a labels file, a table (``item_id``, ``label``, optional ``model`` and
        ``rater``; the judge's raw scale) or the name of a judgments column; None reads a ``human`` column when the
        judgments have one. Adds agreement to the judge card, human-anchored (PPI++) scores to the leaderboard and
        ``summary.json``, and the certificate of the anchored release (``anchored/``, ``human.json``).
    human_level : float
        Level of the agreement and anchored intervals (the rank sets hold simultaneously at it).
    sign_key : path, optional
        An Ed25519 private key (PEM, from ``biasbound keygen``): the outputs manifest is signed with it
        (needs ``out``). The key is never written into the outputs.

    Returns
    -------
    CertifyResult

    Raises
    ------
    InputError
        For a parameter outside its range or judgments that lack the requested neighbours.
    InfeasibleCertificateError
        When a judge cannot be certified; raised after the other judges' outputs are written
        (the partial :class:`CertifyResult` is attached as ``exc.partial_result``).

    Notes
    -----
    Implements Algorithm 1 of the paper with Lipschitz shrinkage (Prop. B.3) and the tight
    calibration of :func:`biasbound.calibrate`; see the module docstring for the decisions on shared
    calibration, order statistics, audits and jitter adjustment.
    """
    call = dict(locals())  # the arguments as given, in the signature's order (nothing else is bound yet)
    s = check_settings(**{k: call[k] for k in _CHECKED})
    master = s.seed
    from biasbound.parameters import validate

    human_level = validate("certify", human_level=human_level)["human_level"]
    out_path = check_out(out)
    private_key = _private_key(sign_key, out_path)
    families = _checked_prompt_and_families(judge_prompt, families)
    # the call that made the certificates (recorded in each judge's scope.reproduce: biasbound verify --judgments)
    reproduce = _reproduce(judgments, dict(
        {k: v for k, v in call.items() if k not in _NOT_REPRODUCED}, seed=master,
        neighbors=neighbors if isinstance(neighbors, str) else list(neighbors)), schedule, human_labels, human_level,
        judge_prompt=judge_prompt, families=families)
    if baseline is not None and not isinstance(baseline, str):
        raise InputError(f"The 'baseline' parameter of certify must be a model name (str) or None. Got {type(baseline).__name__} instead.")
    if schedule is not None and not isinstance(schedule, dict):
        raise TypeError(f"The 'schedule' parameter of certify must be a dict or None. Got {type(schedule).__name__} instead.")
    if not isinstance(skip_bad, bool):
        raise TypeError(f"The 'skip_bad' parameter of certify must be a bool. Got {type(skip_bad).__name__} instead.")
    frame, load_report, s, folded = _read(judgments, s, skip_bad, range_bound)
    in_attrs = dict(frame.attrs)  # a reader's notes (its tool's own headline numbers among them)
    usage = frame.attrs.get("usage")  # {judge: calls, tokens, cost} recorded by biasbound run (the judge card's cost)
    frame, ids = _check_frame(frame, s.generators, reruns_elsewhere=folded is not None and folded.reruns)
    frame, coverage, skipped_rows = prepare(frame, s.generators, skip_bad=skip_bad, ids=ids, notes=folded is None)
    if folded is not None:  # the blocks' per-model records and left-out rows are the table's
        coverage, skipped_rows = folded.coverage(coverage), folded.skipped
    scales = score_scales(frame, load_report)
    from biasbound.human._certify import attach_human, load_labels, write_anchored

    labels = load_labels(human_labels, frame, scales)  # bad labels fail before any judge is certified
    _no_labels_in_blocks(labels, folded)

    judge_names = sorted(set(str(j) for j in pd.unique(frame["judge"])) | set(coverage))
    judge_seeds = dict(zip(judge_names, _spawn_seeds(master, len(judge_names))))
    groups = judge_groups(frame, judge_names)  # one judge: the table itself
    done: dict[str, JudgeCertification] = {}
    judge_codes: dict[str, Any] = {}  # each judge's model and item codes, made once for its certificate and its card
    failures: dict[str, str] = {}
    failure_kinds: dict[str, str] = {}
    errors: list[BiasboundError] = []

    from rich.progress import Progress

    from biasbound._progress import progress_console

    with Progress(console=progress_console(), transient=True, disable=not progress) as bar:
        task = bar.add_task("certifying", total=len(judge_names) + (2 if out_path is not None else 0))
        for name in judge_names:
            bar.update(task, description=f"certifying {name}")
            try:
                if name not in groups:
                    raise InputError(f"No model of judge {name!r} has an original judgment (variant 'original', "
                                     "rerun 0) to certify.")
                codes = _codes(groups[name], ids)  # model and item codes: one factorisation for the digest and the rest
                extras = _extras(groups[name], ids, codes, coverage.get(name, {}), scales.get(name, []), reproduce,
                                 schedule, judge_prompt, digest=None if folded is None else folded.digest(name))
                judge_codes[name] = codes
                jc = _certify_judge(groups[name], name, s, judge_seeds[name], extras, codes,
                                    folded=None if folded is None else folded.entries(name, codes))
                jc.notes = list(jc.notes) + [n for n in extras.notes if n not in jc.notes]
                done[name] = jc
            except (InfeasibleCertificateError, InputError) as exc:
                failures[name] = str(exc)
                failure_kinds[name] = "infeasible" if isinstance(exc, InfeasibleCertificateError) else "bad input"
                errors.append(exc)
            bar.advance(task)
        natives = _with_natives(done, judgments, in_attrs, baseline)
        lbd = (pd.concat([j.leaderboard for j in done.values()], ignore_index=True) if done
               else pd.DataFrame(columns=["judge", "model"]))
        from biasbound.native import uncertified_natives

        uncertified = uncertified_natives(natives or [], lbd, failures)
        result = CertifyResult(
            judges=done, failures=failures, leaderboard=lbd, panel=None,
            retention={n: j.retention for n, j in done.items()}, outputs={}, seed=master,
            load_report=load_report, settings=jsonable(s.to_dict()), baseline=baseline, failure_kinds=failure_kinds,
        )
        result.uncertified = uncertified  # models read but not certified: their tools' own numbers (leaderboard.csv)
        result.coverage = {"judges": coverage, "score_scale": scales,
                           "skipped_rows": [list(r) for r in skipped_rows]}
        result.panel = _panel(result, s)
        if done:
            from biasbound._memory import release_free_memory
            from biasbound.card import judge_card

            release_free_memory()  # what the judges' certification freed, before the card's bootstraps
            bar.update(task, description="computing the judge card")
            result.judge_card = judge_card(frame, result, usage=usage, groups=groups, codes=judge_codes,  # split and coded once
                                           families=families, folds=None if folded is None else folded.card_folds())
        if labels is not None and done:
            attach_human(result, frame, labels, s.generators, human_level)
        anchored_kw = {k: v for k, v in reproduce["certify"].items() if k in _ANCHORED_KEYS}
        if out_path is None and labels is not None and done:
            write_anchored(result, frame, labels, None, anchored_kw, certify)
        if out_path is not None:
            # written into a fresh folder and moved into place: the folder never mixes two runs, and a
            # run that dies while writing leaves the previous outputs as they were
            with staged_output(out_path, private_key) as stage:
                bar.update(task, description="writing certificates, scores and tables")
                if labels is not None and done:  # before the summary, which reports the anchored release
                    bar.update(task, description="certifying the human-anchored release")
                    write_anchored(result, frame, labels, stage, anchored_kw, certify)
                _write_core(result, stage, s)
                bar.advance(task)
                if plots and done:
                    bar.update(task, description="drawing the plots and writing report.html")
                    _write_plots_and_report(result, stage, s)
                bar.advance(task)
            result.outputs = {k: out_path / Path(v).relative_to(stage) for k, v in result.outputs.items()}
    if errors:
        raise _first_error(errors, len(judge_names), out_path if done else None, result)
    return result


def _private_key(sign_key: str | Path | None, out_path: Path | None) -> Any:
    """The Ed25519 key that signs the outputs manifest (None when not signing); it needs an output folder."""
    if sign_key is None:
        return None
    from biasbound._integrity import load_private_key

    if out_path is None:
        raise InputError("The 'sign_key' parameter of certify signs the outputs manifest, so it needs 'out'. Got out=None.")
    return load_private_key(sign_key)


def _with_natives(done: dict[str, JudgeCertification], judgments: Any, in_attrs: dict[str, Any],
                  baseline: str | None) -> Any:
    """The tools' own headline numbers (returned) set beside each judge's certified column, and the baseline pinned."""
    from biasbound.data._common import native_tables
    from biasbound.leaderboard import native_columns, pin_baseline

    rep_in = getattr(judgments, "report", None)
    natives = native_tables(rep_in if isinstance(rep_in, dict) else None, in_attrs)
    for j in done.values():
        if natives:  # the tools' own headline numbers beside the certified column
            j.leaderboard = native_columns(j.leaderboard, natives)
        if baseline is not None:  # its win rate against itself is 50 by definition
            j.leaderboard = pin_baseline(j.leaderboard, baseline)
    return natives


def _first_error(errors: list[BiasboundError], n_judges: int, written: Path | None,
                 result: CertifyResult) -> BiasboundError:
    """The error certify raises when a judge could not be certified: the first, counted among the judges, naming
    where the other judges' outputs were ``written``, with the partial result attached."""
    first = errors[0]
    where = f"; the outputs of the other judges were written to {written}" if written else ""
    msg = (f"{len(errors)} of {n_judges} judge(s) could not be certified: {str(first).rstrip('.')}{where}."
           if n_judges > 1 else str(first))
    exc_out: BiasboundError
    if isinstance(first, InfeasibleCertificateError):
        exc_out = InfeasibleCertificateError(msg, alpha_max=first.alpha_max)
    else:
        exc_out = InputError(msg)
    exc_out.partial_result = result  # type: ignore[union-attr]
    return exc_out


def _checked_prompt_and_families(judge_prompt: Any, families: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """Check the run's prompt record's type and the self-preference families (names -> family) before any input."""
    if judge_prompt is not None and not isinstance(judge_prompt, dict):
        raise TypeError(f"The 'judge_prompt' parameter of certify must be a dict or None. Got {type(judge_prompt).__name__} "
                        "instead.")
    if families is None:
        return None
    from biasbound.self_preference import check_families

    return check_families(families)


def _read(judgments: Any, s: _Settings, skip_bad: bool, range_bound: bool) -> tuple[pd.DataFrame, Any, _Settings, Any]:
    """``(frame, load report, settings, folded)``: the judgments as a frame (a table read in blocks: its rerun-0 rows,
    with the :class:`~biasbound.pipeline._folded.Folded` results of its blocks; else None), the declaration of a
    deterministic judge checked against them, and the settings with the range generator where :func:`_range_bound`
    says so."""
    if callable(getattr(judgments, "blocks", None)):  # biasbound.data.blocked.BlockedTable
        from biasbound.pipeline._folded import read_blocked

        frame, folded = read_blocked(judgments, s.generators, skip_bad=skip_bad, deterministic=s.deterministic_judge)
        s_range = _range_bound(s, frame, range_bound, holds=folded.holds)
        if s_range.generators != s.generators:  # no neighbour at all: the blocks read again for the range generator
            frame, folded = read_blocked(judgments, s_range.generators, skip_bad=skip_bad,
                                         deterministic=s.deterministic_judge)
        report = judgments.report  # after the blocks: the merged report (a reader's, or load_inputs' per input)
        return frame, jsonable(report.to_dict() if hasattr(report, "to_dict") else dict(report)), s_range, folded
    frame, load_report = _as_frame(judgments)
    if s.deterministic_judge:  # the declaration is checked against the data: two answers to one question refute it
        from biasbound._assumptions import check_deterministic

        check_deterministic(frame)
    return frame, load_report, _range_bound(s, frame, range_bound), None


def _no_labels_in_blocks(labels: Any, folded: Any) -> None:
    """Human labels and a table read in blocks: refused (the anchored release rewrites every row of its models)."""
    if labels is not None and folded is not None:
        from biasbound.data.blocked import BLOCKED_ABOVE

        raise InputError("Human labels are not read with a judgment table read in blocks (one Parquet table of more "
                         f"than {BLOCKED_ABOVE:,} rows with reruns); certify the labelled models' judgments on their "
                         "own.")


def _range_bound(s: _Settings, frame: pd.DataFrame, range_bound: bool, holds: bool | None = None) -> _Settings:
    """The settings with the range generator alone when ``range_bound`` is asked for and the data hold no neighbour
    of the requested generators (the score range's almost-sure bound, tight method only); ``holds``: whether they
    do, when the caller knows (the blocked route)."""
    if not isinstance(range_bound, bool):
        raise TypeError(f"The 'range_bound' parameter of certify must be a bool. Got {type(range_bound).__name__} instead.")
    if holds is None:
        holds = range_bound and s.generators != (RANGE_GENERATOR,) and holds_neighbors(frame, s.generators)
    if range_bound and s.generators != (RANGE_GENERATOR,) and not holds:
        s = dataclasses.replace(s, generators=(RANGE_GENERATOR,))  # no neighbour at all: the range bound alone
    cross_check(dataclasses.asdict(s))  # the range generator needs the tight method (biasbound.parameters.RULES)
    return s


def _reproduce(judgments: Any, call: dict[str, Any], schedule: dict[str, Any] | None, human_labels: Any,
               human_level: float, *, judge_prompt: dict[str, Any] | None = None,
               families: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The call that made the certificates (recorded in each judge's ``scope.reproduce``: ``biasbound verify
    --judgments``): certify's arguments, the schedule, the judge's prompt, the families and the human labels when
    given, and the reading options."""
    labelled = isinstance(human_labels, (str, Path))
    return {"certify": jsonable(dict(
        **call, **({"schedule": schedule} if schedule is not None else {}),
        **({"judge_prompt": judge_prompt} if judge_prompt is not None else {}),
        **({"families": dict(families)} if families is not None else {}),
        **({"human_labels": labels_record(human_labels)} if labelled else {}),
        **({"human_level": human_level} if labelled or human_level != 0.95 else {}))),
        "load": jsonable(reading_options(judgments))}


def _extras(group: pd.DataFrame, ids: Any, codes: Any, coverage: dict[str, Any], scales: list[Any],
            reproduce: dict[str, Any], schedule: dict[str, Any] | None,
            judge_prompt: dict[str, Any] | None = None, digest: tuple[str, dict[str, str]] | None = None
            ) -> CertificateExtras:
    """What one judge's certificate records besides its arithmetic: coverage, score scales, the digests of its
    judgments (from the codes already made, or ``digest`` when the blocked route made them) and the call that made
    it."""
    if digest is not None:
        root, per_model = digest
    else:
        id_codes = {"model": (codes.m, codes.model_names), "item_id": (codes.i, codes.item_names)}
        if group is ids.frame:  # one judge, every row kept: the variant codes made by _check_frame
            id_codes["variant"] = ids.column("variant", sort=True)
        root, per_model = judgments_digest(group, id_codes)
    return CertificateExtras(coverage=coverage, scales=scales, judgments_sha256=root, model_judgments_sha256=per_model,
                             reproduce=reproduce, schedule=schedule, judge_prompt=judge_prompt)
