"""
Many complexes, one per sample
==============================

A dataset whose samples live on different complexes (TopoBench's datasets, flows on
different networks): every sample carries its complex, a PyG batch is one block-diagonal
complex, and the contrastive pipeline runs on it with no glue code. :doc:`/many_complexes`
has the details.
"""

# %%
# Samples with complexes of their own
# -----------------------------------
# :class:`~topo_contrastive.datasets.RandomComplexTrajectories`: every sample is a trajectory
# on a new random complex with two holes at random places (label: through the bottom-left or
# the top-right corner). Each sample is a :class:`~topo_contrastive.data.ComplexData` holding
# its flow ``x_1`` and its incidences.
import matplotlib.pyplot as plt
import torch
from torch_geometric.loader import DataLoader

from topo_contrastive import (
    SCNN,
    ContrastiveViews,
    HodgeDebiasedInfoNCE,
    HodgeSpectralMask,
    ProjectionHead,
)
from topo_contrastive.datasets import RandomComplexTrajectories, plot_complex

views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=0))  # no complex bound
ds = RandomComplexTrajectories("data/tutorial_rct", num_samples=96, num_train=48, num_val=24,
                               transform=views, log=False)
print(ds[0])
print("edges per sample:", [int(ds[i].num_cells(1)) for i in range(5)], "...")

fig, axes = plt.subplots(1, 3, figsize=(9, 3))
for ax, i in zip(axes, range(3), strict=True):
    s = ds[i]
    plot_complex(s.complex(), pos=s.pos.numpy(), flows=s.x_1.view(1, -1), ax=ax)
    ax.set_title(f"sample {i}, label {int(s.y)}")
fig.tight_layout()

# %%
# The views' ingredients, each on its own complex
# -----------------------------------------------
# ``fit`` computes every sample's drop probabilities and Hodge parts on its own complex, a
# chunk of samples at a time (one block-diagonal complex per chunk).
ds = views.fit(ds)
batch = next(iter(DataLoader(ds, batch_size=8)))
print(batch)
laplacians = batch.laplacians()  # block-diagonal [sum N1, sum N1], one block per sample
print("one complex for the batch:", laplacians)

# %%
# Pre-training
# ------------
# The SCNN takes the stacked flows, the block-diagonal operators and the batch vector
# ``batch_1`` (every edge's sample) and pools each sample on its own; the loss weights the
# negatives by how different the energy fractions of their Hodge parts are.
torch.manual_seed(0)
encoder, head = SCNN(hidden_channels=32), ProjectionHead(32, 32, 16)
loss_fn = HodgeDebiasedInfoNCE(temperature=0.5)
opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
for epoch in range(3):
    total = 0.0
    for batch in DataLoader(ds, batch_size=32, shuffle=True):
        laplacians = batch.laplacians()
        z1 = head(encoder(batch.x_1_view1, laplacians, batch.batch_1))
        z2 = head(encoder(batch.x_1_view2, laplacians, batch.batch_1))
        loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts, batch=batch.batch_1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / 3:.3f}")

# %%
# One embedding per sample
# ------------------------
# The embeddings of a batch are those of its samples one at a time.
encoder.eval()
batch = next(iter(DataLoader(ds, batch_size=4)))
h = encoder(batch.x_1, batch.laplacians(), batch.batch_1)
one = torch.cat([encoder(s.x_1, s.laplacians()) for s in batch.to_data_list()])
print(h.shape, "same as one at a time:", torch.allclose(h, one, atol=1e-5))
