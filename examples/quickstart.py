"""Quickstart: Hodge-aware contrastive pre-training on the synthetic trajectories.

A plain PyTorch Geometric pipeline (paper §4-5):

1. ``SyntheticTrajectories``: edge flows ``x_1`` of trajectories around two holes;
2. ``HodgeSpectralMask.fit``: per-sample drop probabilities that perturb the gradient part
   and preserve the curl and harmonic parts (computed once, stored as ``drop_prob``);
3. ``DataLoader`` -> two masked views per batch -> ``SCNN`` encoder + ``ProjectionHead``;
4. ``HodgeDebiasedInfoNCE`` with the Hodge parts of the original flows;
5. a linear SVM on the frozen embeddings (the paper's linear evaluation).

Writes ``quickstart.json`` (losses and accuracy) to ``--out-dir``. ``--fast`` is a smoke run
on a tiny complex (used by the test suite)::

    python examples/quickstart.py --epochs 20
    python examples/quickstart.py --fast
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from torch_geometric.loader import DataLoader
from tqdm.auto import tqdm

from topo_contrastive import HodgeDecomposition
from topo_contrastive._files import write_json
from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.losses import HodgeDebiasedInfoNCE
from topo_contrastive.nn import SCNN, ProjectionHead
from topo_contrastive.transforms import HodgeSpectralMask


def main(
    root: str = "data/trajectories",
    epochs: int = 20,
    seed: int = 0,
    budget: float = 0.3,
    temperature: float = 0.1,
    lr: float = 0.01,
    out_dir: str = "results/quickstart",
    fast: bool = False,
    progress: bool = True,
) -> dict:
    """Pre-train an SCNN with spectral masks and the Hodge-debiased loss, then probe it.

    Args:
        root: dataset folder (created if needed).
        epochs: pre-training epochs.
        seed: seed of the data split, the weights and the masks.
        budget: spectral mask budget (expected fraction of a flow's edges dropped).
        temperature: InfoNCE temperature.
        lr: SGD learning rate.
        out_dir: where ``quickstart.json`` is written.
        fast: tiny complex and 2 epochs (smoke test).
        progress: show a progress bar.

    Returns:
        ``{"losses": [...], "test_accuracy": float, "seconds": float}``.
    """
    torch.manual_seed(seed)
    start = time.perf_counter()
    if fast:
        ds = SyntheticTrajectories(
            root, num_points=150, num_train=20, num_val=10, num_test=10, seed=seed, log=False
        )
        epochs = min(epochs, 2)
    else:
        ds = SyntheticTrajectories(root, seed=seed, log=False)  # 200 / 100 / 100 flows
    ops = ds.complex
    n1 = ops.num_edges
    hodge = HodgeDecomposition(ops)  # exact backend: small complex

    # 2. drop probabilities optimised once per sample, stored as data.drop_prob
    mask = HodgeSpectralMask(budget, hodge=hodge, generator=seed)
    mask.fit(ds)

    # 3. encoder f, projection head g, loss
    L_down, L_up = ops.laplacians()  # sparse [N1, N1]
    encoder = SCNN(1, 64, num_layers=1, K_down=3, K_up=3, readout="sum", bias=False,
                   normalize=True)  # fmt: skip
    head = ProjectionHead(64, 64, 64)
    loss_fn = HodgeDebiasedInfoNCE(temperature=temperature, gamma=(1.0, 1.0, 1.0))
    params = list(encoder.parameters()) + list(head.parameters())
    optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=1e-4)
    loader = DataLoader(
        ds, batch_size=100, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )

    losses = []
    for _ in tqdm(range(epochs), desc="pre-training", disable=not progress):
        total = 0.0
        for batch in loader:
            B = batch.num_graphs
            view1, view2 = mask(batch), mask(batch)  # two independent masks
            x = torch.cat([view1.x_1, view2.x_1]).view(2 * B, n1, 1)  # [2B, N1, 1]
            z1, z2 = head(encoder(x, L_down, L_up)).chunk(2)  # one forward for both views
            # Hodge parts of the ORIGINAL flows, in the batch layout [B * N1, 3]
            parts = torch.cat(hodge(batch.x_1, num_graphs=B), dim=1)
            loss = loss_fn(z1, z2, hodge_parts=parts)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total / len(loader))
        tqdm.write(f"epoch {len(losses) - 1}: loss {losses[-1]:.4f}")

    # 5. linear evaluation on the embeddings h (not the projection head's output)
    encoder.eval()
    with torch.no_grad():
        flows = torch.stack([d.x_1 for d in ds])  # [S, N1, 1]
        h = encoder(flows, L_down, L_up).numpy()  # [S, 64]
    y = np.array([int(d.y) for d in ds])
    train, test = ds.train_mask.numpy(), ds.test_mask.numpy()
    svm = GridSearchCV(
        make_pipeline(StandardScaler(), LinearSVC(dual=False, max_iter=20000)),
        {"linearsvc__C": [1e-2, 1e-1, 1.0, 10.0]},
        cv=min(10, int(np.bincount(y[train]).min())),
    )
    svm.fit(h[train], y[train])
    accuracy = float((svm.predict(h[test]) == y[test]).mean())
    result = {"losses": losses, "test_accuracy": accuracy, "seconds": time.perf_counter() - start}

    os.makedirs(out_dir, exist_ok=True)
    write_json(os.path.join(out_dir, "quickstart.json"), result)  # atomic
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; linear-SVM test accuracy {accuracy:.3f}")
    return result


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--root", default="data/trajectories", help="dataset folder (default: %(default)s)"
    )
    p.add_argument("--epochs", type=int, default=20, help="pre-training epochs (default: 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of data, weights, masks (default: 0)")
    p.add_argument("--budget", type=float, default=0.3, help="spectral mask budget (default: 0.3)")
    p.add_argument("--temperature", type=float, default=0.1, help="loss temperature (default: 0.1)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (default: 0.01)")
    p.add_argument(
        "--out-dir", default="results/quickstart", help="output folder (default: %(default)s)"
    )
    p.add_argument("--fast", action="store_true", help="tiny smoke run (2 epochs, 40 flows)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


if __name__ == "__main__":
    a = _parser().parse_args()
    main(a.root, a.epochs, a.seed, a.budget, a.temperature, a.lr, a.out_dir, a.fast,
         not a.no_progress)  # fmt: skip
