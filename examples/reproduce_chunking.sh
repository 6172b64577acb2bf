#!/usr/bin/env bash
# Reproduce Chroma's chunking table (Smith & Troynikov, "Evaluating Chunking Strategies for
# Retrieval", Chroma technical report, 2024; all-MiniLM-L6-v2, n = 5, retrieval over all five
# corpora at once) on its own data in ../shared/data/chroma_chunking_eval (docs/results.md).
# Usage: bash examples/reproduce_chunking.sh [python]   (make reproduce-chunking)
set -euo pipefail
PY="${1:-python3}"
RAGSPAN="$PY -m ragspan"
DATA="${RAGSPAN_SHARED_DATA:-../shared/data}/chroma_chunking_eval"
OUT="${REPRODUCE_OUT:-reproduce-chunking-out}"
export HF_HUB_OFFLINE=1
if [ ! -f "$DATA/questions_df.csv" ]; then
  echo "reproduce-chunking: skipped: Chroma's evaluation data is not at $DATA (set RAGSPAN_SHARED_DATA to the folder holding chroma_chunking_eval/)"
  exit 0
fi
mkdir -p "$OUT"
$RAGSPAN -q import chroma --root "$DATA" --out "$OUT/eval.jsonl" --corpus-out "$OUT/corpus.jsonl" \
  --report "$OUT/import.json" --format json > /dev/null
for cfg in recursive-250-125 tokentext-250-125 recursive-250-0 tokentext-250-0 \
           recursive-200-0 tokentext-200-0; do
  $RAGSPAN -q run-retriever --corpus "$OUT/corpus.jsonl" --eval-set "$OUT/eval.jsonl" \
    --config "examples/configs/chroma/$cfg.toml" --out "$OUT/run-$cfg.jsonl" \
    --chunks-out "$OUT/chunks-$cfg.jsonl" --report "$OUT/run-retriever-$cfg.json" \
    --format json > /dev/null
  $RAGSPAN -q score --eval-set "$OUT/eval.jsonl" --run "$OUT/run-$cfg.jsonl" \
    --corpus "$OUT/corpus.jsonl" --chunks "$OUT/chunks-$cfg.jsonl" --k 5 --budget-grid \
    --chroma-metrics --out "$OUT/score-$cfg.json" --format json > /dev/null
done
$PY examples/chunking_table.py "$OUT"
# what the publication could not show: each TokenText against its Recursive twin at equal
# character budgets (2,000 and 4,000 per query), paired, with the gate's statistics
echo
for size in 250-125 250-0 200-0; do
  code=0
  $RAGSPAN -q compare --baseline "$OUT/score-recursive-$size.json" \
    --candidate "$OUT/score-tokentext-$size.json" --no-config \
    --budget complete_grounding=off --budget complete_grounding@2000c=2pt \
    --budget complete_grounding@4000c=2pt --out "$OUT/compare-$size.json" --format table \
    > "$OUT/compare-$size.txt" || code=$?
  echo "Recursive $size -> TokenText $size: exit $code (0 pass, 4 fail); $OUT/compare-$size.txt"
done
