"""What drawing the site's line charts costs: 300 seeded random charts (1 to 10 lines of up to 300 points, half
with bands, steps and end labels), drawn by arena/site/svg.py. Prints ONE JSON object: the CPU seconds and a digest
of the charts drawn, so that another checkout's run (its Python) shows both whether it is faster and whether it
draws the same bytes.

    python bench/site_chart.py
    ../old/.venv/bin/python bench/site_chart.py

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import hashlib
import json
import random
import time

from arena.site import svg


def main() -> None:
    rng = random.Random(7)
    charts = []
    for _ in range(300):
        series = []
        for k in range(rng.choice([1, 1, 3, 10])):
            xs = sorted(rng.sample(range(1, 100_000), rng.randint(1, 300)))
            points = tuple((x, rng.uniform(-5, 40)) for x in xs)
            band = tuple((x, y - 3, y + 3) for x, y in points) if rng.random() < 0.5 else ()
            series.append(svg.Series(f"bot<{k}>", points, band))
        charts.append((series, rng.random() < 0.5, rng.random() < 0.5))
    digest = hashlib.sha1()
    started = time.process_time()
    for series, steps, ends in charts:
        digest.update(svg.line_chart(series, "label", "mu", steps=steps, end_labels=ends).encode())
    print(json.dumps({"charts": len(charts), "cpu_s": round(time.process_time() - started, 3),
                      "sha1": digest.hexdigest()}))


if __name__ == "__main__":
    main()
