"""`simulate`, `replay` and `demo`: captures made, replayed and shown."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from railtrace.cli.common import (
    DataOpt,
    JsonOpt,
    console,
    err,
    fail,
    progress,
    reported,
    settings_of,
)
from railtrace.simulate.scenario import Fault

#: The file that marks a folder as the demo's own, so `demo` may empty it.
DEMO_MARK = ".railtrace-demo"


def register(app: typer.Typer) -> None:
    app.command()(simulate)
    app.command("replay")(replay_cmd)
    app.command()(demo)


def simulate(
    out_dir: Annotated[Path, typer.Argument(help="Where to write the capture.")],
    nodes: Annotated[int, typer.Option(min=2, help="Cluster size (8-GPU nodes).")] = 64,
    fault: Annotated[Fault, typer.Option(help="What goes wrong.")] = Fault.LINK_DOWN,
    seed: Annotated[int, typer.Option(help="One seed names one incident.")] = 1,
    watchdog: Annotated[int, typer.Option(min=10, help="PyTorch NCCL timeout, seconds.")] = 600,
    sample_interval: Annotated[int, typer.Option(min=1, help="gNMI sample interval, s.")] = 10,
) -> None:
    """Simulate an incident on a rail-optimized cluster and write it as a capture directory
    (cables.csv, hosts.csv, gnmi/, logs/) plus its ground truth in truth.json."""
    truth = _simulate(out_dir, nodes, fault, seed, watchdog, sample_interval)
    console.print(f"Wrote capture to {out_dir} ({truth['nodes']} nodes, fault {truth['fault']}).")


def _simulate(
    out_dir: Path, nodes: int, fault: Fault, seed: int, watchdog: int, sample: int
) -> dict[str, Any]:
    from railtrace.compose import capture

    with progress() as tick:
        return capture.simulate(out_dir, nodes, fault, seed, watchdog, sample, tick)


def _replay(ctx: typer.Context, data: Path | None, capture_dir: Path) -> Any:
    """Replay into the store with progress bars; print what was stored; the report."""
    from railtrace.compose import capture
    from railtrace.render import replay_summary

    settings = settings_of(ctx, data)
    with reported(), progress() as tick:
        done = capture.replay_into(settings, capture_dir, tick)
    replay_summary(err, done.report, done.stored, done.warnings)
    return done.report


def replay_cmd(
    ctx: typer.Context,
    capture_dir: Annotated[
        Path, typer.Argument(help="Capture directory (cables.csv, gnmi/, logs/).")
    ],
    data: DataOpt = None,
    json_out: JsonOpt = False,
    to_kafka: Annotated[
        bool,
        typer.Option(
            "--kafka",
            help="Publish the capture onto the raw Kafka topics (original timestamps kept) "
            "for the streaming workers, instead of replaying it here.",
        ),
    ] = False,
) -> None:
    """Replay a capture through the attribution in event time and store the results."""
    from railtrace.render import verdict_table

    settings = settings_of(ctx, data)
    if to_kafka:
        _publish(ctx, capture_dir)
        return
    report = _replay(ctx, data, capture_dir)
    if json_out:
        from railtrace.api.schemas import VerdictOut

        docs = [VerdictOut.from_record(v).model_dump(mode="json") for v in report.verdicts]
        console.print_json(orjson.dumps(docs).decode())
    else:
        console.print(verdict_table(report.verdicts))
        console.print(
            f"Stored in {settings.store.data_dir}. "
            f"Ask: railtrace verdict JOB_ID --data {settings.store.data_dir}"
        )


def _publish(ctx: typer.Context, capture_dir: Path) -> None:
    from railtrace.compose import capture

    settings = settings_of(ctx)
    with reported(), progress() as tick:
        done = capture.publish(settings, capture_dir, tick)
    console.print(
        f"Published {done.gnmi_messages:,} gNMI messages, {done.log_lines:,} log lines "
        f"({done.log_messages:,} messages) and {done.scheduler_records:,} scheduler records "
        f"to {settings.kafka.bootstrap_servers} "
        f"(topic prefix {settings.kafka.topic_prefix!r})."
    )


def demo(
    ctx: typer.Context,
    workdir: Annotated[Path, typer.Option(help="Where the demo writes its capture and store.")] = (
        Path("railtrace-demo")
    ),
    nodes: Annotated[int, typer.Option(min=2)] = 64,
    fault: Annotated[Fault, typer.Option(help="What goes wrong.")] = Fault.LINK_DOWN,
    seed: Annotated[int, typer.Option()] = 7,
) -> None:
    """Simulate a 64-node cluster with a fault, replay it, and show which link stalled which job."""
    from railtrace.render import verdict_table
    from railtrace.store.owner import holder

    if workdir.exists() and any(workdir.iterdir()) and not (workdir / DEMO_MARK).exists():
        raise fail(f"{workdir} exists and is not a railtrace demo directory; pick --workdir")
    held = holder(workdir / "data")
    if held is not None:
        raise fail(
            f"{workdir / 'data'} is in use by {held}: a new demo would delete the store under "
            "it. Stop that process first (Ctrl-C in its shell), or pick another --workdir"
        )
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    (workdir / DEMO_MARK).touch()
    capture, data = workdir / "capture", workdir / "data"
    console.rule(f"railtrace demo: {nodes} nodes, fault {fault}, seed {seed}")
    truth = _simulate(capture, nodes, fault, seed, 600, 10)
    report = _replay(ctx, data, capture)
    console.print(verdict_table(report.verdicts))
    _say_truth(truth)
    stalled = [v.job_id for v in report.verdicts if v.state == "stalled"]
    job = stalled[0] if stalled else (report.verdicts[0].job_id if report.verdicts else "JOB")
    me = _self_command()
    console.print(
        "\nNext:\n"
        f"  {me} verdict {job} --data {data}    # the evidence, in the terminal\n"
        f"  {me} serve --data {data}            # then, in another shell:\n"
        f"  TOKEN=$({me} token create --name $USER --quiet)\n"
        f'  curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8000/v1/jobs/{job}/verdict\n'
        f"  and open http://127.0.0.1:8000/incidents/{job} in a browser (it asks for the token)",
        soft_wrap=True,
    )


def _self_command() -> str:
    """How the user can run railtrace again: bare when it is on PATH, else the script path."""
    argv0 = Path(sys.argv[0])
    on_path = shutil.which("railtrace")
    if on_path and argv0.name == "railtrace" and Path(on_path).resolve() == argv0.resolve():
        return "railtrace"
    if argv0.name == "railtrace":
        try:
            return str(argv0.resolve().relative_to(Path.cwd()))
        except ValueError:
            return str(argv0)
    return "railtrace"


def _say_truth(truth: dict[str, Any]) -> None:
    """What the simulator did, per job it struck, to compare with the verdicts above."""
    struck = [(j, t) for j, t in sorted(truth["jobs"].items()) if t["state"] != "healthy"]
    if not struck:
        console.print("Simulated fault: none (only unrelated anomalies on idle links)")
    for job, t in struck:
        if t.get("link"):
            where = f"link {t['link']['id']}"
        elif t.get("node"):
            where = f"node {t['node']}"
        else:
            where = "nothing in the fabric (the right verdict names no link)"
        side = f", side {t['diagnosis']}" if t.get("diagnosis") else ""
        console.print(f"Simulated: job {job} {t['state']} by {t['fault']} on {where}{side}")
