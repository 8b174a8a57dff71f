"""The operators a layer filters with, and what it needs to know about them: :class:`Laplacians`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor

_LAYOUTS = (torch.sparse_coo, torch.sparse_csr)


def _check_operator(L: Any, name: str) -> Tensor | None:
    """``L``: ``None`` or a square sparse COO/CSR operator of a floating dtype, constant."""
    if L is None:
        return None
    if not isinstance(L, Tensor):
        raise TypeError(
            f"`{name}` must be a torch sparse tensor (COO or CSR), got {type(L).__name__}; "
            "use ComplexOperators.laplacians()"
        )
    if L.layout == torch.strided:
        raise TypeError(
            f"`{name}` is a dense tensor; the layers need a sparse operator (COO or CSR), e.g. "
            f"`{name}.to_sparse()` or ComplexOperators.laplacians()"
        )
    if L.layout not in _LAYOUTS:
        raise TypeError(f"`{name}` must be a sparse COO or CSR tensor, got layout {L.layout}")
    if L.dim() != 2 or L.shape[0] != L.shape[1]:
        raise ValueError(f"`{name}` must be a square [N, N] operator, got shape {tuple(L.shape)}")
    if not L.dtype.is_floating_point:
        raise TypeError(f"`{name}` must have a floating dtype, got {L.dtype}")
    if L.requires_grad:
        raise ValueError(f"`{name}` requires grad; the layers treat the operators as constants")
    return L


class Laplacians:
    r"""The lower and upper Hodge Laplacians of rank :math:`k` of a complex, or of a batch of
    complexes, with everything a layer, a readout or a loss needs to know about them.

    .. math::
        \mathbf{L}_{k,\downarrow} = \mathbf{B}_k^\top \mathbf{B}_k, \qquad
        \mathbf{L}_{k,\uparrow} = \mathbf{B}_{k+1} \mathbf{B}_{k+1}^\top

    A plain value, in the manner of PyG's ``EdgeIndex``: the two sparse operators, the
    complex they were built from, and, for a batch of several complexes (block-diagonal
    operators), the offsets ``ptr`` of its samples' blocks. A copy (:meth:`to`,
    :meth:`clone`, :meth:`detach`, ``pickle``, ``torch.save``) keeps all of it, and gives
    every layer the same results. It unpacks as the pair (``L_down, L_up = laplacians``),
    e.g. for a TopoModelX layer.

    Build it with :meth:`ComplexOperators.laplacians
    <topo_contrastive.ComplexOperators.laplacians>` (one complex; the same value on every
    call) or :meth:`ComplexData.laplacians <topo_contrastive.data.ComplexData.laplacians>`
    (a sample, or a PyG batch of complexes); any pair of sparse operators also works.
    The layers prepare the operators once per value (checks, CSR forms, the largest
    eigenvalue, a cache-friendly edge order on large complexes) and keep what they prepared
    on it (:attr:`cache`): pass the same value on every call to prepare once.

    Args:
        down (Tensor, optional): :math:`\mathbf{L}_{k,\downarrow}`, sparse COO or CSR
            ``[N, N]``, or ``None`` (a layer with ``K_down=0`` needs none).
        up (Tensor, optional): :math:`\mathbf{L}_{k,\uparrow}` likewise.
        ptr (Tensor, optional): ``int64 [B + 1]``, the first row of every sample's block
            of a batch of ``B`` complexes and ``N`` (``ComplexData``'s batch); ``None``
            (default): the operators of one complex, which act on every sample of a batch of
            signals on it.
        complex (ComplexOperators, optional): the complex the operators were built from
            (default ``None``: unknown). A readout tied to a complex refuses another one's
            operators; :class:`~topo_contrastive.nn.TopoModelXEncoder` takes its model's
            other operators from it.
        rank (int, optional): :math:`k`, the rank of the signals (default ``1``: edge flows).
        symmetric (bool, optional): ``True`` where both operators are symmetric by
            construction (the library's Laplacians); ``None`` (default): a layer checks once.

    Raises:
        TypeError: an operator that is not a sparse COO/CSR tensor of a floating dtype;
            ``ptr`` that is not an integer tensor.
        ValueError: an operator that is not square or requires grad; two operators of
            different sizes, dtypes or devices; neither operator; a ``ptr`` that does not
            start at 0, decreases, or does not end at ``N``.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> laplacians = ops.laplacians()
        >>> L_down, L_up = laplacians  # the pair, e.g. for TopoModelX
        >>> laplacians.num_cells, laplacians.num_blocks, laplacians.to(torch.float64).dtype
        (3, 1, torch.float64)
    """

    __slots__ = ("_memo", "complex", "down", "ptr", "rank", "symmetric", "up")

    def __init__(
        self,
        down: Tensor | None,
        up: Tensor | None,
        ptr: Tensor | None = None,
        complex: Any = None,
        rank: int = 1,
        symmetric: bool | None = None,
    ) -> None:
        self.down = _check_operator(down, "L_down")
        self.up = _check_operator(up, "L_up")
        given = [L for L in (self.down, self.up) if L is not None]
        if not given:
            raise ValueError("`Laplacians` needs at least one of `down` and `up`, got neither")
        if len(given) == 2:
            a, b = given
            if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
                raise ValueError(
                    f"`L_down` ({list(a.shape)}, {a.dtype}, {a.device}) and `L_up` "
                    f"({list(b.shape)}, {b.dtype}, {b.device}) must share size, dtype and device: "
                    "the operators of the same complex"
                )
        if ptr is not None:
            if not isinstance(ptr, Tensor) or ptr.is_floating_point() or ptr.dtype == torch.bool:
                raise TypeError(f"`ptr` must be an integer tensor [B + 1], got {ptr!r}")
            ptr = ptr.detach().to("cpu", torch.long).reshape(-1)
            steps = ptr.diff()
            if ptr.numel() < 2 or int(ptr[0]) != 0 or int(ptr[-1]) != given[0].shape[0] or bool(
                (steps < 0).any()
            ):
                raise ValueError(
                    f"`ptr` must run from 0 to N = {given[0].shape[0]} without decreasing, got "
                    f"{ptr.tolist()[:8]}{' ...' if ptr.numel() > 8 else ''}"
                )
        self.ptr = ptr
        self.complex = complex
        self.rank = int(rank)
        self.symmetric = symmetric
        self._memo: dict[Any, Any] = {}

    # ------------------------------------------------------------------ the pair
    def __iter__(self) -> Iterator[Tensor | None]:
        return iter((self.down, self.up))

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> Tensor | None:
        return (self.down, self.up)[index]

    # ------------------------------------------------------------------ sizes
    @property
    def num_cells(self) -> int:
        """:math:`N`, the rows of the operators (summed over the blocks of a batch)."""
        return int((self.down if self.down is not None else self.up).shape[0])

    @property
    def num_blocks(self) -> int:
        """The number of complexes of a batch (``len(ptr) - 1``; 1 without ``ptr``)."""
        return 1 if self.ptr is None else int(self.ptr.numel()) - 1

    @property
    def device(self) -> torch.device:
        """The operators' device."""
        return (self.down if self.down is not None else self.up).device

    @property
    def dtype(self) -> torch.dtype:
        """The operators' dtype."""
        return (self.down if self.down is not None else self.up).dtype

    @property
    def fingerprint(self) -> str | None:
        """The :meth:`~topo_contrastive.ComplexOperators.fingerprint` of the complex, or
        ``None`` (unknown, or a batch of several complexes)."""
        if self.complex is None or self.num_blocks > 1:
            return None
        return self.complex.fingerprint()

    # ------------------------------------------------------------------ copies
    def _apply(self, fn: Callable[[Tensor], Tensor], ptr: Any = None, **kw: Any) -> Laplacians:
        """A value of ``fn`` of each operator (``ptr``, the complex: these, unless given)."""
        kw.setdefault("complex", self.complex)
        return Laplacians(
            *(None if L is None else fn(L) for L in (self.down, self.up)),
            ptr=self.ptr if ptr is None else ptr, rank=self.rank, symmetric=self.symmetric, **kw,
        )  # fmt: skip

    def to(
        self, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> Laplacians:
        """The operators on ``device`` with ``dtype`` (``to(torch.float64)`` also reads a
        dtype as the first argument); a new value, prepared again by the layers."""
        if isinstance(device, torch.dtype):
            device, dtype = None, device
        return self._apply(lambda L: L.to(device=device, dtype=dtype))

    def clone(self) -> Laplacians:
        """A copy of the operators (``Tensor.clone``)."""
        return self._apply(Tensor.clone)

    def detach(self) -> Laplacians:
        """The operators detached from autograd (``Tensor.detach``)."""
        return self._apply(Tensor.detach)

    # ------------------------------------------------------------------ samples
    def rows(self, start: int, stop: int) -> tuple[int, int]:
        """The rows ``[a, b)`` of the samples ``start .. stop - 1``: of their blocks in a batch
        of complexes, else ``N`` rows per sample on the one complex."""
        if self.ptr is None:
            return start * self.num_cells, stop * self.num_cells
        return int(self.ptr[start]), int(self.ptr[stop])

    def batch_vector(self, num_samples: int, device: Any = None) -> Tensor:
        """PyG's batch vector ``int64 [rows]`` of ``num_samples`` samples on these operators:
        the sample of every row of their blocks in a batch of complexes, of ``N`` rows each on
        one complex."""
        if self.ptr is not None:
            sizes = self.ptr.diff()
        else:
            sizes = torch.full((num_samples,), self.num_cells, dtype=torch.long)
        return torch.arange(len(sizes)).repeat_interleave(sizes).to(device)

    def blocks(self, start: int, stop: int) -> Laplacians:
        """The operators of the samples ``start .. stop - 1`` of a batch of complexes (their
        diagonal blocks, COO); the operators of one complex are returned as they are (they
        act on any number of samples)."""
        if self.ptr is None or (start, stop) == (0, self.num_blocks):
            return self
        a, b = self.rows(start, stop)

        def narrow(L: Tensor) -> Tensor:
            L = L.detach().to_sparse_coo().coalesce()
            index, keep = L.indices(), (L.indices()[0] >= a) & (L.indices()[0] < b)
            return torch.sparse_coo_tensor(
                index[:, keep] - a, L.values()[keep], (b - a, b - a), is_coalesced=True,
                check_invariants=False,
            )

        return self._apply(narrow, self.ptr[start : stop + 1] - a, complex=None)

    def repeat(self, times: int) -> Laplacians:
        """The operators of ``times`` copies of the batch one after the other (a batch of
        complexes: its blocks repeated on the diagonal); those of one complex as they are."""
        if self.ptr is None or times == 1:
            return self

        def tile(L: Tensor) -> Tensor:
            L = L.detach().to_sparse_coo().coalesce()
            shift = torch.arange(times, device=L.device) * self.num_cells  # [times]
            index = (L.indices()[:, None, :] + shift[None, :, None]).reshape(2, -1)
            size = times * self.num_cells
            return torch.sparse_coo_tensor(
                index, L.values().repeat(times), (size, size), is_coalesced=True,
                check_invariants=False,
            )

        ptr = torch.cat([self.ptr[:-1] + k * self.num_cells for k in range(times)])
        return self._apply(tile, torch.cat([ptr, ptr.new_tensor([times * self.num_cells])]),
                           complex=None)  # fmt: skip

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "_memo"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self._memo = {}

    # ------------------------------------------------------------------ prepared forms
    @property
    def cache(self) -> dict[Any, Any]:
        """What the layers prepared from these operators (their CSR forms, largest
        eigenvalues, edge orders), kept for this value while its operators are unchanged: an
        in-place edit of an operator empties it. Copies and pickles start without."""
        versions = tuple(-1 if L is None else L._version for L in (self.down, self.up))
        if self._memo.get("__versions__") != versions:
            self._memo.clear()
            self._memo["__versions__"] = versions
        return self._memo

    def __repr__(self) -> str:
        blocks = f", num_blocks={self.num_blocks}" if self.ptr is not None else ""
        sides = ", ".join(n for n, L in (("down", self.down), ("up", self.up)) if L is not None)
        return (
            f"{type(self).__name__}(rank={self.rank}, num_cells={self.num_cells}{blocks}, "
            f"sides=({sides}), dtype={self.dtype}, device={self.device}, "
            f"layout={(self.down if self.down is not None else self.up).layout})"
        )
