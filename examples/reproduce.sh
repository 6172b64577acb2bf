#!/usr/bin/env bash
# Reproduce the published CUAD lever table on the CUAD developer subset (docs/results.md):
# 20 contracts and 50 of their questions drawn with seed 0, the five lever configurations of
# examples/configs/cuad-levers/ (six with RAGSPAN_RERANK_MODEL), one sweep, one report.
# Usage: bash examples/reproduce.sh [python]   (make reproduce)
set -euo pipefail
PY="${1:-python3}"
RAGSPAN="$PY -m ragspan"
DATA="${RAGSPAN_SHARED_DATA:-../shared/data}/cuad_dev"
OUT="${REPRODUCE_OUT:-reproduce-out}"
export HF_HUB_OFFLINE=1
if [ ! -d "$DATA/contracts" ]; then
  echo "reproduce: skipped: the CUAD developer subset is not at $DATA (set RAGSPAN_SHARED_DATA to the folder holding cuad_dev/)"
  exit 0
fi
mkdir -p "$OUT"
$RAGSPAN import cuad --csv "$DATA/master_clauses_subset.csv" --contracts "$DATA/contracts" \
  --categories "$DATA/category_descriptions.csv" --sample-docs 20 --sample-queries 50 --seed 0 \
  --out "$OUT/eval.jsonl" --corpus-out "$OUT/corpus.jsonl" --report "$OUT/import.json" -q \
  --format json > /dev/null
LEVERS=examples/configs/cuad-levers
CONFIGS=("$LEVERS/naive.toml" "$LEVERS/clause.toml" "$LEVERS/clause-bm25.toml" \
         "$LEVERS/clause-hybrid.toml" "$LEVERS/clause-unfiltered.toml")
if [ -n "${RAGSPAN_RERANK_MODEL:-}" ]; then
  sed "s|@RERANK_MODEL@|${RAGSPAN_RERANK_MODEL}|" "$LEVERS/clause-rerank.toml.in" \
    > "$OUT/clause-rerank.toml"
  CONFIGS+=("$OUT/clause-rerank.toml")
else
  echo "reproduce: rerank: not measured (no cross-encoder; set RAGSPAN_RERANK_MODEL to a model path)"
fi
ARGS=()
for c in "${CONFIGS[@]}"; do ARGS+=(--config "$c"); done
rm -rf "$OUT/sweep"
$RAGSPAN sweep "${ARGS[@]}" --eval-set "$OUT/eval.jsonl" --corpus "$OUT/corpus.jsonl" \
  --out-dir "$OUT/sweep" --k 5 --k 10 --baseline naive --out "$OUT/sweep.json"
$RAGSPAN report "$OUT"/sweep/*/score.json --baseline naive --audience client --corpus "$OUT/corpus.jsonl" \
  --out "$OUT/readout.md" -q --format json > /dev/null
echo "reproduce: $OUT/sweep/report.md, $OUT/sweep/report.html, $OUT/readout.md"
