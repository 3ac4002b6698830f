"""A person on call walks the incident pages in headless Chromium, at 1600 and 800 px wide:
the list of stalled jobs, one job (its fabric drawn by tier and rail with every candidate, the
PFC spread, its counters, its cost), the culprit link's page, then a node's page. Served by a
real `railtrace serve` over stores made by replaying simulated captures: a PFC storm from a
host's NIC (the culprit is a host cable, the pauses spread up the fabric) and a GPU that fell
off the bus (the culprit is a node)."""

from __future__ import annotations

import json
import re
import urllib.parse
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
    Served,
    chromium,
    clipped_labels,
    loaded,
    overflow,
    overlapping_labels,
    page_of,
    serving,
    smallest_text_px,
)

from railtrace.simulate import Fault
from railtrace.store.rows import STRUCTURE_FACT_KINDS
from railtrace.streams.records import JobState

WIDTHS = [1600, 800]
#: The storm's job again under other ids: its two best candidates made a tie, and its answer
#: made unsure (the page must draw both as they are, never as one sure red culprit).
TIED_JOB = "7001"
UNSURE_JOB = "7002"
#: What an ISO time with a fraction of a second looks like; the page shows whole seconds.
FRACTION = re.compile(r"\d{2}:\d{2}:\d{2}\.\d+Z")
#: The colour a cable is drawn in: a cell's fill, a line's stroke.
PAINT = """a => { const e = a.querySelector('rect.cell, line.link');
                  const s = getComputedStyle(e);
                  return e.tagName === 'rect' ? s.fill : s.stroke; }"""


@dataclass(frozen=True)
class Incident:
    served: Served
    job: str
    truth: dict[str, Any]


def _stalled(truth: dict[str, Any]) -> str:
    return next(j for j, t in sorted(truth["jobs"].items()) if t["state"] == "stalled")


@pytest.fixture(scope="module")
def storm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Incident]:
    gates.require("browser", Path(CHROMIUM).exists(), "chromium (`make system-deps` installs it)")
    base = tmp_path_factory.mktemp("storm")
    with replayed(base, 64, Fault.PFC_STORM, 11) as (store, _, truth):
        stalled = store.get_verdict(_stalled(truth))
        assert stalled is not None and len(stalled.candidates) >= 3
        first, second = (c.link for c in stalled.candidates[:2])
        assert first is not None and second is not None
        facts = store.job_facts_of(stalled.job_id, STRUCTURE_FACT_KINDS)
        for job in (TIED_JOB, UNSURE_JOB):
            store.write_job_facts([replace(f, job_id=job) for f in facts])
        store.write_verdicts(
            [
                replace(stalled, job_id=TIED_JOB, tied=(first.link_id, second.link_id)),
                replace(stalled, job_id=UNSURE_JOB, state=JobState.STALLED, confidence=0.3),
            ]
        )
    with serving(base, base / "cap", base / "data") as served:
        yield Incident(served, _stalled(truth), truth)


@pytest.fixture(scope="module")
def xid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Incident]:
    gates.require("browser", Path(CHROMIUM).exists(), "chromium (`make system-deps` installs it)")
    base = tmp_path_factory.mktemp("xid")
    with replayed(base, 32, Fault.GPU_XID, 11) as (_, _, truth):
        pass
    with serving(base, base / "cap", base / "data") as served:
        yield Incident(served, _stalled(truth), truth)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def _get(served: Served, path: str) -> Any:
    request = urllib.request.Request(
        served.url + path, headers={"Authorization": f"Bearer {served.token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def _looks_right(page: Any) -> None:
    """What any page must hold to: nothing sideways, no label cut, no console error, whole
    seconds only."""
    assert overflow(page) == []
    assert clipped_labels(page, "#app") == []
    assert overlapping_labels(page, "#fabric text:not(.rank-text)") == []
    assert not FRACTION.search(page.locator("#app").inner_text())
    assert page.problems == []


@pytest.mark.parametrize("width", WIDTHS)
def test_the_walk_from_the_list_to_the_culprit_link_and_its_host(
    storm: Incident, browser: Any, width: int
) -> None:
    culprit = storm.truth["fault_link"]["id"]
    host = storm.truth["fault_link"]["a"]["device"]
    with page_of(browser, width) as page:
        page.goto(f"{storm.served.url}/incidents#token={storm.served.token}")
        loaded(page)
        _looks_right(page)
        page.locator(f"tr[data-job='{storm.job}'] a").click()
        page.wait_for_url(f"**/incidents/{storm.job}")
        loaded(page)
        assert page.locator("#cause").inner_text() == culprit
        assert "PFC" in page.locator("#side").inner_text()
        cost = page.locator("#cost").inner_text()
        assert re.match(r"128 GPUs idle \d+ s before this answer \(.* GPU-h\); the watchdog", cost)
        assert cost == _get(storm.served, f"/v1/jobs/{storm.job}/verdict")["cost"]["text"]
        drain = page.locator("#next-steps li[data-action='drain'] pre").inner_text()
        assert drain.startswith(f"scontrol update NodeName={host} State=DRAIN")
        assert page.locator("#next-steps li[data-action='ticket']").count() == 1
        drawn = page.locator("#fabric a.culprit[data-link]")
        assert drawn.count() == 1 and drawn.get_attribute("data-link") == culprit
        _looks_right(page)
        assert smallest_text_px(page, "#counters") >= 11
        page.locator("#cause a").click()
        page.wait_for_url("**/links/**")
        loaded(page)
        assert culprit in page.locator("#link-summary h1").inner_text()
        assert "yes" in page.locator(f"#blast-radius tr[data-job='{storm.job}']").inner_text()
        _looks_right(page)
        page.locator("#ends a.host-end").click()
        page.wait_for_url(f"**/nodes/{host}")
        loaded(page)
        assert host in page.locator("#node-summary h1").inner_text()
        _node_is_shown(page, storm.served, host)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_walk_to_a_gpu_that_failed_ends_on_its_node(
    xid: Incident, browser: Any, width: int
) -> None:
    node = xid.truth["fault_node"]
    with page_of(browser, width) as page:
        page.goto(f"{xid.served.url}/incidents#token={xid.served.token}")
        loaded(page)
        page.locator(f"tr[data-job='{xid.job}'] a").click()
        loaded(page)
        assert page.locator("#cause").inner_text() == f"node {node}"
        exclude = page.locator("#next-steps li[data-action='exclude'] pre").inner_text()
        assert exclude == f"sbatch --exclude={node} ..."
        assert page.locator(f"#fabric a.host[data-device='{node}'] text.culprit").count() == 1
        _looks_right(page)
        page.locator("#cause a").click()
        page.wait_for_url(f"**/nodes/{node}")
        loaded(page)
        assert node in page.locator("#node-summary h1").inner_text()
        _node_is_shown(page, xid.served, node)


def _node_is_shown(page: Any, served: Served, node: str) -> None:
    """Its Xids when the store has any, else that it has none (the API's 404, which the
    browser logs, is then expected)."""
    if any(n["node"] == node for n in _get(served, "/v1/nodes")["nodes"]):
        assert page.locator("#xids tbody tr").count() >= 1
    else:
        assert "No Xid" in page.locator("#no-xids").inner_text()
        page.problems[:] = [p for p in page.problems if "404 (Not Found)" not in p]
    _looks_right(page)


def test_every_cable_and_device_in_the_drawing_leads_to_its_page(
    storm: Incident, browser: Any
) -> None:
    links = _get(storm.served, f"/v1/topology?job={storm.job}")["links"]
    with page_of(browser, 1600) as page:
        page.goto(f"{storm.served.url}/incidents/{storm.job}#token={storm.served.token}")
        loaded(page)
        hrefs = page.eval_on_selector_all(
            "#fabric a[data-link]", "as => as.map(a => [a.dataset.link, a.getAttribute('href')])"
        )
        assert {lid for lid, _ in hrefs} == {link["id"] for link in links}
        for lid, href in hrefs:
            assert href.split("?")[0] == "/links/" + urllib.parse.quote(lid, safe="")
        hosts = page.eval_on_selector_all(
            "#fabric a.host", "as => as.map(a => a.getAttribute('href'))"
        )
        assert len(hosts) == 16 and all(h.startswith("/nodes/hgx-") for h in hosts)
        switches = page.eval_on_selector_all(
            "#fabric a.switch", "as => as.map(a => a.getAttribute('href'))"
        )
        assert switches and all(h.startswith("/cabling?device=") for h in switches)
        # Rails as columns: one band per rail the job's leaves carry.
        rails = {link["rail"] for link in links if link["rail"] is not None}
        labels = page.locator("#fabric text.rail-label").all_text_contents()
        assert labels == [f"rail {r}" for r in sorted(rails)]
        assert page.problems == []


def test_every_candidate_is_drawn_with_its_rank_and_score_and_the_pfc_spread_too(
    storm: Incident, browser: Any
) -> None:
    verdict = _get(storm.served, f"/v1/jobs/{storm.job}/verdict")
    with page_of(browser, 1600) as page:
        page.goto(f"{storm.served.url}/incidents/{storm.job}#token={storm.served.token}")
        loaded(page)
        for c in verdict["candidates"][:8]:
            lid = c["link"]["id"]
            rank = page.locator(f"#fabric a[data-link='{lid}'] text.rank-text").text_content()
            assert rank == str(c["rank"])
            assert (
                f"{c['score']:.2f}"
                in page.locator(f".fabric-legend [data-mark='{lid}']").inner_text()
            )
        candidates = {c["link"]["id"] for c in verdict["candidates"]}
        spread = page.eval_on_selector_all(
            "#fabric a.pfc[data-link]", "as => as.map(a => a.dataset.link)"
        )
        # The pauses spread beyond the candidates: up the leaf to the spines.
        assert len(spread) >= 3 and not set(spread) <= candidates
        assert "PFC pauses seen" in page.locator(".fabric-legend").inner_text()
        assert page.problems == []


def test_a_tie_draws_every_tied_candidate_alike_and_none_red(storm: Incident, browser: Any) -> None:
    with page_of(browser, 1600) as page:
        page.goto(f"{storm.served.url}/incidents/{TIED_JOB}#token={storm.served.token}")
        loaded(page)
        assert page.locator("#fabric .culprit").count() == 0
        tied = page.locator("#fabric a.tied[data-link]")
        assert tied.count() == 2
        assert "tie" in page.locator(".fabric-legend").inner_text()
        colours = {tied.nth(i).evaluate(PAINT) for i in range(2)}
        assert len(colours) == 1, colours
        assert page.problems == []


def test_low_confidence_is_drawn_unsure_not_as_a_red_culprit(storm: Incident, browser: Any) -> None:
    culprit = storm.truth["fault_link"]["id"]
    with page_of(browser, 1600) as page:
        page.goto(f"{storm.served.url}/incidents/{UNSURE_JOB}#token={storm.served.token}")
        loaded(page)
        assert page.locator("#fabric .culprit").count() == 0
        assert page.locator("#fabric a.unsure[data-link]").get_attribute("data-link") == culprit
        assert page.locator("#cause").inner_text().startswith("unsure: ")
        assert "low" in page.locator("#confidence").inner_text()
        assert "Low confidence" in page.locator(".fabric-legend").inner_text()
        assert page.problems == []


@pytest.mark.parametrize("width", WIDTHS)
def test_counters_keep_units_apart_and_show_in_and_out_and_values_on_hover(
    storm: Incident, browser: Any, width: int
) -> None:
    with page_of(browser, width) as page:
        page.goto(f"{storm.served.url}/incidents/{storm.job}#token={storm.served.token}")
        loaded(page)
        traffic = page.locator("#chart-traffic polyline")
        styles = {
            (traffic.nth(i).get_attribute("class"), traffic.nth(i).get_attribute("stroke"))
            for i in range(traffic.count())
        }
        assert {"series in", "series out"} <= {c for c, _ in styles}
        assert len({s for _, s in styles}) == len(styles), "every series its own colour"
        speed = page.locator("#chart-speed polyline")
        assert speed.count() >= 1 and "port_speed_gbps" in speed.first.get_attribute("data-series")
        for other in page.locator("#counters figure.chart:not(#chart-speed)").all():
            assert "port_speed" not in other.inner_text()
        assert page.locator("#chart-traffic text.tick").count() >= 8
        # The storm's culprit is a host cable whose host streams no counters: said, not hidden.
        assert "sent none" in page.locator("#counters .ends-note").inner_text()
        overlay = page.locator("#chart-traffic rect.overlay")
        box = overlay.bounding_box()
        overlay.hover(position={"x": box["width"] * 0.3, "y": box["height"] / 2})
        readout = page.locator("#chart-traffic .readout").inner_text()
        assert "in_octets:" in readout and "out_octets:" in readout and "Gb/s" in readout
        assert smallest_text_px(page, "#counters") >= 11
        assert page.problems == []


def test_times_are_whole_seconds_in_utc_beside_local_time(storm: Incident, browser: Any) -> None:
    verdict = _get(storm.served, f"/v1/jobs/{storm.job}/verdict")
    with page_of(browser, 1600) as page:
        page.goto(f"{storm.served.url}/incidents/{storm.job}#token={storm.served.token}")
        loaded(page)
        shown = page.locator("#summary time").first
        assert shown.locator(".utc").inner_text() == verdict["stalled_at"][:19] + "Z"
        assert re.fullmatch(r" \d{2}:\d{2}:\d{2} .+", shown.locator(".local").inner_text())
        assert not FRACTION.search(page.locator("#app").inner_text())


def test_the_list_refreshes_itself_until_paused(storm: Incident, browser: Any) -> None:
    with page_of(browser, 1600) as page:
        page.clock.install()
        page.goto(f"{storm.served.url}/incidents#token={storm.served.token}")
        loaded(page)
        page.evaluate("document.getElementById('jobs').dataset.old = 'yes'")
        page.clock.run_for(16_000)
        page.wait_for_selector("#jobs:not([data-old])")
        page.locator("#refresh-toggle").click()
        page.wait_for_selector("text=Auto-refresh paused")
        page.evaluate("document.getElementById('jobs').dataset.old = 'yes'")
        page.clock.run_for(60_000)
        assert page.locator("#jobs[data-old]").count() == 1
        assert page.problems == []
