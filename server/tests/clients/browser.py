"""A data steward's whole studio flow on Adult in a real Chromium, driven over the
DevTools protocol: log in (after a wrong password), register adult.csv from the studio's
folder, confirm roles, build hierarchies (one from a file uploaded from the steward's
computer), assess the risk, compare three candidates (and undo a fourth), publish two of
them and read a publication's report, download the recipe and re-open it from the saved
file; then the refusals a page cannot make (a POST without the CSRF token, a file outside
the folder).

Usage: browser.py CHROMIUM BASE_URL SCREENSHOT_FOLDER HIERARCHY_FILE_TO_UPLOAD
Prints one JSON object with what the pages showed; writes one PNG per step.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import websocket

CHROMIUM, BASE, SHOTS, UPLOADED = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3], sys.argv[4]
TIMEOUT = 120


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="dfanon-chromium-")
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                "--window-size=1280,1000",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.time() > deadline:
                raise RuntimeError("chromium did not start")
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(
            page["webSocketDebuggerUrl"], suppress_origin=True, timeout=TIMEOUT
        )
        self.next_id = 0
        self.outcomes = []
        self.working = []
        self.call("Page.enable")
        self.call("DOM.enable")
        self.call("Network.enable")

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def js(self, expression):
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for_new_page(self):
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            try:
                if self.js("window.__old === undefined && document.readyState === 'complete'"):
                    return
            except RuntimeError:
                pass
            time.sleep(0.05)
        raise RuntimeError("no new page in time")

    def goto(self, path):
        self.js("window.__old = true")
        self.call("Page.navigate", url=BASE + path)
        self.wait_for_new_page()

    def submit(self, script):
        """Runs `script` (which fills a form and clicks its button) and waits for the page
        the form leads to, through the pages that show a long step's progress; keeps the
        step's outcome."""
        self.js("window.__old = true")
        self.js(script)
        self.wait_for_new_page()
        while self.js("document.querySelector('#working') !== null"):
            self.working.append(self.text("#working"))
            self.js("window.__old = true")
            self.wait_for_new_page()
        error = self.text("p.error")
        self.outcomes.append(("error: " + error) if error else self.text("p.ok"))

    def wait_for_evidence(self):
        """Loads the project page again until no candidate's report is still being written
        (a candidate shows at once with its release's figures; its report follows)."""
        deadline = time.time() + TIMEOUT
        while self.js("document.querySelector('#evidence-pending') !== null"):
            if time.time() > deadline:
                raise RuntimeError("the candidates' reports were not written in time")
            time.sleep(0.3)
            self.goto("/project")

    def choose_file(self, selector, path):
        """Puts (a copy of) the file at `path` into the file input `selector`, as a person
        choosing it; the copy is in the browser's own folder, which it may read."""
        copy = os.path.join(self.profile, os.path.basename(path))
        shutil.copyfile(path, copy)
        path = copy
        found = self.call(
            "Runtime.evaluate", expression=f"document.querySelector({json.dumps(selector)})"
        )
        self.call("DOM.setFileInputFiles", files=[path], objectId=found["result"]["objectId"])

    def text(self, selector):
        return self.js(
            f"(document.querySelector({json.dumps(selector)}) || {{innerText: ''}}).innerText"
        )

    def shot(self, name):
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics["cssContentSize"]
        data = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": 1280, "height": min(size["height"], 6000), "scale": 1},
        )["data"]
        with open(os.path.join(SHOTS, f"{name}.png"), "wb") as out:
            out.write(base64.b64decode(data))

    def shot_of(self, selector, name):
        """A picture of one element of the page."""
        box = self.js(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect(); "
            "return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height}; })()"
        )
        data = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={**box, "scale": 1},
        )["data"]
        with open(os.path.join(SHOTS, f"{name}.png"), "wb") as out:
            out.write(base64.b64decode(data))

    def cookie_header(self):
        cookies = self.call("Network.getCookies", urls=[BASE + "/"])["cookies"]
        return "; ".join(f"{c['name']}={c['value']}" for c in cookies)

    def close(self):
        self.ws.close()
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def fill(form_selector, values, button=None):
    """JavaScript that sets `values` (name -> value) in the form and clicks its button."""
    sets = "".join(
        f"f.elements[{json.dumps(k)}].value = {json.dumps(v)};" for k, v in values.items()
    )
    click = f"f.querySelector({json.dumps(button)})" if button else "f.querySelector('button')"
    return f"(() => {{ const f = document.querySelector({json.dumps(form_selector)}); {sets} {click}.click(); }})()"


def side_by_side(b):
    return b.js(
        """Array.from(document.querySelectorAll('table.side-by-side tr[data-figure]')).map(
             tr => [tr.dataset.figure, Array.from(tr.querySelectorAll('td')).map(td => td.innerText)])"""
    )


def post(path, fields, cookie):
    request = urllib.request.Request(
        BASE + path,
        data=urllib.parse.urlencode(fields).encode(),
        headers={"Cookie": cookie},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    os.makedirs(SHOTS, exist_ok=True)
    seen = {}
    b = Browser()
    try:
        timings = {}

        def timed(name, action):
            start = time.time()
            action()
            timings[name] = round(time.time() - start, 3)

        b.goto("/")
        seen["first_page"] = b.js("location.pathname")
        b.submit(fill("form.login", {"user": "owner", "password": "wrong"}))
        seen["wrong_password"] = b.text("p.error")
        b.shot("01-login")
        b.submit(fill("form.login", {"user": "owner", "password": "owner-pw"}))
        seen["home"] = b.text("main h1")
        timings_start = time.time()
        b.submit("document.querySelector('#open-project').click()")
        timings["project_page"] = round(time.time() - timings_start, 3)

        # 1. Source: adult.csv of the studio's folder.
        timed("source_and_profile", lambda: b.submit(fill("form[action='/project/source']", {"file": "adult.csv"})))
        seen["source"] = b.text("#source-table")
        seen["suggested"] = b.js(
            """Object.fromEntries(Array.from(document.querySelectorAll('#profile tr[data-column]')).map(
                 tr => [tr.dataset.column, tr.querySelector('select').value]))"""
        )
        b.shot("02-profile")

        # 2. Roles: five quasi-identifiers, the salary class as the sensitive column, the
        # rest left out.
        roles = {
            "sex": "quasi", "age": "quasi", "race": "quasi", "marital-status": "quasi",
            "education": "quasi", "native-country": "other", "workclass": "other",
            "occupation": "other", "salary-class": "sensitive",
        }
        b.submit(
            "(() => {"
            + "".join(
                f"document.querySelector('#profile tr[data-column={json.dumps(c)}] select').value = {json.dumps(r)};"
                for c, r in roles.items()
            )
            + "document.querySelector('#save-roles').click(); })()"
        )
        seen["roles_saved"] = b.js("Object.fromEntries(Array.from(document.querySelectorAll('#profile tr[data-column]')).map(tr => [tr.dataset.column, tr.querySelector('select').value]))")

        # 3. Hierarchies: age from intervals, the others from ARX files of the folder.
        form = "#hierarchies .hierarchy[data-column={}] form"
        timed("hierarchy_age", lambda: b.submit(fill(form.format('"age"'), {"kind": "intervals", "domain": "17..90", "levels": "5|10|20"})))
        seen["age_preview"] = b.js(
            """Array.from(document.querySelectorAll('.hierarchy[data-column="age"] table.preview tbody tr')).map(
                 tr => [tr.cells[0].innerText, Number(tr.cells[1].innerText)])"""
        )
        b.shot("03-hierarchy")
        for column in ["sex", "race", "marital-status"]:
            b.submit(fill(form.format(json.dumps(column)), {"kind": "file", "file": f"adult_hierarchy_{column}.csv"}))
            seen.setdefault("hierarchy_outcomes", []).append(b.text("p.ok") or b.text("p.error"))
        # Education's from a file on the steward's computer, uploaded.
        upload = '#hierarchies .hierarchy[data-column="education"] form.upload'
        b.choose_file(upload + " input[type=file]", UPLOADED)
        b.submit(f"document.querySelector({json.dumps(upload)}).querySelector('button').click()")
        seen["uploaded"] = b.text('.hierarchy[data-column="education"] p')

        # 4. Risk before.
        timed("risk", lambda: b.submit("document.querySelector('#assess').click()"))
        seen["risk"] = b.js(
            """Object.fromEntries(Array.from(document.querySelectorAll('#risk tr[data-figure]')).map(
                 tr => [tr.dataset.figure, tr.cells[1].innerText]))"""
        )
        seen["risk_chart"] = b.js("document.querySelectorAll('#class-sizes svg rect').length")
        b.shot("04-risk")

        # 5. Candidates: three, and a fourth that is undone.
        candidates = [
            {"method": "kanon", "k": "5", "suppression_limit": "0.05"},
            {"method": "kanon", "k": "10", "suppression_limit": "0.02"},
            {"method": "safepub", "epsilon": "1", "delta": "1e-6"},
            {"method": "kanon", "k": "20", "suppression_limit": "0.05"},
        ]
        for i, values in enumerate(candidates):
            timed(f"candidate_{i + 1}", lambda: b.submit(fill("form[action='/project/candidate']", values)))
        seen["candidates_before_undo"] = b.js("document.querySelectorAll('table.side-by-side thead th').length - 1")
        b.submit("document.querySelector('#undo').click()")
        b.wait_for_evidence()
        seen["candidates"] = b.js("document.querySelectorAll('table.side-by-side thead th').length - 1")
        seen["side_by_side"] = side_by_side(b)
        seen["trial_labels"] = b.js("Array.from(document.querySelectorAll('.trial')).map(e => e.innerText)")
        b.shot("05-candidates")
        b.shot_of("#candidates", "05-candidates-side-by-side")
        b.goto("/project/candidates/1/report")
        seen["report_title"] = b.js("document.title")
        b.shot("06-report")
        b.goto("/project")

        # 6. Publish candidates 1 and 3.
        publish = "#candidates table.side-by-side form[action='/project/publish']"
        b.submit(
            f"(() => {{ const f = document.querySelectorAll({json.dumps(publish)})[0]; f.elements.name.value = 'adult_k5'; f.querySelector('button').click(); }})()"
        )
        seen["published_k5"] = b.text("p.ok") or b.text("p.error")
        b.submit(
            f"(() => {{ const f = document.querySelectorAll({json.dumps(publish)})[2]; f.elements.name.value = 'adult_safepub'; f.querySelector('button').click(); }})()"
        )
        seen["published_safepub"] = b.text("p.ok") or b.text("p.error")
        seen["published_rows"] = b.js(
            """Array.from(document.querySelectorAll('.published[data-release="adult_k5"] table.rows tbody tr')).map(
                 tr => Array.from(tr.cells).map(td => td.innerText))"""
        )
        seen["published_report_link"] = b.js(
            """(document.querySelector('.published[data-release="adult_k5"] a.published-report') || {}).href || ''"""
        )
        seen["published_columns"] = b.js(
            """Array.from(document.querySelectorAll('.published[data-release="adult_k5"] table.rows thead th')).map(th => th.innerText)"""
        )
        b.js("document.querySelector('#publish').scrollIntoView()")
        b.shot("07-published")
        b.goto("/published/adult_safepub/report")
        seen["published_report_title"] = b.js("document.title")
        seen["published_report_rows"] = b.js(
            "(document.querySelector('[data-figure=\"after:rows\"]') || {dataset: {}}).dataset.value"
        )
        b.goto("/project")

        # 7. The recipe, downloaded with the session's cookie, then re-opened.
        cookie = b.cookie_header()
        request = urllib.request.Request(BASE + "/project/recipe", headers={"Cookie": cookie})
        with urllib.request.urlopen(request) as response:
            seen["recipe_disposition"] = response.headers.get("Content-Disposition")
            seen["recipe"] = response.read().decode()
        saved = os.path.join(tempfile.mkdtemp(prefix="dfanon-recipe-"), "adult-recipe.sql")
        with open(saved, "w") as out:
            out.write(seen["recipe"])
        b.choose_file("form[action='/project/open'] input[type=file]", saved)
        b.submit("document.querySelector(\"form[action='/project/open'] button\").click()")
        seen["reopened"] = b.text("p.ok") or b.text("p.error")
        b.wait_for_evidence()
        seen["reopened_candidates"] = b.js("document.querySelectorAll('table.side-by-side thead th').length - 1")
        seen["reopened_side_by_side"] = side_by_side(b)

        # Refusals: a POST without the CSRF token, a file outside the folder.
        seen["no_csrf"] = post("/project/source", {"file": "adult.csv"}, cookie)[0]
        csrf = b.js("document.querySelector('input[name=csrf]').value")
        post("/project/source", {"csrf": csrf, "file": "../server.toml"}, cookie)
        b.goto("/project")
        seen["outside"] = b.text("p.error")
        seen["timings"] = timings
        seen["working"] = b.working
    except Exception as e:
        seen["failed"] = repr(e)
        # What the browser shows, and what the server answers now (a hung step or a hung
        # browser).
        try:
            seen["page_at_failure"] = b.js(
                "location.href + ' | ' + document.readyState + ' | ' + document.body.innerText.slice(0, 1500)"
            )
        except Exception as inner:
            seen["page_at_failure"] = repr(inner)
        try:
            request = urllib.request.Request(BASE + "/project", headers={"Cookie": b.cookie_header()})
            with urllib.request.urlopen(request, timeout=10) as response:
                seen["server_at_failure"] = response.read().decode()[:3000]
        except Exception as inner:
            seen["server_at_failure"] = repr(inner)
        b.shot("failed")
    finally:
        seen["outcomes"] = b.outcomes
        b.close()
    print(json.dumps(seen))


main()
