"""Slack alerts: new verdicts, quarantines, link flap storms and cabling differences.

`payloads` and `policy` are pure (Block Kit messages; what is sent, what is suppressed, in what
order). `slack.SlackSender` owns its HTTP session and delivery task; `consumer.AlertConsumer`
owns its Kafka consumer. `consumer.run_alerts`, called by `railtrace alert`, builds both and
stops them on SIGTERM.
"""
