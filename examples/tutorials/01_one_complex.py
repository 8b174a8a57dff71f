"""
Contrastive learning on one complex
===================================

The pipeline of the paper, end to end, on its synthetic trajectories: a PyTorch Geometric
dataset of edge flows on one simplicial complex, two masked views of every flow whose drop
probabilities respect the Hodge decomposition, an SCNN encoder trained with the
Hodge-debiased InfoNCE loss, and the paper's linear evaluation of the frozen embeddings,
beside an untrained encoder of the same architecture.

The dataset here is smaller than the paper's (200 flows instead of 400) and training is
short, so that the page builds quickly (its running time, measured by the build, is on its
last line); the numbers of the paper's protocol are in
:doc:`/results/index`.
"""

# %%
# The data: edge flows on a complex with two holes
# ------------------------------------------------
# :class:`~topo_contrastive.datasets.SyntheticTrajectories` draws random points in the
# unit square, triangulates them, cuts two square holes, and walks trajectories from the
# top-left corner to the bottom-right one, passing left or right of the holes: the label.
# Every sample is a ``ComplexData(x_1=[N1, 1], y=[1])`` on the shared complex, its edge flow
# ``x_1`` being +1 on every edge the walk takes along the edge's orientation and -1 against it.
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch_geometric.loader import DataLoader

from topo_contrastive import HodgeDecomposition
from topo_contrastive.datasets import SyntheticTrajectories, plot_complex
from topo_contrastive.evaluation import linear_probe
from topo_contrastive.losses import HodgeDebiasedInfoNCE
from topo_contrastive.nn import SCNN, ProjectionHead
from topo_contrastive.transforms import ContrastiveViews, HodgeSpectralMask

torch.manual_seed(0)
views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=0))
ds = SyntheticTrajectories(
    "data/trajectories_small", num_points=200, num_train=100, num_val=50, num_test=50,
    transform=views, log=False,
)
ops = ds.complex  # ComplexOperators: B1, B2, Laplacians
print(ds)
print("nodes, edges, triangles:", ops.num_nodes, ops.num_edges, ops.num_triangles)
print("Hodge subspaces:", HodgeDecomposition(ops).dims)

fig, ax = plt.subplots(figsize=(5, 5))
plot_complex(ds, paths=[ds.path(i) for i in range(4)], labels=ds.y[:4].tolist(), ax=ax)

# %%
# Two views per flow, and the Hodge parts
# ---------------------------------------
# :class:`~topo_contrastive.transforms.HodgeSpectralMask` optimises, once per flow, the
# probability of dropping each edge so that a masked view changes the flow's gradient part
# and keeps its curl and harmonic parts (paper §4.1). Wrapped in
# :class:`~topo_contrastive.transforms.ContrastiveViews`, the dataset's transform gives
# every sample both views and the Hodge parts of the original flow, which the debiased
# loss compares negatives by. ``fit`` computes the probabilities and parts for the whole
# dataset in one batched call.
views.fit(ds)
sample = ds[0]
print(sample)
print("edges dropped in the two views:",
      int(((sample.x_1 != 0) & (sample.x_1_view1 == 0)).sum()),
      int(((sample.x_1 != 0) & (sample.x_1_view2 == 0)).sum()),
      "of", int((sample.x_1 != 0).sum()))

# %%
# Pre-training
# ------------
# The encoder is a simplicial convolutional network
# (:class:`~topo_contrastive.nn.SCNN`: polynomials in the lower and upper Laplacians, a
# mean over edges at the end); a projection head maps its output to the space of the loss.
# Labels are not used. The loss goes down from about ``log(2B - 1)``, the loss of
# embeddings that tell nothing apart.
laplacians = ops.laplacians()  # L_down, L_up: torch sparse [N1, N1]
encoder, head = SCNN(hidden_channels=64), ProjectionHead(64, 64, 32)
loss_fn = HodgeDebiasedInfoNCE(temperature=0.5)
opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
untrained = SCNN(hidden_channels=64)
untrained.load_state_dict(encoder.state_dict())  # the same weights, before training

loader = DataLoader(ds, batch_size=50, shuffle=True)
losses = []
for epoch in range(8):
    total = 0.0
    for batch in loader:
        z1 = head(encoder(batch.x_1_view1, laplacians, batch.batch_1))  # [B, 32]
        z2 = head(encoder(batch.x_1_view2, laplacians, batch.batch_1))
        loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    losses.append(total / len(loader))
    print(f"epoch {epoch}: loss {losses[-1]:.4f}")

fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(range(len(losses)), losses, marker="o")
ax.axhline(np.log(2 * 50 - 1), color="grey", ls="--", label="embeddings that tell nothing apart")
ax.set(xlabel="epoch", ylabel="loss", title="Hodge-debiased InfoNCE")
ax.legend()
fig.tight_layout()

# %%
# Linear evaluation
# -----------------
# The paper's protocol: the encoder is frozen, and a linear SVM (``C`` chosen by
# cross-validation on the training flows) is fitted on the embeddings of the training
# flows and scored on the test flows. The same probe on an untrained encoder of the same
# architecture and on the raw flows tells what the pre-training added.
plain = SyntheticTrajectories(
    "data/trajectories_small", num_points=200, num_train=100, num_val=50, num_test=50, log=False
)
flows = torch.stack([d.x_1 for d in plain])  # [S, N1, 1]
y = plain.y.numpy()
train = np.flatnonzero(plain.train_mask.numpy())
test = np.flatnonzero(plain.test_mask.numpy())


def probe(features):
    return 100 * linear_probe(features, y, train, test, seed=0).test_accuracy


with torch.no_grad():
    rows = {
        "pre-trained encoder": probe(encoder.eval()(flows, laplacians).numpy()),
        "untrained encoder (reference)": probe(untrained.eval()(flows, laplacians).numpy()),
        "raw flows (reference)": probe(flows.squeeze(-1).numpy()),
    }
for name, accuracy in rows.items():
    print(f"{name:32s} {accuracy:5.1f} % test accuracy")

# %%
# Read the pre-trained row against the untrained one: what pre-training added is the
# difference between the two, not the first number alone. The raw flows are a strong
# reference on this task, whose label (which side of the holes a walk passes) is a linear
# function of the flow. :doc:`04_reading_an_evaluation` reads such rows over many random
# splits; ``python -m experiments reproduce`` runs the paper's protocol.
