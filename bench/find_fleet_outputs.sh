#!/bin/bash
# usage: bench/find_fleet_outputs.sh OUTDIR STORE ODD_STORE  (PYTHONPATH decides which code)
#
# Every find and fleet command line's stdout, stderr and exit code, one file each, to compare
# two checkouts with `diff -r` (570 lines): STORE a simulated fleet (tracekit simulate --runs
# 3000 --seed 11, ingested), ODD_STORE sample_traces/*.jsonl ingested with runs whose agents
# have hostile names (control characters, bidi, quotes, "sp ace > x", "=cmd", Cyrillic).
# `fleet --since TIME` reports end at the time it ran: those lines differ by that alone.
out=$1; mkdir -p $out; rm -f $out/*; i=0
T=${TRACEKIT:-.venv/bin/tracekit}
S=$2; O=$3  # a simulated fleet (tracekit simulate --runs 3000 --seed 11); one with hostile names
run() { i=$((i+1)); echo "$*" > $out/$i.cmd; "$@" > $out/$i.out 2> $out/$i.err; echo "rc=$?" >> $out/$i.err; }
for W in 120 60; do export COLUMNS=$W
for q in 'billing > refunds' 'billing >> refunds[status=error]' '* ~> billing[status=error]' 'planner >> writer > critic' 'circle(billing)' 'nosuch' 'triage' '*'; do
 for f in table json csv; do for r in "" "--runs"; do for lim in 50 3 0; do
  run $T find "$q" --db $S --format $f $r --limit $lim
 done; done; done
done
for q in '*' '* > *' '* >> *[status=error]' 'billing' '"sp ace > x"' 'docs' '* ~>> *'; do
 for f in table json csv; do for r in "" "--runs"; do for lim in 50 2; do
  run $T find "$q" --db $O --format $f $r --limit $lim
 done; done; done
done
done
export COLUMNS=100
# other spellings, options first, typer's own paths, errors
run $T find 'billing > refunds' --db $S
run $T find 'billing > refunds' --db $S --json
run $T find 'billing > refunds' --db $S --csv --runs
run $T find 'billing > refunds' --db $S --json --csv
run $T find --db $S 'billing > refunds' --limit 4
run $T find --limit 4 --runs --db $S 'billing >> refunds'
run $T find 'billing > refunds' --db=$S --limit=4
run $T find 'billing > refunds' --db $S --limit 4 --limit 6
run $T find 'billing > refunds' --db $S --limit -1
run $T find 'billing > refunds' --db $S --limit x
run $T find 'billing > refunds' --db $S --format yaml
run $T find 'billing > refunds' --db $S --wait 0 --limit 2
run $T find 'billing > refunds' --db $S --wait -1
run $T find 'billing > refunds' --db $S --wait 0.5 --limit 2
run $T find 'billing > refunds' --db $S --bogus
run $T find 'billing >' --db $S
run $T find 'billing[foo=1]' --db $S
run $T find '' --db $S
run $T find 'billing' --db $out/nope.duckdb
run $T find 'billing' --db $0
run $T find 'billing' --db $S extra
run $T find --db $S
run $T find --help
run $T find -h
run $T find 'billing' --db $S --help
run $T find -- '-x' --db $S
run $T --help
run $T --version
run $T
for W in 120 60 200; do export COLUMNS=$W
 for st in $S $O; do
  for f in table json; do
   run $T fleet --db $st --format $f
   run $T fleet --db $st --format $f --since 2026-12-01T00:00
   run $T fleet --db $st --format $f --service billing-api
   run $T fleet --db $st --format $f --agent billing
   run $T fleet --db $st --format $f --limit 3 --offset 1
  done
  run $T fleet --db $st
  run $T fleet --db $st --color always
  run $T fleet --db $st --color never --format table
 done
done
export COLUMNS=100
run $T fleet --db $S --format yaml
run $T fleet --db $S --since yesterday
run $T fleet --db $out/nope.duckdb --format json
run $T fleet --db $0 --format json
run $T fleet --format json --db
run $T fleet --help
run $T fleet --db $S --format=json
echo "$i command lines"
