#!/usr/bin/env bash
# Runs the seeded NPS IPA release and the paper's Q1-Q4 through a Ballista cluster of one
# dfanon-scheduler and two dfanon-executors, each a separate process on 127.0.0.1, and
# compares every output line with the same statements run locally.
#
# Exits 0 only if the cluster printed exactly what the local run printed (all 1.36 M
# released rows, in order, and the Q1-Q4 tables). Every process it starts is stopped on
# exit; each step is bounded in time.
#
#   scripts/ballista-local.sh            # ports 50150 (scheduler), 50151-50154 (executors)
#   PORT=50250 scripts/ballista-local.sh
set -euo pipefail
cd "$(dirname "$0")/.."

port="${PORT:-50150}"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "outputs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

echo "building dfanon, dfanon-scheduler and dfanon-executor (release)..."
timeout 3600 cargo build --release --quiet -p dfanon --features dfanon/ballista -p dfanon-ballista
bin="${CARGO_TARGET_DIR:-target}/release"

echo "writing the NPS-shaped demo data to Parquet..."
timeout 300 "$bin/dfanon" -q -c "COPY (SELECT * FROM nps_demo()) TO '$work/nps.parquet' STORED AS PARQUET" >/dev/null

"$bin/dfanon-scheduler" --port "$port" >"$work/scheduler.log" 2>&1 &
pids+=($!)
for i in 1 2; do
  "$bin/dfanon-executor" --port $((port + 2 * i - 1)) --scheduler-host 127.0.0.1 \
    --scheduler-port "$port" -c 1 >"$work/executor$i.log" 2>&1 &
  pids+=($!)
done
# Wait (at most 30 s) until the scheduler accepts connections.
for _ in $(seq 1 300); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done
sleep 2  # let both executors register

{
  echo "CREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION '$work/nps.parquet';"
  cat <<'SQL'
CREATE TABLE releases AS
  SELECT 'ipa' AS release, * FROM anonymize('nps', method => 'ipa',
      qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, seed => 2024)
  WHERE disease LIKE 'I6%';
CREATE TABLE release_means AS
  SELECT 'ipa' AS release, column_name, label, mean FROM anonymize_interval_means('nps',
      method => 'ipa', qi => 'age, sex, los, surgery, location', informative => 'disease',
      epsilon => 1.0, seed => 2024);
SQL
  sed -n '/@evaluator begin/,/@evaluator end/p' sql/demo.sql
  cat <<'SQL'
SELECT query, age_group, ROUND(original, 3) AS original, ROUND(estimate, 3) AS released
FROM paper_compare ORDER BY query, age_group;
SELECT query, ROUND(rel_l1, 6) AS relative_l1_error FROM paper_error ORDER BY query;
SELECT * FROM anonymize('nps', method => 'ipa',
    qi => 'age, sex, los, surgery, location', informative => 'disease',
    epsilon => 1.0, seed => 2024);
SQL
} >"$work/queries.sql"

run() {
  timeout 600 "$bin/dfanon" -q --no-progress --format csv "$@" \
    -f sql/nps_hierarchies.sql "$work/queries.sql"
}

echo "running locally..."
run >"$work/local.csv"
# Q1-Q4 (original next to released, 54 rows) and their errors: the tables printed.
echo "running on the cluster at df://127.0.0.1:$port..."
run --ballista "df://127.0.0.1:$port" >"$work/cluster.csv"

lines=$(wc -l <"$work/local.csv")
if [ "$lines" -lt 1000000 ]; then
  echo "FAILED: the local run printed only $lines lines"
  exit 1
fi
if cmp -s "$work/local.csv" "$work/cluster.csv"; then
  echo "OK: the cluster printed the same $lines lines as the local run (Q1-Q4 and every released row)"
  grep -E '^Q[1-4],[0-9.]+$' "$work/local.csv" | sed 's/^/  relative L1 error /' || true
else
  echo "FAILED: the cluster's output differs from the local run's:"
  diff "$work/local.csv" "$work/cluster.csv" | head -20
  tail -20 "$work/scheduler.log" "$work/executor1.log"
  exit 1
fi
