"""Sphinx configuration for topo_contrastive.

Build (the tutorials under ``examples/tutorials`` run during the build, a few minutes on 2
CPU cores)::

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

The site needs nothing from outside itself: the theme's assets are local, maths is MathML
written at build time (``_ext/mathml_math.py``), and ``tests/docs/test_site.py`` checks the
built pages for anything loaded from elsewhere, unrendered formulas, missing API members and
broken internal links.
"""

import os
import re
import sys
import warnings
from pathlib import Path

import sphinx.ext.autosummary

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "topo_contrastive"
author = "topo_contrastive developers"
copyright = "2026, topo_contrastive developers"
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
    "mathml_math",
    "viewcode_backlinks",
]
html_math_renderer = "mathml"
autosummary_generate = False  # the API pages are written by hand, one per module
# the summary tables take a docstring's first sentence: not one that ends at "eq." or "e.g."
sphinx.ext.autosummary.periods_re = re.compile(r"(?<!\beq)(?<!\beqs)(?<!e\.g)(?<!i\.e)\.(?:\s+)")
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "generated", "_data", "_ext", "tutorials/*.ipynb"]
myst_heading_anchors = 3
nitpicky = False
suppress_warnings = ["myst.header"]

# --- tutorials: sphinx-gallery runs every script of examples/tutorials during the build
sphinx_gallery_conf = {
    "examples_dirs": [str(HERE.parent / "examples" / "tutorials")],
    "gallery_dirs": ["tutorials"],
    "filename_pattern": r".*\.py$",  # run them all
    "ignore_pattern": r"(^|/)_",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "show_signature": False,
    "capture_repr": (),
    "matplotlib_animations": False,
    # the summary page of computation times loads jQuery and DataTables from a CDN: every
    # tutorial page ends with its own running time instead (measured by the build)
    "write_computation_times": False,
}
warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")
warnings.filterwarnings("ignore", category=DeprecationWarning)

# --- copy buttons: leave out prompts and the output of examples
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_exclude = ".linenos, .gp, .go"

# --- theme: furo, with every asset served from the site itself
html_theme = "furo"
html_title = "topo_contrastive"
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_theme_options = {
    "source_repository": "",
    "navigation_with_keys": True,
    "top_of_page_buttons": [],
}
html_show_sourcelink = False
html_copy_source = False
