#!/bin/sh
# Two command-line agents made A2A agents on one broker (see docs/hermes.md).
# Needs: a running broker (`mq9 serve`) and the `hermes` and `claude` CLIs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
server=${MQ9_SERVER:-mq9://127.0.0.1:4332}
mq9 agent serve --server "$server" --card "$here/python-coder.yaml" \
  --exec 'hermes chat -q' --input arg --task-timeout 900 &
mq9 agent serve --server "$server" --card "$here/reviewer.yaml" \
  --exec 'claude -p' --input arg --concurrency 2 &
wait
