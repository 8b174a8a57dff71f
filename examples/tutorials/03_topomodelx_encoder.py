"""
A TopoModelX model as the encoder
=================================

The library's masks, views and losses work on PyTorch Geometric batches and on embeddings,
so any model that maps edge flows to one vector per sample can sit between them. Here
TopoModelX's ``SCNN``, through the library's adapter
:class:`~topo_contrastive.nn.TopoModelXEncoder`, is the encoder of the contrastive pipeline.

TopoModelX 0.0.1 goes in without its dependencies (they would replace
``torch-geometric`` by a nightly build; its layers need only torch)::

    pip install --no-deps topomodelx==0.0.1
"""

# %%
# The same layer, two implementations
# -----------------------------------
# :class:`~topo_contrastive.nn.SCNNConv` computes the function of TopoModelX's
# ``SCNNLayer`` (paper eq. 3: polynomials of the lower and upper Laplacians) for a whole
# batch at once. With the same weights the two agree.
import numpy as np
import torch
from topomodelx.nn.simplicial.scnn_layer import SCNNLayer
from torch_geometric.loader import DataLoader

from topo_contrastive.datasets import RandomComplexTrajectories, SyntheticTrajectories
from topo_contrastive.evaluation import linear_probe
from topo_contrastive.losses import InfoNCE
from topo_contrastive.nn import ProjectionHead, SCNNConv, TopoModelXEncoder
from topo_contrastive.transforms import ContrastiveViews, EdgeFlowMask

torch.manual_seed(0)
views = ContrastiveViews(EdgeFlowMask(0.3, generator=0))  # uniform masks
ds = SyntheticTrajectories(
    "data/trajectories_small", num_points=200, num_train=100, num_val=50, num_test=50,
    transform=views, log=False,
)
views.fit(ds)
laplacians = ds.complex.laplacians()  # L_down, L_up: torch sparse [N1, N1]

tmx = SCNNLayer(1, 8, conv_order_down=2, conv_order_up=2)
ours = SCNNConv(1, 8, K_down=2, K_up=2, bias=False)
ours.weight.data.copy_(tmx.weight.permute(2, 0, 1))
x = ds[0].x_1  # [N1, 1]
with torch.no_grad():
    gap = (tmx(x, *laplacians) - ours(x, laplacians)).abs().max()
print(f"largest difference between the two layers' outputs: {gap:.1e}")

# %%
# An encoder of TopoModelX layers
# -------------------------------
# :class:`~topo_contrastive.nn.TopoModelXEncoder` puts a TopoModelX model (``"scnn"``,
# ``"sccnn"``, ``"san"``, ``"scn2"``) behind the interface of
# :class:`~topo_contrastive.nn.SCNN`: ``forward(x, laplacians, batch) -> [B, D]``. The
# keyword arguments are the model's own (here TopoModelX's ``SCNN``: one ``SCNNLayer`` with
# a ReLU). A batch is one complex, so the model runs once per batch, not once per sample,
# and its per-edge output is pooled per sample (``readout="sum"``: a flow lives on a few
# edges). TopoModelX's layers build a dense identity of the batch's edges at every call, so
# the batches here are small.
encoder = TopoModelXEncoder(
    "scnn", readout="sum", in_channels=1, hidden_channels=32, conv_order_down=2,
    conv_order_up=2, n_layers=1, update_func="relu",
)
print(encoder)

# %%
# The same encoder takes a batch of samples on different complexes (each sample a
# :class:`~topo_contrastive.data.ComplexData`, see :doc:`/many_complexes`): the batch's
# block-diagonal operators and its batch vector ``batch_1`` give one embedding per sample.
others = RandomComplexTrajectories(
    "data/tutorial_rct_small", num_samples=8, num_train=4, num_val=2, log=False
)
mixed = next(iter(DataLoader(others, batch_size=8)))
with torch.no_grad():
    z = encoder(mixed.x_1, mixed.laplacians(), mixed.batch_1)
print(f"8 samples on 8 complexes ({mixed.x_1.shape[0]} edges in all): embeddings {tuple(z.shape)}")


# %%
# Contrastive pre-training with it
# --------------------------------
# The loop is the library's: two masked views from the dataset's transform, the encoder,
# a projection head and InfoNCE (SimCLR's NT-Xent, paper eq. 4), here on the training
# split.
head = ProjectionHead(encoder.out_channels, 32, 16)
loss_fn = InfoNCE(temperature=0.5)
opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-2)
train = np.flatnonzero(ds.train_mask.numpy())
for epoch in range(3):
    total = 0.0
    loader = DataLoader(ds[train], batch_size=8, shuffle=True)
    for batch in loader:
        z1 = head(encoder(batch.x_1_view1, laplacians, batch.batch_1))
        z2 = head(encoder(batch.x_1_view2, laplacians, batch.batch_1))
        loss = loss_fn(z1, z2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4f}")

# %%
# The linear evaluation does not care which model made the embeddings.
plain = SyntheticTrajectories(
    "data/trajectories_small", num_points=200, num_train=100, num_val=50, num_test=50, log=False
)
flows = torch.stack([d.x_1 for d in plain])  # [S, N1, 1]
with torch.no_grad():  # 8 samples at a time: [S, 32]
    h = torch.cat([encoder(chunk, laplacians) for chunk in flows.split(8)]).numpy()
test = np.flatnonzero(plain.test_mask.numpy())
result = linear_probe(h, plain.y.numpy(), train, test, seed=0)
print(f"TopoModelX encoder: {100 * result.test_accuracy:.1f} % test accuracy")

# %%
# The library's own :class:`~topo_contrastive.nn.SCNN` computes the same layers without
# TopoModelX's dense identities (the adapter's cost grows with the square of a batch's
# edges, so keep its batches to a few thousand edges), which is what makes the paper's
# protocol affordable on a CPU.
