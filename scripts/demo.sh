#!/usr/bin/env bash
# memo in a few minutes: set up .venv, import the bundled sample (300 SciFact abstracts +
# two markdown notes, datasets/sample), and run three searches.
# The demo database goes to a fresh temporary folder (or $MEMO_DEMO_DIR); your own
# database is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh

DEMO_DIR="${MEMO_DEMO_DIR:-$(mktemp -d -t memo-demo.XXXXXX)}"
export MEMO_DB="$DEMO_DIR/memo.db"
memo=.venv/bin/memo
echo "demo database: $MEMO_DB"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "import 300 SciFact abstracts (BEIR format)"
$memo import datasets/sample/scifact/corpus.jsonl --format beir --namespace scifact \
  --source scifact --author "SciFact via BEIR (CC BY-NC 2.0)"
step "import the markdown notes"
$memo import datasets/sample/notes --namespace notes --tag sample
step "stats"
$memo stats

# SciFact test claim 49 (its relevant abstract: datasets/sample/scifact/qrels/test.tsv),
# then two questions the markdown notes answer (one is an identifier: the exact arm).
for q in "ADAR1 binds to Dicer to cleave pre-miRNA" \
         "what to do when the database is locked" \
         "ERR_CONN_RESET"; do
  step "memo search \"$q\""
  $memo search "$q"
done

step "next"
echo "explain a search:   MEMO_DB=$MEMO_DB $memo search \"database is locked\" --explain"
echo "browse it:          MEMO_DB=$MEMO_DB $memo web --open      (local web UI, docs/web.md)"
echo "agents (MCP stdio): $(pwd)/.venv/bin/memo-mcp --db $MEMO_DB"
