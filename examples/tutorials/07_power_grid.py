"""
Power flows on a real grid
==========================

The European high-voltage grid of the PEGASE project (``case1354pegase``, 1,354 buses),
as bundled with pandapower: a seeded load scenario and a tripped line per sample, an AC
power flow for each, and the active power on every line and transformer as the edge flow.
We decompose the flows, pre-train an encoder on them without labels and ask which region
the tripped line was in, from half of the lines metered with 1 % noise.

The page builds in about a minute: 150 samples and 3 epochs (the benchmark uses 500 samples
and the configuration's epochs; its numbers are in :doc:`/results/physical_flows`). It needs
the ``power`` extra: ``pip install 'topo-contrastive[power]'``.
"""

# %%
# The grid and its flows
# ----------------------
# :class:`~topo_contrastive.datasets.PowerGridFlows` loads the case, makes it a complex
# (buses as nodes, lines and transformers as edges, triangles as 2-cells), draws the
# scenarios and runs pandapower's Newton-Raphson solver on each. Every sample is
# ``Data(x_1=[N1, 1], y=[1])``: ``x_1`` the metered flows in MW (0 on unmetered lines), ``y``
# the region of the tripped line (four regions, by spectral clustering of the grid).
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection

from topo_contrastive import HodgeDecomposition
from topo_contrastive.cli._runs import evaluate_saved
from topo_contrastive.datasets import PowerGridFlows
from topo_contrastive.evaluation.references import references_markdown
from topo_contrastive.training import ExperimentData, get_config, pretrain

ds = PowerGridFlows("data/case1354pegase", case="case1354pegase", task="outage",
                    num_samples=150, n_jobs=1, log=False)  # fmt: skip
ops = ds.complex
print(ds, ops)
print("solver:", ds.settings["solver"], "| failed solves:", ds.num_failed)
print("samples per region:", np.bincount(ds.y.numpy()).tolist())

# Kirchhoff's law at every bus: B1 f = |B1| losses / 2 - injections
B1 = ops.B1
f, losses, p = ds.flows.numpy(), ds.losses.numpy(), ds.injections.numpy()
print("largest mismatch (MW):", np.abs(B1 @ f.T - abs(B1) @ losses.T / 2 + p.T).max())

# %%
# Hodge parts of the flows
# ------------------------
# Power flows from generators to loads: almost all of their energy is in the gradient part
# (a potential difference, the bus voltage angles), a little circulates around the
# triangles (curl) and around the grid's larger loops (harmonic): in the unit metric, which
# mixes the parts by the lines' different reactances. ``ds.complex`` carries the reactance
# metric (``ds.edge_weights``), in which a DC power flow is a gradient exactly and these AC
# flows almost (:doc:`08_weights_and_metrics`); ``with_weights("unweighted")`` drops it.
hodge = HodgeDecomposition(ops.with_weights("unweighted"))
print(hodge.dims)
parts = hodge(ds.flows[:1].unsqueeze(-1))  # the first sample's true flows, [1, N1, 1]
energy = {k: float((getattr(parts, k) ** 2).sum()) for k in ("gradient", "curl", "harmonic")}
total = sum(energy.values())
print({k: round(v / total, 4) for k, v in energy.items()})

xy = ds.pos.numpy()
segments = xy[ds.edges.numpy()]  # [N1, 2, 2]
fig, axes = plt.subplots(1, 3, figsize=(13, 4.6))
for ax, name in zip(axes, ("gradient", "curl", "harmonic"), strict=True):
    size = getattr(parts, name)[0, :, 0].abs().numpy()
    width = 0.4 + 2 * size / size.max()
    lines = LineCollection(segments, array=size, cmap="viridis", linewidths=width)
    ax.add_collection(lines)
    ax.autoscale()
    ax.set_aspect("equal")
    ax.set_axis_off()
    ax.set_title(f"|{name} part| (MW), {100 * energy[name] / total:.2f} % of the energy")
    fig.colorbar(lines, ax=ax, shrink=0.7)
fig.tight_layout()

# %%
# Pre-train, then localise outages
# --------------------------------
# The ``SSCL_Spec`` row in the HodgeReadout edition, as ``topo-contrastive pretrain
# --data-file`` builds it, trained on all samples without labels; then the linear probe of
# the frozen embeddings beside the reference rows (untrained encoder, raw flows, ``|flows|``,
# harmonic coordinates), on the same three random splits.
data = ExperimentData.from_dataset(ds, "case1354pegase")
config = get_config("SSCL_Spec", "ocean", edition="hodge", epochs=3)
torch.manual_seed(0)
result = pretrain(data, config, seed=0, progress=lambda e, loss: print(f"epoch {e}: {loss:.4f}"))
summary = evaluate_saved(result.encoder, data, split_seeds=range(3),
                         metadata={"seed": 0, "config": "SSCL_Spec"})  # fmt: skip
print(references_markdown(summary))

# %%
# The same from the command line
# ------------------------------
# :meth:`~topo_contrastive.datasets.PowerGridFlows.to_npz` writes the dataset as an
# edge-flow file (with the reactances as ``edge_weights``), which the commands read::
#
#     topo-contrastive pretrain --data-file case1354_outage.npz --config SSCL_Spec --out runs/g
#     topo-contrastive evaluate --checkpoint runs/g/encoder.pt --data-file case1354_outage.npz
ds.to_npz("data/case1354_outage.npz")
