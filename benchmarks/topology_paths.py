"""Benchmark: build the 288-node fabric and the candidate link set of a 2,304-rank job.

Run: .venv/bin/python benchmarks/topology_paths.py [--nodes 288] [--job-nodes N] [--repeat 5]
     [--mesh [--grow]]
Prints the build time, the path-set time for every ring channel of a job spanning all nodes
(or its first `--job-nodes`), and the sizes involved. `--mesh` works the job's links out as
for a job whose NCCL printed no channels (NCCL_DEBUG unset or WARN): every pair of its hosts
on each rail, per pair of leaves. `--grow` asks one finder for the mesh of the job's first
1, 2, ... hosts in turn, as a job with no scheduler record is learnt line by line.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from railtrace.topology import PathFinder, build_fabric, rail_optimized
from railtrace.topology.ends import Endpoint
from railtrace.topology.paths import union_weights


def one_run(
    nodes: int, job_nodes: int, mesh: bool, grow: bool
) -> tuple[float, float, int, int, int]:
    """(build s, path set s, cables, flows or leaf pairs, links in the path set)."""
    t0 = time.perf_counter()
    design = rail_optimized(nodes)
    fabric = build_fabric(design.plan)
    t1 = time.perf_counter()
    finder = PathFinder(fabric)
    job = design.hosts[:job_nodes]
    if mesh:
        for known in range(1, len(job) if grow else 0):
            finder.mesh_links(job[:known])
        weights = finder.mesh_links(job)
        t2 = time.perf_counter()
        leaves: dict[int, set[str]] = {}
        for host in job:
            for nic in fabric.host_nics.get(host, ()):
                ep = Endpoint(host, nic)
                leaves.setdefault(fabric.nic_rail[ep], set()).add(fabric.nic_leaf[ep])
        pairs = sum(len(on) * (len(on) - 1) // 2 for on in leaves.values())
        return t1 - t0, t2 - t1, len(design.plan.cables), pairs, len(weights)
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
    ap.add_argument(
        "--mesh", action="store_true", help="the job's links from its hosts alone (no channels)"
    )
    ap.add_argument(
        "--grow", action="store_true", help="--mesh: ask for the first 1, 2, ... hosts in turn"
    )
    args = ap.parse_args()
    if args.grow and not args.mesh:
        ap.error("--grow is for --mesh")
    job_nodes = min(args.job_nodes or args.nodes, args.nodes)
    runs = [one_run(args.nodes, job_nodes, args.mesh, args.grow) for _ in range(args.repeat)]
    build = [r[0] for r in runs]
    paths = [r[1] for r in runs]
    _, _, cables, flows, links = runs[0]
    counted = "leaf_pairs" if args.mesh else "flows"
    print(
        f"nodes={args.nodes} job_nodes={job_nodes} ranks={job_nodes * 8} cables={cables} "
        f"{counted}={flows} "
        f"links_in_job_path_set={links}"
    )
    print(
        f"fabric build: median {statistics.median(build) * 1000:.1f} ms "
        f"(min {min(build) * 1000:.1f}, max {max(build) * 1000:.1f}) over {args.repeat} runs"
    )
    what = f"mesh of {flows} leaf pairs" if args.mesh else f"all {flows} ring flows"
    if args.grow:
        what += f", grown one host at a time over {job_nodes} asks"
    print(
        f"path set of {what}: median {statistics.median(paths) * 1000:.1f} ms "
        f"(min {min(paths) * 1000:.1f}, max {max(paths) * 1000:.1f})"
    )
    totals = [r[0] + r[1] for r in runs]
    print(f"total: median {statistics.median(totals) * 1000:.1f} ms")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
