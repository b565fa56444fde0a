"""arbloadgen's protocols against Debian's real servers (skipped where a server is not
installed or arbloadgen is not built: ARBPARSEC_BUILD_DIR)."""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from arbparsec_lib import colocate, machine, runner, servers

BUILD = os.environ.get("ARBPARSEC_BUILD_DIR", "")
LOADGEN = os.path.join(BUILD, "bin", "arbloadgen")


@unittest.skipUnless(os.access(LOADGEN, os.X_OK), "arbloadgen not built (ARBPARSEC_BUILD_DIR)")
class LoadgenTest(unittest.TestCase):
    def test_bad_protocol(self):
        p = subprocess.run([LOADGEN, "--protocol", "http", "--port", "1", "--rate", "1"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--protocol: 'http' is not memcached or redis", p.stderr)
        p = subprocess.run([LOADGEN, "--help"], capture_output=True, text=True, timeout=10)
        self.assertIn("--protocol P", p.stdout)

    def load(self, name):
        """Starts the server, sends 0.4 s of mixed gets and sets in its protocol; the summary."""
        srv = servers.SERVERS[name]
        if shutil.which(srv.binary) is None:
            self.skipTest(f"{srv.binary} not installed")
        reg = runner.Registry()
        with tempfile.TemporaryDirectory() as d:
            try:
                for _ in range(5):
                    port = machine.free_port()
                    proc = runner.Process(srv.argv(srv.binary, port, 1, os.geteuid() == 0, d),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          registry=reg)
                    deadline = time.monotonic() + 10
                    while not srv.ready(port) and not proc.poll_exit() and time.monotonic() < deadline:
                        time.sleep(0.02)
                    if srv.ready(port):
                        break
                    proc.stop()
                else:
                    self.fail(f"{name} did not start")
                p = subprocess.run([LOADGEN, "--protocol", srv.protocol, "--port", str(port),
                                    "--rate", "1000", "--duration", "0.4", "--keys", "50",
                                    "--get-ratio", "0.5", "--value-size", "300"],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                return colocate.parse_loadgen_summary(p.stdout)
            finally:
                reg.kill_all(grace_s=1)

    def test_redis(self):
        s = self.load("redis")
        self.assertGreater(s["answered"], 100)
        self.assertEqual((s["errors"], s["lost"]), (0, 0))

    def test_memcached(self):
        s = self.load("memcached")
        self.assertGreater(s["answered"], 100)
        self.assertEqual((s["errors"], s["lost"]), (0, 0))


if __name__ == "__main__":
    unittest.main()
