#!/usr/bin/env python3
"""Renders friction's report data (JSON written by `friction report`) as one
self-contained HTML file: every figure is an inline PNG. Metrics are computed
in C++ (benchmarks/metrics); this script only draws.

Usage: render_report.py DATA.json OUT.html
"""
import base64
import html
import io
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def figure_html(fig, caption, **margins):
    buf = io.BytesIO()
    # Fixed margins per figure kind: automatic layout (tight_layout, bbox_inches="tight") measures every
    # text twice and dominated report time on large stores.
    fig.subplots_adjust(**{"left": 0.08, "right": 0.97, "bottom": 0.14, "top": 0.88, "wspace": 0.3, **margins})
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return (f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def grouped(series):
    groups = defaultdict(list)
    for s in series:
        groups[(s["model"], s["backend"])].append(s)
    return groups


def batch_figures(data):
    out = []
    for (model, backend), series in grouped(data.get("series", [])).items():
        if not any(len(s["points"]) >= 2 for s in series):
            continue
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        for s in series:
            pts = s["points"]
            b = [p["batch"] for p in pts]
            line = axes[0].errorbar(b, [p["median_ms"] for p in pts],
                                    yerr=[[p["median_ms"] - p["ci_ms"][0] for p in pts],
                                          [p["ci_ms"][1] - p["median_ms"] for p in pts]],
                                    marker="o", capsize=3, label=s["config"])
            # Throughput's interval follows from latency's: T = 1000 b / L.
            axes[1].errorbar(b, [1000 * p["batch"] / p["median_ms"] for p in pts],
                             yerr=[[1000 * p["batch"] * (1 / p["median_ms"] - 1 / p["ci_ms"][1]) for p in pts],
                                   [1000 * p["batch"] * (1 / p["ci_ms"][0] - 1 / p["median_ms"]) for p in pts]],
                             marker="o", capsize=3)
            ms = s.get("metrics") or []
            axes[2].errorbar([m["batch"] for m in ms], [m["friction"] for m in ms],
                             yerr=error_bars([m["friction"] for m in ms], [m["friction_ci"] for m in ms]),
                             marker="o", capsize=3)
            # Flagged (unstable) cells: a red ring on each panel.
            for p in pts:
                if p.get("unstable"):
                    axes[0].plot([p["batch"]], [p["median_ms"]], "o", ms=12, mfc="none", mec="red")
                    axes[1].plot([p["batch"]], [1000 * p["batch"] / p["median_ms"]], "o", ms=12, mfc="none", mec="red")
        titles = ["median latency L(b), ms (95% CI)", "throughput T(b), samples/s (95% CI)",
                  "friction F(b) = max(0, 1 - E(b)) (95% CI" +
                  (", over rounds)" if all("phi_ci" in s for s in series if "phi" in s) else ", conservative)")]
        batches = sorted({p["batch"] for s in series for p in s["points"]})
        for ax, t in zip(axes, titles):
            ax.set_xscale("log", base=2)
            # Plain labels at the measured batches: log-axis math text is slow to lay out.
            ax.set_xticks(batches, [str(b) for b in batches])
            ax.minorticks_off()
            ax.set_xlabel("batch")
            ax.set_title(t, fontsize=10)
        axes[0].legend(fontsize=7)
        phis = ", ".join(f'{s["config"]}: phi={with_ci(s["phi"], s.get("phi_ci"), ".2f")}' for s in series if "phi" in s)
        flagged = sum(bool(p.get("unstable")) for s in series for p in s["points"])
        note = f" Red rings: {flagged} flagged (unstable) cell(s)." if flagged else ""
        out.append(figure_html(fig, f"{model} on {backend}: latency, throughput and friction vs batch. {phis}.{note}"))
    return out


def attribution_figures(data):
    out = []
    groups = defaultdict(list)
    for a in data.get("attributions", []) or []:
        if a["method"] != "interaction":
            groups[(a["model"], a["backend"], a["batch"], a["method"])].append(a)
    for (model, backend, batch, method), rows in groups.items():
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.2))
        # A pass whose CI over rounds contains 0 has no measurable effect: shown grey, with its CI, not as a finding.
        names = [r["pass"] if r.get("measurable", True) else r["pass"] + " (no measurable effect)" for r in rows]
        vals = [r["value_ms"] for r in rows]
        cis = [r.get("ci_ms") for r in rows]
        if all(cis):
            errs = [[max(0.0, v - c[0]) for v, c in zip(vals, cis)], [max(0.0, c[1] - v) for v, c in zip(vals, cis)]]
        else:
            errs = [r["stderr_ms"] for r in rows]
            errs = errs if any(errs) else None
        colors = ["tab:gray" if not r.get("measurable", True) else "tab:green" if v > 0 else "tab:red"
                  for r, v in zip(rows, vals)]
        ax.barh(names, vals, xerr=errs, capsize=3, color=colors)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("ms")
        meaning = {"loo": "latency added when the pass is turned off",
                   "aoi": "latency change when only this pass is on",
                   "shapley": "Shapley value of latency (negative = the pass saves time)"}[method]
        out.append(figure_html(fig, f"Pass attribution ({method}), {model} on {backend}, batch {batch}: {meaning}; "
                                    "bars: median over interleaved rounds, whiskers: 95% CI over rounds",
                               left=0.4, bottom=0.1, top=0.95))
    inter = defaultdict(dict)
    for a in data.get("attributions", []) or []:
        if a["method"] == "interaction":
            inter[(a["model"], a["backend"], a["batch"])][tuple(a["pass"].split("|"))] = a["value_ms"]
    for (model, backend, batch), pairs in inter.items():
        names = sorted({p for pair in pairs for p in pair})
        idx = {n: i for i, n in enumerate(names)}
        grid = [[0.0] * len(names) for _ in names]
        for (p, q), v in pairs.items():
            grid[idx[p]][idx[q]] = grid[idx[q]][idx[p]] = v
        fig, ax = plt.subplots(figsize=(1 + 0.5 * len(names), 1 + 0.5 * len(names)))
        lim = max((abs(v) for row in grid for v in row), default=1) or 1
        im = ax.imshow(grid, cmap="coolwarm", vmin=-lim, vmax=lim)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
        ax.set_yticks(range(len(names)), names, fontsize=7)
        fig.colorbar(im, ax=ax, label="ms")
        out.append(figure_html(fig, f"Pairwise pass interactions (Shapley interaction index), {model} on {backend}, "
                                    f"batch {batch}: negative = the pair saves more together than apart",
                               left=0.3, bottom=0.3, right=0.9, top=0.97))
    return out


def ranking_figures(data):
    out = []
    for r in data.get("rankings", []):
        fig, ax = plt.subplots(figsize=(5, 0.4 * len(r["items"]) + 1.5))
        inverted = {(i["a"], i["b"]) for i in r.get("inversions", [])} | {(i["b"], i["a"]) for i in r.get("inversions", [])}
        involved = {n for pair in inverted for n in pair}
        for item in r["items"]:
            color = "tab:red" if item["name"] in involved else "tab:gray"
            ax.plot([0, 1], [item["rank_a"], item["rank_b"]], marker="o", color=color)
            ax.annotate(item["name"], (1.02, item["rank_b"]), fontsize=7, va="center")
        ax.set_xticks([0, 1], [r["condition_a"], r["condition_b"]])
        ax.set_yticks(range(len(r["items"])))
        ax.invert_yaxis()
        ax.set_ylabel("rank (0 = fastest)")
        ax.set_xlim(-0.1, 1.6)
        n_inv, tau = len(r.get("inversions", [])), num(r["kendall_tau"], ".2f", "n/a")
        out.append(figure_html(fig, f'Rankings on {r["backend"]}, batch {r["batch"]}: {r["condition_a"]} vs '
                                    f'{r["condition_b"]}; Kendall tau {tau}; {n_inv} significant '
                                    f"inversion(s) in red", left=0.15, right=0.7, top=0.97, bottom=0.08))
    return out


def depth_figures(data):
    out = []
    for d in data.get("depth", []):
        n = [p["blocks"] for p in d["points"]]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        def bars(key, ci):
            return [[p[key] - p[ci][0] for p in d["points"]], [p[ci][1] - p[key] for p in d["points"]]]
        axes[0].errorbar(n, [p["baseline_ms"] for p in d["points"]], yerr=bars("baseline_ms", "baseline_ci_ms"),
                         marker="o", capsize=3, label="all-off")
        axes[0].errorbar(n, [p["compiled_ms"] for p in d["points"]], yerr=bars("compiled_ms", "compiled_ci_ms"),
                         marker="o", capsize=3, label="default")
        axes[0].set_xlabel("blocks N")
        axes[0].set_title("latency, ms (95% CI)", fontsize=10)
        axes[0].legend()
        axes[1].errorbar(n, [p["speedup"] for p in d["points"]], yerr=bars("speedup", "speedup_ci"), marker="o", capsize=3)
        axes[1].set_xlabel("blocks N")
        axes[1].set_title("speedup S(N) (conservative 95% CI)", fontsize=10)
        out.append(figure_html(fig, f'Depth scaling of {d["family"]} on {d["backend"]}, batch {d["batch"]}: '
                                    f'{d["slope_baseline_ms"]:.3f} vs {d["slope_compiled_ms"]:.3f} ms per added block '
                                    f'(ratio {d["slope_ratio"]:.2f})'))
    return out


def num(v, fmt, missing="&ndash;"):
    """A metric value; NaN and missing ones (JSON null: tau of a ranking with all items tied) print as `missing`."""
    return missing if v is None or v != v else format(v, fmt)


def error_bars(values, intervals):
    """matplotlib's yerr for values with intervals; a bootstrap interval need not hold its point estimate
    (matplotlib refuses negative bars), so a bar never reaches past the value."""
    return [[max(0.0, v - ci[0]) for v, ci in zip(values, intervals)],
            [max(0.0, ci[1] - v) for v, ci in zip(values, intervals)]]


def with_ci(v, ci, fmt):
    """A value with its 95% interval when it has one: 0.85 [0.80, 0.90]."""
    text = num(v, fmt)
    return text if not ci or v is None else f"{text} [{format(ci[0], fmt)}, {format(ci[1], fmt)}]"


def delta_phi_cell(r):
    """delta-phi of a mitigation row: with its interval, and as no measurable change when that holds 0."""
    v, ci = r.get("delta_phi"), r.get("delta_phi_ci")
    if ci and ci[0] <= 0 <= ci[1]:
        return f"no measurable change [{ci[0]:+.2f}, {ci[1]:+.2f}]"
    return with_ci(v, ci, "+.2f")


def table(header, rows):
    """An HTML table; `rows` hold cells already escaped."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def inversion_cells(i):
    """Pair, then the ratio of medians a/b with its 95% CI under condition a and under condition b."""
    return [f'{html.escape(i["a"])} / {html.escape(i["b"])}'] + [
        f'{i[r]:.3f} [{i[ci][0]:.3f}, {i[ci][1]:.3f}]' for r, ci in (("ratio_a", "ci_a"), ("ratio_b", "ci_b"))]


def inversion_table(data):
    rows = [[html.escape(r["backend"]), str(r["batch"])] + inversion_cells(i)
            for r in data.get("rankings", []) for i in r.get("inversions", [])]
    if not rows:
        return ("<p>No significant ranking inversions (both CIs of the pair's ratio must clear 1 by the minimum "
                f"effect, {data.get('min_effect', 0):.0%}).</p>")
    return table(["backend", "batch", "pair", "ratio all-off [95% CI]", "ratio default [95% CI]"], rows)


def executor_tables(data):
    """Executors (backend + pass configuration) side by side: phi per model, depth slopes, and each one's
    model rankings against the reference executor."""
    execs = data.get("executors", [])
    if not execs:
        return []
    names = [e["executor"] for e in execs]
    out = ["<p>An executor is a backend spec with a friction pass configuration (backend|config).</p>"]
    models = sorted({m for e in execs for m in e["phi"]})
    if models:
        out.append("<h3>Friction exponent phi (slope of ln L over ln b) per model, with its 95% interval over the "
                   "rounds where measured in rounds</h3>")
        out.append(table(["model"] + names, [[html.escape(m)] + [with_ci(e["phi"].get(m), e.get("phi_ci", {}).get(m), ".2f")
                                                                 for e in execs] for m in models]))
    slopes = {(e["executor"], d["family"], d["batch"]): d["slope_ms"] for e in execs for d in e["depth_slopes"]}
    families = sorted({(f, b) for _, f, b in slopes})
    if families:
        out.append("<h3>Latency per added block (ms/block, least squares over every measured depth)</h3>")
        out.append(table(["family", "batch"] + names, [[html.escape(f), str(b)] + [num(slopes.get((n, f, b)), ".3f")
                                                       for n in names] for f, b in families]))
    ref = data.get("reference")
    summary = [[html.escape(e["executor"]), str(e["vs_reference"]["inversions"]),
                num(e["vs_reference"]["mean_kendall_tau"], ".2f"), str(e["vs_reference"]["groups_with_tau"])]
               for e in execs if "vs_reference" in e]
    if summary:
        out.append(f"<h3>Model rankings against {html.escape(ref)}</h3><p>Models are ranked at each batch and, for "
                   "zoo models with a depth knob, among models of the same depth. A pair is inverted only when both "
                   "orderings are significant: the CI of the pair's ratio clears 1 by the minimum effect "
                   f"({data.get('min_effect', 0):.0%}) under both executors (paired over rounds where both models "
                   "were measured in the same rounds, else bootstrap of the ratio of medians).</p>")
        out.append(table(["executor", "significant inversions", "mean Kendall tau", "rankings averaged"], summary))
        rows = [[html.escape(r["executor"]), str(r["batch"]), num(r["depth"], "d")] + inversion_cells(i)
                + [num(r["kendall_tau"], ".2f")] for r in data.get("executor_rankings", []) for i in r["inversions"]]
        if rows:
            out.append(table(["executor", "batch", "depth", "pair a / b", "ratio a/b, reference [95% CI]",
                              "ratio a/b, executor [95% CI]", "Kendall tau"], rows))
    return out


def short(model):
    """A zoo spec without its fixed knobs, for figure labels: zoo:resnet?width=16&...&depth=2 -> resnet depth=2."""
    if not model.startswith("zoo:"):
        return model
    arch, _, knobs = model[4:].partition("?")
    depth = [k for k in knobs.split("&") if k.startswith("depth=")]
    return " ".join([arch] + depth)


def mitigation_section(data):
    """Compiler friction mitigation of each executor against the reference: R(b) per model with intervals,
    and delta-phi."""
    rows = data.get("mitigation") or []
    if not rows:
        return []
    ref = data.get("reference", "")
    out = [f"<p>Against the reference executor {html.escape(ref)}: S(b) = L_reference(b) / L_executor(b) (from the "
           "paired ratios), R(b) = S(b) / S(b0) at the smallest batch (R &gt; 1: the executor's advantage grows with "
           "the batch), and delta-phi = phi(executor) - phi(reference) (&lt; 0: the executor's per-sample cost falls "
           "faster with the batch). Where every batch was measured in rounds shared with the reference, R(b) and "
           "delta-phi (the slope of the per-round log ratio over ln b) carry 95% bootstrap intervals over the rounds, "
           "and a delta-phi whose interval holds 0 is no measurable change; elsewhere R(b)'s interval joins the two "
           "S intervals (conservative) and delta-phi has none.</p>"]
    execs = sorted({r["executor"] for r in rows})
    models = sorted({r["model"] for r in rows})
    by = {(r["executor"], r["model"]): r for r in rows}
    out.append(table(["model"] + execs, [[html.escape(short(m))] + [delta_phi_cell(by.get((e, m), {}))
                                                                   for e in execs] for m in models]))
    cols = min(3, len(models))
    nrows = (len(models) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
    for ax, m in zip([a for row in axes for a in row], models):
        for e in execs:
            r = by.get((e, m))
            if not r:
                continue
            b = [p["batch"] for p in r["points"]]
            v = [p["mitigation"] for p in r["points"]]
            ax.errorbar(b, v, yerr=error_bars(v, [p["mitigation_ci"] for p in r["points"]]),
                        marker="o", capsize=3, label=e)
        ax.axhline(1, color="black", lw=0.8)
        ax.set_xscale("log", base=2)
        batches = sorted({p["batch"] for r in rows for p in r["points"]})
        ax.set_xticks(batches, [str(x) for x in batches])
        ax.minorticks_off()
        ax.set_title(short(m), fontsize=10)
        ax.set_xlabel("batch")
        ax.set_ylabel("R(b)")
    for ax in [a for row in axes for a in row][len(models):]:
        ax.axis("off")
    axes[0][0].legend(fontsize=7)
    paired = all(r.get("paired") for r in rows)
    out.append(figure_html(fig, f"Compiler friction mitigation R(b) against {ref} (95% CI, "
                                f"{'bootstrap over rounds' if paired else 'conservative where not paired'})",
                           hspace=0.45, bottom=0.1))
    return out


def graph_section(data):
    """The ablated models' graphs after the passes (inline SVG drawn by Graphviz)."""
    out = []
    for g in data.get("graphs") or []:
        if "svg" in g:
            svg = g["svg"][g["svg"].find("<svg"):]  # drop the XML prologue and doctype
            out.append(f'<figure class="graph">{svg}<figcaption>{html.escape(g["model"])} after the default pipeline: '
                       "grey clusters are fused regions (one kernel each) with the nodes they replaced, orange boxes "
                       "run channels-last, dark orange ones are layout transposes.</figcaption></figure>")
        else:
            out.append(f"<p>{html.escape(g['model'])}: not drawn ({html.escape(g.get('note', ''))}).</p>")
    return out


def machine_section(data):
    m = data.get("machine") or {}
    out = []
    fps = m.get("fingerprints") or []
    if fps:
        out.append(f"<p>{len(fps)} machine/build fingerprint(s); measured with {', '.join(map(str, m.get('threads', [])))} "
                   "thread(s).</p>")
        out.append(table(["CPU", "cores", "friction revision", "tool", "libraries"],
                         [[html.escape(f["cpu"]), str(f["cores"]), html.escape(f["friction_revision"]),
                           html.escape(f["tool_version"]), html.escape(f["libraries"])] for f in fps]))
    st = m.get("rounds") or {}
    if st.get("rounds"):
        cross = (f"; core-to-core round trip at the rounds' calibrations: median {st['median_cross_core_ns']:.0f} ns"
                 if st.get("median_cross_core_ns") else "")
        bw = st.get("memory_gbps")
        memory = (f" Memory bandwidth at the rounds' calibrations: median {bw['median']:.1f} GB/s, p10-p90 "
                  f"{bw['p10']:.1f}-{bw['p90']:.1f}." if bw else "")
        out.append(f"<p>Machine state over {st['rounds']} interleaved rounds: median contention "
                   f"{st.get('median_contention', 1):.2f} (1: the harness had the cores), {st['slow_rounds']} slow "
                   f"round(s){cross}; blocks waited {st['near_wait_s']:.1f} s in all for the cores to share a cache "
                   f"again, and {st['far_blocks']} of {st['blocks']} blocks were timed with them apart "
                   f"(docs/metrics.md, \"Core-to-core distance\").{memory}</p>")
    if m.get("executors"):
        out.append(table(["backend", "executor (versions and settings)"],
                         [[html.escape(b), html.escape(d)] for b, d in sorted(m["executors"].items())]))
    return out


def findings(data):
    """The report's conclusions in words, each with how sure it is."""
    items = []
    checks = data.get("output_checks") or {}
    if checks.get("differ"):
        first = checks["differ"][0]
        items.append(f"<b>Wrong outputs</b>: {len(checks['differ'])} of {checks['checked']} checked cells computed "
                     f"outputs that differ from the interpreter's (relative error above {checks['threshold']:g}; the "
                     f"first: {html.escape(first['backend'])} on {html.escape(short(first['model']))} at batch "
                     f"{first['batch']}): their timings are of programs that compute something else (Output checks).")
    aa = data.get("aa") or {}
    if aa.get("controls"):
        items.append(f"<b>Protocol</b>: {len(aa['controls'])} A/A controls (one program measured twice) read as different "
                     f"in {aa['false_difference_rate']:.0%} of cases; {aa['within_3_percent']:.0%} agree within 3%.")
    ref = data.get("reference")
    # The study's executors; an ablation's leave-one-out configurations ("-pass") speak through the passes' line.
    study = {e["executor"] for e in data.get("executors", []) if not e["config"].startswith("-")}
    for e in data.get("executors", []):
        v = e.get("vs_reference")
        if not v or e["executor"] not in study or not v["groups_with_tau"]:
            continue
        example = ""
        for r in data.get("executor_rankings", []):
            if r["executor"] == e["executor"] and r["inversions"]:
                i = r["inversions"][0]
                example = (f" (e.g. {html.escape(short(i['a']))} vs {html.escape(short(i['b']))} at batch {r['batch']}: "
                           f"ratio {i['ratio_a']:.2f} [{i['ci_a'][0]:.2f}, {i['ci_a'][1]:.2f}] under the reference, "
                           f"{i['ratio_b']:.2f} [{i['ci_b'][0]:.2f}, {i['ci_b'][1]:.2f}] under this executor)")
                break
        items.append(f"<b>Rankings</b>: {html.escape(e['executor'])} inverts {v['inversions']} model pair(s) of "
                     f"{html.escape(ref)}'s ranking significantly (both CIs clear 1){example}; mean Kendall tau "
                     f"{num(v['mean_kendall_tau'], '.2f')} over {v['groups_with_tau']} group(s).")
    mit = data.get("mitigation") or []
    by_exec = defaultdict(list)
    for r in mit:
        if "delta_phi" in r and r["executor"] in study:
            by_exec[r["executor"]].append(r)
    if by_exec:
        mean = {e: sum(r["delta_phi"] for r in rs) / len(rs) for e, rs in by_exec.items()}
        best = min(mean, key=mean.get)
        last = [r["points"][-1] for r in by_exec[best]]
        sure = sum(p["mitigation_ci"][0] > 1 for p in last)
        below = sum(1 for r in by_exec[best] if r.get("delta_phi_ci") and r["delta_phi_ci"][1] < 0)
        measured = sum(1 for r in by_exec[best] if r.get("delta_phi_ci"))
        lower = f"; delta-phi's interval lies below 0 for {below} of the {measured} model(s) with an interval" if measured else ""
        items.append(f"<b>Friction</b>: {html.escape(best)} mitigates batch friction most against {html.escape(ref)}: "
                     f"delta-phi {mean[best]:+.2f} on average over {len(by_exec[best])} model(s){lower}; its advantage "
                     f"at the largest batch grows significantly (R's CI above 1) for {sure} of them.")
    atts = [a for a in data.get("attributions") or [] if a["method"] == "loo"]
    if atts:
        matter = sorted((a for a in atts if a.get("measurable")), key=lambda a: -a["value_ms"])
        none = sorted({a["pass"] for a in atts} - {a["pass"] for a in matter})
        said = "; ".join(f"{html.escape(a['pass'])} {a['value_ms']:+.3f} ms [{a['ci_ms'][0]:+.3f}, {a['ci_ms'][1]:+.3f}] "
                         f"at batch {a['batch']}" for a in matter[:5] if a.get("ci_ms"))
        items.append(f"<b>Passes</b> (leave-one-out, latency added by turning the pass off, 95% CI): "
                     f"{said or 'none has a measurable effect'}. No measurable effect: {html.escape(', '.join(none)) or 'none'}.")
    if not items:
        return ""
    return "<h2>Findings</h2><ul>" + "".join(f"<li>{i}</li>" for i in items if i) + "</ul>"


def aa_section(data):
    """The A/A controls: a program measured twice in the same rounds; how often the protocol calls them different."""
    aa = data.get("aa") or {}
    rows = aa.get("controls", [])
    if not rows:
        return ["<p>No A/A controls in this store (`aa_control = true` in a sweep spec; on by default in ablate, "
                "whose A/A result it prints).</p>"]
    out = [f'<p>{len(rows)} A/A controls (one program compiled and measured twice, in the same interleaved rounds): '
           f'false-difference rate {aa["false_difference_rate"]:.0%} (the CI of the paired ratio clears 1 by the '
           f'minimum effect, {data.get("min_effect", 0):.0%}), '
           f'{aa["within_3_percent"]:.0%} within 3%. Read every other finding of this report against this rate.</p>']
    out.append(table(["model", "backend", "batch", "ratio twin/original [95% CI]", "false difference"],
                     [[html.escape(r["model"]), html.escape(r["backend"]), str(r["batch"]),
                       f'{r["ratio"]:.3f} [{r["ci"][0]:.3f}, {r["ci"][1]:.3f}]', "yes" if r["false_difference"] else "no"]
                      for r in rows]))
    return out


def rel_error(v):
    return v if isinstance(v, str) else f"{v:.2g}"  # "inf": a NaN where the reference has none


def output_checks_section(data):
    """Which cells were checked against the interpreter, and those whose outputs differ."""
    checks = data.get("output_checks") or {}
    if not checks.get("checked"):
        return ["<p>No cell's outputs were checked against the interpreter (`check = false`, or --no-check).</p>"]
    out = [f'<p>{checks["checked"]} cells checked against the reference interpreter on the unoptimized model; the '
           f'largest error relative to an output\'s largest value: {rel_error(checks["largest_rel_error"])}. A cell '
           f'differs above {checks["threshold"]:g}: ten times the tests\' tolerance.</p>']
    if checks["differ"]:
        out.append(table(["model", "backend", "passes", "batch", "max rel error"],
                         [[html.escape(r["model"]), html.escape(r["backend"]), html.escape(r["config"]), str(r["batch"]),
                           rel_error(r["max_rel_error"])] for r in checks["differ"]]))
    else:
        out.append("<p>Every checked cell matched.</p>")
    return out


def main():
    data = json.load(open(sys.argv[1]))
    sections = [
        ("Output checks", output_checks_section(data)),
        ("A/A control", aa_section(data)),
        ("Latency, throughput and friction vs batch", batch_figures(data)),
        ("Pass attribution", attribution_figures(data)),
        ("The ablated model's graph", graph_section(data)),
        ("Rankings", ranking_figures(data)),
        ("Depth scaling", depth_figures(data)),
        ("Executors", executor_tables(data)),
        ("Compiler friction mitigation", mitigation_section(data)),
        ("Machine and versions", machine_section(data)),
    ]
    body = [f'<h1>friction report</h1><p>{data["measurements"]} measurements from {html.escape(data["db"])}. '
            "Metric definitions: docs/metrics.md. Raw rows: the .csv beside this file.</p>", findings(data)]
    for title, figs in sections:
        body.append(f"<h2>{title}</h2>")
        body.extend(figs if figs else ['<p class="empty">No data for this section in the store.</p>'])
        if title == "Rankings":
            body.append(inversion_table(data))
    # After loading, the page records how many figures decoded and how many sections are empty: a headless
    # browser test reads them back.
    check = ("<script>window.addEventListener('load',()=>{const i=[...document.images];"
             "document.body.dataset.figures=i.filter(x=>x.complete&&x.naturalWidth>0).length+'/'+i.length;"
             "document.body.dataset.sections=document.querySelectorAll('h2').length;"
             "document.body.dataset.empty=document.querySelectorAll('p.empty').length;});</script>")
    style = ("body{font-family:sans-serif;max-width:1200px;margin:auto}figure{margin:1em 0}"
             "img{max-width:100%}.graph svg{max-width:100%;height:auto;max-height:1400px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px}")
    with open(sys.argv[2], "w") as f:
        f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>friction report</title>"
                f"<style>{style}</style>{check}</head><body>{''.join(body)}</body></html>")


if __name__ == "__main__":
    main()
