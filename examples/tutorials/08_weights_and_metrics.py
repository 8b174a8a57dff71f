"""
Weights and metrics: a road network with lengths
================================================

A road has a length, a power line a reactance, a pipe a resistance. In the metric of those
weights, :math:`\\langle a, b \\rangle = a^\\top \\mathbf{W}_1 b` with
:math:`\\mathbf{W}_1 = \\operatorname{diag}(\\text{lengths})`, a flow driven by node
potentials through conductances :math:`1 / \\text{length}` is a pure gradient flow; the
unweighted decomposition splits it into curl and harmonic parts that are artefacts of the
lengths. This page decomposes flows on the Chicago sketch road network (546 junctions,
1,088 roads, 112 filled triangles; the data files that `pytspl` ships) in both metrics.
The maths: :doc:`/weights`.
"""

# %%
# The network and its lengths
# ---------------------------
# The incidences, the junctions' coordinates (in feet) and the equilibrium traffic flow of
# the network come as CSV files inside the installed `pytspl` package, read by path (the
# package is not imported). Each road's length is the distance between its junctions.
import importlib.util
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
import torch
from matplotlib.collections import LineCollection

from topo_contrastive import ComplexOperators, HodgeDecomposition

spec = importlib.util.find_spec("pytspl")
folder = Path(spec.submodule_search_locations[0]) / "data/transportation_networks/chicago-sketch"
B1 = sp.csr_matrix(np.loadtxt(folder / "B1_chicago_sketch.csv", delimiter=","))
B2 = sp.csr_matrix(np.loadtxt(folder / "B2t_chicago_sketch.csv", delimiter=",").T)
coords = np.loadtxt(folder / "coordinates_chicago_sketch.csv", delimiter=",", skiprows=1)
pos = coords[np.argsort(coords[:, 0]), 1:] / 5280  # junction i at row i, in miles
traffic = np.loadtxt(folder / "flow_chicago_sketch.csv")  # vehicles per hour, [N1]

ops = ComplexOperators.from_incidence(B1, B2)
lengths = np.linalg.norm(pos[ops.edges[:, 1]] - pos[ops.edges[:, 0]], axis=1)
weighted = ops.with_weights("resistance", edge=lengths)  # W1 = diag(lengths), W0 = W2 = I
print(weighted)
print(f"road lengths: {lengths.min():.2f} to {lengths.max():.2f} miles")

# %%
# A potential-driven flow
# -----------------------
# Every junction gets a potential, here its east coordinate, and every road carries the
# potential difference divided by its length, :math:`f = \mathbf{W}_1^{-1}
# \mathbf{B}_1^\top \theta`: a uniform pull to the east, as a DC current through resistors
# of the roads' lengths. In the length metric it is a gradient, exactly; the unweighted
# decomposition finds curl and harmonic parts wherever short and long roads meet.
theta = pos[:, 0]
f = torch.from_numpy((B1.T @ theta) / lengths)
hodges = {"unweighted": HodgeDecomposition(ops), "road lengths": HodgeDecomposition(weighted)}
parts = {name: hodge(f) for name, hodge in hodges.items()}


def fractions(hodge: HodgeDecomposition, flow: torch.Tensor) -> dict[str, float]:
    """Each part's share of the flow's energy in the metric of the decomposition."""
    w = torch.from_numpy(hodge.complex.hodge_star(1))
    energy = {k: float((p * p * w).sum()) for k, p in hodge(flow)._asdict().items()}
    return {k: round(v / sum(energy.values()), 4) for k, v in energy.items()}


for name, hodge in hodges.items():
    print(f"{name:>12}: {fractions(hodge, f)}")

# %%
# The parts on the map: in the unweighted metric (top) about 7 % of the flow's energy looks
# like curl and harmonic flow, in the length metric (bottom) none.
segments = pos[ops.edges]  # [N1, 2, 2]
fig, axes = plt.subplots(2, 3, figsize=(12, 8.5))
top = float(f.abs().max())
for row, (name, p) in zip(axes, parts.items(), strict=True):
    for ax, (k, part) in zip(row, p._asdict().items(), strict=True):
        size = part.abs().numpy()
        lines = LineCollection(segments, array=size, cmap="viridis", clim=(0, top),
                               linewidths=0.3 + 2.5 * size / top)  # fmt: skip
        ax.add_collection(lines)
        ax.autoscale()
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(f"{name}: |{k}|")
fig.colorbar(lines, ax=axes, shrink=0.6, label="|part| (potential per mile)")

# %%
# What does not change
# --------------------
# The dimensions of the three subspaces (the Betti number), the incidences and the curl
# space :math:`\operatorname{im} \mathbf{B}_2`; the parts are orthogonal in their own metric
# and sum to the flow. The measured traffic of the network is no potential flow: the
# metric moves energy between its parts, but all three remain.
for name, hodge in hodges.items():
    g, c, h = parts[name]
    w = torch.from_numpy(hodge.complex.hodge_star(1))
    print(f"{name:>12}: dims {hodge.dims}, <g, h>_W1 = {float((g * w * h).sum()):.1e}, "
          f"traffic {fractions(hodge, torch.from_numpy(traffic))}")
