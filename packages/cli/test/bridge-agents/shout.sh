#!/bin/sh
# The second bridge test agent: the task text arrives as the last argument.
echo "start $MQ9_TASK_ID" >> "$BRIDGE_LOG"
sleep 0.3
echo "$1" | tr 'a-z' 'A-Z'
echo "end $MQ9_TASK_ID" >> "$BRIDGE_LOG"
