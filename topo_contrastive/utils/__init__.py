"""Helpers the package's commands are built on, public so that experiments and users' own
commands beside the library share them (as PyG's ``torch_geometric.io.fs``):

- :mod:`~topo_contrastive.utils.checks`: argument checks whose errors name the argument, what
  was expected and what was given (``check_int``, ``check_real``, ``check_seed``, ...);
- :mod:`~topo_contrastive.utils.files`: atomic writes (``write_json``, ``write_csv``, ...),
  ``require_file``, output-folder checks and completeness markers;
- :mod:`~topo_contrastive.utils.outputs`: a run's output folder as one unit
  (``output_run``: a lock, and ``--overwrite`` that replaces only once complete);
- :mod:`~topo_contrastive.utils.extras`: optional packages (``require_extra``);
- :mod:`~topo_contrastive.utils.numerics`: pinned numeric code paths and idle cores;
- :mod:`~topo_contrastive.utils.words`: counted nouns in messages (``count``).

Importing this package imports none of its modules (nor torch or numpy).
"""

__all__: list[str] = []
