"""The two layouts of :class:`~topo_contrastive.data.ComplexData` samples (each on its own
complex, or on the dataset's shared complex) and the error for mixing them."""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data.storage import GlobalStorage

#: The key that marks a sample on the shared complex (a tensor ``[1]``, ``True``): samples
#: of the two layouts have different keys, so that PyG's collation refuses to mix them.
SHARED_MARK = "shared_complex"
_INCIDENCE_KEYS = tuple(f"incidence_{k}_{p}" for k in (1, 2) for p in ("index", "value"))


class MixedLayoutError(KeyError, ValueError):
    """Samples on the shared complex and samples with their own complexes in one PyG
    ``Batch`` or ``InMemoryDataset`` (a ``ValueError``; a ``KeyError`` as well, so that
    PyG's attribute lookups keep working)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _ComplexStorage(GlobalStorage):
    """PyG's storage of a :class:`ComplexData`: a key of one layout missing from a sample
    of the other (PyG's collation asks every sample for the first sample's keys) raises
    :class:`MixedLayoutError` instead of a bare ``KeyError``."""

    def __getitem__(self, key: str) -> Any:
        try:
            return self._mapping[key]
        except KeyError:
            if key in _INCIDENCE_KEYS or key == SHARED_MARK:
                raise MixedLayoutError(_mixed_message(key)) from None
            raise


torch.serialization.add_safe_globals([_ComplexStorage])


def _mixed_message(key: str) -> str:
    this = (
        "a sample on the shared complex (ComplexData.on_shared_complex, no incidences of its "
        "own)"
        if key != SHARED_MARK
        else "a sample with its own complex (ComplexData.from_complex, with incidences)"
    )
    return (
        f"{this} is collated with samples of the other layout (missing `{key}`): a PyG "
        "Batch or InMemoryDataset holds samples of one layout only; build every sample "
        "with ComplexData.from_complex (each its own complex) or every one with "
        "ComplexData.on_shared_complex (one complex on the dataset)"
    )
