"""Where the time of one contrastive training step goes (``torch.profiler``, CPU).

The step is the paper-depth trajectory step of Table 1: 100 flows of the synthetic trajectory
task, two uniformly masked views in one batch of 200, the 4-layer SCNN encoder (width 64,
``K_down = K_up = 2``, tanh, bias, mean readout), the projection head, InfoNCE, backward and
an Adam step. After warm-up steps, ``--steps`` steps are profiled; the script prints the top
operators by self CPU time (averaged per step) and the time
and the share spent inside the SCNN layers, as Markdown.

Run::

    python benchmarks/profile_scnn.py --data-root data          # about 1 minute
    python benchmarks/profile_scnn.py --out benchmarks/results/profile_scnn.md
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import torch
from torch_geometric.data import Batch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topo_contrastive.nn import ProjectionHead  # noqa: E402
from topo_contrastive.training.configs import get_config  # noqa: E402
from topo_contrastive.training.data import ExperimentData, load_dataset  # noqa: E402
from topo_contrastive.training.loop import (  # noqa: E402
    ContrastiveModel,
    _make_loss,
    make_optimizer,
)

warnings.filterwarnings("ignore")


def main(
    data_root: str = "data",
    layers: int = 4,
    batch_size: int = 100,
    steps: int = 3,
    top: int = 15,
    threads: int = 0,
    seed: int = 0,
    out: Path | None = None,
) -> str:
    """Profile ``steps`` training steps and return the Markdown report."""
    from torch.profiler import ProfilerActivity, profile

    if threads > 0:
        torch.set_num_threads(threads)
    data = ExperimentData.from_dataset(load_dataset("trajectory", data_root), "trajectory")
    cfg = get_config("SCL", "trajectory", num_layers=layers, bias=True, readout="mean")
    torch.manual_seed(seed)
    encoder = data.encoder(cfg)
    head = ProjectionHead(encoder.out_channels, cfg.projection_channels, cfg.projection_channels)
    model = ContrastiveModel(encoder, head)
    loss_fn = _make_loss(cfg, distributed=False)
    opt = make_optimizer(model.parameters(), cfg)
    views = data.contrastive_views(cfg, torch.Generator().manual_seed(seed))
    dataset = data.contrastive_dataset(views)
    batch = Batch.from_data_list([dataset[i] for i in range(batch_size)])  # the collate

    x_device = torch.device("cpu")

    def one_step() -> None:
        view1, view2 = views.draw(batch)
        x, both = torch.cat([view1, view2]), data.laplacians(batch, x_device).repeat(2)
        _, z = model(x, both, both.batch_vector(2 * batch_size, x.device))  # [2B, D]
        loss = loss_fn(z[:batch_size], z[batch_size:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(2):
        one_step()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            one_step()
    wall = (time.perf_counter() - t0) / steps
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) / steps / 1e6
    rows = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)
    lines = [
        f"Profile of one contrastive training step: trajectory task, {batch_size} flows x 2 "
        f"views, {layers}-layer SCNN (width 64, K = 2, tanh, bias, mean readout), InfoNCE, Adam; "
        f"{torch.get_num_threads()} threads, torch {torch.__version__}. Wall time per step "
        f"{wall:.3f} s (with the profiler on); self CPU time per step {total:.3f} s.",
        "",
        "| operator | self CPU s / step | share | calls / step |",
        "|---|---|---|---|",
    ]
    for e in rows[:top]:
        t = e.self_cpu_time_total / steps / 1e6
        lines.append(f"| `{e.key}` | {t:.3f} | {100 * t / total:.1f} % | {e.count // steps} |")
    layer_time = sum(
        e.cpu_time_total for e in events if e.key in ("_SCNNLayer", "_SCNNLayerBackward")
    ) / steps / 1e6
    lines.append("")
    lines.append(
        f"Inside the SCNN layers' fused forward and backward functions: {layer_time:.3f} s per "
        f"step ({100 * layer_time / total:.0f} % of the self CPU time); the rest is masks, "
        "readout, head, loss, optimiser and autograd bookkeeping."
    )
    report = "\n".join(lines)
    print(report)
    if out is not None:
        from topo_contrastive._utils.files import write_text

        write_text(out, report + "\n")
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-root", default="data", help="folder of the datasets (default: data)")
    p.add_argument("--layers", type=int, default=4, help="SCNN layers (default 4)")
    p.add_argument("--batch-size", type=int, default=100, help="flows per step (default 100)")
    p.add_argument("--steps", type=int, default=3, help="profiled steps (default 3)")
    p.add_argument("--top", type=int, default=15, help="operators listed (default 15)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    p.add_argument("--seed", type=int, default=0, help="seed of weights and masks (default 0)")
    p.add_argument("--out", type=Path, default=None, help="write the Markdown report here")
    return p.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    main(a.data_root, a.layers, a.batch_size, a.steps, a.top, a.threads, a.seed, a.out)
