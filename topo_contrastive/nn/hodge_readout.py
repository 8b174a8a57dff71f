r"""The Hodge-aware readout :class:`HodgeReadout` (beyond the paper: keeps the harmonic
coordinates of the per-edge features)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from topo_contrastive._layout import check_num_simplices, rows_to_samples, simplex_words
from topo_contrastive.complex import ComplexOperators, Laplacians
from topo_contrastive.hodge import HodgeDecomposition
from topo_contrastive.nn._harmonic_basis import canonical_harmonic_basis
from topo_contrastive.utils.checks import check_bool, check_finite, check_int

__all__ = ["HodgeReadout", "canonical_harmonic_basis"]

_POOLS = ("mean", "sum", "max", "none")


class HodgeReadout(torch.nn.Module):
    r"""Readout that keeps the harmonic coordinates of per-edge features.

    Pools per-edge features :math:`\mathbf{H} \in \mathbb{R}^{N_1 \times C}` of one sample
    (the last layer of :class:`~topo_contrastive.nn.SCNN`, TopoModelX's ``SCNNLayer`` or any
    per-edge encoder) into

    .. math::
        \mathbf{h} = \Big[\, \mathrm{pool}_e \mathbf{H}_{e,:} \;;\;
        \mathrm{vec}\big(\mathbf{U}_H^\top \mathbf{H}\big) \;;\;
        \tfrac{1}{N_1}\lVert \mathbf{B}_1 \mathbf{H} \rVert^2_{\text{col}} \;;\;
        \tfrac{1}{N_1}\lVert \mathbf{B}_2^\top \mathbf{H} \rVert^2_{\text{col}} \,\Big]

    with :math:`\mathbf{U}_H` the canonical orthonormal harmonic basis
    (:func:`canonical_harmonic_basis`), ``vec`` harmonic-dimension-major
    (``h[C + k*C + c] = (U_H^T H)[k, c]``) and the last two blocks (``energies=True``) the
    per-channel gradient and curl energies (paper eq. 1): :math:`(1 + \beta_1) C` features,
    :math:`\beta_1 C` with ``pool="none"``, :math:`2C` more with energies. Harmonic
    coordinates and energies are invariant to edge re-orientation for features that turn
    with the edges; with :math:`\beta_1 = 0` the readout is the pooled block (and energies).
    ``HodgeReadout(None, energies=True)`` is tied to no complex: it pools a batch of
    different complexes (``h = [pool H ; energies]``, the energies computed from the
    operators the encoder is given). Built on ``HodgeDecomposition(ops, rank=k)`` it pools
    features of rank-k simplices (:attr:`beta1` then holds :math:`\beta_k`). No parameters;
    design notes in docs/design.md §7.2.

    **At scale** (``harmonic="auto"``): where the basis does not fit the memory budget or the
    backend keeps none, a seeded sketch :math:`\mathbf{S}^\top\mathbf{H}`,
    :math:`\mathbf{S} = \mathbf{P}_H\mathbf{G}` ``[N1, k]``, takes the place of
    :math:`\mathbf{U}_H^\top\mathbf{H}` (:math:`k` of :math:`\beta_1`,
    :attr:`harmonic_dim`; :mod:`~topo_contrastive.nn.harmonic_features`).

    Args:
        hodge (HodgeDecomposition or None): the decomposition of the complex the features
            live on; ``None`` for the basis-free readout across complexes (needs
            ``energies=True``).
        pool (str, optional): ``"mean"``, ``"sum"``, ``"max"`` over edges, or ``"none"``.
            (default: ``"mean"``)
        energies (bool, optional): append the gradient and curl energies.
            (default: ``False``)
        harmonic_channels (int, optional): harmonic coordinates of the first
            ``harmonic_channels`` channels only (``None``: of every channel).
            (default: ``None``)
        harmonic (str, optional): ``"auto"`` (default), ``"exact"`` or ``"sketch"``.
        sketch_dim (int, optional): directions of a sketch (default: by the budget, <= 256).
        sketch_seed (int, optional): seed of a sketch. (default: ``0``)

    Shapes:
        - **input:** :math:`[B, N_1, C]`, :math:`[N_1, C]` (one sample) or a PyG batch
          :math:`[B \cdot N_1, C]` (samples one after the other), floating.
        - **output:** :math:`[B, D]` with ``D = out_features(C)``, on the input's device and
          dtype (a single sample gives :math:`[1, D]`).

    Raises:
        TypeError: (``__init__``) ``hodge`` is not a ``HodgeDecomposition``, ``energies``
            not a bool or ``harmonic_channels``, ``sketch_dim`` or ``sketch_seed`` not an
            int; (``forward``) ``H`` not a floating tensor.
        ValueError: (``__init__``) an unknown ``pool`` or ``harmonic``;
            ``harmonic_channels`` or ``sketch_dim`` below 1, a negative ``sketch_seed``; a
            complex without simplices of the pooled rank; ``harmonic="exact"`` where no
            harmonic basis is available; a budget too small for one sketch direction;
            ``harmonic`` other than ``"auto"`` or a ``sketch_dim`` with ``hodge=None`` (a
            sketch needs the complex); an empty readout (``pool="none"`` without energies
            and :math:`\beta_1 = 0`);
            (``forward``) features whose edge count is not the complex's ``N1``, a wrong
            number of dimensions, NaN or inf in ``H`` (naming the samples; skipped with
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
    #: Refuse NaN/inf in ``H`` (a ``ValueError`` naming the samples); set ``False`` on an
    #: instance to skip the check.
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
        from topo_contrastive.nn.harmonic_features import (
            harmonic_sketch,
            plan_harmonic_features,
        )
        if hodge is not None and not isinstance(hodge, HodgeDecomposition):
            raise TypeError(
                f"`hodge` must be a HodgeDecomposition or None, got {type(hodge).__name__}"
            )
        if not isinstance(pool, str) or pool not in _POOLS:
            raise ValueError(f"`pool` must be one of {_POOLS}, got {pool!r}")
        if hodge is None and (harmonic != "auto" or sketch_dim is not None):
            raise ValueError(
                "a HodgeReadout without a complex (hodge=None) has no harmonic block: "
                f"harmonic={harmonic!r} and sketch_dim={sketch_dim!r} need the complex's "
                "HodgeDecomposition (leave them at 'auto' and None for the basis-free readout)"
            )
        energies = check_bool(energies, "energies")
        if harmonic_channels is not None:
            harmonic_channels = check_int(harmonic_channels, "harmonic_channels", 1)
        sketch_seed = check_int(sketch_seed, "sketch_seed", 0)
        self.harmonic_channels = harmonic_channels
        #: ``"exact"`` (canonical basis), ``"sketch"`` or ``"none"`` (no harmonic space, or
        #: the basis-free readout).
        self.harmonic = "none"
        self.sketch_seed = int(sketch_seed)
        self._beta = 0
        self.plan = None
        self.pool = pool
        self.energies = energies
        #: ``True`` for the readout across complexes (``hodge=None``): no harmonic
        #: coordinates, energies from the operators given at each call.
        self.basis_free = hodge is None
        if hodge is None:
            if not energies:
                raise ValueError(
                    "a HodgeReadout without a complex (hodge=None) keeps no harmonic "
                    "coordinates: set energies=True for the basis-free readout across "
                    "complexes, or use the SCNN's string readout"
                )
            self.rank = 1
            self.num_edges = None
            self.complex_fingerprint = None
            self._incidence_energies = False
            self.register_buffer("harmonic_basis", torch.zeros(0, 0))
            self.register_buffer("pivots", torch.zeros(0, dtype=torch.long))
            self.reset_parameters()
            return
        ops = hodge.complex
        self.rank = int(hodge.rank)
        #: :math:`N_k`, the simplices of the pooled rank (:math:`N_1`: edges).
        self.num_edges = int(hodge.num_simplices)
        if self.num_edges == 0:
            _, what, _ = simplex_words(self.rank)
            raise ValueError(
                f"the complex has no {what} (N{self.rank} = 0): a HodgeReadout of rank "
                f"{self.rank} has nothing to pool"
            )
        #: The :meth:`~topo_contrastive.ComplexOperators.fingerprint` of the complex it was
        #: built on: :class:`~topo_contrastive.nn.SCNN` refuses operators of another complex
        #: (same :math:`N_1`, other edges or triangles) when they carry their complex's.
        self.complex_fingerprint = ops.fingerprint()
        #: The :class:`~topo_contrastive.nn.harmonic_features.HarmonicPlan` chosen.
        self.plan = plan_harmonic_features(hodge, sketch_dim=sketch_dim, kind=harmonic)
        self.harmonic, self._beta = self.plan.kind, self.plan.beta
        if self.plan.kind == "sketch":
            basis = harmonic_sketch(hodge, self.plan.dim, self.sketch_seed)
            pivots = np.zeros(0, dtype=np.int64)
        else:
            basis, pivots = canonical_harmonic_basis(hodge)
        self.register_buffer("harmonic_basis", torch.from_numpy(basis).float())
        self.register_buffer("pivots", torch.from_numpy(pivots))
        self._register_energy_tables(ops, energies)
        if self.out_features(1) == 0:
            raise ValueError(
                "the readout would be empty: pool='none', no energies and no harmonic part "
                "(beta_1 = 0) on this complex"
            )
        self.reset_parameters()

    def _register_energy_tables(self, ops: ComplexOperators, energies: bool) -> None:
        """The incidence tables of the energies: rank 1 of a simplicial complex, the
        triangles' three edges in a dense table; other ranks and polygon 2-cells, ``B_k``
        and ``B_{k+1}^T`` as index/value pairs."""
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
            self.register_buffer(
                "triangle_edges",
                torch.from_numpy(b2.indices.reshape(-1, 3).astype(np.int64)),  # [N2, 3]
            )
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
        """Harmonic coordinates per kept channel: :math:`\\beta_1` with the exact basis,
        :math:`k` with a sketch."""
        return int(self.harmonic_basis.shape[1])

    def harmonic_line(self) -> str:
        """The harmonic features this readout keeps, in one line (e.g. ``harmonic features:
        exact basis (beta_1 = 12)``)."""
        if self.plan is None:
            return "harmonic features: none (the basis-free readout across complexes)"
        return self.plan.line()

    def out_features(self, channels: int) -> int:
        """Size ``D`` of :math:`\\mathbf{h}` for ``channels`` features per edge."""
        pooled = 0 if self.pool == "none" else 1
        channels = int(channels)
        dims = self.harmonic_dim * self._kept(channels)
        return (pooled + (2 if self.energies else 0)) * channels + dims

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
        """Pool per-edge features ``H`` into ``[B, out_features(C)]`` (see the class).

        Args:
            H: per-edge features ``[B, N1, C]``, ``[N1, C]`` or ``[B*N1, C]``; for the
                basis-free readout also ``[sum N1, C]`` of a batch of complexes.
            batch: the basis-free readout's batch vector ``[sum N1]`` of a batch of
                complexes (``None``: the layouts on one complex).
            laplacians: the basis-free readout's operators, a
                :class:`~topo_contrastive.complex.Laplacians` or a pair ``(L_down, L_up)``
                (required there; ignored otherwise).
            size: the number of samples of ``batch`` (default ``batch.max() + 1``).
            edge_perm: ``int64 [N1]``: ``H``'s edges are renumbered, its edge ``i`` being
                the complex's edge ``edge_perm[i]`` (the harmonic basis is gathered to
                match, so that ``H`` need not be permuted back); not with the energies
                (default ``None``: the complex's numbering).

        Raises:
            TypeError: ``H`` is not a floating tensor.
            ValueError: see the class; the basis-free readout without operators;
                ``edge_perm`` with ``energies=True``.
        """
        if not isinstance(H, Tensor) or not H.is_floating_point():
            raise TypeError(
                f"`H` must be a floating tensor, got {type(H).__name__}"
                + (f" of dtype {H.dtype}" if isinstance(H, Tensor) else "")
            )
        if self.basis_free:
            return self._basis_free(H, batch, laplacians, size)
        if edge_perm is not None and self.energies:
            raise ValueError("`edge_perm` is not supported with energies=True")
        n1, nk = self.num_edges, f"N{self.rank}"
        if H.dim() == 2:  # one sample [N1, C] or a PyG batch [B * N1, C]
            hint = " (a HodgeReadout built on another complex?)"
            H = rows_to_samples(H, n1, self.rank, "H", hint=hint)  # [B, N1, C]
        elif H.dim() != 3:
            raise ValueError(
                f"`H` must be [B, {nk}, C], [{nk}, C] or [B*{nk}, C], got {tuple(H.shape)}"
            )
        _, what, _ = simplex_words(self.rank)
        check_num_simplices(
            H, 1, n1, self.rank, "H", f"the readout was built on a complex with {nk} = {n1} {what}"
        )
        if self.check_finite:
            check_finite(H, "H")
        B, _, C = H.shape
        blocks = []
        if self.pool == "mean":
            blocks.append(H.mean(dim=1))
        elif self.pool == "sum":
            blocks.append(H.sum(dim=1))
        elif self.pool == "max":
            blocks.append(H.amax(dim=1) if B else H.new_zeros(0, C))
        if self.harmonic_dim:
            d = self.harmonic_dim
            u = self.harmonic_basis.to(H.dtype)
            if edge_perm is not None:  # H's edge i is the complex's edge edge_perm[i]
                u = u.index_select(0, edge_perm.to(u.device))
            c = self._kept(C)
            if c < C:
                # a reduced basis keeps few channels: one [beta, N1] @ [N1, B*c] GEMM; the
                # batched product of B thin [N1, c] blocks ran 9x slower (beta = 431, N1 =
                # 1,088, B = 200, c = 9). Full width keeps the batched product, whose
                # rounding the paper datasets' published numbers were computed with.
                Hc = H[..., :c].transpose(0, 1).reshape(n1, B * c)  # [N1, B*c]
                coords = (u.t() @ Hc).reshape(d, B, c).transpose(0, 1)  # [B, beta, c]
            else:
                coords = torch.matmul(u.t(), H)  # [B, beta, C]
            blocks.append(coords.reshape(B, d * c))  # [B, beta*c]
        if self.energies and self._incidence_energies:
            for side in ("lower", "upper"):  # B_k H and B_{k+1}^T H, [B, rows, C]
                row, col = getattr(self, f"{side}_index")
                val = getattr(self, f"{side}_value").to(H.dtype)[:, None]
                out = H.new_zeros(B, getattr(self, f"num_{side}"), C)
                out.index_add_(1, row, H[:, col] * val)
                blocks.append(out.pow(2).sum(1) / n1)
        elif self.energies:
            tail, head = self.edge_nodes
            div = H.new_zeros(B, self.num_nodes, C)
            div.index_add_(1, head, H).index_add_(1, tail, H, alpha=-1.0)  # B1 H, [B, N0, C]
            curl = (H[:, self.triangle_edges] * self.triangle_signs.to(H.dtype)[:, :, None]).sum(2)
            blocks += [div.pow(2).sum(1) / n1, curl.pow(2).sum(1) / n1]
        return torch.cat(blocks, dim=1) if blocks else H.new_zeros(B, 0)

    def _basis_free(
        self,
        H: Tensor,
        batch: Tensor | None,
        laplacians: Laplacians | None,
        size: int | None,
    ) -> Tensor:
        """``[pool ; h^T L_down h / N1 ; h^T L_up h / N1]`` per sample and channel."""
        from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool

        from topo_contrastive.nn._inputs import as_laplacians
        from topo_contrastive.nn._scnn_kernel import prepare_operator

        if laplacians is None:
            raise ValueError(
                "the basis-free HodgeReadout (hodge=None) computes its energies from the "
                "operators: call it with `laplacians` (the SCNN passes its own)"
            )
        L = as_laplacians(laplacians, (1, 1))
        n = L.num_cells
        # the CSR forms the layers prepared (kept on the Laplacians value)
        Ld, Lu = (prepare_operator(L, side, False).csr for side in ("down", "up"))
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
            blocks = []
            if self.pool == "mean":
                blocks.append(H.mean(dim=1))
            elif self.pool == "sum":
                blocks.append(H.sum(dim=1))
            elif self.pool == "max":
                blocks.append(H.amax(dim=1))
            for L in (Ld, Lu):
                LH = (L.to(H.dtype) @ flat).reshape(n, B, C).transpose(0, 1)  # [B, N1, C]
                blocks.append((H * LH).sum(dim=1) / n)
            return torch.cat(blocks, dim=1)
        if H.dim() != 2 or H.shape[0] != n:
            raise ValueError(
                f"`H` must be [sum N1, C] = [{n}, C] with `batch` for operators [{n}, {n}], got "
                f"{tuple(H.shape)}"
            )
        num = int(batch.max()) + 1 if size is None else int(size)
        counts = torch.bincount(batch, minlength=num).to(H.dtype).clamp_min(1)[:, None]
        blocks = []
        if self.pool != "none":
            pool = {"mean": global_mean_pool, "sum": global_add_pool, "max": global_max_pool}
            blocks.append(pool[self.pool](H, batch, size=num))
        for L in (Ld, Lu):
            e = H * (L.to(H.dtype) @ H)  # [sum N1, C]
            blocks.append(global_add_pool(e, batch, size=num) / counts)
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
