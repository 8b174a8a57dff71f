"""The one data model of the experiments (:class:`ExperimentData`: samples on one shared
complex or on complexes of their own) and where datasets come from (:func:`load_dataset`,
:func:`load_data_file`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from topo_contrastive._utils.files import atomic_write, require_file, sha256_of
from topo_contrastive.complex import ComplexOperators, Laplacians
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.training.configs import ExperimentConfig, resolve_dataset_name

if TYPE_CHECKING:
    from topo_contrastive.transforms import ContrastiveViews


#: Environment variable naming a local copy of ``dataBuoys.jld2`` (optional: the task ships
#: with the package).
OCEAN_ENV_VAR = "TOPO_CONTRASTIVE_OCEAN_FILE"
_OCEAN_FILE = "dataBuoys.jld2"


def find_ocean_file(explicit: str | os.PathLike | None = None) -> Path | None:
    """The raw ``dataBuoys.jld2`` a user asked for: ``explicit`` (``--ocean-raw``), else
    ``$TOPO_CONTRASTIVE_OCEAN_FILE``, else ``None`` (the task shipped with the package).

    Raises:
        FileNotFoundError: ``explicit`` (or the environment variable) names a missing file
            or a folder.
    """
    for what, value in (("--ocean-raw", explicit), (OCEAN_ENV_VAR, os.environ.get(OCEAN_ENV_VAR))):
        if value:
            path = Path(value).expanduser()
            if path.is_dir():
                raise FileNotFoundError(
                    f"{what} names '{path}', which is a folder; expected the file {_OCEAN_FILE}"
                )
            if not path.is_file():
                raise FileNotFoundError(f"{what} names '{path}', which is not a file")
            return path
    return None


def load_dataset(
    name: str,
    data_root: str | os.PathLike = "data",
    ocean_raw: str | os.PathLike | None = None,
    trajectory_points: int = 400,
    trajectory_split: Sequence[int] = (200, 100, 100),
    log: bool = False,
) -> Any:
    """Build (or load) one of the two tasks under ``data_root``.

    ``"trajectory"``: :class:`~topo_contrastive.datasets.SyntheticTrajectories` in
    ``data_root/trajectories`` (generator seed 0). ``"ocean"``:
    :class:`~topo_contrastive.datasets.OceanDrifters` in ``data_root/ocean_drifters``, from the
    task shipped with the package (no file, no network). Where the user names the raw file
    (``ocean_raw`` or ``$TOPO_CONTRASTIVE_OCEAN_FILE``, see :func:`find_ocean_file`), it is
    copied to ``data_root/ocean_drifters/raw/`` and the task is built from it (exactly the
    shipped arrays); when ``data_root`` holds a dataset already (its raw copy or processed
    file), the named file is only checked against the published sha256.

    Args:
        name: ``"trajectory"`` or ``"ocean"`` (aliases accepted).
        data_root: folder of the datasets (default ``"data"``).
        ocean_raw: path of ``dataBuoys.jld2`` (default ``None``: :func:`find_ocean_file`).
        trajectory_points: points of the synthetic complex (default 400).
        trajectory_split: train / validation / test sizes (default ``(200, 100, 100)``).
        log: let the datasets print progress (default ``False``).

    Raises:
        ValueError: unknown dataset name; a ``data_root`` that is (or lies under) a file or
            cannot be written; a named raw file that is not the ocean drifter file (another
            sha256); a corrupted installation (the shipped file's sha256 differs).
        FileNotFoundError: ``ocean_raw`` (or the environment variable) names a missing file.
    """
    from topo_contrastive.datasets import OceanDrifters, SyntheticTrajectories

    ds = resolve_dataset_name(name)
    root = _data_root(data_root)
    if ds == "trajectory":
        n_train, n_val, n_test = (int(v) for v in trajectory_split)
        return SyntheticTrajectories(str(root / "trajectories"), num_points=int(trajectory_points),
                                     num_train=n_train, num_val=n_val, num_test=n_test, seed=0,
                                     log=log)  # fmt: skip
    ocean_root = root / "ocean_drifters"
    raw = ocean_root / "raw" / _OCEAN_FILE
    processed = ocean_root / "processed" / "ocean_drifters.pt"
    given = find_ocean_file(ocean_raw)
    if given is not None and (raw.is_file() or processed.is_file()):
        # the dataset is built already: check the user's file, which it will not read
        digest = sha256_of(str(given))
        if digest != OceanDrifters.sha256:
            raise ValueError(
                f"--ocean-raw '{given}' is not the ocean drifter file dataBuoys.jld2: its sha256 "
                f"is {digest}, expected {OceanDrifters.sha256} (truncated, corrupted or another "
                "file)"
            )
    elif given is not None:
        try:
            raw.parent.mkdir(parents=True, exist_ok=True)
            # the temporary is removed on any failure (and, if the process is killed,
            # by the dataset's next open)
            atomic_write(raw, lambda tmp: shutil.copyfile(given, tmp))
        except OSError as err:
            raise ValueError(
                f"cannot copy the ocean drifter file into '{raw.parent}' ({err}); pass a "
                "writable --data-root"
            ) from err
    return OceanDrifters(str(ocean_root), log=log)


def load_data_file(
    path: str | os.PathLike,
    data_root: str | os.PathLike = "data",
    log: bool = False,
) -> Any:
    """Open an edge-flow file of one's own (the ``.npz`` format of
    :class:`~topo_contrastive.datasets.EdgeFlows`: flows on one complex or on many) as a
    dataset.

    The file is only read; its processed form goes to
    ``data_root/edge_flows/<file stem>/processed`` (re-made when the file changes).

    Args:
        path: the ``.npz`` file.
        data_root: folder of the processed datasets (default ``"data"``).
        log: let the dataset print progress (default ``False``).

    Raises:
        FileNotFoundError: ``path`` does not exist (a folder there: ``ValueError``).
        ValueError / TypeError: not a valid edge-flow file (the message names the key);
            ``data_root`` is (or lies under) a file.
    """
    from topo_contrastive.datasets import EdgeFlows

    file = require_file(Path(path).expanduser(), "data file")
    root = _data_root(data_root) / "edge_flows" / file.stem
    return EdgeFlows(str(root), file=str(file), log=log)


def _data_root(data_root: str | os.PathLike) -> Path:
    """``data_root`` as a path, refused where it is a file or lies under one.

    Raises:
        ValueError: naming ``data_root`` and the file.
    """
    root = Path(data_root).expanduser()
    there = next(p for p in (root, *root.absolute().parents) if p.exists())
    if not there.is_dir():
        where = "is a file" if there == root else f"lies under the file '{there}'"
        raise ValueError(
            f"`data_root` (--data-root) '{data_root}' {where}, expected a folder (the datasets "
            "are built and kept there); choose a folder"
        )
    return root


def _signals(dataset: Any, key: str, n: int, rank: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The signals ``float32 [S, N_k]`` of the key ``x_k`` and the labels ``[S]`` (or
    ``None``) of a dataset's samples, read through the dataset's public indexing."""
    rows, ys = [], []
    for i, d in enumerate(dataset):
        x = d[key] if key in d.keys() else None  # noqa: SIM118 - Data API
        if x is None or x.numel() != n:
            what = "edge" if rank == 1 else f"rank-{rank} simplex"
            raise ValueError(
                f"sample {i} must hold `{key}` with N{rank} = {n} entries (one per {what}), "
                f"got {None if x is None else tuple(x.shape)}"
            )
        rows.append(x.reshape(-1))
        ys.append(getattr(d, "y", None))
    signals = _stored_signals(dataset, key, len(rows), n)
    if signals is None:
        signals = torch.stack(rows).to(torch.float32).contiguous()  # [S, N_k]
    if all(y is None for y in ys):
        return signals, None  # unlabelled
    if any(y is None or y.numel() != 1 for y in ys):
        raise ValueError("every sample must have exactly one label `y`")
    return signals, torch.cat([y.view(-1) for y in ys])


def _stored_signals(dataset: Any, key: str, num: int, n: int) -> torch.Tensor | None:
    """The signals ``[S, N_k]`` as a view of an ``InMemoryDataset``'s float32 storage of
    ``key`` when it holds exactly the ``S`` samples in order, ``N_k`` rows each (no copy of
    every flow); else ``None``."""
    from torch_geometric.data import InMemoryDataset

    if not isinstance(dataset, InMemoryDataset) or getattr(dataset, "_indices", None) is not None:
        return None
    stored = dataset._data.get(key) if hasattr(dataset._data, "get") else None
    bounds = (dataset.slices or {}).get(key)
    if (not isinstance(stored, torch.Tensor) or stored.dtype != torch.float32
            or stored.numel() != num * n or not stored.is_contiguous() or bounds is None
            or not torch.equal(bounds, torch.arange(num + 1, device=bounds.device) * n)):
        return None  # fmt: skip
    return stored.view(num, n)


def _shallow_copy(dataset: Any) -> Any:
    """A copy of an ``InMemoryDataset`` that :meth:`ContrastiveViews.fit` can add keys to
    without changing ``dataset``: its own storage and slices, the same tensors (no copy of
    the flows); a subset (``_indices``) is collated anew (PyG's ``copy()``); any other
    dataset as is (``fit`` returns copies of its samples)."""
    import copy

    from torch_geometric.data import InMemoryDataset

    if not isinstance(dataset, InMemoryDataset):
        return dataset
    if getattr(dataset, "_indices", None) is not None:
        return dataset.copy()
    out = copy.copy(dataset)
    out._data = copy.copy(dataset._data)  # a new store holding the same tensors
    out.slices = dict(dataset.slices)
    out._data_list = None
    return out


@dataclass
class ExperimentData:
    """A dataset prepared once for every run: its samples, labels, splits and, where the
    samples share one complex, that complex, its decomposition and the flows as one matrix.

    One data model for both layouts of :class:`~topo_contrastive.data.ComplexData`: samples
    on one shared complex (the paper's setting: :attr:`complex` and :attr:`hodge` set, the
    operators built once, :attr:`flows` ``[S, N_k]`` the probes' design matrix) or on
    complexes of their own (those three ``None``; a batch is one block-diagonal complex).
    Every consumer goes through the same methods: :meth:`batch`, :meth:`laplacians`,
    :meth:`encoder`, :meth:`contrastive_views`, :meth:`contrastive_dataset`,
    :meth:`reference_features`, :meth:`record`.

    Attributes:
        name: ``"trajectory"``, ``"ocean"`` or a free name (a data file's stem).
        dataset: the PyG dataset (it provides ``split(seed)``).
        labels: ``int64 [S]`` class ids ``0 .. C-1`` (label values of any integer type mapped
            in increasing order; :attr:`label_values` keeps them), or ``None``.
        complex: the shared :class:`~topo_contrastive.ComplexOperators`, or ``None``.
        hodge: its :class:`~topo_contrastive.HodgeDecomposition` (of rank k), or ``None``.
        flows: ``float32 [S, N_k]`` the signals on the shared complex, or ``None``.
        label_values: ``int64 [C]``, the label value of every class id, or ``None``.
        input_scale: the factor of the encoder's inputs (:meth:`batch`, the training views;
            default 1). The layers expect flows of order one: :meth:`scale_flows` divides
            flows in physical units by their RMS, as the commands do (``--flow-scale``).

    Raises:
        TypeError: labels that are not integral (``0.5``, NaN, strings, booleans).
        ValueError: labels outside the int64 range; NaN or inf in ``flows``.
    """

    name: str
    dataset: Any
    labels: torch.Tensor | None
    complex: ComplexOperators | None = None
    hodge: HodgeDecomposition | None = None
    flows: torch.Tensor | None = None
    label_values: torch.Tensor | None = field(default=None, repr=False)
    input_scale: float = 1.0
    _fitted: dict[tuple, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from topo_contrastive._utils.checks import check_finite, class_ids

        if self.flows is not None:
            check_finite(self.flows, "flows")
        if self.labels is not None:
            ids, values = class_ids(self.labels, "labels")
            self.labels = torch.from_numpy(ids)
            self.label_values = torch.from_numpy(values)

    @classmethod
    def from_dataset(
        cls, dataset: Any, name: str | None = None, rank: int | None = None
    ) -> ExperimentData:
        """Prepare a dataset: flows on one complex (a ``complex`` attribute,
        ``Data(x_1=[N1, 1], y=[1])`` samples; signals of rank ``k`` from ``x_k``, ``rank``
        defaulting to the dataset's ``rank`` attribute, else 1) or samples on complexes of
        their own (:class:`~topo_contrastive.data.ComplexData`, labels from the dataset's
        ``labels`` or the samples' ``y``). ``y`` may be absent on every sample (unlabelled).

        Raises:
            ValueError: the samples do not hold ``N_k`` signals each, some but not all
                samples have a label, ``rank`` is not a rank of the complex, or the dataset
                is empty.
        """
        name = name or type(dataset).__name__
        ops = getattr(dataset, "complex", None)
        if ops is None:  # every sample on its own complex
            if len(dataset) == 0:
                raise ValueError(f"the dataset {name!r} holds no sample")
            labels = getattr(dataset, "labels", None)
            if labels is None and "y" in dataset[0]:
                labels = torch.cat([d.y.view(-1) for d in dataset])
            return cls(name=name, dataset=dataset, labels=None if labels is None else
                       torch.as_tensor(labels))  # fmt: skip
        rank = ops.check_rank(int(getattr(dataset, "rank", 1)) if rank is None else rank)
        n = ops.num_simplices(rank)
        signals, labels = _signals(dataset, f"x_{rank}", n, rank)
        hodge = HodgeDecomposition(ops, backend="exact" if n <= 4000 else "iterative", rank=rank)
        return cls(name=name, dataset=dataset, complex=ops, flows=signals, labels=labels,
                   hodge=hodge)  # fmt: skip

    # ------------------------------------------------------------------ what it holds
    @property
    def rank(self) -> int:
        """Rank of the signals (1: edge flows; that of :attr:`hodge`)."""
        return 1 if self.hodge is None else int(self.hodge.rank)

    @property
    def attr(self) -> str:
        """The samples' signal attribute, ``"x_k"`` at rank k (``"x_1"``: edge flows)."""
        return f"x_{self.rank}"

    @property
    def num_samples(self) -> int:
        """Number of samples ``S``."""
        return len(self.dataset) if self.flows is None else int(self.flows.shape[0])

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(N0, N1, N2)`` of the shared complex, or summed over the samples' complexes."""
        if self.complex is not None:
            ops = self.complex
            return (int(ops.num_nodes), int(ops.num_edges), int(ops.num_faces))
        counts = self.dataset._data.cell_counts.reshape(-1, 3).sum(0)
        return (int(counts[0]), int(counts[1]), int(counts[2]))

    @property
    def flow_rms(self) -> float:
        """The RMS of the samples' non-zero signal entries (1 for unit path flows)."""
        if "flow_rms" not in self._fitted:
            x = self.flows if self.flows is not None else self.dataset._data[self.attr]
            x = x.reshape(-1).double()
            x = x[x != 0]
            self._fitted["flow_rms"] = float(x.square().mean().sqrt()) if x.numel() else 0.0
        return self._fitted["flow_rms"]

    def scale_flows(self, mode: str = "rms") -> float:
        """Set and return :attr:`input_scale`: ``"rms"`` divides flows whose :attr:`flow_rms`
        lies outside ``[1/4, 4]`` (physical units) by it and keeps flows of order one (unit
        path flows, the paper's tasks) as they are; ``"none"`` keeps every flow.

        Raises:
            ValueError: another ``mode``.
        """
        if mode not in ("rms", "none"):
            raise ValueError(f"`mode` (--flow-scale) must be 'rms' or 'none', got {mode!r}")
        rms = self.flow_rms
        far = mode == "rms" and rms > 0 and not 0.25 <= rms <= 4.0
        self.input_scale = 1.0 / rms if far else 1.0
        return self.input_scale

    @property
    def cells_per_sample(self) -> int:
        """:math:`N_k` of the shared complex, or the most of any sample's complex (what the
        memory of a view is planned for)."""
        if self.complex is not None:
            return int(self.complex.num_simplices(self.rank))
        return int(self.dataset._data.cell_counts.reshape(-1, 3)[:, self.rank].max())

    @property
    def fingerprint(self) -> str | None:
        """The shared complex's :meth:`~topo_contrastive.ComplexOperators.fingerprint`."""
        return None if self.complex is None else self.complex.fingerprint()

    def record(self) -> dict[str, Any]:
        """What a run records of its data: the complex's sizes and fingerprint, or the
        layout of many complexes, their number and summed sizes."""
        if self.complex is None:
            return {"data_layout": LAYOUT, "samples": self.num_samples,
                    "summed_sizes": list(self.sizes)}  # fmt: skip
        return {"complex_sizes": list(self.sizes), "data_fingerprint": self.fingerprint}

    def original_labels(self) -> torch.Tensor | None:
        """The label values as given (``int64 [S]``), or ``None`` for unlabelled data."""
        if self.labels is None or self.label_values is None:
            return self.labels
        return self.label_values[self.labels]

    def require_labels(self, what: str) -> torch.Tensor:
        """The labels ``int64 [S]``; a clear ``ValueError`` naming ``what`` needs them when the
        data are unlabelled."""
        if self.labels is None:
            raise ValueError(
                f"{what} needs labels, but the dataset {self.name!r} has none (give `labels` / "
                "the key 'labels' or 'y' of the data file); pre-training and `embed` work "
                "without"
            )
        return self.labels

    def split(self, seed: int) -> dict[str, np.ndarray]:
        """Indices of the train / val / test samples of split ``seed`` (``dataset.split``)."""
        masks = self.dataset.split(int(seed))
        return {k: np.flatnonzero(v.numpy()) for k, v in masks.items()}

    # ------------------------------------------------------------------ the encoder's inputs
    def laplacians(self, batch: Any = None, device: torch.device | str = "cpu") -> Laplacians:
        """The :class:`~topo_contrastive.complex.Laplacians` of a collated ``batch``: those of
        the shared complex (built once per device), or the batch's block-diagonal ones."""
        if self.complex is not None:
            return self.complex.laplacians(device=device, rank=self.rank)
        return batch.laplacians(device=device, rank=self.rank)

    def batch(
        self, idx: Sequence[int] | np.ndarray | torch.Tensor, device: torch.device | str = "cpu"
    ) -> tuple[torch.Tensor, Laplacians, torch.Tensor]:
        """The samples ``idx`` as one PyG batch (``Batch.from_data_list``, the
        ``DataLoader``'s collate): their signals ``float32 [rows, 1]`` (times
        :attr:`input_scale`), their :meth:`laplacians` and the batch vector ``int64 [rows]``,
        on ``device``: the encoder's inputs."""
        from torch_geometric.data import Batch

        rows = [int(i) for i in torch.as_tensor(idx).reshape(-1).tolist()]
        batch = Batch.from_data_list([self.dataset[i] for i in rows])
        x = batch[self.attr].reshape(-1, 1).to(device=device, dtype=torch.float32)
        if self.input_scale != 1.0:
            x = x * self.input_scale
        L = self.laplacians(batch, device)
        return x, L, L.batch_vector(len(rows), device)

    def encoder(self, config: ExperimentConfig) -> Any:
        """The configuration's :class:`~topo_contrastive.nn.SCNN` (one input channel); with
        ``readout="hodge"`` the shared complex's :class:`~topo_contrastive.nn.HodgeReadout`
        (``config.max_harmonic_features`` caps its coordinates), or the basis-free one on
        complexes of their own (a harmonic basis belongs to one complex).

        Raises:
            ValueError: a harmonic budget that holds not one sketch direction.
        """
        from topo_contrastive.nn import SCNN, HodgeReadout

        readout: Any = config.readout
        if readout == "hodge" and self.hodge is None:
            readout = HodgeReadout(None, energies=True)
        elif readout == "hodge":
            from topo_contrastive.nn.harmonic_features import plan_harmonic_features

            kept = None
            if config.max_harmonic_features:
                # the exact basis's beta_1 or the sketch's k coordinates per channel
                dim = max(1, plan_harmonic_features(self.hodge).dim)
                kept = max(1, config.max_harmonic_features // dim)
                pooled = config.hidden_channels + (1 if config.input_skip else 0)
                kept = None if kept >= pooled else kept  # every channel
            readout = HodgeReadout(self.hodge, harmonic_channels=kept)
        return SCNN(in_channels=1, hidden_channels=config.hidden_channels,
                    num_layers=config.num_layers, K_down=config.K_down, K_up=config.K_up,
                    act=config.act, readout=readout, normalize=config.normalize,
                    bias=config.bias, input_skip=config.input_skip)  # fmt: skip

    # ------------------------------------------------------------------ views and parts
    def contrastive_views(
        self,
        config: ExperimentConfig,
        generator: torch.Generator | None = None,
        drop_prob: float | None = None,
        hodge_parts: bool = True,
    ) -> ContrastiveViews:
        """The configuration's :class:`~topo_contrastive.transforms.ContrastiveViews`: a
        uniform mask (``EdgeFlowMask``; ``SimplexSignalMask`` at rank k) or a spectral one
        (``HodgeSpectralMask``) drawing from ``generator``, bound to :attr:`hodge`.
        ``drop_prob`` overrides the uniform drop probability; ``hodge_parts=False`` stores no
        Hodge parts (the loss then takes its weights from :meth:`hodge_cosines`).

        Raises:
            ValueError: a configuration without a mask (supervised).
        """
        from topo_contrastive.transforms import (
            ContrastiveViews,
            EdgeFlowMask,
            HodgeSpectralMask,
            SimplexSignalMask,
        )

        if config.mask == "uniform":
            p = config.drop_prob if drop_prob is None else float(drop_prob)
            if self.rank == 1:
                mask: Any = EdgeFlowMask(p, generator=generator)
            else:
                mask = SimplexSignalMask(p, rank=self.rank, generator=generator)
        elif config.mask == "spectral":
            mask = HodgeSpectralMask(
                budget=config.budget, hodge=self.hodge, perturb=tuple(config.perturb),
                preserve=tuple(config.preserve), num_steps=int(config.mask_steps),
                generator=generator,
            )  # fmt: skip
        else:
            raise ValueError(f"the configuration {config.name!r} has no mask ({config.mask!r})")
        return ContrastiveViews(mask, hodge=self.hodge, attr=self.attr, hodge_parts=hodge_parts)

    def contrastive_dataset(self, views: ContrastiveViews) -> Any:
        """A copy of :attr:`dataset` (its flows times :attr:`input_scale`) fitted by ``views``
        (:meth:`ContrastiveViews.fit`: the Hodge parts and, for a spectral mask, the drop
        probabilities stored on every sample), once per mask setting (``dataset`` is not
        modified)."""
        mask = views.mask
        key = ("spectral", repr(mask)) if hasattr(mask, "prob_attr") else ("parts",)
        key = (*key, views.hodge_parts, self.input_scale)
        if key not in self._fitted:
            copy = _shallow_copy(self.dataset)
            if self.input_scale != 1.0:  # the views, masks and parts of the scaled flows
                copy._data[self.attr] = copy._data[self.attr] * self.input_scale
            self._fitted[key] = views.fit(copy)
        return self._fitted[key]

    def hodge_cosines(self) -> torch.Tensor:
        """The cosines ``float64 [3, S, S]`` of the Hodge parts of every pair of samples
        (:func:`~topo_contrastive.losses.hodge_cosines`), computed once: the loss's weights
        of any batch without every sample's parts in memory."""
        if ("cosines",) not in self._fitted:
            from topo_contrastive.losses import hodge_cosines

            self._fitted[("cosines",)] = hodge_cosines(self.hodge, self.flows)
        return self._fitted[("cosines",)]

    def drop_probabilities_for(self, config: ExperimentConfig) -> torch.Tensor:
        """The spectrally optimised drop probabilities ``float32 [S, N_k]`` (paper eq. 5) of
        ``config``'s mask, stored on the samples by :meth:`contrastive_dataset`.

        Raises:
            ValueError: ``config`` has no spectral mask.
        """
        if config.mask != "spectral":
            raise ValueError(f"the configuration {config.name!r} has no spectral mask")
        fitted = self.contrastive_dataset(self.contrastive_views(config))
        rows = [fitted[i].drop_prob.reshape(-1) for i in range(self.num_samples)]
        return torch.stack(rows).to(torch.float32)  # [S, N_k]

    # ------------------------------------------------------------------ reference features
    def reference_features(
        self, names: Sequence[str] | None = None
    ) -> dict[str, tuple[str, np.ndarray | str]]:
        r"""The encoder-free reference features of every sample, ``{row: (label, features
        float64 [S, D], or the reason the row is omitted)}``, for the rows ``names`` (default:
        all, in order).

        On one shared complex: the flows ``"raw"`` (:math:`N_k` features), their magnitudes
        ``"abs"`` and the harmonic coordinates ``"harmonic"``
        :math:`\mathbf{U}_H^\top\mathbf{x}` (:math:`\beta_1` features, in the canonical
        basis of :func:`~topo_contrastive.nn.canonical_harmonic_basis`; beyond the budget of
        :func:`~topo_contrastive.nn.harmonic_features.plan_harmonic_features` the seeded
        sketch :math:`\mathbf{G}^\top\mathbf{P}_H\mathbf{x}`). On complexes of their own,
        where coordinates of different complexes cannot be stacked, the rows of
        :func:`agnostic_features` (energy fractions, length and total flow).

        Raises:
            ValueError: a name that is not a row of this data.
        """
        from topo_contrastive.training.embeddings import AGNOSTIC_ROWS, agnostic_features

        known = AGNOSTIC_ROWS if self.complex is None else ("raw", "abs", "harmonic")
        names = known if names is None else tuple(names)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"the reference rows of {self.name!r} are {known}, got {unknown}")
        if self.complex is None:
            rows = agnostic_features(self.dataset)
            return {n: (n, rows[n]) for n in names}
        flows = self.flows.double()
        out = {"raw": ("raw flows", lambda: flows.numpy()),
               "abs": ("|flows|", lambda: flows.abs().numpy()),
               "harmonic": (None, lambda: self._harmonic_row(flows))}  # fmt: skip
        result = {}
        for n in names:
            label, make = out[n]
            result[n] = make() if label is None else (label, make())
        return result

    def _harmonic_row(self, flows: torch.Tensor) -> tuple[str, np.ndarray | str]:
        beta = int(self.hodge.dims["harmonic"])
        if beta == 0:
            return "harmonic coordinates", "beta_1 = 0 (no harmonic space)"
        from topo_contrastive.nn.harmonic_features import harmonic_matrix, plan_harmonic_features

        try:
            plan = plan_harmonic_features(self.hodge)
            matrix, _ = harmonic_matrix(self.hodge)  # U_H, or the sketch P_H G [N1, k]
        except ValueError as err:  # a budget too small for one sketch direction
            return "harmonic coordinates", str(err)
        label = f"harmonic coordinates U_H^T x (beta_1 = {beta})"
        if plan.kind == "sketch":
            label = f"harmonic sketch G^T P_H x (k = {plan.dim} of beta_1 = {beta})"
        return label, flows.numpy() @ matrix


#: The ``data_layout`` entry of checkpoints and run records on samples with their own
#: complexes.
LAYOUT = "many complexes"
