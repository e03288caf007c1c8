"""How long MiniGPT's prefill and decode steps take in headless Chromium (the JS of the page "MiniGPT live").

Exports the weights (minigpt.book.web_export) into a temporary folder, opens a blank local page that loads
minigpt_forward.js and the weights, and times, inside the browser, forward passes of the shapes the page
runs: a prefill of P tokens into an empty cache, a cached decode step at S tokens, and a no-cache step
(a full forward over S + 1 tokens). Prints medians over repeats; nothing is asserted (shared machines
are noisy). Needs Debian's /usr/bin/chromium and Playwright, like the site tests.

    python scripts/bench/bench_browser.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import tempfile
import threading
from pathlib import Path

from minigpt.book.web_export import export_web_assets

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

PAGE = """<!doctype html><meta charset="utf-8"><title>bench</title><link rel="icon" href="data:,">
<script src="minigpt_forward.js"></script><script src="minigpt_weights.js"></script>"""

# Runs in the page. Each sample times `inner` back-to-back passes (the browser's clock ticks in 0.1 ms,
# longer than a decode step) and divides; the cache is rewound to its S before each pass.
BENCH = """([shapes, repeats]) => {
  const F = MiniGPTForward, model = F.loadModel(MiniGPTWeights), now = () => performance.now();
  const ids = (n) => Array.from({length: n}, (_, i) => 2 + (i * 37) % 590);
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const cache = new F.KVCache(model.config);
  const time = (pass) => {
    let inner = 1;
    for (let t = 0; t < 3 || inner < 1e4; t++) {  // warm-up, and enough passes for a 5 ms sample
      const t0 = now();
      for (let i = 0; i < inner; i++) pass();
      if (now() - t0 >= 5 && t >= 3) break;
      if (now() - t0 < 5) inner *= 2;
    }
    const xs = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = now();
      for (let i = 0; i < inner; i++) pass();
      xs.push((now() - t0) / inner);
    }
    return median(xs);
  };
  return shapes.map(([kind, n]) => {
    if (kind === "prefill") return time(() => { cache.S = 0; F.forward(model, ids(n), cache, true); });
    if (kind === "decode") {
      cache.S = 0;
      F.forward(model, ids(n), cache, true);
      return time(() => { cache.S = n; F.forward(model, [7], cache, true); });
    }
    const all = ids(n + 1);
    return time(() => F.forward(model, all, null, true));  // no cache: all S + 1 tokens again
  });
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"# MiniGPT in the browser: skipped, {CHROMIUM} is not installed (apt-get install chromium)")
        return
    from playwright.sync_api import sync_playwright

    shapes = [("prefill", P) for P in (5, 16, 64, 127)] + [("decode", S) for S in (5, 16, 64, 127)]
    shapes += [("nocache", S) for S in (5, 16, 64, 127)]
    with tempfile.TemporaryDirectory() as tmp:
        export_web_assets(tmp)
        (Path(tmp) / "index.html").write_text(PAGE, encoding="utf-8")
        handler = functools.partial(_Quiet, directory=tmp)
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page()
                page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/index.html")
                version = browser.version
                ms = page.evaluate(BENCH, [shapes, args.repeats])
                browser.close()
        finally:
            httpd.shutdown()
            httpd.server_close()
    print(f"# MiniGPT in headless Chromium {version}: per pass, medians of {args.repeats} samples of >= 5 ms each")
    print(f"{'pass':<34} {'ms':>8}")
    labels = {"prefill": "prefill of P={} tokens", "decode": "decode step at S={} (cache)",
              "nocache": "no-cache step at S={} (S+1 tokens)"}
    for (kind, n), t in zip(shapes, ms, strict=True):
        print(f"{labels[kind].format(n):<34} {t:>8.2f}")


if __name__ == "__main__":
    main()
