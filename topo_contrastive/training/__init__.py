"""Contrastive pre-training of an encoder on edge flows, and what a run needs around it.

- :mod:`~topo_contrastive.training.configs`: the named configurations of the method
  (:data:`CONFIG_NAMES`, :func:`get_config`, :class:`ExperimentConfig`: Table 1's rows) and
  the paper's numbers (:data:`PAPER_TABLE1`).
- :class:`ExperimentData`: a dataset prepared once (flows, labels, Laplacians, Hodge parts,
  spectral drop probabilities); :func:`load_dataset`, :func:`find_ocean_file`,
  :func:`load_data_file` (an edge-flow file of one's own).
- :func:`pretrain` (single process or DistributedDataParallel) and :func:`embed`.
- :func:`write_embeddings`: embeddings of every sample as ``.npz`` and ``.csv``;
  :func:`read_embeddings` reads a finished folder back.
- :func:`format_mean_std`: the one formatter of ``mean ± std`` in tables and summaries.

The linear evaluation of a pre-trained encoder is :mod:`topo_contrastive.evaluation`; the
command line over both is :mod:`topo_contrastive.cli`.
"""

import typing as _typing

from topo_contrastive._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:  # the lazy exports below, for type checkers and IDEs
    from topo_contrastive.training.configs import (
        CONFIG_NAMES,
        DATASET_NAMES,
        PAPER_TABLE1,
        ExperimentConfig,
        get_config,
    )
    from topo_contrastive.training.data import (
        ExperimentData,
        find_ocean_file,
        load_data_file,
        load_dataset,
    )
    from topo_contrastive.training.embeddings import read_embeddings, write_embeddings
    from topo_contrastive.training.formatting import format_mean_std
    from topo_contrastive.training.loop import PretrainResult, embed, pretrain

#: name -> module of this package that holds it, imported on first access (so that the
#: command line's ``--help``, which reads the configuration names, loads neither PyTorch
#: nor scikit-learn)
_LAZY = {
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
    "format_mean_std": "formatting",
    "PretrainResult": "loop",
    "embed": "loop",
    "pretrain": "loop",
}

__all__ = [
    "CONFIG_NAMES",
    "DATASET_NAMES",
    "ExperimentConfig",
    "ExperimentData",
    "PAPER_TABLE1",
    "PretrainResult",
    "embed",
    "find_ocean_file",
    "format_mean_std",
    "get_config",
    "load_data_file",
    "load_dataset",
    "pretrain",
    "read_embeddings",
    "write_embeddings",
]


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY)
