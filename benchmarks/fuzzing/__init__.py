"""The fuzz harness behind benchmarks/fuzz_readers.py, one module per role.

`corpus` (good records), `garbage_values`, `mutate` and `mutate_json` (garbage), `cases` (an
input and its result), `encoding` (bytes as the readers see them), one check per reader
(`csv_reader`, `gnmi_readers`, `logs_reader` with `log_facts`, `replay_reader`), `harness`
(running, timing, reducing, tallying, failure files) and `reader_report` (what a run prints).

Imported as `benchmarks.fuzzing` with the repository root on sys.path (the scripts put it
there), which is also the name mypy checks these modules under: imported as plain `fuzzing`
they would be a second copy, and unchecked where they are used.
"""
