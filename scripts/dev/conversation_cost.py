"""What one gateway conversation costs in memory (issue 36, item 1: the table's bound).

    python scripts/dev/conversation_cost.py [COUNT]

Builds the bookstore gateway in this process (hashing embedder, no cache), opens COUNT
conversations (default 2,000), each with a selection and one observed call, and prints the
RSS added per conversation in KB. Linux (``/proc``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from hyperplan.integrations.mcp_gateway import GatewayConfig, build_gateway


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    return 0


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    gateway = build_gateway(["python:hyperplan.examples.bookstore"],
                            GatewayConfig(embedder="hashing", cache_dir=None))
    try:
        gateway.service.start()
        gateway.service.wait(120)
        before, kept = rss_kb(), []
        for i in range(count):
            conv = gateway.table.open(f"client-{i}")
            assert conv is not None, "the table's bound was reached"
            conv.find("log in, add the book Dune to a cart and pay")
            conv.observe("login", {"username": "a", "password": "b"}, {"access_token": "t"}, True)
            kept.append(conv)
        print(f"{count} conversations: {(rss_kb() - before) / count:.1f} KB each")
    finally:
        gateway.upstream.close()


if __name__ == "__main__":
    main()
