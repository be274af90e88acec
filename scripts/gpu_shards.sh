#!/usr/bin/env bash
# GPU tests in parallel shards on the GPU machine (after `scripts/gpu.sh wheel` here):
#   scripts/gpu_shards.sh "name:pytest args..." ...   one pytest process per shard, -m gpu
#   (the arguments as a shell reads them: quote a -k expression of several words).
# Writes $OUT/shards.log (every shard's log, one after another) and $OUT/peer.md (the
# peer suite's tables). The compiled core comes from the wheel, the Python package from
# this working tree.
set -uo pipefail
cd "$(dirname "$0")/.."
SITE=/tmp/tritonad-site
. scripts/gpu_site.sh
LOGS=/tmp/tritonad-shards; rm -rf "$LOGS"; mkdir -p "$LOGS"
nvidia-smi --query-gpu=name --format=csv,noheader || true
pids=()
for shard in "$@"; do
  name=${shard%%:*}; args=${shard#*:}
  # (eval: a shard's arguments may quote, as in -k 'deterministic and gqa')
  eval "TRITONAD_PEER_TABLE=\"\$LOGS/\$name.peer.md\" timeout \"\${SHARD_TIMEOUT:-540}\" \
    python3 -m pytest $args -m gpu -q -rfEsx -p no:cacheprovider" > "$LOGS/$name.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for shard in "$@"; do
  name=${shard%%:*}
  echo "== $name: $(tail -n 1 "$LOGS/$name.log")"
  { echo "===== $name"; cat "$LOGS/$name.log"; } >> "$OUT/shards.log"
  [ -f "$LOGS/$name.peer.md" ] && cat "$LOGS/$name.peer.md" >> "$OUT/peer.md"
done
exit $status
