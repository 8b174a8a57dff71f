"""The rows of the many-complexes study: a registry, row name -> how the row is built
(:class:`Row`: *probed* features or a *trained* accuracy per labelled subset), each given a
:class:`Cell` (one pre-training seed's data, split and caches).

Adding a row is adding an entry to :data:`ROWS`::

    def _my_encoder(cell: Cell) -> np.ndarray:          # float [S, D], every sample
        enc = cell.memo("my encoder", lambda: pretrain_mine(cell.dataset, seed=cell.seed))
        return embed_samples(enc, cell.dataset)[0]

    ROWS["my encoder"] = Row(features=_my_encoder)

The row names are part of the study's settings: a run resumed with other rows is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from topo_contrastive.training.embeddings import AGNOSTIC_ROWS as REFERENCES
from topo_contrastive.training.embeddings import agnostic_features as reference_features


@dataclass
class Cell:
    """What one pre-training seed gives the rows: the ``dataset`` (samples on complexes of
    their own, ``x_1`` ``[N1, 1]``, ``y``), its ``labels`` (``int64 [S]`` class ids) and
    ``num_classes``, the study's fingerprinted ``settings``, the seed's ``index`` and
    ``seed`` (``settings["seed"] + index``), its ``train`` / ``test`` split (80 / 20 %), a
    cache ``shared`` by the whole run and one of this seed (its encoders)."""

    dataset: Any
    labels: np.ndarray
    num_classes: int
    settings: Mapping[str, Any]
    index: int
    seed: int
    train: np.ndarray
    test: np.ndarray
    shared: dict[Any, Any] = field(default_factory=dict)
    cache: dict[Any, Any] = field(default_factory=dict)

    def memo(self, key: Any, build: Callable[[], Any], *, per_seed: bool = True) -> Any:
        """``build()``, computed once per seed (``per_seed``) or once per run, and kept."""
        store = self.cache if per_seed else self.shared
        if key not in store:
            store[key] = build()
        return store[key]

    def pretrain(self, config: str, **changes: Any) -> torch.nn.Module:
        """An encoder pre-trained on every sample without labels with ``config``
        (:func:`~experiments.studies.reuse.pretrain_encoder` with the study's settings and
        ``changes``)."""
        from experiments.studies.reuse.encoders import pretrain_encoder

        st = self.settings
        kw = {k: st[k] for k in ("hidden", "layers", "epochs", "batch_size", "budget",
                                 "temperature")}  # fmt: skip
        return pretrain_encoder(self.dataset, config, **{**kw, "seed": self.seed, **changes})

    def pretrained(self, config: str) -> torch.nn.Module:
        """The encoder pre-trained with ``config`` (``"SSCL_Spec"`` or ``"SCL"``), once per
        seed."""
        return self.memo(("pretrained", config), lambda: self.pretrain(config))

    def untrained(self, layers: int | None = None) -> torch.nn.Module:
        """The same encoder (of ``layers`` layers; default the study's) at its initialisation
        under ``torch.manual_seed(seed)``, once per seed."""
        from experiments.studies.reuse.encoders import scnn_encoder

        def build() -> torch.nn.Module:
            torch.manual_seed(self.seed)
            return scnn_encoder(self.settings["hidden"], layers or self.settings["layers"])

        return self.memo(("untrained", layers), build)

    def train_with_labels(self, labelled: np.ndarray, draw: int,
                          encoder: torch.nn.Module | None = None) -> float:  # fmt: skip
        """Test accuracy of an encoder (a copy of ``encoder``, or a new one) and a linear
        layer trained with cross-entropy on ``labelled`` for ``label_epochs`` epochs
        (:func:`~experiments.studies.reuse.train_with_labels`, seed ``seed + draw``)."""
        from experiments.studies.reuse.encoders import train_with_labels

        st = self.settings
        return train_with_labels(
            self.dataset, labelled, self.test, hidden=st["hidden"], layers=st["layers"],
            epochs=st["label_epochs"], batch_size=st["batch_size"], seed=self.seed + draw,
            encoder=encoder, num_classes=self.num_classes,
        )  # fmt: skip


@dataclass(frozen=True)
class Row:
    """How one row is built: exactly one of ``features(cell)`` (``float [S, D]`` features of
    every sample, probed on every labelled subset by the label-efficiency probe) and
    ``accuracy(cell, labelled, draw)`` (the test accuracy of a model trained on the labelled
    samples of draw ``draw``), else a ``TypeError``; ``extra``: the optional package the row
    needs (such a row runs only when chosen by name)."""

    features: Callable[[Cell], np.ndarray] | None = None
    accuracy: Callable[[Cell, np.ndarray, int], float] | None = None
    extra: str | None = None

    def __post_init__(self) -> None:
        given = [f for f in (self.features, self.accuracy) if f is not None]
        if len(given) != 1 or not callable(given[0]):
            raise TypeError(
                "a Row takes exactly one callable, `features` (probed) or `accuracy` "
                f"(trained), got features={self.features!r}, accuracy={self.accuracy!r}"
            )


#: Samples per batch of the TopoModelX rows: TopoModelX's layers build a dense identity
#: of the batch's edges (16 complexes of about 300 edges: 5,000 edges, 100 MB).
TOPOMODELX_BATCH = 16


def _one_layer(cell: Cell) -> torch.nn.Module:
    """The SSCL_Spec encoder with one SCNN layer (each Hodge part of the input reaches the
    part energies through its own filter and one tanh), once per seed."""
    return cell.memo("one layer", lambda: cell.pretrain("SSCL_Spec", layers=1))


def _topomodelx(cell: Cell) -> torch.nn.Module:
    """TopoModelX's SCNN through the adapter, pre-trained with SSCL_Spec in batches of
    :data:`TOPOMODELX_BATCH` complexes, once per seed."""
    from experiments.studies.reuse.encoders import topomodelx_encoder

    def build() -> torch.nn.Module:
        torch.manual_seed(cell.seed)
        encoder = topomodelx_encoder(cell.settings["hidden"], cell.settings["layers"])
        return cell.pretrain("SSCL_Spec", encoder=encoder,
                             batch_size=min(cell.settings["batch_size"], TOPOMODELX_BATCH))

    return cell.memo("topomodelx", build)


def _embedded(encoder: Callable[[Cell], torch.nn.Module], batch_size: int = 256,
              extra: str | None = None) -> Row:  # fmt: skip
    from experiments.studies.reuse.encoders import embed_samples

    return Row(features=lambda cell: embed_samples(encoder(cell), cell.dataset, batch_size)[0],
               extra=extra)  # fmt: skip


def _part_energies(encoder: Callable[[Cell], torch.nn.Module], batch_size: int = 256,
                   extra: str | None = None) -> Row:  # fmt: skip
    from experiments.studies.reuse.encoders import part_energy_features

    return Row(features=lambda cell: part_energy_features(encoder(cell), cell.dataset,
                                                          batch_size), extra=extra)  # fmt: skip


def _reference(name: str) -> Row:
    return Row(features=lambda cell: cell.memo(
        "references", lambda: reference_features(cell.dataset), per_seed=False)[name])  # fmt: skip


#: The rows, in the order of the tables: name -> :class:`Row`.
ROWS: dict[str, Row] = {
    # pre-trained on all samples without labels, probed
    "SSCL_Spec": _embedded(lambda c: c.pretrained("SSCL_Spec")),
    "SCL": _embedded(lambda c: c.pretrained("SCL")),
    "untrained": _embedded(lambda c: c.untrained()),
    # trained with the labelled subset
    "SSCL_Spec fine-tuned": Row(accuracy=lambda c, sub, d: c.train_with_labels(
        sub, d, c.pretrained("SSCL_Spec"))),  # fmt: skip
    "supervised SCNN": Row(accuracy=lambda c, sub, d: c.train_with_labels(sub, d)),
    # the same encoders read out by every channel's Hodge-part energy fractions
    "SSCL_Spec, part energies": _part_energies(lambda c: c.pretrained("SSCL_Spec")),
    "untrained, part energies": _part_energies(lambda c: c.untrained()),
    # one layer: the parts kept apart up to one tanh, read out by part energies
    "SSCL_Spec 1 layer, part energies": _part_energies(_one_layer),
    "untrained 1 layer, part energies": _part_energies(lambda c: c.untrained(layers=1)),
    # a second architecture: TopoModelX's SCNN (the topomodelx extra; chosen by name)
    "TopoModelX SCNN, SSCL_Spec": _embedded(_topomodelx, TOPOMODELX_BATCH, "topomodelx"),
    "TopoModelX SCNN, SSCL_Spec, part energies": _part_energies(
        _topomodelx, TOPOMODELX_BATCH, "topomodelx"),  # fmt: skip
    # complex-agnostic references
    **{name: _reference(name) for name in REFERENCES},
}

#: The rows run by default: every row that needs no extra (all but the TopoModelX rows).
DEFAULT_ROWS: tuple[str, ...] = tuple(r for r, row in ROWS.items() if row.extra is None)
