"""The library against the authors' public code (``injurise/hodge_simpcl``), for docs/design.md.

Each difference is reimplemented here from its formula (their code is a reference, not a
source) and measured on the library's trajectory data (``SyntheticTrajectories``: 400 flows
on one complex) with their settings (budget 0.4, start 0.4, 75 steps, temperature 0.2,
batches of 100, harmonic weights ``gamma = (0, 0, 1)``):

- the expected distortion :math:`\\mathbb{E}\\|\\mathbf{P}_k(\\mathbf{x} - \\mathbf{x}')\\|^2`
  of the library's closed form and of theirs against Monte-Carlo masks;
- the drop probabilities of their optimiser (their formula, the entries frozen at 0, 75
  halving steps, the norm normalisation) with one difference fixed at a time, against the
  library's ``optimize_drop_probabilities``, by the fractions of each part's energy that
  the masks remove (closed form);
- the loss with negatives from both views or the other view only, and with their weights
  (view-based, clamped, normalised over all B columns), at initialisation and after
  training a four-layer SCNN.

Writes ``docs/_data/authors_code/authors_code.json`` and ``.md`` and puts the tables between
``<!-- authors-code -->`` and ``<!-- /authors-code -->`` in docs/design.md.

    python docs/authors_code_section.py [--seed 0] [--masks 200000] [--epochs 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

from topo_contrastive import HodgeDecomposition, SyntheticTrajectories
from topo_contrastive._utils.files import write_json, write_text
from topo_contrastive.losses import hodge_negative_weights
from topo_contrastive.losses.functional import hodge_debiased_info_nce, info_nce
from topo_contrastive.nn import SCNN, ProjectionHead
from topo_contrastive.transforms import optimize_drop_probabilities

DOCS = Path(__file__).resolve().parent
OUT = DOCS / "_data" / "authors_code"
SIGNS = torch.tensor([1.0, -1.0, -1.0], dtype=torch.float64)  # they ascend grad - curl - harm
BUDGET, STEPS, TAU, BATCH = 0.4, 75, 0.2, 100


def quad(a: torch.Tensor, P: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a_s^T P_sk b_s`` for a, b [S, n] and P [S, 3, n, n]: [S, 3]."""
    return (a[:, None, None, :] @ P @ b[:, None, :, None])[..., 0, 0]


def closed_form(x: torch.Tensor, p: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """The library's E||P_k(x - x')||^2 (docs/design.md §2.2): x, p [S, n], P [S, 3, n, n]."""
    diag = P.diagonal(dim1=2, dim2=3)  # [S, 3, n]
    return quad(x * p, P, x * p) + (diag * (x**2 * p * (1 - p))[:, None]).sum(-1)


def their_form(x: torch.Tensor, p: torch.Tensor, P: torch.Tensor, alive: torch.Tensor):
    """Theirs: ||P x||^2 - 2 x^T P E[x'] + tr(P A), A = E[x'] E[x']^T with the diagonal
    divided by p (where 1 - p is right); an entry that left their sparse tensor (frozen at
    p = 0) has expected flow 0."""
    e = torch.where(alive, x * (1 - p), 0.0)
    diag = torch.where(alive & (p > 0), e**2 / torch.where(p > 0, p, 1.0), e**2)
    trace = quad(e, P, e) + (P.diagonal(dim1=2, dim2=3) * (diag - e**2)[:, None]).sum(-1)
    return quad(x, P, x) - 2 * quad(x, P, e) + trace


def project(v: torch.Tensor, budget: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Their projection: over budget, bisection to 1e-4 on mu in [min, max] of
    sum clamp(v - mu, 0, 1) = budget, then clamp(v - mu, 0, 1); else clamp(v, 0, 1)."""
    big = torch.finfo(v.dtype).max
    a = torch.where(mask, v, big).amin(1)
    b = torch.where(mask, v, -big).amax(1)
    over = (v.clamp(0, 1) * mask).sum(1) > budget
    mu = a.clone()
    for _ in range(40):
        go = over & (b - a >= 1e-4)
        mid = (a + b) / 2
        below = ((v - mid[:, None]).clamp(0, 1) * mask).sum(1) - budget < 0
        mu = torch.where(go, mid, mu)
        b, a = torch.where(go & below, mid, b), torch.where(go & ~below, mid, a)
    return torch.where(over[:, None], (v - mu[:, None]).clamp(0, 1), v.clamp(0, 1)) * mask


def their_optimiser(data: dict, formula: str, freeze: bool, power: int) -> torch.Tensor:
    """Gradient ascent from p = 0.4 with a step of max change 0.1 halved every 5 steps, 75
    steps; ``formula`` "theirs" or "closed", ``power`` 1 (their ||P_k x||) or 2. Samples
    run in chunks of similar support size (each sample on its own)."""
    p = torch.zeros_like(data["x"])
    order = data["mask"].sum(1).argsort()
    for idx in order.split(50):
        n = int(data["mask"][idx].sum(1).max())
        chunk = {k: data[k][idx][:, :n] for k in ("x", "mask")}
        chunk["energy"] = data["energy"][idx]
        chunk["P"] = data["P"][idx][:, :, :n, :n]
        p[idx, :n] = _their_steps(chunk, formula, freeze, power)
    return p


def _their_steps(data: dict, formula: str, freeze: bool, power: int) -> torch.Tensor:
    x, P, mask, energy = data["x"], data["P"], data["mask"], data["energy"]
    budget = (BUDGET * mask.sum(1)).floor().clamp_min(1)  # int(0.4 * |S|), at least 1
    p, alive, step = BUDGET * mask.double(), mask.clone(), BUDGET / 4
    for t in range(1, STEPS + 1):
        q = p.clone().requires_grad_()
        L = their_form(x, q, P, alive) if formula == "theirs" else \
            closed_form(x, torch.where(alive, q, 1.0), P)  # fmt: skip
        (grad,) = torch.autograd.grad((SIGNS * L / energy ** (power / 2)).sum(), q)
        grad = grad * alive
        step = step / 2 if t % 5 == 0 else step
        p = project(p + step / grad.abs().amax(1, keepdim=True) * grad, budget, mask)
        alive = alive & (p > 0) if freeze else alive
    return p.detach()


def load(root: str, seed: int) -> dict[str, Any]:
    ds = SyntheticTrajectories(root, seed=seed, log=False)
    hodge = HodgeDecomposition(ds.complex)
    flows = torch.stack([d.x_1[:, 0] for d in ds]).double()  # [S, N1]
    supports = [f.nonzero().view(-1) for f in flows]
    blocks = hodge.projector_blocks(supports)
    n = max(len(s) for s in supports)
    S = len(supports)
    x, mask = torch.zeros(S, n, dtype=torch.float64), torch.zeros(S, n, dtype=torch.bool)
    P = torch.zeros(S, 3, n, n, dtype=torch.float64)
    for i, s in enumerate(supports):
        x[i, : len(s)], mask[i, : len(s)] = flows[i, s], True
        for k, name in enumerate(("gradient", "curl", "harmonic")):
            P[i, k, : len(s), : len(s)] = blocks[name][i]
    energy = quad(x, P, x)  # ||P_k x||^2
    return dict(ds=ds, hodge=hodge, flows=flows, supports=supports, x=x, mask=mask, P=P,
                energy=energy)  # fmt: skip


def monte_carlo(data: dict, masks: int, gen: torch.Generator) -> dict[str, float]:
    """Item (a): E||P_k(x - x')||^2 at p = 0.4 on 5 flows from ``masks`` drawn masks."""
    rel_lib, rel_theirs, se = [], [], []
    for i in torch.randperm(len(data["supports"]), generator=gen)[:5].tolist():
        n = len(data["supports"][i])
        x, P = data["x"][i, :n], data["P"][i, :, :n, :n]
        p = torch.full((n,), BUDGET, dtype=torch.float64)
        d = torch.bernoulli(p.expand(masks, n), generator=gen)
        r = x * d  # x - x'
        draws = torch.einsum("ti,kij,tj->kt", r, P, r)  # [3, T]
        mc = draws.mean(1)
        lib = closed_form(x[None], p[None], P[None])[0]
        theirs = their_form(x[None], p[None], P[None], torch.ones(1, n, dtype=torch.bool))[0]
        rel_lib.append(((lib - mc) / mc).abs().max().item())
        rel_theirs.append(((theirs - mc) / mc).abs().max().item())
        se.append((draws.std(1) / masks**0.5 / mc).max().item())
    return {"masks": masks, "flows": 5, "library_max_rel_error": max(rel_lib),
            "their_max_rel_error": max(rel_theirs),
            "monte_carlo_rel_std_error": max(se)}  # fmt: skip


def probabilities(data: dict) -> dict[str, dict[str, float]]:
    """Items (b)-(d): each variant's drop probabilities and the energy fractions they remove."""
    x, P, mask, energy = data["x"], data["P"], data["mask"], data["energy"]
    full = optimize_drop_probabilities(data["flows"], data["hodge"], BUDGET)
    lib = torch.zeros_like(x)
    for i, s in enumerate(data["supports"]):
        lib[i, : len(s)] = full[i, s].double()
    data["p_library"] = full
    ps = {"library: converged, squared norms": lib, "library with their norms: (d) alone":
          torch.zeros_like(x)}  # fmt: skip
    for i, s in enumerate(tqdm(data["supports"], desc="(d) alone")):  # alpha_k = ||P_k x||
        alpha = dict(zip(("gradient", "curl", "harmonic"), energy[i].sqrt().tolist(), strict=True))
        p_i = optimize_drop_probabilities(data["flows"][i], data["hodge"], BUDGET, alpha=alpha)
        ps["library with their norms: (d) alone"][i, : len(s)] = p_i[s].double()
    variants = {
        "theirs: (a) (b) (c) (d)": ("theirs", True, 1),
        "theirs, (a) fixed": ("closed", True, 1),
        "theirs, (b) fixed": ("theirs", False, 1),
        "theirs, (d) fixed": ("theirs", True, 2),
        "theirs, (a) (b) (d) fixed: (c) alone": ("closed", False, 2),
    }
    for name, args in tqdm(variants.items(), desc="optimisers"):
        ps[name] = their_optimiser(data, *args)
    out = {}
    for name, p in ps.items():
        rel = (closed_form(x, p, P) / energy).mean(0)  # [3]: E||P_k(x - x')||^2 / ||P_k x||^2
        out[name] = {
            "gradient": rel[0].item(), "curl": rel[1].item(), "harmonic": rel[2].item(),
            "objective": (-rel[0] + rel[1] + rel[2]).item(),
            "zero_entries": ((p == 0) & mask).sum().item() / mask.sum().item(),
            "mean_abs_diff_to_library": ((p - lib).abs() * mask).sum().item() / mask.sum().item(),
        }  # fmt: skip
    return out


def _their_weights(h1: torch.Tensor, h2: torch.Tensor) -> torch.Tensor:
    """Their weights: d = 1 - cos of the harmonic parts of view 1 (the flow) and view 2 (the
    mask), clamped below at the least positive d, normalised to sum B over all B columns."""
    d = 1 - F.normalize(h1, dim=1) @ F.normalize(h2, dim=1).T
    d = d.clamp_min(d[d > 0].min())
    return d / d.sum(1, keepdim=True) * d.shape[1]


def _all_columns(parts: torch.Tensor) -> torch.Tensor:
    """The library's dissimilarities (eq. 7, harmonic, original flows) normalised to sum B over
    all B columns (the anchor's own included) instead of mean one over its B - 1 negatives."""
    h = parts[2]
    norm = h.norm(dim=1, keepdim=True)
    unit = torch.where(norm > 1e-6 * parts.norm(dim=(0, 2))[:, None], h / norm, 0.0)
    d = 1 - (unit @ unit.T).clamp(-1.0, 1.0)
    return d / d.sum(1, keepdim=True) * d.shape[1]


def losses(data: dict, epochs: int, seed: int) -> dict[str, dict[str, float]]:
    """Items (e)-(f): the losses of a batch of 100 at initialisation and after ``epochs``
    epochs of training (Adam 0.003, the library's loss); view 1 the flow (their identity),
    view 2 a mask with the library's probabilities."""
    torch.manual_seed(seed)
    flows = data["flows"].float()
    lap = data["ds"].complex.laplacians()
    enc, head = SCNN(1, 64, num_layers=4), ProjectionHead(64, 64, 64)
    opt = torch.optim.Adam([*enc.parameters(), *head.parameters()], lr=0.003, weight_decay=1e-4)
    parts = torch.stack(list(data["hodge"](data["flows"])))  # [3, S, N1]
    gamma = (0.0, 0.0, 1.0)

    def views(idx: torch.Tensor, gen: torch.Generator):
        mask = torch.bernoulli(data["p_library"][idx], generator=gen).float()
        v2 = flows[idx] * (1 - mask)
        return head(enc(flows[idx].unsqueeze(-1), lap)), head(enc(v2.unsqueeze(-1), lap)), v2

    def evaluate() -> dict[str, float]:
        gen, rows = torch.Generator().manual_seed(seed + 1), {}
        with torch.no_grad():
            for idx in torch.arange(len(flows)).split(BATCH):
                z1, z2, v2 = views(idx, gen)
                w = hodge_negative_weights(parts[:, idx], gamma)
                h2 = data["hodge"](v2.double())[2]
                vals = {
                    "InfoNCE, both views": info_nce(z1, z2, TAU),
                    "InfoNCE, cross_view": info_nce(z1, z2, TAU, negatives="cross_view"),
                    "Hodge, both views": hodge_debiased_info_nce(
                        z1, z2, weights=w, temperature=TAU),
                    "Hodge, cross_view": hodge_debiased_info_nce(
                        z1, z2, weights=w, temperature=TAU, negatives="cross_view"),
                    "Hodge, cross_view, over all B columns (f)": hodge_debiased_info_nce(
                        z1, z2, weights=_all_columns(parts[:, idx]), temperature=TAU,
                        negatives="cross_view"),
                    "Hodge, cross_view, their weights": hodge_debiased_info_nce(
                        z1, z2, weights=_their_weights(parts[2, idx], h2), temperature=TAU,
                        negatives="cross_view"),
                }  # fmt: skip
                for k, v in vals.items():
                    rows[k] = rows.get(k, 0.0) + v.item() / -(-len(flows) // BATCH)
        return rows

    out = {"initialisation": evaluate()}
    gen = torch.Generator().manual_seed(seed + 2)
    for _ in tqdm(range(epochs), desc="training"):
        for idx in torch.randperm(len(flows), generator=gen).split(BATCH):
            z1, z2, _ = views(idx, gen)
            w = hodge_negative_weights(parts[:, idx], gamma)
            loss = hodge_debiased_info_nce(z1, z2, weights=w, temperature=TAU)
            opt.zero_grad()
            loss.backward()
            opt.step()
    out[f"after {epochs} epochs"] = evaluate()
    return out


def table(results: dict) -> str:
    mc = results["monte_carlo"]
    lines = [
        f"Expected distortion at p = 0.4 on {mc['flows']} flows against {mc['masks']:,} masks "
        f"(Monte-Carlo standard error {mc['monte_carlo_rel_std_error']:.1e}): largest relative "
        f"error {mc['library_max_rel_error']:.1e} (library), {mc['their_max_rel_error']:.2f} "
        "(theirs).",
        "",
        "| drop probabilities | gradient distortion | curl distortion | harmonic distortion | "
        "objective | p = 0 | mean abs p - library's |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in results["probabilities"].items():
        lines.append(
            f"| {name} | {r['gradient']:.3f} | {r['curl']:.3f} | {r['harmonic']:.3f} | "
            f"{r['objective']:.3f} | {r['zero_entries']:.1%} | "
            f"{r['mean_abs_diff_to_library']:.3f} |"
        )
    stages = list(results["losses"])
    lines += ["", "| loss, batches of 100, temperature 0.2 | " + " | ".join(stages) + " |",
              "|---" * (len(stages) + 1) + "|"]  # fmt: skip
    for name in results["losses"][stages[0]]:
        vals = " | ".join(f"{results['losses'][s][name]:.3f}" for s in stages)
        lines.append(f"| {name} | {vals} |")
    return "\n".join(lines) + "\n"


def main(seed: int = 0, masks: int = 200_000, epochs: int = 10) -> dict[str, Any]:
    """Measure every difference and write the JSON, the Markdown table and the page's table."""
    gen = torch.Generator().manual_seed(seed)
    with tempfile.TemporaryDirectory() as root:
        data = load(root, seed)
    results = {"settings": {"seed": seed, "budget": BUDGET, "steps": STEPS,
                            "temperature": TAU, "batch": BATCH, "epochs": epochs}}  # fmt: skip
    OUT.mkdir(parents=True, exist_ok=True)
    for name, measure in (("monte_carlo", lambda: monte_carlo(data, masks, gen)),
                          ("probabilities", lambda: probabilities(data)),
                          ("losses", lambda: losses(data, epochs, seed))):  # fmt: skip
        results[name] = measure()
        write_json(OUT / "authors_code.json", results)  # each stage as soon as it is done
    text = table(results)
    write_text(OUT / "authors_code.md", text)
    page = (DOCS / "design.md").read_text(encoding="utf-8")
    start, end = "<!-- authors-code -->\n", "<!-- /authors-code -->"
    if start in page and end in page:
        head, rest = page.split(start, 1)
        write_text(DOCS / "design.md", head + start + text + end + rest.split(end, 1)[1])
    print(text)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, masks, model")
    parser.add_argument("--masks", type=int, default=200_000, help="Monte-Carlo masks (a)")
    parser.add_argument("--epochs", type=int, default=10, help="training epochs for (e)-(f)")
    args = parser.parse_args()
    main(args.seed, args.masks, args.epochs)
