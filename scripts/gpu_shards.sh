#!/usr/bin/env bash
# GPU tests in parallel shards on the GPU machine (after `scripts/gpu.sh wheel` here):
#   scripts/gpu_shards.sh "name:files..." ...   one pytest process per shard, -m gpu,
# logs in $OUT/<name>.log (the peer suite's table in $OUT/peer.md). The compiled core
# comes from the wheel, the Python package from this working tree.
set -uo pipefail
cd "$(dirname "$0")/.."
SITE=/tmp/tritonad-site
rm -rf "$SITE"
python3 -m pip install -q --no-index --no-deps --target "$SITE" wheelhouse/*.whl || exit 1
cp python/tritonad/*.py "$SITE/tritonad/"
export PYTHONPATH="$SITE" PATH="$SITE/bin:$PATH" TRITONAD_PEER_TABLE="${OUT:-/tmp}/peer.md"
LOGS="${OUT:-/tmp/tritonad-gpu-logs}"; mkdir -p "$LOGS"
nvidia-smi --query-gpu=name --format=csv,noheader || true
pids=()
for shard in "$@"; do
  name=${shard%%:*}; files=${shard#*:}
  timeout "${SHARD_TIMEOUT:-540}" python3 -m pytest $files -m gpu -q -rfEsx -p no:cacheprovider \
    > "$LOGS/$name.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for shard in "$@"; do name=${shard%%:*}; echo "== $name: $(tail -n 1 "$LOGS/$name.log")"; done
exit $status
