"""Studies beyond the paper's Table 1, each a subpackage of its own.

- :mod:`experiments.studies.label_efficiency`: test accuracy against the labelled
  fraction of the training split (``python -m experiments label-efficiency``).
- :mod:`experiments.studies.next_node`: next-node trajectory prediction with a
  pre-trained encoder, SCoNe's task (``python -m experiments predict-next``).
- :mod:`experiments.studies.reuse`: an encoder pre-trained on some road networks,
  probed on one it never saw (``python -m experiments reuse``).
- :mod:`experiments.studies.many_complexes`: label efficiency when every sample lives
  on a complex of its own (``python -m experiments many-complexes``).
- :mod:`experiments.studies.missing_measurements`: probes trained on complete flows,
  tested with edges unobserved (``python -m experiments missing-measurements``).

The studies build on the library's public API (:mod:`topo_contrastive.training`,
:mod:`topo_contrastive.evaluation` and the core subpackages); nothing in the library imports
them (``docs/architecture.md``).
"""
