"""
A TopoModelX model as the encoder
=================================

The library's masks, views and losses work on PyTorch Geometric batches and on embeddings,
so any model that maps edge flows to one vector per sample can sit between them. Here a
stack of TopoModelX's ``SCNNLayer`` is the encoder of the contrastive pipeline.

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

from topo_contrastive.datasets import SyntheticTrajectories
from topo_contrastive.experiments import linear_probe
from topo_contrastive.losses import InfoNCE
from topo_contrastive.nn import ProjectionHead, SCNNConv
from topo_contrastive.transforms import ContrastiveViews, EdgeFlowMask

torch.manual_seed(0)
views = ContrastiveViews(EdgeFlowMask(0.3, generator=0))  # uniform masks
ds = SyntheticTrajectories(
    "data/trajectories_small", num_points=200, num_train=100, num_val=50, num_test=50,
    transform=views, log=False,
)
views.fit(ds)
L_down, L_up = ds.complex.laplacians()  # torch sparse [N1, N1]

tmx = SCNNLayer(1, 8, conv_order_down=2, conv_order_up=2)
ours = SCNNConv(1, 8, K_down=2, K_up=2, bias=False)
ours.weight.data.copy_(tmx.weight.permute(2, 0, 1))
x = ds[0].x_1  # [N1, 1]
with torch.no_grad():
    gap = (tmx(x, L_down, L_up) - ours(x, L_down, L_up)).abs().max()
print(f"largest difference between the two layers' outputs: {gap:.1e}")

# %%
# An encoder of TopoModelX layers
# -------------------------------
# TopoModelX's layers take one sample ``[N1, C]`` at a time; the wrapper runs them sample
# by sample and sums over the edges (a flow lives on a few of them), behind the interface of
# :class:`~topo_contrastive.nn.SCNN`: ``forward(x, L_down, L_up, batch) -> [B, hidden]``.


class TopoModelXEncoder(torch.nn.Module):
    def __init__(self, hidden_channels=32, num_layers=1):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            SCNNLayer(1 if i == 0 else hidden_channels, hidden_channels, 2, 2)
            for i in range(num_layers)
        )

    def forward(self, x, L_down, L_up, batch=None):
        x = x.reshape(-1, L_down.size(0), x.size(-1))  # [B, N1, C]: a PyG batch, in order
        out = []
        for e in x:  # one sample at a time
            for layer in self.layers:
                e = torch.tanh(layer(e, L_down, L_up))
            out.append(e.sum(dim=0))
        return torch.stack(out)  # [B, hidden]


# %%
# Contrastive pre-training with it
# --------------------------------
# The loop is the library's: two masked views from the dataset's transform, the encoder,
# a projection head and InfoNCE (SimCLR's NT-Xent, paper eq. 4).
encoder, head = TopoModelXEncoder(), ProjectionHead(32, 32, 16)
loss_fn = InfoNCE(temperature=0.5)
opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-2)
for epoch in range(3):
    total = 0.0
    loader = DataLoader(ds, batch_size=50, shuffle=True)
    for batch in loader:
        z1 = head(encoder(batch.x_1_view1, L_down, L_up, batch.batch_1))
        z2 = head(encoder(batch.x_1_view2, L_down, L_up, batch.batch_1))
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
with torch.no_grad():
    h = encoder(flows, L_down, L_up).numpy()
train = np.flatnonzero(plain.train_mask.numpy())
test = np.flatnonzero(plain.test_mask.numpy())
result = linear_probe(h, plain.y.numpy(), train, test, seed=0)
print(f"TopoModelX encoder: {100 * result.test_accuracy:.1f} % test accuracy")

# %%
# The library's own :class:`~topo_contrastive.nn.SCNN` computes the same layers on the
# whole batch at once (one sparse product per Laplacian power for all samples), which is
# what makes the paper's protocol affordable on a CPU.
