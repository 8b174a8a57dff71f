"""The SCNN encoder :math:`f` of the paper (§2.3, eq. 4; §5 for its configuration)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import reverse_cuthill_mckee
from torch import Tensor
from torch_geometric.nn.resolver import activation_resolver

from topo_contrastive._utils.checks import check_bool, check_finite, check_int
from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn import _scnn_kernel as kernel
from topo_contrastive.nn._inputs import (
    POOLS,
    as_laplacians,
    complexes_batch,
    edge_samples,
    operator_info,
)
from topo_contrastive.nn.hodge_readout import HodgeReadout
from topo_contrastive.nn.scnn_conv import SCNNConv

#: The values of ``act`` (PyG's ``activation_resolver``; ``"identity"`` is ``Identity``).
_ACTIVATIONS = ("tanh", "relu", "leaky_relu", "elu", "gelu", "sigmoid", "identity")


class SCNN(torch.nn.Module):
    r"""Simplicial convolutional encoder: :class:`SCNNConv` layers with a pointwise
    non-linearity after each, and a readout over the edges (paper eq. 4 and §5: tanh,
    width 64, 1-3 layers, :math:`K_\downarrow = K_\uparrow \in \{1, 2, 3\}`, mean pooling;
    ``SCL_low`` is ``K_up=0``).

    .. math::
        \mathbf{X}_t = \sigma\big(\mathrm{SCNNConv}_t(\mathbf{X}_{t-1};
        \mathbf{L}_\downarrow, \mathbf{L}_\uparrow)\big), \quad t = 1..T,
        \qquad
        \mathbf{h} = \mathrm{readout}_{e}\, (\mathbf{X}_T)_{e,:}
        \;\text{ or, with } \texttt{input\_skip}, \;
        \mathrm{readout}_{e}\, [\mathbf{X}_0 \,\|\, \mathbf{X}_T]_{e,:}

    **torch.compile**: forward and backward compile without a graph break
    (``fullgraph=True``) with a string or a :class:`HodgeReadout` tied to the complex,
    once the ``Laplacians`` value has been prepared by one eager call.

    Args:
        in_channels (int, optional): features per edge of the input. (default: ``1``)
        hidden_channels (int, optional): width of every layer and of the embedding.
            (default: ``64``)
        num_layers (int, optional): the layers :math:`T \ge 1`. (default: ``2``)
        K_down (int, optional): lower-Laplacian order of every layer. (default: ``2``)
        K_up (int, optional): upper-Laplacian order of every layer. (default: ``2``)
        act (str, optional): ``"tanh"``, ``"relu"``, ``"leaky_relu"``, ``"elu"``,
            ``"gelu"``, ``"sigmoid"`` or ``"identity"``. (default: ``"tanh"``)
        readout (str or torch.nn.Module, optional): ``"mean"``, ``"sum"``, ``"max"``, or
            a module mapping ``[B, N1, C]`` to ``[B, D]`` such as :class:`HodgeReadout`
            (its ``out_features(C)`` gives :attr:`out_channels`). (default: ``"mean"``)
        normalize (bool, optional): see :class:`SCNNConv`. (default: ``False``)
        bias (bool, optional): a learnable bias in every layer. (default: ``True``)
        input_skip (bool, optional): pool the input features concatenated before the
            last layer's, ``[B, N1, C_in + hidden]`` (docs/design.md §7.3).
            (default: ``False``)

    Shapes:
        - **input:** ``x`` in the layouts of :class:`SCNNConv` (a batch of complexes
          requires ``batch``); ``[N1]`` / ``[B*N1]`` where ``in_channels == 1``.
        - **output:** :math:`[B, D]`, ``D =`` :attr:`out_channels` (one sample:
          :math:`[1, D]`), on the device and dtype of ``x``.

    Raises:
        TypeError: (``__init__``) a non-integer size or order, a non-string ``act``, a
            ``readout`` that is neither a string nor a module, a non-bool flag.
        ValueError: (``__init__``) an unknown ``act`` or ``readout``, sizes below 1,
            negative orders; (``forward``) as :meth:`SCNNConv.forward`; NaN or inf in ``x``
            (naming the samples); a batch of complexes without ``batch``; a readout built
            on another complex.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> encoder = SCNN(in_channels=1, hidden_channels=64, num_layers=2)
        >>> encoder(torch.randn(100, 3, 1), ops.laplacians()).shape
        torch.Size([100, 64])
    """

    #: The checks that read the input's values: NaN/inf in ``x`` (a ``ValueError`` naming
    #: the samples) and the batch vector's numbering; skipped while ``torch.compile``
    #: traces; set ``False`` on an instance to skip them.
    check_finite: bool = True
    #: While autograd records, run the first two layers as one kernel node that keeps the
    #: input and the second layer's output and recomputes the first layer's output in the
    #: backward pass (one activation less, the same values and gradients bit for bit, a
    #: few percent more time). ``pretrain`` sets it under gradient caching.
    recompute_first_layer: bool = False

    def __init__(
        self,
        in_channels: int = 1,
        hidden_channels: int = 64,
        num_layers: int = 2,
        K_down: int = 2,
        K_up: int = 2,
        act: str = "tanh",
        readout: str = "mean",
        normalize: bool = False,
        bias: bool = True,
        input_skip: bool = False,
    ) -> None:
        super().__init__()
        self.input_skip = check_bool(input_skip, "input_skip")
        self.num_layers = int(check_int(num_layers, "num_layers", 1))
        if not isinstance(act, str):
            raise TypeError(f"`act` must be a str, got {type(act).__name__} {act!r}")
        if act not in _ACTIVATIONS:
            raise ValueError(f"`act` must be one of {_ACTIVATIONS}, got {act!r}")
        if isinstance(readout, str) and readout not in POOLS:
            raise ValueError(f"`readout` must be one of {tuple(POOLS)}, got {readout!r}")
        if not isinstance(readout, (str, torch.nn.Module)):
            raise TypeError(
                "`readout` must be a str or a torch.nn.Module mapping [B, N1, C] to [B, D], got "
                f"{type(readout).__name__}"
            )
        self.act, self.readout, self.normalize = act, readout, normalize
        # the kernel applies the fused activations itself
        self.activation = torch.nn.Identity() if act == "identity" else activation_resolver(act)
        self.convs = torch.nn.ModuleList(
            SCNNConv(in_channels if i == 0 else hidden_channels, hidden_channels, K_down, K_up,
                     bias=bias, normalize=normalize)
            for i in range(self.num_layers)
        )  # fmt: skip
        first = self.convs[0]
        self.in_channels, self.hidden_channels = first.in_channels, first.out_channels
        self.K_down, self.K_up = first.K_down, first.K_up
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise every layer (and a module readout that has parameters)."""
        for conv in self.convs:
            conv.reset_parameters()
        if isinstance(self.readout, torch.nn.Module) and hasattr(self.readout, "reset_parameters"):
            self.readout.reset_parameters()

    @property
    def readout_name(self) -> str:
        """``"mean"``, ``"sum"``, ``"max"`` or the class name of a module readout."""
        return self.readout if isinstance(self.readout, str) else type(self.readout).__name__

    @property
    def out_channels(self) -> int:
        """Size ``D`` of the embedding :math:`\\mathbf{h}`."""
        pooled = self.hidden_channels + (self.in_channels if self.input_skip else 0)
        if isinstance(self.readout, torch.nn.Module) and hasattr(self.readout, "out_features"):
            return int(self.readout.out_features(pooled))
        return pooled

    def edge_embeddings(
        self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None
    ) -> Tensor:
        """The per-edge features :math:`\\mathbf{X}_T` before the readout: ``[B, N1, hidden]``
        on one complex (one sample: ``B = 1``), ``[sum N1, hidden]`` on a batch of
        complexes. Arguments and errors as :meth:`forward`."""
        x, L = self._add_channel_dim(x), as_laplacians(laplacians, (self.K_down, self.K_up))
        if complexes_batch(x, L, batch, self.check_finite) is not None:
            return self._complex_rows(x, L)[1]
        _, h, order = self._layers(x, L, batch)
        return h if order is None else permute_edges(h, order, back=True)

    def forward(self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None) -> Tensor:
        """The embedding ``[B, out_channels]`` of ``x`` (``batch``: the sample of each row
        of a 2-D or 1-D ``x``, e.g. ``data.batch_1``, or ``None``)."""
        x, L = self._add_channel_dim(x), as_laplacians(laplacians, (self.K_down, self.K_up))
        num = complexes_batch(x, L, batch, self.check_finite)
        if num is not None:
            return self._forward_complexes(x, L, batch, num)
        x3, h, order = self._layers(x, L, batch)
        module = not isinstance(self.readout, str)  # pooling ignores the layers' edge order
        renumbered = order is not None and module and self._readout_renumbered()
        if order is not None and module and not renumbered:
            x3, h = permute_edges(x3, order, back=True), permute_edges(h, order, back=True)
        if self.input_skip:  # the input first: [B, N1, C_in + hidden]
            h = torch.cat([x3.to(h.dtype), h], dim=-1)
        if not module:
            return {"mean": h.mean, "sum": h.sum, "max": h.amax}[self.readout](dim=1)
        if getattr(self.readout, "basis_free", False):
            return self.readout(h, laplacians=L)  # [B, D]
        self._check_readout_complex(L)
        return self.readout(h, edge_perm=order.perm) if renumbered else self.readout(h)

    def _checked(self, x: Tensor, L: Laplacians | None, batch: Tensor | None) -> Tensor:
        """``x`` as ``[B, N1, C_in]``, its values checked with :attr:`check_finite`."""
        x3 = edge_samples(x, L, batch, self.in_channels, self.check_finite)
        if self.check_finite and not torch.compiler.is_compiling():
            check_finite(x3, "x")
        return x3

    def _layers(self, x: Tensor, L: Laplacians | None, batch: Tensor | None) -> tuple:
        """``(input, X_T, order)``: the input and :math:`\\mathbf{X}_T` in the edge order the
        layers ran in (on large complexes on the CPU a cache-friendly one), and that order."""
        x3 = self._checked(x, L, batch)
        order = None if L is None else locality_order(L)
        if order is not None:
            x3, L = permute_edges(x3, order), order.laplacians
        return x3, self._stack(x3, L), order

    def _complex_rows(self, x: Tensor, L: Laplacians) -> tuple[Tensor, Tensor]:
        """The input ``[sum N1, C_in]`` and :math:`\\mathbf{X}_T` of a batch of complexes:
        the layers on the one block-diagonal complex."""
        x3 = self._checked(x, L, None)  # [1, sum N1, C_in]
        return x3[0], self._stack(x3, L)[0]

    def _stack(self, h: Tensor, L: Laplacians | None) -> Tensor:
        """The layers on ``[B, N1, C_in]``: :math:`\\mathbf{X}_T` ``[B, N1, hidden]``."""
        fused = self.act in kernel.FUSED_ACTIVATIONS
        convs = list(self.convs)
        paired = fused and self.recompute_first_layer and self._pair_first(convs)
        groups = [convs[:2]] * paired + [[conv] for conv in convs[2 * paired :]]
        for group in groups:  # a pair: the first layer's output recomputed when backward
            params = [(conv.weight, conv.bias) for conv in group]
            act = self.act if fused else "identity"
            h = kernel.scnn_layers(h, params, group[0]._operators(L), act)
            h = h if fused else self.activation(h)
        return h

    @staticmethod
    def _pair_first(convs: list) -> bool:
        """Whether the first two layers run as one node: while autograd records, where the
        first widens its input and both act with the same operators."""
        if len(convs) < 2 or not torch.is_grad_enabled():
            return False
        a, b = convs[0], convs[1]
        same = (a.K_down, a.K_up, a.normalize) == (b.K_down, b.K_up, b.normalize)
        return same and a.in_channels < a.out_channels and any(
            p.requires_grad for p in (*a.parameters(), *b.parameters())
        )

    def _readout_renumbered(self) -> bool:
        """Whether the readout takes features in the layers' edge order (a
        :class:`HodgeReadout` on one complex, without energies)."""
        ro = self.readout
        return isinstance(ro, HodgeReadout) and not ro.basis_free and not ro.energies

    def _forward_complexes(self, x: Tensor, L: Laplacians, batch: Tensor, num: int) -> Tensor:
        """The embeddings ``[B, D]`` of a batch of complexes, pooled by ``batch``."""
        x_rows, h = self._complex_rows(x, L)  # [sum N1, C_in], [sum N1, hidden]
        if self.input_skip:
            h = torch.cat([x_rows.to(h.dtype), h], dim=-1)
        if isinstance(self.readout, str):
            return POOLS[self.readout](h, batch, size=num)  # [B, hidden]
        if getattr(self.readout, "basis_free", False):
            return self.readout(h, batch=batch, laplacians=L, size=num)
        raise ValueError(
            f"the encoder's {type(self.readout).__name__} is tied to one complex and cannot "
            "pool a batch of different complexes; use a basis-free readout (e.g. "
            "HodgeReadout(None, energies=True)) or a string readout"
        )

    def _check_readout_complex(self, L: Laplacians | None) -> None:
        """Refuse operators of another complex than the readout's (where both are known)."""
        own = getattr(self.readout, "complex_fingerprint", None)
        origin = None if L is None else L.fingerprint
        if own is not None and origin is not None and origin != own:
            raise ValueError(
                f"the operators come from the complex with fingerprint {origin}, but the "
                f"encoder's {type(self.readout).__name__} was built on the complex with "
                f"fingerprint {own} (same N1 = {operator_info(L)[0]} edges, other edges or "
                "triangles): build the readout on the complex of the data"
            )

    def _add_channel_dim(self, x: Tensor) -> Tensor:
        if isinstance(x, Tensor) and x.dim() == 1:
            if self.in_channels != 1:
                raise ValueError(
                    f"`x` is 1-D (shape {tuple(x.shape)}), which is only allowed for "
                    f"in_channels=1, but the encoder has in_channels={self.in_channels}"
                )
            return x.unsqueeze(-1)
        return x

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.in_channels}, {self.hidden_channels}, "
            f"num_layers={self.num_layers}, K_down={self.K_down}, K_up={self.K_up}, "
            f"act={self.act!r}, readout={self.readout!r}, normalize={self.normalize}, "
            f"bias={self.convs[0].bias is not None}"
            + (", input_skip=True)" if self.input_skip else ")")
        )


# ---------------------------------------------------------------------- edge order
class Order:
    """A renumbering of the edges (new edge ``i`` is old edge ``perm[i]``; ``inverse`` the
    other way) and the operators :math:`\\mathbf{P}\\mathbf{L}\\mathbf{P}^\\top` in it."""

    __slots__ = ("inverse", "laplacians", "perm")

    def __init__(self, perm: Tensor, laplacians: Laplacians) -> None:
        self.perm = perm
        self.inverse = torch.empty_like(perm)
        self.inverse[perm] = torch.arange(perm.numel(), device=perm.device)
        down, up = (None if L is None else _permute_operator(L, self.inverse) for L in laplacians)
        self.laplacians = Laplacians(down, up, rank=laplacians.rank, symmetric=laplacians.symmetric)


def _gather_rows(x: Tensor, index: Tensor) -> Tensor:
    """``x[:, index]`` for ``x`` ``[B, N1, C]``, as one row gather of the ``[B*N1, C]`` view
    (several times faster on the CPU than ``index_select`` along dimension 1)."""
    B, n1, C = x.shape
    rows = (torch.arange(B, device=x.device) * n1).unsqueeze(1) + index.to(x.device)
    return x.contiguous().view(B * n1, C).index_select(0, rows.view(-1)).view(B, n1, C)


class _Permute(torch.autograd.Function):
    """``x[:, perm]``; its adjoint is the gather by the inverse permutation (no scatter)."""

    @staticmethod
    def forward(ctx, x: Tensor, perm: Tensor, inverse: Tensor) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(inverse)
        return _gather_rows(x, perm)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        return _gather_rows(grad, ctx.saved_tensors[0]), None, None


def permute_edges(x: Tensor, order: Order, back: bool = False) -> Tensor:
    """Edge features ``[B, N1, C]`` in the numbering of ``order`` (``back``: from it to the
    complex's), differentiable."""
    if back:
        return _Permute.apply(x, order.inverse, order.perm)
    return _Permute.apply(x, order.perm, order.inverse)


def _permute_operator(L: Tensor, inverse: Tensor) -> Tensor:
    coo = L.detach().to_sparse_coo().coalesce()
    return torch.sparse_coo_tensor(
        inverse.to(coo.device)[coo.indices()], coo.values(), coo.shape, is_coalesced=False,
        check_invariants=False,
    ).coalesce()  # fmt: skip


def locality_order(L: Laplacians) -> Order | None:
    """The edge order the layers run in on complexes of at least ``MIN_EDGES`` edges on the
    CPU (``None`` elsewhere): the reverse Cuthill-McKee order of the pattern of
    ``L_down + L_up``, which keeps neighbours close in memory (docs/design.md §7.4);
    computed once per value."""
    n, _, device = operator_info(L)[:3]
    if n < kernel.MIN_EDGES or device.type != "cpu":
        return None
    cache = kernel.kept_cache(L, "locality_order")
    if "locality_order" not in cache:
        cache["locality_order"] = _order(L)
    return cache["locality_order"]


def _order(laplacians: Laplacians) -> Order | None:
    coos = [L.detach().to_sparse_coo().coalesce() for L in laplacians if L is not None]
    if not all(bool(torch.isfinite(coo.values()).all()) for coo in coos):
        return None  # the plain path refuses the operator, with positions in its own numbering
    ones = [
        sp.csr_matrix((np.ones(coo.values().numel(), np.int8), tuple(coo.indices().cpu().numpy())),
                      shape=tuple(coo.shape))
        for coo in coos
    ]  # fmt: skip
    pattern = sum(ones[1:], ones[0])
    pattern = (pattern + pattern.T).tocsr()
    perm = np.ascontiguousarray(reverse_cuthill_mckee(pattern, symmetric_mode=True))
    return Order(torch.from_numpy(perm.astype(np.int64)), laplacians)
