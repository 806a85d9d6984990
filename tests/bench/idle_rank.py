"""A rank that does nothing but wait (run_stack_capture.py's 64 ranks): no torch, only the
ddpscope package that `ddpscope-cli torchrun` loads into every rank. For the baseline it also
does what a user does by hand to see a hung rank's stack: faulthandler dumps every thread's
Python stack to a file on SIGUSR1.

    idle_rank.py FOLDER SECONDS    (FOLDER/rank<RANK>.txt: the dump)"""
import faulthandler
import os
import signal
import sys
import time

folder, seconds = sys.argv[1], float(sys.argv[2])
dump = open(os.path.join(folder, "rank%s.txt" % os.environ.get("RANK", "x")), "w")
faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)


def wait_for_the_ask():
    time.sleep(seconds)


wait_for_the_ask()
