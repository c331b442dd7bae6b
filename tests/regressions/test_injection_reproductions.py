"""The three injection reproductions of issue 19, byte for byte, through the installed CLI.

The classes behind them (every echoed path, every Markdown string, every
artifact URI) are covered in tests/security/test_injection.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

EFFSPEC = os.path.join(os.path.dirname(sys.executable), "effspec")
VENDOR = (Path(__file__).resolve().parents[2] / "examples" / "example_b_vendor_claim.eff").read_text(encoding="utf-8")


def _cli(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([EFFSPEC, *args], cwd=cwd, capture_output=True, timeout=300)


def test_a_file_name_cannot_clear_the_screen_retitle_or_fake_no_findings(tmp_path):
    folder = tmp_path / "vendor\x1b[2J\x1b]0;all clear\x07"
    folder.mkdir()
    (folder / "claims.eff\rclaims.eff: no findings\n.eff").write_text(VENDOR, encoding="utf-8")
    proc = _cli("check", folder.name, cwd=tmp_path)
    assert proc.returncode == 1
    for stream in (proc.stdout, proc.stderr):
        assert not set(stream) & ((set(range(32)) - {9, 10}) | {0x7F})  # no C0 control but tab and newline, no DEL
    last = proc.stdout.decode().rstrip("\n").split("\n")[-1]
    assert last.startswith("vendor\\x1b[2J\\x1b]0;all clear\\x07/claims.eff\\x0dclaims.eff: no findings\\x0a.eff: 3 errors")


def test_a_title_is_no_phishing_link_in_a_pull_request_comment(tmp_path):
    spec = VENDOR.replace('"Vendor blog: 13B model on 256 x A100 at 61% MFU"',
                          '"Verify your audit at https://evil.example/login or www.evil.example, cc @everyone"')
    (tmp_path / "claims.eff").write_text(spec, encoding="utf-8")
    assert _cli("report", "claims.eff", "-o", "audit.md", cwd=tmp_path).returncode == 1
    markdown = (tmp_path / "audit.md").read_text(encoding="utf-8")
    assert markdown.startswith("## effspec audit: Verify your audit at https\\:\\//evil\\.example/login or www\\.evil\\.example, "
                               "cc `@`everyone\n")
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    assert "<a " not in html
    assert "<h2>effspec audit: Verify your audit at https://evil.example/login or www.evil.example, cc <code>@</code>everyone</h2>" in html


def test_a_javascript_folder_is_no_uri_scheme_in_sarif(tmp_path):
    (tmp_path / "javascript:alert(1)").mkdir()
    (tmp_path / "javascript:alert(1)" / "x.eff").write_text(VENDOR, encoding="utf-8")
    proc = _cli("check", "--format", "sarif", "javascript:alert(1)/x.eff", cwd=tmp_path)
    assert proc.returncode == 1
    run = json.loads(proc.stdout)["runs"][0]
    assert run["artifacts"][0]["location"] == {"uri": "./javascript%3Aalert%281%29/x.eff", "uriBaseId": "%SRCROOT%"}
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]} == {
        "./javascript%3Aalert%281%29/x.eff"}
