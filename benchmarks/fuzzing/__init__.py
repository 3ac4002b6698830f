"""The fuzz harnesses behind benchmarks/fuzz_readers.py and benchmarks/fuzz_api.py, one
module per role.

Readers: `corpus` (good records), `garbage_values`, `mutate` and `mutate_json` (garbage),
`cases` (an input and its result), `encoding` (bytes as the readers see them), one check per
reader (`csv_reader`, `gnmi_readers`, `logs_reader` with `log_facts`, `replay_reader`,
`scheduler_reader`),
`harness` (running, timing, reducing, tallying, failure files) and `reader_report` (what a
run prints).

The API: `api_values` (the odd values requests are made of), `api_spec` (the operations the
OpenAPI document declares), `api_requests` (one request from a seed and an index),
`api_checks` (what a response, a token and /metrics are held to), `api_run` (the store, the
app and the requests sent) and `api_figures` (a run's figures and what it prints).

Imported as `benchmarks.fuzzing` with the repository root on sys.path (the scripts put it
there), which is also the name mypy checks these modules under: imported as plain `fuzzing`
they would be a second copy, and unchecked where they are used.
"""
