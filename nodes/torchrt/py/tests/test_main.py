"""__main__: the job table, the protocol check, and tracebacks that name
the module's own file."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from gatepipe_worker import __main__ as worker

PY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_worker(experiment):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "experiment.json")
        with open(path, "w") as f:
            json.dump(experiment, f)
        env = dict(os.environ, GATEPIPE_EXPERIMENT=path, PYTHONPATH=PY)
        return subprocess.run([sys.executable, "-m", "gatepipe_worker"], env=env, capture_output=True, text=True, cwd=d)


class MainTest(unittest.TestCase):
    def test_jobs(self):
        self.assertEqual(sorted(worker.JOBS), ["episodes", "features", "probe", "timing", "train"])

    def test_wrong_protocol(self):
        r = run_worker({"protocol": "other/2", "config": {}})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not gatepipe-trainer/1", r.stderr)

    def test_unknown_job(self):
        r = run_worker({"protocol": "gatepipe-trainer/1", "config": {"job": "dance"}, "devices": {"cpus": 1}})
        self.assertIn("job 'dance' is not one of episodes, features, probe, timing, train", r.stderr)

    def test_traceback_names_the_module_file(self):
        # A features job without its store fails inside features.py: the
        # traceback points at that file, not at a joined program.
        r = run_worker({"protocol": "gatepipe-trainer/1", "config": {"job": "features", "encoder": {"arch": "mlp"}},
                        "devices": {"cpus": 1}})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(os.path.join("gatepipe_worker", "features.py") + '", line ', r.stderr)


if __name__ == "__main__":
    unittest.main()
