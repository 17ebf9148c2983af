"""Generator registry and Hamming-1 neighbour sampling for new judge runs."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from biasbound._exceptions import InputError
from biasbound._validation import check_int, resolve_rng
from biasbound.neighbors.agreeable import AgreeableGenerator
from biasbound.neighbors.base import CompleteFn, JudgeItem, NeighborGenerator, Perturbation
from biasbound.neighbors.formatting import FormatGenerator
from biasbound.neighbors.paraphrase import ParaphraseGenerator
from biasbound.neighbors.rerun import RerunGenerator
from biasbound.neighbors.schematic import SchematicGenerator
from biasbound.neighbors.swap import SwapGenerator
from biasbound.parameters import validate_params

__all__ = [
    "GENERATORS",
    "apply_neighbor",
    "make_generator",
    "sample_indices",
    "sample_neighbors",
    "sample_neighbors_async",
]

#: Generator name -> class.
GENERATORS: dict[str, type[NeighborGenerator]] = {
    "agreeable": AgreeableGenerator,
    "format": FormatGenerator,
    "paraphrase": ParaphraseGenerator,
    "rerun": RerunGenerator,
    "schematic": SchematicGenerator,
    "swap": SwapGenerator,
}


@validate_params
def make_generator(name: str, *, seed: int | None = None, **options: Any) -> NeighborGenerator:
    """Build a generator by name.

    Parameters
    ----------
    name:
        One of ``GENERATORS``: agreeable, format, paraphrase, rerun, schematic, swap.
    seed:
        Base seed (``None`` draws one; read it back from ``generator.seed``).
    **options:
        Keyword options of the generator class (e.g. ``max_attempts`` for paraphrase,
        ``operations`` for format, ``mode`` for schematic).

    Returns
    -------
    NeighborGenerator
    """
    if name not in GENERATORS:
        allowed = ", ".join(repr(n) for n in sorted(GENERATORS))
        raise InputError(f"The 'name' parameter of make_generator must be one of {allowed}. Got {name!r} instead.")
    try:
        return GENERATORS[name](seed=seed, **options)
    except TypeError as exc:
        if "unexpected keyword argument" in str(exc):
            raise InputError(f"The options of make_generator({name!r}) are not accepted: {exc}.") from exc
        raise


def sample_indices(n: int, m: int, rng: np.random.Generator | int | None = None, *, replace: bool = False) -> tuple[np.ndarray, int]:
    """Draw the ``m`` item indices that will each be perturbed once.

    Parameters
    ----------
    n:
        Number of items in the context.
    m:
        Number of neighbours.
    rng:
        Generator, seed or ``None``.
    replace:
        ``False`` (default): without replacement while ``m <= n``; when ``m > n``, in
        passes, each pass a fresh random permutation of all items (so every item is used
        ``m // n`` or ``m // n + 1`` times, never two more than another). ``True``:
        i.i.d. uniform draws with replacement.

    Returns
    -------
    indices, seed
    """
    n = check_int(n, "n", "sample_indices", low=1)
    m = check_int(m, "m", "sample_indices", low=1)
    gen, seed = resolve_rng(rng)
    if replace:
        return gen.integers(n, size=m), seed
    if m <= n:
        return gen.choice(n, size=m, replace=False), seed
    passes = [gen.permutation(n) for _ in range(-(-m // n))]
    return np.concatenate(passes)[:m], seed


def _check_items(items: Sequence[JudgeItem], where: str) -> list[JudgeItem]:
    items = list(items)
    if not items:
        raise InputError(f"The 'items' parameter of {where} must hold at least one JudgeItem. Got 0 instead.")
    for k, it in enumerate(items):
        if not isinstance(it, JudgeItem):
            raise TypeError(f"The 'items' parameter of {where} must hold JudgeItem objects. Got {type(it).__name__} at index {k} instead.")
    return items


def _plan(
    items: Sequence[JudgeItem], generator: NeighborGenerator, m: int, rng: Any, replace: bool, where: str
) -> tuple[list[JudgeItem], int, list[int], list[int]]:
    items = _check_items(items, where)
    if not isinstance(generator, NeighborGenerator):
        raise TypeError(f"The 'generator' parameter of {where} must be a NeighborGenerator. Got {type(generator).__name__} instead.")
    m = check_int(m, "m", where, low=1)
    gen, seed = resolve_rng(rng)
    indices, _ = sample_indices(len(items), m, gen, replace=replace)
    child_seeds = gen.integers(2**63, size=m)
    return items, seed, [int(i) for i in indices], [int(s) for s in child_seeds]


def _annotate(p: Perturbation, index: int, draw: int, seed: int) -> Perturbation:
    p.details.setdefault("sampling", {"index": index, "draw": draw, "sample_seed": seed})
    return p


def sample_neighbors(
    items: Sequence[JudgeItem],
    generator: NeighborGenerator,
    m: int,
    rng: np.random.Generator | int | None = None,
    *,
    replace: bool = False,
) -> list[tuple[int, Perturbation]]:
    """Draw ``m`` Hamming-1 neighbours of the context ``items``.

    Parameters
    ----------
    items:
        The judgment context ``D``.
    generator:
        A synchronous generator (swap, format, schematic, rerun); LLM generators need
        :func:`sample_neighbors_async`.
    m:
        Number of neighbours.
    rng:
        Generator, seed or ``None``; the seed is recorded in each perturbation's
        ``details["sampling"]["sample_seed"]``.
    replace:
        See :func:`sample_indices` (default: without replacement while ``m <= n``,
        balanced passes when ``m > n``).

    Returns
    -------
    list of (item_index, Perturbation)
        Neighbour ``k`` is ``apply_neighbor(items, *result[k])``: ``D`` with exactly the
        one item at ``item_index`` replaced. Each draw has its own child seed, so an item
        drawn twice (``m > n``) gets independent perturbations. Perturbations whose
        ``status`` is not ``"applied"`` are returned too (counted, not hidden).
    """
    if generator.requires_llm:
        raise TypeError(f"The {generator.name!r} generator needs an LLM: use sample_neighbors_async(..., complete=...).")
    items, seed, indices, seeds = _plan(items, generator, m, rng, replace, "sample_neighbors")
    return [
        (idx, _annotate(generator.perturb(items[idx], s), idx, k, seed)) for k, (idx, s) in enumerate(zip(indices, seeds))
    ]


async def sample_neighbors_async(
    items: Sequence[JudgeItem],
    generator: NeighborGenerator,
    m: int,
    rng: np.random.Generator | int | None = None,
    complete: CompleteFn | None = None,
    *,
    replace: bool = False,
    concurrency: int = 8,
) -> list[tuple[int, Perturbation]]:
    """Async :func:`sample_neighbors` for any generator; ``complete`` feeds the LLM ones.

    Draws the same indices and child seeds as :func:`sample_neighbors` for the same
    ``rng``; at most ``concurrency`` perturbations run at once; results keep draw order.
    """
    concurrency = check_int(concurrency, "concurrency", "sample_neighbors_async", low=1)
    items, seed, indices, seeds = _plan(items, generator, m, rng, replace, "sample_neighbors_async")
    gate = asyncio.Semaphore(concurrency)

    async def one(k: int, idx: int, s: int) -> tuple[int, Perturbation]:
        async with gate:
            p = await generator.perturb_async(items[idx], s, complete)
        return idx, _annotate(p, idx, k, seed)

    return list(await asyncio.gather(*(one(k, idx, s) for k, (idx, s) in enumerate(zip(indices, seeds)))))


def apply_neighbor(items: Sequence[JudgeItem], index: int, perturbation: Perturbation) -> list[JudgeItem]:
    """Return the neighbouring context: ``items`` with item ``index`` replaced by the perturbed item."""
    items = list(items)
    index = check_int(index, "index", "apply_neighbor", low=0, high=len(items) - 1)
    if perturbation.item.item_id != items[index].item_id:
        raise InputError(
            f"The 'perturbation' given to apply_neighbor is for item {perturbation.item.item_id!r}, "
            f"but index {index} holds item {items[index].item_id!r}."
        )
    items[index] = perturbation.item
    return items
