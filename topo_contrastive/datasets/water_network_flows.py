r"""Pipe flows in a water distribution network (EPANET's bundled networks, via wntr)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from topo_contrastive._utils.checks import check_real
from topo_contrastive._utils.extras import require_extra
from topo_contrastive.datasets import _physical as phys

#: The EPANET networks bundled with wntr, accepted by name.
WATER_NETWORKS = ("Net1", "Net2", "Net3", "Net6", "ky4", "ky10")
TASKS = ("leak", "demand")
#: Discharge coefficient of a leak's orifice.
LEAK_CD = 0.75
_G = 9.81


def _inp_path(network: str) -> str:
    import wntr

    return os.path.join(os.path.dirname(wntr.__file__), "library", "networks", f"{network}.inp")


def _load(network: str) -> Any:
    import wntr

    wn = wntr.network.WaterNetworkModel(_inp_path(network))
    wn.options.time.duration = 0  # one hydraulic snapshot per sample
    return wn


def _links(wn: Any) -> tuple[np.ndarray, np.ndarray]:
    """Tail (start) and head (end) node position of every link, in wntr's link order."""
    index = {name: i for i, name in enumerate(wn.node_name_list)}
    links = [wn.get_link(name) for name in wn.link_name_list]
    tails = np.array([index[link.start_node_name] for link in links], dtype=np.int64)
    heads = np.array([index[link.end_node_name] for link in links], dtype=np.int64)
    return tails, heads


def _resistances(wn: Any) -> np.ndarray:
    """Every link's Hazen-Williams resistance :math:`r = 10.67 L / (C^{1.852} d^{4.871})`
    (SI: head loss in m is :math:`r |q|^{0.852} q` for :math:`q` in m³/s); pumps and valves,
    which are not resistors, get the median pipe resistance."""
    r = np.full(len(wn.link_name_list), np.nan)
    for i, name in enumerate(wn.link_name_list):
        link = wn.get_link(name)
        if link.link_type == "Pipe":
            r[i] = 10.67 * link.length / (link.roughness**1.852 * link.diameter**4.871)
    return np.where(np.isnan(r), np.nanmedian(r), r)


def _water_chunk(indices: np.ndarray, network: str, spec: dict) -> dict[str, np.ndarray]:
    """Simulate the samples ``indices`` (one process; its own copy of the network)."""
    import wntr

    wn = _load(network)
    tails, heads = _links(wn)
    edges, edge_of, sign = phys.merge_branches(tails, heads)
    junctions = [wn.get_node(name) for name in wn.junction_name_list]
    base = [[d.base_value for d in j.demand_timeseries_list] for j in junctions]
    out = {k: [] for k in ("flows", "injections", "hour", "leak_node", "leak_d", "failed",
                           "solve_s")}  # fmt: skip
    node_of = {name: i for i, name in enumerate(wn.node_name_list)}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wntr_") as tmp:
        for i in indices.tolist():
            failed, solve_s = 0, 0.0
            for attempt in range(phys.MAX_ATTEMPTS):
                rng = phys.sample_rng(spec["seed"], i, attempt)
                hour = int(rng.integers(0, 24))
                factor = np.clip(rng.normal(1.0, spec["demand_sigma"], len(junctions)), 0, None)
                leak = int(rng.integers(len(junctions))) if spec["task"] == "leak" else -1
                diameter = rng.uniform(*spec["leak_diameter"]) if leak >= 0 else 0.0
                for j, values, f in zip(junctions, base, factor, strict=True):
                    for d, value in zip(j.demand_timeseries_list, values, strict=True):
                        d.base_value = value * f
                if leak >= 0:
                    area = np.pi * diameter**2 / 4
                    junctions[leak].emitter_coefficient = LEAK_CD * area * np.sqrt(2 * _G)
                wn.options.time.pattern_start = hour * 3600
                t0 = time.perf_counter()
                try:
                    res = wntr.sim.EpanetSimulator(wn).run_sim(file_prefix=os.path.join(tmp, "s"))
                    q = res.link["flowrate"][wn.link_name_list].to_numpy()[0]
                    demand = res.node["demand"][wn.node_name_list].to_numpy()[0]
                    ok = bool(np.isfinite(q).all() and np.isfinite(demand).all())
                except Exception:  # EPANET's errors (an unsolvable network) are EpanetException
                    ok = False
                solve_s += time.perf_counter() - t0
                if leak >= 0:
                    junctions[leak].emitter_coefficient = None
                if ok:
                    break
                failed += 1
            else:
                raise ValueError(f"sample {i}: {phys.MAX_ATTEMPTS} draws in a row failed")
            out["flows"].append(np.bincount(edge_of, sign * q * 1e3, edges.shape[0]))  # L/s
            out["injections"].append(-demand * 1e3)
            out["hour"].append(hour)
            out["leak_node"].append(node_of[junctions[leak].name] if leak >= 0 else -1)
            out["leak_d"].append(diameter)
            out["failed"].append(failed)
            out["solve_s"].append(solve_s)
    return phys.finish_chunk(out, started)


class WaterNetworkFlows(phys.PhysicalFlowDataset):
    r"""Pipe flows in a water distribution network under seeded demands and leaks
    (PyG ``InMemoryDataset``; EPANET's bundled networks and solver, via wntr).

    **The complex.** An EPANET network bundled with wntr by name (:data:`WATER_NETWORKS`:
    ``Net1``-``Net3``, ``Net6``, ``ky4``, ``ky10``): its junctions, tanks and reservoirs are the
    nodes (in wntr's node order), its pipes, pumps and valves the edges, oriented from the
    lower to the higher node position (parallel links as one edge with the summed flow); the
    2-cells come from ``lifting`` as in :class:`PowerGridFlows`.

    **Edge weights** (:attr:`edge_weights`): every pipe's Hazen-Williams resistance
    :math:`r = 10.67\,L / (C^{1.852} d^{4.871})` (SI), a pump's or valve's the median pipe
    resistance, parallel links combined as :math:`1 / \sum 1/r`. A linear resistive network
    (:math:`q = \mathbf{W}_1^{-1} \mathbf{B}_1^\top h`) would carry pure gradient flows in the
    metric :math:`\mathbf{W}_1 = \operatorname{diag}(r)`, the metric of :attr:`complex`;
    Hazen-Williams head loss is :math:`r |q|^{0.852} q`, so this holds only approximately.

    **Samples**, each from ``numpy.random.default_rng([seed, i, attempt])``: an hour
    :math:`h \in \{0, \dots, 23\}` (uniform), every junction's base demands scaled by
    :math:`\max(0, \epsilon_j)`, :math:`\epsilon_j \sim N(1, \text{demand\_sigma}^2)`, and for
    ``task="leak"`` a leak at a uniform junction: an orifice of diameter
    :math:`d \sim U(\text{leak\_diameter})` (m), modelled as an EPANET emitter
    :math:`q = C_d \tfrac{\pi d^2}{4} \sqrt{2 g p}` (:math:`C_d = 0.75`, :math:`p` the pressure
    head). Each sample is one EPANET hydraulic solve at the demand patterns' time
    :math:`h` (``pattern_start``; tanks at their initial levels). A failed solve is redrawn
    and counted (:attr:`num_failed`, a ``UserWarning``). Flows are in L/s; at every node
    :math:`\mathbf{B}_1 \mathbf{q} = -\mathbf{p}` (:attr:`injections` :math:`\mathbf{p}`:
    supply minus demand, leaks included) to EPANET's single-precision output.

    **Tasks** (``y``): ``"leak"``, leak localisation: the region (:attr:`regions`, spectral
    clustering of the network into ``num_regions``) of the leaking junction; ``"demand"``:
    the period of the day of :math:`h` (0: 0-6 h, 1: 6-12 h, 2: 12-18 h, 3: 18-24 h).
    Observation, splits, :meth:`to_npz` and ``n_jobs`` as in :class:`PowerGridFlows`. Needs
    the ``water`` extra (``pip install 'topo-contrastive[water]'``); nothing is downloaded.

    Args:
        root: dataset folder (``root/processed`` is written).
        network: the EPANET network (default ``"Net3"``).
        task: ``"leak"`` (default) or ``"demand"``.
        num_samples: number of samples (default 500, at least 5).
        seed: seed of everything random (default 0).
        lifting: ``"triangles"`` (default) or ``"cycles"``.
        max_cycle_length: longest 2-cell of ``lifting="cycles"`` (default 6).
        num_regions: regions of the leak labels (default 4).
        observed: fraction of metered edges, in ``(0, 1]`` (default 0.5).
        noise: relative noise of a measurement (default 0.01).
        demand_sigma: spread of the per-junction demand factors (default 0.1).
        leak_diameter: bounds of a leak's diameter in m (default ``(0.01, 0.04)``).
        n_jobs: processes solving samples (default -1: every core).
        transform, pre_transform, force_reload, log: as PyG's ``InMemoryDataset``.

    Shapes:
        - **x_1**: ``[N1, 1]`` per sample (L/s); ``[B * N1, 1]`` in a DataLoader batch.
        - **y**: ``[1]`` per sample; ``[B]`` in a batch.

    Raises:
        ValueError: an unknown ``network``, ``task`` or ``lifting``; an option out of range
            (the message names it); a sample fails 20 draws in a row.
        TypeError: an option of the wrong type.
        MissingExtraError: wntr is not installed.

    Example:
        >>> ds = WaterNetworkFlows("data/net3", network="Net3", num_samples=50)  # doctest: +SKIP
        >>> ds.complex.num_edges, ds.num_classes  # doctest: +SKIP
        (119, 4)
    """

    def __init__(self, root: str, network: str = "Net3", task: str = "leak",
                 num_samples: int = 500, seed: int = 0, lifting: str = "triangles",
                 max_cycle_length: int = 6, num_regions: int = 4, observed: float = 0.5,
                 noise: float = 0.01, demand_sigma: float = 0.1,
                 leak_diameter: tuple[float, float] = (0.01, 0.04), n_jobs: int = -1,
                 transform: Callable | None = None, pre_transform: Callable | None = None,
                 force_reload: bool = False, log: bool = True) -> None:  # fmt: skip
        self.network = phys.check_choice(network, "network", WATER_NETWORKS)
        self.task = phys.check_choice(task, "task", TASKS)
        phys.check_common(self, num_samples, seed, lifting, max_cycle_length, num_regions,
                          observed, noise, n_jobs)  # fmt: skip
        self.demand_sigma = check_real(demand_sigma, "demand_sigma", 0.0)
        self.leak_diameter = phys.check_pair(leak_diameter, "leak_diameter", 1e-6)
        require_extra("wntr", "WaterNetworkFlows")
        self._open(root, transform, pre_transform, force_reload, log)

    @property
    def processed_file_names(self) -> list[str]:
        lo, hi = self.leak_diameter
        return [
            f"{self.network}_{self.task}_{phys.common_name(self)}_sigma{self.demand_sigma:g}"
            f"_leak{lo:g}-{hi:g}.pt"
        ]

    def process(self) -> None:
        import wntr

        started = time.perf_counter()
        wn = _load(self.network)
        tails, heads = _links(wn)
        edges, edge_of, _ = phys.merge_branches(tails, heads)
        num_nodes = len(wn.node_name_list)
        weights = 1.0 / np.bincount(edge_of, 1.0 / _resistances(wn), edges.shape[0])
        spec = {"seed": self.seed, "task": self.task, "demand_sigma": self.demand_sigma,
                "leak_diameter": self.leak_diameter}  # fmt: skip
        out = phys.run_chunks(_water_chunk, self.num_samples, self.n_jobs,
                              network=self.network, spec=spec)  # fmt: skip
        region = phys.regions(edges, num_nodes, self.num_regions, self.seed)
        if self.task == "leak":
            labels = region[out["leak_node"]]
        else:
            labels = (out["hour"] // 6).astype(np.int64)
        with open(_inp_path(self.network), "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        opts = wn.options.hydraulic
        settings = {
            "source": f"wntr {wntr.__version__}, library/networks/{self.network}.inp",
            "source_sha256": sha,
            "solver": {"EpanetSimulator": {"headloss": opts.headloss, "trials": opts.trials,
                                           "accuracy": opts.accuracy, "duration": 0}},
            "samples": {"demand_sigma": self.demand_sigma, "hour": "uniform in 0..23",
                        "leak_diameter_m": self.leak_diameter if self.task == "leak" else None,
                        "leak_cd": LEAK_CD},
            "sizes": {"nodes": num_nodes, "links": len(wn.link_name_list),
                      "edges": int(edges.shape[0])},
        }  # fmt: skip
        extra = {
            "edge_weights": weights, "losses": None, "regions": region, "settings": settings,
            "sample_info": {"hour": out["hour"], "leak_node": out["leak_node"],
                            "leak_diameter": out["leak_d"]},
        }  # fmt: skip
        pos = np.array([wn.get_node(n).coordinates for n in wn.node_name_list], dtype=np.float64)
        self._save_physical(f"WaterNetworkFlows({self.network})", edges, num_nodes, pos, out,
                            labels, extra, started)  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({len(self)}, network={self.network}, task={self.task}, "
            f"seed={self.seed})"
        )
