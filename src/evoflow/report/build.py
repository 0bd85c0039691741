"""Build an experiment's tables and figures from cached artifacts.

Reads evaluations' episode shards (per-task outcomes, for every interval and
paired comparison), ``metrics.json`` and ``comm.json`` files, so reports
regenerate in seconds from artifacts and never rerun a model.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from evoflow.atomic import write_text
from evoflow.fed.settings import AggregationSettings
from evoflow.methods import (
    ABLATION_KINDS,
    KINDS,
    Layout,
    Method,
    family,
    method_title,
    methods_from_config,
)
from evoflow.methods import rl as rl_family
from evoflow.methods.base import evaluated_as
from evoflow.methods.fedse import server_settings
from evoflow.methods.registry import ENVLESS
from evoflow.report import agentgym, agentgym_rl, evidence, figures, sage, scaling
from evoflow.report.behaviour import (
    behaviour_markdown,
    explored_by_round,
    rounds_markdown,
)
from evoflow.report.outcomes import outcomes_csv, read_outcomes
from evoflow.report.tables import (
    ENV_TITLES,
    Row,
    load_row,
    reference_rows,
    write_tables,
)

log = logging.getLogger(__name__)


def report_outputs(config: dict, reports: str) -> dict[str, str]:
    """Files the report of this config consists of (known before any job runs)."""
    methods = methods_from_config(config)
    outputs = {}
    if _sage_methods(methods):
        outputs["sage_tables"] = f"{reports}/sage_tables.md"
        outputs["sage_tables_csv"] = f"{reports}/sage_tables.csv"
        outputs["sage_dynamics"] = f"{reports}/figures/sage_dynamics.png"
    if _sage_methods(methods) or _env_methods(methods):  # per-task outcomes, pairs
        outputs["comparisons_csv"] = f"{reports}/comparisons.csv"
        outputs["outcomes_csv"] = f"{reports}/outcomes.csv"
    methods = _env_methods(methods)
    if not methods:
        return outputs
    outputs |= {
        "table_md": f"{reports}/table1.md",
        "table_csv": f"{reports}/table1.csv",
        "table_tex": f"{reports}/table1.tex",
        "curves": f"{reports}/figures/success_by_round.png",
    }
    if len({m.kind.name for m in methods.values()} & set(ABLATION_KINDS)) > 1:
        outputs["ablations"] = f"{reports}/figures/ablations.png"
    if len(rank_methods(methods)) > 1:
        outputs["ranks"] = f"{reports}/figures/rank_vs_communication.png"
    if any(m.kind.family == "agentevol" for m in methods.values()):
        outputs["table3_md"] = f"{reports}/table3.md"
        outputs["table3_csv"] = f"{reports}/table3.csv"
    tts = config.get("tts") or {}
    if tts.get("methods") and tts.get("turns"):
        outputs["tts_turns"] = f"{reports}/figures/tts_turns.png"
    if tts.get("methods") and tts.get("samples"):
        outputs["tts_passk"] = f"{reports}/figures/tts_passk.png"
    if any(m.kind.iterative and m.kind.family == "agentevol" for m in methods.values()):
        outputs["iterations"] = f"{reports}/figures/agentevol_iterations.png"
    if _rl_methods(methods):
        outputs["rl_training"] = f"{reports}/figures/rl_training.png"
        if _table_envs(config):
            outputs["rl_tables"] = f"{reports}/agentgym_rl_tables.md"
            outputs["rl_tables_csv"] = f"{reports}/agentgym_rl_tables.csv"
    return outputs


def report_rl_inputs(config: dict, results: str) -> list[str]:
    """What the RL figure and tables read besides metrics and episodes: every
    span's metrics (its per-subset cells read the final evaluations' episodes,
    which the report rule lists with every evaluation's)."""
    methods, layout = methods_from_config(config), Layout(results)
    return [layout.server(name, r, "metrics.json")
            for name, m in _rl_methods(methods).items() for r in range(1, m.rounds + 1)]  # fmt: skip


def report_sage_inputs(config: dict, results: str) -> list[str]:
    """What SAGE's report reads besides its evaluations' metrics: every span's
    metrics (the figure) and every evaluation's episodes (per-problem outcomes)."""
    methods, layout = _sage_methods(methods_from_config(config)), Layout(results)
    spans = [layout.server(name, r, "metrics.json")
             for name, m in methods.items() for r in range(1, m.rounds + 1)]  # fmt: skip
    return spans + [layout.sage_eval(name, r, "episodes.parquet")
                    for name, m in methods.items() for r in m.eval_rounds]  # fmt: skip


def build_report(
    config: dict, results: str | Path, outputs: dict[str, str]
) -> list[Row]:
    """Write every output of ``report_outputs``; return the table rows."""
    every, layout = methods_from_config(config), Layout(str(results))
    evaluations, compared = {}, []
    if "sage_tables" in outputs:
        evaluations, compared = sage.write_report(
            _sage_methods(every), layout, outputs, config["seed"]
        )
    methods = dict(sorted(_env_methods(every).items(), key=lambda kv: _row_order(*kv)))
    rows = []
    if methods:
        rows, outcomes, found = _env_report(config, every, methods, layout, outputs)
        evaluations, compared = {**evaluations, **outcomes}, compared + found
    if "outcomes_csv" in outputs:
        write_text(outputs["comparisons_csv"], evidence.comparisons_csv(compared))
        write_text(outputs["outcomes_csv"], outcomes_csv(evaluations))
    return rows


def _env_report(config, every, methods, layout, outputs):
    """Table 1, its companion text and the env families' figures; returns the
    rows, every evaluation's per-task outcomes and the paired comparisons."""
    envs = list(config["envs"])

    def metric_files(name: str, round: int) -> list[str]:
        return layout.evaluations(
            *evaluated_as(every[name], round), envs, "metrics.json"
        )

    outcomes = {(name, r): read_outcomes(layout.evaluations(
                    *evaluated_as(every[name], r), envs, "episodes.parquet"))
                for name, m in methods.items() for r in m.eval_rounds}  # fmt: skip
    titles = {name: method_title(name, m.kind.name) for name, m in methods.items()}
    rows = [load_row(name, titles[name], metric_files(name, m.final_round),
                     outcomes[(name, m.final_round)])
            for name, m in methods.items()]  # fmt: skip
    final = {name: outcomes[(name, m.final_round)] for name, m in methods.items()}
    compared = evidence.compare(final, evidence.planned_pairs(methods), config["seed"])
    reference = reference_rows(config["model"]["name"])
    exploration = {
        name: explored_by_round(family(m).buffers(layout, m, envs))
        for name, m in methods.items()
        if m.kind.explores
    }
    companion = (
        _comparisons_text(compared, titles, _split(config))
        + f"\nHow the methods behave (final evaluation, pooled over all {_split(config)} "
        "episodes; exploration successes per round, summed over clients, then in "
        "all):\n\n"
        + behaviour_markdown(rows, exploration)
        + _by_round(methods, metric_files, outcomes)
    )
    write_tables(rows, outputs["table_md"], outputs["table_csv"], outputs["table_tex"],
                 reference, _note(config, methods), companion)  # fmt: skip

    _success_figure(methods, rows, envs, metric_files, outputs["curves"], layout,
                    outcomes)  # fmt: skip
    if "ablations" in outputs:
        ablated = [(r, m) for r, m in zip(rows, methods.values(), strict=True)
                   if m.kind.name in ABLATION_KINDS]  # fmt: skip
        bars = {r.title: _panel(r).get("avg", (0.0, 0.0, 0.0)) for r, _ in ablated}
        figures.ablation_bars(bars, outputs["ablations"],
                              methods={r.title: r.method for r, _ in ablated})  # fmt: skip
    if "ranks" in outputs:
        points = []
        for name, method in rank_methods(methods).items():
            comm = json.loads(Path(layout.comm(name, method.final_round)).read_text())
            row = next(r for r in rows if r.method == name)
            points.append(
                (
                    method.sft.lora_r,
                    comm["per_client"]["up_mib"]["fp32"],
                    row.pooled or 0.0,
                )
            )
        figures.rank_tradeoff(points, outputs["ranks"])
    if "table3_md" in outputs:
        agentgym.write_report(config, methods, rows, metric_files, outputs)
    _scaling_figures(config, methods, layout, rows, outputs)
    if "rl_training" in outputs:
        _rl_report(config, methods, layout, rows, outputs)
    log.info("report: %d methods, %d envs", len(rows), len(envs))
    return rows, outcomes, compared


def _split(config: dict) -> str:
    """The split the evaluations played (``evaluation.split``)."""
    return (config.get("evaluation") or {}).get("split", "test")


def _comparisons_text(compared: list, titles: dict[str, str], split: str) -> str:
    if not compared:
        return ""
    return (
        f"Paired comparisons (A − B over the {split} tasks both played, in points; 95 % "
        "interval from a bootstrap resampling tasks within envs, 10,000 draws; "
        "exact McNemar p on the discordant tasks, or a sign-flip permutation test "
        "against a reference averaged over seeds; verdict: the side the interval "
        "excludes zero for, where p < 0.05 too, else not resolved):\n\n"
        + evidence.comparisons_markdown(compared, titles)
    )


def _by_round(methods: dict[str, Method], metric_files, outcomes) -> str:
    """Pooled success (%, with count and interval) of each federated method at
    every evaluated round."""
    curves = {name: {r: load_row(name, method_title(name, m.kind.name), metric_files(name, r),
                                 outcomes[(name, r)])
                     for r in m.eval_rounds}
              for name, m in methods.items() if m.kind.federated}  # fmt: skip
    if not curves:
        return ""
    return "\nPooled success (%) by round:\n\n" + rounds_markdown(curves)


def _success_figure(methods, rows, envs, metric_files, path, layout, outcomes) -> None:
    """Success by round: federated and iterative methods as curves with 95 %
    error bars (from Pre-Trained at round 0 when it is a row), the others as
    dashed lines in a band of their interval."""
    titles = {**ENV_TITLES, "avg": "Avg (pooled)", **{r.method: r.title for r in rows}}
    base = next((r for r in rows if r.method == "pretrained"), None)
    curves, static = {}, {}
    for row, (name, method) in zip(rows, methods.items(), strict=True):
        if method.kind.federated or method.kind.iterative:
            series = {
                r: _panel(
                    load_row(name, "", metric_files(name, r), outcomes[(name, r)])
                )
                for r in method.eval_rounds
            }
            if base is not None:  # an iterative method's round 0 is its own base
                series.setdefault(0, _panel(base))
            curves[name] = series
        else:
            static[name] = _panel(row)
    if any(server_settings(m) != AggregationSettings() for m in methods.values()
           if m.kind.federated):  # fmt: skip
        for name, method in methods.items():
            if method.kind.federated:
                titles[name] += f" ({server_summary(layout, name, method)})"
    figures.success_curves(curves, static, [*envs, "avg"], titles, path)


def server_summary(layout, name: str, method) -> str:
    """A federated method's uplink over all its rounds, and ε under DP."""
    records = [json.loads(Path(layout.comm(name, r)).read_text())
               for r in range(1, method.final_round + 1)]  # fmt: skip
    sent = sum(c["uplink_bytes_per_client"] * len(c["participants"]) for c in records)
    text = f"{sent / 2**20:.1f} MiB up"
    if "dp" in records[-1]:
        text += f", ε = {records[-1]['dp']['epsilon']:.3g}"
    return text


def _scaling_figures(config, methods, layout, rows, outputs) -> None:
    """Figure 8 (success vs max turns) and Figure 9 (pass@k vs k)."""
    envs, tts = list(config["envs"]), config["tts"]
    titles = {r.method: r.title for r in rows}
    if "tts_turns" in outputs:
        curves = {titles[n]: scaling.turns_curve(
            {h: [layout.tts(n, methods[n].final_round, f"turns={h}", e, "metrics.json")
                 for e in envs] for h in tts["turns"]}) for n in tts["methods"]}  # fmt: skip
        scaling.scaling_figure(curves, "max interaction turns", outputs["tts_turns"])
    if "tts_passk" in outputs:
        curves = {titles[n]: scaling.passk_curve(
            [layout.tts(n, methods[n].final_round, "passk", e, "metrics.json") for e in envs])
            for n in tts["methods"]}  # fmt: skip
        scaling.scaling_figure(
            curves, "k (samples per task)", outputs["tts_passk"], log2=True
        )


def _sage_methods(methods: dict[str, Method]) -> dict[str, Method]:
    return {n: m for n, m in methods.items() if m.kind.family == "sage"}


def _env_methods(methods: dict[str, Method]) -> dict[str, Method]:
    return {n: m for n, m in methods.items() if m.kind.family not in ENVLESS}


def _rl_methods(methods: dict[str, Method]) -> dict[str, Method]:
    return {n: m for n, m in methods.items() if m.kind.family == "rl"}


def _table_envs(config: dict) -> list[str]:
    """The experiment's envs that AgentGym-RL tabulates by subset."""
    return [e for e in config["envs"] if e in agentgym_rl.TABLES]


def _rl_report(config, methods, layout, rows, outputs) -> None:
    """Training success and turns by step (Figure 7's axes); the paper's
    per-subset Tables 3–5 and algorithm Table 6 with ours beside them."""
    titles = {r.method: r.title for r in rows}
    steps = {titles[name]: [row for r in range(1, m.rounds + 1) for row in json.loads(
                 Path(layout.server(name, r, "metrics.json")).read_text())["steps"]]
             for name, m in _rl_methods(methods).items()}  # fmt: skip
    figures.training_curves(steps, outputs["rl_training"])
    if "rl_tables" not in outputs:
        return
    envs = _table_envs(config)
    ours = {env: {titles[name]: agentgym_rl.read_results(
                env, layout.evaluation(name, m.final_round, env, "episodes.parquet"))
            for name, m in methods.items()} for env in envs}  # fmt: skip
    algorithms = [(titles[name], rl_family.trainer_config(m, config["seed"]).estimator,
                   {e: next(r for r in rows if r.method == name).rate(e) for e in envs})
                  for name, m in _rl_methods(methods).items()]  # fmt: skip
    text = "\n".join(agentgym_rl.subset_table(env, ours[env]) for env in envs)
    text += "\n" + agentgym_rl.algorithm_table(algorithms)
    write_text(outputs["rl_tables"], text)
    write_text(outputs["rl_tables_csv"], agentgym_rl.tables_csv(ours))


def _row_order(name: str, method: Method) -> tuple[int, int, str]:
    """Table 1's order: the paper's methods first, then variants by rank and name."""
    return (list(KINDS).index(method.kind.name), method.sft.lora_r, name)


def rank_methods(methods: dict[str, Method]) -> dict[str, Method]:
    """Fed-SE methods differing only in LoRA rank (one per rank)."""
    chosen: dict[int, tuple[str, Method]] = {}
    for name, method in methods.items():
        if method.kind.name == "fedse":
            chosen.setdefault(method.sft.lora_r, (name, method))
    return {name: method for name, method in chosen.values()}


def _panel(row: Row) -> dict[str, tuple[float, float, float]]:
    """Per env and ``avg``: (rate, low, high) in %; the bounds are the rate
    itself where the row has no episodes behind it."""
    values = {}
    for env in [*row.episodes, None]:
        rate = row.rate(env) if env is not None else row.pooled
        if rate is not None:
            low, high = row.interval(env) or (rate, rate)
            values[env or "avg"] = (rate, low, high)
    return values


def _note(config: dict, methods: dict[str, Method]) -> str:
    envs = config["envs"]
    counts = ", ".join(
        f"{e} {envs[e]['test'] or 'all'}{_strata(envs[e])}" for e in envs
    )
    after = []
    for label, chosen, unit in (
        ("federated methods", lambda k: k.federated, "round(s)"),
        (
            "AgentEvol",
            lambda k: k.iterative and k.family == "agentevol",
            "iteration(s)",
        ),
        ("RL", lambda k: k.family == "rl", "span(s)"),
    ):
        finals = [m.final_round for m in methods.values() if chosen(m.kind)]
        if finals:
            after.append(f"{label} after {max(finals)} {unit}")
    lora = (
        " Every trained agent is a LoRA adapter (AgentGym fine-tunes every weight)."
        if any(m.kind.family == "agentevol" for m in methods.values())
        else ""
    )
    constrained = (
        " Actions are decoded under the env's listed actions where it lists them"
        " (`generation.constrain_actions`; a search query's words stay free);"
        " invalid actions are still counted."
        if config["generation"].get("constrain_actions")
        else ""
    )
    return (
        f"Success rate (%) of `{config['model']['name']}` on {_split(config)} tasks "
        f"({counts})"
        + "".join(f"; {a}" for a in after)
        + f". Avg is pooled over all {_split(config)} episodes; (+x) is the gain over "
        "Pre-Trained." + constrained + lora
    )


def _strata(env: dict) -> str:
    """`` of goto`` where an env's tasks are drawn from strata (``envs.<env>.strata``)."""
    strata = env.get("strata")
    return f" of {' / '.join(strata)}" if strata else ""
