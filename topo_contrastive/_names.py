"""The choices and defaults that the command line's parsers offer, free of imports.

``topo-contrastive --help`` builds every subcommand's parser; taking these values from the
modules that use them would load PyTorch and scikit-learn first. Each value is documented
where it is used (the module named beside it), which reads it from here.
"""

__all__: list[str] = []

#: :data:`topo_contrastive.evaluation.probe.PROBES`
PROBES: tuple[str, ...] = ("ridge", "svm")
#: :data:`topo_contrastive.evaluation.probe.DEFAULT_PROBE`
DEFAULT_PROBE = "ridge"
