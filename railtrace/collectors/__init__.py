"""`railtrace collect ...`: the collectors that gather railtrace's inputs from switches and hosts
and hand them to delivery (Kafka, with a disk spool when the broker is away). Each collector is a
subpackage whose `spec` module declares it (`spec`, `registry`); the modules here are what they
share."""
