"""The flows go from the command line to the loss passing each module once.

A ``pretrain`` command runs under a profiler that records, at every call of a function of
the package, the chain of the package's modules on the stack (consecutive frames of one
module collapsed). Below the training loop, a module that appears twice in one chain is a
path the flows leave and come back to (``training -> data -> training``): the one-pipeline
rule forbids it. The command's progress display (a callback the loop calls with the epoch's
loss, no flows) is left out. The chains that reach the loss, the encoder and the masks are
also checked to pass the modules of the README's pipeline, from the command.
"""

from __future__ import annotations

import sys

from tests._commands import main
from tests._tiny import TINY_FLAGS

PACKAGE = "topo_contrastive"


def _module(frame) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if name == PACKAGE or name.startswith(PACKAGE + ".") else None


def _chain(frame) -> tuple[str, ...]:
    """The package modules on the stack of ``frame``, outermost first, repeats collapsed."""
    mods = []
    while frame is not None:
        mod = _module(frame)
        if mod is not None and (not mods or mods[-1] != mod):
            mods.append(mod)
        frame = frame.f_back
    return tuple(reversed(mods))


def _record(argv: list[str]) -> set[tuple[str, ...]]:
    chains: set[tuple[str, ...]] = set()

    def profiler(frame, event, arg):
        if event == "call" and _module(frame) is not None:
            chains.add(_chain(frame))

    sys.setprofile(profiler)
    try:
        rc = main(argv)
    finally:
        sys.setprofile(None)
    assert rc == 0
    return chains


def test_a_pretrain_command_passes_each_module_once(tmp_path):
    data_root = tmp_path / "data"
    argv = ["pretrain", "--dataset", "trajectory", "--config", "SSCL_Spec", "--epochs", "1",
            "--hidden-channels", "8", "--out", str(tmp_path / "run"),
            "--data-root", str(data_root), *TINY_FLAGS, "--no-progress"]  # fmt: skip
    loop = "topo_contrastive.training.loop"
    chains = {
        c for c in _record(argv) if loop in c and not c[-1].startswith("topo_contrastive.cli")
    }
    assert len(chains) > 20  # the step's calls were seen
    twice = sorted(c for c in chains if len(set(c)) < len(c))
    assert not twice, "chains that come back to a module:\n" + "\n".join(
        " -> ".join(m.removeprefix(PACKAGE + ".") for m in c) for c in twice[:10]
    )
    # the step is the README's pipeline: transform, encoder, loss, called from the loop
    for stage in (
        "topo_contrastive.transforms.contrastive_views",
        "topo_contrastive.transforms.hodge_spectral_mask",
        "topo_contrastive.nn.scnn",
        "topo_contrastive.losses.hodge_debiased_info_nce",
    ):
        reached = [c for c in chains if stage in c and loop in c]
        assert reached, f"{stage} is never called from the training loop"
        assert all(c.index(loop) < c.index(stage) for c in reached)
        assert all(c[0] == "topo_contrastive.cli" or c[0].startswith("topo_contrastive.cli.")
                   for c in reached)  # fmt: skip
