r"""Any TopoModelX simplicial model as the encoder of the contrastive pipeline:
:class:`TopoModelXEncoder` (the ``topomodelx`` extra)."""

from __future__ import annotations

import importlib
from typing import Any

import torch
from torch import Tensor

from topo_contrastive._layout import batch_vector
from topo_contrastive._utils.checks import check_int
from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn._inputs import POOLS, as_laplacians, complexes_batch, edge_samples
from topo_contrastive.nn._scnn_kernel import kept_cache

#: The TopoModelX models the adapter builds: name -> (module, class).
_KINDS = {
    "scnn": ("topomodelx.nn.simplicial.scnn", "SCNN"),
    "sccnn": ("topomodelx.nn.simplicial.sccnn", "SCCNN"),
    "san": ("topomodelx.nn.simplicial.san", "SAN"),
    "scn2": ("topomodelx.nn.simplicial.scn2", "SCN2"),
}
_OPERATORS = ("B1", "B2", "L0", "L_down", "L_up", "L1", "L2", "L2_down", "L2_up")


def _replicate(t: Tensor, times: int) -> Tensor:
    """``I_times (x) t``: ``times`` copies of the sparse ``t`` on the diagonal (COO)."""
    if times == 1:
        return t
    c = t.coalesce()
    idx, (n, m) = c.indices(), c.shape
    steps = torch.arange(times, device=idx.device)[:, None]
    index = torch.stack([(idx[0][None] + steps * n).ravel(), (idx[1][None] + steps * m).ravel()])
    return torch.sparse_coo_tensor(
        index, c.values().repeat(times), (times * n, times * m), check_invariants=False
    ).coalesce()


def _check_widths(kind: str, kwargs: dict[str, Any]) -> None:
    """The model's input widths are integers >= 1 (a width 0 would ignore the input)."""
    if kind == "sccnn":
        widths = kwargs.get("in_channels_all")
        if widths is not None and (not isinstance(widths, (tuple, list)) or len(widths) != 3):
            raise ValueError(
                "`in_channels_all` must be three input widths (nodes, edges, 2-cells), "
                f"got {widths!r}"
            )
        for i, w in enumerate(widths or ()):
            check_int(w, f"in_channels_all[{i}]", minimum=1)
        return
    for name in [f"in_channels_{k}" for k in range(3)] if kind == "scn2" else ["in_channels"]:
        if name in kwargs:
            check_int(kwargs[name], name, minimum=1)


class TopoModelXEncoder(torch.nn.Module):
    r"""A TopoModelX simplicial model (``SCNN``, ``SCCNN``, ``SAN``, ``SCN2``) behind the
    interface of :class:`~topo_contrastive.nn.SCNN`: ``forward(x, laplacians, batch)``
    returns one embedding per sample, ``[B, D]``.

    A batch is one complex (block-diagonal operators of
    :class:`~topo_contrastive.data.ComplexData`, or ``B`` flows on one complex whose
    operators are repeated on the diagonal): the model runs once per batch and its
    per-edge output is pooled per sample over ``batch``. The other operators a model needs
    (:math:`\mathbf{B}_1`, :math:`\mathbf{B}_2`, :math:`\mathbf{L}_0`,
    :math:`\mathbf{L}_2`, ...) come from the complex the ``Laplacians`` carry; models with
    node and 2-cell signals get the divergence :math:`\mathbf{B}_1\mathbf{x}` and the curl
    :math:`\mathbf{B}_2^\top\mathbf{x}` of the flow. Per model (TopoModelX 0.0.1):
    ``"scnn"``: ``model(x, L_down, L_up)``; ``"sccnn"``: ``model((x_0, x, x_2), (L0,
    L_down, L_up, L2), (B1, B2))`` (``L2_down, L2_up`` with ``sc_order > 2``); ``"san"``:
    its layers with the harmonic projection :math:`(\mathbf{I} - \epsilon
    \mathbf{L}_1)^{k}` computed sparse; ``"scn2"``: ``model(x_0, x, x_2, L0, L1, L2)``
    after linear lifts of the three signals to its widths. TopoModelX's layers build dense
    :math:`N \times N` identities, so keep batches to a few thousand edges.

    Source: Hajij et al., "TopoX", JMLR 2024; Yang et al. 2022 (SCNN, SCCNN), Giusti et
    al. 2022 (SAN), Ebli et al. 2020 (SCN2).

    Args:
        kind (str): ``"scnn"``, ``"sccnn"``, ``"san"`` or ``"scn2"``.
        readout (str, optional): ``"mean"``, ``"sum"``, ``"max"``, or ``"energies"``: per
            channel :math:`\tfrac{1}{N_1}\mathbf{h}^\top\mathbf{L}_\downarrow\mathbf{h}`
            and :math:`\tfrac{1}{N_1}\mathbf{h}^\top\mathbf{L}_\uparrow\mathbf{h}` of each
            sample (``2 D`` features independent of the edge orientations for a model odd
            in its input). (default: ``"mean"``)
        **model_kwargs: the model's arguments (e.g. ``in_channels=1, hidden_channels=32,
            conv_order_down=2, conv_order_up=2`` for ``"scnn"``), recorded.

    Shapes:
        - **input:** as :class:`~topo_contrastive.nn.SCNN`, float32 on the CPU.
        - **output:** ``[B, out_channels]`` (``D``, or ``2 D`` with ``"energies"``).

    Raises:
        ImportError: TopoModelX is not installed.
        TypeError / ValueError: an unknown ``kind`` or ``readout``, an input width that
            is not an integer >= 1; (``forward``) ``laplacians`` without their complex, a
            batch of complexes without ``batch``, or the layout errors of
            :class:`~topo_contrastive.nn.SCNN`.

    Example:
        >>> encoder = TopoModelXEncoder("scnn", in_channels=1, hidden_channels=16,
        ...                             conv_order_down=1, conv_order_up=1)  # doctest: +SKIP
        >>> z = encoder(batch.x_1, batch.laplacians(), batch.batch_1)  # doctest: +SKIP
    """

    #: Read the batch vector's values to check its numbering; ``False`` skips it.
    check_finite: bool = True

    def __init__(self, kind: str, readout: str = "mean", **model_kwargs: Any) -> None:
        super().__init__()
        if not isinstance(kind, str) or kind not in _KINDS:
            raise ValueError(f"`kind` must be one of {tuple(_KINDS)}, got {kind!r}")
        readouts = (*POOLS, "energies")
        if not isinstance(readout, str) or readout not in readouts:
            raise ValueError(f"`readout` must be one of {readouts}, got {readout!r}")
        _check_widths(kind, model_kwargs)
        module, cls = _KINDS[kind]
        self.kind, self.readout, self.model_kwargs = kind, readout, dict(model_kwargs)
        self.model = getattr(importlib.import_module(module), cls)(**model_kwargs)
        self.lifts = torch.nn.ModuleList()
        if kind == "scn2":  # SCN2 keeps the widths: lift the three signals to them
            widths = [int(model_kwargs[f"in_channels_{k}"]) for k in range(3)]
            self.lifts = torch.nn.ModuleList(torch.nn.Linear(1, w) for w in widths)
        self.edge_channels = self._probe_width()  # D, the model's per-edge width
        self.out_channels = self.edge_channels * (2 if readout == "energies" else 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise the lifts and every TopoModelX layer that has ``reset_parameters``."""
        for m in self.modules():
            if m is not self and hasattr(m, "reset_parameters"):
                m.reset_parameters()

    def _probe_width(self) -> int:
        from topo_contrastive.complex import ComplexOperators

        ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        with torch.no_grad():
            h = self._edge_features(torch.zeros(3, self._in_channels()), ops.laplacians(), 1)
        return int(h.shape[-1])

    def _in_channels(self) -> int:
        if self.kind == "sccnn":
            return int(self.model_kwargs["in_channels_all"][1])
        return 1 if self.kind == "scn2" else int(self.model_kwargs["in_channels"])

    def _operators(self, L: Laplacians, times: int) -> dict[str, Tensor]:
        if L.complex is None:
            raise ValueError(
                "TopoModelXEncoder takes the other operators of its model from the complex of "
                "`laplacians`: pass ComplexOperators.laplacians() or ComplexData.laplacians() "
                "(a Laplacians that carries its complex), not a pair of tensors"
            )
        key = ("topomodelx", times)
        cache = kept_cache(L, key)
        if key not in cache:
            cache[key] = {
                n: _replicate(L.complex.operator(n, device=L.device, dtype=L.dtype), times)
                for n in _OPERATORS
            }
        return cache[key]

    def _edge_features(self, x: Tensor, L: Laplacians, times: int) -> Tensor:
        """The model's per-edge output ``[rows, D]`` of ``x`` ``[rows, C]``."""
        model = self.model
        if self.kind == "scnn":
            return model(x, _replicate(L.down, times), _replicate(L.up, times))
        op = self._operators(L, times)
        x_0, x_2 = torch.mm(op["B1"], x), torch.mm(op["B2"].t(), x)  # divergence, curl
        if self.kind == "sccnn":
            two = int(self.model_kwargs.get("sc_order", 2)) == 2
            low = ("L2",) if two else ("L2_down", "L2_up")
            laps = tuple(op[n] for n in ("L0", "L_down", "L_up", *low))
            return model((x_0, x, x_2), laps, (op["B1"], op["B2"]))[1]
        if self.kind == "scn2":
            lifted = [lift(s) for lift, s in zip(self.lifts, (x_0, x, x_2), strict=True)]
            return model(*lifted, op["L0"], op["L1"], op["L2"])[1]
        n = op["L1"].shape[0]  # SAN: its layers with the projection (I - eps L1)^order, sparse
        eye = torch.sparse_coo_tensor(
            torch.arange(n).repeat(2, 1), torch.ones(n), (n, n), dtype=x.dtype, device=x.device,
            check_invariants=False,
        )  # fmt: skip
        step = proj = (eye - model.epsilon_harmonic * op["L1"]).coalesce()
        for _ in range(int(model.order_harmonic) - 1):
            proj = torch.sparse.mm(proj, step).coalesce()
        for layer in model.layers:
            x = layer(x, op["L_up"], op["L_down"], proj)
        return x

    def _layout(self, x: Tensor, L: Laplacians, batch: Tensor | None) -> tuple:
        """``(rows [rows, C], batch vector, samples, times the operators repeat, complexes)``."""
        if not isinstance(x, Tensor) or not x.is_floating_point():
            raise TypeError(f"`x` must be a floating tensor, got {type(x).__name__}")
        x = x.unsqueeze(-1) if x.dim() == 1 else x
        num = complexes_batch(x, L, batch, self.check_finite)
        if num is not None:  # a batch of complexes
            return x, batch, num, 1, True
        x3 = edge_samples(x, L, batch, self._in_channels(), self.check_finite)  # [B, N1, C]
        times, rows = int(x3.shape[0]), x3.reshape(-1, x3.shape[-1])
        return rows, batch_vector(times, x3.shape[1], x.device), times, times, False

    def edge_embeddings(
        self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None
    ) -> Tensor:
        """The model's per-edge output before the readout: ``[sum N1, D]`` on a batch of
        complexes, ``[B, N1, D]`` on one complex (as :meth:`SCNN.edge_embeddings
        <topo_contrastive.nn.SCNN.edge_embeddings>`); errors as :meth:`forward`."""
        L = as_laplacians(laplacians, (1, 1))
        rows, _, _, times, complexes = self._layout(x, L, batch)
        h = self._edge_features(rows, L, times)  # [rows, D]
        return h if complexes else h.reshape(times, L.num_cells, h.shape[-1])

    def forward(self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None) -> Tensor:
        """The embedding ``[B, out_channels]`` (see the class)."""
        L = as_laplacians(laplacians, (1, 1))
        rows, batch, num, times, _ = self._layout(x, L, batch)
        h = self._edge_features(rows, L, times)  # [rows, D]
        if self.readout != "energies":
            return POOLS[self.readout](h, batch, size=num)
        from topo_contrastive.nn.hodge_readout import HodgeReadout

        down, up = _replicate(L.down, times), _replicate(L.up, times)
        energies = HodgeReadout(None, pool="none", energies=True)
        return energies(h, batch, Laplacians(down, up, symmetric=True), size=num)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.model_kwargs.items())
        return f"{type(self).__name__}({self.kind!r}, readout={self.readout!r}, {args})"
