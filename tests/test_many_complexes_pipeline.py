"""The issue's user script: a DataLoader over TopoBench-style ``Data(x_1, incidence_1,
incidence_2, y)`` samples of different complexes pre-trains with
``ContrastiveViews(HodgeSpectralMask)``, the SCNN and ``HodgeDebiasedInfoNCE``, with no glue
code; its embeddings equal those of the samples one at a time."""

from __future__ import annotations

import torch
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.loader import DataLoader

from topo_contrastive import (
    SCNN,
    ContrastiveViews,
    HodgeDebiasedInfoNCE,
    HodgeSpectralMask,
    ProjectionHead,
)

from ._many_complexes import many_complexes


def _topobench(samples) -> list[Data]:
    out = []
    for s in samples:
        ops = s.complex()
        out.append(
            Data(
                x_1=s.x_1,
                incidence_1=torch.from_numpy(ops.B1.toarray()).float().to_sparse(),
                incidence_2=torch.from_numpy(ops.B2.toarray()).float().to_sparse(),
                y=s.y,
            )
        )
    return out


class _Samples(InMemoryDataset):
    def __init__(self, data_list, transform=None):
        super().__init__(None, transform=transform)
        self.data, self.slices = self.collate(data_list)


def test_user_script_pretrains_on_plain_data_of_different_complexes():
    data_list = _topobench(many_complexes(24, seed=21, cells=True))
    views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=0))
    ds = _Samples(views.fit(data_list), transform=views)  # parts and probabilities, once
    torch.manual_seed(0)
    encoder, head = SCNN(hidden_channels=16), ProjectionHead(16, 16, 8)
    loss_fn = HodgeDebiasedInfoNCE(temperature=0.5)
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-2)
    losses = []
    for _ in range(3):
        for batch in DataLoader(ds, batch_size=8, shuffle=True):
            laplacians = batch.laplacians()
            z1 = head(encoder(batch.x_1_view1, laplacians, batch.batch_1))
            z2 = head(encoder(batch.x_1_view2, laplacians, batch.batch_1))
            loss = loss_fn(z1, z2, hodge_parts=batch.hodge_parts, batch=batch.batch_1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
    assert all(torch.isfinite(torch.tensor(losses)))
    # the batch's embeddings are the samples' own, one at a time
    encoder.eval()
    batch = next(iter(DataLoader(ds, batch_size=24)))
    h = encoder(batch.x_1, batch.laplacians(), batch.batch_1)
    ref = torch.cat([encoder(s.x_1, s.laplacians()) for s in batch.to_data_list()])
    torch.testing.assert_close(h, ref, rtol=1e-5, atol=1e-6)
