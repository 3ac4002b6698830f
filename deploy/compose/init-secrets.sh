#!/bin/sh
# Make ./secrets/ from ./secrets.example/, giving every change-me-* password a random value (the
# same value in every file that repeats it, e.g. the ClickHouse password of the server and of
# railtrace). Never overwrites: an existing ./secrets/ is left alone. Afterwards, edit by hand:
#   secrets/slack.env        the Slack webhook URL
#   secrets/collectors.toml  your switches and their credentials
set -eu
cd "$(dirname "$0")"
if [ -e secrets ]; then
  echo "secrets/ exists; not touching it" >&2
  exit 1
fi
random() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
writer=$(random); reader=$(random); admin=$(random); kafka=$(random)
umask 077
mkdir secrets
for f in secrets.example/*; do
  sed -e "s/change-me-railtrace-writer/$writer/g" \
      -e "s/change-me-grafana-reader/$reader/g" \
      -e "s/change-me-grafana-admin/$admin/g" \
      -e "s/change-me-kafka/$kafka/g" \
      "$f" > "secrets/$(basename "$f")"
done
# Env files are read by Docker itself (0600 is enough). collectors.toml is bind-mounted as a
# secret and read inside the container by uid 10001: it must be readable by that uid; the
# secrets/ folder (0700) keeps other users of this host away from it.
chmod 0644 secrets/collectors.toml
echo "made secrets/; now edit secrets/slack.env and secrets/collectors.toml"
