"""Edge look-ups of a complex: oriented node pairs, node paths and edge flows.

:class:`EdgeLookupMixin` gives :class:`~topo_contrastive.complex.ComplexOperators` the
map from an oriented node pair to its edge column and sign
(:meth:`~EdgeLookupMixin.edge_lookup`), the edge flow of a node path
(:meth:`~EdgeLookupMixin.path_to_flow`) and the node divergence of edge flows
(:meth:`~EdgeLookupMixin.divergence`). :func:`edge_key_table` builds the table the
look-ups search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

__all__ = ["EdgeLookupMixin", "edge_key_table"]


def edge_key_table(edges: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Look-up table for ``(u, v) -> column`` of the edges ``[N1, 2]``.

    Returns:
        ``(order, sorted_keys)``: the columns sorted by the key ``min(u, v) * N0 +
        max(u, v)`` of their node pair, and those keys (``int64 [N1]`` each).
    """
    lo = np.minimum(edges[:, 0], edges[:, 1])
    hi = np.maximum(edges[:, 0], edges[:, 1])
    keys = lo * num_nodes + hi
    order = np.argsort(keys, kind="stable")
    return order, keys[order]


class EdgeLookupMixin:
    """Oriented edge look-ups, edge flows of node paths and their node divergence.

    Mixed into :class:`~topo_contrastive.complex.ComplexOperators`, which holds the
    edges, the look-up table of :func:`edge_key_table` and the operators.
    """

    if TYPE_CHECKING:  # provided by ComplexOperators
        num_nodes: int
        num_edges: int
        edges: np.ndarray
        _key_order: np.ndarray
        _sorted_keys: np.ndarray

        def operator(
            self,
            name: str,
            device: torch.device | str | None = None,
            dtype: torch.dtype = torch.float32,
            layout: torch.layout = torch.sparse_coo,
        ) -> torch.Tensor: ...

    def edge_lookup(self, u: Any, v: Any) -> tuple[np.ndarray, np.ndarray]:
        """Map oriented node pairs ``(u, v)`` to ``(column, sign)``.

        ``sign`` is ``+1`` when the edge's stored orientation is ``u -> v`` and
        ``-1`` when it is ``v -> u``. Vectorised: ``u`` and ``v`` may be scalars or
        arrays of the same shape.

        Returns:
            ``(columns, signs)``: ``int64`` and ``float64`` arrays shaped like ``u``
            (0-d arrays for scalars).

        Raises:
            ValueError: some ``(u, v)`` is not an edge of the complex (says which).
        """
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        if u.shape != v.shape:
            raise ValueError(f"`u` and `v` must have the same shape, got {u.shape} and {v.shape}")
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        inrange = (lo >= 0) & (hi < self.num_nodes) & (lo != hi)
        keys = np.where(inrange, lo * self.num_nodes + hi, -1)
        pos = np.searchsorted(self._sorted_keys, keys)
        pos = np.minimum(pos, max(self.num_edges - 1, 0))
        found = inrange & (self._sorted_keys[pos] == keys) if self.num_edges else inrange & False
        if not np.all(found):
            i = np.argwhere(~np.atleast_1d(found))[0]
            uu, vv = np.atleast_1d(u)[tuple(i)], np.atleast_1d(v)[tuple(i)]
            raise ValueError(f"({int(uu)}, {int(vv)}) is not an edge of the complex")
        col = self._key_order[pos]
        sign = np.where(self.edges[col, 0] == u, 1.0, -1.0)
        return col, sign

    def path_to_flow(
        self,
        path: Sequence[int] | np.ndarray | torch.Tensor,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Edge flow ``[N1]`` of a node path: every step ``a -> b`` adds its sign to its edge.

        Steps along the stored orientation add ``+1``, against it ``-1``; an edge
        traversed several times accumulates (values of magnitude 2+ occur).

        The nodes are the complex's own labels: for a complex built
        :meth:`~topo_contrastive.ComplexOperators.from_toponetx`, TopoNetX's node labels
        (``node_labels``: strings, tuples, any ints); otherwise the node ids
        ``0 .. N0 - 1`` (rows of ``B1``).

        Args:
            path: sequence of at least one node (id, or label of a TopoNetX complex).
            dtype: output floating dtype (default ``torch.float32``).
            device: output device (default CPU).

        Raises:
            ValueError: an empty path, node ids that are not integers, a node that is not
                a label of the complex, or a step of the path that is not an edge (says
                which step).
        """
        labels = getattr(self, "_label_rows", None)
        if labels is not None:
            path = self._rows_of_labels(path, labels)
        raw = np.asarray(
            path.detach().cpu().numpy() if isinstance(path, torch.Tensor) else path
        )
        integral = raw.dtype.kind in "iu" or (
            raw.dtype.kind == "f" and bool(np.all(np.isfinite(raw) & (raw % 1 == 0)))
        )
        if raw.ndim > 1 or raw.size == 0 or not integral:
            raise ValueError(
                f"`path` must be a 1-D sequence of at least one integer node id, got dtype "
                f"{raw.dtype} and shape {tuple(raw.shape)}"
                + (f" ({raw.ravel()[:4].tolist()}...)" if raw.size and not integral else "")
            )
        p = raw.astype(np.int64).ravel()
        flow = np.zeros(self.num_edges, dtype=np.float64)
        if p.size >= 2:
            try:
                col, sign = self.edge_lookup(p[:-1], p[1:])
            except ValueError:
                bad = next(
                    i
                    for i in range(p.size - 1)
                    if not self._is_edge(int(p[i]), int(p[i + 1]))
                )
                labels = getattr(self, "node_labels", None)

                def name(i: int) -> Any:  # a TopoNetX complex's label, else the node id
                    return labels[i] if labels is not None else i

                raise ValueError(
                    f"step {bad} of the path, {name(int(p[bad]))!r} -> "
                    f"{name(int(p[bad + 1]))!r}, is not an edge of the complex"
                ) from None
            np.add.at(flow, col, sign)
        return torch.from_numpy(flow).to(device=device, dtype=dtype)

    @staticmethod
    def _rows_of_labels(path: Any, labels: dict[Any, int]) -> np.ndarray:
        """Rows of ``B1`` of a path in a TopoNetX complex's node labels."""
        if isinstance(path, torch.Tensor):
            path = path.detach().cpu().tolist()
        elif isinstance(path, np.ndarray):
            path = path.tolist()
        if isinstance(path, (str, bytes)) or not isinstance(path, Sequence) or not path:
            raise ValueError(
                "`path` must be a non-empty sequence of node labels of the complex, got "
                f"{path!r}"
            )
        rows = []
        for i, node in enumerate(path):
            if isinstance(node, list):  # a tuple label read back from an array or tensor
                node = tuple(node)
            try:
                rows.append(labels[node])
            except (KeyError, TypeError):
                raise ValueError(
                    f"node {i} of the path, {node!r}, is not a node label of the complex "
                    f"(labels such as {list(labels)[:3]!r})"
                ) from None
        return np.asarray(rows, dtype=np.int64)

    def _is_edge(self, u: int, v: int) -> bool:
        try:
            self.edge_lookup(u, v)
        except ValueError:
            return False
        return True

    def divergence(self, x: torch.Tensor) -> torch.Tensor:
        """Node divergence :math:`B_1 x` of edge flows.

        Args:
            x: floating tensor ``[N1]`` or ``[B, N1]``.

        Returns:
            ``[N0]`` or ``[B, N0]`` on ``x``'s device and dtype.

        Raises:
            ValueError: the last dimension of ``x`` is not ``N1``.
        """
        if x.shape[-1] != self.num_edges:
            raise ValueError(
                f"`x` must have {self.num_edges} entries (edges) in its last dimension, "
                f"got shape {tuple(x.shape)}"
            )
        b1 = self.operator("B1", device=x.device, dtype=x.dtype)
        return (b1 @ x.reshape(-1, self.num_edges).T).T.reshape(*x.shape[:-1], self.num_nodes)

