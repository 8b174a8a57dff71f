"""Memory budgets of the commands: ``--harmonic-budget`` (the harmonic features) and
``--activation-budget`` (the encoder's activations in a training step), each choice said in
one line."""

from __future__ import annotations

import argparse
from typing import Any

from topo_contrastive.cli._common import mebibytes, say


def add_harmonic_budget(p: argparse.ArgumentParser, what: str) -> None:
    """``--harmonic-budget MIB``: the memory of a harmonic feature matrix (``what`` uses it)."""
    p.add_argument(
        "--harmonic-budget",
        type=mebibytes,
        default=256 * 2**20,
        metavar="MIB",
        help=f"memory for building the harmonic features of {what}, in MiB: the exact "
        "harmonic basis (about 6 * 8 * N1 * beta_1 bytes) where it fits, else a seeded sketch "
        "of at most 256 directions that keeps norms and inner products of harmonic parts; "
        "the choice is printed in one line (default: 256; fractions allowed)",
    )


def add_activation_budget(p: argparse.ArgumentParser) -> None:
    """``--activation-budget MIB``: the memory of the encoder's activations in one step."""
    p.add_argument(
        "--activation-budget",
        type=mebibytes,
        default=2**30,
        metavar="MIB",
        help="memory for the encoder's activations in one training step, in MiB: a batch "
        "whose views need more (predicted: N1 * width * (layers + 3) * 4 bytes a view) runs "
        "the encoder in chunks of views with gradient caching, the same gradients; the "
        "choice is printed in one line (default: 1024; fractions allowed)",
    )


def plan_chunks(
    args: argparse.Namespace, num_edges: int, config: Any, loud: bool = True
) -> Any:
    """The gradient caching for ``--activation-budget``
    (:class:`~topo_contrastive.training.loop.CachingPlan`; ``None``: whole batches), said
    in one line (where ``loud``) when the batch is chunked."""
    from topo_contrastive.training.gradient_caching import activation_bytes, plan_gradient_caching

    plan = plan_gradient_caching(num_edges, config, int(args.activation_budget))
    if plan is not None and loud:
        total = 2 * config.batch_size
        need = total * activation_bytes(num_edges, config)
        views = f"{plan.chunk} view" + ("" if plan.chunk == 1 else "s")
        kept = min(total, plan.kept * plan.chunk)
        say(
            f"encoder activations: chunks of {views} with gradient caching, {kept} of "
            f"{total} views kept for the backward pass and the others run twice (a batch "
            f"of {total} views needs {need / 2**30:.1f} GiB, over the "
            f"{args.activation_budget / 2**20:.0f} MiB --activation-budget)"
        )
    return plan


def harmonic_budget(args: argparse.Namespace) -> Any:
    """The context that sets ``--harmonic-budget`` as the library's budget
    (:func:`~topo_contrastive.nn.harmonic_features.use_harmonic_budget`)."""
    from topo_contrastive.nn.harmonic_features import use_harmonic_budget

    return use_harmonic_budget(int(args.harmonic_budget))


def say_harmonic(hodge: Any) -> None:
    """Print the harmonic features chosen for ``hodge``'s complex in one line (nothing
    without a harmonic space; samples with complexes of their own, ``hodge=None``, read out
    with the basis-free HodgeReadout: said so)."""
    from topo_contrastive.nn.harmonic_features import plan_harmonic_features

    if hodge is None:
        say(BASIS_FREE_LINE)
        return
    plan = plan_harmonic_features(hodge)
    if plan.kind != "none":
        say(plan.line())


#: The line said of a HodgeReadout on samples with complexes of their own.
BASIS_FREE_LINE = (
    "many complexes: the encoder reads out with the basis-free HodgeReadout (the mean over "
    "edges and every channel's gradient and curl energies; no harmonic basis, which belongs "
    "to one complex)"
)


def say_plans(args: argparse.Namespace, data: Any, config: Any, loud: bool = True) -> Any:
    """What the defaults chose for ``data``'s size, each in one line where ``loud``: the
    harmonic features of a HodgeReadout (:func:`say_harmonic`; a budget without room is
    refused here) and the gradient caching (:func:`plan_chunks`, returned)."""
    if config.readout == "hodge" and loud:
        say_harmonic(data.hodge)
    return plan_chunks(args, data.cells_per_sample, config, loud=loud)
