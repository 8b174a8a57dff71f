"""Loading the two tasks and what the experiments reuse across runs (private helpers).

:class:`ExperimentData` holds, once per dataset, the dataset, its labels and splits, the two
Laplacians, the flows ``[S, N1]`` as the probes' design matrix and, once per mask setting, the
dataset fitted by the configuration's ``ContrastiveViews`` (Hodge parts and drop probabilities
stored on every sample), so that no epoch recomputes them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.training.configs import ExperimentConfig, resolve_dataset_name
from topo_contrastive.utils.files import atomic_write, require_file, sha256_of

if TYPE_CHECKING:
    from topo_contrastive.transforms import ContrastiveViews

__all__ = ["OCEAN_ENV_VAR", "ExperimentData", "find_ocean_file", "load_data_file", "load_dataset"]

#: Environment variable naming a local copy of ``dataBuoys.jld2`` (optional: the task ships
#: with the package).
OCEAN_ENV_VAR = "TOPO_CONTRASTIVE_OCEAN_FILE"
_OCEAN_FILE = "dataBuoys.jld2"


def find_ocean_file(explicit: str | os.PathLike | None = None) -> Path | None:
    """The raw ``dataBuoys.jld2`` a user asked for, if any.

    Only two places are looked at, in this order: ``explicit`` (``--ocean-raw``), then
    ``$TOPO_CONTRASTIVE_OCEAN_FILE``. Nothing else is searched: without either, the ocean
    drifter task shipped with the package is used.

    Args:
        explicit: a path given by the user (``--ocean-raw``), or ``None``.

    Returns:
        The file's path, or ``None`` when neither is set.

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
        ocean_raw: explicit path of ``dataBuoys.jld2`` (default ``None``: the shipped task,
            or ``$TOPO_CONTRASTIVE_OCEAN_FILE`` where set).
        trajectory_points: points of the synthetic complex (default 400).
        trajectory_split: train / validation / test sizes (default ``(200, 100, 100)``).
        log: let the datasets print progress (default ``False``).

    Raises:
        ValueError: unknown dataset name; a ``data_root`` that cannot be written; a named raw
            file that is not the ocean drifter file (another sha256); a corrupted installation
            (the shipped file's sha256 differs).
        FileNotFoundError: ``ocean_raw`` (or the environment variable) names a missing file.
    """
    from topo_contrastive.datasets import OceanDrifters, SyntheticTrajectories

    ds = resolve_dataset_name(name)
    root = Path(data_root).expanduser()
    if ds == "trajectory":
        n_train, n_val, n_test = (int(v) for v in trajectory_split)
        return SyntheticTrajectories(
            str(root / "trajectories"),
            num_points=int(trajectory_points),
            num_train=n_train,
            num_val=n_val,
            num_test=n_test,
            seed=0,
            log=log,
        )
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
    :class:`~topo_contrastive.datasets.EdgeFlows`) as a dataset.

    The file is only read; its processed form goes to ``data_root/edge_flows/<file stem>/
    processed`` (re-made when the file changes).

    Args:
        path: the ``.npz`` file.
        data_root: folder of the processed datasets (default ``"data"``).
        log: let the dataset print progress (default ``False``).

    Returns:
        The :class:`~topo_contrastive.datasets.EdgeFlows` dataset.

    Raises:
        FileNotFoundError: ``path`` does not exist (a folder there: ``ValueError``).
        ValueError / TypeError: not a valid edge-flow file (the message names the key).
    """
    from topo_contrastive.datasets import EdgeFlows

    file = require_file(Path(path).expanduser(), "data file")
    root = Path(data_root).expanduser() / "edge_flows" / file.stem
    return EdgeFlows(str(root), file=str(file), log=log)


def complex_fingerprint(ops: ComplexOperators) -> str:
    """sha256 (16 hex digits) of a complex's edges and triangles: identifies the complex.

    Kept for compatibility; the same as :meth:`ComplexOperators.fingerprint`.
    """
    return ops.fingerprint()


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
    if (
        not isinstance(stored, torch.Tensor)
        or stored.dtype != torch.float32
        or stored.numel() != num * n
        or not stored.is_contiguous()
        or bounds is None
        or not torch.equal(bounds, torch.arange(num + 1, device=bounds.device) * n)
    ):
        return None
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
    """A task prepared once for all runs: its dataset, flows, labels and decomposition.

    The training loops take their batches from :meth:`contrastive_dataset` (the dataset
    fitted by the configuration's :class:`~topo_contrastive.transforms.ContrastiveViews`)
    through a ``DataLoader``; :attr:`flows` is the design matrix of the probes and the
    reference rows.

    Attributes:
        name: ``"trajectory"`` or ``"ocean"`` (or a free name for other datasets).
        dataset: the PyG dataset (it provides :meth:`split` and the standard masks).
        complex: its :class:`~topo_contrastive.ComplexOperators`.
        flows: ``float32 [S, N1]`` edge flows ``x_1`` of all samples (at rank k:
            the signals ``x_k`` ``[S, N_k]``; the rank is :attr:`rank`, that of ``hodge``).
        labels: ``int64 [S]`` class ids ``0 .. C-1``, or ``None`` for unlabelled data
            (pre-training and embeddings need no labels; :meth:`require_labels` raises for
            what does). Label values of any integer type or integral floats, negative or
            non-contiguous ones included, are mapped to class ids in increasing order of
            value (as the SVM probe does); :attr:`label_values` keeps the values.
        hodge: the exact :class:`~topo_contrastive.HodgeDecomposition` of the complex (of
            rank k for signals of rank k).
        label_values: ``int64 [C]``: the label value of every class id (sorted), or
            ``None`` for unlabelled data; set from the labels given.

    Raises:
        TypeError: labels that are not integral (``0.5``, NaN, strings, booleans).
        ValueError: labels outside the int64 range (``1e20``); NaN or inf in ``flows``
            (naming the samples).
    """

    name: str
    dataset: Any
    complex: ComplexOperators
    flows: torch.Tensor
    labels: torch.Tensor | None
    hodge: HodgeDecomposition
    label_values: torch.Tensor | None = field(default=None, repr=False)
    _fitted: dict[tuple, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from topo_contrastive.utils.checks import check_finite, class_ids

        check_finite(self.flows, "flows")
        if self.labels is not None:
            ids, values = class_ids(self.labels, "labels")
            self.labels = torch.from_numpy(ids)
            self.label_values = torch.from_numpy(values)

    def original_labels(self) -> torch.Tensor | None:
        """The label values as given (``int64 [S]``), or ``None`` for unlabelled data."""
        if self.labels is None or self.label_values is None:
            return self.labels
        return self.label_values[self.labels]

    @property
    def rank(self) -> int:
        """Rank of the signals (1: edge flows; that of :attr:`hodge`)."""
        return int(self.hodge.rank)

    @property
    def attr(self) -> str:
        """The samples' signal attribute, ``"x_k"`` at rank k (``"x_1"``: edge flows)."""
        return f"x_{self.rank}"

    @classmethod
    def from_dataset(
        cls, dataset: Any, name: str | None = None, rank: int | None = None
    ) -> ExperimentData:
        """Prepare a dataset of edge flows on one complex (``Data(x_1=[N1, 1], y=[1])``; ``y``
        may be absent on every sample: unlabelled data, ``labels=None``).

        Signals of another rank ``k`` are read from ``x_k`` (``Data(x_2=[N2, 1], y=[1])``
        for triangle signals): ``rank`` defaults to the dataset's ``rank`` attribute, else 1.

        Raises:
            TypeError: ``dataset`` has no ``complex`` attribute.
            ValueError: the samples do not hold ``N1`` flows each (``N_k`` signals), some but
                not all samples have a label, or ``rank`` is not a rank of the complex.
        """
        if not hasattr(dataset, "complex"):
            raise TypeError(
                f"`dataset` must be an edge-flow dataset with a `complex` attribute, got "
                f"{type(dataset).__name__}"
            )
        ops = dataset.complex
        rank = ops.check_rank(int(getattr(dataset, "rank", 1)) if rank is None else rank)
        n = ops.num_simplices(rank)
        signals, labels = _signals(dataset, f"x_{rank}", n, rank)
        hodge = HodgeDecomposition(
            ops, backend="exact" if n <= 4000 else "iterative", rank=rank
        )
        return cls(
            name=name or type(dataset).__name__,
            dataset=dataset,
            complex=ops,
            flows=signals,
            labels=labels,
            hodge=hodge,
        )

    def signal_batch(
        self, idx: Sequence[int] | np.ndarray | torch.Tensor, device: torch.device | str = "cpu"
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The samples ``idx`` as one PyG batch (the ``DataLoader``'s collate,
        ``Batch.from_data_list``): their signals ``float32 [B * N_k, 1]`` and the batch
        vector ``int64 [B * N_k]``, on ``device``, the input of the encoder's ``forward``."""
        from torch_geometric.data import Batch

        rows = [int(i) for i in torch.as_tensor(idx).reshape(-1).tolist()]
        batch = Batch.from_data_list([self.dataset[i] for i in rows])
        x = batch[self.attr].reshape(-1, 1).to(device=device, dtype=torch.float32)
        n = x.shape[0] // max(len(rows), 1)
        vector = torch.arange(len(rows), device=device).repeat_interleave(n)  # [B * N_k]
        return x, vector

    def contrastive_views(
        self,
        config: ExperimentConfig,
        generator: torch.Generator | None = None,
        drop_prob: float | None = None,
        hodge_parts: bool = True,
    ) -> ContrastiveViews:
        """The configuration's dataset transform: :class:`~topo_contrastive.transforms.
        ContrastiveViews` with a uniform mask (:class:`~topo_contrastive.transforms.
        EdgeFlowMask`, :class:`~topo_contrastive.transforms.SimplexSignalMask` at rank k) or
        a spectral one (:class:`~topo_contrastive.transforms.HodgeSpectralMask`) drawing from
        ``generator``, bound to :attr:`hodge`.

        Args:
            config: the run's configuration (``mask``, ``drop_prob``, ``budget``, ...).
            generator: the masks' seeded generator (default ``None``: a fresh one).
            drop_prob: override of the uniform drop probability (Figure 2's sweep).
            hodge_parts: store the Hodge parts of every sample for the loss (``False``
                where the loss takes its weights from :meth:`hodge_cosines`).

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
                budget=config.budget,
                hodge=self.hodge,
                perturb=tuple(config.perturb),
                preserve=tuple(config.preserve),
                num_steps=int(config.mask_steps),
                generator=generator,
            )
        else:
            raise ValueError(f"the configuration {config.name!r} has no mask ({config.mask!r})")
        return ContrastiveViews(mask, hodge=self.hodge, attr=self.attr, hodge_parts=hodge_parts)

    def contrastive_dataset(self, views: ContrastiveViews) -> Any:
        """A copy of :attr:`dataset` fitted by ``views`` (:meth:`ContrastiveViews.fit`: the
        Hodge parts and, for a spectral mask, the drop probabilities stored on every sample),
        computed once per mask setting and cached (the original dataset is not modified)."""
        mask = views.mask
        key = ("spectral", repr(mask)) if hasattr(mask, "prob_attr") else ("parts",)
        key = (*key, views.hodge_parts)
        if key not in self._fitted:
            self._fitted[key] = views.fit(_shallow_copy(self.dataset))
        return self._fitted[key]

    def hodge_cosines(self) -> torch.Tensor:
        """The cosines ``float64 [3, S, S]`` of the gradient, curl and harmonic parts of
        every pair of samples (:func:`~topo_contrastive.losses.hodge_cosines`), computed
        once and cached: the Hodge-debiased loss's weights of any batch, without the parts
        of every sample (``[S, N_k, 3]``) in memory."""
        if ("cosines",) not in self._fitted:
            from topo_contrastive.losses import hodge_cosines

            self._fitted[("cosines",)] = hodge_cosines(self.hodge, self.flows)
        return self._fitted[("cosines",)]

    def require_labels(self, what: str) -> torch.Tensor:
        """The labels ``int64 [S]``; a clear ``ValueError`` naming ``what`` needs them when the
        data are unlabelled."""
        if self.labels is None:
            raise ValueError(
                f"{what} needs labels, but the dataset {self.name!r} has none (give `labels` / "
                "the key 'labels' of the data file); pre-training and `embed` work without"
            )
        return self.labels

    @property
    def num_samples(self) -> int:
        """Number of samples ``S``."""
        return int(self.flows.shape[0])

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(N0, N1, N2)`` of the complex."""
        ops = self.complex
        return (int(ops.num_nodes), int(ops.num_edges), int(ops.num_faces))

    @property
    def fingerprint(self) -> str:
        """Identifier of the complex (see :func:`complex_fingerprint`)."""
        return complex_fingerprint(self.complex)

    def split(self, seed: int) -> dict[str, np.ndarray]:
        """Indices of the train / val / test samples of split ``seed`` (``dataset.split``)."""
        masks = self.dataset.split(int(seed))
        return {k: np.flatnonzero(v.numpy()) for k, v in masks.items()}

    def drop_probabilities_for(self, config: ExperimentConfig) -> torch.Tensor:
        """The spectrally optimised drop probabilities ``float32 [S, N_k]`` (paper eq. 5) of
        ``config``'s mask (``budget``, ``perturb``, ``preserve``, ``mask_steps``): those
        :meth:`contrastive_dataset` stored on the samples, read back per sample.

        Raises:
            ValueError: ``config`` has no spectral mask.
        """
        if config.mask != "spectral":
            raise ValueError(f"the configuration {config.name!r} has no spectral mask")
        fitted = self.contrastive_dataset(self.contrastive_views(config))
        rows = [fitted[i].drop_prob.reshape(-1) for i in range(self.num_samples)]
        return torch.stack(rows).to(torch.float32)  # [S, N_k]
