"""The suite's hang guards, in one place. Each is far above the normal time of what it bounds, so that a
machine busy with other work makes a test slow, never red; reaching one means the thing never finished.
No test asserts a speed (CONTRIBUTING.md, "The suite's budget").
"""

from __future__ import annotations

import pytest

#: Every browser wait (tests/site_browser.py), in ms: a page loads, typesets and wires its explorers in under
#: 5 s on an idle 2-core machine, and MiniGPT live's longest generation in the tests takes about 10 s.
WAIT_MS = 120_000
#: A `torch.distributed` run's or a child process's guard, in s: W processes importing torch and meeting take
#: a few seconds on an idle 2-core machine (Chapter 19's disaggregated runs about ten), node's checks of the
#: browser scripts a few seconds, the book's test builds and the simulated Colab install under a minute.
HANG_S = 300
#: The tests that start process groups run on one pytest-xdist worker (`--dist loadgroup`): their rendezvous
#: ports come from `launch.free_port`, which two workers could be handed at once.
DISTRIBUTED = pytest.mark.xdist_group("distributed")
