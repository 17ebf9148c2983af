"""The YAML configuration of ``biasbound run``: schema, defaults and validation.

Every problem is reported as one sentence naming the file, the key and the allowed
values (:class:`biasbound.DataFormatError` with ``path`` set to the config file), e.g.::

    run.yaml: The key 'neighbors.generators' must list generators among 'agreeable', 'format',
    'paraphrase', 'rerun', 'schematic', 'swap'. Got 'bold' instead.

Relative paths in the file are resolved against the folder of the config file.

Schema (defaults in brackets)::

    data:                       # Arena-Hard layout ...
      questions: question.jsonl     # {uid|question_id, prompt|turns}
      answers: model_answer/        # a folder of <model>.jsonl files, or a list of files
      baseline: gpt-4-0314          # the baseline model (pairwise template)
      models: [gpt-3.5-turbo-0125]  # [every answer file except the baseline]
      n_items: 80                   # [all] seeded subset of the questions
      include_baseline: false       # [false] also judge the baseline against itself (as Arena-Hard
                                    # lists the baseline); certify needs at least 2 models
    # ... or a generic table: data: {table: answers.csv, baseline: ..., n_items: ...}
    #     columns item_id, question, model, answer[, baseline]
    judge:
      base_url: http://127.0.0.1:8011/v1
      model: gpt-4o-mini
      name: my-judge                # [model] the judge name in the outputs
      api_key_env: OPENAI_API_KEY   # the variable holding the key (never the key itself)
      concurrency: 8                # [8]
      rpm: null                     # [no cap] request starts per minute
      tokens_per_minute: null       # [no cap] tokens per minute over all the judge's servers (estimated prompt
                                    # tokens + max_tokens, corrected by the usage reported: judge/ratelimit.py)
      batch: false                  # [false] judge through the provider's batch API (docs/guides/batch-judging.md):
                                    # true, or {poll_interval: 30, completion_window: 24h, discount: 0.5,
                                    #  prices: {prompt_per_million, completion_per_million}, fallback: live|stop}
      # ... or several servers of the same judge (a vLLM fleet), balanced client-side, each with its
      # own limits (concurrency/rpm above are then the entries' defaults):
      # endpoints: [{base_url: http://gpu1:8000/v1, concurrency: 32}, {base_url: http://gpu2:8000/v1, rpm: 600}]
      cache_identity: null          # [none] pinned label in the cache key; the base URL is not in the key,
                                    # so the same model on another host/port reuses the cache
      sampling: {temperature: 0.0, max_tokens: 4096, top_p: null, seed: 0}
      prices: {prompt_per_million: null, completion_per_million: null}
      retry: {max_attempts: 6, max_parse_attempts: 3, timeout: 120, backoff_initial: 1,
              backoff_max: 30, backoff_jitter: 1}
    # ... or a panel: several judges in one run, judged over the same items and neighbours,
    #     each with its own endpoint, sampling and prices (names must differ):
    # judges: [{base_url: ..., model: judge-a, name: a, sampling: {...}}, {base_url: ..., model: judge-b}]
    # (the neighbours are drawn once; with allow_judge_as_rewriter the first judge rewrites)
    rewriter: {...same keys as judge...}   # endpoint of the paraphrase/agreeable generators
    allow_judge_as_rewriter: false  # [false] let the judge itself rewrite when no rewriter is given
    template: pairwise              # [pairwise] or single (1-10 grading)
    rubric: [{name: correctness, emphasis: "..."}, ...]   # [the default rubric of the template]
    neighbors:
      generators: [swap, format, paraphrase, schematic, agreeable, rerun]
      neighbors_per_generator: 40   # m [50]; Hamming-1: one item perturbed per neighbour
      # ... or sequential judging: looks declared in advance, the first 10, 20, 40 of each model's seeded
      # draw; beta is split evenly over the looks; stop when alpha gains less than min_gain (relative):
      # sequential: {looks: [10, 20, 40, 80], min_gain: 0.01}
      # ... optionally also stopping at the first look that meets every stated target:
      # sequential: {looks: [10, 20, 40, 80], target: {alpha: 0.42, bias_radius: 0.5, flip_rate_width: 0.1}}
      options: {schematic: {mode: random}, paraphrase: {max_attempts: 3}}   # swap: {drawn: true} draws swap too
    tau: 0.5                        # [0.5]
    delta: 0.01                     # [0.01]
    calibration: {method: tight, combine: max, alpha: null, beta: 0.05, holdout: 0.3,
                  center: "fixed:0.5", hamming: 1, sigma: null, range_bound: false,
                  deterministic_judge: false}
                                    # every certify parameter (biasbound.parameters; the same ranges and
                                    # defaults as `biasbound certify --help`); hamming: K or all
    view: model                     # [model] or leaderboard
    jitter_adjust: false            # [false]
    bootstrap_rounds: 1000          # [1000]
    plots: true                     # [true]
    seed: 0                         # [0] master seed
    output: runs/my-run             # required: the output folder
    human_labels: labels.csv        # [none] human labels (item_id, label[, model, rater]): agreement, anchored
                                    # scores and the anchored release (certify --human-labels)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlparse

from biasbound._exceptions import DataFormatError, InputError
from biasbound.parameters import CERTIFY, PARAMETERS, settings_record

__all__ = [
    "GENERATOR_NAMES",
    "LLM_GENERATORS",
    "CONFIG_SETTINGS",
    "CalibrationConfig",
    "DataConfig",
    "EndpointConfig",
    "NeighborsConfig",
    "RunConfig",
    "load_config",
    "parse_config",
    "with_certify_options",
]

#: Generators ``run`` can use, in the order they are judged.
GENERATOR_NAMES: tuple[str, ...] = ("swap", "format", "paraphrase", "schematic", "agreeable", "rerun")
#: Generators that need a rewriting LLM.
LLM_GENERATORS: tuple[str, ...] = ("paraphrase", "agreeable")
#: The neighbour name ``certify`` gives each run generator's judgments (the runner writes them, ``plan`` reads them).
CERTIFY_NAMES: dict[str, str] = {
    "swap": "swap", "format": "variant:format", "paraphrase": "variant:paraphrase",
    "schematic": "variant:schematic", "agreeable": "variant:agreeable", "rerun": "rerun",
}

_TOP_KEYS = ("data", "judge", "judges", "rewriter", "allow_judge_as_rewriter", "template", "rubric", "neighbors", "tau", "delta",
             "calibration", "view", "jitter_adjust", "bootstrap_rounds", "plots", "seed", "output",
             "human_labels", "prompt", "preflight", "retry_unparseable")
_ENDPOINT_KEYS = ("base_url", "endpoints", "model", "name", "api_key_env", "concurrency", "rpm", "cache_identity",
                  "sampling", "prices", "retry", "tokens_per_minute", "batch")
_BATCH_KEYS = ("poll_interval", "completion_window", "discount", "prices", "fallback", "max_requests")
_SERVER_KEYS = ("base_url", "concurrency", "rpm")
_SAMPLING_KEYS = ("temperature", "max_tokens", "top_p", "seed")
_PRICE_KEYS = ("prompt_per_million", "completion_per_million")
_RETRY_KEYS = ("max_attempts", "max_parse_attempts", "timeout", "backoff_initial", "backoff_max", "backoff_jitter")
_DATA_KEYS = ("questions", "answers", "table", "baseline", "models", "n_items", "include_baseline")
_NEIGHBOR_KEYS = ("generators", "neighbors_per_generator", "options", "sequential")
_SEQUENTIAL_KEYS = ("looks", "min_gain", "target")
#: targets a sequential run may stop on (every one stated must be met at a look)
_TARGET_KEYS = ("alpha", "bias_radius", "flip_rate_width")
#: the certify parameters under 'calibration:' (method, combine, alpha, beta, holdout, center, hamming, sigma,
#: range_bound, deterministic_judge), from the one table of parameters
_CALIBRATION_KEYS = tuple(PARAMETERS[n].config_key.split(".", 1)[1] for n in CERTIFY
                          if (PARAMETERS[n].config_key or "").startswith("calibration."))


# ----------------------------------------------------------------------------------------
# records
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EndpointConfig:
    """An OpenAI-compatible endpoint (the judge, or the rewriter of the LLM generators).

    Attributes mirror :class:`biasbound.judge.JudgeConfig`; ``name`` is the label used in
    the outputs (``model_judgment/<name>/``); ``extra_endpoints`` holds ``(base_url, concurrency,
    rpm)`` of the judge's further servers (config key ``endpoints``: its first entry is ``base_url``).
    """

    base_url: str
    model: str
    name: str
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    rpm: float | None = None
    temperature: float = 0.0
    max_tokens: int = 4096
    top_p: float | None = None
    seed: int = 0
    prompt_price_per_million: float | None = None
    completion_price_per_million: float | None = None
    max_attempts: int = 6
    max_parse_attempts: int = 3
    timeout: float = 120.0
    backoff_initial: float = 1.0
    backoff_max: float = 30.0
    backoff_jitter: float = 1.0
    extra_endpoints: tuple[tuple[str, int, float | None], ...] = ()
    cache_identity: str | None = None
    tokens_per_minute: float | None = None
    batch: Any = None  # a biasbound.judge.batch.BatchOptions (judge.batch), None: live calls

    def judge_config(self) -> Any:
        """The :class:`biasbound.judge.JudgeConfig` for this endpoint."""
        from biasbound.judge.client import Endpoint, JudgeConfig

        return JudgeConfig(
            base_url=self.base_url, model=self.model, api_key_env=self.api_key_env, concurrency=self.concurrency,
            requests_per_minute=self.rpm, extra_endpoints=tuple(Endpoint(u, c, r) for u, c, r in self.extra_endpoints),
            cache_identity=self.cache_identity, max_attempts=self.max_attempts, max_parse_attempts=self.max_parse_attempts,
            timeout=self.timeout, backoff_initial=self.backoff_initial, backoff_max=self.backoff_max,
            backoff_jitter=self.backoff_jitter, temperature=self.temperature, max_tokens=self.max_tokens,
            top_p=self.top_p, base_seed=self.seed, prompt_price_per_million=self.prompt_price_per_million,
            completion_price_per_million=self.completion_price_per_million,
            tokens_per_minute=self.tokens_per_minute, batch=self.batch,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (holds the variable name, never a key)."""
        out = dict(self.__dict__)
        out["extra_endpoints"] = [{"base_url": u, "concurrency": c, "rpm": r} for u, c, r in self.extra_endpoints]
        if self.batch is not None:
            out["batch"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.batch.__dict__.items()}
        return out


@dataclass(frozen=True)
class DataConfig:
    """Where the questions and answers are.

    Attributes
    ----------
    questions, answers:
        Arena-Hard layout: ``question.jsonl`` and the answer files (``None``/empty for a table).
    table:
        A generic table (CSV/TSV/JSONL/Parquet) with item_id, question, model, answer[, baseline].
    baseline:
        The baseline model (Arena-Hard layout) or ``None`` (a table's ``baseline`` column).
    models:
        Models to judge (``None``: every model except the baseline).
    n_items:
        Seeded subset size of the questions (``None``: all).
    include_baseline:
        Also judge the baseline model's answers against themselves (pairwise), as a model.
    """

    questions: Path | None
    answers: tuple[Path, ...]
    table: Path | None
    baseline: str | None
    models: tuple[str, ...] | None
    n_items: int | None
    include_baseline: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"include_baseline": self.include_baseline, "questions": None if self.questions is None else str(self.questions),
                "answers": [str(p) for p in self.answers], "table": None if self.table is None else str(self.table),
                "baseline": self.baseline, "models": None if self.models is None else list(self.models),
                "n_items": self.n_items}


@dataclass(frozen=True)
class NeighborsConfig:
    """Which generators, how many neighbours each (``m``), generator options.

    ``options.swap.drawn`` (default false): swap is a census (both games of every item judged) unless
    true, when game 2 is judged for a seeded draw of m items per model, like any drawn generator.
    ``looks`` (sequential judging, declared in advance): increasing m values; the run judges the
    first ``looks[k]`` of each model's seeded draw of ``looks[-1]`` items, look after look, and stops
    when α gains less than ``min_gain`` (relative) or when every stated ``target`` is met (``alpha``: α at least
    this; ``bias_radius``: the judge's bias radius at δ at most this; ``flip_rate_width``: every drawn
    generator's flip-rate interval at most this wide). ``m`` is then the last look. ``draw_m``: the size
    of the seeded draw whose first ``m`` are judged (``None``: ``m``; set by the sequential loop).
    """

    generators: tuple[str, ...]
    m: int
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    looks: tuple[int, ...] = ()
    min_gain: float = 0.01
    target: Mapping[str, float] = field(default_factory=dict)
    draw_m: int | None = None
    budget_from: str | None = None

    @property
    def swap_drawn(self) -> bool:
        """``options.swap.drawn``: swap judged on m drawn items per model (game 2) instead of a census."""
        return "swap" in self.generators and bool(self.options.get("swap", {}).get("drawn", False))

    @property
    def drawn(self) -> list[str]:
        """The generators judged on a seeded draw of m items per model (every one but a census swap)."""
        return [g for g in self.generators if g != "swap" or self.swap_drawn]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {"generators": list(self.generators), "neighbors_per_generator": self.m,
                               "options": {k: dict(v) for k, v in self.options.items()}}
        if self.looks:
            out["sequential"] = {"looks": list(self.looks), "min_gain": self.min_gain}
            if self.target:
                out["sequential"]["target"] = dict(self.target)
        if self.draw_m is not None:
            out["draw_m"] = self.draw_m
        if self.budget_from is not None:
            out["budget_from"] = self.budget_from
        return out


#: The certify parameters a config holds (the generators come from ``neighbors.generators``, the seed is the run's).
CONFIG_SETTINGS = tuple(n for n in CERTIFY if PARAMETERS[n].config_key is not None and n != "seed")


def _settings_dict(self: Any) -> dict[str, Any]:
    return dict(self.__dict__)


if TYPE_CHECKING:
    class CalibrationConfig:
        """The type checker's view of the generated record: one attribute per name of :data:`CONFIG_SETTINGS`."""

        __dataclass_fields__: ClassVar[dict[str, Any]]

        def __init__(self, **values: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
        def to_dict(self) -> dict[str, Any]: ...
        def certify_kwargs(self) -> dict[str, Any]: ...
else:
    CalibrationConfig = settings_record(
        "CalibrationConfig", CONFIG_SETTINGS,
        "The arguments passed on to :func:`biasbound.pipeline.certify`: one field per certify parameter of the config "
        "(:data:`CONFIG_SETTINGS`), its default the table's (:mod:`biasbound.parameters`). ``to_dict()``: the JSON-ready "
        "form; ``certify_kwargs()``: the keyword arguments of certify these settings give.",
        to_dict=_settings_dict, certify_kwargs=_settings_dict)
    CalibrationConfig.__module__ = __name__


@dataclass(frozen=True)
class RunConfig:
    """A validated ``biasbound run`` configuration (see the module docstring for the schema)."""

    path: Path | None
    data: DataConfig
    judge: EndpointConfig
    rewriter: EndpointConfig | None
    rewriter_is_judge: bool
    template: str
    rubric: tuple[tuple[str, str], ...] | None
    neighbors: NeighborsConfig
    calibration: CalibrationConfig
    seed: int
    output: Path
    judges: tuple[EndpointConfig, ...] = ()
    human_labels: Path | None = None  # certify's human_labels (biasbound.human)
    prompt: Any = None  # a biasbound.judge.custom.JudgePrompt: the judge's own prompt and parser
    preflight: Any = None  # a biasbound.judge.preflight.PreflightConfig
    retry_unparseable: bool = False  # a resume calls again the replies that held no verdict

    @property
    def panel(self) -> tuple[EndpointConfig, ...]:
        """Every judge of the run, in config order (``(judge,)`` for a single-judge config)."""
        return self.judges if self.judges else (self.judge,)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (recorded in the run summary)."""
        return {
            "config_file": None if self.path is None else str(self.path),
            "data": self.data.to_dict(), "judge": self.judge.to_dict(),
            "judges": [j.to_dict() for j in self.panel],
            "rewriter": None if self.rewriter is None else self.rewriter.to_dict(),
            "rewriter_is_judge": self.rewriter_is_judge, "template": self.template,
            "rubric": None if self.rubric is None else [list(p) for p in self.rubric],
            "neighbors": self.neighbors.to_dict(), "calibration": self.calibration.to_dict(),
            "seed": self.seed, "output": str(self.output),
            "human_labels": None if self.human_labels is None else str(self.human_labels),
            "prompt": None if self.prompt is None else self.prompt.scope(),
        }


# ----------------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------------
class _Reader:
    """Typed access to a nested mapping; every error names the file and the dotted key."""

    def __init__(self, source: Path | None, base: Path) -> None:
        self.source = source
        self.base = base

    def fail(self, key: str, what: str, value: Any) -> DataFormatError:
        shown = value if isinstance(value, (int, float, bool)) or value is None else repr(value)
        if isinstance(value, str):
            shown = repr(value)
        return DataFormatError(f"The key {key!r} must be {what}. Got {shown} instead.",
                               path=None if self.source is None else str(self.source))

    def mapping(self, value: Any, key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, f"a mapping with keys among {', '.join(map(repr, allowed))}", type(value).__name__)
        unknown = [k for k in value if k not in allowed]
        if unknown:
            where = f"{key}.{unknown[0]}" if key else str(unknown[0])
            parent = f"under {key!r}" if key else "at the top level"
            raise DataFormatError(
                f"The key {where!r} is not allowed {parent}; allowed keys are {', '.join(map(repr, allowed))}.",
                path=None if self.source is None else str(self.source),
            )
        return dict(value)

    def string(self, value: Any, key: str, *, default: str | None = None, required: bool = False) -> str | None:
        if value is None:
            if required:
                raise self.fail(key, "a non-empty string (it is required)", None)
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "a non-empty string", value)
        return value

    def choice(self, value: Any, key: str, options: tuple[str, ...], default: str) -> str:
        if value is None:
            return default
        if value not in options:
            raise self.fail(key, f"one of {', '.join(map(repr, options))}", value)
        return str(value)

    def number(self, value: Any, key: str, *, default: float | None, low: float | None = None,
               high: float | None = None, low_open: bool = False, high_open: bool = False,
               optional: bool = False) -> float | None:
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        interval = f"{'(' if low_open or low is None else '['}{lo}, {hi}{')' if high_open or high is None else ']'}"
        what = f"a number in {interval}" + (" or null" if optional else "")
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            raise self.fail(key, what, value)
        v = float(value)
        if low is not None and (v <= low if low_open else v < low):
            raise self.fail(key, what, value)
        if high is not None and (v >= high if high_open else v > high):
            raise self.fail(key, what, value)
        return v

    def integer(self, value: Any, key: str, *, default: int | None, low: int | None = None,
                high: int | None = None, optional: bool = False, what: str | None = None) -> int | None:
        what = what or ("an int" + ("" if low is None else f" >= {low:g}") + ("" if high is None else f" <= {high:g}")
                        + (" or null" if optional else ""))
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise self.fail(key, what, value)
        if (low is not None and int(value) < low) or (high is not None and int(value) > high):
            raise self.fail(key, what, value)
        return int(value)

    def boolean(self, value: Any, key: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def path(self, value: Any, key: str, *, must_exist: bool = True, kind: str = "file") -> Path:
        text = self.string(value, key, required=True)
        p = Path(str(text)).expanduser()
        if not p.is_absolute():
            p = self.base / p
        if must_exist:
            ok = p.is_file() if kind == "file" else (p.is_dir() if kind == "folder" else p.exists())
            if not ok:
                raise self.fail(key, f"an existing {kind if kind != 'any' else 'file or folder'}", str(p))
        return p


def _url(r: _Reader, value: Any, key: str) -> str:
    url = r.string(value, key, required=True)
    parsed = urlparse(str(url))
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise r.fail(key, "an http(s) URL such as 'http://127.0.0.1:8011/v1'", url)
    return str(url)


def _servers(r: _Reader, d: Mapping[str, Any], key: str) -> list[tuple[str, int, float | None]]:
    """``(base_url, concurrency, rpm)`` of every server of an endpoint: ``base_url`` or the ``endpoints`` list."""
    concurrency = int(r.integer(d.get("concurrency"), f"{key}.concurrency", default=8, low=1))  # type: ignore[arg-type]
    rpm = r.number(d.get("rpm"), f"{key}.rpm", default=None, low=0, low_open=True, optional=True)
    if d.get("endpoints") is None:
        return [(_url(r, d.get("base_url"), f"{key}.base_url"), concurrency, rpm)]
    if d.get("base_url") is not None:
        raise r.fail(f"{key}.base_url", f"absent when '{key}.endpoints' lists the servers (give one of the two)",
                     d["base_url"])
    raw = d["endpoints"]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise r.fail(f"{key}.endpoints", "a non-empty list of {base_url, concurrency, rpm} entries", raw)
    servers: list[Any] = []
    for i, entry in enumerate(raw):
        where = f"{key}.endpoints[{i}]"
        e = r.mapping(entry if isinstance(entry, Mapping) else {"base_url": entry}, where, _SERVER_KEYS)
        url = _url(r, e.get("base_url"), f"{where}.base_url")
        if any(url.rstrip("/") == s[0].rstrip("/") for s in servers):
            raise r.fail(f"{where}.base_url", "a URL not listed before in the same endpoints list", url)
        servers.append((url, int(r.integer(e.get("concurrency"), f"{where}.concurrency", default=concurrency, low=1)),  # type: ignore[arg-type]
                        r.number(e.get("rpm"), f"{where}.rpm", default=rpm, low=0, low_open=True, optional=True)))
    return servers


def _endpoint(r: _Reader, raw: Any, key: str) -> EndpointConfig:
    d = r.mapping(raw, key, _ENDPOINT_KEYS)
    servers = _servers(r, d, key)
    base_url, concurrency, rpm = servers[0]
    model = r.string(d.get("model"), f"{key}.model", required=True)
    name = r.string(d.get("name"), f"{key}.name", default=model)
    env = r.string(d.get("api_key_env"), f"{key}.api_key_env", default="OPENAI_API_KEY")
    if env is not None and (not env.replace("_", "").isalnum() or env[0].isdigit()):
        raise r.fail(f"{key}.api_key_env", "the NAME of an environment variable (letters, digits, '_'), not a key", "<hidden>")
    sampling = r.mapping(d.get("sampling"), f"{key}.sampling", _SAMPLING_KEYS)
    prices = r.mapping(d.get("prices"), f"{key}.prices", _PRICE_KEYS)
    retry = r.mapping(d.get("retry"), f"{key}.retry", _RETRY_KEYS)
    return EndpointConfig(
        tokens_per_minute=r.number(d.get("tokens_per_minute"), f"{key}.tokens_per_minute", default=None, low=0,
                                   low_open=True, optional=True),
        batch=_batch(r, d.get("batch"), f"{key}.batch"),
        base_url=base_url, model=str(model), name=str(name), api_key_env=str(env), concurrency=concurrency, rpm=rpm,
        extra_endpoints=tuple(servers[1:]), cache_identity=r.string(d.get("cache_identity"), f"{key}.cache_identity"),
        temperature=float(r.number(sampling.get("temperature"), f"{key}.sampling.temperature", default=0.0, low=0, high=2)),  # type: ignore[arg-type]
        max_tokens=int(r.integer(sampling.get("max_tokens"), f"{key}.sampling.max_tokens", default=4096, low=1)),  # type: ignore[arg-type]
        top_p=r.number(sampling.get("top_p"), f"{key}.sampling.top_p", default=None, low=0, high=1, low_open=True, optional=True),
        seed=int(r.integer(sampling.get("seed"), f"{key}.sampling.seed", default=0, low=0)),  # type: ignore[arg-type]
        prompt_price_per_million=r.number(prices.get("prompt_per_million"), f"{key}.prices.prompt_per_million",
                                          default=None, low=0, optional=True),
        completion_price_per_million=r.number(prices.get("completion_per_million"), f"{key}.prices.completion_per_million",
                                              default=None, low=0, optional=True),
        max_attempts=int(r.integer(retry.get("max_attempts"), f"{key}.retry.max_attempts", default=6,
                                   low=PARAMETERS["max_attempts"].range.low)),  # type: ignore[arg-type]
        max_parse_attempts=int(r.integer(retry.get("max_parse_attempts"), f"{key}.retry.max_parse_attempts", default=3, low=1)),  # type: ignore[arg-type]
        timeout=float(r.number(retry.get("timeout"), f"{key}.retry.timeout", default=120.0, low=0, low_open=True)),  # type: ignore[arg-type]
        backoff_initial=float(r.number(retry.get("backoff_initial"), f"{key}.retry.backoff_initial", default=1.0, low=0)),  # type: ignore[arg-type]
        backoff_max=float(r.number(retry.get("backoff_max"), f"{key}.retry.backoff_max", default=30.0, low=0)),  # type: ignore[arg-type]
        backoff_jitter=float(r.number(retry.get("backoff_jitter"), f"{key}.retry.backoff_jitter", default=1.0, low=0)),  # type: ignore[arg-type]
    )


def _batch(r: _Reader, raw: Any, key: str) -> Any:
    """``judge.batch``: false/absent (live calls), true (the defaults) or the options
    (:class:`biasbound.judge.batch.BatchOptions`)."""
    from biasbound.judge.batch import FALLBACKS, BatchOptions

    if raw is None or raw is False:
        return None
    d = {} if raw is True else r.mapping(raw, key, _BATCH_KEYS)
    prices = r.mapping(d.get("prices"), f"{key}.prices", _PRICE_KEYS)
    p = r.number(prices.get("prompt_per_million"), f"{key}.prices.prompt_per_million", default=None, low=0, optional=True)
    c = r.number(prices.get("completion_per_million"), f"{key}.prices.completion_per_million", default=None, low=0,
                 optional=True)
    if (p is None) != (c is None):
        raise r.fail(f"{key}.prices", "both prompt_per_million and completion_per_million, or neither", dict(prices))
    window = r.string(d.get("completion_window"), f"{key}.completion_window", default="24h")
    return BatchOptions(
        poll_interval=float(r.number(d.get("poll_interval"), f"{key}.poll_interval", default=30.0, low=0, low_open=True)),  # type: ignore[arg-type]
        completion_window=str(window), prompt_price_per_million=p, completion_price_per_million=c,
        discount=r.number(d.get("discount"), f"{key}.discount", default=None, low=0, high=1, high_open=True, optional=True),
        fallback=r.choice(d.get("fallback"), f"{key}.fallback", FALLBACKS, "live"),
        max_requests=int(r.integer(d.get("max_requests"), f"{key}.max_requests", default=50_000, low=1)),  # type: ignore[arg-type]
    )


def _data(r: _Reader, raw: Any) -> DataConfig:
    d = r.mapping(raw, "data", _DATA_KEYS)
    if not d:
        raise r.fail("data", "a mapping with 'questions' and 'answers' (Arena-Hard layout) or 'table'", None)
    table = None
    questions = None
    answers: tuple[Path, ...] = ()
    if d.get("table") is not None:
        if d.get("questions") is not None or d.get("answers") is not None:
            raise r.fail("data.table", "used without 'data.questions'/'data.answers' (give one layout)", str(d["table"]))
        table = r.path(d["table"], "data.table")
    else:
        questions = r.path(d.get("questions"), "data.questions")
        raw_answers = d.get("answers")
        if isinstance(raw_answers, (list, tuple)):
            if not raw_answers:
                raise r.fail("data.answers", "a folder of <model>.jsonl answer files or a non-empty list of files", [])
            answers = tuple(r.path(a, f"data.answers[{i}]") for i, a in enumerate(raw_answers))
        else:
            folder = r.path(raw_answers, "data.answers", kind="any")
            if folder.is_dir():
                answers = tuple(sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(".jsonl")))
                if not answers:
                    raise r.fail("data.answers", "a folder holding <model>.jsonl answer files", str(folder))
            else:
                answers = (folder,)
    baseline = r.string(d.get("baseline"), "data.baseline")
    models_raw = d.get("models")
    models: tuple[str, ...] | None = None
    if models_raw is not None:
        if isinstance(models_raw, str):
            models_raw = [models_raw]
        if not isinstance(models_raw, (list, tuple)) or not models_raw or not all(isinstance(m, str) and m for m in models_raw):
            raise r.fail("data.models", "a non-empty list of model names", models_raw)
        models = tuple(models_raw)
    n_items = r.integer(d.get("n_items"), "data.n_items", default=None, low=2, optional=True)
    include = r.boolean(d.get("include_baseline"), "data.include_baseline", False)
    return DataConfig(questions=questions, answers=answers, table=table, baseline=baseline, models=models, n_items=n_items,
                      include_baseline=include)


def _generators(r: _Reader, d: Mapping[str, Any], template: str) -> list[str]:
    """``neighbors.generators``: run generators, duplicates removed, order kept (the template's default when absent)."""
    gens_raw = d.get("generators", ["swap"] if template == "pairwise" else ["format"])
    if isinstance(gens_raw, str):
        gens_raw = [g.strip() for g in gens_raw.split(",") if g.strip()]
    allowed = ", ".join(map(repr, GENERATOR_NAMES))
    if not isinstance(gens_raw, (list, tuple)) or not gens_raw:
        raise r.fail("neighbors.generators", f"a non-empty list of generators among {allowed}", gens_raw)
    gens: list[str] = []
    for g in gens_raw:
        if g not in GENERATOR_NAMES:
            raise r.fail("neighbors.generators", f"a list of generators among {allowed}", g)
        if g not in gens:
            gens.append(str(g))
    if template == "single" and "swap" in gens:
        raise r.fail("neighbors.generators", "free of 'swap' with template 'single' (a single answer has no position to swap)",
                     "swap")
    return gens


def _sequential(r: _Reader, d: Mapping[str, Any]) -> tuple[tuple[int, ...], float, dict[str, float]]:
    """``neighbors.sequential``: the looks declared in advance, the least gain of α a look must bring and the
    targets a look may stop on."""
    seq = r.mapping(d["sequential"], "neighbors.sequential", _SEQUENTIAL_KEYS)
    if d.get("neighbors_per_generator") is not None:
        raise r.fail("neighbors.neighbors_per_generator", "absent with 'neighbors.sequential' (its last look is m)",
                     d["neighbors_per_generator"])
    raw_looks = seq.get("looks")
    if (not isinstance(raw_looks, (list, tuple)) or len(raw_looks) < 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 2 for x in raw_looks)
            or list(raw_looks) != sorted(set(raw_looks))):
        raise r.fail("neighbors.sequential.looks", "a list of at least 2 increasing integers >= 2, e.g. [10, 20, 40]",
                     raw_looks)
    looks = tuple(int(x) for x in raw_looks)
    min_gain = float(r.number(seq.get("min_gain"), "neighbors.sequential.min_gain", default=0.01, low=0, high=1))  # type: ignore[arg-type]
    target: dict[str, float] = {}
    if seq.get("target") is not None:
        tg = r.mapping(seq["target"], "neighbors.sequential.target", _TARGET_KEYS)
        if not tg:
            raise r.fail("neighbors.sequential.target", f"a mapping with at least one of {list(_TARGET_KEYS)}", tg)
        for key, value in tg.items():
            where = f"neighbors.sequential.target.{key}"
            if value is None:
                raise r.fail(where, "a number in (0, 1]", value)
            target[key] = float(r.number(value, where, default=None, low=0, high=1, low_open=True))  # type: ignore[arg-type]
    return looks, min_gain, target


def _neighbors(r: _Reader, raw: Any, template: str) -> NeighborsConfig:
    d = r.mapping(raw, "neighbors", _NEIGHBOR_KEYS)
    gens = _generators(r, d, template)
    m = int(r.integer(d.get("neighbors_per_generator"), "neighbors.neighbors_per_generator", default=50, low=2))  # type: ignore[arg-type]
    looks: tuple[int, ...] = ()
    min_gain = 0.01
    target: dict[str, float] = {}
    if d.get("sequential") is not None:
        looks, min_gain, target = _sequential(r, d)
        m = looks[-1]
    opts = r.mapping(d.get("options"), "neighbors.options", GENERATOR_NAMES)
    options = {}
    for name, o in opts.items():
        if not isinstance(o, Mapping):
            raise r.fail(f"neighbors.options.{name}", "a mapping of generator options", o)
        options[name] = dict(o)
    swap_opts = options.get("swap", {})
    if set(swap_opts) - {"drawn"}:
        raise r.fail("neighbors.options.swap", "a mapping with the one key 'drawn'", sorted(set(swap_opts) - {"drawn"})[0])
    if not isinstance(swap_opts.get("drawn", False), bool):
        raise r.fail("neighbors.options.swap.drawn", "true (judge game 2 of m drawn items per model) or false (every item)",
                     swap_opts["drawn"])
    ordered = tuple(g for g in GENERATOR_NAMES if g in gens)
    return NeighborsConfig(generators=ordered, m=m, options=options, looks=looks, min_gain=min_gain, target=target)


def _rubric(r: _Reader, raw: Any, template: str) -> tuple[tuple[str, str], ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)) or not raw:
        raise r.fail("rubric", "a non-empty list of {name, emphasis} entries", raw)
    pairs = []
    for i, entry in enumerate(raw):
        e = r.mapping(entry, f"rubric[{i}]", ("name", "emphasis"))
        pairs.append((str(r.string(e.get("name"), f"rubric[{i}].name", required=True)),
                      str(r.string(e.get("emphasis"), f"rubric[{i}].emphasis", required=True))))
    from biasbound._exceptions import InputError
    from biasbound.rubric import Rubric

    try:
        Rubric.from_factors(pairs, kind=template)
    except InputError as exc:
        raise DataFormatError(f"The key 'rubric' is not a valid rubric: {exc}",
                              path=None if r.source is None else str(r.source)) from None
    return tuple(pairs)


def _certify_value(r: _Reader, name: str, value: Any) -> Any:
    """One certify parameter read from the config through :data:`biasbound.parameters.PARAMETERS` (its
    range, choices, words and default), with the house config message naming the key."""
    p = PARAMETERS[name]
    key = str(p.config_key)
    if p.kind == "choice":
        return r.choice(value, key, p.choices, p.default)
    if p.kind == "bool":
        return r.boolean(value, key, p.default)
    if p.kind == "text":  # center: parsed by its own reader
        text = r.string(value, key, default=p.default)
        from biasbound._exceptions import InputError
        from biasbound.pipeline import parse_center

        try:
            parse_center(str(text))
        except InputError:
            raise r.fail(key, "one of 'fixed:X' (X in [0, 1]), 'ema:X', 'holdout', 'batch'", text) from None
        return str(text)
    if isinstance(value, str) and value.strip().lower() in p.words:  # beta: none, hamming: all
        return None if value.strip().lower() == "none" else value.strip().lower()
    rng = p.range
    words = "".join(f" or {w!r}" for w in p.words)
    if p.kind == "int":
        what = f"an int in {rng.text()}{words}" + (" or null" if p.optional else "")  # type: ignore[union-attr]
        if value is not None and words and not (isinstance(value, numbers.Integral) and not isinstance(value, bool)):
            raise r.fail(key, what, value)
        return r.integer(value, key, default=p.default, low=rng.low, high=rng.high, optional=p.optional,  # type: ignore
                         what=what)
    if value is not None and words and not isinstance(value, numbers.Real):
        raise r.fail(key, f"a number in {rng.text()}{words}", value)  # type: ignore[union-attr]
    return r.number(value, key, default=p.default, optional=p.optional, **rng.bounds())  # type: ignore[union-attr]


def _calibration(r: _Reader, top: Mapping[str, Any]) -> CalibrationConfig:
    """The certify parameters of the config: every one of :data:`biasbound.parameters.CERTIFY` that has a
    config key (the generators come from ``neighbors.generators``)."""
    c = r.mapping(top.get("calibration"), "calibration", _CALIBRATION_KEYS)
    values: dict[str, Any] = {}
    for name in CERTIFY:
        key = PARAMETERS[name].config_key
        if key is None or name == "seed":  # seed: the run's master seed (RunConfig.seed)
            continue
        where, leaf = (c, key.split(".", 1)[1]) if key.startswith("calibration.") else (top, key)
        if PARAMETERS[name].optional and leaf in where and where[leaf] is None:
            values[name] = None  # 'alpha: null' (chosen), 'beta: null' (point estimate), 'sigma: null' (chosen)
            continue
        values[name] = _certify_value(r, name, where.get(leaf))
    return CalibrationConfig(**values)


def _judges(r: _Reader, top: Mapping[str, Any]) -> tuple[EndpointConfig, tuple[EndpointConfig, ...]]:
    """The judge and the panel: ``judge`` (one endpoint, no panel) or ``judges`` (a list with distinct names; the
    first is the judge)."""
    if top.get("judges") is None:
        return _endpoint(r, top.get("judge"), "judge"), ()
    if top.get("judge") is not None:
        raise r.fail("judges", "used without 'judge' (give one judge under 'judge' or a panel under 'judges')",
                     "both given")
    raw_judges = top["judges"]
    if not isinstance(raw_judges, (list, tuple)) or not raw_judges:
        raise r.fail("judges", "a non-empty list of judge endpoints", raw_judges)
    judges = tuple(_endpoint(r, j, f"judges[{i}]") for i, j in enumerate(raw_judges))
    names = [j.name for j in judges]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise r.fail("judges", "a list of judges with distinct names (set 'name' where two use the same model)", dup)
    return judges[0], judges


def _check_sequential(r: _Reader, neighbors: NeighborsConfig, calibration: CalibrationConfig) -> None:
    """A sequential schedule needs a drawn generator, a confidence level and α left to the looks."""
    if not neighbors.drawn:
        raise r.fail("neighbors.sequential", "used with a drawn generator (swap alone is a census: nothing to draw)",
                     "swap")
    if calibration.beta is None:
        raise r.fail("calibration.beta", "a number with 'neighbors.sequential' (drawn neighbours need a confidence level)",
                     None)
    if calibration.alpha is not None:
        raise r.fail("calibration.alpha", "null with 'neighbors.sequential' (the looks stop on α's gains)",
                     calibration.alpha)


def parse_config(raw: Any, *, source: str | Path | None = None, base: str | Path | None = None) -> RunConfig:
    """Validate a configuration already read from YAML.

    Parameters
    ----------
    raw:
        The mapping read from the file.
    source:
        The config file (named in every error).
    base:
        Folder against which relative paths are resolved (default: the file's folder, else the cwd).

    Returns
    -------
    RunConfig

    Raises
    ------
    DataFormatError
        One sentence naming the file, the key and the allowed values.
    """
    src = None if source is None else Path(source)
    base_dir = Path(base) if base is not None else (src.parent if src is not None else Path.cwd())
    r = _Reader(src, base_dir.resolve())
    top = r.mapping(raw, "", _TOP_KEYS)
    if not top:
        raise r.fail("data", "present: the config file is empty or not a mapping", None)
    template = r.choice(top.get("template"), "template", ("pairwise", "single"), "pairwise")
    data = _data(r, top.get("data"))
    if template == "pairwise" and data.table is None and data.baseline is None:
        raise r.fail("data.baseline", "the name of the baseline model (template 'pairwise' compares every answer with it)",
                     None)
    if data.include_baseline and (template != "pairwise" or data.baseline is None):
        raise r.fail("data.include_baseline", "false unless template is 'pairwise' and 'data.baseline' is set", True)
    if template == "single" and data.baseline is not None:
        raise r.fail("data.baseline", "absent with template 'single' (single grading has no baseline)", data.baseline)
    judge, judges = _judges(r, top)
    neighbors = _neighbors(r, top.get("neighbors"), template)
    allow = r.boolean(top.get("allow_judge_as_rewriter"), "allow_judge_as_rewriter", False)
    rewriter = None if top.get("rewriter") is None else _endpoint(r, top.get("rewriter"), "rewriter")
    needs = [g for g in neighbors.generators if g in LLM_GENERATORS]
    rewriter_is_judge = False
    if needs and rewriter is None:
        if not allow:
            raise DataFormatError(
                f"The key 'rewriter' must name an endpoint for the generators {', '.join(map(repr, needs))}: none is "
                "given, and the judge does not rewrite its own inputs unless 'allow_judge_as_rewriter: true' is set.",
                path=None if src is None else str(src),
            )
        rewriter, rewriter_is_judge = judge, True
    rubric = _rubric(r, top.get("rubric"), template)
    from biasbound.judge.custom import prompt_from_config
    from biasbound.judge.preflight import preflight_from_config

    prompt = prompt_from_config(top.get("prompt"), template=template, base=r.base, fail=r.fail)
    if prompt is not None and rubric is not None:
        raise r.fail("rubric", "absent when 'prompt' gives the judge's own templates (the rubric fills the built-in ones)",
                     [list(p) for p in rubric])
    preflight = preflight_from_config(top.get("preflight"), fail=r.fail)
    retry_unparseable = r.boolean(top.get("retry_unparseable"), "retry_unparseable", False)
    calibration = _calibration(r, top)
    if calibration.jitter_adjust and ("rerun" not in neighbors.generators or len(neighbors.generators) < 2):
        raise r.fail("jitter_adjust", "false unless 'neighbors.generators' holds 'rerun' and another generator", True)
    _check_together(calibration, neighbors, src)
    if neighbors.looks:
        _check_sequential(r, neighbors, calibration)
    seed = int(_certify_value(r, "seed", top.get("seed")))
    output = r.path(top.get("output"), "output", must_exist=False)
    blocking = next((p for p in (output, *output.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise r.fail("output", "a folder (it is created if needed), not an existing file", str(blocking))
    labels = None if top.get("human_labels") is None else r.path(top.get("human_labels"), "human_labels")
    return RunConfig(path=src, data=data, judge=judge, rewriter=rewriter, rewriter_is_judge=rewriter_is_judge,
                     template=template, rubric=rubric, neighbors=neighbors, calibration=calibration, seed=seed,
                     output=output, judges=judges, human_labels=labels, prompt=prompt, preflight=preflight,
                     retry_unparseable=retry_unparseable)


def _check_together(c: CalibrationConfig, neighbors: NeighborsConfig, src: Path | None) -> None:
    """The certify stage's checks of parameters that depend on each other (sigma 0 or hamming > 1 with the paper
    method, center 'holdout' without a hold-out share...), run before any judge is called."""
    from biasbound._exceptions import InputError
    from biasbound.pipeline._settings import SETTINGS_PARAMETERS, check_settings

    names = [g if g in ("swap", "rerun") else f"variant:{g}" for g in neighbors.generators]
    # the rest (plots, range_bound) certify reads itself
    kw = {k: v for k, v in c.certify_kwargs().items() if k in SETTINGS_PARAMETERS}
    try:
        check_settings(neighbors=names, **kw)
        if c.range_bound and c.method != "tight":
            raise InputError(f"The 'range_bound' parameter of certify needs method 'tight'. Got {c.method!r} instead.")
    except InputError as exc:
        raise DataFormatError(f"The certify settings do not fit together: {exc}",
                              path=None if src is None else str(src)) from None


def with_certify_options(cfg: RunConfig, **given: Any) -> RunConfig:
    """``cfg`` with certify parameters given on the ``run`` command line (checked through
    :data:`biasbound.parameters.PARAMETERS`, errors naming the flag) in place of the config's values."""
    import dataclasses

    from biasbound.parameters import validate

    v = validate("run", **given)
    if v.get("beta") == "none":
        v["beta"] = None
    if "center" in v:
        from biasbound.pipeline import parse_center

        parse_center(v["center"], "run")
    seed = v.pop("seed", cfg.seed)
    calibration = dataclasses.replace(cfg.calibration, **v)
    _check_together(calibration, cfg.neighbors, cfg.path)
    return dataclasses.replace(cfg, seed=seed, calibration=calibration)


def with_plan_budget(cfg: RunConfig, plan_path: str | Path) -> RunConfig:
    """``cfg`` with its neighbours per model taken from a ``biasbound plan`` JSON file (``run --budget``).

    Every generator the run draws must have a planned m in the file (the smallest m reaching the plan's
    target α); the run judges the largest of them for every drawn generator (one m per run). With
    sequential looks the planned m is the last look (looks below it kept): the run may stop earlier,
    never later. The plan must have been made for the run's τ, δ, method and β (a budget for another target
    says nothing about this one). Census generators (swap unless drawn) need no budget.
    """
    import dataclasses

    from biasbound._untrusted import load_json

    path = Path(plan_path)
    try:
        plan = load_json(path)  # a regular file, bounded, no duplicate key
    except DataFormatError as exc:
        raise DataFormatError(f"not a readable plan ({exc.reason.rstrip('.')}); write one with "
                              "'biasbound plan ... --out PLAN.json'.", path=str(path)) from None
    if not isinstance(plan, dict) or not isinstance(plan.get("generators"), dict) \
            or not isinstance(plan.get("settings"), dict):
        raise DataFormatError("not a 'biasbound plan' JSON file (no 'generators' and 'settings'); write one with "
                              "'biasbound plan ... --out PLAN.json'.", path=str(path))
    c, st = cfg.calibration, plan["settings"]
    for key, mine in (("tau", c.tau), ("delta", c.delta), ("method", c.method), ("beta", c.beta)):
        if key in st and st[key] != mine:
            raise InputError(f"The '--budget' option of run names {str(path)!r}, a plan made for {key} = {st[key]!r}; "
                             f"this run certifies at {key} = {mine!r}. Plan again with the run's settings.")
    nb = cfg.neighbors
    drawn = nb.drawn
    if not drawn:
        raise InputError(f"The '--budget' option of run names {str(path)!r}, but this run draws no neighbours (swap "
                         "alone is a census); a budget sets how many are drawn.")
    ms = {}
    for g in drawn:
        row = plan["generators"].get(g)
        if not isinstance(row, dict):
            raise InputError(f"The '--budget' option of run names {str(path)!r}, which plans no m for the generator "
                             f"{g!r} this run draws (it plans {sorted(plan['generators'])}). Plan every drawn generator.")
        m = row.get("chosen_m")
        if m is None:
            raise InputError(f"The plan {str(path)!r} reaches its target α for {g!r} at no m of its grid (a census may be "
                             "needed); judge a census of it, lower the target or plan from a larger pilot.")
        if isinstance(m, bool) or not isinstance(m, int) or m < 2:
            raise DataFormatError(f"generators.{g}.chosen_m must be an integer >= 2. Got {m!r} instead.", path=str(path))
        ms[g] = m
    m = max(ms.values())
    if nb.looks:
        looks = tuple(x for x in nb.looks if x < m) + (m,)
        neighbors = dataclasses.replace(nb, m=m, looks=looks if len(looks) >= 2 else (), budget_from=str(path))
    else:
        neighbors = dataclasses.replace(nb, m=m, budget_from=str(path))
    return dataclasses.replace(cfg, neighbors=neighbors)


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a ``biasbound run`` YAML file.

    Parameters
    ----------
    path:
        The YAML file.

    Returns
    -------
    RunConfig

    Raises
    ------
    DataFormatError
        The file is missing, is not valid YAML, or a key holds a value outside its allowed
        set (one sentence naming the file, the key and the allowed values).
    """
    import yaml

    p = Path(path)
    if not p.is_file():
        raise DataFormatError("The config file does not exist; pass the path of a YAML file.", path=str(p))
    from biasbound.data._io import read_text

    try:
        raw = yaml.load(read_text(p), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as exc:
        raise DataFormatError(f"The key {exc.key!r} appears twice (first at line {exc.first}); keep one.",
                              path=str(p), line=exc.line) from None
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise DataFormatError("The config file is not valid YAML; fix the syntax.", path=str(p),
                              line=None if line is None else line + 1) from None
    return parse_config(raw, source=p)


class _DuplicateKey(Exception):
    def __init__(self, key: str, line: int, first: int) -> None:
        super().__init__(key)
        self.key, self.line, self.first = key, line, first


def _unique_key_loader() -> type:
    """A ``yaml.SafeLoader`` that refuses a mapping key given twice (PyYAML silently keeps the last)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # YAML 1.2 reads 1e-3 as a number; PyYAML (YAML 1.1) reads it as the string '1e-3', so `delta: 1e-3` was refused
    # as "must be a number. Got '1e-3'". Exponent floats without a dot are numbers here, as users (and YAML 1.2) mean.
    import re

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+$"),
                                 list("-+0123456789."))

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<: *anchor' merges a mapping (SafeLoader does it below)
                continue
            key = loader.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # an unhashable key: the base constructor reports it
            line = key_node.start_mark.line + 1
            if key in seen and key != "<<":
                raise _DuplicateKey(str(key), line, seen[key])
            seen.setdefault(key, line)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return Loader


_UniqueKeyLoader = _unique_key_loader()
