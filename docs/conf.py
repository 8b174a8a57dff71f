"""Sphinx configuration for topo_contrastive."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "topo_contrastive"
author = "topo_contrastive developers"
copyright = "2026, topo_contrastive developers"
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_parser",
]
autosummary_generate = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "generated", "_data"]
html_theme = "alabaster"
nitpicky = False
suppress_warnings = ["myst.header"]
