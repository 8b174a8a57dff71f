"""The table "The fast probe against the paper's SVM" of docs/results/probe.md, from one run.

For each of the four datasets (the synthetic trajectories, the ocean drifters and the road
networks anaheim and chicago-sketch of ``examples/road_networks.py``), the rows of
``topo-contrastive evaluate`` (the encoder, an untrained encoder of the same architecture and
seed, the raw flows, ``|flows|``, the harmonic coordinates) are probed on the same splits by
both probes of ``evaluate --probe``: ``svm`` (Table 1's protocol: ``StandardScaler +
LinearSVC``, ``C`` by stratified 10-fold CV on the training split) and ``ridge`` (the default:
a ridge classifier whose penalty is chosen by the leave-one-out squared hinge loss on the
training split, the whole path from one factorisation). The encoder is SSCL_Spec pre-trained
as ``topo-contrastive pretrain --config SSCL_Spec`` does by default (seed 0: the paper edition
on the two paper tasks, the HodgeReadout edition with the ocean task's settings on a data
file); it is saved in ``--cache`` and loaded from there on a rerun.

The unit of work is one probe of one row on one split, in split-major order (every row of
every dataset on split 0, then on split 1, ...); every finished unit is appended to
``docs/_data/probe/<dataset>.json`` at once (atomically, with its wall and CPU seconds) and a
rerun skips it, so that a run stopped early still gives the same splits to every row and both
probes (and runs on different datasets may go in parallel). The Markdown table
``docs/_data/probe/probe_comparison.md`` shows, per dataset and row, the mean test accuracy ±
the standard error of the mean over the splits that both probes finished, the difference and
whether it is within the larger of the two standard errors, and per dataset whether the two
probes rank the rows alike; the same table replaces the text between
``<!-- probe-comparison -->`` and ``<!-- /probe-comparison -->`` in docs/results/probe.md.

    python examples/road_networks.py --out data/road_networks --no-probe
    python docs/probe_comparison.py --networks data/road_networks --cache runs/probe_comparison
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from topo_contrastive._utils.files import write_json, write_text
from topo_contrastive.training.formatting import format_mean_std

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))
from select_input_skip import _data  # noqa: E402

OUT = DOCS / "_data" / "probe"
DATASETS: tuple[str, ...] = ("trajectory", "ocean", "anaheim", "chicago_sketch")
ROWS: tuple[str, ...] = ("encoder", "untrained", "raw", "abs", "harmonic")
PROBES: tuple[str, ...] = ("svm", "ridge")
NAMES = {"trajectory": "trajectories", "ocean": "ocean drifters", "anaheim": "anaheim",
         "chicago_sketch": "chicago-sketch"}  # fmt: skip
LABELS = {"encoder": "SSCL_Spec encoder", "untrained": "untrained encoder", "raw": "raw flows",
          "abs": "\\|flows\\|", "harmonic": "U_H^T x"}  # fmt: skip


def encoder_of(name: str, data: Any, task: str, cache: Path, seed: int) -> Any:
    """The SSCL_Spec encoder of ``pretrain``'s defaults on ``data``, from ``cache/<name>`` or
    pre-trained into it."""
    from topo_contrastive import io
    from topo_contrastive._utils.files import COMPLETE_MARKER
    from topo_contrastive.cli._runs import pretrain_to_folder
    from topo_contrastive.training.configs import get_config

    folder = cache / name
    if (folder / COMPLETE_MARKER).is_file():
        return io.load_encoder(folder / "encoder.pt", complex=data.hodge)[0]
    edition = "paper" if name in ("trajectory", "ocean") else "hodge"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"pre-training SSCL_Spec ({edition}) on {name}", flush=True)
    res = pretrain_to_folder(data, get_config("SSCL_Spec", task, edition), folder, seed=seed)
    return res.encoder.cpu().eval()


def features_of(row: str, encoder: Any, data: Any, seed: int) -> np.ndarray:
    """The features ``evaluate`` probes for ``row``."""
    from topo_contrastive.evaluation.probe import reference_features
    from topo_contrastive.evaluation.references import untrained_like
    from topo_contrastive.training.loop import embed

    if row == "encoder":
        return embed(encoder, data)
    if row == "untrained":
        return embed(untrained_like(encoder, data, seed), data)
    return reference_features(data, row)


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per dataset and row: mean ± SEM of both probes over the splits both finished."""
    out = []
    for name in DATASETS:
        mine = [r for r in records if r["dataset"] == name]
        for row in ROWS:
            by = {p: {r["split_seed"]: r for r in mine if r["row"] == row and r["probe"] == p}
                  for p in PROBES}  # fmt: skip
            common = sorted(set(by["svm"]) & set(by["ridge"]))
            if not common:
                continue
            entry: dict[str, Any] = {"dataset": name, "row": row, "splits": len(common),
                                     "features": by["svm"][common[0]]["features"]}  # fmt: skip
            for p in PROBES:
                acc = 100 * np.array([by[p][s]["test_accuracy"] for s in common])
                entry[p] = {"mean": float(acc.mean()), "std": float(acc.std()),
                            "sem": float(acc.std(ddof=1) / np.sqrt(acc.size)) if acc.size > 1
                            else float("nan"),
                            "seconds": float(sum(by[p][s]["seconds"] for s in common)),
                            "cpu_seconds": float(sum(by[p][s]["cpu_seconds"] for s in common))}
            diff = entry["ridge"]["mean"] - entry["svm"]["mean"]
            entry["difference"] = float(diff)
            paired = 100 * np.array([by["ridge"][s]["test_accuracy"] - by["svm"][s]["test_accuracy"]
                                     for s in common])  # fmt: skip
            entry["paired_sem"] = (float(paired.std(ddof=1) / np.sqrt(paired.size))
                                   if paired.size > 1 else float("nan"))  # fmt: skip
            entry["within_sem"] = bool(abs(diff) <= max(entry["svm"]["sem"],
                                                        entry["ridge"]["sem"]) + 1e-9)
            out.append(entry)
    return out


def ranking(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """How the two probes order the rows of one dataset: every pair of rows whose SVM means
    differ by more than the larger standard error of the two (``separated``) and whether the
    ridge probe orders each such pair alike (``same``: ``"alike"``, ``"tied"``: equal means,
    or ``"reversed"``); pairs within their standard errors are ties."""
    separated, same = [], []
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            d = a["svm"]["mean"] - b["svm"]["mean"]
            if d == 0 or abs(d) <= np.nan_to_num(max(a["svm"]["sem"], b["svm"]["sem"])):
                continue
            separated.append((a["row"], b["row"]) if d > 0 else (b["row"], a["row"]))
            r = a["ridge"]["mean"] - b["ridge"]["mean"]
            same.append("alike" if r * d > 0 else "tied" if r == 0 else "reversed")
    order = [e["row"] for e in sorted(entries, key=lambda e: -e["svm"]["mean"])]
    return {"svm_order": order, "separated": separated, "same": same,
            "agree": "reversed" not in same}  # fmt: skip


def table(summary: list[dict[str, Any]]) -> str:
    """The Markdown table and one line per dataset on the rows' order."""
    lines = ["| dataset | row | features | splits | SVM (10-fold CV) % | ridge (LOO) % | "
             "ridge - SVM (paired) | within SEM |",
             "|---|---|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    notes = []
    for name in DATASETS:
        mine = [e for e in summary if e["dataset"] == name]
        for e in mine:
            s, r = e["svm"], e["ridge"]
            lines.append(
                f"| {NAMES[name]} | {LABELS[e['row']]} | {e['features']:,} | {e['splits']} | "
                f"{format_mean_std(s['mean'], s['sem'])} | "
                f"{format_mean_std(r['mean'], r['sem'])} | "
                f"{e['difference']:+.1f} ± {e['paired_sem']:.1f} | "
                f"{'yes' if e['within_sem'] else 'no'} |"
            )
        if mine:
            rk = ranking(mine)
            pairs = list(zip(rk["separated"], rk["same"], strict=True))
            flipped = [f"{a} > {b}" for (a, b), how in pairs if how == "reversed"]
            tied = [f"{a} > {b}" for (a, b), how in pairs if how == "tied"]
            verdict = ("the ridge probe orders every one alike" if not flipped and not tied
                       else "the ridge probe reverses " + ", ".join(flipped) if flipped
                       else "the ridge probe orders the others alike and ties "
                       + ", ".join(tied))  # fmt: skip
            notes.append(f"- {NAMES[name]}: {len(pairs)} pair(s) of rows the SVM separates by "
                         f"more than their standard errors; {verdict}.")  # fmt: skip
    if summary:
        one = sum(e["within_sem"] for e in summary)
        two = sum(abs(e["difference"]) <= 2 * np.nan_to_num(max(e["svm"]["sem"],
                                                                  e["ridge"]["sem"])) + 1e-9
                  for e in summary)  # fmt: skip
        notes.append(f"- Every dataset: the ridge mean within one standard error of the SVM's "
                     f"on {one} of {len(summary)} rows, within two on {two}.")  # fmt: skip
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def main(networks: Path, datasets: list[str], splits: int, seed: int, data_root: str,
         cache: Path, out: Path = OUT, probes: tuple[str, ...] = PROBES,
         page: Path | None = DOCS / "results" / "probe.md") -> list[dict[str, Any]]:  # fmt: skip
    """Run the missing units; write ``out/<dataset>.json`` and ``out/probe_comparison.md``
    and the table into ``page`` (``None``: not); return the summary."""
    from topo_contrastive.evaluation.probe import probe_splits

    out.mkdir(parents=True, exist_ok=True)
    records = []
    for name in DATASETS:
        path = out / f"{name}.json"
        records += json.loads(path.read_text())["records"] if path.is_file() else []
    done = {(r["dataset"], r["row"], r["probe"], r["split_seed"]) for r in records}
    seeds = list(range(splits))
    todo_total = sum(1 for n in datasets for s in seeds for row in ROWS for p in probes
                     if (n, row, p, s) not in done)  # fmt: skip
    bar = tqdm(total=todo_total, desc="probe comparison", unit="probe")
    loaded: dict[str, tuple[Any, Any]] = {}
    feats: dict[tuple[str, str], np.ndarray] = {}
    for s in seeds:  # split-major across the datasets: a run stopped early is balanced
        for name in datasets:
            for row in ROWS:
                for p in probes:
                    if (name, row, p, s) in done:
                        continue
                    if name not in loaded:
                        data, task = _data(name, networks, data_root)
                        loaded[name] = (data, encoder_of(name, data, task, cache, seed))
                    data, encoder = loaded[name]
                    if (name, row) not in feats:
                        feats[name, row] = features_of(row, encoder, data, seed)
                    w0, c0 = time.perf_counter(), time.process_time()
                    (rec,) = probe_splits(feats[name, row], data, [s], probe=p)
                    records.append({"dataset": name, "row": row, "probe": p,
                                    "features": int(feats[name, row].shape[1]), **rec,
                                    "seconds": round(time.perf_counter() - w0, 3),
                                    "cpu_seconds": round(time.process_time() - c0, 3)})  # fmt: skip
                    write_json(out / f"{name}.json", {
                        "settings": {"seed": seed, "splits": splits,
                                     "threads": torch.get_num_threads()},
                        "records": [r for r in records if r["dataset"] == name]})  # fmt: skip
                    bar.set_postfix(dataset=name, row=row, probe=p, split=s)
                    bar.update(1)
    bar.close()
    summary = summarize(records)
    text = table(summary)
    write_text(out / "probe_comparison.md", text)
    if page is not None:
        update_page(text, page)
    return summary


def update_page(text: str, page: Path) -> None:
    """Put ``text`` between the markers ``<!-- probe-comparison -->`` and
    ``<!-- /probe-comparison -->`` of ``page``.

    Raises:
        ValueError: the page lacks the markers.
    """
    content = page.read_text(encoding="utf-8")
    start, end = "<!-- probe-comparison -->", "<!-- /probe-comparison -->"
    if start not in content or end not in content:
        raise ValueError(f"{page} has no markers {start} ... {end}")
    head, rest = content.split(start, 1)
    _, tail = rest.split(end, 1)
    write_text(page, f"{head}{start}\n{text.strip()}\n{end}{tail}")


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", type=Path, default=Path("data/road_networks"),
                   help="folder of the road networks' data files (default: data/road_networks)")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS,
                   help="datasets (default: all four)")
    p.add_argument("--splits", type=int, default=16,
                   help="splits 0..N-1, evaluate's default count (default: 16)")
    p.add_argument("--probes", nargs="+", default=list(PROBES), choices=PROBES,
                   help="probes to run (default: both)")
    p.add_argument("--seed", type=int, default=0, help="seed of pre-training (default 0)")
    p.add_argument("--data-root", default="data", help="dataset folder (default: data)")
    p.add_argument("--cache", type=Path, default=Path("runs/probe_comparison"),
                   help="folder of the pre-trained encoders (default: runs/probe_comparison)")
    p.add_argument("--table-only", action="store_true",
                   help="only rewrite the Markdown table from the records")
    return p.parse_args()


if __name__ == "__main__":
    a = _parse()
    main(a.networks, [] if a.table_only else a.datasets, a.splits, a.seed, a.data_root, a.cache,
         probes=tuple(a.probes))  # fmt: skip
