"""The SCNN encoder :math:`f` of the paper (§2.3, eq. 4; §5 for its configuration)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn.resolver import activation_resolver

from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn._inputs import as_laplacians, check_blocks_batch, edge_samples
from topo_contrastive.nn._locality import Order, locality_order, permute_edges
from topo_contrastive.nn._scnn_kernel import FUSED_ACTIVATIONS, scnn_pair
from topo_contrastive.nn.hodge_readout import HodgeReadout
from topo_contrastive.nn.projection_head import ProjectionHead
from topo_contrastive.nn.scnn_conv import SCNNConv
from topo_contrastive.utils.checks import check_bool, check_finite, check_int

__all__ = ["SCNN", "ProjectionHead"]

#: The values of ``act``; PyG's ``activation_resolver`` builds each (``"identity"``,
#: outside ``torch.nn``'s activations, is ``torch.nn.Identity``).
_ACTIVATIONS = ("tanh", "relu", "leaky_relu", "elu", "gelu", "sigmoid", "identity")
_READOUTS = ("mean", "sum", "max")


class SCNN(torch.nn.Module):
    r"""Simplicial convolutional encoder: a stack of :class:`SCNNConv` layers with a
    pointwise non-linearity after each, and a readout over the edges.

    .. math::
        \mathbf{X}_t = \sigma\big(\mathrm{SCNNConv}_t(\mathbf{X}_{t-1};
        \mathbf{L}_\downarrow, \mathbf{L}_\uparrow)\big), \quad t = 1..T,
        \qquad
        \mathbf{h} = \mathrm{readout}_{e \in \mathcal{E}}\, (\mathbf{X}_T)_{e,:}
        \quad\text{or, with } \texttt{input\_skip}, \quad
        \mathbf{h} = \mathrm{readout}_{e \in \mathcal{E}}\,
        [\mathbf{X}_0 \,\|\, \mathbf{X}_T]_{e,:}

    Paper eq. (4) (the encoder :math:`f_\mathcal{H}`) and §5: tanh, hidden width 64,
    1-3 layers, orders :math:`K_\downarrow = K_\uparrow \in \{1, 2, 3\}`, mean pooling
    over edges. The ``SCL_low`` ablation is ``K_up=0``.

    Args:
        in_channels (int): features per edge of the input (default ``1``: a scalar
            edge flow).
        hidden_channels (int): width of every layer and size of the embedding
            :math:`\mathbf{h}` (default ``64``).
        num_layers (int): number of :class:`SCNNConv` layers :math:`T \ge 1`
            (default ``2``).
        K_down (int): lower-Laplacian order of every layer (default ``2``).
        K_up (int): upper-Laplacian order of every layer (default ``2``; ``0`` for
            ``SCL_low``).
        act (str): pointwise non-linearity after every layer, one of ``"tanh"``
            (default), ``"relu"``, ``"leaky_relu"``, ``"elu"``, ``"gelu"``,
            ``"sigmoid"``, ``"identity"``.
        readout (str or torch.nn.Module): pooling over the edges of each sample:
            ``"mean"`` (default), ``"sum"`` or ``"max"``; or a module mapping the
            per-edge features ``[B, N1, hidden]`` to ``[B, D]``, e.g.
            :class:`~topo_contrastive.nn.HodgeReadout` (it is registered as the
            submodule ``readout``; when it has an ``out_features(channels)`` method,
            :attr:`out_channels` is ``D``).
        normalize (bool): scale the Laplacians by their largest eigenvalue (see
            :class:`SCNNConv`; default ``False``).
        bias (bool): learnable bias in every layer (default ``True``).
        input_skip (bool): the readout pools the input features :math:`\mathbf{X}_0`
            concatenated before the last layer's, ``[B, N1, C_in + hidden]`` (beyond the
            paper, docs/design.md §7.3; default ``False``).

    Shapes:
        - **input:** ``x`` :math:`[N_1, C_{in}]`, :math:`[B, N_1, C_{in}]` or a PyG batch
          :math:`[B \cdot N_1, C_{in}]` with ``batch`` :math:`[B \cdot N_1]`
          (``data.x_1``, ``data.batch_1``); ``laplacians`` a
          :class:`~topo_contrastive.complex.Laplacians` of :math:`[N_1, N_1]` operators
          (``complex.laplacians()``). Many complexes: ``x``
          :math:`[\sum_b N_{1,b}, C_{in}]`, their ``data.laplacians()`` (block-diagonal,
          with the samples' blocks) and ``batch`` (required). With ``in_channels == 1`` the
          channel dimension may be left out.
        - **output:** :math:`[B, D]`, ``D =`` :attr:`out_channels`; a single sample gives
          :math:`[1, D]`. Device and dtype of ``x``.

    Raises:
        TypeError: (``__init__``) a non-integer size/order, a non-string ``act``, a
            ``readout`` that is neither a string nor a module, a non-bool flag.
        ValueError: (``__init__``) an unknown ``act`` or ``readout``, sizes below 1,
            negative orders; (``forward``) see :meth:`SCNNConv.forward`; NaN or inf in ``x``
            (naming the samples; skipped with ``check_finite = False``); any input on
            the operators of a multi-sample batch without ``batch`` (a 2-D ``[sum N1, C]``
            or a 3-D ``[1, sum N1, C]``): never one pooled embedding of several samples.

    Example:
        >>> ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        >>> encoder = SCNN(in_channels=1, hidden_channels=64, num_layers=2)
        >>> encoder(torch.randn(100, 3, 1), ops.laplacians()).shape
        torch.Size([100, 64])
    """

    #: Refuse NaN/inf in the input features (a ``ValueError`` naming the samples); set
    #: ``False`` on an instance to skip the check.
    check_finite: bool = True
    #: While autograd records, run the first two layers as one kernel node that keeps the
    #: input and the second layer's output and recomputes the first layer's output in the
    #: backward pass, where the first layer widens its input: one activation less per
    #: sample, the same values and gradients bit for bit, for a few percent more time (the
    #: first layer's forward pass twice). Off by default; ``pretrain`` sets it on an
    #: instance while it trains with gradient caching, whose memory plan counts on it.
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
        num_layers = check_int(num_layers, "num_layers", 1)
        if not isinstance(act, str):
            raise TypeError(f"`act` must be a str, got {type(act).__name__} {act!r}")
        if act not in _ACTIVATIONS:
            raise ValueError(f"`act` must be one of {_ACTIVATIONS}, got {act!r}")
        if isinstance(readout, str):
            if readout not in _READOUTS:
                raise ValueError(f"`readout` must be one of {_READOUTS}, got {readout!r}")
        elif not isinstance(readout, torch.nn.Module):
            raise TypeError(
                "`readout` must be a str or a torch.nn.Module mapping [B, N1, C] to [B, D], got "
                f"{type(readout).__name__}"
            )
        self.act = act
        self.activation = (
            torch.nn.Identity() if act == "identity" else activation_resolver(act)
        )  # unfused activations only; the kernel applies the fused ones itself
        self.readout = readout
        self.num_layers = int(num_layers)
        self.convs = torch.nn.ModuleList(
            SCNNConv(
                in_channels if i == 0 else hidden_channels,
                hidden_channels,
                K_down=K_down,
                K_up=K_up,
                bias=bias,
                normalize=normalize,
            )
            for i in range(self.num_layers)
        )
        self.in_channels = self.convs[0].in_channels
        self.hidden_channels = self.convs[0].out_channels
        self.K_down = self.convs[0].K_down
        self.K_up = self.convs[0].K_up
        self.normalize = normalize
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
        """Per-edge features :math:`\\mathbf{X}_T` before the readout.

        Args: as :meth:`forward`.

        Returns:
            ``[B, N1, hidden_channels]`` for the layouts on one complex (a single sample
            gives ``B = 1``; a PyG batch ``[B*N1, C]`` gives ``[B, N1, hidden]``);
            ``[sum N1, hidden_channels]`` for a batch of different complexes.

        Raises:
            TypeError, ValueError: see :meth:`SCNNConv.forward`.
        """
        x = self._add_channel_dim(x)
        L = as_laplacians(laplacians, (self.K_down, self.K_up))
        if self._blocks(x, L, batch) is not None:
            return self._complex_rows(x, L)[1]
        x3, h, order = self._layers(x, L, batch)
        return h if order is None else permute_edges(h, order, back=True)

    def _blocks(self, x: Tensor, L: Laplacians | None, batch: Tensor | None) -> int | None:
        """The number of samples where ``x`` ``[sum N1, C]`` is a batch of complexes (the
        operators' blocks, pooled by ``batch``), else ``None``.

        Raises:
            ValueError: such a batch of several samples without ``batch``, or a ``batch``
                that does not fit the blocks.
        """
        if L is None or L.ptr is None or x.dim() != 2 or int(x.shape[0]) != L.num_cells:
            return None
        if batch is None and L.num_blocks == 1:
            return None  # one sample: the layouts on one complex
        return check_blocks_batch(batch, L, self.check_finite)

    def _complex_rows(self, x: Tensor, L: Laplacians) -> tuple[Tensor, Tensor]:
        """The input ``[sum N1, C_in]`` and :math:`\\mathbf{X}_T` ``[sum N1, hidden]`` of a
        batch of complexes: the layers on the one block-diagonal complex."""
        x3 = edge_samples(x, L, None, self.in_channels)  # [1, sum N1, C_in]
        return x3[0], self._stack(x3, L)[0]

    def _layers(
        self, x: Tensor, L: Laplacians | None, batch: Tensor | None
    ) -> tuple[Tensor, Tensor, Order | None]:
        """The validated input and :math:`\\mathbf{X}_T`, both in the edge order the layers
        ran in, and that order (``None``: the complex's own; on large complexes on the CPU the
        layers run in a cache-friendly order, see ``nn/_locality.py``)."""
        x3 = edge_samples(x, L, batch, self.in_channels, self.check_finite)  # [B, N1, C_in]
        if self.check_finite and not torch.compiler.is_compiling():
            check_finite(x3, "x")
        order = None if L is None else locality_order(L)
        if order is not None:
            x3 = permute_edges(x3, order)  # [B, N1, C_in], new numbering
            L = order.laplacians
        return x3, self._stack(x3, L), order

    def _stack(self, h: Tensor, L: Laplacians | None) -> Tensor:
        """The layers on a validated ``[B, N1, C_in]``: :math:`\\mathbf{X}_T`
        ``[B, N1, hidden]``."""
        fused = self.act in FUSED_ACTIVATIONS
        convs = list(self.convs)
        if fused and self.recompute_first_layer and self._pair_first(convs):
            # the first two layers as one kernel node that recomputes the narrow first
            # layer's output in the backward pass instead of keeping it (the same values)
            one, two = convs[0], convs[1]
            h = scnn_pair(
                h, (one.weight, one.bias), (two.weight, two.bias), one._operators(L), self.act
            )
            convs = convs[2:]
        for conv in convs:
            if fused:  # the activation runs inside the layer's kernel
                h = conv._propagate(h, L, act=self.act)  # [B, N1, hidden]
            else:
                h = self.activation(conv._propagate(h, L))
        return h

    @staticmethod
    def _pair_first(convs: list) -> bool:
        """Whether the first two layers run as one kernel node: while autograd records,
        when the first layer widens its input (its output is cheap to recompute) and both
        layers act with the same operators."""
        if len(convs) < 2 or not torch.is_grad_enabled():
            return False
        a, b = convs[0], convs[1]
        same = (a.K_down, a.K_up, a.normalize) == (b.K_down, b.K_up, b.normalize)
        return same and a.in_channels < a.out_channels and any(
            p.requires_grad for p in (*a.parameters(), *b.parameters())
        )

    def forward(self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None) -> Tensor:
        """Return the embedding :math:`\\mathbf{h}` ``[B, out_channels]``.

        Args:
            x: edge features ``[N1, C_in]``, ``[B, N1, C_in]``, ``[B*N1, C_in]`` with
                ``batch``, or ``[sum N1, C_in]`` of a batch of complexes with ``batch``;
                ``[N1]`` / ``[B*N1]`` when ``in_channels == 1``.
            laplacians: a :class:`~topo_contrastive.complex.Laplacians` (prepared once per
                value) or a pair ``(L_down, L_up)`` of sparse tensors; a side whose order is
                0 may be ``None``.
            batch: the sample of each row of a 2-D (or 1-D) ``x`` (``data.batch_1``), or
                ``None`` (default).

        Raises:
            TypeError, ValueError: see :meth:`SCNNConv.forward`.
        """
        x = self._add_channel_dim(x)
        L = as_laplacians(laplacians, (self.K_down, self.K_up))
        num_graphs = self._blocks(x, L, batch)
        if num_graphs is not None:
            return self._forward_complexes(x, L, batch, num_graphs)
        perm = None
        if isinstance(self.readout, str):  # pooling ignores the edge order the layers ran in
            x3, h, _ = self._layers(x, L, batch)  # [B, N1, hidden]
        else:
            x3, h, order = self._layers(x, L, batch)
            if order is not None and self._readout_renumbered():
                perm = order.perm  # the readout takes the layers' order (no gather)
            elif order is not None:
                x3, h = permute_edges(x3, order, back=True), permute_edges(h, order, back=True)
        if self.input_skip:  # the input first: [B, N1, C_in + hidden]
            h = torch.cat([x3.to(h.dtype), h], dim=-1)
        if not isinstance(self.readout, str):
            if getattr(self.readout, "basis_free", False):
                return self.readout(h, laplacians=L)  # [B, D]
            self._check_readout_complex(L)
            if perm is not None:
                return self.readout(h, edge_perm=perm)  # [B, D]
            return self.readout(h)  # [B, D]
        if self.readout == "mean":
            return h.mean(dim=1)
        if self.readout == "sum":
            return h.sum(dim=1)
        return h.amax(dim=1)

    def _readout_renumbered(self) -> bool:
        """Whether the readout module takes features in the layers' edge order (a
        :class:`HodgeReadout` on one complex, without energies)."""
        readout = self.readout
        return (
            isinstance(readout, HodgeReadout)
            and not readout.basis_free
            and not readout.energies
        )

    def _forward_complexes(
        self, x: Tensor, L: Laplacians, batch: Tensor, num_graphs: int
    ) -> Tensor:
        """The embeddings ``[B, D]`` of a batch of different complexes (pooled by ``batch``
        with PyG's global pools)."""
        from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool

        x_rows, h = self._complex_rows(x, L)  # [sum N1, C_in], [sum N1, hidden]
        if self.input_skip:
            h = torch.cat([x_rows.to(h.dtype), h], dim=-1)
        if not isinstance(self.readout, str):
            if getattr(self.readout, "basis_free", False):
                return self.readout(h, batch=batch, laplacians=L, size=num_graphs)
            raise ValueError(
                f"the encoder's {type(self.readout).__name__} is tied to one complex and cannot "
                "pool a batch of different complexes; use a basis-free readout (e.g. "
                "HodgeReadout(None, energies=True)) or a string readout"
            )
        pool = {"mean": global_mean_pool, "sum": global_add_pool, "max": global_max_pool}
        return pool[self.readout](h, batch, size=num_graphs)  # [B, hidden]

    def _check_readout_complex(self, L: Laplacians | None) -> None:
        """Refuse operators of another complex than the readout's (when both are known: a
        readout with ``complex_fingerprint`` such as HodgeReadout, and operators that carry
        their complex)."""
        own = getattr(self.readout, "complex_fingerprint", None)
        origin = None if L is None else L.fingerprint
        if own is not None and origin is not None and origin != own:
            raise ValueError(
                f"the operators come from the complex with fingerprint {origin}, but the "
                f"encoder's {type(self.readout).__name__} was built on the complex with "
                f"fingerprint {own} (same N1 = {L.num_cells} edges, other edges or "
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
