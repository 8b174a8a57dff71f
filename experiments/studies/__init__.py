"""Studies beyond the paper's Table 1, one subpackage each, built on the library's public API
(``docs/experiments.md`` lists them with their commands)."""
