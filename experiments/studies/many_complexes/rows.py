"""The rows of the many-complexes study: a registry, row name -> how the row is built.

A row is either *probed* (its features of every sample, scored by the label-efficiency
probe on every labelled subset) or *trained* (a test accuracy per labelled subset, from a
model trained on that subset). Each gets a :class:`Cell`: the dataset, its labels, the
settings, the seed and split of one pre-training seed, and a cache for what several rows
share (the pre-trained encoders).

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
    """What one pre-training seed gives the rows.

    Attributes:
        dataset: the samples (``InMemoryDataset`` of
            :class:`~topo_contrastive.data.ComplexData`, each on its own complex; ``x_1``
            ``[N1, 1]``, ``y`` class ids).
        labels: ``int64 [S]`` the class ids of every sample.
        num_classes: the number of classes.
        settings: the study's settings (``hidden``, ``layers``, ``epochs``, ``label_epochs``,
            ``batch_size``, ``budget``, ``temperature``, ``seed``, ...).
        index: the pre-training seed's index ``s`` (0, 1, ...).
        seed: the seed of its trainings, ``settings["seed"] + index``.
        train, test: ``int64`` sorted sample indices of its split (80 / 20 %).
        shared: a cache for the whole run (features that do not depend on the seed).
        cache: a cache for this seed (its encoders).
    """

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

    def pretrained(self, config: str) -> torch.nn.Module:
        """The encoder pre-trained on every sample without labels with ``config``
        (``"SSCL_Spec"`` or ``"SCL"``,
        :func:`~experiments.studies.reuse.pretrain_encoder`), once per seed."""
        from experiments.studies.reuse.encoders import pretrain_encoder

        st = self.settings
        return self.memo(("pretrained", config), lambda: pretrain_encoder(
            self.dataset, config, hidden=st["hidden"], layers=st["layers"],
            epochs=st["epochs"], batch_size=st["batch_size"], seed=self.seed,
            budget=st["budget"], temperature=st["temperature"]))  # fmt: skip

    def untrained(self) -> torch.nn.Module:
        """The same encoder at its initialisation under ``torch.manual_seed(seed)``."""
        from experiments.studies.reuse.encoders import scnn_encoder

        def build() -> torch.nn.Module:
            torch.manual_seed(self.seed)
            return scnn_encoder(self.settings["hidden"], self.settings["layers"])

        return self.memo("untrained", build)

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
    """How one row is built: exactly one of

    Attributes:
        features: ``features(cell)`` -> ``float [S, D]`` features of every sample of
            ``cell.dataset``, probed on every labelled subset
            (:func:`~experiments.studies.label_efficiency.low_label_probe`, logistic
            regression, selection inside the labelled subset).
        accuracy: ``accuracy(cell, labelled, draw)`` -> the test accuracy in ``[0, 1]`` on
            ``cell.test`` of a model trained on the labelled samples ``labelled`` (``int64
            [n]``) of draw ``draw``.
        extra: the optional dependency the row needs (its import name, e.g.
            ``"topomodelx"``): such a row runs only when chosen by name, not by default
            (default ``None``).

    Raises:
        TypeError: neither or both given, or one that is not callable.
    """

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


def _one_layer(cell: Cell, config: str | None) -> torch.nn.Module:
    """The encoder with one SCNN layer (no nonlinearity between layers, so each Hodge part
    of the input reaches the part energies through its own filter and one tanh):
    pre-trained with ``config``, or untrained (``None``), once per seed."""
    from experiments.studies.reuse.encoders import pretrain_encoder, scnn_encoder

    st = cell.settings

    def build() -> torch.nn.Module:
        if config is None:
            torch.manual_seed(cell.seed)
            return scnn_encoder(st["hidden"], 1)
        return pretrain_encoder(
            cell.dataset, config, hidden=st["hidden"], layers=1, epochs=st["epochs"],
            batch_size=st["batch_size"], seed=cell.seed, budget=st["budget"],
            temperature=st["temperature"],
        )  # fmt: skip

    return cell.memo(("one layer", config), build)


def _topomodelx(cell: Cell) -> torch.nn.Module:
    """TopoModelX's SCNN (linear layers) through the adapter, pre-trained with SSCL_Spec
    in batches of :data:`TOPOMODELX_BATCH` complexes, once per seed."""
    from experiments.studies.reuse.encoders import pretrain_encoder, topomodelx_encoder

    st = cell.settings

    def build() -> torch.nn.Module:
        torch.manual_seed(cell.seed)
        encoder = topomodelx_encoder(st["hidden"], st["layers"])
        return pretrain_encoder(
            cell.dataset, "SSCL_Spec", hidden=st["hidden"], epochs=st["epochs"],
            batch_size=min(st["batch_size"], TOPOMODELX_BATCH), seed=cell.seed,
            budget=st["budget"], temperature=st["temperature"], encoder=encoder,
        )  # fmt: skip

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
    "SSCL_Spec 1 layer, part energies": _part_energies(lambda c: _one_layer(c, "SSCL_Spec")),
    "untrained 1 layer, part energies": _part_energies(lambda c: _one_layer(c, None)),
    # a second architecture: TopoModelX's SCNN (the topomodelx extra; chosen by name)
    "TopoModelX SCNN, SSCL_Spec": _embedded(_topomodelx, TOPOMODELX_BATCH, "topomodelx"),
    "TopoModelX SCNN, SSCL_Spec, part energies": _part_energies(
        _topomodelx, TOPOMODELX_BATCH, "topomodelx"),  # fmt: skip
    # complex-agnostic references
    **{name: _reference(name) for name in REFERENCES},
}

#: The rows run by default: every row that needs no extra (all but the TopoModelX rows).
DEFAULT_ROWS: tuple[str, ...] = tuple(r for r, row in ROWS.items() if row.extra is None)
