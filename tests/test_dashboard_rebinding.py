"""DNS rebinding in a real browser: Chromium resolves another site's name (evil.test) to 127.0.0.1, as a rebinding
attack makes it do, and a page of that site can neither read the dashboard's data nor save a label; the printed
URL (with its per-start token) still opens the dashboard."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from _browser import browser_pages, dashboard
from _dashboard_runs import run_folder


def test_a_page_of_a_rebound_name_can_neither_read_nor_write(tmp_path):
    run, _ = run_folder(tmp_path)
    with dashboard(run, tmp_path / "dashboard.log") as url, \
            browser_pages(1, extra_args=["--host-resolver-rules=MAP evil.test 127.0.0.1"]) as (page,):
        port = urlsplit(url).port
        evil = f"http://evil.test:{port}"
        answer = page.goto(evil + "/")
        assert answer is not None and answer.status == 421  # the rebound page itself is refused
        tried = page.evaluate("""async () => {
            const out = {};
            for (const [name, path, init] of [
                ["state", "/api/state", {}], ["topics", "/api/topics", {}],
                ["label", "/api/labels/1", {method: "PUT", headers: {"Content-Type": "application/json"},
                                             body: JSON.stringify({label: "pwned"})}]]) {
                try { const r = await fetch(path, init); out[name] = [r.status, await r.text()]; }
                catch (e) { out[name] = [0, String(e)]; }
            }
            try { const r = await fetch("http://127.0.0.1:%d/api/state"); out.direct = [r.status, await r.text()]; }
            catch (e) { out.direct = [0, String(e)]; }   // another origin: CORS keeps the answer from the page
            return out;
        }""" % port)
        for name in ("state", "topics", "label"):
            status, text = tried[name]
            assert status == 421 and "wrong_host" in text and "csfed" not in text, (name, tried[name])
        assert tried["direct"][0] == 0 and "csfed" not in tried["direct"][1], tried["direct"]
        assert not (run / "topic-labels.json").exists()
        ok = page.goto(url)  # the printed URL, token and all, opens it
        assert ok is not None and ok.status == 200
        state = page.evaluate("async () => (await fetch('api/state')).json()")
        assert json.dumps(state).count("csfed-lda") >= 1
