"""PowerGridFlows: pandapower's grids as complexes, power-flow samples that obey Kirchhoff's law,
DC flows that are gradients in the reactance metric, determinism, and refused options."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

pytest.importorskip("pandapower")

from topo_contrastive import HodgeDecomposition  # noqa: E402
from topo_contrastive.datasets import EdgeFlows, PowerGridFlows  # noqa: E402
from topo_contrastive.datasets import power_grid_flows as pgf  # noqa: E402
from topo_contrastive.datasets._file import read_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# pandapower's mismatch tolerance is 1e-8 in per unit of the case's base power (100 MVA)
KIRCHHOFF_MW = 1e-8 * 100


@pytest.fixture(scope="module")
def ac(tmp_path_factory):
    root = tmp_path_factory.mktemp("ac")
    return PowerGridFlows(str(root), case="case118", num_samples=12, n_jobs=1, log=False)


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    root = tmp_path_factory.mktemp("dc")
    return PowerGridFlows(str(root), case="case118", task="state", mode="dc", num_samples=10,
                          n_jobs=1, log=False)  # fmt: skip


def test_sizes_of_case118(ac):
    ops = ac.complex
    # 118 buses; 173 lines and 13 transformers, of which 7 pairs run in parallel: 179 edges
    assert (ops.num_nodes, ops.num_edges, ops.num_faces) == (118, 179, 23)
    assert len(ac) == 12 and ac[0].x_1.shape == (179, 1) and ac.flows.shape == (12, 179)
    assert ac.injections.shape == (12, 118) and ac.losses.shape == (12, 179)
    assert ac.edge_weights.shape == (179,) and bool((ac.edge_weights > 0).all())
    assert int(ac.observed_mask.sum()) == round(0.5 * 179)
    x = ac._data.x_1.view(12, 179)
    assert bool((x[:, ~ac.observed_mask] == 0).all())
    assert set(ac._data.y.tolist()) <= set(range(4)) and ac.regions.unique().numel() == 4
    assert int(ac.train_mask.sum() + ac.val_mask.sum() + ac.test_mask.sum()) == 12
    assert ac.num_failed == 0 and ac.settings["solver"]["runpp"]["tolerance_mva"] == 1e-8
    edges = ac.edges.numpy()
    assert bool((edges[:, 0] < edges[:, 1]).all())


def test_kirchhoff_at_every_bus_of_every_ac_sample(ac):
    B1 = ac.complex.B1
    f, loss, p = ac.flows.numpy(), ac.losses.numpy(), ac.injections.numpy()
    residual = B1 @ f.T - abs(B1) @ loss.T / 2 + p.T  # [N0, S]
    assert np.abs(residual).max() < KIRCHHOFF_MW
    assert np.abs(f).max() > 100 and (loss.sum(axis=1) > 0).all()  # real flows, real losses


def test_the_tripped_line_carries_nothing_and_labels_its_region(ac):
    info = ac.sample_info
    edge, line = info["tripped_edge"].numpy(), info["tripped_line"].numpy()
    assert (line >= 0).all()
    alone = np.bincount(pgf.phys.merge_branches(*_branches())[1], minlength=179)[edge] == 1
    flows = ac.flows.numpy()[np.arange(12), edge]
    assert np.all(flows[alone] == 0)
    region = ac.regions.numpy()[ac.edges.numpy()[edge, 0]]
    assert np.array_equal(region, ac._data.y.numpy())


def _branches():
    return pgf._branches(pgf._load_case("case118"))


def _fractions(ops, flows):
    """Each Hodge part's share of the flows' energy in the complex's metric, ``[S, 3]``."""
    parts = HodgeDecomposition(ops)(flows)
    w = torch.from_numpy(ops.hodge_star(1))
    energy = torch.stack([(p * p * w).sum(1) for p in parts], 1)
    return (energy / energy.sum(1, keepdim=True)).numpy()


def test_dc_flows_are_gradients_in_the_reactance_metric(dc):
    ops, w = dc.complex, dc.edge_weights.numpy()
    assert ops.metric == "resistance" and np.array_equal(ops.hodge_star(1), w)
    assert ops.hodge_star(0).tolist() == [1.0] * 118 and ops.hodge_star(2).tolist() == [1.0] * 23
    B1, f, p = ops.B1, dc.flows, dc.injections.numpy()
    assert np.abs(B1 @ f.numpy().T + p.T).max() < 1e-9 * float(f.abs().max())  # B1 f = -p
    fractions = _fractions(ops, f)
    assert fractions[:, 0].min() >= 1 - 1e-8 and fractions[:, 1:].max() < 1e-8
    parts = HodgeDecomposition(ops)(f)
    # the dense W1-orthogonal projection on the gradients W1^-1 B1^T phi
    B, Winv = B1.toarray(), np.diag(1 / w)
    grad = (Winv @ B.T @ np.linalg.pinv(B @ Winv @ B.T) @ B @ f.numpy().T).T
    assert np.abs(parts.gradient.numpy() - grad).max() < 1e-10 * float(f.abs().max())
    assert float((parts.curl + parts.harmonic).norm() / f.norm()) < 1e-8
    unit = _fractions(ops.with_weights("unweighted"), f)
    assert unit[:, 1:].sum(axis=1).min() > 1e-3  # not a gradient in the unit metric


def test_state_labels_are_the_thirds_of_the_load_range(dc):
    level = dc.sample_info["load_level"].numpy()
    assert np.array_equal(dc._data.y.numpy(), np.digitize(level, [0.8 + 0.4 / 3, 0.8 + 0.8 / 3]))
    assert dc.losses is None


def test_determinism_by_seed(tmp_path):
    kw = dict(case="case14", num_samples=6, num_regions=2, n_jobs=1, log=False)
    one = PowerGridFlows(str(tmp_path / "a"), **kw)
    again = PowerGridFlows(str(tmp_path / "b"), **kw)
    other = PowerGridFlows(str(tmp_path / "c"), **{**kw, "seed": 1})
    assert torch.equal(one._data.x_1, again._data.x_1) and torch.equal(one.flows, again.flows)
    assert torch.equal(one._data.y, again._data.y)
    assert not torch.allclose(one.flows, other.flows)


def test_a_sample_does_not_depend_on_its_chunk():
    # what makes the data independent of n_jobs: every sample its own generator and warm start
    spec = {"seed": 3, "task": "outage", "load_range": (0.8, 1.2), "load_sigma": 0.1,
            "candidates": np.array([0, 1, 2, 5, 8])}  # fmt: skip
    whole = pgf._power_chunk(np.arange(4), "case14", "ac", spec)
    tail = pgf._power_chunk(np.arange(2, 4), "case14", "ac", spec)
    for key in ("flows", "losses", "injections", "level", "trip"):
        assert np.array_equal(whole[key][2:], tail[key])


@pytest.mark.slow
def test_n_jobs_gives_the_same_data(tmp_path):
    kw = dict(case="case14", num_samples=6, num_regions=2, log=False)
    one = PowerGridFlows(str(tmp_path / "a"), n_jobs=1, **kw)
    two = PowerGridFlows(str(tmp_path / "b"), n_jobs=2, **kw)
    assert torch.equal(one._data.x_1, two._data.x_1) and torch.equal(one._data.y, two._data.y)


def test_a_failed_solve_is_redrawn_counted_and_said(tmp_path, monkeypatch):
    calls = []
    real = pgf._solve

    def fail_first(net, mode):
        calls.append(1)
        return False if len(calls) == 3 else real(net, mode)  # 1, 2: the base case (DC, AC)

    monkeypatch.setattr(pgf, "_solve", fail_first)
    with pytest.warns(UserWarning, match="1 of 6 solves failed to converge"):
        ds = PowerGridFlows(str(tmp_path), case="case14", num_samples=5, num_regions=2, n_jobs=1,
                            log=False)  # fmt: skip
    assert ds.num_failed == 1 and ds.settings["num_failed"] == 1 and len(ds) == 5


def test_cycle_lifting_gives_independent_cycles(tmp_path):
    ds = PowerGridFlows(str(tmp_path), case="case14", lifting="cycles", max_cycle_length=5,
                        num_samples=5, num_regions=2, n_jobs=1, log=False)  # fmt: skip
    ops = ds.complex
    B2 = ops.B2.toarray()
    assert np.linalg.matrix_rank(B2) == B2.shape[1] > 0
    assert max(len(c) for c in ds.cells) <= 5
    assert sp.csr_matrix(ops.B1 @ ops.B2).count_nonzero() == 0


def test_export_is_an_edge_flow_file_with_edge_weights(ac, tmp_path):
    path = tmp_path / "grid.npz"
    ac.to_npz(path)
    content = read_file(str(path))
    assert np.array_equal(content["edge_weights"], ac.edge_weights.numpy())
    assert np.array_equal(content["y"], ac._data.y.numpy())
    back = EdgeFlows(str(tmp_path / "ds"), file=str(path), log=False)
    assert torch.equal(back._data.x_1, ac._data.x_1) and torch.equal(back.train_mask, ac.train_mask)
    assert torch.equal(back.edge_weights, ac.edge_weights) and torch.equal(back.pos, ac.pos)
    view = tmp_path / "view.npz"
    ac[3:9].to_npz(view)  # a view: its rows, its split
    part = EdgeFlows(str(tmp_path / "part"), file=str(view), log=False)
    assert torch.equal(part._data.x_1.view(6, -1), ac._data.x_1.view(12, -1)[3:9])
    assert torch.equal(part.labels, ac.labels[3:9])
    assert torch.equal(part.test_mask, ac.test_mask[3:9])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"case": "case_nope"}, "case"), ({"task": "blackout"}, "task"), ({"mode": "hvdc"}, "mode"),
        ({"lifting": "squares"}, "lifting"), ({"observed": 0.0}, "observed"),
        ({"num_samples": 2}, "num_samples"), ({"load_range": (1.2, 0.8)}, "load_range"),
        ({"n_jobs": 0}, "n_jobs"), ({"noise": -1.0}, "noise"), ({"num_regions": 1}, "num_regions"),
        ({"max_cycle_length": 2}, "max_cycle_length"),
    ],
)  # fmt: skip
def test_bad_options_are_refused_naming_the_argument(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        PowerGridFlows(str(tmp_path), log=False, **kwargs)
    with pytest.raises(TypeError, match="`seed`"):
        PowerGridFlows(str(tmp_path), seed=1.5, log=False)
    assert not (tmp_path / "processed").exists()


def test_the_library_imports_without_pandapower_and_wntr():
    code = (
        "import sys; sys.modules['pandapower'] = None; sys.modules['wntr'] = None\n"
        "import topo_contrastive, topo_contrastive.datasets as d\n"
        "try:\n    d.PowerGridFlows('/nonexistent')\n"
        "except ImportError as e:\n    print(type(e).__name__, e)\n"
        "try:\n    d.WaterNetworkFlows('/nonexistent')\n"
        "except ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    with warnings.catch_warnings():
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
    assert "MissingExtraError PowerGridFlows needs pandapower" in out
    assert "topo-contrastive[power]" in out and "topo-contrastive[water]" in out
