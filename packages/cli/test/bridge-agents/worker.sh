#!/bin/sh
# A small command-line agent for the bridge tests: the task text arrives on stdin.
# It logs start/end to $BRIDGE_LOG, prints two lines, and obeys a few words in the task.
task=$(cat)
echo "start $MQ9_TASK_ID" >> "$BRIDGE_LOG"
# A follow-up arrives as the conversation so far; the newest message is its last line.
case "$(printf '%s\n' "$task" | tail -n 1)" in
  *fail*) echo "partial output"; echo "cannot do: $task" >&2; echo "end $MQ9_TASK_ID" >> "$BRIDGE_LOG"; exit 3 ;;
  *hang*) sleep 30 ;;
  *busy*) sleep 0.3 ;;
  *question*) echo "[INPUT_REQUIRED] Which language?"; echo "end $MQ9_TASK_ID" >> "$BRIDGE_LOG"; exit 0 ;;
esac
echo "working on: $task"
echo "done"
echo "end $MQ9_TASK_ID" >> "$BRIDGE_LOG"
