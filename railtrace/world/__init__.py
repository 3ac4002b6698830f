"""A randomized model of GPU clusters and their incidents, to grade railtrace by.

The simulator in `railtrace.simulate` was written beside the correlator and routes its traffic
with the correlator's own `PathFinder`, so it cannot grade it. This package is the world the
product is graded against instead: it draws a fabric shape, a routing scheme, the jobs, their
trainers and logging habits, the switches' vendors and clocks, and the faults from a documented
space of what real clusters vary (`dimensions.py`), moves the bytes itself, and writes a capture
in the formats the field's tools print, with the truth beside it.

It imports nothing of railtrace's topology, streams or simulator (a test checks): what it
knows of fabrics, routing and logs it must not share with the code it grades.
"""
