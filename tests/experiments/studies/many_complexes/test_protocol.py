"""The many-complexes protocol: rows from a registry, resumable per seed x row (a finished
cell is read back, never recomputed), other settings refused, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.studies.many_complexes import (
    REFERENCES,
    ROWS,
    PooledSamples,
    Row,
    many_complexes_study,
)
from experiments.studies.many_complexes import check_study as _check
from experiments.study import Settings
from tests._many_complexes import many_complexes

KW = {"fractions": [0.5, 1.0], "draws": 2, "seeds": 2, "epochs": 1}


def study(dataset, out, registry=None, **kw):
    return many_complexes_study(dataset, Settings(out, **kw), registry=registry)


def check_study(dataset, registry=None, **kw):
    return _check(dataset, Settings(".", **{"epochs": 20, "draws": 5, "seeds": 3, **kw}), registry)


@pytest.fixture(scope="module")
def dataset():
    return PooledSamples(many_complexes(24, seed=1))


def _registry(calls: list, fail_at: tuple | None = None) -> dict[str, Row]:
    """A probed row (noisy labels as features) and a trained row (a constant per draw),
    each recording its calls; ``fail_at = (row, seed)`` raises there once."""

    def features(cell):
        calls.append(("probed", cell.index))
        if fail_at == ("probed", cell.index):
            raise KeyboardInterrupt
        rng = np.random.default_rng(cell.seed)
        return cell.labels[:, None] + rng.normal(0, 0.7, size=(cell.labels.size, 2))

    def accuracy(cell, labelled, draw):
        calls.append(("trained", cell.index))
        if fail_at == ("trained", cell.index):
            raise KeyboardInterrupt
        return len(labelled) / 100 + draw / 1000

    return {"probed": Row(features=features), "trained": Row(accuracy=accuracy)}


def test_the_registry_holds_every_row_and_the_references_last():
    assert list(ROWS)[-len(REFERENCES):] == list(REFERENCES)
    assert {"SSCL_Spec", "SCL", "untrained", "SSCL_Spec fine-tuned", "supervised SCNN",
            "SSCL_Spec, part energies", "untrained, part energies"} <= set(ROWS)  # fmt: skip
    for row in ROWS.values():
        assert (row.features is None) != (row.accuracy is None)
    with pytest.raises(TypeError, match="exactly one callable"):
        Row()
    with pytest.raises(TypeError, match="exactly one callable"):
        Row(features=len, accuracy=len)


def test_an_interrupted_run_resumes_without_recomputing_finished_cells(tmp_path, dataset):
    calls: list = []
    with pytest.raises(KeyboardInterrupt):  # seed 1's trained row is interrupted
        study(dataset, tmp_path / "out", registry=_registry(calls, ("trained", 1)),
                             **KW)  # fmt: skip
    assert calls == [("probed", 0), ("trained", 0), ("trained", 0), ("trained", 0),
                     ("probed", 1), ("trained", 1)]  # fmt: skip
    records = json.loads((tmp_path / "out" / "cells" / "cells.json").read_text())
    assert [r["cell"] for r in records["records"]] == ["seed 0: probed", "seed 0: trained",
                                                       "seed 1: probed"]  # fmt: skip
    assert not records["complete"]
    calls.clear()
    resumed = study(dataset, tmp_path / "out", registry=_registry(calls), **KW)
    assert calls == [("trained", 1)] * 3  # only the unfinished cell: 2 draws at 0.5, 1 at 1
    assert (resumed["computed"], resumed["resumed"]) == (1, 3)
    assert (tmp_path / "out" / "cells" / "COMPLETE").is_file()
    fresh = study(dataset, tmp_path / "fresh", registry=_registry([]), **KW)
    assert resumed["rows"] == fresh["rows"] and fresh["computed"] == 4
    # 2 seeds x (2 draws of 10 labels at 0.5 + 1 of 19 at 1), in seed and draw order
    runs = fresh["rows"]["trained"]
    assert runs["0.5"]["runs"] == [0.10, 0.101] * 2 and runs["1"]["runs"] == [0.19, 0.19]
    assert runs["1"]["mean"] == pytest.approx(0.19) and runs["1"]["std"] == pytest.approx(0)
    assert all(0 <= a <= 1 for a in fresh["rows"]["probed"]["0.5"]["runs"])


def test_a_finished_cell_is_read_back_and_other_settings_are_refused(tmp_path, dataset):
    first = study(dataset, tmp_path / "out", registry=_registry([]), **KW)
    cells = tmp_path / "out" / "cells" / "cells.json"
    payload = json.loads(cells.read_text())
    record = next(r for r in payload["records"] if r["cell"] == "seed 1: probed")
    probed = first["rows"]["probed"]  # seed 1's runs follow seed 0's
    assert record["runs"] == {"0.5": probed["0.5"]["runs"][2:], "1": probed["1"]["runs"][1:]}
    record["runs"]["1"] = [0.123]  # a marker: read back, not recomputed
    cells.write_text(json.dumps(payload))
    again = study(dataset, tmp_path / "out", registry=_registry([]), **KW)
    assert again["rows"]["probed"]["1"]["runs"][-1] == 0.123 and again["computed"] == 0
    payload = json.loads(cells.read_text())
    with pytest.raises(ValueError, match=r"they differ in .*temperature \(0.5 then, 0.25 now\)"):
        study(dataset, tmp_path / "out", registry=_registry([]),
                             temperature=0.25, **KW)  # fmt: skip
    with pytest.raises(ValueError, match=r"they differ in rows \(\['probed', 'trained'\] then, "
                                         r"\['probed'\] now\)"):  # fmt: skip
        study(dataset, tmp_path / "out", registry=_registry([]), rows=["probed"],
                             **KW)  # fmt: skip
    other = PooledSamples(many_complexes(24, seed=2))
    with pytest.raises(ValueError, match=r"they differ in data.fingerprint"):
        study(other, tmp_path / "out", registry=_registry([]), **KW)
    assert json.loads(cells.read_text()) == payload  # untouched


def test_rows_run_in_the_registrys_order_and_the_summary_names_them(tmp_path, dataset):
    out = study(dataset, tmp_path / "out", registry=_registry([]),
                               rows=["trained", "probed"], **KW)  # fmt: skip
    assert list(out["rows"]) == ["probed", "trained"]
    assert out["settings"]["rows"] == ["probed", "trained"] and out["settings"]["seeds"] == 2
    assert out["data"]["samples"] == 24 and out["data"]["classes"] == 2


def test_bad_input_is_refused_before_any_work(tmp_path, dataset):
    reg = _registry([])
    cases = [
        ({"fractions": [0.0, 1.0]}, r"`fractions` must lie in \(0, 1\], got 0"),
        ({"fractions": [1.5]}, r"`fractions` must lie in \(0, 1\], got 1.5"),
        ({"fractions": []}, "`fractions` is empty"),
        ({"fractions": [0.5, 0.5]}, "names 0.5 twice"),
        ({"draws": 0}, "`draws` must be a positive integer, got 0"),
        ({"seeds": 1.5}, "`seeds` must be a positive integer"),
        ({"rows": ["probed", "nope"]}, r"unknown row\(s\) \['nope'\]; the rows are"),
        ({"rows": ["probed", "probed"]}, "names a row twice"),
        ({"rows": []}, "`rows` is empty"),
        ({"fractions": [0.01]}, "fraction"),  # too few labels for one per class
    ]
    for kw, message in cases:
        with pytest.raises(ValueError, match=message):
            check_study(dataset, **{**{"fractions": [1.0]}, **kw}, registry=reg)
    samples = many_complexes(6, seed=1)
    for d in samples:
        d.y = d.y + 3  # label values 3 and 4, not class ids
    with pytest.raises(ValueError, match=r"class ids 0 .. C-1 .*got the values \[3, 4\]"):
        check_study(PooledSamples(samples), fractions=[1.0], registry=reg)
    with pytest.raises(ValueError, match="complexes of their own"):
        check_study([], fractions=[1.0], registry=reg)
    with pytest.raises(ValueError, match="unknown row"):
        study(dataset, tmp_path / "out", registry=reg, rows=["x"], **KW)
    assert not (tmp_path / "out").exists()


def test_rows_that_need_an_extra_run_only_by_name_and_only_when_it_is_installed(dataset):
    """A row with ``extra`` is left out of the default rows; chosen by name it is refused
    (naming the row and the package) when the package is missing."""
    reg = {**_registry([]), "needs": Row(features=len, extra="no_such_package_xyz")}
    _, chosen, _ = check_study(dataset, fractions=[1.0], registry=reg)
    assert chosen == ["probed", "trained"]
    with pytest.raises(ValueError, match="the row 'needs' needs no_such_package_xyz"):
        check_study(dataset, fractions=[1.0], rows=["probed", "needs"], registry=reg)
    reg["needs"] = Row(features=len, extra="numpy")  # installed: chosen by name, it runs
    _, chosen, _ = check_study(dataset, fractions=[1.0], rows=["needs"], registry=reg)
    assert chosen == ["needs"]
    # the library's TopoModelX rows are such rows
    assert {r for r, row in ROWS.items() if row.extra} == {
        "TopoModelX SCNN, SSCL_Spec", "TopoModelX SCNN, SSCL_Spec, part energies"}


def test_topomodelx_rows_run_through_the_study(tmp_path, dataset):
    """The TopoModelX rows (chosen by name) pre-train TopoModelX's SCNN once per seed and
    share it: both rows give accuracies for every subset."""
    pytest.importorskip("topomodelx")
    names = ["TopoModelX SCNN, SSCL_Spec", "TopoModelX SCNN, SSCL_Spec, part energies"]
    out = study(dataset, tmp_path / "out", rows=names,
                               **{**KW, "seeds": 1}, hidden=4)  # fmt: skip
    assert list(out["rows"]) == names
    for per in out["rows"].values():
        assert len(per["0.5"]["runs"]) == 2 and 0 <= per["1"]["mean"] <= 1
