"""A real headless Chromium drives memo web's page (docs/web.md, "How the browser test runs").

The real server (``memo web --port 0``, a subprocess) serves a temp database seeded through
the library with the real embedding model; Playwright drives the Debian ``chromium`` binary
(``executable_path``: nothing is downloaded).  Every page records console errors, page
errors and CSP violations, and each test ends by asserting there were none: a page that
used innerHTML on stored markup would trip the CSP even when the CSP stops the script.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from web_server import WebServer, memo_web

from memo import ops
from memo.ops.facts import add_fact
from memo.store.db import open_db
from memo.types import FactDraft, RecordDraft

NOTE = "The staging deploy key rotates every 30 days; ask the platform team for a new one."
SEED = [
    RecordDraft(body=NOTE, namespace="ops", tags=("keys",)),
    RecordDraft(body="Postgres connection pool size is 20 in production.", kind="doc", namespace="infra"),
    RecordDraft(body="Lunch on Fridays is pizza from the corner shop.", namespace="team"),
    RecordDraft(body="The CI runners restart every night at 02:00 UTC.", namespace="ops"),
    RecordDraft(body="The release was signed off by Marta Kowalski and Ravi Iyer in Lisbon.", namespace="people"),
    RecordDraft(body="Priya: the nightly backup job moved to 03:00\nTom: thanks, noted\n"
                     "Tom: my backup job still runs at midnight", kind="conversation", namespace="chat"),
    RecordDraft(body="Retro: the canary rollout failed twice", namespace="retro", event_at="2024-03-14"),
    RecordDraft(body="Retro: the canary rollout failed again, canary canary", namespace="retro",
                event_at="2024-05-02"),
    RecordDraft(body="# Pool API\n\n## pool.query(text)\n\nRuns one statement on the next idle client.\n\n"
                     "## pool.end()\n\nCloses every client. After pool.end, pool.query throws; pool.query never "
                     "retries a failed pool.query call.", kind="doc", namespace="api"),
]
PEOPLE = SEED[4].body
CI = SEED[3].body
FACT = "A cron job on the build farm reboots the runner machines."
EVIL = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
"""


def chromium_executable() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no Chromium on PATH: install the Debian package `chromium` (apt-get install -y chromium); "
                "this test drives the system browser and never downloads one", pytrace=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebServer, dict[str, str]]]:
    db = tmp_path_factory.mktemp("web-chromium") / "memo.db"
    conn = open_db(db)
    ids = {draft.body: ops.add_record(conn, draft).record_id for draft in SEED}
    # A fact (issue 10) whose evidence is the CI runners note: its words are not the note's.
    ids[FACT] = add_fact(conn, FactDraft(FACT, (ids[CI],), namespace="ops")).fact_id
    conn.close()
    with memo_web(db) as srv:
        yield srv, ids
    assert "Traceback" not in srv.stderr(), srv.stderr()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the `playwright` Python package is missing: pip install playwright "
                    "(its browser download is not needed: the test uses the Debian `chromium`)", pytrace=False)
    exe = chromium_executable()
    # Chromium refuses to run as root with its sandbox; CI runs as root.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=[*args, "--disable-dev-shm-usage"], headless=True)
        yield b
        b.close()


class Page:
    """A fresh browser context (own sessionStorage) with its problems recorded."""

    def __init__(self, browser: Any, srv: WebServer) -> None:
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.problems: list[str] = []
        self.page.add_init_script(WATCH)
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.srv = srv
        self.checked = False

    def open(self) -> Any:
        self.page.goto(self.srv.url)
        self.page.wait_for_selector("body[data-ready='1']")
        return self.page

    def search(self, query: str) -> Any:
        p = self.page
        p.fill("#q", query)
        with p.expect_response(lambda r: "/api/search" in r.url) as info:
            p.click("#search-btn")
        p.wait_for_selector(".result")
        return info.value.json()

    def check_clean(self, allowed: tuple[str, ...] = ()) -> None:
        csp = self.page.evaluate("window.__csp")
        assert csp == [], csp
        problems = [m for m in self.problems if not any(a in m for a in allowed)]
        self.checked = True
        assert problems == [], problems
        self.context.close()


@pytest.fixture
def page(browser: Any, server: tuple[WebServer, dict[str, str]]) -> Iterator[Page]:
    p = Page(browser, server[0])
    yield p
    if not p.checked:
        p.check_clean()


def test_search_shows_the_expected_memory_first(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    srv, ids = server
    p = page.open()
    # The token moved from the fragment to sessionStorage and left the address bar.
    assert srv.token not in p.url and "token" not in p.evaluate("location.href")
    assert p.evaluate("sessionStorage.getItem('memo-token')") == srv.token
    live = re.match(r"(\d+) live records", p.text_content("#status") or "")
    assert live and int(live.group(1)) >= len(SEED)
    page.search("how often does the deploy key rotate")
    first = p.locator(".result").first
    assert first.get_attribute("data-record-id") == ids[NOTE]
    assert first.locator(".text").text_content() == NOTE
    assert first.locator(".meta").text_content() == "note / ops"
    assert first.locator(".rank").text_content() == "#1"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", first.locator(".date").text_content() or "")
    assert p.locator("#trace").is_hidden() and p.locator(".why").count() == 0


def test_explain_renders_why_and_trace_with_the_api_numbers(page: Page) -> None:
    p = page.open()
    p.select_option("#mode", "auto")
    doc = page.search("deploy key rotation")
    assert p.locator(".why").count() == 0
    p.check("#explain")          # re-renders the same document: no second request
    p.wait_for_selector("#trace:not([hidden])")
    results = p.locator(".result")
    assert results.count() == len(doc["results"])

    def value(node: Any) -> float:
        return float(node.get_attribute("data-value"))

    for i, res in enumerate(doc["results"]):
        item, why = results.nth(i), res["why"]
        assert value(item.locator("[data-field='score']")) == res["score"]
        for field in ("fused", "final"):
            assert value(item.locator(f".why [data-field='{field}']")) == why[field], field
        for f in why["factors"]:       # every factor, in order, with the API's number
            assert value(item.locator(f".why [data-field='factor:{f['name']}']")) == f["value"], f["name"]
        rows = item.locator(".why-arm")
        assert [rows.nth(j).get_attribute("data-arm") for j in range(rows.count())] == list(why["arms"])
        for arm, a in why["arms"].items():
            row = item.locator(f".why-arm[data-arm='{arm}']")
            for key in ("rank", "raw", "contribution"):
                assert value(row.locator(f"[data-field='{key}']")) == a[key], (arm, key)
    trace = doc["trace"]
    arm_rows = p.locator("#trace .trace-arm")
    assert [arm_rows.nth(j).get_attribute("data-arm") for j in range(arm_rows.count())] == [a["name"] for a in trace["arms"]]
    for a in trace["arms"]:
        row = p.locator(f"#trace .trace-arm[data-arm='{a['name']}']")
        assert (row.locator("td").nth(2).text_content() or "") == a["reason"]
        assert value(row.locator("[data-field='candidates']")) == a["candidates"]
    assert p.text_content("#trace .cutoff-kind") == trace["cutoff_kind"]
    assert p.text_content("#trace .budget") == f"{trace['budget']['used']} / {trace['budget']['max']} tokens"
    assert p.text_content("#trace .degraded") == ("no" if not trace["degraded"]["flag"] else
                                                  f"yes: {trace['degraded']['reason']}")
    assert value(p.locator("#trace [data-field='truncated']")) == doc["truncated"]
    drops = p.locator("#trace .drop")
    assert drops.count() == len(trace["drops"])
    for j, d in enumerate(trace["drops"]):
        assert drops.nth(j).get_attribute("data-stage") == d["stage"]
        assert value(drops.nth(j).locator("[data-field='count']")) == d["count"]
    p.uncheck("#explain")
    assert p.locator("#trace").is_hidden() and p.locator(".why").count() == 0


def test_a_voting_fact_is_shown_under_its_results_why(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    _, ids = server
    p = page.open()
    p.select_option("#mode", "auto")
    p.check("#explain")
    doc = page.search("cron job build farm")       # words of the fact only, not of its evidence note
    p.wait_for_selector(".why-fact")
    hit = next(i for i, r in enumerate(doc["results"]) if r["record_id"] == ids[CI])
    votes = doc["results"][hit]["why"]["arms"]["fact"]["votes"]
    assert [v["fact_id"] for v in votes] == [ids[FACT]]
    item = p.locator(".result").nth(hit)
    assert item.get_attribute("data-record-id") == ids[CI]
    fact = item.locator(".why .why-facts .why-fact")
    assert fact.count() == 1 and fact.get_attribute("data-fact") == ids[FACT]
    assert FACT in (fact.text_content() or "")
    assert float(fact.locator("[data-field='fact_rank']").get_attribute("data-value")) == votes[0]["rank"]
    assert float(fact.locator("[data-field='fact_score']").get_attribute("data-value")) == votes[0]["score"]
    # results no fact voted for show no facts block
    for i, r in enumerate(doc["results"]):
        if "fact" not in r["why"]["arms"]:
            assert p.locator(".result").nth(i).locator(".why-facts").count() == 0


def _factor(why: dict, name: str) -> dict | None:
    return next((f for f in why["factors"] if f["name"] == name), None)


def _shown_factor(page: Page, query: str, name: str, label: str | None) -> tuple[Any, Any, list[int]]:
    """Search ``query`` (keyword mode, explain) and check that the results the API gave the
    factor ``name`` (labelled ``label`` when given) show it with the API's number, and the
    others show none.  (page, API document, boosted indexes)."""
    p = page.open()
    p.select_option("#mode", "keyword")
    p.check("#explain")
    doc = page.search(query)
    p.wait_for_selector(".why")
    boosted = [i for i, r in enumerate(doc["results"]) if (_factor(r["why"], name) or {}).get("value", 1.0) != 1.0]
    assert boosted and (label is None or all(_factor(doc["results"][i]["why"], name)["label"] == label
                                             for i in boosted))
    for i, r in enumerate(doc["results"]):
        node = p.locator(".result").nth(i).locator(f".why [data-field='factor:{name}']")
        if i in boosted:
            assert float(node.get_attribute("data-value")) == _factor(r["why"], name)["value"]
        else:
            assert node.count() == 0
    return p, doc, boosted


def test_a_named_speakers_turn_shows_its_speaker_factor(page: Page) -> None:
    p, doc, boosted = _shown_factor(page, "when does Priya's backup job run", "speaker", "Priya")
    assert doc["trace"]["rescore"]["speaker"] == ["Priya"]
    for i in boosted:
        assert float(p.locator(".result").nth(i).locator(".why [data-field='final']")
                     .get_attribute("data-value")) == doc["results"][i]["why"]["final"]


def test_a_note_dated_in_the_named_month_shows_its_date_factor(page: Page) -> None:
    _, doc, _ = _shown_factor(page, "canary rollout in March 2024", "dates", "2024-03")
    assert doc["trace"]["rescore"]["dates"] == ["2024-03"]


def test_the_section_headed_by_the_named_identifier_shows_its_heading_factor(page: Page) -> None:
    _, doc, boosted = _shown_factor(page, "pool.query", "heading", "pool.query")
    assert doc["trace"]["rescore"]["heading"] == ["pool.query"]
    assert [doc["results"][i]["section"] for i in boosted] == ["Pool API > pool.query(text)"]


def test_turns_of_a_session_with_several_top_turns_show_their_context_factor(page: Page) -> None:
    _, doc, lifted = _shown_factor(page, "backup job", "context", None)   # two of Priya and Tom's turns: one session
    assert len(lifted) >= 2 and all(doc["results"][i]["kind"] == "conversation" for i in lifted)


def test_entity_chips_show_the_query_entities_a_result_was_found_by(page: Page,
                                                                     server: tuple[WebServer, dict[str, str]]) -> None:
    _, ids = server
    p = page.open()
    p.select_option("#mode", "auto")
    p.check("#explain")
    doc = page.search("Marta Kowalski and Ravi Iyer")      # two names: the entity arm is routed
    trace = {a["name"]: a for a in doc["trace"]["arms"]}
    assert trace["entity"]["ran"], trace["entity"]["reason"]
    hit = next(i for i, r in enumerate(doc["results"]) if r["record_id"] == ids[PEOPLE])
    votes = doc["results"][hit]["why"]["arms"]["entity"]["votes"]
    chips = p.locator(".result").nth(hit).locator(".entities .entity-chip")
    assert chips.count() == len(votes) == 2
    assert [chips.nth(i).get_attribute("data-entity") for i in range(2)] == [v["entity"] for v in votes]
    assert [chips.nth(i).text_content() for i in range(2)] == [v["name"] for v in votes]
    # results no entity or graph vote found show no chips
    for i, r in enumerate(doc["results"]):
        if not {"entity", "graph"} & set(r["why"]["arms"]):
            assert p.locator(".result").nth(i).locator(".entity-chip").count() == 0


def test_add_through_the_form_then_find_and_open_it(page: Page) -> None:
    p = page.open()
    text = "The office wifi password changes on the first Monday of each month."
    p.fill("#add-text", text)
    p.select_option("#add-kind", "note")
    p.fill("#add-namespace", "office")
    p.fill("#add-tags", "wifi, office")
    with p.expect_response(lambda r: "/api/memories" in r.url) as info:
        p.click("#add-btn")
    report = info.value.json()
    assert info.value.status == 201 and report["status"] == "added"
    # (a selector wait, not wait_for_function: Playwright polls a string predicate with eval,
    # which this page's CSP rightly refuses)
    p.wait_for_selector("#add-status[data-record-id]")
    assert p.get_attribute("#add-status", "data-record-id") == report["record_id"]
    assert (p.text_content("#add-status") or "").startswith("added ")
    page.search("when does the wifi password change")
    first = p.locator(".result").first
    assert first.get_attribute("data-record-id") == report["record_id"]
    assert first.locator(".text").text_content() == text
    first.locator(".record-id").click()
    p.wait_for_selector("#record:not([hidden])")
    assert p.text_content("#record-body") == text
    assert p.text_content("#record-fields .field-tags") == "office, wifi"    # stored sorted
    assert p.text_content("#record-fields .field-namespace") == "office"


def test_stored_markup_is_shown_as_text_and_never_runs(page: Page) -> None:
    p = page.open()
    p.fill("#add-text", EVIL)
    with p.expect_response(lambda r: "/api/memories" in r.url):
        p.click("#add-btn")
    p.wait_for_selector("#add-status[data-record-id]")
    doc = page.search("onerror pwned script")
    assert doc["results"][0]["text"] == EVIL
    first = p.locator(".result").first
    assert first.locator(".text").text_content() == EVIL
    first.locator(".record-id").click()
    p.wait_for_selector("#record:not([hidden])")
    assert p.text_content("#record-body") == EVIL
    p.wait_for_timeout(300)      # an <img onerror> would fire after its failed load
    assert p.locator("#results img, #results script, #record img, #record script").count() == 0
    assert p.evaluate("typeof window.__pwned") == "undefined"


def test_api_errors_show_message_and_hint(page: Page) -> None:
    p = page.open()
    p.fill("#q", "   ")
    p.click("#search-btn")
    p.wait_for_selector("#error:not([hidden])")
    assert p.text_content("#error-type") == "QuerySyntaxError"
    assert p.text_content("#error-message") == "the query is empty"
    assert "plain words" in (p.text_content("#error-hint") or "")
    page.search("pizza")         # a good search clears the error
    assert p.locator("#error").is_hidden()
    # Chromium logs every non-2xx fetch as a console error; this one was asked for.
    page.check_clean(allowed=("status of 400",))


def test_without_a_token_the_page_asks_for_one(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    p = page.page
    p.goto(server[0].base)
    p.wait_for_selector("#token-form:not([hidden])")
    p.fill("#token-input", server[0].token)
    p.click("#token-btn")
    p.wait_for_selector("body[data-ready='1']")
    assert "live records" in (p.text_content("#status") or "")
