"""Quickstart: Hodge-aware contrastive pre-training on the synthetic trajectories.

The README's PyTorch Geometric pipeline (paper §4-5), run to the end:

1. ``SyntheticTrajectories`` with the ``ContrastiveViews`` transform: edge flows ``x_1`` of
   trajectories around two holes, two masked views of each;
2. ``views.fit``: per-sample drop probabilities of ``HodgeSpectralMask`` (perturb the
   gradient part, preserve the curl and harmonic parts) and the Hodge parts of every flow,
   computed once and stored on the samples;
3. ``DataLoader`` -> ``SCNN`` encoder + ``ProjectionHead`` on each view;
4. ``HodgeDebiasedInfoNCE`` with the batch's ``hodge_parts``;
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

from topo_contrastive._utils.files import write_json
from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.losses import HodgeDebiasedInfoNCE
from topo_contrastive.nn import SCNN, ProjectionHead
from topo_contrastive.transforms import ContrastiveViews, HodgeSpectralMask


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
    # 1-2. both masked views and the Hodge parts of every flow, from one dataset transform
    views = ContrastiveViews(HodgeSpectralMask(budget=budget, generator=seed))
    if fast:
        ds = SyntheticTrajectories(root, num_points=150, num_train=20, num_val=10, num_test=10,
                                   seed=seed, log=False, transform=views)  # fmt: skip
        epochs = min(epochs, 2)
    else:  # 200 / 100 / 100 flows
        ds = SyntheticTrajectories(root, seed=seed, log=False, transform=views)
    views.fit(ds)  # binds ds.complex; drop probabilities and Hodge parts, once per flow

    # 3. encoder f, projection head g, loss
    laplacians = ds.complex.laplacians()  # L_down, L_up: sparse [N1, N1]
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
            z1 = head(encoder(batch.x_1_view1, laplacians, batch.batch_1))  # [B, 64]
            z2 = head(encoder(batch.x_1_view2, laplacians, batch.batch_1))
            loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts)  # of the ORIGINAL flows
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total / len(loader))
        tqdm.write(f"epoch {len(losses) - 1}: loss {losses[-1]:.4f}")

    # 5. linear evaluation on the embeddings h (not the projection head's output)
    encoder.eval()
    with torch.no_grad():
        h = torch.cat([encoder(b.x_1, laplacians, b.batch_1)
                       for b in DataLoader(ds, batch_size=200)]).numpy()  # [S, 64]  # fmt: skip
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
