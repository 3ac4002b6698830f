"""Benchmark: build the 288-node fabric and the candidate link set of a 2,304-rank job.

Run: .venv/bin/python benchmarks/topology_paths.py [--nodes 288] [--repeat 5]
Prints the build time, the path-set time for every ring channel of a job spanning all nodes,
and the sizes involved.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from railtrace.topology import PathFinder, build_fabric, rail_optimized
from railtrace.topology.ends import Endpoint
from railtrace.topology.paths import union_weights


def one_run(nodes: int, job_nodes: int) -> tuple[float, float, int, int, int]:
    t0 = time.perf_counter()
    design = rail_optimized(nodes)
    fabric = build_fabric(design.plan)
    t1 = time.perf_counter()
    finder = PathFinder(fabric)
    job = design.hosts[:job_nodes]
    flows = [
        (Endpoint(h, f"mlx5_{c}"), Endpoint(job[(i + 1) % len(job)], f"mlx5_{c}"))
        for c in range(design.rails)
        for i, h in enumerate(job)
    ]
    weights = union_weights(finder.flow_links(a, b) for a, b in flows)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, len(design.plan.cables), len(flows), len(weights)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=288)
    ap.add_argument("--job-nodes", type=int, default=0, help="the job's nodes (0: all)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    job_nodes = min(args.job_nodes or args.nodes, args.nodes)
    runs = [one_run(args.nodes, job_nodes) for _ in range(args.repeat)]
    build = [r[0] for r in runs]
    paths = [r[1] for r in runs]
    _, _, cables, flows, links = runs[0]
    print(
        f"nodes={args.nodes} job_nodes={job_nodes} ranks={job_nodes * 8} cables={cables} "
        f"flows={flows} "
        f"links_in_job_path_set={links}"
    )
    print(
        f"fabric build: median {statistics.median(build) * 1000:.1f} ms "
        f"(min {min(build) * 1000:.1f}, max {max(build) * 1000:.1f}) over {args.repeat} runs"
    )
    print(
        f"path set of all {flows} ring flows: median {statistics.median(paths) * 1000:.1f} ms "
        f"(min {min(paths) * 1000:.1f}, max {max(paths) * 1000:.1f})"
    )
    totals = [r[0] + r[1] for r in runs]
    print(f"total: median {statistics.median(totals) * 1000:.1f} ms")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
