"""What the loops cost: tokens per turn priced from a small, overridable price table.

The harness counts tokens itself (``toolchaos._internal.model.estimate_tokens``: the same
estimate for every agent, so two runs compare), and a policy is no real model: the cost is
an **estimate**, the tokens priced as one model (``PRICED_AS`` unless told otherwise) at list
prices in US dollars per million tokens, as ``PRICES_DATED`` says they were. Override them
with a prices file (YAML or JSON)::

    model: my-model            # the model the runs are priced as
    dated: "2026-03"           # when you read these prices (shown in the report)
    prices:
      my-model: {input: 1.25, output: 10.0}

(``toolchaos certify --prices FILE --price-model NAME``; ``pytest --chaos-prices FILE
--chaos-price-model NAME`` or the ini options ``chaos_prices`` / ``chaos_price_model``.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchaos.errors import ReportError, did_you_mean

# USD per million tokens (input, output): providers' list prices, an estimate, dated below.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
}
PRICES_DATED = "2025-06"
PRICED_AS = "gpt-4o"


@dataclass(frozen=True)
class PriceTable:
    """The prices a report uses: the model the runs are priced as, and per model (input, output) per million."""

    model: str = PRICED_AS
    prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(PRICES))
    dated: str = PRICES_DATED
    source: str = "built-in"

    def __post_init__(self) -> None:
        if self.model not in self.prices:
            raise ReportError(f"no price for model {self.model!r}{did_you_mean(self.model, list(self.prices))}; "
                              f"priced models: {', '.join(sorted(self.prices))} (add it in a prices file)")

    @property
    def per_million(self) -> tuple[float, float]:
        return self.prices[self.model]

    def usd(self, tokens_in: int, tokens_out: int) -> float:
        pin, pout = self.per_million
        return (tokens_in * pin + tokens_out * pout) / 1_000_000

    def as_dict(self) -> dict[str, Any]:
        pin, pout = self.per_million
        return {"model": self.model, "input_per_million": pin, "output_per_million": pout, "currency": "USD",
                "dated": self.dated, "source": self.source, "estimate": True}


def price_table(file: str | Path | None = None, model: str | None = None) -> PriceTable:
    """The built-in table, overridden by a prices file and a model name when given."""
    if file is None:
        return PriceTable(model=model or PRICED_AS)
    data = _read(Path(file))
    prices = dict(PRICES)
    for name, p in (data.get("prices") or {}).items():
        prices[str(name)] = _price(file, str(name), p)
    chosen = model or str(data.get("model") or PRICED_AS)
    return PriceTable(chosen, prices, str(data.get("dated") or "unknown"), Path(file).name)


def _read(path: Path) -> Mapping[str, Any]:
    import yaml  # PyYAML: only when a prices file is given (it reads JSON too)

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"cannot read the prices file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ReportError(f"{path}: not YAML or JSON: {exc}") from None
    if not isinstance(data, Mapping) or not set(data) <= {"model", "dated", "prices"}:
        raise ReportError(f"{path}: a prices file is a mapping of model, dated and prices "
                          f"({{model: {{input: USD, output: USD}}}} per million tokens)")
    return data


def _price(file: str | Path, name: str, p: Any) -> tuple[float, float]:
    ok = isinstance(p, Mapping) and set(p) == {"input", "output"} and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in p.values())
    if not ok:
        raise ReportError(f"{file}: prices.{name} must be {{input: USD, output: USD}} per million tokens, "
                          f"both numbers >= 0; got {p!r}")
    return float(p["input"]), float(p["output"])


def scenario_cost(tokens: Mapping[str, Any], grade: Mapping[str, Any] | None, table: PriceTable) -> dict[str, Any]:
    """A scenario's estimated cost: in all, cumulative turn by turn, and the part wasted beyond its useful work."""
    running, cumulative = 0.0, []
    for tin, tout in tokens["per_turn"]:
        running += table.usd(tin, tout)
        cumulative.append(round(running, 6))
    out: dict[str, Any] = {"usd": round(running, 6), "cumulative_usd": cumulative, "wasted_usd": None}
    if grade:
        k = min(grade["useful_turns"], len(cumulative))  # the grade's useful turns; the rest is waste
        out["wasted_usd"] = round(running - (cumulative[k - 1] if k else 0.0), 6)
    return out


def suite_cost(scenarios: Sequence[Mapping[str, Any]], table: PriceTable) -> dict[str, Any]:
    t_in = sum(s["tokens"]["input"] for s in scenarios)
    t_out = sum(s["tokens"]["output"] for s in scenarios)
    wasted = [s["cost"]["wasted_usd"] for s in scenarios if s["cost"]["wasted_usd"] is not None]
    return {**table.as_dict(), "tokens_input": t_in, "tokens_output": t_out,
            "usd": round(sum(s["cost"]["usd"] for s in scenarios), 6),
            "wasted_usd": round(sum(wasted), 6),
            "wasted_usd_failing": round(sum(s["cost"]["wasted_usd"] or 0.0 for s in scenarios
                                            if s["verdict"] != "pass"), 6)}


def usd(x: float) -> str:
    """A dollar amount as the reports print it: small amounts keep their digits."""
    return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"
