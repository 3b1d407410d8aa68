#!/usr/bin/env python3
"""Fail on a broken internal link in the built book.

Reads every page mdbook wrote under docs/book (run `mdbook build docs` first) and checks
each relative link: the page it names exists inside the book, and the anchor after `#`,
if any, is the id of an element of that page. Links to other sites are not followed.
"""
import html.parser
import os
import sys
import urllib.parse

BOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "book")


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if tag == "a" and name == "href" and value:
                self.links.append((value, self.getpos()[0]))


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def main():
    book = os.path.realpath(BOOK)
    if not os.path.isdir(book):
        sys.exit(f"no book at {book}: run 'mdbook build docs' first")
    pages = {}
    for root, _, files in os.walk(book):
        for name in files:
            if name.endswith(".html"):
                path = os.path.realpath(os.path.join(root, name))
                pages[path] = parse(path)
    broken = []
    checked = 0
    for path, page in sorted(pages.items()):
        # The print page repeats every chapter with its links rewritten; the 404 page's
        # links are relative to wherever the server shows it.
        if os.path.basename(path) in ("print.html", "404.html"):
            continue
        for href, line in page.links:
            url = urllib.parse.urlsplit(href)
            if url.scheme or url.netloc or href.startswith("javascript:"):
                continue
            checked += 1
            where = f"{os.path.relpath(path, book)}:{line}: {href}"
            target = path
            if url.path:
                target = os.path.realpath(
                    os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path))
                )
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not target.startswith(book + os.sep):
                    broken.append(f"{where} (leaves the book)")
                    continue
                if not os.path.exists(target):
                    broken.append(f"{where} (no such page)")
                    continue
            if url.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if urllib.parse.unquote(url.fragment) not in ids:
                    broken.append(f"{where} (no such anchor)")
    for b in broken:
        print(f"broken link: {b}", file=sys.stderr)
    print(f"{checked} internal links checked in {len(pages)} pages, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
