"""
Cell complexes: 2-cells of any length
=====================================

Real networks have polygon faces (street blocks, grid cells), not only triangles. The Hodge
decomposition, the Laplacians, the masks and the SCNN need only ``B1`` and ``B2`` with
``B1 B2 = 0``: a 2-cell is any oriented cycle of at least three edges.
"""

# %%
# A square, a pentagon and a hole
# -------------------------------
# A TopoNetX ``CellComplex``: a square and a pentagon sharing an edge, and an unfilled loop
# beside them. One hole: one harmonic flow.
import numpy as np
import toponetx as tnx

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.complex import planar_faces

cc = tnx.CellComplex([[0, 1, 2, 3], [1, 4, 5, 6, 2]])
cc.add_edges_from([(3, 7), (7, 8), (8, 0)])
ops = ComplexOperators.from_toponetx(cc)
print(ops, ops.faces)
hodge = HodgeDecomposition(ops)
print(hodge.dims)  # one hole: harmonic dimension 1

x = ops.path_to_flow([3, 0, 1, 4, 5])
parts = hodge(x)
print("gradient", parts.gradient.norm().item(), "curl", parts.curl.norm().item(),
      "harmonic", parts.harmonic.norm().item())

# %%
# The faces of a network
# ----------------------
# A street grid with a park in the middle: filling only its triangles (there are none)
# leaves every block a hole. :func:`~topo_contrastive.complex.planar_faces` gives the
# faces of its drawing; filled up to an area, the blocks become 2-cells and only the park
# stays a hole.
n = 6
xy = np.array([[i, j] for j in range(n) for i in range(n)], dtype=float)
park = {(i, j) for i in (2, 3) for j in (2, 3)}
nodes = [k for k, (i, j) in enumerate(xy.astype(int)) if (i, j) not in park]
edges = [[a, b] for a in nodes for b in nodes
         if a < b and abs(xy[a] - xy[b]).sum() == 1]  # fmt: skip
graph = ComplexOperators.from_cells(edges, num_nodes=len(xy))
blocks = planar_faces(edges, xy, max_area=1.0)
city = ComplexOperators.from_cells(edges, blocks, num_nodes=len(xy))
print("holes with no 2-cell:", HodgeDecomposition(graph).dims["harmonic"])
print("holes with the blocks filled:", HodgeDecomposition(city).dims["harmonic"])

# %%
# The pipeline on a cell complex
# ------------------------------
# Masks, views and the SCNN work as on a simplicial complex.
from topo_contrastive import SCNN, ContrastiveViews, HodgeSpectralMask  # noqa: E402
from topo_contrastive.data import ComplexData  # noqa: E402

flow = city.path_to_flow([0, 1, 2, 3, 4, 10]).view(-1, 1)  # a walk along the blocks
sample = ComplexData.from_complex(city, x_1=flow)
views = ContrastiveViews(HodgeSpectralMask(budget=0.3, generator=0))
out = views.fit([sample])[0]
support = flow[:, 0] != 0
print("drop probabilities on the walk:", [round(v, 2) for v in out.drop_prob[support, 0].tolist()])
h = SCNN(hidden_channels=8)(out.x_1, out.laplacians())
print("embedding", tuple(h.shape))
