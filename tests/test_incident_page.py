"""The incident page in headless Chromium (Debian's chromium, driven by Playwright) against a
real `railtrace serve` over a replayed incident: the stalled-jobs list, then one job with its
fabric graph and culprit, its evidence timeline and the culprit's counters; a screenshot is
saved for people to look at (test-artifacts/incident.png)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gates
import pytest
from api_support import replayed
from browser_support import (
    CHROMIUM,
    TIMEOUT_MS,
    chromium,
    loaded,
    overlapping_labels,
    page_of,
    serving,
)
from kafka_support import ARTIFACTS

from railtrace.simulate import Fault
from railtrace.store.rows import STRUCTURE_FACT_KINDS
from railtrace.streams.records import CablingEvent, JobState, NodeEvent
from railtrace.topology.ends import CablingKind, Endpoint

#: A job whose two candidate cables score alike: its verdict is a flagged tie.
TIED_JOB = "4242"

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Served:
    url: str
    token: str
    truth: dict[str, Any]
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # The README's test command installs it; in CI its absence fails (a skipped browser test
    # would let a broken page through unnoticed).
    gates.require("browser", Path(CHROMIUM).exists(), "chromium (`make system-deps` installs it)")
    base = tmp_path_factory.mktemp("incident")
    with replayed(base, 32, Fault.LINK_DOWN, 11) as (store, _, truth):
        at = truth["fault_at_ns"]
        store.write_cabling_events(
            [
                CablingEvent(at, "leaf-su01-r0", "swp3", CablingKind.MISWIRED,
                             Endpoint("hgx-su01-03", "mlx5_0"), Endpoint("hgx-su01-04", "mlx5_0"),
                             "LLDP sees hgx-su01-04:mlx5_0"),
            ]
        )  # fmt: skip
        store.write_node_events(
            [
                NodeEvent(at, "hgx-gpu7", "xid", 13, "0000:3b:00", "Xid 13", False, None, "",
                          False, "", "journalctl -k"),
                NodeEvent(at + 10**9, "hgx-gpu7", "xid", 79, "0000:3b:00", "Xid 79 off the bus",
                          True, "quarantine", "Xid 79", False, "", "journalctl -k"),
            ]
        )  # fmt: skip
        stalled = store.get_verdict(_stalled_job(truth))
        assert stalled is not None and len(stalled.candidates) >= 2
        first, second = (c.link for c in stalled.candidates[:2])
        assert first is not None and second is not None
        # The same job's structure under another id, so its paths are drawn as well.
        facts = store.job_facts_of(stalled.job_id, STRUCTURE_FACT_KINDS)
        store.write_job_facts([replace(f, job_id=TIED_JOB) for f in facts])
        store.write_verdicts(
            [
                replace(
                    stalled,
                    job_id=TIED_JOB,
                    state=JobState.STALLED,
                    tied=(first.link_id, second.link_id),
                )
            ]
        )
    with serving(base, base / "cap", base / "data") as served:
        yield Served(served.url, served.token, truth, served.log)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with page_of(browser, 1400) as p:
        yield p


def _stalled_job(truth: dict[str, Any]) -> str:
    return next(j for j, t in sorted(truth["jobs"].items()) if t["state"] == "stalled")


def test_the_list_shows_the_stalled_job_and_leads_to_its_incident(
    served: Served, page: Any
) -> None:
    job = _stalled_job(served.truth)
    page.goto(f"{served.url}/incidents#token={served.token}")
    loaded(page)
    assert "#token" not in page.url, "the token must leave the address bar"
    row = page.locator(f"tr[data-job='{job}']")
    assert "stalled" in row.inner_text()
    assert served.truth["fault_link"]["id"] in row.inner_text()
    row.locator("a").click()
    page.wait_for_url(f"**/incidents/{job}")
    loaded(page)
    assert page.locator("#cause").inner_text() == served.truth["fault_link"]["id"]
    assert page.locator("#side").inner_text() == "went down at the switch, NIC healthy"
    assert page.problems == []


def test_the_incident_draws_the_culprit_the_timeline_and_the_counters(
    served: Served, page: Any
) -> None:
    job = _stalled_job(served.truth)
    culprit = served.truth["fault_link"]["id"]
    page.goto(f"{served.url}/incidents/{job}#token={served.token}")
    loaded(page)
    drawn = page.locator("#fabric a.culprit[data-link]")
    assert drawn.count() == 1 and drawn.get_attribute("data-link") == culprit
    assert page.locator("#fabric a[data-link]").count() > 10
    ends = {served.truth["fault_link"][e]["device"] for e in ("a", "b")}
    marked = {
        page.locator("#fabric circle.culprit").nth(i).evaluate("c => c.parentNode.dataset.device")
        for i in range(page.locator("#fabric circle.culprit").count())
    }
    # Its switch ends are circled red; a host end is a row of the cable matrix.
    assert marked and marked <= ends
    assert "down" in page.locator("#timeline").inner_text()
    # Every rank's watchdog line is one run, folded after three; unfolding shows them all.
    total = int(page.locator("#timeline h2").inner_text().split("(")[1].split()[0])
    visible = page.locator("#timeline tbody tr:not([hidden]):not(.fold)")
    assert 3 <= visible.count() < total
    traffic = page.locator("#chart-traffic polyline")
    assert traffic.count() >= 2, page.locator("#counters").inner_text()
    assert page.locator("#chart-traffic line.stall").count() == 1
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "incident.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    assert page.locator("#timeline tr.fold button", has_text="watchdog-timeout").count() == 1
    while (fold := page.locator("#timeline tr.fold button")).count():
        fold.first.click()
    assert page.locator("#timeline tbody tr:not([hidden])").count() == total
    assert page.problems == []


def test_the_culprit_link_page_shows_its_blast_radius_with_the_stalled_job_blamed(
    served: Served, page: Any
) -> None:
    job = _stalled_job(served.truth)
    page.goto(f"{served.url}/incidents/{job}#token={served.token}")
    loaded(page)
    page.locator("#cause a").click()
    page.wait_for_url("**/links/**")
    loaded(page)
    assert served.truth["fault_link"]["id"] in page.locator("#link-summary h1").inner_text()
    row = page.locator(f"#blast-radius tr[data-job='{job}']")
    assert "yes" in row.inner_text() and "stalled" in row.inner_text()
    assert page.locator("#events").inner_text().count("down") >= 1
    assert page.locator("#chart-traffic polyline").count() >= 2
    assert page.problems == []


def test_a_tie_is_drawn_as_a_tie_with_no_one_culprit(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/incidents/{TIED_JOB}#token={served.token}")
    loaded(page)
    cause = page.locator("#cause")
    assert "tie" in cause.inner_text() and cause.get_attribute("class") == "tie mono"
    assert page.locator("#fabric .culprit").count() == 0
    assert page.locator("#fabric a.tied[data-link]").count() == 2
    # One leaf a rail here: each rail's label still clear of its neighbours'.
    assert overlapping_labels(page, "#fabric text.rail-label") == []
    tied = {
        page.locator("#fabric a.tied[data-link]").nth(i).get_attribute("data-link")
        for i in range(2)
    }
    assert all(lid in cause.inner_text() for lid in tied)
    assert page.problems == []


def test_the_list_shows_a_tie_as_a_tie(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/incidents#token={served.token}")
    loaded(page)
    cell = page.locator(f"tr[data-job='{TIED_JOB}'] td.tie")
    assert cell.count() == 1 and cell.inner_text().startswith("tie: ")
    assert page.locator(f"tr[data-job='{TIED_JOB}'] td.tie").inner_text().count(" | ") == 1
    assert page.problems == []


def test_a_quarantined_node_page_shows_why_and_its_xids(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/nodes/hgx-gpu7#token={served.token}")
    loaded(page)
    assert "quarantined" in page.locator("#node-summary").inner_text()
    rows = page.locator("#xids tbody tr")
    assert rows.count() == 2
    assert "79" in rows.nth(0).inner_text() and "quarantine" in rows.nth(0).inner_text()
    assert page.problems == []


def test_the_cabling_page_lists_a_miswired_port_with_both_far_ends(
    served: Served, page: Any
) -> None:
    page.goto(f"{served.url}/cabling?device=leaf-su01-r0#token={served.token}")
    loaded(page)
    row = page.locator("#cabling tr[data-port='leaf-su01-r0:swp3']")
    text = row.inner_text()
    assert "miswired" in text and "hgx-su01-03:mlx5_0" in text and "hgx-su01-04:mlx5_0" in text
    assert page.problems == []


def test_without_a_token_the_page_asks_for_one_and_uses_what_is_pasted(
    served: Served, page: Any
) -> None:
    page.goto(f"{served.url}/incidents")
    page.wait_for_selector("input[name=token]")
    page.fill("input[name=token]", "rt_000000000000_not-a-token")
    page.click("button[type=submit]")
    page.wait_for_selector("text=refused the token")
    page.fill("input[name=token]", served.token)
    page.click("button[type=submit]")
    loaded(page)
    assert page.locator("#jobs").count() == 1


def test_a_token_pasted_once_serves_a_second_tab_of_the_same_browser(
    served: Served, page: Any
) -> None:
    """As a click in a Slack alert opens one: the second tab asks for no token, and no page
    script can read the token from the cookie that carries it."""
    page.goto(f"{served.url}/incidents")
    page.wait_for_selector("input[name=token]")
    page.fill("input[name=token]", served.token)
    page.click("button[type=submit]")
    loaded(page)
    job = _stalled_job(served.truth)
    second = page.context.new_page()
    second.set_default_timeout(TIMEOUT_MS)
    second.goto(f"{served.url}/incidents/{job}")
    loaded(second)
    assert second.locator("input[name=token]").count() == 0
    assert served.token not in second.evaluate("document.cookie")
    assert second.evaluate("JSON.stringify(sessionStorage)") == "{}"
    second.click("#forget-token")
    second.wait_for_selector("input[name=token]")
    page.reload()
    page.wait_for_selector("input[name=token]")


def test_an_unknown_job_says_so(served: Served, page: Any) -> None:
    page.goto(f"{served.url}/incidents/no-such-job#token={served.token}")
    page.wait_for_selector("#app[data-ready=error]")
    assert "no job 'no-such-job'" in page.locator("#load-error").inner_text()


def test_the_page_is_served_with_a_policy_that_allows_only_its_own_files(
    served: Served,
) -> None:
    with urllib.request.urlopen(served.url + "/incidents/x1", timeout=10) as resp:
        policy = resp.headers["Content-Security-Policy"]
        body = resp.read().decode()
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert '<script src="/static/incident.js"' in body and served.token not in body


def test_the_api_reference_renders_with_no_network_beyond_the_api(
    served: Served, page: Any
) -> None:
    """Swagger UI from a CDN left /docs blank on networks that reach none: anything asked of
    another host is refused here, as such a network would."""
    asked_elsewhere: list[str] = []

    def only_the_api(route: Any) -> None:
        if route.request.url.startswith(served.url):
            route.continue_()
        else:
            asked_elsewhere.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_api)
    page.goto(f"{served.url}/docs")
    page.wait_for_selector(".opblock")
    assert "/v1/jobs/{job_id}/verdict" in page.locator(".swagger-ui").inner_text()
    assert asked_elsewhere == [] and page.problems == []
