#!/usr/bin/python3
"""Distributed autograd benchmark: forward + backward end to end, ours
(`ddpscope-cli example NAME --repeat K --json`, worker 0's median) against PyTorch 1.13's
distributed autograd (dist_autograd_torch.py) in the same invocation, alternating ROUNDS
times; prints the medians and ratios as JSON, per case:
  ratio           = ours / PyTorch, ours with --no-probes (PyTorch records nothing either)
                    seed: seed 000's example, 2 workers (target <= 0.2); chain: 4 workers
  ratio_recording = the same with ours recording its run file (probes on, the default)
Usage: run_dist_autograd.py BUILD_DIR [ROUNDS] [REPEAT]"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [("seed", 2), ("chain", 4)]


def ours(build, name, workers, repeat, probes):
    cli = os.path.join(build, "bin", "ddpscope-cli")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as tmp:
        record = ["--out", os.path.join(tmp, "run.ddprun")] if probes else ["--no-probes"]
        out = subprocess.run([cli, "example", name, "--np", str(workers), "--repeat", str(repeat), "--json"] + record,
                             env=env, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r["worker"] == 0:
                return r["median_us"]
    raise RuntimeError("worker 0 printed no result:\n" + out)


def torch_run(name, workers, repeat):
    out = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "dist_autograd_torch.py"), name, str(workers),
                          str(repeat)], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_us"]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    result = {}
    for name, workers in CASES:
        rows = []
        for _ in range(rounds):
            rows.append({"ours_us": ours(build, name, workers, repeat, False),
                         "ours_recording_us": ours(build, name, workers, repeat, True),
                         "pytorch_us": torch_run(name, workers, repeat)})
        result[name] = {
            "workers": workers,
            "rounds": rows,
            "ours_median_us": statistics.median(r["ours_us"] for r in rows),
            "ours_recording_median_us": statistics.median(r["ours_recording_us"] for r in rows),
            "pytorch_median_us": statistics.median(r["pytorch_us"] for r in rows),
            "ratio": statistics.median(r["ours_us"] / r["pytorch_us"] for r in rows),
            "ratio_recording": statistics.median(r["ours_recording_us"] / r["pytorch_us"] for r in rows),
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
