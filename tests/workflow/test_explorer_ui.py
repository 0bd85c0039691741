"""The trajectory explorer in a real headless Chromium (Debian's, driven by
Playwright; ``scripts/setup/chromium.sh`` installs it): on the finished tiny
run, filter → open an episode → compare two methods on its task, checking what
each page shows against the store itself; a corrupt shard is named on the page
and the app keeps serving. Screenshots go to ``<tmp>/reports/``."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from evoflow.store.query import connect

pytestmark = pytest.mark.slow
CHROMIUM = "/usr/bin/chromium"


def _serve(results: Path):
    """The app on a free localhost port, in a thread; (base URL, server)."""
    import uvicorn

    from evoflow.explorer.app import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(results), host="127.0.0.1", port=port,
                                           log_level="warning"))  # fmt: skip
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the explorer did not start in 30 s"
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


@pytest.fixture()
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), (
        f"{CHROMIUM} missing: run scripts/setup/chromium.sh"
    )
    with sync_playwright() as driver:
        chromium = driver.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"]
        )
        yield chromium.new_page()
        chromium.close()


def test_filter_open_an_episode_and_compare(tiny_run, browser, tmp_path):
    shots = tmp_path / "reports"
    shots.mkdir()
    results = tiny_run / "results"
    store = connect(results)
    base, server = _serve(results)
    try:
        page = browser
        page.goto(base + "/")
        total = store.execute("SELECT count(*) FROM episodes").fetchone()[0]
        assert page.locator("#count").inner_text().startswith(f"{total} episodes")
        page.select_option("select[name=method]", "fedse")
        page.select_option("select[name=round]", "2")
        page.select_option("select[name=success]", "false")
        page.select_option(
            "select[name=split]", "test"
        )  # tasks every method is scored on
        page.click("#filters button")
        page.wait_for_url("**/?*method=fedse*")
        page.screenshot(path=str(shots / "filtered.png"), full_page=True)
        failed = store.execute("SELECT count(*) FROM episodes WHERE method = 'fedse' "
                               "AND round = 2 AND NOT success AND split = 'test'").fetchone()[0]  # fmt: skip
        assert page.locator("#count").inner_text().startswith(f"{failed} episodes")
        methods = page.locator("#episodes td.method").all_inner_texts()
        assert methods and set(methods) == {"fedse"}
        assert set(page.locator("#episodes td.success").all_inner_texts()) == {"False"}
        assert page.locator("#success-chart polyline[data-method=fedse]").count() >= 1

        page.locator("a.episode").first.click()
        page.wait_for_url("**/episode?*")
        episode_id = page.url.split("id=", 1)[1]
        from urllib.parse import unquote_plus

        row = store.execute("SELECT task_id, env, len(messages) FROM episodes WHERE episode_id = ?",
                            [unquote_plus(episode_id)]).fetchone()  # fmt: skip
        assert page.locator("div.turn").count() == row[2]
        assert page.locator("table.summary td.method").inner_text() == "fedse"
        page.screenshot(path=str(shots / "episode.png"), full_page=True)

        page.click("#compare")
        page.select_option("#pick select[name=b]", "fedit")
        page.click("#pick button")
        page.wait_for_url("**/compare?*b=fedit*")
        sides = page.locator("div.side")
        assert sides.count() == 2
        assert [sides.nth(i).get_attribute("data-method") for i in (0, 1)] == [
            "fedse",
            "fedit",
        ]
        tasks = page.locator("div.side table.summary td.task_id").all_inner_texts()
        assert tasks == [row[0], row[0]]  # both methods' episodes of that task
        page.screenshot(path=str(shots / "compare.png"), full_page=True)
        deep = page.url
        page.goto(deep)  # a deep link opens the same view
        assert page.locator("div.side").count() == 2
    finally:
        server.should_exit = True
    assert all(
        (shots / f"{name}.png").stat().st_size > 0
        for name in ("filtered", "episode", "compare")
    )


def test_a_corrupt_shard_is_named_and_the_app_keeps_serving(
    tiny_run, browser, tmp_path
):
    copy = tmp_path / "run"
    shutil.copytree(tiny_run / "results", copy)
    shard = sorted(copy.rglob("explore.parquet"))[0]
    shard.write_bytes(b"not parquet at all")
    base, server = _serve(copy)
    try:
        browser.goto(base + "/")
        warning = browser.locator(".warn.skipped").inner_text()
        assert str(shard) in warning
        assert int(browser.locator("#count").inner_text().split()[0]) > 0
        browser.goto(base + "/?method=fedit")  # still serving
        assert browser.locator("#episodes td.method").count() > 0
    finally:
        server.should_exit = True


def test_a_shard_whose_pages_break_while_serving_is_named(tiny_run, tmp_path):
    from fastapi.testclient import TestClient

    from evoflow.explorer.app import create_app

    copy = tmp_path / "run"
    shutil.copytree(tiny_run / "results", copy)
    client = TestClient(
        create_app(copy), base_url="http://127.0.0.1", raise_server_exceptions=False
    )
    assert client.get("/").status_code == 200
    shard = sorted(copy.rglob("explore.parquet"))[0]
    data = bytearray(shard.read_bytes())
    data[64:400] = (
        b"\xff" * 336
    )  # footer intact, data pages broken: only reading finds it
    shard.write_bytes(bytes(data))
    page = client.get("/")
    assert page.status_code == 200 and f"cannot read {shard}" in page.text
    assert client.get("/", params={"method": "fedit"}).status_code == 200
    assert client.get("/", params={"offset": 10**20}).status_code == 422
