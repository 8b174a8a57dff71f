#!/bin/bash
# Every topo-contrastive command once with --device "$1" (default cuda) at tiny settings:
# a check that each one takes the device and runs there, not a benchmark.
# Usage: bash benchmarks/device_commands.sh cuda [work folder]; prints one line per command.
dev=${1:-cuda}
w=${2:-$(mktemp -d)}; mkdir -p "$w"
tc="python3 -m topo_contrastive.cli"
common="--device $dev --no-progress --data-root $w/data"
fail=0
run() {  # name, command...
  local name=$1; shift
  local t0=$SECONDS
  if "$@" >"$w/$name.log" 2>&1; then echo "ok   $name ($((SECONDS - t0)) s)"
  else echo "FAIL $name ($((SECONDS - t0)) s):"; tail -5 "$w/$name.log"; fail=1; fi
}
run pretrain $tc pretrain --dataset ocean --config SSCL_Spec --epochs 2 --out $w/enc $common
run pretrain-hodge $tc pretrain --dataset ocean --config SSCL_Spec --edition hodge --epochs 2 --out $w/enc_h $common
run evaluate $tc evaluate --checkpoint $w/enc/encoder.pt --dataset ocean --seeds 1 --fine-tune --supervised --out $w/eval.json $common
run embed $tc embed --checkpoint $w/enc_h/encoder.pt --dataset ocean --out $w/emb $common
run predict-next $tc predict-next --checkpoint $w/enc/encoder.pt --dataset ocean --seeds 1 --epochs 2 --out $w/next.json $common
run search $tc search --dataset ocean --config SCL --grid lr=0.001,0.003 --epochs 2 --seeds 1 --out $w/search.csv $common
run label-efficiency $tc label-efficiency --dataset ocean --fractions 0.1 1 --draws 2 --epochs 2 --max-epochs 3 --rows probe:SSCL_Spec:paper finetune:SSCL_Spec:paper control untrained supervised raw --editions paper --out $w/le $common
run reproduce $tc reproduce --quick --datasets ocean --epochs 2 --out $w/rep $common
exit $fail
