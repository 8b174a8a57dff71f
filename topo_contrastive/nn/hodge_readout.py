r"""The Hodge-aware readout :class:`HodgeReadout` (beyond the paper: keeps the harmonic
coordinates of the per-edge features)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor
from torch_geometric.nn import global_add_pool

from topo_contrastive._layout import check_num_simplices, rows_to_samples, simplex_words
from topo_contrastive._utils.checks import check_bool, check_finite, check_int
from topo_contrastive.complex import ComplexOperators, Laplacians
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.nn._inputs import POOLS, as_laplacians
from topo_contrastive.nn._scnn_kernel import prepare_operator
from topo_contrastive.nn.harmonic_features import (
    _metric_weights,
    canonical_harmonic_basis,
    harmonic_sketch,
    plan_harmonic_features,
)


class HodgeReadout(torch.nn.Module):
    r"""Readout that keeps the harmonic coordinates of per-edge features
    :math:`\mathbf{H} \in \mathbb{R}^{N_1 \times C}` of one sample (the last layer of
    :class:`~topo_contrastive.nn.SCNN` or any per-edge encoder):

    .. math::
        \mathbf{h} = \Big[\, \mathrm{pool}_e \mathbf{H}_{e,:} \;;\;
        \mathrm{vec}\big(\mathbf{U}_H^\top \mathbf{H}\big) \;;\;
        \tfrac{1}{N_1}\lVert \mathbf{B}_1 \mathbf{H} \rVert^2_{\text{col}} \;;\;
        \tfrac{1}{N_1}\lVert \mathbf{B}_2^\top \mathbf{H} \rVert^2_{\text{col}} \,\Big]

    with :math:`\mathbf{U}_H` the canonical harmonic basis
    (:func:`~topo_contrastive.nn.canonical_harmonic_basis`), ``vec`` harmonic-dimension-major
    (``h[C + k*C + c] = (U_H^T H)[k, c]``) and, with ``energies=True``, the per-channel
    gradient and curl energies (paper eq. 1). On a weighted complex the coordinates are the
    metric's, :math:`\mathbf{U}_H^\top \mathbf{W}_1 \mathbf{H}` (the basis
    :math:`\mathbf{W}_1`-orthonormal, docs/weights.md), and the buffer ``harmonic_basis``
    holds :math:`\mathbf{W}_1 \mathbf{U}_H`. Where the basis does not fit the memory
    budget or the backend keeps none (``harmonic="auto"``), a seeded sketch
    :math:`\mathbf{S}^\top\mathbf{H}` takes its place
    (:mod:`~topo_contrastive.nn.harmonic_features`). ``HodgeReadout(None, energies=True)``
    is tied to no complex and pools a batch of complexes, ``[pool H ; energies]``, the
    energies from the operators it is given. On ``HodgeDecomposition(ops, rank=k)`` it
    pools rank-k features. No parameters (docs/design.md §7.2).

    Args:
        hodge (HodgeDecomposition or None): the decomposition of the features' complex;
            ``None`` for the basis-free readout (needs ``energies=True``).
        pool (str, optional): ``"mean"``, ``"sum"``, ``"max"`` or ``"none"``.
            (default: ``"mean"``)
        energies (bool, optional): append the gradient and curl energies.
            (default: ``False``)
        harmonic_channels (int, optional): the harmonic coordinates of the first
            ``harmonic_channels`` channels only (``None``: every channel).
        harmonic (str, optional): ``"auto"``, ``"exact"`` or ``"sketch"``.
            (default: ``"auto"``)
        sketch_dim (int, optional): directions of a sketch (default: by the budget).
        sketch_seed (int, optional): the sketch's seed. (default: ``0``)

    Shapes:
        - **input:** :math:`[B, N_1, C]`, :math:`[N_1, C]` or a PyG batch
          :math:`[B \cdot N_1, C]`, floating.
        - **output:** :math:`[B, D]`, ``D = out_features(C)``:
          :math:`(1 + \beta_1) C`, :math:`\beta_1 C` with ``pool="none"``, :math:`2C` more
          with energies; the input's device and dtype.

    Raises:
        TypeError: (``__init__``) ``hodge`` not a ``HodgeDecomposition``, a non-bool
            ``energies``, a non-integer ``harmonic_channels``, ``sketch_dim`` or
            ``sketch_seed``; (``forward``) ``H`` not a floating tensor.
        ValueError: (``__init__``) an unknown ``pool`` or ``harmonic``, sizes below 1, a
            negative seed, a complex without simplices of the rank, ``"exact"`` where no
            basis is available, a budget too small for one sketch direction, harmonic
            options with ``hodge=None``, an empty readout; (``forward``) ``H`` of another
            ``N1`` or dimension, NaN or inf in ``H`` (naming the samples; skipped with
            ``check_finite = False``).

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]],
        ...                                          [[0, 1, 2]])
        >>> readout = HodgeReadout(HodgeDecomposition(ops))
        >>> readout.beta1, readout.out_features(8)
        (1, 16)
        >>> readout(torch.randn(4, 5, 8)).shape
        torch.Size([4, 16])
    """

    harmonic_basis: Tensor
    #: Refuse NaN/inf in ``H`` (skipped while ``torch.compile`` traces); ``False`` skips it.
    check_finite: bool = True

    def __init__(
        self,
        hodge: HodgeDecomposition | None,
        pool: str = "mean",
        energies: bool = False,
        harmonic_channels: int | None = None,
        harmonic: str = "auto",
        sketch_dim: int | None = None,
        sketch_seed: int = 0,
    ) -> None:
        super().__init__()
        if hodge is not None and not isinstance(hodge, HodgeDecomposition):
            raise TypeError(
                f"`hodge` must be a HodgeDecomposition or None, got {type(hodge).__name__}"
            )
        if not isinstance(pool, str) or pool not in (*POOLS, "none"):
            raise ValueError(f"`pool` must be one of {(*POOLS, 'none')}, got {pool!r}")
        if hodge is None and (harmonic != "auto" or sketch_dim is not None):
            raise ValueError(
                "a HodgeReadout without a complex (hodge=None) has no harmonic block: "
                f"harmonic={harmonic!r} and sketch_dim={sketch_dim!r} need the complex's "
                "HodgeDecomposition (leave them at 'auto' and None for the basis-free readout)"
            )
        self.pool, self.energies = pool, check_bool(energies, "energies")
        if harmonic_channels is not None:
            harmonic_channels = check_int(harmonic_channels, "harmonic_channels", 1)
        self.harmonic_channels = harmonic_channels
        self.sketch_seed = int(check_int(sketch_seed, "sketch_seed", 0))
        #: ``True`` for the readout across complexes (``hodge=None``).
        self.basis_free = hodge is None
        #: ``"exact"`` (canonical basis), ``"sketch"`` or ``"none"``.
        self.harmonic, self._beta, self.plan = "none", 0, None
        #: the rank, :math:`N_k` and the complex's fingerprint (``None`` without a complex).
        self.rank, self.num_edges, self.complex_fingerprint = 1, None, None
        self._incidence_energies = False
        if hodge is None and not energies:
            raise ValueError(
                "a HodgeReadout without a complex (hodge=None) keeps no harmonic "
                "coordinates: set energies=True for the basis-free readout across "
                "complexes, or use the SCNN's string readout"
            )
        basis, pivots = (np.zeros((0, 0)), np.zeros(0, np.int64)) if hodge is None else (
            self._harmonic_part(hodge, harmonic, sketch_dim)
        )  # fmt: skip
        self.register_buffer("harmonic_basis", torch.from_numpy(basis).float())
        self.register_buffer("pivots", torch.from_numpy(pivots))
        if hodge is not None:
            self._register_energy_tables(hodge.complex, self.energies)
            if self.out_features(1) == 0:
                raise ValueError(
                    "the readout would be empty: pool='none', no energies and no harmonic "
                    "part (beta_1 = 0) on this complex"
                )

    def _harmonic_part(
        self, hodge: HodgeDecomposition, harmonic: str, sketch_dim: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The basis (or sketch) and its pivots, as :func:`plan_harmonic_features` plans."""
        self.rank, self.num_edges = int(hodge.rank), int(hodge.num_simplices)
        if self.num_edges == 0:
            _, what, _ = simplex_words(self.rank)
            raise ValueError(
                f"the complex has no {what} (N{self.rank} = 0): a HodgeReadout of rank "
                f"{self.rank} has nothing to pool"
            )
        self.complex_fingerprint = hodge.complex.fingerprint()
        #: The :class:`~topo_contrastive.nn.harmonic_features.HarmonicPlan` chosen.
        self.plan = plan_harmonic_features(hodge, sketch_dim=sketch_dim, kind=harmonic)
        self.harmonic, self._beta = self.plan.kind, self.plan.beta
        if self.plan.kind == "sketch":
            m = harmonic_sketch(hodge, self.plan.dim, self.sketch_seed)
            pivots = np.zeros(0, np.int64)
        else:
            m, pivots = canonical_harmonic_basis(hodge)
        w = _metric_weights(hodge)  # a metric's coordinates U_H^T W H (G^T W^1/2 P_H H)
        return (m if w is None else w[:, None] * m), pivots

    def _register_energy_tables(self, ops: ComplexOperators, energies: bool) -> None:
        """The energies' incidence tables: rank 1 of a simplicial complex, the triangles'
        three edges; other ranks and polygon 2-cells, ``B_k`` and ``B_{k+1}^T`` as
        index/value pairs."""
        self._incidence_energies = energies and (self.rank != 1 or not ops.is_simplicial)
        if self._incidence_energies:
            for side, mat in (
                ("lower", ops.incidence(self.rank) if self.rank else None),
                ("upper", ops.incidence(self.rank + 1).T),
            ):
                coo = sp.coo_matrix(mat if mat is not None else (0, self.num_edges))
                index = np.stack([coo.row, coo.col]).astype(np.int64)
                self.register_buffer(f"{side}_index", torch.from_numpy(index))  # [2, nnz]
                self.register_buffer(f"{side}_value", torch.from_numpy(coo.data).float())
                setattr(self, f"num_{side}", int(coo.shape[0]))
        elif energies:
            self.register_buffer("edge_nodes", torch.from_numpy(ops.edges.T.copy()))  # [2, N1]
            b2 = ops.B2.tocsc()
            b2.sort_indices()
            triangles = torch.from_numpy(b2.indices.reshape(-1, 3).astype(np.int64))
            self.register_buffer("triangle_edges", triangles)  # [N2, 3]
            self.register_buffer("triangle_signs", torch.from_numpy(b2.data.reshape(-1, 3)).float())
            self.num_nodes = int(ops.num_nodes)

    def reset_parameters(self) -> None:
        """Nothing to reset (the readout has no parameters); kept for the layer convention."""

    @property
    def beta1(self) -> int:
        """The first Betti number :math:`\\beta_1` (harmonic dimension)."""
        return self._beta

    @property
    def harmonic_dim(self) -> int:
        """Harmonic coordinates per kept channel: :math:`\\beta_1`, or :math:`k` (sketch)."""
        return int(self.harmonic_basis.shape[1])

    def harmonic_line(self) -> str:
        """The harmonic features kept, in one line (``harmonic features: exact basis
        (beta_1 = 12)``)."""
        if self.plan is None:
            return "harmonic features: none (the basis-free readout across complexes)"
        return self.plan.line()

    def out_features(self, channels: int) -> int:
        """Size ``D`` of :math:`\\mathbf{h}` for ``channels`` features per edge."""
        pooled = (0 if self.pool == "none" else 1) + (2 if self.energies else 0)
        return pooled * int(channels) + self.harmonic_dim * self._kept(int(channels))

    def _kept(self, channels: int) -> int:
        """Channels whose harmonic coordinates are kept."""
        return channels if self.harmonic_channels is None else min(self.harmonic_channels, channels)

    def forward(
        self,
        H: Tensor,
        batch: Tensor | None = None,
        laplacians: Laplacians | None = None,
        size: int | None = None,
        edge_perm: Tensor | None = None,
    ) -> Tensor:
        """Pool ``H`` into ``[B, out_features(C)]``. ``batch`` (with ``size`` samples), the
        basis-free readout's batch vector of a batch of complexes ``[sum N1, C]``;
        ``laplacians``, its operators (required there); ``edge_perm`` ``int64 [N1]``: ``H``'s
        edge ``i`` is the complex's edge ``edge_perm[i]`` (not with energies)."""
        if not isinstance(H, Tensor) or not H.is_floating_point():
            raise TypeError(
                f"`H` must be a floating tensor, got {type(H).__name__}"
                + (f" of dtype {H.dtype}" if isinstance(H, Tensor) else "")
            )
        if self.basis_free:
            return self._basis_free(H, batch, laplacians, size)
        if edge_perm is not None and self.energies:
            raise ValueError("`edge_perm` is not supported with energies=True")
        H = self._samples(H)  # [B, N1, C]
        blocks = self._pooled(H)
        if self.harmonic_dim:
            blocks.append(self._coordinates(H, edge_perm))
        if self.energies:
            blocks += self._energies(H)
        return torch.cat(blocks, dim=1) if blocks else H.new_zeros(H.shape[0], 0)

    def _samples(self, H: Tensor) -> Tensor:
        """``H`` as ``[B, N1, C]``, checked against the complex (and finite)."""
        n1, nk = self.num_edges, f"N{self.rank}"
        if H.dim() == 2:  # one sample [N1, C] or a PyG batch [B * N1, C]
            hint = " (a HodgeReadout built on another complex?)"
            H = rows_to_samples(H, n1, self.rank, "H", hint=hint)
        elif H.dim() != 3:
            raise ValueError(
                f"`H` must be [B, {nk}, C], [{nk}, C] or [B*{nk}, C], got {tuple(H.shape)}"
            )
        _, what, _ = simplex_words(self.rank)
        check_num_simplices(
            H, 1, n1, self.rank, "H", f"the readout was built on a complex with {nk} = {n1} {what}"
        )
        if self.check_finite and not torch.compiler.is_compiling():
            check_finite(H, "H")
        return H

    def _pooled(self, H: Tensor) -> list[Tensor]:
        """``[pool_e H]`` ``[B, C]`` (empty for ``pool="none"``)."""
        if self.pool == "none":
            return []
        if self.pool == "max":
            return [H.amax(dim=1) if H.shape[0] else H.new_zeros(0, H.shape[2])]
        return [H.mean(dim=1) if self.pool == "mean" else H.sum(dim=1)]

    def _coordinates(self, H: Tensor, edge_perm: Tensor | None) -> Tensor:
        """``vec(U^T H)`` of the kept channels, ``[B, harmonic_dim * c]``."""
        (B, n1, C), d = H.shape, self.harmonic_dim
        u = self.harmonic_basis.to(H.dtype)
        if edge_perm is not None:  # H's edge i is the complex's edge edge_perm[i]
            u = u.index_select(0, edge_perm.to(u.device))
        c = self._kept(C)
        if c < C:
            # a reduced basis keeps few channels: one [beta, N1] @ [N1, B*c] GEMM (the
            # batched product of B thin blocks ran 9x slower); full width keeps the batched
            # product, whose rounding the paper datasets' published numbers were computed with
            Hc = H[..., :c].transpose(0, 1).reshape(n1, B * c)  # [N1, B*c]
            coords = (u.t() @ Hc).reshape(d, B, c).transpose(0, 1)  # [B, beta, c]
        else:
            coords = torch.matmul(u.t(), H)  # [B, beta, C]
        return coords.reshape(B, d * c)

    def _energies(self, H: Tensor) -> list[Tensor]:
        """The gradient and curl energies ``(1/N) ||B_k H||^2``, ``(1/N) ||B_{k+1}^T H||^2``
        per channel, two ``[B, C]``."""
        (B, n1, C), blocks = H.shape, []
        if self._incidence_energies:
            for side in ("lower", "upper"):  # B_k H and B_{k+1}^T H, [B, rows, C]
                row, col = getattr(self, f"{side}_index")
                val = getattr(self, f"{side}_value").to(H.dtype)[:, None]
                out = H.new_zeros(B, getattr(self, f"num_{side}"), C)
                out.index_add_(1, row, H[:, col] * val)
                blocks.append(out.pow(2).sum(1) / n1)
            return blocks
        tail, head = self.edge_nodes
        div = H.new_zeros(B, self.num_nodes, C)
        div.index_add_(1, head, H).index_add_(1, tail, H, alpha=-1.0)  # B1 H, [B, N0, C]
        curl = (H[:, self.triangle_edges] * self.triangle_signs.to(H.dtype)[:, :, None]).sum(2)
        return [div.pow(2).sum(1) / n1, curl.pow(2).sum(1) / n1]

    def _basis_free(
        self, H: Tensor, batch: Tensor | None, laplacians: Laplacians | None, size: int | None
    ) -> Tensor:
        """``[pool ; h^T L_down h / N1 ; h^T L_up h / N1]`` per sample and channel."""
        if laplacians is None:
            raise ValueError(
                "the basis-free HodgeReadout (hodge=None) computes its energies from the "
                "operators: call it with `laplacians` (the SCNN passes its own)"
            )
        L = as_laplacians(laplacians, (1, 1))
        n = L.num_cells
        Ld, Lu = (prepare_operator(L, side, False).csr for side in ("down", "up"))  # cached
        if batch is None:  # one complex: [N1, C], [B, N1, C] or [B*N1, C]
            if H.dim() == 2:
                H = rows_to_samples(H, n, 1, "H", of=f"the operators' N1 = {n}")
            if H.dim() != 3 or H.shape[1] != n:
                raise ValueError(
                    f"`H` must be [B, {n}, C] or [B*{n}, C] for operators [{n}, {n}], got "
                    f"{tuple(H.shape)}"
                )
            B, _, C = H.shape
            flat = H.transpose(0, 1).reshape(n, B * C)  # [N1, B*C]
            blocks = self._pooled(H)
            for Lk in (Ld, Lu):
                LH = (Lk.to(H.dtype) @ flat).reshape(n, B, C).transpose(0, 1)  # [B, N1, C]
                blocks.append((H * LH).sum(dim=1) / n)
            return torch.cat(blocks, dim=1)
        if H.dim() != 2 or H.shape[0] != n:
            raise ValueError(
                f"`H` must be [sum N1, C] = [{n}, C] with `batch` for operators [{n}, {n}], got "
                f"{tuple(H.shape)}"
            )
        num = int(batch.max()) + 1 if size is None else int(size)
        counts = torch.bincount(batch, minlength=num).to(H.dtype).clamp_min(1)[:, None]
        blocks = [] if self.pool == "none" else [POOLS[self.pool](H, batch, size=num)]
        for Lk in (Ld, Lu):
            blocks.append(global_add_pool(H * (Lk.to(H.dtype) @ H), batch, size=num) / counts)
        return torch.cat(blocks, dim=1)

    def __repr__(self) -> str:
        if self.basis_free:
            return f"{type(self).__name__}(None, pool={self.pool!r}, energies=True)"
        if self.rank != 1:
            head = f"rank={self.rank}, num_simplices={self.num_edges}, beta={self.beta1}"
        else:
            head = f"num_edges={self.num_edges}, beta1={self.beta1}"
        tail = f", harmonic_channels={self.harmonic_channels}" if self.harmonic_channels else ""
        if self.harmonic == "sketch":
            tail += f", sketch_dim={self.harmonic_dim}, sketch_seed={self.sketch_seed}"
        return (
            f"{type(self).__name__}({head}, pool={self.pool!r}, energies={self.energies}{tail})"
        )
