#!/usr/bin/python3
"""`ddpscope-cli train --backend nccl` on the GPU machine: one rank per GPU (at most 2), the
model, batches and loss on the rank's GPU, its buckets reduced by NCCL. The same job over
MPI on the CPU must reach the same losses (float32 on both; different kernels, so close,
not equal), and the run file must say the ranks ran on cuda. Without a usable GPU it exits
77 (CTest SKIP).

Usage: test_train_nccl.py BUILD_DIR
"""
import ctypes
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else "build")
CLI = os.path.join(BUILD, "bin", "ddpscope-cli")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def cuda_devices():
    """cudaGetDeviceCount through the runtime: 0 when there is no runtime, driver or GPU
    (where there is none it returns an error and leaves the count unwritten)."""
    try:
        cudart = ctypes.CDLL("libcudart.so.13")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    return count.value if cudart.cudaGetDeviceCount(ctypes.byref(count)) == 0 else 0


def train(tmp, name, backend, *extra, np=1):
    """Runs the job; returns its run file and rank 0's loss per iteration, as recorded."""
    run = os.path.join(tmp, name + ".ddprun")
    done = subprocess.run([CLI, "train", "--np", str(np), "--backend", backend, "--iters", "30", "--out", run,
                           "--progress", "lines", *extra], env=ENV, capture_output=True, text=True, timeout=240)
    if done.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (name, done.returncode, done.stdout, done.stderr))
    db = sqlite3.connect(run)
    losses = dict(db.execute("SELECT iteration, value FROM metrics WHERE name = 'loss' AND rank = 0"))
    db.close()
    return run, losses


class TrainNcclTest(unittest.TestCase):
    WORLD = 1

    def test_the_gpu_job_learns_as_the_cpu_job(self):
        args = ("--width", "256", "--depth", "6", "--bucket-cap-mb", "0.1")
        with tempfile.TemporaryDirectory() as tmp:
            gpu_run, gpu = train(tmp, "gpu", "nccl", *args, np=self.WORLD)
            _, cpu = train(tmp, "cpu", "mpi", *args, np=self.WORLD)
            self.assertEqual(sorted(gpu), list(range(1, 31)))
            self.assertEqual(sorted(cpu), sorted(gpu))
            for it in gpu:
                self.assertAlmostEqual(gpu[it], cpu[it], delta=1e-4 * max(1.0, abs(cpu[it])), msg=it)
            self.assertLess(gpu[30], gpu[1])
            db = sqlite3.connect(gpu_run)
            devices = [d for (d,) in db.execute("SELECT device FROM ranks ORDER BY rank")]
            (backend,) = db.execute("SELECT backend FROM runs").fetchone()
            buckets = db.execute("SELECT COUNT(*) FROM buckets WHERE rank = 0").fetchone()[0]
            db.close()
            self.assertEqual(devices, ["cuda"] * self.WORLD)
            self.assertEqual(backend, "nccl")
            self.assertGreaterEqual(buckets, 3)  # 0.1 MiB buckets over 6 layers of 256 x 256

    def test_an_optimizer_without_gpu_kernels_is_refused_before_training(self):
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run([CLI, "train", "--np", "1", "--backend", "nccl", "--optimizer", "adamw", "--iters",
                                   "2", "--out", os.path.join(tmp, "a.ddprun")], env=ENV, capture_output=True,
                                  text=True, timeout=120)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("--optimizer adamw updates CPU parameters: pass --optimizer sgd", done.stdout + done.stderr)

    def test_the_transformer_trains_on_the_gpu(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, losses = train(tmp, "transformer", "nccl", "--model", "transformer", "--optimizer", "sgd")
            self.assertEqual(sorted(losses), list(range(1, 31)))
            self.assertLess(losses[30], losses[1])


if __name__ == "__main__":
    gpus = cuda_devices()
    if gpus == 0:
        print("SKIP: no usable CUDA device (cudaGetDeviceCount)")
        sys.exit(77)
    TrainNcclTest.WORLD = min(gpus, 2)
    unittest.main(verbosity=2)
