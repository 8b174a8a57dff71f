"""Private helpers the package and its commands are built on (no promise of stability; the
``experiments/`` folder takes them through its one seam, ``experiments/_helpers.py``):

- ``_utils.checks``: argument checks whose errors name the argument, what
  was expected and what was given (``check_int``, ``check_real``, ``check_seed``, ...);
- ``_utils.files``: atomic writes (``write_json``, ``write_csv``, ...),
  ``require_file``, output-folder checks and completeness markers;
- ``_utils.outputs``: a run's output folder as one unit
  (``output_run``: a lock, and ``--overwrite`` that replaces only once complete);
- ``_utils.extras``: optional packages (``require_extra``);
- ``_utils.numerics``: pinned numeric code paths and idle cores;
- ``_utils.words``: counted nouns in messages (``count``).

Importing this package imports none of its modules (nor torch or numpy).
"""
