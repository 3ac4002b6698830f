"""What every long-running role serves beside its work: `/metrics` and `/healthz` on one
endpoint, and the `Health` its rules produce."""
