"""Next-node trajectory prediction with a pre-trained encoder, beside scratch training and
baselines.

The second downstream task (SCoNe's task and data preparation,
:mod:`experiments.studies.next_node.samples`): per dataset and seed, SSCL_Spec (paper edition)
is pre-trained on all flows without labels, then a
:class:`~experiments.studies.next_node.NextNodeHead` is trained on its per-edge features,
frozen or fine-tuned, beside the same SCNN trained from scratch, a first-order Markov chain and a
uniform choice; on the dataset's standard split (the ocean drifters: 20 % of the training paths set
aside for validation), the epoch chosen on validation, the test split only scored. Every finished
cell is appended to ``<out>/next_node.json`` at once (atomically) and a rerun skips it (a folder
of other epochs, shape, encoder learning rate or ``--quick`` is refused, naming them);
``next_node.md`` holds the table (mean ± std over the seeds). ``--fractions`` label only part of
the training and validation prefixes (label efficiency of the reuse; a validation part under 5
prefixes is dropped and the last epoch kept, see ``labelled_split``). The untrained row is the same
architecture, re-initialised and frozen with the head trained (what pre-training adds to the frozen
reuse). ``--shape scone`` gives every trained row SCoNe's shape (3 layers x 16, one Laplacian power
per side, no bias) instead of the paper encoder's. ``--figure`` also draws a few test paths of each
dataset with the next node the fine-tuned row predicts and the true one
(``<out>/next_node_<dataset>.png``; the first seed at the largest fraction, the same training run
as its table cell).

    python examples/next_node_prediction.py --datasets trajectory --seeds 1 --epochs 50
    python examples/next_node_prediction.py --datasets ocean --seeds 1 --epochs 50 --figure
    python examples/next_node_prediction.py --seeds 5 --epochs 50 --fractions 0.01 0.1 1
    python examples/next_node_prediction.py --seeds 5 --epochs 50 --fractions 0.01 0.1 1 \
        --shape scone --out results/next_node_scone_shape
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from topo_contrastive.training.formatting import format_mean_std

ROWS = ("uniform", "markov", "scratch", "untrained", "frozen", "finetune")
LABELS = {
    "uniform": "uniform among the neighbours",
    "markov": "Markov chain (first order)",
    "scratch": "SCNN + head from scratch",
    "untrained": "untrained SCNN, frozen + head",
    "frozen": "SSCL_Spec pre-trained, frozen + head",
    "finetune": "SSCL_Spec pre-trained, fine-tuned + head",
}


def _table(records: list[dict[str, Any]]) -> str:
    """Mean ± std over the seeds per dataset, row and labelled fraction (one column each)."""
    fractions = sorted({r.get("fraction", 1.0) for r in records})
    lines = ["| dataset | row | " + " | ".join(f"{100 * f:g} % (seeds)" for f in fractions)
             + " |", "|---|---|" + "---:|" * len(fractions)]  # fmt: skip
    for ds in dict.fromkeys(r["dataset"] for r in records):
        for row in ROWS:
            cells = []
            for f in fractions:
                acc = [100 * r["test_accuracy"] for r in records
                       if (r["dataset"], r["row"], r.get("fraction", 1.0)) == (ds, row, f)]
                cells.append(f"{format_mean_std(acc)} ({len(acc)})" if acc
                             else "")  # fmt: skip
            if any(cells):
                lines.append(f"| {ds} | {LABELS[row]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw_predictions(data: Any, samples: Any, split: dict[str, np.ndarray], predictions: Any,
                     accuracy: float, path: Path, panels: int = 4) -> None:  # fmt: skip
    """Draw ``panels`` test samples: the prefix (a path, dot at its start), the candidates of
    its last node (open circles), the true next node (green star) and the predicted one (red
    cross; on the star when right). Half the panels show hits and half misses where both exist,
    the earliest test samples of each. ``predictions`` (the kept epoch's
    ``test_predictions``) follow ``split["test"]``; ``accuracy`` (a fraction) goes in the title."""
    from matplotlib.figure import Figure

    from topo_contrastive._utils.files import atomic_write
    from topo_contrastive.datasets.plot import plot_complex

    te = np.asarray(split["test"])
    pred = np.asarray(predictions)
    hit = pred == samples.targets[te].numpy()
    order = list(np.flatnonzero(hit)[: panels // 2]) + list(np.flatnonzero(~hit)[: panels // 2])
    order += [k for k in range(te.size) if k not in order][: panels - len(order)]
    pos = np.asarray(data.dataset.pos)
    fig = Figure(figsize=(4 * len(order), 4.4))
    for i, k in enumerate(order):
        ax = fig.add_subplot(1, len(order), i + 1)
        j = int(te[k])
        plot_complex(data.complex, pos=pos, paths=[samples.prefixes[j]], ax=ax)
        cand = np.flatnonzero(samples.candidates[j].numpy())
        ax.scatter(*pos[cand].T, s=70, facecolors="none", edgecolors="k", zorder=6,
                   label="neighbours of the last node (candidates)")  # fmt: skip
        ax.scatter(*pos[int(samples.targets[j])], s=160, marker="*", c="tab:green", zorder=7,
                   label="true next node")  # fmt: skip
        ax.scatter(*pos[pred[k]], s=90, marker="x", c="tab:red", zorder=8,
                   label="predicted")  # fmt: skip
        ax.set_title(f"test path {j}: {'right' if hit[k] else 'wrong'}", fontsize=9)
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"{data.name}: next node of the fine-tuned pre-trained encoder "
                 f"(test accuracy {100 * accuracy:.1f} %)", fontsize=10)  # fmt: skip
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight"))


#: Encoder shapes for the reuse (``--shape``): the paper edition's encoder, or the shape of
#: the SCoNe row (TopoModelX's ``SCoNe`` as ``predict-next --scone`` builds it: 3 layers of
#: 16 channels, one power of each Laplacian, tanh, no bias, the orientation-equivariant form
#: of Roddenberry et al. 2021) with the paper edition's pre-training otherwise.
SHAPES: dict[str, dict[str, Any]] = {
    "paper": {},
    "scone": dict(num_layers=3, hidden_channels=16, K_down=1, K_up=1, bias=False),
}


def _encoder(data: Any, name: str, seed: int, quick: bool, cache: Path,
             shape: str = "paper") -> Any:  # fmt: skip
    """SSCL_Spec (paper edition, in the encoder shape ``shape`` of :data:`SHAPES`)
    pre-trained on all flows with ``seed``; kept in ``cache`` so that every fraction of a
    seed reuses the same encoder."""
    import torch

    from topo_contrastive.training import get_config, pretrain

    cfg = get_config("SSCL_Spec", name, **SHAPES[shape])
    tag = "" if shape == "paper" else f"-{shape}"
    path = cache / f"{name}{tag}-seed{seed}{'-quick' if quick else ''}.pt"
    if path.is_file():
        with torch.random.fork_rng(devices=[]):
            encoder = data.encoder(cfg)
        encoder.load_state_dict(torch.load(path, weights_only=True))
        return encoder.eval()
    encoder = pretrain(data, cfg, seed=seed, epochs=1 if quick else None).encoder.cpu().eval()
    from topo_contrastive._utils.files import atomic_write

    cache.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: torch.save(encoder.state_dict(), tmp))
    return encoder


def main(datasets: list[str], seeds: int, epochs: int, out: Path, data_root: str, seed: int = 0,
         quick: bool = False, figure: bool = False, fractions: tuple[float, ...] = (1.0,),
         shape: str = "paper", encoder_lr: float = 1e-3) -> list[dict[str, Any]]:  # fmt: skip
    """Run the missing cells; returns every record. ``quick``: a small trajectory complex
    (150 points, 20 / 10 / 10 paths), 1 pre-training epoch (a smoke test, not a result).
    ``fractions``: labelled fractions of the training (and validation) prefixes
    (:func:`~experiments.studies.next_node.labelled_split`), smallest first, every
    seed of a fraction before the next fraction (so an interrupted run has whole fractions).
    ``shape``: the encoder's shape, a key of :data:`SHAPES` (the same for every trained row;
    the records carry it and a folder holds one shape). ``encoder_lr``: the fine-tuned row's
    encoder learning rate (default 1e-3; recorded with the fine-tuned cells, and a folder
    holds one value).

    Raises:
        ValueError: an unknown ``shape``; ``out`` holding a run of other settings (epochs,
            shape, encoder_lr, quick: named), or other files.
    """
    if shape not in SHAPES:
        raise ValueError(f"`shape` must be one of {tuple(SHAPES)}, got {shape!r}")
    from experiments.run_folder import RunFolder
    from topo_contrastive._utils.outputs import output_run

    settings = {"epochs": epochs, "shape": shape, "encoder_lr": encoder_lr, "quick": quick}
    with output_run(out, resume=True) as folder:  # a lock: one run at a time writes there
        run = RunFolder(folder, "next-node-prediction", settings, records="next_node.json",
                        resume=True, restart=f"choose another --out, or remove '{out}' to "
                        "start over")  # fmt: skip
        run.start()
        for name in datasets:
            _dataset(run, name, seeds, epochs, data_root, seed, quick, figure, fractions,
                     shape, encoder_lr)  # fmt: skip
            run.write_tables("next_node", markdown=_table(run.records))
        run.finish(f"{len(datasets)} dataset(s) done")
    return run.records


def _dataset(run: Any, name: str, seeds: int, epochs: int, data_root: str, seed: int,
             quick: bool, figure: bool, fractions: tuple[float, ...], shape: str,
             encoder_lr: float) -> None:  # fmt: skip
    """The missing cells of the dataset ``name`` (and its figure), saved into ``run``."""
    from experiments.studies.next_node import next_node_samples
    from experiments.studies.next_node import rows as nn_
    from topo_contrastive.training.data import ExperimentData, load_dataset

    small = dict(trajectory_points=150, trajectory_split=(20, 10, 10)) if quick else {}
    data = ExperimentData.from_dataset(load_dataset(name, data_root=data_root, **small), name)
    encoders = run.folder / "encoders"
    for f in sorted(fractions):
        for s in range(seed, seed + seeds):
            todo = [row for row in ROWS if not run.done(f"{name}|{row}|{s}|{f:g}")]
            draw = figure and s == seed and f == max(fractions)
            if not todo and not draw:
                continue
            samples = next_node_samples(data.complex, data.dataset.paths(), seed=s)
            split = nn_.labelled_split(nn_.next_node_split(data, s), f, s)
            encoder, drawn = None, None
            for row in tqdm(todo, desc=f"{name} {100 * f:g} % seed {s}"):
                t0 = time.perf_counter()
                if encoder is None and row not in ("uniform", "markov"):
                    # (scratch re-initialises a copy from the seed: the architecture is used)
                    encoder = _encoder(data, name, s, quick, encoders, shape)
                rec: dict[str, Any] = {"dataset": name, "row": row, "seed": s, "shape": shape,
                                       "fraction": f, "labelled": int(split["train"].size),
                                       "selected_on": int(split["val"].size)}  # fmt: skip
                if row == "finetune":
                    rec["encoder_lr"] = encoder_lr
                rec.update(nn_.next_node_cell(row, data, samples, encoder, split,
                                              epochs=epochs, seed=s, encoder_lr=encoder_lr,
                                              predictions=draw and row == "finetune"))
                if "test_predictions" in rec:  # the figure's run: not kept in the JSON
                    drawn = (rec.pop("test_predictions"), rec["test_accuracy"])
                if "epoch" in rec:
                    rec["epochs"] = epochs
                rec["seconds"] = round(time.perf_counter() - t0, 1)
                run.save(f"{name}|{row}|{s}|{f:g}", rec)
                tqdm.write(f"{name} {100 * f:g} % seed {s} {row}: "
                           f"{100 * rec['test_accuracy']:.1f} %")  # fmt: skip
            if draw:
                if drawn is None:  # the fine-tuned cell was done before: train it again
                    if encoder is None:
                        encoder = _encoder(data, name, s, quick, encoders, shape)
                    cell = nn_.next_node_cell("finetune", data, samples, encoder, split,
                                              epochs=epochs, seed=s, predictions=True,
                                              encoder_lr=encoder_lr)
                    drawn = (cell["test_predictions"], cell["test_accuracy"])
                draw_predictions(data, samples, split, *drawn,
                                 run.folder / f"next_node_{name}.png")


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=["trajectory", "ocean"],
                   help="paper datasets (default: trajectory ocean)")
    p.add_argument("--seeds", type=int, default=5, help="seeds (split, cut, init; default 5)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--epochs", type=int, default=100, help="head training epochs (default 100)")
    p.add_argument("--out", type=Path, default=Path("results/next_node"),
                   help="output folder (default: results/next_node)")
    p.add_argument("--data-root", default="data", help="dataset folder (default: data)")
    p.add_argument("--fractions", type=float, nargs="+", default=[1.0],
                   help="labelled fractions of the training and validation prefixes, in (0, 1] "
                   "(label efficiency of the reuse; default: 1)")
    p.add_argument("--figure", action="store_true",
                   help="also draw predicted next nodes of a few test paths per dataset "
                   "(<out>/next_node_<dataset>.png; fine-tuned row, first seed)")
    p.add_argument("--shape", choices=tuple(SHAPES), default="paper",
                   help="encoder shape of every trained row: paper (the paper edition's SCNN, "
                   "default) or scone (SCoNe's: 3 layers x 16, one Laplacian power per side, "
                   "no bias), pre-trained the same way")
    p.add_argument("--encoder-lr", type=float, default=1e-3,
                   help="encoder learning rate of the fine-tuned row (default 1e-3; the head's "
                   "is 1e-2, as is a scratch encoder's)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: a small trajectory task, 1 seed, 2 epochs, with the figure "
                   "(not a result)")
    return p.parse_args()


if __name__ == "__main__":
    a = _parse()
    if a.quick:
        a.datasets, a.seeds, a.epochs, a.figure = ["trajectory"], 1, 2, True
        a.fractions = [0.5, 1.0]
    main(a.datasets, a.seeds, a.epochs, a.out, a.data_root, a.seed, quick=a.quick,
         figure=a.figure, fractions=tuple(a.fractions), shape=a.shape, encoder_lr=a.encoder_lr)
