#!/usr/bin/python3
"""Where a launcher placed a process, read from each launcher's own variables (the Python
package's _launcher): torchrun's, Slurm's, Open MPI's and MPICH's, in that order when
several are set; restarts counted from torchrun's; a value that is not a whole number, or
a rank past the world, refused with the variable named; no launcher at all is rank 0 of 1;
torchrun's own agent process is told apart from a rank by its command line.

Usage: test_launcher_placement.py (no arguments; the package is found beside this tree)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "probes", "python"))
from ddpscope import _launcher  # noqa: E402  (after the path is set)


class Placement(unittest.TestCase):
    def test_torchrun(self):
        p = _launcher.placement({"RANK": "5", "LOCAL_RANK": "1", "GROUP_RANK": "2", "WORLD_SIZE": "8",
                                 "TORCHELASTIC_RESTART_COUNT": "3"})
        self.assertEqual(p, _launcher.Placement("torchrun", 5, 1, 2, 8, 3))
        ours = _launcher.placement({"RANK": "1", "WORLD_SIZE": "2", "DDPSCOPE_TORCHRUN": "1"})
        self.assertEqual(ours.launcher, "ddpscope-cli torchrun")

    def test_slurm(self):
        p = _launcher.placement({"SLURM_PROCID": "9", "SLURM_LOCALID": "1", "SLURM_NODEID": "4", "SLURM_NTASKS": "16",
                                 "TORCHELASTIC_RESTART_COUNT": "2"})
        self.assertEqual(p, _launcher.Placement("slurm", 9, 1, 4, 16, 0))  # restarts are torchrun's

    def test_open_mpi_and_mpich(self):
        self.assertEqual(_launcher.placement({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                                              "OMPI_COMM_WORLD_SIZE": "4"}),
                         _launcher.Placement("openmpi", 3, 1, -1, 4, 0))
        self.assertEqual(_launcher.placement({"PMI_RANK": "2", "PMI_SIZE": "3"}),
                         _launcher.Placement("mpich", 2, 2, -1, 3, 0))

    def test_torchrun_under_slurm_is_torchrun(self):
        # torchrun started by srun: the ranks are torchrun's, one srun task per node.
        p = _launcher.placement({"RANK": "6", "LOCAL_RANK": "2", "GROUP_RANK": "1", "WORLD_SIZE": "8",
                                 "SLURM_PROCID": "1", "SLURM_NTASKS": "2"})
        self.assertEqual((p.launcher, p.rank, p.world_size), ("torchrun", 6, 8))

    def test_no_launcher(self):
        self.assertEqual(_launcher.placement({}), _launcher.Placement("none", 0, 0, -1, 1, 0))

    def test_bad_values_are_refused_naming_the_variable(self):
        for env, words in (({"RANK": "one", "WORLD_SIZE": "2"}, "RANK='one' is not a whole number"),
                           ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is not below WORLD_SIZE=2"),
                           ({"SLURM_PROCID": "-1"}, "SLURM_PROCID=-1 is below 0"),
                           ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE=0 is below 1")):
            with self.assertRaises(_launcher.LauncherError) as caught:
                _launcher.placement(env)
            self.assertIn(words, str(caught.exception))


class LauncherAgent(unittest.TestCase):
    """torchrun's own process inherits the job's variables (under Slurm, a task's) but is
    no rank: it is told apart by its command line and not recorded."""

    def test_the_agent_is_recognised(self):
        for argv in (["/usr/bin/python3.11", "/usr/bin/torchrun", "--nproc_per_node", "2", "train.py"],
                     ["/usr/local/bin/torchrun", "train.py"],
                     ["python3", "-m", "torch.distributed.run", "--nproc_per_node=2", "train.py"],
                     ["python", "-m", "torch.distributed.launch", "train.py"]):
            self.assertTrue(_launcher.is_launcher_agent(argv), argv)

    def test_a_ranks_script_is_not(self):
        for argv in (["/usr/bin/python3", "-u", "train.py", "--torchrun"], ["python3", "-m", "mypkg.train"],
                     ["python3", "train.py", "torchrun"], [], None):
            self.assertFalse(_launcher.is_launcher_agent(argv), argv)


if __name__ == "__main__":
    unittest.main()
