"""ddpscope-collector run by a test as ddpscope's launcher runs it."""
import json
import os
import subprocess
import tempfile

TOKEN = "ddpscope-test-token"


class Collector:
    """ddpscope-collector as the launcher starts it: token in the environment, its
    endpoints read from its first line, the job's end said on its stdin."""

    def __init__(self, bin_dir, out, world_size=1, model="c-api test"):
        env = dict(os.environ, DDPSCOPE_RUN_TOKEN=TOKEN)
        self.log = tempfile.TemporaryFile(mode="w+")  # a file: a pipe nobody reads could fill
        self.proc = subprocess.Popen([os.path.join(bin_dir, "ddpscope-collector"), "--out", out, "--world-size",
                                      str(world_size), "--model", model], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=env)
        for line in self.proc.stdout:
            if line.startswith("@ddpscope "):
                info = json.loads(line[len("@ddpscope "):])
                if info.get("event") == "collector":
                    self.env = {"DDPSCOPE_COLLECTOR": info["batch"], "DDPSCOPE_COLLECTOR_CLOCK": info["clock"],
                                "DDPSCOPE_RUN_TOKEN": TOKEN}
                    return
        self.log.seek(0)
        raise RuntimeError("the collector printed no endpoints: " + self.log.read())

    def finish(self):
        self.proc.stdin.write(json.dumps({"status": "finished"}) + "\n")
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.log.close()
        return code
