#!/usr/bin/env bash
# The peer suite (test/peer, -m gpu: ~150 cases, fp32 and bf16) on the GPU machine, split
# into N pytest processes by test id (after `scripts/gpu.sh wheel` here; the compiled core
# from the wheel, the Python package from this tree):  scripts/gpu_peer.sh [N=12]
# (PEER_IDS=<file of test ids> runs those instead of every case)
# Writes $OUT/peer.log (every process's log) and $OUT/peer.md (the cases' table).
set -uo pipefail
cd "$(dirname "$0")/.."
N="${1:-12}"
SITE=/tmp/tritonad-peer-site  # (its own: gpu_shards.sh may run beside it)
. scripts/gpu_site.sh
WORK=/tmp/tritonad-peer; rm -rf "$WORK"; mkdir -p "$WORK"
if [ -n "${PEER_IDS:-}" ]; then  # (a file of test ids: rerun those only)
  cp "$PEER_IDS" "$WORK/ids"
else
  python3 -m pytest test/peer -m gpu --collect-only -q -p no:cacheprovider 2>/dev/null \
    | grep "::" > "$WORK/ids"
fi
echo "$(wc -l < "$WORK/ids") peer cases in $N processes"
split -n "r/$N" -d "$WORK/ids" "$WORK/part."
pids=()
for part in "$WORK"/part.*; do
  # shellcheck disable=SC2046  (one test id per line)
  TRITONAD_PEER_TABLE="$part.md" timeout "${PEER_TIMEOUT:-540}" \
    python3 -m pytest $(cat "$part") -v -rfEx -p no:cacheprovider > "$part.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for part in "$WORK"/part.??; do
  echo "== $(basename "$part"): $(tail -n 1 "$part.log")"
  cat "$part.log" >> "$OUT/peer.log"
  [ -f "$part.md" ] && cat "$part.md" >> "$OUT/peer.md"
done
grep -h "^FAILED\|^ERROR" "$WORK"/part.*.log
exit $status
