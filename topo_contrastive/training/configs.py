r"""Named configurations of the rows of Table 1 (paper §5) and the paper's reference numbers.

Every row of Table 1 is an :class:`ExperimentConfig`: the method (contrastive pre-training or the
supervised SCNN), the loss, the mask, the encoder and the optimiser. The rows share the encoder and
the optimiser of their dataset and differ only in what the ablation changes (loss, mask, ``K_up``).

**How the values were chosen** (paper §5: learning rate and weight decay from
:math:`[10^{-5}, 1]` in decimal steps, drop probability and budget from :math:`[0.1, 0.7]`, 200
epochs, batch size 100, tanh, width 64, layers and :math:`K_\downarrow = K_\uparrow` from
:math:`\{1, 2, 3\}`): searches with ``python -m experiments search``
(:mod:`experiments.search`), scored on the **validation split** of the
trajectory task (linear-SVM validation accuracy) and by **10-fold cross-validation on the
training split** of the ocean drifters (no validation split there); never on a test split.
Every search point averages 2 pre-training seeds x 2 evaluation splits; contrastive points are
scored after several epoch counts of one run (``--eval-epochs``). The search tables are in
``docs/results/protocol.md``.

- **Paper edition** (the paper's encoder): the depth and shape of the authors' public encoder,
  four SCNN layers of width 64, :math:`K_\downarrow = K_\uparrow = 2`, tanh, a bias, the mean
  readout, Laplacians not rescaled, Adam with temperature 0.2. Searched at this depth: layers
  (3 or 4 on the ocean drifters: 4 better), learning rate (0.001, 0.003), epochs (5-60),
  spectral budget (0.3, 0.5) and :math:`\gamma` (ocean). Both datasets take learning rate
  0.003 and 20 epochs: on the trajectories SCL scores 99.0 % validation at 20 epochs (99.5 %
  at 30, within one std), on the ocean drifters 90.5 % CV (88.0 % at 60). Earlier rounds
  (one and two layers) chose the orders, the drop probability, :math:`\gamma` on the
  trajectories and three projected-gradient steps of the spectral masks (``mask_steps``).
- **HodgeReadout edition**: the same rows with
  :class:`~topo_contrastive.nn.HodgeReadout` and **two** layers: with this readout two
  layers score 94-95 % CV on the ocean drifters against 86-89 % with four, and 100 % on the
  trajectories' validation split at every epoch count.
- **Supervised SCNN**: the same encoder and optimiser plus a linear classifier, trained
  until validation accuracy and training accuracy have both stalled for ``patience``
  epochs (at most 200, the paper's epoch count), the best validation epoch kept. Its
  learning rate was searched like the others'.

Pre-training runs 20 epochs, not the paper's 200: the searches found no gain from more
epochs on either dataset, and every epoch at the paper's depth costs 4-6 s on the
trajectories on 2 CPU cores.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The rows of Table 1, in the paper's order.
CONFIG_NAMES: tuple[str, ...] = ("SSCL_Spec", "SCNN", "SSCL", "SCL_Spec", "SCL", "SCL_low")
#: The two tasks of the paper's §5.
DATASET_NAMES: tuple[str, ...] = ("trajectory", "ocean")
#: The two editions of Table 1: the paper's encoder (mean readout over edges), and the same
#: rows with :class:`~topo_contrastive.nn.HodgeReadout` (beyond the paper).
EDITIONS: tuple[str, ...] = ("paper", "hodge")

_DATASET_ALIASES = {
    "trajectory": "trajectory",
    "trajectories": "trajectory",
    "synthetic": "trajectory",
    "ocean": "ocean",
    "ocean_drifters": "ocean",
    "oceandrifters": "ocean",
}

#: Paper Table 1: test accuracy in %, ``(mean, std)`` over 16 splits (docs/design.md §4).
PAPER_TABLE1: dict[str, dict[str, tuple[float, float]]] = {
    "SSCL_Spec": {"trajectory": (97.9, 0.3), "ocean": (90.3, 1.4)},
    "SCNN": {"trajectory": (95.2, 0.5), "ocean": (78.5, 1.1)},
    "SSCL": {"trajectory": (96.8, 0.4), "ocean": (89.1, 1.0)},
    "SCL_Spec": {"trajectory": (98.2, 0.4), "ocean": (83.1, 1.1)},
    "SCL": {"trajectory": (96.1, 0.6), "ocean": (81.6, 1.6)},
    "SCL_low": {"trajectory": (91.0, 0.2), "ocean": (77.1, 1.2)},
}

_METHODS = ("contrastive", "supervised")
_LOSSES = ("infonce", "hodge_debiased")
_MASKS = ("uniform", "spectral")
_COMPONENTS = ("gradient", "curl", "harmonic")
_READOUTS = ("mean", "sum", "max", "hodge")


@dataclass(frozen=True)
class ExperimentConfig:
    r"""One row of Table 1 on one dataset: method, loss, mask, encoder and optimiser.

    Args:
        name (str): the row's name (e.g. ``"SSCL_Spec"``).
        method (str): ``"contrastive"`` (pre-training + linear SVM) or ``"supervised"``
            (SCNN + linear classifier trained with cross-entropy).
        loss (str or None): ``"infonce"`` (:class:`~topo_contrastive.losses.InfoNCE`, eq. 4) or
            ``"hodge_debiased"`` (:class:`~topo_contrastive.losses.HodgeDebiasedInfoNCE`, eq. 6);
            ``None`` for the supervised method.
        mask (str or None): ``"uniform"`` (``EdgeFlowMask``, one drop probability for every
            edge) or ``"spectral"`` (``HodgeSpectralMask``, drop probabilities optimised per
            sample, paper eq. 5); ``None`` for the supervised method.
        num_layers (int): SCNN layers (default ``1``).
        K_down (int): lower-Laplacian order (default ``2``).
        K_up (int): upper-Laplacian order (default ``2``; ``0`` for ``SCL_low``).
        hidden_channels (int): encoder width = embedding size (default ``64``).
        act (str): non-linearity (default ``"tanh"``).
        readout (str): pooling over edges: ``"mean"`` (default), ``"sum"``, ``"max"``, or
            ``"hodge"`` (:class:`~topo_contrastive.nn.HodgeReadout`: the mean over edges and
            the harmonic coordinates :math:`\mathbf{U}_H^\top \mathbf{H}` of the last layer's
            per-edge features).
        max_harmonic_features (int): with ``readout="hodge"``: keep the harmonic coordinates
            of the first :math:`c = \max(1, \min(C, \lfloor m / \beta_1 \rfloor))` channels
            only, at most about ``m`` harmonic features (``HodgeReadout(...,
            harmonic_channels=c)``); default ``0``: every channel, :math:`\beta_1 C`
            features (Table 1's editions). On a road network :math:`\beta_1` is in the
            hundreds and :math:`\beta_1 C` tens of thousands.
        input_skip (bool): the readout also pools the input flow (``SCNN(...,
            input_skip=True)``): with ``readout="hodge"`` the embedding holds the harmonic
            coordinates :math:`\mathbf{U}_H^\top \mathbf{x}` of the flow itself (default
            ``False``).
        normalize (bool): scale the Laplacians by their largest eigenvalue (default ``True``).
        bias (bool): learnable bias in the SCNN layers (default ``False``: the paper's filter,
            eq. 3, has none; a bias would also add a constant ``tanh(b)`` on every edge without
            flow, which swamps the mean readout of a sparse path flow).
        projection_channels (int): hidden and output width of the projection head (default
            ``64``).
        optimizer (str): ``"sgd"`` (default; with ``momentum``) or ``"adam"``.
        lr (float): learning rate (default ``0.1``).
        momentum (float): SGD momentum (default ``0.9``).
        weight_decay (float): SGD weight decay (default ``1e-4``).
        temperature (float): InfoNCE temperature :math:`\tau` (default ``0.5``).
        gamma (tuple[float, float, float]): :math:`(\gamma_G, \gamma_C, \gamma_H)` of the
            debiased loss (default ``(1.0, 1.0, 1.0)``).
        drop_prob (float): drop probability of the uniform mask (default ``0.3``).
        budget (float): budget :math:`\epsilon` of the spectral mask, a fraction of the support
            (default ``0.3``).
        mask_steps (int): maximum projected-gradient steps of the spectral mask's optimiser
            (``num_steps`` of :func:`~topo_contrastive.transforms.optimize_drop_probabilities`;
            default ``500``, i.e. run to convergence). Converged probabilities are nearly all
            0 or 1, so the masks of a flow hardly vary between draws; a few steps from the
            uniform start keep them random while tilting them towards the objective.
        perturb (tuple[str, ...]): Hodge components the spectral mask perturbs (default
            ``("gradient",)``).
        preserve (tuple[str, ...]): components it preserves (default ``("curl", "harmonic")``).
        epochs (int): training epochs (default ``200``; the maximum for the supervised method
            when ``patience > 0``).
        batch_size (int): samples per step (default ``100``).
        patience (int): supervised method only: stop once neither the validation accuracy nor
            the training accuracy improved for this many epochs (default ``0``: train all
            ``epochs``).

    Raises:
        ValueError: an unknown method / loss / mask / component, a missing loss or mask for the
            contrastive method, or an out-of-range number.
        TypeError: a non-numeric number.
    """

    name: str
    method: str
    loss: str | None = None
    mask: str | None = None
    num_layers: int = 1
    K_down: int = 2
    K_up: int = 2
    hidden_channels: int = 64
    act: str = "tanh"
    readout: str = "mean"
    max_harmonic_features: int = 0
    input_skip: bool = False
    normalize: bool = True
    bias: bool = False
    projection_channels: int = 64
    optimizer: str = "sgd"
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    temperature: float = 0.5
    gamma: tuple[float, float, float] = (1.0, 1.0, 1.0)
    drop_prob: float = 0.3
    budget: float = 0.3
    mask_steps: int = 500
    perturb: tuple[str, ...] = ("gradient",)
    preserve: tuple[str, ...] = ("curl", "harmonic")
    epochs: int = 200
    batch_size: int = 100
    patience: int = 0
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"`optimizer` must be 'sgd' or 'adam', got {self.optimizer!r}")
        if self.readout not in _READOUTS:
            raise ValueError(f"`readout` must be one of {_READOUTS}, got {self.readout!r}")
        if not isinstance(self.input_skip, bool):  # no numpy at --help: not utils.checks
            raise TypeError(f"`input_skip` must be a bool, got {type(self.input_skip).__name__}")
        if self.method not in _METHODS:
            raise ValueError(f"`method` must be one of {_METHODS}, got {self.method!r}")
        if self.method == "contrastive":
            if self.loss not in _LOSSES:
                raise ValueError(f"`loss` must be one of {_LOSSES}, got {self.loss!r}")
            if self.mask not in _MASKS:
                raise ValueError(f"`mask` must be one of {_MASKS}, got {self.mask!r}")
        for name, low in (
            ("num_layers", 1),
            ("K_down", 0),
            ("K_up", 0),
            ("hidden_channels", 1),
            ("projection_channels", 1),
            ("epochs", 1),
            ("batch_size", 2),
            ("mask_steps", 1),
            ("patience", 0),
            ("max_harmonic_features", 0),
        ):
            val = getattr(self, name)
            if isinstance(val, bool) or not isinstance(val, int):
                raise TypeError(f"`{name}` must be an int, got {type(val).__name__} {val!r}")
            if val < low:
                raise ValueError(f"`{name}` must be >= {low}, got {val}")
        for name, low, high, open_low in (
            ("lr", 0.0, math.inf, True),
            ("momentum", 0.0, 1.0, False),
            ("weight_decay", 0.0, math.inf, False),
            ("temperature", 0.0, math.inf, True),
            ("drop_prob", 0.0, 1.0, False),
            ("budget", 0.0, 1.0, False),
        ):
            val = getattr(self, name)
            if isinstance(val, bool) or not isinstance(val, (int, float)):
                raise TypeError(f"`{name}` must be a real number, got {type(val).__name__}")
            bad = not math.isfinite(val) if high == math.inf else not (low <= val <= high)
            if bad or val < low or (open_low and val <= low):
                raise ValueError(f"`{name}` = {val} is out of range")
        if len(self.gamma) != 3 or any(g < 0 for g in self.gamma):
            raise ValueError(f"`gamma` must be three non-negative numbers, got {self.gamma!r}")
        for name in ("perturb", "preserve"):
            for comp in getattr(self, name):
                if comp not in _COMPONENTS:
                    raise ValueError(
                        f"`{name}` must hold Hodge components {_COMPONENTS}, got {comp!r}"
                    )

    @property
    def is_contrastive(self) -> bool:
        """``True`` for the self-supervised rows."""
        return self.method == "contrastive"

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with some fields changed (validated again).

        Raises:
            ValueError: an unknown field name, or an invalid value (see the class).
        """
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ValueError(f"unknown configuration field(s) {unknown}")
        return dataclasses.replace(self, **changes)

    def architecture(self) -> dict[str, Any]:
        """The encoder's hyper-parameters (what a checkpoint must agree with)."""
        return {
            "num_layers": self.num_layers,
            "K_down": self.K_down,
            "K_up": self.K_up,
            "hidden_channels": self.hidden_channels,
            "act": self.act,
            "readout": self.readout,
            "max_harmonic_features": self.max_harmonic_features,
            "input_skip": self.input_skip,
            "normalize": self.normalize,
            "bias": self.bias,
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain ``dict`` (JSON-ready: tuples become lists)."""
        out = dataclasses.asdict(self)
        for key, val in out.items():
            if isinstance(val, tuple):
                out[key] = list(val)
        return out


# ---------------------------------------------------------------------------- the registry
# Hyper-parameters shared by all rows of a dataset in the paper edition (the paper's encoder:
# the depth and shape of the authors' public encoder), frozen after the search described in
# the module docstring and in docs/results/protocol.md.
_SHARED: dict[str, dict[str, Any]] = {
    "trajectory": dict(
        num_layers=4,
        K_down=2,
        K_up=2,
        normalize=False,
        bias=True,
        readout="mean",
        optimizer="adam",
        lr=0.003,  # validation 99.0 % at 20 epochs (lr 0.001: 97.8 %)
        weight_decay=1e-4,
        temperature=0.2,
        drop_prob=0.1,
        budget=0.5,
        mask_steps=3,
        gamma=(1.0, 1.0, 1.0),
        epochs=20,  # 20 / 30 epochs: 99.0 / 99.5 % validation (within one std), 20 cheaper
    ),
    "ocean": dict(
        num_layers=4,
        K_down=2,
        K_up=2,
        normalize=False,
        bias=True,
        readout="mean",
        optimizer="adam",
        lr=0.003,  # SCL CV 90.5 % at 20 epochs (lr 0.001: 87.8 %)
        weight_decay=1e-4,
        temperature=0.2,
        drop_prob=0.3,
        budget=0.3,  # SSCL_Spec CV 88.1 % at lr 0.003, 20 epochs (0.5: 87.0 %)
        mask_steps=3,
        gamma=(0.0, 1.0, 1.0),  # SSCL CV 87.8 % (1, 1, 1: 88.0 %), kept
        epochs=20,  # best mean over the searched rows at 20 of 10/20/40/60 epochs
    ),
}
# What the HodgeReadout edition changes on top of the paper edition, per dataset.
_EDITION_CHANGES: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {"trajectory": {}, "ocean": {}},
    # two layers: SCL CV on the ocean drifters 94-95 % against 86-89 % with four
    # at most 4,096 harmonic features: every channel on both tasks (beta_1 = 2); fewer
    # channels on a road network with beta_1 in the hundreds (a user's data file). Chosen on
    # validation data: chicago-sketch (beta_1 = 431) probes at 99.0 % with 4,096 (9 channels)
    # against 77.3 % with 1,024 (2 channels); anaheim 100 % with 1,024 and with all 64
    # channels (docs/user_data.md, "Two road networks")
    "hodge": {
        "trajectory": dict(readout="hodge", num_layers=2, max_harmonic_features=4096),
        "ocean": dict(readout="hodge", num_layers=2, max_harmonic_features=4096),
    },
}
# The supervised baseline's own settings (chosen on validation accuracy): the same encoder and
# optimiser, trained until validation accuracy and training accuracy have both stalled.
_SUPERVISED: dict[str, dict[str, Any]] = {
    "trajectory": dict(epochs=200, patience=20),
    "ocean": dict(epochs=200, patience=20),
}
# What each row changes.
_ROWS: dict[str, dict[str, Any]] = {
    "SSCL_Spec": dict(method="contrastive", loss="hodge_debiased", mask="spectral"),
    "SCNN": dict(method="supervised"),
    "SSCL": dict(method="contrastive", loss="hodge_debiased", mask="uniform"),
    "SCL_Spec": dict(method="contrastive", loss="infonce", mask="spectral"),
    "SCL": dict(method="contrastive", loss="infonce", mask="uniform"),
    "SCL_low": dict(method="contrastive", loss="infonce", mask="uniform", K_up=0),
}


def resolve_edition(edition: str) -> str:
    """The canonical edition name (``"paper"`` or ``"hodge"``) for ``edition``.

    Raises:
        ValueError: unknown edition (the message lists them).
        TypeError: ``edition`` is not a string.
    """
    if not isinstance(edition, str):
        raise TypeError(f"the edition must be a str, got {type(edition).__name__}")
    key = edition.strip().lower().replace("-", "_")
    key = {"hodge_readout": "hodge", "hodgereadout": "hodge", "paper_encoder": "paper"}.get(
        key, key
    )
    if key not in EDITIONS:
        raise ValueError(f"unknown edition {edition!r}; choose one of {', '.join(EDITIONS)}")
    return key


def resolve_config_name(name: str) -> str:
    """The canonical row name for ``name`` (case-insensitive, ``-`` same as ``_``).

    Raises:
        ValueError: ``name`` is not a row of Table 1 (the message lists them).
        TypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"the configuration name must be a str, got {type(name).__name__}")
    key = name.strip().replace("-", "_").lower()
    for canonical in CONFIG_NAMES:
        if canonical.lower() == key:
            return canonical
    raise ValueError(f"unknown configuration {name!r}; choose one of {', '.join(CONFIG_NAMES)}")


def resolve_dataset_name(name: str) -> str:
    """The canonical dataset name (``"trajectory"`` or ``"ocean"``) for ``name``.

    Raises:
        ValueError: unknown dataset (the message lists the valid names).
        TypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"the dataset name must be a str, got {type(name).__name__}")
    key = name.strip().replace("-", "_").lower()
    if key not in _DATASET_ALIASES:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASET_NAMES)}")
    return _DATASET_ALIASES[key]


def get_config(
    name: str, dataset: str, edition: str = "paper", **overrides: Any
) -> ExperimentConfig:
    """The frozen configuration of row ``name`` of Table 1 on ``dataset``.

    Args:
        name: a row of Table 1 (:data:`CONFIG_NAMES`, case-insensitive).
        dataset: ``"trajectory"`` or ``"ocean"``.
        edition: ``"paper"`` (default: the paper's encoder, mean readout) or ``"hodge"``
            (the same rows with :class:`~topo_contrastive.nn.HodgeReadout`), see
            :data:`EDITIONS`.
        **overrides: fields to change (e.g. ``epochs=20``).

    Returns:
        The :class:`ExperimentConfig`.

    Raises:
        ValueError: unknown row, dataset, edition or field, or an invalid override.

    Example:
        >>> get_config("SCL_low", "ocean").K_up
        0
        >>> get_config("SCL", "trajectory", edition="hodge").readout
        'hodge'
    """
    row = resolve_config_name(name)
    ds = resolve_dataset_name(dataset)
    ed = resolve_edition(edition)
    values: dict[str, Any] = dict(_SHARED[ds])
    values.update(_EDITION_CHANGES[ed][ds])
    if row == "SCNN":
        values.update(_SUPERVISED[ds])
    values.update(_ROWS[row])
    cfg = ExperimentConfig(name=row, **values)
    return cfg.replace(**overrides) if overrides else cfg


def grid_point_config(base: ExperimentConfig, point: Mapping[str, Any]) -> ExperimentConfig:
    """``base`` with the fields of one grid point replaced.

    The pseudo-field ``"K"`` sets both ``K_down`` and ``K_up`` (the paper ties the orders);
    ``K_up`` stays 0 for a configuration without upper Laplacian (``SCL_low``).

    Args:
        base: the configuration whose fields are varied.
        point: ``{field: value}``, field names of :class:`ExperimentConfig` or ``"K"``.

    Returns:
        The new (validated) :class:`ExperimentConfig`.

    Raises:
        TypeError, ValueError: an unknown field or an invalid value
            (:meth:`ExperimentConfig.replace`).
    """
    changes = dict(point)
    if "K" in changes:
        k = changes.pop("K")
        changes.update(K_down=k, K_up=k if base.K_up > 0 else 0)
    return base.replace(**changes)
