"""Studies beyond the paper's Table 1, each a subpackage of its own.

- :mod:`topo_contrastive.studies.label_efficiency`: test accuracy against the labelled
  fraction of the training split (``topo-contrastive label-efficiency``).
- :mod:`topo_contrastive.studies.next_node`: next-node trajectory prediction with a
  pre-trained encoder, SCoNe's task (``topo-contrastive predict-next``).
- :mod:`topo_contrastive.studies.reuse`: an encoder pre-trained on some road networks,
  probed on one it never saw (``topo-contrastive reuse``).
- :mod:`topo_contrastive.studies.many_complexes`: label efficiency when every sample lives
  on a complex of its own (``topo-contrastive many-complexes``).
- :mod:`topo_contrastive.studies.missing_measurements`: probes trained on complete flows,
  tested with edges unobserved (``topo-contrastive missing-measurements``).

The studies build on :mod:`topo_contrastive.experiments` and the core subpackages; nothing
in the core imports them (``docs/architecture.md``).
"""
