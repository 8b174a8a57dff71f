"""The choices and defaults that the experiments' parsers offer, free of imports.

``python -m experiments --help`` builds every subcommand's parser; taking these values from
the modules that use them would load PyTorch and scikit-learn first. Each value is documented
where it is used (the module named beside it), which reads it from here.
"""

__all__: list[str] = []

#: :data:`experiments.studies.label_efficiency.probe.CLASSIFIERS`
CLASSIFIERS: tuple[str, ...] = ("logistic", "svm", "ridge")
#: :data:`experiments.studies.label_efficiency.curves.ROW_KINDS`
ROW_KINDS: tuple[str, ...] = (
    "probe", "finetune", "control", "untrained", "supervised", "raw", "abs", "harmonic",
)  # fmt: skip
#: :data:`experiments.studies.label_efficiency.subsets.DEFAULT_FRACTIONS`
DEFAULT_FRACTIONS: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.25, 1.0)
#: :data:`experiments.studies.label_efficiency.subsets.DEFAULT_DRAWS`
DEFAULT_DRAWS = 10
#: :data:`experiments.studies.label_efficiency.subsets.MAX_DRAWS`
MAX_DRAWS = 1000
#: :data:`experiments.studies.missing_measurements.masks.MODES`
MISSING_MODES: tuple[str, ...] = ("random", "region")
