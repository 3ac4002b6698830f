"""railtrace's gNMI service definitions; the Python stubs are in `railtrace.proto.gen`.

The `.proto` files here are the source; `gen/` is made from them by setup.py at install and
wheel build time (grpcio-tools), so it exists only after `pip install` (editable or not).
"""
