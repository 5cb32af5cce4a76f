"""The studio's flow with Python's own HTTP client (urllib, cookies in a cookie jar, as a
browser keeps them): prints one JSON object of what it saw.

Usage: studio.py BASE_URL
"""

import http.cookiejar
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request


BASE = sys.argv[1].rstrip("/")


class Browser:
    """A client that keeps cookies and does not follow redirects on its own."""

    def __init__(self):
        self.jar = http.cookiejar.CookieJar()

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect
        )

    def request(self, path, form=None):
        data = None if form is None else urllib.parse.urlencode(form).encode()
        try:
            response = self.opener.open(BASE + path, data=data, timeout=30)
        except urllib.error.HTTPError as e:
            response = e
        body = response.read().decode()
        return {
            "status": response.status if hasattr(response, "status") else response.code,
            "location": response.headers.get("Location"),
            "cookies": response.headers.get_all("Set-Cookie") or [],
            "csp": response.headers.get("Content-Security-Policy"),
            "body": body,
        }

    def csrf(self, body):
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', body)
        return found.group(1) if found else ""

    def log_in(self, user, password):
        page = self.request("/login")
        return self.request(
            "/login", {"user": user, "password": password, "csrf": self.csrf(page["body"])}
        )


def main():
    out = {}
    b = Browser()
    out["visitor"] = b.request("/")
    login_page = b.request("/login")
    out["login_page"] = login_page
    token = b.csrf(login_page["body"])
    out["wrong_password"] = b.request(
        "/login", {"user": "analyst", "password": "nope", "csrf": token}
    )
    # A form posted from elsewhere: no login cookie of this studio's.
    other = Browser()
    out["login_without_cookie"] = other.request(
        "/login", {"user": "analyst", "password": "analyst-pw", "csrf": token}
    )
    analyst = Browser()
    out["analyst_login"] = analyst.log_in("analyst", "analyst-pw")
    home = analyst.request("/")
    out["analyst_home"] = home
    # The owner's steps are not an analyst's, token or not.
    out["analyst_project"] = analyst.request("/project")["status"]
    out["analyst_step"] = analyst.request(
        "/project/source", {"csrf": analyst.csrf(home["body"]), "table": "nps"}
    )["status"]
    out["logout_without_csrf"] = analyst.request("/logout", {"csrf": ""})
    out["still_logged_in"] = analyst.request("/")["status"]
    out["logout"] = analyst.request("/logout", {"csrf": analyst.csrf(home["body"])})
    out["after_logout"] = analyst.request("/")
    owner = Browser()
    owner.log_in("owner", "owner-pw")
    out["owner_home"] = owner.request("/")
    out["missing"] = owner.request("/nothing-here")
    out["css"] = owner.request("/studio.css")["status"]
    print(json.dumps(out))


main()
