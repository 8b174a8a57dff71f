"""Check: the training commands' code gives the same numbers on another device as on the CPU.

For each dataset: two pre-training epochs of SSCL_Spec (paper and HodgeReadout editions)
and two supervised SCNN epochs, once on the CPU and once on ``--device``, from the same
seeds (the masks are drawn on the CPU in both runs, so both see the same views). Prints the
per-epoch losses of both runs, the largest relative difference, the largest difference of
the trained encoders' embeddings of all samples, and the wall time of each run; and the
largest difference of the untrained encoder's embeddings (the forward pass alone, run on
both devices from the same CPU-built encoder). A device
that follows the inputs everywhere gives differences at the level of float32 rounding
(the order of additions differs between the CPU and GPU kernels).

Run::

    python benchmarks/device_check.py --device cuda --out device_check.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topo_contrastive.evaluation.supervised import train_supervised  # noqa: E402
from topo_contrastive.training.configs import get_config  # noqa: E402
from topo_contrastive.training.data import ExperimentData, load_dataset  # noqa: E402
from topo_contrastive.training.loop import embed, pretrain  # noqa: E402


def _pretrain(data: ExperimentData, edition: str, device: str, epochs: int, seed: int):
    config = get_config("SSCL_Spec", data.name, edition)
    t0 = time.perf_counter()
    result = pretrain(data, config, seed=seed, epochs=epochs, device=device)
    seconds = time.perf_counter() - t0
    h = torch.from_numpy(embed(result.encoder, data, device=device))
    return result.losses, h, seconds


def main(device: str = "cuda", datasets: tuple[str, ...] = ("trajectory", "ocean"),
         epochs: int = 2, seed: int = 0, data_root: str = "data",
         out: Path | None = None) -> list[dict[str, Any]]:
    """Run the comparison; returns (and writes with ``out``) one row per dataset and row."""
    rows = []
    for name in datasets:
        data = ExperimentData.from_dataset(load_dataset(name, data_root), name)
        for edition in ("paper", "hodge"):
            # the untrained encoder: the forward pass alone, no training to amplify rounding
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                fresh = data.encoder(get_config("SSCL_Spec", data.name, edition))
            h_cpu = torch.from_numpy(embed(fresh, data, device="cpu"))
            h_dev = torch.from_numpy(embed(fresh, data, device=device))
            rows.append({"dataset": name, "row": f"untrained/{edition}",
                         "max_embedding_diff": float((h_cpu - h_dev).abs().max()),
                         "embedding_scale": float(h_cpu.abs().max())})  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
            cpu = _pretrain(data, edition, "cpu", epochs, seed)
            dev = _pretrain(data, edition, device, epochs, seed)
            rel = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(cpu[0], dev[0], strict=True))
            rows.append({
                "dataset": name, "row": f"SSCL_Spec/{edition}", "cpu_losses": cpu[0],
                "device_losses": dev[0], "max_rel_loss_diff": rel,
                "max_embedding_diff": float((cpu[1] - dev[1]).abs().max()),
                "embedding_scale": float(cpu[1].abs().max()),
                "cpu_s": cpu[2], "device_s": dev[2],
            })  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
        config = get_config("SCNN", name, "paper")
        split = data.split(0)
        runs = []
        for dev_name in ("cpu", device):
            t0 = time.perf_counter()
            r = train_supervised(data, config, split, seed=seed, epochs=epochs, device=dev_name)
            runs.append((r, time.perf_counter() - t0))
        rows.append({
            "dataset": name, "row": "SCNN/paper",
            "cpu_val_accuracy": runs[0][0].val_accuracy,
            "device_val_accuracy": runs[1][0].val_accuracy,
            "cpu_test_accuracy": runs[0][0].test_accuracy,
            "device_test_accuracy": runs[1][0].test_accuracy,
            "cpu_s": runs[0][1], "device_s": runs[1][1],
        })  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    if out is not None:
        Path(out).write_text(json.dumps({"device": device, "torch": torch.__version__,
                                         "rows": rows}, indent=1) + "\n")
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="the device compared with the CPU")
    p.add_argument("--datasets", nargs="+", default=["trajectory", "ocean"],
                   help="paper datasets (default: both)")
    p.add_argument("--epochs", type=int, default=2, help="epochs of each run (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of both runs (default 0)")
    p.add_argument("--data-root", default="data", help="folder of the datasets")
    p.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(a.device, tuple(a.datasets), a.epochs, a.seed, a.data_root, a.out)
