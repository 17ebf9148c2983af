"""`biasbound serve-synthetic-judge`: run the synthetic judge as a local OpenAI-compatible server.

A tool for testing judge pipelines (biasbound's or your own): point any OpenAI-compatible
client at ``http://HOST:PORT/v1``; the judge's biases (position, markdown, length, missed
inserted errors, rubric order, rerun jitter) are the known terms of
:mod:`biasbound.testing.synthetic`, and latency and faults (429, 500, timeouts, truncated and
garbage replies) can be injected to exercise retries.
"""

from __future__ import annotations


import typer
from rich.console import Console

from biasbound._exceptions import InputError
from biasbound.testing.server import FAULT_KINDS, SyntheticServerConfig, run_server
from biasbound.testing.synthetic import SyntheticJudgeConfig
from biasbound.parameters import validate_params

__all__ = ["build_config", "register"]


@validate_params(exempt={"seed": "the fake endpoint's own seed (any int)"})
def build_config(
    *,
    model: str = "biasbound-synthetic-judge",
    latency_ms: float = 0.0,
    fault_rate: float = 0.0,
    fault_kinds: str = ",".join(FAULT_KINDS),
    fault_seed: int = 0,
    timeout_sleep_s: float = 5.0,
    api_key_env: str | None = None,
    seed: int = 0,
    position_bias: float = 0.3,
    markdown_bonus: float = 0.15,
    markdown_cap: float = 0.6,
    length_coef: float = 0.25,
    error_penalty: float = 1.5,
    error_detect_prob: float = 0.8,
    rubric_focus: float = 0.3,
    jitter_sd: float = 0.2,
    batch_mode: str = "complete",
    batch_polls: int = 1,
) -> SyntheticServerConfig:
    """Build the server configuration from command-line values (validated by the config classes)."""
    kinds = tuple(k.strip() for k in fault_kinds.split(",") if k.strip())
    if not kinds:
        raise InputError(f"The '--fault-kinds' option of serve-synthetic-judge must list some of {', '.join(FAULT_KINDS)}. "
                         f"Got {fault_kinds!r} instead.")
    judge = SyntheticJudgeConfig(
        seed=seed, position_bias=position_bias, markdown_bonus=markdown_bonus, markdown_cap=markdown_cap,
        length_coef=length_coef, error_penalty=error_penalty, error_detect_prob=error_detect_prob,
        rubric_focus=rubric_focus, jitter_sd=jitter_sd,
    )
    return SyntheticServerConfig(
        judge=judge, model=model, latency_ms=latency_ms, fault_rate=fault_rate, fault_kinds=kinds,
        fault_seed=fault_seed, timeout_sleep_s=timeout_sleep_s, api_key_env=api_key_env, batch_mode=batch_mode,
        batch_polls=batch_polls,
    )


def register(app: typer.Typer) -> None:
    """Add ``serve-synthetic-judge`` to ``app``."""

    @app.command("serve-synthetic-judge")
    def serve_synthetic_judge(
        host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
        port: int = typer.Option(8011, help="Port to listen on (0 = any free port)."),
        model: str = typer.Option("biasbound-synthetic-judge", help="Model name listed at /v1/models."),
        latency_ms: float = typer.Option(0.0, "--latency-ms", help="Delay before every reply (ms)."),
        fault_rate: float = typer.Option(0.0, "--fault-rate", help="Probability that an attempt fails, in [0, 1]."),
        fault_kinds: str = typer.Option(",".join(FAULT_KINDS), "--fault-kinds", help="Comma list of fault kinds drawn evenly."),
        fault_seed: int = typer.Option(0, "--fault-seed", help="Seed of the per-attempt fault draws."),
        timeout_sleep: float = typer.Option(5.0, "--timeout-sleep", help="Seconds a 'timeout' fault sleeps."),
        api_key_env: str | None = typer.Option(None, "--api-key-env", help="Require 'Bearer <key>' with the key read from this env var."),
        seed: int = typer.Option(0, help="Seed of the hidden per-answer quality."),
        position_bias: float = typer.Option(0.3, "--position-bias", help="Bonus for the answer shown as A."),
        markdown_bonus: float = typer.Option(0.15, "--markdown-bonus", help="Bonus per markdown feature."),
        markdown_cap: float = typer.Option(0.6, "--markdown-cap", help="Cap of the markdown bonus."),
        length_coef: float = typer.Option(0.25, "--length-coef", help="Length bonus per log(1 + words)."),
        error_penalty: float = typer.Option(1.5, "--error-penalty", help="Penalty for a detected inserted error."),
        error_detect_prob: float = typer.Option(0.8, "--error-detect-prob", help="Probability an inserted error is detected."),
        rubric_focus: float = typer.Option(0.3, "--rubric-focus", help="Extra weight on the first-listed rubric factor's feature."),
        jitter_sd: float = typer.Option(0.2, "--jitter-sd", help="Std of the per-rerun jitter."),
        batch_mode: str = typer.Option("complete", "--batch-mode",
                                       help="How a batch (/v1/batches) ends: complete, expire (half answered) or fail."),
        batch_polls: int = typer.Option(1, "--batch-polls", help="A batch ends at its N-th poll (>= 1)."),
    ) -> None:
        """Serve the synthetic judge (known biases, injectable faults) at http://HOST:PORT/v1 until Ctrl-C."""
        config = build_config(
            model=model, latency_ms=latency_ms, fault_rate=fault_rate, fault_kinds=fault_kinds, fault_seed=fault_seed,
            timeout_sleep_s=timeout_sleep, api_key_env=api_key_env, seed=seed, position_bias=position_bias,
            markdown_bonus=markdown_bonus, markdown_cap=markdown_cap, length_coef=length_coef,
            error_penalty=error_penalty, error_detect_prob=error_detect_prob, rubric_focus=rubric_focus,
            jitter_sd=jitter_sd, batch_mode=batch_mode, batch_polls=batch_polls,
        )
        console = Console(stderr=True)

        def ready(url: str) -> None:
            console.print(f"synthetic judge listening at [bold]{url}[/] (model {config.model!r}); Ctrl-C to stop", highlight=False)

        run_server(config, host=host, port=port, on_ready=ready)
