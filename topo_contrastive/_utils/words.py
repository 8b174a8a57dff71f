"""Counted nouns in messages: ``count(1, "epoch") == "1 epoch"``, ``count(2, "epoch") ==
"2 epochs"`` (every printed or written count of the package reads as English)."""


def count(n: int | float, noun: str, plural: str | None = None) -> str:
    """``"{n} {noun}"`` in the singular for exactly one, else in the plural (``noun + "s"``,
    or ``plural`` for irregular ones: ``count(3, "matrix", "matrices")``).

    Example:
        >>> count(1, "epoch"), count(0, "epoch"), count(2, "torch thread")
        ('1 epoch', '0 epochs', '2 torch threads')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
