"""Re-make the README's picture of the page with the browser-test harness:

    python3 -m tests.web.screenshot docs/page.png

It builds the demo quest (``ds demo``) in a temporary home, serves it (``ds serve
--no-turns``), opens the quest in Debian's headless Chromium at 1280x900, selects the
main experiment's branch on the Canvas (so its details show) and saves the page.
``--width``/``--height`` change the window; ``--dark`` uses the dark colour scheme.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from .harness import Guard, build_demo, launch, serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python3 -m tests.web.screenshot", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the PNG to write, e.g. docs/page.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--dark", action="store_true", help="prefers-color-scheme: dark")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ds-page-") as tmp:
        home, quest_id = build_demo(Path(tmp) / "home")
        with serve(home, "--no-turns", log=Path(tmp) / "serve.log") as server, launch() as browser:
            _, canvas = server.api(f"/api/quests/{quest_id}/canvas?view=branch")
            run = next((n["id"] for n in canvas["nodes"] if n.get("run_kind") == "main_experiment"), canvas["nodes"][0]["id"])
            context = browser.new_context(viewport={"width": args.width, "height": args.height}, color_scheme="dark" if args.dark else "light")
            try:
                page = context.new_page()
                guard = Guard()
                guard.watch(page)
                page.goto(server.page_url(f"/q/{quest_id}"))
                page.locator(f'#canvas .node[data-id="{run}"]').click()
                page.locator('#details [data-section="metrics"]').wait_for()
                page.locator("#trace > *").first.wait_for()  # the trace has drawn (a live stream never goes idle)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out))
                guard.check()
            finally:
                context.close()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
