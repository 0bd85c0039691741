"""Figures: a method's colour never depends on what else is drawn, and the
legend never covers a panel, at the largest config's count of methods."""

from __future__ import annotations

from evoflow.config import load_config
from evoflow.report.colours import KIND_COLOURS, method_colours
from evoflow.report.figures import success_curves


def test_a_kinds_colour_is_its_own_whatever_else_is_drawn():
    alone = method_colours(["fedse", "fedit"])
    crowded = method_colours(["pretrained", "random", "fedit", "fedse", "fedse_r4"])
    assert alone["fedse"] == crowded["fedse"] == KIND_COLOURS["fedse"]
    assert alone["fedit"] == crowded["fedit"]
    assert len(set(crowded.values())) == len(crowded)  # no two share one


def test_a_variant_takes_a_spare_colour_no_kind_holds():
    colours = method_colours(["fedse", "fedse_r4", "fedse_r16"])
    assert colours["fedse_r4"] not in KIND_COLOURS.values()
    assert colours["fedse_r4"] != colours["fedse_r16"]
    assert method_colours(["fedse_r4"])["fedse_r4"] == colours["fedse_r4"]


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_the_legend_never_covers_a_panel_or_its_title(tmp_path):
    # Prepare: the largest Table 1 (the default with its ablations), every
    # method of it drawn on every env panel and the average
    config = load_config("config/config.yaml", "config/ablations.yaml")
    names = list(config["methods"])
    panels = [*config["envs"], "avg"]
    curves = {n: {r: {p: (30.0, 20.0, 40.0) for p in panels} for r in (1, 5)}
              for n in names[len(names) // 2 :]}  # fmt: skip
    static = {
        n: {p: (25.0, 15.0, 35.0) for p in panels} for n in names[: len(names) // 2]
    }
    titles = {n: f"{n} (a long title)" for n in names}

    # Execute
    figure = success_curves(curves, static, panels, titles, tmp_path / "curves.png")

    # Assert
    renderer = figure.canvas.get_renderer()
    (legend,) = figure.legends
    box = legend.get_window_extent(renderer)
    assert len(legend.get_texts()) == len(names)
    for ax in figure.axes:
        assert not _overlap(box, ax.get_tightbbox(renderer)), ax.get_title()
    assert (tmp_path / "curves.png").stat().st_size > 0
