"""The alerts' pure parts: Slack messages for each kind of alert, and the policy deciding what
goes out (dedup per subject, confidence floor), how fast (token bucket) and what a full queue
gives up."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import orjson
import pytest
from store_samples import LINK, T0, verdict

from railtrace.alerts.blast import OtherJob, Radius
from railtrace.alerts.payloads import (
    HEADER_MAX,
    Alert,
    Priority,
    cabling_alert,
    flap_storm_alert,
    node_alert,
    verdict_alert,
)
from railtrace.alerts.policy import AlertPolicy, AlertQueue, Deduper, TokenBucket
from railtrace.settings import AlertSettings
from railtrace.streams.records import (
    CablingEvent,
    CauseKind,
    JobState,
    LinkEvent,
    LinkEventKind,
    NodeEvent,
    Verdict,
)
from railtrace.topology import build_fabric, rail_optimized
from railtrace.topology.ends import CablingKind, Endpoint, LinkRef

BASE = "https://railtrace.example.net/"


def node_event(action: str = "quarantine", sdc: bool = True, xid: int | None = 79) -> NodeEvent:
    return NodeEvent(
        ts_ns=T0,
        node="gpu7",
        kind="xid" if action == "quarantine" else "release",
        xid=xid,
        pci="0000:3b:00",
        detail="GPU has fallen off the bus.",
        quarantined=action == "quarantine",
        action=action,
        reason="Xid 79 <fallen off the bus>",
        sdc=sdc,
    )


def flap(device: str = "leaf03") -> LinkEvent:
    return LinkEvent(T0, device, "Ethernet1/7", LinkEventKind.FLAP, 4.0, "4 changes within 60 s")


def miswired(kind: CablingKind = CablingKind.MISWIRED) -> CablingEvent:
    return CablingEvent(
        T0, "leaf03", "swp1", kind, Endpoint("gpu1", "mlx5_0"), Endpoint("gpu2", "mlx5_0")
    )


def texts(payload: dict) -> str:
    return orjson.dumps(payload).decode()


def button_url(payload: dict) -> str:
    (actions,) = [b for b in payload["blocks"] if b["type"] == "actions"]
    return actions["elements"][0]["url"]


# --- payloads -------------------------------------------------------------------------------


def test_verdict_alert_names_job_cause_ends_confidence_and_links_the_incident_page() -> None:
    uncosted = dataclasses.replace(verdict("job/42"), gpus=0)  # the cost line is tested below
    alert = verdict_alert(uncosted, BASE, evidence_lines=1)
    p = alert.payload
    assert [b["type"] for b in p["blocks"]] == ["header", "section", "section", "actions"]
    assert p["blocks"][0]["text"]["text"] == (
        "Job job/42 stalled: link leaf03:Ethernet1/7 <-> gpu-node-12:mlx5_3"
    )
    fields = [f["text"] for f in p["blocks"][1]["fields"]]
    assert "*Confidence*\n0.87" in fields
    assert "*Stalled at*\n2026-05-05 06:16:47 UTC" in fields
    evidence = p["blocks"][2]["text"]["text"]
    assert evidence.count("•") == 1 and "oper-status down" in evidence
    url = "https://railtrace.example.net/incidents/job%2F42"
    assert button_url(p) == url
    assert p["text"].startswith("railtrace: job job/42 stalled - cause link leaf03:Ethernet1/7")
    assert "(confidence 0.87)" in p["text"] and p["text"].endswith(url)
    assert (alert.subject, alert.priority) == ("job:job/42", Priority.HIGH)


def test_node_cause_verdict_names_the_node() -> None:
    v = dataclasses.replace(
        verdict(state=JobState.SLOW),
        cause_kind=CauseKind.NODE,
        cause_link=None,
        cause_node="gpu-node-12",
    )
    alert = verdict_alert(v, BASE)
    assert "cause node gpu-node-12" in alert.payload["text"]
    assert alert.priority == Priority.NORMAL


def test_a_tied_verdict_is_alerted_as_a_tie_not_as_its_first_candidate() -> None:
    v = dataclasses.replace(verdict(), tied=("leaf03:Ethernet1/7--gpu-node-12:mlx5_3", "L2"))
    p = verdict_alert(v, BASE).payload
    assert p["blocks"][0]["text"]["text"] == (
        "Job slurm-4242 stalled: a tie the evidence cannot tell apart: "
        "leaf03:Ethernet1/7--gpu-node-12:mlx5_3 | L2"
    )
    assert "cause a tie the evidence cannot tell apart" in p["text"]


GRAFANA = "https://grafana.example.net"


def buttons(payload: dict) -> list[tuple[str, str]]:
    (actions,) = [b for b in payload["blocks"] if b["type"] == "actions"]
    return [(e["text"]["text"], e["url"]) for e in actions["elements"]]


def stalled(gpus: int = 128, answer_s: int = 20, watchdog_seen: bool = False) -> Verdict:
    """A stalled 128-GPU job answered `answer_s` after the stall, its watchdog 10 min after."""
    return dataclasses.replace(
        verdict(),
        decided_at_ns=T0 + answer_s * 10**9,
        gpus=gpus,
        watchdog_at_ns=T0 + 600 * 10**9,
        watchdog_seen=watchdog_seen,
    )


def sections(payload: dict) -> list[str]:
    return [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section" and "text" in b]


def test_stalled_alert_says_what_the_stall_cost_and_what_answering_before_the_watchdog_saved() -> (
    None
):
    p = verdict_alert(stalled(), BASE).payload
    assert sections(p)[0] == (
        "*Cost*\n128 GPUs idle 20 s before this answer (0.7 GPU-h); the watchdog fires 10 min "
        "after the stall (expected, 21.3 GPU-h): 20.6 GPU-h saved"
    )
    assert "20.6 GPU-h saved." in p["text"]


def test_a_watchdog_the_job_printed_is_said_to_have_fired_not_expected() -> None:
    p = verdict_alert(stalled(answer_s=900, watchdog_seen=True), BASE).payload
    assert sections(p)[0] == (
        "*Cost*\n128 GPUs idle 15 min before this answer (32.0 GPU-h); the watchdog fired "
        "10 min after the stall (21.3 GPU-h): 0.0 GPU-h saved"
    )


def test_a_slow_job_or_an_undated_stall_has_no_cost_line() -> None:
    slow = dataclasses.replace(stalled(), state=JobState.SLOW)
    for v in (slow, dataclasses.replace(verdict(), watchdog_at_ns=None)):
        p = verdict_alert(v, BASE).payload
        assert not any(t.startswith("*Cost*") for t in sections(p))
        assert "GPU-h" not in p["text"]


def test_link_verdict_has_buttons_for_incident_link_page_and_grafana_when_configured() -> None:
    v = stalled()
    quoted = LINK.link_id.replace(":", "%3A").replace("/", "%2F")
    incident = ("Open incident", "https://railtrace.example.net/incidents/slurm-4242")
    link = ("Open link", f"https://railtrace.example.net/links/{quoted}")
    assert buttons(verdict_alert(v, BASE).payload) == [incident, link]
    start_ms, end_ms = (T0 - 900 * 10**9) // 10**6, (T0 + 920 * 10**9) // 10**6
    grafana = (
        "Link in Grafana",
        f"{GRAFANA}/d/railtrace-link?var-link_id={quoted}&from={start_ms}&to={end_ms}",
    )
    p = verdict_alert(v, BASE, grafana=GRAFANA + "/").payload
    assert buttons(p) == [incident, link, grafana]
    (actions,) = [b for b in p["blocks"] if b["type"] == "actions"]
    ids = [e["action_id"] for e in actions["elements"]]
    assert len(set(ids)) == 3 and ids[0] == "railtrace-open"


def test_node_verdict_buttons_open_the_node_page_and_its_grafana_dashboard() -> None:
    v = dataclasses.replace(
        stalled(), cause_kind=CauseKind.NODE, cause_link=None, cause_node="gpu-node-12"
    )
    labels = [
        (label, url.split("?")[0])
        for label, url in buttons(verdict_alert(v, BASE, grafana=GRAFANA).payload)
    ]
    assert labels[1:] == [
        ("Open node", "https://railtrace.example.net/nodes/gpu-node-12"),
        ("Node in Grafana", f"{GRAFANA}/d/railtrace-nodes"),
    ]
    assert "var-node=gpu-node-12" in buttons(verdict_alert(v, BASE, grafana=GRAFANA).payload)[2][1]


def test_a_tie_gets_no_culprit_button_only_the_incident_page() -> None:
    v = dataclasses.replace(stalled(), tied=(LINK.link_id, "L2"))
    p = verdict_alert(v, BASE, grafana=GRAFANA).payload
    assert [label for label, _ in buttons(p)] == ["Open incident"]
    assert p["blocks"][0]["text"]["text"].startswith("Job slurm-4242 stalled: a tie")


def test_quarantine_and_flap_storm_alerts_add_a_grafana_button_when_configured() -> None:
    node = buttons(node_alert(node_event(), BASE, GRAFANA).payload)
    assert node[1][0] == "Node in Grafana" and "var-node=gpu7" in node[1][1]
    link = buttons(flap_storm_alert(flap(), LINK.link_id, BASE, GRAFANA).payload)
    assert link[1][0] == "Link in Grafana" and link[1][1].startswith(f"{GRAFANA}/d/railtrace-link?")
    assert len(buttons(node_alert(node_event(), BASE).payload)) == 1


def fields(payload: dict) -> list[str]:
    return [f["text"] for f in payload["blocks"][1]["fields"]]


def test_times_are_shown_in_the_site_zone_beside_utc() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    p = verdict_alert(verdict(), BASE, zone=berlin).payload
    assert "*Stalled at*\n2026-05-05 06:16:47 UTC (08:16:47 CEST)" in fields(p)
    assert "*At*\n2026-05-05 06:16:47 UTC (08:16:47 CEST)" in fields(
        node_alert(node_event(), BASE, zone=berlin).payload
    )
    assert "*At*\n2026-05-05 06:16:47 UTC (08:16:47 CEST)" in fields(
        cabling_alert(miswired(), BASE, zone=berlin).payload
    )


def test_a_local_time_on_another_day_carries_its_date() -> None:
    p = flap_storm_alert(flap(), LINK.link_id, BASE, zone=ZoneInfo("America/Los_Angeles")).payload
    assert "*At*\n2026-05-05 06:16:47 UTC (2026-05-04 23:16:47 PDT)" in fields(p)


def test_a_site_in_utc_shows_utc_once() -> None:
    assert "*Stalled at*\n2026-05-05 06:16:47 UTC" in fields(verdict_alert(verdict(), BASE).payload)
    p = verdict_alert(verdict(), BASE, zone=ZoneInfo("Etc/UTC")).payload
    assert "*Stalled at*\n2026-05-05 06:16:47 UTC" in fields(p)


def test_the_policy_shows_times_in_the_zone_it_is_given() -> None:
    pol = AlertPolicy(AlertSettings(incident_base_url=BASE), ZoneInfo("Asia/Tokyo"))
    alert = pol.on_verdict(verdict(), now=0)
    assert alert is not None
    assert "*Stalled at*\n2026-05-05 06:16:47 UTC (15:16:47 JST)" in fields(alert.payload)


def test_quarantine_alert_carries_node_reason_sdc_and_xid_escaped_for_mrkdwn() -> None:
    p = node_alert(node_event(), BASE).payload
    fields = [f["text"] for f in p["blocks"][1]["fields"]]
    assert "*Reason*\nXid 79 &lt;fallen off the bus&gt;" in fields
    assert "*Suspected SDC*\nyes" in fields and "*Xid*\n79" in fields
    assert p["blocks"][0]["text"]["text"] == "Node gpu7 quarantined"
    assert "suspected silent data corruption" in p["text"]
    assert button_url(p) == "https://railtrace.example.net/nodes/gpu7"


def test_release_alert_is_low_priority() -> None:
    alert = node_alert(node_event("release", sdc=False, xid=None), BASE)
    assert alert.payload["blocks"][0]["text"]["text"] == "Node gpu7 released"
    assert alert.priority == Priority.LOW


def test_flap_storm_alert_says_which_link_and_how_many_changes() -> None:
    p = flap_storm_alert(flap(), LINK.link_id, BASE).payload
    assert LINK.link_id in p["blocks"][0]["text"]["text"]
    assert "*State changes*\n4" in [f["text"] for f in p["blocks"][1]["fields"]]
    assert "4 state changes" in p["text"]
    at = datetime.fromtimestamp(flap().ts_ns // 10**9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    quoted = LINK.link_id.replace(":", "%3A").replace("/", "%2F")
    assert button_url(p) == (
        f"https://railtrace.example.net/links/{quoted}?at={at.replace(':', '%3A')}"
    )


def test_cabling_alert_shows_planned_and_seen_ends() -> None:
    p = cabling_alert(miswired(), BASE).payload
    assert p["blocks"][0]["text"]["text"] == "Cabling miswired: leaf03:swp1"
    assert "planned gpu1:mlx5_0, seen gpu2:mlx5_0" in p["text"]
    assert button_url(p) == "https://railtrace.example.net/cabling?device=leaf03"


def test_long_job_ids_stay_within_slack_header_limit() -> None:
    p = verdict_alert(verdict("j" * 400), BASE).payload
    assert len(p["blocks"][0]["text"]["text"]) == HEADER_MAX


# --- policy ---------------------------------------------------------------------------------


def policy(**kw: object) -> AlertPolicy:
    return AlertPolicy(AlertSettings(incident_base_url=BASE, dedup_window_s=60, **kw))


def test_same_verdict_within_window_is_suppressed_and_sent_again_after_it() -> None:
    pol = policy()
    assert pol.on_verdict(verdict(), now=0) is not None
    assert pol.on_verdict(verdict(confidence=0.9), now=30) is None
    assert pol.on_verdict(verdict(), now=61) is not None
    assert pol.counters == {"alerts": 2, "suppressed": 1, "below_confidence": 0}


def test_changed_cause_goes_out_again_at_once_and_so_does_the_first_cause_after_it() -> None:
    pol = policy()
    first = verdict()
    node = dataclasses.replace(first, cause_kind=CauseKind.NODE, cause_link=None, cause_node="n1")
    assert [pol.on_verdict(v, now=t) is not None for t, v in enumerate([first, node, first])] == [
        True,
        True,
        True,
    ]


def test_a_job_that_recovers_and_stalls_again_is_alerted_again() -> None:
    pol = policy()
    assert pol.on_verdict(verdict(), now=0) is not None
    recovered = pol.on_verdict(verdict(state=JobState.HEALTHY), now=1)
    assert recovered is not None and recovered.kind == "recovery"
    assert pol.on_verdict(verdict(), now=2) is not None


def test_a_job_alerted_stalled_gets_one_recovery_message_when_healthy_again() -> None:
    pol = policy()
    pol.on_verdict(verdict(), now=0)
    healthy = dataclasses.replace(
        verdict(state=JobState.HEALTHY), cause_kind=CauseKind.UNKNOWN, cause_link=None
    )
    alert = pol.on_verdict(healthy, now=1)
    assert alert is not None
    assert (alert.subject, alert.priority) == ("job:slurm-4242", Priority.LOW)
    p = alert.payload
    assert p["blocks"][0]["text"]["text"] == "Job slurm-4242 recovered"
    assert p["text"] == (
        "railtrace: job slurm-4242 recovered, healthy again (was stalled, link "
        "leaf03:Ethernet1/7 &lt;-&gt; gpu-node-12:mlx5_3). "
        "https://railtrace.example.net/incidents/slurm-4242"
    )
    assert pol.on_verdict(healthy, now=2) is None


def test_no_recovery_message_for_a_job_the_channel_never_heard_of() -> None:
    pol = policy(min_confidence=0.9)
    assert pol.on_verdict(verdict(job_id="quiet", confidence=0.5), now=0) is None
    assert pol.on_verdict(verdict(job_id="quiet", state=JobState.HEALTHY), now=1) is None
    assert pol.on_verdict(verdict(job_id="never", state=JobState.HEALTHY), now=2) is None


def test_recovery_messages_can_be_turned_off_and_a_new_stall_still_alerts() -> None:
    pol = policy(send_recovery=False)
    assert pol.on_verdict(verdict(), now=0) is not None
    assert pol.on_verdict(verdict(state=JobState.HEALTHY), now=1) is None
    assert pol.on_verdict(verdict(), now=2) is not None


def test_policy_passes_the_grafana_setting_to_the_alerts() -> None:
    alert = policy(grafana_base_url=GRAFANA).on_verdict(stalled(), now=0)
    assert alert is not None and buttons(alert.payload)[-1][0] == "Link in Grafana"


def test_low_confidence_and_unknown_cause_verdicts_are_not_alerted() -> None:
    pol = policy(min_confidence=0.9)
    assert pol.on_verdict(verdict(confidence=0.8), now=0) is None
    unknown = dataclasses.replace(verdict(), cause_kind=CauseKind.UNKNOWN, cause_link=None)
    assert policy().on_verdict(unknown, now=0) is None
    assert pol.counters["below_confidence"] == 1


def test_flap_storm_reported_by_both_ends_of_a_link_is_sent_once() -> None:
    pol = policy()
    other_end = dataclasses.replace(flap(), device="gpu-node-12", interface="mlx5_3")
    sent = [pol.on_link_event(e, LINK.link_id, now=0) for e in (flap(), other_end)]
    assert [a is not None for a in sent] == [True, False]
    down = dataclasses.replace(flap(), kind=LinkEventKind.DOWN)
    assert pol.on_link_event(down, LINK.link_id, now=0) is None


def test_quarantine_then_release_are_both_sent_but_plain_xids_are_not() -> None:
    pol = policy()
    xid_only = dataclasses.replace(node_event(), action="")
    got = [pol.on_node_event(e, now=0) for e in (node_event(), node_event(), xid_only)]
    assert [a is not None for a in got] == [True, False, False]
    assert pol.on_node_event(node_event("release"), now=1) is not None


def test_resolved_cabling_is_not_alerted_but_lets_the_same_miswire_alert_again() -> None:
    pol = policy()
    kinds = [CablingKind.MISWIRED, CablingKind.MISWIRED, CablingKind.RESOLVED, CablingKind.MISWIRED]
    got = [pol.on_cabling(miswired(k), now=i) is not None for i, k in enumerate(kinds)]
    assert got == [True, False, False, True]


def test_deduper_forgets_oldest_subjects_past_its_bound() -> None:
    d = Deduper(window_s=60, max_subjects=3)
    for i in range(5):
        d.admit(f"job:{i}", "stalled", now=i)
    assert len(d) == 3
    assert d.admit("job:0", "stalled", now=5)  # forgotten, so sent again
    assert not d.admit("job:4", "stalled", now=5)


def test_token_bucket_allows_a_burst_then_one_per_interval() -> None:
    bucket = TokenBucket(rate_per_s=1.0, burst=2)
    assert [bucket.take(0.0), bucket.take(0.0)] == [0.0, 0.0]
    assert bucket.take(0.0) == pytest.approx(1.0)
    assert bucket.take(0.5) == pytest.approx(0.5)
    assert bucket.take(1.0) == 0.0
    assert bucket.take(1.0) == pytest.approx(1.0)


def alert(name: str, priority: Priority) -> Alert:
    return Alert("test", name, "", priority, {})


def test_full_queue_drops_the_oldest_lowest_priority_alert() -> None:
    q = AlertQueue(maxlen=3)
    for a in (alert("a", Priority.HIGH), alert("b", Priority.LOW), alert("c", Priority.LOW)):
        assert q.push(a) is None
    assert q.push(alert("d", Priority.NORMAL)).subject == "b"
    assert q.push(alert("e", Priority.LOW)).subject == "c"  # the older of two LOW
    assert q.push(alert("f", Priority.HIGH)).subject == "e"
    assert q.push(alert("g", Priority.LOW)).subject == "g"  # lower than everything queued
    assert [q.pop().subject for _ in range(3)] == ["a", "d", "f"]
    assert q.pop() is None


def test_every_grafana_button_opens_a_provisioned_dashboard_on_one_of_its_variables() -> None:
    """The buttons name dashboards by uid and variable: a rename in deploy/grafana must fail
    here, not leave Slack buttons that open an empty page."""
    dashboards = {
        d["uid"]: {t["name"] for t in d.get("templating", {}).get("list", [])}
        for d in (
            json.loads(p.read_text())
            for p in (Path(__file__).parents[1] / "deploy/grafana/dashboards").glob("*.json")
        )
    }
    node = dataclasses.replace(
        stalled(), cause_kind=CauseKind.NODE, cause_link=None, cause_node="gpu-node-12"
    )
    urls = [
        url
        for v in (stalled(), node)
        for _, url in buttons(verdict_alert(v, BASE, grafana=GRAFANA).payload)
        if url.startswith(GRAFANA)
    ]
    assert len(urls) == 2
    for url in urls:
        parsed = urlsplit(url)
        uid = parsed.path.rsplit("/", 1)[-1]
        variables = {k.removeprefix("var-") for k in parse_qs(parsed.query) if k.startswith("var-")}
        assert uid in dashboards, url
        assert variables and variables <= dashboards[uid], (url, dashboards[uid])


def _next_steps(payload: dict) -> str | None:
    return next((t for t in sections(payload) if t.startswith("*Next steps*")), None)


def test_a_node_verdict_alert_spells_out_the_drain_to_copy_even_without_the_fabric() -> None:
    node = dataclasses.replace(
        stalled(), cause_kind=CauseKind.NODE, cause_link=None, cause_node="gpu-node-12"
    )
    alert = AlertPolicy(AlertSettings(incident_base_url=BASE)).on_verdict(node, now=0)
    assert alert is not None
    steps = _next_steps(alert.payload)
    assert steps is not None
    assert (
        '```scontrol update NodeName=gpu-node-12 State=DRAIN Reason="railtrace: job slurm-4242 '
        'stalled (node)"```' in steps
    )
    assert "```sbatch --exclude=gpu-node-12 ...```" in steps


#: A leaf-spine uplink of the 64-node reference fabric, its spine end first.
UPLINK = LinkRef(
    "leaf-su01-r0:swp33--spine-01:Ethernet0",
    Endpoint("spine-01", "Ethernet0"),
    Endpoint("leaf-su01-r0", "swp33"),
)


def test_an_uplink_alert_shuts_its_leaf_port_only_when_the_policy_knows_the_fabric() -> None:
    fabric = build_fabric(rail_optimized(64).plan)
    v = dataclasses.replace(stalled(), cause_link=UPLINK)
    blind = AlertPolicy(AlertSettings(incident_base_url=BASE)).on_verdict(v, now=0)
    assert blind is not None and _next_steps(blind.payload) is None
    seeing = AlertPolicy(AlertSettings(incident_base_url=BASE), role=fabric.role)
    alert = seeing.on_verdict(v, now=0)
    assert alert is not None
    steps = _next_steps(alert.payload)
    assert steps is not None
    # Slack wants & escaped everywhere, code blocks too; it shows and copies `&&`.
    assert "```nv set interface swp33 link state down &amp;&amp; nv config apply```" in steps


def _radius_section(payload: dict) -> str | None:
    return next((t for t in sections(payload) if t.startswith("*Blast radius*")), None)


def _crossing(n: int, blamed: int = 1) -> Radius:
    """`slurm-4242` (the alert's own job) and `n` others on the link, the first `blamed`
    of them stalled by it too."""
    jobs = [OtherJob("slurm-4242", 1.0, "stalled", True)]
    jobs += [
        OtherJob(f"job-{i}", 0.5, "stalled" if i < blamed else None, i < blamed) for i in range(n)
    ]
    return Radius(LINK.link_id, tuple(jobs))


def test_a_link_alert_names_the_other_jobs_on_the_link_and_not_its_own() -> None:
    p = verdict_alert(stalled(), BASE, radius=_crossing(2)).payload
    assert _radius_section(p) == (
        "*Blast radius*: 2 other jobs may cross this link\n"
        "• `job-0` stalled, blamed on this link (crosses it with chance 0.50)\n"
        "• `job-1` no verdict yet (crosses it with chance 0.50)"
    )


def test_a_long_blast_radius_shows_five_and_links_the_rest_to_the_link_page() -> None:
    text = _radius_section(verdict_alert(stalled(), BASE, radius=_crossing(12)).payload)
    assert text is not None
    assert text.splitlines()[0] == "*Blast radius*: 12 other jobs may cross this link"
    assert len(text.splitlines()) == 1 + 5 + 1
    quoted = LINK.link_id.replace(":", "%3A").replace("/", "%2F")
    assert text.endswith(f"• and <{BASE}links/{quoted}|7 more on the link page>")


def test_an_unknown_blast_radius_says_why_and_no_radius_says_nothing() -> None:
    unknown = Radius(LINK.link_id, known=False, reason="the API at http://x did not answer")
    p = verdict_alert(stalled(), BASE, radius=unknown).payload
    assert _radius_section(p) == "*Blast radius*\nNot known: the API at http://x did not answer."
    assert _radius_section(verdict_alert(stalled(), BASE).payload) is None
    alone = verdict_alert(stalled(), BASE, radius=_crossing(0)).payload
    assert _radius_section(alone) == "*Blast radius*\nNo other job's paths cross this link."


def test_the_check_jobs_step_names_the_jobs_the_radius_found() -> None:
    fabric = build_fabric(rail_optimized(64).plan)
    v = dataclasses.replace(stalled(), cause_link=UPLINK)
    policy = AlertPolicy(AlertSettings(incident_base_url=BASE), role=fabric.role)
    steps = _next_steps(policy.verdict_alert(v, _crossing(2)).payload)
    assert steps is not None
    assert "will move when it is shut: job-0, job-1." in steps
    blind = _next_steps(policy.verdict_alert(v).payload)
    assert blind is not None and "No other job's traffic is known to cross this link." in blind
