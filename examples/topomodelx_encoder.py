"""A TopoModelX model as the encoder of the contrastive pipeline.

TopoModelX's ``SCNNLayer`` computes the same function as
:class:`topo_contrastive.nn.SCNNConv` but takes one sample ``[N1, C]`` at a time.
:class:`TopoModelXEncoder` wraps a stack of them behind the interface of our
:class:`topo_contrastive.nn.SCNN` (``forward(x, laplacians, batch=None) -> h``), so
it can replace it anywhere in the pipeline, here between the library's augmentation
and loss:

    PyG DataLoader of Data(x_1=flow, y=label)
    -> topo_contrastive.transforms.EdgeFlowMask (two masked views of each Batch)
    -> TopoModelXEncoder (TopoModelX SCNNLayers) -> h
    -> topo_contrastive.nn.ProjectionHead -> z
    -> topo_contrastive.losses.InfoNCE (NT-Xent, paper eq. 4)

then a linear probe on ``h`` (logistic regression, train/test split of the flows).
The transform works on the PyG ``Batch`` (one draw per edge of every sample, the input
left untouched) and the loss on the projections, so neither needs to know which model
sits in between.

The flows are synthetic: on a Delaunay complex of random points, class 0 is a
gradient flow ``B1^T phi`` with the potential ``phi`` = the nodes' x-coordinate plus
noise (an eastward flow), class 1 a curl flow ``B2 psi`` with random positive
circulations ``psi`` (counter-clockwise whirls); both scaled to unit norm, plus noise.
Views drop each edge's flow with probability ``--drop-prob`` (``EdgeFlowMask``, uniform
masking); the loss is ``InfoNCE`` at ``--temperature`` (SimCLR's NT-Xent: both
directions, 2(B - 1) negatives per anchor).

Needs TopoModelX for ``--encoder topomodelx``, installed without its dependencies
(``pip install --no-deps topomodelx==0.0.1``, docs/install.md); ``--encoder scnn``
runs our batched encoder for comparison.
Writes ``results.json``, ``results.md`` and ``loss.png`` to ``--out-dir``.

Example::

    python examples/topomodelx_encoder.py --encoder topomodelx   # about a minute on 2 cores
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.spatial
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topo_contrastive import ComplexOperators  # noqa: E402
from topo_contrastive._utils.files import atomic_write, write_json, write_text  # noqa: E402
from topo_contrastive.complex import Laplacians  # noqa: E402
from topo_contrastive.losses import InfoNCE  # noqa: E402
from topo_contrastive.nn import SCNN, ProjectionHead, SCNNConv  # noqa: E402
from topo_contrastive.transforms import EdgeFlowMask  # noqa: E402


class TopoModelXEncoder(torch.nn.Module):
    r"""Stack of TopoModelX ``SCNNLayer``\ s with tanh and mean readout, applied sample
    by sample, behind :class:`topo_contrastive.nn.SCNN`'s interface.

    Args:
        in_channels (int): features per edge (default ``1``).
        hidden_channels (int): width of every layer and of ``h`` (default ``64``).
        num_layers (int): number of layers (default ``2``).
        K_down (int): lower-Laplacian order (default ``2``).
        K_up (int): upper-Laplacian order (default ``2``).

    Shapes:
        - **input:** ``x`` ``[N1]``/``[N1, C]``, ``[B, N1, C]``, or ``[B*N1]``/``[B*N1, C]``
          with ``batch``; ``laplacians`` (``L_down``, ``L_up``) sparse ``[N1, N1]`` float32 on CPU
          (TopoModelX builds its identity on the default device and dtype).
        - **output:** ``h`` ``[B, hidden_channels]``.
    """

    def __init__(
        self,
        in_channels: int = 1,
        hidden_channels: int = 64,
        num_layers: int = 2,
        K_down: int = 2,
        K_up: int = 2,
    ) -> None:
        super().__init__()
        from topomodelx.nn.simplicial.scnn_layer import SCNNLayer

        self.in_channels = in_channels
        self.hidden_channels = hidden_channels
        self.layers = torch.nn.ModuleList(
            SCNNLayer(in_channels if i == 0 else hidden_channels, hidden_channels, K_down, K_up)
            for i in range(num_layers)
        )

    def forward(self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None) -> Tensor:
        n1 = laplacians.num_cells
        if x.dim() == 1:
            x = x.unsqueeze(-1)
        x = x.reshape(-1, n1, x.size(-1))  # [B, N1, C]: PyG batches hold whole flows in order
        hs = []
        for sample in x:  # TopoModelX has no batch dimension
            e = sample  # [N1, C]
            for layer in self.layers:
                e = torch.tanh(layer(e, *laplacians))  # its update_func="tanh" returns None
            hs.append(e.mean(dim=0))
        return torch.stack(hs)  # [B, hidden]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.in_channels}, {self.hidden_channels}, "
            f"num_layers={len(self.layers)})"
        )


def make_flows(
    ops: ComplexOperators,
    points: np.ndarray,
    num_flows: int,
    noise: float,
    generator: torch.Generator,
) -> list[Data]:
    """Eastward gradient flows (label 0) and counter-clockwise curl flows (label 1)."""
    B1 = ops.operator("B1", dtype=torch.float64)
    B2 = ops.operator("B2", dtype=torch.float64)
    east = torch.from_numpy(points[:, 0])  # [N0] x-coordinates
    # orientation of each stored triangle (a, b, c): +1 if counter-clockwise
    p = points[ops.triangles]  # [N2, 3, 2]
    cross = (p[:, 1, 0] - p[:, 0, 0]) * (p[:, 2, 1] - p[:, 0, 1]) - (
        p[:, 1, 1] - p[:, 0, 1]
    ) * (p[:, 2, 0] - p[:, 0, 0])
    ccw = torch.from_numpy(np.sign(cross))
    data = []
    for i in range(num_flows):
        if i % 2 == 0:
            phi = east + 0.3 * torch.randn(ops.num_nodes, generator=generator, dtype=torch.float64)
            flow = (B1.t() @ phi.unsqueeze(-1)).squeeze(-1)
        else:
            psi = ccw * torch.rand(ops.num_triangles, generator=generator, dtype=torch.float64)
            flow = (B2 @ psi.unsqueeze(-1)).squeeze(-1)
        flow = flow / flow.norm()
        flow = flow + noise * torch.randn(ops.num_edges, generator=generator, dtype=torch.float64)
        data.append(Data(x_1=flow.float(), y=torch.tensor(i % 2)))
    return data


def delaunay_complex(num_points: int, seed: int) -> tuple[ComplexOperators, np.ndarray]:
    """Delaunay triangulation of uniform random points, every triangle filled."""
    points = np.random.default_rng(seed).random((num_points, 2))
    points = points[np.argsort(points[:, 0])]  # node ids west to east: edges point east
    tri = scipy.spatial.Delaunay(points).simplices
    edges = np.unique(
        np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), axis=1), axis=0
    )
    return ComplexOperators.from_simplices(edges, tri, num_points), points


def main(
    encoder: str = "topomodelx",
    num_points: int = 60,
    num_flows: int = 100,
    epochs: int = 10,
    batch_size: int = 50,
    hidden: int = 32,
    layers: int = 2,
    K: int = 2,
    lr: float = 1e-2,
    drop_prob: float = 0.3,
    temperature: float = 0.1,
    noise: float = 0.05,
    seed: int = 0,
    out_dir: Path = Path("results/topomodelx_encoder"),
    progress: bool = True,
) -> dict:
    """Pre-train ``encoder`` contrastively, then fit a linear probe on its embeddings.

    Returns:
        dict with the per-epoch ``loss``, ``probe_accuracy``, ``seconds`` and the settings.
    """
    from sklearn.linear_model import LogisticRegression

    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    ops, points = delaunay_complex(num_points, seed)
    # float32 CPU COO (what TopoModelX needs), scaled by their largest eigenvalue so
    # that tanh does not saturate on the Laplacian powers (our SCNNConv helper).
    laplacians = Laplacians(
        *(SCNNConv.normalize_operator(L) for L in ops.laplacians()), symmetric=True
    )
    data = make_flows(ops, points, num_flows, noise, g)
    loader = DataLoader(data, batch_size=batch_size, shuffle=True, follow_batch=["x_1"])
    if encoder == "topomodelx":
        model = TopoModelXEncoder(1, hidden, layers, K, K)
    elif encoder == "scnn":
        model = SCNN(1, hidden, layers, K, K)
    else:
        raise ValueError(f"`encoder` must be 'topomodelx' or 'scnn', got {encoder!r}")
    head = ProjectionHead(hidden, hidden, hidden)
    mask = EdgeFlowMask(drop_prob, attr="x_1", generator=g)  # the library's augmentation
    loss_fn = InfoNCE(temperature=temperature)  # the library's loss (NT-Xent layout)
    opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=lr)

    losses = []
    t0 = time.perf_counter()
    for _ in tqdm(range(epochs), desc=f"pre-training ({encoder})", disable=not progress):
        total = 0.0
        for batch in loader:
            view1, view2 = mask(batch), mask(batch)  # two independent masks; batch unchanged
            z1 = head(model(view1.x_1, laplacians, batch=batch.x_1_batch))  # [B, hidden]
            z2 = head(model(view2.x_1, laplacians, batch=batch.x_1_batch))
            loss = loss_fn(z1, z2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * batch.num_graphs
        losses.append(total / len(data))
    seconds = time.perf_counter() - t0

    with torch.no_grad():
        x_all = torch.stack([d.x_1 for d in data]).unsqueeze(-1)  # [num_flows, N1, 1]
        h = model(x_all, laplacians).numpy()
    y = np.array([int(d.y) for d in data])
    half = len(data) // 2
    probe = LogisticRegression(max_iter=2000).fit(h[:half], y[:half])
    accuracy = float(probe.score(h[half:], y[half:]))

    result = dict(
        encoder=encoder,
        num_edges=ops.num_edges,
        num_flows=num_flows,
        epochs=epochs,
        loss=losses,
        probe_accuracy=accuracy,
        seconds=seconds,
        seed=seed,
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "results.json", result)
    write_text(
        out_dir / "results.md",
        "| encoder | edges | epochs | final loss | linear-probe accuracy | seconds |\n"
        "|---|---|---|---|---|---|\n"
        f"| {encoder} | {ops.num_edges} | {epochs} | {losses[-1]:.4f} | {accuracy:.3f} "
        f"| {seconds:.1f} |\n",
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot(range(1, epochs + 1), losses)
    ax.set_xlabel("epoch")
    ax.set_ylabel("InfoNCE loss")
    ax.set_title(f"{encoder} encoder")
    fig.tight_layout()
    atomic_write(out_dir / "loss.png", lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
    print((out_dir / "results.md").read_text())
    return result


def build_parser() -> argparse.ArgumentParser:
    """The example's command line (every flag has a ``--help`` line)."""
    p = argparse.ArgumentParser(description="A TopoModelX encoder in the contrastive pipeline.")
    p.add_argument(
        "--encoder", choices=("topomodelx", "scnn"), default="topomodelx",
        help="TopoModelX SCNNLayer stack (sample by sample) or our batched SCNN "
        "(default topomodelx)",
    )
    p.add_argument("--num-points", type=int, default=60, help="Delaunay points (default 60)")
    p.add_argument("--num-flows", type=int, default=100, help="number of flows (default 100)")
    p.add_argument("--epochs", type=int, default=10, help="pre-training epochs (default 10)")
    p.add_argument("--batch-size", type=int, default=50, help="flows per batch (default 50)")
    p.add_argument("--hidden", type=int, default=32, help="encoder width (default 32)")
    p.add_argument("--layers", type=int, default=2, help="encoder layers (default 2)")
    p.add_argument("--K", type=int, default=2, help="K_down = K_up (default 2)")
    p.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate (default 1e-2)")
    p.add_argument(
        "--drop-prob", type=float, default=0.3,
        help="probability of dropping an edge's flow in a view (default 0.3)",
    )
    p.add_argument("--temperature", type=float, default=0.1, help="InfoNCE temperature (0.1)")
    p.add_argument("--noise", type=float, default=0.05, help="noise std on the flows (0.05)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--out-dir", type=Path, default=Path("results/topomodelx_encoder"),
        help="output folder (default results/topomodelx_encoder)",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help="smoke run: 30 points, 20 flows, 2 epochs, width 8 (overrides those flags)",
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    if a.fast:
        a.num_points, a.num_flows, a.epochs, a.hidden, a.batch_size = 30, 20, 2, 8, 10
    main(
        encoder=a.encoder,
        num_points=a.num_points,
        num_flows=a.num_flows,
        epochs=a.epochs,
        batch_size=a.batch_size,
        hidden=a.hidden,
        layers=a.layers,
        K=a.K,
        lr=a.lr,
        drop_prob=a.drop_prob,
        temperature=a.temperature,
        noise=a.noise,
        seed=a.seed,
        out_dir=a.out_dir,
    )
