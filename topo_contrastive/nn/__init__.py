"""nn of topo_contrastive."""

__all__: list[str] = []
