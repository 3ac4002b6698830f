"""The links a job's traffic may cross, each with the chance that it does: the candidates a
stall can be blamed on.

Apart from the correlator because it reads the job's view and the fabric's paths only; the
correlator caches the answer per job and files the job under each link. Pure: everything is
passed in.
"""

from __future__ import annotations

from collections.abc import Callable

from railtrace.streams.attribution.jobs import JobView
from railtrace.topology.ends import Endpoint
from railtrace.topology.fabric import Fabric
from railtrace.topology.paths import LinkWeights, PathFinder, union_weights


def job_paths(view: JobView, fabric: Fabric, paths: PathFinder) -> tuple[LinkWeights, bool]:
    """The job's links with crossing probabilities, and whether they were inferred from its
    hosts alone (no channel flows: see `inferred_paths_factor`).

    From the flows its channel lines showed; without them, from any two of its hosts talking
    on each rail; with one host or none known, its own NIC cables only.
    """
    flows = view.flows(fabric)
    inferred = not flows and len(view.hosts) > 1
    if flows:
        weights = union_weights(paths.flow_links(a, b) for a, b in sorted(flows))
    elif inferred:
        # No channel lines (NCCL at WARN or unset), but the hosts are known (from the
        # scheduler, or from the lines that name them): any two may talk on each rail.
        weights = paths.mesh_links(view.hosts, _nics_of(view, fabric))
    else:
        # One host, or none known: only its own NIC cables can be candidates.
        nics_of = _nics_of(view, fabric)
        weights = {
            lid: 1.0
            for host in sorted(view.hosts)
            for nic in nics_of(host)
            if (lid := fabric.link_at.get(Endpoint(host, nic))) is not None
        }
    return weights, inferred


def _nics_of(view: JobView, fabric: Fabric) -> Callable[[str], tuple[str, ...]]:
    """Per host, the NICs near the GPUs the scheduler gave the job there (all of them when
    either is unknown): a job on half a node talks on half its rails."""
    gpus = view.host_gpus
    return lambda host: fabric.job_nics(host, gpus.get(host, ()))
