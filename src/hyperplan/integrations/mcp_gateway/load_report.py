"""The report of ``hyperplan bench gateway-load`` (:mod:`.load`): latency percentiles, one
run as a JSON-ready dict, the medians over runs, and the Markdown table."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hyperplan.integrations.mcp_gateway.load import LoadConfig, Tally


def latency_ms(samples: list[float]) -> dict[str, float]:
    """n, mean, p50, p95, p99 (nearest rank) and max of ``samples`` (seconds), in ms."""
    ordered = sorted(samples)

    def rank(q: float) -> float:
        return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000, 2)

    return {"n": len(ordered), "mean": round(sum(ordered) / len(ordered) * 1000, 2),
            "p50": rank(0.50), "p95": rank(0.95), "p99": rank(0.99), "max": rank(1.0)}


def run_report(config: LoadConfig, measured: Tally, warm: Tally, infos: list[dict[str, Any]],
               *, seconds: float, ready_s: float, memory: dict[str, dict[str, float | None]],
               cpu_s: float | None, load: list[tuple[float, float, float]]) -> dict[str, Any]:
    """One run as a JSON-ready dict (module doc for the fields)."""
    requests = sum(len(s) for s in measured.seconds.values())
    every = [x for s in measured.seconds.values() for x in s]
    latency = {kind: latency_ms(s) for kind, s in sorted(measured.seconds.items())}
    if every:
        latency["all"] = latency_ms(every)
    warm_rss, end_rss = memory["warm"]["gateway"], memory["end"]["gateway"]
    growth = None if warm_rss is None or end_rss is None or not requests else \
        round((end_rss - warm_rss) / requests * 1000, 3)
    samples: dict[str, str] = {}
    for info in infos:
        for kind, text in info["samples"].items():
            samples.setdefault(kind, text)
    return {
        "requests": requests, "seconds": round(seconds, 3),
        "requests_per_s": round(requests / seconds, 1) if seconds > 0 else None,
        "errors": sum(measured.errors.values()), "errors_by_kind": dict(measured.errors),
        "expected_refusals": dict(measured.refusals),
        "warmup_errors": dict(warm.errors), "error_samples": samples,
        "latency_ms": latency, "ready_s": round(ready_s, 2),
        "rss_mb": {phase: m["gateway"] for phase, m in memory.items()},
        "children_rss_mb": {phase: m["children"] for phase, m in memory.items()},
        "rss_growth_mb_per_1000": growth, "gateway_cpu_s": cpu_s,
        "load_average": [[round(x, 2) for x in avg] for avg in load],
        "protocols": sorted({str(i["protocol"]) for i in infos}),
        "clients_with_token": sum(bool(i["token"]) for i in infos),
        "tokens_changed": sum(i["tokens_changed"] for i in infos),
        "find_tools_not_ready": sum(i["not_ready"] for i in infos),
        "clients": config.clients, "requests_per_client": config.requests,
    }


def _median(values: list[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    middle = len(known) // 2
    return known[middle] if len(known) % 2 else round((known[middle - 1] + known[middle]) / 2, 3)


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the runs (errors: their total)."""
    kinds = sorted({kind for run in runs for kind in run["latency_ms"]})
    return {
        "runs": len(runs), "errors": sum(run["errors"] for run in runs),
        "requests_per_s": _median([run["requests_per_s"] for run in runs]),
        "rss_growth_mb_per_1000": _median([run["rss_growth_mb_per_1000"] for run in runs]),
        "rss_end_mb": _median([run["rss_mb"]["end"] for run in runs]),
        "latency_ms": {kind: {q: _median([run["latency_ms"].get(kind, {}).get(q)
                                          for run in runs]) for q in ("p50", "p95", "p99")}
                       for kind in kinds},
    }


def _cell(values: dict[str, Any], *keys: str) -> str:
    return " / ".join("-" if values.get(k) is None else f"{values[k]:,}" for k in keys)


def markdown(result: dict[str, Any]) -> str:
    """The report as Markdown: a row per run and the median, then latency per kind."""
    config, checkout = result["config"], result["checkout"]
    lines = [f"gateway-load {result['date']}: {config['clients']} clients x "
             f"{config['requests']} requests, {config['mode']} mode, client mode "
             f"{config['protocol']}; hyperplan {checkout.get('commit', '?')[:10]} "
             f"({checkout.get('module', '?')})", f"gateway: `{result['gateway']}`", "",
             "| run | req/s | errors | expected refusals | p50 / p95 / p99 all (ms) | RSS MB "
             "ready / warm / end | children MB end | MB per 1,000 req | gateway CPU s "
             "| load avg |", "|---|---|---|---|---|---|---|---|---|---|"]
    for i, run in enumerate(result["runs"], 1):
        every = run["latency_ms"].get("all", {})
        lines.append(
            f"| {i} | {run['requests_per_s']} | {run['errors']} "
            f"| {sum(run['expected_refusals'].values())} | {_cell(every, 'p50', 'p95', 'p99')} "
            f"| {_cell(run['rss_mb'], 'ready', 'warm', 'end')} "
            f"| {_cell(run['children_rss_mb'], 'end')} "
            f"| {run['rss_growth_mb_per_1000']} | {run['gateway_cpu_s']} "
            f"| {run['load_average'][1][0]} |")
    summary = result["summary"]
    lines += ["", "| kind (median of runs) | p50 (ms) | p95 (ms) | p99 (ms) |",
              "|---|---|---|---|"]
    for kind, q in summary["latency_ms"].items():
        lines.append(f"| {kind} | {_cell(q, 'p50')} | {_cell(q, 'p95')} | {_cell(q, 'p99')} |")
    lines.append(f"\nmedian {summary['requests_per_s']} req/s, {summary['errors']} errors in "
                 f"{summary['runs']} run(s), RSS growth {summary['rss_growth_mb_per_1000']} MB "
                 "per 1,000 requests")
    for i, run in enumerate(result["runs"], 1):
        for kind, count in {**run["errors_by_kind"], **{
                f"warm-up {k}": v for k, v in run["warmup_errors"].items()}}.items():
            lines.append(f"- run {i}: {count} x {kind}")
    return "\n".join(lines)
