"""
Your own complex and flows
==========================

A complex of your own, built with TopoNetX in its own node labels; trajectories given as
node paths in those labels; their edge flows and Hodge parts; a dataset the whole library
takes; pre-training, embeddings, and a saved encoder loaded back. :doc:`/user_data` has the
file format and the command line in full.
"""

# %%
# A complex with labelled nodes
# -----------------------------
# Junctions of a small network, named by strings, triangulated, with a lake in the middle
# (triangles whose centre is near the middle are left out: a hole, hence a harmonic flow).
import matplotlib.pyplot as plt
import numpy as np
import toponetx as tnx
import torch
from scipy.spatial import Delaunay

from topo_contrastive import ComplexOperators, HodgeDecomposition
from topo_contrastive.datasets import EdgeFlows, plot_complex
from topo_contrastive.io import load_encoder, save_encoder
from topo_contrastive.training import ExperimentData, embed, get_config, pretrain

rng = np.random.default_rng(0)
xy = rng.uniform(0, 1, size=(70, 2))
names = [f"junction-{i}" for i in range(len(xy))]
keep = [t for t in Delaunay(xy).simplices if np.linalg.norm(xy[t].mean(0) - 0.5) > 0.2]
sc = tnx.SimplicialComplex([[names[i] for i in t] for t in keep])
pos = {names[i]: xy[i] for i in range(len(xy)) if names[i] in sc.nodes}

ops = ComplexOperators.from_toponetx(sc)  # B1, B2 and the Laplacians, TopoNetX's order
print(ops)
print("node labels:", ops.node_labels[:3], "...")

# %%
# Trajectories as node paths, in the complex's labels
# ---------------------------------------------------
# A path's edge flow adds +1 on every edge it walks along the edge's orientation and -1
# against it (:meth:`~topo_contrastive.ComplexOperators.path_to_flow`), here straight
# from the junction names.
neighbours = {}
for u, v in (tuple(e) for e in sc.skeleton(1)):
    neighbours.setdefault(u, []).append(v)
    neighbours.setdefault(v, []).append(u)


def random_walk(length=12):
    path = [str(rng.choice(sorted(neighbours)))]
    while len(path) <= length:
        options = [v for v in neighbours[path[-1]] if v not in path]
        if not options:
            break
        path.append(str(rng.choice(options)))
    return path


paths = [random_walk() for _ in range(80)]
x_1 = ops.path_to_flow(paths[0])  # [N1]
print(paths[0][:3], "... ->", int((x_1 != 0).sum()), "edges with flow")

# %%
# The Hodge decomposition of a flow
# ---------------------------------
# Every edge flow is the sum of a gradient part (a difference of node potentials), a curl
# part (circulation around filled triangles) and a harmonic part (circulation around the
# holes) (paper eq. 1). :class:`~topo_contrastive.HodgeDecomposition` computes them.
hodge = HodgeDecomposition(ops)
print("dimensions:", hodge.dims)
parts = hodge(x_1.unsqueeze(-1).double())  # HodgeParts(gradient, curl, harmonic), each [N1, 1]
energy = {k: float(v.square().sum()) for k, v in parts._asdict().items()}
total = sum(energy.values())
print({k: f"{v / total:.0%}" for k, v in energy.items()})

# %%
# A dataset the library takes
# ---------------------------
# :class:`~topo_contrastive.datasets.EdgeFlows` turns the complex and the paths (and
# labels, when there are some) into a PyTorch Geometric dataset like the built-in ones.
# The label here: does the walk end east (1) or west (0) of where it started.
labels = [int(pos[p[-1]][0] > pos[p[0]][0]) for p in paths]
ds = EdgeFlows.from_toponetx("data/my_mesh", sc, paths=paths, labels=labels, pos=pos)
print(ds)

fig, ax = plt.subplots(figsize=(5, 5))
plot_complex(ds, paths=[ds.path(i) for i in range(4)], labels=labels[:4], ax=ax)

# %%
# Pre-training and embeddings
# ---------------------------
# The experiment helpers run any row of the paper's Table 1 on the dataset. This is what
# ``topo-contrastive pretrain --data-file`` builds for a file of your own: the
# ``SSCL_Spec`` row (Hodge-aware masks, Hodge-debiased loss) in the HodgeReadout edition
# (the mean over edges and the harmonic coordinates of the features), with the
# hyper-parameters tuned for the ocean task.
data = ExperimentData.from_dataset(ds, "my_mesh")
config = get_config("SSCL_Spec", "ocean", edition="hodge", epochs=5)
result = pretrain(
    data, config, seed=0, progress=lambda epoch, loss: print(f"epoch {epoch}: loss {loss:.4f}")
)
h = embed(result.encoder, data)  # numpy [S, D]
print("embeddings:", h.shape)

# %%
# Save the encoder, load it back
# ------------------------------
# The file holds the weights, the hyper-parameters and a fingerprint of the complex;
# :func:`~topo_contrastive.io.load_encoder` returns the encoder and that metadata, and
# refuses another complex.
save_encoder(result.encoder, "data/my_mesh/encoder.pt", complex=ds.complex, epochs=5)
encoder, meta = load_encoder("data/my_mesh/encoder.pt", complex=ds.complex)
print(meta["architecture"]["readout"], meta["epochs"])
laplacians = ds.complex.laplacians()
x = ds.x_1.view(len(ds), -1, 1)  # [S, N1, 1]
with torch.no_grad():
    print("same embeddings:", np.allclose(encoder(x, laplacians).numpy(), h, atol=1e-5))

# %%
# The same from the command line
# ------------------------------
# Write the data once as a file (:meth:`~topo_contrastive.datasets.EdgeFlows.write_npz`),
# then ``pretrain``, ``embed`` and ``evaluate`` take it::
#
#     topo-contrastive pretrain --data-file my_mesh.npz --config SSCL_Spec --out runs/m
#     topo-contrastive embed --checkpoint runs/m/encoder.pt --data-file my_mesh.npz --out runs/e
#     topo-contrastive evaluate --checkpoint runs/m/encoder.pt --data-file my_mesh.npz
EdgeFlows.write_npz("data/my_mesh.npz", ds.complex, paths=ds.paths(), labels=labels, pos=ds.pos)
