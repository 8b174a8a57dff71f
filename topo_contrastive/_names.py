"""The choices and defaults of the command line's parsers, free of imports (``--help`` loads
neither PyTorch nor scikit-learn); each is documented where it is used, which reads it here."""

#: :data:`topo_contrastive.evaluation.probe.PROBES`
PROBES: tuple[str, ...] = ("ridge", "svm")
#: :data:`topo_contrastive.evaluation.probe.DEFAULT_PROBE`
DEFAULT_PROBE = "ridge"
