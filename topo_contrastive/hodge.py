r"""Hodge decomposition of edge flows (paper eq. 1).

.. math::
    \mathbb{R}^{N_1} = \operatorname{im}(\mathbf{B}_1^\top) \oplus
    \operatorname{im}(\mathbf{B}_2) \oplus \ker(\mathbf{L}_1), \qquad
    \mathbf{x} = \mathbf{x}_G + \mathbf{x}_C + \mathbf{x}_H

with orthogonal projectors :math:`\mathbf{P}_G = \mathbf{B}_1^\top \mathbf{L}_0^{+}\mathbf{B}_1`,
:math:`\mathbf{P}_C = \mathbf{B}_2 \mathbf{L}_2^{+} \mathbf{B}_2^\top` and
:math:`\mathbf{P}_H = \mathbf{I} - \mathbf{P}_G - \mathbf{P}_C`, and
:math:`\mathbf{P}_k = \mathbf{U}_k \mathbf{U}_k^\top` for the grouped eigenbasis
:math:`\mathbf{U} = [\mathbf{U}_G, \mathbf{U}_C, \mathbf{U}_H]` of :math:`\mathbf{L}_1`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as sla
import torch

from topo_contrastive.complex import SimplicialOperators

__all__ = ["COMPONENTS", "HodgeDecomposition", "HodgeParts"]

#: Names of the three Hodge components, in the order used everywhere in the library.
COMPONENTS = ("gradient", "curl", "harmonic")


class HodgeParts(NamedTuple):
    """Gradient, curl and harmonic parts of a batch of edge flows.

    Each field has the shape, dtype and device of the decomposed flows (``[N1]`` or
    ``[B, N1]``); the three fields sum to the input and are mutually orthogonal.
    """

    gradient: torch.Tensor
    curl: torch.Tensor
    harmonic: torch.Tensor


def _check_component(component: str) -> int:
    if component not in COMPONENTS:
        raise ValueError(f"`component` must be one of {COMPONENTS}, got {component!r}")
    return COMPONENTS.index(component)


class HodgeDecomposition:
    r"""Split edge flows into gradient, curl and harmonic parts.

    Source: paper eq. (1) and §2.2; Barbarossa & Sardellitti, "Topological signal
    processing over simplicial complexes", IEEE TSP 68, 2020.

    .. math::
        \mathbf{x}_G = \mathbf{B}_1^\top \boldsymbol{\phi},\;
        \mathbf{L}_0 \boldsymbol{\phi} = \mathbf{B}_1 \mathbf{x}; \qquad
        \mathbf{x}_C = \mathbf{B}_2 \boldsymbol{\psi},\;
        \mathbf{L}_2 \boldsymbol{\psi} = \mathbf{B}_2^\top \mathbf{x}; \qquad
        \mathbf{x}_H = \mathbf{x} - \mathbf{x}_G - \mathbf{x}_C

    Two backends behind one interface:

    * ``"exact"``: dense eigenbases :math:`\mathbf{U}_G, \mathbf{U}_C, \mathbf{U}_H`
      (eigenvectors of :math:`\mathbf{L}_\downarrow` and :math:`\mathbf{L}_\uparrow`
      with non-zero eigenvalue, and of :math:`\mathbf{L}_1` with zero eigenvalue).
      Memory :math:`O(N_1^2)`: for small complexes. Offers :meth:`coordinates`
      (:math:`\mathbf{U}_k^\top \mathbf{x}`) and :meth:`basis`.
    * ``"iterative"``: sparse solves with :math:`\mathbf{L}_0` (grounded at one node
      per connected component) and :math:`\mathbf{L}_2`, factorised once by sparse
      LU (scipy SuperLU, COLAMD ordering); a singular :math:`\mathbf{L}_2` (closed
      2-cycles) falls back to conjugate gradients. No dense :math:`N_1 \times N_1`
      matrix anywhere; the harmonic projector uses an orthonormal harmonic basis of
      :math:`\beta_1` vectors.

    All arithmetic is in float64; results are cast back to the input's dtype and
    device.

    Args:
        complex: the complex's operators.
        backend: ``"auto"`` (default: ``"exact"`` when ``N1 <= max_exact_edges``,
            else ``"iterative"``), ``"exact"`` or ``"iterative"``.
        max_exact_edges: size threshold of ``"auto"`` (default ``2000``).
        tol: relative eigenvalue threshold separating zero from non-zero
            eigenvalues in the exact backend, and CG tolerance (default ``1e-10``).

    Raises:
        TypeError: ``complex`` is not a :class:`~topo_contrastive.complex.SimplicialOperators`.
        ValueError: unknown ``backend`` or a non-positive ``max_exact_edges``/``tol``.

    Example:
        >>> ops = SimplicialOperators.from_simplices([[0, 1], [1, 2], [0, 2], [2, 3]])
        >>> hodge = HodgeDecomposition(ops)
        >>> hodge.dims
        {'gradient': 3, 'curl': 0, 'harmonic': 1}
        >>> cycle = torch.tensor([1.0, -1.0, 1.0, 0.0], dtype=torch.float64)  # 0 -> 1 -> 2 -> 0
        >>> parts = hodge(cycle)
        >>> torch.allclose(parts.harmonic, cycle), float(parts.gradient.abs().max()) < 1e-12
        (True, True)
    """

    def __init__(
        self,
        complex: SimplicialOperators,
        backend: str = "auto",
        max_exact_edges: int = 2000,
        tol: float = 1e-10,
    ):
        if not isinstance(complex, SimplicialOperators):
            raise TypeError(
                f"`complex` must be a SimplicialOperators, got {type(complex).__name__}"
            )
        if backend not in ("auto", "exact", "iterative"):
            raise ValueError(
                f"`backend` must be 'auto', 'exact' or 'iterative', got {backend!r}"
            )
        if int(max_exact_edges) <= 0:
            raise ValueError(f"`max_exact_edges` must be positive, got {max_exact_edges}")
        if not tol > 0:
            raise ValueError(f"`tol` must be positive, got {tol}")
        self.complex = complex
        self.tol = float(tol)
        if backend == "auto":
            backend = "exact" if complex.num_edges <= max_exact_edges else "iterative"
        self.backend = backend
        self._bases: list[np.ndarray] | None = None
        self._projectors: list[np.ndarray] | None = None
        self._lu0: Any = None
        self._ground: np.ndarray | None = None
        self._keep: np.ndarray | None = None
        self._lu2: Any = None
        self._l2_singular = False
        self._harmonic_basis: np.ndarray | None = None
        if backend == "exact":
            self._build_exact()
        else:
            self._build_iterative()

    # ------------------------------------------------------------------ set-up
    def _build_exact(self) -> None:
        ops = self.complex
        n1 = ops.num_edges
        bases = []
        for lap in (ops.L_down, ops.L_up):
            if lap.nnz == 0:
                bases.append(np.zeros((n1, 0)))
                continue
            evals, evecs = np.linalg.eigh(lap.toarray())
            thresh = self.tol * max(1.0, float(evals[-1])) * 1e3
            bases.append(evecs[:, evals > thresh])
        evals, evecs = np.linalg.eigh(ops.L1.toarray())
        thresh = self.tol * max(1.0, float(evals[-1])) * 1e3
        bases.append(evecs[:, evals <= thresh])
        self._bases = bases
        self._projectors = [u @ u.T for u in bases]
        total = sum(u.shape[1] for u in bases)
        if total != n1:  # pragma: no cover - numerical safety net
            raise RuntimeError(
                f"eigenbases have {total} columns for {n1} edges; increase or decrease `tol`"
            )

    def _build_iterative(self) -> None:
        ops = self.complex
        n0 = ops.num_nodes
        ncomp, labels = csgraph.connected_components(ops.L0, directed=False)
        # ground the first node of every connected component
        first = np.full(ncomp, -1, dtype=np.int64)
        order = np.arange(n0)[::-1]
        first[labels[order]] = order
        keep = np.ones(n0, dtype=bool)
        keep[first] = False
        self._ground = first
        self._keep = np.flatnonzero(keep)
        self._num_components = ncomp
        if self._keep.size:
            a = ops.L0[self._keep][:, self._keep].tocsc()
            self._lu0 = sla.splu(a, permc_spec="COLAMD")
        if ops.num_triangles:
            l2 = ops.L2.tocsc()
            try:
                lu2 = sla.splu(l2, permc_spec="COLAMD")
                diag = np.abs(lu2.U.diagonal())
                singular = diag.min() <= 1e-10 * diag.max()
            except RuntimeError:
                lu2, singular = None, True
            self._l2_singular = bool(singular)
            self._lu2 = None if singular else lu2
        self._build_harmonic_basis()

    def _solve_l0(self, rhs: np.ndarray) -> np.ndarray:
        """``phi`` with ``L0 phi = rhs`` for ``rhs [N0, k]`` summing to zero per component."""
        out = np.zeros_like(rhs)
        if self._lu0 is not None:
            out[self._keep] = self._lu0.solve(np.ascontiguousarray(rhs[self._keep]))
        return out

    def _solve_l2(self, rhs: np.ndarray) -> np.ndarray:
        """``psi`` with ``L2 psi = rhs`` for ``rhs [N2, k]`` in the range of ``L2``."""
        if self._lu2 is not None:
            return self._lu2.solve(np.ascontiguousarray(rhs))
        l2 = self.complex.L2
        out = np.zeros_like(rhs)
        for j in range(rhs.shape[1]):
            sol, info = sla.cg(l2, rhs[:, j], rtol=self.tol, maxiter=20 * l2.shape[0])
            if info != 0:
                raise RuntimeError(f"conjugate gradients on L2 did not converge (info={info})")
            out[:, j] = sol
        return out

    def _grad_curl_np(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and curl parts of ``x [N1, k]`` (float64) with the sparse solvers."""
        ops = self.complex
        grad = ops.B1.T @ self._solve_l0(ops.B1 @ x)
        if ops.num_triangles:
            curl = ops.B2 @ self._solve_l2(ops.B2.T @ x)
        else:
            curl = np.zeros_like(x)
        return grad, curl

    def _build_harmonic_basis(self) -> None:
        ops = self.complex
        n1 = ops.num_edges
        # beta_1 = beta_0 - chi + beta_2 (Euler characteristic); beta_2 = 0 unless L2 is singular
        beta2 = 0
        if self._l2_singular:
            beta2 = self._estimate_beta2()
        beta1 = self._num_components - (ops.num_nodes - n1 + ops.num_triangles) + beta2
        if beta1 <= 0:
            self._harmonic_basis = np.zeros((n1, 0))
            return
        rng = np.random.default_rng(0)
        probe = rng.standard_normal((n1, beta1 + 2))
        grad, curl = self._grad_curl_np(probe)
        h = probe - grad - curl
        u, s, _ = np.linalg.svd(h, full_matrices=False)
        rank = int((s > 1e-8 * s[0]).sum()) if s.size else 0
        basis = u[:, :rank]
        # one more pass of projection removes solver round-off from the basis
        g2, c2 = self._grad_curl_np(basis)
        basis, _ = np.linalg.qr(basis - g2 - c2)
        self._harmonic_basis = basis

    def _estimate_beta2(self) -> int:
        """``dim ker L2`` by a sparse eigen-solve (only for complexes with closed 2-cycles)."""
        l2 = self.complex.L2
        k = min(l2.shape[0] - 1, 32)
        vals = sla.eigsh(l2, k=k, sigma=-1e-3, which="LM", return_eigenvectors=False)
        return int((np.abs(vals) < 1e-8 * max(1.0, abs(vals).max())).sum())

    # ------------------------------------------------------------------ public API
    @property
    def dims(self) -> dict[str, int]:
        """Dimensions of the gradient, curl and harmonic subspaces.

        ``dims["harmonic"]`` is the first Betti number :math:`\\beta_1`.
        """
        if self._bases is not None:
            return {k: int(u.shape[1]) for k, u in zip(COMPONENTS, self._bases, strict=True)}
        ops = self.complex
        harmonic = int(self._harmonic_basis.shape[1])
        grad = ops.num_nodes - self._num_components
        return {"gradient": grad, "curl": ops.num_edges - grad - harmonic, "harmonic": harmonic}

    def _check_flows(self, x: Any, name: str = "x") -> tuple[torch.Tensor, bool]:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise TypeError(f"`{name}` must be a floating tensor (edge flows), got dtype {x.dtype}")
        if x.dim() not in (1, 2) or x.shape[-1] != self.complex.num_edges:
            raise ValueError(
                f"`{name}` must have shape [N1] or [B, N1] with N1 = {self.complex.num_edges}, "
                f"got {tuple(x.shape)}"
            )
        if not torch.isfinite(x).all():
            raise ValueError(f"`{name}` contains NaN or inf values")
        return x, x.dim() == 1

    def decompose(self, x: torch.Tensor) -> HodgeParts:
        """Gradient, curl and harmonic parts of edge flows.

        Args:
            x: floating edge flows ``[N1]`` or ``[B, N1]``.

        Returns:
            :class:`HodgeParts` with three tensors shaped, typed and placed like ``x``.

        Raises:
            TypeError: ``x`` is not a floating tensor.
            ValueError: wrong shape, or NaN/inf entries.
        """
        x, single = self._check_flows(x)
        xn = x.detach().reshape(-1, x.shape[-1]).cpu().double().numpy().T  # [N1, B]
        if self._projectors is not None:
            parts = [p @ xn for p in self._projectors]
        else:
            grad, curl = self._grad_curl_np(xn)
            # harmonic = remainder: the parts sum to x exactly; orthogonality holds to
            # the accuracy of the sparse direct solves (about 1e-12 relative)
            parts = [grad, curl, xn - grad - curl]
        out = [torch.from_numpy(np.ascontiguousarray(p.T)).to(x.device, x.dtype) for p in parts]
        if single:
            out = [o[0] for o in out]
        return HodgeParts(*out)

    __call__ = decompose

    def project(self, x: torch.Tensor, component: str) -> torch.Tensor:
        """Projection :math:`\\mathbf{P}_k \\mathbf{x}` onto one Hodge subspace.

        Args:
            x: floating edge flows ``[N1]`` or ``[B, N1]``.
            component: ``"gradient"``, ``"curl"`` or ``"harmonic"``.

        Returns:
            Tensor shaped, typed and placed like ``x``.

        Raises:
            ValueError: unknown ``component``, bad shape or non-finite ``x``.
        """
        idx = _check_component(component)
        return self.decompose(x)[idx]

    def basis(self, component: str) -> torch.Tensor:
        """Orthonormal basis :math:`\\mathbf{U}_k` ``float64 [N1, dim_k]`` (exact backend).

        The harmonic basis is also available in the iterative backend (it has
        :math:`\\beta_1` columns).

        Raises:
            ValueError: unknown ``component``; gradient/curl basis asked of the
                iterative backend.
        """
        idx = _check_component(component)
        if self._bases is not None:
            return torch.from_numpy(self._bases[idx].copy())
        if component == "harmonic":
            return torch.from_numpy(self._harmonic_basis.copy())
        raise ValueError(
            f"the {component} eigenbasis needs the 'exact' backend (this one is "
            f"{self.backend!r}); use project() or projector_block() instead"
        )

    def coordinates(self, x: torch.Tensor, component: str) -> torch.Tensor:
        """Spectral embedding :math:`\\tilde{\\mathbf{x}}_k = \\mathbf{U}_k^\\top \\mathbf{x}`.

        Args:
            x: floating edge flows ``[N1]`` or ``[B, N1]``.
            component: ``"gradient"``, ``"curl"`` or ``"harmonic"``.

        Returns:
            ``[dim_k]`` or ``[B, dim_k]`` on ``x``'s device and dtype.

        Raises:
            ValueError: as :meth:`basis`, or bad ``x``.
        """
        x, single = self._check_flows(x)
        u = self.basis(component).to(x.device, torch.float64)
        out = (x.detach().reshape(-1, x.shape[-1]).double() @ u).to(x.dtype)
        return out[0] if single else out

    def projector_blocks(
        self,
        supports: Sequence[torch.Tensor | np.ndarray | Sequence[int]],
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> dict[str, list[torch.Tensor]]:
        """Blocks :math:`\\mathbf{P}_k[S, S]` of the three projectors on edge sets ``S``.

        Needed by the closed-form mask objective (DESIGN §2.2). The exact backend
        slices its dense projectors; the iterative backend solves with
        :math:`\\mathbf{L}_0` on the node columns touched by ``S`` (one batched
        multi-right-hand-side solve for all sets), takes the harmonic block from the
        harmonic basis and the curl block as
        :math:`\\mathbf{I} - \\mathbf{P}_G - \\mathbf{P}_H` restricted to ``S``.

        Args:
            supports: one integer index set (edge columns) per sample; sets may
                differ in size and may be empty.
            dtype: output dtype (default ``torch.float64``).
            device: output device (default CPU).

        Returns:
            ``{"gradient": [...], "curl": [...], "harmonic": [...]}``, each a list of
            symmetric ``[|S_b|, |S_b|]`` tensors, in the order of ``supports``.

        Raises:
            ValueError: an index is out of ``[0, N1)`` or repeated within a set.
        """
        n1 = self.complex.num_edges
        sets = []
        for b, s in enumerate(supports):
            arr = np.asarray(
                s.detach().cpu().numpy() if isinstance(s, torch.Tensor) else s, dtype=np.int64
            ).ravel()
            if arr.size and (arr.min() < 0 or arr.max() >= n1):
                raise ValueError(f"`supports[{b}]` has edge indices outside [0, {n1})")
            if np.unique(arr).size != arr.size:
                raise ValueError(f"`supports[{b}]` repeats an edge index")
            sets.append(arr)
        blocks: dict[str, list[np.ndarray]] = {k: [] for k in COMPONENTS}
        if self._projectors is not None:
            for s in sets:
                for k, p in zip(COMPONENTS, self._projectors, strict=True):
                    blocks[k].append(p[np.ix_(s, s)])
        else:
            ops = self.complex
            allcols = np.concatenate(sets) if sets else np.zeros(0, dtype=np.int64)
            uniq, inv = np.unique(allcols, return_inverse=True)
            # P_G e_j = B1^T L0^+ B1 e_j, restricted to rows in the union of the sets
            rhs = ops.B1[:, uniq].toarray() if uniq.size else np.zeros((ops.num_nodes, 0))
            phi = self._solve_l0(rhs)  # [N0, U]
            pg_cols = ops.B1[:, uniq].T @ phi  # [U, U] = P_G[uniq, uniq]
            hb = self._harmonic_basis[uniq]  # [U, beta1]
            ph = hb @ hb.T
            start = 0
            for s in sets:
                loc = inv[start : start + s.size]
                start += s.size
                g = pg_cols[np.ix_(loc, loc)]
                g = 0.5 * (g + g.T)
                h = ph[np.ix_(loc, loc)]
                blocks["gradient"].append(g)
                blocks["harmonic"].append(h)
                blocks["curl"].append(np.eye(s.size) - g - h)
        return {
            k: [torch.from_numpy(np.ascontiguousarray(b)).to(device=device, dtype=dtype) for b in v]
            for k, v in blocks.items()
        }

    def projector_block(
        self,
        support: torch.Tensor | np.ndarray | Sequence[int],
        component: str,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Block :math:`\\mathbf{P}_k[S, S]` ``[|S|, |S|]`` of one projector on one edge set.

        See :meth:`projector_blocks` (the batched form) for the method and errors.
        """
        idx = _check_component(component)
        return self.projector_blocks([support], dtype=dtype, device=device)[COMPONENTS[idx]][0]

    def __repr__(self) -> str:
        d = self.dims
        return (
            f"{type(self).__name__}(backend={self.backend!r}, num_edges={self.complex.num_edges}, "
            f"gradient={d['gradient']}, curl={d['curl']}, harmonic={d['harmonic']})"
        )
