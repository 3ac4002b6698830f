"""`railtrace collect ...`: the collectors that gather railtrace's inputs from switches and hosts
and hand them to delivery (Kafka, with a disk spool when the broker is away)."""
