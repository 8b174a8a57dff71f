"""The paper's experiment: contrastive pre-training, linear evaluation, the supervised
baseline, Table 1 and Figures 1-2 (``topo-contrastive reproduce``).

- :mod:`~topo_contrastive.experiments.configs`: the named rows of Table 1
  (:data:`CONFIG_NAMES`, :func:`get_config`, :class:`ExperimentConfig`) and the paper's
  numbers (:data:`PAPER_TABLE1`).
- :class:`ExperimentData`: a dataset prepared once (flows, labels, Laplacians, Hodge parts,
  spectral drop probabilities); :func:`load_dataset`, :func:`find_ocean_file`,
  :func:`load_data_file` (an edge-flow file of one's own).
- :func:`pretrain` (single process or DistributedDataParallel), :func:`embed`,
  :func:`linear_probe`, :func:`train_supervised`.
- :func:`save_experiment_encoder` / :func:`load_experiment_encoder`: weights-only checkpoints;
  :func:`write_embeddings`: embeddings of every sample as ``.npz`` and ``.csv``;
  :func:`read_embeddings` reads a finished folder back.
- :func:`reproduce`: Table 1 and Figures 1-2 end to end (:data:`PRESETS`).
- :class:`RunFolder`: a resumable run's output folder (settings fingerprint, finished
  cells, completion marker, result tables), under ``reproduce``, ``label-efficiency`` and the
  examples.
- :func:`grid_search`: the hyper-parameter search.
- Figure 1: :func:`figure1`, :func:`plot_figure1` (embedding distances of the masks).
- :func:`format_mean_std`: the one formatter of ``mean ± std`` in tables and summaries.
"""

import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing

if _typing.TYPE_CHECKING:  # the lazy exports below, for type checkers and IDEs
    from topo_contrastive.experiments.checkpoint import (
        load_experiment_encoder,
        save_experiment_encoder,
    )
    from topo_contrastive.experiments.configs import (
        CONFIG_NAMES,
        DATASET_NAMES,
        PAPER_TABLE1,
        ExperimentConfig,
        get_config,
    )
    from topo_contrastive.experiments.data import (
        ExperimentData,
        find_ocean_file,
        load_data_file,
        load_dataset,
    )
    from topo_contrastive.experiments.embeddings import read_embeddings, write_embeddings
    from topo_contrastive.experiments.evaluation import linear_probe
    from topo_contrastive.experiments.figure1 import figure1, plot_figure1
    from topo_contrastive.experiments.formatting import format_mean_std
    from topo_contrastive.experiments.presets import PRESETS, Preset
    from topo_contrastive.experiments.probe_result import ProbeResult
    from topo_contrastive.experiments.reproduce import ReproduceResult, reproduce
    from topo_contrastive.experiments.run_folder import RunFolder
    from topo_contrastive.experiments.search import grid_search
    from topo_contrastive.experiments.supervised import SupervisedResult, train_supervised
    from topo_contrastive.experiments.training import PretrainResult, embed, pretrain

#: name -> module of this package that holds it, imported on first access (so that the
#: command line's ``--help``, which reads the configuration names, loads neither PyTorch
#: nor scikit-learn)
_LAZY = {
    "load_experiment_encoder": "checkpoint",
    "save_experiment_encoder": "checkpoint",
    "CONFIG_NAMES": "configs",
    "DATASET_NAMES": "configs",
    "PAPER_TABLE1": "configs",
    "ExperimentConfig": "configs",
    "get_config": "configs",
    "ExperimentData": "data",
    "find_ocean_file": "data",
    "load_data_file": "data",
    "load_dataset": "data",
    "read_embeddings": "embeddings",
    "write_embeddings": "embeddings",
    "linear_probe": "evaluation",
    "figure1": "figure1",
    "plot_figure1": "figure1",
    "format_mean_std": "formatting",
    "PRESETS": "presets",
    "Preset": "presets",
    "ProbeResult": "probe_result",
    "ReproduceResult": "reproduce",
    "reproduce": "reproduce",
    "RunFolder": "run_folder",
    "grid_search": "search",
    "SupervisedResult": "supervised",
    "train_supervised": "supervised",
    "PretrainResult": "training",
    "embed": "training",
    "pretrain": "training",
}

__all__ = [
    "CONFIG_NAMES",
    "DATASET_NAMES",
    "PAPER_TABLE1",
    "PRESETS",
    "ExperimentConfig",
    "ExperimentData",
    "Preset",
    "PretrainResult",
    "ProbeResult",
    "ReproduceResult",
    "RunFolder",
    "SupervisedResult",
    "embed",
    "figure1",
    "find_ocean_file",
    "format_mean_std",
    "get_config",
    "grid_search",
    "linear_probe",
    "load_data_file",
    "load_dataset",
    "load_experiment_encoder",
    "plot_figure1",
    "pretrain",
    "read_embeddings",
    "reproduce",
    "save_experiment_encoder",
    "train_supervised",
    "write_embeddings",
]


class _Package(_types.ModuleType):
    """This package's module type: ``reproduce`` and ``figure1`` name both a function of
    the API and the module that holds it; the import system binds a submodule to its
    package when it loads it, and here the function keeps the name (as with eager imports)."""

    def __setattr__(self, name: str, value: _typing.Any) -> None:
        if name in _LAZY and name == _LAZY[name] and isinstance(value, _types.ModuleType):
            value = getattr(value, name)  # the function, not its module
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    dunders = {n for n in globals() if n.startswith("__") and n.endswith("__")}
    return sorted(set(__all__) | dunders)
