"""The library's plumbing that ``experiments/`` builds on, in one place.

``topo_contrastive``'s argument checks, atomic writes, locked output folders, option types
and progress display are its own helpers, not its public face: every module of this folder
reaches them through this one, so that a rename in the library touches this file alone.
The checks (NumPy) and the pre-training into a folder (PyTorch) load on first use: the
commands' ``--help`` loads neither.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from topo_contrastive._utils import numerics as numerics
from topo_contrastive._utils.extras import require_extra as require_extra
from topo_contrastive._utils.files import COMPLETE_MARKER as COMPLETE_MARKER
from topo_contrastive._utils.files import atomic_write as atomic_write
from topo_contrastive._utils.files import begin_outputs as begin_outputs
from topo_contrastive._utils.files import check_output_dir as check_output_dir
from topo_contrastive._utils.files import check_output_possible as check_output_possible
from topo_contrastive._utils.files import mark_complete as mark_complete
from topo_contrastive._utils.files import marker_beside as marker_beside
from topo_contrastive._utils.files import require_file as require_file
from topo_contrastive._utils.files import write_csv as write_csv
from topo_contrastive._utils.files import write_json as write_json
from topo_contrastive._utils.files import write_text as write_text
from topo_contrastive._utils.outputs import output_run as output_run
from topo_contrastive._utils.words import count as count
from topo_contrastive.cli._common import MAX_CHANNELS as MAX_CHANNELS
from topo_contrastive.cli._common import MAX_PRETRAIN_SEEDS as MAX_PRETRAIN_SEEDS
from topo_contrastive.cli._common import MAX_SPLITS as MAX_SPLITS
from topo_contrastive.cli._common import MAX_TRAJECTORY as MAX_TRAJECTORY
from topo_contrastive.cli._common import add_checkpoint as add_checkpoint
from topo_contrastive.cli._common import add_data_choice as add_data_choice
from topo_contrastive.cli._common import add_data_options as add_data_options
from topo_contrastive.cli._common import add_edition_options as add_edition_options
from topo_contrastive.cli._common import add_epochs as add_epochs
from topo_contrastive.cli._common import add_hidden_channels as add_hidden_channels
from topo_contrastive.cli._common import add_overwrite as add_overwrite
from topo_contrastive.cli._common import add_pretrain_seeds as add_pretrain_seeds
from topo_contrastive.cli._common import check_file_out as check_file_out
from topo_contrastive.cli._common import check_json_out as check_json_out
from topo_contrastive.cli._common import check_out as check_out
from topo_contrastive.cli._common import check_seed_range as check_seed_range
from topo_contrastive.cli._common import edition as edition
from topo_contrastive.cli._common import edition_overrides as edition_overrides
from topo_contrastive.cli._common import epochs_int as epochs_int
from topo_contrastive.cli._common import int_at_least as int_at_least
from topo_contrastive.cli._common import int_between as int_between
from topo_contrastive.cli._common import out_path as out_path
from topo_contrastive.cli._common import progress_enabled as progress_enabled
from topo_contrastive.cli._common import read_files as read_files
from topo_contrastive.cli._common import say as say
from topo_contrastive.cli._common import say_done as say_done
from topo_contrastive.cli._common import seed_int as seed_int
from topo_contrastive.cli._common import splits_int as splits_int
from topo_contrastive.cli._inputs import config_task as config_task
from topo_contrastive.cli._inputs import load_data as load_data
from topo_contrastive.cli._inputs import refuse_many_file as refuse_many_file

#: names loaded on first use (NumPy, PyTorch), by the module that holds them
_LATER = {
    **dict.fromkeys(("MAX_EPOCHS", "check_bool", "check_disjoint", "check_finite",
                     "check_indices", "check_int", "check_lr", "check_real", "check_seed",
                     "check_seeds", "label_values"), "topo_contrastive._utils.checks"),
    **dict.fromkeys(("markdown_path", "pretrain_to_folder"), "topo_contrastive.cli._runs"),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _LATER:
        return getattr(importlib.import_module(_LATER[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def progress(show: bool, total: int, desc: str, unit: str = "cell") -> Any:
    """A progress display of ``total`` steps: a bar on a terminal, a line every 30 s
    otherwise, nothing unless ``show``; it has ``update``, ``set_postfix`` and ``close``."""
    from topo_contrastive.cli._common import progress as display

    return display(argparse.Namespace(no_progress=not show), total, desc, unit)

