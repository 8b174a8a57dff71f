r"""Power flows on a real transmission grid (pandapower's bundled cases) as edge flows.

**The complex.** A pandapower case by name (:data:`POWER_CASES`: ``case118`` to
``case9241pegase``, ``GBnetwork``, ...): its buses are the nodes (in the case's bus
order), its lines and transformers the edges, oriented from the lower to the higher bus
position; parallel branches between two buses are one edge whose flow is the sum of
theirs (oriented). The 2-cells come from ``lifting``: ``"triangles"`` (every 3-clique of
the grid) or ``"cycles"`` (the cycles of at most ``max_cycle_length`` edges of a minimum
cycle basis: chordless cycles, shortest first, kept when independent over GF(2), as in
Horton's algorithm; the cycle lifting of TopoBench with a minimal basis).

**Edge weights** (``edge_weights``): every edge's effective series reactance
:math:`x_e = 1 / \sum_k b_k` (p.u.), :math:`b_k = 1 / (x_k \tau_k)` over its branches
(:math:`\tau_k` the transformer tap ratio). With :math:`\mathbf{W}_1 =
\operatorname{diag}(x)` and :math:`\mathbf{W}_0 = \mathbf{I}`, a DC power flow

.. math::
    \mathbf{f} = \operatorname{diag}(b)\,\mathbf{B}_1^\top \boldsymbol{\theta}
    = \mathbf{W}_1^{-1} \mathbf{B}_1^\top \mathbf{W}_0 \boldsymbol{\theta}
    \in \operatorname{im}(\mathbf{B}_1^{*})

is a pure gradient flow in that metric (but for the fixed flows :math:`b_k \phi_k` of
phase-shifting transformers, which ``case1354pegase`` and ``case9241pegase`` have, and for
series-compensated edges of negative reactance, 16 in ``case9241pegase``, whose weight is
:math:`|x_e|`: a metric must be positive).

**Samples**, each from ``numpy.random.default_rng([seed, i, attempt])``: a load level
:math:`g \sim U(\text{load\_range})`, every load's active and reactive power scaled by
:math:`g \cdot \max(0, \epsilon_l)`, :math:`\epsilon_l \sim N(1, \text{load\_sigma}^2)`;
the generators' and static generators' set points scaled by the ratio of the new total
load to the base one (the slack takes the rest and the losses). ``mode="ac"``: pandapower's
Newton-Raphson power flow (:data:`AC_SETTINGS`, warm-started from the base case's
solution, with numba on grids of at least 1,000 buses where it is installed);
``mode="dc"``: its DC power flow. A solve that does not converge is redrawn with the next
``attempt`` and counted (``num_failed``, a ``UserWarning``); none is kept or dropped
silently. The edge flow is the mean of the active power sent into a branch at one end and
received at the other, in MW (``losses`` split evenly between the two ends), so that at
every bus

.. math::
    \mathbf{B}_1 \mathbf{f} = \tfrac12 |\mathbf{B}_1| \boldsymbol{\ell} - \mathbf{p}

to the solver's tolerance (``injections`` :math:`\mathbf{p}`, generation minus load
and shunt consumption; :math:`\boldsymbol{\ell} = 0` in DC).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from topo_contrastive._utils.checks import check_real
from topo_contrastive._utils.extras import require_extra
from topo_contrastive.datasets import _physical as phys

#: The pandapower cases accepted by name (``pandapower.networks.<case>()``).
POWER_CASES = (
    "case5", "case6ww", "case9", "case14", "case24_ieee_rts", "case30", "case39", "case57",
    "case89pegase", "case118", "case145", "case300", "case_illinois200", "case1354pegase",
    "case1888rte", "case2848rte", "case2869pegase", "case3120sp", "case6470rte", "case6495rte",
    "case6515rte", "case9241pegase", "GBnetwork", "GBreducednetwork", "iceland",
)  # fmt: skip
TASKS = ("outage", "state")
MODES = ("ac", "dc")
#: The AC solver's settings (pandapower ``runpp``); the warm start is the base case's solution.
AC_SETTINGS = {"algorithm": "nr", "tolerance_mva": 1e-8, "max_iteration": "auto",
               "calculate_voltage_angles": True, "init": "results"}  # fmt: skip
#: Grids of at least this many buses are solved with numba (where installed): its
#: compilation, seconds in every process, pays off only on large grids.
NUMBA_BUSES = 1000


def _load_case(case: str) -> Any:
    import pandapower.networks as pn

    return getattr(pn, case)()


def _solve(net: Any, mode: str) -> bool:
    """Run the power flow in place; ``True`` when it converged to finite flows."""
    import pandapower as pp

    numba = len(net.bus) >= NUMBA_BUSES and _has_numba()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the cases' old tap tables
        try:
            pp.rundcpp(net) if mode == "dc" else pp.runpp(net, numba=numba, **AC_SETTINGS)
        except pp.LoadflowNotConverged:
            return False
    ok = bool(net.converged)
    return ok and bool(np.isfinite(net.res_line.p_from_mw.to_numpy()).all())


def _branches(net: Any) -> tuple[np.ndarray, np.ndarray]:
    """Tail and head node (bus position) of every branch: the lines, then the transformers
    (high-voltage side first)."""
    pos = lambda col: net.bus.index.get_indexer(col.to_numpy())  # noqa: E731
    tails = np.concatenate([pos(net.line.from_bus), pos(net.trafo.hv_bus)])
    heads = np.concatenate([pos(net.line.to_bus), pos(net.trafo.lv_bus)])
    return tails.astype(np.int64), heads.astype(np.int64)


def _branch_power(net: Any) -> tuple[np.ndarray, np.ndarray]:
    """Active power into every branch at its tail and at its head, MW ``[K]`` each."""
    p_tail = np.concatenate([net.res_line.p_from_mw.to_numpy(), net.res_trafo.p_hv_mw.to_numpy()])
    p_head = np.concatenate([net.res_line.p_to_mw.to_numpy(), net.res_trafo.p_lv_mw.to_numpy()])
    return np.nan_to_num(p_tail), np.nan_to_num(p_head)  # out-of-service branches: 0


def _reactances(net: Any) -> np.ndarray:
    """Every branch's effective series reactance ``x * tap`` (p.u. on ``net.sn_mva``) from the
    solver's internal branch table (after a run): its DC flow is ``(theta_f - theta_t -
    shift) / (x * tap)``."""
    branch = net._ppc["branch"]
    lookup = net._pd2ppc_lookups["branch"]
    rows = [np.arange(*lookup[k]) for k in ("line", "trafo") if k in lookup]
    x, tap = branch[np.concatenate(rows), 3].real, branch[np.concatenate(rows), 8].real
    return x * np.where(tap == 0, 1.0, tap)


def _non_bridge_lines(net: Any, edges: np.ndarray, edge_of: np.ndarray) -> np.ndarray:
    """Positions of the in-service lines whose outage leaves the grid connected."""
    import networkx as nx

    graph = nx.Graph(edges.tolist())
    bridges = {tuple(sorted(e)) for e in nx.bridges(graph)}
    counts = np.bincount(edge_of, minlength=edges.shape[0])
    lines = np.arange(len(net.line))
    keep = [
        k for k in lines
        if net.line.in_service.iat[k]
        and (counts[edge_of[k]] > 1 or tuple(edges[edge_of[k]].tolist()) not in bridges)
    ]  # fmt: skip
    return np.asarray(keep, dtype=np.int64)


def _power_chunk(indices: np.ndarray, case: str, mode: str, spec: dict) -> dict[str, np.ndarray]:
    """Solve the samples ``indices`` (one process; its own copy of the grid)."""
    net = _load_case(case)
    tails, heads = _branches(net)
    edges, edge_of, sign = phys.merge_branches(tails, heads)
    n1 = edges.shape[0]
    base = {k: net[k].p_mw.to_numpy().copy() for k in ("load", "gen", "sgen")}
    base_q = net.load.q_mvar.to_numpy().copy()
    if not _solve(net, mode):
        raise ValueError(f"the base case of `case`={case!r} does not converge ({mode.upper()})")
    warm = net.res_bus.copy()
    out = {k: [] for k in ("flows", "losses", "injections", "level", "trip", "failed", "solve_s")}
    started = time.perf_counter()
    for i in indices.tolist():
        failed, solve_s = 0, 0.0
        for attempt in range(phys.MAX_ATTEMPTS):
            rng = phys.sample_rng(spec["seed"], i, attempt)
            level = rng.uniform(*spec["load_range"])
            spread = rng.normal(1.0, spec["load_sigma"], base["load"].size)
            factor = level * np.clip(spread, 0, None)
            trip = int(rng.choice(spec["candidates"])) if spec["task"] == "outage" else -1
            net.load["p_mw"], net.load["q_mvar"] = base["load"] * factor, base_q * factor
            scale = net.load.p_mw.sum() / base["load"].sum()
            net.gen["p_mw"], net.sgen["p_mw"] = base["gen"] * scale, base["sgen"] * scale
            if trip >= 0:
                net.line.loc[net.line.index[trip], "in_service"] = False
            net["res_bus"] = warm.copy()  # the same warm start for every sample
            t0 = time.perf_counter()
            ok = _solve(net, mode)
            solve_s += time.perf_counter() - t0
            if trip >= 0:
                net.line.loc[net.line.index[trip], "in_service"] = True
            if ok:
                break
            failed += 1
        else:
            raise ValueError(
                f"sample {i}: {phys.MAX_ATTEMPTS} draws in a row failed to converge; narrow "
                "`load_range` or `load_sigma`"
            )
        p_tail, p_head = _branch_power(net)
        out["flows"].append(np.bincount(edge_of, sign * (p_tail - p_head) / 2, n1))
        out["losses"].append(np.bincount(edge_of, p_tail + p_head, n1))
        out["injections"].append(-net.res_bus.p_mw.to_numpy())
        out["level"].append(level)
        out["trip"].append(trip)
        out["failed"].append(failed)
        out["solve_s"].append(solve_s)
    return phys.finish_chunk(out, started)


class PowerGridFlows(phys.PhysicalFlowDataset):
    r"""Active power flows on a real transmission grid under seeded load scenarios
    (PyG ``InMemoryDataset``; pandapower's bundled cases and solvers).

    A pandapower case by name (:data:`POWER_CASES`): buses are nodes, lines and transformers
    edges (parallel branches as one edge with the summed flow), oriented low -> high; 2-cells
    from ``lifting``; :attr:`edge_weights` the reactances, the metric of :attr:`complex`, in
    which a DC power flow is a gradient. Each sample is one AC (``mode="ac"``) or DC power
    flow under a seeded load scenario; the edge flow is in MW, and :attr:`flows`, :attr:`losses` and
    :attr:`injections` satisfy Kirchhoff's law at every bus to the solver's tolerance. The
    module docstring gives the complex, the weights, the sample distribution and the solver.
    Failed solves are redrawn and counted (:attr:`num_failed`, a ``UserWarning``).

    **Tasks** (``y``): ``"outage"``, N-1 line-outage localisation: in every sample one line
    whose outage keeps the grid connected is tripped (uniformly drawn), its flow is 0 and
    the label is the region (:attr:`regions`) of its lower bus; ``"state"``, operating-state
    classification: the third of ``load_range`` the load level falls in (0 low, 1 normal,
    2 high). The regions partition the buses into ``num_regions`` by spectral clustering of
    the grid (the bundled cases carry no zones). **Observation:** ``x_1`` holds the flows
    measured on a fixed, seeded set of ``round(observed * N1)`` edges, each with Gaussian
    noise of ``noise`` times the edge's root-mean-square flow, and 0 elsewhere
    (:attr:`observed_mask`); :attr:`flows` keeps the true ones.

    The standard split is stratified 60/20/20 % (seeded by ``seed``); :meth:`split` draws
    others. The processed file records the pandapower version, the solver settings and the
    sample distribution (:attr:`settings`); :meth:`to_npz` exports the dataset for
    ``topo-contrastive pretrain --data-file``. Samples are solved in ``n_jobs`` processes,
    each with its own copy of the grid; the data do not depend on ``n_jobs``. Needs the
    ``power`` extra (``pip install 'topo-contrastive[power]'``); nothing is downloaded.

    Args:
        root: dataset folder (``root/processed`` is written).
        case: the pandapower case (default ``"case118"``).
        task: ``"outage"`` (default) or ``"state"``.
        mode: ``"ac"`` (default) or ``"dc"``.
        num_samples: number of samples (default 500, at least 5).
        seed: seed of everything random (default 0).
        lifting: ``"triangles"`` (default) or ``"cycles"``.
        max_cycle_length: longest 2-cell of ``lifting="cycles"`` (default 6).
        num_regions: regions of the outage labels (default 4).
        observed: fraction of metered edges, in ``(0, 1]`` (default 0.5).
        noise: relative noise of a measurement (default 0.01).
        load_range: bounds of the load level :math:`g` (default ``(0.8, 1.2)``).
        load_sigma: spread of the per-load factors (default 0.1).
        n_jobs: processes solving samples (default -1: every core).
        transform, pre_transform, force_reload, log: as PyG's ``InMemoryDataset``.

    Shapes:
        - **x_1**: ``[N1, 1]`` per sample (MW); ``[B * N1, 1]`` in a DataLoader batch.
        - **y**: ``[1]`` per sample; ``[B]`` in a batch.

    Raises:
        ValueError: an unknown ``case``, ``task``, ``mode`` or ``lifting``; an option out of
            range (the message names it); the base case does not converge; a sample fails
            20 draws in a row.
        TypeError: an option of the wrong type.
        MissingExtraError: pandapower is not installed.

    Example:
        >>> ds = PowerGridFlows("data/grid", case="case118", num_samples=50)  # doctest: +SKIP
        >>> ds.complex.num_edges, ds.num_classes  # doctest: +SKIP
        (179, 4)
    """

    def __init__(self, root: str, case: str = "case118", task: str = "outage", mode: str = "ac",
                 num_samples: int = 500, seed: int = 0, lifting: str = "triangles",
                 max_cycle_length: int = 6, num_regions: int = 4, observed: float = 0.5,
                 noise: float = 0.01, load_range: tuple[float, float] = (0.8, 1.2),
                 load_sigma: float = 0.1, n_jobs: int = -1, transform: Callable | None = None,
                 pre_transform: Callable | None = None, force_reload: bool = False,
                 log: bool = True) -> None:  # fmt: skip
        self.case = phys.check_choice(case, "case", POWER_CASES)
        self.task = phys.check_choice(task, "task", TASKS)
        self.mode = phys.check_choice(mode, "mode", MODES)
        phys.check_common(self, num_samples, seed, lifting, max_cycle_length, num_regions,
                          observed, noise, n_jobs)  # fmt: skip
        self.load_range = phys.check_pair(load_range, "load_range", 0.0)
        self.load_sigma = check_real(load_sigma, "load_sigma", 0.0)
        require_extra("pandapower", "PowerGridFlows")
        self._open(root, transform, pre_transform, force_reload, log)

    @property
    def processed_file_names(self) -> list[str]:
        lo, hi = self.load_range
        return [
            f"{self.case}_{self.task}_{self.mode}_{phys.common_name(self)}_load{lo:g}-{hi:g}"
            f"_sigma{self.load_sigma:g}.pt"
        ]

    def process(self) -> None:
        import pandapower as pp

        started = time.perf_counter()
        net = _load_case(self.case)
        tails, heads = _branches(net)
        edges, edge_of, _ = phys.merge_branches(tails, heads)
        num_nodes = len(net.bus)
        _solve(net, "dc")  # the internal branch table: reactances and taps
        weights = 1.0 / np.bincount(edge_of, 1.0 / _reactances(net), edges.shape[0])
        negative = int((weights < 0).sum())  # series capacitors: the metric takes |x|
        weights = np.abs(weights)
        candidates = _non_bridge_lines(net, edges, edge_of)
        spec = {"seed": self.seed, "task": self.task, "load_range": self.load_range,
                "load_sigma": self.load_sigma, "candidates": candidates}  # fmt: skip
        out = phys.run_chunks(_power_chunk, self.num_samples, self.n_jobs, case=self.case,
                              mode=self.mode, spec=spec)  # fmt: skip
        region = phys.regions(edges, num_nodes, self.num_regions, self.seed)
        trip_edge = np.where(out["trip"] >= 0, edge_of[np.maximum(out["trip"], 0)], -1)
        if self.task == "outage":
            labels = region[edges[trip_edge, 0]]
        else:
            labels = phys.level_classes(out["level"], self.load_range)
        settings = {
            "source": f"pandapower {pp.__version__}, pandapower.networks.{self.case}()",
            "solver": "rundcpp" if self.mode == "dc" else {"runpp": AC_SETTINGS},
            "numba": num_nodes >= NUMBA_BUSES and _has_numba(),
            "samples": {"load_range": self.load_range, "load_sigma": self.load_sigma,
                        "redispatch": "gen and sgen p_mw scaled by total load / base load",
                        "outage": "one non-bridge line, uniform"},
            "sizes": {"buses": num_nodes, "lines": len(net.line), "trafos": len(net.trafo),
                      "edges": int(edges.shape[0]), "outage_candidates": int(candidates.size),
                      "negative_reactance_edges": negative},
        }  # fmt: skip
        extra = {
            "edge_weights": weights, "regions": region,
            "losses": out["losses"] if self.mode == "ac" else None,
            "sample_info": {"load_level": out["level"], "tripped_line": out["trip"],
                            "tripped_edge": trip_edge}, "settings": settings,
        }  # fmt: skip
        self._save_physical(f"PowerGridFlows({self.case})", edges, num_nodes, _bus_xy(net), out,
                            labels, extra, started)  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({len(self)}, case={self.case}, task={self.task}, "
            f"mode={self.mode}, seed={self.seed})"
        )


def _bus_xy(net: Any) -> np.ndarray:
    """The buses' coordinates ``[N0, 2]`` from the case's geodata (zeros where it has none)."""
    geo = net.bus.get("geo")
    if geo is None or geo.isna().any():
        return np.zeros((len(net.bus), 2))
    return np.array([json.loads(g)["coordinates"][:2] for g in geo], dtype=np.float64)


def _has_numba() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
