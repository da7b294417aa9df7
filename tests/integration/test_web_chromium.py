"""A real headless Chromium drives memo web's page (docs/web.md, "How the browser test runs").

The real server (``memo web --port 0``, a subprocess) serves a temp database seeded through
the library with the real embedding model; Playwright drives the Debian ``chromium`` binary
(``executable_path``: nothing is downloaded).  Every page records console errors, page
errors and CSP violations, and each test ends by asserting there were none: a page that
used innerHTML on stored markup would trip the CSP even when the CSP stops the script.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from web_server import WebServer, memo_web

from memo import ops
from memo.ops.facts import add_fact
from memo.store.db import open_db
from memo.stored import FactDraft, RecordDraft

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
# A record with every optional field set (issue 32: the record view showed no library,
# version or import_path), and a fact citing it.
RICH = RecordDraft(body="The orchard sensor SDK reads ORCHARD_INTERVAL at start; unset, it samples every five minutes.",
                   kind="doc", namespace="garden", title="Orchard sensors", source="vendor-docs",
                   library="orchard-sdk", version="2.3.1", tags=("sensors", "sdk"), event_at="2024-06-01",
                   trust=0.8, author="Ana", import_path="/home/ana/notes/orchard.md", ext_id="orchard-1",
                   meta={"lang": "en", "pages": 2})
SEED.append(RICH)
RICH_FACT = "Orchard sensors sample every five minutes unless ORCHARD_INTERVAL is set."
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
    ids[RICH_FACT] = add_fact(conn, FactDraft(RICH_FACT, (ids[RICH.body],), namespace="garden")).fact_id
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
    # no event date: the recorded moment, a UTC time (issue 10: never a date cut from it)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})? UTC", first.locator(".date").text_content() or "")
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
        # stage 3's weight for this query, and the multiplier when an extra moved it
        fw = trace["fusion_weights"]
        assert value(row.locator("[data-field='weight']")) == fw["weights"][a["name"]], a["name"]
        mult = row.locator("[data-field='multiplier']")
        assert (value(mult) if mult.count() else None) == fw["multipliers"].get(a["name"]), a["name"]
    for key, v in trace["fusion_weights"]["evidence"].items():     # what set them (adaptive: keyword_coverage)
        assert value(p.locator(f"#trace .fusion-evidence [data-field='evidence:{key}']")) == v, key
    assert p.locator("#trace .fusion-evidence [data-field^='evidence:']").count() == len(
        trace["fusion_weights"]["evidence"])
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
    assert "a question or a few words" in (p.text_content("#error-hint") or "")
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


# --- issue 32: record view, header stats, search address ------------------------------------
def test_the_record_view_shows_every_field_of_the_record_document(page: Page,
                                                                   server: tuple[WebServer, dict[str, str]]) -> None:
    _, ids = server
    p = page.open()
    p.select_option("#mode", "keyword")
    doc = page.search("orchard sensor interval")
    hit = next(i for i, r in enumerate(doc["results"]) if r["record_id"] == ids[RICH.body])
    with p.expect_response(lambda r: "/api/records/" in r.url) as info:
        p.locator(".result").nth(hit).locator(".record-id").click()
    rec = info.value.json()
    p.wait_for_selector("#record:not([hidden])")
    empty = (None, "", [], {})
    expected = [k for k, v in rec.items() if k not in ("body", "passages", "facts") and v not in empty]
    shown = p.locator("#record-fields dt").all_text_contents()
    assert shown == [*expected, "passages", "facts"]     # every non-empty field, in the API's order
    assert {"library", "version", "import_path", "ext_id", "meta", "content_hash", "event_at"} <= set(expected)
    for key in expected:
        text = p.text_content(f"#record-fields .field-{key}")
        if isinstance(rec[key], list):
            assert text == ", ".join(rec[key]), key
        elif isinstance(rec[key], dict):
            assert json.loads(text or "") == rec[key], key
        elif isinstance(rec[key], float):
            assert float(text or "") == rec[key], key
        else:
            assert text == rec[key], key
    assert p.text_content("#record-fields .field-library") == "orchard-sdk"
    assert p.text_content("#record-fields .field-version") == "2.3.1"
    assert p.text_content("#record-fields .field-import_path") == "/home/ana/notes/orchard.md"
    assert p.text_content("#record-fields .field-passages") == str(len(rec["passages"]))
    fact = p.locator("#record-fields .field-facts .record-fact")
    assert fact.count() == 1 and fact.get_attribute("data-fact") == ids[RICH_FACT]
    assert RICH_FACT in (fact.text_content() or "")
    assert p.text_content("#record-body") == RICH.body
    # empty fields are left out, never shown blank
    assert "superseded_by" not in shown and "forgotten_at" not in shown


def test_opening_a_record_brings_the_record_view_into_sight(browser: Any,
                                                             server: tuple[WebServer, dict[str, str]]) -> None:
    page = Page(browser, server[0])
    p = page.page
    p.set_viewport_size({"width": 1000, "height": 500})
    page.open()
    p.select_option("#mode", "keyword")
    doc = page.search("the")
    assert len(doc["results"]) >= 6
    p.locator(".result").last.locator(".record-id").click()     # far below the record view
    p.wait_for_selector("#record:not([hidden])")
    top, height = p.evaluate("[document.getElementById('record').getBoundingClientRect().top, innerHeight]")
    assert 0 <= top < height
    page.check_clean()


def _live(text: str | None) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+) live records, (\d+) passages", text or "")
    assert m, text
    return int(m.group(1)), int(m.group(2))


def test_the_header_stats_stay_after_a_search_and_follow_an_add(page: Page) -> None:
    from playwright.sync_api import expect

    p = page.open()
    live, passages = _live(p.text_content("#status"))
    page.search("deploy key")
    assert _live(p.text_content("#status")) == (live, passages)     # a search leaves them alone
    assert p.locator("#busy").is_hidden()
    p.fill("#add-text", "The greenhouse door sticks when it rains.")
    with p.expect_response(lambda r: "/api/memories" in r.url):
        p.click("#add-btn")
    expect(p.locator("#status")).to_have_text(f"{live + 1} live records, {passages + 1} passages")


def test_a_search_address_runs_its_search_and_never_holds_the_token(page: Page,
                                                                     server: tuple[WebServer, dict[str, str]]) -> None:
    srv, ids = server
    p = page.page
    requests: list[str] = []
    p.on("request", lambda r: requests.append(r.url))
    query = "?q=deploy+key&mode=keyword&namespace=ops"
    with p.expect_response(lambda r: "/api/search" in r.url) as info:
        p.goto(srv.base + query + "#token=" + srv.token)
    p.wait_for_selector("body[data-ready='1']")
    doc = info.value.json()
    assert doc["trace"]["mode"] == "keyword"
    assert p.url == srv.base + query                 # the search stays, the token left
    assert p.evaluate("sessionStorage.getItem('memo-token')") == srv.token
    assert p.input_value("#q") == "deploy key" and p.input_value("#mode") == "keyword"
    assert p.input_value("#namespace") == "ops"
    first = p.locator(".result").first
    assert first.get_attribute("data-record-id") == ids[NOTE]
    assert {r["namespace"] for r in doc["results"]} == {"ops"}
    assert p.locator(".result").count() == len(doc["results"])
    assert "live records" in (p.text_content("#status") or "")

    # A search from the form writes the address (a new history entry) without the token.
    p.fill("#q", "CI runners restart")
    p.select_option("#kind", "note")
    with p.expect_response(lambda r: "/api/search" in r.url):
        p.click("#search-btn")
    p.wait_for_selector(f".result[data-record-id='{ids[CI]}']")
    assert p.url == srv.base + "?q=CI+runners+restart&mode=keyword&namespace=ops&kind=note"
    p.check("#explain")              # changes the shown search's address, no new entry
    assert p.url == srv.base + "?q=CI+runners+restart&mode=keyword&namespace=ops&kind=note&explain=1"

    # Back re-runs the previous search, forward the next; no entry holds the token.
    with p.expect_response(lambda r: "/api/search" in r.url):
        p.go_back()
    assert p.url == srv.base + query
    p.wait_for_selector(f".result[data-record-id='{ids[NOTE]}']")
    assert p.input_value("#q") == "deploy key" and p.input_value("#kind") == "" and not p.is_checked("#explain")
    with p.expect_response(lambda r: "/api/search" in r.url):
        p.go_forward()
    p.wait_for_selector(f".result[data-record-id='{ids[CI]}']")
    assert p.input_value("#q") == "CI runners restart" and p.is_checked("#explain")
    p.wait_for_selector("#trace:not([hidden])")
    p.fill("#q", "words not searched yet")
    p.uncheck("#explain")            # the address keeps the search shown, not the edited form
    assert p.url == srv.base + "?q=CI+runners+restart&mode=keyword&namespace=ops&kind=note"
    assert srv.token not in p.url
    assert requests and not [u for u in requests if srv.token in u]     # never in a request URL
    page.check_clean()


def test_a_search_address_the_form_cannot_hold_is_refused(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    srv, _ = server
    p = page.page
    searches: list[str] = []
    p.on("request", lambda r: searches.append(r.url) if "/api/search" in r.url else None)
    page.open()
    default = p.get_attribute("#profile", "data-default")
    for query, message in [("?q=deploy&tags=ops", "unknown parameter 'tags'"),
                           ("?q=deploy&mode=fuzzy", "mode 'fuzzy' is not one of"),
                           ("?q=deploy&namespace=ops&namespace=infra", "parameter 'namespace' given more than once")]:
        p.goto(srv.base + query)         # same tab: the token is in sessionStorage
        p.wait_for_selector("body[data-ready='1']")
        p.wait_for_selector("#error:not([hidden])")
        assert p.text_content("#error-type") == "ValidationError"
        assert message in (p.text_content("#error-message") or ""), query
        assert p.locator(".result").count() == 0
    assert searches == []                 # a wider search than the address says never ran
    # The server's default profile by name is the form's "(default)" choice.
    with p.expect_response(lambda r: "/api/search" in r.url):
        p.goto(srv.base + f"?q=pizza&profile={default}")
    p.wait_for_selector(".result")
    assert p.input_value("#profile") == "" and p.locator("#error").is_hidden()


# --- issue: findings of the memo web test pass (docs/web.md, The page) -----------------------
def _add(srv: WebServer, **body: Any) -> dict[str, Any]:
    """Add through the API as another client would (embedded before the answer)."""
    resp = httpx.post(srv.base + "api/memories", json={"wait": True, **body}, headers=srv.auth(), timeout=120)
    assert resp.status_code in (200, 201), resp.text
    return resp.json()


# Whether the characters of ``text`` inside ``root`` are laid out left to right (each one's
# box right of the one before; spaces skipped): a bidi override that leaks out of the stored
# value it sits in lays the page's own words after it out right to left.
LEFT_TO_RIGHT = """([root, text]) => {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(text);
    if (at < 0) continue;
    const range = document.createRange(), xs = [];
    for (let i = at; i < at + text.length; i++) {
      if (!node.data[i].trim()) continue;
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      xs.push(range.getBoundingClientRect().left);
    }
    return xs.every((x, i) => i === 0 || x > xs[i - 1]);
  }
  return null;
}"""


def _ltr(p: Any, selector: str, text: str) -> bool | None:
    return p.locator(selector).first.evaluate(
        f"(root) => ({LEFT_TO_RIGHT})([root, {json.dumps(text)}])")


def test_a_failed_search_clears_the_results_it_no_longer_matches(page: Page,
                                                                  server: tuple[WebServer, dict[str, str]]) -> None:
    srv, _ = server
    p = page.open()
    page.search("deploy key rotation")
    assert p.locator(".result").count() > 0
    # an API error (the empty query): the address says q= and no result of the last search stays
    p.fill("#q", "")
    with p.expect_response(lambda r: "/api/search" in r.url):
        p.click("#search-btn")
    p.wait_for_selector("#error:not([hidden])")
    assert p.url == srv.base + "?q=&mode=auto"
    assert p.locator(".result").count() == 0 and p.text_content("#summary") == ""
    assert p.locator("#busy").is_hidden()
    # the server unreachable
    page.search("deploy key rotation")
    p.route("**/api/search*", lambda route: route.abort())
    p.fill("#q", "pizza")
    p.click("#search-btn")
    p.wait_for_selector("#error:not([hidden])")
    assert p.text_content("#error-type") == "NetworkError"
    assert p.locator(".result").count() == 0 and p.text_content("#summary") == ""
    p.unroute("**/api/search*")
    # back to an address the form cannot hold: refused, and the results shown are not its own
    page.search("deploy key rotation")
    p.evaluate("history.pushState(null, '', '?q=deploy&mode=fuzzy'); history.pushState(null, '', '?q=x');"
               "history.back()")
    p.wait_for_selector("#error:not([hidden])")
    assert "mode 'fuzzy'" in (p.text_content("#error-message") or "")
    assert p.locator(".result").count() == 0
    page.check_clean(allowed=("status of 400", "ERR_FAILED"))


def test_truncated_results_say_so_and_show_more_raises_the_limit(page: Page,
                                                                  server: tuple[WebServer, dict[str, str]]) -> None:
    from playwright.sync_api import expect

    from memo.profile import load_profile

    srv, _ = server
    for i in range(14):
        _add(srv, text=f"Wombat census note {i}: the burrow count on ridge {i} was {i * 3}.", namespace="census")
    p = page.open()
    p.select_option("#mode", "keyword")
    p.fill("#namespace", "census")
    doc = page.search("wombat census burrow count")
    shown, tr = len(doc["results"]), doc["trace"]
    assert doc["truncated"] > 0 and shown == tr["limit"]
    assert p.text_content("#summary .count") == f"{shown} of {shown + doc['truncated']} shown"
    prof = load_profile(tr["profile"])         # the library's bounds, not the page's
    assert p.get_attribute("#limit", "max") == str(prof.limit.max)
    assert p.get_attribute("#limit", "placeholder") == str(prof.limit.default)
    dropped = sum(d["count"] for d in tr["drops"] if d["stage"] == "limit")
    want = min(tr["limit"] + dropped, prof.limit.max)
    assert p.text_content("#more") == f"show {want - tr['limit']} more"
    p.fill("#q", "an edited query not searched")       # "show more" is the shown search's
    with p.expect_response(lambda r: "/api/search" in r.url) as info:
        p.click("#more")
    more = info.value.json()
    assert f"limit={want}" in info.value.url and more["trace"]["limit"] == want
    assert more["query"] == doc["query"]
    expect(p.locator(".result")).to_have_count(len(more["results"]))
    assert len(more["results"]) > shown
    assert p.url == srv.base + f"?q=wombat+census+burrow+count&mode=keyword&namespace=census&limit={want}"
    assert p.input_value("#limit") == str(want)
    if not more["truncated"]:
        assert p.locator("#more").count() == 0
        assert p.text_content("#summary .count") == f"{len(more['results'])} results"
    # the address's limit fills the form; one that is no count is refused
    p.goto(srv.base + "?q=wombat&mode=keyword&limit=ten")
    p.wait_for_selector("#error:not([hidden])")
    assert "limit 'ten'" in (p.text_content("#error-message") or "")
    page.check_clean()


def test_a_truncated_search_names_its_narrowing_in_parameter_words(page: Page,
                                                                    server: tuple[WebServer, dict[str, str]]) -> None:
    srv, _ = server
    for i in range(6):
        _add(srv, text=f"Bilby tracking report {i} from the survey team.", namespace=f"survey{i % 2}")
    p = page.open()
    p.select_option("#mode", "keyword")
    p.check("#explain")
    p.goto(srv.base + "?q=bilby+tracking+report&mode=keyword&limit=2&explain=1")
    p.wait_for_selector("#trace:not([hidden])")
    text = p.text_content("#trace .narrow-hint") or ""
    assert re.fullmatch(r"namespace=survey\d \(drops \d+\)", text), text
    assert "--" not in (p.text_content("#trace") or "")


def test_an_empty_answers_hint_names_parameters_not_flags(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    """The search document is the CLI's ("raise max_tokens (--max-tokens) to at least N");
    the page words it with the parameter.  The page has no max_tokens field: its request is
    sent on with max_tokens=1 added, and the real server answers."""
    srv, _ = server
    p = page.page
    page.open()
    p.route("**/api/search*", lambda route: route.continue_(url=route.request.url + "&max_tokens=1"))
    with p.expect_response(lambda r: "/api/search" in r.url) as info:
        p.goto(srv.base + "?q=deploy+key&mode=keyword")
    doc = info.value.json()
    assert doc["cause"] == "budget" and "(--max-tokens)" in doc["hint"], doc
    p.wait_for_selector("#summary .hint")
    shown = p.text_content("#summary .hint") or ""
    assert shown == " · " + doc["hint"].replace(" (--max-tokens)", ""), shown
    assert "--" not in (p.text_content("#summary") or "")


def test_query_notes_are_shown(page: Page) -> None:
    p = page.open()
    p.select_option("#mode", "keyword")
    p.fill("#q", "deploy key " * 2000)          # over the query cap: the library cuts it and says so
    with p.expect_response(lambda r: "/api/search" in r.url) as info:
        p.click("#search-btn")
    notes = info.value.json()["trace"]["notes"]
    assert notes
    p.wait_for_selector("#summary .note")
    assert p.locator("#summary .note").all_text_contents() == [" · " + n for n in notes]
    p.check("#explain")
    assert p.locator("#trace .trace-note").all_text_contents() == notes


def test_bidi_controls_in_stored_values_stay_inside_them(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    srv, _ = server
    rid = _add(srv, text="Quoll sighting logged by the night shift.", namespace="ns-legacy", author="Eve\u202e",
               source="src\u2067x")["record_id"]
    # No write takes a namespace with a bidi control any more (memo.text.namespaces), but an
    # older memo stored them, and the page must keep those in their place too.
    with closing(sqlite3.connect(srv.stderr_path.parent / "memo.db")) as raw, raw:   # memo_web's db folder
        raw.execute("UPDATE records SET namespace = ? WHERE id = ?", ("ns\u202eabc", rid))
    p = page.open()
    p.select_option("#mode", "keyword")
    p.check("#explain")
    page.search("quoll sighting night shift")
    p.wait_for_selector(".why-prov")
    # the author's override ends with the author: the words after it read left to right
    assert _ltr(p, ".result .why-prov", "recorded_at") is True
    assert _ltr(p, ".result .head", "UTC") is True
    # a sentence of the server's quoting the namespace shows the control instead of obeying it
    p.goto(srv.base + "?q=deploy&namespace=nope")
    p.wait_for_selector("#summary .reason")
    assert "ns<U+202E>abc" in (p.text_content("#summary .reason") or "")
    assert _ltr(p, "#summary", "the scope filter") is True


def test_a_long_unbroken_heading_and_namespace_wrap(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    srv, _ = server
    _add(srv, text="# " + "H" * 3000 + "\n\nnumbat body text for the layout check", namespace="n" * 200)   # MAX_NAMESPACE_CHARS
    p = page.open()
    p.select_option("#mode", "keyword")
    page.search("numbat body text layout")
    width, view = p.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width <= view, (width, view)


def test_an_add_that_cannot_be_embedded_says_why(browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMO_MODEL", "no-such-model")
    with memo_web(tmp_path / "memo.db") as srv:
        page = Page(browser, srv)
        p = page.open()
        p.fill("#add-text", "The echidna pen has a new water bowl.")
        with p.expect_response(lambda r: "/api/memories" in r.url) as info:
            p.click("#add-btn")
        vectors = info.value.json()["vectors"]
        assert vectors["queued"] == 1 and vectors["model_id"] is None and vectors["error"] is None
        p.wait_for_selector("#add-status[data-record-id]")
        note = p.text_content("#add-status .vectors-note") or ""
        assert "cannot be found by meaning yet" in note and "no embedding model" in note, note
        # embedded before the answer (as "wait": true asks): the report carries the error
        p.route("**/api/memories", lambda route: route.continue_(
            post_data=json.dumps({**json.loads(route.request.post_data or "{}"), "wait": True})))
        p.fill("#add-text", "The echidna pen gets fresh straw on Mondays.")
        with p.expect_response(lambda r: "/api/memories" in r.url) as info:
            p.click("#add-btn")
        error = info.value.json()["vectors"]["error"]
        assert error
        p.wait_for_selector("#add-status[data-record-id] .vectors-note")
        assert p.text_content("#add-status .vectors-note") == f"; it cannot be found by meaning yet: {error}"
        page.check_clean()
    assert "Traceback" not in srv.stderr(), srv.stderr()


def test_dates_are_shown_as_stored(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    srv, _ = server
    _add(srv, text="Tapir feeding moved to the late shift.", namespace="zoo", event_at="2024-03-14T23:30:00-05:00")
    p = page.open()
    p.select_option("#mode", "keyword")
    doc = page.search("tapir feeding late shift")
    first = p.locator(".result").first
    stored = doc["results"][0]["why"]["freshness"]["event_at"]
    assert stored.startswith("2024-03-15T04:30:00")              # kept in UTC
    assert first.locator(".date").text_content() == "2024-03-15 04:30 UTC"    # never "2024-03-15" alone
    assert first.locator(".date").get_attribute("title") == stored
    p.fill("#namespace", "retro")
    page.search("canary rollout")
    assert sorted(p.locator(".result .date").all_text_contents()) == ["2024-03-14", "2024-05-02"]   # dates stay dates


def test_the_address_takes_the_apis_explain_words_and_names_choices_as_the_form(
        page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    srv, _ = server
    p = page.page
    page.open()
    for word, on in (("yes", True), ("ON", True), ("off", False), ("0", False)):
        with p.expect_response(lambda r: "/api/search" in r.url):
            p.goto(srv.base + f"?q=deploy&explain={word}")
        p.wait_for_selector("body[data-ready='1']")
        assert p.is_checked("#explain") is on, word
        assert p.locator("#error").is_hidden()
    for query, message in (("?q=deploy&explain=maybe", "explain 'maybe' is not one of 1, true"),
                           ("?q=deploy&kind=Note", "kind 'Note' is not one of any, note, conversation")):
        p.goto(srv.base + query)
        p.wait_for_selector("#error:not([hidden])")
        assert message in (p.text_content("#error-message") or ""), query
        assert "(default)" not in (p.text_content("#error-message") or "")


def test_accessible_names_focus_and_live_regions(page: Page, server: tuple[WebServer, dict[str, str]]) -> None:
    _, ids = server
    p = page.open()
    assert p.get_by_label("text", exact=True).get_attribute("id") == "add-text"
    for selector in ("#summary", "#add-status"):
        assert p.get_attribute(selector, "role") == "status", selector
    assert p.locator("#busy").evaluate("(n) => n.closest('[role=status]') !== null")
    page.search("how often does the deploy key rotate")
    # the result's button is named by what the result says, not only its id
    button = p.get_by_role("button", name=re.compile("deploy key rotates every 30 days"))
    assert button.count() == 1 and button.text_content() == ids[NOTE]
    button.click()
    p.wait_for_selector("#record:not([hidden])")
    assert p.evaluate("document.activeElement.id") == "record-title"
    p.click("#record-close")
    assert p.evaluate("document.activeElement.closest('.result')?.dataset.recordId") == ids[NOTE]
    # re-rendered meanwhile (explain toggled): the same record's new button gets it
    button.click()
    p.wait_for_selector("#record:not([hidden])")
    p.check("#explain")
    p.click("#record-close")
    assert p.evaluate("document.activeElement.classList.contains('record-id') && "
                      "document.activeElement.closest('.result').dataset.recordId") == ids[NOTE]


def test_the_header_counts_follow_writes_by_others_after_a_search(page: Page,
                                                                   server: tuple[WebServer, dict[str, str]]) -> None:
    from playwright.sync_api import expect

    srv, _ = server
    p = page.open()
    live, passages = _live(p.text_content("#status"))
    _add(srv, text="Another process wrote this echidna spine note.", namespace="elsewhere")   # not this page
    page.search("echidna spine")
    expect(p.locator("#status")).to_have_text(f"{live + 1} live records, {passages + 1} passages")
