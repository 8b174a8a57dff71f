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

from topo_contrastive.experiments.checkpoint import load_experiment_encoder, save_experiment_encoder
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
