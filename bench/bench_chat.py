"""Benchmark the Slack bot's two latencies that users feel, over real HTTP on 127.0.0.1.

Run by hand (never in the test suite):

    .venv/bin/python bench/bench_chat.py                 # 50 requests of each kind
    .venv/bin/python bench/bench_chat.py -n 200 --kb kb

* **ack**: signed ``/explain`` request in, acknowledgement out. Slack gives up after 3 s.
* **answer**: request sent until the answer reaches the (local, fake) ``response_url``.

Measured for a regex-tier line (the common case), a semantic-tier line (a reworded message no
pattern matches) and a 40-line paste (the bundled seed log). Uses the same local fake Slack API
as the tests, so no network is involved; prints a Markdown table and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from chat_fakes import SEED_AFFINITY, FakeChatApis, ServerThread, post, slack_headers  # noqa: E402

SECRET = "bench-signing-secret"
SEMANTIC_LINE = "NCCL watchdog caught collective operation timeout after 1800000 milliseconds on rank 3"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=50, help="requests per case")
    parser.add_argument("--kb", default=None)
    parser.add_argument("--index", default=None)
    args = parser.parse_args()

    from service.chat.answers import Answerer
    from service.chat.config import SlackSettings
    from service.chat.ratelimit import RateLimiter
    from service.chat.server import standalone_app
    from service.chat.slack import SlackBot, build_slack_app, slack_route
    from service.chat.store import ChatStore
    from service.explainer import Explainer

    explainer = Explainer(kb_dir=args.kb, index_dir=args.index)
    explainer.explain_many([SEMANTIC_LINE])  # load the index and model first: steady state is measured
    paste = (REPO / "samples" / "seed_training.log").read_text(encoding="utf-8")
    cases = {"regex line": SEED_AFFINITY, "semantic line": SEMANTIC_LINE + " {i}", "40-line paste": paste}
    fake = FakeChatApis()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ServerThread(fake.app()) as api:
        fake.base_url = api.url
        answerer = Answerer(explainer, ChatStore(Path(tmp) / "chat.sqlite3"))
        app = build_slack_app(SlackSettings("xoxb-bench", SECRET, None, api.url + "/api/"),
                              SlackBot(answerer, RateLimiter(10**9)))
        with ServerThread(standalone_app([slack_route(app, SECRET)])) as server:
            for name, text in cases.items():
                acks, answers = [], []
                for i in range(args.n):
                    rid = f"{name.replace(' ', '-')}-{i}"
                    body = urlencode({"command": "/explain", "text": text.replace("{i}", str(i)), "user_id": "U1",
                                      "channel_id": "C1", "response_url": f"{api.url}/response/{rid}", "trigger_id": "t"}).encode()
                    start = time.monotonic()
                    status, _, ack = post(server.url + "/slack/events", body, slack_headers(SECRET, body))
                    assert status == 200
                    fake.recorder.wait_for(lambda c, rid=rid: c.path == f"/response/{rid}")
                    acks.append(ack * 1000)
                    answers.append((time.monotonic() - start) * 1000)
                rows.append((name, acks, answers))
    print(f"| case (n={args.n}) | ack p50 ms | ack p95 ms | answer p50 ms | answer p95 ms |")
    print("|---|---|---|---|---|")
    for name, acks, answers in rows:
        print(f"| {name} | {statistics.median(acks):.1f} | {percentile(acks, 0.95):.1f} | "
              f"{statistics.median(answers):.1f} | {percentile(answers, 0.95):.1f} |")
    print(f"\nload average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
